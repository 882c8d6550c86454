//! Classic checkpoint writing (`checkpoint_write::write_checkpoint`) on the local file system:
//! a table of N live files (N = 10,000 and 100,000, added by 10 JSON commits) whose adds carry
//! statistics of 5 columns as Spark writes them (`numRecords`, `minValues`, `maxValues`,
//! `nullCount` of a long, a double, a string, a timestamp and an int).
//!
//! `checkpoint_encode/stats_struct_and_json/<N>` writes the checkpoint as Delta on Spark does
//! by default: statistics as JSON and as the `stats_parsed` struct;
//! `checkpoint_encode/stats_json_only/<N>` with `delta.checkpoint.writeStatsAsStruct=false`.
//!
//! The snapshot is loaded, and its statistics decoded, before the clock starts (one untimed
//! checkpoint warms it); each timed iteration writes one checkpoint (rows built from the
//! snapshot's state, encoded to Parquet, written) and `_last_checkpoint`, both deleted again
//! before the next (`iter_batched`).

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{commit_info_action, json_lines, no_options, runtime, write_log_file};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use deltalog_core::log::path::{classic_checkpoint_file_name, commit_file_name};
use deltalog_core::maintenance::checkpoint::write_checkpoint;
use deltalog_core::maintenance::CheckpointOptions;
use deltalog_core::{SnapshotAt, Storage, Table};
use serde_json::{json, Value};

/// The live files of each table.
const SIZES: [usize; 2] = [10_000, 100_000];
/// The files are added by this many commits (versions `0 .. COMMITS`).
const COMMITS: usize = 10;
const EPOCH_MS: i64 = 1_700_000_000_000;

/// Writes the table's commits into `dir`; the version of the last one.
fn write_log(dir: &Path, files: usize, stats_as_struct: bool) -> u64 {
    let per_commit = files.div_ceil(COMMITS);
    for version in 0..COMMITS {
        let mut actions = vec![commit_info_action(version as u64)];
        if version == 0 {
            actions.push(json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}));
            actions.push(metadata(stats_as_struct));
        }
        let first = version * per_commit;
        actions.extend((first..files.min(first + per_commit)).map(add_action));
        write_log_file(
            dir,
            &commit_file_name(version as u64),
            &json_lines(&actions),
        );
    }
    COMMITS as u64 - 1
}

/// `metaData` of a table `(id long, value double, name string, ts timestamp, qty int)`.
fn metadata(stats_as_struct: bool) -> Value {
    let column = |name: &str, kind: &str| json!({"name": name, "type": kind, "nullable": true, "metadata": {}});
    let schema = json!({"type": "struct", "fields": [
        column("id", "long"),
        column("value", "double"),
        column("name", "string"),
        column("ts", "timestamp"),
        column("qty", "integer"),
    ]});
    let mut configuration = serde_json::Map::new();
    if !stats_as_struct {
        configuration.insert(
            "delta.checkpoint.writeStatsAsStruct".into(),
            Value::from("false"),
        );
    }
    json!({"metaData": {
        "id": "00000000-0000-4000-8000-000000000001",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema.to_string(),
        "partitionColumns": [],
        "configuration": configuration,
        "createdTime": EPOCH_MS,
    }})
}

/// The add of file `index`, with Spark's statistics of the five columns.
fn add_action(index: usize) -> Value {
    let low = index as i64 * 1_000;
    let stats = json!({
        "numRecords": 1_000,
        "minValues": {
            "id": low,
            "value": index as f64 * 0.25,
            "name": format!("name-{:05}", index % 10_000),
            "ts": timestamp(low),
            "qty": index % 17,
        },
        "maxValues": {
            "id": low + 999,
            "value": index as f64 * 0.25 + 99.5,
            "name": format!("name-{:05}", index % 10_000 + 10_000),
            "ts": timestamp(low + 999),
            "qty": 990 + index % 10,
        },
        "nullCount": {"id": 0, "value": index % 7, "name": index % 3, "ts": 0, "qty": 0},
    });
    json!({"add": {
        "path": format!("part-{index:05}-{:032x}-c000.snappy.parquet", index * 7_919),
        "partitionValues": {},
        "size": 100_000 + index % 5_000,
        "modificationTime": EPOCH_MS + index as i64,
        "dataChange": true,
        "stats": stats.to_string(),
    }})
}

/// A timestamp statistic as Spark writes it: UTC, milliseconds.
fn timestamp(offset_ms: i64) -> String {
    let at = chrono::DateTime::from_timestamp_millis(EPOCH_MS + offset_ms).unwrap();
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Deletes the checkpoint of `version` and `_last_checkpoint`.
fn delete_checkpoint(log: &Path, version: u64) {
    for name in [
        classic_checkpoint_file_name(version),
        "_last_checkpoint".into(),
    ] {
        match std::fs::remove_file(log.join(name)) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => panic!("{error}"),
        }
    }
}

fn checkpoint_encode(c: &mut Criterion) {
    let rt = runtime();
    let options = CheckpointOptions::default();
    let mut group = c.benchmark_group("checkpoint_encode");
    group.sample_size(10);
    for files in SIZES {
        for (label, stats_as_struct) in
            [("stats_struct_and_json", true), ("stats_json_only", false)]
        {
            let dir = tempfile::tempdir().unwrap();
            let version = write_log(dir.path(), files, stats_as_struct);
            let log: PathBuf = dir.path().join("_delta_log");
            let storage = Storage::open(dir.path().to_str().unwrap(), &no_options()).unwrap();
            let table = Table::from_storage(storage);
            let snapshot = rt.block_on(table.snapshot(SnapshotAt::Latest)).unwrap();
            let warm = rt.block_on(write_checkpoint(&snapshot, &options)).unwrap();
            assert_eq!((warm.version, warm.num_add_files), (version, files as u64));
            delete_checkpoint(&log, version);
            group.throughput(Throughput::Elements(files as u64));
            group.bench_function(BenchmarkId::new(label, files), |b| {
                b.iter_batched(
                    || delete_checkpoint(&log, version),
                    |()| rt.block_on(write_checkpoint(&snapshot, &options)).unwrap(),
                    BatchSize::PerIteration,
                )
            });
            delete_checkpoint(&log, version);
        }
    }
    group.finish();
}

criterion_group!(benches, checkpoint_encode);
criterion_main!(benches);
