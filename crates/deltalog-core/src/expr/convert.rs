//! The conversion of a literal to the type of the column it is compared with, exactly: a
//! literal between two representable values becomes a comparison with the one below it.

use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, StringArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray, UInt16Array,
    UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, TimeUnit};

use super::ast::CompareOp;
use super::invalid;
use crate::error::Result;
use crate::scalar::{
    format_date, format_decimal, format_timestamp, parse_date, parse_number, parse_timestamp,
    Scalar, SessionTimeZone, MICROS_PER_DAY,
};

/// A comparison after converting its literal to the column's type.
pub(super) enum Normalized {
    /// The same truth value for every non-NULL row (`None`: NULL for every row).
    Const(Option<bool>),
    /// `column op literal`, the literal a one-row array of the column's type.
    Compare(CompareOp, ArrayRef),
}

/// Where a literal falls among the values of a type.
enum Position {
    Null,
    /// Equal to this value of the type.
    Exact(ArrayRef),
    /// Strictly between this value and the next one of the type.
    Between(ArrayRef),
    /// Below every value of the type.
    Below,
    /// Above every value of the type.
    Above,
}

/// A number in text form, for exact conversion to integers and decimals.
enum Numeric {
    Finite(String),
    NaN,
    PositiveInfinity,
    NegativeInfinity,
}

/// The floor of a decimal text scaled by 10^scale.
enum Scaled {
    Value { floor: i128, exact: bool },
    TooLarge,
    TooSmall,
}

pub(super) fn normalize_comparison(
    op: CompareOp,
    value: &Scalar,
    target: &DataType,
    name: &str,
) -> Result<Normalized> {
    use CompareOp::*;
    Ok(match literal_position(value, target, name)? {
        Position::Null => Normalized::Const(None),
        Position::Exact(literal) => Normalized::Compare(op, literal),
        Position::Below => Normalized::Const(Some(matches!(op, NotEq | Gt | GtEq))),
        Position::Above => Normalized::Const(Some(matches!(op, NotEq | Lt | LtEq))),
        Position::Between(floor) => match op {
            Eq => Normalized::Const(Some(false)),
            NotEq => Normalized::Const(Some(true)),
            Gt | GtEq => Normalized::Compare(Gt, floor),
            Lt | LtEq => Normalized::Compare(LtEq, floor),
        },
    })
}

fn literal_position(value: &Scalar, target: &DataType, name: &str) -> Result<Position> {
    if matches!(value, Scalar::Null) {
        return Ok(Position::Null);
    }
    let mismatch = || {
        invalid(format!(
            "cannot compare column '{name}' of type {target} with {value}"
        ))
    };
    match target {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => {
            let (low, high) = integer_range(target).ok_or_else(mismatch)?;
            let numeric = numeric_of(value).ok_or_else(mismatch)?;
            scaled_position(&numeric, 0, low, high, |v| integer_array(v, target))
        }
        DataType::Decimal128(precision, scale) => {
            let scale = u32::try_from(*scale).map_err(|_| mismatch())?;
            let high = 10_i128
                .checked_pow(u32::from(*precision))
                .map_or(i128::MAX, |limit| limit - 1);
            let numeric = numeric_of(value).ok_or_else(mismatch)?;
            scaled_position(&numeric, scale, -high, high, |v| {
                decimal_array(v, *precision, scale)
            })
        }
        DataType::Float64 => {
            let float = float_of(value).ok_or_else(mismatch)?;
            let folded = canonical_float(float);
            Ok(Position::Exact(Arc::new(Float64Array::from(vec![folded]))))
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let text = text_of(value).ok_or_else(mismatch)?;
            let literal = cast(&StringArray::from(vec![text]), target).map_err(|_| mismatch())?;
            Ok(Position::Exact(literal))
        }
        DataType::Boolean => {
            let boolean = boolean_of(value).ok_or_else(mismatch)?;
            Ok(Position::Exact(Arc::new(BooleanArray::from(vec![boolean]))))
        }
        DataType::Date32 => date_position(value).ok_or_else(mismatch),
        DataType::Timestamp(unit, zone) => {
            let micros = micros_of(value).ok_or_else(mismatch)?;
            Ok(timestamp_position(micros, *unit, zone.clone()))
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            let bytes = match value {
                Scalar::Binary(bytes) => bytes.clone(),
                Scalar::Utf8(text) => text.as_bytes().to_vec(),
                _ => return Err(mismatch()),
            };
            let literal =
                cast(&BinaryArray::from(vec![bytes.as_slice()]), target).map_err(|_| mismatch())?;
            Ok(Position::Exact(literal))
        }
        _ => {
            let literal = cast(&value.to_array(1)?, target).map_err(|_| mismatch())?;
            if literal.null_count() > 0 {
                return Err(mismatch());
            }
            Ok(Position::Exact(literal))
        }
    }
}

/// Places a number among the integers `low..=high` of a type scaled by 10^scale.
fn scaled_position(
    numeric: &Numeric,
    scale: u32,
    low: i128,
    high: i128,
    build: impl Fn(i128) -> Result<ArrayRef>,
) -> Result<Position> {
    let (floor, exact) = match numeric {
        Numeric::NaN | Numeric::PositiveInfinity => return Ok(Position::Above),
        Numeric::NegativeInfinity => return Ok(Position::Below),
        Numeric::Finite(text) => match scaled_floor(text, scale) {
            Scaled::TooLarge => return Ok(Position::Above),
            Scaled::TooSmall => return Ok(Position::Below),
            Scaled::Value { floor, exact } => (floor, exact),
        },
    };
    range_position(floor, exact, low, high, build)
}

fn range_position(
    floor: i128,
    exact: bool,
    low: i128,
    high: i128,
    build: impl Fn(i128) -> Result<ArrayRef>,
) -> Result<Position> {
    if floor < low {
        return Ok(Position::Below);
    }
    if floor > high || (floor == high && !exact) {
        return Ok(Position::Above);
    }
    let literal = build(floor)?;
    Ok(if exact {
        Position::Exact(literal)
    } else {
        Position::Between(literal)
    })
}

/// The floor of `text × 10^scale` for a plain decimal text (`-12.345`), and whether it is exact.
fn scaled_floor(text: &str, scale: u32) -> Scaled {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let kept: String = fraction.chars().take(scale as usize).collect();
    let dropped = fraction.chars().skip(scale as usize);
    let exact = dropped.clone().all(|c| c == '0');
    let padding = "0".repeat((scale as usize).saturating_sub(kept.len()));
    let digits = format!("{whole}{kept}{padding}");
    let digits = digits.trim_start_matches('0');
    let overflow = if negative {
        Scaled::TooSmall
    } else {
        Scaled::TooLarge
    };
    let magnitude = if digits.is_empty() {
        0
    } else {
        match digits.parse::<i128>() {
            Ok(magnitude) => magnitude,
            Err(_) => return overflow,
        }
    };
    if !negative {
        return Scaled::Value {
            floor: magnitude,
            exact,
        };
    }
    let floor = if exact {
        Some(-magnitude)
    } else {
        (-magnitude).checked_sub(1)
    };
    match floor {
        Some(floor) => Scaled::Value { floor, exact },
        None => overflow,
    }
}

fn numeric_of(value: &Scalar) -> Option<Numeric> {
    match value {
        Scalar::Int8(int) => Some(Numeric::Finite(int.to_string())),
        Scalar::Int16(int) => Some(Numeric::Finite(int.to_string())),
        Scalar::Int32(int) => Some(Numeric::Finite(int.to_string())),
        Scalar::Int64(int) => Some(Numeric::Finite(int.to_string())),
        Scalar::Decimal { value, scale } => Some(Numeric::Finite(format_decimal(*value, *scale))),
        Scalar::Float32(float) => Some(numeric_of_float(f64::from(*float))),
        Scalar::Float64(float) => Some(numeric_of_float(*float)),
        Scalar::Utf8(text) => {
            let text = text.trim();
            if is_plain_decimal(text) {
                Some(Numeric::Finite(text.to_string()))
            } else {
                parse_number::<f64>(text).ok().map(numeric_of_float)
            }
        }
        _ => None,
    }
}

fn numeric_of_float(float: f64) -> Numeric {
    if float.is_nan() {
        Numeric::NaN
    } else if float == f64::INFINITY {
        Numeric::PositiveInfinity
    } else if float == f64::NEG_INFINITY {
        Numeric::NegativeInfinity
    } else {
        Numeric::Finite(format!("{float}"))
    }
}

fn is_plain_decimal(text: &str) -> bool {
    let unsigned = text
        .strip_prefix('-')
        .or_else(|| text.strip_prefix('+'))
        .unwrap_or(text);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    !(whole.is_empty() && fraction.is_empty())
        && whole.chars().all(|c| c.is_ascii_digit())
        && fraction.chars().all(|c| c.is_ascii_digit())
}

fn float_of(value: &Scalar) -> Option<f64> {
    match value {
        Scalar::Int8(int) => Some(f64::from(*int)),
        Scalar::Int16(int) => Some(f64::from(*int)),
        Scalar::Int32(int) => Some(f64::from(*int)),
        Scalar::Int64(int) => Some(*int as f64),
        Scalar::Float32(float) => Some(f64::from(*float)),
        Scalar::Float64(float) => Some(*float),
        Scalar::Decimal { value, scale } => format_decimal(*value, *scale).parse().ok(),
        Scalar::Utf8(text) => parse_number::<f64>(text.trim()).ok(),
        _ => None,
    }
}

fn text_of(value: &Scalar) -> Option<String> {
    Some(match value {
        Scalar::Utf8(text) => text.clone(),
        Scalar::Int8(int) => int.to_string(),
        Scalar::Int16(int) => int.to_string(),
        Scalar::Int32(int) => int.to_string(),
        Scalar::Int64(int) => int.to_string(),
        Scalar::Float32(float) => float.to_string(),
        Scalar::Float64(float) => float.to_string(),
        Scalar::Decimal { value, scale } => format_decimal(*value, *scale),
        Scalar::Boolean(boolean) => boolean.to_string(),
        Scalar::Date(days) => {
            format_date(*days).unwrap_or_else(|| format!("<day {days} out of range>"))
        }
        Scalar::Timestamp(micros) | Scalar::TimestampNtz(micros) => {
            format_timestamp(*micros).unwrap_or_else(|| format!("<{micros} µs out of range>"))
        }
        Scalar::Binary(bytes) => String::from_utf8(bytes.clone()).ok()?,
        Scalar::Null => return None,
    })
}

fn boolean_of(value: &Scalar) -> Option<bool> {
    match value {
        Scalar::Boolean(boolean) => Some(*boolean),
        Scalar::Utf8(text) if text.trim().eq_ignore_ascii_case("true") => Some(true),
        Scalar::Utf8(text) if text.trim().eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The literal as microseconds since the epoch (instants and wall-clock times alike).
fn micros_of(value: &Scalar) -> Option<i128> {
    match value {
        Scalar::Timestamp(micros) | Scalar::TimestampNtz(micros) => Some(i128::from(*micros)),
        Scalar::Date(days) => Some(i128::from(*days) * i128::from(MICROS_PER_DAY)),
        Scalar::Utf8(text) => parse_timestamp(text, &SessionTimeZone::utc())
            .ok()
            .map(i128::from),
        _ => None,
    }
}

fn date_position(value: &Scalar) -> Option<Position> {
    if let Scalar::Date(days) = value {
        return Some(Position::Exact(Arc::new(Date32Array::from(vec![*days]))));
    }
    if let Scalar::Utf8(text) = value {
        if let Some(days) = parse_date(text) {
            return Some(Position::Exact(Arc::new(Date32Array::from(vec![days]))));
        }
    }
    let micros = micros_of(value)?;
    let day = i128::from(MICROS_PER_DAY);
    let floor = micros.div_euclid(day);
    let exact = micros.rem_euclid(day) == 0;
    range_position(
        floor,
        exact,
        i128::from(i32::MIN),
        i128::from(i32::MAX),
        |days| {
            let days = i32::try_from(days).map_err(|_| invalid("date out of range"))?;
            Ok(Arc::new(Date32Array::from(vec![days])))
        },
    )
    .ok()
}

fn timestamp_position(micros: i128, unit: TimeUnit, zone: Option<Arc<str>>) -> Position {
    let (scaled, exact) = match unit {
        TimeUnit::Second => (
            micros.div_euclid(1_000_000),
            micros.rem_euclid(1_000_000) == 0,
        ),
        TimeUnit::Millisecond => (micros.div_euclid(1_000), micros.rem_euclid(1_000) == 0),
        TimeUnit::Microsecond => (micros, true),
        TimeUnit::Nanosecond => (micros.saturating_mul(1_000), true),
    };
    let build = |value: i128| -> Result<ArrayRef> {
        let value = i64::try_from(value).map_err(|_| invalid("timestamp out of range"))?;
        Ok(match unit {
            TimeUnit::Second => {
                Arc::new(TimestampSecondArray::from(vec![value]).with_timezone_opt(zone.clone()))
            }
            TimeUnit::Millisecond => Arc::new(
                TimestampMillisecondArray::from(vec![value]).with_timezone_opt(zone.clone()),
            ),
            TimeUnit::Microsecond => Arc::new(
                TimestampMicrosecondArray::from(vec![value]).with_timezone_opt(zone.clone()),
            ),
            TimeUnit::Nanosecond => Arc::new(
                TimestampNanosecondArray::from(vec![value]).with_timezone_opt(zone.clone()),
            ),
        })
    };
    range_position(
        scaled,
        exact,
        i128::from(i64::MIN),
        i128::from(i64::MAX),
        build,
    )
    .unwrap_or(Position::Above)
}

pub(super) fn integer_range(target: &DataType) -> Option<(i128, i128)> {
    Some(match target {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DataType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        DataType::UInt8 => (0, u8::MAX.into()),
        DataType::UInt16 => (0, u16::MAX.into()),
        DataType::UInt32 => (0, u32::MAX.into()),
        DataType::UInt64 => (0, u64::MAX.into()),
        _ => return None,
    })
}

fn integer_array(value: i128, target: &DataType) -> Result<ArrayRef> {
    let out_of_range = |_| invalid(format!("{value} is out of range for {target}"));
    Ok(match target {
        DataType::Int8 => Arc::new(Int8Array::from(vec![
            i8::try_from(value).map_err(out_of_range)?
        ])),
        DataType::Int16 => Arc::new(Int16Array::from(vec![
            i16::try_from(value).map_err(out_of_range)?
        ])),
        DataType::Int32 => Arc::new(Int32Array::from(vec![
            i32::try_from(value).map_err(out_of_range)?
        ])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![
            i64::try_from(value).map_err(out_of_range)?
        ])),
        DataType::UInt8 => Arc::new(UInt8Array::from(vec![
            u8::try_from(value).map_err(out_of_range)?
        ])),
        DataType::UInt16 => Arc::new(UInt16Array::from(vec![
            u16::try_from(value).map_err(out_of_range)?
        ])),
        DataType::UInt32 => Arc::new(UInt32Array::from(vec![
            u32::try_from(value).map_err(out_of_range)?
        ])),
        DataType::UInt64 => Arc::new(UInt64Array::from(vec![
            u64::try_from(value).map_err(out_of_range)?
        ])),
        other => return Err(invalid(format!("{other} is not an integer type"))),
    })
}

fn decimal_array(value: i128, precision: u8, scale: u32) -> Result<ArrayRef> {
    let scale = i8::try_from(scale).map_err(|_| invalid("decimal scale out of range"))?;
    Decimal128Array::from(vec![value])
        .with_precision_and_scale(precision, scale)
        .map(|array| Arc::new(array) as ArrayRef)
        .map_err(|error| invalid(format!("decimal({precision},{scale}) literal: {error}")))
}

/// `value` with `-0.0` folded into `0.0` and every NaN made [`f64::NAN`], so that the IEEE
/// total order is Spark's order of doubles.
pub(super) fn canonical_float(value: f64) -> f64 {
    if value == 0.0 {
        0.0
    } else if value.is_nan() {
        f64::NAN
    } else {
        value
    }
}
