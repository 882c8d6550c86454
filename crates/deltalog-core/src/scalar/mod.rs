//! Values of the Delta primitive types ([`Scalar`]) and their one text codec, both ways:
//! partition value strings (spec "Partition Value Serialization"), statistics JSON values
//! (spec "Per-file Statistics"), SQL literals of the filter language, and user-given times;
//! with the session time zone ([`SessionTimeZone`]) zone-less timestamps are read in.
//!
//! The date and timestamp grammar is described in `time`; decimals in `decimal`; the
//! per-context codecs in `text`.

pub(crate) mod decimal;
pub(crate) mod text;
pub(crate) mod time;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, NullArray, StringArray,
    TimestampMicrosecondArray,
};

use crate::error::{Error, Result};

pub(crate) use decimal::{format_decimal, parse_decimal, MAX_DECIMAL_PRECISION};
pub(crate) use text::{
    parse_boolean, parse_number, parse_sql_number, parse_sql_typed, to_partition_value,
    to_sql_literal, to_stats_value,
};
pub(crate) use time::{
    format_date, format_timestamp, parse_date, parse_date_prefix, parse_timestamp,
    parse_timestamp_ntz, MICROS_PER_DAY,
};
pub use time::{parse_user_timestamp_ms, SessionTimeZone};

/// One value of a Delta primitive type, or NULL; also a literal of a filter.
///
/// Filter literals use the wide variants (`Int64`, `Float64`, a decimal at the scale of its
/// text); values read for a column use the variant of its type. A decimal carries its unscaled
/// value and scale; the precision is the column type's (`ScalarType::Decimal`).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// SQL NULL.
    Null,
    Boolean(bool),
    /// A `byte`.
    Int8(i8),
    /// A `short`.
    Int16(i16),
    /// An `integer`.
    Int32(i32),
    /// A `long`.
    Int64(i64),
    /// A `float`.
    Float32(f32),
    /// A `double`.
    Float64(f64),
    /// An exact decimal number, `value × 10^-scale`.
    Decimal {
        value: i128,
        scale: u8,
    },
    /// A `string`.
    Utf8(String),
    Binary(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// An instant: microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp(i64),
    /// A wall-clock time without zone: microseconds since 1970-01-01 00:00:00.
    TimestampNtz(i64),
}

/// The Delta primitive type a value is parsed as (spec "Primitive Types").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(test)]
pub(crate) enum ScalarType {
    Boolean,
    Byte,
    Short,
    Integer,
    Long,
    Float,
    Double,
    Decimal { precision: u8, scale: u8 },
    String,
    Binary,
    Date,
    Timestamp,
    TimestampNtz,
}

impl Scalar {
    /// True for [`Scalar::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Scalar::Null)
    }

    /// The value as an Arrow array of its natural type (Int8..Int64, Float32/Float64, Utf8,
    /// Date32, Timestamp(µs, "UTC") or Timestamp(µs), Decimal128(38, scale), Binary, Boolean,
    /// Null), repeated `rows` times.
    pub fn to_array(&self, rows: usize) -> Result<ArrayRef> {
        Ok(match self {
            Scalar::Null => Arc::new(NullArray::new(rows)),
            Scalar::Boolean(value) => Arc::new(BooleanArray::from(vec![*value; rows])),
            Scalar::Int8(value) => Arc::new(Int8Array::from(vec![*value; rows])),
            Scalar::Int16(value) => Arc::new(Int16Array::from(vec![*value; rows])),
            Scalar::Int32(value) => Arc::new(Int32Array::from(vec![*value; rows])),
            Scalar::Int64(value) => Arc::new(Int64Array::from(vec![*value; rows])),
            Scalar::Float32(value) => Arc::new(Float32Array::from(vec![*value; rows])),
            Scalar::Float64(value) => Arc::new(Float64Array::from(vec![*value; rows])),
            Scalar::Decimal { value, scale } => Arc::new(
                Decimal128Array::from(vec![*value; rows])
                    .with_precision_and_scale(
                        MAX_DECIMAL_PRECISION,
                        i8::try_from(*scale).map_err(|_| {
                            invalid(format!("decimal literal {self}: scale too large"))
                        })?,
                    )
                    .map_err(|error| invalid(format!("decimal literal {self}: {error}")))?,
            ),
            Scalar::Utf8(value) => Arc::new(StringArray::from(vec![value.as_str(); rows])),
            Scalar::Binary(value) => Arc::new(BinaryArray::from(vec![value.as_slice(); rows])),
            Scalar::Date(days) => Arc::new(Date32Array::from(vec![*days; rows])),
            Scalar::Timestamp(micros) => {
                Arc::new(TimestampMicrosecondArray::from(vec![*micros; rows]).with_timezone("UTC"))
            }
            Scalar::TimestampNtz(micros) => {
                Arc::new(TimestampMicrosecondArray::from(vec![*micros; rows]))
            }
        })
    }
}

impl From<bool> for Scalar {
    fn from(value: bool) -> Self {
        Scalar::Boolean(value)
    }
}

impl From<i64> for Scalar {
    fn from(value: i64) -> Self {
        Scalar::Int64(value)
    }
}

impl From<i32> for Scalar {
    /// A filter literal: `Int64`.
    fn from(value: i32) -> Self {
        Scalar::Int64(i64::from(value))
    }
}

impl From<f64> for Scalar {
    fn from(value: f64) -> Self {
        Scalar::Float64(value)
    }
}

impl From<&str> for Scalar {
    fn from(value: &str) -> Self {
        Scalar::Utf8(value.to_string())
    }
}

impl From<String> for Scalar {
    fn from(value: String) -> Self {
        Scalar::Utf8(value)
    }
}

impl fmt::Display for Scalar {
    /// The value as a SQL literal, see `to_sql_literal`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_sql_literal(self))
    }
}

#[cfg(test)]
impl fmt::Display for ScalarType {
    /// The Delta type name (`integer`, `decimal(10,2)`, `timestamp_ntz`, ...).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarType::Boolean => f.write_str("boolean"),
            ScalarType::Byte => f.write_str("byte"),
            ScalarType::Short => f.write_str("short"),
            ScalarType::Integer => f.write_str("integer"),
            ScalarType::Long => f.write_str("long"),
            ScalarType::Float => f.write_str("float"),
            ScalarType::Double => f.write_str("double"),
            ScalarType::Decimal { precision, scale } => write!(f, "decimal({precision},{scale})"),
            ScalarType::String => f.write_str("string"),
            ScalarType::Binary => f.write_str("binary"),
            ScalarType::Date => f.write_str("date"),
            ScalarType::Timestamp => f.write_str("timestamp"),
            ScalarType::TimestampNtz => f.write_str("timestamp_ntz"),
        }
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}
