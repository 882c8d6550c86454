//! Per-file statistics: which columns carry them, their typed schema, and decoding the JSON
//! `stats` strings of file actions into that schema (spec "Per-file Statistics", catalogue
//! H-ST, E1-08). It sits with the table configuration because the table's properties
//! (`delta.dataSkippingStatsColumns`, `delta.dataSkippingNumIndexedCols`, the column mapping
//! mode) choose the columns.
//!
//! The stats struct is `{numRecords: long, minValues: {..}, maxValues: {..}, nullCount: {..},
//! tightBounds: boolean}`. `minValues`/`maxValues` mirror the data schema (structs nested by
//! name, physical names under column mapping) but keep only leaves whose type has an order
//! (numbers, decimals, dates, timestamps, strings). `nullCount` mirrors it with a `long` for
//! every leaf, arrays, maps and booleans included, as Delta on Spark writes it.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, RecordBatch, StringArray, StructArray,
};
use arrow_json::ReaderBuilder;
use arrow_schema::{
    ArrowError, DataType as ArrowDataType, Field, Fields, Schema as ArrowSchema, SchemaRef,
};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::schema::{
    to_arrow_data_type, ColumnMappingMode, DataType, PrimitiveType, StructField, StructType,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
};
use crate::table_config::properties::{
    column_mapping_mode, TableProperties, DATA_SKIPPING_NUM_INDEXED_COLS,
};
use crate::table_config::stats_json;
use crate::util::json_cursor::decode_string_body;
use crate::util::json_text::mend_wide_surrogates;

/// Stats key: rows physically in the file.
pub(crate) const NUM_RECORDS: &str = "numRecords";
/// Stats key: per-column lower bounds.
pub(crate) const MIN_VALUES: &str = "minValues";
/// Stats key: per-column upper bounds.
pub(crate) const MAX_VALUES: &str = "maxValues";
/// Stats key: per-column null counts.
pub(crate) const NULL_COUNT: &str = "nullCount";
/// Stats key: whether the bounds are exact for the valid rows.
pub(crate) const TIGHT_BOUNDS: &str = "tightBounds";

const UTC_OFFSET: &str = "+00:00";

/// The Arrow type of the stats struct of a table (catalogue H-ST01).
///
/// `data_schema` is the schema of the data columns (no partition columns), preferably with
/// logical names; a schema already renamed by [`StructType::physical_schema`] works too. The
/// column mapping mode is taken from `delta.columnMapping.mode` in `configuration`; use
/// [`stats_schema_with_mode`] to pass the mode the protocol allows (catalogue E1-02).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn stats_schema(
    data_schema: &StructType,
    configuration: &HashMap<String, String>,
) -> Result<ArrowDataType> {
    let mode = column_mapping_mode(configuration)?;
    stats_schema_with_mode(data_schema, configuration, mode)
}

/// [`stats_schema`] with an explicit column mapping mode.
pub(crate) fn stats_schema_with_mode(
    data_schema: &StructType,
    configuration: &HashMap<String, String>,
    mode: ColumnMappingMode,
) -> Result<ArrowDataType> {
    let stats = stats_struct_type(data_schema, configuration, mode)?;
    to_arrow_data_type(&stats.into())
}

/// The stats struct as a Delta type, as [`stats_schema_with_mode`] describes it (useful for
/// writing `stats_parsed` in checkpoints).
///
/// Columns with statistics: those named by `delta.dataSkippingStatsColumns` (comma-separated,
/// backtick quoting, dots for nesting, case-insensitive; a struct name selects its whole
/// subtree; unknown names are ignored), else the first `delta.dataSkippingNumIndexedCols` leaf
/// columns in schema order (default 32, negative means all; a struct counts its leaves, any
/// other column counts one). Keys are physical names under column mapping (catalogue E1-08);
/// a column without a physical name keeps its name. All fields are nullable and carry no
/// metadata. `minValues`, `maxValues` and `nullCount` are left out when they would be empty.
/// A `delta.dataSkippingNumIndexedCols` that is not an integer is an [`Error::InvalidTable`].
pub(crate) fn stats_struct_type(
    data_schema: &StructType,
    configuration: &HashMap<String, String>,
    mode: ColumnMappingMode,
) -> Result<StructType> {
    let selected = select_stats_columns(data_schema, configuration)?;
    let long = || DataType::Primitive(PrimitiveType::Long);
    let mut fields = vec![StructField::new(NUM_RECORDS, long(), true)];
    if let Some(min_max) = min_max_struct(&selected, mode) {
        fields.push(StructField::new(MIN_VALUES, min_max.clone(), true));
        fields.push(StructField::new(MAX_VALUES, min_max, true));
    }
    if let Some(null_count) = null_count_struct(&selected, mode) {
        fields.push(StructField::new(NULL_COUNT, null_count, true));
    }
    fields.push(StructField::new(TIGHT_BOUNDS, PrimitiveType::Boolean, true));
    Ok(StructType::new(fields))
}

/// The data columns that get statistics (a subset of `data_schema` with its logical names and
/// metadata), chosen as [`stats_struct_type`] describes.
pub(crate) fn select_stats_columns(
    data_schema: &StructType,
    configuration: &HashMap<String, String>,
) -> Result<StructType> {
    let properties = TableProperties::from_configuration(configuration);
    if let Some(columns) = &properties.data_skipping_stats_columns {
        let paths: Vec<Vec<String>> = parse_column_list(columns)
            .into_iter()
            .map(|path| path.iter().map(|part| part.to_lowercase()).collect())
            .collect();
        return Ok(filter_by_paths(data_schema, &paths));
    }
    properties.check(DATA_SKIPPING_NUM_INDEXED_COLS)?;
    Ok(match properties.data_skipping_num_indexed_cols.limit() {
        None => data_schema.clone(),
        Some(limit) => truncate_to_leaves(data_schema, limit).0,
    })
}

/// Decodes a column of stats JSON strings into the stats struct, in one pass: straight into
/// the typed columns where the strings have the shape Delta writers produce
/// (`stats_json::decode_stats`), else with arrow-json's general decoder.
///
/// `stats_schema` is a struct type from [`stats_schema`]. Keys not in it are ignored. A null,
/// empty or undecodable string gives a null row: statistics are an optimisation, so a corrupt
/// value never fails the load and never drops a file (a reader treats missing stats as "no
/// information"). A value of the wrong type inside otherwise good stats (say a string where a
/// number belongs) nulls only that value. Timestamps decode from RFC 3339 text with an offset
/// or `Z` (`2021-01-01T00:00:00.000+01:00`); `timestamp_ntz` from text without a zone; dates
/// from `yyyy-MM-dd`; decimals from JSON numbers. A `stats_schema` that is not a struct is an
/// [`Error::InvalidArgument`].
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn parse_stats(json: &StringArray, stats_schema: &ArrowDataType) -> Result<StructArray> {
    let ArrowDataType::Struct(fields) = stats_schema else {
        return Err(Error::InvalidArgument(format!(
            "the stats schema must be a struct, got {stats_schema}"
        )));
    };
    let rows = json.len();
    let present = present_rows(json);
    if fields.is_empty() {
        return Ok(StructArray::new_empty_fields(rows, Some(present.into())));
    }
    match stats_json::decode_stats(json, &present, fields, false) {
        Some(columns) => StructArray::try_new(fields.clone(), columns, Some(present.into()))
            .map_err(|e| Error::arrow("assembling decoded file statistics", e)),
        None => decode_with_arrow_json(json, present, fields),
    }
}

/// [`parse_stats`] of `bodies`: for each file, the text between the quotes of the JSON string
/// token holding its statistics in a commit's line, escapes not decoded (as a filtered load's
/// scanner keeps them, `log::decode::add_scanner::StatsText::Escaped`). Decoded without
/// decoding the strings first where every held string needs no escape but `\"`; else each
/// body is decoded as a string and given to [`parse_stats`]. A body that is not a string's
/// text is an internal error: the scanner checked every one.
pub(crate) fn parse_escaped_stats(
    bodies: &StringArray,
    stats_schema: &ArrowDataType,
) -> Result<StructArray> {
    let ArrowDataType::Struct(fields) = stats_schema else {
        return parse_stats(bodies, stats_schema);
    };
    let present = present_rows(bodies);
    if !fields.is_empty() {
        if let Some(columns) = stats_json::decode_stats(bodies, &present, fields, true) {
            return StructArray::try_new(fields.clone(), columns, Some(present.into()))
                .map_err(|e| Error::arrow("assembling decoded file statistics", e));
        }
    }
    parse_stats(&decode_string_bodies(bodies, None)?, stats_schema)
}

/// Each of `bodies` (the text between a JSON string token's quotes) decoded as a string, where
/// `keep` (when given) is true; null elsewhere.
pub(crate) fn decode_string_bodies(
    bodies: &StringArray,
    keep: Option<&BooleanArray>,
) -> Result<StringArray> {
    let mut decoded = StringBuilder::with_capacity(bodies.len(), 0);
    let mut scratch = String::new();
    for row in 0..bodies.len() {
        let kept = keep.is_none_or(|keep| keep.is_valid(row) && keep.value(row));
        if !kept || bodies.is_null(row) {
            decoded.append_null();
            continue;
        }
        let body = bodies.value(row);
        decode_string_body(body, &mut scratch).ok_or_else(|| {
            Error::internal_invariant(format!("a kept statistics string is not one: {body:?}"))
        })?;
        decoded.append_value(&scratch);
    }
    Ok(decoded.finish())
}

/// Which rows of `json` hold statistics: a null, empty or blank string is a file without.
pub(crate) fn present_rows(json: &StringArray) -> Vec<bool> {
    (0..json.len())
        .map(|row| json.is_valid(row) && !json.value(row).trim().is_empty())
        .collect()
}

/// [`parse_stats`] by arrow-json's general decoder: for the strings the typed decoder
/// (`stats_json::decode_stats`) gives up on. A string that does not decode alone gives a
/// null row.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_with_arrow_json(
    json: &StringArray,
    mut present: Vec<bool>,
    fields: &Fields,
) -> Result<StructArray> {
    let rows = json.len();
    let decoding_fields: Vec<Field> = fields
        .iter()
        .map(|f| {
            f.as_ref()
                .clone()
                .with_data_type(decoding_type(f.data_type()))
        })
        .collect();
    let schema: SchemaRef = Arc::new(ArrowSchema::new(decoding_fields));
    let batch = match decode_rows(json, &present, &schema) {
        Some(batch) => batch,
        None => {
            for (row, keep) in present.iter_mut().enumerate() {
                if *keep {
                    *keep = decodes_alone(json.value(row), &schema);
                }
            }
            match decode_rows(json, &present, &schema) {
                Some(batch) => batch,
                None => return Ok(StructArray::new_null(fields.clone(), rows)),
            }
        }
    };
    let columns = batch
        .columns()
        .iter()
        .zip(fields.iter())
        .map(|(column, field)| restore_type(column.clone(), field.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::arrow("assembling decoded file statistics", e))?;
    StructArray::try_new(fields.clone(), columns, Some(present.into()))
        .map_err(|e| Error::arrow("assembling decoded file statistics", e))
}

/// Splits a `delta.dataSkippingStatsColumns` value into column paths: commas separate
/// columns, dots separate nested names, backticks quote (a doubled backtick inside quotes is a
/// literal one), whitespace around names is dropped. Empty entries are skipped.
pub(crate) fn parse_column_list(text: &str) -> Vec<Vec<String>> {
    let mut columns = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut part = String::new();
    let mut quoted_part = false;
    let mut chars = text.chars().peekable();
    let finish_part = |path: &mut Vec<String>, part: &mut String, quoted: &mut bool| {
        let name = if *quoted {
            std::mem::take(part)
        } else {
            std::mem::take(part).trim().to_string()
        };
        path.push(name);
        *quoted = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                part.clear();
                quoted_part = true;
                while let Some(q) = chars.next() {
                    if q == '`' {
                        if chars.peek() == Some(&'`') {
                            chars.next();
                            part.push('`');
                        } else {
                            break;
                        }
                    } else {
                        part.push(q);
                    }
                }
            }
            '.' => finish_part(&mut path, &mut part, &mut quoted_part),
            ',' => {
                finish_part(&mut path, &mut part, &mut quoted_part);
                columns.push(std::mem::take(&mut path));
            }
            c if quoted_part && c.is_whitespace() => {}
            c => part.push(c),
        }
    }
    finish_part(&mut path, &mut part, &mut quoted_part);
    columns.push(path);
    columns
        .into_iter()
        .filter(|path| !path.is_empty() && path.iter().all(|p| !p.is_empty()))
        .collect()
}

/// The fields of `schema` named by `paths` (lower-cased), in schema order; a path that ends at
/// a field keeps it whole.
fn filter_by_paths(schema: &StructType, paths: &[Vec<String>]) -> StructType {
    let fields = schema
        .fields
        .iter()
        .filter_map(|field| {
            let name = field.name.to_lowercase();
            let rests: Vec<&[String]> = paths
                .iter()
                .filter_map(|path| {
                    let (first, rest) = path.split_first()?;
                    (*first == name).then_some(rest)
                })
                .collect();
            if rests.is_empty() {
                return None;
            }
            if rests.iter().any(|rest| rest.is_empty()) {
                return Some(field.clone());
            }
            let nested = field.data_type.as_struct()?;
            let child_paths: Vec<Vec<String>> = rests.iter().map(|rest| rest.to_vec()).collect();
            let filtered = filter_by_paths(nested, &child_paths);
            (!filtered.fields.is_empty()).then(|| StructField {
                data_type: filtered.into(),
                ..field.clone()
            })
        })
        .collect();
    StructType::new(fields)
}

/// The first `limit` leaf columns of `schema` (structs count their leaves, every other field
/// one), and how many leaves that is, as Delta on Spark counts them.
fn truncate_to_leaves(schema: &StructType, limit: usize) -> (StructType, usize) {
    let mut count = 0;
    let mut fields = Vec::new();
    for field in &schema.fields {
        if count >= limit {
            break;
        }
        match &field.data_type {
            DataType::Struct(nested) => {
                let (truncated, leaves) = truncate_to_leaves(nested, limit - count);
                count += leaves;
                fields.push(StructField {
                    data_type: truncated.into(),
                    ..field.clone()
                });
            }
            _ => {
                count += 1;
                fields.push(field.clone());
            }
        }
    }
    (StructType::new(fields), count)
}

/// The key of a column in the stats: its physical name under column mapping, else its name.
fn stats_key(field: &StructField, mode: ColumnMappingMode) -> String {
    match (mode, field.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY)) {
        (ColumnMappingMode::None, _) => field.name.clone(),
        (_, Some(Value::String(physical))) => physical.clone(),
        _ => field.name.clone(),
    }
}

fn min_max_struct(schema: &StructType, mode: ColumnMappingMode) -> Option<StructType> {
    let fields: Vec<StructField> = schema
        .fields
        .iter()
        .filter_map(|field| {
            let data_type = match &field.data_type {
                DataType::Struct(nested) => min_max_struct(nested, mode)?.into(),
                DataType::Primitive(primitive) if primitive.has_min_max_stats() => {
                    DataType::Primitive(*primitive)
                }
                _ => return None,
            };
            Some(StructField::new(stats_key(field, mode), data_type, true))
        })
        .collect();
    (!fields.is_empty()).then(|| StructType::new(fields))
}

fn null_count_struct(schema: &StructType, mode: ColumnMappingMode) -> Option<StructType> {
    let fields: Vec<StructField> = schema
        .fields
        .iter()
        .filter_map(|field| {
            let data_type = match &field.data_type {
                DataType::Struct(nested) => null_count_struct(nested, mode)?.into(),
                _ => DataType::Primitive(PrimitiveType::Long),
            };
            Some(StructField::new(stats_key(field, mode), data_type, true))
        })
        .collect();
    (!fields.is_empty()).then(|| StructType::new(fields))
}

/// The type the JSON decoder is given for `target`: time zones become `+00:00`, because
/// arrow-json resolves named zones (even `UTC`) only with arrow's `chrono-tz` feature. The
/// instants decoded are the same; [`restore_type`] puts the zone name back.
fn decoding_type(target: &ArrowDataType) -> ArrowDataType {
    match target {
        ArrowDataType::Timestamp(unit, Some(_)) => {
            ArrowDataType::Timestamp(*unit, Some(Arc::from(UTC_OFFSET)))
        }
        ArrowDataType::Struct(fields) => ArrowDataType::Struct(
            fields
                .iter()
                .map(|f| {
                    f.as_ref()
                        .clone()
                        .with_data_type(decoding_type(f.data_type()))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Gives a decoded array the type it was decoded for by [`decoding_type`] (only the zone name
/// of timestamps differs).
fn restore_type(
    array: ArrayRef,
    target: &ArrowDataType,
) -> std::result::Result<ArrayRef, ArrowError> {
    if array.data_type() == target {
        return Ok(array);
    }
    match target {
        ArrowDataType::Struct(fields) => {
            let decoded = array.as_struct();
            let children = decoded
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(child, field)| restore_type(child.clone(), field.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                children,
                decoded.nulls().cloned(),
            )?))
        }
        _ => {
            let data = array
                .to_data()
                .into_builder()
                .data_type(target.clone())
                .build()?;
            Ok(make_array(data))
        }
    }
}

/// Decodes every row (an absent row as `{}`) with one decoder. `None` when the JSON is
/// invalid, or when a string is not exactly one JSON object (so rows would not line up).
fn decode_rows(json: &StringArray, present: &[bool], schema: &SchemaRef) -> Option<RecordBatch> {
    let mut decoder = ReaderBuilder::new(schema.clone())
        .with_batch_size(json.len() + 1)
        .with_ignore_type_conflicts(true)
        .build_decoder()
        .ok()?;
    for (row, &keep) in present.iter().enumerate() {
        let text = if keep { json.value(row) } else { "{}" };
        feed(&mut decoder, text)?;
        if decoder.has_partial_record() || decoder.len() != row + 1 {
            return None;
        }
    }
    let batch = decoder.flush().ok()??;
    (batch.num_rows() == json.len()).then_some(batch)
}

/// True when `text` alone decodes to exactly one row.
fn decodes_alone(text: &str, schema: &SchemaRef) -> bool {
    let Ok(mut decoder) = ReaderBuilder::new(schema.clone())
        .with_ignore_type_conflicts(true)
        .build_decoder()
    else {
        return false;
    };
    if feed(&mut decoder, text).is_none() || decoder.has_partial_record() || decoder.len() != 1 {
        return false;
    }
    matches!(decoder.flush(), Ok(Some(batch)) if batch.num_rows() == 1)
}

/// Feeds one string and a newline to the decoder; `None` on a JSON error or if the decoder
/// did not take all of it.
fn feed(decoder: &mut arrow_json::reader::Decoder, text: &str) -> Option<()> {
    let text = mend_wide_surrogates(text.as_bytes());
    for bytes in [&text[..], b"\n"] {
        let taken = decoder.decode(bytes).ok()?;
        if taken != bytes.len() {
            return None;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use arrow_array::types::{
        Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type, Int8Type,
        TimestampMicrosecondType,
    };
    use arrow_schema::{Fields, TimeUnit};
    use serde_json::json;

    use super::*;
    use crate::schema::tests::{commit_actions, golden_table};
    use crate::schema::{parse_schema, ArrayType, COLUMN_MAPPING_ID_KEY};
    use crate::table_config::properties::{DATA_SKIPPING_STATS_COLUMNS, DEFAULT_NUM_INDEXED_COLS};

    const SECOND: i64 = 1_000_000;

    fn field(name: &str, data_type: impl Into<DataType>) -> StructField {
        StructField::new(name, data_type, true)
    }

    fn config(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn leaf_paths(schema: &StructType) -> Vec<String> {
        schema
            .leaf_columns()
            .into_iter()
            .map(|leaf| leaf.path.join("."))
            .collect()
    }

    fn struct_field<'a>(array: &'a StructArray, name: &str) -> &'a ArrayRef {
        array
            .column_by_name(name)
            .unwrap_or_else(|| panic!("no field {name}"))
    }

    fn nested<'a>(array: &'a StructArray, path: &[&str]) -> &'a ArrayRef {
        let (last, parents) = path.split_last().unwrap();
        let mut current = array;
        for parent in parents {
            current = struct_field(current, parent).as_struct();
        }
        struct_field(current, last)
    }

    /// A latest-metadata view of a golden table: data schema, configuration, stats strings.
    struct GoldenStats {
        data_schema: StructType,
        configuration: HashMap<String, String>,
        stats: StringArray,
        raw: Vec<Value>,
    }

    fn golden_stats(name: &str) -> Option<GoldenStats> {
        let table = golden_table(name)?;
        let actions = commit_actions(&table.join("delta"));
        let metadata = actions
            .iter()
            .rev()
            .find_map(|a| a.get("metaData"))
            .unwrap();
        let schema = parse_schema(metadata["schemaString"].as_str().unwrap()).unwrap();
        let partition_columns: Vec<String> =
            serde_json::from_value(metadata["partitionColumns"].clone()).unwrap();
        let configuration: HashMap<String, String> =
            serde_json::from_value(metadata["configuration"].clone()).unwrap_or_default();
        let strings: Vec<Option<String>> = actions
            .iter()
            .filter_map(|a| a.get("add"))
            .map(|add| add["stats"].as_str().map(str::to_string))
            .collect();
        let raw = strings
            .iter()
            .flatten()
            .map(|s| serde_json::from_str(s).unwrap())
            .collect();
        Some(GoldenStats {
            data_schema: schema.data_schema(&partition_columns),
            configuration,
            stats: StringArray::from(strings),
            raw,
        })
    }

    /// Checks one decoded row against its JSON: every key of the JSON is in the schema (when
    /// `complete`), and every leaf of the schema is non-null exactly when the JSON has a
    /// non-null value for it. Returns the number of leaves compared.
    fn check_row(json: &Value, array: &StructArray, row: usize, complete: bool, at: &str) -> usize {
        let object = json.as_object().unwrap();
        if complete {
            for key in object.keys() {
                assert!(
                    array.column_by_name(key).is_some(),
                    "{at}: stats key {key} not in the schema"
                );
            }
        }
        let mut leaves = 0;
        let ArrowDataType::Struct(fields) = array.data_type() else {
            unreachable!()
        };
        for (field, child) in fields.iter().zip(array.columns()) {
            let value = object.get(field.name()).unwrap_or(&Value::Null);
            let path = format!("{at}.{}", field.name());
            match child.data_type() {
                ArrowDataType::Struct(_) if value.is_object() => {
                    leaves += check_row(value, child.as_struct(), row, complete, &path);
                }
                _ => {
                    assert_eq!(child.is_valid(row), !value.is_null(), "{path}: {value}");
                    leaves += 1;
                }
            }
        }
        leaves
    }

    fn parse_golden(golden: &GoldenStats) -> StructArray {
        let ty = stats_schema(&golden.data_schema, &golden.configuration).unwrap();
        let parsed = parse_stats(&golden.stats, &ty).unwrap();
        assert_eq!(parsed.len(), golden.stats.len());
        assert_eq!(parsed.null_count(), golden.stats.null_count());
        parsed
    }

    fn all_types_schema() -> StructType {
        parse_schema(
            r#"{"type":"struct","fields":[
            {"name":"as_int","type":"integer","nullable":true,"metadata":{}},
            {"name":"as_bool","type":"boolean","nullable":true,"metadata":{}},
            {"name":"as_bin","type":"binary","nullable":true,"metadata":{}},
            {"name":"s","type":{"type":"struct","fields":[
                {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
                {"name":"arr","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}}]},
             "nullable":true,"metadata":{}},
            {"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},"nullable":true,"metadata":{}},
            {"name":"v","type":"variant","nullable":true,"metadata":{}},
            {"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},
            {"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn stats_schema_shape() {
        let ty = stats_schema(&all_types_schema(), &HashMap::new()).unwrap();
        let utc = ArrowDataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let min_max = ArrowDataType::Struct(Fields::from(vec![
            Field::new("as_int", ArrowDataType::Int32, true),
            Field::new(
                "s",
                ArrowDataType::Struct(Fields::from(vec![Field::new("ts", utc, true)])),
                true,
            ),
            Field::new("dec", ArrowDataType::Decimal128(10, 2), true),
            Field::new(
                "ntz",
                ArrowDataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
        ]));
        let long = |name: &str| Field::new(name, ArrowDataType::Int64, true);
        let null_count = ArrowDataType::Struct(Fields::from(vec![
            long("as_int"),
            long("as_bool"),
            long("as_bin"),
            Field::new(
                "s",
                ArrowDataType::Struct(Fields::from(vec![long("ts"), long("arr")])),
                true,
            ),
            long("m"),
            long("v"),
            long("dec"),
            long("ntz"),
        ]));
        let expected = ArrowDataType::Struct(Fields::from(vec![
            long("numRecords"),
            Field::new("minValues", min_max.clone(), true),
            Field::new("maxValues", min_max, true),
            Field::new("nullCount", null_count, true),
            Field::new("tightBounds", ArrowDataType::Boolean, true),
        ]));
        assert_eq!(ty, expected);
    }

    #[test]
    fn num_indexed_cols_counts_leaves_in_schema_order() {
        let schema = all_types_schema();
        let select = |n: &str| {
            leaf_paths(
                &select_stats_columns(&schema, &config(&[(DATA_SKIPPING_NUM_INDEXED_COLS, n)]))
                    .unwrap(),
            )
        };
        assert_eq!(select("2"), ["as_int", "as_bool"]);
        assert_eq!(select("4"), ["as_int", "as_bool", "as_bin", "s.ts"]);
        assert_eq!(
            select("6"),
            ["as_int", "as_bool", "as_bin", "s.ts", "s.arr", "m"]
        );
        assert_eq!(select("-1").len(), 9);
        assert_eq!(select("100").len(), 9);
        assert!(select("0").is_empty());

        let zero = stats_struct_type(
            &schema,
            &config(&[(DATA_SKIPPING_NUM_INDEXED_COLS, "0")]),
            ColumnMappingMode::None,
        )
        .unwrap();
        let names: Vec<&str> = zero.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["numRecords", "tightBounds"]);

        let wide = StructType::new(
            (0..40)
                .map(|i| field(&format!("c{i}"), PrimitiveType::Long))
                .collect(),
        );
        let default = leaf_paths(&select_stats_columns(&wide, &HashMap::new()).unwrap());
        assert_eq!(default.len(), DEFAULT_NUM_INDEXED_COLS);
        assert_eq!(default.last().unwrap(), "c31");
        let all = select_stats_columns(&wide, &config(&[(DATA_SKIPPING_NUM_INDEXED_COLS, "-1")]))
            .unwrap();
        assert_eq!(all.fields.len(), 40);

        let e = select_stats_columns(
            &schema,
            &config(&[(DATA_SKIPPING_NUM_INDEXED_COLS, "many")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("delta.dataSkippingNumIndexedCols must be an integer, got `many`"),
            "{e}"
        );
    }

    #[test]
    fn stats_columns_select_by_name() {
        let schema = StructType::new(vec![
            field("id", PrimitiveType::Long),
            field("Name", PrimitiveType::String),
            field("a.b", PrimitiveType::Integer),
            field(
                "s",
                StructType::new(vec![
                    field("x", PrimitiveType::Integer),
                    field("y", StructType::new(vec![field("z", PrimitiveType::Date)])),
                ]),
            ),
            field(
                "t",
                StructType::new(vec![
                    field("p", PrimitiveType::Long),
                    field("q", PrimitiveType::Long),
                ]),
            ),
        ]);
        let select = |columns: &str| {
            let conf = config(&[
                (DATA_SKIPPING_STATS_COLUMNS, columns),
                (DATA_SKIPPING_NUM_INDEXED_COLS, "1"),
            ]);
            leaf_paths(&select_stats_columns(&schema, &conf).unwrap())
        };
        assert_eq!(select("name, s.y.z"), ["Name", "s.y.z"]);
        assert_eq!(select("`a.b`,t"), ["a.b", "t.p", "t.q"]);
        assert_eq!(select(" `S` . `x` , missing, id.nested"), ["s.x"]);
        assert_eq!(select("s.y, s"), ["s.x", "s.y.z"]);
        assert!(select("").is_empty());
        assert_eq!(
            parse_column_list("a, `b``c`.d , ,e.`f.g`"),
            vec![
                vec!["a".to_string()],
                vec!["b`c".to_string(), "d".to_string()],
                vec!["e".to_string(), "f.g".to_string()],
            ]
        );
    }

    #[test]
    fn column_mapping_uses_physical_names() {
        let mapped = |name: &str, id: i64, data_type: DataType| {
            field(name, data_type).with_metadata([
                (COLUMN_MAPPING_ID_KEY, json!(id)),
                (
                    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
                    json!(format!("col-{name}")),
                ),
            ])
        };
        let schema = StructType::new(vec![
            mapped("a", 1, PrimitiveType::Integer.into()),
            mapped(
                "s",
                2,
                StructType::new(vec![mapped("x", 3, PrimitiveType::String.into())]).into(),
            ),
        ]);
        let conf = config(&[
            ("delta.columnMapping.mode", "name"),
            (DATA_SKIPPING_STATS_COLUMNS, "s.x"),
        ]);
        let logical = stats_struct_type(&schema, &conf, ColumnMappingMode::Name).unwrap();
        let min = logical
            .field(MIN_VALUES)
            .unwrap()
            .data_type
            .as_struct()
            .unwrap();
        assert_eq!(leaf_paths(min), ["col-s.col-x"]);
        // A schema already renamed to physical names gives the same stats type.
        let physical = schema.physical_schema(ColumnMappingMode::Name).unwrap();
        let all = config(&[("delta.columnMapping.mode", "name")]);
        assert_eq!(
            stats_schema(&physical, &all).unwrap(),
            stats_schema(&schema, &all).unwrap()
        );
        let unmapped = stats_schema_with_mode(&schema, &all, ColumnMappingMode::None).unwrap();
        let ArrowDataType::Struct(fields) = unmapped else {
            unreachable!()
        };
        let ArrowDataType::Struct(min) = fields[1].data_type() else {
            unreachable!()
        };
        assert_eq!(min[0].name(), "a");
    }

    #[test]
    fn corrupt_or_missing_stats_become_null_rows() {
        let schema = StructType::new(vec![
            field("i", PrimitiveType::Integer),
            field("d", PrimitiveType::Double),
        ]);
        let ty = stats_schema(&schema, &HashMap::new()).unwrap();
        let inputs = StringArray::from(vec![
            Some(
                r#"{"numRecords":3,"minValues":{"i":1,"d":"NaN"},"maxValues":{"i":9,"d":"Infinity"},"nullCount":{"i":0,"d":1},"unknown":[1,2]}"#,
            ),
            None,
            Some(""),
            Some("{"),
            Some("not json"),
            Some(r#"{"numRecords":"abc","minValues":{"i":"x"},"maxValues":{"i":7}}"#),
            Some("[1,2]"),
            Some("5"),
            Some("{}{}"),
            Some(r#"{"minValues":5,"numRecords":2,"tightBounds":false}"#),
            Some(r#"{"numRecords":4, "minValues":{"i":-1}}"#),
        ]);
        let parsed = parse_stats(&inputs, &ty).unwrap();
        assert_eq!(parsed.len(), 11);
        let valid: Vec<bool> = (0..11).map(|row| parsed.is_valid(row)).collect();
        assert_eq!(
            valid,
            [true, false, false, false, false, true, false, false, false, true, true]
        );
        let num_records = struct_field(&parsed, NUM_RECORDS).as_primitive::<Int64Type>();
        assert_eq!(num_records.value(0), 3);
        assert!(num_records.is_null(5), "a mistyped value is null");
        assert_eq!(num_records.value(9), 2);
        assert_eq!(num_records.value(10), 4);
        let min_i = nested(&parsed, &[MIN_VALUES, "i"]).as_primitive::<Int32Type>();
        assert_eq!(min_i.value(0), 1);
        assert!(min_i.is_null(5));
        assert_eq!(min_i.value(10), -1);
        let max_i = nested(&parsed, &[MAX_VALUES, "i"]).as_primitive::<Int32Type>();
        assert_eq!(max_i.value(5), 7);
        assert!(nested(&parsed, &[MIN_VALUES]).is_null(9));
        let min_d = nested(&parsed, &[MIN_VALUES, "d"]).as_primitive::<Float64Type>();
        assert!(min_d.value(0).is_nan());
        let max_d = nested(&parsed, &[MAX_VALUES, "d"]).as_primitive::<Float64Type>();
        assert_eq!(max_d.value(0), f64::INFINITY);
        let tight = struct_field(&parsed, TIGHT_BOUNDS).as_boolean();
        assert!(!tight.value(9));
        assert!(tight.is_null(0));

        let all_good = StringArray::from(vec![Some(r#"{"numRecords":1}"#), None]);
        let parsed = parse_stats(&all_good, &ty).unwrap();
        assert!(parsed.is_valid(0) && parsed.is_null(1));
        let empty = parse_stats(&StringArray::from(Vec::<Option<&str>>::new()), &ty).unwrap();
        assert_eq!(empty.len(), 0);
        let e = parse_stats(&all_good, &ArrowDataType::Int64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the stats schema must be a struct"), "{e}");
    }

    #[test]
    fn golden_all_types_stats_decode() {
        for name in [
            "data-skipping-basic-stats-all-types",
            "data-skipping-basic-stats-all-types-checkpoint",
            "data-skipping-basic-stats-all-types-columnmapping-name",
            "data-skipping-basic-stats-all-types-columnmapping-id",
        ] {
            let Some(golden) = golden_stats(name) else {
                return;
            };
            let parsed = parse_golden(&golden);
            let leaves = check_row(&golden.raw[0], &parsed, 0, true, name);
            assert_eq!(leaves, 1 + 3 * 10 + 1, "{name}");

            let mode = column_mapping_mode(&golden.configuration).unwrap();
            let key = |logical: &str| {
                golden
                    .data_schema
                    .field(logical)
                    .unwrap()
                    .physical_name(mode)
                    .unwrap()
                    .to_string()
            };
            for bound in [MIN_VALUES, MAX_VALUES] {
                let column = |logical: &str| nested(&parsed, &[bound, &key(logical)]).clone();
                assert_eq!(column("as_int").as_primitive::<Int32Type>().value(0), 0);
                assert_eq!(column("as_long").as_primitive::<Int64Type>().value(0), 0);
                assert_eq!(column("as_byte").as_primitive::<Int8Type>().value(0), 0);
                assert_eq!(
                    column("as_float").as_primitive::<Float32Type>().value(0),
                    0.0
                );
                assert_eq!(
                    column("as_double").as_primitive::<Float64Type>().value(0),
                    0.0
                );
                assert_eq!(column("as_string").as_string::<i32>().value(0), "0");
                assert_eq!(
                    column("as_date").as_primitive::<Date32Type>().value(0),
                    10957
                );
                // 2000-01-01T00:00:00.000-08:00 is 08:00 UTC.
                let ts = column("as_timestamp");
                assert_eq!(
                    ts.as_primitive::<TimestampMicrosecondType>().value(0),
                    946_713_600 * SECOND
                );
                let dec = column("as_big_decimal");
                assert_eq!(dec.data_type(), &ArrowDataType::Decimal128(1, 0));
                assert_eq!(dec.as_primitive::<Decimal128Type>().value(0), 0);
            }
            let nulls = nested(&parsed, &[NULL_COUNT, &key("as_string")]);
            assert_eq!(nulls.as_primitive::<Int64Type>().value(0), 0);
            assert_eq!(
                struct_field(&parsed, NUM_RECORDS)
                    .as_primitive::<Int64Type>()
                    .value(0),
                1
            );
        }
    }

    #[test]
    fn golden_nested_and_all_parquet_types() {
        let Some(golden) = golden_stats("parquet-all-types") else {
            return;
        };
        let parsed = parse_golden(&golden);
        let leaves: usize = (0..parsed.len())
            .map(|row| check_row(&golden.raw[row], &parsed, row, true, "parquet-all-types"))
            .sum();
        assert!(leaves > 40);
        let value = |path: &[&str]| nested(&parsed, path).clone();
        assert_eq!(
            value(&[MIN_VALUES, "nested_struct", "ac", "aca"])
                .as_primitive::<Int32Type>()
                .value(0),
            1
        );
        assert_eq!(
            value(&[MAX_VALUES, "nested_struct", "ac", "aca"])
                .as_primitive::<Int32Type>()
                .value(0),
            199
        );
        assert_eq!(
            value(&[NULL_COUNT, "nested_struct", "ac", "aca"])
                .as_primitive::<Int64Type>()
                .value(0),
            22
        );
        assert_eq!(
            value(&[NULL_COUNT, "array_of_prims"])
                .as_primitive::<Int64Type>()
                .value(0),
            200
        );
        assert_eq!(
            value(&[NULL_COUNT, "BooleanType"])
                .as_primitive::<Int64Type>()
                .value(0),
            3
        );
        assert_eq!(
            value(&[MIN_VALUES, "decimal"])
                .as_primitive::<Decimal128Type>()
                .value(0),
            12352
        );
        assert_eq!(
            value(&[MAX_VALUES, "DoubleType"])
                .as_primitive::<Float64Type>()
                .value(0),
            4.661261177E7
        );
        // 1970-01-01T06:30:23.523Z
        assert_eq!(
            value(&[MIN_VALUES, "TimestampType"])
                .as_primitive::<TimestampMicrosecondType>()
                .value(0),
            23_423_523_000
        );
        // 1970-01-03T17:03:54.000 (no zone)
        let ntz = value(&[MIN_VALUES, "TimestampNTZType"]);
        assert_eq!(
            ntz.data_type(),
            &ArrowDataType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert_eq!(
            ntz.as_primitive::<TimestampMicrosecondType>().value(0),
            234_234 * SECOND
        );
        assert!(nested(&parsed, &[MIN_VALUES])
            .as_struct()
            .column_by_name("BooleanType")
            .is_none());
        assert!(nested(&parsed, &[MIN_VALUES])
            .as_struct()
            .column_by_name("BinaryType")
            .is_none());
    }

    #[test]
    fn golden_timestamp_ntz_and_column_mapping_tables() {
        for name in [
            "data-reader-timestamp_ntz",
            "data-reader-timestamp_ntz-id-mode",
            "data-reader-timestamp_ntz-name-mode",
            "table-with-columnmapping-mode-id",
            "table-with-columnmapping-mode-name",
            "dv-with-columnmapping",
            "data-skipping-partition-and-data-column",
            "basic-decimal-table",
            "decimal-various-scale-precision",
            "kernel-timestamp-pst",
            "kernel-timestamp-int96",
        ] {
            let Some(golden) = golden_stats(name) else {
                return;
            };
            let parsed = parse_golden(&golden);
            for row in 0..parsed.len() {
                if golden.stats.is_valid(row) {
                    check_row(&golden.raw[row], &parsed, row, true, name);
                }
            }
        }
        let Some(golden) = golden_stats("data-reader-timestamp_ntz") else {
            return;
        };
        let parsed = parse_golden(&golden);
        let row = golden
            .raw
            .iter()
            .position(|raw| raw["minValues"]["tsNtz"] == json!("2021-11-18T02:30:00.123"))
            .unwrap();
        let ntz = nested(&parsed, &[MIN_VALUES, "tsNtz"]);
        // 2021-11-18T02:30:00.123 as a wall-clock time.
        assert_eq!(
            ntz.as_primitive::<TimestampMicrosecondType>().value(row),
            1_637_202_600 * SECOND + 123_000
        );
        let Some(dv) = golden_stats("dv-with-columnmapping") else {
            return;
        };
        let parsed = parse_golden(&dv);
        assert!(struct_field(&parsed, TIGHT_BOUNDS).as_boolean().value(0));
        assert!(
            nested(&parsed, &[MIN_VALUES])
                .as_struct()
                .column_by_name(
                    dv.data_schema.fields[0]
                        .physical_name(ColumnMappingMode::Name)
                        .unwrap()
                )
                .is_some(),
            "the partition column is not a data column"
        );
    }

    /// Stats written under different `dataSkippingNumIndexedCols` settings decode with the
    /// current one: keys the current setting does not cover are ignored.
    #[test]
    fn golden_num_indexed_cols_changes() {
        let Some(golden) = golden_stats("data-skipping-change-stats-collected-across-versions")
        else {
            return;
        };
        assert_eq!(golden.configuration[DATA_SKIPPING_NUM_INDEXED_COLS], "0");
        let ty = stats_schema(&golden.data_schema, &golden.configuration).unwrap();
        let ArrowDataType::Struct(fields) = &ty else {
            unreachable!()
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, [NUM_RECORDS, TIGHT_BOUNDS]);
        let parsed = parse_golden(&golden);
        let counts = struct_field(&parsed, NUM_RECORDS).as_primitive::<Int64Type>();
        assert_eq!(counts.null_count(), 0);
        for row in 0..parsed.len() {
            check_row(&golden.raw[row], &parsed, row, false, "change-stats");
        }
        let one = config(&[(DATA_SKIPPING_NUM_INDEXED_COLS, "1")]);
        let ty = stats_schema(&golden.data_schema, &one).unwrap();
        let parsed = parse_stats(&golden.stats, &ty).unwrap();
        let col1 = nested(&parsed, &[MIN_VALUES, "col1"]);
        assert_eq!(
            col1.null_count(),
            parsed.len() - 2,
            "two files carry col1 stats"
        );
        assert!(nested(&parsed, &[MIN_VALUES])
            .as_struct()
            .column_by_name("col2")
            .is_none());
    }

    #[test]
    fn array_fields_are_not_in_min_max() {
        let schema = StructType::new(vec![field(
            "arr",
            ArrayType {
                element_type: PrimitiveType::Long.into(),
                contains_null: true,
            },
        )]);
        let stats = stats_struct_type(&schema, &HashMap::new(), ColumnMappingMode::None).unwrap();
        let names: Vec<&str> = stats.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, [NUM_RECORDS, NULL_COUNT, TIGHT_BOUNDS]);
    }
}
