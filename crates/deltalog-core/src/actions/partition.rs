//! Partition values: from the strings of `add.partitionValues` to typed Arrow arrays, and
//! Hive-style directory name escaping (spec "Partition Value Serialization", catalogue H-PV,
//! G-16, E5-04, X-18, X-19). The text of each value is read by the scalar codec
//! ([`crate::scalar::parse_partition_value`] for one value); [`SessionTimeZone`], the zone
//! zone-less timestamps are read in, is [`crate::scalar::SessionTimeZone`].

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Decimal128Builder, PrimitiveBuilder, StringBuilder,
};
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, NullArray};

use crate::error::{Error, Result};
pub(crate) use crate::scalar::SessionTimeZone;
use crate::scalar::{
    parse_boolean, parse_date_prefix, parse_decimal, parse_number, parse_timestamp,
    parse_timestamp_ntz,
};
use crate::schema::PrimitiveType;

/// The directory name Hive-style writers use for a NULL partition value.
pub(crate) const HIVE_DEFAULT_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// Builds a typed Arrow array from the serialised partition values of one column, in one pass
/// (catalogue H-PV01..H-PV08, G-16).
///
/// `None` and the empty string are NULL for every type (for `string` too). Formats:
/// `true`/`false` (any case); integers and floats in their usual text (floats also `NaN`,
/// `Infinity`, `-Infinity`); decimals as plain or exponent text, rescaled exactly to the
/// column's scale (extra fractional digits must be zeros and the value must fit the
/// precision); dates `yyyy-MM-dd` (a trailing time part is ignored); timestamps
/// `yyyy-MM-dd[( |T)HH:mm[:ss[.fraction]]][zone]` where the zone is `Z`, an offset like `+01:00`
/// or a zone name; without a zone the value is read in `session_tz`, with one the zone in the
/// string wins. Fractions beyond microseconds are truncated. `timestamp_ntz` uses the same text
/// and ignores any zone. `binary` is the string's UTF-8 bytes. `void` gives a
/// [`NullArray`]. Numbers and temporal values may carry surrounding ASCII whitespace.
///
/// An unparsable value is an [`Error::InvalidTable`] naming `field_name`, the value and the type.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn partition_values_to_arrow(
    values: &[Option<&str>],
    ty: &PrimitiveType,
    field_name: &str,
    session_tz: &SessionTimeZone,
) -> Result<ArrayRef> {
    let column = Column {
        name: field_name,
        ty,
    };
    let array: ArrayRef = match *ty {
        PrimitiveType::String => Arc::new(build_strings(values)),
        PrimitiveType::Binary => Arc::new(build_binaries(values)),
        PrimitiveType::Boolean => Arc::new(build_booleans(values, &column)?),
        PrimitiveType::Byte => {
            Arc::new(build_primitive::<Int8Type>(values, &column, parse_number)?)
        }
        PrimitiveType::Short => {
            Arc::new(build_primitive::<Int16Type>(values, &column, parse_number)?)
        }
        PrimitiveType::Integer => {
            Arc::new(build_primitive::<Int32Type>(values, &column, parse_number)?)
        }
        PrimitiveType::Long => {
            Arc::new(build_primitive::<Int64Type>(values, &column, parse_number)?)
        }
        PrimitiveType::Float => Arc::new(build_primitive::<Float32Type>(
            values,
            &column,
            parse_number,
        )?),
        PrimitiveType::Double => Arc::new(build_primitive::<Float64Type>(
            values,
            &column,
            parse_number,
        )?),
        PrimitiveType::Date => Arc::new(build_primitive::<Date32Type>(values, &column, |s| {
            parse_date_prefix(s)
        })?),
        PrimitiveType::Timestamp => Arc::new(
            build_primitive::<TimestampMicrosecondType>(values, &column, |s| {
                parse_timestamp(s, session_tz)
            })?
            .with_timezone("UTC"),
        ),
        PrimitiveType::TimestampNtz => Arc::new(build_primitive::<TimestampMicrosecondType>(
            values,
            &column,
            parse_timestamp_ntz,
        )?),
        PrimitiveType::Decimal { precision, scale } => {
            Arc::new(build_decimals(values, &column, precision, scale)?)
        }
        PrimitiveType::Void => Arc::new(NullArray::new(values.len())),
        PrimitiveType::Variant => {
            return Err(column.error_without_value("variant columns cannot be partition columns"))
        }
    };
    Ok(array)
}

/// Escapes a partition value for a Hive-style directory name `column=value`, as Spark does:
/// the control characters U+0001..U+001F, `"#%'*/:=?\`, U+007F and `{[]}^` become `%XX`
/// (uppercase hex); everything else is kept.
pub(crate) fn escape_partition_path_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if needs_path_escape(c) {
            escaped.push('%');
            escaped.push_str(&format!("{:02X}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// Reverses [`escape_partition_path_value`], as Spark does: each `%XX` with two hex digits
/// becomes the character U+00XX; a `%` not followed by two hex digits is kept.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn unescape_partition_path_value(path: &str) -> String {
    let mut unescaped = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(percent) = rest.find('%') {
        unescaped.push_str(&rest[..percent]);
        let after = &rest[percent + 1..];
        let code = after
            .get(..2)
            .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match code {
            Some(code) => {
                unescaped.push(char::from(code));
                rest = &after[2..];
            }
            None => {
                unescaped.push('%');
                rest = after;
            }
        }
    }
    unescaped.push_str(rest);
    unescaped
}

/// The column being decoded, for error messages.
struct Column<'a> {
    name: &'a str,
    ty: &'a PrimitiveType,
}

impl Column<'_> {
    fn error(&self, value: &str, reason: &str) -> Error {
        Error::invalid_table(
            "partitionValues",
            format!(
                "partition column `{}`: value `{value}` is not a valid {}: {reason}",
                self.name, self.ty
            ),
        )
    }

    fn error_without_value(&self, reason: &str) -> Error {
        Error::invalid_table(
            "partitionValues",
            format!("partition column `{}`: {reason}", self.name),
        )
    }
}

/// A serialised value, or `None` for NULL (absent or empty, catalogue H-PV01).
fn non_null<'a>(value: &Option<&'a str>) -> Option<&'a str> {
    value.filter(|s| !s.is_empty())
}

fn build_strings(values: &[Option<&str>]) -> arrow_array::StringArray {
    let bytes = values.iter().filter_map(non_null).map(str::len).sum();
    let mut builder = StringBuilder::with_capacity(values.len(), bytes);
    for value in values {
        builder.append_option(non_null(value));
    }
    builder.finish()
}

fn build_binaries(values: &[Option<&str>]) -> arrow_array::BinaryArray {
    let bytes = values.iter().filter_map(non_null).map(str::len).sum();
    let mut builder = BinaryBuilder::with_capacity(values.len(), bytes);
    for value in values {
        builder.append_option(non_null(value).map(str::as_bytes));
    }
    builder.finish()
}

fn build_booleans(
    values: &[Option<&str>],
    column: &Column<'_>,
) -> Result<arrow_array::BooleanArray> {
    let mut builder = BooleanBuilder::with_capacity(values.len());
    for value in values {
        match non_null(value) {
            None => builder.append_null(),
            Some(text) => {
                let value = parse_boolean(text.trim_ascii())
                    .ok_or_else(|| column.error(text, "expected `true` or `false`"))?;
                builder.append_value(value);
            }
        }
    }
    Ok(builder.finish())
}

fn build_primitive<T: ArrowPrimitiveType>(
    values: &[Option<&str>],
    column: &Column<'_>,
    parse: impl Fn(&str) -> std::result::Result<T::Native, String>,
) -> Result<arrow_array::PrimitiveArray<T>> {
    let mut builder = PrimitiveBuilder::<T>::with_capacity(values.len());
    for value in values {
        match non_null(value) {
            None => builder.append_null(),
            Some(text) => {
                let parsed =
                    parse(text.trim_ascii()).map_err(|reason| column.error(text, &reason))?;
                builder.append_value(parsed);
            }
        }
    }
    Ok(builder.finish())
}

fn build_decimals(
    values: &[Option<&str>],
    column: &Column<'_>,
    precision: u8,
    scale: i8,
) -> Result<arrow_array::Decimal128Array> {
    let mut builder = Decimal128Builder::with_capacity(values.len())
        .with_precision_and_scale(precision, scale)
        .map_err(|e| column.error_without_value(&e.to_string()))?;
    for value in values {
        match non_null(value) {
            None => builder.append_null(),
            Some(text) => {
                let unscaled = parse_decimal(text.trim_ascii(), precision, scale)
                    .map_err(|reason| column.error(text, &reason))?;
                builder.append_value(unscaled);
            }
        }
    }
    Ok(builder.finish())
}

fn needs_path_escape(c: char) -> bool {
    matches!(
        c,
        '\u{01}'
            ..='\u{1F}'
                | '"'
                | '#'
                | '%'
                | '\''
                | '*'
                | '/'
                | ':'
                | '='
                | '?'
                | '\\'
                | '\u{7F}'
                | '{'
                | '['
                | ']'
                | '}'
                | '^'
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    use super::*;
    use crate::schema::tests::{commit_actions, golden_table};
    use crate::schema::{parse_schema, to_arrow_data_type};

    fn utc() -> SessionTimeZone {
        SessionTimeZone::utc()
    }

    fn la() -> SessionTimeZone {
        SessionTimeZone::parse("America/Los_Angeles").unwrap()
    }

    fn convert(values: &[Option<&str>], ty: PrimitiveType) -> ArrayRef {
        partition_values_to_arrow(values, &ty, "c", &utc()).unwrap()
    }

    fn error(values: &[Option<&str>], ty: PrimitiveType) -> String {
        partition_values_to_arrow(values, &ty, "col", &utc())
            .unwrap_err()
            .to_string()
    }

    fn timestamps(values: &[&str], ty: PrimitiveType, tz: &SessionTimeZone) -> Vec<i64> {
        let values: Vec<Option<&str>> = values.iter().map(|v| Some(*v)).collect();
        let array = partition_values_to_arrow(&values, &ty, "ts", tz).unwrap();
        let array = array.as_primitive::<TimestampMicrosecondType>();
        array.values().to_vec()
    }

    const SECOND: i64 = 1_000_000;

    #[test]
    fn null_and_empty_are_null_for_every_type() {
        let types = [
            PrimitiveType::String,
            PrimitiveType::Binary,
            PrimitiveType::Boolean,
            PrimitiveType::Byte,
            PrimitiveType::Short,
            PrimitiveType::Integer,
            PrimitiveType::Long,
            PrimitiveType::Float,
            PrimitiveType::Double,
            PrimitiveType::Date,
            PrimitiveType::Timestamp,
            PrimitiveType::TimestampNtz,
            PrimitiveType::Decimal {
                precision: 5,
                scale: 2,
            },
        ];
        for ty in types {
            let array = convert(&[None, Some("")], ty);
            assert_eq!(array.len(), 2);
            assert_eq!(array.null_count(), 2, "{ty}");
            assert_eq!(array.data_type(), &to_arrow_data_type(&ty.into()).unwrap());
        }
        let void = convert(&[Some("x"), None], PrimitiveType::Void);
        assert_eq!(void.data_type(), &arrow_schema::DataType::Null);
        assert_eq!(void.len(), 2);
    }

    #[test]
    fn strings_binaries_and_booleans() {
        let strings = convert(&[Some("a b"), Some("null"), None], PrimitiveType::String);
        let strings = strings.as_string::<i32>();
        assert_eq!(strings.value(0), "a b");
        assert_eq!(strings.value(1), "null");
        assert!(strings.is_null(2));

        let binaries = convert(&[Some("\u{1}\u{2}\u{3}"), Some("é")], PrimitiveType::Binary);
        let binaries = binaries.as_binary::<i32>();
        assert_eq!(binaries.value(0), [1, 2, 3]);
        assert_eq!(binaries.value(1), "é".as_bytes());

        let booleans = convert(
            &[Some("true"), Some("false"), Some("TRUE")],
            PrimitiveType::Boolean,
        );
        let booleans = booleans.as_boolean();
        assert!(booleans.value(0) && !booleans.value(1) && booleans.value(2));
        let e = error(&[Some("yes")], PrimitiveType::Boolean);
        assert!(
            e.contains("partition column `col`: value `yes` is not a valid boolean"),
            "{e}"
        );
    }

    #[test]
    fn integers_and_floats() {
        let longs = convert(
            &[Some("-9223372036854775808"), Some(" 42 ")],
            PrimitiveType::Long,
        );
        assert_eq!(longs.as_primitive::<Int64Type>().values(), &[i64::MIN, 42]);
        let bytes = convert(&[Some("127"), Some("-128")], PrimitiveType::Byte);
        assert_eq!(bytes.as_primitive::<Int8Type>().values(), &[127, -128]);
        let shorts = convert(&[Some("-32768")], PrimitiveType::Short);
        assert_eq!(shorts.as_primitive::<Int16Type>().values(), &[-32768]);
        let e = error(&[Some("128")], PrimitiveType::Byte);
        assert!(e.contains("value `128` is not a valid byte"), "{e}");
        let e = error(&[Some("1.5")], PrimitiveType::Integer);
        assert!(e.contains("value `1.5` is not a valid integer"), "{e}");

        let doubles = convert(
            &[
                Some("1.5"),
                Some("NaN"),
                Some("Infinity"),
                Some("-Infinity"),
                Some("1e300"),
            ],
            PrimitiveType::Double,
        );
        let doubles = doubles.as_primitive::<Float64Type>();
        assert_eq!(doubles.value(0), 1.5);
        assert!(doubles.value(1).is_nan());
        assert_eq!(doubles.value(2), f64::INFINITY);
        assert_eq!(doubles.value(3), f64::NEG_INFINITY);
        assert_eq!(doubles.value(4), 1e300);
        let floats = convert(&[Some("0.1"), Some("-Infinity")], PrimitiveType::Float);
        let floats = floats.as_primitive::<Float32Type>();
        assert_eq!(floats.value(0), 0.1f32);
        assert_eq!(floats.value(1), f32::NEG_INFINITY);
        assert!(error(&[Some("abc")], PrimitiveType::Double).contains("not a valid double"));
    }

    #[test]
    fn decimals_rescale_exactly() {
        let ty = PrimitiveType::Decimal {
            precision: 5,
            scale: 2,
        };
        let array = convert(
            &[
                Some("1.5"),
                Some("1.50"),
                Some("1.500"),
                Some("-999.99"),
                Some("7"),
                Some("1E+2"),
                Some(".5"),
                Some("+0.01"),
                Some("12.5e-1"),
            ],
            ty,
        );
        let array = array.as_primitive::<arrow_array::types::Decimal128Type>();
        assert_eq!(array.precision(), 5);
        assert_eq!(array.scale(), 2);
        assert_eq!(
            array.values(),
            &[150, 150, 150, -99999, 700, 10000, 50, 1, 125]
        );
        let e = error(&[Some("1.505")], ty);
        assert!(
            e.contains("value `1.505` is not a valid decimal(5,2): has more fractional digits"),
            "{e}"
        );
        let e = error(&[Some("1000")], ty);
        assert!(e.contains("does not fit decimal(5,2)"), "{e}");
        assert!(error(&[Some("1.2.3")], ty).contains("not a decimal number"));
        assert!(error(&[Some("-")], ty).contains("not a decimal number"));

        let wide = PrimitiveType::Decimal {
            precision: 38,
            scale: 0,
        };
        let max = "99999999999999999999999999999999999999";
        let array = convert(&[Some(max)], wide);
        assert_eq!(
            array
                .as_primitive::<arrow_array::types::Decimal128Type>()
                .value(0),
            max.parse::<i128>().unwrap()
        );
        assert!(error(&[Some("1E+38")], wide).contains("does not fit"));
        let big_scale = PrimitiveType::Decimal {
            precision: 38,
            scale: 37,
        };
        let array = convert(&[Some("0.1")], big_scale);
        assert_eq!(
            array
                .as_primitive::<arrow_array::types::Decimal128Type>()
                .value(0),
            10i128.pow(36)
        );
    }

    #[test]
    fn dates() {
        let dates = convert(
            &[
                Some("2021-09-08"),
                Some("1969-12-31"),
                Some("1970-1-2"),
                Some("2021-09-08 00:00:00"),
            ],
            PrimitiveType::Date,
        );
        assert_eq!(
            dates.as_primitive::<Date32Type>().values(),
            &[18878, -1, 1, 18878]
        );
        let e = error(&[Some("2021-02-30")], PrimitiveType::Date);
        assert!(
            e.contains("value `2021-02-30` is not a valid date: expected yyyy-MM-dd"),
            "{e}"
        );
        assert!(error(&[Some("20210908")], PrimitiveType::Date).contains("not a valid date"));
    }

    #[test]
    fn timestamps_in_utc_and_with_zones() {
        let utc_values = timestamps(
            &[
                "1970-01-01 00:00:00",
                "1970-01-01 00:00:00.123456",
                "1970-01-01T00:00:00.123456Z",
                "1970-01-01 00:00:01.5",
                "1970-01-01 00:00:00.123456789",
                "1970-01-01",
                "1970-01-01 01:00:00+01:00",
                "1970-01-01T00:00:00.000000-08:00",
                "1970-01-01 00:00",
                "1970-01-01 08:00:00 America/Los_Angeles",
            ],
            PrimitiveType::Timestamp,
            &utc(),
        );
        assert_eq!(
            utc_values,
            vec![
                0,
                123456,
                123456,
                1_500_000,
                123456,
                0,
                0,
                8 * 3600 * SECOND,
                0,
                16 * 3600 * SECOND,
            ]
        );
        let array = convert(&[Some("1970-01-01 00:00:00")], PrimitiveType::Timestamp);
        assert_eq!(
            array.data_type(),
            &arrow_schema::DataType::Timestamp(
                arrow_schema::TimeUnit::Microsecond,
                Some("UTC".into())
            )
        );
        for bad in [
            "1970-01-01 25:00:00",
            "1970-01-01 00:00:00.",
            "1970-01-01 00:00:00 Mars/Base",
            "x",
        ] {
            let e = error(&[Some(bad)], PrimitiveType::Timestamp);
            assert!(
                e.contains(&format!("value `{bad}` is not a valid timestamp")),
                "{e}"
            );
        }
    }

    #[test]
    fn timestamps_in_a_session_zone_follow_java_rules() {
        let values = timestamps(
            &[
                "2021-09-08 11:11:11",
                "2021-01-01 00:00:00",
                // Repeated hour (PDT -> PST): the earlier offset, -07:00.
                "2021-11-07 01:30:00",
                // Skipped hour (PST -> PDT): moved forward by the gap, to 03:30 PDT.
                "2021-03-14 02:30:00",
                // A zone in the string wins over the session zone.
                "2021-09-08T11:11:11Z",
            ],
            PrimitiveType::Timestamp,
            &la(),
        );
        assert_eq!(
            values,
            vec![
                1_631_124_671 * SECOND,
                1_609_488_000 * SECOND,
                1_636_273_800 * SECOND,
                1_615_717_800 * SECOND,
                1_631_099_471 * SECOND,
            ]
        );
        let fixed = SessionTimeZone::parse("+05:30").unwrap();
        let values = timestamps(&["1970-01-01 05:30:00"], PrimitiveType::Timestamp, &fixed);
        assert_eq!(values, vec![0]);
    }

    #[test]
    fn timestamp_ntz_ignores_zones() {
        let values = timestamps(
            &[
                "2021-09-08 11:11:11",
                "2021-09-08T11:11:11.000001Z",
                "2021-09-08 11:11:11+05:00",
            ],
            PrimitiveType::TimestampNtz,
            &la(),
        );
        assert_eq!(
            values,
            vec![
                1_631_099_471 * SECOND,
                1_631_099_471 * SECOND + 1,
                1_631_099_471 * SECOND
            ]
        );
        let array = convert(&[Some("2021-09-08 11:11:11")], PrimitiveType::TimestampNtz);
        assert_eq!(
            array.data_type(),
            &arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None)
        );
    }

    #[test]
    fn variant_is_not_a_partition_type() {
        let e = error(&[Some("x")], PrimitiveType::Variant);
        assert!(e.contains("partition column `col`: variant columns cannot be partition columns"));
    }

    #[test]
    fn session_time_zone_parsing() {
        let name = |s: &str| SessionTimeZone::parse(s).unwrap().to_string();
        assert_eq!(name("UTC"), "UTC");
        assert_eq!(name("Z"), "UTC");
        assert_eq!(name(" GMT "), "UTC");
        assert_eq!(name("+05:30"), "+05:30");
        assert_eq!(name("-08:00"), "-08:00");
        assert_eq!(name("+0530"), "+05:30");
        assert_eq!(name("-8"), "-08:00");
        assert_eq!(name("GMT+8"), "+08:00");
        assert_eq!(name("UTC-03:30"), "-03:30");
        assert_eq!(name("America/Los_Angeles"), "America/Los_Angeles");
        assert_eq!(name("america/los_angeles"), "America/Los_Angeles");
        assert_eq!(name("Etc/UTC"), "Etc/UTC");
        assert_eq!(name("PST"), "America/Los_Angeles");
        assert_eq!(name("JST"), "Asia/Tokyo");
        assert_eq!(name("EST"), "-05:00");
        assert_eq!(SessionTimeZone::default(), utc());
        assert_eq!(
            "Asia/Tokyo".parse::<SessionTimeZone>().unwrap().to_string(),
            "Asia/Tokyo"
        );
        for bad in ["Mars/Base", "+19:00", "+5:3x", "", "UTC+"] {
            let e = SessionTimeZone::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("unknown session time zone `{bad}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn path_escaping_matches_spark() {
        assert_eq!(escape_partition_path_value("a:b"), "a%3Ab");
        assert_eq!(escape_partition_path_value("a b"), "a b");
        assert_eq!(escape_partition_path_value("100%"), "100%25");
        assert_eq!(
            escape_partition_path_value("2021-09-08 11:11:11"),
            "2021-09-08 11%3A11%3A11"
        );
        assert_eq!(
            escape_partition_path_value("\"#%'*/:=?\\\u{7f}{[]}^\u{1}\u{1f}"),
            "%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%7D%5E%01%1F"
        );
        assert_eq!(escape_partition_path_value("é€ ok.-_"), "é€ ok.-_");
        for value in ["a:b/c=d", "%%41", "plain", "\u{1}x\u{7f}", "é:€"] {
            let escaped = escape_partition_path_value(value);
            assert_eq!(unescape_partition_path_value(&escaped), value);
        }
        assert_eq!(unescape_partition_path_value("a%3Ab"), "a:b");
        assert_eq!(unescape_partition_path_value("a%3ab"), "a:b");
        assert_eq!(unescape_partition_path_value("100%"), "100%");
        assert_eq!(unescape_partition_path_value("%zz%4"), "%zz%4");
        assert_eq!(unescape_partition_path_value("%E9"), "é");
    }

    /// The golden table `data-reader-partition-values` was written in America/Los_Angeles:
    /// its partition strings, read in that zone, give the values of its expected rows.
    #[test]
    fn golden_partition_values_match_expected_rows() {
        let Some(table) = golden_table("data-reader-partition-values") else {
            return;
        };
        let actions = commit_actions(&table.join("delta"));
        let metadata = actions.iter().find_map(|a| a.get("metaData")).unwrap();
        let schema = parse_schema(metadata["schemaString"].as_str().unwrap()).unwrap();
        let partition_columns: Vec<String> =
            serde_json::from_value(metadata["partitionColumns"].clone()).unwrap();
        let adds: Vec<HashMap<String, Option<String>>> = actions
            .iter()
            .filter_map(|a| a.get("add"))
            .map(|add| serde_json::from_value(add["partitionValues"].clone()).unwrap())
            .collect();
        assert_eq!(adds.len(), 3);

        let mut converted = HashMap::new();
        for field in schema.partition_schema(&partition_columns).unwrap().fields {
            let values: Vec<Option<&str>> =
                adds.iter().map(|add| add[&field.name].as_deref()).collect();
            let ty = field.data_type.as_primitive().unwrap();
            let array = partition_values_to_arrow(&values, ty, &field.name, &la()).unwrap();
            converted.insert(field.name.clone(), array);
        }

        // By hand: `2021-09-08 11:11:11` in Los Angeles (PDT, -07:00) is 18:11:11 UTC.
        let ts = converted["as_timestamp"].as_primitive::<TimestampMicrosecondType>();
        let as_int = converted["as_int"].as_primitive::<Int32Type>();
        for row in 0..3 {
            if as_int.is_valid(row) {
                assert_eq!(ts.value(row), 1_631_124_671 * SECOND);
            } else {
                assert!(ts.is_null(row));
            }
        }
        let dates = converted["as_date"].as_primitive::<Date32Type>();
        assert_eq!(dates.value(0), 18878);

        let expected = read_expected(&table.join("expected"));
        let expected_int = arrow::compute::cast(
            expected.column_by_name("as_int").unwrap(),
            &arrow_schema::DataType::Int32,
        )
        .unwrap();
        let expected_int = expected_int.as_primitive::<Int32Type>();
        let mut compared = 0;
        for row in 0..adds.len() {
            let key = as_int.is_valid(row).then(|| as_int.value(row));
            let expected_row = (0..expected.num_rows())
                .find(|&r| expected_int.is_valid(r).then(|| expected_int.value(r)) == key)
                .unwrap();
            for column in &partition_columns {
                let ours = converted[column].slice(row, 1);
                let theirs = expected.column_by_name(column).unwrap();
                let theirs = arrow::compute::cast(theirs, ours.data_type()).unwrap();
                assert_eq!(
                    &*ours,
                    &*theirs.slice(expected_row, 1),
                    "column {column}, row {row}"
                );
                compared += 1;
            }
        }
        assert_eq!(compared, 3 * partition_columns.len());
    }

    fn read_expected(dir: &std::path::Path) -> arrow_array::RecordBatch {
        let mut batches = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
            .collect();
        files.sort();
        for file in files {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                std::fs::File::open(file).unwrap(),
            )
            .unwrap()
            .build()
            .unwrap();
            for batch in reader {
                batches.push(batch.unwrap());
            }
        }
        arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
    }
}
