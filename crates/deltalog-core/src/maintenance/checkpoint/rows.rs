//! The rows of a checkpoint as Arrow batches of a [`CheckpointLayout`]: the non-file actions
//! (decoded from their JSON lines by arrow-json into the checkpoint schema), and the live
//! `add` and unexpired `remove` actions of the snapshot's state, converted chunk by chunk from
//! the internal layout of [`crate::actions::layout`] (spec "Checkpoints").
//!
//! All of it is CPU work, run by the caller through [`crate::util::cpu::run`].

use std::sync::Arc;

use arrow::compute::{cast, filter};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, MapArray, RecordBatch, StringArray, StructArray,
};
use arrow_json::ReaderBuilder;
use arrow_schema::{DataType, Fields, SchemaRef};
use rayon::prelude::*;

use super::schema::{column, CheckpointLayout, STATS_PARSED};
use crate::actions::layout::{add, remove, PARTITION_VALUES_PARSED};
use crate::actions::partition::{partition_values_to_arrow, SessionTimeZone};
use crate::actions::{DomainMetadata, Metadata, Protocol, Txn};
use crate::error::{Error, Result};
use crate::log::decode::checkpoint::{fill_missing_stats, normalize_child};
use crate::replay::file_list::map_values;
use crate::schema::DataType as DeltaType;
use crate::table_config::stats::parse_stats;
use crate::table_config::TableConfiguration;

/// One JSON line per non-file action of a checkpoint: `protocol`, `metaData`, every `txn`,
/// and every domain that is not removed, in that order (spec "Checkpoints": commit
/// information and change data are never kept, removed domains are tombstones only).
pub(crate) fn non_file_action_lines(
    protocol: &Protocol,
    metadata: &Metadata,
    txns: &[&Txn],
    domains: &[&DomainMetadata],
) -> Result<Vec<String>> {
    let line = |name: &str, value: serde_json::Result<serde_json::Value>| {
        let value = value.map_err(|error| {
            Error::internal_invariant(format!("cannot serialise a {name} action: {error}"))
        })?;
        Ok(serde_json::json!({ name: value }).to_string())
    };
    let mut lines = vec![
        line("protocol", serde_json::to_value(protocol))?,
        line("metaData", serde_json::to_value(metadata))?,
    ];
    for txn in txns {
        lines.push(line("txn", serde_json::to_value(txn))?);
    }
    for domain in domains.iter().filter(|domain| !domain.removed) {
        lines.push(line("domainMetadata", serde_json::to_value(domain))?);
    }
    Ok(lines)
}

/// Decodes JSON action lines into a batch of `schema` (absent columns are null).
pub(crate) fn json_rows(lines: &[String], schema: &SchemaRef) -> Result<RecordBatch> {
    let text = lines.join("\n");
    let mut decoder = ReaderBuilder::new(schema.clone())
        .with_batch_size(lines.len().max(1))
        .build_decoder()
        .map_err(|error| Error::arrow("the non-file actions of a checkpoint", error))?;
    decoder
        .decode(text.as_bytes())
        .map_err(|error| Error::arrow("the non-file actions of a checkpoint", error))?;
    let batch = decoder
        .flush()
        .map_err(|error| Error::arrow("the non-file actions of a checkpoint", error))?;
    Ok(batch.unwrap_or_else(|| RecordBatch::new_empty(schema.clone())))
}

/// A batch of `schema` holding `actions` in its column `name` and nulls everywhere else.
pub(crate) fn single_column_batch(
    schema: &SchemaRef,
    name: &str,
    actions: StructArray,
) -> Result<RecordBatch> {
    let rows = actions.len();
    let mut actions = Some(Arc::new(actions) as ArrayRef);
    let columns = schema
        .fields()
        .iter()
        .map(|field| match field.name() == name {
            true => actions
                .take()
                .unwrap_or_else(|| new_null_array(field.data_type(), rows)),
            false => new_null_array(field.data_type(), rows),
        })
        .collect();
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|error| Error::arrow(format!("the {name} rows of a checkpoint"), error))
}

/// A batch of `schema` holding `adds` and `removes` (one row each, the other null) in its
/// `add` and `remove` columns and nulls everywhere else.
pub(crate) fn file_actions_batch(
    schema: &SchemaRef,
    adds: StructArray,
    removes: StructArray,
) -> Result<RecordBatch> {
    let rows = adds.len();
    let (mut adds, mut removes) = (Some(adds), Some(removes));
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let taken = match field.name().as_str() {
                column::ADD => adds.take(),
                column::REMOVE => removes.take(),
                _ => None,
            };
            match taken {
                Some(actions) => Arc::new(actions) as ArrayRef,
                None => new_null_array(field.data_type(), rows),
            }
        })
        .collect();
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|error| Error::arrow("the file actions of a checkpoint", error))
}

/// The checkpoint `add` struct of `adds`, rows of an earlier checkpoint named `file` as its
/// writer laid them out (spec "Checkpoint Schema": optional fields may be absent): its
/// `stats_parsed` and `partitionValues_parsed` are copied when they have the new layout's
/// shape and rebuilt from `stats` and `partitionValues` otherwise; its `stats` strings are
/// rebuilt from `stats_parsed` where missing; `dataChange` is false.
pub(crate) fn carried_adds(
    layout: &CheckpointLayout,
    config: &TableConfiguration,
    adds: &StructArray,
    file: &str,
) -> Result<StructArray> {
    let rows = adds.len();
    let stats_json = complete_stats_json(adds, file)?;
    let columns = layout
        .add_fields
        .iter()
        .map(|field| {
            let target = field.data_type();
            let carried = adds
                .column_by_name(field.name())
                .filter(|column| same_shape(column.data_type(), target));
            match (field.name().as_str(), carried) {
                (add::DATA_CHANGE, _) => {
                    Ok(Arc::new(BooleanArray::from(vec![false; rows])) as ArrayRef)
                }
                (PARTITION_VALUES_PARSED | STATS_PARSED, Some(carried)) => {
                    normalize_child(Some(carried), field, rows, file)
                }
                (PARTITION_VALUES_PARSED, None) => partition_values_parsed(layout, config, adds),
                (STATS_PARSED, None) => match &stats_json {
                    Some(json) => parse_stats_in_parallel(json, target),
                    None => Ok(new_null_array(target, rows)),
                },
                (add::STATS, _) => match &stats_json {
                    Some(json) => Ok(Arc::new(json.clone()) as ArrayRef),
                    None => Ok(new_null_array(target, rows)),
                },
                (name, _) => normalize_child(adds.column_by_name(name), field, rows, file),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    StructArray::try_new(layout.add_fields.clone(), columns, adds.nulls().cloned())
        .map_err(|error| Error::arrow(format!("the add rows carried from {file}"), error))
}

/// The checkpoint `remove` struct of `removes`, rows of an earlier checkpoint named `file`
/// (already filtered to the tombstones kept): every field of the layout by name, `dataChange`
/// false.
pub(crate) fn carried_removes(
    layout: &CheckpointLayout,
    removes: &StructArray,
    file: &str,
) -> Result<StructArray> {
    let rows = removes.len();
    let columns = layout
        .remove_fields
        .iter()
        .map(|field| match field.name().as_str() {
            add::DATA_CHANGE => Ok(Arc::new(BooleanArray::from(vec![false; rows])) as ArrayRef),
            name => normalize_child(removes.column_by_name(name), field, rows, file),
        })
        .collect::<Result<Vec<_>>>()?;
    StructArray::try_new(
        layout.remove_fields.clone(),
        columns,
        removes.nulls().cloned(),
    )
    .map_err(|error| Error::arrow(format!("the remove rows carried from {file}"), error))
}

/// The `stats` strings of checkpoint rows `adds`, rebuilt from `stats_parsed` where a row has
/// only that; `None` when the rows have neither column.
fn complete_stats_json(adds: &StructArray, file: &str) -> Result<Option<StringArray>> {
    let strings = adds
        .column_by_name(add::STATS)
        .and_then(|column| column.as_any().downcast_ref::<StringArray>());
    let parsed = adds.column_by_name(STATS_PARSED);
    let strings = match (strings, parsed) {
        (None, None) => return Ok(None),
        (Some(strings), None) => return Ok(Some(strings.clone())),
        (Some(strings), Some(_)) => strings.clone(),
        (None, Some(_)) => StringArray::new_null(adds.len()),
    };
    let Some(parsed) = parsed else {
        return Ok(Some(strings));
    };
    let field = Arc::new(arrow_schema::Field::new(add::STATS, DataType::Utf8, true));
    let alone = StructArray::try_new(Fields::from(vec![field]), vec![Arc::new(strings)], None)
        .map_err(|error| Error::corrupt(file, error))?;
    let filled = fill_missing_stats(alone, parsed, file)?;
    Ok(filled
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .cloned())
}

/// Whether `a` and `b` have the same fields and leaf types, whatever their nullability and
/// field metadata (a Parquet reader's types against the layout's).
fn same_shape(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(f, g)| f.name() == g.name() && same_shape(f.data_type(), g.data_type()))
        }
        (DataType::List(f), DataType::List(g)) | (DataType::Map(f, _), DataType::Map(g, _)) => {
            same_shape(f.data_type(), g.data_type())
        }
        _ => a == b,
    }
}

/// The checkpoint `add` struct of live `adds` (internal layout): `dataChange` false, as Delta
/// on Spark writes it, `stats` kept with `writeStatsAsJson`, `stats_parsed` and
/// `partitionValues_parsed` built with `writeStatsAsStruct`.
pub(crate) fn checkpoint_adds(
    layout: &CheckpointLayout,
    config: &TableConfiguration,
    adds: &StructArray,
) -> Result<StructArray> {
    let rows = adds.len();
    let columns = layout
        .add_fields
        .iter()
        .map(|field| {
            let target = field.data_type();
            match field.name().as_str() {
                add::DATA_CHANGE => Ok(Arc::new(BooleanArray::from(vec![false; rows])) as ArrayRef),
                PARTITION_VALUES_PARSED => partition_values_parsed(layout, config, adds),
                STATS_PARSED => stats_parsed(adds, target),
                name => child_as(adds, name, target),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    StructArray::try_new(layout.add_fields.clone(), columns, None)
        .map_err(|error| Error::arrow("the add rows of a checkpoint", error))
}

/// Which rows of `removes` are tombstones still kept at `cutoff_ms`, among the rows
/// `candidate` admits (spec "Checkpoints": a tombstone is kept until it expires, per
/// `delta.deletedFileRetentionDuration`; one without a deletion time has expired). The one
/// place the expiry rule is written: full and incremental checkpoints both ask it.
pub(crate) fn unexpired_tombstones(
    removes: &StructArray,
    cutoff_ms: i64,
    candidate: impl Fn(usize) -> bool,
) -> BooleanArray {
    let deleted_at = removes
        .column_by_name(remove::DELETION_TIMESTAMP)
        .and_then(|column| column.as_primitive_opt::<Int64Type>());
    (0..removes.len())
        .map(|row| {
            let time = deleted_at
                .filter(|times| times.is_valid(row))
                .map(|times| times.value(row));
            Some(candidate(row) && time.is_some_and(|time| time > cutoff_ms))
        })
        .collect()
}

/// The tombstones of `removes` (any layout) still kept at `cutoff_ms`
/// ([`unexpired_tombstones`]), in the same layout; `None` when none is kept.
pub(crate) fn kept_tombstones(
    removes: &StructArray,
    cutoff_ms: i64,
) -> Result<Option<StructArray>> {
    let keep = unexpired_tombstones(removes, cutoff_ms, |row| removes.is_valid(row));
    if keep.true_count() == 0 {
        return Ok(None);
    }
    let kept = filter(removes, &keep).map_err(|error| Error::arrow("tombstones", error))?;
    Ok(Some(kept.as_struct().clone()))
}

/// The checkpoint `remove` struct of the tombstones in `removes` (internal layout) still kept
/// at `cutoff_ms` ([`unexpired_tombstones`]); `None` when none is kept. `dataChange` is false;
/// no `stats`, no `tags`.
pub(crate) fn checkpoint_removes(
    layout: &CheckpointLayout,
    removes: &StructArray,
    cutoff_ms: i64,
) -> Result<Option<StructArray>> {
    let Some(kept) = kept_tombstones(removes, cutoff_ms)? else {
        return Ok(None);
    };
    let rows = kept.len();
    let columns = layout
        .remove_fields
        .iter()
        .map(|field| match field.name().as_str() {
            add::DATA_CHANGE => Ok(Arc::new(BooleanArray::from(vec![false; rows])) as ArrayRef),
            name => child_as(&kept, name, field.data_type()),
        })
        .collect::<Result<Vec<_>>>()?;
    StructArray::try_new(layout.remove_fields.clone(), columns, None)
        .map(Some)
        .map_err(|error| Error::arrow("the remove rows of a checkpoint", error))
}

/// The child `name` of `actions` as `target` (cast when the reader's layout differs, null when
/// absent).
fn child_as(actions: &StructArray, name: &str, target: &DataType) -> Result<ArrayRef> {
    match actions.column_by_name(name) {
        Some(child) if child.data_type() == target => Ok(child.clone()),
        Some(child) => cast(child, target)
            .map_err(|error| Error::arrow(format!("the {name} column of a checkpoint"), error)),
        None => Ok(new_null_array(target, actions.len())),
    }
}

fn stats_parsed(adds: &StructArray, target: &DataType) -> Result<ArrayRef> {
    let strings = adds
        .column_by_name(add::STATS)
        .and_then(|column| column.as_any().downcast_ref::<StringArray>());
    match strings {
        Some(strings) => parse_stats_in_parallel(strings, target),
        None => Ok(new_null_array(target, adds.len())),
    }
}

/// Rows of JSON statistics parsed per job of [`parse_stats_in_parallel`].
const STATS_ROWS_PER_JOB: usize = 8_192;

/// [`parse_stats`] of `json` as `target`, in slices parsed in parallel on the rayon pool.
fn parse_stats_in_parallel(json: &StringArray, target: &DataType) -> Result<ArrayRef> {
    if json.len() <= STATS_ROWS_PER_JOB {
        return Ok(Arc::new(parse_stats(json, target)?));
    }
    let slices: Vec<StringArray> = (0..json.len())
        .step_by(STATS_ROWS_PER_JOB)
        .map(|start| json.slice(start, STATS_ROWS_PER_JOB.min(json.len() - start)))
        .collect();
    let parsed = slices
        .par_iter()
        .map(|slice| parse_stats(slice, target))
        .collect::<Result<Vec<StructArray>>>()?;
    let parts: Vec<&dyn Array> = parsed.iter().map(|part| part as &dyn Array).collect();
    arrow::compute::concat(&parts).map_err(|error| Error::arrow("checkpoint statistics", error))
}

/// The typed partition values of `adds` under their physical names, parsed from the
/// `partitionValues` map (timestamps without a zone read as UTC, as Spark's session default).
fn partition_values_parsed(
    layout: &CheckpointLayout,
    config: &TableConfiguration,
    adds: &StructArray,
) -> Result<ArrayRef> {
    let fields = layout
        .partition_values_parsed
        .clone()
        .unwrap_or_else(Fields::empty);
    let maps = adds
        .column_by_name(add::PARTITION_VALUES)
        .and_then(|column| column.as_any().downcast_ref::<MapArray>());
    let rows = adds.len();
    let partition_schema = config
        .schema()
        .partition_schema(config.partition_columns())
        .map_err(|error| Error::invalid_table(config.table_uri(), error))?;
    let utc = SessionTimeZone::utc();
    let mut columns = Vec::with_capacity(fields.len());
    for (field, target) in partition_schema.fields.iter().zip(fields.iter()) {
        let DeltaType::Primitive(primitive) = &field.data_type else {
            let reason = format!(
                "partition column '{}' is not of a primitive type",
                field.name
            );
            return Err(Error::invalid_table(config.table_uri(), reason));
        };
        let values = map_values(maps, target.name(), rows);
        columns.push(partition_values_to_arrow(
            &values,
            primitive,
            &field.name,
            &utc,
        )?);
    }
    let array = StructArray::try_new(fields, columns, None)
        .map_err(|error| Error::arrow("partitionValues_parsed", error))?;
    Ok(Arc::new(array))
}

/// The struct column `name` of a batch, for tests.
#[cfg(test)]
pub(crate) fn struct_of<'a>(batch: &'a RecordBatch, name: &str) -> &'a StructArray {
    batch
        .column_by_name(name)
        .map(|c| c.as_struct())
        .expect("column")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::layout::{add_fields, string_map};
    use crate::actions::Format;
    use crate::maintenance::checkpoint::schema::column;
    use std::collections::HashMap;

    fn metadata(configuration: &[(&str, &str)]) -> Metadata {
        Metadata {
            id: "id".into(),
            name: None,
            description: None,
            format: Format::default(),
            schema_string: Some(
                r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"integer","nullable":true,"metadata":{}}]}"#
                    .into(),
            ),
            partition_columns: vec!["p".into()],
            created_time: Some(1),
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        }
    }

    fn config() -> TableConfiguration {
        let protocol = Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: None,
            writer_features: None,
        };
        TableConfiguration::try_new(protocol, metadata(&[]), "file:///t/").unwrap()
    }

    #[test]
    fn non_file_actions_decode_into_the_checkpoint_schema() {
        let config = config();
        let layout = CheckpointLayout::new(&config, false).unwrap();
        let txn = Txn {
            app_id: "app".into(),
            version: 3,
            last_updated: None,
        };
        let removed = DomainMetadata {
            domain: "gone".into(),
            configuration: String::new(),
            removed: true,
        };
        let lines =
            non_file_action_lines(config.protocol(), config.metadata(), &[&txn], &[&removed])
                .unwrap();
        assert_eq!(lines.len(), 3);
        let batch = json_rows(&lines, &layout.schema).unwrap();
        assert_eq!(batch.num_rows(), 3);
        let metadata = struct_of(&batch, column::METADATA);
        assert_eq!(metadata.null_count(), 2);
    }

    #[test]
    fn adds_get_parsed_partition_values_and_stats() {
        let config = config();
        let layout = CheckpointLayout::new(&config, false).unwrap();
        let lines = [
            r#"{"add":{"path":"p=1/a.parquet","partitionValues":{"p":"1"},"size":10,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":2,\"minValues\":{\"a\":1},\"maxValues\":{\"a\":5},\"nullCount\":{\"a\":0}}"}}"#.to_string(),
        ];
        let internal = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "add",
            DataType::Struct(add_fields()),
            true,
        )]));
        let batch = json_rows(&lines, &internal).unwrap();
        let adds = checkpoint_adds(&layout, &config, struct_of(&batch, "add")).unwrap();
        let parsed = adds
            .column_by_name(PARTITION_VALUES_PARSED)
            .unwrap()
            .as_struct();
        assert_eq!(
            parsed
                .column(0)
                .as_primitive::<arrow_array::types::Int32Type>()
                .value(0),
            1
        );
        let stats = adds.column_by_name(STATS_PARSED).unwrap().as_struct();
        let min = stats.column_by_name("minValues").unwrap().as_struct();
        assert_eq!(min.column(0).as_primitive::<Int64Type>().value(0), 1);
        let _ = string_map();
    }

    #[test]
    fn expired_tombstones_are_dropped() {
        let config = config();
        let layout = CheckpointLayout::new(&config, false).unwrap();
        let lines = [
            r#"{"remove":{"path":"old","deletionTimestamp":100,"dataChange":true}}"#.to_string(),
            r#"{"remove":{"path":"new","deletionTimestamp":300,"dataChange":true}}"#.to_string(),
            r#"{"remove":{"path":"untimed","dataChange":true}}"#.to_string(),
        ];
        let internal = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "remove",
            DataType::Struct(crate::actions::layout::remove_fields()),
            true,
        )]));
        let batch = json_rows(&lines, &internal).unwrap();
        let kept = checkpoint_removes(&layout, struct_of(&batch, "remove"), 200)
            .unwrap()
            .unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept.column(0).as_string::<i32>().value(0), "new");
    }
}
