//! Row-level changes: `delete` (and `update`) on the table at a location, wrapped by
//! `deltalog.DeltaTable.delete` / `update` (`python/deltalog/_dml.py`).

use deltalog_core::expr::parse_value_sql;
use deltalog_core::ops::{DeleteOptions, UpdateOptions};
use deltalog_core::{Error, Table, WriterOptions};
use pyo3::prelude::*;

use crate::convert::{PyCommitInfo, PyFilter, PyStorageOptions};
use crate::errors::{failure_to_py_err, to_py_err};
use crate::results::RawCommit;
use crate::runtime::wait_for_future;

/// Deletes the rows of the table at `uri` matching `predicate` (every row when `None`) and
/// commits (see [`delete`]). `commit_info` is a JSON object of extra `commitInfo` fields.
#[pyfunction]
#[pyo3(signature = (uri, predicate=None, target_file_size=None, commit_info=None, storage_options=None))]
pub fn delete_rows(
    py: Python<'_>,
    uri: String,
    predicate: Option<PyFilter>,
    target_file_size: Option<u64>,
    commit_info: Option<PyCommitInfo>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<RawCommit> {
    let options = DeleteOptions {
        writer: writer_options(target_file_size),
        commit_info: PyCommitInfo::or_empty(commit_info),
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let predicate = PyFilter::expr(predicate);
    let outcome = wait_for_future(py, move || async move {
        Ok(table.delete(predicate, options).await)
    })?;
    outcome
        .map(RawCommit::from)
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
    commit_info: Option<PyCommitInfo>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<RawCommit> {
    let assignments = set
        .into_iter()
        .map(|(column, text)| parse_value_sql(&text).map(|expr| (column, expr)))
        .collect::<Result<Vec<_>, Error>>()
        .map_err(|error| to_py_err(py, error))?;
    let options = UpdateOptions {
        writer: writer_options(target_file_size),
        commit_info: PyCommitInfo::or_empty(commit_info),
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let predicate = PyFilter::expr(predicate);
    let outcome = wait_for_future(py, move || async move {
        Ok(table.update(assignments, predicate, options).await)
    })?;
    outcome
        .map(RawCommit::from)
        .map_err(|failure| failure_to_py_err(py, failure))
}

pub(crate) fn writer_options(target_file_size: Option<u64>) -> WriterOptions {
    WriterOptions {
        target_file_size,
        ..WriterOptions::default()
    }
}
