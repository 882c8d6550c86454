//! Shredded variant groups written to Parquet here, read back with the parquet crate and
//! reassembled; expected values are spelled out in the Variant encoding byte by byte.

use std::sync::Arc;

use arrow::buffer::NullBuffer;
use arrow_array::builder::{BinaryBuilder, Int64Builder, ListBuilder, StructBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, MapArray,
    RecordBatch, StringArray, StructArray, Time64MicrosecondArray, TimestampMicrosecondArray,
    TimestampNanosecondArray, UInt32Array,
};
use arrow_schema::{DataType as ArrowType, Field, Fields, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

use super::*;

/// Metadata version 1, offset size 1, with the dictionary `names`.
fn metadata(names: &[&str]) -> Vec<u8> {
    let mut out = vec![0x01, names.len() as u8, 0];
    let mut offset = 0u8;
    for name in names {
        offset += name.len() as u8;
        out.push(offset);
    }
    for name in names {
        out.extend_from_slice(name.as_bytes());
    }
    out
}

fn int8(v: i8) -> Vec<u8> {
    vec![3 << 2, v as u8]
}

fn int32(v: i32) -> Vec<u8> {
    let mut out = vec![5 << 2];
    out.extend_from_slice(&v.to_le_bytes());
    out
}

fn int64(v: i64) -> Vec<u8> {
    let mut out = vec![6 << 2];
    out.extend_from_slice(&v.to_le_bytes());
    out
}

fn short_string(s: &str) -> Vec<u8> {
    let mut out = vec![((s.len() as u8) << 2) | 1];
    out.extend_from_slice(s.as_bytes());
    out
}

const TRUE: [u8; 1] = [1 << 2];
const NULL: [u8; 1] = [0];

/// A small object: one-byte ids and offsets, `fields` in the order given.
fn object(fields: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![0x02, fields.len() as u8];
    out.extend(fields.iter().map(|(id, _)| *id));
    let mut offset = 0u8;
    out.push(0);
    for (_, value) in fields {
        offset += value.len() as u8;
        out.push(offset);
    }
    for (_, value) in fields {
        out.extend_from_slice(value);
    }
    out
}

/// A small array: one-byte offsets.
fn array(elements: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![0x03, elements.len() as u8, 0];
    let mut offset = 0u8;
    for element in elements {
        offset += element.len() as u8;
        out.push(offset);
    }
    for element in elements {
        out.extend_from_slice(element);
    }
    out
}

fn binaries(values: Vec<Option<Vec<u8>>>) -> ArrayRef {
    Arc::new(BinaryArray::from_iter(values))
}

/// A `value`/`typed_value` group.
fn pair(value: ArrayRef, typed: ArrayRef, nulls: Option<NullBuffer>) -> StructArray {
    let fields = Fields::from(vec![
        Field::new("value", ArrowType::Binary, true),
        Field::new("typed_value", typed.data_type().clone(), true),
    ]);
    StructArray::try_new(fields, vec![value, typed], nulls).unwrap()
}

/// A shredded variant group: `metadata`, `value`, `typed_value`.
fn variant_group(
    metadata: Vec<Vec<u8>>,
    value: ArrayRef,
    typed: ArrayRef,
    nulls: Option<NullBuffer>,
) -> StructArray {
    let metadata: ArrayRef = Arc::new(BinaryArray::from_iter_values(metadata));
    let fields = Fields::from(vec![
        Field::new("metadata", ArrowType::Binary, false),
        Field::new("value", ArrowType::Binary, true),
        Field::new("typed_value", typed.data_type().clone(), true),
    ]);
    StructArray::try_new(fields, vec![metadata, value, typed], nulls).unwrap()
}

/// `group` written as column `v` of a Parquet file and read back by the parquet crate.
fn through_parquet(group: StructArray) -> StructArray {
    let field = Field::new("v", group.data_type().clone(), true);
    let batch =
        RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![Arc::new(group)]).unwrap();
    let mut file = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file))
        .unwrap()
        .build()
        .unwrap();
    let read: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(read.len(), 1);
    read[0].column(0).as_struct().clone()
}

/// The reassembled (metadata, value) of each row; `None` for a SQL NULL.
fn reassembled(group: StructArray) -> Vec<Option<(Vec<u8>, Vec<u8>)>> {
    let out = unshred(&through_parquet(group), "v").unwrap();
    let out = out.as_struct();
    let metadata = out.column_by_name("metadata").unwrap().as_binary::<i32>();
    let value = out.column_by_name("value").unwrap().as_binary::<i32>();
    (0..out.len())
        .map(|row| {
            out.is_valid(row)
                .then(|| (metadata.value(row).to_vec(), value.value(row).to_vec()))
        })
        .collect()
}

fn values(group: StructArray) -> Vec<Option<Vec<u8>>> {
    reassembled(group)
        .into_iter()
        .map(|row| row.map(|(_, value)| value))
        .collect()
}

fn unshred_error(group: StructArray) -> String {
    unshred(&through_parquet(group), "v").unwrap_err()
}

/// Object `{a: int32, b: string}` shredded, with residual fields, non-objects and nulls.
fn partially_shredded_objects() -> StructArray {
    let names = ["a", "b", "z"];
    let a = pair(
        binaries(vec![None, Some(short_string("s")), None, None, None, None]),
        Arc::new(Int32Array::from(vec![
            Some(1),
            None,
            None,
            None,
            None,
            None,
        ])),
        None,
    );
    let b = pair(
        binaries(vec![None, None, None, None, None, Some(NULL.to_vec())]),
        Arc::new(StringArray::from(vec![
            Some("x"),
            None,
            None,
            None,
            None,
            None,
        ])),
        None,
    );
    let typed = StructArray::try_new(
        Fields::from(vec![
            Field::new("a", a.data_type().clone(), false),
            Field::new("b", b.data_type().clone(), false),
        ]),
        vec![Arc::new(a), Arc::new(b)],
        Some(NullBuffer::from(vec![
            true, true, false, false, false, true,
        ])),
    )
    .unwrap();
    variant_group(
        vec![metadata(&names); 6],
        binaries(vec![
            None,
            Some(object(&[(2, TRUE.to_vec())])),
            Some(int8(7)),
            None,
            Some(NULL.to_vec()),
            None,
        ]),
        Arc::new(typed),
        Some(NullBuffer::from(vec![true, true, true, false, true, true])),
    )
}

#[test]
fn partially_shredded_objects_merge_typed_and_residual_fields() {
    let rows = reassembled(partially_shredded_objects());
    let expected_values = [
        Some(object(&[(0, int32(1)), (1, short_string("x"))])),
        Some(object(&[(0, short_string("s")), (2, TRUE.to_vec())])),
        Some(int8(7)),
        None,
        Some(NULL.to_vec()),
        Some(object(&[(1, NULL.to_vec())])),
    ];
    for (row, expected) in rows.iter().zip(expected_values) {
        assert_eq!(row.as_ref().map(|(_, value)| value.clone()), expected);
        if let Some((metadata_bytes, _)) = row {
            assert_eq!(metadata_bytes, &metadata(&["a", "b", "z"]));
        }
    }
}

#[test]
fn fields_are_sorted_by_name_not_by_id() {
    // Dictionary order z, a: the object lists `a` (id 1) before `z` (id 0).
    let a = pair(
        binaries(vec![None]),
        Arc::new(Int32Array::from(vec![5])),
        None,
    );
    let typed = StructArray::try_new(
        Fields::from(vec![Field::new("a", a.data_type().clone(), false)]),
        vec![Arc::new(a)],
        None,
    )
    .unwrap();
    let group = variant_group(
        vec![metadata(&["z", "a"])],
        binaries(vec![Some(object(&[(0, TRUE.to_vec())]))]),
        Arc::new(typed),
        None,
    );
    assert_eq!(
        values(group),
        [Some(object(&[(1, int32(5)), (0, TRUE.to_vec())]))]
    );
}

#[test]
fn shredded_arrays_hold_typed_and_untyped_elements() {
    let element_fields = Fields::from(vec![
        Field::new("value", ArrowType::Binary, true),
        Field::new("typed_value", ArrowType::Int64, true),
    ]);
    let element = StructBuilder::new(
        element_fields.clone(),
        vec![
            Box::new(BinaryBuilder::new()),
            Box::new(Int64Builder::new()),
        ],
    );
    let element_field = Field::new("element", ArrowType::Struct(element_fields), false);
    let mut lists = ListBuilder::new(element).with_field(Arc::new(element_field));
    let mut push = |value: Option<Vec<u8>>, typed: Option<i64>| {
        let element = lists.values();
        element
            .field_builder::<BinaryBuilder>(0)
            .unwrap()
            .append_option(value);
        element
            .field_builder::<Int64Builder>(1)
            .unwrap()
            .append_option(typed);
        element.append(true);
    };
    push(None, Some(1));
    push(Some(short_string("two")), None);
    push(Some(NULL.to_vec()), None);
    lists.append(true);
    lists.append(true);
    lists.append(false);
    lists.append(false);
    let typed = lists.finish();
    let group = variant_group(
        vec![metadata(&[]); 4],
        binaries(vec![None, None, Some(short_string("not a list")), None]),
        Arc::new(typed),
        Some(NullBuffer::from(vec![true, true, true, false])),
    );
    assert_eq!(
        values(group),
        [
            Some(array(&[int64(1), short_string("two"), NULL.to_vec()])),
            Some(array(&[])),
            Some(short_string("not a list")),
            None,
        ]
    );
}

/// The value a single-row `typed_value` column of `typed` reassembles to.
fn primitive(typed: ArrayRef) -> Vec<u8> {
    let group = variant_group(vec![metadata(&[])], binaries(vec![None]), typed, None);
    values(group).remove(0).unwrap()
}

fn primitive_bytes(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![id << 2];
    out.extend_from_slice(payload);
    out
}

#[test]
fn every_primitive_type_takes_its_variant_type() {
    let long_text = "x".repeat(64);
    let mut long_string = vec![16 << 2];
    long_string.extend_from_slice(&64u32.to_le_bytes());
    long_string.extend_from_slice(long_text.as_bytes());
    let decimal = |value: i128, precision: u8, scale: i8| -> ArrayRef {
        Arc::new(
            Decimal128Array::from(vec![value])
                .with_precision_and_scale(precision, scale)
                .unwrap(),
        )
    };
    let cases: Vec<(ArrayRef, Vec<u8>)> = vec![
        (Arc::new(BooleanArray::from(vec![false])), vec![2 << 2]),
        (Arc::new(Int8Array::from(vec![-2])), int8(-2)),
        (
            Arc::new(Int16Array::from(vec![300])),
            primitive_bytes(4, &300i16.to_le_bytes()),
        ),
        (Arc::new(Int32Array::from(vec![70_000])), int32(70_000)),
        (Arc::new(Int64Array::from(vec![5])), int64(5)),
        (
            Arc::new(Time64MicrosecondArray::from(vec![11])),
            primitive_bytes(17, &11i64.to_le_bytes()),
        ),
        (
            Arc::new(Float32Array::from(vec![1.5])),
            primitive_bytes(14, &1.5f32.to_le_bytes()),
        ),
        (
            Arc::new(Float64Array::from(vec![2.25])),
            primitive_bytes(7, &2.25f64.to_le_bytes()),
        ),
        (
            decimal(1234, 4, 2),
            primitive_bytes(8, &[2, 0xD2, 0x04, 0, 0]),
        ),
        (
            decimal(-5, 18, 4),
            primitive_bytes(9, &[4, 0xFB, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        ),
        (
            decimal(1, 38, 0),
            primitive_bytes(10, &[0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ),
        (
            Arc::new(Date32Array::from(vec![19_737])),
            primitive_bytes(11, &19_737i32.to_le_bytes()),
        ),
        (
            Arc::new(TimestampMicrosecondArray::from(vec![7]).with_timezone("UTC")),
            primitive_bytes(12, &7i64.to_le_bytes()),
        ),
        (
            Arc::new(TimestampMicrosecondArray::from(vec![8])),
            primitive_bytes(13, &8i64.to_le_bytes()),
        ),
        (
            Arc::new(TimestampNanosecondArray::from(vec![9]).with_timezone("UTC")),
            primitive_bytes(18, &9i64.to_le_bytes()),
        ),
        (
            Arc::new(TimestampNanosecondArray::from(vec![10])),
            primitive_bytes(19, &10i64.to_le_bytes()),
        ),
        (
            Arc::new(BinaryArray::from_iter_values([[0xCA, 0xFE]])),
            primitive_bytes(15, &[2, 0, 0, 0, 0xCA, 0xFE]),
        ),
        (
            Arc::new(StringArray::from(vec!["str"])),
            short_string("str"),
        ),
        (
            Arc::new(StringArray::from(vec![long_text.as_str()])),
            long_string,
        ),
        (
            Arc::new(FixedSizeBinaryArray::try_from_iter([[7u8; 16]].into_iter()).unwrap()),
            primitive_bytes(20, &[7; 16]),
        ),
    ];
    for (typed, expected) in cases {
        let data_type = typed.data_type().clone();
        assert_eq!(primitive(typed), expected, "{data_type}");
    }
}

#[test]
fn a_present_variant_with_neither_column_is_the_variant_null() {
    let group = variant_group(
        vec![metadata(&[])],
        binaries(vec![None]),
        Arc::new(Int32Array::from(vec![None])),
        None,
    );
    assert_eq!(values(group), [Some(NULL.to_vec())]);
}

#[test]
fn both_columns_set_for_a_primitive_is_refused() {
    let group = variant_group(
        vec![metadata(&[])],
        binaries(vec![Some(int8(1))]),
        Arc::new(Int32Array::from(vec![1])),
        None,
    );
    let error = unshred_error(group);
    assert!(
        error.contains("column `v`") && error.contains("objects only"),
        "{error}"
    );
}

/// An object shredding field `a` as int32, with `residual` as the row's `value`.
fn object_with_residual(names: &[&str], residual: Vec<u8>) -> StructArray {
    let a = pair(
        binaries(vec![None]),
        Arc::new(Int32Array::from(vec![1])),
        None,
    );
    let typed = StructArray::try_new(
        Fields::from(vec![Field::new("a", a.data_type().clone(), false)]),
        vec![Arc::new(a)],
        None,
    )
    .unwrap();
    variant_group(
        vec![metadata(names)],
        binaries(vec![Some(residual)]),
        Arc::new(typed),
        None,
    )
}

#[test]
fn contradictory_objects_are_refused() {
    let not_an_object = unshred_error(object_with_residual(&["a"], short_string("a")));
    assert!(
        not_an_object.contains("is not an object"),
        "{not_an_object}"
    );
    let repeated = unshred_error(object_with_residual(&["a"], object(&[(0, TRUE.to_vec())])));
    assert!(
        repeated.contains("repeats the shredded field `a`"),
        "{repeated}"
    );
    let unnamed = unshred_error(object_with_residual(&["b"], object(&[(0, TRUE.to_vec())])));
    assert!(
        unnamed.contains("`a` is not in the variant metadata dictionary"),
        "{unnamed}"
    );
    let truncated = unshred_error(object_with_residual(&["a", "b"], vec![0x02, 3, 1]));
    assert!(truncated.contains("end early"), "{truncated}");
}

#[test]
fn typed_values_of_types_the_spec_does_not_allow_are_refused() {
    let unsigned = variant_group(
        vec![metadata(&[])],
        binaries(vec![None]),
        Arc::new(UInt32Array::from(vec![1])),
        None,
    );
    let error = unshred_error(unsigned);
    assert!(error.contains("`v.typed_value` is a UInt32"), "{error}");
    let not_a_group = StructArray::try_new(
        Fields::from(vec![Field::new("a", ArrowType::Int32, true)]),
        vec![Arc::new(Int32Array::from(vec![1])) as ArrayRef],
        None,
    )
    .unwrap();
    let group = variant_group(
        vec![metadata(&["a"])],
        binaries(vec![None]),
        Arc::new(not_a_group),
        None,
    );
    let error = unshred_error(group);
    assert!(
        error.contains("`v.typed_value.a` is a Int32, not a group"),
        "{error}"
    );
}

#[test]
fn maps_are_not_a_shredded_type() {
    let values = Int32Array::from(vec![1]);
    let map = MapArray::new_from_strings(["k"].into_iter(), &values, &[0, 1]).unwrap();
    let group = variant_group(
        vec![metadata(&[])],
        binaries(vec![None]),
        Arc::new(map),
        None,
    );
    let error = unshred(&group, "v").unwrap_err();
    assert!(
        error.contains("not a type a shredded variant can hold"),
        "{error}"
    );
}

#[test]
fn unshredded_groups_are_not_shredded() {
    let plain = StructArray::try_new(
        Fields::from(vec![
            Field::new("metadata", ArrowType::Binary, false),
            Field::new("value", ArrowType::Binary, false),
        ]),
        vec![
            binaries(vec![Some(metadata(&[]))]),
            binaries(vec![Some(int8(1))]),
        ],
        None,
    )
    .unwrap();
    assert!(!is_shredded(&plain));
    assert!(is_shredded(&partially_shredded_objects()));
}

#[test]
fn a_present_variant_needs_its_metadata() {
    let metadata: ArrayRef = Arc::new(BinaryArray::from(vec![None::<&[u8]>]));
    let fields = Fields::from(vec![
        Field::new("metadata", ArrowType::Binary, true),
        Field::new("value", ArrowType::Binary, true),
        Field::new("typed_value", ArrowType::Int32, true),
    ]);
    let typed: ArrayRef = Arc::new(Int32Array::from(vec![1]));
    let group =
        StructArray::try_new(fields, vec![metadata, binaries(vec![None]), typed], None).unwrap();
    let error = unshred(&group, "v").unwrap_err();
    assert!(error.contains("`v.metadata` is null"), "{error}");
}
