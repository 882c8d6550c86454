//! Files written elsewhere (by other engines' tasks) given as Arrow rows, as add actions
//! (spec "Add File and Remove File"), and isolation levels by name.

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::table_config::properties::IsolationLevel;
use crate::transaction::AddFile;

/// The add actions of the rows of `batch`, in the shape of a snapshot's file list: `path`
/// (relative to the table root and not URL-encoded, or an absolute URI) and `size` are
/// required; `modification_time` (ms since the epoch or a timestamp; default now),
/// `partition_values` (a struct with one field per partition column, or a map of string to
/// string; values are written as their text, NULL as null), `stats` (the statistics JSON),
/// `num_records` (statistics of only `numRecords` when `stats` is absent) and `data_change`
/// (default true) are optional.
///
/// Errors: [`Error::InvalidArgument`] naming a missing or mistyped column or a null path or
/// size.
pub fn adds_from_file_list(batch: &RecordBatch) -> Result<Vec<AddFile>> {
    let rows = batch.num_rows();
    let paths = text_column(batch, "path")?
        .ok_or_else(|| invalid("the added files need a 'path' column"))?;
    let sizes = int_column(batch, "size")?
        .ok_or_else(|| invalid("the added files need a 'size' column"))?;
    let times = int_column(batch, "modification_time")?;
    let stats = text_column(batch, "stats")?;
    let records = int_column(batch, "num_records")?;
    let changes = batch
        .column_by_name("data_change")
        .map(|c| {
            c.as_boolean_opt()
                .cloned()
                .ok_or_else(|| invalid("'data_change' must be boolean"))
        })
        .transpose()?;
    let partitions = partition_columns(batch)?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut adds = Vec::with_capacity(rows);
    for row in 0..rows {
        if paths.is_null(row) || sizes.is_null(row) {
            return Err(invalid(&format!(
                "row {row} of the added files has no path or size"
            )));
        }
        let file_stats = match (&stats, &records) {
            (Some(stats), _) if stats.is_valid(row) => Some(stats.value(row).to_string()),
            (_, Some(records)) if records.is_valid(row) => {
                Some(format!("{{\"numRecords\":{}}}", records.value(row)))
            }
            _ => None,
        };
        adds.push(AddFile {
            path: paths.value(row).to_string(),
            partition_values: partitions
                .iter()
                .map(|(name, values)| {
                    let value = values.is_valid(row).then(|| values.value(row).to_string());
                    (name.clone(), value)
                })
                .collect(),
            size: sizes.value(row),
            modification_time: times
                .as_ref()
                .filter(|t| t.is_valid(row))
                .map_or(now, |t| t.value(row)),
            data_change: changes
                .as_ref()
                .is_none_or(|c| c.is_null(row) || c.value(row)),
            stats: file_stats,
            ..AddFile::default()
        });
    }
    Ok(adds)
}

/// The isolation level named `Serializable`, `WriteSerializable` or `SnapshotIsolation` (any
/// case).
pub fn parse_isolation_level(name: &str) -> Result<IsolationLevel> {
    IsolationLevel::parse(name).ok_or_else(|| {
        invalid(&format!(
            "isolation_level must be 'Serializable', 'WriteSerializable' or 'SnapshotIsolation', not {name:?}"
        ))
    })
}

/// The partition values per partition column, as text.
fn partition_columns(batch: &RecordBatch) -> Result<Vec<(String, StringArray)>> {
    let Some(column) = batch.column_by_name("partition_values") else {
        return Ok(Vec::new());
    };
    match column.data_type() {
        DataType::Struct(fields) => {
            let values = column.as_struct();
            fields
                .iter()
                .zip(values.columns())
                .map(|(field, child)| {
                    let text = as_text(child, field.name())?;
                    let masked = mask_nulls(&text, column);
                    Ok((field.name().clone(), masked))
                })
                .collect()
        }
        DataType::Map(_, _) => {
            let map = column.as_map();
            let keys = as_text(map.keys(), "partition_values keys")?;
            let values = as_text(map.values(), "partition_values values")?;
            let mut names: Vec<String> = Vec::new();
            for key in keys.iter().flatten() {
                if !names.iter().any(|n| n == key) {
                    names.push(key.to_string());
                }
            }
            let offsets = map.value_offsets();
            Ok(names
                .into_iter()
                .map(|name| {
                    let column: StringArray = (0..map.len())
                        .map(|row| {
                            let range = offsets[row] as usize..offsets[row + 1] as usize;
                            range
                                .into_iter()
                                .find(|i| keys.is_valid(*i) && keys.value(*i) == name)
                                .filter(|i| values.is_valid(*i))
                                .map(|i| values.value(i).to_string())
                        })
                        .collect();
                    (name, column)
                })
                .collect())
        }
        other => Err(invalid(&format!(
            "'partition_values' must be a struct or a map of strings, not {other}"
        ))),
    }
}

fn mask_nulls(text: &StringArray, parent: &ArrayRef) -> StringArray {
    (0..text.len())
        .map(|row| (parent.is_valid(row) && text.is_valid(row)).then(|| text.value(row)))
        .collect()
}

fn as_text(array: &ArrayRef, name: &str) -> Result<StringArray> {
    let text = cast(array, &DataType::Utf8)
        .map_err(|error| invalid(&format!("'{name}' cannot be read as text: {error}")))?;
    Ok(text.as_string::<i32>().clone())
}

fn text_column(batch: &RecordBatch, name: &str) -> Result<Option<StringArray>> {
    batch
        .column_by_name(name)
        .map(|column| as_text(column, name))
        .transpose()
}

fn int_column(batch: &RecordBatch, name: &str) -> Result<Option<arrow_array::Int64Array>> {
    let Some(column) = batch.column_by_name(name) else {
        return Ok(None);
    };
    let column = match column.data_type() {
        DataType::Timestamp(_, _) => cast(
            column,
            &DataType::Timestamp(arrow_schema::TimeUnit::Millisecond, None),
        )
        .and_then(|c| cast(&c, &DataType::Int64)),
        _ => cast(column, &DataType::Int64),
    }
    .map_err(|error| invalid(&format!("'{name}' must be an integer: {error}")))?;
    Ok(Some(column.as_primitive::<Int64Type>().clone()))
}

fn invalid(message: &str) -> Error {
    Error::InvalidArgument(message.to_string())
}
