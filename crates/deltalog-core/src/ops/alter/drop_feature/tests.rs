use std::collections::BTreeMap;

use serde_json::Value;

use super::*;
use arrow_array::cast::AsArray;
use arrow_array::Array;

use crate::expr::parse_sql;
use crate::log::list_log_from;
use crate::log::path::LogFileKind;
use crate::ops::alter::{alter_table, Alteration};
use crate::ops::dml::delete::{delete, DeleteOptions};
use crate::ops::dml::test_tables::{ids, ids_batch, table_of};
use crate::table::Table;

fn drop(name: &str) -> Alteration {
    Alteration::DropFeature {
        name: name.into(),
        truncate_history: false,
    }
}

async fn operations(table: &Table) -> Vec<String> {
    let listing = list_log_from(table.storage(), 0).await.unwrap();
    let mut commits: Vec<_> = listing
        .iter()
        .filter(|f| f.kind == LogFileKind::Commit)
        .collect();
    commits.sort_by_key(|f| f.version);
    let mut operations = Vec::new();
    for file in commits {
        let bytes = table.storage().read(&file.location).await.unwrap();
        let first: Value =
            serde_json::from_slice(bytes.split(|b| *b == b'\n').next().unwrap()).unwrap();
        operations.push(
            first["commitInfo"]["operation"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    operations
}

async fn snapshot(table: &Table) -> Snapshot {
    Snapshot::load(table.storage(), SnapshotAt::Latest)
        .await
        .unwrap()
}

fn names(list: &Option<Vec<String>>) -> Vec<&str> {
    let mut names: Vec<&str> = list.iter().flatten().map(String::as_str).collect();
    names.sort_unstable();
    names
}

#[tokio::test]
async fn dropping_deletion_vectors_purges_them_and_protects_the_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(
        dir.path(),
        ids_batch(0..10),
        &[("delta.enableDeletionVectors", "true")],
    )
    .await;
    let predicate = parse_sql("id < 3").unwrap();
    delete(table.storage(), Some(predicate), DeleteOptions::default())
        .await
        .unwrap();
    let result = alter_table(table.storage(), drop("deletionVectors"))
        .await
        .unwrap();
    assert_eq!(
        operations(&table).await[2..],
        [
            "UNSET TBLPROPERTIES",
            "REORG",
            "Deletion Vector Tombstones",
            "Empty Commit",
            "Empty Commit",
            "Empty Commit",
            "DROP FEATURE"
        ]
    );
    let dropped = snapshot(&table).await;
    assert_eq!(dropped.version(), result.version);
    let protocol = dropped.protocol();
    assert_eq!(protocol.min_reader_version, 1);
    assert_eq!(
        names(&protocol.writer_features),
        ["checkpointProtection", "invariants"]
    );
    assert_eq!(
        dropped
            .metadata()
            .configuration
            .get(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION),
        Some(&result.version.to_string())
    );
    assert_eq!(ids(&table).await, (3..10).collect::<Vec<_>>());
    let listing = list_log_from(table.storage(), 0).await.unwrap();
    let checkpoints: Vec<u64> = crate::log::segment::complete_checkpoints(&listing)
        .iter()
        .map(|c| c.version)
        .collect();
    let last = result.version;
    assert_eq!(checkpoints, [last - 3, last - 2, last - 1, last]);
    assert!(dropped.validate_checksum().await.unwrap());
    // The deletion vector file stays referenced by a tombstone of its own.
    let tombstones = dropped.remove_actions().await.unwrap();
    let paths: Vec<String> = tombstones
        .iter()
        .flat_map(|r| {
            let paths = r.column_by_name("path").unwrap().as_string::<i32>().clone();
            (0..paths.len()).map(move |i| paths.value(i).to_string())
        })
        .collect();
    assert!(
        paths.iter().any(|p| p.starts_with("deletion_vector_")),
        "{paths:?}"
    );
}

#[tokio::test]
async fn writer_features_drop_in_one_commit_and_normalize_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(
        dir.path(),
        ids_batch(0..3),
        &[("delta.enableInCommitTimestamps", "true")],
    )
    .await;
    alter_table(table.storage(), drop("inCommitTimestamp"))
        .await
        .unwrap();
    assert_eq!(
        operations(&table).await[1..],
        ["UNSET TBLPROPERTIES", "DROP FEATURE"]
    );
    let dropped = snapshot(&table).await;
    // This library lists `invariants` alone at creation (Spark lists `appendOnly` too,
    // and normalizes to (1, 2)): no legacy version implies exactly that.
    assert_eq!(
        (
            dropped.protocol().min_reader_version,
            dropped.protocol().min_writer_version
        ),
        (1, 7)
    );
    assert_eq!(names(&dropped.protocol().writer_features), ["invariants"]);
    assert_eq!(
        dropped
            .metadata()
            .configuration
            .get("delta.enableInCommitTimestamps"),
        Some(&"false".to_string())
    );
    assert!(!dropped
        .metadata()
        .configuration
        .contains_key("delta.inCommitTimestampEnablementVersion"));
}

#[tokio::test]
async fn dropping_row_tracking_unbackfills_and_removes_its_domain() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(
        dir.path(),
        ids_batch(0..3),
        &[("delta.enableRowTracking", "true")],
    )
    .await;
    alter_table(table.storage(), drop("domainMetadata"))
        .await
        .expect_err("rowTracking needs domainMetadata");
    alter_table(table.storage(), drop("rowTracking"))
        .await
        .unwrap();
    assert_eq!(
        operations(&table).await[1..],
        [
            "SET TBLPROPERTIES",
            "ROW TRACKING UNBACKFILL",
            "DROP FEATURE"
        ]
    );
    let dropped = snapshot(&table).await;
    assert!(!dropped.table_configuration().is_row_tracking_supported());
    assert!(dropped.domains().is_empty());
    let configuration = &dropped.metadata().configuration;
    assert!(
        configuration.keys().all(|k| !k.contains("owTracking")),
        "{configuration:?}"
    );
    assert!(!super::super::row_tracking::has_row_ids(&dropped)
        .await
        .unwrap());
    assert!(dropped.validate_checksum().await.unwrap());
    // Without rowTracking, domainMetadata drops too.
    alter_table(table.storage(), drop("domainMetadata"))
        .await
        .unwrap();
    let writer = snapshot(&table).await.protocol().writer_features.clone();
    assert_eq!(names(&writer), ["invariants"]);
}

#[tokio::test]
async fn what_spark_refuses_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(dir.path(), ids_batch(0..3), &[("delta.appendOnly", "true")]).await;
    let refused =
        |alteration| async { alter_table(table.storage(), alteration).await.unwrap_err() };
    assert!(matches!(
        refused(drop("appendOnly")).await,
        Error::NotAllowed(_)
    ));
    assert!(matches!(
        refused(drop("deletionVectors")).await,
        Error::NotAllowed(_)
    ));
    assert!(matches!(
        refused(drop("delta.appendOnly")).await,
        Error::InvalidArgument(_)
    ));
    assert!(matches!(
        refused(drop("noSuchFeature")).await,
        Error::UnsupportedFeature { .. }
    ));
    let constraint = Alteration::AddConstraint {
        name: "positive".into(),
        expression: "id >= 0".into(),
    };
    alter_table(table.storage(), constraint).await.unwrap();
    let error = refused(drop("checkConstraints")).await;
    assert!(error.to_string().contains("positive"), "{error}");
    let truncating = Alteration::DropFeature {
        name: "checkConstraints".into(),
        truncate_history: true,
    };
    assert!(matches!(refused(truncating).await, Error::NotAllowed(_)));
    let drop_constraint = Alteration::DropConstraint {
        name: "positive".into(),
        if_exists: false,
    };
    alter_table(table.storage(), drop_constraint).await.unwrap();
    alter_table(table.storage(), drop("checkConstraints"))
        .await
        .unwrap();
    let protocol = snapshot(&table).await.protocol().clone();
    assert_eq!(protocol.writer_features, None);
    assert_eq!(protocol.min_writer_version, 2);
}

#[tokio::test]
async fn dropping_type_widening_rewrites_the_files_of_the_old_type() {
    let dir = tempfile::tempdir().unwrap();
    let batch = arrow_array::RecordBatch::try_from_iter([(
        "id",
        std::sync::Arc::new(arrow_array::Int32Array::from(vec![1, 2])) as arrow_array::ArrayRef,
    )])
    .unwrap();
    let table = table_of(dir.path(), batch, &[("delta.enableTypeWidening", "true")]).await;
    let widen = Alteration::ChangeColumn(super::super::ColumnChange {
        column: "id".into(),
        data_type: Some(crate::schema::PrimitiveType::Long),
        comment: None,
        drop_not_null: false,
        position: None,
    });
    alter_table(table.storage(), widen).await.unwrap();
    alter_table(table.storage(), drop("typeWidening"))
        .await
        .unwrap();
    assert_eq!(
        operations(&table).await[2..],
        [
            "UNSET TBLPROPERTIES",
            "REORG",
            "DROP FEATURE",
            "Empty Commit",
            "Empty Commit",
            "Empty Commit",
            "DROP FEATURE"
        ]
    );
    let dropped = snapshot(&table).await;
    assert!(dropped
        .schema()
        .to_json()
        .unwrap()
        .find("typeChanges")
        .is_none());
    assert_eq!(ids(&table).await, [1, 2]);
    assert!(dropped.protocol().reader_features.is_none());
}

#[tokio::test]
async fn truncating_history_waits_for_the_retention_then_drops_without_protection() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(
        dir.path(),
        ids_batch(0..3),
        &[("delta.checkpointPolicy", "v2")],
    )
    .await;
    let truncating = || Alteration::DropFeature {
        name: "v2Checkpoint".into(),
        truncate_history: true,
    };
    let error = alter_table(table.storage(), truncating())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("again"), "{error}");
    // Once the history is older than the retention, the drop goes through.
    let retention = BTreeMap::from([(
        "delta.dropFeatureTruncateHistory.retentionDuration".to_string(),
        "interval 0 hours".to_string(),
    )]);
    alter_table(table.storage(), Alteration::SetProperties(retention))
        .await
        .unwrap();
    age_the_log(&table).await;
    alter_table(table.storage(), truncating()).await.unwrap();
    let dropped = snapshot(&table).await;
    assert_eq!(dropped.protocol().reader_features, None);
    assert!(!names(&dropped.protocol().writer_features).contains(&"checkpointProtection"));
    assert_eq!(ids(&table).await, [0, 1, 2]);
    let listing = list_log_from(table.storage(), 0).await.unwrap();
    assert!(
        listing.iter().all(|f| f.version > 0),
        "the history was truncated"
    );
}

#[tokio::test]
async fn checkpoint_protection_drops_with_the_history_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(
        dir.path(),
        ids_batch(0..3),
        &[("delta.feature.vacuumProtocolCheck", "supported")],
    )
    .await;
    alter_table(table.storage(), drop("vacuumProtocolCheck"))
        .await
        .unwrap();
    alter_table(table.storage(), drop("checkpointProtection"))
        .await
        .expect_err("only with truncate_history");
    let truncating = || Alteration::DropFeature {
        name: "checkpointProtection".into(),
        truncate_history: true,
    };
    alter_table(table.storage(), truncating())
        .await
        .expect_err("the history is younger than the retention");
    let retention = BTreeMap::from([(
        "delta.dropFeatureTruncateHistory.retentionDuration".to_string(),
        "interval 0 hours".to_string(),
    )]);
    alter_table(table.storage(), Alteration::SetProperties(retention))
        .await
        .unwrap();
    age_the_log(&table).await;
    alter_table(table.storage(), truncating()).await.unwrap();
    let dropped = snapshot(&table).await;
    let left = names(&dropped.protocol().writer_features);
    assert!(!left.contains(&"checkpointProtection"), "{left:?}");
    assert_eq!(dropped.protocol().reader_features, None);
    assert!(!dropped
        .metadata()
        .configuration
        .contains_key(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION));
    assert_eq!(ids(&table).await, [0, 1, 2]);
}

/// Sets the modification time of every log file two minutes back, so that a retention of
/// zero (cut at the minute) lets them go.
async fn age_the_log(table: &Table) {
    let log = std::path::Path::new(table.storage().uri().trim_start_matches("file://"))
        .join("_delta_log");
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    for entry in std::fs::read_dir(log).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let file = std::fs::File::options().append(true).open(&path).unwrap();
            file.set_modified(past).unwrap();
        }
    }
}

#[tokio::test]
async fn dropping_column_mapping_rewrites_the_files_under_the_logical_names() {
    let dir = tempfile::tempdir().unwrap();
    let table = mapped_with_renamed_id(&dir, 4, "ident").await;
    alter_table(table.storage(), drop("columnMapping"))
        .await
        .unwrap();
    assert_eq!(
        operations(&table).await[2..],
        [
            "REMOVE COLUMN MAPPING",
            "Empty Commit",
            "Empty Commit",
            "Empty Commit",
            "DROP FEATURE"
        ]
    );
    let dropped = snapshot(&table).await;
    let config = dropped.table_configuration();
    assert_eq!(
        config.column_mapping(),
        crate::schema::ColumnMappingMode::None
    );
    assert!(!dropped
        .schema()
        .to_json()
        .unwrap()
        .contains("columnMapping"));
    assert!(!dropped
        .metadata()
        .configuration
        .keys()
        .any(|k| k.starts_with("delta.columnMapping")));
    assert!(!config.is_feature_supported(&TableFeature::ColumnMapping));
    assert_eq!(ids(&table).await, [0, 1, 2, 3]);
    let (_, files) = dropped.files(false).await.unwrap();
    let path = files[0]
        .column_by_name("path")
        .unwrap()
        .as_string::<i32>()
        .value(0)
        .to_string();
    let file = std::fs::File::open(dir.path().join(path)).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
    use parquet::file::reader::FileReader;
    let names: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(names, ["ident"]);
}

#[tokio::test]
async fn column_names_that_need_column_mapping_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    let table = mapped_with_renamed_id(&dir, 2, "my id").await;
    let error = alter_table(table.storage(), drop("columnMapping"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("my id"), "{error}");
    assert!(snapshot(&table)
        .await
        .table_configuration()
        .is_feature_supported(&TableFeature::ColumnMapping));
}

/// A table under column mapping (`name`) holding ids `0..rows`, its column renamed to `to`.
async fn mapped_with_renamed_id(dir: &tempfile::TempDir, rows: i64, to: &str) -> Table {
    let mapped = [("delta.columnMapping.mode", "name")];
    let table = table_of(dir.path(), ids_batch(0..rows), &mapped).await;
    let rename = Alteration::RenameColumn {
        from: "id".into(),
        to: to.into(),
    };
    alter_table(table.storage(), rename).await.unwrap();
    table
}
