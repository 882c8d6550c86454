//! The operation kinds of the concurrency tests (reliability notes §6.1), staged on one
//! partitioned table: `p=a` and `p=b`, one real Parquet file each (`p=a/a1.parquet`,
//! `p=b/b1.parquet`, ten rows of `a`), at version 1.
//!
//! Most kinds stage actions on a transaction (conflict detection reads the log, never a data
//! file; the files they add are real all the same); [`Op::Merge`] is the real `merge`
//! operation, which reads the target's Parquet files and writes its own. The deletion
//! vectors of [`Op::DvDelete`] are log entries only.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use deltalog_core::actions::DeletionVectorDescriptor;
use deltalog_core::ops::{merge, MatchedAction, MergeClauses, MergeOptions, NotMatchedAction};
use deltalog_core::transaction::{AddFile, MetadataUpdate, TableSpec};
use deltalog_core::{parse_sql, Error, Storage, StructField, StructType, Table, Transaction};

/// The operation kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    BlindAppend,
    ReadAppend,
    ReplaceWhere,
    FullOverwrite,
    Delete,
    DvDelete,
    Update,
    /// `MERGE INTO t USING s ON t.p = '<part>' AND t.a = s.a WHEN MATCHED THEN UPDATE SET *
    /// WHEN NOT MATCHED THEN INSERT *`, one source row matching `a = 3`, one inserted.
    Merge,
    Compaction,
    MetadataChange,
    ProtocolUpgrade,
    AppTxn,
    DomainMetadata,
}

pub const OPS: [Op; 13] = [
    Op::BlindAppend,
    Op::ReadAppend,
    Op::ReplaceWhere,
    Op::FullOverwrite,
    Op::Delete,
    Op::DvDelete,
    Op::Update,
    Op::Merge,
    Op::Compaction,
    Op::MetadataChange,
    Op::ProtocolUpgrade,
    Op::AppTxn,
    Op::DomainMetadata,
];

pub fn schema() -> StructType {
    use deltalog_core::schema::PrimitiveType;
    StructType::new(vec![
        StructField::new("a", PrimitiveType::Long, true),
        StructField::new("p", PrimitiveType::String, true),
    ])
}

/// The add of a (log-only) file of ten records in partition `partition`.
pub fn file(path: &str, partition: &str, data_change: bool) -> AddFile {
    AddFile {
        path: path.into(),
        partition_values: vec![("p".into(), Some(partition.into()))],
        size: 100,
        modification_time: 1,
        data_change,
        stats: Some("{\"numRecords\":10}".into()),
        ..AddFile::default()
    }
}

/// Writes a Parquet file of `a` = 0..10 at `path` under `root`; returns its add.
fn parquet_file(root: &std::path::Path, path: &str, partition: &str) -> AddFile {
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10));
    let batch = RecordBatch::try_from_iter([("a", values)]).unwrap();
    let target = root.join(path);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let out = std::fs::File::create(&target).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    AddFile {
        size: std::fs::metadata(&target).unwrap().len() as i64,
        ..file(path, partition, true)
    }
}

/// Table properties of every test table: deletion vectors and domain metadata on.
pub const BASE_PROPERTIES: [(&str, &str); 2] = [
    ("delta.enableDeletionVectors", "true"),
    ("delta.feature.domainMetadata", "supported"),
];

/// Creates the table in `dir` through `storage` with [`BASE_PROPERTIES`] and `properties`
/// (version 0), and adds `p=a/a1.parquet` and `p=b/b1.parquet` (version 1).
pub async fn create(dir: &std::path::Path, storage: Storage, properties: &[(&str, &str)]) -> Table {
    let table = Table::from_storage(storage);
    let configuration: HashMap<String, String> = BASE_PROPERTIES
        .iter()
        .chain(properties)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let spec = TableSpec {
        schema: schema(),
        partition_columns: vec!["p".into()],
        configuration,
        ..TableSpec::default()
    };
    table.create(spec).await.unwrap();
    let mut tx = table.transaction("WRITE").await.unwrap();
    tx.add(&[
        parquet_file(dir, "p=a/a1.parquet", "a"),
        parquet_file(dir, "p=b/b1.parquet", "b"),
    ])
    .unwrap();
    tx.commit().await.unwrap();
    table
}

/// The local table in `dir`, reached through the plain local filesystem store.
pub fn local_storage(dir: &std::path::Path) -> Storage {
    Storage::open(dir.to_str().unwrap(), &HashMap::new()).unwrap()
}

/// The path of the file `op` adds when aimed at `part` with `tag` (`None` for kinds that
/// add no new file, and for [`Op::Merge`], which names its own files).
pub fn new_path(op: Op, part: &str, tag: &str) -> Option<String> {
    match op {
        Op::BlindAppend
        | Op::ReadAppend
        | Op::ReplaceWhere
        | Op::FullOverwrite
        | Op::Update
        | Op::Compaction => Some(format!("p={part}/{tag}.parquet")),
        _ => None,
    }
}

/// Stages `op` (any kind but [`Op::Merge`]) on `tx`, aimed at partition `part`; `tag` keeps
/// new file names apart. New files are real Parquet files, so that a later merge can read
/// them.
pub async fn stage(tx: &mut Transaction, op: Op, part: &str, tag: &str) {
    let predicate = parse_sql(&format!("p = '{part}'")).unwrap();
    let existing = format!("p={part}/{part}1.parquet");
    let root = url::Url::parse(tx.storage().uri())
        .unwrap()
        .to_file_path()
        .unwrap();
    let new_name = format!("p={part}/{tag}.parquet");
    let new = match new_path(op, part, tag) {
        Some(_) => parquet_file(&root, &new_name, part),
        None => file(&new_name, part, true),
    };
    match op {
        Op::BlindAppend => tx.add(&[new]).unwrap(),
        Op::ReadAppend => {
            tx.record_read(Some(&predicate)).await.unwrap();
            tx.add(&[new]).unwrap();
        }
        Op::ReplaceWhere => {
            tx.remove_where(Some(&predicate), true).await.unwrap();
            tx.add(&[new]).unwrap();
        }
        Op::FullOverwrite => {
            tx.remove_where(None, true).await.unwrap();
            tx.add(&[new]).unwrap();
        }
        Op::Delete => {
            tx.remove_where(Some(&predicate), true).await.unwrap();
        }
        Op::DvDelete => {
            tx.record_read(Some(&predicate)).await.unwrap();
            assert_eq!(
                tx.remove_paths(&[existing.as_str()], true).await.unwrap(),
                1
            );
            let mut with_dv = file(&existing, part, true);
            with_dv.deletion_vector = Some(DeletionVectorDescriptor {
                storage_type: "i".into(),
                path_or_inline_dv: format!("wi5b=000{}", &tag[tag.len() - 1..]),
                offset: None,
                size_in_bytes: 40,
                cardinality: 1,
            });
            tx.add(&[with_dv]).unwrap();
        }
        Op::Update => {
            tx.record_read(Some(&predicate)).await.unwrap();
            assert_eq!(
                tx.remove_paths(&[existing.as_str()], true).await.unwrap(),
                1
            );
            tx.add(&[new]).unwrap();
        }
        Op::Merge => panic!("a merge is an operation of its own: run it with run_merge"),
        Op::Compaction => {
            tx.remove_where(Some(&predicate), false).await.unwrap();
            let rewritten = AddFile {
                data_change: false,
                ..new
            };
            tx.add(&[rewritten]).unwrap();
        }
        Op::MetadataChange => tx
            .update_metadata(MetadataUpdate {
                configuration: vec![(format!("matrix.{tag}"), Some("1".into()))],
                ..MetadataUpdate::default()
            })
            .unwrap(),
        Op::ProtocolUpgrade => {
            let snapshot = tx.read_snapshot().unwrap();
            let mut protocol = snapshot.protocol().clone();
            let features = protocol.writer_features.get_or_insert_with(Vec::new);
            features.push("changeDataFeed".into());
            tx.update_protocol(protocol).unwrap();
        }
        Op::AppTxn => {
            let app = format!("app-{part}");
            let next = tx.app_version(&app).map_or(1, |v| v + 1);
            tx.set_app_version(&app, next).unwrap();
        }
        Op::DomainMetadata => tx
            .set_domain_metadata(&format!("domain-{part}"), Some(tag.into()))
            .unwrap(),
    }
}

/// Runs the [`Op::Merge`] of partition `part` on the latest version of `table`, its
/// `commitInfo` carrying `actor`; returns the version committed and the retries.
pub async fn run_merge(table: &Table, part: &str, actor: &str) -> Result<(u64, u32), Error> {
    let ids: ArrayRef = Arc::new(Int64Array::from(vec![3, 100]));
    let parts: ArrayRef = Arc::new(StringArray::from(vec![part, part]));
    let source = RecordBatch::try_from_iter([("a", ids), ("p", parts)]).unwrap();
    let on = parse_sql(&format!("t.p = '{part}' AND t.a = s.a")).unwrap();
    let clauses = MergeClauses {
        matched: vec![(None, MatchedAction::UpdateAll)],
        not_matched: vec![(None, NotMatchedAction::InsertAll)],
        ..MergeClauses::default()
    };
    let mut options = MergeOptions {
        source_alias: "s".into(),
        target_alias: "t".into(),
        ..MergeOptions::default()
    };
    options.commit_info.insert("actor".into(), actor.into());
    let schema = source.schema();
    let done = merge(table.storage(), vec![source], schema, on, clauses, options)
        .await
        .map_err(|failure| failure.error)?;
    assert!(done.committed, "the merge changes rows: it commits");
    Ok((done.version, done.retries))
}

/// Runs `op` aimed at `part` on the latest version of `table` as the writer `actor` (its
/// `commitInfo.actor`), tagging new files with `actor`; returns the version committed and
/// the retries.
pub async fn run(table: &Table, op: Op, part: &str, actor: &str) -> Result<(u64, u32), Error> {
    if op == Op::Merge {
        return run_merge(table, part, actor).await;
    }
    let mut tx = table.transaction(actor).await?;
    stage(&mut tx, op, part, actor).await;
    let result = tx.with_commit_info("actor", actor).commit().await?;
    Ok((result.version, result.retries))
}

/// Appends ten rows (`a` = 0..10) to partition `part` with `write_table` (a blind append
/// through the append transaction, which reads no file list), its `commitInfo` carrying
/// `actor`; returns the version committed and the retries.
pub async fn run_write_append(table: &Table, part: &str, actor: &str) -> Result<(u64, u32), Error> {
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10));
    let parts: ArrayRef = Arc::new(StringArray::from(vec![part; 10]));
    let batch = RecordBatch::try_from_iter([("a", values), ("p", parts)]).unwrap();
    let mut options = deltalog_core::WriteTableOptions::default();
    options.commit_info.insert("actor".into(), actor.into());
    let schema = batch.schema();
    let batches = futures::stream::iter([Ok(batch)]);
    let done = deltalog_core::ops::write_table(table.storage(), schema, batches, options)
        .await
        .map_err(|failure| failure.error)?;
    Ok((done.version, done.retries))
}

/// Deletes the row `a = 5` of partition `part` with the `delete` operation (a deletion
/// vector on the partition's file), its `commitInfo` carrying `actor`; returns the version
/// committed and the retries.
pub async fn run_row_delete(table: &Table, part: &str, actor: &str) -> Result<(u64, u32), Error> {
    let predicate = parse_sql(&format!("p = '{part}' AND a = 5")).unwrap();
    let mut options = deltalog_core::ops::DeleteOptions::default();
    options.commit_info.insert("actor".into(), actor.into());
    let done = deltalog_core::ops::delete(table.storage(), Some(predicate), options)
        .await
        .map_err(|failure| failure.error)?;
    assert!(done.committed, "the delete removes a row: it commits");
    Ok((done.version, done.retries))
}
