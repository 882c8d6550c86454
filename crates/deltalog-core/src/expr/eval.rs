//! Exact evaluation of a filter on every row of an Arrow batch, in SQL's three-valued logic.

use std::sync::Arc;

use arrow::compute::kernels::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::compute::kernels::comparison::{like, nlike};
use arrow::compute::{cast, nullif, prep_null_mask_filter};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Datum, Float64Array, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType, Fields};

use super::ast::{CompareOp, Expr};
use super::convert::{canonical_float, integer_range, normalize_comparison, Normalized};
use super::invalid;
use super::value::{evaluate_value, ValueExpr};
use crate::error::{Error, Result};
use crate::scalar::Scalar;

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
///
/// Computed operands ([`Expr::Value`]) are evaluated as [`evaluate_value`] does (ANSI:
/// overflow, division by zero and failing casts are errors); `current_timestamp()` is the
/// clock's time at the call.
pub(crate) fn evaluate(expr: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    evaluate_at(expr, batch, chrono::Utc::now().timestamp_micros())
}

/// [`evaluate`] with `current_timestamp()` at `now_micros` (one instant for a statement).
pub(crate) fn evaluate_at(
    expr: &Expr,
    batch: &RecordBatch,
    now_micros: i64,
) -> Result<BooleanArray> {
    let evaluator = Evaluator { batch, now_micros };
    let mask = evaluator.predicate(expr)?;
    Ok(null_as_false(&mask))
}

struct Evaluator<'b> {
    batch: &'b RecordBatch,
    now_micros: i64,
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
            Expr::Value(value) => {
                let array = to_domain(&self.value(value)?, &value.to_string())?;
                match array.data_type() {
                    DataType::Null => Ok(BooleanArray::new_null(array.len())),
                    _ => array.as_boolean_opt().cloned().ok_or_else(|| {
                        invalid(format!(
                            "`{value}` of type {} is used as a condition but is not boolean",
                            array.data_type()
                        ))
                    }),
                }
            }
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
            Expr::Value(value) => Operand::Array(self.value(value)?, value.to_string()),
            other => Operand::Array(Arc::new(self.predicate(other)?), other.to_string()),
        })
    }

    fn value(&self, value: &ValueExpr) -> Result<ArrayRef> {
        evaluate_value(value, self.batch, self.now_micros)
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

pub(super) fn apply_compare(
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
/// Float64 (exactly), `-0.0` folded into `0.0` and every NaN made the one positive NaN (a NaN
/// with its sign bit set would otherwise sort below every number; Spark has one NaN, above
/// every number).
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
            let folded: Float64Array = floats.unary(canonical_float);
            Ok(Arc::new(folded))
        }
        _ => Ok(array.clone()),
    }
}

/// Finds the column named by `path` among `fields`/`columns`, descending into structs; a field
/// of a NULL struct is NULL. `Ok(None)` when there is no such column.
pub(super) fn lookup(
    fields: &Fields,
    columns: &[ArrayRef],
    path: &[String],
) -> Result<Option<ArrayRef>> {
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
pub(super) fn find_field(fields: &Fields, path: &[String]) -> Option<(usize, usize)> {
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

/// The mask with NULL read as false.
pub(super) fn null_as_false(mask: &BooleanArray) -> BooleanArray {
    match mask.nulls() {
        Some(nulls) if nulls.null_count() > 0 => prep_null_mask_filter(mask),
        _ => BooleanArray::new(mask.values().clone(), None),
    }
}
