//! The cost of losing the race for a version: a transaction read at version `v` of a table of
//! 100 files (partitioned by `p`, all in `p = 'a'`) while `k` other writers (k = 1, 10, 100)
//! each committed a blind append of one file in `p = 'b'`; it must read those `k` winning
//! commits (and only those), check them, and land at `v + k + 1`. Two losers:
//! - `blind_append`: [`Table::append_transaction`] adding one file (no read recorded);
//! - `read_append`: [`Snapshot::transaction`] that recorded the read predicate `p = 'a'`
//!   under `Serializable` (so every winning add is matched against it) and adds one file.
//!
//! `conflict_check/commit/<loser>/<k>` times [`Transaction::commit`] on the local file system:
//! the put that fails, the listing and read of the `k` winners, the checks, the put that
//! lands and (for `read_append`) the refresh of the snapshot to the new version; no
//! post-commit work, no backoff. Each iteration starts from a fresh setup (`iter_batched`):
//! the log put back at `v + k`, so every timed commit rebases exactly once.
//!
//! `conflict_check/rules/<loser>/<k>` times the conflict rules alone
//! (`transaction::conflict::check_winner`) over the `k` winners decoded in memory;
//! `conflict_check/decode_and_rules/<loser>/<k>` adds decoding the winners' JSON.

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

use common::{no_options, runtime};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use deltalog_core::log::decode::add_scanner::StatsText;
use deltalog_core::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use deltalog_core::log::path::commit_file_name;
use deltalog_core::maintenance::PostCommitOptions;
use deltalog_core::ops::parse_isolation_level;
use deltalog_core::replay::reconcile::FileKeys;
use deltalog_core::schema::{PrimitiveType, StructField};
use deltalog_core::transaction::conflict::{check_winner, Current, Rebase, Winner};
use deltalog_core::transaction::{AddFile, TableSpec};
use deltalog_core::{
    parse_sql, CommitOptions, Expr, Snapshot, SnapshotAt, Storage, StructType, Table, Transaction,
};

/// Commits of 10 files each after the table's creation: the read version `v`.
const BASE_COMMITS: u64 = 10;
const FILES_PER_BASE_COMMIT: usize = 10;
/// How many commits won the race, per benchmark.
const WINNERS: [u64; 3] = [1, 10, 100];
/// The read predicate of the `read_append` loser.
const READ_PREDICATE: &str = "p = 'a'";

#[derive(Clone, Copy)]
enum Loser {
    BlindAppend,
    ReadAppend,
}

impl Loser {
    fn name(self) -> &'static str {
        match self {
            Loser::BlindAppend => "blind_append",
            Loser::ReadAppend => "read_append",
        }
    }
}

/// The table read at `v`, and the bytes of `k` winning commits to put on top of it.
struct Race {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    table: Table,
    snapshot: Snapshot,
    winners: Vec<Vec<u8>>,
}

impl Race {
    /// Version `v`, read by every loser.
    fn read_version(&self) -> u64 {
        self.snapshot.version()
    }

    /// Deletes every commit above `v` (the winners and the loser of the last iteration).
    fn reset(&self) {
        let last = self.read_version() + self.winners.len() as u64 + 1;
        for version in self.read_version() + 1..=last {
            match std::fs::remove_file(self.log.join(commit_file_name(version))) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => panic!("{error}"),
            }
        }
    }

    /// Writes the winning commits at `v + 1 ..= v + k`.
    fn land_winners(&self) {
        for (n, bytes) in self.winners.iter().enumerate() {
            let version = self.read_version() + 1 + n as u64;
            std::fs::write(self.log.join(commit_file_name(version)), bytes).unwrap();
        }
    }

    /// A fresh losing transaction read at `v`, with the winners landed after its read.
    fn losing_transaction(&self, loser: Loser, rt: &tokio::runtime::Runtime) -> Transaction {
        self.reset();
        let mut transaction = match loser {
            Loser::BlindAppend => rt.block_on(self.table.append_transaction("WRITE")).unwrap(),
            Loser::ReadAppend => {
                let mut transaction = self
                    .snapshot
                    .transaction("WRITE")
                    .with_isolation_level(parse_isolation_level("Serializable").unwrap());
                transaction.record_read_predicate(read_predicate());
                transaction
            }
        };
        assert_eq!(transaction.read_version(), Some(self.read_version()));
        transaction.add(&[file("a", u64::MAX as usize)]).unwrap();
        self.land_winners();
        transaction.with_commit_options(quick_commit())
    }
}

fn read_predicate() -> Expr {
    parse_sql(READ_PREDICATE).unwrap()
}

/// Default commit options without backoff between attempts and without post-commit work.
fn quick_commit() -> CommitOptions {
    CommitOptions {
        backoff_base: Duration::ZERO,
        post_commit: PostCommitOptions::none(),
        ..CommitOptions::default()
    }
}

fn file(partition: &str, index: usize) -> AddFile {
    AddFile {
        path: format!("p={partition}/part-{index:020}.parquet"),
        partition_values: vec![("p".into(), Some(partition.into()))],
        size: 1_000,
        modification_time: 1_700_000_000_000,
        data_change: true,
        stats: Some(format!(
            "{{\"numRecords\":100,\"minValues\":{{\"id\":{index}}},\"maxValues\":{{\"id\":{index}}},\"nullCount\":{{\"id\":0}}}}"
        )),
        ..AddFile::default()
    }
}

/// Creates the table at `v` and captures `k` winning commits (written through the core, then
/// taken off the log again).
fn race(k: u64, rt: &tokio::runtime::Runtime) -> Race {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &no_options()).unwrap();
    let table = Table::from_storage(storage);
    let spec = TableSpec {
        schema: StructType::new(vec![
            StructField::new("id", PrimitiveType::Long, true),
            StructField::new("p", PrimitiveType::String, true),
        ]),
        partition_columns: vec!["p".into()],
        ..TableSpec::default()
    };
    rt.block_on(async {
        table.create(spec).await.unwrap();
        for commit in 0..BASE_COMMITS as usize {
            let files: Vec<AddFile> = (0..FILES_PER_BASE_COMMIT)
                .map(|n| file("a", commit * FILES_PER_BASE_COMMIT + n))
                .collect();
            blind_append(&table, &files).await;
        }
    });
    let snapshot = rt.block_on(table.snapshot(SnapshotAt::Latest)).unwrap();
    assert_eq!(snapshot.version(), BASE_COMMITS);
    let log = dir.path().join("_delta_log");
    let winners = rt.block_on(async {
        let mut winners = Vec::new();
        for n in 0..k {
            let version = blind_append(&table, &[file("b", n as usize)]).await;
            winners.push(std::fs::read(log.join(commit_file_name(version))).unwrap());
        }
        winners
    });
    let race = Race {
        _dir: dir,
        log,
        table,
        snapshot,
        winners,
    };
    race.reset();
    race
}

async fn blind_append(table: &Table, files: &[AddFile]) -> u64 {
    let mut transaction = table
        .append_transaction("WRITE")
        .await
        .unwrap()
        .with_commit_options(quick_commit());
    transaction.add(files).unwrap();
    transaction.commit().await.unwrap().version
}

fn decode(bytes: &[u8], version: u64) -> DecodedActions {
    let options = DecodeOptions {
        from_checkpoint: false,
        stats: StatsText::Dropped,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    decode_actions(bytes, version, &commit_file_name(version), options).unwrap()
}

/// Runs the conflict rules of `loser` against every winner, in order.
fn check_all(race: &Race, loser: Loser, winners: &[(u64, DecodedActions)]) -> Rebase {
    let keys = FileKeys::new(race.table.storage().root_url());
    let empty = HashSet::new();
    let predicates = match loser {
        Loser::BlindAppend => Vec::new(),
        Loser::ReadAppend => vec![read_predicate()],
    };
    let (snapshot, isolation) = match loser {
        Loser::BlindAppend => (None, "WriteSerializable"),
        Loser::ReadAppend => (Some(&race.snapshot), "Serializable"),
    };
    let current = Current {
        table: race.table.uri(),
        snapshot,
        read_protocol: Some(race.snapshot.table_configuration().protocol()),
        isolation: parse_isolation_level(isolation).unwrap(),
        read_predicates: &predicates,
        read_files: &empty,
        read_whole_table: false,
        app_ids: &empty,
        domains: &empty,
        removed_files: &empty,
        writes_metadata: false,
        writes_protocol: false,
        keys: &keys,
    };
    let mut rebase = Rebase {
        row_id_high_water_mark: -1,
        last_commit_timestamp: None,
    };
    for (version, actions) in winners {
        let timestamp_ms = actions
            .commit_info
            .as_ref()
            .and_then(|info| info.timestamp())
            .unwrap_or(0);
        let winner = Winner {
            version: *version,
            actions,
            timestamp_ms,
        };
        check_winner(&current, &winner, &mut rebase).unwrap();
    }
    rebase
}

fn conflict_check(c: &mut Criterion) {
    let rt = runtime();
    let races: Vec<(u64, Race)> = WINNERS.iter().map(|k| (*k, race(*k, &rt))).collect();
    let losers = [Loser::BlindAppend, Loser::ReadAppend];

    let mut group = c.benchmark_group("conflict_check/commit");
    group.sample_size(20);
    for (k, race) in &races {
        let landing = race.read_version() + k + 1;
        for loser in losers {
            group.bench_function(BenchmarkId::new(loser.name(), k), |b| {
                b.iter_batched(
                    || race.losing_transaction(loser, &rt),
                    |transaction| {
                        let result = rt.block_on(transaction.commit()).unwrap();
                        assert_eq!((result.version, result.retries), (landing, 1));
                        result
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("conflict_check/rules");
    for (_, race) in &races {
        let decoded = decoded_winners(race);
        for loser in losers {
            group.bench_function(BenchmarkId::new(loser.name(), decoded.len()), |b| {
                b.iter(|| check_all(race, loser, black_box(&decoded)))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("conflict_check/decode_and_rules");
    for (_, race) in &races {
        for loser in losers {
            group.bench_function(BenchmarkId::new(loser.name(), race.winners.len()), |b| {
                b.iter(|| {
                    let decoded = decoded_winners(black_box(race));
                    check_all(race, loser, &decoded)
                })
            });
        }
    }
    group.finish();
}

/// The winners of `race`, decoded as the commit decodes them.
fn decoded_winners(race: &Race) -> Vec<(u64, DecodedActions)> {
    race.winners
        .iter()
        .enumerate()
        .map(|(n, bytes)| {
            let version = race.read_version() + 1 + n as u64;
            (version, decode(bytes, version))
        })
        .collect()
}

criterion_group!(benches, conflict_check);
criterion_main!(benches);
