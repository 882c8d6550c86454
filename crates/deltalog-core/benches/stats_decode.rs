//! Decoding JSON file statistics into the typed stats struct: the typed single-pass decoder
//! (`table_config::stats::parse_stats`, which takes it wherever it can) against arrow-json's
//! general decoder (`decode_with_arrow_json`), on 100,000 statistics of eleven columns of
//! longs, doubles, strings, dates and timestamps, as a streaming writer's adds carry them
//! (what a checkpoint from JSON-only statistics and a filtered listing of JSON logs parse).

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use arrow_array::{Array, StringArray};
use arrow_schema::DataType;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use deltalog_core::table_config::stats::{decode_with_arrow_json, parse_stats, stats_schema};
use deltalog_core::StructType;

const FILES: usize = 100_000;

/// `(name, type)` of the eleven columns with statistics.
const COLUMNS: [(&str, &str); 11] = [
    ("id", "long"),
    ("seq", "long"),
    ("count", "long"),
    ("price", "double"),
    ("score", "double"),
    ("ratio", "double"),
    ("name", "string"),
    ("city", "string"),
    ("tag", "string"),
    ("day", "date"),
    ("at", "timestamp"),
];

fn data_schema() -> StructType {
    let fields: Vec<_> = COLUMNS
        .iter()
        .map(|(name, kind)| {
            format!(r#"{{"name":"{name}","type":"{kind}","nullable":true,"metadata":{{}}}}"#)
        })
        .collect();
    deltalog_core::schema::parse_schema(&format!(
        r#"{{"type":"struct","fields":[{}]}}"#,
        fields.join(",")
    ))
    .unwrap()
}

/// The bound of column `column` of file `index`, as JSON (`high` for the maximum).
fn bound(column: usize, index: usize, high: bool) -> String {
    let n = index * 10 + usize::from(high) * 9;
    match COLUMNS[column].1 {
        "long" => n.to_string(),
        "double" => format!("{}.{}", n, index % 97),
        "string" => format!("\"{}-{:08}\"", COLUMNS[column].0, n),
        "date" => format!("\"2024-{:02}-{:02}\"", 1 + index % 12, 1 + n % 28),
        _ => format!(
            "\"2024-05-{:02}T{:02}:{:02}:{:02}.{:03}Z\"",
            1 + index % 28,
            n % 24,
            n % 60,
            index % 60,
            n % 1000
        ),
    }
}

fn stats_json(index: usize) -> String {
    let object = |value: &dyn Fn(usize) -> String| {
        let members: Vec<_> = (0..COLUMNS.len())
            .map(|column| format!("\"{}\":{}", COLUMNS[column].0, value(column)))
            .collect();
        format!("{{{}}}", members.join(","))
    };
    format!(
        r#"{{"numRecords":{},"minValues":{},"maxValues":{},"nullCount":{}}}"#,
        1000 + index % 100,
        object(&|column| bound(column, index, false)),
        object(&|column| bound(column, index, true)),
        object(&|column| ((index + column) % 5).to_string()),
    )
}

fn stats_decode(c: &mut Criterion) {
    let json = StringArray::from_iter_values((0..FILES).map(stats_json));
    let DataType::Struct(fields) = stats_schema(&data_schema(), &Default::default()).unwrap()
    else {
        panic!("the stats type is a struct");
    };
    let present = vec![true; json.len()];
    let stats_type = DataType::Struct(fields.clone());
    let typed = parse_stats(&json, &stats_type).unwrap();
    let general = decode_with_arrow_json(&json, present.clone(), &fields).unwrap();
    assert_eq!(typed, general, "the two decoders disagree");
    assert_eq!(typed.null_count(), 0);
    let mut group = c.benchmark_group("stats_decode");
    group.sample_size(10);
    group.throughput(Throughput::Elements(FILES as u64));
    group.bench_function("typed", |b| {
        b.iter(|| parse_stats(black_box(&json), &stats_type).unwrap())
    });
    group.bench_function("arrow_json", |b| {
        b.iter(|| decode_with_arrow_json(black_box(&json), present.clone(), &fields).unwrap())
    });
    group.finish();
}

criterion_group!(benches, stats_decode);
criterion_main!(benches);
