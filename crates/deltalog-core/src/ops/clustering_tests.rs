//! Clustered tables (spec "Clustered Table") on real tables in temporary directories:
//! creating and altering their clustering columns, writing to them, and OPTIMIZE (the files
//! picked, the tags written, the rows kept, the options refused).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::stream;
use serde_json::{json, Value};

use crate::error::Error;
use crate::ops::{
    alter_table, create_table, write_table, Alteration, CreateMode, CreateTable, OptimizeOptions,
    WriteMode, WriteTableOptions,
};
use crate::scan::{Scan, ScanOptions};
use crate::snapshot::SnapshotAt;
use crate::table::Table;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ]))
}

fn rows(ids: std::ops::Range<i64>) -> RecordBatch {
    let names: Vec<String> = ids.clone().map(|i| format!("n{}", i % 7)).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(ids)),
        Arc::new(StringArray::from(names)),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// Writes `lines` as commit `version` of the table at `dir`.
fn commit(dir: &Path, version: u64, lines: &[Value]) {
    let log = dir.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(log.join(format!("{version:020}.json")), text.join("\n")).unwrap();
}

fn clustering_domain(columns: &[&[&str]]) -> Value {
    let configuration = json!({"clusteringColumns": columns, "domainName": "delta.clustering"});
    json!({"domainMetadata": {"domain": "delta.clustering",
        "configuration": configuration.to_string(), "removed": false}})
}

/// A clustered table of `id` and `name` clustered by `columns`, as Delta on Spark creates
/// it (`CREATE TABLE ... CLUSTER BY`), with `configuration`.
fn clustered_table(dir: &Path, columns: &[&[&str]], configuration: Value) -> Table {
    let schema = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
        {"name": "name", "type": "string", "nullable": true, "metadata": {}}]});
    commit(
        dir,
        0,
        &[
            json!({"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE"}}),
            json!({"metaData": {"id": "c", "format": {"provider": "parquet", "options": {}},
                "schemaString": schema.to_string(), "partitionColumns": [],
                "configuration": configuration, "createdTime": 1}}),
            json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                "writerFeatures": ["domainMetadata", "clustering"]}}),
            clustering_domain(columns),
        ],
    );
    Table::from_storage(storage_at(dir))
}

fn storage_at(dir: &Path) -> crate::storage::Storage {
    crate::storage::Storage::open(dir.to_str().unwrap(), &HashMap::new()).unwrap()
}

async fn append(table: &Table, ids: std::ops::Range<i64>) -> crate::error::Result<u64> {
    let options = WriteTableOptions {
        mode: WriteMode::Append,
        ..WriteTableOptions::default()
    };
    let batches = stream::iter([Ok(rows(ids))]);
    write_table(table.storage(), schema(), batches, options)
        .await
        .map(|done| done.version)
        .map_err(|failure| failure.error)
}

async fn ids(table: &Table) -> Vec<i64> {
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let batches = Scan::new(&snapshot, ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    ids.sort_unstable();
    ids
}

/// The actions of commit `version`, by kind.
fn actions(dir: &Path, version: u64, kind: &str) -> Vec<Value> {
    let path = dir.join(format!("_delta_log/{version:020}.json"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|line| {
            serde_json::from_str::<Value>(line)
                .unwrap()
                .get(kind)
                .cloned()
        })
        .collect()
}

#[tokio::test]
async fn optimize_clusters_new_files_and_tags_them_as_spark_does() {
    let dir = tempfile::tempdir().unwrap();
    let table = clustered_table(dir.path(), &[&["name"], &["id"]], json!({}));
    for start in [0, 100, 200] {
        append(&table, start..start + 100).await.unwrap();
    }
    let done = table.optimize(OptimizeOptions::default()).await.unwrap();
    assert_eq!(done.version, Some(4));
    assert_eq!(done.num_files_removed, 3);
    assert_eq!(done.cluster_by, ["name", "id"]);
    assert_eq!(ids(&table).await, (0..300).collect::<Vec<_>>());
    let adds = actions(dir.path(), 4, "add");
    let cube = adds[0]["tags"]["ZCUBE_ID"].as_str().unwrap().to_string();
    for add in &adds {
        assert_eq!(add["clusteringProvider"], "liquid");
        assert_eq!(add["dataChange"], false);
        assert_eq!(add["tags"]["ZCUBE_ID"], cube.as_str());
        assert_eq!(add["tags"]["ZCUBE_ZORDER_BY"], r#"["name","id"]"#);
    }
    let info = &actions(dir.path(), 4, "commitInfo")[0];
    assert_eq!(info["operationParameters"]["clusterBy"], r#"["name","id"]"#);
    assert_eq!(info["operationParameters"]["zOrderBy"], "[]");
    assert_eq!(info["operationParameters"]["isFull"], false);
    // Rows come out along the curve: the first rows share the smallest name.
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let batches = Scan::new(&snapshot, ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    let first = batches[0].column(1).as_string::<i32>().value(0).to_string();
    assert_eq!(first, "n0");

    // One cube and nothing else: already clustered.
    let again = table.optimize(OptimizeOptions::default()).await.unwrap();
    assert_eq!(again.version, None);

    // A new file joins the small cube: both are reclustered into a new cube.
    append(&table, 300..310).await.unwrap();
    let merged = table.optimize(OptimizeOptions::default()).await.unwrap();
    assert_eq!(merged.num_files_removed, 1 + adds.len() as u64);
    let new_cube = &actions(dir.path(), 6, "add")[0]["tags"]["ZCUBE_ID"];
    assert_ne!(new_cube, cube.as_str());
    assert_eq!(ids(&table).await, (0..310).collect::<Vec<_>>());
}

#[tokio::test]
async fn files_clustered_by_other_columns_wait_for_full() {
    let dir = tempfile::tempdir().unwrap();
    let table = clustered_table(dir.path(), &[&["id"]], json!({}));
    append(&table, 0..50).await.unwrap();
    append(&table, 50..100).await.unwrap();
    table.optimize(OptimizeOptions::default()).await.unwrap();
    // ALTER TABLE ... CLUSTER BY (name), as Spark commits it.
    commit(
        dir.path(),
        4,
        &[
            json!({"commitInfo": {"timestamp": 4, "operation": "CLUSTER BY"}}),
            clustering_domain(&[&["name"]]),
        ],
    );
    let incremental = table.optimize(OptimizeOptions::default()).await.unwrap();
    assert_eq!(incremental.version, None, "{incremental:?}");
    let full = OptimizeOptions {
        full: true,
        ..OptimizeOptions::default()
    };
    let done = table.optimize(full).await.unwrap();
    assert_eq!(done.version, Some(5));
    let add = &actions(dir.path(), 5, "add")[0];
    assert_eq!(add["tags"]["ZCUBE_ZORDER_BY"], r#"["name"]"#);
    let info = &actions(dir.path(), 5, "commitInfo")[0];
    assert_eq!(info["operationParameters"]["isFull"], true);
    assert_eq!(ids(&table).await, (0..100).collect::<Vec<_>>());
}

#[tokio::test]
async fn clustered_tables_refuse_filters_z_order_and_full_without_columns() {
    let dir = tempfile::tempdir().unwrap();
    let table = clustered_table(dir.path(), &[&["id"]], json!({}));
    append(&table, 0..10).await.unwrap();
    let z_order = OptimizeOptions {
        z_order_by: vec!["id".into()],
        ..OptimizeOptions::default()
    };
    let error = table.optimize(z_order).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("DELTA_CLUSTERING_WITH_ZORDER_BY"),
        "{error}"
    );
    let filter = OptimizeOptions {
        filter: Some(crate::expr::parse_sql("id = 1").unwrap()),
        ..OptimizeOptions::default()
    };
    let error = table.optimize(filter).await.unwrap_err();
    assert!(error.to_string().contains("PARTITION_PREDICATE"), "{error}");
    // CLUSTER BY NONE: compaction again, and FULL is refused.
    commit(
        dir.path(),
        2,
        &[
            json!({"commitInfo": {"timestamp": 2, "operation": "CLUSTER BY"}}),
            clustering_domain(&[]),
        ],
    );
    let full = OptimizeOptions {
        full: true,
        ..OptimizeOptions::default()
    };
    let error = table.optimize(full).await.unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("FULL"), "{error}");
}

#[tokio::test]
async fn appends_need_statistics_on_the_clustering_columns() {
    let dir = tempfile::tempdir().unwrap();
    let one_column = json!({"delta.dataSkippingNumIndexedCols": "1"});
    let table = clustered_table(dir.path(), &[&["name"]], one_column);
    let error = append(&table, 0..10).await.unwrap_err();
    assert!(matches!(error, Error::NotAllowed(_)), "{error}");
    assert!(
        error.to_string().contains("clustering column name"),
        "{error}"
    );
    let dir = tempfile::tempdir().unwrap();
    let table = clustered_table(dir.path(), &[&["id"]], json!({}));
    append(&table, 0..10).await.unwrap();
    let add = &actions(dir.path(), 1, "add")[0];
    let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
    assert_eq!(stats["minValues"]["id"], 0);
    assert!(add.get("clusteringProvider").is_none());
}

#[tokio::test]
async fn created_clustered_tables_record_their_columns_as_spark_does() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage_at(dir.path());
    let schema = crate::ops::struct_type_from_arrow(&schema()).unwrap();
    let create = CreateTable {
        schema: schema.clone(),
        cluster_by: vec!["NAME".into(), "id".into()],
        ..CreateTable::default()
    };
    create_table(&storage, create, CreateMode::ErrorIfExists)
        .await
        .unwrap();
    let protocol = &actions(dir.path(), 0, "protocol")[0];
    let features: Vec<&str> = protocol["writerFeatures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(features.contains(&"clustering"), "{features:?}");
    assert!(features.contains(&"domainMetadata"), "{features:?}");
    let domain = &actions(dir.path(), 0, "domainMetadata")[0];
    assert_eq!(domain["domain"], "delta.clustering");
    assert_eq!(
        domain["configuration"],
        r#"{"clusteringColumns":[["name"],["id"]],"domainName":"delta.clustering"}"#
    );
    let info = &actions(dir.path(), 0, "commitInfo")[0];
    assert_eq!(info["operationParameters"]["clusterBy"], r#"["name","id"]"#);
    let metadata = &actions(dir.path(), 0, "metaData")[0];
    assert!(metadata["configuration"]
        .get("delta.feature.clustering")
        .is_none());

    let table = Table::from_storage(storage.clone());
    append(&table, 0..20).await.unwrap();
    assert_eq!(
        table
            .optimize(OptimizeOptions::default())
            .await
            .unwrap()
            .cluster_by,
        ["name", "id"]
    );

    // ALTER TABLE ... CLUSTER BY (id), then CLUSTER BY NONE.
    alter_table(&storage, Alteration::ClusterBy(vec!["id".into()]))
        .await
        .unwrap();
    let version = table.snapshot(SnapshotAt::Latest).await.unwrap().version();
    let info = &actions(dir.path(), version, "commitInfo")[0];
    assert_eq!(info["operation"], "CLUSTER BY");
    assert_eq!(
        info["operationParameters"]["oldClusteringColumns"],
        "name,id"
    );
    assert_eq!(info["operationParameters"]["newClusteringColumns"], "id");
    alter_table(&storage, Alteration::ClusterBy(Vec::new()))
        .await
        .unwrap();
    let none = OptimizeOptions {
        full: true,
        ..OptimizeOptions::default()
    };
    assert!(table.optimize(none).await.is_err());

    let refused = CreateTable {
        schema,
        partition_by: vec!["name".into()],
        cluster_by: vec!["id".into()],
        ..CreateTable::default()
    };
    let other = tempfile::tempdir().unwrap();
    let storage = storage_at(other.path());
    let error = create_table(&storage, refused, CreateMode::ErrorIfExists)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("both clustered and partitioned"),
        "{error}"
    );
}

#[tokio::test]
async fn writes_create_clustered_tables_and_check_the_columns_of_existing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage_at(dir.path());
    let write = |cluster_by: Option<Vec<String>>| {
        let storage = storage.clone();
        async move {
            let options = WriteTableOptions {
                cluster_by,
                ..WriteTableOptions::default()
            };
            write_table(&storage, schema(), stream::iter([Ok(rows(0..5))]), options).await
        }
    };
    write(Some(vec!["id".into()])).await.unwrap();
    let domain = &actions(dir.path(), 0, "domainMetadata")[0];
    assert_eq!(domain["domain"], "delta.clustering");
    write(Some(vec!["ID".into()])).await.unwrap();
    write(None).await.unwrap();
    let error = write(Some(vec!["name".into()])).await.unwrap_err().error;
    assert!(
        error
            .to_string()
            .contains("DELTA_CLUSTERING_COLUMNS_MISMATCH"),
        "{error}"
    );
}

#[tokio::test]
async fn altering_an_unclustered_table_adds_the_feature_and_partitioned_tables_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage_at(dir.path());
    write_table(
        &storage,
        schema(),
        stream::iter([Ok(rows(0..5))]),
        WriteTableOptions::default(),
    )
    .await
    .unwrap();
    alter_table(&storage, Alteration::ClusterBy(vec!["name".into()]))
        .await
        .unwrap();
    let table = Table::from_storage(storage.clone());
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let config = snapshot.table_configuration();
    assert!(config.is_feature_supported(&crate::table_config::TableFeature::Clustering));
    assert!(config.is_feature_supported(&crate::table_config::TableFeature::DomainMetadata));
    let done = table.optimize(OptimizeOptions::default()).await.unwrap();
    assert_eq!(done.cluster_by, ["name"]);
    assert_eq!(ids(&table).await, (0..5).collect::<Vec<_>>());

    let other = tempfile::tempdir().unwrap();
    let storage = storage_at(other.path());
    let partitioned = WriteTableOptions {
        partition_by: Some(vec!["name".into()]),
        ..WriteTableOptions::default()
    };
    write_table(
        &storage,
        schema(),
        stream::iter([Ok(rows(0..5))]),
        partitioned,
    )
    .await
    .unwrap();
    let error = alter_table(&storage, Alteration::ClusterBy(vec!["id".into()]))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotAllowed(_)), "{error}");
}

#[tokio::test]
async fn clustering_columns_cannot_be_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage_at(dir.path());
    let create = CreateTable {
        schema: crate::ops::struct_type_from_arrow(&schema()).unwrap(),
        configuration: HashMap::from([("delta.columnMapping.mode".into(), "name".into())]),
        cluster_by: vec!["id".into()],
        ..CreateTable::default()
    };
    create_table(&storage, create, CreateMode::ErrorIfExists)
        .await
        .unwrap();
    let drop = |column: &str| Alteration::DropColumns {
        columns: vec![column.into()],
        if_exists: false,
    };
    let error = alter_table(&storage, drop("id")).await.unwrap_err();
    assert!(
        error.to_string().contains("id is a clustering column"),
        "{error}"
    );
    alter_table(&storage, drop("name")).await.unwrap();
    // Renaming keeps the physical name the domain holds.
    let rename = Alteration::RenameColumn {
        from: "id".into(),
        to: "key".into(),
    };
    alter_table(&storage, rename).await.unwrap();
    let table = Table::from_storage(storage);
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let columns = crate::table_config::clustering::clustering_columns(
        snapshot.table_configuration(),
        snapshot.domain_metadata("delta.clustering"),
    )
    .unwrap();
    assert_eq!(columns[0].path, ["key"]);
}
