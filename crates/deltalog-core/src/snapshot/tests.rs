use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::schema::{PrimitiveType, StructField};
use crate::table::Table;
use crate::transaction::{AddFile, MetadataUpdate, TableSpec};
use crate::util::test_tables::table;

/// A table of versions 0..=2 (each with its `.crc`), a domain set at version 1.
async fn three_versions(dir: &tempfile::TempDir) -> Table {
    let table = table(dir);
    let spec = TableSpec {
        schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
        configuration: HashMap::from([(
            "delta.feature.domainMetadata".to_string(),
            "supported".to_string(),
        )]),
        ..TableSpec::default()
    };
    table.create(spec).await.unwrap();
    for version in 1..=2 {
        let mut tx = table.transaction("WRITE").await.unwrap();
        let file = AddFile {
            path: format!("f{version}.parquet"),
            size: 100,
            modification_time: 1,
            data_change: true,
            ..AddFile::default()
        };
        tx.add(&[file]).unwrap();
        tx.set_app_version("app", version).unwrap();
        if version == 1 {
            tx.set_domain_metadata("user.d", Some("from-log".into()))
                .unwrap();
        }
        tx.commit().await.unwrap();
    }
    table
}

fn log_file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join("_delta_log").join(name)
}

#[tokio::test]
async fn the_head_comes_from_the_checksum_without_reading_earlier_commits() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    let expected = table.snapshot(SnapshotAt::Latest).await.unwrap();
    for version in 0..2 {
        let name = format!("{version:020}.json");
        std::fs::write(log_file(&dir, &name), "not a commit\n").unwrap();
    }
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert!(matches!(head.source(), HeadSource::Checksum(crc)
        if crc.ends_with("00000000000000000002.crc")));
    assert_eq!(head.version(), 2);
    assert_eq!(head.schema(), expected.schema());
    assert_eq!(head.metadata(), expected.metadata());
    assert_eq!(head.protocol(), expected.protocol());
    let segment = table.log_segment(None).await.unwrap();
    assert_eq!(head.timestamp_ms(), segment.file_time_ms);
    assert_eq!(head.transaction_version("app"), Some(2));
    assert_eq!(head.domain_metadata("user.d"), Some("from-log"));
    let error = head.num_files().await.unwrap_err();
    assert!(matches!(error, Error::CorruptLogFile { .. }), "{error}");
    let append = table.append_transaction("WRITE").await.unwrap();
    assert_eq!(append.domain_metadata("user.d"), Some("from-log"));
}

#[tokio::test]
async fn a_checksum_that_does_not_parse_falls_back_to_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    std::fs::write(log_file(&dir, "00000000000000000002.crc"), "{\"numFiles\":").unwrap();
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(head.source(), &HeadSource::Log);
    assert_eq!(head.transaction_version("app"), Some(2));
    assert_eq!(head.num_files().await.unwrap(), 2);
    table.append_transaction("WRITE").await.unwrap();
}

#[tokio::test]
async fn a_checksum_the_newest_commit_contradicts_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    let mut tx = table.transaction("SET TBLPROPERTIES").await.unwrap();
    let update = MetadataUpdate {
        description: Some("from the log".into()),
        ..MetadataUpdate::default()
    };
    tx.update_metadata(update).unwrap();
    tx.commit().await.unwrap();
    let crc = log_file(&dir, "00000000000000000003.crc");
    let text = std::fs::read_to_string(&crc).unwrap();
    std::fs::write(&crc, text.replace("from the log", "from the crc")).unwrap();
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(head.source(), &HeadSource::Log);
    assert_eq!(head.metadata().description.as_deref(), Some("from the log"));
}

#[tokio::test]
async fn a_replay_that_contradicts_the_checksum_is_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    let crc = log_file(&dir, "00000000000000000002.crc");
    let text = std::fs::read_to_string(&crc).unwrap();
    std::fs::write(&crc, text.replace("from-log", "from-crc")).unwrap();
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(head.domain_metadata("user.d"), Some("from-crc"));
    let error = head.num_files().await.unwrap_err();
    assert!(
        matches!(&error, Error::ChecksumMismatch { path, reason }
            if path.ends_with("00000000000000000002.crc") && reason.contains("domainMetadata")),
        "{error}"
    );
}

#[tokio::test]
async fn without_a_checksum_the_head_is_read_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    std::fs::remove_file(log_file(&dir, "00000000000000000002.crc")).unwrap();
    let head = table.lazy_snapshot(SnapshotAt::Version(2)).await.unwrap();
    assert_eq!(head.source(), &HeadSource::Log);
    assert_eq!(head.domain_metadata("user.d"), Some("from-log"));
    let at_one = table.lazy_snapshot(SnapshotAt::Version(1)).await.unwrap();
    assert!(matches!(at_one.source(), HeadSource::Checksum(_)));
    assert_eq!(at_one.transaction_version("app"), Some(1));
}

#[tokio::test]
async fn the_file_count_and_size_come_from_the_checksum_without_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    let replayed = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let expected = TableSize {
        num_files: 2,
        size_in_bytes: 200,
    };
    assert_eq!(replayed.table_size().await.unwrap(), expected);
    // The earlier commits unreadable: a replay would fail, the checksum answers.
    for version in 0..2 {
        let name = format!("{version:020}.json");
        std::fs::write(log_file(&dir, &name), "not a commit\n").unwrap();
    }
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(head.table_size_from_checksum(), Some(expected));
    assert_eq!(head.table_size().await.unwrap(), expected);
}

#[tokio::test]
async fn without_a_checksum_the_file_count_and_size_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    std::fs::remove_file(log_file(&dir, "00000000000000000002.crc")).unwrap();
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(head.table_size_from_checksum(), None);
    let size = head.table_size().await.unwrap();
    assert_eq!((size.num_files, size.size_in_bytes), (2, 200));
}

#[tokio::test]
async fn a_wrong_checksum_file_count_is_reported_until_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    let crc = log_file(&dir, "00000000000000000002.crc");
    let text = std::fs::read_to_string(&crc).unwrap();
    std::fs::write(&crc, text.replace("\"numFiles\":2", "\"numFiles\":7")).unwrap();
    let head = table.lazy_snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(
        head.table_size_from_checksum().map(|s| s.num_files),
        Some(7)
    );
    assert_eq!(head.table_size().await.unwrap().num_files, 7);
    assert!(!head.files_replayed());
    assert_eq!(head.num_files().await.unwrap(), 2);
    assert!(head.files_replayed());
    assert_eq!(head.table_size().await.unwrap().num_files, 2);
    let error = head.validate_checksum().await.unwrap_err();
    assert!(
        matches!(&error, Error::ChecksumMismatch { reason, .. } if reason.contains("numFiles")),
        "{error}"
    );
}

#[tokio::test]
async fn a_transaction_on_a_lazy_snapshot_replays_the_file_list_only_to_remove_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_versions(&dir).await;
    let append = table.append_transaction("WRITE").await.unwrap();
    let read = append.read_snapshot().unwrap().clone();
    assert!(!read.files_replayed());
    let result = append.commit().await.unwrap();
    assert!(!read.files_replayed());
    assert!(result.snapshot.is_none());
    let mut delete = table.append_transaction("DELETE").await.unwrap();
    assert_eq!(delete.remove_paths(&["f1.parquet"], true).await.unwrap(), 1);
    assert!(delete.read_snapshot().unwrap().files_replayed());
    let result = delete.commit().await.unwrap();
    let after = result.snapshot.unwrap();
    assert_eq!((after.version(), after.num_files().await.unwrap()), (4, 1));
}
