//! `write_table` and `create_table` on a local table, read back with our own scan.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::error::Error;
use crate::expr::parse_sql;
use crate::storage::Storage;
use crate::table::{SnapshotAt, Table};

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

async fn write(table: &Table, data: RecordBatch, options: WriteTableOptions) -> TableCommit {
    let stream = futures::stream::iter(vec![Ok(data.clone())]);
    write_table(table, data.schema(), stream, options)
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
    assert_eq!((snapshot.version(), snapshot.num_files()), (1, 2));

    let data = batch(&[4], &["b"]);
    let stream = futures::stream::iter(vec![Ok(data.clone())]);
    let refused = write_table(&table, data.schema(), stream, overwrite)
        .await
        .unwrap_err();
    assert!(matches!(refused.error, Error::ReplaceWhereMismatch { .. }));
    let exists = create_table(&table, CreateTable::default(), CreateMode::ErrorIfExists).await;
    assert!(matches!(exists, Err(Error::NotAllowed(_))));
    assert_eq!(table.latest_version().await.unwrap(), 1);
}
