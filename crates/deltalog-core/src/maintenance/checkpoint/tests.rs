use super::*;
use crate::log::list_log_from;
use crate::log::path::{CheckpointKind, LogFileKind};
use crate::table::Table;
use crate::util::test_tables::{files_under, state_of, table, table_with_history, V2};

async fn checkpoint_kinds(table: &Table) -> Vec<CheckpointKind> {
    list_log_from(table.storage(), 0)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|path| match path.kind {
            LogFileKind::Checkpoint(kind) => Some(kind),
            _ => None,
        })
        .collect()
}

/// Replays the log without the checkpoint (from commit 0) and through it; both must agree.
async fn assert_round_trip(table: &Table, dir: &tempfile::TempDir) {
    let through = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let copy = tempfile::tempdir().unwrap();
    let log = copy.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for entry in std::fs::read_dir(dir.path().join("_delta_log")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if name.ends_with(".json") && !name.contains("checkpoint") {
            std::fs::copy(entry.path(), log.join(name)).unwrap();
        }
    }
    let replayed = self::table(&copy)
        .snapshot(SnapshotAt::Latest)
        .await
        .unwrap();
    assert_eq!(state_of(&through).await, state_of(&replayed).await);
    assert_eq!(through.protocol(), replayed.protocol());
    assert_eq!(through.metadata(), replayed.metadata());
}

#[tokio::test]
async fn a_classic_checkpoint_reads_back_as_the_replayed_state() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, &[], 3).await;
    let written = table.checkpoint(None).await.unwrap();
    assert_eq!(written.kind, "classic");
    assert_eq!(written.version, 3);
    assert_eq!(written.num_add_files, 5);
    // protocol, metaData, txn, domain, 5 adds, 1 tombstone
    assert_eq!(written.num_actions, 10);
    assert_eq!(
        checkpoint_kinds(&table).await,
        vec![CheckpointKind::Classic]
    );
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(
        snapshot
            .remove_actions()
            .await
            .unwrap()
            .iter()
            .map(|r| r.len())
            .sum::<usize>(),
        1
    );
    assert_round_trip(&table, &dir).await;
    let hint_path = table.storage().log_file("_last_checkpoint");
    let hint = table.storage().read(&hint_path);
    let hint = parse_last_checkpoint(&hint.await.unwrap(), "hint").unwrap();
    assert_eq!(hint.version, 3);
    assert_eq!(hint.size, Some(10));
    assert_eq!(hint.num_of_add_files, Some(5));
    assert!(hint.checksum.is_some() && hint.checkpoint_schema.is_some());
}

#[tokio::test]
async fn stats_columns_follow_the_table_properties() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(
        &dir,
        &[
            ("delta.checkpoint.writeStatsAsJson", "false"),
            ("delta.checkpoint.writeStatsAsStruct", "true"),
        ],
        2,
    )
    .await;
    let written = table.checkpoint(None).await.unwrap();
    let path = table
        .storage()
        .log_file(&classic_checkpoint_file_name(written.version));
    let bytes = table.storage().read(&path).await.unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let add = reader.schema().field_with_name("add").unwrap().clone();
    let arrow_schema::DataType::Struct(fields) = add.data_type() else {
        panic!()
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    assert!(!names.contains(&"stats"));
    assert!(names.contains(&"stats_parsed") && names.contains(&"partitionValues_parsed"));
    // Without the JSON, statistics come from stats_parsed.
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let (_, batches) = snapshot.files(true).await.unwrap();
    let min = batches[0].column_by_name("min_values").unwrap().as_struct();
    assert_eq!(min.column(0).null_count(), 0);
    assert_round_trip(&table, &dir).await;
}

#[tokio::test]
async fn a_multi_part_checkpoint_splits_by_part_size() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, &[], 4).await;
    let options = CheckpointOptions {
        part_size: Some(4),
        row_group_rows: 2,
        ..CheckpointOptions::default()
    };
    let written = table.checkpoint_with(None, &options).await.unwrap();
    assert_eq!(written.kind, "multi-part");
    assert_eq!(written.files.len(), 3, "12 actions in parts of 4");
    assert_eq!(written.num_actions, 12);
    assert_round_trip(&table, &dir).await;
    let hint_path = table.storage().log_file("_last_checkpoint");
    let hint = table.storage().read(&hint_path);
    assert_eq!(
        parse_last_checkpoint(&hint.await.unwrap(), "h")
            .unwrap()
            .parts,
        Some(3)
    );
}

#[tokio::test]
async fn v2_checkpoints_with_sidecars_in_parquet_and_json() {
    for format in [CheckpointFormat::Parquet, CheckpointFormat::Json] {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(&dir, V2, 3).await;
        let options = CheckpointOptions {
            v2_format: Some(format),
            sidecar_actions: 4,
            row_group_rows: 3,
            ..CheckpointOptions::default()
        };
        let written = table.checkpoint_with(None, &options).await.unwrap();
        assert_eq!(written.kind, "v2");
        assert_eq!(written.sidecars.len(), 2, "6 file actions, 4 per sidecar");
        assert!(matches!(
            checkpoint_kinds(&table).await.as_slice(),
            [CheckpointKind::Uuid { format: f, .. }] if *f == format
        ));
        assert_round_trip(&table, &dir).await;
    }
}

#[tokio::test]
async fn a_v2_checkpoint_may_hold_its_file_actions() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, V2, 2).await;
    let options = CheckpointOptions {
        v2_format: Some(CheckpointFormat::Parquet),
        v2_sidecars: false,
        ..CheckpointOptions::default()
    };
    let written = table.checkpoint_with(None, &options).await.unwrap();
    assert!(written.sidecars.is_empty());
    assert_round_trip(&table, &dir).await;
}

#[tokio::test]
async fn expired_tombstones_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(
        &dir,
        &[("delta.deletedFileRetentionDuration", "interval 0 seconds")],
        2,
    )
    .await;
    let written = table.checkpoint(None).await.unwrap();
    assert_eq!(written.num_actions, 4 + 3);
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert!(snapshot
        .remove_actions()
        .await
        .unwrap()
        .iter()
        .all(|r| r.is_empty()));
}

#[tokio::test]
async fn the_hint_never_moves_back() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, &[], 3).await;
    table.checkpoint(None).await.unwrap();
    table.checkpoint(Some(1)).await.unwrap();
    let hint_path = table.storage().log_file("_last_checkpoint");
    let hint = table.storage().read(&hint_path);
    assert_eq!(
        parse_last_checkpoint(&hint.await.unwrap(), "h")
            .unwrap()
            .version,
        3
    );
    let old = table.snapshot(SnapshotAt::Version(1)).await.unwrap();
    assert_eq!(old.num_files().await.unwrap(), 2);
}

#[tokio::test]
async fn a_checkpoint_of_a_version_that_has_one_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, &[], 3).await;
    let expected = state_of(&table.snapshot(SnapshotAt::Latest).await.unwrap()).await;
    let first = table.checkpoint(None).await.unwrap();
    let again = table.checkpoint(None).await.unwrap();
    assert_eq!(first.files, again.files);
    assert_eq!(first.num_actions, again.num_actions);
    let parts = CheckpointOptions {
        part_size: Some(2),
        ..CheckpointOptions::default()
    };
    let multi = table.checkpoint_with(None, &parts).await.unwrap();
    let multi_again = table.checkpoint_with(None, &parts).await.unwrap();
    assert_eq!(multi.files, multi_again.files);
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(state_of(&snapshot).await, expected);
}

#[tokio::test]
async fn the_v2_checkpoint_feature_without_the_v2_policy_writes_classic_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, &[("delta.feature.v2Checkpoint", "supported")], 2).await;
    let options = CheckpointOptions {
        part_size: Some(2),
        ..CheckpointOptions::default()
    };
    let written = table.checkpoint_with(None, &options).await.unwrap();
    assert_eq!(
        written.kind, "classic",
        "multi-part is forbidden with v2Checkpoint"
    );
    assert_eq!(
        checkpoint_kinds(&table).await,
        vec![CheckpointKind::Classic]
    );
    assert_round_trip(&table, &dir).await;
}

#[tokio::test]
async fn the_default_v2_checkpoint_is_a_json_manifest_split_by_part_size() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_history(&dir, V2, 3).await;
    let options = CheckpointOptions {
        part_size: Some(4),
        ..CheckpointOptions::default()
    };
    let written = table.checkpoint_with(None, &options).await.unwrap();
    assert_eq!(written.sidecars.len(), 2, "6 file actions, 4 per sidecar");
    assert!(matches!(
        checkpoint_kinds(&table).await.as_slice(),
        [CheckpointKind::Uuid {
            format: CheckpointFormat::Json,
            ..
        }]
    ));
}

/// The checkpoint file the latest snapshot's segment reads.
async fn checkpoint_read(table: &Table) -> String {
    let segment = table.log_segment(None).await.unwrap();
    let checkpoint = segment.checkpoint.expect("a checkpoint");
    checkpoint.parts[0].file_name().to_string()
}

#[tokio::test]
async fn a_classic_named_copy_of_a_v2_checkpoint_serves_readers_of_classic_names() {
    let cases = [
        (CheckpointFormat::Json, true),
        (CheckpointFormat::Parquet, true),
        (CheckpointFormat::Parquet, false),
    ];
    for (format, sidecars) in cases {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(&dir, V2, 3).await;
        let expected = state_of(&table.snapshot(SnapshotAt::Latest).await.unwrap()).await;
        let options = CheckpointOptions {
            v2_format: Some(format),
            v2_sidecars: sidecars,
            sidecar_actions: 4,
            classic_compat: true,
            row_group_rows: 3,
            ..CheckpointOptions::default()
        };
        let written = table.checkpoint_with(None, &options).await.unwrap();
        assert_eq!(written.kind, "v2");
        let classic = classic_checkpoint_file_name(3);
        assert_eq!(written.files.len(), 2);
        assert!(written.files[1].ends_with(&classic));
        // Both exist: the UUID-named one is preferred, as Delta on Spark prefers it.
        let uuid_named = checkpoint_read(&table).await;
        assert!(written.files[0].ends_with(&uuid_named), "{uuid_named}");
        // The copy holds checkpointMetadata and the same sidecars (or the file actions).
        let bytes = table
            .storage()
            .read(&table.storage().log_file(&classic))
            .await
            .unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let count = |name: &str| -> usize {
            batches
                .iter()
                .map(|b| b.num_rows() - b.column_by_name(name).unwrap().null_count())
                .sum()
        };
        assert_eq!(count("checkpointMetadata"), 1);
        assert_eq!(count("sidecar"), written.sidecars.len());
        assert_eq!(count("add"), if sidecars { 0 } else { 5 });
        // Without the UUID-named manifest, the copy is read, with the same state.
        let manifest = written.files[0].rsplit('/').next().unwrap().to_string();
        std::fs::remove_file(dir.path().join("_delta_log").join(&manifest)).unwrap();
        assert_eq!(checkpoint_read(&table).await, classic);
        assert_round_trip(&table, &dir).await;
        let through = table.snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(state_of(&through).await, expected);
    }
}

/// The file name of a URL.
fn base_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

#[tokio::test]
async fn a_dry_run_writes_nothing_and_reports_what_the_write_does() {
    let v2_options = |format: Option<CheckpointFormat>, sidecars: bool| CheckpointOptions {
        v2_format: format,
        v2_sidecars: sidecars,
        sidecar_actions: 4,
        row_group_rows: 3,
        classic_compat: true,
        ..CheckpointOptions::default()
    };
    let parts = CheckpointOptions {
        part_size: Some(4),
        row_group_rows: 2,
        ..CheckpointOptions::default()
    };
    let cases: Vec<(&[(&str, &str)], CheckpointOptions)> = vec![
        (&[], CheckpointOptions::default()),
        (&[], parts),
        (V2, v2_options(None, true)),
        (V2, v2_options(Some(CheckpointFormat::Parquet), true)),
        (V2, v2_options(None, false)),
    ];
    for (configuration, options) in cases {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(&dir, configuration, 4).await;
        let before = files_under(dir.path());
        let dry = CheckpointOptions {
            dry_run: true,
            ..options.clone()
        };
        let planned = table.checkpoint_with(None, &dry).await.unwrap();
        assert_eq!(files_under(dir.path()), before, "{options:?}");
        assert!(planned.dry_run);
        assert_eq!(planned.size_in_bytes, 0);
        let written = table.checkpoint_with(None, &options).await.unwrap();
        assert!(!written.dry_run);
        assert_eq!(
            (planned.version, planned.kind, planned.num_actions),
            (written.version, written.kind, written.num_actions),
            "{options:?}"
        );
        assert_eq!(planned.num_add_files, written.num_add_files);
        assert_eq!(planned.files.len(), written.files.len());
        assert_eq!(planned.sidecars.len(), written.sidecars.len());
        if written.kind == "v2" {
            // Fresh UUIDs, the same manifest format and the same classic-named copy.
            let extension = |url: &str| base_name(url).rsplit('.').next().unwrap().to_string();
            assert_eq!(extension(&planned.files[0]), extension(&written.files[0]));
            assert_ne!(planned.files[0], written.files[0]);
            assert_eq!(planned.files[1], written.files[1]);
        } else {
            assert_eq!(planned.files, written.files);
        }
    }
}

#[test]
fn the_manifest_format_defaults_to_json_unless_without_sidecars() {
    let options = |v2_format, v2_sidecars| CheckpointOptions {
        v2_format,
        v2_sidecars,
        ..CheckpointOptions::default()
    };
    assert_eq!(
        options(None, true).manifest_format(),
        CheckpointFormat::Json
    );
    assert_eq!(
        options(None, false).manifest_format(),
        CheckpointFormat::Parquet
    );
    let json = Some(CheckpointFormat::Json);
    assert_eq!(
        options(json, false).manifest_format(),
        CheckpointFormat::Json
    );
    assert!(options(json, false).uses_sidecars());
}
