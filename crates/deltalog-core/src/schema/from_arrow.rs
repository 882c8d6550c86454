//! Table schemas from the data written: Arrow schemas as Delta schemas, and column mapping ids and physical names for new columns (spec
//! "Schema Serialization Format", "Column Mapping").

use arrow_schema::extension::EXTENSION_TYPE_NAME_KEY;
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::schema::{
    ArrayType, ColumnMappingMode, DataType, MapType, PrimitiveType, StructField, StructType,
    COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, MAX_DECIMAL_PRECISION,
    VARIANT_EXTENSION_NAME,
};

/// The Delta schema of data with Arrow schema `schema`: strings (of every width and view)
/// as `string`, signed integers by width, unsigned ones as the next wider signed type
/// (`UInt64` as `long`, whose values must then fit), floats, `boolean`, binaries as
/// `binary`, dates as `date`, timestamps with a zone as `timestamp` and without as
/// `timestamp_ntz`, decimals up to precision 38, the `arrow.parquet.variant` extension as
/// `variant`, dictionaries as their values, and structs, lists and maps of these. Field
/// metadata is not copied.
///
/// Errors: [`Error::SchemaMismatch`] naming a column of a type Delta has no counterpart for
/// (`null`, intervals, durations, times, unions, decimals wider than 38 digits).
pub fn struct_type_from_arrow(schema: &ArrowSchema) -> Result<StructType> {
    let fields = schema
        .fields()
        .iter()
        .map(|field| field_from_arrow(field, &field.name().clone()))
        .collect::<Result<Vec<_>>>()?;
    Ok(StructType::new(fields))
}

/// Gives every field of `schema` (nested ones included) that has no column mapping id a
/// fresh id above `max_column_id` and a physical name `col-<uuid>`, as Delta on Spark does
/// when it creates a table or adds columns under column mapping. Returns the new largest id
/// (for `delta.columnMapping.maxColumnId`). Does nothing under [`ColumnMappingMode::None`].
pub(crate) fn assign_column_mapping(
    schema: &mut StructType,
    mode: ColumnMappingMode,
    max_column_id: i64,
) -> i64 {
    let mut next = max_column_id;
    if mode != ColumnMappingMode::None {
        assign_fields(&mut schema.fields, &mut next);
    }
    next
}

/// The largest column mapping id in `schema`, or 0.
pub(crate) fn max_column_id(schema: &StructType) -> i64 {
    fn walk(fields: &[StructField], max: &mut i64) {
        for field in fields {
            if let Some(id) = field
                .metadata
                .get(COLUMN_MAPPING_ID_KEY)
                .and_then(Value::as_i64)
            {
                *max = (*max).max(id);
            }
            for child in nested_structs(&field.data_type) {
                walk(&child.fields, max);
            }
        }
    }
    let mut max = 0;
    walk(&schema.fields, &mut max);
    max
}

fn assign_fields(fields: &mut [StructField], next: &mut i64) {
    for field in fields {
        if !field.metadata.contains_key(COLUMN_MAPPING_ID_KEY) {
            *next += 1;
            field
                .metadata
                .insert(COLUMN_MAPPING_ID_KEY.into(), Value::from(*next));
            field.metadata.insert(
                COLUMN_MAPPING_PHYSICAL_NAME_KEY.into(),
                Value::from(format!("col-{}", uuid::Uuid::new_v4())),
            );
        }
        assign_nested(&mut field.data_type, next);
    }
}

fn assign_nested(data_type: &mut DataType, next: &mut i64) {
    match data_type {
        DataType::Struct(inner) => assign_fields(&mut inner.fields, next),
        DataType::Array(array) => assign_nested(&mut array.element_type, next),
        DataType::Map(map) => {
            assign_nested(&mut map.key_type, next);
            assign_nested(&mut map.value_type, next);
        }
        DataType::Primitive(_) | DataType::Geospatial(_) => {}
    }
}

fn nested_structs(data_type: &DataType) -> Vec<&StructType> {
    match data_type {
        DataType::Struct(inner) => vec![inner],
        DataType::Array(array) => nested_structs(&array.element_type),
        DataType::Map(map) => {
            let mut found = nested_structs(&map.key_type);
            found.extend(nested_structs(&map.value_type));
            found
        }
        DataType::Primitive(_) | DataType::Geospatial(_) => Vec::new(),
    }
}

fn field_from_arrow(field: &ArrowField, path: &str) -> Result<StructField> {
    let is_variant = field
        .metadata()
        .get(EXTENSION_TYPE_NAME_KEY)
        .is_some_and(|name| name == VARIANT_EXTENSION_NAME);
    let data_type = match is_variant {
        true => DataType::Primitive(PrimitiveType::Variant),
        false => type_from_arrow(field.data_type(), path)?,
    };
    Ok(StructField {
        name: field.name().clone(),
        data_type,
        nullable: field.is_nullable(),
        metadata: Map::new(),
    })
}

fn type_from_arrow(data_type: &ArrowType, path: &str) -> Result<DataType> {
    use PrimitiveType as P;
    let primitive = match data_type {
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => P::String,
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => P::Long,
        ArrowType::Int32 | ArrowType::UInt16 => P::Integer,
        ArrowType::Int16 | ArrowType::UInt8 => P::Short,
        ArrowType::Int8 => P::Byte,
        ArrowType::Float16 | ArrowType::Float32 => P::Float,
        ArrowType::Float64 => P::Double,
        ArrowType::Boolean => P::Boolean,
        ArrowType::Binary
        | ArrowType::LargeBinary
        | ArrowType::BinaryView
        | ArrowType::FixedSizeBinary(_) => P::Binary,
        ArrowType::Date32 | ArrowType::Date64 => P::Date,
        ArrowType::Timestamp(_, Some(_)) => P::Timestamp,
        ArrowType::Timestamp(_, None) => P::TimestampNtz,
        ArrowType::Decimal128(precision, scale) | ArrowType::Decimal256(precision, scale)
            if *precision <= MAX_DECIMAL_PRECISION && *scale >= 0 =>
        {
            P::Decimal {
                precision: *precision,
                scale: *scale,
            }
        }
        ArrowType::Dictionary(_, values) => return type_from_arrow(values, path),
        ArrowType::Struct(fields) => {
            let fields = fields
                .iter()
                .map(|f| field_from_arrow(f, &format!("{path}.{}", f.name())))
                .collect::<Result<Vec<_>>>()?;
            return Ok(DataType::Struct(Box::new(StructType::new(fields))));
        }
        ArrowType::List(element)
        | ArrowType::LargeList(element)
        | ArrowType::ListView(element)
        | ArrowType::LargeListView(element)
        | ArrowType::FixedSizeList(element, _) => {
            return Ok(DataType::Array(Box::new(ArrayType {
                element_type: type_from_arrow(element.data_type(), &format!("{path}.element"))?,
                contains_null: element.is_nullable(),
            })));
        }
        ArrowType::Map(entries, _) => {
            let ArrowType::Struct(kv) = entries.data_type() else {
                return Err(unsupported(path, data_type));
            };
            let [key, value] = kv.iter().collect::<Vec<_>>()[..] else {
                return Err(unsupported(path, data_type));
            };
            return Ok(DataType::Map(Box::new(MapType {
                key_type: type_from_arrow(key.data_type(), &format!("{path}.key"))?,
                value_type: type_from_arrow(value.data_type(), &format!("{path}.value"))?,
                value_contains_null: value.is_nullable(),
            })));
        }
        other => return Err(unsupported(path, other)),
    };
    Ok(DataType::Primitive(primitive))
}

fn unsupported(path: &str, data_type: &ArrowType) -> Error {
    Error::SchemaMismatch {
        table: "the data written".into(),
        column: path.to_string(),
        reason: format!("the Arrow type {data_type} has no Delta counterpart"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::{Fields, TimeUnit};

    use super::*;

    #[test]
    fn arrow_types_become_delta_types() {
        let schema = ArrowSchema::new(vec![
            ArrowField::new("s", ArrowType::LargeUtf8, true),
            ArrowField::new("i", ArrowType::Int32, false),
            ArrowField::new("u", ArrowType::UInt8, true),
            ArrowField::new(
                "t",
                ArrowType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                true,
            ),
            ArrowField::new("n", ArrowType::Timestamp(TimeUnit::Microsecond, None), true),
            ArrowField::new("d", ArrowType::Decimal128(10, 2), true),
            ArrowField::new(
                "l",
                ArrowType::List(Arc::new(ArrowField::new("item", ArrowType::Int64, true))),
                true,
            ),
            ArrowField::new(
                "st",
                ArrowType::Struct(Fields::from(vec![ArrowField::new(
                    "x",
                    ArrowType::Float64,
                    true,
                )])),
                true,
            ),
        ]);
        let delta = struct_type_from_arrow(&schema).unwrap();
        let shown: Vec<String> = delta
            .fields
            .iter()
            .map(|f| format!("{}:{}:{}", f.name, f.data_type, f.nullable))
            .collect();
        assert_eq!(
            shown,
            [
                "s:string:true",
                "i:integer:false",
                "u:short:true",
                "t:timestamp:true",
                "n:timestamp_ntz:true",
                "d:decimal(10,2):true",
                "l:array<long>:true",
                "st:struct<x:double>:true"
            ]
        );
    }

    #[test]
    fn types_without_a_delta_counterpart_are_refused_by_column() {
        let schema = ArrowSchema::new(vec![ArrowField::new("nothing", ArrowType::Null, true)]);
        let error = struct_type_from_arrow(&schema).unwrap_err();
        assert!(matches!(error, Error::SchemaMismatch { column, .. } if column == "nothing"));
    }

    #[test]
    fn column_mapping_numbers_new_fields_depth_first() {
        let mut schema = struct_type_from_arrow(&ArrowSchema::new(vec![
            ArrowField::new("a", ArrowType::Int32, true),
            ArrowField::new(
                "b",
                ArrowType::Struct(Fields::from(vec![ArrowField::new(
                    "c",
                    ArrowType::Utf8,
                    true,
                )])),
                true,
            ),
        ]))
        .unwrap();
        let max = assign_column_mapping(&mut schema, ColumnMappingMode::Name, 0);
        assert_eq!(max, 3);
        assert_eq!(max_column_id(&schema), 3);
        let (mut merged, _) = crate::schema::evolve_schema(
            &schema,
            &StructType::new(vec![StructField::new("d", PrimitiveType::Long, false)]),
            crate::schema::Evolution::default(),
        );
        assert_eq!(
            assign_column_mapping(&mut merged, ColumnMappingMode::Id, max),
            4
        );
        assert!(merged.fields[2].nullable);
        assert_eq!(merged.fields[2].metadata[COLUMN_MAPPING_ID_KEY], 4);
    }
}
