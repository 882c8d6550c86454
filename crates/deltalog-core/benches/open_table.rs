//! End to end on synthetic tables on the local file system: `Table::open`, the latest
//! snapshot, and its file list, as the Python binding does for `DeltaTable(...).files()`.
//! - `commits_only`: 50 commits of 200 adds, each removing 20 files of the one before (9,020
//!   live files), no checkpoint;
//! - `checkpoint_plus_10_commits`: 60 such commits with a classic checkpoint at version 49 and
//!   its `_last_checkpoint` (10,820 live files).
//!
//! `open_snapshot_files` times the whole path without statistics; `open_snapshot_files_stats`
//! asks for the statistics too (a second, statistics-keeping read of the log);
//! `files_of_loaded_snapshot` times only the file list of an already loaded snapshot.

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{no_options, runtime, write_table, LogSpec, SyntheticTable};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use deltalog_core::{SnapshotAt, Table};

const COMMITS_ONLY: LogSpec = LogSpec {
    commits: 50,
    adds_per_commit: 200,
    removes_per_commit: 20,
};

const WITH_CHECKPOINT: LogSpec = LogSpec {
    commits: 60,
    ..COMMITS_ONLY
};
const CHECKPOINT_VERSION: u64 = 49;

/// Opens the table at `uri`, loads its latest snapshot and lists its files; returns how many.
async fn open_snapshot_files(uri: &str, with_stats: bool) -> usize {
    let table = Table::open(uri, &no_options()).await.unwrap();
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let (_, batches) = snapshot.files(with_stats).await.unwrap();
    batches.iter().map(|batch| batch.num_rows()).sum()
}

fn open_table(c: &mut Criterion) {
    let runtime = runtime();
    let tables: [(&str, SyntheticTable, usize); 2] = [
        (
            "commits_only",
            write_table(&COMMITS_ONLY, None),
            COMMITS_ONLY.live_files_at(COMMITS_ONLY.commits - 1),
        ),
        (
            "checkpoint_plus_10_commits",
            write_table(&WITH_CHECKPOINT, Some(CHECKPOINT_VERSION)),
            WITH_CHECKPOINT.live_files_at(WITH_CHECKPOINT.commits - 1),
        ),
    ];
    for (name, table, live) in &tables {
        let listed = runtime.block_on(open_snapshot_files(table.uri(), false));
        assert_eq!(listed, *live, "{name}: wrong number of live files");
    }

    let mut group = c.benchmark_group("open_table");
    group.sample_size(10);
    for (name, table, live) in &tables {
        group.throughput(Throughput::Elements(*live as u64));
        for (label, with_stats) in [
            ("open_snapshot_files", false),
            ("open_snapshot_files_stats", true),
        ] {
            group.bench_function(BenchmarkId::new(label, name), |b| {
                b.to_async(&runtime)
                    .iter(|| open_snapshot_files(table.uri(), with_stats))
            });
        }
        let snapshot = runtime.block_on(async {
            let table = Table::open(table.uri(), &no_options()).await.unwrap();
            table.snapshot(SnapshotAt::Latest).await.unwrap()
        });
        group.bench_function(BenchmarkId::new("files_of_loaded_snapshot", name), |b| {
            b.to_async(&runtime)
                .iter(|| async { snapshot.files(false).await.unwrap() })
        });
    }
    group.finish();
}

criterion_group!(benches, open_table);
criterion_main!(benches);
