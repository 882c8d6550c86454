use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};

use super::*;
use crate::expr::{parse_sql, parse_value_sql};
use crate::ops::dml::test_tables::table_of;
use crate::scan::{Scan, ScanOptions};
use crate::snapshot::SnapshotAt;
use crate::table::Table;

/// A table of `id` 0..10 and `v` = "old", in one file.
async fn target(dir: &std::path::Path, configuration: &[(&str, &str)]) -> Table {
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10));
    let values: ArrayRef = Arc::new(StringArray::from(vec!["old"; 10]));
    let batch =
        RecordBatch::try_from_iter_with_nullable([("id", ids, true), ("v", values, true)]).unwrap();
    table_of(dir, batch, configuration).await
}

fn source(ids: Vec<Option<i64>>, values: Vec<&str>) -> (Vec<RecordBatch>, SchemaRef) {
    let ids: ArrayRef = Arc::new(Int64Array::from(ids));
    let values: ArrayRef = Arc::new(StringArray::from(values));
    let batch = RecordBatch::try_from_iter([("id", ids), ("v", values)]).unwrap();
    (vec![batch.clone()], batch.schema())
}

async fn rows(table: &Table) -> Vec<(i64, String)> {
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let mut rows = Vec::new();
    for batch in scan.to_batches().await.unwrap() {
        let ids = batch.column(0).as_primitive::<Int64Type>();
        let values = batch.column(1).as_string::<i32>();
        for row in 0..batch.num_rows() {
            rows.push((ids.value(row), values.value(row).to_string()));
        }
    }
    rows.sort();
    rows
}

fn options() -> MergeOptions {
    MergeOptions {
        source_alias: "s".into(),
        target_alias: "t".into(),
        ..MergeOptions::default()
    }
}

fn upsert() -> MergeClauses {
    MergeClauses {
        matched: vec![(None, MatchedAction::UpdateAll)],
        not_matched: vec![(None, NotMatchedAction::InsertAll)],
        ..MergeClauses::default()
    }
}

#[tokio::test]
async fn an_upsert_updates_matches_and_inserts_the_rest_in_both_modes() {
    for dv in ["true", "false"] {
        let dir = tempfile::tempdir().unwrap();
        let table = target(dir.path(), &[("delta.enableDeletionVectors", dv)]).await;
        let (batches, schema) = source(vec![Some(3), Some(42), None], vec!["new", "ins", "nul"]);
        let on = parse_sql("t.id = s.id").unwrap();
        let done = merge(table.storage(), batches, schema, on, upsert(), options())
            .await
            .unwrap();
        assert!(done.committed);
        assert_eq!(done.metrics["numSourceRows"], 3);
        assert_eq!(done.metrics["numTargetRowsUpdated"], 1);
        assert_eq!(done.metrics["numTargetRowsInserted"], 2);
        let copied = if dv == "true" { 0 } else { 9 };
        assert_eq!(done.metrics["numTargetRowsCopied"], copied);
        assert_eq!(done.metrics["numOutputRows"], 3 + copied);
        assert_eq!(
            done.metrics["numTargetDeletionVectorsAdded"],
            u64::from(dv == "true")
        );
        let after = rows(&table).await;
        assert_eq!(
            after.len(),
            12,
            "a NULL key never matches: its row is inserted"
        );
        assert!(after.contains(&(3, "new".into())));
        assert!(after.contains(&(42, "ins".into())));
        assert!(after.contains(&(0, "old".into())));
    }
}

#[tokio::test]
async fn clauses_apply_in_order_and_by_source_clauses_see_unmatched_rows() {
    let dir = tempfile::tempdir().unwrap();
    let table = target(dir.path(), &[]).await;
    let (batches, schema) = source(vec![Some(1), Some(2)], vec!["a", "b"]);
    let clauses = MergeClauses {
        matched: vec![
            (Some(parse_sql("s.v = 'a'").unwrap()), MatchedAction::Delete),
            (
                None,
                MatchedAction::Update(vec![(
                    "v".into(),
                    parse_value_sql("concat(t.v, s.v)").unwrap(),
                )]),
            ),
        ],
        not_matched_by_source: vec![
            (
                Some(parse_sql("t.id >= 8").unwrap()),
                NotMatchedBySourceAction::Delete,
            ),
            (
                Some(parse_sql("t.id = 0").unwrap()),
                NotMatchedBySourceAction::Update(vec![(
                    "v".into(),
                    parse_value_sql("'zero'").unwrap(),
                )]),
            ),
        ],
        ..MergeClauses::default()
    };
    let on = parse_sql("t.id = s.id").unwrap();
    let done = merge(table.storage(), batches, schema, on, clauses, options())
        .await
        .unwrap();
    assert_eq!(done.metrics["numTargetRowsMatchedDeleted"], 1);
    assert_eq!(done.metrics["numTargetRowsMatchedUpdated"], 1);
    assert_eq!(done.metrics["numTargetRowsNotMatchedBySourceDeleted"], 2);
    assert_eq!(done.metrics["numTargetRowsNotMatchedBySourceUpdated"], 1);
    let after = rows(&table).await;
    let expected: Vec<(i64, String)> = vec![
        (0, "zero".into()),
        (2, "oldb".into()),
        (3, "old".into()),
        (4, "old".into()),
        (5, "old".into()),
        (6, "old".into()),
        (7, "old".into()),
    ];
    assert_eq!(after, expected);
}

#[tokio::test]
async fn a_target_row_matched_twice_is_an_error_unless_only_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let table = target(dir.path(), &[]).await;
    let (batches, schema) = source(vec![Some(1), Some(1)], vec!["a", "b"]);
    let on = parse_sql("t.id = s.id").unwrap();
    let failure = merge(
        table.storage(),
        batches.clone(),
        schema.clone(),
        on.clone(),
        upsert(),
        options(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(failure.error, Error::MergeMultipleMatch { .. }),
        "{}",
        failure.error
    );
    assert_eq!(table.latest_version().await.unwrap(), 0);
    let delete_only = MergeClauses {
        matched: vec![(None, MatchedAction::Delete)],
        ..MergeClauses::default()
    };
    let done = merge(table.storage(), batches, schema, on, delete_only, options())
        .await
        .unwrap();
    assert_eq!(done.metrics["numTargetRowsDeleted"], 1);
    assert_eq!(rows(&table).await.len(), 9);
}

#[tokio::test]
async fn a_target_row_matched_twice_without_matched_clauses_is_spark_s_call() {
    let dir = tempfile::tempdir().unwrap();
    let table = target(dir.path(), &[]).await;
    let (batches, schema) = source(vec![Some(1), Some(1), Some(100)], vec!["a", "b", "c"]);
    let on = parse_sql("t.id = s.id").unwrap();
    let by_source = MergeClauses {
        not_matched_by_source: vec![(None, NotMatchedBySourceAction::Delete)],
        ..MergeClauses::default()
    };
    let failure = merge(
        table.storage(),
        batches.clone(),
        schema.clone(),
        on.clone(),
        by_source,
        options(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(failure.error, Error::MergeMultipleMatch { .. }),
        "{}",
        failure.error
    );
    let insert_only = MergeClauses {
        not_matched: vec![(None, NotMatchedAction::InsertAll)],
        ..MergeClauses::default()
    };
    let done = merge(table.storage(), batches, schema, on, insert_only, options())
        .await
        .unwrap();
    assert_eq!(done.metrics["numTargetRowsInserted"], 1);
}

#[tokio::test]
async fn star_actions_ignore_extra_source_columns_unless_the_schema_evolves() {
    let dir = tempfile::tempdir().unwrap();
    let table = target(dir.path(), &[]).await;
    let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 20]));
    let values: ArrayRef = Arc::new(StringArray::from(vec!["x", "y"]));
    let extra: ArrayRef = Arc::new(StringArray::from(vec!["e1", "e2"]));
    let batch = RecordBatch::try_from_iter([("id", ids), ("v", values), ("extra", extra)]).unwrap();
    let on = parse_sql("t.id = s.id").unwrap();
    let run = |merge_schema: bool| {
        merge(
            table.storage(),
            vec![batch.clone()],
            batch.schema(),
            on.clone(),
            upsert(),
            MergeOptions {
                merge_schema,
                ..options()
            },
        )
    };
    run(false).await.unwrap();
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(snapshot.schema().fields.len(), 2);
    assert!(rows(&table).await.contains(&(20, "y".into())));

    let done = run(true).await.unwrap();
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(done.version, 2);
    let names: Vec<&str> = snapshot
        .schema()
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["id", "v", "extra"]);
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let mut extras: Vec<(i64, Option<String>)> = Vec::new();
    for batch in scan.to_batches().await.unwrap() {
        let ids = batch.column(0).as_primitive::<Int64Type>();
        let extra = batch.column(2).as_string::<i32>();
        for row in 0..batch.num_rows() {
            let value = extra.is_valid(row).then(|| extra.value(row).to_string());
            extras.push((ids.value(row), value));
        }
    }
    extras.sort();
    assert_eq!(extras.len(), 11);
    assert!(extras.contains(&(1, Some("e1".into()))));
    assert!(extras.contains(&(20, Some("e2".into()))));
    assert!(extras.contains(&(0, None)));
}

#[tokio::test]
async fn files_whose_statistics_exclude_the_source_keys_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let table = target(dir.path(), &[]).await;
    let (batches, schema) = source(vec![Some(100), Some(200)], vec!["a", "b"]);
    let on = parse_sql("t.id = s.id").unwrap();
    let done = merge(table.storage(), batches, schema, on, upsert(), options())
        .await
        .unwrap();
    assert_eq!(done.metrics["numTargetFilesAfterSkipping"], 0);
    assert_eq!(done.metrics["numTargetRowsInserted"], 2);
    assert_eq!(done.metrics["numTargetFilesRemoved"], 0);
}

#[tokio::test]
async fn commit_info_names_the_operation_and_clauses_as_spark() {
    let dir = tempfile::tempdir().unwrap();
    let table = target(dir.path(), &[]).await;
    let (batches, schema) = source(vec![Some(1)], vec!["a"]);
    let clauses = MergeClauses {
        matched: vec![(Some(parse_sql("s.v = 'a'").unwrap()), MatchedAction::Delete)],
        not_matched: vec![(None, NotMatchedAction::InsertAll)],
        ..MergeClauses::default()
    };
    let on = parse_sql("t.id = s.id").unwrap();
    merge(table.storage(), batches, schema, on, clauses, options())
        .await
        .unwrap();
    let log =
        std::fs::read_to_string(dir.path().join("_delta_log/00000000000000000001.json")).unwrap();
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let info = &first["commitInfo"];
    assert_eq!(info["operation"], "MERGE");
    let parameters = &info["operationParameters"];
    assert_eq!(
        parameters["notMatchedPredicates"],
        "[{\"actionType\":\"insert\"}]"
    );
    assert_eq!(parameters["notMatchedBySourcePredicates"], "[]");
    assert!(parameters["matchedPredicates"]
        .as_str()
        .unwrap()
        .contains("\"actionType\":\"delete\""));
    assert_eq!(info["operationMetrics"]["numTargetRowsMatchedDeleted"], "1");
}

/// A batch of Arrow `schema` from JSON lines.
fn json_batch(schema: SchemaRef, rows: &str) -> RecordBatch {
    let mut decoder = arrow_json::ReaderBuilder::new(schema)
        .build_decoder()
        .unwrap();
    decoder.decode(rows.as_bytes()).unwrap();
    decoder.flush().unwrap().unwrap()
}

/// The rows of the latest version of `table` as JSON objects (NULL fields left out), by `id`.
async fn json_rows(table: &Table) -> Vec<serde_json::Value> {
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let batches = scan.to_batches().await.unwrap();
    let mut writer = arrow_json::ArrayWriter::new(Vec::new());
    for batch in &batches {
        writer.write(batch).unwrap();
    }
    writer.finish().unwrap();
    let text = writer.into_inner();
    let mut rows: Vec<serde_json::Value> = match text.is_empty() {
        true => Vec::new(),
        false => serde_json::from_slice(&text).unwrap(),
    };
    rows.sort_by_key(|row| row["id"].as_i64());
    rows
}

fn nested_schema(element: Vec<arrow_schema::Field>) -> SchemaRef {
    use arrow_schema::{DataType as A, Field, Fields, Schema};
    let element = A::Struct(Fields::from(element));
    let entries = Field::new(
        "key_value",
        A::Struct(Fields::from(vec![
            Field::new("key", A::Utf8, false),
            Field::new("value", element.clone(), true),
        ])),
        false,
    );
    Arc::new(Schema::new(vec![
        Field::new("id", A::Int64, true),
        Field::new_list("arr", Field::new_list_field(element, true), true),
        Field::new("m", A::Map(Arc::new(entries), false), true),
    ]))
}

#[tokio::test]
async fn schema_evolution_aligns_structs_in_arrays_and_maps_by_name() {
    use arrow_schema::{DataType as A, Field};
    use serde_json::json;
    let ab = || {
        vec![
            Field::new("a", A::Int32, true),
            Field::new("b", A::Utf8, true),
        ]
    };
    let target_rows = r#"{"id": 1, "arr": [{"a": 1, "b": "x"}], "m": {"k": {"a": 1, "b": "x"}}}
        {"id": 2, "arr": [{"a": 2, "b": "y"}], "m": {"k": {"a": 2, "b": "y"}}}"#;
    // More fields than the target, in another order and case.
    let more = nested_schema(vec![
        Field::new("c", A::Int32, true),
        Field::new("B", A::Utf8, true),
        Field::new("a", A::Int32, true),
    ]);
    let more_rows = r#"{"id": 1, "arr": [{"a": 10, "B": "u", "c": 100}, null], "m": {"k": {"a": 10, "B": "u", "c": 100}}}
        {"id": 3, "arr": [{"a": 30, "B": "w", "c": 300}], "m": {"k": {"a": 30, "B": "w", "c": 300}}}"#;
    // Fewer fields than the target.
    let fewer = nested_schema(vec![Field::new("a", A::Int32, true)]);
    let fewer_rows = r#"{"id": 2, "arr": [{"a": 20}], "m": {"k": {"a": 20}}}
        {"id": 4, "arr": null, "m": {"k": {"a": 40}}}"#;
    let explicit = || MergeClauses {
        matched: vec![(
            None,
            MatchedAction::Update(vec![
                ("arr".into(), parse_value_sql("s.arr").unwrap()),
                ("t.m".into(), parse_value_sql("s.m").unwrap()),
            ]),
        )],
        not_matched: vec![(
            None,
            NotMatchedAction::Insert(vec![
                ("id".into(), parse_value_sql("s.id").unwrap()),
                ("arr".into(), parse_value_sql("s.arr").unwrap()),
                ("m".into(), parse_value_sql("s.m").unwrap()),
            ]),
        )],
        ..MergeClauses::default()
    };
    let on = parse_sql("t.id = s.id").unwrap();
    for (dv, star) in [("true", true), ("false", false)] {
        let dir = tempfile::tempdir().unwrap();
        let table = table_of(
            dir.path(),
            json_batch(nested_schema(ab()), target_rows),
            &[("delta.enableDeletionVectors", dv)],
        )
        .await;
        let clauses = || if star { upsert() } else { explicit() };
        let run = |schema: SchemaRef, rows: &str, merge_schema: bool| {
            let batch = json_batch(schema.clone(), rows);
            merge(
                table.storage(),
                vec![batch],
                schema,
                on.clone(),
                clauses(),
                MergeOptions {
                    merge_schema,
                    ..options()
                },
            )
        };
        // Without schema evolution a nested field the target lacks is refused.
        let refused = run(more.clone(), more_rows, false).await;
        assert!(
            refused.unwrap_err().to_string().contains("no such field"),
            "star: {star}"
        );
        run(more.clone(), more_rows, true).await.unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let crate::schema::DataType::Array(arr) = &snapshot.schema().fields[1].data_type else {
            panic!("arr is an array")
        };
        let names: Vec<&str> = arr
            .element_type
            .as_struct()
            .unwrap()
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        let crate::schema::DataType::Map(m) = &snapshot.schema().fields[2].data_type else {
            panic!("m is a map")
        };
        assert_eq!(m.value_type, arr.element_type);
        assert!(m.value_type.as_struct().unwrap().fields[2].nullable);
        assert_eq!(
            json_rows(&table).await,
            [
                json!({"id": 1, "arr": [{"a": 10, "b": "u", "c": 100}, null],
                       "m": {"k": {"a": 10, "b": "u", "c": 100}}}),
                json!({"id": 2, "arr": [{"a": 2, "b": "y"}], "m": {"k": {"a": 2, "b": "y"}}}),
                json!({"id": 3, "arr": [{"a": 30, "b": "w", "c": 300}],
                       "m": {"k": {"a": 30, "b": "w", "c": 300}}}),
            ],
            "star: {star}"
        );
        // Fewer nested fields: the ones the source lacks are NULL in the rows it writes.
        run(fewer.clone(), fewer_rows, true).await.unwrap();
        let after = table.snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(after.schema(), snapshot.schema());
        let rows = json_rows(&table).await;
        assert_eq!(
            rows[1],
            json!({"id": 2, "arr": [{"a": 20}], "m": {"k": {"a": 20}}})
        );
        assert_eq!(rows[3], json!({"id": 4, "m": {"k": {"a": 40}}}));
    }
}

/// MERGE inserts into tables with identity columns (spec "Identity Columns"), as Delta on
/// Spark 4.4 runs them.
mod identity {
    use serde_json::{json, Value};

    use super::*;
    use crate::ops::{write_table, WriteTableOptions};
    use crate::scan::changes::ChangeScan;
    use crate::write::changes::CHANGE_TYPE;
    use crate::write::duties::identity_high_water_marks;

    /// `id` GENERATED ALWAYS (START WITH 10 INCREMENT BY 3), `bd` GENERATED BY DEFAULT
    /// (START WITH 100 INCREMENT BY -2), `k`, `v`; the change data feed on; rows `k` 1..=3
    /// appended (ids 10, 13, 16; bd 100, 98, 96).
    async fn identity_target(dir: &std::path::Path, deletion_vectors: &str) -> Table {
        let storage =
            crate::storage::Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap();
        let table = Table::from_storage(storage);
        let schema = crate::schema::parse_schema(
            r#"{"type":"struct","fields":[
            {"name":"id","type":"long","nullable":true,"metadata":{
              "delta.identity.start":10,"delta.identity.step":3,
              "delta.identity.allowExplicitInsert":false}},
            {"name":"bd","type":"long","nullable":true,"metadata":{
              "delta.identity.start":100,"delta.identity.step":-2,
              "delta.identity.allowExplicitInsert":true}},
            {"name":"k","type":"long","nullable":true,"metadata":{}},
            {"name":"v","type":"string","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let configuration = [
            ("delta.enableChangeDataFeed", "true"),
            ("delta.enableDeletionVectors", deletion_vectors),
        ];
        let create = crate::ops::create::CreateTable {
            schema,
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        crate::ops::create::create_table(table.storage(), create, Default::default())
            .await
            .unwrap();
        let batch = keyed(&[(1, "a"), (2, "b"), (3, "c")]);
        let stream = futures::stream::iter([Ok(batch.clone())]);
        write_table(
            table.storage(),
            batch.schema(),
            stream,
            WriteTableOptions::default(),
        )
        .await
        .unwrap();
        table
    }

    /// Rows of `k` and `v`.
    fn keyed(rows: &[(i64, &str)]) -> RecordBatch {
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0)));
        let values: ArrayRef = Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1)));
        RecordBatch::try_from_iter([("k", keys), ("v", values)]).unwrap()
    }

    /// `keyed(rows)` with one more Int64 column `name` holding `values`.
    fn with_column(rows: &[(i64, &str)], name: &str, values: Vec<Option<i64>>) -> RecordBatch {
        let batch = keyed(rows);
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            ("k", batch.column(0).clone()),
            ("v", batch.column(1).clone()),
        ];
        columns.push((name, Arc::new(Int64Array::from(values))));
        RecordBatch::try_from_iter(columns).unwrap()
    }

    async fn run(
        table: &Table,
        source: RecordBatch,
        clauses: MergeClauses,
        merge_schema: bool,
    ) -> Result<CommitResult, WriteFailure> {
        let on = parse_sql("t.k = s.k").unwrap();
        let options = MergeOptions {
            merge_schema,
            ..options()
        };
        let schema = source.schema();
        merge(table.storage(), vec![source], schema, on, clauses, options).await
    }

    fn value(sql: &str) -> crate::expr::ValueExpr {
        parse_value_sql(sql).unwrap()
    }

    /// `WHEN NOT MATCHED THEN INSERT (columns) VALUES (s.columns)`.
    fn insert(columns: &[&str]) -> MergeClauses {
        let values = columns
            .iter()
            .map(|c| (c.to_string(), value(&format!("s.{c}"))))
            .collect();
        MergeClauses {
            not_matched: vec![(None, NotMatchedAction::Insert(values))],
            ..MergeClauses::default()
        }
    }

    /// The rows of the table sorted by `k`, NULL fields left out.
    async fn by_key(table: &Table) -> Vec<Value> {
        let mut rows = json_rows(table).await;
        rows.sort_by_key(|row| row["k"].as_i64());
        rows
    }

    /// The `insert` change rows of `version`, without the change columns, by `k`.
    async fn inserted_changes(table: &Table, version: u64) -> Vec<Value> {
        let scan = ChangeScan::new(table.storage(), version, Some(version), Default::default())
            .await
            .unwrap();
        let mut writer = arrow_json::ArrayWriter::new(Vec::new());
        for batch in scan.to_batches().await.unwrap() {
            writer.write(&batch).unwrap();
        }
        writer.finish().unwrap();
        let rows: Vec<Value> = serde_json::from_slice(&writer.into_inner()).unwrap();
        let mut inserted: Vec<Value> = rows
            .into_iter()
            .filter(|row| row[CHANGE_TYPE] == "insert")
            .map(|mut row| {
                let object = row.as_object_mut().unwrap();
                object.retain(|key, _| !key.starts_with('_'));
                row
            })
            .collect();
        inserted.sort_by_key(|row| row["k"].as_i64());
        inserted
    }

    async fn marks(table: &Table) -> Vec<(String, Option<i64>)> {
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        identity_high_water_marks(snapshot.schema())
            .into_iter()
            .collect()
    }

    fn commit_tags(dir: &std::path::Path, version: u64) -> Value {
        let name = format!("_delta_log/{version:020}.json");
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        first["commitInfo"]["tags"].clone()
    }

    #[tokio::test]
    async fn inserts_number_identity_columns_their_clause_leaves_out() {
        for dv in ["true", "false"] {
            let dir = tempfile::tempdir().unwrap();
            let table = identity_target(dir.path(), dv).await;
            let mut clauses = insert(&["k", "v"]);
            clauses.matched = vec![(
                None,
                MatchedAction::Update(vec![("v".into(), value("s.v"))]),
            )];
            let source = keyed(&[(2, "B"), (4, "d"), (5, "e")]);
            let done = run(&table, source, clauses, false).await.unwrap();
            assert_eq!(done.version, 2);
            assert_eq!(done.metrics["numTargetRowsInserted"], 2);
            let rows = by_key(&table).await;
            assert_eq!(
                rows,
                [
                    json!({"id": 10, "bd": 100, "k": 1, "v": "a"}),
                    json!({"id": 13, "bd": 98, "k": 2, "v": "B"}),
                    json!({"id": 16, "bd": 96, "k": 3, "v": "c"}),
                    json!({"id": 19, "bd": 94, "k": 4, "v": "d"}),
                    json!({"id": 22, "bd": 92, "k": 5, "v": "e"}),
                ],
                "deletion vectors: {dv}"
            );
            assert_eq!(inserted_changes(&table, 2).await, rows[3..].to_vec());
            assert_eq!(
                marks(&table).await,
                [("bd".to_string(), Some(92)), ("id".to_string(), Some(22))]
            );
            assert_eq!(
                commit_tags(dir.path(), 2),
                json!({"delta.identity.schemaUpdate": "true"})
            );
            // An append continues the sequence.
            let batch = keyed(&[(9, "z")]);
            let stream = futures::stream::iter([Ok(batch.clone())]);
            write_table(table.storage(), batch.schema(), stream, Default::default())
                .await
                .unwrap();
            let last = by_key(&table).await.pop().unwrap();
            assert_eq!(last, json!({"id": 25, "bd": 90, "k": 9, "v": "z"}));
        }
    }

    #[tokio::test]
    async fn by_default_values_given_are_kept_and_leave_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let table = identity_target(dir.path(), "false").await;
        let source = with_column(
            &[(2, "B"), (4, "d"), (5, "e")],
            "bd",
            vec![Some(7), None, Some(9)],
        );
        // Two insert clauses: one gives `bd`, the other leaves it to the table.
        let clauses = MergeClauses {
            not_matched: vec![
                (
                    Some(parse_sql("s.k = 4").unwrap()),
                    NotMatchedAction::Insert(vec![
                        ("bd".into(), value("s.bd")),
                        ("k".into(), value("s.k")),
                        ("v".into(), value("s.v")),
                    ]),
                ),
                (
                    None,
                    NotMatchedAction::Insert(vec![
                        ("k".into(), value("s.k")),
                        ("v".into(), value("s.v")),
                    ]),
                ),
            ],
            ..MergeClauses::default()
        };
        run(&table, source.clone(), clauses, false).await.unwrap();
        let rows = by_key(&table).await;
        assert_eq!(rows[3], json!({"id": 19, "k": 4, "v": "d"}));
        assert_eq!(rows[4], json!({"id": 22, "bd": 94, "k": 5, "v": "e"}));
        assert_eq!(inserted_changes(&table, 2).await, rows[3..].to_vec());
        assert_eq!(
            marks(&table).await,
            [("bd".to_string(), Some(94)), ("id".to_string(), Some(22))]
        );
        // Every insert gives `bd`: its mark stays.
        let source = with_column(&[(6, "f"), (7, "g")], "bd", vec![Some(7), Some(1000)]);
        run(&table, source, insert(&["k", "v", "bd"]), false)
            .await
            .unwrap();
        let rows = by_key(&table).await;
        assert_eq!(rows[5], json!({"id": 25, "bd": 7, "k": 6, "v": "f"}));
        assert_eq!(rows[6], json!({"id": 28, "bd": 1000, "k": 7, "v": "g"}));
        assert_eq!(
            marks(&table).await,
            [("bd".to_string(), Some(94)), ("id".to_string(), Some(28))]
        );
    }

    #[tokio::test]
    async fn always_values_given_are_refused_and_star_follows_spark() {
        let dir = tempfile::tempdir().unwrap();
        let table = identity_target(dir.path(), "true").await;
        let source = with_column(&[(4, "d")], "id", vec![Some(1)]);
        let refused = run(&table, source.clone(), insert(&["id", "k", "v"]), false)
            .await
            .unwrap_err();
        assert!(
            matches!(&refused.error, Error::ConstraintViolation { constraint, reason, .. }
                if constraint.contains("`id`")
                    && reason.contains("DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED")),
            "{}",
            refused.error
        );
        assert!(refused.written_files.is_empty());
        // INSERT * names every source column: the source's `id` is refused too.
        let star = MergeClauses {
            not_matched: vec![(None, NotMatchedAction::InsertAll)],
            ..MergeClauses::default()
        };
        let refused = run(&table, source, star.clone(), true).await.unwrap_err();
        assert!(matches!(refused.error, Error::ConstraintViolation { .. }));
        // Without schema evolution INSERT * needs every target column in the source.
        let lacking = keyed(&[(4, "d"), (5, "e")]);
        let refused = run(&table, lacking.clone(), star.clone(), false)
            .await
            .unwrap_err();
        assert!(matches!(refused.error, Error::SchemaMismatch { .. }));
        assert_eq!(table.latest_version().await.unwrap(), 1);
        // With it, the identity columns the source lacks are numbered.
        run(&table, lacking, star, true).await.unwrap();
        let rows = by_key(&table).await;
        assert_eq!(rows[3], json!({"id": 19, "bd": 94, "k": 4, "v": "d"}));
        assert_eq!(rows[4], json!({"id": 22, "bd": 92, "k": 5, "v": "e"}));
        assert_eq!(inserted_changes(&table, 2).await, rows[3..].to_vec());
    }
}
