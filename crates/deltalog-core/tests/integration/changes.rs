//! The change data feed (spec "Change Data Files", "Add CDC File", "Reader Requirements for
//! AddCDCFile"; catalogue B-C, E3, G-20) on hand-made tables: inserts and deletes from add and
//! remove actions, commits with change data files (column mapping too), deletion vector updates
//! and restores, `dataChange` false commits, schema growth, partition values, filters and
//! columns, and every refusal (change data feed off in the range, non-additive schema change,
//! reserved column names, bad versions).
//!
//! Golden tables: `deltalog-getChanges` (a commit with a `cdc` action beside a `remove`), and
//! tables written by Spark with deletion vectors, updates, merges and restores, read with the
//! change data feed switched on in their metadata: at every version, the rows of the previous
//! version plus the inserts minus the deletes of the version are the rows of the version.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arrow::compute::{cast, concat_batches};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use deltalog_core::actions::deletion_vector::encode_inline;
use deltalog_core::expr::parse_sql;
use deltalog_core::scan::changes::{changes, ChangeScan, ChangesOptions};
use deltalog_core::scan::{Scan, ScanOptions};
use deltalog_core::{Error, SnapshotAt, Table};
use futures::TryStreamExt;
use parquet::arrow::ArrowWriter;
use roaring::RoaringTreemap;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Inserts, deletes, dataChange false
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn adds_are_inserts_and_removes_are_deletes() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1, 2, 3], &["x", "y", "z"]);
    let b = t.data_file("b.parquet", &[4, 5], &["u", "v"]);
    let c = t.data_file("c.parquet", &[4, 5], &["u", "v"]);
    t.commit(
        0,
        &[
            ict(1000),
            protocol(),
            metadata(id_name(), &[], true),
            add(&a),
        ],
    );
    t.commit(1, &[ict(2000), add(&b)]);
    t.commit(2, &[ict(3000), remove(&a)]);
    // OPTIMIZE: b rewritten as c, no data change.
    t.commit(
        3,
        &[
            ict(4000),
            remove_with(&b, json!({"dataChange": false})),
            add_with(&c, json!({"dataChange": false})),
        ],
    );

    let (schema, batches) = read_all(&t, 0, None, ChangesOptions::default()).await;
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "id",
            "name",
            "_change_type",
            "_commit_version",
            "_commit_timestamp"
        ]
    );
    assert_eq!(schema.field(2).data_type(), &DataType::Utf8);
    assert_eq!(schema.field(3).data_type(), &DataType::Int64);
    assert_eq!(
        schema.field(4).data_type(),
        &DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
    );
    assert_eq!(
        rows(&batches),
        [
            "1|x|delete|2|3000000",
            "1|x|insert|0|1000000",
            "2|y|delete|2|3000000",
            "2|y|insert|0|1000000",
            "3|z|delete|2|3000000",
            "3|z|insert|0|1000000",
            "4|u|insert|1|2000000",
            "5|v|insert|1|2000000",
        ]
    );
    // The OPTIMIZE commit alone changes nothing.
    let (_, optimize) = read_all(&t, 3, Some(3), ChangesOptions::default()).await;
    assert!(rows(&optimize).is_empty());
}

#[tokio::test]
async fn batches_come_in_commit_order_and_the_function_form_matches() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1], &["x"]);
    let b = t.data_file("b.parquet", &[2], &["y"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], true), add(&a)]);
    t.commit(1, &[add(&b)]);
    t.commit(2, &[remove(&a)]);
    let table = t.table().await;
    let (schema, stream) = changes(table.storage(), 0, None, ChangesOptions::default())
        .await
        .unwrap();
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    assert!(batches.iter().all(|b| b.schema() == schema));
    let in_order: Vec<String> = batches.iter().flat_map(row_strings).collect();
    assert_eq!(in_order.len(), 3);
    assert!(in_order[0].starts_with("1|x|insert|0|"));
    assert!(in_order[1].starts_with("2|y|insert|1|"));
    assert!(in_order[2].starts_with("1|x|delete|2|"));
}

#[tokio::test]
async fn commit_timestamp_is_the_file_time_without_in_commit_timestamp() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1], &["x"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], true)]);
    t.commit(1, &[json!({"commitInfo": {"timestamp": 5}}), add(&a)]);
    let earlier = SystemTime::UNIX_EPOCH + Duration::from_millis(1_600_000_000_000);
    t.set_commit_time(0, earlier);
    let time = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
    t.set_commit_time(1, time);
    let (_, batches) = read_all(&t, 1, None, ChangesOptions::default()).await;
    assert_eq!(rows(&batches), ["1|x|insert|1|1700000000123000"]);
}

#[tokio::test]
async fn a_removed_file_does_not_repeat_rows_its_deletion_vector_deleted() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[0, 1, 2, 3], &["a", "b", "c", "d"]);
    let dv = dv_json(&[1, 2]);
    t.commit(0, &[ict(1000), protocol(), metadata(id_name(), &[], true)]);
    t.commit(1, &[ict(2000), add_with(&a, json!({"deletionVector": dv}))]);
    t.commit(
        2,
        &[ict(3000), remove_with(&a, json!({"deletionVector": dv}))],
    );
    let (_, batches) = read_all(&t, 1, None, ChangesOptions::default()).await;
    assert_eq!(
        rows(&batches),
        [
            "0|a|delete|2|3000000",
            "0|a|insert|1|2000000",
            "3|d|delete|2|3000000",
            "3|d|insert|1|2000000",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Change data files
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_commit_with_cdc_actions_reads_only_its_change_data_files() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1, 2], &["x", "y"]);
    let rewritten = t.data_file("a2.parquet", &[1], &["X"]);
    let cdc = t.change_file(
        "_change_data/cdc-1.parquet",
        &[1, 1, 2],
        &["x", "X", "y"],
        &["update_preimage", "update_postimage", "delete"],
    );
    t.commit(
        0,
        &[
            ict(1000),
            protocol(),
            metadata(id_name(), &[], true),
            add(&a),
        ],
    );
    t.commit(
        1,
        &[
            ict(2000),
            remove(&a),
            add(&rewritten),
            cdc_action(&cdc, json!({})),
        ],
    );
    let (_, batches) = read_all(&t, 0, None, ChangesOptions::default()).await;
    assert_eq!(
        rows(&batches),
        [
            "1|X|update_postimage|1|2000000",
            "1|x|insert|0|1000000",
            "1|x|update_preimage|1|2000000",
            "2|y|delete|1|2000000",
            "2|y|insert|0|1000000",
        ]
    );
}

#[tokio::test]
async fn a_change_data_file_without_change_type_is_a_corrupt_file() {
    let t = TestTable::new();
    let cdc = t.data_file("_change_data/bad.parquet", &[1], &["x"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], true)]);
    t.commit(1, &[cdc_action(&cdc, json!({}))]);
    let scan = ChangeScan::new(
        t.table().await.storage(),
        1,
        None,
        ChangesOptions::default(),
    )
    .await
    .unwrap();
    let error = scan.to_batches().await.unwrap_err();
    assert!(matches!(error, Error::CorruptDataFile { .. }), "{error}");
    assert!(error.to_string().contains("bad.parquet"), "{error}");
}

#[tokio::test]
async fn change_data_files_of_a_column_mapped_table_use_physical_names() {
    let t = TestTable::new();
    let mapped = |name: &str, id: i32, physical: &str, data_type: &str| {
        json!({"name": name, "type": data_type, "nullable": true, "metadata": {
            "delta.columnMapping.id": id, "delta.columnMapping.physicalName": physical}})
    };
    let fields = json!([
        mapped("id", 1, "col-1", "long"),
        mapped("name", 2, "col-2", "string")
    ]);
    let mut meta = metadata(fields, &[], true);
    meta["metaData"]["configuration"]["delta.columnMapping.mode"] = json!("name");
    let protocol = json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["columnMapping"],
        "writerFeatures": ["columnMapping", "changeDataFeed"]}});
    let a = t.write(
        "a.parquet",
        batch(vec![("col-1", longs(&[1])), ("col-2", strings(&["x"]))]),
    );
    let cdc = t.write(
        "_change_data/c.parquet",
        batch(vec![
            ("col-1", longs(&[1, 1])),
            ("col-2", strings(&["x", "X"])),
            (
                "_change_type",
                strings(&["update_preimage", "update_postimage"]),
            ),
        ]),
    );
    t.commit(0, &[ict(1000), protocol, meta, add(&a)]);
    t.commit(1, &[ict(2000), cdc_action(&cdc, json!({}))]);
    let (_, batches) = read_all(&t, 0, None, ChangesOptions::default()).await;
    assert_eq!(
        rows(&batches),
        [
            "1|X|update_postimage|1|2000000",
            "1|x|insert|0|1000000",
            "1|x|update_preimage|1|2000000",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Deletion vector updates
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn deletion_vector_updates_delete_only_the_newly_marked_rows_and_restores_insert() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[0, 1, 2, 3, 4], &["a", "b", "c", "d", "e"]);
    let (dv13, dv134, dv1) = (dv_json(&[1, 3]), dv_json(&[1, 3, 4]), dv_json(&[1]));
    t.commit(
        0,
        &[
            ict(1000),
            protocol(),
            metadata(id_name(), &[], true),
            add(&a),
        ],
    );
    // DELETE rows 1 and 3 of a file without a deletion vector.
    t.commit(
        1,
        &[
            ict(2000),
            remove(&a),
            add_with(&a, json!({"deletionVector": dv13})),
        ],
    );
    // DELETE row 4 as well.
    t.commit(
        2,
        &[
            ict(3000),
            remove_with(&a, json!({"deletionVector": dv13})),
            add_with(&a, json!({"deletionVector": dv134})),
        ],
    );
    // RESTORE to a state where only row 1 was deleted: rows 3 and 4 come back.
    t.commit(
        3,
        &[
            ict(4000),
            remove_with(&a, json!({"deletionVector": dv134})),
            add_with(&a, json!({"deletionVector": dv1})),
        ],
    );
    let (_, batches) = read_all(&t, 1, None, ChangesOptions::default()).await;
    assert_eq!(
        rows(&batches),
        [
            "1|b|delete|1|2000000",
            "3|d|delete|1|2000000",
            "3|d|insert|3|4000000",
            "4|e|delete|2|3000000",
            "4|e|insert|3|4000000",
        ]
    );
}

#[tokio::test]
async fn re_adding_a_file_with_the_same_deletion_vector_changes_nothing() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[0, 1], &["a", "b"]);
    let dv = dv_json(&[0]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], true)]);
    t.commit(1, &[add_with(&a, json!({"deletionVector": dv}))]);
    t.commit(
        2,
        &[
            remove_with(&a, json!({"deletionVector": dv})),
            add_with(&a, json!({"deletionVector": dv})),
        ],
    );
    let scan = ChangeScan::new(
        t.table().await.storage(),
        2,
        None,
        ChangesOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(scan.num_files(), 0);
    assert!(scan.to_batches().await.unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Partitions, schema growth, columns, filters
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn partition_values_come_from_each_file_action() {
    let t = TestTable::new();
    let fields = json!([
        field("id", "long"),
        field("name", "string"),
        field("part", "integer")
    ]);
    let a = t.data_file("part=1/a.parquet", &[1], &["x"]);
    let cdc = t.change_file("_change_data/part=2/c.parquet", &[7], &["q"], &["delete"]);
    t.commit(
        0,
        &[ict(1000), protocol(), metadata(fields, &["part"], true)],
    );
    t.commit(
        1,
        &[
            ict(2000),
            add_with(&a, json!({"partitionValues": {"part": "1"}})),
        ],
    );
    t.commit(
        2,
        &[
            ict(3000),
            cdc_action(&cdc, json!({"partitionValues": {"part": "2"}})),
        ],
    );
    let (_, batches) = read_all(&t, 0, None, ChangesOptions::default()).await;
    assert_eq!(
        rows(&batches),
        ["1|x|1|insert|1|2000000", "7|q|2|delete|2|3000000"]
    );
}

#[tokio::test]
async fn files_written_before_a_column_was_added_read_it_as_null() {
    let t = TestTable::new();
    let old = t.write("old.parquet", batch(vec![("id", longs(&[1]))]));
    let new = t.data_file("new.parquet", &[2], &["y"]);
    t.commit(
        0,
        &[
            ict(1000),
            protocol(),
            metadata(json!([field("id", "long")]), &[], true),
            add(&old),
        ],
    );
    t.commit(1, &[ict(2000), metadata(id_name(), &[], true)]);
    t.commit(2, &[ict(3000), add(&new), remove(&old)]);
    let (schema, batches) = read_all(&t, 0, None, ChangesOptions::default()).await;
    assert_eq!(schema.field(1).name(), "name");
    assert_eq!(
        rows(&batches),
        [
            "1|null|delete|2|3000000",
            "1|null|insert|0|1000000",
            "2|y|insert|2|3000000"
        ]
    );
}

#[tokio::test]
async fn columns_and_filters_may_name_change_columns() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1, 2, 3], &["x", "y", "z"]);
    let b = t.data_file("b.parquet", &[4], &["w"]);
    t.commit(
        0,
        &[
            ict(1000),
            protocol(),
            metadata(id_name(), &[], true),
            add(&a),
        ],
    );
    t.commit(1, &[ict(2000), add(&b)]);
    t.commit(2, &[ict(3000), remove(&a)]);
    let options = ChangesOptions {
        columns: Some(vec!["_commit_version".into(), "ID".into()]),
        filter: Some(parse_sql("_change_type = 'delete' AND id >= 2").unwrap()),
        ..ChangesOptions::default()
    };
    let (schema, batches) = read_all(&t, 0, None, options).await;
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["_commit_version", "id"]);
    assert_eq!(rows(&batches), ["2|2", "2|3"]);

    // A filter on the constant columns skips whole files.
    let options = ChangesOptions {
        filter: Some(parse_sql("_commit_version = 1").unwrap()),
        ..ChangesOptions::default()
    };
    let scan = ChangeScan::new(t.table().await.storage(), 0, None, options)
        .await
        .unwrap();
    assert_eq!(scan.num_files(), 1);
    assert_eq!(
        rows(&scan.to_batches().await.unwrap()),
        ["4|w|insert|1|2000000"]
    );
}

#[tokio::test]
async fn unknown_columns_and_bad_filters_are_invalid_arguments() {
    let t = TestTable::new();
    t.commit(0, &[protocol(), metadata(id_name(), &[], true)]);
    let table = t.table().await;
    for options in [
        ChangesOptions {
            columns: Some(vec!["nope".into()]),
            ..ChangesOptions::default()
        },
        ChangesOptions {
            filter: Some(parse_sql("nope = 1").unwrap()),
            ..ChangesOptions::default()
        },
        ChangesOptions {
            filter: Some(parse_sql("_commit_version = 'abc'").unwrap()),
            ..ChangesOptions::default()
        },
    ] {
        let error = ChangeScan::new(table.storage(), 0, None, options)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    }
}

// ---------------------------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_range_where_the_change_data_feed_was_off_is_refused() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1], &["x"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], true), add(&a)]);
    t.commit(1, &[metadata(id_name(), &[], false)]);
    t.commit(2, &[metadata(id_name(), &[], true)]);
    t.commit(3, &[remove(&a)]);
    let table = t.table().await;
    for (start, end) in [(0, Some(3)), (1, None), (0, Some(1))] {
        let error = ChangeScan::new(table.storage(), start, end, ChangesOptions::default())
            .await
            .unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, Error::NotAllowed(_)), "{error}");
        assert!(text.contains("version 1"), "{text}");
        assert!(text.contains("delta.enableChangeDataFeed"), "{text}");
    }
    let (_, batches) = read_all(&t, 2, None, ChangesOptions::default()).await;
    assert_eq!(row_count(&batches), 1);
}

#[tokio::test]
async fn enabling_the_change_data_feed_mid_range_refuses_the_part_before() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1], &["x"]);
    let b = t.data_file("b.parquet", &[2], &["y"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], false), add(&a)]);
    t.commit(1, &[ict(2000), metadata(id_name(), &[], true), add(&b)]);
    t.commit(2, &[ict(3000), remove(&a)]);
    let table = t.table().await;
    let error = ChangeScan::new(table.storage(), 0, None, ChangesOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotAllowed(_)), "{error}");
    assert!(error.to_string().contains("version 0"), "{error}");
    // From the enabling commit on, the changes are there (its own add included).
    let (_, batches) = read_all(&t, 1, None, ChangesOptions::default()).await;
    assert_eq!(
        rows(&batches),
        ["1|x|delete|2|3000000", "2|y|insert|1|2000000"]
    );
}

#[tokio::test]
async fn a_table_without_the_property_is_refused() {
    let t = TestTable::new();
    t.commit(0, &[protocol(), metadata(id_name(), &[], false)]);
    let error = ChangeScan::new(
        t.table().await.storage(),
        0,
        None,
        ChangesOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::NotAllowed(_)), "{error}");
}

#[tokio::test]
async fn a_dropped_or_retyped_column_in_the_range_is_refused() {
    let t = TestTable::new();
    t.commit(0, &[protocol(), metadata(id_name(), &[], true)]);
    t.commit(1, &[metadata(json!([field("id", "long")]), &[], true)]);
    t.commit(2, &[metadata(json!([field("id", "string")]), &[], true)]);
    let table = t.table().await;
    let dropped = ChangeScan::new(table.storage(), 0, Some(1), ChangesOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(dropped, Error::NotAllowed(_)), "{dropped}");
    assert!(dropped.to_string().contains("`name`"), "{dropped}");
    assert!(dropped.to_string().contains("version 0"), "{dropped}");
    let retyped = ChangeScan::new(table.storage(), 1, Some(2), ChangesOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(retyped, Error::NotAllowed(_)), "{retyped}");
    assert!(retyped.to_string().contains("`id`"), "{retyped}");
    // A range after the change reads with its own schema.
    ChangeScan::new(table.storage(), 2, Some(2), ChangesOptions::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_table_column_named_like_a_change_column_is_refused() {
    let t = TestTable::new();
    let fields = json!([field("id", "long"), field("_Commit_Version", "long")]);
    t.commit(0, &[protocol(), metadata(fields, &[], true)]);
    let error = ChangeScan::new(
        t.table().await.storage(),
        0,
        None,
        ChangesOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::NotAllowed(_)), "{error}");
    assert!(error.to_string().contains("_Commit_Version"), "{error}");
}

#[tokio::test]
async fn versions_outside_the_log_are_not_found() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1], &["x"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], true), add(&a)]);
    t.commit(1, &[remove(&a)]);
    t.commit(2, &[add(&a)]);
    let table = t.table().await;
    for (start, end, missing) in [(3, None, 3), (0, Some(5), 5)] {
        let error = ChangeScan::new(table.storage(), start, end, ChangesOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(error, Error::VersionNotFound { version, .. } if version == missing),
            "{error}"
        );
    }
    let error = ChangeScan::new(table.storage(), 2, Some(1), ChangesOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");

    std::fs::remove_file(t.commit_path(1)).unwrap();
    let error = ChangeScan::new(table.storage(), 0, None, ChangesOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::VersionNotFound { version: 1, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_start_version_without_metadata_in_its_commit_uses_its_snapshot() {
    let t = TestTable::new();
    let a = t.data_file("a.parquet", &[1], &["x"]);
    t.commit(0, &[protocol(), metadata(id_name(), &[], false)]);
    t.commit(1, &[metadata(id_name(), &[], true)]);
    t.commit(2, &[ict(3000), add(&a)]);
    let (_, batches) = read_all(&t, 2, None, ChangesOptions::default()).await;
    assert_eq!(rows(&batches), ["1|x|insert|2|3000000"]);
}

// ---------------------------------------------------------------------------------------------
// Golden tables
// ---------------------------------------------------------------------------------------------

/// `deltalog-getChanges` does not turn the change data feed on: refused. With it turned on,
/// version 1 reads only its cdc file (the remove beside it is ignored).
#[tokio::test]
async fn golden_get_changes_log() {
    let Some(dir) = unpack_golden("deltalog-getChanges") else {
        return;
    };
    let root = dir.path().join("deltalog-getChanges/delta");
    let uri = root.to_str().unwrap();
    let table = Table::open(uri, &HashMap::new()).await.unwrap();
    let error = ChangeScan::new(table.storage(), 0, None, ChangesOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotAllowed(_)), "{error}");
    assert!(error.to_string().contains("version 0"), "{error}");

    enable_change_data_feed(&root);
    let table = Table::open(uri, &HashMap::new()).await.unwrap();
    let only_cdc = ChangeScan::new(table.storage(), 1, Some(1), ChangesOptions::default())
        .await
        .unwrap();
    assert_eq!(only_cdc.num_files(), 1);
    let error = only_cdc.to_batches().await.unwrap_err();
    assert!(error.to_string().contains("fake/path/2"), "{error}");
    let nothing = ChangeScan::new(table.storage(), 2, Some(2), ChangesOptions::default())
        .await
        .unwrap();
    assert_eq!(nothing.num_files(), 0);
    let everything = ChangeScan::new(table.storage(), 0, None, ChangesOptions::default())
        .await
        .unwrap();
    assert_eq!(everything.num_files(), 2);
}

/// Tables Spark wrote with DELETE (deletion vectors, with and without column mapping and
/// partitions), UPDATE, MERGE, overwrite and RESTORE: with the change data feed switched on, the
/// rows of each version are those of the version before plus its inserts and update
/// postimages, minus its deletes and update preimages; and the changes of the whole history
/// are the rows of the latest version.
#[tokio::test]
async fn golden_tables_replay_through_their_changes() {
    for name in [
        "dv-with-columnmapping",
        "dv-partitioned-with-checkpoint",
        "basic-with-inserts-deletes-checkpoint",
        "basic-with-inserts-updates",
        "basic-with-inserts-merge",
        "basic-with-inserts-overwrite-restore",
        "snapshot-data3",
    ] {
        let Some(dir) = unpack_golden(name) else {
            return;
        };
        let root = dir.path().join(name).join("delta");
        enable_change_data_feed(&root);
        let table = Table::open(root.to_str().unwrap(), &HashMap::new())
            .await
            .unwrap();
        let latest = table.latest_version().await.unwrap();
        let mut previous = snapshot_rows(&table, 0).await;
        assert_eq!(
            net_changes(&table, 0, 0).await,
            previous,
            "{name} version 0"
        );
        for version in 1..=latest {
            let current = snapshot_rows(&table, version).await;
            let mut expected = previous.clone();
            for (row, count) in net_changes(&table, version, version).await {
                *expected.entry(row).or_default() += count;
            }
            expected.retain(|_, count| *count != 0);
            assert_eq!(expected, current, "{name}: version {version}");
            previous = current;
        }
        assert_eq!(
            net_changes(&table, 0, latest).await,
            previous,
            "{name}: all"
        );
    }
}

/// The rows of `version` as a multiset of text lines.
async fn snapshot_rows(table: &Table, version: u64) -> HashMap<String, i64> {
    let snapshot = table.snapshot(SnapshotAt::Version(version)).await.unwrap();
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let batches = scan.to_batches().await.unwrap();
    let mut rows = HashMap::new();
    for batch in &batches {
        for row in row_strings(batch) {
            *rows.entry(row).or_default() += 1;
        }
    }
    rows
}

/// The data rows of the changes of `start..=end`, counted +1 for inserts and postimages and -1
/// for deletes and preimages; rows netting to zero dropped.
async fn net_changes(table: &Table, start: u64, end: u64) -> HashMap<String, i64> {
    let scan = ChangeScan::new(table.storage(), start, Some(end), ChangesOptions::default())
        .await
        .unwrap();
    let data_columns = scan.schema().fields().len() - 3;
    let mut net: HashMap<String, i64> = HashMap::new();
    for batch in scan.to_batches().await.unwrap() {
        let change_types = batch
            .column_by_name("_change_type")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone();
        let data = batch
            .project(&(0..data_columns).collect::<Vec<_>>())
            .unwrap();
        for (row, text) in row_strings(&data).into_iter().enumerate() {
            let sign = match change_types.value(row) {
                "insert" | "update_postimage" => 1,
                "delete" | "update_preimage" => -1,
                other => panic!("unexpected change type {other}"),
            };
            *net.entry(text).or_default() += sign;
        }
    }
    net.retain(|_, count| *count != 0);
    net
}

fn unpack_golden(name: &str) -> Option<tempfile::TempDir> {
    let archive = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/golden")
        .join(format!("{name}.tar.zst"));
    if !archive.is_file() {
        panic!("{} not found", archive.display());
    }
    let target = tempfile::tempdir().unwrap();
    let file = std::fs::File::open(&archive).unwrap();
    let decoder = zstd::stream::read::Decoder::new(file).unwrap();
    tar::Archive::new(decoder).unpack(target.path()).unwrap();
    Some(target)
}

/// Sets `delta.enableChangeDataFeed` in every `metaData` action of the JSON commits of the
/// table at `root`, keeping each file's modification time, and deletes its checkpoints (which
/// hold the metadata unchanged) when every commit is there to replay instead.
fn enable_change_data_feed(root: &Path) {
    let log = root.join("_delta_log");
    if log.join(format!("{:020}.json", 0)).is_file() {
        for entry in std::fs::read_dir(&log).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.contains(".checkpoint") || name == "_last_checkpoint" {
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
    for entry in std::fs::read_dir(&log).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<String> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                let mut action: Value = serde_json::from_str(line).unwrap();
                if let Some(metadata) = action.get_mut("metaData") {
                    let configuration = metadata
                        .as_object_mut()
                        .unwrap()
                        .entry("configuration")
                        .or_insert_with(|| json!({}));
                    configuration["delta.enableChangeDataFeed"] = json!("true");
                }
                action.to_string()
            })
            .collect();
        std::fs::write(&path, lines.join("\n")).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A table folder; commits are written as JSON by hand, data files with the parquet crate.
struct TestTable {
    dir: tempfile::TempDir,
}

/// A written data file: its path relative to the table root and its size.
struct DataFile {
    path: String,
    size: u64,
}

impl TestTable {
    fn new() -> Self {
        TestTable {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn commit_path(&self, version: u64) -> std::path::PathBuf {
        self.dir
            .path()
            .join("_delta_log")
            .join(format!("{version:020}.json"))
    }

    fn commit(&self, version: u64, actions: &[Value]) {
        let path = self.commit_path(version);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let lines: Vec<String> = actions.iter().map(Value::to_string).collect();
        std::fs::write(path, lines.join("\n")).unwrap();
    }

    fn set_commit_time(&self, version: u64, time: SystemTime) {
        let file = std::fs::File::options()
            .write(true)
            .open(self.commit_path(version))
            .unwrap();
        file.set_modified(time).unwrap();
    }

    fn write(&self, relative: &str, batch: RecordBatch) -> DataFile {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        DataFile {
            path: relative.to_string(),
            size: std::fs::metadata(&path).unwrap().len(),
        }
    }

    fn data_file(&self, relative: &str, ids: &[i64], names: &[&str]) -> DataFile {
        self.write(
            relative,
            batch(vec![("id", longs(ids)), ("name", strings(names))]),
        )
    }

    fn change_file(
        &self,
        relative: &str,
        ids: &[i64],
        names: &[&str],
        change_types: &[&str],
    ) -> DataFile {
        self.write(
            relative,
            batch(vec![
                ("id", longs(ids)),
                ("name", strings(names)),
                ("_change_type", strings(change_types)),
            ]),
        )
    }

    async fn table(&self) -> Table {
        Table::open(self.dir.path().to_str().unwrap(), &HashMap::new())
            .await
            .unwrap()
    }
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, array)| array).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

fn longs(values: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

fn strings(values: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

fn protocol() -> Value {
    json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors", "changeDataFeed"]}})
}

fn field(name: &str, data_type: &str) -> Value {
    json!({"name": name, "type": data_type, "nullable": true, "metadata": {}})
}

fn id_name() -> Value {
    json!([field("id", "long"), field("name", "string")])
}

fn metadata(fields: Value, partition_columns: &[&str], change_data_feed: bool) -> Value {
    let schema = json!({"type": "struct", "fields": fields});
    json!({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
        "schemaString": schema.to_string(), "partitionColumns": partition_columns,
        "configuration": {"delta.enableChangeDataFeed": change_data_feed.to_string()},
        "createdTime": 0}})
}

/// A `commitInfo` with an in-commit timestamp.
fn ict(timestamp_ms: i64) -> Value {
    json!({"commitInfo": {"timestamp": timestamp_ms, "inCommitTimestamp": timestamp_ms}})
}

fn add(file: &DataFile) -> Value {
    add_with(file, json!({}))
}

fn add_with(file: &DataFile, extra: Value) -> Value {
    let mut add = json!({"path": file.path, "partitionValues": {}, "size": file.size,
        "modificationTime": 0, "dataChange": true});
    merge(&mut add, extra);
    json!({ "add": add })
}

fn remove(file: &DataFile) -> Value {
    remove_with(file, json!({}))
}

fn remove_with(file: &DataFile, extra: Value) -> Value {
    let mut remove = json!({"path": file.path, "deletionTimestamp": 0, "dataChange": true,
        "partitionValues": {}, "size": file.size});
    merge(&mut remove, extra);
    json!({ "remove": remove })
}

fn cdc_action(file: &DataFile, extra: Value) -> Value {
    let mut cdc = json!({"path": file.path, "partitionValues": {}, "size": file.size,
        "dataChange": false});
    merge(&mut cdc, extra);
    json!({ "cdc": cdc })
}

fn merge(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        target.extend(extra);
    }
}

/// An inline deletion vector marking `rows`, as JSON.
fn dv_json(rows: &[u64]) -> Value {
    let bitmap: RoaringTreemap = rows.iter().copied().collect();
    serde_json::to_value(encode_inline(&bitmap).unwrap()).unwrap()
}

async fn read_all(
    t: &TestTable,
    start: u64,
    end: Option<u64>,
    options: ChangesOptions,
) -> (arrow_schema::SchemaRef, Vec<RecordBatch>) {
    let scan = ChangeScan::new(t.table().await.storage(), start, end, options)
        .await
        .unwrap();
    let batches = scan.to_batches().await.unwrap();
    (scan.schema(), batches)
}

fn row_count(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

/// Every row as `value|value|...` (timestamps as microseconds), sorted.
fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let Some(first) = batches.first() else {
        return Vec::new();
    };
    let all = concat_batches(&first.schema(), batches).unwrap();
    let mut rows = row_strings(&all);
    rows.sort();
    rows
}

/// The rows of `batch` as `value|value|...`, in order; timestamps as integers, nulls as `null`.
fn row_strings(batch: &RecordBatch) -> Vec<String> {
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|column| match column.data_type() {
            DataType::Timestamp(_, _) => cast(column, &DataType::Int64).unwrap(),
            _ => column.clone(),
        })
        .collect();
    let formatters: Vec<_> = columns
        .iter()
        .map(|column| {
            arrow::util::display::ArrayFormatter::try_new(
                column.as_ref(),
                &arrow::util::display::FormatOptions::default().with_null("null"),
            )
            .unwrap()
        })
        .collect();
    (0..batch.num_rows())
        .map(|row| {
            formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}
