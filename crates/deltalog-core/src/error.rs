//! The one error type of the core.
//!
//! Every variant that a caller can cause by handing us a table names the file (or the table)
//! and says what is wrong with it. The Python binding maps each variant to one exception class
//! (`deltalog.DeltaError` and its subclasses), so the variants are the public error taxonomy.

use std::fmt;

/// `Result` with the core [`Error`] as its default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading or writing a Delta table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The location holds no Delta table (no `_delta_log`, or an empty one).
    #[error("no Delta table at {location}: {reason}")]
    TableNotFound { location: String, reason: String },

    /// The requested version does not exist, or its log files were cleaned up.
    #[error("version {version} of {table} cannot be read: {reason}")]
    VersionNotFound {
        table: String,
        version: u64,
        reason: String,
    },

    /// No version of the table was committed at or before the requested time.
    #[error("no version of {table} was committed at or before {timestamp_ms} ms since the epoch: {reason}")]
    TimestampNotFound {
        table: String,
        timestamp_ms: i64,
        reason: String,
    },

    /// The log has a gap: a version is missing between two that exist.
    #[error("the log of {table} is not contiguous: {reason}")]
    NonContiguousLog { table: String, reason: String },

    /// A log file (commit, checkpoint, sidecar, `_last_checkpoint`, checksum) could not be decoded.
    #[error("corrupt log file {path}: {reason}")]
    CorruptLogFile { path: String, reason: String },

    /// A version checksum file (`<v>.crc`) disagrees with the state replayed from the log;
    /// `reason` names every field that differs.
    #[error("version checksum {path} does not match the table state: {reason}")]
    ChecksumMismatch { path: String, reason: String },

    /// A deletion vector could not be read or failed its size, magic or checksum check.
    #[error("corrupt deletion vector {path}: {reason}")]
    CorruptDeletionVector { path: String, reason: String },

    /// A data file could not be decoded.
    #[error("corrupt data file {path}: {reason}")]
    CorruptDataFile { path: String, reason: String },

    /// The table's state breaks the protocol (no protocol or metadata, a bad schema, ...).
    #[error("invalid table state in {table}: {reason}")]
    InvalidTable { table: String, reason: String },

    /// The protocol asks for a reader or writer version this library does not implement.
    #[error("{table} needs {kind} protocol version {version}, which deltalog does not support")]
    UnsupportedProtocolVersion {
        table: String,
        kind: ProtocolKind,
        version: i32,
    },

    /// The table uses a feature this library does not implement.
    #[error("{table} uses the {kind} feature '{feature}', which deltalog does not support")]
    UnsupportedFeature {
        table: String,
        kind: ProtocolKind,
        feature: String,
    },

    /// A path leaves the table root, or cannot be understood as a location.
    #[error("invalid path {path}: {reason}")]
    InvalidPath { path: String, reason: String },

    /// An argument given by the caller is wrong (a bad URI, option, column or filter).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The object store failed (network, permissions, ...).
    #[error("storage error on {path}: {source}")]
    Storage {
        path: String,
        #[source]
        source: object_store::Error,
    },

    /// Arrow or Parquet failed while processing a file.
    #[error("{context}: {source}")]
    Arrow {
        context: String,
        #[source]
        source: arrow_schema::ArrowError,
    },

    /// Another writer committed `version` first and its changes conflict with what this
    /// transaction read or wrote (Delta on Spark's conflict rules; `kind` names the rule). The
    /// transaction wrote nothing to the log; the operation may be run again on a new snapshot.
    #[error("{kind} at version {version} of {table}: {reason}")]
    CommitConflict {
        kind: ConflictKind,
        version: u64,
        table: String,
        reason: String,
    },

    /// Writing the commit of `version` failed in a way that leaves its outcome unknown (a
    /// transport error, and the commit file could not be read back to tell whether it is
    /// ours). The table may or may not hold the commit: read it before retrying.
    #[error("the commit of version {version} of {table} may or may not have happened: {reason}")]
    CommitStateUnknown {
        table: String,
        version: u64,
        reason: String,
    },

    /// Data given to a writer does not fit the table's schema: a column the table does not
    /// have, or a type that cannot be cast to the column's type without loss (spec "Writer
    /// Requirements": every column of a data file must be in the table schema).
    #[error("schema mismatch writing to {table}: column `{column}`: {reason}")]
    SchemaMismatch {
        table: String,
        column: String,
        reason: String,
    },

    /// A row given to a writer breaks a rule of the table: a NOT NULL column, a CHECK
    /// constraint, a column invariant, a generated column or an identity column (spec
    /// "Invariants", "CHECK Constraints", "Generated Columns", "Identity Columns"). `reason`
    /// names the offending row and its values.
    #[error("{constraint} violated in {table}: {reason}")]
    ConstraintViolation {
        table: String,
        constraint: String,
        reason: String,
    },

    /// A row written by an overwrite with a predicate (`replaceWhere`) does not match the
    /// predicate (Delta on Spark's `DELTA_REPLACE_WHERE_MISMATCH`); `reason` names the row.
    #[error("written data does not conform to the partial table overwrite condition '{predicate}' of {table}: {reason}")]
    ReplaceWhereMismatch {
        table: String,
        predicate: String,
        reason: String,
    },

    /// The operation is not allowed on this table (for example a write to a read-only table).
    #[error("{0}")]
    NotAllowed(String),

    /// A merge matched one target row with more than one source row while a matched clause
    /// could update or delete it (Delta on Spark's
    /// `DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE`); `reason` names the row.
    #[error("merge into {table}: {reason}")]
    MergeMultipleMatch { table: String, reason: String },

    /// Version `version` of `table` names data files or deletion vector files that are gone
    /// (deleted by VACUUM or by hand), so it cannot be restored; `paths` names them (at most
    /// 100; data files relative to the table root as the log names them, deletion vector
    /// files by URL).
    #[error("version {version} of {table} cannot be restored: its data or deletion vector files {paths:?} are missing (vacuumed or deleted)")]
    MissingDataFiles {
        table: String,
        version: u64,
        paths: Vec<String>,
    },

    /// deltalog broke one of its own invariants (or a CPU job of its own panicked) while
    /// working on `table` (`None` where the failing code does not know the table): a bug in
    /// deltalog, never caused by the caller's arguments or by the table's content.
    /// `invariant` says what should have held.
    #[error("internal error in deltalog{}: {invariant} (a bug in deltalog, not in the table or the arguments; please report it)", on_table(table.as_deref()))]
    Internal {
        table: Option<String>,
        invariant: String,
    },
}

/// Whether a protocol requirement concerns readers or writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolKind {
    Reader,
    Writer,
}

/// Which conflict rule a concurrent commit broke, named as Delta on Spark names its
/// exceptions (`ConcurrentAppendException`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConflictKind {
    /// The winner added files that match what this transaction read.
    ConcurrentAppend,
    /// The winner removed files this transaction read.
    ConcurrentDeleteRead,
    /// The winner removed files this transaction also removes.
    ConcurrentDeleteDelete,
    /// The winner changed the table's metadata.
    MetadataChanged,
    /// The winner changed the table's protocol.
    ProtocolChanged,
    /// The winner wrote a `txn` of an application id this transaction read or writes, or a
    /// metadata domain this transaction also writes.
    ConcurrentTransaction,
    /// The transaction lost the race more often than its retry limit allows.
    MaxCommitAttemptsExceeded,
}

impl ConflictKind {
    /// The name Delta on Spark gives the conflict's exception, without `Exception`.
    pub fn name(self) -> &'static str {
        match self {
            ConflictKind::ConcurrentAppend => "ConcurrentAppend",
            ConflictKind::ConcurrentDeleteRead => "ConcurrentDeleteRead",
            ConflictKind::ConcurrentDeleteDelete => "ConcurrentDeleteDelete",
            ConflictKind::MetadataChanged => "MetadataChanged",
            ConflictKind::ProtocolChanged => "ProtocolChanged",
            ConflictKind::ConcurrentTransaction => "ConcurrentTransaction",
            ConflictKind::MaxCommitAttemptsExceeded => "MaxCommitAttemptsExceeded",
        }
    }
}

impl fmt::Display for ConflictKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ProtocolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProtocolKind::Reader => "reader",
            ProtocolKind::Writer => "writer",
        })
    }
}

/// " while working on <table>" for the message of [`Error::Internal`], or nothing.
fn on_table(table: Option<&str>) -> String {
    table.map_or_else(String::new, |table| format!(" while working on {table}"))
}

impl Error {
    /// A [`Error::CorruptLogFile`] for `path`.
    pub fn corrupt(path: impl Into<String>, reason: impl fmt::Display) -> Self {
        Error::CorruptLogFile {
            path: path.into(),
            reason: reason.to_string(),
        }
    }

    /// A [`Error::Storage`] for `path`, or [`Error::CorruptLogFile`]-free mapping of "not found".
    pub fn storage(path: impl Into<String>, source: object_store::Error) -> Self {
        Error::Storage {
            path: path.into(),
            source,
        }
    }

    /// A [`Error::Arrow`] with a sentence of context (which should name the file).
    pub fn arrow(context: impl Into<String>, source: arrow_schema::ArrowError) -> Self {
        Error::Arrow {
            context: context.into(),
            source,
        }
    }

    /// A [`Error::InvalidTable`] for `table`.
    pub fn invalid_table(table: impl Into<String>, reason: impl fmt::Display) -> Self {
        Error::InvalidTable {
            table: table.into(),
            reason: reason.to_string(),
        }
    }

    /// A [`Error::Internal`]: deltalog's own `invariant` broke while working on `table`.
    pub fn internal(table: impl Into<String>, invariant: impl fmt::Display) -> Self {
        Error::Internal {
            table: Some(table.into()),
            invariant: invariant.to_string(),
        }
    }

    /// A [`Error::Internal`] raised where the table is not known (deep in an encoder).
    pub fn internal_invariant(invariant: impl fmt::Display) -> Self {
        Error::Internal {
            table: None,
            invariant: invariant.to_string(),
        }
    }

    /// True when the error is the store's "this object does not exist".
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::Storage {
                source: object_store::Error::NotFound { .. },
                ..
            }
        )
    }
}
