//! Reading checkpoint parts and sidecars (spec "Checkpoints", "Checkpoint Schema", "V2
//! Checkpoint", catalogue F/H-CK).
//!
//! Parquet files are read with a column projection: only the action columns replay needs.
//! `add` and `remove` come out as [`FileActionBatch`]es normalised to the layout of
//! [`crate::action_schema`], whatever optional fields the writer included; the other actions
//! (protocol, metaData, txn, domainMetadata, checkpointMetadata, sidecar) are turned into JSON
//! lines and decoded like a commit, so both formats share one decoder.

use std::sync::Arc;

use arrow::compute::{cast, filter_record_batch, is_not_null};
use arrow_array::{
    new_null_array, Array, ArrayRef, Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Fields, Schema};
use futures::TryStreamExt;
use object_store::path::Path;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
#[allow(deprecated)]
use parquet::arrow::async_reader::ParquetObjectReader;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};

use crate::action_schema::{
    add, add_fields, finish_adds, remove_fields, FileActionBatch, PARTITION_VALUES_PARSED,
};
use crate::commit::{decode_actions, DecodeOptions, DecodedActions};
use crate::error::{Error, Result};
use crate::storage::Storage;

/// Rows per decoded batch.
const BATCH_SIZE: usize = 32 * 1024;

/// Top-level checkpoint columns that hold non-file actions.
const OTHER_ACTIONS: &[&str] = &[
    "protocol",
    "metaData",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
];

/// What of a checkpoint part to read.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckpointProjection {
    /// Read the non-file actions too (not needed for sidecars).
    pub other_actions: bool,
    /// Keep `add.stats` (the JSON statistics); without it only `numRecords` is kept.
    pub stats: bool,
}

/// Reads the Parquet checkpoint part (or sidecar) at `path` of `size` bytes, for `version`.
///
/// The footer is read once; the row groups are then decoded by several tasks at once, each
/// fetching only the projected column chunks of its row groups.
pub async fn read_parquet_actions(
    storage: &Storage,
    path: &Path,
    size: u64,
    version: u64,
    projection: CheckpointProjection,
) -> Result<DecodedActions> {
    let file: Arc<str> = Arc::from(storage.url_of(path));
    let mut reader = object_reader(storage, path, size);
    let metadata = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
        .await
        .map_err(|error| Error::corrupt(&*file, error))?;
    let mask = projection_mask(metadata.parquet_schema(), projection);
    let row_groups = metadata.metadata().num_row_groups();
    let tasks = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, row_groups.max(1));
    let per_task = row_groups.div_ceil(tasks).max(1);
    let handles: Vec<_> = (0..row_groups)
        .step_by(per_task)
        .map(|first| {
            let chunk: Vec<usize> = (first..(first + per_task).min(row_groups)).collect();
            let reader = object_reader(storage, path, size);
            let (metadata, mask, file) = (metadata.clone(), mask.clone(), file.clone());
            tokio::spawn(async move {
                let stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
                    .with_projection(mask)
                    .with_row_groups(chunk)
                    .with_batch_size(BATCH_SIZE)
                    .build()
                    .map_err(|error| Error::corrupt(&*file, error))?;
                let batches: Vec<RecordBatch> = stream
                    .try_collect()
                    .await
                    .map_err(|error| Error::corrupt(&*file, error))?;
                decode_batches(&batches, version, &file, projection)
            })
        })
        .collect();
    let mut decoded = DecodedActions::default();
    for handle in handles {
        let part = handle
            .await
            .map_err(|error| Error::corrupt(&*file, format!("decoding task failed: {error}")))??;
        merge(&mut decoded, part, &file)?;
    }
    Ok(decoded)
}

#[allow(deprecated)]
fn object_reader(storage: &Storage, path: &Path, size: u64) -> ParquetObjectReader {
    ParquetObjectReader::new(storage.store().clone(), path.clone()).with_file_size(size)
}

fn decode_batches(
    batches: &[RecordBatch],
    version: u64,
    file: &str,
    projection: CheckpointProjection,
) -> Result<DecodedActions> {
    let mut decoded = DecodedActions::default();
    for batch in batches {
        if let Some(file_actions) = file_action_batch(batch, version, file, projection)? {
            decoded.file_actions.push(file_actions);
        }
        if projection.other_actions {
            merge_other_actions(&mut decoded, batch, version, file)?;
        }
    }
    Ok(decoded)
}

/// The leaves of the action columns replay needs.
fn projection_mask(
    schema: &parquet::schema::types::SchemaDescriptor,
    projection: CheckpointProjection,
) -> ProjectionMask {
    let has_parsed_records = schema
        .columns()
        .iter()
        .any(|column| column.path().parts() == ["add", "stats_parsed", "numRecords"]);
    let wanted = schema
        .columns()
        .iter()
        .enumerate()
        .filter_map(|(index, column)| {
            let parts = column.path().parts();
            let top = parts.first().map(String::as_str)?;
            let second = parts.get(1).map(String::as_str);
            let third = parts.get(2).map(String::as_str);
            let keep = match (top, second) {
                ("add", Some("stats_parsed")) => projection.stats || third == Some("numRecords"),
                ("add", Some("stats")) => projection.stats || !has_parsed_records,
                ("add", Some("partitionValues_parsed")) => true,
                ("remove", Some("stats_parsed" | "partitionValues_parsed")) => false,
                ("remove", Some("stats" | "tags")) => false,
                ("add" | "remove", _) => true,
                (other, _) => projection.other_actions && OTHER_ACTIONS.contains(&other),
            };
            keep.then_some(index)
        });
    ProjectionMask::leaves(schema, wanted)
}

/// The `add`/`remove` columns of `batch` in the normalised layout; `None` when it has neither.
fn file_action_batch(
    batch: &RecordBatch,
    version: u64,
    file: &str,
    projection: CheckpointProjection,
) -> Result<Option<FileActionBatch>> {
    let adds = batch.column_by_name("add");
    let removes = batch.column_by_name("remove");
    if adds.is_none() && removes.is_none() {
        return Ok(None);
    }
    let rows = batch.num_rows();
    let adds_struct = adds.and_then(|a| a.as_any().downcast_ref::<StructArray>());
    let stats_parsed = adds_struct.and_then(|a| a.column_by_name("stats_parsed"));
    let parsed_records = stats_parsed
        .and_then(|s| s.as_any().downcast_ref::<StructArray>())
        .and_then(|s| s.column_by_name("numRecords"))
        .and_then(|n| n.as_any().downcast_ref::<Int64Array>());
    let mut normalized = normalize_struct(adds, &add_fields(), rows, file)?;
    if projection.stats {
        if let Some(parsed) = stats_parsed {
            normalized = fill_missing_stats(normalized, parsed, file)?;
        }
    }
    let mut adds = finish_adds(normalized, parsed_records, projection.stats)?;
    if let Some(parsed) = adds_struct.and_then(|a| a.column_by_name(PARTITION_VALUES_PARSED)) {
        adds = with_child(adds, PARTITION_VALUES_PARSED, parsed.clone(), file)?;
    }
    Ok(Some(FileActionBatch {
        version,
        from_checkpoint: true,
        file: Arc::from(file),
        adds,
        removes: normalize_struct(removes, &remove_fields(), rows, file)?,
    }))
}

/// `array` with one more child, `name`.
fn with_child(array: StructArray, name: &str, child: ArrayRef, file: &str) -> Result<StructArray> {
    let (fields, mut columns, nulls) = array.into_parts();
    let mut fields: Vec<Arc<Field>> = fields.iter().cloned().collect();
    fields.push(Arc::new(Field::new(name, child.data_type().clone(), true)));
    columns.push(child);
    StructArray::try_new(Fields::from(fields), columns, nulls)
        .map_err(|error| Error::corrupt(file, error))
}

/// Where a row has `stats_parsed` but no `stats` string (spec "Checkpoint Schema": writers
/// may write either), the JSON statistics are rebuilt from the struct, so that one decoder
/// serves both layouts.
fn fill_missing_stats(
    adds: StructArray,
    stats_parsed: &ArrayRef,
    file: &str,
) -> Result<StructArray> {
    let Some(parsed) = stats_parsed.as_any().downcast_ref::<StructArray>() else {
        return Ok(adds);
    };
    let Some(stats) = adds
        .column_by_name(add::STATS)
        .and_then(|s| s.as_any().downcast_ref::<StringArray>())
    else {
        return Ok(adds);
    };
    let missing = (0..adds.len()).any(|row| stats.is_null(row) && parsed.is_valid(row));
    if !missing {
        return Ok(adds);
    }
    let (fields, columns, _) = parsed.clone().into_parts();
    let nullable: Vec<Field> = fields
        .iter()
        .map(|field| field.as_ref().clone().with_nullable(true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(nullable)), columns)
        .map_err(|error| Error::corrupt(file, format!("stats_parsed: {error}")))?;
    let mut json = Vec::new();
    {
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut json);
        writer
            .write(&batch)
            .and_then(|()| writer.finish())
            .map_err(|error| Error::corrupt(file, format!("stats_parsed: {error}")))?;
    }
    let text = String::from_utf8_lossy(&json);
    let mut lines = text.lines();
    let rebuilt: StringArray = (0..adds.len())
        .map(|row| {
            let line = lines.next();
            if stats.is_valid(row) {
                Some(stats.value(row).to_string())
            } else if parsed.is_valid(row) {
                line.map(str::to_string)
            } else {
                None
            }
        })
        .collect();
    let (fields, mut columns, nulls) = adds.into_parts();
    if let Some(at) = fields.iter().position(|f| f.name() == add::STATS) {
        columns[at] = Arc::new(rebuilt);
    }
    StructArray::try_new(fields, columns, nulls).map_err(|error| Error::corrupt(file, error))
}

/// `column` (a struct, or absent) reshaped to exactly `fields`: missing children become nulls,
/// children of another but compatible type are cast, extra children are dropped.
pub fn normalize_struct(
    column: Option<&ArrayRef>,
    fields: &Fields,
    rows: usize,
    file: &str,
) -> Result<StructArray> {
    let Some(column) = column else {
        return Ok(StructArray::new_null(fields.clone(), rows));
    };
    let array = column
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::corrupt(file, "an action column is not a struct"))?;
    let children = fields
        .iter()
        .map(|field| normalize_child(array.column_by_name(field.name()), field, rows, file))
        .collect::<Result<Vec<_>>>()?;
    StructArray::try_new(fields.clone(), children, array.nulls().cloned())
        .map_err(|error| Error::corrupt(file, error))
}

fn normalize_child(
    child: Option<&ArrayRef>,
    field: &Field,
    rows: usize,
    file: &str,
) -> Result<ArrayRef> {
    let Some(child) = child else {
        return Ok(new_null_array(field.data_type(), rows));
    };
    if child.data_type() == field.data_type() {
        return Ok(child.clone());
    }
    match field.data_type() {
        DataType::Struct(fields) => {
            Ok(Arc::new(normalize_struct(Some(child), fields, rows, file)?))
        }
        target => cast(child, target)
            .map_err(|error| Error::corrupt(file, format!("column '{}': {error}", field.name()))),
    }
}

/// Decodes the non-file actions of `batch` by writing them as JSON lines.
fn merge_other_actions(
    decoded: &mut DecodedActions,
    batch: &RecordBatch,
    version: u64,
    file: &str,
) -> Result<()> {
    let mut lines = Vec::new();
    for name in OTHER_ACTIONS {
        let Some(column) = batch.column_by_name(name) else {
            continue;
        };
        if column.null_count() == column.len() {
            continue;
        }
        let single = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                *name,
                column.data_type().clone(),
                true,
            )])),
            vec![column.clone()],
        )
        .and_then(|single| filter_record_batch(&single, &is_not_null(column)?))
        .map_err(|error| Error::corrupt(file, error))?;
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut lines);
        writer
            .write(&single)
            .and_then(|()| writer.finish())
            .map_err(|error| Error::corrupt(file, error))?;
    }
    if lines.is_empty() {
        return Ok(());
    }
    let options = DecodeOptions {
        from_checkpoint: true,
        keep_stats: false,
    };
    let other = decode_actions(&lines, version, file, options)?;
    merge(decoded, other, file)
}

/// Adds the non-file actions of `other` to `into`; a checkpoint holds one protocol and one
/// metaData at most.
pub fn merge(into: &mut DecodedActions, other: DecodedActions, file: &str) -> Result<()> {
    let twice = |what: &str| Error::corrupt(file, format!("more than one {what} action"));
    if other.protocol.is_some() {
        if into.protocol.is_some() {
            return Err(twice("protocol"));
        }
        into.protocol = other.protocol;
    }
    if other.metadata.is_some() {
        if into.metadata.is_some() {
            return Err(twice("metaData"));
        }
        into.metadata = other.metadata;
    }
    if other.checkpoint_metadata.is_some() {
        into.checkpoint_metadata = other.checkpoint_metadata;
    }
    into.txns.extend(other.txns);
    into.domains.extend(other.domains);
    into.sidecars.extend(other.sidecars);
    into.file_actions.extend(other.file_actions);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BooleanArray, Int64Array};
    use arrow_schema::DataType;

    /// A checkpoint may carry `stats_parsed` without `stats`, with null rows (removes,
    /// metadata); the JSON statistics are rebuilt for the rows that have them.
    #[test]
    fn stats_are_rebuilt_from_stats_parsed_with_null_rows() {
        let parsed_fields = Fields::from(vec![Field::new("numRecords", DataType::Int64, false)]);
        let parsed = StructArray::try_new(
            parsed_fields,
            vec![Arc::new(Int64Array::from(vec![5, 0]))],
            Some(vec![true, false].into()),
        )
        .unwrap();
        let rows = 2;
        let adds = normalize_struct(None, &add_fields(), rows, "cp").unwrap();
        let (fields, columns, _) = adds.into_parts();
        let adds = StructArray::try_new(
            fields,
            columns,
            Some(
                BooleanArray::from(vec![true, false])
                    .values()
                    .clone()
                    .into(),
            ),
        )
        .unwrap();
        let filled = fill_missing_stats(adds, &(Arc::new(parsed) as ArrayRef), "cp").unwrap();
        let stats = filled.column_by_name(add::STATS).unwrap();
        let stats = stats.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(stats.value(0), r#"{"numRecords":5}"#);
        assert!(stats.is_null(1));
    }
}
