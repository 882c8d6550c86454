//! Value expressions: what an `UPDATE ... SET column = <expression>` computes for every row,
//! and the computed operands of filters ([`Expr::Value`]). They grow from the filter language: column references and the literals of
//! [`super::parse_sql`], arithmetic (`+ - * / %`, unary `-`), `concat`, `lower`, `upper`,
//! `substring`, `coalesce`, `CASE WHEN <filter> THEN ... ELSE ... END`,
//! `CAST(x AS type)`, `current_timestamp()` and the date parts Spark users put in generated
//! columns (`year`, `month`, `day`/`dayofmonth`, `hour`, `to_date`, `date_format` with the
//! pattern letters `y M d H m s`), evaluated on Arrow batches with Arrow's
//! compute kernels in SQL's null semantics (an operand that is NULL makes the result NULL;
//! `coalesce` and `CASE` excepted) and Spark's ANSI mode: integer overflow, division by zero
//! and a failing cast are errors, not NULLs. `/` divides as doubles, as Spark's does.

use std::fmt;
use std::sync::Arc;

use arrow::compute::kernels::numeric;
use arrow::compute::kernels::zip::zip;
use arrow::compute::{cast_with_options, is_not_null, CastOptions};
use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, TimeUnit};

use super::ast::{write_column, Expr};
use super::eval::{evaluate_at, lookup};
use super::invalid;
use crate::error::Result;
use crate::scalar::Scalar;

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A function of the value language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Concat,
    Lower,
    Upper,
    Substring,
    Coalesce,
    CurrentTimestamp,
    /// `year(x)`: the year of a date or timestamp (timestamps in UTC), an int.
    Year,
    /// `month(x)`: 1 to 12.
    Month,
    /// `day(x)`, `dayofmonth(x)`: 1 to 31.
    Day,
    /// `hour(x)`: 0 to 23 (a date is at hour 0).
    Hour,
    /// `to_date(x)`: `CAST(x AS DATE)`.
    ToDate,
    /// `date_format(x, 'pattern')`: the timestamp as text in UTC.
    DateFormat,
}

/// A value expression (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub enum ValueExpr {
    Column(Vec<String>),
    Literal(Scalar),
    Negate(Box<ValueExpr>),
    Arith {
        op: ArithOp,
        left: Box<ValueExpr>,
        right: Box<ValueExpr>,
    },
    Call {
        function: Function,
        args: Vec<ValueExpr>,
    },
    /// `CASE WHEN c1 THEN v1 ... ELSE otherwise END` (NULL without `ELSE`).
    Case {
        branches: Vec<(Expr, ValueExpr)>,
        otherwise: Option<Box<ValueExpr>>,
    },
    Cast {
        expr: Box<ValueExpr>,
        to: DataType,
    },
}

impl ValueExpr {
    /// The referenced column paths (conditions of `CASE` included).
    pub fn column_paths(&self) -> Vec<Vec<String>> {
        let mut paths = Vec::new();
        self.visit_columns(&mut |path| {
            if !paths.iter().any(|p: &Vec<String>| p == path) {
                paths.push(path.to_vec());
            }
        });
        paths
    }

    /// `self` with every column reference replaced by `replace(path)`; `None` when `replace`
    /// has no replacement for one, or a `CASE` condition reads a column (conditions are
    /// filters, whose columns are not replaced by values).
    pub(crate) fn with_columns_replaced(
        &self,
        replace: &dyn Fn(&[String]) -> Option<ValueExpr>,
    ) -> Option<ValueExpr> {
        let boxed = |inner: &ValueExpr| inner.with_columns_replaced(replace).map(Box::new);
        Some(match self {
            ValueExpr::Column(path) => replace(path)?,
            ValueExpr::Literal(_) => self.clone(),
            ValueExpr::Negate(inner) => ValueExpr::Negate(boxed(inner)?),
            ValueExpr::Cast { expr, to } => ValueExpr::Cast {
                expr: boxed(expr)?,
                to: to.clone(),
            },
            ValueExpr::Arith { op, left, right } => ValueExpr::Arith {
                op: *op,
                left: boxed(left)?,
                right: boxed(right)?,
            },
            ValueExpr::Call { function, args } => ValueExpr::Call {
                function: *function,
                args: args
                    .iter()
                    .map(|arg| arg.with_columns_replaced(replace))
                    .collect::<Option<Vec<_>>>()?,
            },
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                if branches
                    .iter()
                    .any(|(condition, _)| !condition.column_paths().is_empty())
                {
                    return None;
                }
                ValueExpr::Case {
                    branches: branches
                        .iter()
                        .map(|(condition, value)| {
                            Some((condition.clone(), value.with_columns_replaced(replace)?))
                        })
                        .collect::<Option<Vec<_>>>()?,
                    otherwise: match otherwise {
                        Some(otherwise) => Some(boxed(otherwise)?),
                        None => None,
                    },
                }
            }
        })
    }

    /// `self` with every column path replaced by `rename` of it, `CASE` conditions included
    /// (the first error returned stops the rewrite and is returned).
    pub fn try_map_columns<E, F>(&self, rename: &mut F) -> std::result::Result<ValueExpr, E>
    where
        F: FnMut(&[String]) -> std::result::Result<Vec<String>, E>,
    {
        Ok(match self {
            ValueExpr::Column(path) => ValueExpr::Column(rename(path)?),
            ValueExpr::Literal(_) => self.clone(),
            ValueExpr::Negate(inner) => ValueExpr::Negate(Box::new(inner.try_map_columns(rename)?)),
            ValueExpr::Cast { expr, to } => ValueExpr::Cast {
                expr: Box::new(expr.try_map_columns(rename)?),
                to: to.clone(),
            },
            ValueExpr::Arith { op, left, right } => ValueExpr::Arith {
                op: *op,
                left: Box::new(left.try_map_columns(rename)?),
                right: Box::new(right.try_map_columns(rename)?),
            },
            ValueExpr::Call { function, args } => ValueExpr::Call {
                function: *function,
                args: args
                    .iter()
                    .map(|arg| arg.try_map_columns(rename))
                    .collect::<std::result::Result<_, E>>()?,
            },
            ValueExpr::Case {
                branches,
                otherwise,
            } => ValueExpr::Case {
                branches: branches
                    .iter()
                    .map(|(condition, value)| {
                        Ok((
                            condition.try_map_columns(rename)?,
                            value.try_map_columns(rename)?,
                        ))
                    })
                    .collect::<std::result::Result<_, E>>()?,
                otherwise: match otherwise {
                    Some(otherwise) => Some(Box::new(otherwise.try_map_columns(rename)?)),
                    None => None,
                },
            },
        })
    }

    pub(super) fn visit_columns(&self, visit: &mut dyn FnMut(&[String])) {
        match self {
            ValueExpr::Column(path) => visit(path),
            ValueExpr::Literal(_) => {}
            ValueExpr::Negate(inner) | ValueExpr::Cast { expr: inner, .. } => {
                inner.visit_columns(visit)
            }
            ValueExpr::Arith { left, right, .. } => {
                left.visit_columns(visit);
                right.visit_columns(visit);
            }
            ValueExpr::Call { args, .. } => args.iter().for_each(|a| a.visit_columns(visit)),
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                for (condition, value) in branches {
                    condition.visit_columns(visit);
                    value.visit_columns(visit);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.visit_columns(visit);
                }
            }
        }
    }

    /// Whether the value depends on the clock (`current_timestamp()`, `CASE` conditions
    /// included): such a value is not deterministic.
    pub fn reads_clock(&self) -> bool {
        match self {
            ValueExpr::Column(_) | ValueExpr::Literal(_) => false,
            ValueExpr::Negate(inner) | ValueExpr::Cast { expr: inner, .. } => inner.reads_clock(),
            ValueExpr::Arith { left, right, .. } => left.reads_clock() || right.reads_clock(),
            ValueExpr::Call { function, args } => {
                *function == Function::CurrentTimestamp || args.iter().any(ValueExpr::reads_clock)
            }
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                branches
                    .iter()
                    .any(|(condition, value)| condition.reads_clock() || value.reads_clock())
                    || otherwise.as_deref().is_some_and(ValueExpr::reads_clock)
            }
        }
    }

    /// How tightly the expression binds when written: arithmetic operands of a tighter
    /// operator are parenthesised.
    fn precedence(&self) -> u8 {
        match self {
            ValueExpr::Arith {
                op: ArithOp::Add | ArithOp::Sub,
                ..
            } => 1,
            ValueExpr::Arith { .. } => 2,
            _ => 3,
        }
    }
}

impl ArithOp {
    /// The SQL spelling (`+`, `-`, `*`, `/`, `%`).
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        }
    }
}

impl Function {
    /// The function a SQL name (ASCII-case-insensitive, Spark's aliases included) calls.
    pub fn named(name: &str) -> Option<Function> {
        Some(match name.to_ascii_lowercase().as_str() {
            "concat" => Function::Concat,
            "lower" | "lcase" => Function::Lower,
            "upper" | "ucase" => Function::Upper,
            "substring" | "substr" => Function::Substring,
            "coalesce" => Function::Coalesce,
            "current_timestamp" | "now" => Function::CurrentTimestamp,
            "year" => Function::Year,
            "month" => Function::Month,
            "day" | "dayofmonth" => Function::Day,
            "hour" => Function::Hour,
            "to_date" => Function::ToDate,
            "date_format" => Function::DateFormat,
            _ => return None,
        })
    }

    /// The SQL name (Spark's).
    pub fn sql_name(self) -> &'static str {
        match self {
            Function::Concat => "concat",
            Function::Lower => "lower",
            Function::Upper => "upper",
            Function::Substring => "substring",
            Function::Coalesce => "coalesce",
            Function::CurrentTimestamp => "current_timestamp",
            Function::Year => "year",
            Function::Month => "month",
            Function::Day => "day",
            Function::Hour => "hour",
            Function::ToDate => "to_date",
            Function::DateFormat => "date_format",
        }
    }
}

impl fmt::Display for ValueExpr {
    /// SQL that [`super::parse_value_sql`] (and, as an operand, [`super::parse_sql`]) parses
    /// back into the same expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueExpr::Column(path) => write_column(f, path),
            ValueExpr::Literal(value) => write!(f, "{value}"),
            ValueExpr::Negate(inner) => write!(f, "-({inner})"),
            ValueExpr::Arith { op, left, right } => {
                let own = self.precedence();
                write_arith_operand(f, left, left.precedence() < own)?;
                write!(f, " {} ", op.symbol())?;
                write_arith_operand(f, right, right.precedence() <= own)
            }
            ValueExpr::Call { function, args } => {
                write!(f, "{}(", function.sql_name())?;
                for (index, arg) in args.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{arg}")?;
                }
                f.write_str(")")
            }
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                f.write_str("CASE")?;
                for (condition, value) in branches {
                    write!(f, " WHEN {condition} THEN {value}")?;
                }
                if let Some(otherwise) = otherwise {
                    write!(f, " ELSE {otherwise}")?;
                }
                f.write_str(" END")
            }
            ValueExpr::Cast { expr, to } => write!(f, "CAST({expr} AS {})", type_sql_name(to)),
        }
    }
}

fn write_arith_operand(
    f: &mut fmt::Formatter<'_>,
    operand: &ValueExpr,
    parenthesise: bool,
) -> fmt::Result {
    if parenthesise {
        write!(f, "({operand})")
    } else {
        write!(f, "{operand}")
    }
}

/// The Spark SQL name of a type [`type_named`] reads.
fn type_sql_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Utf8 => "STRING".into(),
        DataType::Binary => "BINARY".into(),
        DataType::Date32 => "DATE".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        DataType::Decimal128(precision, scale) => format!("DECIMAL({precision},{scale})"),
        other => other.to_string(),
    }
}

/// Evaluates `expr` on every row of `batch`; `now_micros` is `current_timestamp()` (one
/// instant for the whole statement). Errors name the problem ([`crate::Error::InvalidArgument`]):
/// an unknown column, operands of kinds that do not combine, overflow, division by zero, a
/// failing cast.
pub(crate) fn evaluate_value(
    expr: &ValueExpr,
    batch: &RecordBatch,
    now_micros: i64,
) -> Result<ArrayRef> {
    let rows = batch.num_rows();
    match expr {
        ValueExpr::Column(path) => {
            let schema = batch.schema();
            lookup(schema.fields(), batch.columns(), path)?
                .ok_or_else(|| invalid(format!("unknown column '{}'", path.join("."))))
        }
        ValueExpr::Literal(value) => value.to_array(rows),
        ValueExpr::Negate(inner) => {
            let value = evaluate_value(inner, batch, now_micros)?;
            numeric::neg(&value).map_err(|e| invalid(format!("-{inner:?}: {e}")))
        }
        ValueExpr::Arith { op, left, right } => {
            let left = evaluate_value(left, batch, now_micros)?;
            let right = evaluate_value(right, batch, now_micros)?;
            arithmetic(*op, &left, &right)
        }
        ValueExpr::Call { function, args } => {
            let values = args
                .iter()
                .map(|arg| evaluate_value(arg, batch, now_micros))
                .collect::<Result<Vec<_>>>()?;
            call(*function, &values, args, rows, now_micros)
        }
        ValueExpr::Case {
            branches,
            otherwise,
        } => {
            let mut values = Vec::with_capacity(branches.len());
            for (_, value) in branches {
                values.push(evaluate_value(value, batch, now_micros)?);
            }
            let fallback = match otherwise {
                Some(otherwise) => Some(evaluate_value(otherwise, batch, now_micros)?),
                None => None,
            };
            let ty = common_type(values.iter().chain(fallback.iter()));
            let mut result = match fallback {
                Some(fallback) => cast_to(&fallback, &ty)?,
                None => new_null_array(&ty, rows),
            };
            for ((condition, _), value) in branches.iter().zip(values).rev() {
                let mask = evaluate_at(condition, batch, now_micros)?;
                let value = cast_to(&value, &ty)?;
                result = zip(&mask, &value, &result).map_err(|e| invalid(format!("CASE: {e}")))?;
            }
            Ok(result)
        }
        ValueExpr::Cast { expr, to } => cast_to(&evaluate_value(expr, batch, now_micros)?, to),
    }
}

/// `value` cast to `to`, failing (not NULL) on a value that does not convert (ANSI).
pub(crate) fn cast_to(value: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if value.data_type() == to {
        return Ok(value.clone());
    }
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(value, to, &options)
        .map_err(|e| invalid(format!("cannot cast {} to {to}: {e}", value.data_type())))
}

fn arithmetic(op: ArithOp, left: &ArrayRef, right: &ArrayRef) -> Result<ArrayRef> {
    let ty = match op {
        ArithOp::Div => DataType::Float64,
        _ => numeric_type(left.data_type(), right.data_type())?,
    };
    let (left, right) = (cast_to(left, &ty)?, cast_to(right, &ty)?);
    if matches!(op, ArithOp::Div | ArithOp::Rem) && has_zero(&right)? {
        return Err(invalid("division by zero"));
    }
    let result = match op {
        ArithOp::Add => numeric::add(&left, &right),
        ArithOp::Sub => numeric::sub(&left, &right),
        ArithOp::Mul => numeric::mul(&left, &right),
        ArithOp::Div => numeric::div(&left, &right),
        ArithOp::Rem => numeric::rem(&left, &right),
    };
    result.map_err(|e| invalid(format!("arithmetic on {ty}: {e}")))
}

/// The type two numeric operands are computed in: the wider integer, a double when either
/// is a float, a decimal when either is one.
fn numeric_type(left: &DataType, right: &DataType) -> Result<DataType> {
    let rank = |ty: &DataType| match ty {
        DataType::Null => Some(0),
        DataType::Int8 => Some(1),
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(3),
        DataType::Int64 => Some(4),
        DataType::Decimal128(_, _) => Some(5),
        DataType::Float32 | DataType::Float64 => Some(6),
        _ => None,
    };
    let (Some(a), Some(b)) = (rank(left), rank(right)) else {
        return Err(invalid(format!(
            "arithmetic needs numbers, not {left} and {right}"
        )));
    };
    Ok(match a.max(b) {
        0 | 4 => DataType::Int64,
        1 => DataType::Int8,
        2 => DataType::Int16,
        3 => DataType::Int32,
        5 => match (left, right) {
            (DataType::Decimal128(p, s), DataType::Decimal128(q, t)) => {
                let scale = (*s).max(*t);
                let digits = (*p as i8 - *s).max(*q as i8 - *t);
                DataType::Decimal128(((digits + scale) as u8 + 1).min(38), scale)
            }
            (DataType::Decimal128(p, s), _) | (_, DataType::Decimal128(p, s)) => {
                DataType::Decimal128((*p + 10).min(38), *s)
            }
            _ => DataType::Float64,
        },
        _ => DataType::Float64,
    })
}

fn has_zero(values: &ArrayRef) -> Result<bool> {
    let doubles = cast_to(values, &DataType::Float64)?;
    Ok(doubles
        .as_primitive::<arrow_array::types::Float64Type>()
        .iter()
        .any(|v| v == Some(0.0)))
}

fn call(
    function: Function,
    values: &[ArrayRef],
    args: &[ValueExpr],
    rows: usize,
    now_micros: i64,
) -> Result<ArrayRef> {
    let arity = |n: std::ops::RangeInclusive<usize>| {
        if n.contains(&values.len()) {
            Ok(())
        } else {
            Err(invalid(format!(
                "{function:?} takes {} to {} arguments, not {}",
                n.start(),
                n.end(),
                values.len()
            )))
        }
    };
    match function {
        Function::CurrentTimestamp => {
            arity(0..=0)?;
            let now = TimestampMicrosecondArray::from(vec![now_micros; rows]).with_timezone("UTC");
            Ok(Arc::new(now))
        }
        Function::Lower | Function::Upper => {
            arity(1..=1)?;
            let text = strings(&values[0])?;
            let mapped: StringArray = text
                .iter()
                .map(|v| {
                    v.map(|s| match function {
                        Function::Lower => s.to_lowercase(),
                        _ => s.to_uppercase(),
                    })
                })
                .collect();
            Ok(Arc::new(mapped))
        }
        Function::Concat => {
            let mut result: Option<StringArray> = None;
            for value in values {
                let text = strings(value)?;
                result = Some(match result {
                    None => text,
                    Some(done) => {
                        arrow::compute::kernels::concat_elements::concat_elements_utf8(&done, &text)
                            .map_err(|e| invalid(format!("concat: {e}")))?
                    }
                });
            }
            Ok(Arc::new(result.unwrap_or_else(|| {
                StringArray::from(vec![Some(""); rows])
            })))
        }
        Function::Substring => {
            arity(2..=3)?;
            let position = literal_int(&args[1], "substring position")?;
            let length = match args.get(2) {
                Some(arg) => Some(literal_int(arg, "substring length")?),
                None => None,
            };
            let text = strings(&values[0])?;
            let start = match position {
                p if p > 0 => p - 1,
                0 => 0,
                p => p,
            };
            let length = length.map(|l| u64::try_from(l.max(0)).unwrap_or(0));
            let result =
                arrow::compute::kernels::substring::substring_by_char(&text, start, length)
                    .map_err(|e| invalid(format!("substring: {e}")))?;
            Ok(Arc::new(result))
        }
        Function::Coalesce => {
            arity(1..=usize::MAX)?;
            let ty = common_type(values.iter());
            let mut result = cast_to(&values[0], &ty)?;
            for value in &values[1..] {
                let present = is_not_null(&result).map_err(|e| invalid(e.to_string()))?;
                result = zip(&present, &result, &cast_to(value, &ty)?)
                    .map_err(|e| invalid(format!("coalesce: {e}")))?;
            }
            Ok(result)
        }
        Function::Year | Function::Month | Function::Day | Function::Hour => {
            arity(1..=1)?;
            date_part(function, &values[0])
        }
        Function::ToDate => {
            arity(1..=1)?;
            cast_to(&values[0], &DataType::Date32)
        }
        Function::DateFormat => {
            arity(2..=2)?;
            let pattern = literal_text(&args[1], "date_format pattern")?;
            date_format(&values[0], &pattern)
        }
    }
}

/// `year`, `month`, `day` or `hour` of dates, timestamps (in UTC) or their text, as Spark's
/// ints.
fn date_part(function: Function, value: &ArrayRef) -> Result<ArrayRef> {
    use arrow::compute::kernels::temporal::{date_part, DatePart};
    let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let (part, input) = match function {
        Function::Year => (DatePart::Year, as_date_or_timestamp(value)?),
        Function::Month => (DatePart::Month, as_date_or_timestamp(value)?),
        Function::Day => (DatePart::Day, as_date_or_timestamp(value)?),
        _ => match value.data_type() {
            DataType::Timestamp(_, _) => (DatePart::Hour, value.clone()),
            _ => (DatePart::Hour, cast_to(value, &utc)?),
        },
    };
    date_part(&input, part).map_err(|e| invalid(format!("{function:?}: {e}")))
}

/// Dates and timestamps as they are; anything else cast to a date (Spark's implicit cast).
fn as_date_or_timestamp(value: &ArrayRef) -> Result<ArrayRef> {
    match value.data_type() {
        DataType::Date32 | DataType::Timestamp(_, _) => Ok(value.clone()),
        _ => cast_to(value, &DataType::Date32),
    }
}

/// `date_format`: the pattern's letters (`yyyy`, `MM`, `dd`, `HH`, `mm`, `ss`) and the
/// separators `-`, `/`, `:`, space, `_`, `.`, `T` translated to strftime; other letters are
/// an error (no wrong text).
fn date_format(value: &ArrayRef, pattern: &str) -> Result<ArrayRef> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let format = strftime_pattern(pattern)?;
    let timestamps = match value.data_type() {
        DataType::Timestamp(_, _) => value.clone(),
        _ => cast_to(
            value,
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        )?,
    };
    let options = FormatOptions::new().with_timestamp_tz_format(Some(&format));
    let options = options.with_timestamp_format(Some(&format));
    let formatter = ArrayFormatter::try_new(timestamps.as_ref(), &options)
        .map_err(|e| invalid(format!("date_format: {e}")))?;
    let text: StringArray = (0..timestamps.len())
        .map(|row| (!timestamps.is_null(row)).then(|| formatter.value(row).to_string()))
        .collect();
    Ok(Arc::new(text))
}

/// The strftime spelling of a Spark datetime pattern made of the supported letters.
pub(crate) fn strftime_pattern(pattern: &str) -> Result<String> {
    let mut format = String::new();
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        let piece = match (c, run) {
            ('y', 4) => "%Y",
            ('M', 2) => "%m",
            ('d', 2) => "%d",
            ('H', 2) => "%H",
            ('m', 2) => "%M",
            ('s', 2) => "%S",
            ('-' | '/' | ':' | ' ' | '_' | '.', _) => {
                format.extend(std::iter::repeat_n(c, run));
                i += run;
                continue;
            }
            _ => {
                return Err(invalid(format!(
                    "date_format pattern {pattern:?}: {} is not supported (only yyyy, MM, dd, \
                     HH, mm, ss and separators)",
                    chars[i..i + run].iter().collect::<String>()
                )))
            }
        };
        format.push_str(piece);
        i += run;
    }
    Ok(format)
}

/// The type of the first operand that is not the NULL type (Null when all are).
fn common_type<'a>(values: impl Iterator<Item = &'a ArrayRef>) -> DataType {
    let types: Vec<&DataType> = values.map(|v| v.data_type()).collect();
    let known: Vec<&DataType> = types
        .iter()
        .copied()
        .filter(|t| **t != DataType::Null)
        .collect();
    if known.iter().all(|t| is_number(t)) && known.len() > 1 {
        let mut ty = known[0].clone();
        for next in &known[1..] {
            ty = numeric_type(&ty, next).unwrap_or(DataType::Float64);
        }
        return ty;
    }
    known.first().map_or(DataType::Null, |t| (*t).clone())
}

fn is_number(ty: &DataType) -> bool {
    ty.is_integer() || ty.is_floating() || matches!(ty, DataType::Decimal128(_, _))
}

fn strings(value: &ArrayRef) -> Result<StringArray> {
    let text = cast_to(value, &DataType::Utf8)?;
    Ok(text.as_string::<i32>().clone())
}

fn literal_int(expr: &ValueExpr, what: &str) -> Result<i64> {
    let value = match expr {
        ValueExpr::Literal(value) => Some(value),
        ValueExpr::Negate(inner) => match inner.as_ref() {
            ValueExpr::Literal(value) => {
                return literal_int(&ValueExpr::Literal(value.clone()), what).map(|v| -v)
            }
            _ => None,
        },
        _ => None,
    };
    match value {
        Some(Scalar::Int8(v)) => Ok(i64::from(*v)),
        Some(Scalar::Int16(v)) => Ok(i64::from(*v)),
        Some(Scalar::Int32(v)) => Ok(i64::from(*v)),
        Some(Scalar::Int64(v)) => Ok(*v),
        _ => Err(invalid(format!("the {what} must be an integer literal"))),
    }
}

fn literal_text(expr: &ValueExpr, what: &str) -> Result<String> {
    match expr {
        ValueExpr::Literal(Scalar::Utf8(text)) => Ok(text.clone()),
        _ => Err(invalid(format!("the {what} must be a string literal"))),
    }
}

/// The Arrow type a `CAST(x AS name)` names (Spark's SQL type names).
pub(crate) fn type_named(name: &str) -> Option<DataType> {
    let lower = name.trim().to_ascii_lowercase();
    Some(match lower.as_str() {
        "boolean" => DataType::Boolean,
        "tinyint" | "byte" => DataType::Int8,
        "smallint" | "short" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "bigint" | "long" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" => DataType::Float64,
        "string" => DataType::Utf8,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        _ => {
            let inner = lower.strip_prefix("decimal")?.trim();
            let inner = inner.strip_prefix('(')?.strip_suffix(')')?;
            let (p, s) = inner.split_once(',')?;
            DataType::Decimal128(p.trim().parse().ok()?, s.trim().parse().ok()?)
        }
    })
}
