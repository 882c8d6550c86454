//! Fault injection (reliability notes §6.3): writes to a local table through a store that
//! fails, loses answers, lists stale and cuts bodies off at every point a commit goes through,
//! with many seeds. After every run the table opens (through a store without faults) and holds
//! exactly the rows of the acknowledged writes, each once; a write whose outcome was unknown is
//! there at most once; a write that failed any other way is not there at all.
//!
//! Each logical write carries an application version (`txn` action, spec "Set Transaction
//! Identifiers") and is retried by the test as an application would: the retry of a write
//! that landed finds its version there and commits nothing. Inside one transaction, a commit
//! whose answer was lost is recognised by its `commitInfo.txnId` when read back.
//!
//! `DELTALOG_FAULT_SEEDS` sets the seeds per point (default 16).

use crate::support::faulty_store;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use deltalog_core::ops::write_table;
use deltalog_core::write::WriteFailure;
use deltalog_core::{
    CommitResult, Error, Scan, ScanOptions, SnapshotAt, Storage, Table, WriteTableOptions,
};
use faulty_store::{Fault, FaultyStore, Point, Schedule};
use object_store::path::Path;
use object_store::ObjectStore;

const APP: &str = "faults";
const WRITES: i64 = 7;
const ATTEMPTS: usize = 4;

fn seeds() -> u64 {
    std::env::var("DELTALOG_FAULT_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

/// What became of one logical write after all its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// An attempt returned success (committed now, or found committed by an earlier one).
    Acknowledged,
    /// Every attempt failed, one of them with an unknown outcome.
    Unknown,
    /// Every attempt failed, each before anything could land.
    Failed,
}

/// A local table reached through a [`FaultyStore`].
struct Run {
    dir: tempfile::TempDir,
    store: FaultyStore,
    table: Table,
}

impl Run {
    async fn new(schedule: Schedule) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let url = url::Url::from_directory_path(dir.path()).unwrap();
        let (inner, root) = object_store::parse_url(&url).unwrap();
        let store = FaultyStore::new(Arc::from(inner), schedule);
        store.set_enabled(false);
        let shared: Arc<dyn ObjectStore> = Arc::new(store.clone());
        let table = Table::from_storage(Storage::with_store(shared, url, root));
        let created = write(&table, &[-1], None, created_options()).await;
        assert!(created.unwrap().committed);
        store.set_enabled(true);
        Run { dir, store, table }
    }

    /// Every log file written more than three days ago, so that checkpoints let log cleanup
    /// delete the commits before them.
    fn age_the_log(&self) {
        let old = SystemTime::now() - Duration::from_secs(3 * 24 * 3600);
        for entry in std::fs::read_dir(self.dir.path().join("_delta_log")).unwrap() {
            let path = entry.unwrap().path();
            // A racing writer may delete a file meanwhile (a temporary file, or a commit its
            // log cleanup expired).
            if !path.is_file() {
                continue;
            }
            match std::fs::File::options().write(true).open(&path) {
                Ok(file) => file.set_modified(old).unwrap(),
                Err(error) => {
                    assert_eq!(
                        error.kind(),
                        std::io::ErrorKind::NotFound,
                        "{path:?}: {error}"
                    )
                }
            }
        }
    }

    /// Writes `id` as version `id` of application `app`, retrying as an application would.
    async fn write_id(&self, app: &str, id: i64) -> Outcome {
        let mut unknown = false;
        for _ in 0..ATTEMPTS {
            self.age_the_log();
            let options = WriteTableOptions {
                app_version: Some((app.into(), id)),
                ..WriteTableOptions::default()
            };
            match write(&self.table, &[id], None, options).await {
                Ok(_) => return Outcome::Acknowledged,
                Err(failure) => {
                    unknown |= matches!(failure.error, Error::CommitStateUnknown { .. });
                }
            }
        }
        match unknown {
            true => Outcome::Unknown,
            false => Outcome::Failed,
        }
    }

    async fn write_all(&self) -> BTreeMap<i64, Outcome> {
        let mut outcomes = BTreeMap::new();
        for id in 0..WRITES {
            outcomes.insert(id, self.write_id(APP, id).await);
        }
        outcomes
    }

    /// Checks the table, read through a store without faults, against `outcomes`.
    async fn check(&self, outcomes: &BTreeMap<i64, Outcome>, context: &str) {
        self.store.set_enabled(false);
        let clean = Table::open(self.dir.path().to_str().unwrap(), &HashMap::new())
            .await
            .unwrap();
        let snapshot = clean
            .snapshot(SnapshotAt::Latest)
            .await
            .unwrap_or_else(|e| panic!("{context}: the table does not open: {e}"));
        let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
        let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
        for batch in scan.to_batches().await.unwrap() {
            let ids = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            for id in ids.iter().flatten() {
                *counts.entry(id).or_default() += 1;
            }
        }
        assert_eq!(counts.remove(&-1), Some(1), "{context}: the first row");
        for (id, outcome) in outcomes {
            let copies = counts.remove(id).unwrap_or(0);
            let allowed = match outcome {
                Outcome::Acknowledged => copies == 1,
                Outcome::Unknown => copies <= 1,
                Outcome::Failed => copies == 0,
            };
            assert!(
                allowed,
                "{context}: write {id} ({outcome:?}) is in the table {copies} times; faults: {:?}",
                self.store.injected()
            );
        }
        assert!(
            counts.is_empty(),
            "{context}: rows nobody wrote: {counts:?}"
        );
        check_log(self.dir.path(), &clean, snapshot.version()).await;
    }
}

/// Every commit file from the oldest kept to `latest` is there and decodes, and every
/// `commitInfo.txnId` among them is distinct.
async fn check_log(dir: &std::path::Path, table: &Table, latest: u64) {
    let mut versions = Vec::new();
    for entry in std::fs::read_dir(dir.join("_delta_log")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.len() == 25 && name.ends_with(".json") {
            versions.push(name[..20].parse::<u64>().unwrap());
        }
    }
    versions.sort_unstable();
    let oldest = versions[0];
    assert_eq!(
        versions,
        (oldest..=latest).collect::<Vec<_>>(),
        "versions have a gap"
    );
    let mut txn_ids = std::collections::HashSet::new();
    for version in oldest..=latest {
        let path = table.storage().log_file(&format!("{version:020}.json"));
        let bytes = table.storage().read(&path).await.unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        for line in text.lines() {
            let action: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{version}.json has a partial line: {e}"));
            if let Some(id) = action.pointer("/commitInfo/txnId").and_then(|v| v.as_str()) {
                assert!(txn_ids.insert(id.to_string()), "txnId {id} committed twice");
            }
        }
    }
}

fn created_options() -> WriteTableOptions {
    let configuration = [
        ("delta.checkpointInterval", "3"),
        ("delta.logRetentionDuration", "interval 1 days"),
    ];
    WriteTableOptions {
        configuration: configuration
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..WriteTableOptions::default()
    }
}

async fn write(
    table: &Table,
    ids: &[i64],
    _partition: Option<&str>,
    options: WriteTableOptions,
) -> Result<CommitResult, WriteFailure> {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(ids.to_vec())) as Arc<dyn Array>],
    )
    .unwrap();
    let stream = futures::stream::iter(vec![Ok(batch)]);
    write_table(table.storage(), schema, stream, options).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// One seeded run with faults at `points`; returns how many faults were injected.
async fn seeded_run(seed: u64, points: &[Point], per_mille: u64, budget: usize) -> usize {
    let run = Run::new(Schedule::new(seed, points, per_mille, budget)).await;
    let outcomes = run.write_all().await;
    run.check(&outcomes, &format!("seed {seed} at {points:?}"))
        .await;
    run.store.injected().len()
}

#[test]
fn every_point_with_many_seeds_keeps_the_table_equal_to_its_oracle() {
    runtime().block_on(async {
        let mut never = Vec::new();
        for point in Point::ALL {
            let mut injected = 0;
            for seed in 0..seeds() {
                injected += seeded_run(seed, &[point], 350, 4).await;
            }
            if injected == 0 {
                never.push(point);
            }
        }
        assert!(never.is_empty(), "no fault was injected at {never:?}");
    });
}

#[test]
fn two_writers_racing_through_faults_keep_the_table_equal_to_its_oracle() {
    runtime().block_on(async {
        for seed in 0..seeds() {
            let run = Run::new(Schedule::new(2000 + seed, &Point::ALL, 80, 8)).await;
            let writer = |app: &'static str, offset: i64| {
                let run = &run;
                async move {
                    let mut outcomes = BTreeMap::new();
                    for id in offset..offset + WRITES {
                        outcomes.insert(id, run.write_id(app, id).await);
                    }
                    outcomes
                }
            };
            let (mut first, second) = tokio::join!(writer("one", 0), writer("two", 100));
            first.extend(second);
            run.check(&first, &format!("racing, seed {seed}")).await;
        }
    });
}

#[test]
fn faults_at_every_point_at_once_keep_the_table_equal_to_its_oracle() {
    runtime().block_on(async {
        for seed in 0..seeds() * 2 {
            seeded_run(1000 + seed, &Point::ALL, 60, 8).await;
        }
    });
}

#[test]
fn faults_after_the_commit_landed_never_fail_the_write() {
    let post_commit: Vec<Point> = Point::ALL
        .into_iter()
        .filter(|p| p.is_post_commit())
        .collect();
    runtime().block_on(async {
        for seed in 0..seeds() {
            let run = Run::new(Schedule::new(seed, &post_commit, 500, 100)).await;
            let outcomes = run.write_all().await;
            assert!(
                outcomes.values().all(|o| *o == Outcome::Acknowledged),
                "seed {seed}: {outcomes:?}; faults {:?}",
                run.store.injected()
            );
            assert!(!run.store.injected().is_empty());
            run.check(&outcomes, &format!("seed {seed}")).await;
        }
    });
}

/// One write through a scripted schedule, then the table checked: the write is acknowledged
/// and in the table once.
async fn scripted_write_is_acknowledged_once(script: &[(Point, Fault)]) -> CommitResult {
    let run = Run::new(Schedule::scripted(script)).await;
    let options = WriteTableOptions::default();
    let commit = write(&run.table, &[0], None, options).await.unwrap();
    assert!(run.store.script_done(), "{script:?} not all injected");
    let outcomes = BTreeMap::from([(0, Outcome::Acknowledged)]);
    run.check(&outcomes, &format!("{script:?}")).await;
    commit
}

#[test]
fn a_commit_whose_answer_was_lost_is_recognised_by_its_txn_id() {
    runtime().block_on(async {
        let commit =
            scripted_write_is_acknowledged_once(&[(Point::PutCommit, Fault::LostResponse)]).await;
        assert_eq!((commit.version, commit.retries), (1, 0));
    });
}

#[test]
fn a_commit_answered_already_exists_after_landing_is_recognised_as_ours() {
    runtime().block_on(async {
        let commit =
            scripted_write_is_acknowledged_once(&[(Point::PutCommit, Fault::LandedButExists)])
                .await;
        assert_eq!(commit.version, 1);
    });
}

#[test]
fn a_phantom_conflict_with_nothing_written_retries_the_same_version() {
    runtime().block_on(async {
        let commit =
            scripted_write_is_acknowledged_once(&[(Point::PutCommit, Fault::PhantomExists)]).await;
        assert_eq!((commit.version, commit.retries), (1, 1));
    });
}

#[test]
fn a_put_failing_before_the_store_retries_the_same_version() {
    runtime().block_on(async {
        let commit =
            scripted_write_is_acknowledged_once(&[(Point::PutCommit, Fault::FailBefore)]).await;
        assert_eq!((commit.version, commit.retries), (1, 1));
    });
}

#[test]
fn a_stale_listing_never_overwrites_the_newest_commit() {
    runtime().block_on(async {
        let run = Run::new(Schedule::scripted(&[(Point::ListLog, Fault::StaleListing)])).await;
        let commit = write(&run.table, &[0], None, WriteTableOptions::default())
            .await
            .unwrap();
        assert!(run.store.script_done());
        assert_eq!(commit.version, 1);
        let outcomes = BTreeMap::from([(0, Outcome::Acknowledged)]);
        run.check(&outcomes, "stale listing").await;
    });
}

#[test]
fn a_commit_that_cannot_be_read_back_is_unknown_and_its_retry_commits_nothing() {
    runtime().block_on(async {
        let script = [
            (Point::PutCommit, Fault::LostResponse),
            (Point::ReadCommit, Fault::FailBefore),
        ];
        let run = Run::new(Schedule::scripted(&script)).await;
        let options = || WriteTableOptions {
            app_version: Some((APP.into(), 0)),
            ..WriteTableOptions::default()
        };
        let failure = write(&run.table, &[0], None, options()).await.unwrap_err();
        assert!(
            matches!(failure.error, Error::CommitStateUnknown { version: 1, .. }),
            "{}",
            failure.error
        );
        assert!(run.store.script_done());
        let retry = write(&run.table, &[0], None, options()).await.unwrap();
        assert!(
            !retry.committed,
            "the retry found application version 0 committed"
        );
        let outcomes = BTreeMap::from([(0, Outcome::Acknowledged)]);
        run.check(&outcomes, "unknown then retried").await;
    });
}

#[test]
fn a_partial_body_or_failed_read_before_the_commit_leaves_the_table_unchanged() {
    runtime().block_on(async {
        for script in [
            [(Point::ReadCrc, Fault::PartialBody)],
            [(Point::ReadCrc, Fault::FailBefore)],
            [(Point::ListLog, Fault::FailBefore)],
            [(Point::WriteData, Fault::LostResponse)],
        ] {
            let run = Run::new(Schedule::scripted(&script)).await;
            let options = WriteTableOptions {
                app_version: Some((APP.into(), 0)),
                ..WriteTableOptions::default()
            };
            let result = write(&run.table, &[0], None, options).await;
            assert!(run.store.script_done(), "{script:?}");
            let outcome = match result {
                Ok(_) => Outcome::Acknowledged,
                Err(failure) => {
                    assert!(
                        matches!(failure.error, Error::Storage { .. }),
                        "{script:?}: {}",
                        failure.error
                    );
                    Outcome::Failed
                }
            };
            let outcomes = BTreeMap::from([(0, outcome)]);
            run.check(&outcomes, &format!("{script:?}")).await;
        }
    });
}

#[test]
fn the_fault_points_are_told_apart_by_object_name() {
    let log = |name: &str| Path::from(format!("t/_delta_log/{name}"));
    let cases = [
        (log("00000000000000000003.json"), true, Point::PutCommit),
        (log("00000000000000000003.json"), false, Point::ReadCommit),
        (
            log("00000000000000000003.checkpoint.parquet"),
            true,
            Point::WriteCheckpoint,
        ),
        (log("_last_checkpoint"), true, Point::WriteLastCheckpoint),
        (log("00000000000000000003.crc"), false, Point::ReadCrc),
        (Path::from("t/part-0.parquet"), true, Point::WriteData),
    ];
    for (path, writing, point) in cases {
        assert_eq!(faulty_store::classify(&path, writing), point, "{path}");
    }
}
