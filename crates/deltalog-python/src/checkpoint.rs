//! Checkpoints, version checksums, log cleanup and log compaction for Python: module functions
//! over a `RawDeltaTable` or `RawSnapshot`, wrapped by `deltalog._maintenance_log`.

use deltalog_core::{CheckpointFormat, CheckpointOptions, VersionChecksum};
use pyo3::prelude::*;

use crate::errors::to_py_err;
use crate::post_commit::{checkpoint_tuple, cleanup_tuple, CheckpointTuple, CleanupTuple};
use crate::runtime::wait_for_future;
use crate::snapshot::RawSnapshot;
use crate::table::RawDeltaTable;

/// A version checksum: `(txn id, table size, files, metadata count, protocol count,
/// in-commit timestamp)`, `(set transactions (app id, version, last updated), domains
/// (domain, configuration), histogram (boundaries, counts, bytes), deleted records, deletion
/// vectors)`, the JSON line, and whether it was read from the `.crc` file.
pub type ChecksumTuple = (
    (Option<String>, i64, i64, i64, i64, Option<i64>),
    (
        Option<Vec<(String, i64, Option<i64>)>>,
        Option<Vec<(String, String)>>,
        Option<(Vec<i64>, Vec<i64>, Vec<i64>)>,
        Option<i64>,
        Option<i64>,
    ),
    String,
    bool,
);

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
) -> PyResult<CheckpointTuple> {
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
    written.map(checkpoint_tuple)
}

/// Deletes expired log files, or with `dry_run` only lists them (see
/// `Table::cleanup_metadata_with`).
#[pyfunction]
#[pyo3(signature = (table, dry_run=false))]
pub fn cleanup_metadata(
    py: Python<'_>,
    table: &RawDeltaTable,
    dry_run: bool,
) -> PyResult<CleanupTuple> {
    let table = table.table().clone();
    let report = wait_for_future(py, move || async move {
        table.cleanup_metadata_with(dry_run).await
    });
    report.map(cleanup_tuple)
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
pub fn version_checksum(py: Python<'_>, snapshot: &RawSnapshot) -> PyResult<ChecksumTuple> {
    let snapshot = snapshot.snapshot();
    let (checksum, stored) = wait_for_future(py, move || async move {
        match snapshot.stored_version_checksum().await? {
            Some(stored) => Ok((stored, true)),
            None => Ok((snapshot.version_checksum().await?, false)),
        }
    })?;
    let text = checksum.to_json().map_err(|error| to_py_err(py, error))?;
    Ok(checksum_tuple(checksum, text, stored))
}

fn checksum_tuple(checksum: VersionChecksum, text: String, stored: bool) -> ChecksumTuple {
    let txns = checksum.set_transactions.map(|txns| {
        let txns = txns.into_iter();
        txns.map(|t| (t.app_id, t.version, t.last_updated))
            .collect()
    });
    let domains = checksum.domain_metadata.map(|domains| {
        let domains = domains.into_iter();
        domains.map(|d| (d.domain, d.configuration)).collect()
    });
    let histogram = checksum
        .file_size_histogram
        .map(|h| (h.sorted_bin_boundaries, h.file_counts, h.total_bytes));
    let counts = (
        checksum.txn_id,
        checksum.table_size_bytes,
        checksum.num_files,
        checksum.num_metadata,
        checksum.num_protocol,
        checksum.in_commit_timestamp_opt,
    );
    let deleted = checksum.num_deleted_records_opt;
    let state = (
        txns,
        domains,
        histogram,
        deleted,
        checksum.num_deletion_vectors_opt,
    );
    (counts, state, text, stored)
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
