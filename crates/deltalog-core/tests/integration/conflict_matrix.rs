//! The conflict matrix (reliability notes §6.1): every pair of operation kinds, winner and
//! loser, under both settable isolation levels, touching the same partition or disjoint ones.
//! Both transactions start from the same snapshot; the winner commits; the loser's commit
//! either rebases and lands at the next version, or fails with the exact conflict kind.
//!
//! The expected cell comes from [`spark_rules`], a model of delta-io/delta's
//! `ConflictChecker.checkConflicts` written from its rules (reliability notes §1.3), not from
//! our checker: protocol, metadata, domain metadata, `txn` app ids, concurrent append (which
//! winner adds count depends on the isolation level and on the loser's downgrade to snapshot
//! isolation), delete-read, delete-delete, in that order. Where we follow the simple forms the
//! notes recommend instead of Spark, the model says so.
//!
//! The files are log entries only (conflict detection reads the log, never a data file),
//! except for `MERGE`, which is the real operation (`deltalog_core::ops::merge`) reading the
//! target's Parquet files. The loser runs as a task over a [`PhasedStore`]: it reads and
//! stages, stops just before writing `2.json`, the winner commits version 2, and the loser
//! goes on. The isolation level is the table's `delta.isolationLevel`.

use crate::support::phased_store;
use crate::support::table_ops;

use std::sync::Arc;

use deltalog_core::ops::parse_isolation_level;
use deltalog_core::{ConflictKind, Error, Storage, Table};
use phased_store::{Actor, PhasedStore, Point};
use table_ops::{create, local_storage, run, stage, Op, OPS};

/// The isolation levels a table can be set to (`delta.isolationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IsolationLevel {
    Serializable,
    WriteSerializable,
}

/// What an operation reads and writes, in the terms of Spark's conflict checker.
struct Footprint {
    protocol: bool,
    metadata: bool,
    /// The metadata domain written (one per partition the operation targets).
    domain: bool,
    /// The application id read and written.
    app: bool,
    /// Reads the target partition's files (a partition predicate).
    reads_partition: bool,
    /// Reads the whole table.
    reads_all: bool,
    /// Adds a file with `dataChange=true` in the target partition.
    adds: bool,
    /// The commit is a blind append (`commitInfo.isBlindAppend`).
    blind: bool,
    /// Removes the target partition's file(s).
    removes_partition: bool,
    /// Removes every file.
    removes_all: bool,
    /// Only `dataChange=false` file actions: the loser downgrades to snapshot isolation.
    no_data_change: bool,
}

fn footprint(op: Op) -> Footprint {
    let none = Footprint {
        protocol: false,
        metadata: false,
        domain: false,
        app: false,
        reads_partition: false,
        reads_all: false,
        adds: false,
        blind: false,
        removes_partition: false,
        removes_all: false,
        no_data_change: false,
    };
    match op {
        Op::BlindAppend => Footprint {
            adds: true,
            blind: true,
            ..none
        },
        Op::ReadAppend => Footprint {
            reads_partition: true,
            adds: true,
            ..none
        },
        // MERGE as Delta on Spark's ClassicMergeExecutor runs it: it reads the files its
        // target-only predicates select (`filterFiles(getTargetOnlyPredicates)`: here the
        // partition predicate `p = '<part>'`, recorded with the files it selects), removes
        // the files holding matched rows (re-added with a deletion vector) and adds the
        // updated and inserted rows; not a blind append.
        Op::ReplaceWhere | Op::DvDelete | Op::Update | Op::Merge => Footprint {
            reads_partition: true,
            adds: true,
            removes_partition: true,
            ..none
        },
        Op::FullOverwrite => Footprint {
            reads_all: true,
            adds: true,
            removes_all: true,
            ..none
        },
        Op::Delete => Footprint {
            reads_partition: true,
            removes_partition: true,
            ..none
        },
        Op::Compaction => Footprint {
            reads_partition: true,
            removes_partition: true,
            no_data_change: true,
            ..none
        },
        Op::MetadataChange => Footprint {
            metadata: true,
            ..none
        },
        Op::ProtocolUpgrade => Footprint {
            protocol: true,
            ..none
        },
        Op::AppTxn => Footprint { app: true, ..none },
        Op::DomainMetadata => Footprint {
            domain: true,
            ..none
        },
    }
}

/// Spark's verdict for loser `c` after winner `w` (`None`: the loser rebases and commits).
fn spark_rules(w: Op, c: Op, level: IsolationLevel, same: bool) -> Option<ConflictKind> {
    let (wf, cf) = (footprint(w), footprint(c));
    // #1 protocol. Spark lets a loser without a protocol action adopt a compatible winning
    // protocol; we follow the simple form (any winning protocol change conflicts), as Kernel
    // Java does.
    if wf.protocol {
        return Some(ConflictKind::ProtocolChanged);
    }
    // #2 metadata: a winning change of a user property is not on Spark's allow-list.
    if wf.metadata {
        return Some(ConflictKind::MetadataChanged);
    }
    // #3 domains, #4 app ids: the same name in both.
    if (wf.domain && cf.domain || wf.app && cf.app) && same {
        return Some(ConflictKind::ConcurrentTransaction);
    }
    // #8 concurrent append. A loser of only dataChange=false actions is checked under
    // snapshot isolation (no append check); under WriteSerializable a blind append's files
    // count only when the loser changes metadata.
    let counted_adds = match level {
        _ if cf.no_data_change => false,
        IsolationLevel::WriteSerializable if wf.blind && !cf.metadata => false,
        _ => wf.adds,
    };
    let read_overlaps_adds = cf.reads_all || cf.reads_partition && same;
    if counted_adds && read_overlaps_adds {
        return Some(ConflictKind::ConcurrentAppend);
    }
    // #9 delete-read: a winning remove of a file the loser read, or any remove when the
    // loser read the whole table.
    let w_removes_any = wf.removes_all || wf.removes_partition;
    let w_removes_read = match (wf.removes_all, cf.reads_all, cf.reads_partition) {
        (_, true, _) => w_removes_any,
        (true, _, true) => true,
        (false, _, true) => wf.removes_partition && same,
        _ => false,
    };
    if w_removes_read {
        return Some(ConflictKind::ConcurrentDeleteRead);
    }
    // #10 delete-delete: unreachable here, every remover also read what it removes.
    None
}

/// A table at version 1 (see `table_ops`) with `delta.isolationLevel` = `level`.
async fn table(dir: &tempfile::TempDir, level: IsolationLevel) -> Table {
    let level = format!("{level:?}");
    let properties = [("delta.isolationLevel", level.as_str())];
    create(dir.path(), local_storage(dir.path()), &properties).await
}

/// The table in `dir` through a [`PhasedStore`] of its own, and the store's reports.
fn phased_table(
    dir: &tempfile::TempDir,
) -> (
    Table,
    tokio::sync::mpsc::UnboundedReceiver<(Point, tokio::sync::oneshot::Sender<()>)>,
) {
    let url = url::Url::from_directory_path(dir.path()).unwrap();
    let (inner, root) = object_store::parse_url(&url).unwrap();
    let (store, reports) = PhasedStore::new(Arc::from(inner));
    let table = Table::from_storage(Storage::with_store(Arc::new(store), url, root));
    (table, reports)
}

/// Runs one cell; returns the loser's conflict kind, or `None` when it committed right after
/// the winner.
async fn cell(w: Op, c: Op, level: IsolationLevel, same: bool) -> Option<ConflictKind> {
    let dir = tempfile::tempdir().unwrap();
    let table = table(&dir, level).await;
    let loser_part = if same { "a" } else { "b" };
    let (loser_table, reports) = phased_table(&dir);
    let mut loser = Actor::spawn("loser", reports, async move {
        run(&loser_table, c, loser_part, "c2").await
    });
    loser.until(Point::BeforeWrite(2)).await;
    assert_eq!(run(&table, w, "a", "w1").await.unwrap(), (2, 0));
    match loser.finish().await.0 {
        Ok(committed) => {
            assert_eq!(committed, (3, 1), "{w:?} then {c:?}");
            None
        }
        Err(Error::CommitConflict { kind, .. }) => Some(kind),
        Err(other) => panic!("{w:?} then {c:?}: not a conflict: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pair_of_operations_meets_spark_s_conflict_rules() {
    use futures::StreamExt;
    let mut pairs = Vec::new();
    for level in [
        IsolationLevel::Serializable,
        IsolationLevel::WriteSerializable,
    ] {
        for same in [true, false] {
            for w in OPS {
                for c in OPS {
                    pairs.push((w, c, level, same));
                }
            }
        }
    }
    let cells = pairs.len();
    let expected_kinds: std::collections::HashSet<Option<ConflictKind>> = pairs
        .iter()
        .map(|(w, c, level, same)| spark_rules(*w, *c, *level, *same))
        .collect();
    // Cells are independent tables: four at a time.
    let wrong: Vec<String> = futures::stream::iter(pairs)
        .map(|(w, c, level, same)| async move {
            let expected = spark_rules(w, c, level, same);
            let actual = cell(w, c, level, same).await;
            (expected != actual).then(|| {
                format!(
                    "{w:?} then {c:?} ({level:?}, same partition: {same}): \
                     expected {expected:?}, got {actual:?}"
                )
            })
        })
        .buffer_unordered(4)
        .filter_map(|wrong| async move { wrong })
        .collect()
        .await;
    assert_eq!(cells, 676);
    for kind in [
        None,
        Some(ConflictKind::ProtocolChanged),
        Some(ConflictKind::MetadataChanged),
        Some(ConflictKind::ConcurrentTransaction),
        Some(ConflictKind::ConcurrentAppend),
        Some(ConflictKind::ConcurrentDeleteRead),
    ] {
        assert!(expected_kinds.contains(&kind), "no cell expects {kind:?}");
    }
    assert!(
        wrong.is_empty(),
        "{} wrong cells:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Three transactions from one snapshot, committed in order: a blind append to `p=a`, a
/// delete of `p=b`, then `third` aimed at `third_part`. Returns the third's outcome.
async fn three_way(
    third: Op,
    third_part: &str,
    level: IsolationLevel,
) -> Result<u64, ConflictKind> {
    let dir = tempfile::tempdir().unwrap();
    let table = table(&dir, level).await;
    let mut first = table.transaction("FIRST").await.unwrap();
    let mut second = table.transaction("SECOND").await.unwrap();
    let mut last = table
        .transaction("THIRD")
        .await
        .unwrap()
        .with_isolation_level(parse_isolation_level(&format!("{level:?}")).unwrap());
    stage(&mut first, Op::BlindAppend, "a", "t1").await;
    stage(&mut second, Op::Delete, "b", "t2").await;
    stage(&mut last, third, third_part, "t3").await;
    assert_eq!(first.commit().await.unwrap().version, 2);
    let second = second.commit().await.unwrap();
    assert_eq!((second.version, second.retries), (3, 1));
    match last.commit().await {
        Ok(result) => Ok(result.version),
        Err(Error::CommitConflict { kind, .. }) => Err(kind),
        Err(other) => panic!("{third:?}: not a conflict: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_transaction_is_checked_against_both_winners_in_order() {
    use IsolationLevel::*;
    // Over a blind append and a delete of the other partition: rebased twice.
    assert_eq!(
        three_way(Op::ReadAppend, "a", WriteSerializable).await,
        Ok(4)
    );
    // Serializable counts the blind append's file against the read of p=a.
    assert_eq!(
        three_way(Op::ReadAppend, "a", Serializable).await,
        Err(ConflictKind::ConcurrentAppend)
    );
    // The first winner is harmless, the second removed the file read.
    assert_eq!(
        three_way(Op::Update, "b", WriteSerializable).await,
        Err(ConflictKind::ConcurrentDeleteRead)
    );
    // A compaction of p=a: the blind append's new file is not among the files it rewrites.
    assert_eq!(three_way(Op::Compaction, "a", Serializable).await, Ok(4));
    // A whole-table overwrite read every file: the delete conflicts under either level.
    assert_eq!(
        three_way(Op::FullOverwrite, "a", WriteSerializable).await,
        Err(ConflictKind::ConcurrentDeleteRead)
    );
}
