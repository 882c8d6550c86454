//! `RawScan`: a planned read of a snapshot's rows, wrapped by `deltalog.Scan`.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use deltalog_core::scan::Scan;
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use tokio::runtime::Runtime;

use crate::arrow_export::{export_schema, RawArrowStream, STREAM_CAPSULE};
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

#[pymethods]
impl RawScan {
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
    /// batches, several at once, in bounded memory.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let runtime = shared_runtime()?;
        let stream = {
            let _entered = runtime.enter();
            self.inner.stream()
        };
        let reader = BlockingReader {
            schema: self.inner.schema(),
            stream,
            runtime,
        };
        let exported = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, exported, STREAM_CAPSULE)
    }

    /// The schema of the rows as an `ArrowSchema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        export_schema(py, &self.inner.schema())
    }

    /// The names of the output columns.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        let schema = self.inner.schema();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    }
}

/// Pulls batches from the scan's stream by blocking on the shared runtime; the consumer of
/// the C stream calls it from its own thread.
struct BlockingReader {
    schema: SchemaRef,
    stream: BoxStream<'static, deltalog_core::Result<RecordBatch>>,
    runtime: Arc<Runtime>,
}

impl Iterator for BlockingReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.runtime.block_on(self.stream.next())?;
        Some(item.map_err(|error| ArrowError::ExternalError(Box::new(error))))
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
