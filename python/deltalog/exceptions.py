"""The exceptions deltalog raises.

Every error that a table, a path or an argument can cause is a :class:`DeltaError`. The
subclasses say what went wrong, and their attributes name what it went wrong with (the file,
the version, the feature); attributes that do not apply are ``None``. An error of a write
that had already written data files names them in ``unreferenced_files`` (paths relative to
the table root; no commit references them, VACUUM removes them)::

    DeltaError
    ├── TableNotFoundError                 location
    ├── VersionNotFoundError               table, version
    │   └── TimestampNotFoundError         table, timestamp_ms
    ├── CorruptLogError                    path
    │   ├── ChecksumMismatchError          (a .crc file disagrees with the log)
    │   └── NonContiguousLogError          table
    ├── CorruptDataError                   path
    │   ├── CorruptDataFileError
    │   └── CorruptDeletionVectorError
    ├── InvalidTableError                  table
    ├── ProtocolError                      table, kind ("reader" or "writer")
    │   ├── UnsupportedProtocolVersionError  version
    │   └── UnsupportedFeatureError          feature
    ├── InvalidPathError                   path
    ├── InvalidArgumentError               (also a ValueError)
    ├── StorageError                       path (also an OSError)
    │   └── ObjectNotFoundError            (also a FileNotFoundError)
    ├── ArrowError
    ├── CommitConflictError                version, kind
    │   ├── ConcurrentAppendError
    │   ├── ConcurrentDeleteReadError
    │   ├── ConcurrentDeleteDeleteError
    │   ├── MetadataChangedError
    │   ├── ProtocolChangedError
    │   ├── ConcurrentTransactionError
    │   └── MaxCommitAttemptsExceededError
    ├── CommitStateUnknownError            version
    ├── SchemaMismatchError                column (also a ValueError)
    ├── ConstraintViolationError           constraint (also a ValueError)
    │   └── ReplaceWhereMismatchError      (a row outside an overwrite's predicate)
    ├── OperationNotAllowedError
    ├── MissingDataFilesError              table, version, paths
    ├── MergeMultipleMatchError            table (also a ValueError)
    └── InternalError                      invariant, table: a bug in deltalog; please report it
"""

from __future__ import annotations

__all__ = [
    "ArrowError",
    "ChecksumMismatchError",
    "CommitConflictError",
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
    "InternalError",
    "InvalidArgumentError",
    "InvalidPathError",
    "InvalidTableError",
    "MaxCommitAttemptsExceededError",
    "MergeMultipleMatchError",
    "MetadataChangedError",
    "MissingDataFilesError",
    "NonContiguousLogError",
    "ObjectNotFoundError",
    "OperationNotAllowedError",
    "ProtocolChangedError",
    "ProtocolError",
    "ReplaceWhereMismatchError",
    "SchemaMismatchError",
    "StorageError",
    "TableNotFoundError",
    "TimestampNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedProtocolVersionError",
    "VersionNotFoundError",
]


class DeltaError(Exception):
    """Base class of every error deltalog raises about a table, a path or an argument."""

    table: str | None = None
    """The table the error concerns, when known."""
    unreferenced_files: list[str] | None = None
    """Data files a failed write left behind, unreferenced by any commit (relative paths)."""


class TableNotFoundError(DeltaError):
    """The location holds no Delta table (no ``_delta_log``, or an empty one)."""

    location: str | None = None


class VersionNotFoundError(DeltaError):
    """The requested version does not exist, or its log files were cleaned up."""

    version: int | None = None


class TimestampNotFoundError(VersionNotFoundError):
    """No version of the table was committed at or before the requested time."""

    timestamp_ms: int | None = None


class CorruptLogError(DeltaError):
    """A log file (commit, checkpoint, ``_last_checkpoint``, ...) cannot be decoded.

    ``path`` names the file.
    """

    path: str | None = None


class ChecksumMismatchError(CorruptLogError):
    """A version checksum file (``<v>.crc``) disagrees with the state replayed from the log.

    ``path`` names the ``.crc`` file; the message names every field that differs.
    """


class NonContiguousLogError(CorruptLogError):
    """The log has a gap: a version is missing between two that exist."""


class CorruptDataError(DeltaError):
    """A data file or deletion vector cannot be read; ``path`` names it."""

    path: str | None = None


class CorruptDataFileError(CorruptDataError):
    """A data file cannot be decoded."""


class CorruptDeletionVectorError(CorruptDataError):
    """A deletion vector failed its size, magic number or checksum check."""


class InvalidTableError(DeltaError):
    """The table's state breaks the protocol (no protocol or metadata, a bad schema, ...)."""


class ProtocolError(DeltaError):
    """The table's protocol asks for something deltalog does not implement."""

    kind: str | None = None
    """``"reader"`` or ``"writer"``: whose requirement it is."""


class UnsupportedProtocolVersionError(ProtocolError):
    """The table needs a reader or writer protocol version deltalog does not support."""

    version: int | None = None


class UnsupportedFeatureError(ProtocolError):
    """The table uses a table feature deltalog does not support; ``feature`` names it."""

    feature: str | None = None


class InvalidPathError(DeltaError):
    """A path leaves the table root, or cannot be understood as a location."""

    path: str | None = None


class InvalidArgumentError(DeltaError, ValueError):
    """An argument is wrong (a bad URI, option, version, timestamp, ...)."""


class StorageError(DeltaError, OSError):
    """The object store failed (network, permissions, ...); ``path`` names the object."""

    path: str | None = None


class ObjectNotFoundError(StorageError, FileNotFoundError):
    """An object the log refers to does not exist in the store."""


class ArrowError(DeltaError):
    """Arrow or Parquet failed while processing data."""


class CommitConflictError(DeltaError):
    """Another writer committed first, and its changes conflict with ours; nothing of this
    transaction was committed. The subclasses are named as Delta on Spark names its
    exceptions; ``kind`` is that name without ``Exception``."""

    version: int | None = None
    kind: str | None = None


class ConcurrentAppendError(CommitConflictError):
    """A concurrent commit added files that match what this transaction read."""


class ConcurrentDeleteReadError(CommitConflictError):
    """A concurrent commit removed files this transaction read."""


class ConcurrentDeleteDeleteError(CommitConflictError):
    """A concurrent commit removed files this transaction also removes."""


class MetadataChangedError(CommitConflictError):
    """A concurrent commit changed the table's metadata."""


class ProtocolChangedError(CommitConflictError):
    """A concurrent commit changed the table's protocol (or created the table)."""


class ConcurrentTransactionError(CommitConflictError):
    """A concurrent commit wrote the same application id (``txn``) or metadata domain."""


class MaxCommitAttemptsExceededError(CommitConflictError):
    """The transaction lost the race for a version more often than its retry limit allows."""


class CommitStateUnknownError(DeltaError):
    """Writing the commit of ``version`` failed in a way that leaves unknown whether it
    landed: read the table before retrying."""

    version: int | None = None


class SchemaMismatchError(DeltaError, ValueError):
    """Data written does not fit the table's schema; ``column`` names the column."""

    column: str | None = None


class ConstraintViolationError(DeltaError, ValueError):
    """A row written breaks a rule of the table (NOT NULL, a CHECK constraint, an invariant,
    a generated or identity column, a replaceWhere predicate); ``constraint`` names it."""

    constraint: str | None = None


class ReplaceWhereMismatchError(ConstraintViolationError):
    """A row written by an overwrite with a ``predicate`` (``replaceWhere``) does not match
    it (Delta on Spark's ``DELTA_REPLACE_WHERE_MISMATCH``); ``constraint`` is the predicate."""


class OperationNotAllowedError(DeltaError):
    """The operation is not allowed on this table (for example a write to a read-only one)."""


class MissingDataFilesError(DeltaError):
    """A version cannot be restored: data files it needs are gone (vacuumed or deleted)."""

    version: int | None = None
    paths: list[str] | None = None
    """The missing files (at most 100), relative to the table root as the log names them."""


class MergeMultipleMatchError(DeltaError, ValueError):
    """A merge matched one target row with more than one source row while a matched clause
    could update or delete it (Delta on Spark's
    ``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``); nothing was committed."""


class InternalError(DeltaError):
    """A bug in deltalog rather than a problem with the table or the arguments: one of its
    own invariants broke, or one of its jobs panicked; please report it. Never raised for
    something the caller can fix."""

    invariant: str | None = None
    """What should have held (``None`` for a panic or a lost task)."""
