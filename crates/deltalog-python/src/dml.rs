//! Row-level changes: `delete` (and `update`) on the table at a location, wrapped by
//! `deltalog.DeltaTable.delete` / `update` (`python/deltalog/_dml.py`).

use deltalog_core::{parse_value_sql, DeleteOptions, Error, Table};
use deltalog_core::{UpdateOptions, WriterOptions};
use pyo3::prelude::*;

use crate::convert::{PyFilter, PyStorageOptions};
use crate::errors::{failure_to_py_err, to_py_err};
use crate::runtime::wait_for_future;
use crate::transaction::{commit_tuple, CommitTuple};

/// Deletes the rows of the table at `uri` matching `predicate` (every row when `None`) and
/// commits (see [`delete`]). `commit_info` is a JSON object of extra `commitInfo` fields.
#[pyfunction]
#[pyo3(signature = (uri, predicate=None, target_file_size=None, commit_info=None, storage_options=None))]
pub fn delete_rows(
    py: Python<'_>,
    uri: String,
    predicate: Option<PyFilter>,
    target_file_size: Option<u64>,
    commit_info: Option<&str>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<CommitTuple> {
    let options = DeleteOptions {
        writer: writer_options(target_file_size),
        commit_info: commit_info_map(commit_info).map_err(|error| to_py_err(py, error))?,
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let predicate = PyFilter::expr(predicate);
    let outcome = wait_for_future(py, move || async move {
        Ok(table.delete(predicate, options).await)
    })?;
    outcome
        .map(commit_tuple)
        .map_err(|failure| failure_to_py_err(py, failure))
}

/// Sets, in the rows of the table at `uri` matching `predicate`, each column of `set` (pairs
/// of a column name and SQL value expression text) and commits (see [`update`]).
#[pyfunction]
#[pyo3(signature = (uri, set, predicate=None, target_file_size=None, commit_info=None, storage_options=None))]
pub fn update_rows(
    py: Python<'_>,
    uri: String,
    set: Vec<(String, String)>,
    predicate: Option<PyFilter>,
    target_file_size: Option<u64>,
    commit_info: Option<&str>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<CommitTuple> {
    let assignments = set
        .into_iter()
        .map(|(column, text)| parse_value_sql(&text).map(|expr| (column, expr)))
        .collect::<Result<Vec<_>, Error>>()
        .map_err(|error| to_py_err(py, error))?;
    let options = UpdateOptions {
        writer: writer_options(target_file_size),
        commit_info: commit_info_map(commit_info).map_err(|error| to_py_err(py, error))?,
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let predicate = PyFilter::expr(predicate);
    let outcome = wait_for_future(py, move || async move {
        Ok(table.update(assignments, predicate, options).await)
    })?;
    outcome
        .map(commit_tuple)
        .map_err(|failure| failure_to_py_err(py, failure))
}

pub(crate) fn writer_options(target_file_size: Option<u64>) -> WriterOptions {
    WriterOptions {
        target_file_size,
        ..WriterOptions::default()
    }
}

pub(crate) fn commit_info_map(
    text: Option<&str>,
) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
    match text {
        None => Ok(serde_json::Map::new()),
        Some(text) => serde_json::from_str(text).map_err(|error| {
            Error::InvalidArgument(format!("commit_info must be a JSON object: {error}"))
        }),
    }
}
