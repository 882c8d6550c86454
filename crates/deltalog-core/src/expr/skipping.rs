//! Conservative file skipping: which files of a batch of per-file statistics could hold a
//! row matching a filter.

use std::sync::Arc;

use arrow::compute::kernels::boolean::{and, and_kleene, is_null, or};
use arrow::compute::{cast, nullif};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions,
    StringArray, StructArray,
};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, TimeUnit};

use super::ast::{CompareOp, Expr};
use super::convert::{normalize_comparison, Normalized};
use super::eval::{apply_compare, evaluate, find_field, lookup, null_as_false};
use crate::actions::layout::PARTITION_VALUES_PARSED;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::table_config::stats::{MAX_VALUES, MIN_VALUES, NULL_COUNT, NUM_RECORDS};

/// Decides for every file of a batch of per-file statistics whether it COULD hold a row
/// matching `expr`: false only when no row of the file can match (catalogue G-25).
///
/// `stats` has one row per file, in the layout of the decoded statistics
/// ([`crate::table_config::stats::parse_stats`]) with the typed partition values beside them, every column
/// optional (a missing column means no information):
/// * `partitionValues_parsed` ([`PARTITION_VALUES_PARSED`]): a struct of the typed partition
///   columns, logical names;
/// * `numRecords` ([`NUM_RECORDS`]): an integer;
/// * `minValues`, `maxValues`, `nullCount` ([`MIN_VALUES`], [`MAX_VALUES`], [`NULL_COUNT`]):
///   structs mirroring the data schema, logical names;
///
/// other columns (such as `tightBounds`) are ignored.
/// `crate::replay::file_list::MatchJudge` builds it from `add` actions and
/// `crate::replay::file_list::file_list_stats` from the rows of a file list.
///
/// The rules:
/// * A sub-expression that references only partition columns (or none) is evaluated exactly
///   on the partition values, IS NULL included.
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
pub(crate) fn files_may_match(expr: &Expr, stats: &RecordBatch) -> Result<BooleanArray> {
    let context = SkippingContext::new(stats)?;
    context.may_match(expr)
}

/// The part of `expr` that only involves `partition_columns`, as a filter implied by `expr`
/// (every row matching `expr` matches it), or `None` when there is none.
///
/// Conjuncts of a top-level AND that reference only partition columns (or no columns) are
/// kept; an OR is kept when both sides have such a part (`(p = 1 AND x > 5) OR p = 2` gives
/// `p = 1 OR p = 2`); NOT is pushed down first. Names compare ASCII-case-insensitively; a
/// nested path counts as its dotted name.
pub(crate) fn partition_only(expr: &Expr, partition_columns: &[String]) -> Option<Expr> {
    let is_partition = |path: &[String]| {
        let name = path.join(".");
        partition_columns
            .iter()
            .any(|column| column.eq_ignore_ascii_case(&name))
    };
    implied_partition_filter(expr, &is_partition)
}

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
        let partitions = partition_batch(structure(PARTITION_VALUES_PARSED), rows)?;
        let num_records = files
            .column_by_name(NUM_RECORDS)
            .map(|column| cast(column, &DataType::Int64))
            .transpose()
            .map_err(|error| Error::arrow("numRecords of the file statistics", error))?;
        Ok(SkippingContext {
            rows,
            partitions,
            min_values: structure(MIN_VALUES),
            max_values: structure(MAX_VALUES),
            null_count: structure(NULL_COUNT),
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
            Expr::Value(_) => Ok(self.all(true)),
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
    .map_err(|error| Error::arrow("partition values of the file statistics", error))
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
    Error::arrow("data skipping over the file statistics", error)
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
