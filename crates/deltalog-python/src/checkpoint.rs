//! Checkpoints, version checksums, log cleanup and log compaction for Python: module functions
//! over a `RawDeltaTable` or `RawSnapshot`, wrapped by `deltalog._maintenance_log`.

use deltalog_core::log::CheckpointFormat;
use deltalog_core::maintenance::CheckpointOptions;
use pyo3::prelude::*;

use crate::errors::to_py_err;
use crate::results::{RawCheckpoint, RawCleanup, RawVersionChecksum};
use crate::runtime::wait_for_future;
use crate::snapshot::RawSnapshot;
use crate::table::RawDeltaTable;

/// Writes a checkpoint of `version` (the latest when `None`); see `Table::checkpoint_with`.
/// `v2_format` is `parquet` or `json`; `None` leaves it to the core
/// (`CheckpointOptions::manifest_format`). With `dry_run` nothing is written and the tuple
/// describes what would be.
#[pyfunction]
#[pyo3(signature = (
    table, version=None, part_size=None, v2_format=None, v2_sidecars=true, classic_compat=false,
    dry_run=false
))]
#[allow(clippy::too_many_arguments)]
pub fn write_checkpoint(
    py: Python<'_>,
    table: &RawDeltaTable,
    version: Option<u64>,
    part_size: Option<u64>,
    v2_format: Option<&str>,
    v2_sidecars: bool,
    classic_compat: bool,
    dry_run: bool,
) -> PyResult<RawCheckpoint> {
    let v2_format = match v2_format {
        None => None,
        Some("parquet") => Some(CheckpointFormat::Parquet),
        Some("json") => Some(CheckpointFormat::Json),
        Some(other) => {
            let message = format!("v2_format must be 'parquet' or 'json', got {other:?}");
            return Err(to_py_err(
                py,
                deltalog_core::Error::InvalidArgument(message),
            ));
        }
    };
    let options = CheckpointOptions {
        part_size,
        v2_format,
        v2_sidecars,
        classic_compat,
        dry_run,
        ..CheckpointOptions::default()
    };
    let table = table.table().clone();
    let written = wait_for_future(py, move || async move {
        table.checkpoint_with(version, &options).await
    });
    written.map(RawCheckpoint::from)
}

/// Deletes expired log files, or with `dry_run` only lists them (see
/// `Table::cleanup_metadata_with`).
#[pyfunction]
#[pyo3(signature = (table, dry_run=false))]
pub fn cleanup_metadata(
    py: Python<'_>,
    table: &RawDeltaTable,
    dry_run: bool,
) -> PyResult<RawCleanup> {
    let table = table.table().clone();
    let report = wait_for_future(py, move || async move {
        table.cleanup_metadata_with(dry_run).await
    });
    report.map(RawCleanup::from)
}

/// Writes the log compaction file of `start_version..=end_version`; returns its URL.
#[pyfunction]
pub fn compact_logs(
    py: Python<'_>,
    table: &RawDeltaTable,
    start_version: u64,
    end_version: u64,
) -> PyResult<String> {
    let table = table.table().clone();
    wait_for_future(py, move || async move {
        table.compact_logs(start_version, end_version).await
    })
}

/// The version checksum of `snapshot`'s version as its JSON line, and whether it was read
/// from the `.crc` file (else it was computed from the state).
#[pyfunction]
pub fn version_checksum(py: Python<'_>, snapshot: &RawSnapshot) -> PyResult<RawVersionChecksum> {
    let snapshot = snapshot.snapshot();
    let (checksum, stored) = wait_for_future(py, move || async move {
        match snapshot.stored_version_checksum().await? {
            Some(stored) => Ok((stored, true)),
            None => Ok((snapshot.version_checksum().await?, false)),
        }
    })?;
    let text = checksum.to_json().map_err(|error| to_py_err(py, error))?;
    Ok(RawVersionChecksum::new(checksum, text, stored))
}

/// Checks the `.crc` file of `snapshot`'s version against its state; false when there is none.
#[pyfunction]
pub fn validate_checksum(py: Python<'_>, snapshot: &RawSnapshot) -> PyResult<bool> {
    let snapshot = snapshot.snapshot();
    wait_for_future(
        py,
        move || async move { snapshot.validate_checksum().await },
    )
}
