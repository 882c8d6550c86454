//! The text forms of a [`Scalar`] in each place the log or a user writes one: partition value
//! strings, statistics JSON values and SQL literals, read and written.

use std::fmt::Write;

use super::decimal::{format_decimal, parse_decimal_literal};
use super::time::{
    format_date, format_timestamp, format_timestamp_millis, format_timestamp_utc, parse_date,
    parse_timestamp, SessionTimeZone,
};
#[cfg(test)]
use super::ScalarType;
#[cfg(test)]
use super::{decimal::parse_decimal, time::parse_date_prefix, time::parse_timestamp_ntz};
use super::{invalid, Scalar};
use crate::error::Result;

/// Reads one serialised partition value of type `ty` (spec "Partition Value Serialization",
/// catalogue H-PV01..H-PV08).
///
/// `None` and the empty string are NULL for every type (for `string` too). `string` is the
/// text as is and `binary` its UTF-8 bytes; other types allow surrounding ASCII whitespace:
/// `true`/`false` (any case); integers and floats in their usual text (floats also `NaN`,
/// `Infinity`, `-Infinity`, any case); decimals as plain or exponent text, rescaled exactly to
/// the type's scale ([`parse_decimal`]); dates with any time part ignored
/// ([`parse_date_prefix`]); timestamps read in `session_tz` unless the text names a zone
/// ([`parse_timestamp`]); `timestamp_ntz` as a wall-clock time, any zone ignored
/// ([`parse_timestamp_ntz`]). The error is a short reason.
#[cfg(test)]
pub(crate) fn parse_partition_value(
    text: Option<&str>,
    ty: ScalarType,
    session_tz: &SessionTimeZone,
) -> std::result::Result<Scalar, String> {
    let Some(text) = text.filter(|text| !text.is_empty()) else {
        return Ok(Scalar::Null);
    };
    let trimmed = text.trim_ascii();
    Ok(match ty {
        ScalarType::String => Scalar::Utf8(text.to_string()),
        ScalarType::Binary => Scalar::Binary(text.as_bytes().to_vec()),
        ScalarType::Boolean => Scalar::Boolean(
            parse_boolean(trimmed).ok_or_else(|| "expected `true` or `false`".to_string())?,
        ),
        ScalarType::Byte => Scalar::Int8(parse_number(trimmed)?),
        ScalarType::Short => Scalar::Int16(parse_number(trimmed)?),
        ScalarType::Integer => Scalar::Int32(parse_number(trimmed)?),
        ScalarType::Long => Scalar::Int64(parse_number(trimmed)?),
        ScalarType::Float => Scalar::Float32(parse_number(trimmed)?),
        ScalarType::Double => Scalar::Float64(parse_number(trimmed)?),
        ScalarType::Decimal { precision, scale } => {
            let signed_scale = i8::try_from(scale).map_err(|_| "scale too large".to_string())?;
            Scalar::Decimal {
                value: parse_decimal(trimmed, precision, signed_scale)?,
                scale,
            }
        }
        ScalarType::Date => Scalar::Date(parse_date_prefix(trimmed)?),
        ScalarType::Timestamp => Scalar::Timestamp(parse_timestamp(trimmed, session_tz)?),
        ScalarType::TimestampNtz => Scalar::TimestampNtz(parse_timestamp_ntz(trimmed)?),
    })
}

/// Writes `value` as a partition value string, as Delta on Spark does (spec "Partition Value
/// Serialization"); `None` for NULL.
///
/// Booleans `true`/`false`; integers in decimal; floats in Rust's shortest round-tripping
/// form (`1.5`, `1e300`) and `NaN`, `Infinity`, `-Infinity`; decimals with exactly their
/// scale's fractional digits; dates `yyyy-MM-dd`; timestamps in ISO-8601 UTC,
/// `yyyy-MM-ddTHH:mm:ss.ffffffZ` (as Delta on Spark writes them: no time zone needed to read
/// them back); `timestamp_ntz` as `yyyy-MM-dd HH:mm:ss[.f]`, the fraction without trailing
/// zeros; strings as they are; binary as its bytes when they are UTF-8. Binary that is not
/// UTF-8 and values outside the calendar range are an [`crate::Error::InvalidArgument`].
pub(crate) fn to_partition_value(value: &Scalar) -> Result<Option<String>> {
    let out_of_range = || invalid(format!("{value} cannot be written as a partition value"));
    Ok(Some(match value {
        Scalar::Null => return Ok(None),
        Scalar::Boolean(flag) => flag.to_string(),
        Scalar::Int8(int) => int.to_string(),
        Scalar::Int16(int) => int.to_string(),
        Scalar::Int32(int) => int.to_string(),
        Scalar::Int64(int) => int.to_string(),
        Scalar::Float32(float) => float_text(f64::from(*float), format!("{float:?}")),
        Scalar::Float64(float) => float_text(*float, format!("{float:?}")),
        Scalar::Decimal { value, scale } => format_decimal(*value, *scale),
        Scalar::Utf8(text) => text.clone(),
        Scalar::Binary(bytes) => String::from_utf8(bytes.clone()).map_err(|_| out_of_range())?,
        Scalar::Date(days) => format_date(*days).ok_or_else(out_of_range)?,
        Scalar::Timestamp(micros) => format_timestamp_utc(*micros).ok_or_else(out_of_range)?,
        Scalar::TimestampNtz(micros) => format_timestamp(*micros).ok_or_else(out_of_range)?,
    }))
}

/// Reads one value of `minValues`/`maxValues` of the statistics JSON (spec "Per-file
/// Statistics"), given as its JSON text (`12`, `-1.5e3`, `"2021-01-01T00:00:00.000Z"`), as type
/// `ty`; `None` when it is not a value of that type (statistics that do not decode say
/// nothing, they never fail a read).
///
/// Numbers are JSON numbers (floats also the strings `"NaN"`, `"Infinity"`, `"-Infinity"`);
/// decimals are read exactly from the number's text; dates, timestamps and strings are JSON
/// strings, timestamps in the grammar of [`super::time`] (a zone-less `timestamp` is UTC, a
/// `timestamp_ntz` ignores a zone); `null` is [`Scalar::Null`].
#[cfg(test)]
pub(crate) fn parse_stats_value(json: &str, ty: ScalarType) -> Option<Scalar> {
    let json = json.trim();
    if json == "null" {
        return Some(Scalar::Null);
    }
    if json.starts_with('"') {
        let text: String = serde_json::from_str(json).ok()?;
        return match ty {
            ScalarType::String => Some(Scalar::Utf8(text)),
            ScalarType::Float | ScalarType::Double => {
                let float = special_float(&text)?;
                Some(match ty {
                    ScalarType::Float => Scalar::Float32(float as f32),
                    _ => Scalar::Float64(float),
                })
            }
            ScalarType::Date => parse_date(&text).map(Scalar::Date),
            ScalarType::Timestamp => parse_timestamp(&text, &SessionTimeZone::utc())
                .ok()
                .map(Scalar::Timestamp),
            ScalarType::TimestampNtz => parse_timestamp_ntz(&text).ok().map(Scalar::TimestampNtz),
            _ => None,
        };
    }
    let is_number = json
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    Some(match ty {
        ScalarType::Boolean => Scalar::Boolean(match json {
            "true" => true,
            "false" => false,
            _ => return None,
        }),
        _ if !is_number => return None,
        ScalarType::Byte => Scalar::Int8(json.parse().ok()?),
        ScalarType::Short => Scalar::Int16(json.parse().ok()?),
        ScalarType::Integer => Scalar::Int32(json.parse().ok()?),
        ScalarType::Long => Scalar::Int64(json.parse().ok()?),
        ScalarType::Float => Scalar::Float32(json.parse().ok()?),
        ScalarType::Double => Scalar::Float64(json.parse().ok()?),
        ScalarType::Decimal { precision, scale } => Scalar::Decimal {
            value: parse_decimal(json, precision, i8::try_from(scale).ok()?).ok()?,
            scale,
        },
        _ => return None,
    })
}

/// Writes `value` as a statistics JSON value (spec "Per-file Statistics"), as Delta on Spark
/// does: numbers as JSON numbers (decimals with their scale's digits; NaN and infinities as
/// the strings `"NaN"`, `"Infinity"`, `"-Infinity"`), booleans as `true`/`false`, strings as
/// JSON strings, dates as `"yyyy-MM-dd"`, timestamps truncated to milliseconds as
/// `"yyyy-MM-ddTHH:mm:ss.SSSZ"` (UTC) and `timestamp_ntz` as `"yyyy-MM-ddTHH:mm:ss.SSS"`,
/// NULL as `null`. Binary has no statistics and, like a value outside the calendar range, is
/// an [`crate::Error::InvalidArgument`].
pub(crate) fn to_stats_value(value: &Scalar) -> Result<String> {
    let unsupported = || invalid(format!("{value} cannot be written as a statistic"));
    let quoted = |text: &str| serde_json::Value::from(text).to_string();
    Ok(match value {
        Scalar::Null => "null".to_string(),
        Scalar::Boolean(flag) => flag.to_string(),
        Scalar::Int8(int) => int.to_string(),
        Scalar::Int16(int) => int.to_string(),
        Scalar::Int32(int) => int.to_string(),
        Scalar::Int64(int) => int.to_string(),
        Scalar::Float32(float) if float.is_finite() => format!("{float:?}"),
        Scalar::Float64(float) if float.is_finite() => format!("{float:?}"),
        Scalar::Float32(float) => quoted(&float_text(f64::from(*float), String::new())),
        Scalar::Float64(float) => quoted(&float_text(*float, String::new())),
        Scalar::Decimal { value, scale } => format_decimal(*value, *scale),
        Scalar::Utf8(text) => quoted(text),
        Scalar::Binary(_) => return Err(unsupported()),
        Scalar::Date(days) => quoted(&format_date(*days).ok_or_else(unsupported)?),
        Scalar::Timestamp(micros) => {
            quoted(&format_timestamp_millis(*micros, true).ok_or_else(unsupported)?)
        }
        Scalar::TimestampNtz(micros) => {
            quoted(&format_timestamp_millis(*micros, false).ok_or_else(unsupported)?)
        }
    })
}

/// Writes `value` as a SQL literal that [`crate::expr::parse_sql`] reads back as the same
/// value: `NULL`, `TRUE`, `FALSE`, integers, floats in Rust's shortest form (read back as
/// decimals of the same value; NaN and infinities as the strings `'NaN'`, `'Infinity'`,
/// `'-Infinity'`), decimals with their scale's digits, `'strings'` (a quote doubled),
/// `X'hex'`, `DATE 'yyyy-MM-dd'`, `TIMESTAMP 'yyyy-MM-dd HH:mm:ss[.ffffff]'` (UTC) and
/// `TIMESTAMP_NTZ '...'`.
pub(crate) fn to_sql_literal(value: &Scalar) -> String {
    let out_of_range = |what: &str, value: i64| format!("<{what} {value} out of range>");
    match value {
        Scalar::Null => "NULL".to_string(),
        Scalar::Boolean(true) => "TRUE".to_string(),
        Scalar::Boolean(false) => "FALSE".to_string(),
        Scalar::Int8(int) => int.to_string(),
        Scalar::Int16(int) => int.to_string(),
        Scalar::Int32(int) => int.to_string(),
        Scalar::Int64(int) => int.to_string(),
        Scalar::Float32(float) if float.is_finite() => format!("{float:?}"),
        Scalar::Float64(float) if float.is_finite() => format!("{float:?}"),
        Scalar::Float32(float) => format!("'{}'", float_text(f64::from(*float), String::new())),
        Scalar::Float64(float) => format!("'{}'", float_text(*float, String::new())),
        Scalar::Decimal { value, scale } => format_decimal(*value, *scale),
        Scalar::Utf8(text) => quote_sql(text),
        Scalar::Binary(bytes) => {
            let mut hex = String::with_capacity(bytes.len() * 2 + 3);
            hex.push_str("X'");
            for byte in bytes {
                let _ = write!(hex, "{byte:02X}");
            }
            hex.push('\'');
            hex
        }
        Scalar::Date(days) => match format_date(*days) {
            Some(text) => format!("DATE '{text}'"),
            None => format!("<day {days} out of range>"),
        },
        Scalar::Timestamp(micros) => match format_timestamp(*micros) {
            Some(text) => format!("TIMESTAMP '{text}'"),
            None => out_of_range("µs", *micros),
        },
        Scalar::TimestampNtz(micros) => match format_timestamp(*micros) {
            Some(text) => format!("TIMESTAMP_NTZ '{text}'"),
            None => out_of_range("µs", *micros),
        },
    }
}

/// Reads the number token of a SQL filter (digits, a point, an exponent; no sign): an integer
/// (Int64, or a decimal when it overflows), a decimal when it has a point and no exponent (and
/// fits 38 digits, [`parse_decimal_literal`]), a float otherwise; NULL when it is none.
pub(crate) fn parse_sql_number(text: &str) -> Scalar {
    if let Ok(value) = text.parse::<i64>() {
        return Scalar::Int64(value);
    }
    let has_exponent = text.contains(['e', 'E']);
    if !has_exponent {
        if let Some((value, scale)) = parse_decimal_literal(text) {
            return Scalar::Decimal { value, scale };
        }
    }
    text.parse::<f64>()
        .map(Scalar::Float64)
        .unwrap_or(Scalar::Null)
}

/// Reads the quoted text of a typed SQL literal: `DATE` ([`parse_date`]), `TIMESTAMP` (an
/// instant, UTC unless the text names a zone) or `TIMESTAMP_NTZ` (the same instant's
/// microseconds, so a zone in the text shifts the wall-clock time to UTC). `None` when the
/// text is not of that kind or `keyword` is none of them.
pub(crate) fn parse_sql_typed(keyword: &str, text: &str) -> Option<Scalar> {
    let utc = SessionTimeZone::utc();
    match keyword {
        "DATE" => parse_date(text).map(Scalar::Date),
        "TIMESTAMP" => parse_timestamp(text, &utc).ok().map(Scalar::Timestamp),
        "TIMESTAMP_NTZ" => parse_timestamp(text, &utc).ok().map(Scalar::TimestampNtz),
        _ => None,
    }
}

/// Parses a boolean text, `true` or `false` in any case.
pub(crate) fn parse_boolean(text: &str) -> Option<bool> {
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Parses an integer or a float in Rust's grammar; floats include `NaN`, `Infinity`, `inf`
/// (any case, with a sign). The error is the parser's reason.
pub(crate) fn parse_number<N: std::str::FromStr>(text: &str) -> std::result::Result<N, String>
where
    N::Err: std::fmt::Display,
{
    text.parse::<N>().map_err(|e| e.to_string())
}

/// `text` in single quotes, a quote inside doubled.
fn quote_sql(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push('\'');
        }
        quoted.push(c);
    }
    quoted.push('\'');
    quoted
}

/// `NaN`, `Infinity` or `-Infinity` for those floats, `finite` otherwise.
fn float_text(float: f64, finite: String) -> String {
    if float.is_nan() {
        "NaN".to_string()
    } else if float == f64::INFINITY {
        "Infinity".to_string()
    } else if float == f64::NEG_INFINITY {
        "-Infinity".to_string()
    } else {
        finite
    }
}

/// The float a statistics string stands for: `NaN`, `Infinity`, `-Infinity`.
#[cfg(test)]
fn special_float(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}
