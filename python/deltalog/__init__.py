"""deltalog: a native reader and writer of Delta Lake tables.

>>> import deltalog
>>> table = deltalog.DeltaTable("path/to/table")
>>> snapshot = table.snapshot()
>>> snapshot.version, snapshot.schema.names
>>> pyarrow.table(snapshot.files())

Importing deltalog needs no Arrow library; results speak the Arrow PyCapsule interface.
"""

from __future__ import annotations

from . import _core
from ._arrow import ArrowStream, Schema
from ._maintenance_log import (
    CheckpointInfo,
    CleanupResult,
    FileSizeHistogram,
    PostCommitError,
    PostCommitResult,
    VersionChecksum,
)
from ._read import read_table
from ._results import Metadata, Protocol
from ._scan import Filter, Scan, ScanTask
from ._table import Alter, CommitResult, DeltaTable, Snapshot, Transaction, convert_to_delta
from ._write import write_table
from .exceptions import (
    ArrowError,
    ChecksumMismatchError,
    CommitConflictError,
    CommitStateUnknownError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    ConstraintViolationError,
    CorruptDataError,
    CorruptDataFileError,
    CorruptDeletionVectorError,
    CorruptLogError,
    DeltaError,
    InternalError,
    InvalidArgumentError,
    InvalidPathError,
    InvalidTableError,
    MaxCommitAttemptsExceededError,
    MergeMultipleMatchError,
    MetadataChangedError,
    MissingDataFilesError,
    NonContiguousLogError,
    ObjectNotFoundError,
    OperationNotAllowedError,
    ProtocolChangedError,
    ProtocolError,
    ReplaceWhereMismatchError,
    SchemaMismatchError,
    StorageError,
    TableNotFoundError,
    TimestampNotFoundError,
    UnsupportedFeatureError,
    UnsupportedProtocolVersionError,
    VersionNotFoundError,
)

__version__: str = _core.__version__

__all__ = [
    "Alter",
    "ArrowError",
    "ArrowStream",
    "CheckpointInfo",
    "ChecksumMismatchError",
    "CleanupResult",
    "CommitConflictError",
    "CommitResult",
    "CommitStateUnknownError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "ConstraintViolationError",
    "CorruptDataError",
    "CorruptDataFileError",
    "CorruptDeletionVectorError",
    "CorruptLogError",
    "DeltaError",
    "DeltaTable",
    "FileSizeHistogram",
    "Filter",
    "InternalError",
    "InvalidArgumentError",
    "InvalidPathError",
    "InvalidTableError",
    "MaxCommitAttemptsExceededError",
    "MergeMultipleMatchError",
    "Metadata",
    "MetadataChangedError",
    "MissingDataFilesError",
    "NonContiguousLogError",
    "ObjectNotFoundError",
    "OperationNotAllowedError",
    "PostCommitError",
    "PostCommitResult",
    "Protocol",
    "ProtocolChangedError",
    "ProtocolError",
    "ReplaceWhereMismatchError",
    "Scan",
    "ScanTask",
    "Schema",
    "SchemaMismatchError",
    "Snapshot",
    "StorageError",
    "TableNotFoundError",
    "TimestampNotFoundError",
    "Transaction",
    "UnsupportedFeatureError",
    "UnsupportedProtocolVersionError",
    "VersionChecksum",
    "VersionNotFoundError",
    "__version__",
    "convert_to_delta",
    "read_table",
    "write_table",
]
