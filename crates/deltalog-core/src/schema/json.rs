//! The schema serialization format (spec "Schema Serialization Format", catalogue H-SC):
//! `schemaString` parsed with errors naming the column, and the types written back exactly as
//! Delta on Spark writes them.

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::*;
use crate::error::{Error, Result};

/// Parses a `schemaString` into the table schema (catalogue H-SC01).
///
/// The top level must be a struct. Errors are [`Error::InvalidTable`] naming
/// `metaData.schemaString` and the offending column and problem; callers that know the table
/// may re-wrap them. An absent `schemaString` is the caller's business (Delta on Spark reads it
/// as [`StructType::default`]).
pub fn parse_schema(schema_string: &str) -> Result<StructType> {
    let value: Value = serde_json::from_str(schema_string).map_err(|e| {
        Error::invalid_table(
            "metaData.schemaString",
            format!("the schema is not valid JSON: {e}"),
        )
    })?;
    struct_from_json(&value, "").map_err(|reason| {
        Error::invalid_table(
            "metaData.schemaString",
            format!("cannot parse the schema: {reason}"),
        )
    })
}

impl Serialize for PrimitiveType {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.type_name())
    }
}

impl Serialize for DataType {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            DataType::Primitive(primitive) => primitive.serialize(serializer),
            DataType::Geospatial(geospatial) => serializer.serialize_str(&geospatial.type_name()),
            DataType::Struct(st) => st.serialize(serializer),
            DataType::Array(array) => array.serialize(serializer),
            DataType::Map(map) => map.serialize(serializer),
        }
    }
}

impl Serialize for StructType {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "struct")?;
        map.serialize_entry("fields", &self.fields)?;
        map.end()
    }
}

impl Serialize for StructField {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("type", &self.data_type)?;
        map.serialize_entry("nullable", &self.nullable)?;
        map.serialize_entry("metadata", &self.metadata)?;
        map.end()
    }
}

impl Serialize for ArrayType {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("type", "array")?;
        map.serialize_entry("elementType", &self.element_type)?;
        map.serialize_entry("containsNull", &self.contains_null)?;
        map.end()
    }
}

impl Serialize for MapType {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("type", "map")?;
        map.serialize_entry("keyType", &self.key_type)?;
        map.serialize_entry("valueType", &self.value_type)?;
        map.serialize_entry("valueContainsNull", &self.value_contains_null)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for PrimitiveType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for DataType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        data_type_from_json(&value, "").map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for StructType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        struct_from_json(&value, "").map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for StructField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        field_from_json(&value, "").map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for ArrayType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match data_type_from_json(&value, "").map_err(D::Error::custom)? {
            DataType::Array(array) => Ok(*array),
            other => Err(D::Error::custom(format!(
                "expected an array type, got {other}"
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for MapType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match data_type_from_json(&value, "").map_err(D::Error::custom)? {
            DataType::Map(map) => Ok(*map),
            other => Err(D::Error::custom(format!(
                "expected a map type, got {other}"
            ))),
        }
    }
}

/// Parses `decimal(p,s)` (spaces allowed around the numbers, as in Spark).
pub(super) fn parse_decimal_type(name: &str) -> std::result::Result<PrimitiveType, String> {
    let unknown = || format!("unknown type `{name}`");
    let inner = name
        .strip_prefix("decimal(")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(unknown)?;
    let (precision, scale) = inner.split_once(',').ok_or_else(unknown)?;
    let precision: u8 = precision.trim().parse().map_err(|_| unknown())?;
    let scale: i8 = scale.trim().parse().map_err(|_| unknown())?;
    check_decimal(precision, scale)?;
    Ok(PrimitiveType::Decimal { precision, scale })
}

/// True for a type name of the `geometry` or `geography` family.
fn is_geospatial_name(name: &str) -> bool {
    name.starts_with("geometry") || name.starts_with("geography")
}

/// Parses a geospatial type name (see [`GeospatialType`]'s `FromStr`).
pub(super) fn parse_geospatial_type(name: &str) -> std::result::Result<GeospatialType, String> {
    let unknown = || format!("unknown type `{name}`");
    let (kind, rest) = if let Some(rest) = name.strip_prefix("geometry") {
        (GeospatialKind::Geometry, rest)
    } else if let Some(rest) = name.strip_prefix("geography") {
        (GeospatialKind::Geography, rest)
    } else {
        return Err(unknown());
    };
    let mut geospatial = GeospatialType {
        kind,
        crs: None,
        algorithm: None,
    };
    if rest.is_empty() {
        return Ok(geospatial);
    }
    let inner = rest
        .strip_prefix('(')
        .and_then(|inner| inner.strip_suffix(')'))
        .ok_or_else(unknown)?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    match (kind, parts.as_slice()) {
        (_, [crs]) if is_crs(crs) => geospatial.crs = Some((*crs).to_string()),
        (GeospatialKind::Geography, [algorithm]) if is_word(algorithm) => {
            geospatial.algorithm = Some((*algorithm).to_string())
        }
        (GeospatialKind::Geography, [crs, algorithm]) if is_crs(crs) && is_word(algorithm) => {
            geospatial.crs = Some((*crs).to_string());
            geospatial.algorithm = Some((*algorithm).to_string());
        }
        _ => {
            return Err(format!(
                "unknown type `{name}` (expected geometry(<authority>:<code>) or \
                 geography(<authority>:<code>, <algorithm>))"
            ))
        }
    }
    Ok(geospatial)
}

/// `<authority>:<code>`: word characters, the code possibly negative (Spark's `[\w]+:-?[\w]+`).
fn is_crs(text: &str) -> bool {
    text.split_once(':').is_some_and(|(authority, code)| {
        is_word(authority) && is_word(code.strip_prefix('-').unwrap_or(code))
    })
}

/// One or more ASCII letters, digits or underscores.
fn is_word(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn check_decimal(precision: u8, scale: i8) -> std::result::Result<(), String> {
    let max = MAX_DECIMAL_PRECISION;
    if precision == 0 || precision > max {
        return Err(format!(
            "decimal({precision},{scale}): the precision must be between 1 and {max}"
        ));
    }
    if i16::from(scale) > i16::from(precision) || i16::from(scale) < -i16::from(max) {
        return Err(format!(
            "decimal({precision},{scale}): the scale must not exceed the precision"
        ));
    }
    Ok(())
}

fn describe(path: &str) -> String {
    if path.is_empty() {
        "the schema".to_string()
    } else {
        format!("column `{path}`")
    }
}

fn join_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

fn json_object<'v>(
    value: &'v Value,
    path: &str,
) -> std::result::Result<&'v Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{}: expected a JSON object, got {value}", describe(path)))
}

fn struct_from_json(value: &Value, path: &str) -> std::result::Result<StructType, String> {
    match data_type_from_json(value, path)? {
        DataType::Struct(st) => Ok(*st),
        other => Err(format!(
            "{}: expected a struct type, got {other}",
            describe(path)
        )),
    }
}

fn data_type_from_json(value: &Value, path: &str) -> std::result::Result<DataType, String> {
    if let Value::String(name) = value {
        let parsed = if is_geospatial_name(name) {
            parse_geospatial_type(name).map(DataType::from)
        } else {
            name.parse::<PrimitiveType>().map(DataType::Primitive)
        };
        return parsed.map_err(|reason| format!("{}: {reason}", describe(path)));
    }
    let object = json_object(value, path)?;
    let kind = match object.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(other) => {
            return Err(format!(
                "{}: `type` must be a string, got {other}",
                describe(path)
            ))
        }
        None => return Err(format!("{}: the type object has no `type`", describe(path))),
    };
    match kind {
        "struct" => {
            let fields = match object.get("fields") {
                Some(Value::Array(fields)) => fields,
                Some(Value::Null) | None => &Vec::new(),
                Some(other) => {
                    return Err(format!(
                        "{}: `fields` must be an array, got {other}",
                        describe(path)
                    ))
                }
            };
            let fields = fields
                .iter()
                .map(|field| field_from_json(field, path))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(StructType::new(fields).into())
        }
        "array" => {
            let element_path = join_path(path, "element");
            let element = required(object, "elementType", path)?;
            Ok(ArrayType {
                element_type: data_type_from_json(element, &element_path)?,
                contains_null: optional_bool(object, "containsNull", path)?,
            }
            .into())
        }
        "map" => {
            let key = required(object, "keyType", path)?;
            let value = required(object, "valueType", path)?;
            Ok(MapType {
                key_type: data_type_from_json(key, &join_path(path, "key"))?,
                value_type: data_type_from_json(value, &join_path(path, "value"))?,
                value_contains_null: optional_bool(object, "valueContainsNull", path)?,
            }
            .into())
        }
        other => Err(format!("{}: unknown type `{other}`", describe(path))),
    }
}

fn field_from_json(value: &Value, parent: &str) -> std::result::Result<StructField, String> {
    let object = json_object(value, parent)?;
    let name = match object.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(format!(
                "{}: a field has no string `name`: {value}",
                describe(parent)
            ))
        }
    };
    let path = join_path(parent, &name);
    let data_type = data_type_from_json(required(object, "type", &path)?, &path)?;
    let nullable = optional_bool(object, "nullable", &path)?;
    let metadata = match object.get("metadata") {
        Some(Value::Object(metadata)) => metadata.clone(),
        Some(Value::Null) | None => Map::new(),
        Some(other) => {
            return Err(format!(
                "{}: `metadata` must be an object, got {other}",
                describe(&path)
            ))
        }
    };
    Ok(StructField {
        name,
        data_type,
        nullable,
        metadata,
    })
}

fn required<'v>(
    object: &'v Map<String, Value>,
    key: &str,
    path: &str,
) -> std::result::Result<&'v Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("{}: missing `{key}`", describe(path)))
}

/// A boolean that defaults to true when absent (Spark's leniency for `nullable`,
/// `containsNull` and `valueContainsNull`).
fn optional_bool(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> std::result::Result<bool, String> {
    match object.get(key) {
        Some(Value::Bool(b)) => Ok(*b),
        None | Some(Value::Null) => Ok(true),
        Some(other) => Err(format!(
            "{}: `{key}` must be a boolean, got {other}",
            describe(path)
        )),
    }
}

pub(super) fn json_as_i32(value: &Value) -> Option<i32> {
    match value {
        Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}
