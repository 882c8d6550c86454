//! The steps of a row-level change run by Spark's executors (`deltalog.spark.DeltaTable`'s
//! `delete` and `update`): a plan made on the driver, the rows of each task turned into
//! deletion vectors and files, one commit on the driver (see the core's
//! [`DistributedChange`]). Plans and task outcomes travel as JSON text: picklable, nothing
//! native.

use deltalog_core::distributed::{merge_pruning, ChangeOptions, DistributedChange, TaskOutcome};
use deltalog_core::{Error, Table};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrow_import::PyArrowInput;
use crate::convert::PyStorageOptions;
use crate::errors::{failure_to_py_err, to_py_err};
use crate::results::RawCommit;
use crate::runtime::wait_for_future;
use crate::table::RawDeltaTable;

/// Adds this file's functions to the module `deltalog._core`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(plan_distributed_change, module)?)?;
    module.add_function(wrap_pyfunction!(describe_change_plan, module)?)?;
    module.add_function(wrap_pyfunction!(write_change_task, module)?)?;
    module.add_function(wrap_pyfunction!(commit_distributed_change, module)?)?;
    module.add_function(wrap_pyfunction!(discard_distributed_change, module)?)?;
    module.add_function(wrap_pyfunction!(change_written_paths, module)?)?;
    module.add_function(wrap_pyfunction!(merge_target_pruning, module)?)?;
    Ok(())
}

/// Plans a row-level change of the table at `uri` with `options` (the JSON of the core's
/// `ChangeOptions`); returns the plan's JSON.
#[pyfunction]
#[pyo3(signature = (uri, options, storage_options=None))]
pub fn plan_distributed_change(
    py: Python<'_>,
    uri: String,
    options: &str,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<String> {
    let options: ChangeOptions = serde_json::from_str(options).map_err(|error| {
        to_py_err(
            py,
            Error::InvalidArgument(format!("change options: {error}")),
        )
    })?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    wait_for_future(py, move || async move {
        DistributedChange::plan(table.storage(), options)
            .await?
            .to_json()
    })
}

/// What the engine needs of a plan: `version`, `files` (the candidate paths),
/// `deletion_vectors`, `whole_files`, `row_ids`, `changes`, `schema` (the JSON schema of the
/// rows the tasks write).
#[pyfunction]
pub fn describe_change_plan<'py>(py: Python<'py>, plan: &str) -> PyResult<Bound<'py, PyDict>> {
    let plan = DistributedChange::from_json(plan).map_err(|error| to_py_err(py, error))?;
    let described = PyDict::new(py);
    described.set_item("version", plan.version())?;
    described.set_item("files", plan.candidate_paths())?;
    described.set_item("deletion_vectors", plan.uses_deletion_vectors())?;
    described.set_item("whole_files", plan.removes_whole_files())?;
    described.set_item("row_ids", plan.keeps_row_ids())?;
    described.set_item("changes", plan.writes_changes())?;
    described.set_item("schema", plan.schema_json())?;
    Ok(described)
}

/// Does what the rows of `data` say following `plan` (one task's share); returns the
/// task's outcome as JSON bytes. Errors name the files left behind.
#[pyfunction]
#[pyo3(signature = (uri, plan, data, storage_options=None))]
pub fn write_change_task<'py>(
    py: Python<'py>,
    uri: String,
    plan: &str,
    data: PyArrowInput,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<Bound<'py, PyBytes>> {
    let plan = DistributedChange::from_json(plan).map_err(|error| to_py_err(py, error))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let stream = data.into_stream();
    let outcome = wait_for_future(py, move || async move {
        Ok(plan.write_task(table.storage(), stream).await)
    })?;
    let outcome = outcome.map_err(|failure| failure_to_py_err(py, failure))?;
    let bytes = serde_json::to_vec(&outcome).map_err(|error| {
        to_py_err(
            py,
            Error::internal_invariant(format!("encoding a task's outcome: {error}")),
        )
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// Commits the outcomes of every task (the bytes [`write_change_task`] returned) in one
/// transaction following `plan`; returns the table and its commit.
#[pyfunction]
#[pyo3(signature = (uri, plan, outcomes, storage_options=None))]
pub fn commit_distributed_change(
    py: Python<'_>,
    uri: String,
    plan: &str,
    outcomes: Vec<Bound<'_, PyBytes>>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<(RawDeltaTable, RawCommit)> {
    let plan = DistributedChange::from_json(plan).map_err(|error| to_py_err(py, error))?;
    let outcomes = outcomes
        .iter()
        .map(|bytes| outcome_of(bytes.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| to_py_err(py, error))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let committer = table.clone();
    let outcome = wait_for_future(py, move || async move {
        Ok(plan.commit(committer.storage(), outcomes).await)
    })?;
    let commit = outcome.map_err(|failure| failure_to_py_err(py, failure))?;
    Ok((RawDeltaTable::new(table), RawCommit::from(commit)))
}

/// Deletes what the tasks of a change given up before its commit left besides files (their
/// identity claims).
#[pyfunction]
#[pyo3(signature = (uri, plan, storage_options=None))]
pub fn discard_distributed_change(
    py: Python<'_>,
    uri: String,
    plan: &str,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<()> {
    let plan = DistributedChange::from_json(plan).map_err(|error| to_py_err(py, error))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    wait_for_future(
        py,
        move || async move { plan.discard(table.storage()).await },
    )
}

/// The files (relative to the table root) one task's outcome names as written.
#[pyfunction]
pub fn change_written_paths(py: Python<'_>, outcome: &[u8]) -> PyResult<Vec<String>> {
    let outcome = outcome_of(outcome).map_err(|error| to_py_err(py, error))?;
    Ok(outcome.written_paths())
}

/// What narrows a MERGE's target files, from its `condition` with target columns
/// qualified by `target_alias`: `(target_only, keys)`, the conjuncts naming only the target
/// (alias removed; `None` for none) and the equality keys `(target column, other column
/// path)` (the core's `MergePruning`).
#[pyfunction]
pub fn merge_target_pruning(
    py: Python<'_>,
    condition: &str,
    target_alias: &str,
) -> PyResult<TargetPruning> {
    let pruning = merge_pruning(condition, target_alias).map_err(|error| to_py_err(py, error))?;
    Ok((pruning.target_only, pruning.keys))
}

/// `(target_only, keys)` of [`merge_target_pruning`].
type TargetPruning = (Option<String>, Vec<(String, Vec<String>)>);

fn outcome_of(bytes: &[u8]) -> Result<TaskOutcome, Error> {
    serde_json::from_slice(bytes)
        .map_err(|error| Error::InvalidArgument(format!("not a change task's outcome: {error}")))
}
