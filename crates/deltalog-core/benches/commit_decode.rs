//! JSON commit decoding (`commit::decode_actions`): one commit of 10,000 `add` actions with
//! statistics (`numRecords` first, as Spark writes them) and partition values, decoded with and
//! without keeping the statistics strings; the same commit with `numRecords` written last (the
//! record count then needs a full parse of each statistics object); and a commit of 10,000 adds
//! and 5,000 removes.

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::hint::black_box;

use common::{add_action_records_last, commit_info_action, json_lines, LogSpec};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use deltalog_core::log::decode::add_scanner::StatsText;
use deltalog_core::log::decode::commit::{decode_actions, DecodeOptions};

const ADDS: usize = 10_000;

fn commit_decode(c: &mut Criterion) {
    let adds_only = LogSpec {
        commits: 2,
        adds_per_commit: ADDS,
        removes_per_commit: 0,
    };
    let mixed = LogSpec {
        removes_per_commit: ADDS / 2,
        ..adds_only
    };
    let mut records_last = vec![commit_info_action(1)];
    records_last.extend((ADDS..2 * ADDS).map(add_action_records_last));
    let commits = [
        ("10k_adds", adds_only.commit_bytes(1)),
        ("10k_adds_records_last", json_lines(&records_last)),
        ("10k_adds_5k_removes", mixed.commit_bytes(1)),
    ];
    let mut group = c.benchmark_group("commit_decode");
    group.sample_size(20);
    for (name, bytes) in &commits {
        let lines = bytes.iter().filter(|byte| **byte == b'\n').count();
        group.throughput(Throughput::Elements(lines as u64));
        for keep_stats in [false, true] {
            let options = DecodeOptions {
                from_checkpoint: false,
                stats: StatsText::kept(keep_stats),
                skip_file_actions: false,
                skip_commit_info: false,
            };
            let label = if keep_stats { "with_stats" } else { "no_stats" };
            group.bench_with_input(BenchmarkId::new(label, name), bytes, |b, bytes| {
                b.iter(|| {
                    decode_actions(black_box(bytes), 1, "00000000000000000001.json", options)
                        .unwrap()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, commit_decode);
criterion_main!(benches);
