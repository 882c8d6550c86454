//! Arrow data leaves through the Arrow PyCapsule interface.
//!
//! [`RawArrowStream`] implements `__arrow_c_stream__` and `__arrow_c_schema__`, so
//! `pyarrow.table(x)`, `polars.DataFrame(x)` and any other consumer of the protocol take the
//! batches without a copy and without deltalog depending on pyarrow. Its batches are either
//! retained or read from a core stream that every export starts afresh, so every
//! `__arrow_c_stream__` call exports a fresh stream: the object can be read any number of
//! times. [`RawSchema`] is a table's logical schema in both forms, Arrow (through
//! `__arrow_c_schema__`) and Delta (its JSON).

use std::ffi::CStr;
use std::sync::Arc;

use arrow::array::{make_array, ArrayData, RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow::json::writer::{LineDelimited, WriterBuilder};
use deltalog_core::schema::RequestedSchema;
use deltalog_core::{Error, StructType};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use tokio::runtime::Runtime;

use crate::convert::{to_py, PySchemaInput};
use crate::errors::to_py_err;
use crate::runtime::{shared_runtime, wait_for_future};

/// A stream of core batches, read lazily.
pub type CoreStream = BoxStream<'static, deltalog_core::Result<RecordBatch>>;

/// Starts a new read of a core stream.
type StartStream = Arc<dyn Fn() -> CoreStream + Send + Sync>;

/// The capsule name the protocol gives an `ArrowArrayStream`.
pub const STREAM_CAPSULE: &CStr = c"arrow_array_stream";
/// The capsule name the protocol gives an `ArrowSchema`.
const SCHEMA_CAPSULE: &CStr = c"arrow_schema";

/// Record batches that share one schema, exported as an Arrow C stream on request.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawArrowStream {
    schema: SchemaRef,
    batches: Batches,
}

/// Where the batches of a [`RawArrowStream`] come from.
enum Batches {
    /// Held in memory.
    Held(Vec<RecordBatch>),
    /// Read afresh by every export, as the consumer pulls them.
    Lazy(StartStream),
}

impl RawArrowStream {
    /// Wraps `batches`, each of which has `schema`.
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        RawArrowStream {
            schema,
            batches: Batches::Held(batches),
        }
    }

    /// The batches of the core streams `start` begins (each of `schema`), read when consumed.
    pub fn lazy(schema: SchemaRef, start: impl Fn() -> CoreStream + Send + Sync + 'static) -> Self {
        RawArrowStream {
            schema,
            batches: Batches::Lazy(Arc::new(start)),
        }
    }

    /// Every batch, read now when the batches are lazy.
    fn held(&self, py: Python<'_>) -> PyResult<Vec<RecordBatch>> {
        match &self.batches {
            Batches::Held(batches) => Ok(batches.clone()),
            Batches::Lazy(start) => {
                let start = start.clone();
                wait_for_future(py, move || async move { start().try_collect().await })
            }
        }
    }
}

#[pymethods]
impl RawArrowStream {
    /// A new `ArrowArrayStream` capsule over the batches, in `requested_schema` (an
    /// `arrow_schema` capsule) when given (see [`export_stream`]).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        match &self.batches {
            Batches::Held(batches) => export_held(py, &self.schema, batches, requested_schema),
            Batches::Lazy(start) => {
                export_stream(py, self.schema.clone(), start(), requested_schema)
            }
        }
    }

    /// The schema of the batches as an `ArrowSchema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        export_schema(py, &self.schema)
    }

    /// The number of rows in all batches.
    #[getter]
    fn num_rows(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.held(py)?.iter().map(RecordBatch::num_rows).sum())
    }

    /// The names of the top-level columns.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        field_names(&self.schema)
    }

    /// The rows as newline-delimited JSON objects (nulls written out, timestamps as ISO-8601
    /// text in UTC), for callers that have no Arrow library.
    fn to_json_rows(&self, py: Python<'_>) -> PyResult<String> {
        json_rows(&self.held(py)?).map_err(|error| to_py_err(py, error))
    }
}

/// A table's logical schema: Arrow for data, the Delta schema for everything else.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawSchema {
    arrow: SchemaRef,
    delta: StructType,
}

impl RawSchema {
    /// The schema with Arrow form `arrow` and Delta form `delta`.
    pub fn new(arrow: SchemaRef, delta: StructType) -> Self {
        RawSchema { arrow, delta }
    }
}

#[pymethods]
impl RawSchema {
    /// The Arrow schema as an `ArrowSchema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        export_schema(py, &self.arrow)
    }

    /// The names of the top-level columns, in order.
    #[getter]
    fn names(&self) -> Vec<String> {
        field_names(&self.arrow)
    }

    /// The Delta schema as JSON (spec "Schema Serialization Format").
    fn json(&self, py: Python<'_>) -> PyResult<String> {
        self.delta.to_json().map_err(|error| to_py_err(py, error))
    }

    /// The top-level fields of the Delta schema as dicts (`name`, `type`, `nullable`,
    /// `metadata`), built from the core schema.
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.delta.fields.iter().map(|f| to_py(py, f)).collect()
    }
}

/// The schema of the rows a read of a table with the Delta schema `schema` returns, as Delta
/// schema JSON: `void` columns left out at every depth, as scans leave them, and no field
/// metadata (column mapping ids, comments). That is the JSON of the `StructType` Spark shows
/// for such a read.
#[pyfunction]
pub fn read_schema_json(py: Python<'_>, schema: PySchemaInput) -> PyResult<String> {
    schema
        .0
        .read_form()
        .to_json()
        .map_err(|error| to_py_err(py, error))
}

/// `batches` as newline-delimited JSON objects (see `RawArrowStream.to_json_rows`).
fn json_rows(batches: &[RecordBatch]) -> Result<String, Error> {
    let mut writer = WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, LineDelimited>(Vec::new());
    batches
        .iter()
        .try_for_each(|batch| writer.write(&with_utc_offsets(batch)?))
        .and_then(|()| writer.finish())
        .map_err(|source| Error::arrow("cannot render the rows as JSON", source))?;
    Ok(String::from_utf8_lossy(&writer.into_inner()).into_owned())
}

/// Held `batches` of `schema` as an `ArrowArrayStream` capsule, in `requested` (an
/// `arrow_schema` capsule) when given: every batch is converted now, so any error is raised
/// here, typed.
fn export_held<'py>(
    py: Python<'py>,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    requested: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let (schema, batches) = match requested_schema(py, schema, requested)? {
        None => (schema.clone(), batches.to_vec()),
        Some(requested) => {
            let converted = batches.iter().map(|batch| requested.conform(batch));
            let converted = converted.collect::<Result<Vec<_>, _>>();
            (
                requested.schema(),
                converted.map_err(|error| to_py_err(py, error))?,
            )
        }
    };
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
}

/// `stream` (batches of `schema`) as a lazy `ArrowArrayStream` capsule: the consumer's thread
/// pulls each batch by blocking on the shared runtime. With `requested` (an `arrow_schema`
/// capsule, the protocol's `requested_schema`), the batches come in that schema as the core's
/// [`RequestedSchema`] converts them: a schema they cannot have is an `InvalidArgumentError`
/// now, a value that cannot be converted fails the read of its batch.
pub fn export_stream<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    stream: CoreStream,
    requested: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let (schema, stream) = match requested_schema(py, &schema, requested)? {
        None => (schema, stream),
        Some(requested) => {
            let target = requested.schema();
            let converted = stream.map(move |batch| requested.conform(&batch?));
            (target, converted.boxed())
        }
    };
    let reader = BlockingReader {
        schema,
        stream,
        runtime: shared_runtime()?,
    };
    let exported = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new_with_value(py, exported, STREAM_CAPSULE)
}

/// How batches of `schema` become the schema in the `requested` capsule, if any.
fn requested_schema(
    py: Python<'_>,
    schema: &SchemaRef,
    requested: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<RequestedSchema>> {
    let Some(capsule) = requested else {
        return Ok(None);
    };
    let target = import_schema(py, capsule)?;
    RequestedSchema::new(schema, target)
        .map(Some)
        .map_err(|error| to_py_err(py, error))
}

/// An `ArrowSchema` capsule of `schema`.
pub fn export_schema<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyCapsule>> {
    let exported = FFI_ArrowSchema::try_from(schema)
        .map_err(|source| to_py_err(py, Error::arrow("cannot export the Arrow schema", source)))?;
    PyCapsule::new_with_value(py, exported, SCHEMA_CAPSULE)
}

/// The schema inside an `arrow_schema` capsule (which keeps ownership of it).
fn import_schema(py: Python<'_>, capsule: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    let invalid = |reason: String| {
        to_py_err(
            py,
            Error::InvalidArgument(format!("requested_schema {reason}")),
        )
    };
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| invalid("is not a PyCapsule".to_string()))?;
    let pointer = capsule
        .pointer_checked(Some(SCHEMA_CAPSULE))
        .map_err(|error| invalid(format!("is not an 'arrow_schema' capsule: {error}")))?;
    // SAFETY: a capsule named "arrow_schema" holds a valid `ArrowSchema` (Arrow PyCapsule
    // interface); it is only borrowed here, the capsule keeps ownership.
    let exported = unsafe { pointer.cast::<FFI_ArrowSchema>().as_ref() };
    Schema::try_from(exported)
        .map(Arc::new)
        .map_err(|error| invalid(format!("cannot be read: {error}")))
}

/// Pulls batches from a core stream by blocking on the shared runtime; the consumer of the C
/// stream calls it from its own thread.
struct BlockingReader {
    schema: SchemaRef,
    stream: CoreStream,
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

fn field_names(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .map(|field| field.name().clone())
        .collect()
}

/// `batch` with every timezone-aware timestamp, nested ones included, relabelled to the zone
/// `+00:00`: the same instants, in a zone the JSON writer can name without a time zone
/// database (named zones such as `UTC` need arrow's `chrono-tz` feature).
fn with_utc_offsets(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .map(|column| relabel_timestamps(column.to_data()).map(make_array))
        .collect::<Result<Vec<_>, _>>()?;
    let fields = batch
        .schema()
        .fields()
        .iter()
        .map(utc_offset_field)
        .collect::<Vec<_>>();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

fn relabel_timestamps(data: ArrayData) -> Result<ArrayData, ArrowError> {
    let data_type = utc_offset_type(data.data_type());
    if &data_type == data.data_type() {
        return Ok(data);
    }
    let children = data
        .child_data()
        .iter()
        .cloned()
        .map(relabel_timestamps)
        .collect::<Result<Vec<_>, _>>()?;
    data.into_builder()
        .data_type(data_type)
        .child_data(children)
        .build()
}

fn utc_offset_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Timestamp(unit, Some(_)) => DataType::Timestamp(*unit, Some("+00:00".into())),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(utc_offset_field).collect()),
        DataType::List(field) => DataType::List(utc_offset_field(field)),
        DataType::LargeList(field) => DataType::LargeList(utc_offset_field(field)),
        DataType::Map(field, sorted) => DataType::Map(utc_offset_field(field), *sorted),
        other => other.clone(),
    }
}

fn utc_offset_field(field: &FieldRef) -> FieldRef {
    Arc::new(
        field
            .as_ref()
            .clone()
            .with_data_type(utc_offset_type(field.data_type())),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use arrow::array::{Array, StructArray, TimestampMillisecondArray};
    use arrow::datatypes::{Field, TimeUnit};

    use super::*;

    fn utc_timestamp() -> DataType {
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    }

    fn batch_with_nested_timestamp() -> RecordBatch {
        let times = TimestampMillisecondArray::from(vec![1_688_691_721_441]).with_timezone("UTC");
        let nested = StructArray::from(vec![(
            Arc::new(Field::new("at", utc_timestamp(), true)),
            Arc::new(times.clone()) as _,
        )]);
        let schema = Schema::new(vec![
            Field::new("at", utc_timestamp(), false),
            Field::new("nested", nested.data_type().clone(), true),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(times), Arc::new(nested)]).unwrap()
    }

    #[test]
    fn named_zones_become_utc_offsets_at_every_depth() {
        let relabelled = with_utc_offsets(&batch_with_nested_timestamp()).unwrap();
        let offset = DataType::Timestamp(TimeUnit::Millisecond, Some("+00:00".into()));
        assert_eq!(relabelled.column(0).data_type(), &offset);
        let DataType::Struct(fields) = relabelled.column(1).data_type() else {
            panic!("not a struct")
        };
        assert_eq!(fields[0].data_type(), &offset);
    }

    #[test]
    fn json_rows_render_instants_in_utc() {
        let stream = RawArrowStream::new(
            batch_with_nested_timestamp().schema(),
            vec![batch_with_nested_timestamp()],
        );
        let mut writer = WriterBuilder::new().build::<_, LineDelimited>(Vec::new());
        let Batches::Held(batches) = &stream.batches else {
            panic!("held batches")
        };
        for batch in batches {
            writer.write(&with_utc_offsets(batch).unwrap()).unwrap();
        }
        writer.finish().unwrap();
        let text = String::from_utf8(writer.into_inner()).unwrap();
        assert!(
            text.contains(r#""at":"2023-07-07T01:02:01.441Z""#),
            "{text}"
        );
    }
}
