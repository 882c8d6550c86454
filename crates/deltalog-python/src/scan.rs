//! `RawScan`: a planned read of a snapshot's rows, wrapped by `deltalog.Scan`.

use deltalog_core::{Scan, ScanTask};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

use crate::arrow_export::{export_schema, export_stream, RawArrowStream};
use crate::convert::PyStorageOptions;
use crate::errors::to_py_err;
use crate::runtime::{shared_runtime, wait_for_future};

/// A core [`Scan`]: the files to read and how, planned once.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawScan {
    inner: Scan,
}

impl RawScan {
    /// Wraps a planned scan.
    pub fn new(inner: Scan) -> Self {
        RawScan { inner }
    }
}

/// One task of a scan, as Python receives it: the encoded task (see [`ScanTask::encode`]),
/// its number of files and their total size in bytes.
type TaskTuple<'py> = (Bound<'py, PyBytes>, usize, u64);

#[pymethods]
impl RawScan {
    /// The scan of the task that `task` encodes (see [`ScanTask::decode`]), through a store
    /// opened with `storage_options`, without reading the log.
    #[staticmethod]
    #[pyo3(signature = (task, storage_options=None))]
    fn from_task(
        py: Python<'_>,
        task: &[u8],
        storage_options: Option<PyStorageOptions>,
    ) -> PyResult<Self> {
        ScanTask::decode(task)
            .and_then(|task| task.scan(&PyStorageOptions::or_empty(storage_options)))
            .map(RawScan::new)
            .map_err(|error| to_py_err(py, error))
    }

    /// The scan split into tasks of about `target_size` bytes (see [`Scan::tasks`]), encoded.
    fn tasks<'py>(
        &self,
        py: Python<'py>,
        target_size: u64,
        open_cost: u64,
    ) -> PyResult<Vec<TaskTuple<'py>>> {
        let encode = |task: ScanTask| -> deltalog_core::Result<_> {
            Ok((task.encode()?, task.num_files(), task.size()?))
        };
        let tasks = self.inner.tasks(target_size, open_cost);
        let encoded = tasks.and_then(|tasks| tasks.into_iter().map(encode).collect());
        let encoded: Vec<_> = encoded.map_err(|error| to_py_err(py, error))?;
        let to_py = |(bytes, files, size): (Vec<u8>, _, _)| (PyBytes::new(py, &bytes), files, size);
        Ok(encoded.into_iter().map(to_py).collect())
    }

    /// The files for a plain Parquet reader (see [`Scan::native_files`]): their URLs, and why
    /// it cannot read them as they are (`None` when it can).
    fn native_files(&self, py: Python<'_>) -> PyResult<(Vec<String>, Option<String>)> {
        let native = self.inner.native_files().map_err(|e| to_py_err(py, e))?;
        Ok((native.urls, native.obstacle))
    }

    /// The data files left after partition pruning and statistics skipping.
    fn files(&self) -> RawArrowStream {
        RawArrowStream::new(self.inner.files_schema(), self.inner.files().to_vec())
    }

    /// Every row, read now (errors keep their deltalog exception class).
    fn to_batches(&self, py: Python<'_>) -> PyResult<RawArrowStream> {
        let scan = self.inner.clone();
        let batches = wait_for_future(py, move || async move { scan.to_batches().await })?;
        Ok(RawArrowStream::new(self.inner.schema(), batches))
    }

    /// The rows as a lazy `ArrowArrayStream` capsule: files are read as the consumer pulls
    /// batches, several at once, in bounded memory; in `requested_schema` when given (see
    /// [`export_stream`]).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let stream = {
            let _entered = shared_runtime()?.enter();
            self.inner.stream()
        };
        export_stream(py, self.inner.schema(), stream, requested_schema)
    }

    /// The schema of the rows as an `ArrowSchema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        export_schema(py, &self.inner.schema())
    }

    /// The table root as a URL ending in '/'.
    #[getter]
    fn table_uri(&self) -> &str {
        self.inner.table_uri()
    }

    /// The table version the scan reads.
    #[getter]
    fn version(&self) -> u64 {
        self.inner.version()
    }

    /// The names of the output columns.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        let schema = self.inner.schema();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    }
}
