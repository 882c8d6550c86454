use std::collections::HashMap;
use std::path::Path;

use arrow::buffer::NullBuffer;
use arrow::compute::{concat_batches, take};
use arrow_array::types::Int32Type;
use arrow_array::{DictionaryArray, Float32Array, UInt32Array};
use proptest::prelude::*;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray, UInt64Array,
    UInt8Array,
};

use super::*;
use crate::scalar::Scalar;
use crate::schema::tests::golden_table;
use crate::snapshot::SnapshotAt;
use crate::table::Table;

// --- helpers -----------------------------------------------------------------------------

fn parse(text: &str) -> Expr {
    parse_sql(text).unwrap_or_else(|error| panic!("{text}: {error}"))
}

fn parse_error_text(text: &str) -> String {
    match parse_sql(text) {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("{text}: expected InvalidArgument, got {other:?}"),
    }
}

fn col(name: &str) -> Expr {
    Expr::column(name)
}

fn lit(value: impl Into<Scalar>) -> Expr {
    Expr::literal(value)
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn rows(filter: &str, batch: &RecordBatch) -> Vec<bool> {
    let mask = evaluate(&parse(filter), batch).unwrap_or_else(|e| panic!("{filter}: {e}"));
    assert_eq!(mask.null_count(), 0, "{filter}");
    mask.iter().map(Option::unwrap).collect()
}

fn array<A: Array + 'static>(array: A) -> ArrayRef {
    Arc::new(array)
}

fn structs(columns: Vec<(&str, ArrayRef)>) -> ArrayRef {
    Arc::new(StructArray::try_from(columns).unwrap())
}

fn structs_with_validity(columns: Vec<(&str, ArrayRef)>, valid: Vec<bool>) -> ArrayRef {
    let plain = StructArray::try_from(columns).unwrap();
    let (fields, children, _) = plain.into_parts();
    Arc::new(StructArray::new(
        fields,
        children,
        Some(NullBuffer::from(valid)),
    ))
}

/// Per-file statistics in the layout skipping reads: `partitionValues_parsed`, `numRecords`,
/// the optional stats structs and `tightBounds`.
fn file_list(
    partitions: Vec<(&str, ArrayRef)>,
    num_records: Vec<Option<i64>>,
    stats: Option<(ArrayRef, ArrayRef, ArrayRef)>,
    tight_bounds: Option<Vec<Option<bool>>>,
) -> RecordBatch {
    let rows = num_records.len();
    let partition_values: ArrayRef = if partitions.is_empty() {
        Arc::new(StructArray::new_empty_fields(rows, None))
    } else {
        structs(partitions)
    };
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("partitionValues_parsed", partition_values),
        ("numRecords", array(Int64Array::from(num_records))),
    ];
    if let Some((min, max, nulls)) = stats {
        columns.push(("minValues", min));
        columns.push(("maxValues", max));
        columns.push(("nullCount", nulls));
    }
    if let Some(tight) = tight_bounds {
        columns.push(("tightBounds", array(BooleanArray::from(tight))));
    }
    batch(columns)
}

fn kept(filter: &str, files: &RecordBatch) -> Vec<bool> {
    let expr = parse(filter);
    let mask = files_may_match(&expr, files).unwrap_or_else(|e| panic!("{filter}: {e}"));
    assert_eq!(mask.null_count(), 0, "{filter}");
    mask.iter().map(Option::unwrap).collect()
}

fn int_stats(
    column: &str,
    min: Vec<Option<i64>>,
    max: Vec<Option<i64>>,
    nulls: Vec<Option<i64>>,
) -> (ArrayRef, ArrayRef, ArrayRef) {
    (
        structs(vec![(column, array(Int64Array::from(min)))]),
        structs(vec![(column, array(Int64Array::from(max)))]),
        structs(vec![(column, array(Int64Array::from(nulls)))]),
    )
}

#[test]
fn null_tests_on_a_whole_struct_column_keep_every_file() {
    let inner = |values: Vec<Option<i64>>| structs(vec![("x", array(Int64Array::from(values)))]);
    let stats = (
        structs(vec![("st", inner(vec![Some(1), Some(2)]))]),
        structs(vec![("st", inner(vec![Some(5), Some(6)]))]),
        structs(vec![("st", inner(vec![Some(0), Some(3)]))]),
    );
    let files = file_list(vec![], vec![Some(3), Some(3)], Some(stats), None);
    assert_eq!(kept("st IS NOT NULL", &files), [true, true]);
    assert_eq!(kept("st IS NULL", &files), [true, true]);
    assert_eq!(kept("st.x IS NOT NULL", &files), [true, false]);
}

// --- parser ------------------------------------------------------------------------------

#[test]
fn parser_respects_precedence_and_parentheses() {
    assert_eq!(
        parse("a = 1 OR b = 2 AND NOT c = 3"),
        col("a").compare(CompareOp::Eq, lit(1)).or(col("b")
            .compare(CompareOp::Eq, lit(2))
            .and(!col("c").compare(CompareOp::Eq, lit(3))))
    );
    assert_eq!(
        parse("(a = 1 OR b = 2) AND c = 3"),
        col("a")
            .compare(CompareOp::Eq, lit(1))
            .or(col("b").compare(CompareOp::Eq, lit(2)))
            .and(col("c").compare(CompareOp::Eq, lit(3)))
    );
    assert_eq!(
        parse("a = 1 AND b = 2 AND c = 3"),
        col("a")
            .compare(CompareOp::Eq, lit(1))
            .and(col("b").compare(CompareOp::Eq, lit(2)))
            .and(col("c").compare(CompareOp::Eq, lit(3)))
    );
    assert_eq!(
        parse("x BETWEEN 1 AND 5 AND y = 2"),
        Expr::Between {
            expr: Box::new(col("x")),
            low: Box::new(lit(1)),
            high: Box::new(lit(5)),
            negated: false,
        }
        .and(col("y").compare(CompareOp::Eq, lit(2)))
    );
    assert_eq!(parse("NOT NOT flag"), !!col("flag"));
    assert_eq!(parse("1 < x"), lit(1).compare(CompareOp::Lt, col("x")));
}

#[test]
fn parser_reads_quoted_and_nested_names() {
    assert_eq!(
        parse("`my col`.`x``y` = 'it''s'"),
        Expr::column_path(["my col", "x`y"]).compare(CompareOp::Eq, lit("it's"))
    );
    assert_eq!(
        parse("\"we\"\"ird\" = 1"),
        Expr::column_path(["we\"ird"]).compare(CompareOp::Eq, lit(1))
    );
    assert_eq!(
        parse("a.b.c >= 2"),
        Expr::column_path(["a", "b", "c"]).compare(CompareOp::GtEq, lit(2))
    );
    assert_eq!(
        parse("date = 1"),
        col("date").compare(CompareOp::Eq, lit(1))
    );
    assert_eq!(
        parse("s.`and` = 1"),
        Expr::column_path(["s", "and"]).compare(CompareOp::Eq, lit(1))
    );
}

#[test]
fn parser_reads_every_literal() {
    let value = |text: &str| match parse(&format!("x = {text}")) {
        Expr::Compare { right, .. } => match *right {
            Expr::Literal(value) => value,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(value("42"), Scalar::Int64(42));
    assert_eq!(value("-42"), Scalar::Int64(-42));
    assert_eq!(
        value("1.50"),
        Scalar::Decimal {
            value: 150,
            scale: 2
        }
    );
    assert_eq!(
        value("-0.5"),
        Scalar::Decimal {
            value: -5,
            scale: 1
        }
    );
    assert_eq!(value("1e3"), Scalar::Float64(1000.0));
    assert_eq!(value("2.5E-1"), Scalar::Float64(0.25));
    assert_eq!(
        value("99999999999999999999"),
        Scalar::Decimal {
            value: 99_999_999_999_999_999_999,
            scale: 0
        }
    );
    assert_eq!(value("TRUE"), Scalar::Boolean(true));
    assert_eq!(value("false"), Scalar::Boolean(false));
    assert_eq!(value("Null"), Scalar::Null);
    assert_eq!(value("'a b'"), Scalar::Utf8("a b".into()));
    assert_eq!(value("''"), Scalar::Utf8(String::new()));
    assert_eq!(value("X'0aFF'"), Scalar::Binary(vec![10, 255]));
    assert_eq!(value("DATE '2021-01-01'"), Scalar::Date(18628));
    assert_eq!(value("date '1969-12-31'"), Scalar::Date(-1));
    assert_eq!(
        value("TIMESTAMP '2021-01-01 00:00:00'"),
        Scalar::Timestamp(1_609_459_200_000_000)
    );
    assert_eq!(
        value("TIMESTAMP '2021-01-01T00:00:00.5+01:00'"),
        Scalar::Timestamp(1_609_455_600_500_000)
    );
    assert_eq!(
        value("TIMESTAMP '2021-01-01 00:00:00.000001Z'"),
        Scalar::Timestamp(1_609_459_200_000_001)
    );
    assert_eq!(
        value("TIMESTAMP '2021-01-01 00:00:00-0230'"),
        Scalar::Timestamp(1_609_459_200_000_000 + 9_000_000_000)
    );
    assert_eq!(
        value("TIMESTAMP_NTZ '2021-01-01 00:00'"),
        Scalar::TimestampNtz(1_609_459_200_000_000)
    );
}

#[test]
fn parser_reads_every_predicate_with_any_keyword_case() {
    assert_eq!(
        parse("x in (1, 2, NULL)"),
        col("x").in_list(vec![1.into(), 2.into(), Scalar::Null], false)
    );
    assert_eq!(
        parse("x NoT iN ('a')"),
        col("x").in_list(vec!["a".into()], true)
    );
    assert_eq!(parse("x IS NULL"), col("x").is_null());
    assert_eq!(parse("x is not null"), col("x").is_not_null());
    assert_eq!(
        parse("x NOT BETWEEN 1 AND 5"),
        Expr::Between {
            expr: Box::new(col("x")),
            low: Box::new(lit(1)),
            high: Box::new(lit(5)),
            negated: true,
        }
    );
    assert_eq!(
        parse("s like 'ab%'"),
        Expr::Like {
            expr: Box::new(col("s")),
            pattern: "ab%".into(),
            negated: false
        }
    );
    assert_eq!(
        parse("s NOT LIKE 'a_'"),
        Expr::Like {
            expr: Box::new(col("s")),
            pattern: "a_".into(),
            negated: true
        }
    );
    for (text, op) in [
        ("x = 1", CompareOp::Eq),
        ("x == 1", CompareOp::Eq),
        ("x != 1", CompareOp::NotEq),
        ("x <> 1", CompareOp::NotEq),
        ("x < 1", CompareOp::Lt),
        ("x <= 1", CompareOp::LtEq),
        ("x > 1", CompareOp::Gt),
        ("x >= 1", CompareOp::GtEq),
    ] {
        assert_eq!(parse(text), col("x").compare(op, lit(1)), "{text}");
    }
    assert_eq!(parse("flag"), col("flag"));
    assert_eq!(
        parse("x > 5 AND p IN ('a', 'b') AND y IS NOT NULL"),
        col("x")
            .compare(CompareOp::Gt, lit(5))
            .and(col("p").in_list(vec!["a".into(), "b".into()], false))
            .and(col("y").is_not_null())
    );
}

#[test]
fn parser_errors_name_the_position_and_the_expectation() {
    let cases = [
        (
            "x >",
            "expected a column name or a value at position 4, found end of input",
        ),
        (
            "x = 'abc",
            "closing ' for the string starting here at position 5",
        ),
        (
            "x = 1 y",
            "expected AND, OR or the end of the filter at position 7, found 'y'",
        ),
        (
            "x IN (y)",
            "expected a literal value in the IN list at position 7, found y",
        ),
        (
            "x IN (1 2)",
            "expected ',' or ')' in the IN list at position 9",
        ),
        ("x IN 1", "expected '(' after IN at position 6"),
        (
            "d = DATE '2021-13-01'",
            "expected a date 'YYYY-MM-DD' at position 10",
        ),
        ("t = TIMESTAMP 'noon'", "at position 15"),
        ("x ! 1", "at position 3, found '!'"),
        (
            "",
            "expected a column name or a value at position 1, found end of input",
        ),
        ("   ", "at position 4, found end of input"),
        (
            "x NOT 5",
            "expected IN, BETWEEN or LIKE after NOT at position 7",
        ),
        (
            "a. = 1",
            "expected a field name after '.' at position 4, found '='",
        ),
        ("(x = 1", "expected ')' at position 7, found end of input"),
        ("x IS 5", "expected NULL at position 6, found the number 5"),
        (
            "x LIKE y",
            "expected a quoted pattern after LIKE at position 8",
        ),
        (
            "x = - 'a' *",
            "expected a column name or a value at position 12",
        ),
        (
            "x = lower(",
            "expected a column name or a value at position 11",
        ),
        (
            "x = nope(1)",
            "expected a known function at position 5, found 'nope'",
        ),
        (
            "(x = 1) + 1 > 0",
            "expected a value, not a condition at position 9",
        ),
        (
            "CAST(x AS wat) = 1",
            "expected a type name at position 11, found 'wat'",
        ),
        ("x = X'abc'", "an even number of hex digits"),
        (
            "`x = 1",
            "closing ` for the quoted name starting here at position 1",
        ),
        ("x = 1 AND", "at position 10, found end of input"),
        (
            "AND = 1",
            "expected a column name or a value at position 1, found 'AND'",
        ),
    ];
    for (text, expected) in cases {
        let message = parse_error_text(text);
        assert!(message.contains(expected), "{text}: {message}");
        assert!(message.contains(&format!("{text:?}")), "{text}: {message}");
    }
}

#[test]
fn display_is_readable_sql_that_parses_back() {
    let texts = [
        "x > 5 AND p IN ('a', 'b') AND y IS NOT NULL",
        "`my col` = 'it''s' AND (a = 1 OR NOT b)",
        "a = 1 OR b = 2 AND c = 3",
        "NOT (a = 1 AND b = 2)",
        "x NOT BETWEEN -1 AND 2.50",
        "s NOT LIKE 'a\\_%'",
        "d >= DATE '2021-01-01' AND t < TIMESTAMP '2021-01-01 00:00:00.123456'",
        "n = TIMESTAMP_NTZ '1969-12-31 23:59:59' OR b = X'00FF'",
        "x NOT IN (1, NULL, TRUE) AND y IS NULL",
        "x.`a b`.c = 1e300",
        "(x = 1) = FALSE",
    ];
    for text in texts {
        let expr = parse(text);
        let shown = expr.to_string();
        assert_eq!(parse(&shown), expr, "{text} -> {shown}");
    }
    assert_eq!(
        parse("`my col` = 'it''s' AND (a = 1 OR NOT b)").to_string(),
        "`my col` = 'it''s' AND (a = 1 OR NOT b)"
    );
    assert_eq!(parse("NOT x > 1").to_string(), "NOT (x > 1)");
    assert_eq!(parse("`select` = 1").to_string(), "select = 1");
    assert_eq!(parse("`and` = 1").to_string(), "`and` = 1");
    assert_eq!(lit(f64::NAN).to_string(), "'NaN'");
    assert_eq!(lit(f64::NEG_INFINITY).to_string(), "'-Infinity'");
    assert_eq!(lit(0.25).to_string(), "0.25");
}

#[test]
fn columns_lists_each_reference_once() {
    let expr = parse("a.b > 1 AND c = 2 OR a.b < 0 OR d BETWEEN e AND 3");
    assert_eq!(expr.columns(), vec!["a.b", "c", "d", "e"]);
    assert_eq!(
        expr.column_paths()[0],
        vec!["a".to_string(), "b".to_string()]
    );
    assert!(parse("1 = 1").columns().is_empty());
}

#[test]
fn negate_is_exact_in_three_valued_logic() {
    let data = batch(vec![
        (
            "x",
            array(Int64Array::from(vec![Some(1), None, Some(7), Some(5)])),
        ),
        (
            "s",
            array(StringArray::from(vec![
                Some("ab"),
                Some("b"),
                None,
                Some("a"),
            ])),
        ),
        (
            "f",
            array(BooleanArray::from(vec![
                Some(true),
                None,
                Some(false),
                Some(true),
            ])),
        ),
    ]);
    for text in [
        "x > 3",
        "x IN (1, NULL)",
        "x NOT IN (5, 7)",
        "x BETWEEN 2 AND 6",
        "s LIKE 'a%'",
        "x IS NULL OR s = 'b'",
        "f AND x < 6",
        "NOT (f OR x = 7)",
        "NULL",
        "TRUE",
    ] {
        let expr = parse(text);
        let negated = evaluate(&expr.negate(), &data).unwrap();
        let reference = evaluate(&!expr.clone(), &data).unwrap();
        assert_eq!(negated, reference, "{text}");
    }
}

// --- DNF ---------------------------------------------------------------------------------

fn dnf(column: &str, op: &str, value: impl Into<Scalar>) -> (String, String, DnfLiteral) {
    (column.into(), op.into(), DnfLiteral::Scalar(value.into()))
}

fn dnf_list(column: &str, op: &str, values: Vec<Scalar>) -> (String, String, DnfLiteral) {
    (column.into(), op.into(), DnfLiteral::List(values))
}

#[test]
fn dnf_becomes_or_of_ands() {
    let expr = from_dnf(vec![vec![
        dnf("x", ">", 5),
        dnf_list("p", "in", vec!["a".into(), "b".into()]),
    ]])
    .unwrap();
    assert_eq!(expr, parse("x > 5 AND p IN ('a', 'b')"));
    let expr = from_dnf(vec![
        vec![dnf("x", "==", 1), dnf("y", "!=", "z")],
        vec![
            dnf_list("x", "NOT  IN", vec![1.into()]),
            dnf("a.b", "<=", 2.5),
        ],
        vec![
            (
                String::from("y"),
                String::from("is"),
                DnfLiteral::Scalar(Scalar::Null),
            ),
            (
                String::from("z"),
                String::from("IS NOT"),
                DnfLiteral::Scalar(Scalar::Null),
            ),
        ],
    ])
    .unwrap();
    assert_eq!(
        expr,
        col("x")
            .compare(CompareOp::Eq, lit(1))
            .and(col("y").compare(CompareOp::NotEq, lit("z")))
            .or(col("x")
                .in_list(vec![1.into()], true)
                .and(Expr::column_path(["a", "b"]).compare(CompareOp::LtEq, lit(2.5))))
            .or(col("y").is_null().and(col("z").is_not_null()))
    );
    for (op, expected) in [
        ("<", CompareOp::Lt),
        (">=", CompareOp::GtEq),
        ("=", CompareOp::Eq),
    ] {
        assert_eq!(
            from_dnf(vec![vec![dnf("x", op, 1)]]).unwrap(),
            col("x").compare(expected, lit(1))
        );
    }
    assert_eq!(from_dnf(vec![]).unwrap(), lit(true));
}

#[test]
fn dnf_rejects_malformed_predicates_with_a_clear_message() {
    let error = |groups: Vec<Vec<(String, String, DnfLiteral)>>| match from_dnf(groups) {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("{other:?}"),
    };
    assert!(error(vec![vec![dnf("x", "in", 1)]]).contains("needs a collection"));
    assert!(error(vec![vec![dnf("x", "=", Scalar::Null)]]).contains("use 'is' or 'is not'"));
    assert!(error(vec![vec![dnf("x", "~", 1)]]).contains("unsupported operator"));
    assert!(error(vec![vec![dnf("x", "is", 1)]]).contains("needs None"));
    assert!(error(vec![vec![dnf_list("x", ">", vec![1.into()])]]).contains("use 'in'"));
    assert!(error(vec![vec![dnf("x", "=", 1)], vec![]]).contains("group 1 is an empty list"));
    assert!(error(vec![vec![dnf("col", "like", "a")]]).contains("(\"col\", \"like\", 'a')"));
}

#[test]
fn dnf_not_in_follows_sql_null_semantics() {
    let data = batch(vec![(
        "x",
        array(Int64Array::from(vec![Some(1), None, Some(3)])),
    )]);
    let not_in = from_dnf(vec![vec![dnf_list("x", "not in", vec![1.into()])]]).unwrap();
    assert_eq!(
        evaluate(&not_in, &data).unwrap(),
        BooleanArray::from(vec![false, false, true])
    );
    let with_null = from_dnf(vec![vec![dnf_list(
        "x",
        "not in",
        vec![1.into(), Scalar::Null],
    )]])
    .unwrap();
    assert_eq!(
        evaluate(&with_null, &data).unwrap(),
        BooleanArray::from(vec![false, false, false])
    );
    let is_null = from_dnf(vec![vec![(
        String::from("x"),
        String::from("is"),
        DnfLiteral::Scalar(Scalar::Null),
    )]])
    .unwrap();
    assert_eq!(
        evaluate(&is_null, &data).unwrap(),
        BooleanArray::from(vec![false, true, false])
    );
}

// --- evaluate ----------------------------------------------------------------------------

#[test]
fn integers_of_every_width_compare_exactly() {
    let data = batch(vec![
        (
            "i8",
            array(Int8Array::from(vec![Some(1), None, Some(-3), Some(127)])),
        ),
        (
            "i16",
            array(Int16Array::from(vec![Some(1), None, Some(-3), Some(127)])),
        ),
        (
            "i32",
            array(Int32Array::from(vec![Some(1), None, Some(-3), Some(127)])),
        ),
        (
            "i64",
            array(Int64Array::from(vec![Some(1), None, Some(-3), Some(127)])),
        ),
        (
            "u8",
            array(UInt8Array::from(vec![Some(1), None, Some(3), Some(255)])),
        ),
        (
            "u64",
            array(UInt64Array::from(vec![
                Some(1),
                None,
                Some(3),
                Some(u64::MAX),
            ])),
        ),
    ]);
    for column in ["i8", "i16", "i32", "i64"] {
        let case = |filter: &str| rows(&filter.replace("COL", column), &data);
        assert_eq!(case("COL > 0"), [true, false, false, true]);
        assert_eq!(case("COL = 1"), [true, false, false, false]);
        assert_eq!(case("COL = 1.0"), [true, false, false, false]);
        assert_eq!(case("COL = '127'"), [false, false, false, true]);
        assert_eq!(case("COL = 1000"), [false; 4]);
        assert_eq!(case("COL < 1000"), [true, false, true, true]);
        assert_eq!(case("COL > -1000"), [true, false, true, true]);
        assert_eq!(
            case("COL != 99999999999999999999999"),
            [true, false, true, true]
        );
        assert_eq!(case("COL > 1.5"), [false, false, false, true]);
        assert_eq!(case("COL >= -3.5"), [true, false, true, true]);
        assert_eq!(case("COL < -2.5"), [false, false, true, false]);
        assert_eq!(case("COL <= -3.5"), [false; 4]);
        assert_eq!(case("COL = 1.5"), [false; 4]);
        assert_eq!(case("COL != 1.5"), [true, false, true, true]);
        assert_eq!(case("COL > 126.5"), [false, false, false, true]);
        assert_eq!(case("COL < 1e300"), [true, false, true, true]);
        assert_eq!(case("COL < 'NaN'"), [true, false, true, true]);
        assert_eq!(case("COL IN (1, 127, NULL)"), [true, false, false, true]);
        assert_eq!(case("COL BETWEEN -3 AND 1"), [true, false, true, false]);
    }
    assert_eq!(rows("u8 > -1", &data), [true, false, true, true]);
    assert_eq!(rows("i8 < u8", &data), [false, false, true, true]);
    assert_eq!(rows("u64 > i64", &data), [false, false, true, true]);
    assert_eq!(rows("u8 = 255", &data), [false, false, false, true]);
    assert_eq!(
        rows("u64 = 18446744073709551615", &data),
        [false, false, false, true]
    );
    assert_eq!(
        rows("i32 < i64 OR i8 = u8", &data),
        [true, false, false, false]
    );
}

#[test]
fn floats_order_nan_last_and_negative_zero_as_zero() {
    let values = vec![
        Some(1.5),
        Some(f64::NAN),
        Some(-0.0),
        None,
        Some(f64::NEG_INFINITY),
        Some(-f64::NAN),
    ];
    let data = batch(vec![
        ("f64", array(Float64Array::from(values.clone()))),
        (
            "f32",
            array(Float32Array::from(
                values
                    .iter()
                    .map(|v| v.map(|v| v as f32))
                    .collect::<Vec<_>>(),
            )),
        ),
    ]);
    for column in ["f64", "f32"] {
        let case = |filter: &str| rows(&filter.replace("COL", column), &data);
        assert_eq!(case("COL > 1"), [true, true, false, false, false, true]);
        assert_eq!(case("COL = 0"), [false, false, true, false, false, false]);
        assert_eq!(
            case("COL = -0.0"),
            [false, false, true, false, false, false]
        );
        assert_eq!(case("COL < 0"), [false, false, false, false, true, false]);
        assert_eq!(
            case("COL = 'NaN'"),
            [false, true, false, false, false, true]
        );
        assert_eq!(
            case("COL < 'Infinity'"),
            [true, false, true, false, true, false]
        );
        assert_eq!(case("COL = 1.5"), [true, false, false, false, false, false]);
        assert_eq!(case("COL != 1.5"), [false, true, true, false, true, true]);
        assert_eq!(
            case("COL IS NULL"),
            [false, false, false, true, false, false]
        );
        assert_eq!(
            case("COL BETWEEN -1 AND 2"),
            [true, false, true, false, false, false]
        );
    }
}

#[test]
fn decimals_compare_at_their_scale() {
    let decimals = Decimal128Array::from(vec![Some(150), Some(225), None, Some(-1)])
        .with_precision_and_scale(5, 2)
        .unwrap();
    let data = batch(vec![("d", array(decimals))]);
    assert_eq!(rows("d = 1.5", &data), [true, false, false, false]);
    assert_eq!(rows("d = 1.50000", &data), [true, false, false, false]);
    assert_eq!(rows("d > 2.249", &data), [false, true, false, false]);
    assert_eq!(rows("d >= 2.251", &data), [false; 4]);
    assert_eq!(rows("d < 0", &data), [false, false, false, true]);
    assert_eq!(rows("d <= -0.001", &data), [false, false, false, true]);
    assert_eq!(rows("d = 2.255", &data), [false; 4]);
    assert_eq!(rows("d > 1e10", &data), [false; 4]);
    assert_eq!(rows("d < 1000", &data), [true, true, false, true]);
    assert_eq!(rows("d > -1000", &data), [true, true, false, true]);
    assert_eq!(
        rows("d = 2.25 OR d = -0.01", &data),
        [false, true, false, true]
    );
    assert_eq!(rows("d = '1.5'", &data), [true, false, false, false]);
    assert_eq!(rows("d = 2", &data), [false; 4]);
    assert_eq!(rows("d < 2", &data), [true, false, false, true]);
    assert_eq!(rows("d = 0.25e1", &data), [false; 4]);
    assert_eq!(rows("d > 0.15e1", &data), [false, true, false, false]);
}

#[test]
fn strings_compare_and_match_like_patterns() {
    let data = batch(vec![(
        "s",
        array(StringArray::from(vec![
            Some("apple"),
            Some("banana"),
            None,
            Some("a_b%"),
        ])),
    )]);
    assert_eq!(rows("s LIKE 'a%'", &data), [true, false, false, true]);
    assert_eq!(rows("s NOT LIKE 'a%'", &data), [false, true, false, false]);
    assert_eq!(
        rows("s LIKE 'a\\_b\\%'", &data),
        [false, false, false, true]
    );
    assert_eq!(rows("s LIKE '_an%'", &data), [false, true, false, false]);
    assert_eq!(rows("s >= 'b'", &data), [false, true, false, false]);
    assert_eq!(
        rows("s IN ('apple', NULL)", &data),
        [true, false, false, false]
    );
    assert_eq!(rows("s NOT IN ('apple', NULL)", &data), [false; 4]);
    assert_eq!(
        rows("s NOT IN ('apple')", &data),
        [false, true, false, true]
    );
    assert_eq!(rows("s = 5", &data), [false; 4]);
    assert_eq!(rows("s IS NULL", &data), [false, false, true, false]);
    let views = batch(vec![(
        "s",
        array(arrow_array::StringViewArray::from(vec![
            Some("apple"),
            None,
        ])),
    )]);
    assert_eq!(rows("s = 'apple' OR s LIKE 'b%'", &views), [true, false]);
    let dictionary: DictionaryArray<Int32Type> = vec![Some("x"), Some("y"), None, Some("x")]
        .into_iter()
        .collect();
    let encoded = batch(vec![("s", array(dictionary))]);
    assert_eq!(rows("s = 'x'", &encoded), [true, false, false, true]);
    assert_eq!(rows("s LIKE 'y%'", &encoded), [false, true, false, false]);
}

#[test]
fn dates_and_timestamps_convert_literals() {
    let day = |text: &str| crate::scalar::parse_date(text).unwrap();
    let data = batch(vec![
        (
            "d",
            array(Date32Array::from(vec![
                Some(day("2021-01-01")),
                Some(day("2021-06-15")),
                None,
            ])),
        ),
        (
            "ts",
            array(
                TimestampMicrosecondArray::from(vec![
                    Some(1_609_459_200_000_000),
                    Some(1_609_459_200_000_001),
                    None,
                ])
                .with_timezone("UTC"),
            ),
        ),
        (
            "ntz",
            array(TimestampMicrosecondArray::from(vec![
                Some(1_609_459_200_000_000),
                Some(1_609_459_200_000_001),
                None,
            ])),
        ),
        (
            "ms",
            array(
                TimestampMillisecondArray::from(vec![Some(1_000), Some(2_000), None])
                    .with_timezone("UTC"),
            ),
        ),
        (
            "ns",
            array(TimestampNanosecondArray::from(vec![
                Some(1_000),
                Some(2_000),
                None,
            ])),
        ),
    ]);
    assert_eq!(rows("d = '2021-01-01'", &data), [true, false, false]);
    assert_eq!(rows("d >= DATE '2021-02-01'", &data), [false, true, false]);
    assert_eq!(
        rows("d > TIMESTAMP '2021-01-01 12:00:00'", &data),
        [false, true, false]
    );
    assert_eq!(
        rows("d <= TIMESTAMP '2021-01-01 12:00:00'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("d = TIMESTAMP '2021-01-01 12:00:00'", &data),
        [false; 3]
    );
    assert_eq!(
        rows("d = TIMESTAMP '2021-01-01 00:00:00'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("d BETWEEN '2021-01-01' AND '2021-03-01'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("d < '2021-01-01 00:00:01'", &data),
        [true, false, false]
    );
    assert_eq!(rows("ts > '2021-01-01'", &data), [false, true, false]);
    assert_eq!(rows("ts >= DATE '2021-01-01'", &data), [true, true, false]);
    assert_eq!(
        rows("ts = TIMESTAMP '2021-01-01 01:00:00+01:00'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("ts = '2021-01-01T00:00:00.000001Z'", &data),
        [false, true, false]
    );
    assert_eq!(
        rows("ntz = TIMESTAMP_NTZ '2021-01-01 00:00:00.000001'", &data),
        [false, true, false]
    );
    assert_eq!(
        rows("ntz < TIMESTAMP '2021-01-01 00:00:00.000001'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("ms > TIMESTAMP '1970-01-01 00:00:00.9995'", &data),
        [true, true, false]
    );
    assert_eq!(
        rows("ms > TIMESTAMP '1970-01-01 00:00:01.0005'", &data),
        [false, true, false]
    );
    assert_eq!(
        rows("ms = TIMESTAMP '1970-01-01 00:00:01.0005'", &data),
        [false; 3]
    );
    assert_eq!(
        rows("ms <= TIMESTAMP '1970-01-01 00:00:01.0005'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("ns = TIMESTAMP_NTZ '1970-01-01 00:00:00.000001'", &data),
        [true, false, false]
    );
    assert_eq!(
        rows("ns > TIMESTAMP '1970-01-01 00:00:00.000001'", &data),
        [false, true, false]
    );
}

#[test]
fn booleans_nulls_and_constants_follow_sql() {
    let data = batch(vec![
        (
            "flag",
            array(BooleanArray::from(vec![Some(true), Some(false), None])),
        ),
        ("x", array(Int32Array::from(vec![Some(1), None, Some(3)]))),
        (
            "y",
            array(Int64Array::from(vec![Some(2), Some(2), Some(2)])),
        ),
    ]);
    assert_eq!(rows("flag", &data), [true, false, false]);
    assert_eq!(rows("NOT flag", &data), [false, true, false]);
    assert_eq!(rows("flag = 'true'", &data), [true, false, false]);
    assert_eq!(rows("flag IS NULL", &data), [false, false, true]);
    assert_eq!(rows("flag OR x = 3", &data), [true, false, true]);
    assert_eq!(rows("x = NULL", &data), [false; 3]);
    assert_eq!(rows("NOT (x = NULL)", &data), [false; 3]);
    assert_eq!(rows("NULL IS NULL", &data), [true; 3]);
    assert_eq!(rows("TRUE", &data), [true; 3]);
    assert_eq!(rows("NULL", &data), [false; 3]);
    assert_eq!(rows("1 = 1", &data), [true; 3]);
    assert_eq!(rows("1 > 2", &data), [false; 3]);
    assert_eq!(rows("x > 1 OR x IS NULL", &data), [false, true, true]);
    assert_eq!(rows("NOT (x > 1 AND flag)", &data), [true, true, false]);
    assert_eq!(rows("x < y", &data), [true, false, false]);
    assert_eq!(rows("2 < x", &data), [false, false, true]);
}

#[test]
fn nested_fields_resolve_by_path_and_inherit_parent_nulls() {
    let inner = structs_with_validity(
        vec![
            ("a", array(Int32Array::from(vec![Some(5), Some(5), None]))),
            (
                "b",
                array(StringArray::from(vec![Some("x"), Some("y"), Some("z")])),
            ),
        ],
        vec![true, false, true],
    );
    let data = batch(vec![
        ("s", inner),
        ("a.b", array(Int64Array::from(vec![1, 2, 3]))),
    ]);
    assert_eq!(rows("s.a = 5", &data), [true, false, false]);
    assert_eq!(rows("s.a IS NULL", &data), [false, true, true]);
    assert_eq!(rows("S.B = 'z'", &data), [false, false, true]);
    assert_eq!(rows("s IS NULL", &data), [false, true, false]);
    assert_eq!(rows("`a.b` = 2", &data), [false, true, false]);
    assert_eq!(
        evaluate(&col("a.b").compare(CompareOp::Eq, lit(3)), &data).unwrap(),
        BooleanArray::from(vec![false, false, true])
    );
}

#[test]
fn binary_columns_compare_with_bytes_and_strings() {
    let data = batch(vec![(
        "b",
        array(BinaryArray::from(vec![
            Some(&[1u8, 2][..]),
            Some(b"ab"),
            None,
        ])),
    )]);
    assert_eq!(rows("b = X'0102'", &data), [true, false, false]);
    assert_eq!(rows("b = 'ab'", &data), [false, true, false]);
}

#[test]
fn evaluation_errors_name_the_column() {
    let data = batch(vec![
        ("flag", array(BooleanArray::from(vec![true]))),
        ("x", array(Int64Array::from(vec![1]))),
    ]);
    let message = |filter: &str| match evaluate(&parse(filter), &data) {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("{filter}: {other:?}"),
    };
    assert!(message("nope = 1").contains("unknown column 'nope'"));
    assert!(message("nope = 1").contains("flag, x"));
    assert!(message("x.y = 1").contains("unknown column 'x.y'"));
    assert!(message("flag > 5").contains("column 'flag' of type Boolean"));
    assert!(message("x = 'abc'").contains("column 'x' of type Int64 with 'abc'"));
    assert!(message("x = DATE '2021-01-01'").contains("column 'x'"));
    assert!(message("x").contains("column 'x' of type Int64 is used as a condition"));
    assert!(message("5").contains("the literal 5 is used as a condition"));
    assert!(message("x LIKE 'a%'").contains("LIKE needs a string, but 'x'"));
}

// --- data skipping -----------------------------------------------------------------------

#[test]
fn integer_bounds_skip_files_that_cannot_match() {
    let files = file_list(
        vec![],
        vec![Some(10), Some(10), Some(10), Some(10)],
        Some(int_stats(
            "x",
            vec![Some(1), Some(11), None, Some(5)],
            vec![Some(10), Some(20), None, Some(5)],
            vec![Some(0), Some(0), Some(0), Some(0)],
        )),
        None,
    );
    assert_eq!(kept("x = 5", &files), [true, false, true, true]);
    assert_eq!(kept("x = 15", &files), [false, true, true, false]);
    assert_eq!(kept("15 = x", &files), [false, true, true, false]);
    assert_eq!(kept("x > 10", &files), [false, true, true, false]);
    assert_eq!(kept("10 < x", &files), [false, true, true, false]);
    assert_eq!(kept("x >= 10", &files), [true, true, true, false]);
    assert_eq!(kept("x < 11", &files), [true, false, true, true]);
    assert_eq!(kept("x <= 11", &files), [true, true, true, true]);
    assert_eq!(kept("x < 1", &files), [false, false, true, false]);
    assert_eq!(kept("x IN (0, 25)", &files), [false, false, true, false]);
    assert_eq!(kept("x IN (5, 25)", &files), [true, false, true, true]);
    assert_eq!(kept("x IN (NULL)", &files), [false; 4]);
    assert_eq!(
        kept("x BETWEEN 12 AND 13", &files),
        [false, true, true, false]
    );
    assert_eq!(
        kept("x NOT BETWEEN 1 AND 20", &files),
        [false, false, true, false]
    );
    assert_eq!(kept("NOT (x > 10)", &files), [true, false, true, true]);
    assert_eq!(
        kept("NOT (x < 5 OR x > 15)", &files),
        [true, true, true, true]
    );
    assert_eq!(
        kept("NOT (x <= 10 OR x >= 12)", &files),
        [false, true, true, false]
    );
    assert_eq!(kept("x > 10 OR x < 2", &files), [true, true, true, false]);
    assert_eq!(
        kept("x > 10 AND x < 12", &files),
        [false, true, true, false]
    );
    assert_eq!(kept("x = 5.5", &files), [false; 4]);
    assert_eq!(kept("x > 10.5", &files), [false, true, true, false]);
    assert_eq!(kept("x < 10.5", &files), [true, false, true, true]);
    assert_eq!(kept("x != 5", &files), [true, true, true, false]);
    assert_eq!(kept("x NOT IN (5)", &files), [true, true, true, false]);
    assert_eq!(kept("x NOT IN (6, NULL)", &files), [false; 4]);
    assert_eq!(kept("x = NULL", &files), [false; 4]);
    assert_eq!(kept("x > 99999999999999999999", &files), [false; 4]);
    assert_eq!(kept("FALSE", &files), [false; 4]);
    assert_eq!(kept("x < y", &files), [true; 4]);
    assert_eq!(kept("unknown = 1", &files), [true; 4]);
    match files_may_match(&parse("x = 'abc'"), &files) {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("column 'x'")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn narrow_stat_types_are_compared_after_conversion() {
    let files = file_list(
        vec![],
        vec![Some(3), Some(3)],
        Some((
            structs(vec![(
                "x",
                array(Int16Array::from(vec![Some(-5), Some(100)])),
            )]),
            structs(vec![(
                "x",
                array(Int16Array::from(vec![Some(5), Some(200)])),
            )]),
            structs(vec![("x", array(Int64Array::from(vec![Some(0), Some(0)])))]),
        )),
        Some(vec![Some(true), Some(true)]),
    );
    assert_eq!(kept("x > 5.5", &files), [false, true]);
    assert_eq!(kept("x < 40000", &files), [true, true]);
    assert_eq!(kept("x > 40000", &files), [false, false]);
    assert_eq!(kept("x <= -5.5", &files), [false, false]);
}

#[test]
fn missing_statistics_never_drop_a_file() {
    let min = structs_with_validity(
        vec![("x", array(Int64Array::from(vec![Some(1), Some(1), None])))],
        vec![true, false, true],
    );
    let max = structs_with_validity(
        vec![("x", array(Int64Array::from(vec![Some(2), Some(2), None])))],
        vec![true, false, true],
    );
    let nulls = structs_with_validity(
        vec![("x", array(Int64Array::from(vec![Some(0), Some(0), None])))],
        vec![true, false, true],
    );
    let files = file_list(
        vec![],
        vec![Some(4), Some(4), None],
        Some((min, max, nulls)),
        None,
    );
    assert_eq!(kept("x = 7", &files), [false, true, true]);
    assert_eq!(kept("x IS NULL", &files), [false, true, true]);
    assert_eq!(kept("x IS NOT NULL", &files), [true, true, true]);
    let bare = file_list(vec![], vec![Some(4), Some(4)], None, None);
    assert_eq!(kept("x = 7 AND y IS NULL", &bare), [true, true]);
    assert_eq!(kept("x = NULL", &bare), [false, false]);
    let no_columns = batch(vec![("path", array(StringArray::from(vec!["a", "b"])))]);
    assert_eq!(kept("x > 1 OR TRUE", &no_columns), [true, true]);
    assert_eq!(kept("x > 1 AND FALSE", &no_columns), [false, false]);
}

#[test]
fn null_counts_decide_null_tests_only_in_their_special_cases() {
    let files = file_list(
        vec![],
        vec![Some(10), Some(10), Some(10), Some(10), None],
        Some(int_stats(
            "x",
            vec![Some(1), Some(1), None, None, Some(1)],
            vec![Some(9), Some(9), None, None, Some(9)],
            vec![Some(0), Some(3), Some(10), None, Some(10)],
        )),
        None,
    );
    assert_eq!(kept("x IS NULL", &files), [false, true, true, true, true]);
    assert_eq!(
        kept("x IS NOT NULL", &files),
        [true, true, false, true, true]
    );
    assert_eq!(kept("x > 0", &files), [true, true, false, true, true]);
    assert_eq!(kept("x != 0", &files), [true, true, false, true, true]);
    assert_eq!(kept("x IN (1, 2)", &files), [true, true, false, true, true]);
    assert_eq!(
        kept("NOT (x IS NOT NULL)", &files),
        [false, true, true, true, true]
    );
    assert_eq!(
        kept("x IS NULL OR x = 100", &files),
        [false, true, true, true, true]
    );
}

#[test]
fn wide_bounds_after_deletion_vectors_stay_safe() {
    let files = file_list(
        vec![],
        vec![Some(10), Some(10), Some(10)],
        Some(int_stats(
            "x",
            vec![Some(0), Some(0), None],
            vec![Some(100), Some(100), None],
            vec![Some(4), Some(0), Some(10)],
        )),
        Some(vec![Some(false), Some(false), Some(false)]),
    );
    assert_eq!(kept("x = 50", &files), [true, true, false]);
    assert_eq!(kept("x > 100", &files), [false, false, false]);
    assert_eq!(kept("x IS NULL", &files), [true, false, true]);
    assert_eq!(kept("x IS NOT NULL", &files), [true, true, false]);
}

#[test]
fn truncated_string_maxima_are_treated_as_prefixes() {
    let files = file_list(
        vec![],
        vec![Some(5), Some(5)],
        Some((
            structs(vec![(
                "s",
                array(StringArray::from(vec![Some("aaa"), Some("abc")])),
            )]),
            structs(vec![(
                "s",
                array(StringArray::from(vec![Some("abc"), Some("abc")])),
            )]),
            structs(vec![("s", array(Int64Array::from(vec![Some(0), Some(0)])))]),
        )),
        None,
    );
    assert_eq!(kept("s = 'abcd'", &files), [true, true]);
    assert_eq!(kept("s > 'abc'", &files), [true, true]);
    assert_eq!(kept("s >= 'abczzz'", &files), [true, true]);
    assert_eq!(kept("s >= 'abd'", &files), [false, false]);
    assert_eq!(kept("s = 'abd'", &files), [false, false]);
    assert_eq!(kept("s = 'ab'", &files), [true, false]);
    assert_eq!(kept("s < 'aaa'", &files), [false, false]);
    assert_eq!(kept("s <= 'aaa'", &files), [true, false]);
    assert_eq!(kept("s != 'abc'", &files), [true, true]);
    assert_eq!(kept("s LIKE 'abcx%'", &files), [true, true]);
    assert_eq!(kept("s LIKE 'b%'", &files), [false, false]);
    assert_eq!(kept("s LIKE 'a%'", &files), [true, true]);
    assert_eq!(kept("s LIKE 'aa%'", &files), [true, false]);
    assert_eq!(kept("s LIKE 'ab_'", &files), [true, true]);
    assert_eq!(kept("s LIKE '%z'", &files), [true, true]);
    assert_eq!(kept("s LIKE 'aa'", &files), [false, false]);
    assert_eq!(kept("s LIKE 'zz'", &files), [false, false]);
    assert_eq!(kept("s NOT LIKE 'a%'", &files), [true, true]);
    assert_eq!(kept("s IN ('zzz', 'abcdef')", &files), [true, true]);
    assert_eq!(kept("s IN ('zzz', '0')", &files), [false, false]);
    let tie_breaker = file_list(
        vec![],
        vec![Some(5)],
        Some((
            structs(vec![("s", array(StringArray::from(vec!["abc"])))]),
            structs(vec![("s", array(StringArray::from(vec!["abc\u{10FFFF}"])))]),
            structs(vec![("s", array(Int64Array::from(vec![0])))]),
        )),
        None,
    );
    assert_eq!(kept("s = 'abcz'", &tie_breaker), [true]);
    assert_eq!(kept("s = 'abd'", &tie_breaker), [false]);
}

#[test]
fn float_maxima_never_rule_out_nan() {
    let files = file_list(
        vec![],
        vec![Some(5), Some(5), Some(5)],
        Some((
            structs(vec![(
                "f",
                array(Float64Array::from(vec![
                    Some(1.0),
                    Some(f64::NAN),
                    Some(-0.0),
                ])),
            )]),
            structs(vec![(
                "f",
                array(Float64Array::from(vec![
                    Some(3.0),
                    Some(f64::NAN),
                    Some(0.0),
                ])),
            )]),
            structs(vec![(
                "f",
                array(Int64Array::from(vec![Some(0), Some(0), Some(0)])),
            )]),
        )),
        None,
    );
    assert_eq!(kept("f > 5", &files), [true, true, true]);
    assert_eq!(kept("f >= 5", &files), [true, true, true]);
    assert_eq!(kept("f = 5", &files), [false, true, false]);
    assert_eq!(kept("f = 'NaN'", &files), [true, true, true]);
    assert_eq!(kept("f < 1", &files), [false, true, true]);
    assert_eq!(kept("f <= 1", &files), [true, true, true]);
    assert_eq!(kept("f < 0", &files), [false, true, false]);
    assert_eq!(kept("f < 'NaN'", &files), [true, true, true]);
    assert_eq!(kept("f != 0", &files), [true, true, true]);
    assert_eq!(kept("NOT (f <= 3)", &files), [true, true, true]);
    let narrow = file_list(
        vec![],
        vec![Some(5)],
        Some((
            structs(vec![("f", array(Float32Array::from(vec![1.0f32])))]),
            structs(vec![("f", array(Float32Array::from(vec![2.0f32])))]),
            structs(vec![("f", array(Int64Array::from(vec![0])))]),
        )),
        None,
    );
    assert_eq!(kept("f = 2.5", &narrow), [false]);
    assert_eq!(kept("f = 1.5", &narrow), [true]);
    assert_eq!(kept("f < 1", &narrow), [false]);
}

#[test]
fn timestamp_bounds_allow_for_millisecond_truncation() {
    let noon = 1_609_502_400_000_000_i64; // 2021-01-01 12:00:00 UTC
    let hour = 3_600_000_000_i64;
    let timestamps =
        |values: Vec<i64>| array(TimestampMicrosecondArray::from(values).with_timezone("UTC"));
    let files = file_list(
        vec![],
        vec![Some(5)],
        Some((
            structs(vec![("ts", timestamps(vec![noon - hour]))]),
            structs(vec![("ts", timestamps(vec![noon]))]),
            structs(vec![("ts", array(Int64Array::from(vec![0])))]),
        )),
        None,
    );
    assert_eq!(
        kept("ts > TIMESTAMP '2021-01-01 12:00:00.000500'", &files),
        [true]
    );
    assert_eq!(
        kept("ts >= TIMESTAMP '2021-01-01 12:00:00.000999'", &files),
        [true]
    );
    assert_eq!(
        kept("ts > TIMESTAMP '2021-01-01 12:00:00.000999'", &files),
        [false]
    );
    assert_eq!(
        kept("ts >= TIMESTAMP '2021-01-01 12:00:00.001'", &files),
        [false]
    );
    assert_eq!(kept("ts = '2021-01-01 12:00:00.0009'", &files), [true]);
    assert_eq!(kept("ts = '2021-01-01 12:00:01'", &files), [false]);
    assert_eq!(
        kept("ts < TIMESTAMP '2021-01-01 10:59:59.9995'", &files),
        [true]
    );
    assert_eq!(
        kept("ts < TIMESTAMP '2021-01-01 10:59:59.999'", &files),
        [false]
    );
    assert_eq!(kept("ts < DATE '2021-01-01'", &files), [false]);
    assert_eq!(kept("ts > DATE '2021-01-01'", &files), [true]);
    let single = file_list(
        vec![],
        vec![Some(5)],
        Some((
            structs(vec![("ts", timestamps(vec![noon]))]),
            structs(vec![("ts", timestamps(vec![noon]))]),
            structs(vec![("ts", array(Int64Array::from(vec![0])))]),
        )),
        None,
    );
    assert_eq!(
        kept("ts != TIMESTAMP '2021-01-01 12:00:00'", &single),
        [true]
    );
}

#[test]
fn decimal_and_date_bounds_skip_exactly() {
    let decimals = |values: Vec<i128>| {
        array(
            Decimal128Array::from(values)
                .with_precision_and_scale(10, 2)
                .unwrap(),
        )
    };
    let day = |text: &str| crate::scalar::parse_date(text).unwrap();
    let files = file_list(
        vec![],
        vec![Some(5), Some(5)],
        Some((
            structs(vec![
                ("d", decimals(vec![100, 500])),
                (
                    "day",
                    array(Date32Array::from(vec![
                        day("2021-01-01"),
                        day("2022-01-01"),
                    ])),
                ),
            ]),
            structs(vec![
                ("d", decimals(vec![200, 500])),
                (
                    "day",
                    array(Date32Array::from(vec![
                        day("2021-12-31"),
                        day("2022-12-31"),
                    ])),
                ),
            ]),
            structs(vec![
                ("d", array(Int64Array::from(vec![0, 0]))),
                ("day", array(Int64Array::from(vec![0, 0]))),
            ]),
        )),
        None,
    );
    assert_eq!(kept("d = 1.5", &files), [true, false]);
    assert_eq!(kept("d > 2.001", &files), [false, true]);
    assert_eq!(kept("d != 5", &files), [true, false]);
    assert_eq!(kept("day >= '2022-06-01'", &files), [false, true]);
    assert_eq!(kept("day < DATE '2021-01-02'", &files), [true, false]);
    assert_eq!(
        kept("day = TIMESTAMP '2021-06-01 10:00:00'", &files),
        [false, false]
    );
}

#[test]
fn partition_columns_prune_exactly() {
    let partitions = vec![
        (
            "p",
            array(StringArray::from(vec![Some("a"), Some("b"), None])),
        ),
        (
            "n",
            array(Int32Array::from(vec![Some(1), Some(2), Some(3)])),
        ),
    ];
    let files = file_list(
        partitions,
        vec![Some(5), Some(5), Some(5)],
        Some(int_stats(
            "x",
            vec![Some(0), Some(50), Some(0)],
            vec![Some(10), Some(60), Some(10)],
            vec![Some(0), Some(0), Some(0)],
        )),
        None,
    );
    assert_eq!(kept("p = 'a'", &files), [true, false, false]);
    assert_eq!(kept("P = 'a'", &files), [true, false, false]);
    assert_eq!(kept("p IS NULL", &files), [false, false, true]);
    assert_eq!(kept("p IS NOT NULL", &files), [true, true, false]);
    assert_eq!(kept("p IN ('a', 'b')", &files), [true, true, false]);
    assert_eq!(kept("p NOT IN ('a')", &files), [false, true, false]);
    assert_eq!(kept("NOT p = 'a'", &files), [false, true, false]);
    assert_eq!(kept("p LIKE 'a%'", &files), [true, false, false]);
    assert_eq!(kept("n > 1.5", &files), [false, true, true]);
    assert_eq!(kept("n = '2'", &files), [false, true, false]);
    assert_eq!(kept("p = 'a' OR n = 3", &files), [true, false, true]);
    assert_eq!(kept("p = 'a' OR x > 5", &files), [true, true, true]);
    assert_eq!(kept("p = 'a' AND x > 5", &files), [true, false, false]);
    assert_eq!(kept("p = 'b' AND x > 5", &files), [false, true, false]);
    assert_eq!(
        kept("(p = 'a' AND x > 20) OR (p = 'b' AND x < 55)", &files),
        [false, true, false]
    );
    assert_eq!(
        kept("NOT (p = 'a' AND x < 100)", &files),
        [false, true, false]
    );
    assert_eq!(
        kept("p = 'a' OR (p = 'b' AND x = 1)", &files),
        [true, false, false]
    );
    assert_eq!(kept("n < x", &files), [true, true, true]);
}

#[test]
fn nested_statistics_resolve_by_path() {
    let files = file_list(
        vec![],
        vec![Some(5), Some(5)],
        Some((
            structs(vec![(
                "s",
                structs(vec![("a", array(Int64Array::from(vec![0, 100])))]),
            )]),
            structs(vec![(
                "s",
                structs(vec![("a", array(Int64Array::from(vec![10, 200])))]),
            )]),
            structs(vec![(
                "s",
                structs(vec![("a", array(Int64Array::from(vec![0, 2])))]),
            )]),
        )),
        None,
    );
    assert_eq!(kept("s.a > 10", &files), [false, true]);
    assert_eq!(kept("S.a <= 10", &files), [true, false]);
    assert_eq!(kept("s.a IS NULL", &files), [true, true]);
    assert_eq!(kept("s.a IS NOT NULL", &files), [true, true]);
}

#[test]
fn partition_only_extracts_the_implied_partition_filter() {
    let partition_columns = vec!["p".to_string(), "q".to_string()];
    let part = |text: &str| partition_only(&parse(text), &partition_columns).map(|e| e.to_string());
    assert_eq!(part("p = 1 AND x > 5").as_deref(), Some("p = 1"));
    assert_eq!(
        part("x > 5 AND P = 1 AND q IS NULL").as_deref(),
        Some("P = 1 AND q IS NULL")
    );
    assert_eq!(
        part("(p = 1 AND x > 5) OR p = 2").as_deref(),
        Some("p = 1 OR p = 2")
    );
    assert_eq!(part("x > 5"), None);
    assert_eq!(part("p = 1 OR x > 5"), None);
    assert_eq!(part("NOT (x > 5 OR p = 1)").as_deref(), Some("p != 1"));
    assert_eq!(part("p < q").as_deref(), Some("p < q"));
    assert_eq!(part("p = x"), None);
}

// --- golden tables -----------------------------------------------------------------------

/// Every file of the golden table whose rows (with its partition values) match a filter is
/// kept by [`files_may_match`]; returns the number of files kept per filter.
fn golden_kept_counts(name: &str, filters: &[&str]) -> Option<(usize, Vec<usize>)> {
    let root = golden_table(name)?.join("delta");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let files = runtime.block_on(async {
        let table = Table::open(root.to_str().unwrap(), &HashMap::new())
            .await
            .unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let (schema, batches) = snapshot.files(true).await.unwrap();
        concat_batches(&schema, &batches).unwrap()
    });
    let data: Vec<RecordBatch> = (0..files.num_rows())
        .map(|row| file_rows(&root, &files, row))
        .collect();
    let mut counts = Vec::new();
    for filter in filters {
        let expr = parse(filter);
        let stats = crate::replay::file_list::file_list_stats(&files).unwrap();
        let keep = files_may_match(&expr, &stats).unwrap_or_else(|e| panic!("{filter}: {e}"));
        for (row, rows) in data.iter().enumerate() {
            let matches = evaluate(&expr, rows).unwrap_or_else(|e| panic!("{filter}: {e}"));
            if matches.true_count() > 0 {
                assert!(
                    keep.value(row),
                    "{name}: `{filter}` dropped file {row} with matches"
                );
            }
        }
        counts.push(keep.true_count());
    }
    Some((files.num_rows(), counts))
}

/// The rows of file `row` of the file list, with its partition values as columns.
fn file_rows(root: &Path, files: &RecordBatch, row: usize) -> RecordBatch {
    let path = files
        .column_by_name("path")
        .unwrap()
        .as_string::<i32>()
        .value(row);
    let file = std::fs::File::open(root.join(path)).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let schema = batches[0].schema();
    let data = concat_batches(&schema, &batches).unwrap();
    let partitions = files
        .column_by_name("partition_values")
        .unwrap()
        .as_struct();
    let repeat = UInt32Array::from(vec![row as u32; data.num_rows()]);
    let mut columns: Vec<(String, ArrayRef)> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .zip(data.columns().iter().cloned())
        .collect();
    for (field, column) in partitions.fields().iter().zip(partitions.columns()) {
        columns.push((field.name().clone(), take(column, &repeat, None).unwrap()));
    }
    RecordBatch::try_from_iter(columns).unwrap()
}

#[test]
fn golden_all_types_statistics_skip_soundly() {
    let filters = [
        "as_int = 0",
        "as_int > 0",
        "as_long < 0",
        "as_byte >= 1",
        "as_short != 0",
        "as_float > 0",
        "as_float = 0.0",
        "as_double < 0.5",
        "as_string = '0'",
        "as_string > '0'",
        "as_date = '2000-01-01'",
        "as_date > DATE '2000-01-01'",
        "as_timestamp = TIMESTAMP '2000-01-01 08:00:00'",
        "as_timestamp > TIMESTAMP '2000-01-01 08:00:00'",
        "as_timestamp > TIMESTAMP '2000-01-01 08:00:00.001'",
        "as_big_decimal = 0",
        "as_big_decimal IS NULL",
        "as_int IS NOT NULL AND as_string LIKE '0%'",
    ];
    let Some((files, counts)) = golden_kept_counts("data-skipping-basic-stats-all-types", &filters)
    else {
        return;
    };
    assert!(files > 0);
    assert_eq!(counts[1], 0, "as_int > 0 on an all-zero table");
    assert!(
        counts[13] > 0,
        "as_timestamp > its only value, within the truncation"
    );
    assert_eq!(counts[14], 0, "as_timestamp beyond its only value");
}

#[test]
fn golden_partition_and_data_statistics_skip_soundly() {
    let filters = [
        "part = 0",
        "part = 1 AND id = 0",
        "id = 1 OR part = 0",
        "id > 1",
        "NOT (id = 0)",
    ];
    let Some((files, counts)) =
        golden_kept_counts("data-skipping-partition-and-data-column", &filters)
    else {
        return;
    };
    assert_eq!(files, 4);
    assert_eq!(counts, vec![2, 1, 3, 0, 2]);
}

#[test]
fn golden_partition_values_of_every_type_prune_exactly() {
    let filters = [
        "as_int = 0",
        "as_long IS NULL",
        "as_byte > 0",
        "as_short IN (0, 1)",
        "as_boolean",
        "NOT as_boolean",
        "as_float < 0.5",
        "as_double >= 1",
        "as_string = '1'",
        "as_string_lit_null = 'null'",
        "as_date = DATE '2021-09-08'",
        "as_timestamp = TIMESTAMP '2021-09-08 11:11:11'",
        "as_big_decimal = 1",
        "value IS NOT NULL AND as_int = 1",
    ];
    let Some((files, counts)) = golden_kept_counts("data-reader-partition-values", &filters) else {
        return;
    };
    assert_eq!(files, 3);
    assert_eq!(counts, vec![1, 1, 1, 2, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1]);
}

#[test]
fn golden_decimal_statistics_skip_soundly() {
    let filters = [
        "col1 > 0",
        "col1 = -999.99",
        "col2 < 0",
        "col3 >= 1",
        "part = 1",
    ];
    let Some((files, _)) = golden_kept_counts("basic-decimal-table", &filters) else {
        return;
    };
    assert!(files > 0);
}

// --- property ----------------------------------------------------------------------------

/// One physical row: `x`, `y`, `z` and whether a deletion vector removes it.
type GeneratedRow = (Option<i64>, Option<f64>, Option<String>, bool);

/// One generated file: its physical rows `(x, y, z, deleted)`, its partition value `p`, how
/// its stats are recorded.
#[derive(Debug, Clone)]
struct GeneratedFile {
    rows: Vec<GeneratedRow>,
    p: Option<i32>,
    stats_mode: u8,
    widen: i64,
    tight: bool,
    spark_nan: bool,
    truncate: usize,
}

fn float_values() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(-1.0),
        Just(0.0),
        Just(-0.0),
        Just(1.5),
        Just(f64::NAN),
        Just(3.0)
    ]
}

fn generated_file() -> impl Strategy<Value = GeneratedFile> {
    let row = (
        prop::option::of(-5i64..5),
        prop::option::of(float_values()),
        prop::option::of("[a-c]{0,3}"),
        prop::bool::weighted(0.2),
    );
    (
        prop::collection::vec(row, 1..7),
        prop::option::of(0i32..3),
        0u8..3,
        0i64..3,
        any::<bool>(),
        any::<bool>(),
        1usize..4,
    )
        .prop_map(
            |(rows, p, stats_mode, widen, tight, spark_nan, truncate)| GeneratedFile {
                rows,
                p,
                stats_mode,
                widen,
                tight,
                spark_nan,
                truncate,
            },
        )
}

fn literal_for(column: &'static str) -> BoxedStrategy<Scalar> {
    match column {
        "x" | "p" => prop_oneof![
            4 => (-6i64..6).prop_map(Scalar::Int64),
            1 => Just(Scalar::Null),
            2 => (-60i128..60).prop_map(|value| Scalar::Decimal { value, scale: 1 }),
        ]
        .boxed(),
        "y" => prop_oneof![4 => float_values().prop_map(Scalar::Float64), 1 => Just(Scalar::Null)]
            .boxed(),
        _ => prop_oneof![4 => "[a-c]{0,3}".prop_map(Scalar::Utf8), 1 => Just(Scalar::Null)].boxed(),
    }
}

fn compare_ops() -> impl Strategy<Value = CompareOp> {
    prop_oneof![
        Just(CompareOp::Eq),
        Just(CompareOp::NotEq),
        Just(CompareOp::Lt),
        Just(CompareOp::LtEq),
        Just(CompareOp::Gt),
        Just(CompareOp::GtEq),
    ]
}

fn leaf_for(column: &'static str) -> BoxedStrategy<Expr> {
    let comparison =
        (compare_ops(), literal_for(column), any::<bool>()).prop_map(move |(op, value, flip)| {
            if flip {
                Expr::Literal(value).compare(op, col(column))
            } else {
                col(column).compare(op, Expr::Literal(value))
            }
        });
    let in_list = (
        prop::collection::vec(literal_for(column), 0..3),
        any::<bool>(),
    )
        .prop_map(move |(list, negated)| col(column).in_list(list, negated));
    let null_test = any::<bool>().prop_map(move |negated| Expr::IsNull {
        expr: Box::new(col(column)),
        negated,
    });
    let between = (literal_for(column), literal_for(column), any::<bool>()).prop_map(
        move |(low, high, negated)| Expr::Between {
            expr: Box::new(col(column)),
            low: Box::new(Expr::Literal(low)),
            high: Box::new(Expr::Literal(high)),
            negated,
        },
    );
    if column == "z" {
        let like =
            ("[a-c]{0,2}[%_]?[a-c]?", any::<bool>()).prop_map(|(pattern, negated)| Expr::Like {
                expr: Box::new(col("z")),
                pattern,
                negated,
            });
        prop_oneof![3 => comparison, 1 => in_list, 1 => null_test, 1 => between, 2 => like].boxed()
    } else {
        prop_oneof![3 => comparison, 1 => in_list, 1 => null_test, 1 => between].boxed()
    }
}

/// A computed operand over `column` (never failing on the generated values).
fn computed_for(column: &'static str) -> BoxedStrategy<ValueExpr> {
    let column_value = || ValueExpr::Column(vec![column.to_string()]);
    let arith = |op, left: ValueExpr, right: ValueExpr| ValueExpr::Arith {
        op,
        left: Box::new(left),
        right: Box::new(right),
    };
    match column {
        "z" => prop_oneof![
            Just(ValueExpr::Call {
                function: Function::Upper,
                args: vec![column_value()],
            }),
            "[a-c]{0,1}".prop_map(move |suffix| ValueExpr::Call {
                function: Function::Concat,
                args: vec![column_value(), ValueExpr::Literal(Scalar::Utf8(suffix))],
            }),
        ]
        .boxed(),
        _ => {
            let ops = prop_oneof![
                Just(ArithOp::Add),
                Just(ArithOp::Sub),
                Just(ArithOp::Mul),
                Just(ArithOp::Rem),
            ];
            (ops, 1i64..4, any::<bool>())
                .prop_map(move |(op, k, negate)| {
                    let computed = arith(op, column_value(), ValueExpr::Literal(Scalar::Int64(k)));
                    match negate {
                        true => ValueExpr::Negate(Box::new(computed)),
                        false => computed,
                    }
                })
                .boxed()
        }
    }
}

/// A comparison, IN, BETWEEN or NULL test of a computed operand over `column`.
fn computed_leaf_for(column: &'static str) -> BoxedStrategy<Expr> {
    let operand = move || computed_for(column).prop_map(Expr::value);
    let literal = move || {
        match column {
            "z" => literal_for("z"),
            _ => literal_for("x"),
        }
        .prop_map(Expr::Literal)
    };
    prop_oneof![
        3 => (operand(), compare_ops(), literal())
            .prop_map(|(left, op, right)| left.compare(op, right)),
        1 => (operand(), col_or_literal(column), compare_ops())
            .prop_map(|(left, right, op)| right.compare(op, left)),
        1 => (operand(), prop::collection::vec(literal_for(if column == "z" { "z" } else { "x" }), 0..3), any::<bool>())
            .prop_map(|(operand, list, negated)| operand.in_list(list, negated)),
        1 => (operand(), any::<bool>()).prop_map(|(operand, negated)| Expr::IsNull {
            expr: Box::new(operand),
            negated,
        }),
        1 => (operand(), literal(), operand(), any::<bool>()).prop_map(
            |(expr, low, high, negated)| Expr::Between {
                expr: Box::new(expr),
                low: Box::new(low),
                high: Box::new(high),
                negated,
            }
        ),
    ]
    .boxed()
}

fn col_or_literal(column: &'static str) -> BoxedStrategy<Expr> {
    prop_oneof![
        Just(col(column)),
        literal_for(if column == "z" { "z" } else { "x" }).prop_map(Expr::Literal),
    ]
    .boxed()
}

fn generated_filter() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        3 => leaf_for("x"),
        3 => leaf_for("p"),
        3 => leaf_for("y"),
        3 => leaf_for("z"),
        1 => computed_leaf_for("x"),
        1 => computed_leaf_for("p"),
        1 => computed_leaf_for("y"),
        1 => computed_leaf_for("z"),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.and(b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.or(b)),
            inner.prop_map(|a| !a),
        ]
    })
}

fn truncated(text: &str, length: usize) -> String {
    text.chars().take(length).collect()
}

/// The file list of the generated files (stats over the valid rows when tight, over every
/// physical row and widened otherwise) and the valid rows of each file.
fn generated_table(files: &[GeneratedFile]) -> (RecordBatch, Vec<RecordBatch>) {
    let mut x_min = Vec::new();
    let mut x_max = Vec::new();
    let mut y_min = Vec::new();
    let mut y_max = Vec::new();
    let mut z_min = Vec::new();
    let mut z_max = Vec::new();
    let mut counts: [Vec<Option<i64>>; 3] = Default::default();
    let mut valid_structs = Vec::new();
    let mut data = Vec::new();
    for file in files {
        let described: Vec<_> = file
            .rows
            .iter()
            .filter(|row| !file.tight || !row.3)
            .collect();
        let xs: Vec<i64> = described.iter().filter_map(|row| row.0).collect();
        let widen = if file.tight { 0 } else { file.widen };
        let leaf_stats = file.stats_mode == 0;
        x_min.push(xs.iter().min().map(|v| v - widen).filter(|_| leaf_stats));
        x_max.push(xs.iter().max().map(|v| v + widen).filter(|_| leaf_stats));
        let ys: Vec<f64> = described
            .iter()
            .filter_map(|row| row.1)
            .filter(|v| file.spark_nan || !v.is_nan())
            .collect();
        y_min.push(
            ys.iter()
                .copied()
                .min_by(f64::total_cmp)
                .filter(|_| leaf_stats),
        );
        y_max.push(
            ys.iter()
                .copied()
                .max_by(f64::total_cmp)
                .filter(|_| leaf_stats),
        );
        let zs: Vec<&String> = described.iter().filter_map(|row| row.2.as_ref()).collect();
        z_min.push(
            zs.iter()
                .min()
                .map(|v| truncated(v, file.truncate))
                .filter(|_| leaf_stats),
        );
        z_max.push(
            zs.iter()
                .max()
                .map(|v| truncated(v, file.truncate))
                .filter(|_| leaf_stats),
        );
        counts[0].push(Some(
            described.iter().filter(|row| row.0.is_none()).count() as i64
        ));
        counts[1].push(Some(
            described.iter().filter(|row| row.1.is_none()).count() as i64
        ));
        counts[2].push(Some(
            described.iter().filter(|row| row.2.is_none()).count() as i64
        ));
        valid_structs.push(file.stats_mode != 2);
        let valid: Vec<_> = file.rows.iter().filter(|row| !row.3).collect();
        data.push(batch(vec![
            (
                "x",
                array(Int64Array::from(
                    valid.iter().map(|row| row.0).collect::<Vec<_>>(),
                )),
            ),
            (
                "y",
                array(Float64Array::from(
                    valid.iter().map(|row| row.1).collect::<Vec<_>>(),
                )),
            ),
            (
                "z",
                array(StringArray::from(
                    valid.iter().map(|row| row.2.clone()).collect::<Vec<_>>(),
                )),
            ),
            ("p", array(Int32Array::from(vec![file.p; valid.len()]))),
        ]));
    }
    let [x_nulls, y_nulls, z_nulls] = counts;
    let stats = |x: ArrayRef, y: ArrayRef, z: ArrayRef| {
        structs_with_validity(vec![("x", x), ("y", y), ("z", z)], valid_structs.clone())
    };
    let list = file_list(
        vec![(
            "p",
            array(Int32Array::from(
                files.iter().map(|f| f.p).collect::<Vec<_>>(),
            )),
        )],
        files.iter().map(|f| Some(f.rows.len() as i64)).collect(),
        Some((
            stats(
                array(Int64Array::from(x_min)),
                array(Float64Array::from(y_min)),
                array(StringArray::from(z_min)),
            ),
            stats(
                array(Int64Array::from(x_max)),
                array(Float64Array::from(y_max)),
                array(StringArray::from(z_max)),
            ),
            stats(
                array(Int64Array::from(x_nulls)),
                array(Int64Array::from(y_nulls)),
                array(Int64Array::from(z_nulls)),
            ),
        )),
        Some(files.iter().map(|f| Some(f.tight)).collect()),
    );
    (list, data)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn skipping_never_drops_a_file_with_a_matching_row(
        files in prop::collection::vec(generated_file(), 1..6),
        filter in generated_filter(),
    ) {
        let (list, data) = generated_table(&files);
        let keep = files_may_match(&filter, &list).unwrap();
        prop_assert_eq!(keep.null_count(), 0);
        for (index, rows) in data.iter().enumerate() {
            let matches = evaluate(&filter, rows).unwrap();
            if matches.true_count() > 0 {
                prop_assert!(
                    keep.value(index),
                    "`{}` dropped file {} ({:?})", filter, index, files[index]
                );
            }
        }
    }

    #[test]
    fn display_parses_back_to_an_equivalent_filter(filter in generated_filter()) {
        let once = parse_sql(&filter.to_string()).unwrap();
        let twice = parse_sql(&once.to_string()).unwrap();
        prop_assert_eq!(once, twice);
    }
}

// --- computed operands ------------------------------------------------------------------

fn computed_rows() -> RecordBatch {
    batch(vec![
        (
            "id",
            array(Int64Array::from(vec![
                Some(1),
                Some(3),
                Some(6),
                None,
                Some(7),
            ])),
        ),
        (
            "price",
            array(Float64Array::from(vec![
                Some(2.5),
                Some(50.0),
                None,
                Some(1.0),
                Some(10.0),
            ])),
        ),
        (
            "name",
            array(StringArray::from(vec![
                Some("Ab"),
                Some("x"),
                Some("AB"),
                None,
                Some("cd"),
            ])),
        ),
    ])
}

#[test]
fn operands_are_value_expressions_and_plain_ones_stay_plain() {
    let remainder = ValueExpr::Arith {
        op: ArithOp::Rem,
        left: Box::new(ValueExpr::Column(vec!["id".into()])),
        right: Box::new(ValueExpr::Literal(Scalar::Int64(3))),
    };
    assert_eq!(
        parse("id % 3 = 0"),
        Expr::Value(Box::new(remainder)).compare(CompareOp::Eq, lit(0i64))
    );
    assert_eq!(parse("x > -5"), col("x").compare(CompareOp::Gt, lit(-5i64)));
    assert_eq!(
        parse("(x) = ('a')"),
        col("x").compare(CompareOp::Eq, lit("a"))
    );
    assert_eq!(
        parse("-9223372036854775808 < x"),
        lit(i64::MIN).compare(CompareOp::Lt, col("x"))
    );
    assert!(
        matches!(parse("x = -y"), Expr::Compare { right, .. } if matches!(*right, Expr::Value(_)))
    );
    assert_eq!(
        Expr::value(ValueExpr::Column(vec!["a".into()])),
        col("a"),
        "Expr::value keeps plain columns plain"
    );
    assert_eq!(
        parse("t.id = s.id + 1 AND lower(s.name) LIKE 'a%'").columns(),
        ["t.id", "s.id", "s.name"]
    );
    assert_eq!(
        parse("CASE WHEN t.flag THEN s.a ELSE 0 END > t.b").columns(),
        ["t.flag", "s.a", "t.b"]
    );
    let renamed = parse("t.v + 10 < s.v AND coalesce(t.w, s.w) IS NULL")
        .try_map_columns(&mut |path: &[String]| Ok::<_, ()>(vec![path.join("_")]))
        .unwrap();
    assert_eq!(renamed.columns(), ["t_v", "s_v", "t_w", "s_w"]);
    assert!(parse("current_timestamp() > ts").reads_clock());
    assert!(parse("CASE WHEN now() > ts THEN 1 END = 1").reads_clock());
    assert!(!parse("x + 1 > 2 AND lower(s) IS NULL").reads_clock());
    assert_eq!(
        parse("a % 2 = 0 AND b * 2 BETWEEN 1 AND c + 1").negate(),
        parse("a % 2 != 0 OR b * 2 NOT BETWEEN 1 AND c + 1")
    );
}

#[test]
fn computed_filters_display_as_sql_that_parses_back() {
    let texts = [
        "id % 3 = 0",
        "price * qty > 100 AND lower(name) = 'x'",
        "a - (b - c) = a - b - c AND (a + b) * c < a + b * c",
        "a / (b * c) != a / b * c",
        "CASE WHEN x > 1 THEN 'big' WHEN x IS NULL THEN NULL ELSE lower(s) END IN ('big', 'ab')",
        "CAST(s AS DECIMAL(10,2)) BETWEEN x - 1 AND x + 1",
        "coalesce(x, 0) IS NOT NULL AND concat(s, '%') LIKE 'a%'",
        "-x * -2 >= 4 AND - -x = x - -1",
        "NOT CAST(flag AS BOOLEAN)",
        "current_timestamp() > TIMESTAMP '2020-01-01 00:00:00' AND year(d) = 2024",
        "`case` = 1 AND `end` + `as` = 2 AND `cast` IS NULL",
        "substring(s, -2, 1) = upper(date_format(ts, 'yyyy-MM'))",
        "t.id = s.id + 1 AND s.v > t.v + 10",
        "(x = 1) = (y + 1 > 2)",
    ];
    for text in texts {
        let expr = parse(text);
        let shown = expr.to_string();
        assert_eq!(parse(&shown), expr, "{text} -> {shown}");
    }
    assert_eq!(parse("(a+b)*c>=-x").to_string(), "(a + b) * c >= -(x)");
    assert_eq!(parse("`case` = 1").to_string(), "`case` = 1");
    assert_eq!(
        parse("CAST(x AS bigint) = lcase(s)").to_string(),
        "CAST(x AS BIGINT) = lower(s)"
    );
}

#[test]
fn computed_filters_evaluate_with_null_semantics() {
    let rows_of = |filter: &str| rows(filter, &computed_rows());
    assert_eq!(rows_of("id % 3 = 0"), [false, true, true, false, false]);
    assert_eq!(
        rows_of("NOT (id % 3 = 0)"),
        [true, false, false, false, true]
    );
    assert_eq!(rows_of("id * 2 > 5"), [false, true, true, false, true]);
    assert_eq!(
        rows_of("price * id > 100"),
        [false, true, false, false, false]
    );
    assert_eq!(
        rows_of("lower(name) = 'ab'"),
        [true, false, true, false, false]
    );
    assert_eq!(
        rows_of("id + 1 IN (2, 7)"),
        [true, false, true, false, false]
    );
    assert_eq!(rows_of("id - 1 NOT IN (0, NULL)"), [false; 5]);
    assert_eq!(
        rows_of("id + price IS NULL"),
        [false, false, true, true, false]
    );
    assert_eq!(
        rows_of("id BETWEEN price - 2 AND id * 2"),
        [true, false, false, false, false]
    );
    assert_eq!(
        rows_of("upper(name) LIKE 'A%'"),
        [true, false, true, false, false]
    );
    assert_eq!(
        rows_of("id = price - 3"),
        [false, false, false, false, true]
    );
    assert_eq!(rows_of("10 / 4 = 2.5"), [true; 5]);
    assert_eq!(
        rows_of("CAST(id AS STRING) = '6'"),
        [false, false, true, false, false]
    );
    assert_eq!(
        rows_of("CASE WHEN id > 5 THEN 'big' ELSE name END = 'big'"),
        [false, false, true, false, true]
    );
    assert_eq!(
        rows_of("coalesce(id, 0) = 0"),
        [false, false, false, true, false]
    );
    assert_eq!(
        rows_of("CAST(id % 2 AS BOOLEAN)"),
        [true, true, false, false, true]
    );
    assert_eq!(
        rows_of("current_timestamp() > TIMESTAMP '2020-01-01 00:00:00'"),
        [true; 5]
    );
    assert_eq!(
        rows_of("NULL + id = 1 OR id = 1"),
        [true, false, false, false, false]
    );
}

#[test]
fn computed_filters_fail_like_spark_in_ansi_mode() {
    let failure = |filter: &str| match evaluate(&parse(filter), &computed_rows()) {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("{filter}: expected an error, got {other:?}"),
    };
    assert!(failure("id / 0 > 1").contains("division by zero"));
    assert!(failure("id % 0 = 1").contains("division by zero"));
    assert!(failure("id * 9223372036854775807 > 0").contains("Overflow"));
    assert!(failure("CAST(name AS BIGINT) = 1").contains("cannot cast"));
    assert!(failure("lower(name)").contains("is not boolean"));
    assert!(failure("missing + 1 = 2").contains("unknown column 'missing'"));
    assert!(failure("name + 1 = 2").contains("arithmetic needs numbers"));
}

#[test]
fn computed_operands_never_skip_a_file_unless_only_partitions_are_read() {
    let files = file_list(
        vec![("n", array(Int32Array::from(vec![Some(1), Some(2), None])))],
        vec![Some(5), Some(5), Some(5)],
        Some(int_stats(
            "x",
            vec![Some(0), Some(50), Some(0)],
            vec![Some(10), Some(60), Some(10)],
            vec![Some(0), Some(0), Some(0)],
        )),
        None,
    );
    assert_eq!(kept("x + 0 > 100", &files), [true, true, true]);
    assert_eq!(kept("x * 2 = 1 OR x > 100", &files), [true, true, true]);
    assert_eq!(kept("x % 3 = 0 AND x > 20", &files), [false, true, false]);
    assert_eq!(kept("NOT (x - 1 < 0)", &files), [true, true, true]);
    assert_eq!(kept("n * 2 = 4", &files), [false, true, false]);
    assert_eq!(kept("n + x > 1000", &files), [true, true, true]);
    assert_eq!(kept("coalesce(n, 0) = 0", &files), [false, false, true]);
    assert_eq!(
        partition_only(&parse("n % 2 = 0 AND x * 2 > 3"), &["n".to_string()]),
        Some(parse("n % 2 = 0"))
    );
}

#[test]
fn deep_nesting_is_refused_and_long_chains_stay_shallow() {
    let refused = [
        format!("{}a = 1{}", "(".repeat(1000), ")".repeat(1000)),
        format!("{}a = 1", "NOT ".repeat(1000)),
        format!("a = {}", vec!["1"; 1000].join(" + ")),
        format!("a = {}1", "- ".repeat(1000)),
        format!("a = {}'x'{}", "lower(".repeat(1000), ")".repeat(1000)),
    ];
    for text in refused {
        let error = crate::expr::parse_sql(&text).unwrap_err();
        assert!(
            error.to_string().contains("nested at most 128 levels"),
            "{error}"
        );
    }
    let nested = format!("{}a = 1{}", "(".repeat(100), ")".repeat(100));
    assert!(crate::expr::parse_sql(&nested).is_ok());
    // A chain of 5,000 ORs parses and is judged (evaluation recurses once per level).
    let terms: Vec<String> = (100..5_100).map(|i| format!("a = {i}")).collect();
    let files = file_list(
        vec![],
        vec![Some(5), Some(5)],
        Some(int_stats(
            "a",
            vec![Some(0), Some(200)],
            vec![Some(10), Some(210)],
            vec![Some(0), Some(0)],
        )),
        None,
    );
    assert_eq!(kept(&terms.join(" OR "), &files), [false, true]);
    let sum = vec!["1"; 100].join(" + ");
    assert!(crate::expr::parse_value_sql(&sum).is_ok());
}

#[test]
fn abs_length_and_trims_compute_as_spark() {
    let rows_of = |filter: &str| rows(filter, &computed_rows());
    // id: 1, 3, 6, NULL, 7; price: 2.5, 50.0, NULL, 1.0, 10.0; name: Ab, x, AB, NULL, cd.
    assert_eq!(rows_of("abs(0 - id) = id"), [true, true, true, false, true]);
    assert_eq!(
        rows_of("abs(id - 4) < 2"),
        [false, true, false, false, false]
    );
    assert_eq!(
        rows_of("abs(price * -1) = price"),
        [true, true, false, true, true]
    );
    assert_eq!(
        rows_of("length(name) = 2"),
        [true, false, true, false, true]
    );
    assert_eq!(
        rows_of("char_length(concat('  ', name, ' ')) = 5"),
        [true, false, true, false, true]
    );
    assert_eq!(
        rows_of("trim(concat('  ', name, ' ')) = name"),
        [true, true, true, false, true]
    );
    assert_eq!(
        rows_of("ltrim(concat('  ', name, ' ')) = concat(name, ' ')"),
        [true, true, true, false, true]
    );
    assert_eq!(
        rows_of("rtrim(concat(' ', name, '  ')) = concat(' ', name)"),
        [true, true, true, false, true]
    );
    let text = "abs(x) >= 0 AND length(s) = 1 AND trim(s) <> ltrim(rtrim(s))";
    assert_eq!(parse(&parse(text).to_string()), parse(text));
    let minimum = batch(vec![(
        "id",
        array(Int64Array::from(vec![Some(5), Some(i64::MIN)])),
    )]);
    let error = evaluate(&parse("abs(id) > 0"), &minimum).unwrap_err();
    assert!(error.to_string().contains("abs"), "{error}");
}
