//! The three steps of a distributed write (`deltalog.spark`'s writers): a plan made on the
//! driver, data files written by each task, one commit on the driver (see the core's
//! [`DistributedWrite`]). Plans travel as JSON text, the files a task wrote as Arrow IPC
//! stream bytes of the file-list shape: both picklable, nothing native.

use std::io::Cursor;

use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow_array::RecordBatch;
use deltalog_core::distributed::{
    adds_from_file_list, file_list_batch, DistributedWrite, DistributedWriteOptions, MicroBatch,
    StreamingQuery,
};
use deltalog_core::transaction::AddFile;
use deltalog_core::{Error, Table};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow_import::PyArrowInput;
use crate::convert::PyStorageOptions;
use crate::errors::{failure_to_py_err, to_py_err};
use crate::results::RawCommit;
use crate::runtime::wait_for_future;
use crate::table::RawDeltaTable;

/// Adds this file's functions to the module `deltalog._core`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(plan_distributed_write, module)?)?;
    module.add_function(wrap_pyfunction!(write_distributed_files, module)?)?;
    module.add_function(wrap_pyfunction!(commit_distributed_write, module)?)?;
    module.add_function(wrap_pyfunction!(distributed_file_paths, module)?)?;
    module.add_function(wrap_pyfunction!(discard_distributed_write, module)?)?;
    module.add_function(wrap_pyfunction!(streaming_query, module)?)?;
    Ok(())
}

/// Plans writing data of `data`'s schema (its rows are not read) to the table at `uri` with
/// `options` (the JSON of the core's `DistributedWriteOptions`); returns the plan's JSON.
#[pyfunction]
#[pyo3(signature = (uri, data, options, storage_options=None))]
pub fn plan_distributed_write(
    py: Python<'_>,
    uri: String,
    data: PyArrowInput,
    options: &str,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<String> {
    let options: DistributedWriteOptions = serde_json::from_str(options)
        .map_err(|error| to_py_err(py, invalid(format!("write options: {error}"))))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let schema = data.schema.clone();
    wait_for_future(py, move || async move {
        DistributedWrite::plan(table.storage(), schema, options)
            .await?
            .to_json()
    })
}

/// Writes `data` to new data files following `plan` (as a task of the streaming micro-batch
/// `epoch` when given); returns their adds as Arrow IPC stream bytes (one batch of the
/// file-list shape). Errors name the files left behind.
#[pyfunction]
#[pyo3(signature = (uri, plan, data, storage_options=None, epoch=None))]
pub fn write_distributed_files<'py>(
    py: Python<'py>,
    uri: String,
    plan: &str,
    data: PyArrowInput,
    storage_options: Option<PyStorageOptions>,
    epoch: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut plan = DistributedWrite::from_json(plan).map_err(|error| to_py_err(py, error))?;
    if let Some(epoch) = epoch {
        plan = plan.for_micro_batch_task(epoch);
    }
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let stream = data.into_stream();
    let outcome = wait_for_future(py, move || async move {
        Ok(plan.write_files(table.storage(), stream).await)
    })?;
    let adds = outcome.map_err(|failure| failure_to_py_err(py, failure))?;
    let bytes = ipc_bytes(&adds).map_err(|error| to_py_err(py, error))?;
    Ok(PyBytes::new(py, &bytes))
}

/// Commits the files of every task (`files`: the bytes [`write_distributed_files`]
/// returned) in one transaction following `plan`; with `micro_batch`, `(app_id, query_id,
/// epoch_id)`, as that streaming micro-batch (skipped when committed already). Returns the
/// table and its commit.
#[pyfunction]
#[pyo3(signature = (uri, plan, files, micro_batch=None, storage_options=None))]
pub fn commit_distributed_write(
    py: Python<'_>,
    uri: String,
    plan: &str,
    files: Vec<Bound<'_, PyBytes>>,
    micro_batch: Option<(String, String, i64)>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<(RawDeltaTable, RawCommit)> {
    let mut plan = DistributedWrite::from_json(plan).map_err(|error| to_py_err(py, error))?;
    if let Some((app_id, query_id, epoch_id)) = micro_batch {
        plan = plan.for_micro_batch(MicroBatch {
            app_id,
            query_id,
            epoch_id,
        });
    }
    let mut adds = Vec::new();
    for message in &files {
        adds.extend(adds_of_ipc(message.as_bytes()).map_err(|error| to_py_err(py, error))?);
    }
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let committer = table.clone();
    let outcome = wait_for_future(py, move || async move {
        Ok(plan.commit(committer.storage(), adds).await)
    })?;
    let commit = outcome.map_err(|failure| failure_to_py_err(py, failure))?;
    Ok((RawDeltaTable::new(table), RawCommit::from(commit)))
}

/// Deletes what the tasks of a write given up before its commit left besides data files
/// (the identity claims of `plan`, of the streaming micro-batch `epoch` when given).
#[pyfunction]
#[pyo3(signature = (uri, plan, storage_options=None, epoch=None))]
pub fn discard_distributed_write(
    py: Python<'_>,
    uri: String,
    plan: &str,
    storage_options: Option<PyStorageOptions>,
    epoch: Option<i64>,
) -> PyResult<()> {
    let mut plan = DistributedWrite::from_json(plan).map_err(|error| to_py_err(py, error))?;
    if let Some(epoch) = epoch {
        plan = plan.for_micro_batch_task(epoch);
    }
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    wait_for_future(
        py,
        move || async move { plan.discard(table.storage()).await },
    )
}

/// The `(app_id, query_id)` of a streaming query writing with the sink option `app_id`
/// (`txnAppId`) and its checkpoint at `checkpoint_location` (see the core's
/// [`StreamingQuery::identify`]): the first two items of its `micro_batch`.
#[pyfunction]
#[pyo3(signature = (app_id=None, checkpoint_location=None))]
pub fn streaming_query(
    py: Python<'_>,
    app_id: Option<String>,
    checkpoint_location: Option<String>,
) -> PyResult<(String, String)> {
    let query = wait_for_future(py, move || async move {
        StreamingQuery::identify(app_id, checkpoint_location.as_deref()).await
    })?;
    Ok((query.app_id, query.query_id))
}

/// The paths (relative to the table root) of the files in the bytes of one task.
#[pyfunction]
pub fn distributed_file_paths(py: Python<'_>, files: &[u8]) -> PyResult<Vec<String>> {
    let adds = adds_of_ipc(files).map_err(|error| to_py_err(py, error))?;
    Ok(adds.into_iter().map(|add| add.path).collect())
}

fn ipc_bytes(adds: &[AddFile]) -> Result<Vec<u8>, Error> {
    let batch = file_list_batch(adds)?;
    let arrow_error = |source| Error::arrow("encoding the written files", source);
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema()).map_err(arrow_error)?;
    writer.write(&batch).map_err(arrow_error)?;
    writer.into_inner().map_err(arrow_error)
}

fn adds_of_ipc(bytes: &[u8]) -> Result<Vec<AddFile>, Error> {
    let arrow_error = |source| Error::arrow("decoding the written files of a task", source);
    let reader = StreamReader::try_new(Cursor::new(bytes), None).map_err(arrow_error)?;
    let mut adds = Vec::new();
    for batch in reader {
        let batch: RecordBatch = batch.map_err(arrow_error)?;
        adds.extend(adds_from_file_list(&batch)?);
    }
    Ok(adds)
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}
