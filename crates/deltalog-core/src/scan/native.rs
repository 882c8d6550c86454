//! What an engine's plain Parquet reader (Spark's `spark.read.parquet`) needs to read a scan's
//! files itself, and whether it can read them as they are.
//!
//! A plain Parquet reader knows nothing of the log: it reads the data columns of the files by
//! name. That gives the table's rows only when no deletion vector drops rows (spec "Deletion
//! Vectors"), columns are not matched by field id (spec "Column Mapping", `id` mode), no
//! column changed type (spec "Type Widening", `delta.typeChanges`), no column is a `variant`,
//! the files are Parquet, and no file name holds a character a path-globbing reader expands
//! (`{}[]*?\`). [`NativeColumns`] gives the columns in both namings with the table-level
//! reasons; [`super::Scan::native_files`] gives the files' URLs with the file-level ones.

use arrow_array::Array;
use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::{string_column, struct_column, Scan};
use crate::actions::Metadata;
use crate::error::{Error, Result};
use crate::schema::{
    ArrayType, DataType, MapType, PrimitiveType, StructField, StructType,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY, TYPE_CHANGES_KEY,
};
use crate::table_config::properties::COLUMN_MAPPING_MODE;

/// Characters a path-globbing reader (Hadoop's `globStatus`) reads as a pattern.
const GLOB_CHARACTERS: &[char] = &['{', '}', '[', ']', '*', '?', '\\'];

/// One selected top-level column, as the table defines it and as the data files hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeColumn {
    /// The logical field (the table schema's, metadata kept).
    pub logical: StructField,
    /// The field as the data files hold it: in column mapping `name` mode the physical name
    /// at every depth (the logical one where a field has none); `void` struct fields
    /// dropped; the logical nullability. `None` for a partition column, which the files do
    /// not hold.
    pub physical: Option<StructField>,
}

/// The selected columns of a table version for a plain Parquet reader.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeColumns {
    /// The selected columns, in the order asked for.
    pub columns: Vec<NativeColumn>,
    /// Why a plain Parquet reader cannot read these columns as they are stored, or `None`.
    pub obstacle: Option<String>,
}

/// The files of a scan for a plain Parquet reader.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeFiles {
    /// Each file's location as a Hadoop path string, in file-list order: scheme, authority
    /// and the URL-decoded path (`file:/tmp/t/x.parquet`, `s3://bucket/t/x.parquet`).
    pub urls: Vec<String>,
    /// Why a plain Parquet reader cannot read these files as they are, or `None`.
    pub obstacle: Option<String>,
}

impl NativeColumns {
    /// The columns `columns` (logical names: an exact match, else the only case-insensitive
    /// one; `None` for every column) of the table version with `metadata` and `schema`.
    /// `void` columns are never selected. A name that matches no column, or more than one,
    /// is an [`Error::InvalidArgument`].
    pub fn of(
        metadata: &Metadata,
        schema: &StructType,
        columns: Option<&[String]>,
    ) -> Result<NativeColumns> {
        let name_mode = metadata
            .configuration
            .get(COLUMN_MAPPING_MODE)
            .is_some_and(|mode| mode == "name");
        let selected = selected_fields(schema, columns)?;
        let obstacle = table_obstacle(metadata, &selected);
        let columns = selected
            .into_iter()
            .map(|field| NativeColumn {
                physical: (!metadata.partition_columns.contains(&field.name))
                    .then(|| physical_field(field, name_mode)),
                logical: field.clone(),
            })
            .collect();
        Ok(NativeColumns { columns, obstacle })
    }
}

impl Scan {
    /// The files of this scan for a plain Parquet reader: their URLs, and why it cannot read
    /// them as they are (some have deletion vectors, or a name with a glob character).
    pub fn native_files(&self) -> Result<NativeFiles> {
        let table = self.inner.source.table_uri.as_str();
        let root = self.inner.context.storage.root_url().as_str();
        let mut urls = Vec::new();
        let mut with_vectors = 0usize;
        let mut glob_path: Option<String> = None;
        for batch in &self.inner.files {
            let paths = string_column(batch, "path", table)?;
            with_vectors +=
                batch.num_rows() - struct_column(batch, "deletion_vector", table)?.null_count();
            for path in paths.iter().flatten() {
                if glob_path.is_none() && path.contains(GLOB_CHARACTERS) {
                    glob_path = Some(path.to_string());
                }
                urls.push(hadoop_path(root, path));
            }
        }
        let obstacle = if with_vectors > 0 {
            Some(format!("{with_vectors} of its files have deletion vectors"))
        } else {
            glob_path.map(|path| {
                format!(
                    "file {} has a character Spark reads as a glob pattern",
                    quoted(&path)
                )
            })
        };
        Ok(NativeFiles { urls, obstacle })
    }
}

/// The top-level non-void fields named `columns`, in that order (every one when `None`).
fn selected_fields<'a>(
    schema: &'a StructType,
    columns: Option<&[String]>,
) -> Result<Vec<&'a StructField>> {
    let fields: Vec<&StructField> = schema
        .fields
        .iter()
        .filter(|field| field.data_type != DataType::Primitive(PrimitiveType::Void))
        .collect();
    let Some(columns) = columns else {
        return Ok(fields);
    };
    let mut chosen = Vec::with_capacity(columns.len());
    for name in columns {
        let mut matches: Vec<&StructField> =
            fields.iter().copied().filter(|f| &f.name == name).collect();
        if matches.is_empty() {
            let lower = name.to_lowercase();
            matches = fields
                .iter()
                .copied()
                .filter(|f| f.name.to_lowercase() == lower)
                .collect();
        }
        match matches.as_slice() {
            [field] => chosen.push(*field),
            _ => {
                let available: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                return Err(Error::InvalidArgument(format!(
                    "the table has no column {} (it has: {})",
                    quoted(name),
                    available.join(", ")
                )));
            }
        }
    }
    Ok(chosen)
}

/// Why the columns `fields` of a table with `metadata` cannot be read by name, or `None`.
fn table_obstacle(metadata: &Metadata, fields: &[&StructField]) -> Option<String> {
    let mode = metadata
        .configuration
        .get(COLUMN_MAPPING_MODE)
        .map_or("none", String::as_str);
    if mode != "none" && mode != "name" {
        return Some(format!(
            "column mapping mode {} matches columns by id",
            quoted(mode)
        ));
    }
    if metadata.format.provider != "parquet" {
        return Some(format!(
            "its files are {}, not parquet",
            quoted(&metadata.format.provider)
        ));
    }
    for field in fields {
        if field_has_metadata(field, TYPE_CHANGES_KEY) {
            return Some(format!(
                "column `{}` changed type (type widening)",
                field.name
            ));
        }
        if contains_variant(&field.data_type) {
            return Some(format!("column `{}` is a variant", field.name));
        }
    }
    None
}

/// Whether `field` or a field nested in it carries the metadata `key`.
fn field_has_metadata(field: &StructField, key: &str) -> bool {
    field.metadata.contains_key(key) || type_has_metadata(&field.data_type, key)
}

fn type_has_metadata(data_type: &DataType, key: &str) -> bool {
    match data_type {
        DataType::Primitive(_) | DataType::Geospatial(_) => false,
        DataType::Struct(st) => st.fields.iter().any(|f| field_has_metadata(f, key)),
        DataType::Array(array) => type_has_metadata(&array.element_type, key),
        DataType::Map(map) => {
            type_has_metadata(&map.key_type, key) || type_has_metadata(&map.value_type, key)
        }
    }
}

fn contains_variant(data_type: &DataType) -> bool {
    match data_type {
        DataType::Primitive(primitive) => *primitive == PrimitiveType::Variant,
        DataType::Geospatial(_) => false,
        DataType::Struct(st) => st.fields.iter().any(|f| contains_variant(&f.data_type)),
        DataType::Array(array) => contains_variant(&array.element_type),
        DataType::Map(map) => contains_variant(&map.key_type) || contains_variant(&map.value_type),
    }
}

/// `field` as the data files name it (see [`NativeColumn::physical`]).
fn physical_field(field: &StructField, name_mode: bool) -> StructField {
    let physical_name = match field.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) {
        Some(Value::String(physical)) if name_mode && !physical.is_empty() => physical.clone(),
        _ => field.name.clone(),
    };
    StructField {
        name: physical_name,
        data_type: physical_type(&field.data_type, name_mode),
        nullable: field.nullable,
        metadata: field.metadata.clone(),
    }
}

fn physical_type(data_type: &DataType, name_mode: bool) -> DataType {
    match data_type {
        DataType::Primitive(_) | DataType::Geospatial(_) => data_type.clone(),
        DataType::Struct(st) => StructType::new(
            st.fields
                .iter()
                .filter(|f| f.data_type != DataType::Primitive(PrimitiveType::Void))
                .map(|f| physical_field(f, name_mode))
                .collect(),
        )
        .into(),
        DataType::Array(array) => ArrayType {
            element_type: physical_type(&array.element_type, name_mode),
            contains_null: array.contains_null,
        }
        .into(),
        DataType::Map(map) => MapType {
            key_type: physical_type(&map.key_type, name_mode),
            value_type: physical_type(&map.value_type, name_mode),
            value_contains_null: map.value_contains_null,
        }
        .into(),
    }
}

/// A file of the file list (URL-decoded, relative to the table root, or an absolute URI) as
/// the Hadoop path string a reader takes literally: scheme, authority, decoded path.
pub(crate) fn hadoop_path(root_url: &str, path: &str) -> String {
    let absolute = is_absolute(path);
    let (scheme, authority, url_path) = split_url(if absolute { path } else { root_url });
    let mut location = percent_decode_str(url_path)
        .decode_utf8_lossy()
        .into_owned();
    if !absolute {
        location = format!("{}/{path}", location.trim_end_matches('/'));
    }
    if scheme == "file" {
        format!("file:{location}")
    } else {
        format!("{scheme}://{authority}{location}")
    }
}

/// Whether `path` starts with a URI scheme (two letters or more, so `C:` is no scheme).
pub(crate) fn is_absolute(path: &str) -> bool {
    path.split_once(':').is_some_and(|(scheme, _)| {
        scheme.chars().count() > 1 && scheme.chars().all(char::is_alphabetic)
    })
}

/// The scheme (lower case), authority and path of a URL, split as RFC 3986 reads it (the
/// query and fragment dropped).
fn split_url(url: &str) -> (String, &str, &str) {
    let (scheme, rest) = url.split_once(':').unwrap_or(("", url));
    let (authority, rest) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find(['/', '?', '#']).unwrap_or(after.len());
            after.split_at(end)
        }
        None => ("", rest),
    };
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    let path = rest.split_once('?').map_or(rest, |(before, _)| before);
    (scheme.to_ascii_lowercase(), authority, path)
}

/// `text` in single quotes, as Python's `repr` writes a string (double quotes when it holds a
/// single quote and no double quote).
fn quoted(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for character in text.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::actions::Format;

    fn metadata(configuration: &[(&str, &str)], partition_columns: &[&str]) -> Metadata {
        Metadata {
            id: "id".to_string(),
            name: None,
            description: None,
            format: Format::default(),
            schema_string: None,
            partition_columns: partition_columns.iter().map(|c| c.to_string()).collect(),
            created_time: None,
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        }
    }

    fn mapped(name: &str, physical: &str, data_type: impl Into<DataType>) -> StructField {
        StructField::new(name, data_type, true)
            .with_metadata([(COLUMN_MAPPING_PHYSICAL_NAME_KEY, json!(physical))])
    }

    fn schema() -> StructType {
        let inner = StructType::new(vec![
            mapped("a", "col-a", PrimitiveType::Long),
            StructField::new("gone", PrimitiveType::Void, true),
        ]);
        StructType::new(vec![
            mapped("id", "col-id", PrimitiveType::Long),
            mapped("s", "col-s", inner),
            StructField::new("v", PrimitiveType::Void, true),
            mapped("p", "col-p", PrimitiveType::String),
        ])
    }

    fn names(columns: &NativeColumns) -> Vec<(String, Option<String>)> {
        columns
            .columns
            .iter()
            .map(|c| {
                let physical = c.physical.as_ref().map(|f| f.name.clone());
                (c.logical.name.clone(), physical)
            })
            .collect()
    }

    #[test]
    fn name_mode_gives_physical_names_at_every_depth() {
        let meta = metadata(&[(COLUMN_MAPPING_MODE, "name")], &["p"]);
        let columns = NativeColumns::of(&meta, &schema(), None).unwrap();
        assert_eq!(
            names(&columns),
            [
                ("id".to_string(), Some("col-id".to_string())),
                ("s".to_string(), Some("col-s".to_string())),
                ("p".to_string(), None),
            ]
        );
        let nested = columns.columns[1].physical.as_ref().unwrap();
        let DataType::Struct(inner) = &nested.data_type else {
            panic!("not a struct")
        };
        let inner_names: Vec<&str> = inner.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(inner_names, ["col-a"], "void fields are dropped");
        assert_eq!(columns.obstacle, None);
    }

    #[test]
    fn without_name_mode_the_logical_names_are_read() {
        let meta = metadata(&[], &[]);
        let asked = ["S".to_string(), "id".to_string()];
        let columns = NativeColumns::of(&meta, &schema(), Some(&asked)).unwrap();
        assert_eq!(
            names(&columns),
            [
                ("s".to_string(), Some("s".to_string())),
                ("id".to_string(), Some("id".to_string())),
            ]
        );
    }

    #[test]
    fn unknown_and_void_columns_are_refused() {
        let meta = metadata(&[], &[]);
        for name in ["nope", "v"] {
            let error = NativeColumns::of(&meta, &schema(), Some(&[name.to_string()]));
            assert!(
                matches!(&error, Err(Error::InvalidArgument(m)) if m.contains(&format!("no column '{name}'")) && m.contains("it has: id, s, p")),
                "{error:?}"
            );
        }
    }

    #[test]
    fn what_a_plain_reader_cannot_read_is_named() {
        let obstacle = |meta: &Metadata, schema: &StructType| {
            NativeColumns::of(meta, schema, None).unwrap().obstacle
        };
        let id_mode = metadata(&[(COLUMN_MAPPING_MODE, "id")], &[]);
        assert_eq!(
            obstacle(&id_mode, &schema()).as_deref(),
            Some("column mapping mode 'id' matches columns by id")
        );
        let mut orc = metadata(&[], &[]);
        orc.format.provider = "orc".to_string();
        assert_eq!(
            obstacle(&orc, &schema()).as_deref(),
            Some("its files are 'orc', not parquet")
        );
        let widened = StructType::new(vec![StructField::new(
            "s",
            StructType::new(vec![StructField::new("x", PrimitiveType::Long, true)
                .with_metadata([(TYPE_CHANGES_KEY, json!([]))])]),
            true,
        )]);
        assert_eq!(
            obstacle(&metadata(&[], &[]), &widened).as_deref(),
            Some("column `s` changed type (type widening)")
        );
        let variant = StructType::new(vec![StructField::new(
            "m",
            MapType {
                key_type: PrimitiveType::String.into(),
                value_type: PrimitiveType::Variant.into(),
                value_contains_null: true,
            },
            true,
        )]);
        assert_eq!(
            obstacle(&metadata(&[], &[]), &variant).as_deref(),
            Some("column `m` is a variant")
        );
    }

    #[test]
    fn hadoop_paths_are_decoded_and_keep_the_authority() {
        assert_eq!(
            hadoop_path("file:///tmp/my%20t/", "p=a b/x.parquet"),
            "file:/tmp/my t/p=a b/x.parquet"
        );
        assert_eq!(
            hadoop_path("s3://bucket/root/", "x.parquet"),
            "s3://bucket/root/x.parquet"
        );
        assert_eq!(
            hadoop_path("file:///tmp/t/", "GS://other/a%3Ab.parquet"),
            "gs://other/a:b.parquet"
        );
        assert!(!is_absolute("C:/data/x.parquet"));
        assert!(!is_absolute("p=a:b/x.parquet"));
    }

    #[test]
    fn quoting_follows_python_repr() {
        assert_eq!(quoted("a"), "'a'");
        assert_eq!(quoted("it's"), "\"it's\"");
        assert_eq!(quoted("a\\b"), "'a\\\\b'");
    }
}
