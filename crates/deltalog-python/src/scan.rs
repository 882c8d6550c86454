//! `RawScan`: a planned read of a snapshot's rows, wrapped by `deltalog.Scan`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, RecordBatchReader};
use arrow::datatypes::Int64Type;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use deltalog_core::actions::{Metadata, Protocol};
use deltalog_core::scan::{Scan, ScanOptions};
use deltalog_core::storage::Storage;
use deltalog_core::{Error, Table};
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};
use tokio::runtime::Runtime;

use crate::arrow_export::{export_schema, RawArrowStream, STREAM_CAPSULE};
use crate::errors::to_py_err;
use crate::filter::filter_from_py;
use crate::runtime::{shared_runtime, wait_for_future};
use crate::table::session_time_zone;

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
    /// The scan of the files in `files_ipc` (file list rows as an Arrow IPC stream, from
    /// [`RawScan::tasks`]) of the table version described by its protocol and metadata
    /// actions (JSON), without reading the log (see [`Scan::over_files`]).
    #[staticmethod]
    #[pyo3(signature = (
        table_uri, storage_options, protocol_json, metadata_json, files_ipc,
        columns=None, filter=None, timezone=None, row_tracking=false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn from_task(
        py: Python<'_>,
        table_uri: &str,
        storage_options: Option<HashMap<String, String>>,
        protocol_json: &str,
        metadata_json: &str,
        files_ipc: &[u8],
        columns: Option<Vec<String>>,
        filter: Option<&Bound<'_, PyAny>>,
        timezone: Option<&str>,
        row_tracking: bool,
    ) -> PyResult<RawScan> {
        let options = ScanOptions {
            columns,
            filter: filter_from_py(filter)?,
            timezone: session_time_zone(py, timezone)?,
            row_tracking,
            ..ScanOptions::default()
        };
        let planned = (|| {
            let storage = Storage::open(table_uri, &storage_options.unwrap_or_default())?;
            let table = Table::from_storage(storage);
            let protocol: Protocol = parse_action(protocol_json, "protocol", table.uri())?;
            let metadata: Metadata = parse_action(metadata_json, "metaData", table.uri())?;
            let files = decode_file_list(files_ipc, table.uri())?;
            Scan::over_files(&table, &protocol, &metadata, options, files)
        })();
        planned
            .map(RawScan::new)
            .map_err(|error| to_py_err(py, error))
    }

    /// The files bin-packed into groups of about `target_size` bytes (see
    /// [`Scan::pack_files`]): per group, its file list rows as Arrow IPC stream bytes, its
    /// number of files and their total size in bytes.
    fn tasks<'py>(
        &self,
        py: Python<'py>,
        target_size: u64,
        open_cost: u64,
    ) -> PyResult<Vec<(Bound<'py, PyBytes>, usize, u64)>> {
        let schema = self.inner.files_schema();
        let groups = self
            .inner
            .pack_files(target_size, open_cost)
            .map_err(|error| to_py_err(py, error))?;
        let mut tasks = Vec::with_capacity(groups.len());
        for group in groups {
            let num_files = group.iter().map(RecordBatch::num_rows).sum();
            let size = total_size(&group);
            let bytes = encode_file_list(&schema, &group).map_err(|error| to_py_err(py, error))?;
            tasks.push((PyBytes::new(py, &bytes), num_files, size));
        }
        Ok(tasks)
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

/// A `protocol` or `metaData` action from its JSON.
fn parse_action<T: serde::de::DeserializeOwned>(
    text: &str,
    action: &str,
    table: &str,
) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|error| {
        Error::InvalidArgument(format!(
            "the scan task's {action} action of {table} is not valid JSON: {error}"
        ))
    })
}

/// File list rows as Arrow IPC stream bytes.
fn encode_file_list(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Vec<u8>, Error> {
    let encode = || {
        let mut writer = StreamWriter::try_new(Vec::new(), schema)?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.into_inner()
    };
    encode().map_err(|error| Error::arrow("encoding a scan task's file list", error))
}

/// File list rows from Arrow IPC stream bytes.
fn decode_file_list(bytes: &[u8], table: &str) -> Result<Vec<RecordBatch>, Error> {
    let decode = || StreamReader::try_new(bytes, None)?.collect::<Result<Vec<_>, _>>();
    decode().map_err(|error| {
        Error::InvalidArgument(format!(
            "the file list of a scan task of {table} is not an Arrow IPC stream: {error}"
        ))
    })
}

/// The sum of the `size` column of file list rows.
fn total_size(batches: &[RecordBatch]) -> u64 {
    let mut total = 0u64;
    for batch in batches {
        let sizes = batch
            .column_by_name("size")
            .and_then(|column| column.as_primitive_opt::<Int64Type>());
        for size in sizes.into_iter().flatten().flatten() {
            total = total.saturating_add(u64::try_from(size).unwrap_or(0));
        }
    }
    total
}
