//! Synthetic Delta log content shared by the benchmarks: commits, checkpoints and whole tables,
//! shaped like what Spark writes (partitioned paths, JSON statistics, snappy Parquet). Everything
//! here runs before a timed loop starts.
//!
//! The log is [`LogSpec`]: version `v` adds `adds_per_commit` new files and, from version 1 on,
//! removes the first `removes_per_commit` files that version `v - 1` added.

// Each benchmark uses part of this module; setup code may panic on failure.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use deltalog_core::actions::layout::{add_fields, remove_fields, string_map};
use deltalog_core::log::path::{classic_checkpoint_file_name, commit_file_name};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::{json, Value};

/// Milliseconds since the epoch of version 0.
const EPOCH_MS: i64 = 1_700_000_000_000;

/// Distinct values of the `date` partition column.
const PARTITIONS: usize = 30;

/// A two-worker runtime, like the one the Python binding uses on this machine.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The shape of a synthetic log.
#[derive(Debug, Clone, Copy)]
pub struct LogSpec {
    /// Versions `0 .. commits`.
    pub commits: u64,
    pub adds_per_commit: usize,
    pub removes_per_commit: usize,
}

impl LogSpec {
    /// The actions of commit `version`: `commitInfo`, then `protocol` and `metaData` at version
    /// 0, the adds and the removes.
    pub fn commit_actions(&self, version: u64) -> Vec<Value> {
        let mut actions = vec![commit_info_action(version)];
        if version == 0 {
            actions.push(protocol_action());
            actions.push(metadata_action());
        }
        actions.extend(self.added_in(version).map(add_action));
        actions.extend(
            self.removed_in(version)
                .map(|index| remove_action(index, version)),
        );
        actions
    }

    /// The bytes of commit `version`.
    pub fn commit_bytes(&self, version: u64) -> Vec<u8> {
        json_lines(&self.commit_actions(version))
    }

    /// The actions of a classic checkpoint of `version`: protocol, metaData, every live file
    /// and every tombstone.
    pub fn checkpoint_actions(&self, version: u64) -> Vec<Value> {
        let mut actions = vec![protocol_action(), metadata_action()];
        let removed: Vec<(usize, u64)> = (1..=version)
            .flat_map(|v| self.removed_in(v).map(move |index| (index, v)))
            .collect();
        let is_removed: std::collections::HashSet<usize> =
            removed.iter().map(|(index, _)| *index).collect();
        actions.extend(
            (0..=version)
                .flat_map(|v| self.added_in(v))
                .filter(|index| !is_removed.contains(index))
                .map(add_action),
        );
        actions.extend(
            removed
                .into_iter()
                .map(|(index, v)| remove_action(index, v)),
        );
        actions
    }

    /// How many files are live at `version`.
    pub fn live_files_at(&self, version: u64) -> usize {
        let added = (version as usize + 1) * self.adds_per_commit;
        added - version as usize * self.removes_per_commit.min(self.adds_per_commit)
    }

    fn added_in(&self, version: u64) -> std::ops::Range<usize> {
        let first = version as usize * self.adds_per_commit;
        first..first + self.adds_per_commit
    }

    fn removed_in(&self, version: u64) -> std::ops::Range<usize> {
        if version == 0 {
            return 0..0;
        }
        let first = (version as usize - 1) * self.adds_per_commit;
        first..first + self.removes_per_commit.min(self.adds_per_commit)
    }
}

/// A table written by [`write_table`]; the folder goes away with it.
pub struct SyntheticTable {
    pub dir: tempfile::TempDir,
}

impl SyntheticTable {
    pub fn uri(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }
}

/// Writes the commits of `spec` and, when `checkpoint_at` is set, a classic single-part
/// checkpoint of that version with its `_last_checkpoint`. No data files are written.
pub fn write_table(spec: &LogSpec, checkpoint_at: Option<u64>) -> SyntheticTable {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for version in 0..spec.commits {
        std::fs::write(
            log.join(commit_file_name(version)),
            spec.commit_bytes(version),
        )
        .unwrap();
    }
    if let Some(version) = checkpoint_at {
        let actions = spec.checkpoint_actions(version);
        let parquet = checkpoint_parquet(&actions, actions.len());
        std::fs::write(log.join(classic_checkpoint_file_name(version)), parquet).unwrap();
        let hint = json!({"version": version, "size": actions.len()});
        std::fs::write(log.join("_last_checkpoint"), hint.to_string()).unwrap();
    }
    SyntheticTable { dir }
}

/// Writes `bytes` to `dir/_delta_log/name` and returns the file's size.
pub fn write_log_file(dir: &Path, name: &str, bytes: &[u8]) -> u64 {
    let log = dir.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    std::fs::write(log.join(name), bytes).unwrap();
    bytes.len() as u64
}

/// An `add` of the file numbered `index`, with statistics for three columns, `numRecords`
/// first as Spark writes them.
pub fn add_action(index: usize) -> Value {
    add_with_stats(index, stats_json(index, true))
}

/// [`add_action`] with `numRecords` after the nested statistics, which a reader cannot find
/// without parsing the whole object.
pub fn add_action_records_last(index: usize) -> Value {
    add_with_stats(index, stats_json(index, false))
}

fn add_with_stats(index: usize, stats: String) -> Value {
    json!({"add": {
        "path": file_path(index),
        "partitionValues": {"date": partition_value(index)},
        "size": 100_000 + index % 5_000,
        "modificationTime": EPOCH_MS + index as i64,
        "dataChange": true,
        "stats": stats,
    }})
}

/// Statistics JSON of the file numbered `index`, with `numRecords` first or last.
fn stats_json(index: usize, records_first: bool) -> String {
    let records = format!("\"numRecords\":{}", 1000 + index % 100);
    let columns = format!(
        "\"minValues\":{{\"id\":{min},\"value\":0.5,\"name\":\"aaa\"}},\
         \"maxValues\":{{\"id\":{max},\"value\":99.5,\"name\":\"zzz\"}},\
         \"nullCount\":{{\"id\":0,\"value\":{nulls},\"name\":0}}",
        min = index * 1000,
        max = index * 1000 + 999,
        nulls = index % 7,
    );
    if records_first {
        format!("{{{records},{columns}}}")
    } else {
        format!("{{{columns},{records}}}")
    }
}

/// A `remove` of the file numbered `index`, at `version`.
pub fn remove_action(index: usize, version: u64) -> Value {
    json!({"remove": {
        "path": file_path(index),
        "deletionTimestamp": EPOCH_MS + version as i64 * 1000,
        "dataChange": true,
        "extendedFileMetadata": true,
        "partitionValues": {"date": partition_value(index)},
        "size": 100_000 + index % 5_000,
    }})
}

pub fn commit_info_action(version: u64) -> Value {
    json!({"commitInfo": {
        "timestamp": EPOCH_MS + version as i64 * 1000,
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": "[\"date\"]"},
        "isBlindAppend": true,
        "engineInfo": "deltalog-bench",
    }})
}

pub fn protocol_action() -> Value {
    json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
}

/// `metaData` of a table `(id long, value double, name string, date string)` partitioned by
/// `date`.
pub fn metadata_action() -> Value {
    let column = |name: &str, kind: &str| json!({"name": name, "type": kind, "nullable": true, "metadata": {}});
    let schema = json!({"type": "struct", "fields": [
        column("id", "long"),
        column("value", "double"),
        column("name", "string"),
        column("date", "string"),
    ]});
    json!({"metaData": {
        "id": "00000000-0000-4000-8000-000000000000",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema.to_string(),
        "partitionColumns": ["date"],
        "configuration": {},
        "createdTime": EPOCH_MS,
    }})
}

/// One JSON object per line.
pub fn json_lines(actions: &[Value]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for action in actions {
        serde_json::to_writer(&mut bytes, action).unwrap();
        bytes.push(b'\n');
    }
    bytes
}

/// `actions` as a classic checkpoint: snappy Parquet with the checkpoint schema, at most
/// `rows_per_group` rows per row group.
pub fn checkpoint_parquet(actions: &[Value], rows_per_group: usize) -> Vec<u8> {
    let schema = checkpoint_schema();
    let lines = json_lines(actions);
    let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
        .with_batch_size(actions.len().max(1))
        .build_decoder()
        .unwrap();
    assert_eq!(decoder.decode(&lines).unwrap(), lines.len());
    let batch = decoder
        .flush()
        .unwrap()
        .unwrap_or_else(|| RecordBatch::new_empty(schema.clone()));
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(rows_per_group.max(1)))
        .build();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    bytes
}

/// The columns Spark writes in a classic checkpoint (spec "Checkpoint Schema"), without
/// `stats_parsed`.
fn checkpoint_schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    let long = |name: &str| Field::new(name, DataType::Int64, true);
    let list = || DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)));
    let add: Vec<Field> = add_fields()
        .iter()
        .filter(|field| field.name() != "numRecords")
        .map(|field| field.as_ref().clone())
        .collect();
    let remove: Vec<Field> = remove_fields()
        .iter()
        .filter(|field| !matches!(field.name().as_str(), "stats" | "tags"))
        .map(|field| field.as_ref().clone())
        .collect();
    Arc::new(Schema::new(vec![
        struct_field(
            "txn",
            vec![text("appId"), long("version"), long("lastUpdated")],
        ),
        struct_field("add", add),
        struct_field("remove", remove),
        struct_field(
            "metaData",
            vec![
                text("id"),
                text("name"),
                text("description"),
                struct_field(
                    "format",
                    vec![text("provider"), Field::new("options", string_map(), true)],
                ),
                text("schemaString"),
                Field::new("partitionColumns", list(), true),
                long("createdTime"),
                Field::new("configuration", string_map(), true),
            ],
        ),
        struct_field(
            "protocol",
            vec![
                Field::new("minReaderVersion", DataType::Int32, true),
                Field::new("minWriterVersion", DataType::Int32, true),
                Field::new("readerFeatures", list(), true),
                Field::new("writerFeatures", list(), true),
            ],
        ),
    ]))
}

fn struct_field(name: &str, fields: Vec<Field>) -> Field {
    Field::new(name, DataType::Struct(Fields::from(fields)), true)
}

/// A Spark-like data file name: `date=<day>/part-<n>-<uuid>-c000.snappy.parquet`.
fn file_path(index: usize) -> String {
    let mixed = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!(
        "date={}/part-{:05}-{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}-c000.snappy.parquet",
        partition_value(index),
        index % 100_000,
        mixed >> 32,
        (mixed >> 16) & 0xffff,
        mixed & 0xfff,
        (mixed >> 12) & 0xfff,
        index,
    )
}

fn partition_value(index: usize) -> String {
    format!("2024-01-{:02}", index % PARTITIONS + 1)
}

/// No storage options.
pub fn no_options() -> HashMap<String, String> {
    HashMap::new()
}
