//! Arrow data leaves through the Arrow PyCapsule interface.
//!
//! [`RawArrowStream`] implements `__arrow_c_stream__` and `__arrow_c_schema__`, so
//! `pyarrow.table(x)`, `polars.DataFrame(x)` and any other consumer of the protocol take the
//! batches without a copy and without deltalog depending on pyarrow. The batches are retained,
//! so every `__arrow_c_stream__` call exports a fresh stream: the object can be read any
//! number of times. [`RawSchema`] is a table's logical schema in both forms, Arrow (through
//! `__arrow_c_schema__`) and Delta (its JSON).

use std::ffi::CStr;
use std::sync::Arc;

use arrow::array::{make_array, ArrayData, RecordBatch, RecordBatchIterator};
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow::json::writer::{LineDelimited, WriterBuilder};
use deltalog_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::to_py_err;

/// The capsule name the protocol gives an `ArrowArrayStream`.
pub const STREAM_CAPSULE: &CStr = c"arrow_array_stream";
/// The capsule name the protocol gives an `ArrowSchema`.
const SCHEMA_CAPSULE: &CStr = c"arrow_schema";

/// Record batches that share one schema, exported as an Arrow C stream on request.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawArrowStream {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl RawArrowStream {
    /// Wraps `batches`, each of which has `schema`.
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        RawArrowStream { schema, batches }
    }
}

#[pymethods]
impl RawArrowStream {
    /// A new `ArrowArrayStream` capsule over the batches. When `requested_schema` (an
    /// `arrow_schema` capsule) can be reached by casting each column, the stream has that
    /// schema; otherwise it has the original one, as the protocol allows.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let requested = requested_schema
            .map(|capsule| import_schema(py, capsule))
            .transpose()?;
        let (schema, batches) = match requested {
            Some(target) => cast_to(&target, &self.batches)
                .unwrap_or_else(|| (self.schema.clone(), self.batches.clone())),
            None => (self.schema.clone(), self.batches.clone()),
        };
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
    }

    /// The schema of the batches as an `ArrowSchema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        export_schema(py, &self.schema)
    }

    /// The number of rows in all batches.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The names of the top-level columns.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        field_names(&self.schema)
    }

    /// The rows as newline-delimited JSON objects (nulls written out, timestamps as ISO-8601
    /// text in UTC), for callers that have no Arrow library.
    fn to_json_rows(&self, py: Python<'_>) -> PyResult<String> {
        let mut writer = WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, LineDelimited>(Vec::new());
        let written = self
            .batches
            .iter()
            .try_for_each(|batch| writer.write(&with_utc_offsets(batch)?))
            .and_then(|()| writer.finish());
        if let Err(source) = written {
            let error = Error::arrow("cannot render the rows as JSON", source);
            return Err(to_py_err(py, error));
        }
        Ok(String::from_utf8_lossy(&writer.into_inner()).into_owned())
    }
}

/// A table's logical schema: Arrow for data, the Delta schema JSON for everything else.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawSchema {
    arrow: SchemaRef,
    delta_json: String,
}

impl RawSchema {
    /// The schema with Arrow form `arrow` and Delta form `delta_json`.
    pub fn new(arrow: SchemaRef, delta_json: String) -> Self {
        RawSchema { arrow, delta_json }
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
    fn json(&self) -> &str {
        &self.delta_json
    }
}

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

/// `batches` with every column cast to the type `target` gives it, or `None` when the column
/// count differs or a cast is impossible.
fn cast_to(target: &SchemaRef, batches: &[RecordBatch]) -> Option<(SchemaRef, Vec<RecordBatch>)> {
    let cast_batch = |batch: &RecordBatch| -> Option<RecordBatch> {
        if batch.num_columns() != target.fields().len() {
            return None;
        }
        let columns = batch
            .columns()
            .iter()
            .zip(target.fields())
            .map(|(column, field)| arrow::compute::cast(column, field.data_type()).ok())
            .collect::<Option<Vec<_>>>()?;
        RecordBatch::try_new(target.clone(), columns).ok()
    };
    let cast = batches.iter().map(cast_batch).collect::<Option<Vec<_>>>()?;
    Some((target.clone(), cast))
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
    use arrow::array::{Array, Int64Array, StringArray, StructArray, TimestampMillisecondArray};
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
        for batch in &stream.batches {
            writer.write(&with_utc_offsets(batch).unwrap()).unwrap();
        }
        writer.finish().unwrap();
        let text = String::from_utf8(writer.into_inner()).unwrap();
        assert!(
            text.contains(r#""at":"2023-07-07T01:02:01.441Z""#),
            "{text}"
        );
    }

    #[test]
    fn cast_to_a_reachable_schema_changes_the_types() {
        let batch = RecordBatch::try_from_iter([
            ("version", Arc::new(Int64Array::from(vec![1, 2])) as _),
            ("json", Arc::new(StringArray::from(vec!["{}", "{}"])) as _),
        ])
        .unwrap();
        let target = Arc::new(Schema::new(vec![
            Field::new("version", DataType::Int32, true),
            Field::new("json", DataType::LargeUtf8, true),
        ]));
        let (schema, cast) = cast_to(&target, std::slice::from_ref(&batch)).unwrap();
        assert_eq!(schema, target);
        assert_eq!(cast[0].column(0).data_type(), &DataType::Int32);

        let too_few = Arc::new(Schema::new(vec![Field::new(
            "version",
            DataType::Int32,
            true,
        )]));
        assert!(cast_to(&too_few, &[batch]).is_none());
    }
}
