//! The table schema: Delta's JSON schema format, column mapping and the conversion to Arrow
//! (spec "Schema Serialization Format", "Column Mapping", "Timestamp without timezone";
//! catalogue H-SC, E1, E5).
//!
//! [`StructType`] and friends (de)serialise exactly as Delta on Spark writes `schemaString`:
//! `{"type":"struct","fields":[{"name":..,"type":..,"nullable":..,"metadata":{..}}]}`, with
//! primitive types as strings (`"integer"`, `"decimal(10,2)"`, `"timestamp_ntz"`, ...) and
//! arrays and maps as objects. Column metadata values are arbitrary JSON and are kept as they
//! are (catalogue H-SC07).
//!
//! This file holds the types, column mapping's physical names and the shapes a read shows;
//! `json.rs` the serialization format, `arrow.rs` the conversion to Arrow, `from_arrow.rs` the
//! way back (the schema of written data), `evolve.rs` a schema grown to hold written data,
//! `requested.rs` batches in a requested Arrow schema.

mod arrow;
mod evolve;
#[cfg(feature = "internal-api")]
pub mod from_arrow;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod from_arrow;
mod json;
mod requested;

pub(crate) use arrow::{to_arrow_data_type, to_arrow_physical_schema, to_arrow_schema};
pub(crate) use evolve::{evolve_schema, Evolution};
pub use json::parse_schema;
use json::{json_as_i32, parse_decimal_type};
pub use requested::RequestedSchema;

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

pub(crate) use parquet::arrow::PARQUET_FIELD_ID_META_KEY;

/// The index of the name in `names` that `name` matches, as Spark resolves column names:
/// exactly, else the only one equal ignoring ASCII case.
pub(crate) fn match_name(names: &[&str], name: &str) -> Option<usize> {
    if let Some(index) = names.iter().position(|n| *n == name) {
        return Some(index);
    }
    let mut matches = names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.eq_ignore_ascii_case(name));
    let (index, _) = matches.next()?;
    matches.next().is_none().then_some(index)
}

/// Column metadata key holding a column's physical name (catalogue E1-03).
pub(crate) const COLUMN_MAPPING_PHYSICAL_NAME_KEY: &str = "delta.columnMapping.physicalName";
/// Column metadata key holding a column's 32-bit field id (catalogue E1-03).
pub(crate) const COLUMN_MAPPING_ID_KEY: &str = "delta.columnMapping.id";
/// Column metadata key (deltalog's own, never written to a log) marking a column that data
/// files hold beyond the table schema: the materialised row tracking columns and the
/// `_change_type` of change data files. Under column mapping such a column is stored under
/// its own name and, as Delta on Spark writes it, without a Parquet field id, so that it never
/// takes (or shadows) a column id of the table.
pub(crate) const EXTRA_COLUMN_KEY: &str = "deltalog.extraDataFileColumn";
/// Column metadata key holding the field ids of array elements and map keys/values, keyed by
/// `<physical name>.element`, `<physical name>.key`, `<physical name>.value` (nested further
/// as `<physical name>.element.key`, ...).
pub(crate) const PARQUET_FIELD_NESTED_IDS_KEY: &str = "parquet.field.nested.ids";
/// The same as [`PARQUET_FIELD_NESTED_IDS_KEY`], under the key Delta on Spark writes.
pub(crate) const NESTED_IDS_KEY: &str = "delta.columnMapping.nested.ids";
/// Column metadata key holding the type-widening history of a column.
pub(crate) const TYPE_CHANGES_KEY: &str = "delta.typeChanges";
/// Arrow extension name put on the struct field that holds a `variant` column.
pub(crate) const VARIANT_EXTENSION_NAME: &str = "arrow.parquet.variant";
/// Arrow extension name put on the binary field that holds a geospatial column (GeoArrow's
/// well-known-binary encoding).
pub(crate) const GEOARROW_WKB_EXTENSION_NAME: &str = "geoarrow.wkb";

/// Largest decimal precision Delta allows (catalogue H-SC02).
pub(crate) const MAX_DECIMAL_PRECISION: u8 = 38;

/// A primitive (non-nested) Delta type (catalogue H-SC02).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrimitiveType {
    String,
    Long,
    Integer,
    Short,
    Byte,
    Float,
    Double,
    Boolean,
    Binary,
    Date,
    /// Microseconds since the epoch, UTC.
    Timestamp,
    /// Microseconds of a local date-time with no zone (`timestamp_ntz`, catalogue E5).
    TimestampNtz,
    Decimal {
        precision: u8,
        scale: i8,
    },
    /// The `void` type of old tables (also spelled `null`).
    Void,
    /// Semi-structured `variant` values.
    Variant,
}

/// A Delta data type: a primitive, a geospatial type, or a struct, array or map of further
/// types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataType {
    Primitive(PrimitiveType),
    /// `geometry(<crs>)` or `geography(<crs>, <algorithm>)`: the `geospatial` table feature.
    Geospatial(Box<GeospatialType>),
    Struct(Box<StructType>),
    Array(Box<ArrayType>),
    Map(Box<MapType>),
}

/// Whether a geospatial column holds planar geometries or geographies on the sphere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GeospatialKind {
    /// `geometry`: edges are straight lines in the coordinate reference system.
    Geometry,
    /// `geography`: edges follow the interpolation algorithm (spherical by default).
    Geography,
}

/// A geospatial type of the schema JSON, as Delta on Spark writes it under the `geospatial`
/// table feature (Delta's `GeoSpatialTableFeature`; Spark's `GeometryType` and
/// `GeographyType`): `geometry(OGC:CRS84)`, `geometry(EPSG:3857)`, `geometry(SRID:0)`,
/// `geography(OGC:CRS84, SPHERICAL)`; Spark also parses the bare `geometry` and
/// `geography` and `geography(<algorithm>)`, which take the defaults. Values are WKB in a
/// Parquet `BINARY` column annotated with the Parquet `GEOMETRY` / `GEOGRAPHY` logical type;
/// statistics hold only null counts for them.
///
/// The CRS and algorithm are kept as written, so the type name round-trips exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GeospatialType {
    pub kind: GeospatialKind,
    /// The coordinate reference system as written (`OGC:CRS84`, `EPSG:3857`, `SRID:0`);
    /// `None` when the type names none (the default, [`GeospatialType::DEFAULT_CRS`]).
    pub crs: Option<String>,
    /// A geography's edge interpolation algorithm as written (`SPHERICAL`); `None` when the
    /// type names none (spherical). Always `None` for a geometry.
    pub algorithm: Option<String>,
}

/// A struct: the table schema itself or a nested struct column (catalogue H-SC03).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StructType {
    pub fields: Vec<StructField>,
}

/// One (possibly nested) column (catalogue H-SC04).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructField {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    /// Column metadata, kept exactly as written (values are arbitrary JSON).
    pub metadata: Map<String, Value>,
}

/// An array type (catalogue H-SC05).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayType {
    pub element_type: DataType,
    pub contains_null: bool,
}

/// A map type (catalogue H-SC06).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapType {
    pub key_type: DataType,
    pub value_type: DataType,
    pub value_contains_null: bool,
}

/// How logical columns map to the columns of the data files (spec "Column Mapping",
/// catalogue E1-01).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ColumnMappingMode {
    /// Data files use the logical (display) names.
    #[default]
    None,
    /// Data files use the physical names.
    Name,
    /// Data files are matched by parquet field id; they use the physical names too.
    Id,
}

/// A leaf column of a schema: a non-struct field and the names leading to it.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafColumn<'a> {
    /// Logical names from the top-level column down to this field.
    pub path: Vec<&'a str>,
    pub field: &'a StructField,
}

impl PrimitiveType {
    /// True when values of this type can be read as `to`: the same type, or a widening Delta's
    /// type widening allows and the data reader applies (`byte` to `short` to `integer` to
    /// `long`; those to `double` (but `long`); `float` to `double`; `date` to
    /// `timestamp_ntz`; a decimal to one with at least as many digits on each side of the
    /// point; an integer type to a decimal with room for its digits). `void` columns hold only
    /// nulls, so they read as anything.
    pub fn widens_to(self, to: PrimitiveType) -> bool {
        use PrimitiveType::*;
        let integer_digits = |integer: PrimitiveType| match integer {
            Byte => Some(3),
            Short => Some(5),
            Integer => Some(10),
            Long => Some(20),
            _ => None,
        };
        match (self, to) {
            _ if self == to => true,
            (Void, _) => true,
            (Byte, Short | Integer | Long | Double)
            | (Short, Integer | Long | Double)
            | (Integer, Long | Double)
            | (Float, Double)
            | (Date, TimestampNtz) => true,
            (
                Decimal {
                    precision: p1,
                    scale: s1,
                },
                Decimal {
                    precision: p2,
                    scale: s2,
                },
            ) => s2 >= s1 && i16::from(p2) - i16::from(s2) >= i16::from(p1) - i16::from(s1),
            (integer, Decimal { precision, scale }) => integer_digits(integer)
                .is_some_and(|digits| i16::from(precision) - i16::from(scale) >= digits),
            _ => false,
        }
    }

    /// The type's name in the schema JSON (`"integer"`, `"decimal(10,2)"`, ...).
    pub fn type_name(&self) -> String {
        self.to_string()
    }

    /// True for the types whose values order meaningfully for data skipping min/max
    /// statistics: numbers, decimals, dates, timestamps and strings (not boolean, binary,
    /// void or variant).
    pub fn has_min_max_stats(&self) -> bool {
        !matches!(
            self,
            PrimitiveType::Boolean
                | PrimitiveType::Binary
                | PrimitiveType::Void
                | PrimitiveType::Variant
        )
    }

    fn simple_name(&self) -> &'static str {
        match self {
            PrimitiveType::String => "string",
            PrimitiveType::Long => "long",
            PrimitiveType::Integer => "integer",
            PrimitiveType::Short => "short",
            PrimitiveType::Byte => "byte",
            PrimitiveType::Float => "float",
            PrimitiveType::Double => "double",
            PrimitiveType::Boolean => "boolean",
            PrimitiveType::Binary => "binary",
            PrimitiveType::Date => "date",
            PrimitiveType::Timestamp => "timestamp",
            PrimitiveType::TimestampNtz => "timestamp_ntz",
            PrimitiveType::Decimal { .. } => "decimal",
            PrimitiveType::Void => "void",
            PrimitiveType::Variant => "variant",
        }
    }
}

impl FromStr for PrimitiveType {
    type Err = String;

    /// Parses a primitive type name of the schema JSON. `decimal` alone is `decimal(10,0)`, as
    /// in Spark; `null` is accepted for `void`.
    fn from_str(name: &str) -> std::result::Result<Self, String> {
        let simple = match name {
            "string" => PrimitiveType::String,
            "long" => PrimitiveType::Long,
            "integer" => PrimitiveType::Integer,
            "short" => PrimitiveType::Short,
            "byte" => PrimitiveType::Byte,
            "float" => PrimitiveType::Float,
            "double" => PrimitiveType::Double,
            "boolean" => PrimitiveType::Boolean,
            "binary" => PrimitiveType::Binary,
            "date" => PrimitiveType::Date,
            "timestamp" => PrimitiveType::Timestamp,
            "timestamp_ntz" => PrimitiveType::TimestampNtz,
            "void" | "null" => PrimitiveType::Void,
            "variant" => PrimitiveType::Variant,
            "decimal" => PrimitiveType::Decimal {
                precision: 10,
                scale: 0,
            },
            _ => return parse_decimal_type(name),
        };
        Ok(simple)
    }
}

impl fmt::Display for PrimitiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrimitiveType::Decimal { precision, scale } => {
                write!(f, "decimal({precision},{scale})")
            }
            other => f.write_str(other.simple_name()),
        }
    }
}

impl GeospatialType {
    /// The CRS of a geospatial type that names none (Parquet's and Spark's default).
    pub const DEFAULT_CRS: &'static str = "OGC:CRS84";
    /// The edge interpolation algorithm of a geography that names none.
    pub const DEFAULT_ALGORITHM: &'static str = "SPHERICAL";

    /// `geometry(<crs>)`.
    pub fn geometry(crs: impl Into<String>) -> Self {
        GeospatialType {
            kind: GeospatialKind::Geometry,
            crs: Some(crs.into()),
            algorithm: None,
        }
    }

    /// `geography(<crs>, <algorithm>)`.
    pub fn geography(crs: impl Into<String>, algorithm: impl Into<String>) -> Self {
        GeospatialType {
            kind: GeospatialKind::Geography,
            crs: Some(crs.into()),
            algorithm: Some(algorithm.into()),
        }
    }

    /// The coordinate reference system: as written, else [`Self::DEFAULT_CRS`].
    pub fn crs_or_default(&self) -> &str {
        self.crs.as_deref().unwrap_or(Self::DEFAULT_CRS)
    }

    /// A geography's edge interpolation algorithm in lower case, as GeoArrow's `edges`
    /// names it (`spherical` when the type names none); `None` for a geometry (planar).
    pub fn edges(&self) -> Option<String> {
        match self.kind {
            GeospatialKind::Geometry => None,
            GeospatialKind::Geography => Some(
                self.algorithm
                    .as_deref()
                    .unwrap_or(Self::DEFAULT_ALGORITHM)
                    .to_ascii_lowercase(),
            ),
        }
    }

    /// The type's name in the schema JSON, exactly as parsed (`geometry(OGC:CRS84)`,
    /// `geography(OGC:CRS84, SPHERICAL)`).
    pub fn type_name(&self) -> String {
        self.to_string()
    }
}

impl FromStr for GeospatialType {
    type Err = String;

    /// Parses `geometry`, `geometry(<crs>)`, `geography`, `geography(<crs>)`,
    /// `geography(<algorithm>)` and `geography(<crs>, <algorithm>)`, spaces allowed inside
    /// the parentheses, as Spark's `DataType.fromJson` does. A CRS is `<authority>:<code>`
    /// (word characters, the code possibly negative); an algorithm is a word.
    fn from_str(name: &str) -> std::result::Result<Self, String> {
        json::parse_geospatial_type(name)
    }
}

impl fmt::Display for GeospatialType {
    /// The schema JSON name: Spark's `geometry(<crs>)` and `geography(<crs>, <algorithm>)`,
    /// leaving out what the parsed name left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            GeospatialKind::Geometry => "geometry",
            GeospatialKind::Geography => "geography",
        };
        match (&self.crs, &self.algorithm) {
            (None, None) => f.write_str(kind),
            (Some(crs), None) => write!(f, "{kind}({crs})"),
            (None, Some(algorithm)) => write!(f, "{kind}({algorithm})"),
            (Some(crs), Some(algorithm)) => write!(f, "{kind}({crs}, {algorithm})"),
        }
    }
}

impl DataType {
    /// Shorthand for a primitive type.
    pub const fn primitive(primitive: PrimitiveType) -> Self {
        DataType::Primitive(primitive)
    }

    /// The primitive type, if this is one.
    pub fn as_primitive(&self) -> Option<&PrimitiveType> {
        match self {
            DataType::Primitive(primitive) => Some(primitive),
            _ => None,
        }
    }

    /// The struct type, if this is one.
    pub fn as_struct(&self) -> Option<&StructType> {
        match self {
            DataType::Struct(st) => Some(st),
            _ => None,
        }
    }

    /// The type with its `void` struct fields removed at every depth (see
    /// [`StructField::without_void`]).
    pub fn without_void(&self) -> DataType {
        self.rebuild_fields(&|field| {
            (field.data_type != DataType::Primitive(PrimitiveType::Void)).then_some(field)
        })
    }

    /// The type with the metadata of its struct fields removed at every depth.
    pub fn without_metadata(&self) -> DataType {
        self.rebuild_fields(&|field| {
            Some(StructField {
                metadata: Map::new(),
                ..field
            })
        })
    }

    /// The type with every struct field, at every depth, replaced by `rebuild` of it (given
    /// with its own type rebuilt already) and dropped where that is `None`.
    fn rebuild_fields(&self, rebuild: &dyn Fn(StructField) -> Option<StructField>) -> DataType {
        match self {
            DataType::Primitive(_) | DataType::Geospatial(_) => self.clone(),
            DataType::Struct(st) => StructType::new(
                st.fields
                    .iter()
                    .filter_map(|field| {
                        rebuild(StructField {
                            data_type: field.data_type.rebuild_fields(rebuild),
                            ..field.clone()
                        })
                    })
                    .collect(),
            )
            .into(),
            DataType::Array(array) => ArrayType {
                element_type: array.element_type.rebuild_fields(rebuild),
                contains_null: array.contains_null,
            }
            .into(),
            DataType::Map(map) => MapType {
                key_type: map.key_type.rebuild_fields(rebuild),
                value_type: map.value_type.rebuild_fields(rebuild),
                value_contains_null: map.value_contains_null,
            }
            .into(),
        }
    }
}

impl From<PrimitiveType> for DataType {
    fn from(primitive: PrimitiveType) -> Self {
        DataType::Primitive(primitive)
    }
}

impl From<GeospatialType> for DataType {
    fn from(geospatial: GeospatialType) -> Self {
        DataType::Geospatial(Box::new(geospatial))
    }
}

impl From<StructType> for DataType {
    fn from(st: StructType) -> Self {
        DataType::Struct(Box::new(st))
    }
}

impl From<ArrayType> for DataType {
    fn from(array: ArrayType) -> Self {
        DataType::Array(Box::new(array))
    }
}

impl From<MapType> for DataType {
    fn from(map: MapType) -> Self {
        DataType::Map(Box::new(map))
    }
}

impl fmt::Display for DataType {
    /// A compact form for messages: `integer`, `array<string>`, `map<string,long>`,
    /// `struct<a:integer,b:string>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Primitive(primitive) => write!(f, "{primitive}"),
            DataType::Geospatial(geospatial) => write!(f, "{geospatial}"),
            DataType::Array(array) => write!(f, "array<{}>", array.element_type),
            DataType::Map(map) => write!(f, "map<{},{}>", map.key_type, map.value_type),
            DataType::Struct(st) => {
                f.write_str("struct<")?;
                for (i, field) in st.fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{}", field.name, field.data_type)?;
                }
                f.write_str(">")
            }
        }
    }
}

impl StructType {
    /// A struct of these fields.
    pub fn new(fields: Vec<StructField>) -> Self {
        StructType { fields }
    }

    /// The top-level field called exactly `name`.
    pub fn field(&self, name: &str) -> Option<&StructField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field at a path of logical names, descending through structs.
    pub fn field_at_path(&self, path: &[&str]) -> Option<&StructField> {
        let (first, rest) = path.split_first()?;
        let field = self.field(first)?;
        if rest.is_empty() {
            return Some(field);
        }
        field.data_type.as_struct()?.field_at_path(rest)
    }

    /// The schema as `schemaString` JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| {
            Error::invalid_table("metaData.schemaString", format!("cannot write schema: {e}"))
        })
    }

    /// The partition columns, in `partition_columns` order (catalogue B-M06).
    ///
    /// Names are logical names (catalogue X-27), matched exactly or else case-insensitively
    /// when that is unambiguous. A name missing from the schema, or a column whose type is a
    /// struct, array, map, variant or geospatial type, is an [`Error::InvalidTable`].
    pub fn partition_schema(&self, partition_columns: &[String]) -> Result<StructType> {
        let mut fields = Vec::with_capacity(partition_columns.len());
        for column in partition_columns {
            let field = self.find_column(column).ok_or_else(|| {
                Error::invalid_table(
                    "metaData.partitionColumns",
                    format!(
                        "partition column `{column}` is not in the table schema (columns: {})",
                        self.column_names()
                    ),
                )
            })?;
            if !is_partitionable(&field.data_type) {
                return Err(Error::invalid_table(
                    "metaData.partitionColumns",
                    format!(
                        "partition column `{column}` has type {}, which cannot be a partition \
                         column",
                        field.data_type
                    ),
                ));
            }
            fields.push(field.clone());
        }
        Ok(StructType::new(fields))
    }

    /// The columns stored in the data files: every top-level column that is not a partition
    /// column (matched as in [`StructType::partition_schema`]), in schema order.
    pub fn data_schema(&self, partition_columns: &[String]) -> StructType {
        let partition_names: Vec<&str> = partition_columns
            .iter()
            .filter_map(|column| self.find_column(column))
            .map(|field| field.name.as_str())
            .collect();
        let fields = self
            .fields
            .iter()
            .filter(|field| !partition_names.contains(&field.name.as_str()))
            .cloned()
            .collect();
        StructType::new(fields)
    }

    /// The schema with every field (at any depth, inside arrays and maps too) renamed to its
    /// physical name for `mode` (catalogue E1-06). Metadata, including the column ids, is kept.
    /// In `none` mode the schema is returned unchanged.
    pub fn physical_schema(&self, mode: ColumnMappingMode) -> Result<StructType> {
        if mode == ColumnMappingMode::None {
            return Ok(self.clone());
        }
        let fields = self
            .fields
            .iter()
            .map(|field| {
                Ok(StructField {
                    name: field.physical_name(mode)?.to_string(),
                    data_type: physical_data_type(&field.data_type, mode)?,
                    nullable: field.nullable,
                    metadata: field.metadata.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(StructType::new(fields))
    }

    /// The schema of the rows a read returns: `void` fields dropped at every depth (see
    /// [`StructField::without_void`]).
    pub fn without_void(&self) -> StructType {
        StructType::new(
            self.fields
                .iter()
                .filter_map(StructField::without_void)
                .collect(),
        )
    }

    /// The schema without field metadata at any depth (see [`StructField::without_metadata`]).
    pub fn without_metadata(&self) -> StructType {
        StructType::new(
            self.fields
                .iter()
                .map(StructField::without_metadata)
                .collect(),
        )
    }

    /// The schema as a read shows it: no `void` fields and no field metadata at any depth
    /// (the `StructType` Spark shows for a read of the table).
    pub fn read_form(&self) -> StructType {
        self.without_void().without_metadata()
    }

    /// The leaf columns in schema order: descends into structs; every other field (primitive,
    /// array, map) is a leaf.
    pub fn leaf_columns(&self) -> Vec<LeafColumn<'_>> {
        let mut leaves = Vec::new();
        collect_leaves(self, &mut Vec::new(), &mut leaves);
        leaves
    }

    /// The field called `name`, resolved as [`match_name`] resolves names.
    pub(crate) fn find_column(&self, name: &str) -> Option<&StructField> {
        let names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
        match_name(&names, name).map(|index| &self.fields[index])
    }

    fn column_names(&self) -> String {
        self.fields
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl StructField {
    /// A field with no metadata.
    pub fn new(name: impl Into<String>, data_type: impl Into<DataType>, nullable: bool) -> Self {
        StructField {
            name: name.into(),
            data_type: data_type.into(),
            nullable,
            metadata: Map::new(),
        }
    }

    /// The field with `metadata` added to (or replacing) its metadata entries.
    pub fn with_metadata(
        mut self,
        metadata: impl IntoIterator<Item = (impl Into<String>, impl Into<Value>)>,
    ) -> Self {
        for (key, value) in metadata {
            self.metadata.insert(key.into(), value.into());
        }
        self
    }

    /// The name this column has in the data files (catalogue E1-06, E1-10..E1-12).
    ///
    /// In `none` mode the logical name. In `name` and `id` mode the
    /// `delta.columnMapping.physicalName` metadata, whose absence is an
    /// [`Error::InvalidTable`] (catalogue E1-03).
    pub fn physical_name(&self, mode: ColumnMappingMode) -> Result<&str> {
        if mode == ColumnMappingMode::None {
            return Ok(&self.name);
        }
        match self.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) {
            Some(Value::String(physical)) => Ok(physical),
            _ => Err(Error::invalid_table(
                "metaData.schemaString",
                format!(
                    "column `{}` has no string {COLUMN_MAPPING_PHYSICAL_NAME_KEY} although the \
                     column mapping mode is {mode}",
                    self.name
                ),
            )),
        }
    }

    /// The column id (`delta.columnMapping.id`), when present as a 32-bit integer (a JSON
    /// number or a numeric string).
    pub fn field_id(&self) -> Option<i32> {
        json_as_i32(self.metadata.get(COLUMN_MAPPING_ID_KEY)?)
    }

    /// The field as a read returns it: `None` when its type is `void`, else the field with
    /// its `void` struct fields removed at every depth (no data file holds them; spec
    /// "Primitive Types").
    pub fn without_void(&self) -> Option<StructField> {
        (self.data_type != DataType::Primitive(PrimitiveType::Void)).then(|| StructField {
            data_type: self.data_type.without_void(),
            ..self.clone()
        })
    }

    /// The field as [`StructType::read_form`] shows it: its type without `void` struct
    /// fields, and no metadata at any depth.
    pub fn read_form(&self) -> StructField {
        StructField {
            data_type: self.data_type.without_void(),
            ..self.without_metadata()
        }
    }

    /// The field without metadata at any depth: its name, type and nullability (as Spark
    /// shows the schema of a read, without column mapping ids or comments).
    pub fn without_metadata(&self) -> StructField {
        StructField {
            name: self.name.clone(),
            data_type: self.data_type.without_metadata(),
            nullable: self.nullable,
            metadata: Map::new(),
        }
    }
}

impl FromStr for ColumnMappingMode {
    type Err = String;

    /// Parses `none`, `name` or `id` (any case).
    fn from_str(value: &str) -> std::result::Result<Self, String> {
        match value.to_ascii_lowercase().as_str() {
            "none" => Ok(ColumnMappingMode::None),
            "name" => Ok(ColumnMappingMode::Name),
            "id" => Ok(ColumnMappingMode::Id),
            _ => Err(format!(
                "unknown column mapping mode `{value}` (expected none, name or id)"
            )),
        }
    }
}

impl fmt::Display for ColumnMappingMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ColumnMappingMode::None => "none",
            ColumnMappingMode::Name => "name",
            ColumnMappingMode::Id => "id",
        })
    }
}

fn is_partitionable(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Primitive(p) if *p != PrimitiveType::Variant)
}

fn physical_data_type(data_type: &DataType, mode: ColumnMappingMode) -> Result<DataType> {
    Ok(match data_type {
        DataType::Primitive(_) | DataType::Geospatial(_) => data_type.clone(),
        DataType::Struct(st) => st.physical_schema(mode)?.into(),
        DataType::Array(array) => ArrayType {
            element_type: physical_data_type(&array.element_type, mode)?,
            contains_null: array.contains_null,
        }
        .into(),
        DataType::Map(map) => MapType {
            key_type: physical_data_type(&map.key_type, mode)?,
            value_type: physical_data_type(&map.value_type, mode)?,
            value_contains_null: map.value_contains_null,
        }
        .into(),
    })
}

fn collect_leaves<'a>(
    schema: &'a StructType,
    prefix: &mut Vec<&'a str>,
    leaves: &mut Vec<LeafColumn<'a>>,
) {
    for field in &schema.fields {
        prefix.push(&field.name);
        match &field.data_type {
            DataType::Struct(st) => collect_leaves(st, prefix, leaves),
            _ => leaves.push(LeafColumn {
                path: prefix.clone(),
                field,
            }),
        }
        prefix.pop();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    use arrow_schema::extension::EXTENSION_TYPE_NAME_KEY;
    use arrow_schema::{
        DataType as ArrowDataType, Field as ArrowField, Fields as ArrowFields, TimeUnit,
    };

    use serde_json::json;

    use super::*;

    #[test]
    fn reads_drop_void_fields_and_metadata_at_every_depth() {
        let schema: StructType = serde_json::from_value(json!({"type": "struct", "fields": [
            {"name": "gone", "type": "void", "nullable": true, "metadata": {}},
            {"name": "s", "type": {"type": "struct", "fields": [
                {"name": "v", "type": "void", "nullable": true, "metadata": {}},
                {"name": "l", "type": {"type": "array", "elementType": {"type": "struct",
                    "fields": [
                        {"name": "v", "type": "void", "nullable": true, "metadata": {}},
                        {"name": "x", "type": "long", "nullable": true,
                         "metadata": {"comment": "inner"}}]}, "containsNull": true},
                 "nullable": true, "metadata": {"delta.columnMapping.id": 3}}]},
             "nullable": false, "metadata": {"comment": "outer"}}]}))
        .unwrap();
        let read = schema.read_form();
        let expected = json!({"type": "struct", "fields": [
            {"name": "s", "type": {"type": "struct", "fields": [
                {"name": "l", "type": {"type": "array", "elementType": {"type": "struct",
                    "fields": [{"name": "x", "type": "long", "nullable": true, "metadata": {}}]},
                    "containsNull": true}, "nullable": true, "metadata": {}}]},
             "nullable": false, "metadata": {}}]});
        assert_eq!(serde_json::to_value(&read).unwrap(), expected);
        assert_eq!(schema.without_metadata().fields.len(), 2);
    }

    /// The unpacked `NAME/` directory of a golden table (holding `delta/` and `expected/`),
    /// unpacked once per machine under the temp directory.
    pub(crate) fn golden_table(name: &str) -> Option<PathBuf> {
        static UNPACK: Mutex<()> = Mutex::new(());
        let archives = crate::golden_archives();
        let archive = archives.join(format!("{name}.tar.zst"));
        if !archive.exists() {
            panic!("golden table {name} not found at {}", archive.display());
        }
        let root = std::env::temp_dir().join("deltalog-core-golden");
        let table = root.join(name);
        let _guard = UNPACK.lock().unwrap_or_else(|e| e.into_inner());
        if !table.join("delta").exists() {
            std::fs::create_dir_all(&root).unwrap();
            let staging = tempfile::tempdir_in(&root).unwrap();
            let status = std::process::Command::new("tar")
                .arg("--zstd")
                .arg("-xf")
                .arg(&archive)
                .arg("-C")
                .arg(staging.path())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "cannot unpack {}", archive.display());
            let _ = std::fs::rename(staging.path().join(name), &table);
        }
        Some(table)
    }

    /// Every action line of the JSON commits of the Delta table at `table_root` (the folder
    /// holding `_delta_log`), in version order.
    pub(crate) fn commit_actions(table_root: &Path) -> Vec<Value> {
        let log = table_root.join("_delta_log");
        let mut commits: Vec<PathBuf> = std::fs::read_dir(&log)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        commits.sort();
        commits
            .iter()
            .flat_map(|path| {
                std::fs::read_to_string(path)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| serde_json::from_str::<Value>(l).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn field(name: &str, data_type: impl Into<DataType>) -> StructField {
        StructField::new(name, data_type, true)
    }

    fn mapped(name: &str, id: i64, physical: &str, data_type: impl Into<DataType>) -> StructField {
        field(name, data_type).with_metadata([
            (COLUMN_MAPPING_ID_KEY, json!(id)),
            (COLUMN_MAPPING_PHYSICAL_NAME_KEY, json!(physical)),
        ])
    }

    fn round_trip(json_text: &str) -> StructType {
        let schema = parse_schema(json_text).unwrap();
        let written = schema.to_json().unwrap();
        let expected: Value = serde_json::from_str(json_text).unwrap();
        let actual: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(actual, expected, "round trip changed the schema");
        assert_eq!(parse_schema(&written).unwrap(), schema);
        schema
    }

    #[test]
    fn all_primitive_types_round_trip() {
        let names = [
            ("string", PrimitiveType::String),
            ("long", PrimitiveType::Long),
            ("integer", PrimitiveType::Integer),
            ("short", PrimitiveType::Short),
            ("byte", PrimitiveType::Byte),
            ("float", PrimitiveType::Float),
            ("double", PrimitiveType::Double),
            ("boolean", PrimitiveType::Boolean),
            ("binary", PrimitiveType::Binary),
            ("date", PrimitiveType::Date),
            ("timestamp", PrimitiveType::Timestamp),
            ("timestamp_ntz", PrimitiveType::TimestampNtz),
            (
                "decimal(38,18)",
                PrimitiveType::Decimal {
                    precision: 38,
                    scale: 18,
                },
            ),
            ("void", PrimitiveType::Void),
            ("variant", PrimitiveType::Variant),
        ];
        let fields: Vec<Value> = names
            .iter()
            .map(|(name, _)| json!({"name": format!("c_{name}"), "type": name, "nullable": true, "metadata": {}}))
            .collect();
        let text = json!({"type": "struct", "fields": fields}).to_string();
        let schema = round_trip(&text);
        for (field, (name, primitive)) in schema.fields.iter().zip(names) {
            assert_eq!(field.data_type, DataType::Primitive(primitive), "{name}");
            assert_eq!(primitive.type_name(), name);
        }
    }

    #[test]
    fn decimal_names_parse() {
        let parse = |s: &str| s.parse::<PrimitiveType>();
        assert_eq!(
            parse("decimal(10,2)"),
            Ok(PrimitiveType::Decimal {
                precision: 10,
                scale: 2
            })
        );
        assert_eq!(
            parse("decimal( 5 , 0 )"),
            Ok(PrimitiveType::Decimal {
                precision: 5,
                scale: 0
            })
        );
        assert_eq!(
            parse("decimal"),
            Ok(PrimitiveType::Decimal {
                precision: 10,
                scale: 0
            })
        );
        assert_eq!(parse("null"), Ok(PrimitiveType::Void));
        assert!(parse("decimal(39,2)").unwrap_err().contains("precision"));
        assert!(parse("decimal(0,0)").unwrap_err().contains("precision"));
        assert!(parse("decimal(5,6)").unwrap_err().contains("scale"));
        assert!(parse("decimal(5)").unwrap_err().contains("unknown type"));
        assert!(parse("decimal(a,b)").unwrap_err().contains("unknown type"));
        assert!(parse("int").unwrap_err().contains("unknown type `int`"));
    }

    /// The worked example of the spec (catalogue H-SC10), with metadata of every JSON kind.
    #[test]
    fn nested_types_round_trip() {
        let text = r#"{"type":"struct","fields":[
            {"name":"a","type":"integer","nullable":false,"metadata":{"comment":"x","n":1.5,"o":{"k":[1,null,true]}}},
            {"name":"b","type":{"type":"struct","fields":[{"name":"d","type":"integer","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}},
            {"name":"c","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":true,"metadata":{}},
            {"name":"e","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"d","type":"integer","nullable":false,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},
            {"name":"f","type":{"type":"map","keyType":"string","valueType":"string","valueContainsNull":true},"nullable":true,"metadata":{}},
            {"name":"g","type":{"type":"map","keyType":{"type":"array","elementType":"long","containsNull":true},"valueType":{"type":"map","keyType":"date","valueType":"decimal(5,1)","valueContainsNull":false},"valueContainsNull":true},"nullable":true,"metadata":{}}
        ]}"#;
        let schema = round_trip(text);
        assert!(!schema.fields[0].nullable);
        assert_eq!(
            schema.fields[0].metadata["o"],
            json!({"k": [1, null, true]})
        );
        let DataType::Array(e) = &schema.fields[3].data_type else {
            panic!("e is an array")
        };
        assert!(e.contains_null);
        assert_eq!(
            e.element_type.as_struct().unwrap().fields[0].data_type,
            DataType::Primitive(PrimitiveType::Integer)
        );
        assert_eq!(
            schema.fields[5].data_type.to_string(),
            "map<array<long>,map<date,decimal(5,1)>>"
        );
        assert_eq!(
            schema.field_at_path(&["b", "d"]).unwrap().name,
            "d".to_string()
        );
        // The serialised form has the key order Spark writes.
        let written = schema.to_json().unwrap();
        assert!(written.starts_with(
            r#"{"type":"struct","fields":[{"name":"a","type":"integer","nullable":false,"metadata":{"#
        ));
        assert!(
            written.contains(r#"{"type":"array","elementType":"integer","containsNull":false}"#)
        );
        assert!(written.contains(
            r#"{"type":"map","keyType":"string","valueType":"string","valueContainsNull":true}"#
        ));
    }

    #[test]
    fn missing_optional_keys_take_spark_defaults() {
        let schema = parse_schema(
            r#"{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"string"}}]}"#,
        )
        .unwrap();
        assert!(schema.fields[0].nullable);
        assert!(schema.fields[0].metadata.is_empty());
        assert_eq!(
            parse_schema(r#"{"type":"struct"}"#).unwrap(),
            StructType::default()
        );
    }

    #[test]
    fn parse_errors_name_the_problem() {
        let err = |s: &str| parse_schema(s).unwrap_err().to_string();
        assert!(err("{").contains("not valid JSON"));
        assert!(err(r#""integer""#).contains("expected a struct type, got integer"));
        let e = err(
            r#"{"type":"struct","fields":[{"name":"a","type":{"type":"struct","fields":[{"name":"b","type":"int","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}"#,
        );
        assert!(e.contains("column `a.b`: unknown type `int`"), "{e}");
        let e = err(
            r#"{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string"},"nullable":true,"metadata":{}}]}"#,
        );
        assert!(e.contains("column `m`: missing `valueType`"), "{e}");
        let e = err(r#"{"type":"struct","fields":[{"type":"string"}]}"#);
        assert!(e.contains("no string `name`"), "{e}");
        let e = err(
            r#"{"type":"struct","fields":[{"name":"a","type":"string","nullable":"yes","metadata":{}}]}"#,
        );
        assert!(
            e.contains("column `a`: `nullable` must be a boolean"),
            "{e}"
        );
        assert!(err(r#"{"type":"udt"}"#).contains("unknown type `udt`"));
    }

    /// The schema string Delta on Spark 4.4 writes for `GEOMETRY(4326)`, `GEOGRAPHY(4326)`,
    /// `GEOMETRY(0)` and `GEOMETRY(3857)` columns (preview conf on), one nested in an array.
    const SPARK_GEOSPATIAL_SCHEMA: &str = r#"{"type":"struct","fields":[{"name":"id","type":"integer","nullable":true,"metadata":{}},{"name":"g","type":"geometry(OGC:CRS84)","nullable":true,"metadata":{}},{"name":"h","type":"geography(OGC:CRS84, SPHERICAL)","nullable":true,"metadata":{}},{"name":"g0","type":"geometry(SRID:0)","nullable":true,"metadata":{}},{"name":"g3857","type":"geometry(EPSG:3857)","nullable":false,"metadata":{}},{"name":"a","type":{"type":"array","elementType":"geography(EPSG:4326, SPHERICAL)","containsNull":true},"nullable":true,"metadata":{}}]}"#;

    #[test]
    fn geospatial_types_round_trip_exactly() {
        let schema = parse_schema(SPARK_GEOSPATIAL_SCHEMA).unwrap();
        assert_eq!(schema.to_json().unwrap(), SPARK_GEOSPATIAL_SCHEMA);
        assert_eq!(
            schema.fields[1].data_type,
            DataType::from(GeospatialType::geometry("OGC:CRS84"))
        );
        assert_eq!(
            schema.fields[2].data_type,
            DataType::from(GeospatialType::geography("OGC:CRS84", "SPHERICAL"))
        );
        assert_eq!(
            schema.fields[4].data_type.to_string(),
            "geometry(EPSG:3857)"
        );
        assert_eq!(
            schema.fields[5].data_type.to_string(),
            "array<geography(EPSG:4326, SPHERICAL)>"
        );
        assert!(schema.leaf_columns().iter().any(|leaf| leaf.path == ["g"]));
        // What Spark's parser also takes: defaults left out, spaces inside the parentheses.
        for (name, crs, algorithm, again) in [
            ("geometry", None, None, "geometry"),
            ("geography", None, None, "geography"),
            (
                "geography(SPHERICAL)",
                None,
                Some("SPHERICAL"),
                "geography(SPHERICAL)",
            ),
            (
                "geography(OGC:CRS84)",
                Some("OGC:CRS84"),
                None,
                "geography(OGC:CRS84)",
            ),
            (
                "geometry( EPSG:-1 )",
                Some("EPSG:-1"),
                None,
                "geometry(EPSG:-1)",
            ),
            (
                "geography(EPSG:4326,KARNEY)",
                Some("EPSG:4326"),
                Some("KARNEY"),
                "geography(EPSG:4326, KARNEY)",
            ),
        ] {
            let parsed: GeospatialType = name.parse().unwrap();
            assert_eq!(
                (parsed.crs.as_deref(), parsed.algorithm.as_deref()),
                (crs, algorithm),
                "{name}"
            );
            assert_eq!(parsed.type_name(), again);
        }
        let parsed: GeospatialType = "geography".parse().unwrap();
        assert_eq!(parsed.crs_or_default(), "OGC:CRS84");
        assert_eq!(parsed.edges().as_deref(), Some("spherical"));
        assert_eq!(GeospatialType::geometry("SRID:0").edges(), None);
        for bad in [
            "geometry()",
            "geometry(4326)",
            "geometry(OGC:CRS84, SPHERICAL)",
            "geography(OGC:CRS84, SPHERICAL, X)",
            "geometry(OGC:CRS84",
            "geometrys",
            "geography(OGC CRS84)",
        ] {
            let error = bad.parse::<GeospatialType>().unwrap_err();
            assert!(error.contains(bad), "{bad}: {error}");
        }
        let e = parse_schema(
            r#"{"type":"struct","fields":[{"name":"p","type":"geometry(4326)","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("column `p`: unknown type `geometry(4326)`"),
            "{e}"
        );
    }

    #[test]
    fn geospatial_columns_are_geoarrow_wkb_in_arrow() {
        let schema = parse_schema(SPARK_GEOSPATIAL_SCHEMA).unwrap();
        let arrow = to_arrow_schema(&schema).unwrap();
        let extension = |name: &str| {
            let field = arrow.field_with_name(name).unwrap();
            assert_eq!(field.data_type(), &ArrowDataType::Binary, "{name}");
            let metadata = field.metadata();
            assert_eq!(metadata[EXTENSION_TYPE_NAME_KEY], "geoarrow.wkb", "{name}");
            serde_json::from_str::<Value>(&metadata["ARROW:extension:metadata"]).unwrap()
        };
        assert_eq!(
            extension("g"),
            json!({"crs": "OGC:CRS84", "crs_type": "authority_code"})
        );
        assert_eq!(
            extension("h"),
            json!({"crs": "OGC:CRS84", "crs_type": "authority_code", "edges": "spherical"})
        );
        assert_eq!(extension("g0"), json!({}));
        assert_eq!(
            extension("g3857"),
            json!({"crs": "EPSG:3857", "crs_type": "authority_code"})
        );
        assert!(!arrow.field_with_name("g3857").unwrap().is_nullable());
        let ArrowDataType::List(element) = arrow.field_with_name("a").unwrap().data_type() else {
            panic!("a is a list")
        };
        assert_eq!(element.data_type(), &ArrowDataType::Binary);
        assert_eq!(element.metadata()[EXTENSION_TYPE_NAME_KEY], "geoarrow.wkb");
        // The data files' schema carries the marker too; the values are plain binary.
        let physical = to_arrow_physical_schema(&schema, ColumnMappingMode::None).unwrap();
        assert_eq!(
            physical.field_with_name("h").unwrap().data_type(),
            &ArrowDataType::Binary
        );
        // Geospatial columns are not partition columns (Delta on Spark refuses them too).
        let e = schema
            .partition_schema(&["g".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be a partition column"), "{e}");
    }

    fn mapped_schema() -> StructType {
        let inner = StructType::new(vec![mapped("x", 3, "col-x", PrimitiveType::Long)]);
        let array_of_structs = ArrayType {
            element_type: StructType::new(vec![mapped("y", 5, "col-y", PrimitiveType::String)])
                .into(),
            contains_null: true,
        };
        let map = MapType {
            key_type: PrimitiveType::String.into(),
            value_type: StructType::new(vec![mapped("z", 7, "col-z", PrimitiveType::Date)]).into(),
            value_contains_null: true,
        };
        StructType::new(vec![
            mapped("a", 1, "col-a", PrimitiveType::Integer),
            mapped("s", 2, "col-s", inner),
            mapped("arr", 4, "col-arr", array_of_structs)
                .with_metadata([(PARQUET_FIELD_NESTED_IDS_KEY, json!({"col-arr.element": 10}))]),
            mapped("m", 6, "col-m", map).with_metadata([(
                PARQUET_FIELD_NESTED_IDS_KEY,
                json!({"col-m.key": 11, "col-m.value": 12}),
            )]),
        ])
    }

    #[test]
    fn column_mapping_physical_names_and_ids() {
        let schema = mapped_schema();
        let a = &schema.fields[0];
        assert_eq!(a.physical_name(ColumnMappingMode::None).unwrap(), "a");
        assert_eq!(a.physical_name(ColumnMappingMode::Name).unwrap(), "col-a");
        assert_eq!(a.physical_name(ColumnMappingMode::Id).unwrap(), "col-a");
        assert_eq!(a.field_id(), Some(1));
        assert_eq!(field("q", PrimitiveType::Long).field_id(), None);
        let string_id =
            field("q", PrimitiveType::Long).with_metadata([(COLUMN_MAPPING_ID_KEY, "9")]);
        assert_eq!(string_id.field_id(), Some(9));

        let physical = schema.physical_schema(ColumnMappingMode::Name).unwrap();
        let names: Vec<Vec<&str>> = physical
            .leaf_columns()
            .into_iter()
            .map(|leaf| leaf.path)
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["col-a"],
                vec!["col-s", "col-x"],
                vec!["col-arr"],
                vec!["col-m"]
            ]
        );
        let DataType::Array(arr) = &physical.fields[2].data_type else {
            panic!("arr is an array")
        };
        assert_eq!(
            arr.element_type.as_struct().unwrap().fields[0].name,
            "col-y"
        );
        let DataType::Map(m) = &physical.fields[3].data_type else {
            panic!("m is a map")
        };
        assert_eq!(m.value_type.as_struct().unwrap().fields[0].name, "col-z");
        assert_eq!(physical.fields[0].field_id(), Some(1));
        assert_eq!(
            schema.physical_schema(ColumnMappingMode::None).unwrap(),
            schema
        );

        let unmapped = StructType::new(vec![field("plain", PrimitiveType::Long)]);
        let e = unmapped
            .physical_schema(ColumnMappingMode::Name)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column `plain` has no string delta.columnMapping.physicalName"),
            "{e}"
        );
    }

    #[test]
    fn arrow_conversion_of_every_type() {
        let text = r#"{"type":"struct","fields":[
            {"name":"s","type":"string","nullable":true,"metadata":{}},
            {"name":"l","type":"long","nullable":false,"metadata":{}},
            {"name":"i","type":"integer","nullable":true,"metadata":{}},
            {"name":"sh","type":"short","nullable":true,"metadata":{}},
            {"name":"by","type":"byte","nullable":true,"metadata":{}},
            {"name":"f","type":"float","nullable":true,"metadata":{}},
            {"name":"d","type":"double","nullable":true,"metadata":{}},
            {"name":"bo","type":"boolean","nullable":true,"metadata":{}},
            {"name":"bi","type":"binary","nullable":true,"metadata":{}},
            {"name":"da","type":"date","nullable":true,"metadata":{}},
            {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
            {"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
            {"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},
            {"name":"v","type":"void","nullable":true,"metadata":{}},
            {"name":"var","type":"variant","nullable":true,"metadata":{}},
            {"name":"arr","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":true,"metadata":{}},
            {"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},"nullable":true,"metadata":{}},
            {"name":"st","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}}
        ]}"#;
        let arrow = to_arrow_schema(&parse_schema(text).unwrap()).unwrap();
        let ty = |name: &str| arrow.field_with_name(name).unwrap().data_type().clone();
        assert_eq!(ty("s"), ArrowDataType::Utf8);
        assert_eq!(ty("l"), ArrowDataType::Int64);
        assert!(!arrow.field_with_name("l").unwrap().is_nullable());
        assert_eq!(ty("i"), ArrowDataType::Int32);
        assert_eq!(ty("sh"), ArrowDataType::Int16);
        assert_eq!(ty("by"), ArrowDataType::Int8);
        assert_eq!(ty("f"), ArrowDataType::Float32);
        assert_eq!(ty("d"), ArrowDataType::Float64);
        assert_eq!(ty("bo"), ArrowDataType::Boolean);
        assert_eq!(ty("bi"), ArrowDataType::Binary);
        assert_eq!(ty("da"), ArrowDataType::Date32);
        assert_eq!(
            ty("ts"),
            ArrowDataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        assert_eq!(
            ty("ntz"),
            ArrowDataType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert_eq!(ty("dec"), ArrowDataType::Decimal128(10, 2));
        assert_eq!(ty("v"), ArrowDataType::Null);
        let variant = arrow.field_with_name("var").unwrap();
        assert_eq!(
            variant
                .metadata()
                .get(EXTENSION_TYPE_NAME_KEY)
                .map(String::as_str),
            Some(VARIANT_EXTENSION_NAME)
        );
        assert_eq!(
            ty("var"),
            ArrowDataType::Struct(ArrowFields::from(vec![
                ArrowField::new("metadata", ArrowDataType::Binary, false),
                ArrowField::new("value", ArrowDataType::Binary, false),
            ]))
        );
        assert_eq!(
            ty("arr"),
            ArrowDataType::List(Arc::new(ArrowField::new(
                "element",
                ArrowDataType::Int32,
                false
            )))
        );
        let ArrowDataType::Map(entries, sorted) = ty("m") else {
            panic!("m is a map")
        };
        assert!(!sorted);
        assert_eq!(entries.name(), "key_value");
        assert!(!entries.is_nullable());
        assert_eq!(
            entries.data_type(),
            &ArrowDataType::Struct(ArrowFields::from(vec![
                ArrowField::new("key", ArrowDataType::Utf8, false),
                ArrowField::new("value", ArrowDataType::Int64, true),
            ]))
        );
        assert_eq!(
            ty("st"),
            ArrowDataType::Struct(ArrowFields::from(vec![ArrowField::new(
                "x",
                ArrowDataType::Int32,
                false
            )]))
        );
        assert_eq!(
            to_arrow_data_type(&PrimitiveType::Date.into()).unwrap(),
            ArrowDataType::Date32
        );
        let bad = PrimitiveType::Decimal {
            precision: 40,
            scale: 0,
        };
        assert!(to_arrow_data_type(&bad.into()).is_err());
    }

    #[test]
    fn arrow_fields_keep_delta_metadata() {
        let type_changes = json!([{"fromType": "integer", "toType": "long"}]);
        let schema = StructType::new(vec![mapped("a", 1, "col-a", PrimitiveType::Long)
            .with_metadata([(TYPE_CHANGES_KEY, type_changes.clone())])
            .with_metadata([("comment", "hello")])]);
        let arrow = to_arrow_schema(&schema).unwrap();
        let metadata = arrow.field(0).metadata();
        assert_eq!(arrow.field(0).name(), "a");
        assert_eq!(metadata.get(COLUMN_MAPPING_ID_KEY).unwrap(), "1");
        assert_eq!(
            metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY).unwrap(),
            "col-a"
        );
        assert_eq!(metadata.get("comment").unwrap(), "hello");
        let kept: Value = serde_json::from_str(metadata.get(TYPE_CHANGES_KEY).unwrap()).unwrap();
        assert_eq!(kept, type_changes);
    }

    #[test]
    fn arrow_physical_schema_has_physical_names_and_field_ids() {
        let schema = mapped_schema();
        let id = |field: &ArrowField| field.metadata().get(PARQUET_FIELD_ID_META_KEY).cloned();
        for mode in [ColumnMappingMode::Name, ColumnMappingMode::Id] {
            let arrow = to_arrow_physical_schema(&schema, mode).unwrap();
            let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
            assert_eq!(names, ["col-a", "col-s", "col-arr", "col-m"]);
            assert_eq!(id(arrow.field(0)).as_deref(), Some("1"));
            assert_eq!(
                arrow.field(0).metadata().len(),
                1,
                "only the field id is kept"
            );
            let ArrowDataType::Struct(s) = arrow.field(1).data_type() else {
                panic!("struct")
            };
            assert_eq!(s[0].name(), "col-x");
            assert_eq!(id(&s[0]).as_deref(), Some("3"));
            let ArrowDataType::List(element) = arrow.field(2).data_type() else {
                panic!("list")
            };
            assert_eq!(id(element).as_deref(), Some("10"));
            let ArrowDataType::Struct(y) = element.data_type() else {
                panic!("struct element")
            };
            assert_eq!(y[0].name(), "col-y");
            assert_eq!(id(&y[0]).as_deref(), Some("5"));
            let ArrowDataType::Map(entries, _) = arrow.field(3).data_type() else {
                panic!("map")
            };
            let ArrowDataType::Struct(kv) = entries.data_type() else {
                panic!("entries")
            };
            assert_eq!(id(&kv[0]).as_deref(), Some("11"));
            assert_eq!(id(&kv[1]).as_deref(), Some("12"));
            let ArrowDataType::Struct(z) = kv[1].data_type() else {
                panic!("value struct")
            };
            assert_eq!(z[0].name(), "col-z");
        }
        let plain = to_arrow_physical_schema(&schema, ColumnMappingMode::None).unwrap();
        assert_eq!(plain.field(0).name(), "a");
        assert!(plain.field(0).metadata().is_empty());

        let no_id = StructType::new(vec![field("a", PrimitiveType::Long)
            .with_metadata([(COLUMN_MAPPING_PHYSICAL_NAME_KEY, "col-a")])]);
        assert!(to_arrow_physical_schema(&no_id, ColumnMappingMode::Name).is_ok());
        let e = to_arrow_physical_schema(&no_id, ColumnMappingMode::Id)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column `a` has no 32-bit delta.columnMapping.id"),
            "{e}"
        );
    }

    #[test]
    fn partition_and_data_schemas() {
        let schema = StructType::new(vec![
            field("id", PrimitiveType::Long),
            field("Day", PrimitiveType::Date),
            field("region", PrimitiveType::String),
            field(
                "s",
                StructType::new(vec![field("x", PrimitiveType::Integer)]),
            ),
        ]);
        let cols = vec!["region".to_string(), "day".to_string()];
        let partitions = schema.partition_schema(&cols).unwrap();
        let names: Vec<&str> = partitions.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["region", "Day"]);
        let data = schema.data_schema(&cols);
        let names: Vec<&str> = data.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["id", "s"]);
        assert_eq!(schema.field("id").unwrap().name, "id");
        assert!(schema.field("ID").is_none());

        let e = schema
            .partition_schema(&["nope".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("partition column `nope` is not in the table schema"),
            "{e}"
        );
        assert!(e.contains("id, Day, region, s"), "{e}");
        let e = schema
            .partition_schema(&["s".to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("has type struct<x:integer>"), "{e}");
    }

    #[test]
    fn leaf_columns_descend_into_structs_only() {
        let schema = StructType::new(vec![
            field("a", PrimitiveType::Long),
            field(
                "b",
                StructType::new(vec![
                    field(
                        "c",
                        StructType::new(vec![field("d", PrimitiveType::String)]),
                    ),
                    field(
                        "e",
                        ArrayType {
                            element_type: PrimitiveType::Long.into(),
                            contains_null: true,
                        },
                    ),
                ]),
            ),
            field("f", StructType::default()),
        ]);
        let leaves: Vec<(Vec<&str>, &str)> = schema
            .leaf_columns()
            .into_iter()
            .map(|leaf| (leaf.path, leaf.field.name.as_str()))
            .collect();
        assert_eq!(
            leaves,
            vec![
                (vec!["a"], "a"),
                (vec!["b", "c", "d"], "d"),
                (vec!["b", "e"], "e"),
            ]
        );
    }

    /// The schema strings of every metaData action in every golden table's JSON commits parse,
    /// and re-serialise to the same JSON value.
    #[test]
    fn golden_table_schemas_parse() {
        let archives = crate::golden_archives();
        let entries = std::fs::read_dir(&archives).expect("the golden tables");
        let mut names: Vec<String> = entries
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().to_string();
                name.strip_suffix(".tar.zst").map(str::to_string)
            })
            .collect();
        names.sort();
        let mut parsed = 0;
        for name in names {
            let Some(table) = golden_table(&name) else {
                continue;
            };
            let delta = table.join("delta");
            let roots: Vec<PathBuf> = if delta.join("_delta_log").exists() {
                vec![delta]
            } else {
                // `hive` holds several tables, one per folder.
                std::fs::read_dir(&delta)
                    .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                    .unwrap_or_default()
            };
            for root in roots {
                if !root.join("_delta_log").exists() {
                    continue;
                }
                for action in commit_actions(&root) {
                    let Some(text) = action["metaData"]["schemaString"].as_str() else {
                        continue;
                    };
                    let schema = parse_schema(text).unwrap_or_else(|e| panic!("{name}: {e}"));
                    let again: Value = serde_json::from_str(&schema.to_json().unwrap()).unwrap();
                    assert_eq!(
                        again,
                        serde_json::from_str::<Value>(text).unwrap(),
                        "{name}"
                    );
                    to_arrow_schema(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
                    parsed += 1;
                }
            }
        }
        assert!(parsed > 80, "only {parsed} schemas found");
    }
}
