use proptest::prelude::*;

use super::text::{
    parse_boolean, parse_partition_value, parse_sql_number, parse_sql_typed, parse_stats_value,
};
use super::*;
use crate::expr::{parse_sql, Expr};

const SECOND: i64 = 1_000_000;

fn utc() -> SessionTimeZone {
    SessionTimeZone::utc()
}

/// The literal of `x = <literal>` as the filter parser reads it.
fn sql_literal(text: &str) -> Scalar {
    match parse_sql(&format!("x = {text}")) {
        Ok(Expr::Compare { right, .. }) => match *right {
            Expr::Literal(value) => value,
            other => panic!("{text}: {other:?}"),
        },
        other => panic!("{text}: {other:?}"),
    }
}

/// The numeric value of a number literal, for comparing floats with the decimals they read
/// back as.
fn as_f64(value: &Scalar) -> f64 {
    match value {
        Scalar::Float64(float) => *float,
        Scalar::Int64(int) => *int as f64,
        Scalar::Decimal { value, scale } => format_decimal(*value, *scale).parse().unwrap(),
        other => panic!("not a number: {other:?}"),
    }
}

#[test]
fn the_timestamp_grammar_is_the_union_of_partition_and_sql_forms() {
    let micros = |text: &str| parse_timestamp(text, &utc()).unwrap();
    // The forms partition values were read with.
    assert_eq!(micros("1970-01-01 00:00:00"), 0);
    assert_eq!(micros("1970-1-2"), 86_400 * SECOND);
    assert_eq!(micros("1970-01-01T"), 0);
    assert_eq!(
        micros("1970-01-01 00:00:00 America/Los_Angeles"),
        8 * 3600 * SECOND
    );
    assert_eq!(micros("1970-01-01 01:00:00+1"), 0);
    assert_eq!(micros("1970-01-01 00:00:00UTC"), 0);
    assert_eq!(micros("12345-01-01"), micros("+12345-01-01"));
    // The forms SQL literals were read with.
    assert_eq!(micros(" 1970-01-01 00:00:01.5 "), 1_500_000);
    assert_eq!(micros("1970-01-01T00:00:00.123456Z"), 123_456);
    assert_eq!(micros("1970-01-01 00:00:00 UTC"), 0);
    assert_eq!(micros("1970-01-01 01:00:00 +01:00"), 0);
    assert_eq!(micros("1970-01-01 01:00+0100"), 0);
    assert_eq!(micros("1970-01-01 00:00:00.1234567891"), 123_456);
    assert_eq!(micros("-0001-01-01"), micros("-1-1-1"));
    for bad in [
        "1970-01-01 25:00:00",
        "1970-01-01 00:00:00.",
        "x",
        "1970-01-01Z",
        "UTC+",
    ] {
        assert!(parse_timestamp(bad, &utc()).is_err(), "{bad}");
    }
    // A zone-less time is read in the given zone; a timestamp_ntz ignores any zone.
    let tokyo = SessionTimeZone::parse("Asia/Tokyo").unwrap();
    assert_eq!(parse_timestamp("1970-01-01 09:00:00", &tokyo), Ok(0));
    assert_eq!(
        parse_timestamp_ntz("1970-01-01 09:00:00+09:00"),
        Ok(9 * 3600 * SECOND)
    );
}

#[test]
fn dates_are_strict_alone_and_lenient_in_partition_values() {
    assert_eq!(parse_date("2021-09-08"), Some(18878));
    assert_eq!(parse_date(" 1970-1-2 "), Some(1));
    assert_eq!(parse_date("2021-09-08 10:00:00"), None);
    assert_eq!(parse_date("2021-02-30"), None);
    assert_eq!(parse_date_prefix("2021-09-08 10:00:00"), Ok(18878));
    assert_eq!(parse_date_prefix("2021-09-08T10:00:00"), Ok(18878));
    assert!(parse_date_prefix("20210908").is_err());
}

#[test]
fn user_timestamps_read_like_python_iso_8601() {
    assert_eq!(
        parse_user_timestamp_ms("2024-05-01").unwrap(),
        1_714_521_600_000
    );
    assert_eq!(
        parse_user_timestamp_ms("2024-05-01T12:30:00Z").unwrap(),
        1_714_566_600_000
    );
    assert_eq!(
        parse_user_timestamp_ms("2024-05-01T14:30:00+02:00").unwrap(),
        1_714_566_600_000
    );
    assert_eq!(
        parse_user_timestamp_ms("2024-05-01 12:30:00.123999").unwrap(),
        1_714_566_600_123
    );
    assert_eq!(
        parse_user_timestamp_ms("1969-12-31T23:59:59.9995").unwrap(),
        -1
    );
    let error = parse_user_timestamp_ms("yesterday")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("'yesterday' is not an ISO-8601 timestamp"),
        "{error}"
    );
}

#[test]
fn values_format_as_delta_writes_them() {
    let partition = |value: Scalar| to_partition_value(&value).unwrap();
    assert_eq!(partition(Scalar::Null), None);
    assert_eq!(partition(Scalar::Boolean(true)).as_deref(), Some("true"));
    assert_eq!(partition(Scalar::Int8(-5)).as_deref(), Some("-5"));
    assert_eq!(partition(Scalar::Float64(1.5)).as_deref(), Some("1.5"));
    assert_eq!(partition(Scalar::Float32(f32::NAN)).as_deref(), Some("NaN"));
    assert_eq!(
        partition(Scalar::Float64(f64::NEG_INFINITY)).as_deref(),
        Some("-Infinity")
    );
    let decimal = Scalar::Decimal {
        value: -5,
        scale: 2,
    };
    assert_eq!(partition(decimal.clone()).as_deref(), Some("-0.05"));
    assert_eq!(
        partition(Scalar::Date(18878)).as_deref(),
        Some("2021-09-08")
    );
    // As Delta on Spark 4 writes them: timestamps in ISO-8601 UTC with six fractional
    // digits, timestamp_ntz as wall-clock text without trailing zeros.
    assert_eq!(
        partition(Scalar::Timestamp(1_714_547_472 * SECOND + 500_000)).as_deref(),
        Some("2024-05-01T07:11:12.500000Z")
    );
    assert_eq!(
        partition(Scalar::TimestampNtz(1_714_521_600 * SECOND + 250_000)).as_deref(),
        Some("2024-05-01 00:00:00.25")
    );
    assert_eq!(
        partition(Scalar::TimestampNtz(1_714_521_600 * SECOND)).as_deref(),
        Some("2024-05-01 00:00:00")
    );
    assert!(to_partition_value(&Scalar::Binary(vec![0xff])).is_err());

    assert_eq!(
        to_stats_value(&Scalar::Utf8("a\"b".into())).unwrap(),
        r#""a\"b""#
    );
    assert_eq!(to_stats_value(&decimal).unwrap(), "-0.05");
    assert_eq!(
        to_stats_value(&Scalar::Timestamp(1_500_999)).unwrap(),
        r#""1970-01-01T00:00:01.500Z""#
    );
    assert_eq!(
        to_stats_value(&Scalar::TimestampNtz(-1)).unwrap(),
        r#""1969-12-31T23:59:59.999""#
    );
    assert_eq!(
        to_stats_value(&Scalar::Float64(f64::NAN)).unwrap(),
        r#""NaN""#
    );
    assert!(to_stats_value(&Scalar::Binary(vec![1])).is_err());

    assert_eq!(to_sql_literal(&Scalar::Utf8("it's".into())), "'it''s'");
    assert_eq!(to_sql_literal(&Scalar::Binary(vec![1, 171])), "X'01AB'");
    assert_eq!(to_sql_literal(&Scalar::Date(0)), "DATE '1970-01-01'");
    assert_eq!(
        to_sql_literal(&Scalar::Float64(f64::INFINITY)),
        "'Infinity'"
    );
    assert_eq!(Scalar::Int32(7).to_string(), "7");
}

#[test]
fn statistics_values_read_from_their_json_text() {
    let decimal = ScalarType::Decimal {
        precision: 5,
        scale: 2,
    };
    assert_eq!(
        parse_stats_value("1.5", decimal),
        Some(Scalar::Decimal {
            value: 150,
            scale: 2
        })
    );
    assert_eq!(parse_stats_value("1.505", decimal), None);
    assert_eq!(
        parse_stats_value("12", ScalarType::Integer),
        Some(Scalar::Int32(12))
    );
    assert_eq!(parse_stats_value("\"12\"", ScalarType::Integer), None);
    assert_eq!(
        parse_stats_value("null", ScalarType::Long),
        Some(Scalar::Null)
    );
    assert_eq!(
        parse_stats_value("\"2021-01-01T00:00:00.000+01:00\"", ScalarType::Timestamp),
        Some(Scalar::Timestamp(1_609_455_600 * SECOND))
    );
    assert_eq!(
        parse_stats_value("\"2021-01-01T00:00:00.000\"", ScalarType::TimestampNtz),
        Some(Scalar::TimestampNtz(1_609_459_200 * SECOND))
    );
    assert!(matches!(
        parse_stats_value("\"NaN\"", ScalarType::Double),
        Some(Scalar::Float64(f)) if f.is_nan()
    ));
}

#[test]
fn sql_literal_pieces() {
    assert_eq!(parse_sql_number("12"), Scalar::Int64(12));
    assert_eq!(
        parse_sql_number("1.50"),
        Scalar::Decimal {
            value: 150,
            scale: 2
        }
    );
    assert_eq!(parse_sql_number("1e3"), Scalar::Float64(1000.0));
    assert_eq!(
        parse_sql_number("99999999999999999999"),
        Scalar::Decimal {
            value: 99_999_999_999_999_999_999,
            scale: 0
        }
    );
    assert_eq!(parse_sql_typed("DATE", "1970-01-02"), Some(Scalar::Date(1)));
    assert_eq!(
        parse_sql_typed("TIMESTAMP_NTZ", "1970-01-01 01:00:00+01:00"),
        Some(Scalar::TimestampNtz(0))
    );
    assert_eq!(parse_sql_typed("TIME", "00:00"), None);
    assert_eq!(parse_boolean("TRUE"), Some(true));
    assert_eq!(parse_boolean("yes"), None);
}

/// A value of `ty`, and `ty` itself, for the round trips (no NaN: it is not equal to itself).
fn typed_value() -> impl Strategy<Value = (Scalar, ScalarType)> {
    let days = -2_900_000i32..2_900_000;
    let micros = -90_000_000_000_000_000i64..90_000_000_000_000_000;
    prop_oneof![
        any::<bool>().prop_map(|v| (Scalar::Boolean(v), ScalarType::Boolean)),
        any::<i8>().prop_map(|v| (Scalar::Int8(v), ScalarType::Byte)),
        any::<i16>().prop_map(|v| (Scalar::Int16(v), ScalarType::Short)),
        any::<i32>().prop_map(|v| (Scalar::Int32(v), ScalarType::Integer)),
        any::<i64>().prop_map(|v| (Scalar::Int64(v), ScalarType::Long)),
        any::<f32>()
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(|v| (Scalar::Float32(v), ScalarType::Float)),
        any::<f64>()
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(|v| (Scalar::Float64(v), ScalarType::Double)),
        (
            -99_999_999_999_999_999_999_999_999_999_999_999_999i128
                ..=99_999_999_999_999_999_999_999_999_999_999_999_999,
            0u8..=38
        )
            .prop_map(|(value, scale)| (
                Scalar::Decimal { value, scale },
                ScalarType::Decimal {
                    precision: 38,
                    scale
                }
            )),
        ".*".prop_map(|v| (Scalar::Utf8(v), ScalarType::String)),
        days.prop_map(|v| (Scalar::Date(v), ScalarType::Date)),
        micros
            .clone()
            .prop_map(|v| (Scalar::Timestamp(v), ScalarType::Timestamp)),
        micros.prop_map(|v| (Scalar::TimestampNtz(v), ScalarType::TimestampNtz)),
    ]
}

fn session_zone() -> impl Strategy<Value = SessionTimeZone> {
    prop_oneof![
        Just(SessionTimeZone::utc()),
        (-18 * 60i32..=18 * 60).prop_map(|minutes| {
            let sign = if minutes < 0 { '-' } else { '+' };
            let minutes = minutes.abs();
            SessionTimeZone::parse(&format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60))
                .unwrap()
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn partition_values_round_trip((value, ty) in typed_value(), zone in session_zone()) {
        let text = to_partition_value(&value).unwrap();
        let empty_string = value == Scalar::Utf8(String::new());
        let back = parse_partition_value(text.as_deref(), ty, &zone).unwrap();
        // The empty string is NULL for every type (spec "Partition Value Serialization").
        let expected = if empty_string { Scalar::Null } else { value };
        prop_assert_eq!(back, expected);
    }

    #[test]
    fn binary_partition_values_round_trip(text in ".+") {
        let value = Scalar::Binary(text.clone().into_bytes());
        let written = to_partition_value(&value).unwrap();
        prop_assert_eq!(written.as_deref(), Some(text.as_str()));
        let back = parse_partition_value(written.as_deref(), ScalarType::Binary, &utc());
        prop_assert_eq!(back, Ok(value));
    }

    #[test]
    fn statistics_round_trip((value, ty) in typed_value()) {
        let json = to_stats_value(&value).unwrap();
        prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok(), "{}", json);
        let expected = match value {
            Scalar::Timestamp(micros) => Scalar::Timestamp(micros.div_euclid(1_000) * 1_000),
            Scalar::TimestampNtz(micros) => {
                Scalar::TimestampNtz(micros.div_euclid(1_000) * 1_000)
            }
            other => other,
        };
        prop_assert_eq!(parse_stats_value(&json, ty), Some(expected));
    }

    #[test]
    fn sql_literals_round_trip((value, _) in typed_value()) {
        let literal = to_sql_literal(&value);
        let back = sql_literal(&literal);
        match (&value, &back) {
            (Scalar::Float32(_) | Scalar::Float64(_), Scalar::Utf8(text)) => {
                prop_assert!(text == "Infinity" || text == "-Infinity", "{}", text);
            }
            (Scalar::Float32(float), _) => prop_assert_eq!(as_f64(&back) as f32, *float),
            (Scalar::Float64(float), _) => prop_assert_eq!(as_f64(&back), *float),
            (Scalar::Int8(_) | Scalar::Int16(_) | Scalar::Int32(_), Scalar::Int64(int)) => {
                prop_assert_eq!(literal, int.to_string());
            }
            (Scalar::Decimal { value: v, .. }, Scalar::Int64(int)) => {
                prop_assert_eq!(*v, i128::from(*int));
            }
            _ => prop_assert_eq!(back, value),
        }
    }
}
