//! Row filters: an expression tree ([`Expr`]), a SQL-like parser ([`parse_sql`]), pyarrow's
//! disjunctive normal form ([`from_dnf`]), exact row evaluation over Arrow batches
//! ([`evaluate`]) and conservative file skipping over a snapshot's file list
//! ([`files_may_match`], spec "Per-file Statistics", catalogue H-ST and G-25).
//!
//! Semantics are SQL's three-valued logic: a comparison with a NULL operand is NULL, NULL is
//! not true, `NOT NULL` is NULL, `x IN (1, NULL)` is NULL unless `x = 1`. Floating point values
//! compare by the IEEE total order after folding `-0.0` into `0.0`, so NaN equals NaN and is
//! greater than every other number (Spark's ordering). A literal is converted to the type of
//! the column it is compared with; a literal between two representable values (`int_col > 1.5`,
//! `date_col < TIMESTAMP '2021-01-01 12:00:00'`) or outside the type's range is compared
//! exactly, not rounded.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use arrow::compute::kernels::boolean::{and, and_kleene, is_not_null, is_null, not, or, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::compute::kernels::comparison::{like, nlike};
use arrow::compute::{cast, nullif, prep_null_mask_filter};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Datum, Decimal128Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, NullArray, RecordBatch, RecordBatchOptions,
    StringArray, StructArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray, TimestampSecondArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, TimeUnit};
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime};

use crate::error::{Error, Result};

/// A literal value in a filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// SQL NULL.
    Null,
    Boolean(bool),
    Int64(i64),
    Float64(f64),
    /// An exact decimal number, `value × 10^-scale`.
    Decimal {
        value: i128,
        scale: u8,
    },
    Utf8(String),
    Binary(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// An instant: microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp(i64),
    /// A wall-clock time without zone: microseconds since 1970-01-01 00:00:00.
    TimestampNtz(i64),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// A filter expression.
///
/// A column is named by its path of field names (`["a", "b"]` is the field `b` of the struct
/// column `a`). When a path is resolved against a schema, a run of parts joined by `.` may also
/// name one field, so `["a.b"]` and `["a", "b"]` both find a top-level column called `a.b` or
/// the nested field `a.b`. Names match exactly first, then ASCII-case-insensitively.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Column(Vec<String>),
    Literal(Scalar),
    Compare {
        op: CompareOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `expr IN (list)`, or `expr NOT IN (list)` when `negated`.
    InList {
        expr: Box<Expr>,
        list: Vec<Scalar>,
        negated: bool,
    },
    /// `expr IS NULL`, or `expr IS NOT NULL` when `negated`.
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `expr BETWEEN low AND high` (both ends included), or `NOT BETWEEN` when `negated`.
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    /// `expr LIKE pattern` (`%` any run, `_` one character, `\` escapes), or `NOT LIKE`.
    Like {
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

/// The value of one `(column, op, value)` predicate of pyarrow's DNF filter form.
#[derive(Debug, Clone, PartialEq)]
pub enum DnfLiteral {
    /// One value (`Scalar::Null` stands for Python's `None`).
    Scalar(Scalar),
    /// The collection of an `in` / `not in` predicate.
    List(Vec<Scalar>),
}

impl Scalar {
    /// The value as a one-row Arrow array of its natural type (Int64, Float64, Utf8, Date32,
    /// Timestamp(µs, "UTC") or Timestamp(µs), Decimal128(38, scale), Binary, Boolean, Null),
    /// repeated `rows` times.
    pub fn to_array(&self, rows: usize) -> Result<ArrayRef> {
        Ok(match self {
            Scalar::Null => Arc::new(NullArray::new(rows)),
            Scalar::Boolean(value) => Arc::new(BooleanArray::from(vec![*value; rows])),
            Scalar::Int64(value) => Arc::new(Int64Array::from(vec![*value; rows])),
            Scalar::Float64(value) => Arc::new(Float64Array::from(vec![*value; rows])),
            Scalar::Decimal { value, scale } => Arc::new(
                Decimal128Array::from(vec![*value; rows])
                    .with_precision_and_scale(
                        38,
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

impl CompareOp {
    /// The SQL spelling (`=`, `!=`, `<`, `<=`, `>`, `>=`).
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::NotEq => "!=",
            CompareOp::Lt => "<",
            CompareOp::LtEq => "<=",
            CompareOp::Gt => ">",
            CompareOp::GtEq => ">=",
        }
    }

    /// The operator with its operands swapped: `a op b` ⇔ `b op.swapped() a`.
    pub fn swapped(self) -> Self {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::LtEq => CompareOp::GtEq,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::GtEq => CompareOp::LtEq,
            other => other,
        }
    }

    /// The complement: `NOT (a op b)` ⇔ `a op.negated() b` (both are NULL on NULL operands).
    pub fn negated(self) -> Self {
        match self {
            CompareOp::Eq => CompareOp::NotEq,
            CompareOp::NotEq => CompareOp::Eq,
            CompareOp::Lt => CompareOp::GtEq,
            CompareOp::LtEq => CompareOp::Gt,
            CompareOp::Gt => CompareOp::LtEq,
            CompareOp::GtEq => CompareOp::Lt,
        }
    }
}

impl Expr {
    /// A column reference; dots separate nested field names (`"a.b"` is `["a", "b"]`).
    pub fn column(name: &str) -> Expr {
        Expr::Column(name.split('.').map(str::to_string).collect())
    }

    /// A column reference by its path of field names.
    pub fn column_path<I, S>(parts: I) -> Expr
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Expr::Column(parts.into_iter().map(Into::into).collect())
    }

    /// A literal.
    pub fn literal(value: impl Into<Scalar>) -> Expr {
        Expr::Literal(value.into())
    }

    /// `self op other`.
    pub fn compare(self, op: CompareOp, other: Expr) -> Expr {
        Expr::Compare {
            op,
            left: Box::new(self),
            right: Box::new(other),
        }
    }

    /// `self AND other`.
    pub fn and(self, other: Expr) -> Expr {
        Expr::And(Box::new(self), Box::new(other))
    }

    /// `self OR other`.
    pub fn or(self, other: Expr) -> Expr {
        Expr::Or(Box::new(self), Box::new(other))
    }

    /// `self IS NULL`.
    pub fn is_null(self) -> Expr {
        Expr::IsNull {
            expr: Box::new(self),
            negated: false,
        }
    }

    /// `self IS NOT NULL`.
    pub fn is_not_null(self) -> Expr {
        Expr::IsNull {
            expr: Box::new(self),
            negated: true,
        }
    }

    /// `self IN (list)`, or `self NOT IN (list)` when `negated`.
    pub fn in_list(self, list: Vec<Scalar>, negated: bool) -> Expr {
        Expr::InList {
            expr: Box::new(self),
            list,
            negated,
        }
    }

    /// The AND of all `exprs`, or `None` when there are none.
    pub fn conjunction(exprs: impl IntoIterator<Item = Expr>) -> Option<Expr> {
        exprs.into_iter().reduce(Expr::and)
    }

    /// The OR of all `exprs`, or `None` when there are none.
    pub fn disjunction(exprs: impl IntoIterator<Item = Expr>) -> Option<Expr> {
        exprs.into_iter().reduce(Expr::or)
    }

    /// The referenced columns as dotted names (path parts joined by `.`), each once, in order
    /// of first appearance.
    pub fn columns(&self) -> Vec<String> {
        self.column_paths()
            .into_iter()
            .map(|path| path.join("."))
            .collect()
    }

    /// The referenced column paths, each once, in order of first appearance.
    pub fn column_paths(&self) -> Vec<Vec<String>> {
        let mut paths = Vec::new();
        let mut seen = HashSet::new();
        self.visit_columns(&mut |path| {
            if seen.insert(path.to_vec()) {
                paths.push(path.to_vec());
            }
        });
        paths
    }

    /// The expression that is true exactly where `self` is false (and NULL where `self` is
    /// NULL), with the negation pushed one level down (De Morgan for AND/OR, the complementary
    /// operator for leaves). Exact in three-valued logic.
    pub fn negate(&self) -> Expr {
        match self {
            Expr::Column(_) => self.clone().compare(CompareOp::Eq, Expr::literal(false)),
            Expr::Literal(Scalar::Boolean(value)) => Expr::literal(!value),
            Expr::Literal(Scalar::Null) => Expr::Literal(Scalar::Null),
            Expr::Literal(_) => Expr::Not(Box::new(self.clone())),
            Expr::Compare { op, left, right } => Expr::Compare {
                op: op.negated(),
                left: left.clone(),
                right: right.clone(),
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: expr.clone(),
                list: list.clone(),
                negated: !negated,
            },
            Expr::IsNull { expr, negated } => Expr::IsNull {
                expr: expr.clone(),
                negated: !negated,
            },
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => Expr::Between {
                expr: expr.clone(),
                low: low.clone(),
                high: high.clone(),
                negated: !negated,
            },
            Expr::Like {
                expr,
                pattern,
                negated,
            } => Expr::Like {
                expr: expr.clone(),
                pattern: pattern.clone(),
                negated: !negated,
            },
            Expr::And(left, right) => left.negate().or(right.negate()),
            Expr::Or(left, right) => left.negate().and(right.negate()),
            Expr::Not(inner) => inner.as_ref().clone(),
        }
    }

    fn visit_columns(&self, visit: &mut dyn FnMut(&[String])) {
        match self {
            Expr::Column(path) => visit(path),
            Expr::Literal(_) => {}
            Expr::Compare { left, right, .. } | Expr::And(left, right) | Expr::Or(left, right) => {
                left.visit_columns(visit);
                right.visit_columns(visit);
            }
            Expr::InList { expr, .. }
            | Expr::IsNull { expr, .. }
            | Expr::Like { expr, .. }
            | Expr::Not(expr) => expr.visit_columns(visit),
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit_columns(visit);
                low.visit_columns(visit);
                high.visit_columns(visit);
            }
        }
    }

    fn is_atom(&self) -> bool {
        matches!(self, Expr::Column(_) | Expr::Literal(_))
    }
}

impl std::ops::Not for Expr {
    type Output = Expr;

    /// `NOT self`.
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl fmt::Display for CompareOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl fmt::Display for Scalar {
    /// The value as a SQL literal that [`parse_sql`] reads back (floats print in Rust's
    /// shortest form and read back as decimals of the same value; NaN and infinities print as
    /// the strings `'NaN'`, `'Infinity'`, `'-Infinity'`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Null => f.write_str("NULL"),
            Scalar::Boolean(true) => f.write_str("TRUE"),
            Scalar::Boolean(false) => f.write_str("FALSE"),
            Scalar::Int64(value) => write!(f, "{value}"),
            Scalar::Float64(value) if value.is_nan() => f.write_str("'NaN'"),
            Scalar::Float64(value) if value.is_infinite() && *value > 0.0 => {
                f.write_str("'Infinity'")
            }
            Scalar::Float64(value) if value.is_infinite() => f.write_str("'-Infinity'"),
            Scalar::Float64(value) => write!(f, "{value:?}"),
            Scalar::Decimal { value, scale } => f.write_str(&decimal_text(*value, *scale)),
            Scalar::Utf8(text) => write_quoted(f, text, '\''),
            Scalar::Binary(bytes) => {
                f.write_str("X'")?;
                for byte in bytes {
                    write!(f, "{byte:02X}")?;
                }
                f.write_str("'")
            }
            Scalar::Date(days) => write!(f, "DATE '{}'", date_text(*days)),
            Scalar::Timestamp(micros) => write!(f, "TIMESTAMP '{}'", timestamp_text(*micros)),
            Scalar::TimestampNtz(micros) => {
                write!(f, "TIMESTAMP_NTZ '{}'", timestamp_text(*micros))
            }
        }
    }
}

impl fmt::Display for Expr {
    /// Readable SQL that [`parse_sql`] parses back into an equivalent expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(path) => write_column(f, path),
            Expr::Literal(value) => write!(f, "{value}"),
            Expr::Compare { op, left, right } => {
                write_operand(f, left)?;
                write!(f, " {op} ")?;
                write_operand(f, right)
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                write_operand(f, expr)?;
                f.write_str(if *negated { " NOT IN (" } else { " IN (" })?;
                for (index, value) in list.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value}")?;
                }
                f.write_str(")")
            }
            Expr::IsNull { expr, negated } => {
                write_operand(f, expr)?;
                f.write_str(if *negated { " IS NOT NULL" } else { " IS NULL" })
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                write_operand(f, expr)?;
                f.write_str(if *negated {
                    " NOT BETWEEN "
                } else {
                    " BETWEEN "
                })?;
                write_operand(f, low)?;
                f.write_str(" AND ")?;
                write_operand(f, high)
            }
            Expr::Like {
                expr,
                pattern,
                negated,
            } => {
                write_operand(f, expr)?;
                f.write_str(if *negated { " NOT LIKE " } else { " LIKE " })?;
                write_quoted(f, pattern, '\'')
            }
            Expr::And(left, right) => {
                write_conjunct(f, left)?;
                f.write_str(" AND ")?;
                write_conjunct(f, right)
            }
            Expr::Or(left, right) => write!(f, "{left} OR {right}"),
            Expr::Not(inner) if inner.is_atom() => write!(f, "NOT {inner}"),
            Expr::Not(inner) => write!(f, "NOT ({inner})"),
        }
    }
}

/// Parses a SQL-like filter such as `x > 5 AND p IN ('a', 'b') AND y IS NOT NULL`.
///
/// Grammar (keywords case-insensitive, loosest binding first): `OR`; `AND`; `NOT`; a predicate
/// `operand (= | == | != | <> | < | <= | > | >=) operand`, `operand [NOT] IN (literal, ...)`,
/// `operand IS [NOT] NULL`, `operand [NOT] BETWEEN operand AND operand`,
/// `operand [NOT] LIKE 'pattern'` or a bare operand (a boolean column); an operand is a column,
/// a literal or a parenthesised expression. Columns: identifiers (`[A-Za-z_][A-Za-z0-9_$]*`),
/// `` `backtick quoted` `` or `"double quoted"` names (the quote doubled inside), joined by `.`
/// for nested fields. Literals: `'strings'` (`''` inside for a quote), integers, decimals
/// (`1.50`, exact), floats with an exponent (`1e-3`), `TRUE`, `FALSE`, `NULL`,
/// `DATE 'YYYY-MM-DD'`, `TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.ffffff][Z|±HH:MM]'` (without an offset
/// the time is read as UTC), `TIMESTAMP_NTZ '...'` and `X'hex'` bytes; a `-` may precede a
/// number.
///
/// Errors are [`Error::InvalidArgument`] naming the 1-based character position, what was
/// expected there and what was found.
pub fn parse_sql(text: &str) -> Result<Expr> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        text,
        tokens,
        index: 0,
    };
    let expr = parser.parse_or()?;
    match parser.peek().kind {
        TokenKind::End => Ok(expr),
        _ => Err(parser.unexpected("AND, OR or the end of the filter")),
    }
}

/// Builds a filter from pyarrow's disjunctive normal form: the outer list is an OR of inner
/// lists, each inner list an AND of `(column, op, value)` predicates (pyarrow.parquet
/// `filters`). A flat list of predicates is one inner list.
///
/// Operators (case-insensitive): `=`/`==`, `!=`, `<`, `<=`, `>`, `>=` with one value; `in` and
/// `not in` with a collection; `is` and `is not` with `None` (IS NULL / IS NOT NULL). Columns
/// are dotted names as in [`Expr::column`]. `not in` follows SQL: rows where the column is
/// NULL do not match, and nothing matches when the collection holds `None`. Comparing with
/// `None` through `=`/`!=` is rejected (it would match nothing); use `is`/`is not`. An empty
/// outer list is the filter `TRUE`; an empty inner list is an [`Error::InvalidArgument`].
pub fn from_dnf(disjuncts: Vec<Vec<(String, String, DnfLiteral)>>) -> Result<Expr> {
    let mut alternatives = Vec::with_capacity(disjuncts.len());
    for (index, conjuncts) in disjuncts.into_iter().enumerate() {
        let predicates = conjuncts
            .into_iter()
            .map(|(column, op, value)| dnf_predicate(&column, &op, value))
            .collect::<Result<Vec<_>>>()?;
        let conjunction = Expr::conjunction(predicates).ok_or_else(|| {
            invalid(format!(
                "filter group {index} is an empty list; each group must hold at least one \
                 (column, op, value) predicate"
            ))
        })?;
        alternatives.push(conjunction);
    }
    Ok(Expr::disjunction(alternatives).unwrap_or(Expr::Literal(Scalar::Boolean(true))))
}

/// Evaluates `expr` on every row of `batch` with SQL semantics and returns the selection mask:
/// true where the filter is true, false where it is false or NULL (the mask has no nulls).
///
/// Literals are converted to the type of the column they are compared with: integers and
/// decimals and floats across Int8…Int64, UInt8…UInt64, Float32/Float64 and Decimal128 (exactly,
/// see the module docs), strings to dates, timestamps, numbers and booleans by parsing them,
/// numbers and dates to strings by formatting them, dates and timestamps to each other,
/// timestamps to the column's unit. An instant compared with a timestamp-without-zone column
/// (or a wall-clock time with a zoned column) is read as UTC. Dictionary columns compare by
/// value; a bare column must be boolean. Nested struct fields are named by path; a field of a
/// NULL struct is NULL.
///
/// A column missing from `batch`, or a value that cannot be compared with a column's type, is
/// an [`Error::InvalidArgument`] that names it.
pub fn evaluate(expr: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    let evaluator = Evaluator { batch };
    let mask = evaluator.predicate(expr)?;
    Ok(null_as_false(&mask))
}

/// Decides for every file of a snapshot's file list whether it COULD hold a row matching
/// `expr`: false only when no row of the file can match (catalogue G-25).
///
/// `files` has the columns of the snapshot's file list: `partition_values` (struct of typed
/// partition columns, logical names), `num_records` (Int64) and, when statistics were loaded,
/// `min_values`, `max_values`, `null_count` (structs mirroring the data schema, logical names)
/// and `tight_bounds`; missing columns mean no information.
///
/// The rules:
/// * A sub-expression that references only partition columns (or none) is evaluated exactly
///   on `partition_values`, IS NULL included.
/// * AND keeps a file when both sides may match, OR when either side may; NOT is pushed down
///   by [`Expr::negate`], which is exact, so nothing is lost.
/// * A data column leaf uses its statistics; a NULL statistic (missing stats, a null struct, a
///   column without stats) keeps the file. Only the guarantees that hold for both tight and
///   wide bounds (H-ST03, H-ST04) are used, so `tight_bounds` and deletion vectors need no
///   special handling: min ≤ every valid value ≤ max; `nullCount = 0` ⇒ no valid row is NULL;
///   `nullCount = numRecords` ⇒ every valid row is NULL; any other count says nothing.
/// * Every comparison, IN, BETWEEN, LIKE and IS NOT NULL is dropped when every row is NULL.
///   `x = v` is dropped when v < min or v > max; `x < v` when min ≥ v; `x <= v` when min > v;
///   `x > v` when max ≤ v; `x >= v` when max < v; `x != v` when min = max = v (integers,
///   decimals and dates only); `x IN (...)` when every element is dropped; `x NOT IN (...)`
///   when any element would drop `x != e`, or the list holds NULL; `IS NULL` when
///   `nullCount = 0` (top-level columns only: a nested field is also NULL under a NULL struct,
///   which a writer may not have counted).
/// * Strings: the max may be a truncated prefix (H-ST05), so values above it that share it may
///   exist: an upper-bound check drops only when the value is above max AND does not start
///   with max. A LIKE with a literal prefix `p` is the range of strings starting with `p`.
/// * Floats: NaN may be absent from min/max (Parquet-style) and sorts above every number, so
///   `>`, `>=`, `!=` and `= NaN` never drop on the max; NaN statistics count as missing.
/// * Timestamps: statistics are truncated to milliseconds (H-ST05), so max + 999 µs and
///   min − 999 µs are used, and `!=` never drops.
///
/// A literal that cannot be compared with a column's statistics type is an
/// [`Error::InvalidArgument`], as in [`evaluate`].
pub fn files_may_match(expr: &Expr, files: &RecordBatch) -> Result<BooleanArray> {
    let context = SkippingContext::new(files)?;
    context.may_match(expr)
}

/// The part of `expr` that only involves `partition_columns`, as a filter implied by `expr`
/// (every row matching `expr` matches it), or `None` when there is none.
///
/// Conjuncts of a top-level AND that reference only partition columns (or no columns) are
/// kept; an OR is kept when both sides have such a part (`(p = 1 AND x > 5) OR p = 2` gives
/// `p = 1 OR p = 2`); NOT is pushed down first. Names compare ASCII-case-insensitively; a
/// nested path counts as its dotted name.
pub fn partition_only(expr: &Expr, partition_columns: &[String]) -> Option<Expr> {
    let is_partition = |path: &[String]| {
        let name = path.join(".");
        partition_columns
            .iter()
            .any(|column| column.eq_ignore_ascii_case(&name))
    };
    implied_partition_filter(expr, &is_partition)
}

// ---------------------------------------------------------------------------------------------
// Display helpers

fn write_column(f: &mut fmt::Formatter<'_>, path: &[String]) -> fmt::Result {
    for (index, part) in path.iter().enumerate() {
        if index > 0 {
            f.write_str(".")?;
        }
        if is_plain_identifier(part) {
            f.write_str(part)?;
        } else {
            write_quoted(f, part, '`')?;
        }
    }
    Ok(())
}

fn write_operand(f: &mut fmt::Formatter<'_>, expr: &Expr) -> fmt::Result {
    if expr.is_atom() {
        write!(f, "{expr}")
    } else {
        write!(f, "({expr})")
    }
}

fn write_conjunct(f: &mut fmt::Formatter<'_>, expr: &Expr) -> fmt::Result {
    if matches!(expr, Expr::Or(..)) {
        write!(f, "({expr})")
    } else {
        write!(f, "{expr}")
    }
}

fn write_quoted(f: &mut fmt::Formatter<'_>, text: &str, quote: char) -> fmt::Result {
    use fmt::Write;
    f.write_char(quote)?;
    for c in text.chars() {
        if c == quote {
            f.write_char(quote)?;
        }
        f.write_char(c)?;
    }
    f.write_char(quote)
}

fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !RESERVED.iter().any(|word| word.eq_ignore_ascii_case(name))
}

fn decimal_text(value: i128, scale: u8) -> String {
    let digits = value.unsigned_abs().to_string();
    let sign = if value < 0 { "-" } else { "" };
    let scale = usize::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let split = padded.len() - scale;
    let (whole, fraction) = padded.split_at(split);
    format!("{sign}{whole}.{fraction}")
}

fn date_text(days: i32) -> String {
    NaiveDate::from_num_days_from_ce_opt(days.saturating_add(UNIX_EPOCH_DAYS_FROM_CE))
        .map(|date| date.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| format!("<day {days} out of range>"))
}

fn timestamp_text(micros: i64) -> String {
    let Some(time) = DateTime::from_timestamp_micros(micros) else {
        return format!("<{micros} µs out of range>");
    };
    let format = if micros.rem_euclid(MICROS_PER_SECOND) == 0 {
        "%Y-%m-%d %H:%M:%S"
    } else {
        "%Y-%m-%d %H:%M:%S%.6f"
    };
    time.naive_utc().format(format).to_string()
}

// ---------------------------------------------------------------------------------------------
// Tokenizer and parser

const RESERVED: &[&str] = &[
    "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "LIKE",
];

#[derive(Debug, Clone, PartialEq)]
enum TokenKind {
    Word(String),
    QuotedName(String),
    Str(String),
    Hex(Vec<u8>),
    Number(String),
    Op(CompareOp, &'static str),
    LParen,
    RParen,
    Comma,
    Dot,
    Minus,
    End,
}

#[derive(Debug, Clone)]
struct Token {
    kind: TokenKind,
    /// 1-based character position of the token's first character.
    position: usize,
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while let Some(&c) = chars.get(index) {
        let position = index + 1;
        let at = |offset: usize| chars.get(index + offset).copied();
        let (kind, length) = match c {
            c if c.is_whitespace() => {
                index += 1;
                continue;
            }
            '(' => (TokenKind::LParen, 1),
            ')' => (TokenKind::RParen, 1),
            ',' => (TokenKind::Comma, 1),
            '.' => (TokenKind::Dot, 1),
            '-' => (TokenKind::Minus, 1),
            '=' if at(1) == Some('=') => (TokenKind::Op(CompareOp::Eq, "=="), 2),
            '=' => (TokenKind::Op(CompareOp::Eq, "="), 1),
            '!' if at(1) == Some('=') => (TokenKind::Op(CompareOp::NotEq, "!="), 2),
            '<' if at(1) == Some('=') => (TokenKind::Op(CompareOp::LtEq, "<="), 2),
            '<' if at(1) == Some('>') => (TokenKind::Op(CompareOp::NotEq, "<>"), 2),
            '<' => (TokenKind::Op(CompareOp::Lt, "<"), 1),
            '>' if at(1) == Some('=') => (TokenKind::Op(CompareOp::GtEq, ">="), 2),
            '>' => (TokenKind::Op(CompareOp::Gt, ">"), 1),
            '\'' => {
                let (value, length) = read_quoted(text, &chars, index, '\'', "string")?;
                (TokenKind::Str(value), length)
            }
            '`' | '"' => {
                let (value, length) = read_quoted(text, &chars, index, c, "quoted name")?;
                (TokenKind::QuotedName(value), length)
            }
            'x' | 'X' if at(1) == Some('\'') => {
                let (value, length) = read_quoted(text, &chars, index + 1, '\'', "hex string")?;
                let bytes = hex_bytes(&value).ok_or_else(|| {
                    parse_error(
                        text,
                        position,
                        "an even number of hex digits in X'...'",
                        &format!("X'{value}'"),
                    )
                })?;
                (TokenKind::Hex(bytes), length + 1)
            }
            c if c.is_ascii_digit() => {
                let length = number_length(&chars, index);
                let number: String = chars.iter().skip(index).take(length).collect();
                (TokenKind::Number(number), length)
            }
            c if c.is_alphabetic() || c == '_' => {
                let word: String = chars
                    .iter()
                    .skip(index)
                    .take_while(|c| c.is_alphanumeric() || **c == '_' || **c == '$')
                    .collect();
                let length = word.chars().count();
                (TokenKind::Word(word), length)
            }
            other => {
                return Err(parse_error(
                    text,
                    position,
                    "a column, a value, an operator or a parenthesis",
                    &format!("'{other}'"),
                ))
            }
        };
        tokens.push(Token { kind, position });
        index += length;
    }
    tokens.push(Token {
        kind: TokenKind::End,
        position: chars.len() + 1,
    });
    Ok(tokens)
}

/// Reads a `quote`-delimited run starting at `start` (where the opening quote is), with the
/// quote doubled inside; returns the content and the number of characters consumed.
fn read_quoted(
    text: &str,
    chars: &[char],
    start: usize,
    quote: char,
    what: &str,
) -> Result<(String, usize)> {
    let mut value = String::new();
    let mut index = start + 1;
    loop {
        match chars.get(index) {
            None => {
                return Err(parse_error(
                    text,
                    start + 1,
                    &format!("a closing {quote} for the {what} starting here"),
                    "end of input",
                ))
            }
            Some(&c) if c == quote => {
                if chars.get(index + 1) == Some(&quote) {
                    value.push(quote);
                    index += 2;
                } else {
                    return Ok((value, index + 1 - start));
                }
            }
            Some(&c) => {
                value.push(c);
                index += 1;
            }
        }
    }
}

fn number_length(chars: &[char], start: usize) -> usize {
    let digits_from = |from: usize| {
        chars
            .iter()
            .skip(from)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut end = start + digits_from(start);
    if chars.get(end) == Some(&'.') {
        end += 1 + digits_from(end + 1);
    }
    if matches!(chars.get(end), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(end + 1), Some('+' | '-')));
        let exponent = digits_from(end + 1 + sign);
        if exponent > 0 {
            end += 1 + sign + exponent;
        }
    }
    end - start
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| {
            text.get(at..at + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}

fn parse_error(text: &str, position: usize, expected: &str, found: &str) -> Error {
    invalid(format!(
        "cannot parse filter {text:?}: expected {expected} at position {position}, found {found}"
    ))
}

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    index: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        self.tokens
            .get(self.index)
            .or_else(|| self.tokens.last())
            .cloned()
            .unwrap_or(Token {
                kind: TokenKind::End,
                position: self.text.chars().count() + 1,
            })
    }

    fn advance(&mut self) -> Token {
        let token = self.peek();
        if self.index < self.tokens.len() {
            self.index += 1;
        }
        token
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Word(word) if word.eq_ignore_ascii_case(keyword))
    }

    fn eat_keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        if found {
            self.advance();
        }
        found
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.unexpected(keyword))
        }
    }

    fn unexpected(&self, expected: &str) -> Error {
        let token = self.peek();
        parse_error(
            self.text,
            token.position,
            expected,
            &describe_token(&token.kind),
        )
    }

    fn parse_or(&mut self) -> Result<Expr> {
        let mut expr = self.parse_and()?;
        while self.eat_keyword("OR") {
            expr = expr.or(self.parse_and()?);
        }
        Ok(expr)
    }

    fn parse_and(&mut self) -> Result<Expr> {
        let mut expr = self.parse_not()?;
        while self.eat_keyword("AND") {
            expr = expr.and(self.parse_not()?);
        }
        Ok(expr)
    }

    fn parse_not(&mut self) -> Result<Expr> {
        if self.eat_keyword("NOT") {
            Ok(!self.parse_not()?)
        } else {
            self.parse_predicate()
        }
    }

    fn parse_predicate(&mut self) -> Result<Expr> {
        let left = self.parse_operand()?;
        if let TokenKind::Op(op, _) = self.peek().kind {
            self.advance();
            let right = self.parse_operand()?;
            return Ok(left.compare(op, right));
        }
        if self.eat_keyword("IS") {
            let negated = self.eat_keyword("NOT");
            self.expect_keyword("NULL")?;
            return Ok(Expr::IsNull {
                expr: Box::new(left),
                negated,
            });
        }
        let negated = self.eat_keyword("NOT");
        if self.eat_keyword("IN") {
            let list = self.parse_literal_list()?;
            return Ok(left.in_list(list, negated));
        }
        if self.eat_keyword("BETWEEN") {
            let low = self.parse_operand()?;
            self.expect_keyword("AND")?;
            let high = self.parse_operand()?;
            return Ok(Expr::Between {
                expr: Box::new(left),
                low: Box::new(low),
                high: Box::new(high),
                negated,
            });
        }
        if self.eat_keyword("LIKE") {
            let TokenKind::Str(pattern) = self.peek().kind else {
                return Err(self.unexpected("a quoted pattern after LIKE"));
            };
            self.advance();
            return Ok(Expr::Like {
                expr: Box::new(left),
                pattern,
                negated,
            });
        }
        if negated {
            return Err(self.unexpected("IN, BETWEEN or LIKE after NOT"));
        }
        Ok(left)
    }

    fn parse_literal_list(&mut self) -> Result<Vec<Scalar>> {
        if !matches!(self.peek().kind, TokenKind::LParen) {
            return Err(self.unexpected("'(' after IN"));
        }
        self.advance();
        let mut list = Vec::new();
        if matches!(self.peek().kind, TokenKind::RParen) {
            self.advance();
            return Ok(list);
        }
        loop {
            let token = self.peek();
            match self.parse_operand()? {
                Expr::Literal(value) => list.push(value),
                other => {
                    return Err(parse_error(
                        self.text,
                        token.position,
                        "a literal value in the IN list",
                        &format!("{other}"),
                    ))
                }
            }
            match self.advance().kind {
                TokenKind::Comma => continue,
                TokenKind::RParen => return Ok(list),
                _ => {
                    self.index = self.index.saturating_sub(1);
                    return Err(self.unexpected("',' or ')' in the IN list"));
                }
            }
        }
    }

    fn parse_operand(&mut self) -> Result<Expr> {
        let token = self.peek();
        match token.kind {
            TokenKind::LParen => {
                self.advance();
                let expr = self.parse_or()?;
                if !matches!(self.peek().kind, TokenKind::RParen) {
                    return Err(self.unexpected("')'"));
                }
                self.advance();
                Ok(expr)
            }
            TokenKind::Minus => {
                self.advance();
                let TokenKind::Number(text) = self.peek().kind else {
                    return Err(self.unexpected("a number after '-'"));
                };
                self.advance();
                Ok(Expr::Literal(number_literal(&format!("-{text}"))))
            }
            TokenKind::Number(text) => {
                self.advance();
                Ok(Expr::Literal(number_literal(&text)))
            }
            TokenKind::Str(value) => {
                self.advance();
                Ok(Expr::Literal(Scalar::Utf8(value)))
            }
            TokenKind::Hex(bytes) => {
                self.advance();
                Ok(Expr::Literal(Scalar::Binary(bytes)))
            }
            TokenKind::QuotedName(name) => {
                self.advance();
                self.parse_column_rest(name)
            }
            TokenKind::Word(word) => self.parse_word_operand(word),
            _ => Err(self.unexpected("a column name or a value")),
        }
    }

    fn parse_word_operand(&mut self, word: String) -> Result<Expr> {
        let upper = word.to_ascii_uppercase();
        let literal = match upper.as_str() {
            "TRUE" => Some(Scalar::Boolean(true)),
            "FALSE" => Some(Scalar::Boolean(false)),
            "NULL" => Some(Scalar::Null),
            _ => None,
        };
        if let Some(literal) = literal {
            self.advance();
            return Ok(Expr::Literal(literal));
        }
        if RESERVED.contains(&upper.as_str()) {
            return Err(self.unexpected("a column name or a value"));
        }
        self.advance();
        if matches!(upper.as_str(), "DATE" | "TIMESTAMP" | "TIMESTAMP_NTZ") {
            let next = self.peek();
            if let TokenKind::Str(value) = next.kind {
                self.advance();
                return typed_literal(self.text, &upper, &value, next.position).map(Expr::Literal);
            }
        }
        self.parse_column_rest(word)
    }

    fn parse_column_rest(&mut self, first: String) -> Result<Expr> {
        let mut path = vec![first];
        while matches!(self.peek().kind, TokenKind::Dot) {
            self.advance();
            match self.peek().kind {
                TokenKind::Word(part) | TokenKind::QuotedName(part) => {
                    self.advance();
                    path.push(part);
                }
                _ => return Err(self.unexpected("a field name after '.'")),
            }
        }
        Ok(Expr::Column(path))
    }
}

fn describe_token(kind: &TokenKind) -> String {
    match kind {
        TokenKind::Word(word) => format!("'{word}'"),
        TokenKind::QuotedName(name) => format!("the quoted name `{name}`"),
        TokenKind::Str(value) => format!("the string '{value}'"),
        TokenKind::Hex(bytes) => format!("{}", Scalar::Binary(bytes.clone())),
        TokenKind::Number(number) => format!("the number {number}"),
        TokenKind::Op(_, symbol) => format!("'{symbol}'"),
        TokenKind::LParen => "'('".to_string(),
        TokenKind::RParen => "')'".to_string(),
        TokenKind::Comma => "','".to_string(),
        TokenKind::Dot => "'.'".to_string(),
        TokenKind::Minus => "'-'".to_string(),
        TokenKind::End => "end of input".to_string(),
    }
}

/// A numeric literal: an integer (Int64, or a decimal when it overflows), a decimal when it has
/// a point and no exponent (and fits 38 digits), a float otherwise.
fn number_literal(text: &str) -> Scalar {
    if let Ok(value) = text.parse::<i64>() {
        return Scalar::Int64(value);
    }
    let has_exponent = text.contains(['e', 'E']);
    if !has_exponent {
        if let Some(decimal) = parse_decimal_literal(text) {
            return decimal;
        }
    }
    text.parse::<f64>()
        .map(Scalar::Float64)
        .unwrap_or(Scalar::Null)
}

fn parse_decimal_literal(text: &str) -> Option<Scalar> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let scale = u8::try_from(fraction.len()).ok()?;
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches(['-', '0']).len();
    if significant > 38 || scale > 38 {
        return None;
    }
    let value = digits.parse::<i128>().ok()?;
    Some(Scalar::Decimal { value, scale })
}

fn typed_literal(text: &str, keyword: &str, value: &str, position: usize) -> Result<Scalar> {
    let parsed = match keyword {
        "DATE" => parse_date_text(value).map(Scalar::Date),
        "TIMESTAMP" => parse_timestamp_text(value).map(|(micros, _)| Scalar::Timestamp(micros)),
        _ => parse_timestamp_text(value).map(|(micros, _)| Scalar::TimestampNtz(micros)),
    };
    parsed.ok_or_else(|| {
        let expected = if keyword == "DATE" {
            "a date 'YYYY-MM-DD'".to_string()
        } else {
            format!("a {keyword} 'YYYY-MM-DD HH:MM:SS[.ffffff][Z|±HH:MM]'")
        };
        parse_error(text, position, &expected, &format!("'{value}'"))
    })
}

// ---------------------------------------------------------------------------------------------
// DNF

fn dnf_predicate(column: &str, op: &str, value: DnfLiteral) -> Result<Expr> {
    let normalized = op
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let target = Expr::column(column);
    let describe = || format!("({column:?}, {op:?}, {})", dnf_value_text(&value));
    let comparison = match normalized.as_str() {
        "=" | "==" => Some(CompareOp::Eq),
        "!=" => Some(CompareOp::NotEq),
        "<" => Some(CompareOp::Lt),
        "<=" => Some(CompareOp::LtEq),
        ">" => Some(CompareOp::Gt),
        ">=" => Some(CompareOp::GtEq),
        _ => None,
    };
    match (normalized.as_str(), comparison, &value) {
        (_, Some(_), DnfLiteral::Scalar(Scalar::Null)) => Err(invalid(format!(
            "filter {} compares with None, which matches no row; use 'is' or 'is not' to test \
             for null",
            describe()
        ))),
        (_, Some(op), DnfLiteral::Scalar(scalar)) => {
            Ok(target.compare(op, Expr::Literal(scalar.clone())))
        }
        (_, Some(_), DnfLiteral::List(_)) => Err(invalid(format!(
            "filter {} compares with a collection; use 'in' or 'not in'",
            describe()
        ))),
        ("in" | "not in", _, DnfLiteral::List(list)) => {
            Ok(target.in_list(list.clone(), normalized == "not in"))
        }
        ("in" | "not in", _, DnfLiteral::Scalar(_)) => Err(invalid(format!(
            "filter {} needs a collection (list, set or tuple) as its value",
            describe()
        ))),
        ("is", _, DnfLiteral::Scalar(Scalar::Null)) => Ok(target.is_null()),
        ("is not", _, DnfLiteral::Scalar(Scalar::Null)) => Ok(target.is_not_null()),
        ("is" | "is not", _, _) => Err(invalid(format!(
            "filter {} needs None as its value",
            describe()
        ))),
        _ => Err(invalid(format!(
            "filter {} has an unsupported operator; expected one of =, ==, !=, <, <=, >, >=, \
             in, not in, is, is not",
            describe()
        ))),
    }
}

fn dnf_value_text(value: &DnfLiteral) -> String {
    match value {
        DnfLiteral::Scalar(Scalar::Null) => "None".to_string(),
        DnfLiteral::Scalar(scalar) => scalar.to_string(),
        DnfLiteral::List(list) => {
            let items: Vec<String> = list.iter().map(ToString::to_string).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Row evaluation

struct Evaluator<'b> {
    batch: &'b RecordBatch,
}

enum Operand<'e> {
    Array(ArrayRef, String),
    Literal(&'e Scalar),
}

impl Evaluator<'_> {
    fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// The three-valued truth of `expr` (NULL where unknown).
    fn predicate(&self, expr: &Expr) -> Result<BooleanArray> {
        match expr {
            Expr::Column(path) => {
                let array = to_domain(&self.column(path)?, &path.join("."))?;
                array.as_boolean_opt().cloned().ok_or_else(|| {
                    invalid(format!(
                        "column '{}' of type {} is used as a condition but is not boolean",
                        path.join("."),
                        array.data_type()
                    ))
                })
            }
            Expr::Literal(Scalar::Boolean(value)) => {
                Ok(BooleanArray::from(vec![*value; self.rows()]))
            }
            Expr::Literal(Scalar::Null) => Ok(BooleanArray::new_null(self.rows())),
            Expr::Literal(other) => Err(invalid(format!(
                "the literal {other} is used as a condition but is not boolean"
            ))),
            Expr::Compare { op, left, right } => self.compare(*op, left, right),
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let operand = self.operand(expr)?;
                let mut any = BooleanArray::from(vec![false; self.rows()]);
                for value in list {
                    let equal = self.compare_operand(&operand, CompareOp::Eq, value)?;
                    any = or_kleene(&any, &equal).map_err(kernel_error(expr))?;
                }
                negate_if(any, *negated, expr)
            }
            Expr::IsNull { expr, negated } => {
                let array = match self.operand(expr)? {
                    Operand::Array(array, _) => array,
                    Operand::Literal(value) => value.to_array(self.rows())?,
                };
                let result = if *negated {
                    is_not_null(&array)
                } else {
                    is_null(&array)
                };
                result.map_err(kernel_error(expr))
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let above = self.compare(CompareOp::GtEq, expr, low)?;
                let below = self.compare(CompareOp::LtEq, expr, high)?;
                let inside = and_kleene(&above, &below).map_err(kernel_error(expr))?;
                negate_if(inside, *negated, expr)
            }
            Expr::Like {
                expr,
                pattern,
                negated,
            } => self.like(expr, pattern, *negated),
            Expr::And(left, right) => and_kleene(&self.predicate(left)?, &self.predicate(right)?)
                .map_err(kernel_error(expr)),
            Expr::Or(left, right) => or_kleene(&self.predicate(left)?, &self.predicate(right)?)
                .map_err(kernel_error(expr)),
            Expr::Not(inner) => not(&self.predicate(inner)?).map_err(kernel_error(expr)),
        }
    }

    fn operand<'e>(&self, expr: &'e Expr) -> Result<Operand<'e>> {
        Ok(match expr {
            Expr::Column(path) => Operand::Array(self.column(path)?, path.join(".")),
            Expr::Literal(value) => Operand::Literal(value),
            other => Operand::Array(Arc::new(self.predicate(other)?), other.to_string()),
        })
    }

    fn column(&self, path: &[String]) -> Result<ArrayRef> {
        let schema = self.batch.schema();
        lookup(schema.fields(), self.batch.columns(), path)?.ok_or_else(|| {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            invalid(format!(
                "unknown column '{}' in the filter; the columns are: {}",
                path.join("."),
                names.join(", ")
            ))
        })
    }

    fn compare(&self, op: CompareOp, left: &Expr, right: &Expr) -> Result<BooleanArray> {
        match (self.operand(left)?, self.operand(right)?) {
            (array @ Operand::Array(..), Operand::Literal(value)) => {
                self.compare_operand(&array, op, value)
            }
            (Operand::Literal(value), array @ Operand::Array(..)) => {
                self.compare_operand(&array, op.swapped(), value)
            }
            (Operand::Array(left, left_name), Operand::Array(right, right_name)) => {
                compare_arrays(op, &left, &left_name, &right, &right_name)
            }
            (Operand::Literal(left), Operand::Literal(right)) => {
                let array = Operand::Array(left.to_array(self.rows())?, left.to_string());
                self.compare_operand(&array, op, right)
            }
        }
    }

    fn compare_operand(
        &self,
        operand: &Operand<'_>,
        op: CompareOp,
        value: &Scalar,
    ) -> Result<BooleanArray> {
        match operand {
            Operand::Array(array, name) => compare_with_literal(array, name, op, value),
            Operand::Literal(left) => {
                let array = left.to_array(self.rows())?;
                compare_with_literal(&array, &left.to_string(), op, value)
            }
        }
    }

    fn like(&self, expr: &Expr, pattern: &str, negated: bool) -> Result<BooleanArray> {
        let (array, name) = match self.operand(expr)? {
            Operand::Array(array, name) => (array, name),
            Operand::Literal(value) => (value.to_array(self.rows())?, value.to_string()),
        };
        let array = to_domain(&array, &name)?;
        if !matches!(
            array.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ) {
            return Err(invalid(format!(
                "LIKE needs a string, but '{name}' is of type {}",
                array.data_type()
            )));
        }
        let pattern = cast(&StringArray::from(vec![pattern]), array.data_type())
            .map_err(|error| invalid(format!("LIKE pattern for '{name}': {error}")))?;
        let pattern = arrow_array::Scalar::new(pattern);
        let result = if negated {
            nlike(&array, &pattern)
        } else {
            like(&array, &pattern)
        };
        result.map_err(|error| invalid(format!("cannot evaluate LIKE on '{name}': {error}")))
    }
}

fn negate_if(mask: BooleanArray, negated: bool, expr: &Expr) -> Result<BooleanArray> {
    if negated {
        not(&mask).map_err(kernel_error(expr))
    } else {
        Ok(mask)
    }
}

fn kernel_error(expr: &Expr) -> impl Fn(ArrowError) -> Error + '_ {
    move |error| invalid(format!("cannot evaluate the filter `{expr}`: {error}"))
}

/// `array op value` with `value` converted to the array's type; NULL where `array` is NULL.
fn compare_with_literal(
    array: &ArrayRef,
    name: &str,
    op: CompareOp,
    value: &Scalar,
) -> Result<BooleanArray> {
    let array = to_domain(array, name)?;
    match normalize_comparison(op, value, array.data_type(), name)? {
        Normalized::Const(None) => Ok(BooleanArray::new_null(array.len())),
        Normalized::Const(Some(constant)) => Ok(constant_where_valid(array.as_ref(), constant)),
        Normalized::Compare(op, literal) => {
            apply_compare(op, &array, &arrow_array::Scalar::new(literal))
                .map_err(|error| invalid(format!("cannot compare '{name}' with {value}: {error}")))
        }
    }
}

fn compare_arrays(
    op: CompareOp,
    left: &ArrayRef,
    left_name: &str,
    right: &ArrayRef,
    right_name: &str,
) -> Result<BooleanArray> {
    let mut left = to_domain(left, left_name)?;
    let mut right = to_domain(right, right_name)?;
    let (left_type, right_type) = (left.data_type().clone(), right.data_type().clone());
    let mismatch = |detail: String| {
        invalid(format!(
            "cannot compare '{left_name}' ({left_type}) with '{right_name}' ({right_type}): \
             {detail}"
        ))
    };
    if left_type != right_type {
        let common = common_type(&left_type, &right_type).unwrap_or_else(|| left_type.clone());
        left = cast(&left, &common).map_err(|error| mismatch(error.to_string()))?;
        right = cast(&right, &common).map_err(|error| mismatch(error.to_string()))?;
    }
    apply_compare(op, &left, &right).map_err(|error| mismatch(error.to_string()))
}

/// The type two different column types are compared in: wide decimals for integers and
/// decimals (exact), Float64 when a float is involved, the timestamp type for a date and a
/// timestamp; `None` to convert the right side to the left's type.
fn common_type(left: &DataType, right: &DataType) -> Option<DataType> {
    let decimal_scale = |data_type: &DataType| match data_type {
        DataType::Decimal128(_, scale) => Some(*scale),
        other if integer_range(other).is_some() => Some(0),
        _ => None,
    };
    if let (Some(left_scale), Some(right_scale)) = (decimal_scale(left), decimal_scale(right)) {
        return Some(DataType::Decimal128(38, left_scale.max(right_scale)));
    }
    let numeric = |data_type: &DataType| {
        decimal_scale(data_type).is_some() || matches!(data_type, DataType::Float64)
    };
    if numeric(left) && numeric(right) {
        return Some(DataType::Float64);
    }
    match (left, right) {
        (DataType::Date32, timestamp @ DataType::Timestamp(..)) => Some(timestamp.clone()),
        (DataType::Timestamp(..), _) => Some(left.clone()),
        _ => None,
    }
}

fn apply_compare(
    op: CompareOp,
    left: &dyn Datum,
    right: &dyn Datum,
) -> std::result::Result<BooleanArray, ArrowError> {
    match op {
        CompareOp::Eq => cmp::eq(left, right),
        CompareOp::NotEq => cmp::neq(left, right),
        CompareOp::Lt => cmp::lt(left, right),
        CompareOp::LtEq => cmp::lt_eq(left, right),
        CompareOp::Gt => cmp::gt(left, right),
        CompareOp::GtEq => cmp::gt_eq(left, right),
    }
}

/// `constant` where `array` is valid, NULL where it is NULL.
fn constant_where_valid(array: &dyn Array, constant: bool) -> BooleanArray {
    let values = if constant {
        arrow::buffer::BooleanBuffer::new_set(array.len())
    } else {
        arrow::buffer::BooleanBuffer::new_unset(array.len())
    };
    BooleanArray::new(values, array.logical_nulls())
}

/// The array in the type comparisons run on: dictionaries decoded, Float16/Float32 widened to
/// Float64 (exactly), and `-0.0` folded into `0.0`.
fn to_domain(array: &ArrayRef, name: &str) -> Result<ArrayRef> {
    let cast_to = |target: &DataType| {
        cast(array, target).map_err(|error| {
            invalid(format!(
                "cannot read column '{name}' of type {} as {target}: {error}",
                array.data_type()
            ))
        })
    };
    match array.data_type() {
        DataType::Dictionary(_, value_type) => {
            let decoded = cast_to(value_type)?;
            to_domain(&decoded, name)
        }
        DataType::Float16 | DataType::Float32 => {
            let widened = cast_to(&DataType::Float64)?;
            to_domain(&widened, name)
        }
        DataType::Float64 => {
            let floats = array.as_primitive::<Float64Type>();
            let folded: Float64Array = floats.unary(|value| if value == 0.0 { 0.0 } else { value });
            Ok(Arc::new(folded))
        }
        _ => Ok(array.clone()),
    }
}

/// Finds the column named by `path` among `fields`/`columns`, descending into structs; a field
/// of a NULL struct is NULL. `Ok(None)` when there is no such column.
fn lookup(fields: &Fields, columns: &[ArrayRef], path: &[String]) -> Result<Option<ArrayRef>> {
    let Some((index, used)) = find_field(fields, path) else {
        return Ok(None);
    };
    let (Some(column), Some(rest)) = (columns.get(index), path.get(used..)) else {
        return Ok(None);
    };
    if rest.is_empty() {
        return Ok(Some(column.clone()));
    }
    let Some(parent) = column.as_struct_opt() else {
        return Ok(None);
    };
    let Some(child) = lookup(parent.fields(), parent.columns(), rest)? else {
        return Ok(None);
    };
    if parent.null_count() == 0 {
        return Ok(Some(child));
    }
    let parent_is_null = is_null(parent).map_err(|error| Error::arrow("nested column", error))?;
    nullif(child.as_ref(), &parent_is_null)
        .map(Some)
        .map_err(|error| Error::arrow(format!("nested column '{}'", path.join(".")), error))
}

/// The field matching the longest run of leading `path` parts (joined by `.`): exact names
/// first, then a unique ASCII-case-insensitive match. Returns its index and the parts used.
fn find_field(fields: &Fields, path: &[String]) -> Option<(usize, usize)> {
    (1..=path.len()).rev().find_map(|used| {
        let name = path.get(..used)?.join(".");
        if let Some(index) = fields.iter().position(|field| field.name() == &name) {
            return Some((index, used));
        }
        let mut matches = fields
            .iter()
            .enumerate()
            .filter(|(_, field)| field.name().eq_ignore_ascii_case(&name));
        match (matches.next(), matches.next()) {
            (Some((index, _)), None) => Some((index, used)),
            _ => None,
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Literal conversion

/// A comparison after converting its literal to the column's type.
enum Normalized {
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

fn normalize_comparison(
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
            let folded = if float == 0.0 { 0.0 } else { float };
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
        Scalar::Int64(int) => Some(Numeric::Finite(int.to_string())),
        Scalar::Decimal { value, scale } => Some(Numeric::Finite(decimal_text(*value, *scale))),
        Scalar::Float64(float) => Some(numeric_of_float(*float)),
        Scalar::Utf8(text) => {
            let text = text.trim();
            if is_plain_decimal(text) {
                Some(Numeric::Finite(text.to_string()))
            } else {
                parse_float_text(text).map(numeric_of_float)
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

fn parse_float_text(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "infinity" | "inf" | "+infinity" | "+inf" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        other => other.parse::<f64>().ok(),
    }
}

fn float_of(value: &Scalar) -> Option<f64> {
    match value {
        Scalar::Int64(int) => Some(*int as f64),
        Scalar::Float64(float) => Some(*float),
        Scalar::Decimal { value, scale } => decimal_text(*value, *scale).parse().ok(),
        Scalar::Utf8(text) => parse_float_text(text.trim()),
        _ => None,
    }
}

fn text_of(value: &Scalar) -> Option<String> {
    Some(match value {
        Scalar::Utf8(text) => text.clone(),
        Scalar::Int64(int) => int.to_string(),
        Scalar::Float64(float) => float.to_string(),
        Scalar::Decimal { value, scale } => decimal_text(*value, *scale),
        Scalar::Boolean(boolean) => boolean.to_string(),
        Scalar::Date(days) => date_text(*days),
        Scalar::Timestamp(micros) | Scalar::TimestampNtz(micros) => timestamp_text(*micros),
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
        Scalar::Utf8(text) => parse_timestamp_text(text).map(|(micros, _)| i128::from(micros)),
        _ => None,
    }
}

fn date_position(value: &Scalar) -> Option<Position> {
    if let Scalar::Date(days) = value {
        return Some(Position::Exact(Arc::new(Date32Array::from(vec![*days]))));
    }
    if let Scalar::Utf8(text) = value {
        if let Some(days) = parse_date_text(text) {
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

fn integer_range(target: &DataType) -> Option<(i128, i128)> {
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

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;
/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;

fn parse_date_text(text: &str) -> Option<i32> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .ok()
        .map(|date| date.num_days_from_ce() - UNIX_EPOCH_DAYS_FROM_CE)
}

/// Parses `YYYY-MM-DD`, or `YYYY-MM-DD[ T]HH:MM[:SS[.fraction]]` with an optional `Z` or
/// `±HH[:MM]` offset, into microseconds since the epoch (UTC when an offset is given, else the
/// wall clock read as UTC) and whether an offset was given.
fn parse_timestamp_text(text: &str) -> Option<(i64, bool)> {
    let text = text.trim();
    if let Some(days) = parse_date_text(text) {
        return Some((i64::from(days).checked_mul(MICROS_PER_DAY)?, false));
    }
    let (local, offset_seconds) = split_zone(text)?;
    let naive = [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(local, format).ok())?;
    let micros = naive.and_utc().timestamp_micros();
    match offset_seconds {
        Some(offset) => Some((micros.checked_sub(offset * MICROS_PER_SECOND)?, true)),
        None => Some((micros, false)),
    }
}

/// Splits a trailing `Z`, ` UTC` or `±HH[:MM]` zone off a timestamp text; the offset is in
/// seconds east of UTC.
fn split_zone(text: &str) -> Option<(&str, Option<i64>)> {
    if let Some(local) = text.strip_suffix(['Z', 'z']) {
        return Some((local, Some(0)));
    }
    if let Some(local) = text.strip_suffix(" UTC") {
        return Some((local, Some(0)));
    }
    let time_start = text.find([' ', 'T']).unwrap_or(text.len());
    let Some(sign_at) = text
        .get(time_start..)
        .and_then(|time| time.rfind(['+', '-']))
        .map(|at| at + time_start)
    else {
        return Some((text, None));
    };
    let (local, zone) = text.split_at(sign_at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone.chars().skip(1).filter(|c| *c != ':').collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (hours, minutes) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (
            digits.get(..2)?.parse::<i64>().ok()?,
            digits.get(2..)?.parse::<i64>().ok()?,
        ),
        _ => return None,
    };
    Some((local.trim_end(), Some(sign * (hours * 3600 + minutes * 60))))
}

// ---------------------------------------------------------------------------------------------
// File skipping

struct SkippingContext<'f> {
    rows: usize,
    /// `partition_values` as a batch, for exact evaluation.
    partitions: RecordBatch,
    min_values: Option<&'f StructArray>,
    max_values: Option<&'f StructArray>,
    null_count: Option<&'f StructArray>,
    num_records: Option<ArrayRef>,
}

/// How a column's min/max statistics may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BoundKind {
    /// Exact bounds of a totally ordered type (integers, decimals, dates).
    Exact,
    /// Floats: NaN may be missing from the max.
    Float,
    /// Strings: the max may be a truncated prefix.
    String,
    /// Timestamps in this many units of slack (millisecond truncation).
    Timestamp(i64),
}

/// The statistics of one data column, per file.
struct ColumnStats {
    min: Option<ArrayRef>,
    max: Option<ArrayRef>,
    /// True where every valid row of the file is NULL.
    all_null: BooleanArray,
    /// True where no valid row of the file is NULL.
    no_nulls: BooleanArray,
}

impl<'f> SkippingContext<'f> {
    fn new(files: &'f RecordBatch) -> Result<Self> {
        let rows = files.num_rows();
        let structure = |name: &str| {
            files
                .column_by_name(name)
                .and_then(|column| column.as_struct_opt())
        };
        let partitions = partition_batch(structure("partition_values"), rows)?;
        let num_records = files
            .column_by_name("num_records")
            .map(|column| cast(column, &DataType::Int64))
            .transpose()
            .map_err(|error| Error::arrow("num_records of the file list", error))?;
        Ok(SkippingContext {
            rows,
            partitions,
            min_values: structure("min_values"),
            max_values: structure("max_values"),
            null_count: structure("null_count"),
            num_records,
        })
    }

    fn all(&self, value: bool) -> BooleanArray {
        BooleanArray::from(vec![value; self.rows])
    }

    fn may_match(&self, expr: &Expr) -> Result<BooleanArray> {
        if self.is_partition_only(expr) {
            return evaluate(expr, &self.partitions);
        }
        match expr {
            Expr::And(left, right) => {
                and(&self.may_match(left)?, &self.may_match(right)?).map_err(skipping_error)
            }
            Expr::Or(left, right) => {
                or(&self.may_match(left)?, &self.may_match(right)?).map_err(skipping_error)
            }
            Expr::Not(inner) => self.may_match(&inner.negate()),
            Expr::Column(path) => self.compare_may_match(path, CompareOp::Eq, &true.into()),
            Expr::Compare { op, left, right } => match (left.as_ref(), right.as_ref()) {
                (Expr::Column(path), Expr::Literal(value)) => {
                    self.compare_may_match(path, *op, value)
                }
                (Expr::Literal(value), Expr::Column(path)) => {
                    self.compare_may_match(path, op.swapped(), value)
                }
                _ => Ok(self.all(true)),
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => match expr.as_ref() {
                Expr::Column(path) => self.in_list_may_match(path, list, *negated),
                _ => Ok(self.all(true)),
            },
            Expr::IsNull { expr, negated } => match expr.as_ref() {
                Expr::Column(path) => self.null_test_may_match(path, *negated),
                _ => Ok(self.all(true)),
            },
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let above = expr.as_ref().clone().compare(CompareOp::GtEq, *low.clone());
                let below = expr
                    .as_ref()
                    .clone()
                    .compare(CompareOp::LtEq, *high.clone());
                let inside = above.and(below);
                if *negated {
                    self.may_match(&inside.negate())
                } else {
                    self.may_match(&inside)
                }
            }
            Expr::Like {
                expr,
                pattern,
                negated,
            } => match expr.as_ref() {
                Expr::Column(path) if !negated => self.like_may_match(path, pattern),
                Expr::Column(path) => Ok(negate_mask(&self.column_stats(path)?.all_null)),
                _ => Ok(self.all(true)),
            },
            Expr::Literal(_) => evaluate(expr, &self.partitions),
        }
    }

    fn is_partition_only(&self, expr: &Expr) -> bool {
        let fields = self.partitions.schema_ref().fields().clone();
        expr.column_paths()
            .iter()
            .all(|path| find_field(&fields, path).is_some_and(|(_, used)| used == path.len()))
    }

    fn compare_may_match(
        &self,
        path: &[String],
        op: CompareOp,
        value: &Scalar,
    ) -> Result<BooleanArray> {
        if matches!(value, Scalar::Null) {
            return Ok(self.all(false));
        }
        let stats = self.column_stats(path)?;
        self.compare_with_stats(&stats, path, op, value)
    }

    /// [`Self::compare_may_match`] with the column's statistics already looked up.
    fn compare_with_stats(
        &self,
        stats: &ColumnStats,
        path: &[String],
        op: CompareOp,
        value: &Scalar,
    ) -> Result<BooleanArray> {
        if matches!(value, Scalar::Null) {
            return Ok(self.all(false));
        }
        let some_valid = negate_mask(&stats.all_null);
        let Some(data_type) = stats
            .min
            .as_ref()
            .or(stats.max.as_ref())
            .map(|array| array.data_type().clone())
        else {
            return Ok(some_valid);
        };
        let Some(kind) = bound_kind(&data_type) else {
            return Ok(some_valid);
        };
        let data_type = match kind {
            BoundKind::Float => DataType::Float64,
            _ => data_type,
        };
        let name = path.join(".");
        let bounds = match normalize_comparison(op, value, &data_type, &name)? {
            Normalized::Const(None) | Normalized::Const(Some(false)) => self.all(false),
            Normalized::Const(Some(true)) => self.all(true),
            Normalized::Compare(op, literal) => {
                bounds_may_match(kind, op, stats, &literal, self.rows)?
            }
        };
        and(&some_valid, &bounds).map_err(skipping_error)
    }

    fn in_list_may_match(
        &self,
        path: &[String],
        list: &[Scalar],
        negated: bool,
    ) -> Result<BooleanArray> {
        if negated && list.iter().any(|value| matches!(value, Scalar::Null)) {
            return Ok(self.all(false));
        }
        let (op, mut result) = if negated {
            (CompareOp::NotEq, self.all(true))
        } else {
            (CompareOp::Eq, self.all(false))
        };
        if list.is_empty() {
            return Ok(result);
        }
        let stats = self.column_stats(path)?;
        for value in list {
            let element = self.compare_with_stats(&stats, path, op, value)?;
            result = if negated {
                and(&result, &element)
            } else {
                or(&result, &element)
            }
            .map_err(skipping_error)?;
        }
        Ok(result)
    }

    fn null_test_may_match(&self, path: &[String], negated: bool) -> Result<BooleanArray> {
        let stats = self.column_stats(path)?;
        if negated {
            Ok(negate_mask(&stats.all_null))
        } else if path.len() > 1 {
            Ok(self.all(true))
        } else {
            Ok(negate_mask(&stats.no_nulls))
        }
    }

    fn like_may_match(&self, path: &[String], pattern: &str) -> Result<BooleanArray> {
        let (prefix, has_wildcard) = like_prefix(pattern);
        if !has_wildcard {
            return self.compare_may_match(path, CompareOp::Eq, &Scalar::Utf8(prefix));
        }
        let stats = self.column_stats(path)?;
        let some_valid = negate_mask(&stats.all_null);
        if prefix.is_empty() {
            return Ok(some_valid);
        }
        let strings = |bound: &Option<ArrayRef>| -> Result<Option<ArrayRef>> {
            match bound {
                Some(array) if bound_kind(array.data_type()) == Some(BoundKind::String) => {
                    cast(array, &DataType::Utf8)
                        .map(Some)
                        .map_err(skipping_error)
                }
                _ => Ok(None),
            }
        };
        let mut result = some_valid;
        if let Some(min) = strings(&stats.min)? {
            let lower: BooleanArray = min
                .as_string::<i32>()
                .iter()
                .map(|min| {
                    Some(min.is_none_or(|min| min <= prefix.as_str() || min.starts_with(&prefix)))
                })
                .collect();
            result = and(&result, &lower).map_err(skipping_error)?;
        }
        if let Some(max) = strings(&stats.max)? {
            let upper = string_upper_may_match(max.as_string::<i32>(), &prefix, false);
            result = and(&result, &upper).map_err(skipping_error)?;
        }
        Ok(result)
    }

    fn column_stats(&self, path: &[String]) -> Result<ColumnStats> {
        let leaf = |values: Option<&StructArray>| match values {
            Some(values) => struct_leaf(values, path),
            None => Ok(None),
        };
        let min = leaf(self.min_values)?;
        let max = leaf(self.max_values)?;
        let null_count = leaf(self.null_count)?
            .filter(|counts| counts.data_type().is_integer())
            .map(|counts| cast(&counts, &DataType::Int64))
            .transpose()
            .map_err(skipping_error)?;
        let (all_null, no_nulls) = match null_count {
            Some(counts) => {
                let counts = counts.as_primitive::<Int64Type>();
                let no_nulls: BooleanArray = counts.iter().map(|c| Some(c == Some(0))).collect();
                let all_null: BooleanArray = match &self.num_records {
                    Some(records) => counts
                        .iter()
                        .zip(records.as_primitive::<Int64Type>().iter())
                        .map(|(count, records)| {
                            Some(matches!((count, records), (Some(c), Some(r)) if c == r))
                        })
                        .collect(),
                    None => self.all(false),
                };
                (all_null, no_nulls)
            }
            None => (self.all(false), self.all(false)),
        };
        Ok(ColumnStats {
            min,
            max,
            all_null,
            no_nulls,
        })
    }
}

/// The field at `path` inside `values`, NULL where `values` itself is NULL.
fn struct_leaf(values: &StructArray, path: &[String]) -> Result<Option<ArrayRef>> {
    let Some(leaf) = lookup(values.fields(), values.columns(), path)? else {
        return Ok(None);
    };
    if values.null_count() == 0 {
        return Ok(Some(leaf));
    }
    let missing = is_null(values).map_err(skipping_error)?;
    nullif(leaf.as_ref(), &missing)
        .map(Some)
        .map_err(skipping_error)
}

/// The `partition_values` struct as a batch (an empty batch of the right length without it).
fn partition_batch(partition_values: Option<&StructArray>, rows: usize) -> Result<RecordBatch> {
    let (fields, columns) = match partition_values {
        Some(values) => (values.fields().clone(), values.columns().to_vec()),
        None => (Fields::empty(), Vec::new()),
    };
    let fields: Vec<Field> = fields
        .iter()
        .map(|field| field.as_ref().clone().with_nullable(true))
        .collect();
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|error| Error::arrow("partition values of the file list", error))
}

fn bound_kind(data_type: &DataType) -> Option<BoundKind> {
    Some(match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Decimal128(..)
        | DataType::Date32 => BoundKind::Exact,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => BoundKind::Float,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => BoundKind::String,
        DataType::Timestamp(unit, _) => BoundKind::Timestamp(match unit {
            TimeUnit::Second => 0,
            TimeUnit::Millisecond => 0,
            TimeUnit::Microsecond => 999,
            TimeUnit::Nanosecond => 999_999,
        }),
        _ => return None,
    })
}

/// Whether a file whose column lies within its bounds may satisfy `column op literal`
/// (`literal` already of the bounds' type); true where a bound is missing.
fn bounds_may_match(
    kind: BoundKind,
    op: CompareOp,
    stats: &ColumnStats,
    literal: &ArrayRef,
    rows: usize,
) -> Result<BooleanArray> {
    let all = |value: bool| BooleanArray::from(vec![value; rows]);
    let literal_is_nan = kind == BoundKind::Float
        && literal
            .as_primitive_opt::<Float64Type>()
            .is_some_and(|values| values.iter().any(|v| v.is_some_and(f64::is_nan)));
    let (min, max, literal) = match kind {
        BoundKind::Timestamp(slack) => (
            shifted_bounds(&stats.min, -slack)?,
            shifted_bounds(&stats.max, slack)?,
            cast(literal, &DataType::Int64).map_err(skipping_error)?,
        ),
        BoundKind::Float => (
            clean_float_bounds(&stats.min)?,
            clean_float_bounds(&stats.max)?,
            literal.clone(),
        ),
        BoundKind::String => (
            cast_bounds(&stats.min, &DataType::Utf8)?,
            cast_bounds(&stats.max, &DataType::Utf8)?,
            cast(literal, &DataType::Utf8).map_err(skipping_error)?,
        ),
        BoundKind::Exact => (stats.min.clone(), stats.max.clone(), literal.clone()),
    };
    let scalar = arrow_array::Scalar::new(literal.clone());
    let lower = |op: CompareOp| -> Result<BooleanArray> {
        match &min {
            Some(min) => Ok(unknown_as_true(
                &apply_compare(op, min, &scalar).map_err(skipping_error)?,
            )),
            None => Ok(all(true)),
        }
    };
    let upper = |strict: bool| -> Result<BooleanArray> {
        let Some(max) = &max else {
            return Ok(all(true));
        };
        match kind {
            BoundKind::String => {
                let text = literal.as_string::<i32>();
                let value = if text.is_valid(0) { text.value(0) } else { "" };
                Ok(string_upper_may_match(
                    max.as_string::<i32>(),
                    value,
                    strict,
                ))
            }
            _ => {
                let op = if strict {
                    CompareOp::Gt
                } else {
                    CompareOp::GtEq
                };
                Ok(unknown_as_true(
                    &apply_compare(op, max, &scalar).map_err(skipping_error)?,
                ))
            }
        }
    };
    let float_max_unusable = kind == BoundKind::Float
        && (literal_is_nan || matches!(op, CompareOp::Gt | CompareOp::GtEq));
    match op {
        CompareOp::Lt => lower(CompareOp::Lt),
        CompareOp::LtEq => lower(CompareOp::LtEq),
        CompareOp::Gt | CompareOp::GtEq if float_max_unusable => Ok(all(true)),
        CompareOp::Gt => upper(true),
        CompareOp::GtEq => upper(false),
        CompareOp::Eq => {
            let low = lower(CompareOp::LtEq)?;
            if float_max_unusable {
                return Ok(low);
            }
            and(&low, &upper(false)?).map_err(skipping_error)
        }
        CompareOp::NotEq => {
            let (Some(min), Some(max), BoundKind::Exact) = (&min, &max, kind) else {
                return Ok(all(true));
            };
            let min_equal = apply_compare(CompareOp::Eq, min, &scalar).map_err(skipping_error)?;
            let max_equal = apply_compare(CompareOp::Eq, max, &scalar).map_err(skipping_error)?;
            let single_value = and_kleene(&min_equal, &max_equal).map_err(skipping_error)?;
            Ok(negate_mask(&null_as_false(&single_value)))
        }
    }
}

/// For string maxima that may be truncated prefixes: true where some value ≥ `value`
/// (> when `strict`) may exist below the true maximum, i.e. max ≥ value or value starts with
/// max; true where max is NULL.
fn string_upper_may_match(max: &StringArray, value: &str, strict: bool) -> BooleanArray {
    max.iter()
        .map(|max| {
            Some(max.is_none_or(|max| {
                let above = if strict { max > value } else { max >= value };
                above || value.starts_with(max)
            }))
        })
        .collect()
}

/// Timestamp bounds as Int64 moved by `slack` units (saturating).
fn shifted_bounds(bound: &Option<ArrayRef>, slack: i64) -> Result<Option<ArrayRef>> {
    let Some(bound) = bound else {
        return Ok(None);
    };
    let ints = cast(bound, &DataType::Int64).map_err(skipping_error)?;
    let shifted: Int64Array = ints
        .as_primitive::<Int64Type>()
        .unary(|value| value.saturating_add(slack));
    Ok(Some(Arc::new(shifted)))
}

/// Float bounds as Float64 with NaN treated as missing and `-0.0` folded into `0.0`.
fn clean_float_bounds(bound: &Option<ArrayRef>) -> Result<Option<ArrayRef>> {
    let Some(bound) = bound else {
        return Ok(None);
    };
    let floats = cast(bound, &DataType::Float64).map_err(skipping_error)?;
    let cleaned: Float64Array = floats
        .as_primitive::<Float64Type>()
        .iter()
        .map(|value| {
            value
                .filter(|v| !v.is_nan())
                .map(|v| if v == 0.0 { 0.0 } else { v })
        })
        .collect();
    Ok(Some(Arc::new(cleaned)))
}

fn cast_bounds(bound: &Option<ArrayRef>, target: &DataType) -> Result<Option<ArrayRef>> {
    bound
        .as_ref()
        .map(|bound| cast(bound, target))
        .transpose()
        .map_err(skipping_error)
}

/// The literal prefix of a LIKE pattern (escapes resolved) and whether a wildcard follows it.
fn like_prefix(pattern: &str) -> (String, bool) {
    let mut prefix = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' | '_' => return (prefix, true),
            '\\' => prefix.push(chars.next().unwrap_or('\\')),
            other => prefix.push(other),
        }
    }
    (prefix, false)
}

/// The mask with NULL read as false.
fn null_as_false(mask: &BooleanArray) -> BooleanArray {
    match mask.nulls() {
        Some(nulls) if nulls.null_count() > 0 => prep_null_mask_filter(mask),
        _ => BooleanArray::new(mask.values().clone(), None),
    }
}

fn unknown_as_true(mask: &BooleanArray) -> BooleanArray {
    if mask.null_count() == 0 {
        return mask.clone();
    }
    mask.iter()
        .map(|value| Some(value.unwrap_or(true)))
        .collect()
}

/// NOT of a mask without nulls.
fn negate_mask(mask: &BooleanArray) -> BooleanArray {
    mask.iter().map(|value| Some(value != Some(true))).collect()
}

fn skipping_error(error: ArrowError) -> Error {
    Error::arrow("data skipping over the file list", error)
}

fn implied_partition_filter(expr: &Expr, is_partition: &dyn Fn(&[String]) -> bool) -> Option<Expr> {
    if expr.column_paths().iter().all(|path| is_partition(path)) {
        return Some(expr.clone());
    }
    match expr {
        Expr::And(left, right) => match (
            implied_partition_filter(left, is_partition),
            implied_partition_filter(right, is_partition),
        ) {
            (Some(left), Some(right)) => Some(left.and(right)),
            (Some(one), None) | (None, Some(one)) => Some(one),
            (None, None) => None,
        },
        Expr::Or(left, right) => Some(
            implied_partition_filter(left, is_partition)?
                .or(implied_partition_filter(right, is_partition)?),
        ),
        Expr::Not(inner)
            if matches!(inner.as_ref(), Expr::And(..) | Expr::Or(..) | Expr::Not(_)) =>
        {
            implied_partition_filter(&inner.negate(), is_partition)
        }
        _ => None,
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use arrow::buffer::NullBuffer;
    use arrow::compute::{concat_batches, take};
    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, Float32Array, UInt32Array};
    use proptest::prelude::*;

    use super::*;
    use crate::schema::tests::golden_table;
    use crate::table::{SnapshotAt, Table};

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

    /// A file list: `partition_values`, `num_records`, the optional stats structs and
    /// `tight_bounds`, `deletion_vector`-free.
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
            ("partition_values", partition_values),
            ("num_records", array(Int64Array::from(num_records))),
        ];
        if let Some((min, max, nulls)) = stats {
            columns.push(("min_values", min));
            columns.push(("max_values", max));
            columns.push(("null_count", nulls));
        }
        if let Some(tight) = tight_bounds {
            columns.push(("tight_bounds", array(BooleanArray::from(tight))));
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
        let inner =
            |values: Vec<Option<i64>>| structs(vec![("x", array(Int64Array::from(values)))]);
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
            ("x = - y", "expected a number after '-' at position 7"),
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
            assert_eq!(case("COL > 1"), [true, true, false, false, false]);
            assert_eq!(case("COL = 0"), [false, false, true, false, false]);
            assert_eq!(case("COL = -0.0"), [false, false, true, false, false]);
            assert_eq!(case("COL < 0"), [false, false, false, false, true]);
            assert_eq!(case("COL = 'NaN'"), [false, true, false, false, false]);
            assert_eq!(case("COL < 'Infinity'"), [true, false, true, false, true]);
            assert_eq!(case("COL = 1.5"), [true, false, false, false, false]);
            assert_eq!(case("COL != 1.5"), [false, true, true, false, true]);
            assert_eq!(case("COL IS NULL"), [false, false, false, true, false]);
            assert_eq!(
                case("COL BETWEEN -1 AND 2"),
                [true, false, true, false, false]
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
        let day = |text: &str| parse_date_text(text).unwrap();
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
        let day = |text: &str| parse_date_text(text).unwrap();
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
        let part =
            |text: &str| partition_only(&parse(text), &partition_columns).map(|e| e.to_string());
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
            let keep = files_may_match(&expr, &files).unwrap_or_else(|e| panic!("{filter}: {e}"));
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
        let Some((files, counts)) =
            golden_kept_counts("data-skipping-basic-stats-all-types", &filters)
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
        let Some((files, counts)) = golden_kept_counts("data-reader-partition-values", &filters)
        else {
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
            .prop_map(|(rows, p, stats_mode, widen, tight, spark_nan, truncate)| {
                GeneratedFile {
                    rows,
                    p,
                    stats_mode,
                    widen,
                    tight,
                    spark_nan,
                    truncate,
                }
            })
    }

    fn literal_for(column: &'static str) -> BoxedStrategy<Scalar> {
        match column {
            "x" | "p" => prop_oneof![
                4 => (-6i64..6).prop_map(Scalar::Int64),
                1 => Just(Scalar::Null),
                2 => (-60i128..60).prop_map(|value| Scalar::Decimal { value, scale: 1 }),
            ]
            .boxed(),
            "y" => {
                prop_oneof![4 => float_values().prop_map(Scalar::Float64), 1 => Just(Scalar::Null)]
                    .boxed()
            }
            _ => prop_oneof![4 => "[a-c]{0,3}".prop_map(Scalar::Utf8), 1 => Just(Scalar::Null)]
                .boxed(),
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
        let comparison = (compare_ops(), literal_for(column), any::<bool>()).prop_map(
            move |(op, value, flip)| {
                if flip {
                    Expr::Literal(value).compare(op, col(column))
                } else {
                    col(column).compare(op, Expr::Literal(value))
                }
            },
        );
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
            let like = ("[a-c]{0,2}[%_]?[a-c]?", any::<bool>()).prop_map(|(pattern, negated)| {
                Expr::Like {
                    expr: Box::new(col("z")),
                    pattern,
                    negated,
                }
            });
            prop_oneof![3 => comparison, 1 => in_list, 1 => null_test, 1 => between, 2 => like]
                .boxed()
        } else {
            prop_oneof![3 => comparison, 1 => in_list, 1 => null_test, 1 => between].boxed()
        }
    }

    fn generated_filter() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![leaf_for("x"), leaf_for("p"), leaf_for("y"), leaf_for("z")];
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
}
