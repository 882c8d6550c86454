//! `RawSnapshot`: one immutable version of a table, wrapped by `deltalog.Snapshot`.

use deltalog_core::Snapshot;
use pyo3::prelude::*;
use serde::Serialize;

use crate::arrow_export::{RawArrowStream, RawSchema};
use crate::errors::internal_error;
use crate::filter::filter_from_py;
use crate::runtime::wait_for_future;
use crate::scan::RawScan;
use crate::table::session_time_zone;
use deltalog_core::scan::{deletion_vectors, Scan, ScanOptions};

/// A core [`Snapshot`]: the table's state at one version.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawSnapshot {
    inner: Snapshot,
}

impl RawSnapshot {
    /// Wraps a core snapshot.
    pub fn new(inner: Snapshot) -> Self {
        RawSnapshot { inner }
    }
}

#[pymethods]
impl RawSnapshot {
    /// The version of this snapshot.
    #[getter]
    fn version(&self) -> u64 {
        self.inner.version()
    }

    /// When the version was committed, in ms since the epoch (UTC).
    #[getter]
    fn timestamp_ms(&self) -> i64 {
        self.inner.timestamp_ms()
    }

    /// The number of active data files.
    #[getter]
    fn num_files(&self) -> usize {
        self.inner.num_files()
    }

    /// The total size in bytes of the active data files.
    #[getter]
    fn total_size(&self) -> i64 {
        self.inner.total_size()
    }

    /// The partition columns, in order.
    #[getter]
    fn partition_columns(&self) -> Vec<String> {
        self.inner.partition_columns().to_vec()
    }

    /// The logical schema.
    fn schema(&self, py: Python<'_>) -> PyResult<RawSchema> {
        let delta_json = to_json(py, self.inner.schema())?;
        Ok(RawSchema::new(self.inner.arrow_schema(), delta_json))
    }

    /// The `protocol` action in force, as its JSON object.
    fn protocol_json(&self, py: Python<'_>) -> PyResult<String> {
        to_json(py, self.inner.protocol())
    }

    /// The `metaData` action in force, as its JSON object.
    fn metadata_json(&self, py: Python<'_>) -> PyResult<String> {
        to_json(py, self.inner.metadata())
    }

    /// The active files (see [`Snapshot::files`]).
    #[pyo3(signature = (with_stats=false))]
    fn files(&self, py: Python<'_>, with_stats: bool) -> PyResult<RawArrowStream> {
        let snapshot = self.inner.clone();
        let (schema, batches) =
            wait_for_future(py, move || async move { snapshot.files(with_stats).await })?;
        Ok(RawArrowStream::new(schema, batches))
    }

    /// The version of the last transaction of application `app_id`, if any.
    fn transaction_version(&self, app_id: &str) -> Option<i64> {
        self.inner.transaction_version(app_id)
    }

    /// The configuration of `domain`, unless it is absent or removed.
    fn domain_metadata(&self, domain: &str) -> Option<String> {
        self.inner.domain_metadata(domain).map(str::to_string)
    }

    /// Plans a read of the rows: `columns` (logical names), a filter (SQL-like text or the
    /// DNF form), the session `timezone` for partition timestamps, and row tracking columns.
    #[pyo3(signature = (columns=None, filter=None, timezone=None, row_tracking=false))]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<&Bound<'_, PyAny>>,
        timezone: Option<&str>,
        row_tracking: bool,
    ) -> PyResult<RawScan> {
        let timezone = session_time_zone(py, timezone)?;
        let options = ScanOptions {
            columns,
            filter: filter_from_py(filter)?,
            timezone,
            row_tracking,
            ..ScanOptions::default()
        };
        let snapshot = self.inner.clone();
        wait_for_future(
            py,
            move || async move { Scan::new(&snapshot, options).await },
        )
        .map(RawScan::new)
    }

    /// Every deletion vector, evaluated: `path` and `deleted_rows` (sorted row indexes).
    fn deletion_vectors(&self, py: Python<'_>) -> PyResult<RawArrowStream> {
        let snapshot = self.inner.clone();
        let batch = wait_for_future(py, move || async move { deletion_vectors(&snapshot).await })?;
        Ok(RawArrowStream::new(batch.schema(), vec![batch]))
    }

    /// A snapshot at the table's newest version, reading only the commits added since.
    fn refresh(&self, py: Python<'_>) -> PyResult<RawSnapshot> {
        let snapshot = self.inner.clone();
        wait_for_future(py, move || async move { snapshot.refresh().await }).map(RawSnapshot::new)
    }
}

fn to_json<T: Serialize>(py: Python<'_>, value: &T) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|error| internal_error(py, &format!("cannot serialize to JSON: {error}")))
}
