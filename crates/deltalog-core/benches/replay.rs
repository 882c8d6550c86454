//! Action reconciliation over already decoded actions:
//! - `replay_files/100_commits`: 100 commits of 1,000 adds, each removing 100 files of the one
//!   before, folded newest first into the live set (every key goes through the seen-set).
//! - `replay_files/checkpoint_100k_plus_10_commits`: a reconciled checkpoint of 100,000 files in
//!   four batches, probed in parallel against the keys of 10 newer commits.
//! - `fold_state/100_commits`: the same 100 commits through `load::fold_state`, which also picks
//!   the newest protocol, metaData, txns and domains.

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{json_lines, LogSpec};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use deltalog_core::actions::layout::FileActionBatch;
use deltalog_core::log::decode::add_scanner::StatsText;
use deltalog_core::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use deltalog_core::replay::load::{fold_state, Deltas};
use deltalog_core::replay::reconcile::{replay_files, FileKeys};
use url::Url;

const COMMITS: LogSpec = LogSpec {
    commits: 100,
    adds_per_commit: 1_000,
    removes_per_commit: 100,
};

/// Versions 0..=99 are in the checkpoint; 100..110 are commits after it.
const CHECKPOINTED: LogSpec = LogSpec {
    commits: 110,
    adds_per_commit: 1_000,
    removes_per_commit: 100,
};
const CHECKPOINT_VERSION: u64 = 99;

fn replay(c: &mut Criterion) {
    let keys = FileKeys::new(&Url::parse("file:///tmp/bench-table/").unwrap());
    let deltas = decode_commits(&COMMITS, 0..COMMITS.commits);
    let commit_batches = file_batches(&deltas);
    let after_checkpoint = file_batches(&decode_commits(
        &CHECKPOINTED,
        CHECKPOINT_VERSION + 1..CHECKPOINTED.commits,
    ));
    let checkpoint = checkpoint_batches(&CHECKPOINTED, CHECKPOINT_VERSION, 4);
    let commit_actions: usize = commit_batches.iter().map(FileActionBatch::num_rows).sum();
    let checkpoint_actions: usize = checkpoint.iter().map(FileActionBatch::num_rows).sum();

    let mut group = c.benchmark_group("replay_files");
    group.sample_size(10);
    group.throughput(Throughput::Elements(commit_actions as u64));
    group.bench_function("100_commits", |b| {
        b.iter(|| replay_files(commit_batches.clone(), Vec::new(), &keys).unwrap())
    });
    let after_actions: usize = after_checkpoint.iter().map(FileActionBatch::num_rows).sum();
    group.throughput(Throughput::Elements(
        (checkpoint_actions + after_actions) as u64,
    ));
    group.bench_function("checkpoint_100k_plus_10_commits", |b| {
        b.iter(|| replay_files(after_checkpoint.clone(), checkpoint.clone(), &keys).unwrap())
    });
    group.finish();

    let mut group = c.benchmark_group("fold_state");
    group.sample_size(10);
    group.throughput(Throughput::Elements(commit_actions as u64));
    group.bench_function("100_commits", |b| {
        b.iter_batched(
            || deltas.clone(),
            |deltas| fold_state("bench", COMMITS.commits - 1, deltas, None, None, &keys).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// The commits `versions` of `spec`, decoded without statistics, newest first.
fn decode_commits(spec: &LogSpec, versions: std::ops::Range<u64>) -> Deltas {
    versions
        .rev()
        .map(|version| {
            let bytes = spec.commit_bytes(version);
            let name = format!("{version:020}.json");
            let decoded = decode_actions(&bytes, version, &name, DecodeOptions::default()).unwrap();
            (version, decoded)
        })
        .collect()
}

fn file_batches(deltas: &Deltas) -> Vec<FileActionBatch> {
    deltas
        .iter()
        .flat_map(|(_, decoded)| decoded.file_actions.iter().cloned())
        .collect()
}

/// The checkpoint of `version` as `parts` reconciled batches, laid out as a checkpoint read
/// produces them.
fn checkpoint_batches(spec: &LogSpec, version: u64, parts: usize) -> Vec<FileActionBatch> {
    let actions = spec.checkpoint_actions(version);
    let options = DecodeOptions {
        from_checkpoint: true,
        stats: StatsText::Dropped,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    actions
        .chunks(actions.len().div_ceil(parts))
        .flat_map(|chunk| {
            let decoded: DecodedActions =
                decode_actions(&json_lines(chunk), version, "checkpoint", options).unwrap();
            decoded.file_actions
        })
        .collect()
}

criterion_group!(benches, replay);
criterion_main!(benches);
