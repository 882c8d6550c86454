//! A single-pass decoder of JSON file statistics (spec "Per-file Statistics") straight into
//! the typed Arrow columns of the stats struct: one walk over each string, every value
//! appended to the builder of its leaf as it is read, keys outside the struct skipped
//! without being decoded.
//!
//! It reads the text Delta writers produce: objects of numbers, strings (standard escapes,
//! surrogate pairs), booleans and nulls, dates as `yyyy-MM-dd`, timestamps as ISO 8601 text
//! (`2021-01-01T00:00:00.000Z`, an offset, or no zone for `timestamp_ntz`), decimals with or
//! without an exponent, `"NaN"` and `"Infinity"` for floating point bounds. Whatever it is not
//! sure of (a lone surrogate, a number that would need rounding, a string where a number
//! belongs, a duplicate key, text that is not JSON), it gives up on: the
//! caller ([`super::stats::parse_stats`]) then decodes the strings with the general JSON
//! decoder. Wherever it answers, its answer is the general decoder's, value for value (a
//! property test checks).

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder, Float64Builder,
    Int16Builder, Int32Builder, Int64Builder, Int8Builder, NullBufferBuilder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{Array, ArrayRef, StringArray, StructArray};
use arrow_schema::{DataType, Fields, TimeUnit};
use chrono::NaiveDate;

use crate::util::json_cursor::Cursor;

/// Days from 0001-01-01 (chrono's day one) to 1970-01-01.
const UNIX_EPOCH_FROM_CE: i32 = 719_163;

/// The columns of the stats struct `fields` decoded from `json` (rows where `present` is
/// false decode as absent: every column null), or `None` when a field's type is one this
/// decoder does not build or a string is one it gives up on.
///
/// With `escaped`, each string of `json` is the text between the quotes of the JSON string
/// token that holds the statistics in a commit's line, escapes not decoded
/// ([`Cursor::in_string_body`]); the decoder then also gives up on every string whose held
/// text needs an escape other than `\"` (a string value with a quote or a backslash, an escaped
/// character, whitespace other than spaces).
pub(crate) fn decode_stats(
    json: &StringArray,
    present: &[bool],
    fields: &Fields,
    escaped: bool,
) -> Option<Vec<ArrayRef>> {
    let mut root = StructColumn::new(fields, json.len())?;
    let mut scratch = String::new();
    let cursor = match escaped {
        true => Cursor::in_string_body,
        false => Cursor::new,
    };
    for (row, &present) in present.iter().enumerate() {
        if present {
            let mut text = cursor(json.value(row));
            root.object(&mut text, &mut scratch, 0)?;
            text.end()?;
        } else {
            root.append_null();
        }
    }
    root.finish_children()
}

/// The builders of one struct column and its children, filled row by row.
struct StructColumn {
    fields: Fields,
    children: Vec<Column>,
    validity: NullBufferBuilder,
    /// Rows appended so far; a child is filled for the current row when its length is past it.
    len: usize,
    /// Where the next key is looked for first: writers put keys in schema order.
    next_key: usize,
}

enum Column {
    Struct(StructColumn),
    Int8(Int8Builder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Boolean(BooleanBuilder),
    Utf8(StringBuilder),
    Date32(Date32Builder),
    /// Microseconds since the epoch; whether the text must carry a zone (a zone on the type).
    Timestamp(TimestampMicrosecondBuilder, Option<Arc<str>>),
    Decimal128(Decimal128Builder, u8, i8),
}

impl StructColumn {
    fn new(fields: &Fields, capacity: usize) -> Option<StructColumn> {
        let children = fields
            .iter()
            .map(|field| Column::new(field.data_type(), capacity))
            .collect::<Option<Vec<_>>>()?;
        Some(StructColumn {
            fields: fields.clone(),
            children,
            validity: NullBufferBuilder::new(capacity),
            len: 0,
            next_key: 0,
        })
    }

    /// Reads one object into the current row; `None` to give up.
    fn object(&mut self, text: &mut Cursor<'_>, scratch: &mut String, depth: usize) -> Option<()> {
        text.expect(b'{')?;
        if !text.next_is(b'}') {
            loop {
                let key = text.string(scratch)?;
                text.expect(b':')?;
                let row = self.len;
                match self.child_named(key.as_bytes()) {
                    Some(child) if child.len() == row => child.value(text, scratch, depth + 1)?,
                    Some(_) => return None,
                    None => text.skip_value(depth + 1)?,
                }
                if text.next_is(b'}') {
                    break;
                }
                text.expect(b',')?;
            }
        }
        for child in &mut self.children {
            if child.len() == self.len {
                child.append_null();
            }
        }
        self.validity.append_non_null();
        self.len += 1;
        Some(())
    }

    fn child_named(&mut self, key: &[u8]) -> Option<&mut Column> {
        let names = || self.fields.iter().map(|field| field.name().as_bytes());
        let at = match names().nth(self.next_key) {
            Some(name) if name == key => self.next_key,
            _ => names().position(|name| name == key)?,
        };
        self.next_key = at + 1;
        self.children.get_mut(at)
    }

    fn append_null(&mut self) {
        for child in &mut self.children {
            child.append_null();
        }
        self.validity.append_null();
        self.len += 1;
    }

    fn finish_children(&mut self) -> Option<Vec<ArrayRef>> {
        self.children.iter_mut().map(Column::finish).collect()
    }

    fn finish(&mut self) -> Option<ArrayRef> {
        let children = self.finish_children()?;
        let nulls = self.validity.finish();
        let array = StructArray::try_new(self.fields.clone(), children, nulls).ok()?;
        Some(Arc::new(array))
    }
}

impl Column {
    /// The builder for `data_type`; `None` for a type this decoder does not build.
    fn new(data_type: &DataType, capacity: usize) -> Option<Column> {
        Some(match data_type {
            DataType::Struct(fields) => Column::Struct(StructColumn::new(fields, capacity)?),
            DataType::Int8 => Column::Int8(Int8Builder::with_capacity(capacity)),
            DataType::Int16 => Column::Int16(Int16Builder::with_capacity(capacity)),
            DataType::Int32 => Column::Int32(Int32Builder::with_capacity(capacity)),
            DataType::Int64 => Column::Int64(Int64Builder::with_capacity(capacity)),
            DataType::Float32 => Column::Float32(Float32Builder::with_capacity(capacity)),
            DataType::Float64 => Column::Float64(Float64Builder::with_capacity(capacity)),
            DataType::Boolean => Column::Boolean(BooleanBuilder::with_capacity(capacity)),
            DataType::Utf8 => Column::Utf8(StringBuilder::with_capacity(capacity, capacity * 8)),
            DataType::Date32 => Column::Date32(Date32Builder::with_capacity(capacity)),
            DataType::Timestamp(TimeUnit::Microsecond, zone) => Column::Timestamp(
                TimestampMicrosecondBuilder::with_capacity(capacity),
                zone.clone(),
            ),
            DataType::Decimal128(precision, scale) if (0..=38).contains(scale) => {
                Column::Decimal128(
                    Decimal128Builder::with_capacity(capacity),
                    *precision,
                    *scale,
                )
            }
            _ => return None,
        })
    }

    fn len(&self) -> usize {
        match self {
            Column::Struct(column) => column.len,
            Column::Int8(builder) => builder.len(),
            Column::Int16(builder) => builder.len(),
            Column::Int32(builder) => builder.len(),
            Column::Int64(builder) => builder.len(),
            Column::Float32(builder) => builder.len(),
            Column::Float64(builder) => builder.len(),
            Column::Boolean(builder) => builder.len(),
            Column::Utf8(builder) => builder.len(),
            Column::Date32(builder) => builder.len(),
            Column::Timestamp(builder, _) => builder.len(),
            Column::Decimal128(builder, ..) => builder.len(),
        }
    }

    fn append_null(&mut self) {
        match self {
            Column::Struct(column) => column.append_null(),
            Column::Int8(builder) => builder.append_null(),
            Column::Int16(builder) => builder.append_null(),
            Column::Int32(builder) => builder.append_null(),
            Column::Int64(builder) => builder.append_null(),
            Column::Float32(builder) => builder.append_null(),
            Column::Float64(builder) => builder.append_null(),
            Column::Boolean(builder) => builder.append_null(),
            Column::Utf8(builder) => builder.append_null(),
            Column::Date32(builder) => builder.append_null(),
            Column::Timestamp(builder, _) => builder.append_null(),
            Column::Decimal128(builder, ..) => builder.append_null(),
        }
    }

    /// Reads one value (the text after a key's colon) into the current row; `None` to give
    /// up.
    fn value(&mut self, text: &mut Cursor<'_>, scratch: &mut String, depth: usize) -> Option<()> {
        if text.null() {
            self.append_null();
            return Some(());
        }
        match self {
            Column::Struct(column) => column.object(text, scratch, depth)?,
            Column::Int8(builder) => builder.append_value(text.integer()?.try_into().ok()?),
            Column::Int16(builder) => builder.append_value(text.integer()?.try_into().ok()?),
            Column::Int32(builder) => builder.append_value(text.integer()?.try_into().ok()?),
            Column::Int64(builder) => builder.append_value(text.integer()?),
            Column::Float32(builder) => builder.append_value(float(text, scratch)?),
            Column::Float64(builder) => builder.append_value(float(text, scratch)?),
            Column::Boolean(builder) => builder.append_value(text.boolean()?),
            Column::Utf8(builder) => builder.append_value(text.string(scratch)?),
            Column::Date32(builder) => {
                builder.append_value(date_days(text.string(scratch)?.as_bytes())?);
            }
            Column::Timestamp(builder, zone) => {
                let text = text.string(scratch)?.as_bytes();
                builder.append_value(timestamp_micros(text, zone.is_some())?);
            }
            Column::Decimal128(builder, precision, scale) => {
                builder.append_value(decimal(text.number()?, *precision, *scale)?);
            }
        }
        Some(())
    }

    /// The column built; `None` when arrow refuses it (a decimal type it does not take).
    fn finish(&mut self) -> Option<ArrayRef> {
        Some(match self {
            Column::Struct(column) => column.finish()?,
            Column::Int8(builder) => Arc::new(builder.finish()),
            Column::Int16(builder) => Arc::new(builder.finish()),
            Column::Int32(builder) => Arc::new(builder.finish()),
            Column::Int64(builder) => Arc::new(builder.finish()),
            Column::Float32(builder) => Arc::new(builder.finish()),
            Column::Float64(builder) => Arc::new(builder.finish()),
            Column::Boolean(builder) => Arc::new(builder.finish()),
            Column::Utf8(builder) => Arc::new(builder.finish()),
            Column::Date32(builder) => Arc::new(builder.finish()),
            Column::Timestamp(builder, zone) => {
                Arc::new(builder.finish().with_timezone_opt(zone.clone()))
            }
            Column::Decimal128(builder, precision, scale) => Arc::new(
                builder
                    .finish()
                    .with_precision_and_scale(*precision, *scale)
                    .ok()?,
            ),
        })
    }
}

/// The days since the epoch of `yyyy-MM-dd` text; `None` for any other text or a day that does
/// not exist.
fn date_days(text: &[u8]) -> Option<i32> {
    let [y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1] = *text else {
        return None;
    };
    let year = digits(&[y0, y1, y2, y3])?;
    let date = NaiveDate::from_ymd_opt(year as i32, digits(&[m0, m1])?, digits(&[d0, d1])?)?;
    Some(chrono::Datelike::num_days_from_ce(&date) - UNIX_EPOCH_FROM_CE)
}

/// The microseconds since the epoch of ISO 8601 text `yyyy-MM-ddTHH:mm:ss[.f]` (up to six
/// fraction digits) followed by `Z` or `+HH:mm`/`-HH:mm` when `zoned`, by nothing otherwise
/// (`timestamp_ntz`: the wall clock as if in UTC); `None` for any other text.
fn timestamp_micros(text: &[u8], zoned: bool) -> Option<i64> {
    if text.len() < 19 || text[10] != b'T' || text[13] != b':' || text[16] != b':' {
        return None;
    }
    let days = i64::from(date_days(&text[..10])?);
    let hour = digits(&text[11..13])?;
    let minute = digits(&text[14..16])?;
    let second = digits(&text[17..19])?;
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &text[19..];
    let mut micros = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let count = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if count == 0 || count > 6 {
            return None;
        }
        micros = digits(&fraction[..count])? * 10u32.pow(6 - count as u32);
        rest = &fraction[count..];
    }
    let offset_seconds = match (zoned, rest) {
        (false, []) => 0,
        (true, b"Z") => 0,
        (true, [sign @ (b'+' | b'-'), h0, h1, b':', m0, m1]) => {
            let (hours, minutes) = (digits(&[*h0, *h1])?, digits(&[*m0, *m1])?);
            if hours > 17 || minutes > 59 {
                return None;
            }
            let seconds = i64::from(hours * 3600 + minutes * 60);
            if *sign == b'-' {
                -seconds
            } else {
                seconds
            }
        }
        _ => return None,
    };
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_seconds;
    Some(seconds * 1_000_000 + i64::from(micros))
}

/// The value of ASCII decimal digits (at most nine); `None` if any byte is not a digit.
fn digits(text: &[u8]) -> Option<u32> {
    text.iter().try_fold(0u32, |value, byte| {
        byte.is_ascii_digit()
            .then(|| value * 10 + u32::from(byte - b'0'))
    })
}

/// The unscaled value of the JSON number `text` as a decimal of `scale` digits after the
/// point (Delta on Spark writes small values with an exponent: `-3.1661E-8`); `None` when it
/// has more digits after the point than `scale` (it would need rounding) or more digits than
/// `precision`.
fn decimal(text: &str, precision: u8, scale: i8) -> Option<i128> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(unsigned) => (true, unsigned),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let after_point = i32::try_from(fraction.len()).ok()?.checked_sub(exponent)?;
    let shift = usize::try_from(i32::from(scale).checked_sub(after_point)?).ok()?;
    let digits = || whole.bytes().chain(fraction.bytes());
    let significant = digits().skip_while(|&b| b == b'0').count() + shift;
    if significant > usize::from(precision)
        || significant > 38
        || !digits().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut value: i128 = 0;
    for byte in digits() {
        value = value * 10 + i128::from(byte - b'0');
    }
    value *= 10i128.pow(u32::try_from(shift).ok()?);
    Some(if negative { -value } else { value })
}

/// A JSON number, or the strings `"NaN"`, `"Infinity"` and `"-Infinity"` that Delta writers
/// use for the bounds JSON numbers cannot hold.
fn float<F: std::str::FromStr + Special>(text: &mut Cursor<'_>, scratch: &mut String) -> Option<F> {
    if text.at_string() {
        return match text.string(scratch)? {
            "NaN" => Some(F::NAN),
            "Infinity" => Some(F::INFINITY),
            "-Infinity" => Some(F::NEG_INFINITY),
            _ => None,
        };
    }
    text.number()?.parse().ok()
}

/// The floating point values JSON numbers cannot hold.
trait Special {
    const NAN: Self;
    const INFINITY: Self;
    const NEG_INFINITY: Self;
}

impl Special for f32 {
    const NAN: f32 = f32::NAN;
    const INFINITY: f32 = f32::INFINITY;
    const NEG_INFINITY: f32 = f32::NEG_INFINITY;
}

impl Special for f64 {
    const NAN: f64 = f64::NAN;
    const INFINITY: f64 = f64::INFINITY;
    const NEG_INFINITY: f64 = f64::NEG_INFINITY;
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, StringArray, StructArray};
    use arrow_schema::{DataType, Field, Fields, TimeUnit};
    use proptest::prelude::*;
    use serde_json::Value;

    use super::decode_stats;
    use crate::schema::parse_schema;
    use crate::table_config::stats::{decode_with_arrow_json, present_rows, stats_schema};

    fn leaves() -> Vec<Field> {
        let utc = Some("UTC".into());
        vec![
            Field::new("i8", DataType::Int8, true),
            Field::new("i16", DataType::Int16, true),
            Field::new("i32", DataType::Int32, true),
            Field::new("i64", DataType::Int64, true),
            Field::new("f32", DataType::Float32, true),
            Field::new("f64", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("d", DataType::Date32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, utc), true),
            Field::new(
                "ntz",
                DataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
            Field::new("dec", DataType::Decimal128(10, 2), true),
            Field::new("dec0", DataType::Decimal128(38, 0), true),
            Field::new(
                "nested",
                DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int32, true)])),
                true,
            ),
        ]
    }

    /// A stats struct with a leaf of every type the typed decoder builds.
    fn stats_fields() -> Fields {
        let bounds = DataType::Struct(Fields::from(leaves()));
        let counts = Fields::from(
            leaves()
                .into_iter()
                .map(|field| match field.data_type() {
                    DataType::Struct(_) => field,
                    _ => field.with_data_type(DataType::Int64),
                })
                .collect::<Vec<_>>(),
        );
        Fields::from(vec![
            Field::new("numRecords", DataType::Int64, true),
            Field::new("minValues", bounds.clone(), true),
            Field::new("maxValues", bounds, true),
            Field::new("nullCount", DataType::Struct(counts), true),
            Field::new("tightBounds", DataType::Boolean, true),
        ])
    }

    /// The typed decoder's answer for `json`, checked against arrow-json's; `None` when it
    /// gave up.
    fn typed_matches_general(json: &StringArray, fields: &Fields) -> Option<StructArray> {
        let present = present_rows(json);
        let general = decode_with_arrow_json(json, present.clone(), fields).unwrap();
        let columns = decode_stats(json, &present, fields, false)?;
        let typed =
            StructArray::try_new(fields.clone(), columns, Some(present.clone().into())).unwrap();
        assert_eq!(
            typed, general,
            "typed and general decoders differ on {json:?}"
        );
        assert_escaped_decodes_alike(json, &present, fields, &typed);
        Some(typed)
    }

    /// Decoding `json` from the bodies of the JSON string tokens that would hold it (escapes
    /// not decoded) gives `typed`, and gives up only where a string needs an escape other than
    /// `\"`.
    fn assert_escaped_decodes_alike(
        json: &StringArray,
        present: &[bool],
        fields: &Fields,
        typed: &StructArray,
    ) {
        let bodies: StringArray = json
            .iter()
            .map(|text| {
                text.map(|text| {
                    let token = serde_json::to_string(text).unwrap();
                    token[1..token.len() - 1].to_string()
                })
            })
            .collect();
        let quotes_only = bodies
            .iter()
            .flatten()
            .all(|body| !body.replace("\\\"", "").contains('\\'));
        match decode_stats(&bodies, present, fields, true) {
            Some(columns) => {
                let escaped =
                    StructArray::try_new(fields.clone(), columns, Some(present.to_vec().into()))
                        .unwrap();
                assert_eq!(
                    &escaped, typed,
                    "escaped bodies decode otherwise: {bodies:?}"
                );
            }
            None => assert!(!quotes_only, "gave up on escaped bodies: {bodies:?}"),
        }
    }

    #[test]
    fn delta_writers_stats_decode_typed() {
        let json = StringArray::from(vec![
            Some(
                r#"{"numRecords":3,"minValues":{"i8":-128,"i16":-3,"i32":1,"i64":-9223372036854775808,"f32":1.5,"f64":-0.0,"s":"a\"b\\c\/d\n\u00e9\ud83d\ude00","d":"1970-01-01","ts":"2021-01-01T00:00:00.000Z","ntz":"2021-01-01T12:30:45.123456","dec":-12345678.90,"dec0":12345678901234567890123456789012345678,"nested":{"x":5}},"maxValues":{"f32":"Infinity","f64":"NaN","ts":"1969-12-31T23:59:59.999-08:00","d":"0001-01-01","dec":1.2E-1,"dec0":-1.5E+3},"nullCount":{"i8":0,"nested":{"x":1},"s":3},"tightBounds":true}"#,
            ),
            None,
            Some(""),
            Some(
                r#" { "numRecords" : 0 , "unknown" : [1, {"a": [true, false, null]}, "x", -1.5e3], "minValues" : { } } "#,
            ),
            Some(
                r#"{"numRecords":1,"minValues":null,"maxValues":{"f64":"-Infinity","f32":3.4028235e38,"nested":null},"tightBounds":false}"#,
            ),
        ]);
        let typed = typed_matches_general(&json, &stats_fields());
        assert!(typed.is_some(), "the typed decoder gave up");
    }

    #[test]
    fn shapes_it_is_not_sure_of_go_to_the_general_decoder() {
        let fields = stats_fields();
        for text in [
            r#"{"numRecords":"3"}"#,
            r#"{"numRecords":3.0}"#,
            r#"{"numRecords":1e2}"#,
            r#"{"numRecords":01}"#,
            r#"{"numRecords":1,"numRecords":2}"#,
            r#"{"minValues":{"i8":128}}"#,
            r#"{"minValues":{"f64":"nan"}}"#,
            r#"{"minValues":{"s":5}}"#,
            r#"{"minValues":{"s":"\ud800"}}"#,
            "{\"minValues\":{\"s\":\"a\u{1}\"}}",
            r#"{"minValues":{"d":"2021-1-01"}}"#,
            r#"{"minValues":{"d":"2021-02-30"}}"#,
            r#"{"minValues":{"ts":"2021-01-01T00:00:00.0000001Z"}}"#,
            r#"{"minValues":{"ts":"2021-01-01 00:00:00Z"}}"#,
            r#"{"minValues":{"ts":"2021-01-01T00:00:00"}}"#,
            r#"{"minValues":{"ntz":"2021-01-01T00:00:00Z"}}"#,
            r#"{"minValues":{"dec":1.234}}"#,
            r#"{"minValues":{"dec":1.5e-2}}"#,
            r#"{"minValues":{"dec":123456789.0}}"#,
            r#"{"minValues":5}"#,
            r#"{"tightBounds":1}"#,
            r#"{"numRecords":1} x"#,
            r#"{"numRecords":1"#,
            r#"[1]"#,
            r#"{"a":tru}"#,
        ] {
            let json = StringArray::from(vec![text]);
            assert!(
                typed_matches_general(&json, &fields).is_none(),
                "the typed decoder took {text}"
            );
        }
    }

    /// JSON text for a leaf of `data_type`: mostly what a Delta writer writes, sometimes text
    /// near the edges of what the typed decoder takes.
    fn leaf_text(data_type: &DataType) -> BoxedStrategy<String> {
        let any_string = prop_oneof![
            "[a-zA-Z0-9 _]{0,12}".prop_map(|s| Value::from(s).to_string()),
            any::<String>().prop_map(|s| Value::from(s).to_string()),
            Just(r#""a\u00e9\ud83d\ude00\/""#.to_string()),
        ];
        let digits = |n: usize| proptest::string::string_regex(&format!("[0-9]{{1,{n}}}")).unwrap();
        let value = match data_type {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => prop_oneof![
                4 => any::<i64>().prop_map(|v| v.to_string()),
                4 => (-200i64..200).prop_map(|v| v.to_string()),
                1 => prop_oneof![Just("-0"), Just("1.0"), Just("2e1"), Just("\"7\"")]
                    .prop_map(str::to_string),
            ]
            .boxed(),
            DataType::Float32 | DataType::Float64 => prop_oneof![
                4 => any::<f64>().prop_map(|v| format!("{v:?}")),
                2 => any::<f32>().prop_map(|v| format!("{v:?}")),
                2 => any::<f64>().prop_map(|v| format!("{v:e}")),
                1 => prop_oneof![
                    Just("\"NaN\""), Just("\"Infinity\""), Just("\"-Infinity\""), Just("1e400"),
                    Just("-1e-400"), Just("5e-324"), Just("3.4028236e38"), Just("-0"), Just("7"),
                ]
                .prop_map(str::to_string),
            ]
            .boxed(),
            DataType::Utf8 => any_string.boxed(),
            DataType::Date32 => prop_oneof![
                (1i32..=9999, 1u32..=12, 1u32..=31)
                    .prop_map(|(y, m, d)| format!("\"{y:04}-{m:02}-{d:02}\"")),
                Just("\"0000-01-01\"".to_string()),
            ]
            .boxed(),
            DataType::Timestamp(_, zone) => {
                let zones: BoxedStrategy<String> = if zone.is_some() {
                    prop_oneof![
                        Just("Z".to_string()),
                        (0u32..18, 0u32..60, any::<bool>()).prop_map(|(h, m, minus)| {
                            format!("{}{h:02}:{m:02}", if minus { '-' } else { '+' })
                        }),
                    ]
                    .boxed()
                } else {
                    Just(String::new()).boxed()
                };
                (
                    1i32..=9999,
                    1u32..=12,
                    1u32..=28,
                    0u32..24,
                    0u32..60,
                    0u32..60,
                    prop_oneof![
                        Just(String::new()),
                        "[0-9]{1,6}".prop_map(|f| format!(".{f}"))
                    ],
                    zones,
                )
                    .prop_map(|(y, mo, d, h, mi, s, fraction, zone)| {
                        format!("\"{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{fraction}{zone}\"")
                    })
                    .boxed()
            }
            DataType::Decimal128(precision, scale) => {
                let whole = digits(usize::from(*precision) - usize::try_from(*scale).unwrap());
                let fraction = digits(usize::try_from(*scale).unwrap().max(1));
                let exponent = prop::option::weighted(0.3, (-4i32..4, any::<bool>()));
                (any::<bool>(), whole, prop::option::of(fraction), exponent)
                    .prop_map(|(minus, whole, fraction, exponent)| {
                        let whole = whole.trim_start_matches('0');
                        let whole = if whole.is_empty() { "0" } else { whole };
                        let sign = if minus { "-" } else { "" };
                        let exponent = match exponent {
                            Some((e, true)) => format!("E{e:+}"),
                            Some((e, false)) => format!("e{e}"),
                            None => String::new(),
                        };
                        match fraction {
                            Some(fraction) => format!("{sign}{whole}.{fraction}{exponent}"),
                            None => format!("{sign}{whole}{exponent}"),
                        }
                    })
                    .boxed()
            }
            DataType::Boolean => prop_oneof![Just("true"), Just("false")]
                .prop_map(str::to_string)
                .boxed(),
            _ => Just("null".to_string()).boxed(),
        };
        prop_oneof![8 => value, 1 => Just("null".to_string())].boxed()
    }

    /// A JSON object for `fields`: each field present or absent, in order or shuffled, with an
    /// unknown key now and then, and whitespace between the tokens.
    fn object_text(fields: &Fields) -> BoxedStrategy<String> {
        let members: Vec<BoxedStrategy<Option<String>>> = fields
            .iter()
            .map(|field| {
                let name = Value::from(field.name().as_str()).to_string();
                let value = match field.data_type() {
                    DataType::Struct(children) => {
                        prop_oneof![4 => object_text(children), 1 => Just("null".to_string())]
                            .boxed()
                    }
                    leaf => leaf_text(leaf),
                };
                prop::option::weighted(0.8, value.prop_map(move |value| format!("{name}:{value}")))
                    .boxed()
            })
            .collect();
        let unknown = prop::option::weighted(
            0.2,
            prop_oneof![
                Just(r#""stats_extra":{"a":[1,2.5,"x",null,true]}"#.to_string()),
                Just(r#""zzz":"\u0041""#.to_string()),
            ],
        );
        (
            members,
            unknown,
            any::<bool>(),
            prop_oneof![Just(""), Just(" "), Just("\n ")],
        )
            .prop_map(|(members, unknown, reverse, gap)| {
                let mut members: Vec<String> = members.into_iter().flatten().collect();
                members.extend(unknown);
                if reverse {
                    members.reverse();
                }
                format!("{{{gap}{}{gap}}}", members.join(&format!("{gap},{gap}")))
            })
            .boxed()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn typed_decoder_matches_arrow_json(
            rows in prop::collection::vec(prop::option::weighted(0.9, object_text(&stats_fields())), 1..6)
        ) {
            let json = StringArray::from(rows);
            typed_matches_general(&json, &stats_fields());
        }

        #[test]
        fn typed_decoder_matches_arrow_json_on_cut_text(
            text in object_text(&stats_fields()),
            cut in any::<prop::sample::Index>(),
        ) {
            let end = text.char_indices().map(|(at, _)| at).nth(cut.index(text.chars().count()));
            let json = StringArray::from(vec![&text[..end.unwrap_or(text.len())]]);
            typed_matches_general(&json, &stats_fields());
        }
    }

    /// Every golden table's JSON statistics decode typed, as arrow-json decodes them.
    #[test]
    fn golden_tables_stats_decode_typed() {
        let mut decoded = 0;
        for entry in std::fs::read_dir(crate::golden_archives()).unwrap() {
            let path = entry.unwrap().path();
            let Some(name) = path.to_str().and_then(|p| p.strip_suffix(".tar.zst")) else {
                continue;
            };
            let name = name.rsplit('/').next().unwrap();
            let Some(table) = crate::schema::tests::golden_table(name) else {
                continue;
            };
            let Some((schema, configuration, stats)) =
                latest_schema_and_stats(&table.join("delta"))
            else {
                continue;
            };
            let Ok(DataType::Struct(fields)) = stats_schema(&schema, &configuration) else {
                continue;
            };
            let json = StringArray::from(stats);
            if fields.is_empty() || json.is_empty() {
                continue;
            }
            assert!(
                typed_matches_general(&json, &fields).is_some(),
                "{name}: the typed decoder gave up"
            );
            decoded += json.len();
        }
        assert!(decoded > 200, "only {decoded} statistics decoded");
    }

    type SchemaAndStats = (
        crate::schema::StructType,
        std::collections::HashMap<String, String>,
        Vec<String>,
    );

    /// The data schema and configuration of the newest `metaData` of the commits under
    /// `table`, and the `stats` of their `add` actions; `None` for a table whose log does not
    /// give them.
    fn latest_schema_and_stats(table: &std::path::Path) -> Option<SchemaAndStats> {
        let mut commits: Vec<_> = std::fs::read_dir(table.join("_delta_log"))
            .ok()?
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        commits.sort();
        let actions: Vec<Value> = commits
            .iter()
            .flat_map(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                text.lines()
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect::<Vec<Value>>()
            })
            .collect();
        let metadata = actions.iter().rev().find_map(|a| a.get("metaData"))?;
        let schema = parse_schema(metadata["schemaString"].as_str()?).ok()?;
        let partitions: Vec<String> =
            serde_json::from_value(metadata["partitionColumns"].clone()).ok()?;
        let configuration =
            serde_json::from_value(metadata["configuration"].clone()).unwrap_or_default();
        let data = crate::schema::StructType::new(
            schema
                .fields
                .into_iter()
                .filter(|field| !partitions.contains(&field.name))
                .collect(),
        );
        let stats = actions
            .iter()
            .filter_map(|a| a.get("add")?.get("stats")?.as_str().map(str::to_string))
            .collect();
        Some((data, configuration, stats))
    }
}
