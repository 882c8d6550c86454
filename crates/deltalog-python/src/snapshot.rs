//! `RawSnapshot`: one immutable version of a table, wrapped by `deltalog.Snapshot`.

use deltalog_core::scan::{deletion_vectors, NativeColumns};
use deltalog_core::snapshot::HeadSource;
use deltalog_core::{Scan, ScanOptions, Snapshot, TableConfiguration};
use pyo3::prelude::*;

use crate::arrow_export::{RawArrowStream, RawSchema};
use crate::convert::{to_py, PyFilter, PyTimeZone};
use crate::errors::to_py_err;
use crate::results::{RawMetadata, RawProtocol};
use crate::runtime::wait_for_future;
use crate::scan::RawScan;

/// The selected columns for a plain Parquet reader: per column its logical field and its
/// physical field (`None` for a partition column) as dicts, and why the reader cannot read
/// them as stored.
type NativeColumnsTuple<'py> = (
    Vec<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)>,
    Option<String>,
);

/// A core [`Snapshot`]: the table's state at one version. Opened lazily (protocol and
/// metadata, from the version's `.crc` when it has one), its file list is replayed the first
/// time something needs it.
#[pyclass(frozen, module = "deltalog._core")]
#[derive(Clone)]
pub struct RawSnapshot {
    inner: Snapshot,
}

impl RawSnapshot {
    /// Wraps a core snapshot.
    pub fn new(inner: Snapshot) -> Self {
        RawSnapshot { inner }
    }

    /// The core snapshot.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.clone()
    }

    fn config(&self) -> &TableConfiguration {
        self.inner.table_configuration()
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

    /// True when the file list has been replayed.
    #[getter]
    fn files_loaded(&self) -> bool {
        self.inner.files_replayed()
    }

    /// The `.crc` file the protocol and metadata were read from, when they were.
    #[getter]
    fn head_checksum(&self) -> Option<String> {
        match self.inner.source() {
            HeadSource::Checksum(crc) => Some(crc.clone()),
            HeadSource::Log => None,
        }
    }

    /// The number of active data files: the `.crc` file's `numFiles` while the file list is
    /// not replayed and the snapshot opened from one, else counted from the file list.
    #[getter]
    fn num_files(&self, py: Python<'_>) -> PyResult<u64> {
        let snapshot = self.snapshot();
        let size = wait_for_future(py, move || async move { snapshot.table_size().await })?;
        Ok(size.num_files)
    }

    /// The total size in bytes of the active data files: the `.crc` file's `tableSizeBytes`
    /// while the file list is not replayed and the snapshot opened from one.
    #[getter]
    fn total_size(&self, py: Python<'_>) -> PyResult<u64> {
        let snapshot = self.snapshot();
        let size = wait_for_future(py, move || async move { snapshot.table_size().await })?;
        Ok(size.size_in_bytes)
    }

    /// The partition columns, in order.
    #[getter]
    fn partition_columns(&self) -> Vec<String> {
        self.config().partition_columns().to_vec()
    }

    /// The logical schema.
    fn schema(&self) -> RawSchema {
        let config = self.config();
        RawSchema::new(config.arrow_schema(), config.schema().clone())
    }

    /// The `protocol` action in force.
    fn protocol(&self) -> RawProtocol {
        self.config().protocol().clone().into()
    }

    /// The `metaData` action in force.
    fn metadata(&self) -> RawMetadata {
        self.config().metadata().clone().into()
    }

    /// The active files (see [`Snapshot::files`]).
    #[pyo3(signature = (with_stats=false))]
    fn files(&self, py: Python<'_>, with_stats: bool) -> PyResult<RawArrowStream> {
        let snapshot = self.snapshot();
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
    /// DNF form), the session `timezone` for partition timestamps, row tracking columns, row
    /// addresses (`__deltalog_file`, `__deltalog_row_index`), and only the files `files`
    /// (paths as the file list names them) when given.
    #[pyo3(signature = (
        columns=None, filter=None, timezone=None, row_tracking=false, row_address=false,
        files=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<PyFilter>,
        timezone: Option<PyTimeZone>,
        row_tracking: bool,
        row_address: bool,
        files: Option<Vec<String>>,
    ) -> PyResult<RawScan> {
        let (filter, timezone) = (PyFilter::expr(filter), PyTimeZone::or_utc(timezone));
        let options = ScanOptions {
            columns,
            filter,
            timezone,
            row_tracking,
            row_address,
            only_files: files.map(|paths| std::sync::Arc::new(paths.into_iter().collect())),
            ..ScanOptions::default()
        };
        let snapshot = self.snapshot();
        let scan = move || async move { Scan::new(&snapshot, options).await };
        wait_for_future(py, scan).map(RawScan::new)
    }

    /// The columns `columns` (all when `None`) for a plain Parquet reader (see
    /// [`NativeColumns`]).
    #[pyo3(signature = (columns=None))]
    fn native_columns<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
    ) -> PyResult<NativeColumnsTuple<'py>> {
        let (metadata, schema) = (self.config().metadata(), self.config().schema());
        let native = NativeColumns::of(metadata, schema, columns.as_deref());
        let native = native.map_err(|error| to_py_err(py, error))?;
        let pair = |c: &_| native_column(py, c);
        let columns = native.columns.iter().map(pair).collect::<PyResult<_>>()?;
        Ok((columns, native.obstacle))
    }

    /// Every deletion vector, evaluated: `path` and `deleted_rows` (sorted row indexes).
    fn deletion_vectors(&self, py: Python<'_>) -> PyResult<RawArrowStream> {
        let snapshot = self.snapshot();
        let batch = wait_for_future(py, move || async move { deletion_vectors(&snapshot).await })?;
        Ok(RawArrowStream::new(batch.schema(), vec![batch]))
    }

    /// A snapshot at the table's newest version, reading only the commits added since.
    fn refresh(&self, py: Python<'_>) -> PyResult<RawSnapshot> {
        let snapshot = self.snapshot();
        wait_for_future(py, move || async move { snapshot.refresh().await }).map(RawSnapshot::new)
    }
}

/// One native column as its logical and physical field dicts, as a read shows them: without
/// field metadata and `void` struct fields.
fn native_column<'py>(
    py: Python<'py>,
    column: &deltalog_core::scan::NativeColumn,
) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
    let physical = column.physical.as_ref();
    let physical = physical.map(|f| to_py(py, &f.read_form())).transpose()?;
    Ok((to_py(py, &column.logical.read_form())?, physical))
}
