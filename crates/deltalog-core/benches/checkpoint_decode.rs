//! Classic checkpoint decoding (`checkpoint::read_parquet_actions`): a snappy Parquet checkpoint
//! of 100,000 live files (plus protocol, metaData and tombstones) on the local file system, read
//! with the projection a snapshot uses (no statistics) and with statistics, from one row group
//! and from four (which are decoded in parallel).

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{checkpoint_parquet, no_options, runtime, write_log_file, LogSpec};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use deltalog_core::log::decode::checkpoint::{read_parquet_actions, CheckpointProjection};
use deltalog_core::log::path::classic_checkpoint_file_name;
use deltalog_core::storage::Storage;

/// 101 commits of 1,000 adds, each removing 10 files of the one before: 100,000 live files
/// and 1,000 tombstones at version 100.
const SPEC: LogSpec = LogSpec {
    commits: 101,
    adds_per_commit: 1_000,
    removes_per_commit: 10,
};
const VERSION: u64 = 100;

fn checkpoint_decode(c: &mut Criterion) {
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let actions = SPEC.checkpoint_actions(VERSION);
    let rows = actions.len();
    let layouts = [("1_row_group", rows), ("4_row_groups", rows.div_ceil(4))];
    let storage = Storage::open(dir.path().to_str().unwrap(), &no_options()).unwrap();
    let files: Vec<_> = layouts
        .iter()
        .enumerate()
        .map(|(n, (layout, rows_per_group))| {
            let name = classic_checkpoint_file_name(VERSION + n as u64);
            let parquet = checkpoint_parquet(&actions, *rows_per_group);
            let size = write_log_file(dir.path(), &name, &parquet);
            (*layout, storage.log_file(&name), size)
        })
        .collect();

    let mut group = c.benchmark_group("checkpoint_decode");
    group.sample_size(10);
    group.throughput(Throughput::Elements(SPEC.live_files_at(VERSION) as u64));
    for (layout, path, size) in &files {
        for stats in [false, true] {
            let projection = CheckpointProjection {
                other_actions: true,
                stats,
                ..CheckpointProjection::default()
            };
            let label = if stats { "with_stats" } else { "no_stats" };
            group.bench_function(BenchmarkId::new(label, layout), |b| {
                b.to_async(&runtime).iter(|| async {
                    read_parquet_actions(&storage, path, *size, VERSION, projection)
                        .await
                        .unwrap()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, checkpoint_decode);
criterion_main!(benches);
