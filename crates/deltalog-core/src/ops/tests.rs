//! `write_table` and `create_table` on a local table, read back with our own scan.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use crate::error::Error;
use crate::expr::parse_sql;
use crate::ops::*;
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::table::Table;
use crate::transaction::CommitResult;

fn batch(ids: &[i64], parts: &[&str]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("p", DataType::Utf8, true),
    ]));
    let columns = vec![
        Arc::new(Int64Array::from(ids.to_vec())) as _,
        Arc::new(StringArray::from(parts.to_vec())) as _,
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

async fn write(table: &Table, data: RecordBatch, options: WriteTableOptions) -> CommitResult {
    let stream = futures::stream::iter(vec![Ok(data.clone())]);
    write_table(table.storage(), data.schema(), stream, options)
        .await
        .unwrap()
}

#[tokio::test]
async fn writes_create_append_overwrite_and_skip_committed_app_versions() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    let table = Table::from_storage(storage);
    let partitioned = WriteTableOptions {
        partition_by: Some(vec!["p".into()]),
        app_version: Some(("job".into(), 1)),
        ..WriteTableOptions::default()
    };
    let created = write(&table, batch(&[1, 2], &["a", "b"]), partitioned.clone()).await;
    assert_eq!((created.version, created.metrics["numFiles"]), (0, 2));
    let skipped = write(&table, batch(&[1, 2], &["a", "b"]), partitioned).await;
    assert!(!skipped.committed);
    let overwrite = WriteTableOptions {
        mode: WriteMode::Overwrite,
        predicate: Some(parse_sql("p = 'a'").unwrap()),
        ..WriteTableOptions::default()
    };
    let replaced = write(&table, batch(&[3], &["a"]), overwrite.clone()).await;
    assert_eq!(replaced.metrics["numRemovedFiles"], 1);
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(
        (snapshot.version(), snapshot.num_files().await.unwrap()),
        (1, 2)
    );

    let data = batch(&[4], &["b"]);
    let stream = futures::stream::iter(vec![Ok(data.clone())]);
    let refused = write_table(table.storage(), data.schema(), stream, overwrite)
        .await
        .unwrap_err();
    assert!(matches!(refused.error, Error::ReplaceWhereMismatch { .. }));
    let exists = create_table(
        table.storage(),
        CreateTable::default(),
        CreateMode::ErrorIfExists,
    )
    .await;
    assert!(matches!(exists, Err(Error::NotAllowed(_))));
    assert_eq!(table.latest_version().await.unwrap(), 1);
}

/// Issue 23: the add rows of a snapshot read from a checkpoint with `partitionValues_parsed`
/// carry that extra child; re-adding such a file with a deletion vector kept it and the
/// commit was refused. Deletes, updates and restores of such a table must work.
#[tokio::test]
async fn row_level_changes_work_on_a_partitioned_deletion_vector_table_read_from_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    let table = Table::from_storage(storage);
    let options = WriteTableOptions {
        partition_by: Some(vec!["p".into()]),
        configuration: HashMap::from([(
            "delta.enableDeletionVectors".to_string(),
            "true".to_string(),
        )]),
        ..WriteTableOptions::default()
    };
    write(&table, batch(&[1, 2, 3, 4], &["a", "b", "a", "b"]), options).await;
    table.checkpoint(None).await.unwrap();

    let deleted = delete(
        table.storage(),
        Some(parse_sql("id = 1").unwrap()),
        DeleteOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(deleted.metrics["numDeletionVectorsAdded"], 1);
    table.checkpoint(None).await.unwrap();
    let set = vec![(
        "id".to_string(),
        crate::expr::parse_value_sql("id + 10").unwrap(),
    )];
    let updated = update(
        table.storage(),
        set,
        Some(parse_sql("id = 2").unwrap()),
        UpdateOptions::default(),
    )
    .await
    .unwrap();
    assert!(updated.committed);
    restore(table.storage(), SnapshotAt::Version(0))
        .await
        .unwrap();

    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(snapshot.version(), 3);
    let scan = crate::scan::Scan::new(&snapshot, crate::scan::ScanOptions::default())
        .await
        .unwrap();
    let mut ids: Vec<i64> = Vec::new();
    for batch in scan.to_batches().await.unwrap() {
        let column = batch.column_by_name("id").unwrap();
        ids.extend(
            column
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values(),
        );
    }
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3, 4]);
}
