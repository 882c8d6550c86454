//! VACUUM, OPTIMIZE, RESTORE and CONVERT TO DELTA on real tables in temporary directories,
//! read back with our own scan.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::stream;

use crate::error::Error;
use crate::ops::*;
use crate::scan::{Scan, ScanOptions};
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::table::Table;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("part", DataType::Utf8, true),
    ]))
}

fn rows(ids: std::ops::Range<i64>, part: &str) -> RecordBatch {
    let n = ids.clone().count();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(ids)),
        Arc::new(StringArray::from(vec![part; n])),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

async fn write(table: &Table, batch: RecordBatch, mode: WriteMode, partitioned: bool) -> u64 {
    let options = WriteTableOptions {
        mode,
        partition_by: partitioned.then(|| vec!["part".to_string()]),
        ..WriteTableOptions::default()
    };
    let batches = stream::iter([Ok(batch)]);
    write_table(table.storage(), schema(), batches, options)
        .await
        .unwrap()
        .version
}

fn open(dir: &std::path::Path) -> Table {
    let storage = crate::storage::Storage::open(dir.to_str().unwrap(), &HashMap::new()).unwrap();
    Table::from_storage(storage)
}

async fn ids(snapshot: &Snapshot) -> Vec<i64> {
    let batches = Scan::new(snapshot, ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
            column.iter().flatten().collect::<Vec<_>>()
        })
        .collect();
    ids.sort_unstable();
    ids
}

async fn ids_at(table: &Table, version: u64) -> Vec<i64> {
    ids(&table.snapshot(SnapshotAt::Version(version)).await.unwrap()).await
}

async fn latest(table: &Table) -> Snapshot {
    table.snapshot(SnapshotAt::Latest).await.unwrap()
}

fn age(path: &std::path::Path, days: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    let when = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
    file.set_modified(when).unwrap();
}

fn data_files(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() && name != "_delta_log" {
                stack.push(path);
            } else if name.ends_with(".parquet") {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

async fn operations(table: &Table) -> Vec<String> {
    let history = table.history(None).await.unwrap();
    let column = history
        .column_by_name("operation")
        .unwrap()
        .as_string::<i32>();
    column.iter().map(|o| o.unwrap_or("").to_string()).collect()
}

#[tokio::test]
async fn vacuum_deletes_only_unreferenced_files_older_than_the_retention() {
    let dir = tempfile::tempdir().unwrap();
    let table = open(dir.path());
    write(&table, rows(0..10, "a"), WriteMode::Append, true).await;
    write(&table, rows(10..20, "b"), WriteMode::Append, true).await;
    let before_overwrite = data_files(dir.path());
    let v2 = write(&table, rows(20..30, "a"), WriteMode::Overwrite, true).await;
    std::fs::write(dir.path().join("stray.parquet"), b"x").unwrap();
    std::fs::create_dir_all(dir.path().join("_staging")).unwrap();
    std::fs::write(dir.path().join("_staging/hidden.parquet"), b"x").unwrap();
    std::fs::write(dir.path().join("part=a/.hidden.crc"), b"x").unwrap();
    for file in before_overwrite
        .iter()
        .chain(&["stray.parquet".to_string()])
    {
        age(&dir.path().join(file), 30);
    }
    age(&dir.path().join("_staging/hidden.parquet"), 30);

    // The table's retention (7 days) keeps the tombstones of the overwrite (made now).
    let kept = vacuum(table.storage(), VacuumOptions::default())
        .await
        .unwrap();
    assert_eq!(kept.files, vec!["stray.parquet"]);
    assert!(
        dir.path().join("stray.parquet").exists(),
        "a dry run deletes nothing"
    );
    let done = vacuum(
        table.storage(),
        VacuumOptions {
            dry_run: false,
            ..VacuumOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!((done.num_deleted, done.files.len()), (1, 1));
    assert!(!dir.path().join("stray.parquet").exists());
    assert_eq!(ids_at(&table, 0).await, (0..10).collect::<Vec<_>>());
    assert_eq!(
        &operations(&table).await[..2],
        &["VACUUM END".to_string(), "VACUUM START".to_string()]
    );

    let short = VacuumOptions {
        retention_hours: Some(0.0),
        dry_run: false,
        enforce_retention_duration: true,
    };
    assert!(matches!(
        vacuum(table.storage(), short).await,
        Err(Error::NotAllowed(_))
    ));
    let unchecked = VacuumOptions {
        enforce_retention_duration: false,
        ..short
    };
    let purged = vacuum(table.storage(), unchecked).await.unwrap();
    assert_eq!(purged.files, before_overwrite);
    assert_eq!(ids_at(&table, v2).await, (20..30).collect::<Vec<_>>());
    assert_eq!(
        ids(&latest(&table).await).await,
        (20..30).collect::<Vec<_>>()
    );
    assert!(dir.path().join("_staging/hidden.parquet").exists());
    assert!(dir.path().join("part=a/.hidden.crc").exists());
}

#[tokio::test]
async fn vacuum_keeps_deletion_vector_files_and_never_leaves_the_root() {
    let Some(golden) = crate::schema::tests::golden_table("dv-partitioned-with-checkpoint") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&golden.join("delta"), dir.path());
    let table = open(dir.path());
    let expected = ids_by_value(&latest(&table).await).await;
    let outcome = vacuum(
        table.storage(),
        VacuumOptions {
            retention_hours: Some(0.0),
            dry_run: false,
            enforce_retention_duration: false,
        },
    )
    .await
    .unwrap();
    let live_dvs = crate::scan::deletion_vectors(&latest(&table).await)
        .await
        .unwrap();
    assert!(
        live_dvs.num_rows() > 0,
        "the live deletion vectors are still there"
    );
    assert!(!outcome.files.is_empty());
    assert_eq!(ids_by_value(&latest(&table).await).await, expected);
}

/// Every file under `dir` (the log and the data), with its bytes.
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    crate::util::test_tables::files_under(dir)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Every row of the snapshot as text, sorted (for tables of any schema).
async fn ids_by_value(snapshot: &Snapshot) -> Vec<String> {
    let batches = Scan::new(snapshot, ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let text: Vec<String> = batch
                .columns()
                .iter()
                .map(|c| arrow::util::display::array_value_to_string(c, row).unwrap())
                .collect();
            rows.push(text.join("|"));
        }
    }
    rows.sort();
    rows
}

#[tokio::test]
async fn optimize_compacts_each_partition_and_keeps_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let table = open(dir.path());
    for i in 0..4 {
        write(
            &table,
            rows(i * 10..i * 10 + 10, "a"),
            WriteMode::Append,
            true,
        )
        .await;
        write(
            &table,
            rows(100 + i * 10..110 + i * 10, "b"),
            WriteMode::Append,
            true,
        )
        .await;
    }
    let before = latest(&table).await;
    assert_eq!(before.num_files().await.unwrap(), 8);
    let on_disk = files_under(dir.path());
    let dry_run = OptimizeOptions {
        dry_run: true,
        ..OptimizeOptions::default()
    };
    let planned = optimize(table.storage(), dry_run).await.unwrap();
    assert_eq!(
        files_under(dir.path()),
        on_disk,
        "a dry run changes nothing"
    );
    let mut listed: Vec<String> = data_files(dir.path());
    let mut to_rewrite = planned.files_to_rewrite.clone();
    listed.sort();
    to_rewrite.sort();
    assert_eq!(to_rewrite, listed, "every file, by the paths the log names");
    let metrics = optimize(table.storage(), OptimizeOptions::default())
        .await
        .unwrap();
    assert_eq!(planned.version, None);
    assert_eq!(
        OptimizeResult {
            version: metrics.version,
            num_files_added: metrics.num_files_added,
            files_added: metrics.files_added.clone(),
            files_to_rewrite: Vec::new(),
            ..planned
        },
        metrics,
        "the removal side of the dry run is the real run's"
    );
    assert_eq!(
        (planned.num_files_added, planned.files_added.total_files),
        (0, 0)
    );
    assert_eq!((metrics.num_files_removed, metrics.num_files_added), (8, 2));
    assert_eq!(metrics.partitions_optimized, 2);
    let after = latest(&table).await;
    assert_eq!(after.num_files().await.unwrap(), 2);
    assert_eq!(ids(&after).await, ids(&before).await);
    assert_eq!(operations(&table).await[0], "OPTIMIZE");
    let again = optimize(table.storage(), OptimizeOptions::default())
        .await
        .unwrap();
    assert_eq!(again.version, None, "nothing left to compact");

    write(&table, rows(500..510, "a"), WriteMode::Append, true).await;
    write(&table, rows(510..520, "b"), WriteMode::Append, true).await;
    let only_a = OptimizeOptions {
        filter: Some(crate::expr::parse_sql("part = 'a'").unwrap()),
        z_order_by: vec!["id".into()],
        ..OptimizeOptions::default()
    };
    let metrics = optimize(table.storage(), only_a).await.unwrap();
    assert_eq!(metrics.num_files_removed, 2);
    assert_eq!(latest(&table).await.num_files().await.unwrap(), 3);
    let bad = OptimizeOptions {
        filter: Some(crate::expr::parse_sql("id = 1").unwrap()),
        ..OptimizeOptions::default()
    };
    assert!(matches!(
        optimize(table.storage(), bad).await,
        Err(Error::InvalidArgument(_))
    ));
    // As Spark (DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS): no Z-order by a column without
    // statistics.
    let no_stats = std::collections::BTreeMap::from([(
        "delta.dataSkippingNumIndexedCols".to_string(),
        "0".to_string(),
    )]);
    alter_table(table.storage(), Alteration::SetProperties(no_stats))
        .await
        .unwrap();
    let by_id = OptimizeOptions {
        z_order_by: vec!["id".into()],
        ..OptimizeOptions::default()
    };
    match optimize(table.storage(), by_id).await {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("no statistics")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn optimize_purges_deletion_vectors() {
    let Some(golden) = crate::schema::tests::golden_table("dv-partitioned-with-checkpoint") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&golden.join("delta"), dir.path());
    let table = open(dir.path());
    let before = latest(&table).await;
    let expected = ids_by_value(&before).await;
    let dry_run = OptimizeOptions {
        dry_run: true,
        ..OptimizeOptions::default()
    };
    let planned = optimize(table.storage(), dry_run).await.unwrap();
    let metrics = optimize(table.storage(), OptimizeOptions::default())
        .await
        .unwrap();
    assert!(metrics.num_deletion_vectors_removed > 0);
    assert_eq!(
        (
            planned.num_deletion_vectors_removed,
            planned.num_deletion_vector_rows_removed,
            planned.num_files_removed,
            planned.num_batches,
        ),
        (
            metrics.num_deletion_vectors_removed,
            metrics.num_deletion_vector_rows_removed,
            metrics.num_files_removed,
            metrics.num_batches,
        )
    );
    let after = latest(&table).await;
    let (_, files) = after.files(false).await.unwrap();
    let with_dv: usize = files
        .iter()
        .map(|f| f.num_rows() - f.column_by_name("deletion_vector").unwrap().null_count())
        .sum();
    assert_eq!(with_dv, 0);
    assert_eq!(ids_by_value(&after).await, expected);
}

#[tokio::test]
async fn an_append_racing_optimize_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let table = open(dir.path());
    for i in 0..3 {
        write(
            &table,
            rows(i * 10..i * 10 + 10, "a"),
            WriteMode::Append,
            false,
        )
        .await;
    }
    let snapshot = latest(&table).await;
    let options = OptimizeOptions::default();
    // An append lands between the optimize's read and its commit: the commit retries on top.
    let target = DEFAULT_OPTIMIZE_FILE_SIZE;
    let files =
        crate::ops::commands::optimize::tests_support::candidates(&snapshot, &options, target)
            .await;
    write(&table, rows(1000..1010, "a"), WriteMode::Append, false).await;
    let version =
        crate::ops::commands::optimize::tests_support::finish(&snapshot, &options, files, target)
            .await;
    let after = table.snapshot(SnapshotAt::Version(version)).await.unwrap();
    let mut expected: Vec<i64> = (0..30).collect();
    expected.extend(1000..1010);
    assert_eq!(ids(&after).await, expected);
    assert_eq!(after.num_files().await.unwrap(), 2);
}

#[tokio::test]
async fn restore_brings_back_an_old_version_and_refuses_vacuumed_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = open(dir.path());
    write(&table, rows(0..10, "a"), WriteMode::Append, false).await;
    write(&table, rows(10..20, "a"), WriteMode::Append, false).await;
    let before_overwrite = data_files(dir.path());
    write(&table, rows(20..30, "a"), WriteMode::Overwrite, false).await;
    let overwrite_files: Vec<String> = data_files(dir.path())
        .into_iter()
        .filter(|f| !before_overwrite.contains(f))
        .collect();
    assert_eq!(overwrite_files.len(), 1);
    let before = files_under(dir.path());
    let dry_run = RestoreOptions { dry_run: true };
    let planned = restore_with(table.storage(), SnapshotAt::Version(1), &dry_run)
        .await
        .unwrap();
    assert_eq!(files_under(dir.path()), before, "a dry run changes nothing");
    assert_eq!(planned.version, None);
    let metrics = restore(table.storage(), SnapshotAt::Version(1))
        .await
        .unwrap();
    assert_eq!(metrics.version, Some(3));
    assert_eq!(
        RestoreResult {
            version: None,
            ..metrics.clone()
        },
        planned
    );
    assert_eq!(
        (metrics.num_restored_files, metrics.num_removed_files),
        (2, 1)
    );
    assert_eq!(metrics.num_of_files_after_restore, 2);
    assert_eq!(
        ids(&latest(&table).await).await,
        (0..20).collect::<Vec<_>>()
    );
    assert_eq!(operations(&table).await[0], "RESTORE");
    let committed = metrics.version.unwrap();
    let again = restore(table.storage(), SnapshotAt::Version(committed))
        .await
        .unwrap();
    assert_eq!((again.version, again.num_restored_files), (None, 0));
    assert_eq!(latest(&table).await.version(), committed);
    assert!(matches!(
        restore(table.storage(), SnapshotAt::Version(committed + 1)).await,
        Err(Error::InvalidArgument(_))
    ));

    let purge = VacuumOptions {
        retention_hours: Some(0.0),
        dry_run: false,
        enforce_retention_duration: false,
    };
    let purged = vacuum(table.storage(), purge).await.unwrap();
    assert_eq!(purged.files, overwrite_files);
    match restore(table.storage(), SnapshotAt::Version(2)).await {
        Err(Error::MissingDataFiles { version, paths, .. }) => {
            assert_eq!(version, 2);
            assert_eq!(paths.len(), 1);
        }
        other => panic!("expected MissingDataFiles, got {other:?}"),
    }
    assert!(matches!(
        restore_with(table.storage(), SnapshotAt::Version(2), &dry_run).await,
        Err(Error::MissingDataFiles { .. })
    ));
}

#[tokio::test]
async fn convert_turns_parquet_directories_into_a_table() {
    let dir = tempfile::tempdir().unwrap();
    for (part, range) in [("x", 0..5), ("y", 5..12)] {
        let folder = dir.path().join(format!("part={part}"));
        std::fs::create_dir_all(&folder).unwrap();
        let data_schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            data_schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(range)) as ArrayRef],
        )
        .unwrap();
        let file = std::fs::File::create(folder.join("data-0.parquet")).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, data_schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }
    std::fs::write(dir.path().join("_SUCCESS"), b"").unwrap();
    let table = open(dir.path());
    let partition = crate::schema::parse_schema(
        r#"{"type":"struct","fields":[{"name":"part","type":"string","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let converted = convert_to_delta(table.storage(), Some(partition.clone()))
        .await
        .unwrap();
    assert_eq!((converted.version, converted.num_files), (0, 2));
    let snapshot = latest(&table).await;
    assert_eq!(snapshot.partition_columns(), &["part".to_string()]);
    assert_eq!(ids(&snapshot).await, (0..12).collect::<Vec<_>>());
    assert_eq!(operations(&table).await[0], "CONVERT");
    let (_, files) = snapshot.files(true).await.unwrap();
    let records = files[0].column_by_name("num_records").unwrap();
    assert_eq!(records.null_count(), 0);
    let again = convert_to_delta(table.storage(), Some(partition))
        .await
        .unwrap();
    assert!(!again.converted);

    let other = tempfile::tempdir().unwrap();
    copy_dir(&dir.path().join("part=x"), &other.path().join("n=abc"));
    let typed = crate::schema::parse_schema(
        r#"{"type":"struct","fields":[{"name":"n","type":"integer","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let refused = convert_to_delta(open(other.path()).storage(), Some(typed)).await;
    assert!(
        matches!(refused, Err(Error::InvalidArgument(_))),
        "{refused:?}"
    );
    assert!(!other.path().join("_delta_log").exists());
}

#[tokio::test]
async fn restore_is_refused_when_a_deletion_vector_file_was_vacuumed() {
    use crate::expr::parse_sql;
    use crate::ops::dml::delete::{delete, DeleteOptions};
    use crate::ops::dml::test_tables::{ids_batch, table_of};

    let dir = tempfile::tempdir().unwrap();
    let table = table_of(
        dir.path(),
        ids_batch(0..10),
        &[("delta.enableDeletionVectors", "true")],
    )
    .await;
    for predicate in ["id < 3", "id < 5"] {
        let predicate = parse_sql(predicate).unwrap();
        delete(table.storage(), Some(predicate), DeleteOptions::default())
            .await
            .unwrap();
    }
    let purge = VacuumOptions {
        retention_hours: Some(0.0),
        dry_run: false,
        enforce_retention_duration: false,
    };
    vacuum(table.storage(), purge).await.unwrap();
    let before = latest(&table).await.version();
    // Version 1's data file is still there; its deletion vector file is not (seed 1002).
    match restore(table.storage(), SnapshotAt::Version(1)).await {
        Err(Error::MissingDataFiles { version, paths, .. }) => {
            assert_eq!(version, 1);
            assert_eq!(paths.len(), 1);
            assert!(paths[0].contains("deletion_vector_"), "{paths:?}");
        }
        other => panic!("expected MissingDataFiles, got {other:?}"),
    }
    assert_eq!(latest(&table).await.version(), before);
}

#[tokio::test]
async fn restore_never_re_adds_a_deletion_vector_file_without_its_row_count() {
    use crate::expr::parse_sql;
    use crate::ops::dml::delete::{delete, DeleteOptions};
    use crate::ops::dml::test_tables::{ids_batch, table_of};

    let dir = tempfile::tempdir().unwrap();
    let properties = [
        ("delta.enableDeletionVectors", "true"),
        ("delta.checkpoint.writeStatsAsJson", "false"),
        ("delta.checkpoint.writeStatsAsStruct", "false"),
    ];
    let table = table_of(dir.path(), ids_batch(0..10), &properties).await;
    let predicate = parse_sql("id < 3").unwrap();
    delete(table.storage(), Some(predicate), DeleteOptions::default())
        .await
        .unwrap();
    table.checkpoint(None).await.unwrap();
    std::fs::remove_file(dir.path().join("_delta_log/00000000000000000000.json")).unwrap();
    std::fs::remove_file(dir.path().join("_delta_log/00000000000000000001.json")).unwrap();
    // The checkpoint kept no statistics: a RESTORE re-adding version 1's file with its
    // deletion vector would add it without numRecords (seed 1243); Delta on Spark refuses.
    delete(
        table.storage(),
        Some(parse_sql("id = 5").unwrap()),
        DeleteOptions::default(),
    )
    .await
    .unwrap();
    let refused = restore(table.storage(), SnapshotAt::Version(1))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::NotAllowed(m) if m.contains("numRecords")),
        "{refused:?}"
    );
    assert_eq!(latest(&table).await.version(), 2);
}
