//! Batches delivered in the Arrow schema their consumer asks for (the `requested_schema` of
//! the Arrow PyCapsule interface; how pyspark's Python data sources want their batches).
//!
//! Column `i` of a batch becomes column `i` of the requested schema, renamed. Below the top
//! level, struct fields are found by name (exactly, else the one that matches ignoring ASCII
//! case, as Spark resolves names), lists (large and fixed-size too) and maps are rebuilt
//! around their converted children, timestamps change unit by truncating (Spark keeps
//! microseconds) and any other type is cast by Arrow, failing rather than losing a value.
//! A binary column (WKB: a geospatial column) requested as pyspark's Arrow form of Spark's
//! `GeometryType` / `GeographyType`, `struct<srid: int32 not null, wkb: binary not null>` with
//! `geometry` or `geography` = `true` and the `srid` in the `wkb` field's metadata (pyspark's
//! `to_arrow_type`), becomes that struct: the values as `wkb`, the requested SRID in every
//! row. The requested fields are used as given: their names, nullability and metadata.

use std::sync::Arc;

use arrow::compute::{can_cast_types, cast_with_options, CastOptions};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, Int32Array, ListArray, MapArray, RecordBatch, StructArray,
};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use super::match_name;
use crate::error::{Error, Result};

/// How batches of one schema are delivered in a requested one (see the module docs).
#[derive(Debug, Clone)]
pub struct RequestedSchema {
    target: SchemaRef,
}

impl RequestedSchema {
    /// Batches of `source` delivered as `target`. Errors: [`Error::InvalidArgument`] when
    /// the column counts differ, or naming the first column (by its path) whose type cannot
    /// become the requested one or whose struct lacks a requested field.
    pub fn new(source: &Schema, target: SchemaRef) -> Result<RequestedSchema> {
        if source.fields().len() != target.fields().len() {
            return Err(Error::InvalidArgument(format!(
                "the requested schema has {} columns, the data has {}: {:?} against {:?}",
                target.fields().len(),
                source.fields().len(),
                names(target.fields()),
                names(source.fields()),
            )));
        }
        for (from, to) in source.fields().iter().zip(target.fields()) {
            check_type(from.data_type(), to.data_type(), to.name())?;
        }
        Ok(RequestedSchema { target })
    }

    /// The requested schema.
    pub fn schema(&self) -> SchemaRef {
        self.target.clone()
    }

    /// `batch` (of the source schema) in the requested schema. Errors:
    /// [`Error::InvalidArgument`] naming the column when a value cannot be cast, or when a
    /// column requested NOT NULL holds nulls.
    pub fn conform(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        if batch.schema() == self.target {
            return Ok(batch.clone());
        }
        let mut columns = Vec::with_capacity(batch.num_columns());
        for (array, field) in batch.columns().iter().zip(self.target.fields()) {
            let converted = conform(array, field.data_type(), field.name())?;
            if !field.is_nullable() && converted.null_count() > 0 {
                return Err(Error::InvalidArgument(format!(
                    "column `{}` is declared NOT NULL but holds {} nulls",
                    field.name(),
                    converted.null_count()
                )));
            }
            columns.push(converted);
        }
        // Every column has its requested type and nullability by now.
        RecordBatch::try_new(self.target.clone(), columns).map_err(|error| {
            Error::internal_invariant(format!("a batch in the requested schema: {error}"))
        })
    }
}

/// Whether a column of type `from` can become `to` (see the module docs); `path` names it.
fn check_type(from: &DataType, to: &DataType, path: &str) -> Result<()> {
    if from == to {
        return Ok(());
    }
    match (list_item(from), from, to) {
        (_, from, DataType::Struct(to_fields)) if is_binary(from) => {
            spark_geospatial_srid(to_fields, path).map(|_| ())
        }
        (_, DataType::Struct(from_fields), DataType::Struct(to_fields)) => {
            for field in to_fields {
                let child = format!("{path}.{}", field.name());
                let index = field_index(from_fields, field.name(), &child)?;
                check_type(from_fields[index].data_type(), field.data_type(), &child)?;
            }
            Ok(())
        }
        (Some(item), _, DataType::List(element)) => check_type(
            item.data_type(),
            element.data_type(),
            &format!("{path}.element"),
        ),
        (_, DataType::Map(from_entries, _), DataType::Map(to_entries, _)) => {
            let (from_key, from_value) = map_children(from_entries, path)?;
            let (to_key, to_value) = map_children(to_entries, path)?;
            check_type(
                from_key.data_type(),
                to_key.data_type(),
                &format!("{path}.key"),
            )?;
            let value_path = format!("{path}.value");
            check_type(from_value.data_type(), to_value.data_type(), &value_path)
        }
        _ if can_cast_types(from, to) => Ok(()),
        _ => Err(Error::InvalidArgument(format!(
            "column `{path}`: data of type {from} cannot be delivered as {to}"
        ))),
    }
}

/// `array` as type `target`; checked by [`check_type`] before.
fn conform(array: &ArrayRef, target: &DataType, path: &str) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (from, DataType::Struct(fields)) if is_binary(from) => {
            conform_geospatial(array, fields, path)
        }
        (DataType::Struct(_), DataType::Struct(fields)) => conform_struct(array, fields, path),
        (from, DataType::List(element)) if list_item(from).is_some() => {
            conform_list(array, element, path)
        }
        (DataType::Map(..), DataType::Map(entries, sorted)) => {
            conform_map(array, entries, *sorted, path)
        }
        _ => cast(array, target, path),
    }
}

fn conform_struct(array: &ArrayRef, fields: &Fields, path: &str) -> Result<ArrayRef> {
    let structs = array.as_struct();
    let mut children = Vec::with_capacity(fields.len());
    for field in fields {
        let child = format!("{path}.{}", field.name());
        let index = field_index(structs.fields(), field.name(), &child)?;
        children.push(conform(structs.column(index), field.data_type(), &child)?);
    }
    let rebuilt = StructArray::try_new(fields.clone(), children, structs.nulls().cloned())
        .map_err(|error| invalid(path, error))?;
    Ok(Arc::new(rebuilt))
}

/// WKB values as pyspark's geospatial struct `fields` (checked by [`check_type`]): `srid`
/// the requested SRID in every row, `wkb` the values; null where the value is null.
fn conform_geospatial(array: &ArrayRef, fields: &Fields, path: &str) -> Result<ArrayRef> {
    let srid = spark_geospatial_srid(fields, path)?;
    let binary = cast(array, &DataType::Binary, path)?;
    let binary = binary.as_binary::<i32>();
    // The child is NOT NULL: its slots under a null row keep whatever bytes they have.
    let wkb = BinaryArray::new(binary.offsets().clone(), binary.values().clone(), None);
    let srids = Int32Array::from(vec![srid; binary.len()]);
    let rebuilt = StructArray::try_new(
        fields.clone(),
        vec![Arc::new(srids), Arc::new(wkb)],
        binary.nulls().cloned(),
    )
    .map_err(|error| invalid(path, error))?;
    Ok(Arc::new(rebuilt))
}

/// The SRID of pyspark's Arrow form of a geospatial type: `fields` are `srid` (int32) and
/// `wkb` (binary) marked `geometry` or `geography` = `true`, with its `srid` metadata. An
/// [`Error::InvalidArgument`] naming the column otherwise.
fn spark_geospatial_srid(fields: &Fields, path: &str) -> Result<i32> {
    let refused = || {
        Error::InvalidArgument(format!(
            "column `{path}`: binary data cannot be delivered as {}",
            DataType::Struct(fields.clone())
        ))
    };
    let [srid, wkb] = fields.iter().collect::<Vec<_>>()[..] else {
        return Err(refused());
    };
    let marked = ["geometry", "geography"]
        .iter()
        .any(|kind| wkb.metadata().get(kind).is_some_and(|v| v == "true"));
    let shaped = srid.name() == "srid"
        && srid.data_type() == &DataType::Int32
        && wkb.name() == "wkb"
        && wkb.data_type() == &DataType::Binary;
    if !(marked && shaped) {
        return Err(refused());
    }
    wkb.metadata()
        .get("srid")
        .and_then(|srid| srid.trim().parse().ok())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "column `{path}`: the requested geospatial struct names no integer `srid` \
                 in the metadata of its `wkb` field"
            ))
        })
}

fn is_binary(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

fn conform_list(array: &ArrayRef, element: &FieldRef, path: &str) -> Result<ArrayRef> {
    let as_list = match array.data_type() {
        DataType::List(_) => array.clone(),
        from => {
            let item = list_item(from).cloned().unwrap_or_else(|| element.clone());
            cast(array, &DataType::List(item), path)?
        }
    };
    let list = as_list.as_list::<i32>();
    let values = conform(
        list.values(),
        element.data_type(),
        &format!("{path}.element"),
    )?;
    let rebuilt = ListArray::try_new(
        element.clone(),
        list.offsets().clone(),
        values,
        list.nulls().cloned(),
    )
    .map_err(|error| invalid(path, error))?;
    Ok(Arc::new(rebuilt))
}

fn conform_map(array: &ArrayRef, entries: &FieldRef, sorted: bool, path: &str) -> Result<ArrayRef> {
    let map = array.as_map();
    let (key, value) = map_children(entries, path)?;
    let keys = conform(map.keys(), key.data_type(), &format!("{path}.key"))?;
    let values = conform(map.values(), value.data_type(), &format!("{path}.value"))?;
    let fields = Fields::from(vec![key.clone(), value.clone()]);
    let entry_structs =
        StructArray::try_new(fields, vec![keys, values], None).map_err(|e| invalid(path, e))?;
    let rebuilt = MapArray::try_new(
        entries.clone(),
        map.offsets().clone(),
        entry_structs,
        map.nulls().cloned(),
        sorted,
    )
    .map_err(|error| invalid(path, error))?;
    Ok(Arc::new(rebuilt))
}

/// `array` cast by Arrow to `target`, failing on a value that does not fit (a timestamp
/// of a coarser unit drops the digits it cannot hold).
fn cast(array: &ArrayRef, target: &DataType, path: &str) -> Result<ArrayRef> {
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(array, target, &options).map_err(|error| {
        Error::InvalidArgument(format!(
            "column `{path}`: cannot convert {} to {target}: {error}",
            array.data_type()
        ))
    })
}

/// The item field of a list-like type (list, large list, fixed-size list, list views).
fn list_item(data_type: &DataType) -> Option<&FieldRef> {
    match data_type {
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::ListView(item)
        | DataType::LargeListView(item) => Some(item),
        _ => None,
    }
}

/// The key and value fields of a map's entries field.
fn map_children<'a>(entries: &'a Field, path: &str) -> Result<(&'a FieldRef, &'a FieldRef)> {
    match entries.data_type() {
        DataType::Struct(fields) if fields.len() == 2 => Ok((&fields[0], &fields[1])),
        other => Err(Error::InvalidArgument(format!(
            "column `{path}`: a map's entries must be a struct of key and value, not {other}"
        ))),
    }
}

/// The index of the field of `fields` named `name`: exactly, else the only one equal
/// ignoring ASCII case. `path` names the wanted field in errors.
fn field_index(fields: &Fields, name: &str, path: &str) -> Result<usize> {
    let names: Vec<&str> = fields.iter().map(|field| field.name().as_str()).collect();
    match_name(&names, name).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "struct field `{path}` is not in the data (it has {})",
            names.join(", ")
        ))
    })
}

fn names(fields: &Fields) -> Vec<String> {
    fields.iter().map(|field| field.name().clone()).collect()
}

fn invalid(path: &str, error: arrow_schema::ArrowError) -> Error {
    Error::InvalidArgument(format!("column `{path}`: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{Int32Builder, LargeStringBuilder, MapBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{BinaryArray, Int64Array, LargeListArray, TimestampNanosecondArray};
    use arrow_schema::TimeUnit;
    use std::collections::HashMap;

    fn spark_map() -> DataType {
        let entries = Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Int64, true),
        ]);
        DataType::Map(
            Arc::new(Field::new("entries", DataType::Struct(entries), false)),
            false,
        )
    }

    fn variant(order: [&str; 2], tagged: bool) -> DataType {
        let fields = order.map(|name| {
            let field = Field::new(name, DataType::Binary, false);
            if tagged && name == "metadata" {
                field.with_metadata(HashMap::from([("variant".into(), "true".into())]))
            } else {
                field
            }
        });
        DataType::Struct(Fields::from(fields.to_vec()))
    }

    /// The batch of a scan: large strings, a large list, a map of large strings to int32,
    /// a variant with `metadata` first, nanosecond timestamps; second row all null.
    fn scan_batch() -> RecordBatch {
        let mut map = MapBuilder::new(None, LargeStringBuilder::new(), Int32Builder::new());
        map.keys().append_value("k");
        map.values().append_value(1);
        map.append(true).unwrap();
        map.append(false).unwrap();
        let list = LargeListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
        ]);
        let variant_fields = match variant(["metadata", "value"], false) {
            DataType::Struct(fields) => fields,
            _ => unreachable!(),
        };
        let binaries = || Arc::new(BinaryArray::from(vec![&b"m"[..], &b""[..]])) as ArrayRef;
        let nulls = Some(vec![true, false].into());
        let variants = StructArray::new(variant_fields, vec![binaries(), binaries()], nulls);
        let stamps = TimestampNanosecondArray::from(vec![Some(1_500), None]).with_timezone("UTC");
        RecordBatch::try_from_iter([
            ("m", Arc::new(map.finish()) as ArrayRef),
            ("l", Arc::new(list) as _),
            ("v", Arc::new(variants) as _),
            ("ts", Arc::new(stamps) as _),
        ])
        .unwrap()
    }

    fn spark_schema() -> SchemaRef {
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let element = Arc::new(Field::new("element", DataType::Int64, true));
        Arc::new(Schema::new(vec![
            Field::new("M", spark_map(), true),
            Field::new("l", DataType::List(element), true),
            Field::new("v", variant(["value", "metadata"], true), true),
            Field::new("ts", utc, true),
        ]))
    }

    #[test]
    fn batches_are_renamed_reordered_and_cast_to_the_requested_schema() {
        let batch = scan_batch();
        let requested = RequestedSchema::new(&batch.schema(), spark_schema()).unwrap();
        let conformed = requested.conform(&batch).unwrap();
        assert_eq!(conformed.schema(), spark_schema());
        assert_eq!(conformed.column(0).null_count(), 1);
        let list = conformed.column(1).as_list::<i32>();
        assert_eq!(list.value_length(0), 2);
        assert!(list.is_null(1));
        let variants = conformed.column(2).as_struct();
        assert!(variants.is_null(1));
        let value = variants.column(0).as_binary::<i32>();
        assert_eq!(value.value(0), b"m");
        let stamps = conformed
            .column(3)
            .as_primitive::<arrow_array::types::TimestampMicrosecondType>();
        assert_eq!((stamps.value(0), stamps.is_null(1)), (1, true));
    }

    #[test]
    fn unreachable_schemas_are_refused_naming_the_column() {
        let batch = scan_batch();
        let mut fields: Vec<Field> = spark_schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[2] = Field::new("v", variant(["value", "other"], false), true);
        let error =
            RequestedSchema::new(&batch.schema(), Arc::new(Schema::new(fields))).unwrap_err();
        assert!(error.to_string().contains("`v.other`"), "{error}");

        let too_few = Arc::new(Schema::new(vec![Field::new("m", DataType::Int64, true)]));
        let error = RequestedSchema::new(&batch.schema(), too_few).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    }

    fn spark_geometry(srid: &str) -> DataType {
        let wkb = Field::new("wkb", DataType::Binary, false).with_metadata(HashMap::from([
            ("geometry".into(), "true".into()),
            ("srid".into(), srid.into()),
        ]));
        DataType::Struct(Fields::from(vec![
            Field::new("srid", DataType::Int32, false),
            wkb,
        ]))
    }

    #[test]
    fn wkb_becomes_the_spark_geospatial_struct_with_the_requested_srid() {
        let wkb: &[u8] = b"\x01\x01\x00\x00\x00";
        let batch = RecordBatch::try_from_iter([(
            "g",
            Arc::new(BinaryArray::from(vec![Some(wkb), None])) as ArrayRef,
        )])
        .unwrap();
        let target = Arc::new(Schema::new(vec![Field::new(
            "g",
            spark_geometry("3857"),
            true,
        )]));
        let requested = RequestedSchema::new(&batch.schema(), target.clone()).unwrap();
        let conformed = requested.conform(&batch).unwrap();
        assert_eq!(conformed.schema(), target);
        let structs = conformed.column(0).as_struct();
        assert!(structs.is_null(1));
        assert_eq!(structs.column(0).as_primitive::<Int32Type>().value(0), 3857);
        assert_eq!(structs.column(1).as_binary::<i32>().value(0), wkb);
        assert_eq!(structs.column(1).null_count(), 0);

        let no_srid = Arc::new(Schema::new(vec![Field::new(
            "g",
            spark_geometry("x"),
            true,
        )]));
        let error = RequestedSchema::new(&batch.schema(), no_srid).unwrap_err();
        assert!(error.to_string().contains("column `g`"), "{error}");
        let other = Arc::new(Schema::new(vec![Field::new(
            "g",
            variant(["value", "metadata"], true),
            true,
        )]));
        let error = RequestedSchema::new(&batch.schema(), other).unwrap_err();
        assert!(error.to_string().contains("binary data cannot"), "{error}");
    }

    #[test]
    fn nulls_in_a_not_null_column_and_lossy_casts_are_errors() {
        let batch = RecordBatch::try_from_iter([(
            "m",
            Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
        )])
        .unwrap();
        let not_null = Arc::new(Schema::new(vec![Field::new("M", DataType::Int64, false)]));
        let requested = RequestedSchema::new(&batch.schema(), not_null).unwrap();
        let error = requested.conform(&batch).unwrap_err();
        assert!(
            error.to_string().contains("`M` is declared NOT NULL"),
            "{error}"
        );

        let big = RecordBatch::try_from_iter([(
            "m",
            Arc::new(Int64Array::from(vec![1 << 40])) as ArrayRef,
        )])
        .unwrap();
        let narrow = Arc::new(Schema::new(vec![Field::new("m", DataType::Int32, true)]));
        let requested = RequestedSchema::new(&big.schema(), narrow).unwrap();
        let error = requested.conform(&big).unwrap_err();
        assert!(
            error.to_string().contains("column `m`: cannot convert"),
            "{error}"
        );
    }
}
