use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use futures::executor::block_on;
use futures::future::BoxFuture;

use super::*;
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::DecodedActions;
use crate::log::path::commit_file_name;
use crate::schema::{PrimitiveType, StructField};
use crate::storage::Storage;
use crate::table::Table;

fn schema() -> StructType {
    StructType::new(vec![
        StructField::new("a", PrimitiveType::Long, true),
        StructField::new("p", PrimitiveType::String, true),
    ])
}

fn table(dir: &tempfile::TempDir) -> Table {
    Table::from_storage(Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap())
}

async fn created(dir: &tempfile::TempDir, configuration: &[(&str, &str)]) -> Table {
    let table = table(dir);
    let spec = TableSpec {
        schema: schema(),
        partition_columns: vec!["p".into()],
        configuration: configuration
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..TableSpec::default()
    };
    let result = table.create(spec).await.unwrap();
    assert_eq!(result.version, 0);
    table
}

fn file(name: &str, partition: &str, rows: i64) -> AddFile {
    AddFile {
        path: format!("p={partition}/{name}.parquet"),
        partition_values: vec![("p".into(), Some(partition.into()))],
        size: 100,
        modification_time: 1,
        data_change: true,
        stats: Some(format!("{{\"numRecords\":{rows}}}")),
        ..AddFile::default()
    }
}

async fn append(table: &Table, files: &[AddFile]) -> CommitResult {
    let mut tx = table.transaction("WRITE").await.unwrap();
    tx.add(files).unwrap();
    tx.commit().await.unwrap()
}

async fn decoded(table: &Table, version: u64) -> DecodedActions {
    let path = table.storage().log_file(&commit_file_name(version));
    let bytes = table.storage().read(&path).await.unwrap();
    let options = DecodeOptions {
        from_checkpoint: false,
        stats: StatsText::Decoded,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    decode_actions(&bytes, version, "test", options).unwrap()
}

fn kind(error: &Error) -> ConflictKind {
    match error {
        Error::CommitConflict { kind, .. } => *kind,
        other => panic!("not a conflict: {other}"),
    }
}

fn column(actions: &DecodedActions, name: &str) -> Vec<Option<i64>> {
    let adds = &actions.file_actions[0].adds;
    let values = adds
        .column_by_name(name)
        .unwrap()
        .as_primitive::<Int64Type>();
    (0..adds.len())
        .filter(|row| adds.is_valid(*row))
        .map(|row| values.is_valid(row).then(|| values.value(row)))
        .collect()
}

#[tokio::test]
async fn create_and_append_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    let first = decoded(&table, 0).await;
    let protocol = first.protocol.unwrap();
    assert_eq!(
        (protocol.min_reader_version, protocol.min_writer_version),
        (1, 2)
    );
    assert_eq!(first.metadata.unwrap().partition_columns, ["p"]);
    let result = append(&table, &[file("a", "x y", 3), file("b", "z", 2)]).await;
    assert_eq!(
        (result.version, result.retries, result.metrics["numFiles"]),
        (1, 0, 2)
    );
    let snapshot = result.snapshot.unwrap();
    assert_eq!(
        (snapshot.version(), snapshot.num_files().await.unwrap()),
        (1, 2)
    );
    let info = snapshot.commit_info().unwrap();
    assert_eq!(info.operation(), Some("WRITE"));
    assert_eq!(info.txn_id(), result.txn_id.as_deref());
    assert_eq!(info.raw["engineInfo"], ENGINE_INFO);
    assert_eq!(info.raw["isBlindAppend"], true);
    assert_eq!(info.raw["isolationLevel"], "WriteSerializable");
    assert_eq!(info.raw["operationMetrics"]["numOutputRows"], "5");
    let (_, files) = snapshot.files(false).await.unwrap();
    let paths = files[0].column_by_name("path").unwrap().as_string::<i32>();
    let mut paths: Vec<&str> = paths.iter().flatten().collect();
    paths.sort();
    assert_eq!(paths, ["p=x y/a.parquet", "p=z/b.parquet"]);
    let reopened = Table::open(table.uri(), &HashMap::new()).await.unwrap();
    let latest = reopened.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(latest.num_files().await.unwrap(), 2);
}

#[tokio::test]
async fn blind_appends_do_not_build_the_file_list() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[file("a", "x", 1)]).await;
    let mut tx = table.append_transaction("WRITE").await.unwrap();
    assert_eq!(tx.read_version(), Some(1));
    assert_eq!(tx.app_version("app"), None);
    tx.set_app_version("app", 1).unwrap();
    tx.add(&[file("b", "x", 1)]).unwrap();
    assert!(!tx.read_snapshot().unwrap().files_replayed());
    let result = tx.commit().await.unwrap();
    assert_eq!(result.version, 2);
    assert!(result.snapshot.is_none());
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(snapshot.num_files().await.unwrap(), 2);
    assert_eq!(snapshot.transaction_version("app"), Some(1));
    let mut again = table.append_transaction("WRITE").await.unwrap();
    assert_eq!(again.app_version("app"), Some(1));
    assert!(again.set_app_version("app", 1).is_err());
}

/// Writes through the file-system committer, then reports a transport error or a lost race:
/// the answer to a put that landed was lost.
#[derive(Debug)]
struct LostAnswer {
    as_error: bool,
}

impl Committer for LostAnswer {
    fn commit<'a>(
        &'a self,
        storage: &'a Storage,
        version: u64,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<CommitOutcome>> {
        Box::pin(async move {
            let outcome = FileSystemCommitter.commit(storage, version, bytes).await?;
            assert_eq!(outcome, CommitOutcome::Committed);
            match self.as_error {
                true => Err(Error::storage(
                    "x",
                    object_store::Error::Generic {
                        store: "test",
                        source: "connection reset".into(),
                    },
                )),
                false => Ok(CommitOutcome::VersionExists),
            }
        })
    }
}

/// Fails, leaving a commit file that does not decode (a torn write by a foreign writer).
#[derive(Debug)]
struct Unreadable;

impl Committer for Unreadable {
    fn commit<'a>(
        &'a self,
        storage: &'a Storage,
        version: u64,
        _: Bytes,
    ) -> BoxFuture<'a, Result<CommitOutcome>> {
        Box::pin(async move {
            let path = storage.log_file(&commit_file_name(version));
            storage.put(&path, Bytes::from("{\"commitInfo\":{")).await?;
            Err(Error::storage(
                "x",
                object_store::Error::Generic {
                    store: "test",
                    source: "timeout".into(),
                },
            ))
        })
    }
}

#[tokio::test]
async fn a_commit_whose_answer_was_lost_is_recognised_as_ours() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    for (as_error, version) in [(true, 1), (false, 2)] {
        let options = CommitOptions {
            committer: Arc::new(LostAnswer { as_error }),
            ..CommitOptions::default()
        };
        let mut tx = table
            .transaction("WRITE")
            .await
            .unwrap()
            .with_commit_options(options);
        tx.add(&[file(&format!("f{version}"), "x", 1)]).unwrap();
        let result = tx.commit().await.unwrap();
        assert_eq!(result.version, version);
        let info = decoded(&table, version).await.commit_info.unwrap();
        assert_eq!(info.txn_id(), result.txn_id.as_deref());
    }
    assert_eq!(table.latest_version().await.unwrap(), 2);
    let options = CommitOptions {
        committer: Arc::new(Unreadable),
        ..CommitOptions::default()
    };
    let mut tx = table
        .transaction("WRITE")
        .await
        .unwrap()
        .with_commit_options(options);
    tx.add(&[file("g", "x", 1)]).unwrap();
    let error = tx.commit().await.unwrap_err();
    assert!(
        matches!(error, Error::CommitStateUnknown { version: 3, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn concurrent_append_depends_on_the_isolation_level() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    let read_x = Expr::column("p").compare(crate::expr::CompareOp::Eq, Expr::literal("x"));
    for (level, winner_reads, partition, expected) in [
        (
            IsolationLevel::Serializable,
            false,
            "x",
            Some(ConflictKind::ConcurrentAppend),
        ),
        (IsolationLevel::WriteSerializable, false, "x", None),
        (
            IsolationLevel::WriteSerializable,
            true,
            "x",
            Some(ConflictKind::ConcurrentAppend),
        ),
        (IsolationLevel::Serializable, false, "y", None),
    ] {
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let mut loser = snapshot.transaction("UPDATE").with_isolation_level(level);
        loser.record_read_predicate(read_x.clone());
        loser
            .add(&[file(&format!("l{}", snapshot.version()), "x", 1)])
            .unwrap();
        let mut winner = snapshot.transaction("WRITE");
        if winner_reads {
            winner.record_read_whole_table();
        }
        winner
            .add(&[file(&format!("w{}", snapshot.version()), partition, 1)])
            .unwrap();
        let won = winner.commit().await.unwrap();
        match (loser.commit().await, expected) {
            (Ok(result), None) => {
                assert_eq!((result.version, result.retries), (won.version + 1, 1))
            }
            (Err(error), Some(expected)) => {
                assert_eq!(kind(&error), expected, "{error}");
                assert!(
                    matches!(error, Error::CommitConflict { version, .. } if version == won.version)
                );
            }
            (outcome, expected) => panic!("{level:?}: {outcome:?}, expected {expected:?}"),
        }
    }
}

#[tokio::test]
async fn conflict_matrix_of_the_other_rules() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[file("a", "x", 1), file("b", "x", 1)]).await;
    type Stage = fn(&mut Transaction);
    let cases: Vec<(&str, Stage, Stage, ConflictKind)> = vec![
        (
            "delete-read",
            |w| {
                block_on(w.remove_paths(&["p=x/a.parquet"], true)).unwrap();
            },
            |l| {
                l.record_read_files(["p=x/a.parquet"]);
                l.add(&[file("c", "y", 1)]).unwrap();
            },
            ConflictKind::ConcurrentDeleteRead,
        ),
        (
            "delete-delete",
            |w| {
                block_on(w.remove_paths(&["p=x/a.parquet"], true)).unwrap();
            },
            |l| {
                let snapshot = l.read.snapshot.clone().unwrap();
                l.remove_files(&block_on(snapshot.add_actions()).unwrap()[0], false)
                    .unwrap();
            },
            ConflictKind::ConcurrentDeleteDelete,
        ),
        (
            "metadata",
            |w| {
                let update = MetadataUpdate {
                    description: Some("changed".into()),
                    ..MetadataUpdate::default()
                };
                w.update_metadata(update).unwrap();
            },
            |l| l.add(&[file("c", "y", 1)]).unwrap(),
            ConflictKind::MetadataChanged,
        ),
        (
            "protocol",
            |w| {
                let protocol = Protocol {
                    min_reader_version: 1,
                    min_writer_version: 3,
                    reader_features: None,
                    writer_features: None,
                };
                w.update_protocol(protocol).unwrap();
            },
            |l| l.add(&[file("c", "y", 1)]).unwrap(),
            ConflictKind::ProtocolChanged,
        ),
        (
            "app ids",
            |w| w.set_app_version("app", 7).unwrap(),
            |l| {
                l.set_app_version("app", 7).unwrap();
                l.add(&[file("c", "y", 1)]).unwrap();
            },
            ConflictKind::ConcurrentTransaction,
        ),
    ];
    for (name, winner_stage, loser_stage, expected) in cases {
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let mut winner = snapshot.transaction("WINNER");
        winner_stage(&mut winner);
        let mut loser = snapshot.transaction("LOSER");
        loser_stage(&mut loser);
        let won = winner.commit().await.unwrap();
        let error = loser.commit().await.unwrap_err();
        assert_eq!(kind(&error), expected, "{name}: {error}");
        assert!(
            matches!(error, Error::CommitConflict { version, .. } if version == won.version),
            "{name}"
        );
        let latest = table.latest_version().await.unwrap();
        assert_eq!(latest, won.version, "{name}: the loser committed nothing");
        append(&table, &[file(&format!("refill{latest}"), "x", 1)]).await;
        if name.starts_with("delete") {
            let mut tx = table.transaction("WRITE").await.unwrap();
            tx.add(&[file("a", "x", 1)]).unwrap();
            tx.commit().await.unwrap();
        }
    }
}

#[tokio::test]
async fn domain_metadata_conflicts_per_domain() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[("delta.feature.domainMetadata", "supported")]).await;
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let protocol = snapshot.protocol();
    assert_eq!(protocol.min_writer_version, 7);
    let mut winner = snapshot.transaction("W");
    winner
        .set_domain_metadata("app.one", Some("{}".into()))
        .unwrap();
    let mut other = snapshot.transaction("O");
    other
        .set_domain_metadata("app.two", Some("{}".into()))
        .unwrap();
    let mut loser = snapshot.transaction("L");
    loser
        .set_domain_metadata("app.one", Some("{\"x\":1}".into()))
        .unwrap();
    assert!(loser
        .set_domain_metadata("delta.rowTracking", None)
        .is_err());
    winner.commit().await.unwrap();
    assert_eq!(other.commit().await.unwrap().version, 2);
    let error = loser.commit().await.unwrap_err();
    assert_eq!(kind(&error), ConflictKind::ConcurrentTransaction, "{error}");
    let latest = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(latest.domain_metadata("app.one"), Some("{}"));
}

#[tokio::test]
async fn row_ids_are_rebased_on_the_winners_high_water_mark() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[("delta.enableRowTracking", "true")]).await;
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert!(snapshot.table_configuration().is_row_tracking_enabled());
    let mut winner = snapshot.transaction("WRITE");
    winner
        .add(&[file("w1", "x", 10), file("w2", "x", 5)])
        .unwrap();
    let mut loser = snapshot.transaction("WRITE");
    loser.add(&[file("l1", "x", 4)]).unwrap();
    assert_eq!(winner.commit().await.unwrap().version, 1);
    let result = loser.commit().await.unwrap();
    assert_eq!((result.version, result.retries), (2, 1));
    let won = decoded(&table, 1).await;
    assert_eq!(column(&won, add::BASE_ROW_ID), [Some(0), Some(10)]);
    assert_eq!(
        column(&won, add::DEFAULT_ROW_COMMIT_VERSION),
        [Some(1), Some(1)]
    );
    let rebased = decoded(&table, 2).await;
    assert_eq!(column(&rebased, add::BASE_ROW_ID), [Some(15)]);
    assert_eq!(column(&rebased, add::DEFAULT_ROW_COMMIT_VERSION), [Some(2)]);
    let domain = rebased
        .domains
        .iter()
        .find(|d| d.domain == ROW_TRACKING_DOMAIN)
        .unwrap();
    assert_eq!(domain.configuration, r#"{"rowIdHighWaterMark":18}"#);
    let mut no_stats = table.transaction("WRITE").await.unwrap();
    let mut bare = file("n", "x", 1);
    bare.stats = None;
    no_stats.add(&[bare]).unwrap();
    assert!(matches!(
        no_stats.commit().await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn in_commit_timestamps_follow_the_winner() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[("delta.enableInCommitTimestamps", "true")]).await;
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let created_ict = decoded(&table, 0)
        .await
        .commit_info
        .unwrap()
        .in_commit_timestamp();
    assert!(created_ict.is_some());
    let mut loser = snapshot.transaction("WRITE");
    loser.add(&[file("l", "x", 1)]).unwrap();
    let future = now_ms() + 3_600_000;
    let winner = format!(
        "{{\"commitInfo\":{{\"inCommitTimestamp\":{future},\"timestamp\":1,\"operation\":\"WRITE\",\"isBlindAppend\":true}}}}\n"
    );
    let path = table.storage().log_file(&commit_file_name(1));
    assert!(table
        .storage()
        .put_if_absent(&path, Bytes::from(winner))
        .await
        .unwrap());
    let result = loser.commit().await.unwrap();
    assert_eq!(result.version, 2);
    let ict = decoded(&table, 2)
        .await
        .commit_info
        .unwrap()
        .in_commit_timestamp();
    assert_eq!(ict, Some(future + 1));
    assert_eq!(result.snapshot.unwrap().timestamp_ms(), future + 1);
}

#[tokio::test]
async fn enabling_in_commit_timestamps_records_the_enablement() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    let mut tx = table.transaction("SET TBLPROPERTIES").await.unwrap();
    let update = MetadataUpdate {
        configuration: vec![("delta.enableInCommitTimestamps".into(), Some("true".into()))],
        ..MetadataUpdate::default()
    };
    tx.update_metadata(update).unwrap();
    let result = tx.commit().await.unwrap();
    let commit = decoded(&table, 1).await;
    let protocol = commit.protocol.unwrap();
    assert_eq!(
        protocol.writer_features.unwrap(),
        ["appendOnly", "invariants", "inCommitTimestamp"]
    );
    let configuration = commit.metadata.unwrap().configuration;
    let ict = commit.commit_info.unwrap().in_commit_timestamp().unwrap();
    assert_eq!(configuration[IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION], "1");
    assert_eq!(
        configuration[IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP],
        ict.to_string()
    );
    assert_eq!(result.snapshot.unwrap().timestamp_ms(), ict);
}

#[tokio::test]
async fn append_only_tables_refuse_data_removes() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[("delta.appendOnly", "true")]).await;
    append(&table, &[file("a", "x", 1)]).await;
    let mut tx = table.transaction("DELETE").await.unwrap();
    tx.remove_paths(&["p=x/a.parquet"], true).await.unwrap();
    assert!(matches!(tx.commit().await, Err(Error::NotAllowed(_))));
    let mut compaction = table.transaction("OPTIMIZE").await.unwrap();
    compaction
        .remove_paths(&["p=x/a.parquet"], false)
        .await
        .unwrap();
    let mut merged = file("merged", "x", 1);
    merged.data_change = false;
    compaction.add(&[merged]).unwrap();
    assert_eq!(compaction.commit().await.unwrap().version, 2);
}

#[tokio::test]
async fn unknown_writer_features_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let table = table(&dir);
    let metadata = spec_metadata(&TableSpec {
        schema: schema(),
        ..TableSpec::default()
    })
    .unwrap();
    let protocol = Protocol {
        min_reader_version: 1,
        min_writer_version: 7,
        reader_features: None,
        writer_features: Some(vec!["futureThing".into()]),
    };
    let text = format!(
        "{}\n{}\n",
        encode::protocol_line(&protocol),
        encode::metadata_line(&metadata)
    );
    let path = table.storage().log_file(&commit_file_name(0));
    table.storage().put(&path, Bytes::from(text)).await.unwrap();
    let mut tx = table.transaction("WRITE").await.unwrap();
    tx.add(&[file("a", "x", 1)]).unwrap();
    let error = tx.commit().await.unwrap_err();
    assert!(
        matches!(&error, Error::UnsupportedFeature { feature, kind: crate::ProtocolKind::Writer, .. } if feature == "futureThing"),
        "{error}"
    );
    assert_eq!(table.latest_version().await.unwrap(), 0);
}

#[tokio::test]
async fn reconciliation_rules_are_checked_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[file("a", "x", 1)]).await;
    let mut twice = table.transaction("WRITE").await.unwrap();
    twice.add(&[file("b", "x", 1), file("b", "x", 1)]).unwrap();
    assert!(matches!(
        twice.commit().await,
        Err(Error::InvalidArgument(_))
    ));
    let mut both = table.transaction("WRITE").await.unwrap();
    both.remove_paths(&["p=x/a.parquet"], true).await.unwrap();
    both.add(&[file("a", "x", 1)]).unwrap();
    assert!(matches!(
        both.commit().await,
        Err(Error::InvalidArgument(_))
    ));
    let mut missing = table.transaction("DELETE").await.unwrap();
    assert!(missing
        .remove_paths(&["p=x/nope.parquet"], true)
        .await
        .is_err());
    assert_eq!(table.latest_version().await.unwrap(), 1);
}

#[tokio::test]
async fn remove_where_records_the_read_predicate() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[file("a", "x", 1), file("b", "y", 1)]).await;
    let read_x = Expr::column("p").compare(crate::expr::CompareOp::Eq, Expr::literal("x"));
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let mut overwrite = snapshot.transaction("WRITE");
    assert_eq!(
        overwrite.remove_where(Some(&read_x), true).await.unwrap(),
        1
    );
    overwrite.add(&[file("a2", "x", 1)]).unwrap();
    let data_filter = Expr::column("a").compare(crate::expr::CompareOp::Eq, Expr::literal(1i64));
    assert!(snapshot
        .transaction("DELETE")
        .remove_where(Some(&data_filter), true)
        .await
        .is_err());
    let mut winner = snapshot
        .transaction("WRITE")
        .with_isolation_level(IsolationLevel::Serializable);
    winner.add(&[file("c", "x", 1)]).unwrap();
    winner.commit().await.unwrap();
    let error = overwrite
        .with_isolation_level(IsolationLevel::Serializable)
        .commit()
        .await
        .unwrap_err();
    assert_eq!(kind(&error), ConflictKind::ConcurrentAppend, "{error}");
}

/// A read-then-append: reads `filter` (every row when `None`), appends one file to `p=z`.
async fn read_then_append(
    snapshot: &Snapshot,
    filter: Option<&Expr>,
    level: IsolationLevel,
) -> Transaction {
    let mut tx = snapshot.transaction("WRITE").with_isolation_level(level);
    tx.record_read(filter).await.unwrap();
    tx.add(&[file(&uuid::Uuid::new_v4().to_string(), "z", 1)])
        .unwrap();
    tx
}

#[tokio::test]
async fn recorded_reads_conflict_as_the_isolation_level_says() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[file("a", "x", 1), file("b", "y", 1)]).await;
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let read_x = Expr::column("p").compare(crate::expr::CompareOp::Eq, Expr::literal("x"));
    let serializable = IsolationLevel::Serializable;
    let whole = read_then_append(&snapshot, None, serializable).await;
    let partition_x = read_then_append(&snapshot, Some(&read_x), serializable).await;
    let write_serializable =
        read_then_append(&snapshot, None, IsolationLevel::WriteSerializable).await;
    append(&table, &[file("c", "y", 1)]).await;
    let error = whole.commit().await.unwrap_err();
    assert_eq!(kind(&error), ConflictKind::ConcurrentAppend, "{error}");
    assert_eq!(write_serializable.commit().await.unwrap().version, 3);
    assert_eq!(partition_x.commit().await.unwrap().version, 4);

    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let mut reads_x = snapshot.transaction("WRITE");
    assert_eq!(reads_x.record_read(Some(&read_x)).await.unwrap(), 1);
    let mut delete_x = snapshot.transaction("DELETE");
    delete_x.remove_where(Some(&read_x), true).await.unwrap();
    delete_x.commit().await.unwrap();
    let error = reads_x.commit().await.unwrap_err();
    assert_eq!(kind(&error), ConflictKind::ConcurrentDeleteRead, "{error}");
    // A transaction on a lazy snapshot replays the file list to record a read.
    let mut lazy = table.append_transaction("WRITE").await.unwrap();
    assert!(!lazy.read_snapshot().unwrap().files_replayed());
    let live = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let expected = live.num_files().await.unwrap();
    assert_eq!(lazy.record_read(None).await.unwrap(), expected);
    assert!(lazy.read_snapshot().unwrap().files_replayed());
}

#[tokio::test]
async fn concurrent_creators_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TableSpec {
        schema: schema(),
        ..TableSpec::default()
    };
    let first = table(&dir).create_transaction(spec.clone()).await.unwrap();
    let second = table(&dir).create_transaction(spec.clone()).await.unwrap();
    assert_eq!(first.commit().await.unwrap().version, 0);
    let error = second.commit().await.unwrap_err();
    assert_eq!(kind(&error), ConflictKind::ProtocolChanged, "{error}");
    assert!(
        error.to_string().contains("created the table concurrently"),
        "{error}"
    );
    assert!(matches!(
        table(&dir).create(spec).await,
        Err(Error::NotAllowed(_))
    ));
}

#[test]
fn writers_racing_in_threads_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let table = runtime.block_on(created(&dir, &[("delta.enableRowTracking", "true")]));
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let uri = table.uri().to_string();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let table = Table::open(&uri, &HashMap::new()).await.unwrap();
                    for round in 0..5 {
                        let mut tx = table.append_transaction("WRITE").await.unwrap();
                        tx.add(&[file(&format!("w{writer}-{round}"), "x", 3)])
                            .unwrap();
                        tx.commit().await.unwrap();
                    }
                })
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    runtime.block_on(async {
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(
            (snapshot.version(), snapshot.num_files().await.unwrap()),
            (20, 20)
        );
        let mut bases = Vec::new();
        for version in 1..=20 {
            bases.extend(column(&decoded(&table, version).await, add::BASE_ROW_ID));
        }
        bases.sort();
        let expected: Vec<Option<i64>> = (0..20).map(|i| Some(i * 3)).collect();
        assert_eq!(bases, expected, "row ids are unique and dense");
        let racing = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let mut handles = Vec::new();
        for _ in 0..2 {
            let snapshot = racing.clone();
            handles.push(tokio::spawn(async move {
                let mut tx = snapshot.transaction("DELETE");
                tx.remove_paths(&["p=x/w0-0.parquet"], true).await.unwrap();
                tx.commit().await
            }));
        }
        let mut outcomes = Vec::new();
        for handle in handles {
            outcomes.push(handle.await.unwrap());
        }
        let committed = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(committed, 1, "{outcomes:?}");
        let failed = outcomes.into_iter().find_map(|o| o.err()).unwrap();
        assert_eq!(
            kind(&failed),
            ConflictKind::ConcurrentDeleteRead,
            "{failed}"
        );
    });
}

/// Issue 23: add rows with children beyond the add layout (a checkpoint's
/// `partitionValues_parsed`) are staged in the layout; rows missing a field of it are our
/// broken invariant, an [`Error::Internal`] naming the table, never an invalid argument.
#[tokio::test]
async fn added_rows_are_staged_in_the_add_layout_or_refused_as_internal() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    let rows = encode::add_rows(&[file("a", "x", 1)]).unwrap();
    let (fields, mut columns, nulls) = rows.clone().into_parts();
    let mut wider: Vec<Arc<arrow_schema::Field>> = fields.iter().cloned().collect();
    wider.push(Arc::new(arrow_schema::Field::new(
        "partitionValues_parsed",
        arrow_schema::DataType::Int64,
        true,
    )));
    columns.push(Arc::new(Int64Array::from(vec![1])));
    let wider = StructArray::try_new(wider.into(), columns, nulls).unwrap();

    let mut tx = table.transaction("WRITE").await.unwrap();
    tx.add_files(wider).unwrap();
    assert_eq!(tx.commit().await.unwrap().version, 1);

    let (fields, columns, nulls) = rows.into_parts();
    let narrower = StructArray::try_new(
        fields.iter().skip(1).cloned().collect::<Vec<_>>().into(),
        columns[1..].to_vec(),
        nulls,
    )
    .unwrap();
    let mut tx = table.transaction("WRITE").await.unwrap();
    let error = tx.add_files(narrower).unwrap_err();
    assert!(
        matches!(&error, Error::Internal { table: Some(uri), .. } if uri == table.uri()),
        "{error}"
    );
    assert!(error.to_string().contains("a bug in deltalog"), "{error}");
}
