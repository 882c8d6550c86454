//! Arrow data arrives through the Arrow PyCapsule interface: any object with
//! `__arrow_c_stream__` (a pyarrow `Table` or `RecordBatchReader`, a polars `DataFrame`, ...)
//! is read as a stream, one batch at a time, so memory stays bounded whatever the input's
//! size; an object with only `__arrow_c_array__` (a pyarrow `RecordBatch`) is one batch.

use std::sync::Arc;

use arrow::array::{make_array, RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::cast::AsArray;
use deltalog_core::Error;
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::arrow_export::STREAM_CAPSULE;
use crate::errors::to_py_err;

/// The capsule names the protocol gives an `ArrowSchema` and an `ArrowArray`.
const SCHEMA_CAPSULE: &std::ffi::CStr = c"arrow_schema";
const ARRAY_CAPSULE: &std::ffi::CStr = c"arrow_array";

/// Arrow data given from Python: its schema, and its batches read on demand.
pub struct PyArrowInput {
    pub schema: SchemaRef,
    reader: Box<dyn RecordBatchReader + Send>,
}

impl<'a, 'py> FromPyObject<'a, 'py> for PyArrowInput {
    type Error = PyErr;

    fn extract(data: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = data.py();
        let reader: Box<dyn RecordBatchReader + Send> = if data.hasattr("__arrow_c_stream__")? {
            Box::new(import_stream(
                py,
                &data.call_method0("__arrow_c_stream__")?,
            )?)
        } else if data.hasattr("__arrow_c_array__")? {
            let pair = data.call_method0("__arrow_c_array__")?;
            Box::new(import_batch(py, pair.cast::<PyTuple>()?)?)
        } else {
            return Err(invalid(
                py,
                format!(
                    "data must speak the Arrow PyCapsule interface (__arrow_c_stream__ or \
                         __arrow_c_array__), such as a pyarrow Table or a polars DataFrame; \
                         got {}",
                    data.get_type().name()?
                ),
            ));
        };
        Ok(PyArrowInput {
            schema: reader.schema(),
            reader,
        })
    }
}

impl PyArrowInput {
    /// The batches as a core stream, read one at a time by whoever polls it.
    pub fn into_stream(self) -> BoxStream<'static, deltalog_core::Result<RecordBatch>> {
        futures::stream::iter(
            self.reader.map(|batch| {
                batch.map_err(|source| Error::arrow("reading the data to write", source))
            }),
        )
        .boxed()
    }

    /// Every batch, read now.
    pub fn collect(self) -> deltalog_core::Result<Vec<RecordBatch>> {
        self.reader
            .map(|batch| batch.map_err(|source| Error::arrow("reading Arrow data", source)))
            .collect()
    }
}

fn import_stream(py: Python<'_>, capsule: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer = capsule.pointer_checked(Some(STREAM_CAPSULE))?;
    // SAFETY: a capsule named "arrow_array_stream" holds a valid `ArrowArrayStream` (Arrow
    // PyCapsule interface); `from_raw` moves it out and leaves a released one behind, which
    // the capsule's destructor then ignores, as the protocol requires of consumers.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.cast().as_ptr()) };
    RecordBatchStreamReader::try_new(stream)
        .map_err(|source| to_py_err(py, Error::arrow("importing an Arrow stream", source)))
}

fn import_batch(
    py: Python<'_>,
    pair: &Bound<'_, PyTuple>,
) -> PyResult<RecordBatchIterator<std::vec::IntoIter<Result<RecordBatch, arrow::error::ArrowError>>>>
{
    let schema_capsule = pair.get_item(0)?;
    let array_capsule = pair.get_item(1)?;
    let schema_pointer = schema_capsule
        .cast::<PyCapsule>()?
        .pointer_checked(Some(SCHEMA_CAPSULE))?;
    let array_pointer = array_capsule
        .cast::<PyCapsule>()?
        .pointer_checked(Some(ARRAY_CAPSULE))?;
    // SAFETY: the capsules hold a valid `ArrowSchema` and `ArrowArray` (Arrow PyCapsule
    // interface); the schema is borrowed, the array moved out (leaving a released one).
    let (schema, array) = unsafe {
        (
            schema_pointer.cast::<FFI_ArrowSchema>().as_ref(),
            FFI_ArrowArray::from_raw(array_pointer.cast().as_ptr()),
        )
    };
    let arrow_error = |source| to_py_err(py, Error::arrow("importing an Arrow array", source));
    // SAFETY: the array and schema come from the same producer and describe each other.
    let data = unsafe { from_ffi(array, schema) }.map_err(arrow_error)?;
    let array = make_array(data);
    let Some(columns) = array.as_struct_opt() else {
        return Err(invalid(
            py,
            "an Arrow array given as data must be a struct array".into(),
        ));
    };
    let fields = Schema::try_from(schema).map_err(arrow_error)?;
    let schema = Arc::new(Schema::new_with_metadata(
        columns.fields().clone(),
        fields.metadata().clone(),
    ));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.columns().to_vec()).map_err(arrow_error)?;
    Ok(RecordBatchIterator::new(
        vec![Ok(batch)].into_iter(),
        schema,
    ))
}

fn invalid(py: Python<'_>, message: String) -> PyErr {
    to_py_err(py, Error::InvalidArgument(message))
}
