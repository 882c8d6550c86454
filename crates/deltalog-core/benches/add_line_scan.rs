//! The `add`/`remove` line scanner (`add_scanner::scan_file_actions`, with the statistics kept
//! and without) against the generic arrow-json decoder (`commit::decode_file_lines`, its adds
//! finished alike), on the file action lines of one commit of
//! 10,000 adds with statistics and partition values, and of one of 10,000 adds and 5,000
//! removes; then end to end on a log of many small commits (2,000 commits of 10 adds and one
//! remove, no checkpoint, like the benchmark harness's `commits_10k_small` at a fifth of its
//! size): open + list, and a 1% filtered listing (`snapshot_matching`).

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{RecordBatch, StructArray};

use common::{no_options, runtime, write_table, LogSpec};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use deltalog_core::actions::layout::finish_adds;
use deltalog_core::log::decode::add_scanner::{scan_file_actions, StatsText};
use deltalog_core::log::decode::commit::decode_file_lines;
use deltalog_core::{parse_sql, SnapshotAt, Table};

const ADDS: usize = 10_000;

const SMALL_COMMITS: LogSpec = LogSpec {
    commits: 2_000,
    adds_per_commit: 10,
    removes_per_commit: 1,
};

/// The `add` and `remove` lines of `bytes`.
fn file_action_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| line.starts_with(b"{\"add\"") || line.starts_with(b"{\"remove\""))
        .collect()
}

/// The generic decoder's batch for `lines`, its adds finished (`numRecords` filled, the
/// statistics kept) as the scanner's are.
fn generic(lines: &[&[u8]]) -> RecordBatch {
    let batch = decode_file_lines(lines, "bench.json").unwrap();
    let adds = batch
        .column(0)
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let adds = finish_adds(adds.clone(), None, true).unwrap();
    RecordBatch::try_new(
        batch.schema(),
        vec![Arc::new(adds), batch.column(1).clone()],
    )
    .unwrap()
}

fn line_scan(c: &mut Criterion) {
    let adds_only = LogSpec {
        commits: 2,
        adds_per_commit: ADDS,
        removes_per_commit: 0,
    };
    let mixed = LogSpec {
        removes_per_commit: ADDS / 2,
        ..adds_only
    };
    let commits = [
        ("10k_adds", adds_only.commit_bytes(1)),
        ("10k_adds_5k_removes", mixed.commit_bytes(1)),
    ];
    let mut group = c.benchmark_group("add_line_scan");
    group.sample_size(20);
    for (name, bytes) in &commits {
        let lines = file_action_lines(bytes);
        let scanned =
            scan_file_actions(&lines, StatsText::Decoded).expect("the common shape is scanned");
        assert_eq!(
            scanned,
            generic(&lines),
            "{name}: the two decoders disagree"
        );
        group.throughput(Throughput::Elements(lines.len() as u64));
        group.bench_with_input(BenchmarkId::new("scanner", name), &lines, |b, lines| {
            b.iter(|| scan_file_actions(black_box(lines), StatsText::Decoded).unwrap())
        });
        group.bench_with_input(
            BenchmarkId::new("scanner_without_stats", name),
            &lines,
            |b, lines| b.iter(|| scan_file_actions(black_box(lines), StatsText::Dropped).unwrap()),
        );
        group.bench_with_input(BenchmarkId::new("generic", name), &lines, |b, lines| {
            b.iter(|| generic(black_box(lines)))
        });
    }
    group.finish();
}

/// Opens the table at `uri` and lists the files of its latest snapshot, or with `filter` of
/// the snapshot holding only the files that may match it; returns (rows, batches).
async fn list(uri: &str, filter: Option<&str>) -> (usize, usize) {
    let table = Table::open(uri, &no_options()).await.unwrap();
    let snapshot = match filter {
        None => table.snapshot(SnapshotAt::Latest).await.unwrap(),
        Some(filter) => {
            let filter = parse_sql(filter).unwrap();
            table
                .snapshot_matching(SnapshotAt::Latest, &filter)
                .await
                .unwrap()
        }
    };
    let (_, batches) = snapshot.files(filter.is_some()).await.unwrap();
    let rows = batches.iter().map(|batch| batch.num_rows()).sum();
    (rows, batches.len())
}

fn small_commits(c: &mut Criterion) {
    let runtime = runtime();
    let table = write_table(&SMALL_COMMITS, None);
    let live = SMALL_COMMITS.live_files_at(SMALL_COMMITS.commits - 1);
    let adds = SMALL_COMMITS.commits as usize * SMALL_COMMITS.adds_per_commit;
    let one_percent = format!("id < {}", adds / 100 * 1000);
    let (rows, batches) = runtime.block_on(list(table.uri(), None));
    assert_eq!(rows, live);
    assert!(batches <= 2, "{batches} batches");
    let (matching, _) = runtime.block_on(list(table.uri(), Some(&one_percent)));
    assert!(
        matching > 0 && matching <= live / 50,
        "{matching} files kept"
    );

    let mut group = c.benchmark_group("small_commits");
    group.sample_size(10);
    group.throughput(Throughput::Elements(live as u64));
    group.bench_function("open_list", |b| {
        b.to_async(&runtime).iter(|| list(table.uri(), None))
    });
    group.bench_function("open_list_filtered_1pct", |b| {
        b.to_async(&runtime)
            .iter(|| list(table.uri(), Some(&one_percent)))
    });
    group.finish();
}

criterion_group!(benches, line_scan, small_commits);
criterion_main!(benches);
