"""deltalog: a native reader of the Delta Lake transaction log.

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
from ._read import read_table
from ._scan import Filter, Scan, ScanTask
from ._table import DeltaTable, Metadata, Protocol, Snapshot
from .exceptions import (
    ArrowError,
    CommitConflictError,
    CorruptDataError,
    CorruptDataFileError,
    CorruptDeletionVectorError,
    CorruptLogError,
    DeltaError,
    InternalError,
    InvalidArgumentError,
    InvalidPathError,
    InvalidTableError,
    NonContiguousLogError,
    ObjectNotFoundError,
    OperationNotAllowedError,
    ProtocolError,
    StorageError,
    TableNotFoundError,
    TimestampNotFoundError,
    UnsupportedFeatureError,
    UnsupportedProtocolVersionError,
    VersionNotFoundError,
)

__version__: str = _core.__version__

__all__ = [
    "ArrowError",
    "ArrowStream",
    "CommitConflictError",
    "CorruptDataError",
    "CorruptDataFileError",
    "CorruptDeletionVectorError",
    "CorruptLogError",
    "DeltaError",
    "DeltaTable",
    "Filter",
    "InternalError",
    "InvalidArgumentError",
    "InvalidPathError",
    "InvalidTableError",
    "Metadata",
    "NonContiguousLogError",
    "ObjectNotFoundError",
    "OperationNotAllowedError",
    "Protocol",
    "ProtocolError",
    "Scan",
    "ScanTask",
    "Schema",
    "Snapshot",
    "StorageError",
    "TableNotFoundError",
    "TimestampNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedProtocolVersionError",
    "VersionNotFoundError",
    "__version__",
    "read_table",
]
