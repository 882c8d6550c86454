//! Deletion vectors of a 1,000,000-row data file in three shapes:
//! - `sparse`: 1,000 deleted rows, one every 1,000 (array containers);
//! - `dense`: every other row, 500,000 rows (bitmap containers);
//! - `runs`: 100 runs of 5,000 rows, 500,000 rows, run-compressed (run containers).
//!
//! For each: decoding an inline (`i`, Z85) descriptor (`resolve` + `decode_inline`), decoding a
//! record of a deletion vector file (`decode_dv_file`, checksum included), building the row
//! masks of the whole file in 8,192-row batches as a scan does (`row_mask`), and encoding both
//! forms (`encode_dv_file`, `encode_inline`).

// Benchmark setup fails loudly: a panic there is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use deltalog_core::actions::deletion_vector::{
    decode_dv_file, decode_inline, encode_dv_file, encode_inline, resolve, row_mask,
    uuid_descriptor, DvLocation,
};
use deltalog_core::actions::DeletionVectorDescriptor;
use roaring::RoaringTreemap;
use url::Url;
use uuid::Uuid;

const FILE_ROWS: u64 = 1_000_000;
const BATCH_ROWS: u64 = 8_192;

struct Shape {
    name: &'static str,
    bitmap: RoaringTreemap,
    inline: DeletionVectorDescriptor,
    file: Vec<u8>,
    in_file: DeletionVectorDescriptor,
}

fn shapes() -> Vec<Shape> {
    let sparse: RoaringTreemap = (0..FILE_ROWS).step_by(1_000).collect();
    let dense: RoaringTreemap = (0..FILE_ROWS).step_by(2).collect();
    let mut runs = RoaringTreemap::new();
    for run in 0..100 {
        runs.insert_range(run * 10_000..run * 10_000 + 5_000);
    }
    runs.optimize();
    [("sparse", sparse), ("dense", dense), ("runs", runs)]
        .into_iter()
        .map(|(name, bitmap)| shape(name, bitmap))
        .collect()
}

/// `bitmap` as an inline descriptor, and as the second record of a deletion vector file (so its
/// offset is not the first).
fn shape(name: &'static str, bitmap: RoaringTreemap) -> Shape {
    let first: RoaringTreemap = [1, 2, 3].into_iter().collect();
    let (file, entries) = encode_dv_file(&[first, bitmap.clone()]).unwrap();
    let in_file = uuid_descriptor(&Uuid::from_u128(7), "ab", &entries[1]).unwrap();
    Shape {
        name,
        inline: encode_inline(&bitmap).unwrap(),
        bitmap,
        file,
        in_file,
    }
}

fn deletion_vectors(c: &mut Criterion) {
    let shapes = shapes();
    let root = Url::parse("file:///tmp/bench-table/").unwrap();

    let mut group = c.benchmark_group("dv_decode_inline");
    for shape in &shapes {
        group.throughput(Throughput::Elements(shape.bitmap.len()));
        group.bench_function(shape.name, |b| {
            b.iter(|| {
                let DvLocation::Inline(bytes) = resolve(black_box(&shape.inline), &root).unwrap()
                else {
                    panic!("an inline descriptor resolved to a file");
                };
                decode_inline(&bytes, &shape.inline).unwrap()
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("dv_decode_file");
    for shape in &shapes {
        group.throughput(Throughput::Elements(shape.bitmap.len()));
        group.bench_function(shape.name, |b| {
            b.iter(|| decode_dv_file(black_box(&shape.file), &shape.in_file, "dv.bin").unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("dv_row_mask_8k_batches");
    group.throughput(Throughput::Elements(FILE_ROWS));
    for shape in &shapes {
        group.bench_function(shape.name, |b| {
            b.iter(|| {
                (0..FILE_ROWS)
                    .step_by(BATCH_ROWS as usize)
                    .map(|first| {
                        let rows = BATCH_ROWS.min(FILE_ROWS - first) as usize;
                        row_mask(black_box(&shape.bitmap), rows, first).true_count()
                    })
                    .sum::<usize>()
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("dv_encode");
    for shape in &shapes {
        group.throughput(Throughput::Elements(shape.bitmap.len()));
        group.bench_function(BenchmarkId::new("file", shape.name), |b| {
            b.iter(|| encode_dv_file(std::slice::from_ref(black_box(&shape.bitmap))).unwrap())
        });
        group.bench_function(BenchmarkId::new("inline", shape.name), |b| {
            b.iter(|| encode_inline(black_box(&shape.bitmap)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, deletion_vectors);
criterion_main!(benches);
