//! Statistics collection while a data file is written (`write::stats`): a file of 262,144 rows
//! in 8,192-row batches, as the writer feeds them, for each kind of column alone and for all
//! of them together:
//! - `long`, `double` (a NaN every 1,000 rows), `decimal` (18, 2), `date`, `timestamp`:
//!   min, max and null count;
//! - `string`: values of 8 to 71 characters, so that most bounds are cut to 32 characters;
//! - `nullable_int`: every third value NULL;
//! - `boolean`: a null count only;
//! - `struct`: a struct of an int and a string, NULL every tenth row (null counts of the
//!   leaves include it).
//!
//! `stats_update/<column>` times `FileStats::update` over the whole file;
//! `stats_to_json/all` times the statistics JSON of the finished file.

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Fields, Schema};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use deltalog_core::schema::{parse_schema, ColumnMappingMode, StructType};
use deltalog_core::write::stats::StatsPlan;
use serde_json::json;

const FILE_ROWS: usize = 262_144;
const BATCH_ROWS: usize = 8_192;

/// One column of the benchmark: its Delta type and its values for rows `start..start + len`.
struct Column {
    name: &'static str,
    delta_type: serde_json::Value,
    values: fn(usize, usize) -> ArrayRef,
}

fn columns() -> Vec<Column> {
    vec![
        Column {
            name: "long",
            delta_type: json!("long"),
            values: |start, len| {
                Arc::new(Int64Array::from_iter_values(rows(start, len).map(scramble)))
            },
        },
        Column {
            name: "double",
            delta_type: json!("double"),
            values: |start, len| {
                let value = |row: usize| {
                    if row.is_multiple_of(1_000) {
                        f64::NAN
                    } else {
                        scramble(row) as f64 / 7.0
                    }
                };
                Arc::new(Float64Array::from_iter_values(rows(start, len).map(value)))
            },
        },
        Column {
            name: "decimal",
            delta_type: json!("decimal(18,2)"),
            values: |start, len| {
                let values = Decimal128Array::from_iter_values(
                    rows(start, len).map(|row| i128::from(scramble(row))),
                );
                Arc::new(values.with_precision_and_scale(18, 2).unwrap())
            },
        },
        Column {
            name: "date",
            delta_type: json!("date"),
            values: |start, len| {
                Arc::new(Date32Array::from_iter_values(
                    rows(start, len).map(|row| (scramble(row) % 40_000) as i32),
                ))
            },
        },
        Column {
            name: "timestamp",
            delta_type: json!("timestamp"),
            values: |start, len| {
                let values =
                    TimestampMicrosecondArray::from_iter_values(rows(start, len).map(scramble));
                Arc::new(values.with_timezone("UTC"))
            },
        },
        Column {
            name: "string",
            delta_type: json!("string"),
            values: |start, len| {
                Arc::new(StringArray::from_iter_values(rows(start, len).map(text)))
            },
        },
        Column {
            name: "nullable_int",
            delta_type: json!("integer"),
            values: |start, len| {
                let value = |row: usize| (!row.is_multiple_of(3)).then(|| scramble(row) as i32);
                Arc::new(Int32Array::from_iter(rows(start, len).map(value)))
            },
        },
        Column {
            name: "boolean",
            delta_type: json!("boolean"),
            values: |start, len| {
                Arc::new(BooleanArray::from_iter(
                    rows(start, len).map(|row| Some(row.is_multiple_of(2))),
                ))
            },
        },
        Column {
            name: "struct",
            delta_type: json!({"type": "struct", "fields": [
                {"name": "i", "type": "integer", "nullable": true, "metadata": {}},
                {"name": "s", "type": "string", "nullable": true, "metadata": {}}]}),
            values: |start, len| {
                let fields = Fields::from(vec![
                    Field::new("i", DataType::Int32, true),
                    Field::new("s", DataType::Utf8, true),
                ]);
                let i: ArrayRef = Arc::new(Int32Array::from_iter_values(
                    rows(start, len).map(|row| scramble(row) as i32),
                ));
                let s: ArrayRef =
                    Arc::new(StringArray::from_iter_values(rows(start, len).map(text)));
                let nulls =
                    NullBuffer::from_iter(rows(start, len).map(|row| !row.is_multiple_of(10)));
                Arc::new(StructArray::try_new(fields, vec![i, s], Some(nulls)).unwrap())
            },
        },
    ]
}

fn rows(start: usize, len: usize) -> std::ops::Range<usize> {
    start..start + len
}

/// A spread-out value for `row`, the same on every run.
fn scramble(row: usize) -> i64 {
    ((row as i64).wrapping_mul(6_364_136_223_846_793_005) >> 17) % 1_000_000_000_000
}

/// 8 to 71 characters, starting with a digit string so that values differ early.
fn text(row: usize) -> String {
    let base = format!("{:012}-", scramble(row).unsigned_abs());
    let len = 8 + row % 64;
    base.chars().cycle().take(len).collect()
}

/// The Delta schema and the batches of a file holding `columns`.
fn file_of(columns: &[&Column]) -> (StructType, Vec<RecordBatch>) {
    let fields: Vec<serde_json::Value> = columns
        .iter()
        .map(|c| json!({"name": c.name, "type": c.delta_type, "nullable": true, "metadata": {}}))
        .collect();
    let delta_schema =
        parse_schema(&json!({"type": "struct", "fields": fields}).to_string()).unwrap();
    let mut batches = Vec::with_capacity(FILE_ROWS / BATCH_ROWS);
    for start in (0..FILE_ROWS).step_by(BATCH_ROWS) {
        let arrays: Vec<ArrayRef> = columns
            .iter()
            .map(|c| (c.values)(start, BATCH_ROWS))
            .collect();
        let arrow_fields: Vec<Field> = columns
            .iter()
            .zip(&arrays)
            .map(|(c, a)| Field::new(c.name, a.data_type().clone(), true))
            .collect();
        batches.push(RecordBatch::try_new(Arc::new(Schema::new(arrow_fields)), arrays).unwrap());
    }
    (delta_schema, batches)
}

fn plan_of(schema: &StructType) -> StatsPlan {
    StatsPlan::try_new(schema, &HashMap::new(), ColumnMappingMode::None, true).unwrap()
}

fn write_stats(c: &mut Criterion) {
    let all = columns();
    let mut shapes: Vec<(&str, Vec<&Column>)> = all.iter().map(|c| (c.name, vec![c])).collect();
    shapes.push(("all", all.iter().collect()));

    let mut group = c.benchmark_group("stats_update");
    group.throughput(Throughput::Elements(FILE_ROWS as u64));
    for (name, columns) in &shapes {
        let (schema, batches) = file_of(columns);
        let plan = plan_of(&schema);
        group.bench_function(*name, |b| {
            b.iter(|| {
                let mut stats = plan.start();
                for batch in &batches {
                    stats.update(&plan, black_box(batch)).unwrap();
                }
                stats
            })
        });
    }
    group.finish();

    let (schema, batches) = file_of(&all.iter().collect::<Vec<_>>());
    let plan = plan_of(&schema);
    let mut stats = plan.start();
    for batch in &batches {
        stats.update(&plan, batch).unwrap();
    }
    c.bench_function("stats_to_json/all", |b| {
        b.iter(|| black_box(&stats).to_json(&plan).unwrap())
    });
}

criterion_group!(benches, write_stats);
criterion_main!(benches);
