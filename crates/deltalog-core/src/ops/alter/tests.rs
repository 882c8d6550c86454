use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::stream;

use super::*;
use crate::ops::create::{create_table, CreateMode, CreateTable};
use crate::ops::write::{write_table, WriteTableOptions};
use crate::schema::{PrimitiveType, TYPE_CHANGES_KEY};
use crate::storage::Storage;
use crate::table::Table;

fn table(dir: &tempfile::TempDir) -> Table {
    Table::from_storage(Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap())
}

async fn created(dir: &tempfile::TempDir, configuration: &[(&str, &str)]) -> Table {
    let table = table(dir);
    let create = CreateTable {
        schema: StructType::new(vec![
            StructField::new("a", PrimitiveType::Long, true),
            StructField::new("p", PrimitiveType::String, true),
        ]),
        partition_by: vec!["p".into()],
        configuration: configuration
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..CreateTable::default()
    };
    create_table(table.storage(), create, CreateMode::ErrorIfExists)
        .await
        .unwrap();
    table
}

async fn append(table: &Table, values: &[i64]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", ArrowType::Int64, true),
        Field::new("p", ArrowType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(values.to_vec())),
            Arc::new(StringArray::from(vec!["x"; values.len()])),
        ],
    )
    .unwrap();
    write_table(
        table.storage(),
        schema,
        stream::iter(vec![Ok(batch)]),
        WriteTableOptions::default(),
    )
    .await
    .unwrap();
}

async fn latest(table: &Table) -> Snapshot {
    table.snapshot(SnapshotAt::Latest).await.unwrap()
}

fn props(pairs: &[(&str, &str)]) -> Alteration {
    Alteration::SetProperties(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

async fn last_commit_info(table: &Table) -> Map<String, Value> {
    let snapshot = latest(table).await;
    let name = format!("_delta_log/{:020}.json", snapshot.version());
    let text = std::fs::read_to_string(
        std::path::Path::new(&table.uri().replace("file://", "")).join(name),
    )
    .unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["commitInfo"].as_object().unwrap().clone()
}

#[tokio::test]
async fn set_properties_validates_canonicalises_and_upgrades_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    let done = alter_table(
        table.storage(),
        props(&[
            ("DELTA.appendonly", "true"),
            ("delta.enableDeletionVectors", "true"),
            ("owner.team", "data"),
            ("comment", "the events"),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(done.version, 1);
    let snapshot = latest(&table).await;
    let configuration = &snapshot.metadata().configuration;
    assert_eq!(configuration["delta.appendOnly"], "true");
    assert_eq!(configuration["owner.team"], "data");
    assert_eq!(
        snapshot.metadata().description.as_deref(),
        Some("the events")
    );
    let protocol = snapshot.protocol();
    assert_eq!(
        (protocol.min_reader_version, protocol.min_writer_version),
        (3, 7)
    );
    assert!(protocol
        .writer_features
        .as_ref()
        .unwrap()
        .contains(&"deletionVectors".to_string()));
    let info = last_commit_info(&table).await;
    assert_eq!(info["operation"], "SET TBLPROPERTIES");
    let parameters: Value =
        serde_json::from_str(info["operationParameters"]["properties"].as_str().unwrap()).unwrap();
    assert_eq!(parameters["delta.appendOnly"], "true");
    assert_eq!(parameters["comment"], "the events");

    for (key, value, expected) in [
        ("delta.noSuchThing", "1", "unknown Delta table property"),
        ("delta.appendOnly", "yes", "`true` or `false`"),
        ("delta.constraints.c", "a > 0", "add_constraint"),
        ("delta.feature.noSuchFeature", "supported", "noSuchFeature"),
        ("delta.columnMapping.mode", "id", "none to name"),
        ("delta.minWriterVersion", "1", "downgrade"),
        (
            "delta.isolationLevel",
            "WriteSerializable",
            "must be Serializable",
        ),
        (
            "delta.dataSkippingNumIndexedCols",
            "-2",
            "-1 (every column) or more",
        ),
        ("delta.columnMapping.maxColumnId", "9", "cannot be set"),
    ] {
        let error = alter_table(table.storage(), props(&[(key, value)]))
            .await
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{key}: {error}");
    }
    assert_eq!(latest(&table).await.version(), 1);
}

#[tokio::test]
async fn unset_properties_and_if_exists() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[("delta.appendOnly", "true"), ("k", "v")]).await;
    let unset = |keys: &[&str], if_exists| Alteration::UnsetProperties {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        if_exists,
    };
    let error = alter_table(table.storage(), unset(&["nope"], false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no property nope"), "{error}");
    alter_table(
        table.storage(),
        unset(&["delta.APPENDONLY", "k", "nope"], true),
    )
    .await
    .unwrap();
    let snapshot = latest(&table).await;
    assert!(snapshot.metadata().configuration.is_empty());
    let info = last_commit_info(&table).await;
    assert_eq!(info["operation"], "UNSET TBLPROPERTIES");
    assert_eq!(info["operationParameters"]["ifExists"], "true");
}

#[tokio::test]
async fn columns_are_added_renamed_and_dropped_under_column_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[1, 2]).await;
    let rename = Alteration::RenameColumn {
        from: "a".into(),
        to: "b".into(),
    };
    let error = alter_table(table.storage(), rename.clone())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("delta.columnMapping.mode"),
        "{error}"
    );

    alter_table(
        table.storage(),
        props(&[("delta.columnMapping.mode", "name")]),
    )
    .await
    .unwrap();
    let snapshot = latest(&table).await;
    let a = snapshot.schema().field("a").unwrap();
    assert_eq!(a.metadata[COLUMN_MAPPING_PHYSICAL_NAME_KEY], "a");
    assert_eq!(
        snapshot.metadata().configuration[COLUMN_MAPPING_MAX_COLUMN_ID],
        "2"
    );
    let protocol = snapshot.protocol();
    assert_eq!(
        (protocol.min_reader_version, protocol.min_writer_version),
        (2, 5)
    );

    let nested = StructType::new(vec![StructField::new("x", PrimitiveType::Integer, true)]);
    let add = Alteration::AddColumns(vec![
        NewColumn {
            parent: None,
            field: StructField::new("s", DataType::Struct(Box::new(nested)), true),
        },
        NewColumn {
            parent: Some("S".into()),
            field: StructField::new("y", PrimitiveType::String, true),
        },
    ]);
    alter_table(table.storage(), add).await.unwrap();
    let snapshot = latest(&table).await;
    let s = snapshot.schema().field("s").unwrap();
    let inner = s.data_type.as_struct().unwrap();
    assert_eq!(inner.fields.len(), 2);
    assert!(inner.fields[1].metadata.contains_key(COLUMN_MAPPING_ID_KEY));
    assert_eq!(
        snapshot.metadata().configuration[COLUMN_MAPPING_MAX_COLUMN_ID],
        "5"
    );
    let info = last_commit_info(&table).await;
    assert_eq!(info["operation"], "ADD COLUMNS");

    alter_table(table.storage(), rename).await.unwrap();
    let info = last_commit_info(&table).await;
    assert_eq!(info["operationParameters"]["oldColumnPath"], "a");
    assert_eq!(info["operationParameters"]["newColumnPath"], "b");
    alter_table(
        table.storage(),
        Alteration::RenameColumn {
            from: "p".into(),
            to: "part".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(latest(&table).await.partition_columns(), ["part"]);
    alter_table(
        table.storage(),
        Alteration::RenameColumn {
            from: "part".into(),
            to: "the part".into(),
        },
    )
    .await
    .unwrap();
    let info = last_commit_info(&table).await;
    assert_eq!(info["operationParameters"]["newColumnPath"], "the part");
    alter_table(
        table.storage(),
        Alteration::RenameColumn {
            from: "`the part`".into(),
            to: "part".into(),
        },
    )
    .await
    .unwrap();

    let drop = |columns: &[&str], if_exists| Alteration::DropColumns {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        if_exists,
    };
    let error = alter_table(table.storage(), drop(&["part"], false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("partition column"), "{error}");
    let error = alter_table(table.storage(), drop(&["zzz"], false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no column zzz"), "{error}");
    alter_table(table.storage(), drop(&["s.x", "zzz"], true))
        .await
        .unwrap();
    let error = alter_table(table.storage(), drop(&["s.y"], false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("last column"), "{error}");

    let snapshot = latest(&table).await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let batches: Vec<RecordBatch> = scan
        .stream()
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let names: Vec<String> = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["b", "part", "s"]);
    let b = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(b.values(), &[1, 2]);

    let error = alter_table(
        table.storage(),
        props(&[("delta.columnMapping.mode", "none")]),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("not supported"), "{error}");
}

#[tokio::test]
async fn a_new_constraint_is_checked_against_existing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[1, 5]).await;
    let add = |expression: &str| Alteration::AddConstraint {
        name: "Positive".into(),
        expression: expression.into(),
    };
    let error = alter_table(table.storage(), add("a > 2"))
        .await
        .unwrap_err();
    let Error::ConstraintViolation { reason, .. } = &error else {
        panic!("{error}")
    };
    assert!(reason.contains("1 existing row"), "{reason}");
    assert!(reason.contains("a = 1"), "{reason}");
    assert_eq!(latest(&table).await.version(), 1);
    let error = alter_table(table.storage(), add("zz > 2"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("unknown column `zz`"), "{error}");

    alter_table(table.storage(), add("a > 0")).await.unwrap();
    let snapshot = latest(&table).await;
    assert_eq!(
        snapshot.metadata().configuration["delta.constraints.positive"],
        "a > 0"
    );
    assert_eq!(snapshot.protocol().min_writer_version, 3);
    let info = last_commit_info(&table).await;
    assert_eq!(info["operation"], "ADD CONSTRAINT");
    assert_eq!(info["operationParameters"]["expr"], "a > 0");
    let error = alter_table(table.storage(), add("a > 0"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("already exists"), "{error}");

    alter_table(
        table.storage(),
        props(&[("delta.columnMapping.mode", "name")]),
    )
    .await
    .unwrap();
    let error = alter_table(
        table.storage(),
        Alteration::RenameColumn {
            from: "a".into(),
            to: "b".into(),
        },
    )
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("CHECK constraint positive (a > 0) uses it"),
        "{error}"
    );

    let drop = |if_exists| Alteration::DropConstraint {
        name: "POSITIVE".into(),
        if_exists,
    };
    alter_table(table.storage(), drop(false)).await.unwrap();
    let info = last_commit_info(&table).await;
    assert_eq!(info["operationParameters"]["existed"], "true");
    assert!(latest(&table)
        .await
        .metadata()
        .configuration
        .keys()
        .all(|k| !k.starts_with("delta.constraints")));
    let error = alter_table(table.storage(), drop(false)).await.unwrap_err();
    assert!(error.to_string().contains("no constraint"), "{error}");
    alter_table(table.storage(), drop(true)).await.unwrap();
    let info = last_commit_info(&table).await;
    assert_eq!(info["operationParameters"]["existed"], "false");
}

#[tokio::test]
async fn a_null_value_breaks_a_new_constraint() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", ArrowType::Int64, true),
        Field::new("p", ArrowType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![Some(3), None])),
            Arc::new(StringArray::from(vec!["x", "x"])),
        ],
    )
    .unwrap();
    write_table(
        table.storage(),
        schema,
        stream::iter(vec![Ok(batch)]),
        WriteTableOptions::default(),
    )
    .await
    .unwrap();
    let error = alter_table(
        table.storage(),
        Alteration::AddConstraint {
            name: "c".into(),
            expression: "a > 0".into(),
        },
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("a = NULL"), "{error}");
}

#[tokio::test]
async fn features_are_added_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    alter_table(
        table.storage(),
        Alteration::AddFeature("DeletionVectors".into()),
    )
    .await
    .unwrap();
    let snapshot = latest(&table).await;
    assert_eq!(
        snapshot.protocol().reader_features,
        Some(vec!["deletionVectors".to_string()])
    );
    assert!(!snapshot
        .metadata()
        .configuration
        .keys()
        .any(|k| k.starts_with("delta.feature.")));
    let error = alter_table(
        table.storage(),
        Alteration::AddFeature("teleportation".into()),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::UnsupportedFeature { .. }), "{error}");
    let error = alter_table(
        table.storage(),
        Alteration::AddFeature("icebergWriterCompatV1".into()),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::UnsupportedFeature { .. }), "{error}");
    alter_table(table.storage(), Alteration::SetDescription("about".into()))
        .await
        .unwrap();
    assert_eq!(
        latest(&table).await.metadata().description.as_deref(),
        Some("about")
    );
}

#[tokio::test]
async fn enabling_row_tracking_on_a_table_with_files_backfills_row_ids() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[1, 2]).await;
    append(&table, &[3]).await;
    let done = alter_table(
        table.storage(),
        props(&[("delta.enableRowTracking", "true")]),
    )
    .await
    .unwrap();
    assert_eq!(done.version, 5, "upgrade, backfill, then the property");
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert!(snapshot.table_configuration().is_row_tracking_enabled());
    let reloaded = Snapshot::load(table.storage(), SnapshotAt::Latest)
        .await
        .unwrap();
    assert_eq!(
        reloaded.num_files().await.unwrap(),
        2,
        "the .crc counts re-adds once"
    );
    let backfill = dir.path().join("_delta_log/00000000000000000004.json");
    let text = std::fs::read_to_string(backfill).unwrap();
    assert!(text.contains("ROW TRACKING BACKFILL"), "{text}");
    let mut bases = Vec::new();
    for adds in snapshot.add_actions().await.unwrap() {
        let column = adds.column_by_name("baseRowId").unwrap();
        let column =
            arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Int64Type>(column);
        bases.extend(column.iter());
    }
    bases.sort();
    // One file holds one row, the other two: whichever comes first takes ids from 0.
    assert!(
        bases == [Some(0), Some(1)] || bases == [Some(0), Some(2)],
        "{bases:?}"
    );
}

#[test]
fn paths_resolve_without_case_and_quote_as_spark_logs_them() {
    let schema = StructType::new(vec![
        StructField::new("a.b", PrimitiveType::Long, true),
        StructField::new(
            "s",
            DataType::Struct(Box::new(StructType::new(vec![StructField::new(
                "X",
                PrimitiveType::Long,
                true,
            )]))),
            true,
        ),
    ]);
    assert_eq!(
        resolve(&schema, &parse_path("`a.b`").unwrap()).unwrap(),
        [0]
    );
    assert_eq!(
        resolve(&schema, &parse_path("S.x").unwrap()).unwrap(),
        [1, 0]
    );
    assert!(resolve(&schema, &parse_path("s.y").unwrap()).is_err());
    assert_eq!(quote_path(&["a.b".into(), "c".into()]), "`a.b`.c");
}

#[tokio::test]
async fn a_constraint_checked_on_a_snapshot_fails_when_rows_were_appended_since() {
    let dir = tempfile::tempdir().unwrap();
    let table = created(&dir, &[]).await;
    append(&table, &[1]).await;
    let read = latest(&table).await;
    append(&table, &[-1]).await;
    let alteration = Alteration::AddConstraint {
        name: "positive".into(),
        expression: "a > 0".into(),
    };
    let error = alter_snapshot(&read, alteration).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::CommitConflict {
                kind: crate::error::ConflictKind::ConcurrentAppend,
                ..
            }
        ),
        "{error}"
    );
    let snapshot = latest(&table).await;
    assert_eq!(snapshot.version(), 2);
    assert!(snapshot.metadata().configuration.is_empty());
}

#[tokio::test]
async fn change_column_widens_comments_relaxes_and_moves() {
    use arrow_array::cast::AsArray;
    use arrow_array::Int32Array;
    let dir = tempfile::tempdir().unwrap();
    let table = table(&dir);
    let create = CreateTable {
        schema: StructType::new(vec![
            StructField::new("i", PrimitiveType::Integer, false),
            StructField::new("s", PrimitiveType::String, true),
            StructField::new("p", PrimitiveType::String, true),
        ]),
        partition_by: vec!["p".into()],
        ..CreateTable::default()
    };
    create_table(table.storage(), create, CreateMode::ErrorIfExists)
        .await
        .unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", ArrowType::Int32, false),
        Field::new("s", ArrowType::Utf8, true),
        Field::new("p", ArrowType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(StringArray::from(vec!["x", "y"])),
        ],
    )
    .unwrap();
    let batches = stream::iter(vec![Ok(batch)]);
    write_table(
        table.storage(),
        schema,
        batches,
        WriteTableOptions::default(),
    )
    .await
    .unwrap();
    let change = |column: &str| ColumnChange {
        column: column.into(),
        ..ColumnChange::default()
    };
    let to_long = ColumnChange {
        data_type: Some(PrimitiveType::Long),
        ..change("I")
    };
    let refused = alter_table(table.storage(), Alteration::ChangeColumn(to_long.clone())).await;
    assert!(matches!(refused, Err(Error::NotAllowed(_))), "{refused:?}");
    alter_table(
        table.storage(),
        props(&[("delta.enableTypeWidening", "true")]),
    )
    .await
    .unwrap();
    alter_table(table.storage(), Alteration::ChangeColumn(to_long))
        .await
        .unwrap();
    let snapshot = latest(&table).await;
    let field = &snapshot.schema().fields[0];
    assert_eq!(field.data_type, DataType::Primitive(PrimitiveType::Long));
    assert_eq!(
        field.metadata[TYPE_CHANGES_KEY],
        serde_json::json!([{"fromType": "integer", "toType": "long"}])
    );
    let info = last_commit_info(&table).await;
    assert_eq!(info["operation"], "CHANGE COLUMN");
    let column: Value =
        serde_json::from_str(info["operationParameters"]["column"].as_str().unwrap()).unwrap();
    assert_eq!(column["name"], "i");
    assert_eq!(column["type"], "long");
    // The old file's int32 values read as longs.
    let batches = crate::scan::Scan::new(&snapshot, crate::scan::ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let column = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
            column.values().to_vec()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);

    for (bad, kind) in [
        (
            ColumnChange {
                data_type: Some(PrimitiveType::Integer),
                ..change("i")
            },
            "only widenings",
        ),
        (
            ColumnChange {
                data_type: Some(PrimitiveType::Long),
                ..change("p")
            },
            "partition column",
        ),
        (change("i"), "no change"),
        (
            ColumnChange {
                drop_not_null: true,
                ..change("nope")
            },
            "no column",
        ),
    ] {
        let error = alter_table(table.storage(), Alteration::ChangeColumn(bad))
            .await
            .unwrap_err();
        assert!(error.to_string().contains(kind), "{kind}: {error}");
    }

    let relaxed = ColumnChange {
        comment: Some("the id".into()),
        drop_not_null: true,
        position: Some(ColumnPosition::After("s".into())),
        ..change("i")
    };
    alter_table(table.storage(), Alteration::ChangeColumn(relaxed))
        .await
        .unwrap();
    let info = last_commit_info(&table).await;
    assert_eq!(info["operationParameters"]["position"], "AFTER s");
    let snapshot = latest(&table).await;
    let names: Vec<&str> = snapshot
        .schema()
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["s", "i", "p"]);
    let field = &snapshot.schema().fields[1];
    assert!(field.nullable);
    assert_eq!(field.metadata["comment"], "the id");
    let first = ColumnChange {
        position: Some(ColumnPosition::First),
        ..change("p")
    };
    alter_table(table.storage(), Alteration::ChangeColumn(first))
        .await
        .unwrap();
    let snapshot = latest(&table).await;
    let names: Vec<&str> = snapshot
        .schema()
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["p", "s", "i"]);
    assert_eq!(ids_after_moves(&snapshot).await, 2);
}

/// The rows of `snapshot` (every column reads after the columns moved).
async fn ids_after_moves(snapshot: &Snapshot) -> usize {
    let batches = crate::scan::Scan::new(snapshot, crate::scan::ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    batches.iter().map(RecordBatch::num_rows).sum()
}

/// A table of Delta schema `schema` (JSON) with type widening enabled, holding `rows` (JSON
/// lines) in one file.
async fn nested_table(dir: &tempfile::TempDir, schema: Value, rows: &str) -> Table {
    let table = table(dir);
    let schema: StructType = serde_json::from_value(schema).unwrap();
    let arrow = Arc::new(crate::schema::to_arrow_schema(&schema).unwrap());
    let create = CreateTable {
        schema,
        configuration: [("delta.enableTypeWidening".to_string(), "true".to_string())].into(),
        ..CreateTable::default()
    };
    create_table(table.storage(), create, CreateMode::ErrorIfExists)
        .await
        .unwrap();
    let mut decoder = arrow_json::ReaderBuilder::new(arrow.clone())
        .build_decoder()
        .unwrap();
    decoder.decode(rows.as_bytes()).unwrap();
    let batch = decoder.flush().unwrap().unwrap();
    write_table(
        table.storage(),
        arrow,
        stream::iter(vec![Ok(batch)]),
        WriteTableOptions::default(),
    )
    .await
    .unwrap();
    table
}

#[tokio::test]
async fn change_column_widens_array_elements_map_keys_and_values_and_fields_inside() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    let dir = tempfile::tempdir().unwrap();
    let schema = serde_json::json!({"type": "struct", "fields": [
        {"name": "arr", "type": {"type": "array", "elementType": "integer", "containsNull": false},
         "nullable": true, "metadata": {}},
        {"name": "m", "type": {"type": "map", "keyType": "integer", "valueType": "short",
         "valueContainsNull": true}, "nullable": true, "metadata": {}},
        {"name": "sa", "type": {"type": "array", "elementType": {"type": "struct", "fields": [
            {"name": "x", "type": "integer", "nullable": true, "metadata": {}}]},
         "containsNull": true}, "nullable": true, "metadata": {}},
        {"name": "aa", "type": {"type": "array", "elementType": {"type": "array",
         "elementType": "short", "containsNull": true}, "containsNull": true},
         "nullable": true, "metadata": {}}
    ]});
    let rows = r#"{"arr": [1, 2], "m": {"3": 4}, "sa": [{"x": 5}], "aa": [[6]]}"#;
    let table = nested_table(&dir, schema, rows).await;
    let change = |column: &str, to: PrimitiveType| ColumnChange {
        column: column.into(),
        data_type: Some(to),
        ..ColumnChange::default()
    };
    for (column, to, name, nullable) in [
        ("arr.element", PrimitiveType::Long, "arr.element", false),
        ("m.key", PrimitiveType::Long, "m.key", false),
        ("M.value", PrimitiveType::Integer, "m.value", true),
        ("sa.element.X", PrimitiveType::Long, "sa.element.x", true),
        (
            "aa.element.element",
            PrimitiveType::Integer,
            "aa.element.element",
            true,
        ),
    ] {
        alter_table(
            table.storage(),
            Alteration::ChangeColumn(change(column, to)),
        )
        .await
        .unwrap();
        let info = last_commit_info(&table).await;
        let logged: Value =
            serde_json::from_str(info["operationParameters"]["column"].as_str().unwrap()).unwrap();
        assert_eq!(logged["name"], name);
        assert_eq!(logged["type"], to.type_name());
        assert_eq!(logged["nullable"], nullable, "{column}");
    }
    let snapshot = latest(&table).await;
    let fields = &snapshot.schema().fields;
    let changes = |field: &StructField| field.metadata[TYPE_CHANGES_KEY].clone();
    assert_eq!(
        changes(&fields[0]),
        serde_json::json!([{"fromType": "integer", "toType": "long", "fieldPath": "element"}])
    );
    assert_eq!(
        changes(&fields[1]),
        serde_json::json!([
            {"fromType": "integer", "toType": "long", "fieldPath": "key"},
            {"fromType": "short", "toType": "integer", "fieldPath": "value"}
        ])
    );
    let DataType::Array(sa) = &fields[2].data_type else {
        panic!("sa is an array")
    };
    let x = &sa.element_type.as_struct().unwrap().fields[0];
    assert_eq!(x.data_type, DataType::Primitive(PrimitiveType::Long));
    assert_eq!(
        changes(x),
        serde_json::json!([{"fromType": "integer", "toType": "long"}])
    );
    assert!(!fields[2].metadata.contains_key(TYPE_CHANGES_KEY));
    assert_eq!(
        changes(&fields[3]),
        serde_json::json!([
            {"fromType": "short", "toType": "integer", "fieldPath": "element.element"}
        ])
    );
    // The file written before reads in the wider types.
    let batches = crate::scan::Scan::new(&snapshot, crate::scan::ScanOptions::default())
        .await
        .unwrap()
        .to_batches()
        .await
        .unwrap();
    let batch = &batches[0];
    let arr = batch.column(0).as_list::<i32>();
    assert_eq!(arr.values().as_primitive::<Int64Type>().values(), &[1, 2]);
    let m = batch.column(1).as_map();
    assert_eq!(m.keys().as_primitive::<Int64Type>().values(), &[3]);
    assert_eq!(m.values().as_primitive::<Int32Type>().values(), &[4]);
    let sa = batch.column(2).as_list::<i32>();
    let x = sa
        .values()
        .as_struct()
        .column(0)
        .as_primitive::<Int64Type>();
    assert_eq!(x.values(), &[5]);
    let aa = batch.column(3).as_list::<i32>();
    let inner = aa.values().as_list::<i32>();
    assert_eq!(inner.values().as_primitive::<Int32Type>().values(), &[6]);

    let refusals = [
        (
            change("arr.element", PrimitiveType::String),
            "only widenings",
        ),
        (
            change("sa.element", PrimitiveType::Long),
            "only the type of a primitive",
        ),
        (
            change(
                "arr.ELEMENT",
                PrimitiveType::Decimal {
                    precision: 25,
                    scale: 0,
                },
            ),
            "no column",
        ),
        (change("arr.x", PrimitiveType::Long), "no column"),
        (
            ColumnChange {
                comment: Some("no".into()),
                ..change("arr.element", PrimitiveType::Long)
            },
            "DELTA_UNSUPPORTED_COMMENT_MAP_ARRAY",
        ),
        (
            ColumnChange {
                column: "arr.element".into(),
                drop_not_null: true,
                ..ColumnChange::default()
            },
            "nullability",
        ),
        (
            ColumnChange {
                column: "m.value".into(),
                position: Some(ColumnPosition::First),
                ..ColumnChange::default()
            },
            "only struct fields",
        ),
    ];
    for (bad, kind) in refusals {
        let error = alter_table(table.storage(), Alteration::ChangeColumn(bad))
            .await
            .unwrap_err();
        assert!(error.to_string().contains(kind), "{kind}: {error}");
    }
    // A field inside an array keeps the struct field changes: comment, DROP NOT NULL, moves.
    let relaxed = ColumnChange {
        column: "sa.element.x".into(),
        comment: Some("inner".into()),
        drop_not_null: true,
        position: Some(ColumnPosition::First),
        ..ColumnChange::default()
    };
    alter_table(table.storage(), Alteration::ChangeColumn(relaxed))
        .await
        .unwrap();
    // Without type widening, Spark's DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP.
    alter_table(
        table.storage(),
        props(&[("delta.enableTypeWidening", "false")]),
    )
    .await
    .unwrap();
    let refused = alter_table(
        table.storage(),
        Alteration::ChangeColumn(change("m.value", PrimitiveType::Long)),
    )
    .await;
    assert!(matches!(refused, Err(Error::NotAllowed(_))), "{refused:?}");
}
