//! Data files written to a local table, committed by hand and read back with our own scan;
//! statistics, partition directories, column mapping, constraints and schema errors.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Fields};
use futures::TryStreamExt;
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::{json, Value};

use super::*;
use crate::actions::{Metadata, Protocol};
use crate::scan::{Scan, ScanOptions};
use crate::snapshot::SnapshotAt;
use crate::table::Table;

struct Fixture {
    dir: tempfile::TempDir,
    protocol: Value,
    metadata: Value,
    config: TableConfiguration,
}

fn fixture(fields: Value, partition_columns: &[&str], configuration: Value) -> Fixture {
    fixture_with_protocol(
        fields,
        partition_columns,
        configuration,
        json!({"minReaderVersion": 3, "minWriterVersion": 7,
               "readerFeatures": ["columnMapping", "timestampNtz"],
               "writerFeatures": ["columnMapping", "timestampNtz", "checkConstraints",
                                  "invariants", "generatedColumns", "identityColumns",
                                  "allowColumnDefaults"]}),
    )
}

fn fixture_with_protocol(
    fields: Value,
    partition_columns: &[&str],
    configuration: Value,
    protocol: Value,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({"type": "struct", "fields": fields});
    let metadata = json!({
        "id": "test", "format": {"provider": "parquet", "options": {}},
        "schemaString": schema.to_string(), "partitionColumns": partition_columns,
        "configuration": configuration, "createdTime": 0});
    let config = TableConfiguration::try_new(
        serde_json::from_value::<Protocol>(protocol.clone()).unwrap(),
        serde_json::from_value::<Metadata>(metadata.clone()).unwrap(),
        dir.path().to_str().unwrap(),
    )
    .unwrap();
    Fixture {
        dir,
        protocol,
        metadata,
        config,
    }
}

impl Fixture {
    fn storage(&self) -> Storage {
        Storage::open(self.dir.path().to_str().unwrap(), &HashMap::new()).unwrap()
    }

    async fn write(&self, batches: Vec<RecordBatch>) -> Result<WriteResult, WriteFailure> {
        self.write_with(batches, WriterOptions::default()).await
    }

    async fn write_with(
        &self,
        batches: Vec<RecordBatch>,
        options: WriterOptions,
    ) -> Result<WriteResult, WriteFailure> {
        let stream = futures::stream::iter(batches.into_iter().map(Ok));
        write_batches(&self.config, self.storage(), options, stream).await
    }

    /// Commits `files` as version 0 and reads every row back, in file order.
    async fn read_back(&self, files: &[WrittenFile]) -> RecordBatch {
        let mut lines = vec![
            json!({"protocol": self.protocol}).to_string(),
            json!({"metaData": self.metadata}).to_string(),
        ];
        for file in files {
            let values: serde_json::Map<String, Value> = file
                .partition_values
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::from)))
                .collect();
            lines.push(
                json!({"add": {
                    "path": encode_path(&file.path), "partitionValues": values,
                    "size": file.size, "modificationTime": file.modification_time,
                    "dataChange": true, "stats": file.stats}})
                .to_string(),
            );
        }
        let log = self.dir.path().join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join(format!("{:020}.json", 0)), lines.join("\n")).unwrap();
        let table = Table::open(self.dir.path().to_str().unwrap(), &HashMap::new())
            .await
            .unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
        let batches: Vec<RecordBatch> = scan.stream().try_collect().await.unwrap();
        concat_batches(&scan.schema(), &batches).unwrap()
    }

    fn parquet_footer(&self, file: &WrittenFile) -> parquet::file::metadata::ParquetMetaData {
        let handle = std::fs::File::open(self.dir.path().join(&file.path)).unwrap();
        SerializedFileReader::new(handle)
            .unwrap()
            .metadata()
            .clone()
    }
}

fn encode_path(path: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'=');
    percent_encoding::utf8_percent_encode(path, SET).to_string()
}

fn field(name: &str, ty: Value, nullable: bool) -> Value {
    json!({"name": name, "type": ty, "nullable": nullable, "metadata": {}})
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn stats(file: &WrittenFile) -> Value {
    serde_json::from_str(&file.stats).unwrap()
}

fn all_types_fields() -> Value {
    json!([
        field("b", json!("byte"), true),
        field("s", json!("short"), true),
        field("i", json!("integer"), true),
        field("l", json!("long"), true),
        field("f", json!("float"), true),
        field("d", json!("double"), true),
        field("dec", json!("decimal(10,2)"), true),
        field("str", json!("string"), true),
        field("bin", json!("binary"), true),
        field("bool", json!("boolean"), true),
        field("date", json!("date"), true),
        field("ts", json!("timestamp"), true),
        field("ntz", json!("timestamp_ntz"), true),
        field(
            "st",
            json!({"type": "struct", "fields": [
            field("x", json!("integer"), true),
            field("y", json!("string"), true)]}),
            true
        ),
        field(
            "arr",
            json!({"type": "array", "elementType": "integer", "containsNull": true}),
            true
        ),
        field(
            "m",
            json!({"type": "map", "keyType": "string", "valueType": "integer",
                          "valueContainsNull": true}),
            true
        ),
    ])
}

fn all_types_batch() -> RecordBatch {
    let st_fields = Fields::from(vec![
        Field::new("x", ArrowType::Int32, true),
        Field::new("y", ArrowType::Utf8, true),
    ]);
    let st = StructArray::new(
        st_fields,
        vec![
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("p"), Some("q"), None])),
        ],
        Some(vec![true, true, false].into()),
    );
    let mut list = ListBuilder::new(Int32Builder::new());
    list.append_value([Some(1), Some(2)]);
    list.append_null();
    list.append_value([None, Some(5)]);
    let mut map = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    map.keys().append_value("k");
    map.values().append_value(1);
    map.append(true).unwrap();
    map.append(false).unwrap();
    map.keys().append_value("z");
    map.values().append_null();
    map.append(true).unwrap();
    batch(vec![
        (
            "b",
            Arc::new(Int8Array::from(vec![Some(1), None, Some(-3)])),
        ),
        (
            "s",
            Arc::new(Int16Array::from(vec![Some(10), Some(-20), None])),
        ),
        (
            "i",
            Arc::new(Int32Array::from(vec![Some(100), Some(200), Some(-300)])),
        ),
        (
            "l",
            Arc::new(Int64Array::from(vec![None, Some(1 << 40), Some(-5)])),
        ),
        (
            "f",
            Arc::new(Float32Array::from(vec![Some(1.5), Some(-0.25), None])),
        ),
        (
            "d",
            Arc::new(Float64Array::from(vec![
                Some(2.5),
                Some(f64::NAN),
                Some(-1.0),
            ])),
        ),
        (
            "dec",
            Arc::new(
                Decimal128Array::from(vec![Some(12345), None, Some(-1)])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
        ),
        (
            "str",
            Arc::new(StringArray::from(vec![Some("b"), Some("a"), None])),
        ),
        (
            "bin",
            Arc::new(BinaryArray::from(vec![
                Some(&b"\x00\x01"[..]),
                None,
                Some(b"z"),
            ])),
        ),
        (
            "bool",
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        ),
        (
            "date",
            Arc::new(Date32Array::from(vec![Some(0), Some(18_000), None])),
        ),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(vec![Some(1_500), None, Some(-2_000_001)])
                    .with_timezone("UTC"),
            ),
        ),
        (
            "ntz",
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(86_400_000_000),
                None,
                Some(0),
            ])),
        ),
        ("st", Arc::new(st)),
        ("arr", Arc::new(list.finish())),
        ("m", Arc::new(map.finish())),
    ])
}

#[tokio::test]
async fn every_type_round_trips_with_its_statistics() {
    let table = fixture(all_types_fields(), &[], json!({}));
    let input = all_types_batch();
    let result = table.write(vec![input.clone()]).await.unwrap();
    assert_eq!(result.files.len(), 1);
    let file = &result.files[0];
    assert_eq!(file.num_records, 3);
    assert!(file.path.starts_with("part-00000-") && file.path.ends_with("-c000.zstd.parquet"));
    let read = table.read_back(&result.files).await;
    assert_eq!(read.num_rows(), 3);
    for (index, column) in input.columns().iter().enumerate() {
        let name = input.schema().field(index).name().clone();
        let got = read.column_by_name(&name).unwrap();
        let expected = arrow::compute::cast(column, got.data_type()).unwrap();
        assert_eq!(got.to_data(), expected.to_data(), "column {name}");
    }
    assert_eq!(
        stats(file),
        json!({
            "numRecords": 3,
            "minValues": {"b": -3, "s": -20, "i": -300, "l": -5, "f": -0.25, "d": -1.0,
                          "dec": -0.01, "str": "a", "date": "1970-01-01",
                          "ts": "1969-12-31T23:59:57.999Z", "ntz": "1970-01-01T00:00:00.000",
                          "st": {"x": 1, "y": "p"}},
            "maxValues": {"b": 1, "s": 10, "i": 200, "l": 1_099_511_627_776_i64, "f": 1.5,
                          "d": "NaN", "dec": 123.45, "str": "b", "date": "2019-04-14",
                          "ts": "1970-01-01T00:00:00.001Z", "ntz": "1970-01-02T00:00:00.000",
                          "st": {"x": 1, "y": "q"}},
            "nullCount": {"b": 1, "s": 1, "i": 0, "l": 1, "f": 1, "d": 0, "dec": 1, "str": 1,
                          "bin": 1, "bool": 1, "date": 1, "ts": 1, "ntz": 1,
                          "st": {"x": 2, "y": 1}, "arr": 1, "m": 1}
        })
    );
    assert!(file.stats.contains("\"dec\":-0.01"), "{}", file.stats);
}

#[tokio::test]
async fn a_nan_of_either_sign_is_the_largest_value_in_statistics() {
    let table = fixture(
        json!([
            field("f", json!("float"), true),
            field("d", json!("double"), true),
            field("i", json!("long"), true)
        ]),
        &[],
        json!({}),
    );
    // `-x` of a NaN `x` sets its sign bit: the IEEE total order puts that NaN below every
    // number, Spark's order above.
    let input = batch(vec![
        (
            "f",
            Arc::new(Float32Array::from(vec![-f32::NAN, -5.0, 0.5])) as ArrayRef,
        ),
        (
            "d",
            Arc::new(Float64Array::from(vec![-f64::NAN, -5.0, 0.5])),
        ),
        ("i", Arc::new(Int64Array::from(vec![1, 2, 3]))),
    ]);
    let result = table.write(vec![input]).await.unwrap();
    assert_eq!(
        stats(&result.files[0]),
        json!({"numRecords": 3,
               "minValues": {"f": -5.0, "d": -5.0, "i": 1},
               "maxValues": {"f": "NaN", "d": "NaN", "i": 3},
               "nullCount": {"f": 0, "d": 0, "i": 0}})
    );
    // No Parquet statistics and no dictionary for floats: the statistics would leave the NaN
    // out of the max, and Spark's Parquet reader would skip the row group for `d > 1`
    // (differential seed 201); its dictionary filter orders `-0.0` below `0.0` (seed 495).
    let path = table.dir.path().join(&result.files[0].path);
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::file::serialized_reader::SerializedFileReader::new_with_options(
        file,
        parquet::file::serialized_reader::ReadOptionsBuilder::new()
            .with_page_index()
            .build(),
    )
    .unwrap();
    let metadata = parquet::file::reader::FileReader::metadata(&reader);
    let row_group = metadata.row_group(0);
    let indexed: Vec<(bool, bool, bool)> = (0..row_group.num_columns())
        .map(|column| {
            let chunk = row_group.column(column);
            (
                chunk.statistics().is_some(),
                chunk.column_index_offset().is_some(),
                chunk.dictionary_page_offset().is_some(),
            )
        })
        .collect();
    assert_eq!(
        indexed,
        [
            (false, false, false),
            (false, false, false),
            (true, true, true)
        ]
    );
}

#[tokio::test]
async fn inputs_are_matched_by_name_and_cast_without_loss() {
    let table = fixture(
        json!([
            field("id", json!("long"), false),
            field("ts", json!("timestamp"), true),
            field("name", json!("string"), true),
            field("extra", json!("double"), true)
        ]),
        &[],
        json!({}),
    );
    let input = batch(vec![
        (
            "NAME",
            Arc::new(arrow_array::LargeStringArray::from(vec!["a", "b"])) as ArrayRef,
        ),
        (
            "ts",
            Arc::new(
                TimestampNanosecondArray::from(vec![1_000_001_999, 0]).with_timezone("+01:00"),
            ),
        ),
        ("Id", Arc::new(Int32Array::from(vec![7, 8]))),
    ]);
    let result = table.write(vec![input]).await.unwrap();
    let read = table.read_back(&result.files).await;
    assert_eq!(
        read.column_by_name("id").unwrap().to_data(),
        Int64Array::from(vec![7, 8]).to_data()
    );
    assert_eq!(
        read.column_by_name("ts").unwrap().to_data(),
        TimestampMicrosecondArray::from(vec![1_000_001, 0])
            .with_timezone("UTC")
            .to_data()
    );
    assert_eq!(read.column_by_name("extra").unwrap().null_count(), 2);
    assert_eq!(
        stats(&result.files[0])["nullCount"],
        json!({"id": 0, "ts": 0, "name": 0, "extra": 2})
    );
}

#[tokio::test]
async fn schema_mismatches_are_typed_errors_naming_the_column() {
    let table = fixture(json!([field("id", json!("integer"), true)]), &[], json!({}));
    let extra = batch(vec![
        ("id", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
        ("other", Arc::new(Int32Array::from(vec![1]))),
    ]);
    let failure = table.write(vec![extra]).await.unwrap_err();
    assert!(
        matches!(&failure.error, Error::SchemaMismatch { column, .. } if column == "other"),
        "{failure}"
    );
    let lossy = batch(vec![(
        "id",
        Arc::new(Int64Array::from(vec![1])) as ArrayRef,
    )]);
    let failure = table.write(vec![lossy]).await.unwrap_err();
    assert!(
        matches!(&failure.error, Error::SchemaMismatch { column, reason, .. }
            if column == "id" && reason.contains("without loss")),
        "{failure}"
    );
}

#[tokio::test]
async fn nulls_in_non_nullable_columns_are_violations() {
    let table = fixture(
        json!([
            field("id", json!("integer"), false),
            field(
                "st",
                json!({"type": "struct", "fields": [field("x", json!("integer"), false)]}),
                true
            )
        ]),
        &[],
        json!({}),
    );
    let input = batch(vec![(
        "id",
        Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
    )]);
    let failure = table.write(vec![input]).await.unwrap_err();
    let Error::ConstraintViolation {
        constraint, reason, ..
    } = &failure.error
    else {
        panic!("{failure}");
    };
    assert!(
        constraint.contains("`id`") && reason.contains("row 1"),
        "{failure}"
    );

    let missing = batch(vec![(
        "st",
        Arc::new(StructArray::new(
            Fields::from(vec![Field::new("x", ArrowType::Int32, true)]),
            vec![Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])) as ArrayRef],
            Some(vec![true, false, true].into()),
        )) as ArrayRef,
    )]);
    let failure = table.write(vec![missing]).await.unwrap_err();
    let Error::ConstraintViolation { constraint, .. } = &failure.error else {
        panic!("{failure}");
    };
    // `id` is missing altogether: its NULLs are reported first.
    assert!(constraint.contains("`id`"), "{failure}");

    let nested = batch(vec![
        ("id", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
        (
            "st",
            Arc::new(StructArray::new(
                Fields::from(vec![Field::new("x", ArrowType::Int32, true)]),
                vec![Arc::new(Int32Array::from(vec![Some(1), None, None])) as ArrayRef],
                Some(vec![true, false, true].into()),
            )),
        ),
    ]);
    let failure = table.write(vec![nested]).await.unwrap_err();
    let Error::ConstraintViolation {
        constraint, reason, ..
    } = &failure.error
    else {
        panic!("{failure}");
    };
    assert!(
        constraint.contains("`st.x`") && reason.contains("row 2"),
        "{failure}"
    );
}

#[tokio::test]
async fn check_constraints_and_invariants_are_enforced() {
    let invariant = json!({"expression": {"expression": "v < 100"}}).to_string();
    let table = fixture(
        json!([field("id", json!("integer"), true),
               {"name": "v", "type": "integer", "nullable": true,
                "metadata": {"delta.invariants": invariant}}]),
        &[],
        json!({"delta.constraints.positive": "id > 0"}),
    );
    let good = batch(vec![
        ("id", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
        ("v", Arc::new(Int32Array::from(vec![5, 6]))),
    ]);
    assert_eq!(
        table.write(vec![good.clone()]).await.unwrap().files.len(),
        1
    );
    let bad = batch(vec![
        (
            "id",
            Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
        ),
        ("v", Arc::new(Int32Array::from(vec![5, 6]))),
    ]);
    // The first batch is written, the second refused: the written file is named.
    let failure = table.write(vec![good.clone(), bad]).await.unwrap_err();
    let Error::ConstraintViolation {
        constraint, reason, ..
    } = &failure.error
    else {
        panic!("{failure}");
    };
    assert!(
        constraint.contains("positive") && reason.contains("row 1") && reason.contains("id = NULL"),
        "{failure}"
    );
    assert!(
        failure.written_files.is_empty(),
        "the first batch's file was still open"
    );
    let over = batch(vec![
        ("id", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
        ("v", Arc::new(Int32Array::from(vec![100]))),
    ]);
    let options = WriterOptions {
        max_records_per_file: Some(2),
        ..WriterOptions::default()
    };
    let failure = table
        .write_with(vec![good, over], options)
        .await
        .unwrap_err();
    assert!(
        failure.error.to_string().contains("invariant on `v`"),
        "{failure}"
    );
    assert_eq!(failure.written_files.len(), 1);
    assert!(table.dir.path().join(&failure.written_files[0]).exists());
}

#[tokio::test]
async fn constraints_we_cannot_evaluate_refuse_the_write() {
    let table = fixture(
        json!([field("id", json!("integer"), true)]),
        &[],
        json!({"delta.constraints.c": "sqrt(id) > 0"}),
    );
    let duties = unsupported_writer_duties(&table.config);
    assert_eq!(duties.len(), 1);
    assert_eq!(
        duties[0].feature,
        crate::table_config::TableFeature::CheckConstraints
    );
    let error = DataFileWriter::try_new(&table.config, table.storage(), WriterOptions::default())
        .unwrap_err();
    assert!(matches!(error, Error::UnsupportedFeature { .. }), "{error}");
}

#[tokio::test]
async fn identity_default_and_generated_columns_are_filled() {
    let table = fixture(
        json!([
            {"name": "id", "type": "long", "nullable": false,
             "metadata": {"delta.identity.start": 10, "delta.identity.step": 5,
                          "delta.identity.highWaterMark": 20,
                          "delta.identity.allowExplicitInsert": false}},
            field("v", json!("integer"), true),
            {"name": "copy", "type": "long", "nullable": true,
             "metadata": {"delta.generationExpression": "v"}},
            {"name": "kind", "type": "string", "nullable": true,
             "metadata": {"CURRENT_DEFAULT": "'none'"}},
        ]),
        &[],
        json!({}),
    );
    assert!(unsupported_writer_duties(&table.config).is_empty());
    let input = || {
        batch(vec![(
            "v",
            Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
        )])
    };
    let result = table.write(vec![input(), input()]).await.unwrap();
    assert_eq!(
        result.identity_high_water_marks,
        vec![("id".to_string(), 40)]
    );
    let read = table.read_back(&result.files).await;
    assert_eq!(
        read.column_by_name("id").unwrap().to_data(),
        Int64Array::from(vec![25, 30, 35, 40]).to_data()
    );
    assert_eq!(
        read.column_by_name("copy").unwrap().to_data(),
        Int64Array::from(vec![Some(1), None, Some(1), None]).to_data()
    );
    assert_eq!(
        read.column_by_name("kind").unwrap().to_data(),
        StringArray::from(vec!["none"; 4]).to_data()
    );
    let wrong = batch(vec![
        ("v", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
        ("copy", Arc::new(Int64Array::from(vec![2]))),
    ]);
    let failure = table.write(vec![wrong]).await.unwrap_err();
    assert!(
        failure
            .error
            .to_string()
            .contains("generated column `copy`"),
        "{failure}"
    );
    let explicit = batch(vec![(
        "id",
        Arc::new(Int64Array::from(vec![1])) as ArrayRef,
    )]);
    let failure = table.write(vec![explicit]).await.unwrap_err();
    assert!(
        matches!(failure.error, Error::ConstraintViolation { .. }),
        "{failure}"
    );
}

#[tokio::test]
async fn generation_expressions_are_computed_and_checked() {
    let generated = |name: &str, ty: &str, expression: &str| {
        json!({"name": name, "type": ty, "nullable": true,
               "metadata": {"delta.generationExpression": expression}})
    };
    let table = fixture(
        json!([
            field("a", json!("integer"), true),
            field("s", json!("string"), true),
            field("ts", json!("timestamp"), true),
            generated("next", "integer", "a + 1"),
            generated(
                "label",
                "string",
                "concat(lower(s), '-', CAST(a AS STRING))"
            ),
            generated("prefix", "string", "substring(s, 1, 2)"),
            generated("day", "date", "CAST(ts AS DATE)"),
            generated("year", "integer", "year(ts)"),
            generated("hour", "integer", "hour(ts)"),
            generated("month", "string", "date_format(ts, 'yyyy-MM')"),
        ]),
        &[],
        json!({}),
    );
    assert!(unsupported_writer_duties(&table.config).is_empty());
    let input = batch(vec![
        (
            "a",
            Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![Some("AbC"), Some("x")])),
        ),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(vec![Some(1_709_622_489_000_000), Some(-1)])
                    .with_timezone("UTC"),
            ),
        ),
    ]);
    let result = table.write(vec![input.clone()]).await.unwrap();
    let read = table.read_back(&result.files).await;
    let text = |name: &str| -> Vec<Option<String>> {
        let column = read.column_by_name(name).unwrap();
        let column = arrow::compute::cast(column, &ArrowType::Utf8).unwrap();
        let column = column.as_any().downcast_ref::<StringArray>().unwrap();
        column.iter().map(|v| v.map(str::to_string)).collect()
    };
    let values = |a: Option<&str>, b: Option<&str>| vec![a.map(String::from), b.map(String::from)];
    assert_eq!(text("next"), values(Some("2"), None));
    assert_eq!(text("label"), values(Some("abc-1"), None));
    assert_eq!(text("prefix"), values(Some("Ab"), Some("x")));
    assert_eq!(text("day"), values(Some("2024-03-05"), Some("1969-12-31")));
    assert_eq!(text("year"), values(Some("2024"), Some("1969")));
    assert_eq!(text("hour"), values(Some("7"), Some("23")));
    assert_eq!(text("month"), values(Some("2024-03"), Some("1969-12")));

    let with_next = |next: Vec<Option<i32>>| {
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            ("a", input.column(0).clone()),
            ("s", input.column(1).clone()),
            ("ts", input.column(2).clone()),
        ];
        columns.push(("next", Arc::new(Int32Array::from(next))));
        batch(columns)
    };
    table
        .write(vec![with_next(vec![Some(2), None])])
        .await
        .unwrap();
    let failure = table
        .write(vec![with_next(vec![Some(2), Some(0)])])
        .await
        .unwrap_err();
    let message = failure.error.to_string();
    assert!(
        matches!(failure.error, Error::ConstraintViolation { .. }),
        "{message}"
    );
    assert!(
        message.contains("generated column `next` (a + 1)"),
        "{message}"
    );
    assert!(
        message.contains("row 1 has `next` = 0, the expression gives NULL"),
        "{message}"
    );
    assert!(message.contains("from a = NULL"), "{message}");

    let overflow = batch(vec![(
        "a",
        Arc::new(Int32Array::from(vec![i32::MAX])) as ArrayRef,
    )]);
    let failure = table.write(vec![overflow]).await.unwrap_err();
    assert!(
        matches!(failure.error, Error::ConstraintViolation { .. }),
        "{}",
        failure.error
    );
}

#[tokio::test]
async fn generation_expressions_out_of_reach_refuse_the_write() {
    for (expression, ty) in [
        ("hash(a)", "integer"),
        ("current_timestamp()", "timestamp"),
        ("missing + 1", "integer"),
        ("date_format(ts, 'EEE')", "string"),
        ("CAST(ts AS DATE)", "boolean"),
    ] {
        let table = fixture(
            json!([
                field("a", json!("integer"), true),
                field("ts", json!("timestamp"), true),
                {"name": "g", "type": ty, "nullable": true,
                 "metadata": {"delta.generationExpression": expression}},
            ]),
            &[],
            json!({}),
        );
        let duties = unsupported_writer_duties(&table.config);
        assert_eq!(duties.len(), 1, "{expression}");
        assert!(
            duties[0].detail.contains("generated column `g`"),
            "{expression}"
        );
        assert!(duties[0].detail.contains(expression), "{expression}");
        let error =
            DataFileWriter::try_new(&table.config, table.storage(), WriterOptions::default())
                .unwrap_err();
        assert!(matches!(error, Error::UnsupportedFeature { .. }), "{error}");
    }
}

/// Found by the combination tests (issue 23): an empty string and a NULL are the same
/// partition value (NULL, as Spark writes `''`); one write holding both lost one group's rows.
#[tokio::test]
async fn empty_strings_and_nulls_of_one_write_share_the_null_partition() {
    let table = fixture(
        json!([
            field("v", json!("integer"), true),
            field("p", json!("string"), true)
        ]),
        &["p"],
        json!({}),
    );
    let input = batch(vec![
        (
            "v",
            Arc::new(Int32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        ),
        (
            "p",
            Arc::new(StringArray::from(vec![Some(""), None, Some("a"), Some("")])),
        ),
    ]);
    let result = table.write(vec![input]).await.unwrap();
    assert_eq!(result.files.len(), 2);
    let rows: i64 = result
        .files
        .iter()
        .map(|f| stats(f)["numRecords"].as_i64().unwrap())
        .sum();
    assert_eq!(rows, 4);
    let null_part = result
        .files
        .iter()
        .find(|f| f.partition_values == vec![("p".to_string(), None)])
        .unwrap();
    assert_eq!(stats(null_part)["numRecords"], json!(3));
}

#[tokio::test]
async fn partitions_go_to_escaped_hive_directories() {
    let table = fixture(
        json!([
            field("v", json!("integer"), true),
            field("p", json!("string"), true),
            field("q", json!("integer"), true)
        ]),
        &["p", "q"],
        json!({}),
    );
    let input = batch(vec![
        (
            "v",
            Arc::new(Int32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        ),
        (
            "p",
            Arc::new(StringArray::from(vec![
                Some("a/b:c%"),
                None,
                Some("a/b:c%"),
                Some(""),
            ])),
        ),
        (
            "q",
            Arc::new(Int32Array::from(vec![Some(1), Some(2), Some(1), None])),
        ),
    ]);
    let result = table.write(vec![input]).await.unwrap();
    type Values = Vec<(String, Option<String>)>;
    let mut dirs: Vec<(String, Values)> = result
        .files
        .iter()
        .map(|f| {
            (
                f.path.rsplit_once('/').unwrap().0.to_string(),
                f.partition_values.clone(),
            )
        })
        .collect();
    dirs.sort();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        dirs,
        vec![
            (
                "p=__HIVE_DEFAULT_PARTITION__/q=2".to_string(),
                vec![("p".to_string(), None), ("q".to_string(), some("2"))]
            ),
            (
                "p=__HIVE_DEFAULT_PARTITION__/q=__HIVE_DEFAULT_PARTITION__".to_string(),
                vec![("p".to_string(), None), ("q".to_string(), None)]
            ),
            (
                "p=a%2Fb%3Ac%25/q=1".to_string(),
                vec![
                    ("p".to_string(), some("a/b:c%")),
                    ("q".to_string(), some("1"))
                ]
            ),
        ]
    );
    for file in &result.files {
        let footer = table.parquet_footer(file);
        let names: Vec<&str> = footer
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name())
            .collect();
        assert_eq!(names, ["v"], "partition columns are not in the data files");
        assert_eq!(stats(file)["nullCount"], json!({"v": 0}));
    }
    let read = table.read_back(&result.files).await;
    let mut rows: Vec<(i32, Option<String>)> = (0..read.num_rows())
        .map(|row| {
            let v = read
                .column_by_name("v")
                .unwrap()
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap()
                .value(row);
            let p = read
                .column_by_name("p")
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            (v, (!p.is_null(row)).then(|| p.value(row).to_string()))
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        vec![
            (1, some("a/b:c%")),
            (2, None),
            (3, some("a/b:c%")),
            (4, None)
        ]
    );
}

#[tokio::test]
async fn random_prefixes_replace_partition_directories() {
    let table = fixture(
        json!([
            field("v", json!("integer"), true),
            field("p", json!("string"), true)
        ]),
        &["p"],
        json!({"delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "3"}),
    );
    let input = batch(vec![
        ("v", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
        ("p", Arc::new(StringArray::from(vec!["x", "y"]))),
    ]);
    let result = table.write(vec![input]).await.unwrap();
    assert_eq!(result.files.len(), 2);
    for file in &result.files {
        let (prefix, name) = file.path.split_once('/').unwrap();
        assert_eq!(prefix.len(), 3);
        assert!(
            prefix.chars().all(|c| c.is_ascii_alphanumeric()),
            "{prefix}"
        );
        assert!(name.starts_with("part-"));
    }
    assert_eq!(table.read_back(&result.files).await.num_rows(), 2);
}

fn mapped(name: &str, id: i64, ty: Value) -> Value {
    json!({"name": name, "type": ty, "nullable": true,
           "metadata": {"delta.columnMapping.id": id,
                        "delta.columnMapping.physicalName": format!("col-{name}")}})
}

#[tokio::test]
async fn column_mapping_uses_physical_names_and_field_ids() {
    for mode in ["name", "id"] {
        let table = fixture(
            json!([
                mapped("a", 1, json!("integer")),
                mapped(
                    "s",
                    2,
                    json!({"type": "struct", "fields": [mapped("x", 3, json!("string"))]})
                ),
                mapped("p", 4, json!("string")),
            ]),
            &["p"],
            json!({"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "4"}),
        );
        let st = StructArray::new(
            Fields::from(vec![Field::new("x", ArrowType::Utf8, true)]),
            vec![Arc::new(StringArray::from(vec!["u", "w"])) as ArrayRef],
            None,
        );
        let input = batch(vec![
            ("a", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
            ("s", Arc::new(st)),
            ("p", Arc::new(StringArray::from(vec!["k", "k"]))),
        ]);
        let result = table.write(vec![input.clone()]).await.unwrap();
        let file = &result.files[0];
        assert!(file.path.starts_with("col-p=k/"), "{}", file.path);
        assert_eq!(
            file.partition_values,
            vec![("col-p".to_string(), Some("k".to_string()))]
        );
        assert_eq!(
            stats(file),
            json!({"numRecords": 2,
                   "minValues": {"col-a": 1, "col-s": {"col-x": "u"}},
                   "maxValues": {"col-a": 2, "col-s": {"col-x": "w"}},
                   "nullCount": {"col-a": 0, "col-s": {"col-x": 0}}})
        );
        let footer = table.parquet_footer(file);
        let root = footer.file_metadata().schema_descr().root_schema().clone();
        let fields: Vec<(String, i32)> = root
            .get_fields()
            .iter()
            .map(|f| (f.name().to_string(), f.get_basic_info().id()))
            .collect();
        assert_eq!(fields, [("col-a".to_string(), 1), ("col-s".to_string(), 2)]);
        let nested = &root.get_fields()[1].get_fields()[0];
        assert_eq!((nested.name(), nested.get_basic_info().id()), ("col-x", 3));
        let read = table.read_back(&result.files).await;
        let got = read.column_by_name("s").unwrap();
        let expected = arrow::compute::cast(input.column(1), got.data_type()).unwrap();
        assert_eq!(got.to_data(), expected.to_data());
    }
}

#[tokio::test]
async fn statistics_honour_the_column_selection_and_truncate_strings() {
    let long = format!("{}{}", "a".repeat(32), "b\u{fffd}\u{fffd}x");
    let top = format!("{}\u{ffff}z", "m".repeat(32));
    let fields = json!([
        field("s", json!("string"), true),
        field("n", json!("integer"), true),
        field(
            "t",
            json!({"type": "struct", "fields": [
                            field("u", json!("integer"), true), field("w", json!("integer"), true)]}),
            true
        ),
        field("z", json!("double"), true)
    ]);
    let st = || {
        StructArray::new(
            Fields::from(vec![
                Field::new("u", ArrowType::Int32, true),
                Field::new("w", ArrowType::Int32, true),
            ]),
            vec![
                Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
                Arc::new(Int32Array::from(vec![3, 4])),
            ],
            None,
        )
    };
    let input = batch(vec![
        (
            "s",
            Arc::new(StringArray::from(vec![long.as_str(), top.as_str()])) as ArrayRef,
        ),
        ("n", Arc::new(Int32Array::from(vec![None, None]))),
        ("t", Arc::new(st())),
        ("z", Arc::new(Float64Array::from(vec![f64::NAN, f64::NAN]))),
    ]);
    let table = fixture(
        fields.clone(),
        &[],
        json!({"delta.dataSkippingNumIndexedCols": "3"}),
    );
    let result = table.write(vec![input.clone()]).await.unwrap();
    let expected_max = format!("{}\u{ffff}\u{fffd}", "m".repeat(32));
    assert_eq!(
        stats(&result.files[0]),
        json!({"numRecords": 2,
               "minValues": {"s": "a".repeat(32), "t": {"u": 1}},
               "maxValues": {"s": expected_max, "t": {"u": 2}},
               "nullCount": {"s": 0, "n": 2, "t": {"u": 0}}})
    );
    let table = fixture(
        fields,
        &[],
        json!({"delta.dataSkippingStatsColumns": "t.w, Z"}),
    );
    let result = table.write(vec![input]).await.unwrap();
    assert_eq!(
        stats(&result.files[0]),
        json!({"numRecords": 2,
               "minValues": {"t": {"w": 3}, "z": "NaN"},
               "maxValues": {"t": {"w": 4}, "z": "NaN"},
               "nullCount": {"t": {"w": 0}, "z": 0}})
    );
    assert_eq!(
        stats::truncate_max(&long),
        format!("{}\u{fffd}", "a".repeat(32))
    );
    let high = format!("{}\u{fffd}\u{ffff}b\u{ffff}", "a".repeat(32));
    let expected = format!("{}\u{fffd}\u{ffff}\u{fffd}", "a".repeat(32));
    assert_eq!(stats::truncate_max(&high), expected);
    assert_eq!(stats::truncate_min(&high), "a".repeat(32));
}

#[tokio::test]
async fn tight_bounds_come_with_deletion_vector_support() {
    let table = fixture_with_protocol(
        json!([field("v", json!("integer"), true)]),
        &[],
        json!({}),
        json!({"minReaderVersion": 3, "minWriterVersion": 7,
               "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}),
    );
    let input = batch(vec![("v", Arc::new(Int32Array::from(vec![1])) as ArrayRef)]);
    let result = table.write(vec![input]).await.unwrap();
    assert_eq!(stats(&result.files[0])["tightBounds"], json!(true));
}

#[tokio::test]
async fn files_roll_over_at_the_record_limit_and_target_size() {
    let table = fixture(json!([field("v", json!("long"), true)]), &[], json!({}));
    let input = || {
        batch(vec![(
            "v",
            Arc::new(Int64Array::from_iter_values(0..1000)) as ArrayRef,
        )])
    };
    let options = WriterOptions {
        max_records_per_file: Some(300),
        codec: Codec::Snappy,
        ..WriterOptions::default()
    };
    let result = table
        .write_with(vec![input(), input()], options)
        .await
        .unwrap();
    let counts: Vec<u64> = result.files.iter().map(|f| f.num_records).collect();
    assert_eq!(counts, [300, 300, 300, 300, 300, 300, 200]);
    assert!(result
        .files
        .iter()
        .all(|f| f.path.ends_with(".snappy.parquet")));
    let read = table.read_back(&result.files).await;
    assert_eq!(read.num_rows(), 2000);

    let options = WriterOptions {
        target_file_size: Some(1),
        row_group_rows: 100,
        ..WriterOptions::default()
    };
    let result = table.write_with(vec![input()], options).await.unwrap();
    assert_eq!(
        result.files.len(),
        1,
        "a file closes after the batch that fills it"
    );
    assert_eq!(table.parquet_footer(&result.files[0]).num_row_groups(), 10);
}
