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
