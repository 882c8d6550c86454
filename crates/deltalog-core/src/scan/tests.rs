//! Scans of small tables written here: column mapping, type widening, deletion vectors,
//! partition values, missing columns, row tracking and errors.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType, UInt64Type};
use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Float32Array, Int32Array, Int64Array, RecordBatch,
    StringArray, StructArray,
};
use arrow_schema::{DataType as ArrowType, Field, Fields, Schema};
use parquet::arrow::ArrowWriter;
use roaring::RoaringTreemap;
use serde_json::{json, Value};

use super::*;
use crate::actions::deletion_vector::{
    encode_dv_file, encode_inline, uuid_descriptor, uuid_relative_path,
};
use crate::schema::PARQUET_FIELD_ID_META_KEY;
use crate::snapshot::SnapshotAt;
use crate::table::Table;

/// A table folder with one commit holding `actions`, written when the snapshot is taken.
struct TestTable {
    dir: tempfile::TempDir,
    actions: Vec<Value>,
}

impl TestTable {
    fn new(fields: Vec<Value>, partition_columns: &[&str], configuration: Value) -> Self {
        Self::with_protocol(
            fields,
            partition_columns,
            configuration,
            json!({"minReaderVersion": 3, "minWriterVersion": 7,
                   "readerFeatures": ["columnMapping", "deletionVectors", "timestampNtz", "typeWidening"],
                   "writerFeatures": ["columnMapping", "deletionVectors", "timestampNtz", "typeWidening",
                                      "rowTracking", "domainMetadata"]}),
        )
    }

    fn with_protocol(
        fields: Vec<Value>,
        partition_columns: &[&str],
        configuration: Value,
        protocol: Value,
    ) -> Self {
        let schema = json!({"type": "struct", "fields": fields});
        let metadata = json!({"metaData": {
            "id": "test", "format": {"provider": "parquet", "options": {}},
            "schemaString": schema.to_string(), "partitionColumns": partition_columns,
            "configuration": configuration, "createdTime": 0}});
        TestTable {
            dir: tempfile::tempdir().unwrap(),
            actions: vec![json!({ "protocol": protocol }), metadata],
        }
    }

    /// Writes `batch` as Parquet at `relative` (a plain, unescaped path) and returns its size.
    fn write(&self, relative: &str, batch: &RecordBatch) -> u64 {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(batch).unwrap();
        writer.close().unwrap();
        std::fs::metadata(&path).unwrap().len()
    }

    /// Writes `batch` at `relative` and adds it with `partition_values` and `extra` add fields.
    fn add(&mut self, relative: &str, batch: &RecordBatch, partition_values: Value, extra: Value) {
        let size = self.write(relative, batch);
        let encoded: String = relative
            .split('/')
            .map(|part| {
                percent_encoding::utf8_percent_encode(part, percent_encoding::NON_ALPHANUMERIC)
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("/");
        let mut add = json!({"path": encoded, "partitionValues": partition_values,
            "size": size, "modificationTime": 0, "dataChange": true,
            "stats": json!({"numRecords": batch.num_rows()}).to_string()});
        if let (Some(add), Value::Object(extra)) = (add.as_object_mut(), extra) {
            add.extend(extra);
        }
        self.actions.push(json!({ "add": add }));
    }

    async fn snapshot(&self) -> Snapshot {
        let log = self.dir.path().join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        let lines: Vec<String> = self.actions.iter().map(Value::to_string).collect();
        std::fs::write(log.join("00000000000000000000.json"), lines.join("\n")).unwrap();
        let table = Table::open(self.dir.path().to_str().unwrap(), &HashMap::new())
            .await
            .unwrap();
        table.snapshot(SnapshotAt::Latest).await.unwrap()
    }
}

fn field(name: &str, data_type: Value) -> Value {
    json!({"name": name, "type": data_type, "nullable": true, "metadata": {}})
}

fn mapped_field(name: &str, id: i32, physical: &str, data_type: Value) -> Value {
    json!({"name": name, "type": data_type, "nullable": true, "metadata": {
        "delta.columnMapping.id": id, "delta.columnMapping.physicalName": physical}})
}

fn batch(columns: Vec<(Field, ArrayRef)>) -> RecordBatch {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

fn ints(values: impl IntoIterator<Item = i32>) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(values))
}

fn int_field(name: &str) -> Field {
    Field::new(name, ArrowType::Int32, true)
}

fn with_field_id(field: Field, id: i32) -> Field {
    field.with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

/// Every row of the scan, sorted by its first column.
async fn read(snapshot: &Snapshot, options: ScanOptions) -> RecordBatch {
    let scan = Scan::new(snapshot, options).await.unwrap();
    let batches = scan.to_batches().await.unwrap();
    sorted(arrow::compute::concat_batches(&scan.schema(), &batches).unwrap())
}

fn sorted(batch: RecordBatch) -> RecordBatch {
    if batch.num_columns() == 0 {
        return batch;
    }
    let order = arrow::compute::sort_to_indices(batch.column(0), None, None).unwrap();
    arrow::compute::take_record_batch(&batch, &order).unwrap()
}

fn int32s(batch: &RecordBatch, name: &str) -> Vec<Option<i32>> {
    let column = batch.column_by_name(name).unwrap();
    column.as_primitive::<Int32Type>().iter().collect()
}

fn int64s(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let column = batch.column_by_name(name).unwrap();
    column.as_primitive::<Int64Type>().iter().collect()
}

fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let column = batch.column_by_name(name).unwrap();
    column
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn id_mode_reads_columns_by_parquet_field_id() {
    let x = mapped_field("x", 3, "col-x", json!("long"));
    let s_type = json!({"type": "struct", "fields": [x]});
    let mut table = TestTable::new(
        vec![
            mapped_field("a", 1, "col-a", json!("integer")),
            mapped_field("s", 2, "col-s", s_type),
        ],
        &[],
        json!({"delta.columnMapping.mode": "id"}),
    );
    let inner = Fields::from(vec![with_field_id(int_field("renamed-x"), 3)]);
    let s = StructArray::try_new(inner.clone(), vec![ints([10, 20])], None).unwrap();
    let by_id = batch(vec![
        (with_field_id(int_field("renamed-a"), 1), ints([1, 2])),
        (
            with_field_id(Field::new("renamed-s", ArrowType::Struct(inner), true), 2),
            Arc::new(s),
        ),
    ]);
    table.add("by-id.parquet", &by_id, json!({}), json!({}));
    let by_name = batch(vec![(int_field("col-a"), ints([3]))]);
    table.add("by-name.parquet", &by_name, json!({}), json!({}));
    let snapshot = table.snapshot().await;

    let out = read(&snapshot, ScanOptions::default()).await;
    assert_eq!(int32s(&out, "a"), [Some(1), Some(2), Some(3)]);
    let s = out.column_by_name("s").unwrap().as_struct();
    assert_eq!(s.column_names(), ["x"]);
    let x: Vec<Option<i64>> = s.column(0).as_primitive::<Int64Type>().iter().collect();
    assert_eq!(x, [Some(10), Some(20), None]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_mode_reads_renamed_columns_and_ignores_dropped_ones() {
    let mut table = TestTable::new(
        vec![
            mapped_field("renamed", 1, "col-1", json!("integer")),
            mapped_field("added", 3, "col-3", json!("string")),
        ],
        &[],
        json!({"delta.columnMapping.mode": "name"}),
    );
    let file = batch(vec![
        (int_field("col-1"), ints([1, 2])),
        (int_field("col-2-dropped"), ints([7, 8])),
    ]);
    table.add("a.parquet", &file, json!({}), json!({}));
    let snapshot = table.snapshot().await;
    let out = read(&snapshot, ScanOptions::default()).await;
    assert_eq!(out.schema().fields().len(), 2);
    assert_eq!(int32s(&out, "renamed"), [Some(1), Some(2)]);
    assert_eq!(strings(&out, "added"), [None, None]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_written_before_type_changes_are_widened() {
    let changes = |from: &str, to: &str| json!([{"fromType": from, "toType": to}]);
    let widened = |name: &str, to: &str, from: &str| {
        json!({"name": name, "type": to, "nullable": true,
               "metadata": {"delta.typeChanges": changes(from, to)}})
    };
    let mut table = TestTable::new(
        vec![
            widened("i", "long", "integer"),
            widened("f", "double", "float"),
            widened("d", "decimal(10,4)", "decimal(5,2)"),
            widened("t", "timestamp_ntz", "date"),
        ],
        &[],
        json!({}),
    );
    let decimals = Decimal128Array::from(vec![12345])
        .with_precision_and_scale(5, 2)
        .unwrap();
    let file = batch(vec![
        (int_field("i"), ints([i32::MAX])),
        (
            Field::new("f", ArrowType::Float32, true),
            Arc::new(Float32Array::from(vec![0.5])),
        ),
        (
            Field::new("d", ArrowType::Decimal128(5, 2), true),
            Arc::new(decimals),
        ),
        (
            Field::new("t", ArrowType::Date32, true),
            Arc::new(Date32Array::from(vec![1])),
        ),
    ]);
    table.add("old.parquet", &file, json!({}), json!({}));
    let snapshot = table.snapshot().await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    assert_eq!(scan.schema(), snapshot.arrow_schema());
    let out = read(&snapshot, ScanOptions::default()).await;
    assert_eq!(int64s(&out, "i"), [Some(i64::from(i32::MAX))]);
    let f = out
        .column_by_name("f")
        .unwrap()
        .as_primitive::<arrow_array::types::Float64Type>();
    assert_eq!(f.value(0), 0.5);
    let d = out
        .column_by_name("d")
        .unwrap()
        .as_primitive::<arrow_array::types::Decimal128Type>();
    assert_eq!(d.value(0), 1_234_500);
    let t = out.column_by_name("t").unwrap();
    assert_eq!(
        t.as_primitive::<TimestampMicrosecondType>().value(0),
        86_400_000_000
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_vectors_of_every_storage_kind_apply_across_batches() {
    let mut table = TestTable::new(vec![field("id", json!("integer"))], &[], json!({}));
    let rows = |start: i32| batch(vec![(int_field("id"), ints(start..start + 10))]);
    let deleted = |rows: &[u64]| RoaringTreemap::from_iter(rows.iter().copied());

    let inline = encode_inline(&deleted(&[0, 2, 3, 5, 9])).unwrap();
    let (bytes, entries) = encode_dv_file(&[deleted(&[1]), deleted(&[4, 5, 6])]).unwrap();
    let uuid = uuid::Uuid::new_v4();
    let relative = uuid_relative_path(&uuid, "ab").unwrap();
    std::fs::create_dir_all(table.dir.path().join("ab")).unwrap();
    std::fs::write(table.dir.path().join(&relative), &bytes).unwrap();
    let by_uuid = uuid_descriptor(&uuid, "ab", &entries[1]).unwrap();
    let absolute_file = table.dir.path().join("dvs.bin");
    std::fs::write(&absolute_file, &bytes).unwrap();
    let absolute = DeletionVectorDescriptor {
        storage_type: "p".to_string(),
        path_or_inline_dv: url::Url::from_file_path(&absolute_file)
            .unwrap()
            .to_string(),
        offset: Some(entries[0].offset),
        size_in_bytes: entries[0].size_in_bytes,
        cardinality: entries[0].cardinality,
    };
    for (name, start, descriptor) in [
        ("inline.parquet", 0, inline),
        ("uuid.parquet", 100, by_uuid),
        ("absolute.parquet", 200, absolute),
    ] {
        let dv = serde_json::to_value(&descriptor).unwrap();
        table.add(
            name,
            &rows(start),
            json!({}),
            json!({ "deletionVector": dv }),
        );
    }
    table.add("plain.parquet", &rows(300), json!({}), json!({}));
    let snapshot = table.snapshot().await;

    let options = ScanOptions {
        batch_size: 3,
        ..ScanOptions::default()
    };
    let out = read(&snapshot, options).await;
    let mut ids: Vec<i32> = int32s(&out, "id").into_iter().flatten().collect();
    ids.sort_unstable();
    let mut expected: Vec<i32> = vec![1, 4, 6, 7, 8];
    expected.extend([100, 101, 102, 103, 107, 108, 109]);
    expected.extend((200..210).filter(|&id| id != 201));
    expected.extend(300..310);
    assert_eq!(ids, expected);

    let vectors = deletion_vectors(&snapshot).await.unwrap();
    let mut listed: Vec<(String, Vec<u64>)> = (0..vectors.num_rows())
        .map(|row| {
            let path = vectors.column(0).as_string::<i32>().value(row).to_string();
            let deleted = vectors.column(1).as_list::<i32>().value(row);
            let deleted = deleted.as_primitive::<UInt64Type>().values().to_vec();
            (path, deleted)
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("absolute.parquet".to_string(), vec![1]),
            ("inline.parquet".to_string(), vec![0, 2, 3, 5, 9]),
            ("uuid.parquet".to_string(), vec![4, 5, 6]),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_deletion_vector_is_refused() {
    let mut table = TestTable::new(vec![field("id", json!("integer"))], &[], json!({}));
    let mut descriptor = encode_inline(&RoaringTreemap::from_iter([1u64])).unwrap();
    descriptor.cardinality = 2;
    let dv = serde_json::to_value(&descriptor).unwrap();
    let rows = batch(vec![(int_field("id"), ints(0..3))]);
    table.add(
        "a.parquet",
        &rows,
        json!({}),
        json!({ "deletionVector": dv }),
    );
    let snapshot = table.snapshot().await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let error = scan.to_batches().await.unwrap_err();
    assert!(
        matches!(error, Error::CorruptDeletionVector { .. }),
        "{error}"
    );
    assert!(deletion_vectors(&snapshot).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_columns_are_typed_constants_in_schema_position() {
    let mut table = TestTable::new(
        vec![
            field("id", json!("integer")),
            field("p", json!("string")),
            field("value", json!("string")),
            field("d", json!("date")),
        ],
        &["p", "d"],
        json!({}),
    );
    let rows = |start: i32| {
        batch(vec![
            (int_field("id"), ints(start..start + 2)),
            (
                Field::new("value", ArrowType::Utf8, true),
                Arc::new(StringArray::from(vec!["x", "y"])),
            ),
        ])
    };
    table.add(
        "p=a%3Ab/d=2021-01-02/f.parquet",
        &rows(0),
        json!({"p": "a:b", "d": "2021-01-02"}),
        json!({}),
    );
    table.add(
        "p=__HIVE_DEFAULT_PARTITION__/d=2021-01-03/g.parquet",
        &rows(10),
        json!({"p": null, "d": "2021-01-03"}),
        json!({}),
    );
    let snapshot = table.snapshot().await;

    let out = read(&snapshot, ScanOptions::default()).await;
    let names: Vec<&str> = out
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["id", "p", "value", "d"]);
    assert_eq!(
        strings(&out, "p"),
        [Some("a:b".into()), Some("a:b".into()), None, None]
    );
    let days: Vec<Option<i32>> = out
        .column_by_name("d")
        .unwrap()
        .as_primitive::<arrow_array::types::Date32Type>()
        .iter()
        .collect();
    assert_eq!(days, [Some(18629), Some(18629), Some(18630), Some(18630)]);

    let only_partitions = ScanOptions {
        columns: Some(vec!["D".to_string(), "p".to_string()]),
        ..ScanOptions::default()
    };
    let out = read(&snapshot, only_partitions).await;
    assert_eq!(out.num_rows(), 4);
    assert_eq!(out.schema().field(0).name(), "d");
    assert_eq!(out.schema().field(1).name(), "p");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_missing_from_older_files_read_as_null() {
    let nested = json!({"type": "struct", "fields": [field("x", json!("integer")), field("y", json!("string"))]});
    let mut table = TestTable::new(
        vec![
            field("id", json!("integer")),
            field("s", nested),
            field("later", json!("long")),
        ],
        &[],
        json!({}),
    );
    let inner = Fields::from(vec![int_field("x")]);
    let s = StructArray::try_new(inner.clone(), vec![ints([5])], None).unwrap();
    let old = batch(vec![
        (int_field("id"), ints([1])),
        (Field::new("s", ArrowType::Struct(inner), true), Arc::new(s)),
    ]);
    table.add("old.parquet", &old, json!({}), json!({}));
    let snapshot = table.snapshot().await;
    let out = read(&snapshot, ScanOptions::default()).await;
    assert_eq!(int64s(&out, "later"), [None]);
    let s = out.column_by_name("s").unwrap().as_struct();
    assert_eq!(s.column(0).as_primitive::<Int32Type>().value(0), 5);
    assert!(s.column(1).is_null(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_tracking_uses_materialized_values_else_defaults() {
    let mut table = TestTable::new(
        vec![field("id", json!("integer"))],
        &[],
        json!({"delta.enableRowTracking": "true",
               "delta.rowTracking.materializedRowIdColumnName": "_row-id-col",
               "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-version-col"}),
    );
    let materialized = batch(vec![
        (int_field("id"), ints(0..4)),
        (
            Field::new("_row-id-col", ArrowType::Int64, true),
            Arc::new(Int64Array::from(vec![Some(7), None, Some(9), None])),
        ),
        (
            Field::new("_row-version-col", ArrowType::Int64, true),
            Arc::new(Int64Array::from(vec![None, Some(1), None, None])),
        ),
    ]);
    let dv =
        serde_json::to_value(encode_inline(&RoaringTreemap::from_iter([0u64])).unwrap()).unwrap();
    table.add(
        "a.parquet",
        &materialized,
        json!({}),
        json!({"baseRowId": 100, "defaultRowCommitVersion": 3, "deletionVector": dv}),
    );
    let plain = batch(vec![(int_field("id"), ints(10..12))]);
    table.add(
        "b.parquet",
        &plain,
        json!({}),
        json!({"baseRowId": 200, "defaultRowCommitVersion": 4}),
    );
    let snapshot = table.snapshot().await;
    let options = ScanOptions {
        row_tracking: true,
        batch_size: 2,
        ..ScanOptions::default()
    };
    let scan = Scan::new(&snapshot, options.clone()).await.unwrap();
    let names: Vec<String> = scan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", ROW_ID_COLUMN, ROW_COMMIT_VERSION_COLUMN]);
    let out = read(&snapshot, options).await;
    assert_eq!(
        int32s(&out, "id"),
        [Some(1), Some(2), Some(3), Some(10), Some(11)]
    );
    assert_eq!(
        int64s(&out, ROW_ID_COLUMN),
        [Some(101), Some(9), Some(103), Some(200), Some(201)]
    );
    assert_eq!(
        int64s(&out, ROW_COMMIT_VERSION_COLUMN),
        [Some(1), Some(3), Some(3), Some(4), Some(4)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_tracking_needs_the_feature() {
    let table = TestTable::with_protocol(
        vec![field("id", json!("integer"))],
        &[],
        json!({}),
        json!({"minReaderVersion": 1, "minWriterVersion": 2}),
    );
    let snapshot = table.snapshot().await;
    let options = ScanOptions {
        row_tracking: true,
        ..ScanOptions::default()
    };
    let error = Scan::new(&snapshot, options).await.unwrap_err();
    assert!(error.to_string().contains("rowTracking"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn void_columns_are_dropped_and_unknown_columns_refused() {
    let nested = json!({"type": "struct", "fields": [field("x", json!("integer")), field("nothing", json!("void"))]});
    let mut table = TestTable::new(
        vec![
            field("id", json!("integer")),
            field("v", json!("void")),
            field("s", nested),
        ],
        &[],
        json!({}),
    );
    let inner = Fields::from(vec![int_field("x")]);
    let s = StructArray::try_new(inner.clone(), vec![ints([5])], None).unwrap();
    let file = batch(vec![
        (int_field("id"), ints([1])),
        (
            Field::new("s", ArrowType::Struct(inner.clone()), true),
            Arc::new(s),
        ),
    ]);
    table.add("a.parquet", &file, json!({}), json!({}));
    let snapshot = table.snapshot().await;
    let out = read(&snapshot, ScanOptions::default()).await;
    let names: Vec<&str> = out
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["id", "s"]);
    assert_eq!(
        out.column_by_name("s").unwrap().data_type(),
        &ArrowType::Struct(inner)
    );

    let unknown = ScanOptions {
        columns: Some(vec!["id".to_string(), "nope".to_string()]),
        ..ScanOptions::default()
    };
    let error = Scan::new(&snapshot, unknown).await.unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("`nope`"), "{error}");
    let repeated = ScanOptions {
        columns: Some(vec!["id".to_string(), "ID".to_string()]),
        ..ScanOptions::default()
    };
    assert!(Scan::new(&snapshot, repeated).await.is_err());
    let no_batches = ScanOptions {
        batch_size: 0,
        ..ScanOptions::default()
    };
    assert!(Scan::new(&snapshot, no_batches).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_data_file_is_named() {
    let mut table = TestTable::new(vec![field("id", json!("integer"))], &[], json!({}));
    table.add(
        "bad.parquet",
        &batch(vec![(int_field("id"), ints([1]))]),
        json!({}),
        json!({}),
    );
    std::fs::write(
        table.dir.path().join("bad.parquet"),
        b"not parquet at all, no",
    )
    .unwrap();
    let snapshot = table.snapshot().await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let error = scan.to_batches().await.unwrap_err();
    match error {
        Error::CorruptDataFile { path, .. } => assert!(path.ends_with("bad.parquet"), "{path}"),
        other => panic!("expected CorruptDataFile, got {other}"),
    }
}

#[test]
fn streams_without_a_tokio_runtime() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut table = TestTable::new(vec![field("id", json!("integer"))], &[], json!({}));
    for (name, start) in [("a.parquet", 0), ("b.parquet", 10)] {
        let rows = batch(vec![(int_field("id"), ints(start..start + 3))]);
        table.add(name, &rows, json!({}), json!({}));
    }
    let scan = runtime.block_on(async {
        let snapshot = table.snapshot().await;
        Scan::new(&snapshot, ScanOptions::default()).await.unwrap()
    });
    let batches = futures::executor::block_on(scan.to_batches()).unwrap();
    let mut ids: Vec<i32> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 10, 11, 12]);
    let files: usize = scan.files().iter().map(RecordBatch::num_rows).sum();
    assert_eq!(files, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_skips_files_and_keeps_only_matching_rows() {
    let mut table = TestTable::new(
        vec![field("id", json!("integer")), field("p", json!("string"))],
        &["p"],
        json!({}),
    );
    for (part, start) in [("a", 0), ("b", 10), ("c", 20)] {
        let rows = batch(vec![(int_field("id"), ints(start..start + 3))]);
        let stats = json!({"numRecords": 3, "minValues": {"id": start},
                           "maxValues": {"id": start + 2}, "nullCount": {"id": 0}});
        table.add(
            &format!("p={part}/f.parquet"),
            &rows,
            json!({ "p": part }),
            json!({"stats": stats.to_string()}),
        );
    }
    let snapshot = table.snapshot().await;
    let options = ScanOptions {
        columns: Some(vec!["id".to_string()]),
        filter: Some(crate::expr::parse_sql("p != 'a' AND id < 12").unwrap()),
        ..ScanOptions::default()
    };
    let scan = Scan::new(&snapshot, options.clone()).await.unwrap();
    let files: usize = scan.files().iter().map(RecordBatch::num_rows).sum();
    assert_eq!(files, 1, "p=a is skipped by partition, p=c by statistics");
    let out = read(&snapshot, options).await;
    assert_eq!(out.schema().fields().len(), 1);
    assert_eq!(int32s(&out, "id"), [Some(10), Some(11)]);

    let unknown = ScanOptions {
        filter: Some(crate::expr::parse_sql("nope = 1").unwrap()),
        ..ScanOptions::default()
    };
    let error = Scan::new(&snapshot, unknown).await.unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("nope"), "{error}");
}

/// A table of `files` unpartitioned one-row files `f0.parquet`.. with ids 0.., the first with
/// an inline deletion vector that deletes its only row.
async fn table_of_files(files: i32) -> (TestTable, Snapshot) {
    let mut table = TestTable::new(vec![field("id", json!("integer"))], &[], json!({}));
    let deleted = encode_inline(&RoaringTreemap::from_iter([0u64])).unwrap();
    for id in 0..files {
        let rows = batch(vec![(int_field("id"), ints([id]))]);
        let extra = match id {
            0 => json!({ "deletionVector": serde_json::to_value(&deleted).unwrap() }),
            _ => json!({}),
        };
        table.add(&format!("f{id}.parquet"), &rows, json!({}), extra);
    }
    let snapshot = table.snapshot().await;
    (table, snapshot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_packed_in_order_into_groups_of_the_target_size() {
    let (_table, snapshot) = table_of_files(5).await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let paths = |group: &[RecordBatch]| -> Vec<String> {
        group
            .iter()
            .flat_map(|b| strings(b, "path").into_iter().flatten())
            .collect()
    };
    let all: Vec<String> = paths(scan.files());
    let size = int64s(&scan.files()[0], "size")[0].unwrap() as u64;

    let singles = scan.pack_files(1, 0).unwrap();
    assert_eq!(singles.len(), 5);
    let pairs = scan.pack_files(2 * (size + 10), 10).unwrap();
    let grouped: Vec<Vec<String>> = pairs.iter().map(|g| paths(g)).collect();
    assert_eq!(grouped.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    assert_eq!(grouped.concat(), all);
    let one = scan.pack_files(u64::MAX, 0).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(paths(&one[0]), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_over_given_files_reads_them_without_the_log() {
    let (table, snapshot) = table_of_files(4).await;
    let options = ScanOptions {
        filter: Some(crate::expr::parse_sql("id < 3").unwrap()),
        ..ScanOptions::default()
    };
    let planned = Scan::new(&snapshot, options.clone()).await.unwrap();
    let groups = planned.pack_files(1, 0).unwrap();
    std::fs::remove_dir_all(table.dir.path().join("_delta_log")).unwrap();
    let mut ids = Vec::new();
    for group in groups {
        let scan = Scan::over_files(
            snapshot.storage(),
            snapshot.version(),
            snapshot.protocol(),
            snapshot.metadata(),
            options.clone(),
            group,
        )
        .unwrap();
        for batch in scan.to_batches().await.unwrap() {
            ids.extend(int32s(&batch, "id").into_iter().flatten());
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2], "the deletion vector and the filter apply");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_over_files_refuses_what_a_snapshot_would() {
    let (_table, snapshot) = table_of_files(1).await;
    let files = snapshot.files(false).await.unwrap().1;
    let mut protocol = snapshot.protocol().clone();
    protocol.min_reader_version = 9;
    let unreadable = Scan::over_files(
        snapshot.storage(),
        snapshot.version(),
        &protocol,
        snapshot.metadata(),
        ScanOptions::default(),
        files.clone(),
    );
    assert!(matches!(
        unreadable,
        Err(Error::UnsupportedProtocolVersion { .. })
    ));
    let unknown = ScanOptions {
        columns: Some(vec!["nope".to_string()]),
        ..ScanOptions::default()
    };
    let refused = Scan::over_files(
        snapshot.storage(),
        snapshot.version(),
        snapshot.protocol(),
        snapshot.metadata(),
        unknown,
        files,
    );
    assert!(matches!(refused, Err(Error::InvalidArgument(message)) if message.contains("nope")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_tasks_survive_encoding_and_read_without_the_log() {
    let (table, snapshot) = table_of_files(4).await;
    let options = ScanOptions {
        columns: Some(vec!["id".to_string()]),
        filter: Some(crate::expr::parse_sql("id < 3 AND id IN (1, 2, 5)").unwrap()),
        timezone: crate::actions::partition::SessionTimeZone::parse("America/Los_Angeles").unwrap(),
        ..ScanOptions::default()
    };
    let planned = Scan::new(&snapshot, options).await.unwrap();
    let tasks = planned.tasks(1, 0).unwrap();
    assert_eq!(
        tasks.len(),
        planned.files().iter().map(|b| b.num_rows()).sum::<usize>()
    );
    let total: u64 = tasks.iter().map(|task| task.size().unwrap()).sum();
    assert_eq!(total, planned.total_size().unwrap());
    std::fs::remove_dir_all(table.dir.path().join("_delta_log")).unwrap();
    let mut ids = Vec::new();
    for task in &tasks {
        let decoded = ScanTask::decode(&task.encode().unwrap()).unwrap();
        assert_eq!(decoded.table_uri(), task.table_uri());
        assert_eq!(decoded.version(), snapshot.version());
        assert_eq!(decoded.protocol(), snapshot.protocol());
        assert_eq!(decoded.metadata(), snapshot.metadata());
        assert_eq!(decoded.num_files(), 1);
        assert_eq!(decoded.size().unwrap(), task.size().unwrap());
        assert_eq!(decoded.files(), task.files());
        let options = decoded.options();
        assert_eq!(options.columns, task.options().columns);
        assert_eq!(options.timezone.to_string(), "America/Los_Angeles");
        assert_eq!(
            options.filter.as_ref().map(ToString::to_string),
            task.options().filter.as_ref().map(ToString::to_string)
        );
        let scan = decoded.scan(&HashMap::new()).unwrap();
        assert_eq!(scan.version(), snapshot.version());
        for batch in scan.to_batches().await.unwrap() {
            ids.extend(int32s(&batch, "id").into_iter().flatten());
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2], "the deletion vector and the filter apply");
}

#[test]
fn bytes_that_are_not_a_scan_task_are_refused() {
    for bytes in [
        &b""[..],
        b"garbage",
        b"DLTASK1\n\x05\x00",
        b"DLTASK1\n\x02\x00\x00\x00{}",
    ] {
        let error = ScanTask::decode(bytes).err().unwrap();
        assert!(
            matches!(&error, Error::InvalidArgument(m) if m.contains("not a deltalog scan task")),
            "{error:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_files_name_deletion_vectors_and_glob_characters() {
    let (_table, snapshot) = table_of_files(2).await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let native = scan.native_files().unwrap();
    assert_eq!(
        native.obstacle.as_deref(),
        Some("1 of its files have deletion vectors")
    );
    let root = snapshot.table_uri().trim_start_matches("file://");
    let mut urls = native.urls.clone();
    urls.sort();
    assert_eq!(
        urls,
        [
            format!("file:{root}f0.parquet"),
            format!("file:{root}f1.parquet")
        ]
    );

    let mut table = TestTable::new(vec![field("id", json!("integer"))], &[], json!({}));
    let rows = batch(vec![(int_field("id"), ints([1]))]);
    table.add("a[1].parquet", &rows, json!({}), json!({}));
    let snapshot = table.snapshot().await;
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    assert_eq!(
        scan.native_files().unwrap().obstacle.as_deref(),
        Some("file 'a[1].parquet' has a character Spark reads as a glob pattern")
    );
}

/// A table of `id` and a variant `v` with the `variantShredding-preview` reader feature.
fn shredded_variant_table() -> TestTable {
    shredded_variant_table_named("variantShredding-preview")
}

/// A table of `id` and a variant `v` with the shredding reader feature named `shredding`
/// (`variantShredding`, or its preview name).
fn shredded_variant_table_named(shredding: &str) -> TestTable {
    let features = json!(["variantType", shredding]);
    TestTable::with_protocol(
        vec![field("id", json!("integer")), field("v", json!("variant"))],
        &[],
        json!({"delta.enableVariantShredding": "true"}),
        json!({"minReaderVersion": 3, "minWriterVersion": 7,
               "readerFeatures": features, "writerFeatures": features}),
    )
}

/// A batch of `id` and a variant group `v` with `metadata` version 1 and an empty
/// dictionary, `value`, and an int32 `typed_value` when `typed` is given.
fn variant_batch(
    ids: &[i32],
    value: Vec<Option<&[u8]>>,
    typed: Option<Vec<Option<i32>>>,
) -> RecordBatch {
    let empty_metadata: &[u8] = &[0x01, 0x00, 0x00];
    let mut fields = vec![
        Field::new("metadata", ArrowType::Binary, false),
        Field::new("value", ArrowType::Binary, true),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(arrow_array::BinaryArray::from_iter_values(
            vec![empty_metadata; ids.len()],
        )),
        Arc::new(arrow_array::BinaryArray::from_iter(value)),
    ];
    if let Some(typed) = typed {
        fields.push(Field::new("typed_value", ArrowType::Int32, true));
        columns.push(Arc::new(Int32Array::from(typed)));
    }
    let group = StructArray::try_new(Fields::from(fields), columns, None).unwrap();
    let group_field = Field::new("v", group.data_type().clone(), true);
    batch(vec![
        (int_field("id"), ints(ids.iter().copied())),
        (group_field, Arc::new(group)),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shredded_and_unshredded_variant_files_read_alike() {
    for name in ["variantShredding-preview", "variantShredding"] {
        shredded_and_unshredded_read_alike(shredded_variant_table_named(name)).await;
    }
}

async fn shredded_and_unshredded_read_alike(mut table: TestTable) {
    let int8_seven: &[u8] = &[0x0C, 7];
    let int32_seven: &[u8] = &[0x14, 7, 0, 0, 0];
    let shredded = variant_batch(
        &[1, 2],
        vec![None, Some(int8_seven)],
        Some(vec![Some(7), None]),
    );
    table.add("shredded.parquet", &shredded, json!({}), json!({}));
    let plain = variant_batch(&[3], vec![Some(int32_seven)], None);
    table.add("plain.parquet", &plain, json!({}), json!({}));
    let out = read(&table.snapshot().await, ScanOptions::default()).await;
    let variants = out.column_by_name("v").unwrap().as_struct();
    let values = variants.column_by_name("value").unwrap().as_binary::<i32>();
    let read: Vec<&[u8]> = values.iter().map(Option::unwrap).collect();
    assert_eq!(read, [int32_seven, int8_seven, int32_seven]);
    assert_eq!(
        variants
            .column_by_name("metadata")
            .unwrap()
            .as_binary::<i32>()
            .value(0),
        [1, 0, 0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contradictory_shredding_names_the_file() {
    let mut table = shredded_variant_table();
    let both = variant_batch(&[1], vec![Some(&[0x0C, 7])], Some(vec![Some(7)]));
    table.add("both.parquet", &both, json!({}), json!({}));
    let scan = Scan::new(&table.snapshot().await, ScanOptions::default())
        .await
        .unwrap();
    match scan.to_batches().await.unwrap_err() {
        Error::CorruptDataFile { path, reason } => {
            assert!(path.ends_with("both.parquet"), "{path}");
            assert!(
                reason.contains("column `v`: both `value` and `typed_value`"),
                "{reason}"
            );
        }
        other => panic!("expected CorruptDataFile, got {other}"),
    }
}
