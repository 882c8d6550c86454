//! The table schema in Arrow: with logical names, as reads return rows, or as the data files
//! hold the columns, with physical names and Parquet field ids (spec "Column Mapping",
//! catalogue E1-06, E1-07).

use std::sync::Arc;

use arrow_schema::extension::{EXTENSION_TYPE_METADATA_KEY, EXTENSION_TYPE_NAME_KEY};
use arrow_schema::{
    DataType as ArrowDataType, Field as ArrowField, Fields as ArrowFields,
    Metadata as ArrowMetadata, Schema as ArrowSchema, TimeUnit,
};
use serde_json::{Map, Value};

use super::json::{check_decimal, json_as_i32};
use super::*;
use crate::error::{Error, Result};

/// Converts the schema to Arrow with the logical column names.
///
/// Type mapping: string→Utf8, long→Int64, integer→Int32, short→Int16, byte→Int8,
/// float→Float32, double→Float64, boolean→Boolean, binary→Binary, date→Date32,
/// timestamp→Timestamp(µs, "UTC"), timestamp_ntz→Timestamp(µs, none), decimal→Decimal128,
/// void→Null, variant→Struct{metadata: Binary, value: Binary} marked with the extension name
/// [`VARIANT_EXTENSION_NAME`], geometry and geography→Binary (WKB) marked as the GeoArrow
/// extension type `geoarrow.wkb` (see [`geoarrow_metadata`]), array→List (item field `element`), map→Map (entries
/// `key_value` with a non-null `key` and a `value`), struct→Struct.
///
/// Delta column metadata is kept on each Arrow field as string key/values; non-string values
/// are JSON-encoded (so `delta.columnMapping.id` becomes `"5"` and `delta.typeChanges` a JSON
/// array).
pub(crate) fn to_arrow_schema(schema: &StructType) -> Result<ArrowSchema> {
    let fields = arrow_fields(schema, Naming::Logical)?;
    Ok(ArrowSchema::new(fields))
}

/// Converts the schema to Arrow as the data files see it (catalogue E1-06, E1-07).
///
/// Field names are the physical names of `mode`, and every field whose column carries a
/// `delta.columnMapping.id` (in `name` and `id` mode) has it under
/// [`PARQUET_FIELD_ID_META_KEY`]; array elements and map keys/values take their ids from
/// [`PARQUET_FIELD_NESTED_IDS_KEY`] when present. No other Delta metadata is kept. In `id`
/// mode a column without an id is an error; in `name` and `id` mode a column without a
/// physical name is an error. In `none` mode this is [`to_arrow_schema`] without metadata.
pub(crate) fn to_arrow_physical_schema(
    schema: &StructType,
    mode: ColumnMappingMode,
) -> Result<ArrowSchema> {
    let fields = arrow_fields(schema, Naming::Physical(mode))?;
    Ok(ArrowSchema::new(fields))
}

/// Converts one Delta type to Arrow, as [`to_arrow_schema`] does for a column of that type.
pub(crate) fn to_arrow_data_type(data_type: &DataType) -> Result<ArrowDataType> {
    arrow_type(data_type, Naming::Logical, None)
}

/// Which names and metadata the Arrow conversion produces.
#[derive(Clone, Copy)]
enum Naming {
    /// Logical names; Delta metadata as string key/values.
    Logical,
    /// Physical names of the mode; only parquet field ids.
    Physical(ColumnMappingMode),
}

/// Field ids of array elements and map keys/values, from `parquet.field.nested.ids` (the
/// spec's key) or `delta.columnMapping.nested.ids` (Delta on Spark's) of the enclosing column, with the key prefix of the current position (`<physical>.element...`).
struct NestedIds<'a> {
    ids: &'a Map<String, Value>,
    prefix: String,
}

impl NestedIds<'_> {
    fn child(&self, suffix: &str) -> Self {
        NestedIds {
            ids: self.ids,
            prefix: format!("{}.{suffix}", self.prefix),
        }
    }

    fn id(&self) -> Option<i32> {
        json_as_i32(self.ids.get(&self.prefix)?)
    }
}

fn arrow_fields(schema: &StructType, naming: Naming) -> Result<Vec<ArrowField>> {
    schema
        .fields
        .iter()
        .map(|field| arrow_field(field, naming))
        .collect()
}

fn arrow_field(field: &StructField, naming: Naming) -> Result<ArrowField> {
    let (name, metadata, nested_ids) = match naming {
        Naming::Logical => (field.name.clone(), logical_metadata(&field.metadata), None),
        Naming::Physical(mode) => {
            let name = field.physical_name(mode)?.to_string();
            let metadata = physical_metadata(field, mode)?;
            let nested_ids = field
                .metadata
                .get(PARQUET_FIELD_NESTED_IDS_KEY)
                .or_else(|| field.metadata.get(NESTED_IDS_KEY));
            let nested_ids = match nested_ids {
                Some(Value::Object(ids)) if mode != ColumnMappingMode::None => Some(NestedIds {
                    ids,
                    prefix: name.clone(),
                }),
                _ => None,
            };
            (name, metadata, nested_ids)
        }
    };
    let data_type = arrow_type(&field.data_type, naming, nested_ids.as_ref())?;
    let metadata = with_extension_marker(metadata, &field.data_type);
    Ok(ArrowField::new(name, data_type, field.nullable).with_metadata(metadata))
}

fn logical_metadata(metadata: &Map<String, Value>) -> ArrowMetadata {
    metadata
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (key.clone(), text)
        })
        .collect()
}

fn physical_metadata(field: &StructField, mode: ColumnMappingMode) -> Result<ArrowMetadata> {
    let mut metadata = ArrowMetadata::new();
    if mode == ColumnMappingMode::None {
        return Ok(metadata);
    }
    match field.field_id() {
        Some(id) => {
            metadata.insert(PARQUET_FIELD_ID_META_KEY, id.to_string());
        }
        None if mode == ColumnMappingMode::Id && !field.metadata.contains_key(EXTRA_COLUMN_KEY) => {
            return Err(Error::invalid_table(
                "metaData.schemaString",
                format!(
                    "column `{}` has no 32-bit {COLUMN_MAPPING_ID_KEY} although the column \
                     mapping mode is id",
                    field.name
                ),
            ))
        }
        None => {}
    }
    Ok(metadata)
}

/// `metadata` with the Arrow extension type of a `variant` or geospatial column added.
fn with_extension_marker(mut metadata: ArrowMetadata, data_type: &DataType) -> ArrowMetadata {
    match data_type {
        DataType::Primitive(PrimitiveType::Variant) => {
            metadata.insert(EXTENSION_TYPE_NAME_KEY, VARIANT_EXTENSION_NAME);
        }
        DataType::Geospatial(geospatial) => {
            metadata.insert(EXTENSION_TYPE_NAME_KEY, GEOARROW_WKB_EXTENSION_NAME);
            metadata.insert(
                EXTENSION_TYPE_METADATA_KEY,
                geoarrow_metadata(geospatial).to_string(),
            );
        }
        _ => {}
    }
    metadata
}

/// The GeoArrow extension metadata of a geospatial column (GeoArrow "Extension metadata"):
/// `crs` the type's CRS (`OGC:CRS84` when it names none) with `crs_type` `authority_code`,
/// except for `SRID:0` (Spark's geometry without a reference system), which GeoArrow spells
/// by leaving `crs` out; `edges` for a geography, its algorithm in lower case (`spherical`).
pub(crate) fn geoarrow_metadata(geospatial: &GeospatialType) -> Value {
    let mut metadata = Map::new();
    let crs = geospatial.crs_or_default();
    if !crs.eq_ignore_ascii_case("SRID:0") {
        metadata.insert("crs".into(), Value::String(crs.to_string()));
        metadata.insert("crs_type".into(), Value::String("authority_code".into()));
    }
    if let Some(edges) = geospatial.edges() {
        metadata.insert("edges".into(), Value::String(edges));
    }
    Value::Object(metadata)
}

fn nested_field_metadata(ids: Option<&NestedIds<'_>>, data_type: &DataType) -> ArrowMetadata {
    let mut metadata = ArrowMetadata::new();
    if let Some(id) = ids.and_then(NestedIds::id) {
        metadata.insert(PARQUET_FIELD_ID_META_KEY, id.to_string());
    }
    with_extension_marker(metadata, data_type)
}

fn arrow_type(
    data_type: &DataType,
    naming: Naming,
    nested_ids: Option<&NestedIds<'_>>,
) -> Result<ArrowDataType> {
    match data_type {
        DataType::Primitive(primitive) => arrow_primitive(primitive),
        DataType::Geospatial(_) => Ok(ArrowDataType::Binary),
        DataType::Struct(st) => Ok(ArrowDataType::Struct(ArrowFields::from(arrow_fields(
            st, naming,
        )?))),
        DataType::Array(array) => {
            let element_ids = nested_ids.map(|ids| ids.child("element"));
            let element_type = arrow_type(&array.element_type, naming, element_ids.as_ref())?;
            let element =
                ArrowField::new("element", element_type, array.contains_null).with_metadata(
                    nested_field_metadata(element_ids.as_ref(), &array.element_type),
                );
            Ok(ArrowDataType::List(Arc::new(element)))
        }
        DataType::Map(map) => {
            let key_ids = nested_ids.map(|ids| ids.child("key"));
            let value_ids = nested_ids.map(|ids| ids.child("value"));
            let key_type = arrow_type(&map.key_type, naming, key_ids.as_ref())?;
            let value_type = arrow_type(&map.value_type, naming, value_ids.as_ref())?;
            let key = ArrowField::new("key", key_type, false)
                .with_metadata(nested_field_metadata(key_ids.as_ref(), &map.key_type));
            let value = ArrowField::new("value", value_type, map.value_contains_null)
                .with_metadata(nested_field_metadata(value_ids.as_ref(), &map.value_type));
            let entries = ArrowField::new(
                "key_value",
                ArrowDataType::Struct(ArrowFields::from(vec![key, value])),
                false,
            );
            Ok(ArrowDataType::Map(Arc::new(entries), false))
        }
    }
}

fn arrow_primitive(primitive: &PrimitiveType) -> Result<ArrowDataType> {
    Ok(match primitive {
        PrimitiveType::String => ArrowDataType::Utf8,
        PrimitiveType::Long => ArrowDataType::Int64,
        PrimitiveType::Integer => ArrowDataType::Int32,
        PrimitiveType::Short => ArrowDataType::Int16,
        PrimitiveType::Byte => ArrowDataType::Int8,
        PrimitiveType::Float => ArrowDataType::Float32,
        PrimitiveType::Double => ArrowDataType::Float64,
        PrimitiveType::Boolean => ArrowDataType::Boolean,
        PrimitiveType::Binary => ArrowDataType::Binary,
        PrimitiveType::Date => ArrowDataType::Date32,
        PrimitiveType::Timestamp => {
            ArrowDataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
        }
        PrimitiveType::TimestampNtz => ArrowDataType::Timestamp(TimeUnit::Microsecond, None),
        PrimitiveType::Decimal { precision, scale } => {
            check_decimal(*precision, *scale)
                .map_err(|reason| Error::invalid_table("metaData.schemaString", reason))?;
            ArrowDataType::Decimal128(*precision, *scale)
        }
        PrimitiveType::Void => ArrowDataType::Null,
        PrimitiveType::Variant => ArrowDataType::Struct(ArrowFields::from(vec![
            ArrowField::new("metadata", ArrowDataType::Binary, false),
            ArrowField::new("value", ArrowDataType::Binary, false),
        ])),
    })
}
