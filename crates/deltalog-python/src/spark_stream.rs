//! A table read as a stream (`deltalog.spark`'s streaming source; see the core's
//! [`stream_files`]): offsets as `(version, index, snapshot)` tuples, micro-batches as scan
//! tasks in the one wire format.

use deltalog_core::scan::{stream_files, StreamOffset, StreamOptions, StreamStart};
use deltalog_core::{ScanOptions, ScanTask, Table};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::PyStorageOptions;
use crate::runtime::wait_for_future;

/// An offset as Python holds it: `(version, index, snapshot)`.
pub type OffsetTuple = (u64, i64, bool);

/// A micro-batch's task: its wire bytes, how many files and bytes it reads.
pub type StreamTaskTuple<'py> = (Bound<'py, PyBytes>, usize, u64);

/// Adds this file's functions to the module `deltalog._core`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(stream_initial_offset, module)?)?;
    module.add_function(wrap_pyfunction!(stream_latest_offset, module)?)?;
    module.add_function(wrap_pyfunction!(stream_tasks, module)?)?;
    Ok(())
}

/// The offset before the first file of a stream of the table at `uri`: from the latest
/// snapshot, or from commit `starting_version`, or from the first commit at or after
/// `starting_timestamp_ms`.
#[pyfunction]
#[pyo3(signature = (uri, starting_version=None, starting_timestamp_ms=None, storage_options=None))]
pub fn stream_initial_offset(
    py: Python<'_>,
    uri: String,
    starting_version: Option<u64>,
    starting_timestamp_ms: Option<i64>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<OffsetTuple> {
    let start = match (starting_version, starting_timestamp_ms) {
        (Some(version), _) => StreamStart::Version(version),
        (None, Some(ms)) => StreamStart::Timestamp(ms),
        (None, None) => StreamStart::LatestSnapshot,
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let offset = wait_for_future(py, move || async move {
        StreamOffset::initial(table.storage(), start).await
    })?;
    Ok(tuple(offset))
}

/// The offset after the files a micro-batch starting at `start` reads, within the limits.
#[pyfunction]
#[pyo3(signature = (uri, start, max_files=None, max_bytes=None, ignore_deletes=false, skip_change_commits=false, until_version=None, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn stream_latest_offset(
    py: Python<'_>,
    uri: String,
    start: OffsetTuple,
    max_files: Option<u64>,
    max_bytes: Option<u64>,
    ignore_deletes: bool,
    skip_change_commits: bool,
    until_version: Option<u64>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<OffsetTuple> {
    let options = StreamOptions {
        max_files,
        max_bytes,
        ignore_deletes,
        skip_change_commits,
        until_version,
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let files = wait_for_future(py, move || async move {
        stream_files(table.storage(), offset(start), None, &options).await
    })?;
    Ok(tuple(files.end))
}

/// The scan tasks reading the files after `start` up to `end` (of `columns`, every column
/// when `None`), packed into tasks of about `target_size` bytes.
#[pyfunction]
#[pyo3(signature = (uri, start, end, columns=None, ignore_deletes=false, skip_change_commits=false, target_size=deltalog_core::scan::DEFAULT_TARGET_SIZE, open_cost=deltalog_core::scan::DEFAULT_OPEN_COST, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn stream_tasks<'py>(
    py: Python<'py>,
    uri: String,
    start: OffsetTuple,
    end: OffsetTuple,
    columns: Option<Vec<String>>,
    ignore_deletes: bool,
    skip_change_commits: bool,
    target_size: u64,
    open_cost: u64,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<Vec<StreamTaskTuple<'py>>> {
    let options = StreamOptions {
        ignore_deletes,
        skip_change_commits,
        ..StreamOptions::default()
    };
    let scan_options = ScanOptions {
        columns,
        ..ScanOptions::default()
    };
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let tasks = wait_for_future(py, move || async move {
        let storage = table.storage();
        let files = stream_files(storage, offset(start), Some(offset(end)), &options).await?;
        let tasks = files.tasks(storage, scan_options, target_size, open_cost)?;
        let encode = |task: ScanTask| -> deltalog_core::Result<_> {
            Ok((task.encode()?, task.num_files(), task.size()?))
        };
        tasks
            .into_iter()
            .map(encode)
            .collect::<deltalog_core::Result<Vec<_>>>()
    })?;
    let to_py = |(bytes, files, size): (Vec<u8>, _, _)| (PyBytes::new(py, &bytes), files, size);
    Ok(tasks.into_iter().map(to_py).collect())
}

fn offset((version, index, snapshot): OffsetTuple) -> StreamOffset {
    StreamOffset {
        version,
        index,
        snapshot,
    }
}

fn tuple(offset: StreamOffset) -> OffsetTuple {
    (offset.version, offset.index, offset.snapshot)
}
