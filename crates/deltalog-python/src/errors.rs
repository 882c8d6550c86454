//! The one mapping from the core [`Error`] to the Python exception hierarchy.
//!
//! The classes are defined in `python/deltalog/exceptions.py` (so they carry docstrings,
//! typed attributes and Python base classes such as `ValueError`); each core variant maps to
//! exactly one of them, and the fields that name what went wrong (the file, the version, the
//! feature) become attributes of the exception.

use deltalog_core::write::WriteFailure;
use deltalog_core::{ConflictKind, Error};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

/// The Python module that defines the exception classes.
const EXCEPTIONS_MODULE: &str = "deltalog.exceptions";

static EXCEPTIONS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The Python exception for `error`: one class per variant, with the message of the core
/// error and its identifying fields as attributes. A storage "not found" becomes
/// `ObjectNotFoundError` (also a `FileNotFoundError`); variants added to the core later fall
/// back to the base class `DeltaError`.
pub fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
    let (class_name, attributes) = classify(&error);
    new_exception(py, class_name, &error.to_string(), attributes)
}

/// `deltalog.InternalError`: a bug in deltalog (a panic or a lost task), never the caller's.
pub fn internal_error(py: Python<'_>, message: &str) -> PyErr {
    new_exception(py, "InternalError", message, Vec::new())
}

/// The Python exception for a failed write: that of its error, with the data files it
/// wrote and left unreferenced as `unreferenced_files` (paths relative to the table root).
pub fn failure_to_py_err(py: Python<'_>, failure: WriteFailure) -> PyErr {
    let (class_name, mut attributes) = classify(&failure.error);
    attributes.push(("unreferenced_files", Value::Texts(failure.written_files)));
    new_exception(py, class_name, &failure.error.to_string(), attributes)
}

/// The class of a commit conflict, named as Delta on Spark names its exception.
fn conflict_class(kind: ConflictKind) -> &'static str {
    match kind {
        ConflictKind::ConcurrentAppend => "ConcurrentAppendError",
        ConflictKind::ConcurrentDeleteRead => "ConcurrentDeleteReadError",
        ConflictKind::ConcurrentDeleteDelete => "ConcurrentDeleteDeleteError",
        ConflictKind::MetadataChanged => "MetadataChangedError",
        ConflictKind::ProtocolChanged => "ProtocolChangedError",
        ConflictKind::ConcurrentTransaction => "ConcurrentTransactionError",
        ConflictKind::MaxCommitAttemptsExceeded => "MaxCommitAttemptsExceededError",
    }
}

/// An attribute value of an exception.
enum Value {
    Texts(Vec<String>),
    Text(String),
    Unsigned(u64),
    Signed(i64),
}

type Attributes = Vec<(&'static str, Value)>;

fn classify(error: &Error) -> (&'static str, Attributes) {
    use Value::{Signed, Text, Unsigned};
    let text = |value: &str| Text(value.to_string());
    match error {
        Error::TableNotFound { location, .. } => {
            ("TableNotFoundError", vec![("location", text(location))])
        }
        Error::VersionNotFound { table, version, .. } => (
            "VersionNotFoundError",
            vec![("table", text(table)), ("version", Unsigned(*version))],
        ),
        Error::TimestampNotFound {
            table,
            timestamp_ms,
            ..
        } => (
            "TimestampNotFoundError",
            vec![
                ("table", text(table)),
                ("timestamp_ms", Signed(*timestamp_ms)),
            ],
        ),
        Error::NonContiguousLog { table, .. } => {
            ("NonContiguousLogError", vec![("table", text(table))])
        }
        Error::CorruptLogFile { path, .. } => ("CorruptLogError", vec![("path", text(path))]),
        Error::ChecksumMismatch { path, .. } => {
            ("ChecksumMismatchError", vec![("path", text(path))])
        }
        Error::CorruptDeletionVector { path, .. } => {
            ("CorruptDeletionVectorError", vec![("path", text(path))])
        }
        Error::CorruptDataFile { path, .. } => ("CorruptDataFileError", vec![("path", text(path))]),
        Error::InvalidTable { table, .. } => ("InvalidTableError", vec![("table", text(table))]),
        Error::UnsupportedProtocolVersion {
            table,
            kind,
            version,
        } => (
            "UnsupportedProtocolVersionError",
            vec![
                ("table", text(table)),
                ("kind", Text(kind.to_string())),
                ("version", Signed(i64::from(*version))),
            ],
        ),
        Error::UnsupportedFeature {
            table,
            kind,
            feature,
        } => (
            "UnsupportedFeatureError",
            vec![
                ("table", text(table)),
                ("kind", Text(kind.to_string())),
                ("feature", text(feature)),
            ],
        ),
        Error::InvalidPath { path, .. } => ("InvalidPathError", vec![("path", text(path))]),
        Error::InvalidArgument(_) => ("InvalidArgumentError", Vec::new()),
        Error::Storage { path, .. } if error.is_not_found() => {
            ("ObjectNotFoundError", vec![("path", text(path))])
        }
        Error::Storage { path, .. } => ("StorageError", vec![("path", text(path))]),
        Error::Arrow { .. } => ("ArrowError", Vec::new()),
        Error::CommitConflict { kind, version, .. } => (
            conflict_class(*kind),
            vec![("version", Unsigned(*version)), ("kind", text(kind.name()))],
        ),
        Error::CommitStateUnknown { table, version, .. } => (
            "CommitStateUnknownError",
            vec![("table", text(table)), ("version", Unsigned(*version))],
        ),
        Error::SchemaMismatch { table, column, .. } => (
            "SchemaMismatchError",
            vec![("table", text(table)), ("column", text(column))],
        ),
        Error::ConstraintViolation {
            table, constraint, ..
        } => (
            "ConstraintViolationError",
            vec![("table", text(table)), ("constraint", text(constraint))],
        ),
        Error::ReplaceWhereMismatch {
            table, predicate, ..
        } => (
            "ReplaceWhereMismatchError",
            vec![("table", text(table)), ("constraint", text(predicate))],
        ),
        Error::NotAllowed(_) => ("OperationNotAllowedError", Vec::new()),
        Error::MissingDataFiles {
            table,
            version,
            paths,
        } => (
            "MissingDataFilesError",
            vec![
                ("table", text(table)),
                ("version", Unsigned(*version)),
                ("paths", Value::Texts(paths.clone())),
            ],
        ),
        Error::MergeMultipleMatch { table, .. } => {
            ("MergeMultipleMatchError", vec![("table", text(table))])
        }
        Error::Internal { table, invariant } => {
            let mut attributes = vec![("invariant", text(invariant))];
            if let Some(table) = table {
                attributes.push(("table", text(table)));
            }
            ("InternalError", attributes)
        }
        _ => ("DeltaError", Vec::new()),
    }
}

/// An instance of `deltalog.exceptions.<class_name>(message)` with `attributes` set. Should
/// the exceptions module be unusable, a `RuntimeError` carries the message and says why.
fn new_exception(py: Python<'_>, class_name: &str, message: &str, attributes: Attributes) -> PyErr {
    build_exception(py, class_name, message, attributes).unwrap_or_else(|failure| {
        PyRuntimeError::new_err(format!(
            "{message} (and the exception class {EXCEPTIONS_MODULE}.{class_name} is unavailable: {failure})"
        ))
    })
}

fn build_exception(
    py: Python<'_>,
    class_name: &str,
    message: &str,
    attributes: Attributes,
) -> PyResult<PyErr> {
    let module = EXCEPTIONS
        .get_or_try_init(py, || {
            PyModule::import(py, EXCEPTIONS_MODULE).map(Bound::unbind)
        })?
        .bind(py);
    let exception = module.getattr(class_name)?.call1((message,))?;
    for (name, value) in attributes {
        match value {
            Value::Texts(texts) => exception.setattr(name, texts)?,
            Value::Text(text) => exception.setattr(name, text)?,
            Value::Unsigned(number) => exception.setattr(name, number)?,
            Value::Signed(number) => exception.setattr(name, number)?,
        }
    }
    Ok(PyErr::from_value(exception))
}
