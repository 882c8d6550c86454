//! Exact evaluation of a filter on every row of an Arrow batch, in SQL's three-valued logic.

use std::sync::Arc;

use arrow::compute::kernels::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::compute::kernels::comparison::{like, nlike};
use arrow::compute::kernels::numeric;
use arrow::compute::kernels::zip::zip;
use arrow::compute::{cast, cast_with_options, nullif, prep_null_mask_filter, CastOptions};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Datum, Decimal128Array, Float64Array,
    LargeListArray, ListArray, MapArray, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{ArrowError, DataType, Field, Fields, TimeUnit};

use super::ast::{ArithOp, CompareOp, Expr, Function, ValueExpr};
use super::convert::{canonical_float, integer_range, normalize_comparison, Normalized};
use super::invalid;
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
pub(crate) fn find_field(fields: &Fields, path: &[String]) -> Option<(usize, usize)> {
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
            let ty = operand_type(values.iter().chain(fallback.iter()));
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

/// `value` cast to `to`, failing (not NULL) on a value that does not convert (ANSI), except
/// that NaN and the infinities become NULL decimals, as Spark casts them even in ANSI mode.
/// A float becomes a decimal as in Spark: through its shortest decimal text (Java's
/// `Double.toString`), rounded half up to the scale, so `-0.285` is `-0.29`, not the `-0.28`
/// its binary value (`-0.28499999...`) would round to.
pub(crate) fn cast_to(value: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if value.data_type() == to {
        return Ok(value.clone());
    }
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    if let (
        DataType::Float16 | DataType::Float32 | DataType::Float64,
        DataType::Decimal128(precision, scale),
    ) = (value.data_type(), to)
    {
        return floats_to_decimals(value, *precision, *scale);
    }
    cast_with_options(value, to, &options)
        .map_err(|e| invalid(format!("cannot cast {} to {to}: {e}", value.data_type())))
}

/// `value` as a column of type `to` takes it in an assignment (`UPDATE SET`, a merge's
/// actions): structs field by field by name (ASCII case ignored), a field `to` has and `value`
/// lacks NULL, a NULL struct kept NULL, as Spark's store assignment aligns them
/// (`UpdateExpressionsSupport.castIfNeeded`), at any depth: the structs in list elements and
/// map keys and values too; anything else as [`cast_to`] casts it. A field `value` has and
/// `to` lacks is an error.
pub(crate) fn assign_to(value: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if value.data_type() == to {
        return Ok(value.clone());
    }
    let failed =
        |e: ArrowError| invalid(format!("cannot assign {} to {to}: {e}", value.data_type()));
    let built: ArrayRef = match (value.data_type(), to) {
        (DataType::Struct(from_fields), DataType::Struct(to_fields)) => {
            return assign_struct(value, from_fields, to_fields, to)
        }
        (DataType::List(_), DataType::List(element)) => {
            let list = value.as_list::<i32>();
            let values = assign_to(list.values(), element.data_type())?;
            let nulls = list.nulls().cloned();
            let offsets = list.offsets().clone();
            Arc::new(ListArray::try_new(element.clone(), offsets, values, nulls).map_err(failed)?)
        }
        (DataType::LargeList(_), DataType::LargeList(element)) => {
            let list = value.as_list::<i64>();
            let values = assign_to(list.values(), element.data_type())?;
            let nulls = list.nulls().cloned();
            let offsets = list.offsets().clone();
            let built = LargeListArray::try_new(element.clone(), offsets, values, nulls);
            Arc::new(built.map_err(failed)?)
        }
        (DataType::Map(_, _), DataType::Map(entries, sorted)) => {
            let DataType::Struct(pair) = entries.data_type() else {
                return cast_to(value, to);
            };
            let (Some(key), Some(item)) = (pair.first(), pair.get(1)) else {
                return cast_to(value, to);
            };
            let map = value.as_map();
            let keys = assign_to(map.keys(), key.data_type())?;
            let items = assign_to(map.values(), item.data_type())?;
            let pairs =
                StructArray::try_new(pair.clone(), vec![keys, items], None).map_err(failed)?;
            let nulls = map.nulls().cloned();
            let offsets = map.offsets().clone();
            let built = MapArray::try_new(entries.clone(), offsets, pairs, nulls, *sorted);
            Arc::new(built.map_err(failed)?)
        }
        _ => return cast_to(value, to),
    };
    Ok(built)
}

/// The struct `value` (of fields `from_fields`) as a struct of `to_fields` (see [`assign_to`]).
fn assign_struct(
    value: &ArrayRef,
    from_fields: &Fields,
    to_fields: &Fields,
    to: &DataType,
) -> Result<ArrayRef> {
    let find = |fields: &Fields, name: &str| {
        fields.iter().position(|f| f.name() == name).or_else(|| {
            fields
                .iter()
                .position(|f| f.name().eq_ignore_ascii_case(name))
        })
    };
    if let Some(extra) = from_fields
        .iter()
        .find(|f| find(to_fields, f.name()).is_none())
    {
        return Err(invalid(format!(
            "cannot assign a struct with field '{}' to a column of type {to}: it has no such field",
            extra.name()
        )));
    }
    let from = value.as_struct();
    let mut columns = Vec::with_capacity(to_fields.len());
    for field in to_fields {
        columns.push(match find(from_fields, field.name()) {
            Some(index) => assign_to(from.column(index), field.data_type())?,
            None => new_null_array(field.data_type(), value.len()),
        });
    }
    let built = StructArray::try_new_with_length(
        to_fields.clone(),
        columns,
        from.nulls().cloned(),
        value.len(),
    )
    .map_err(|e| invalid(format!("cannot assign {} to {to}: {e}", value.data_type())))?;
    Ok(Arc::new(built))
}

/// The floats of `value` as decimals of `precision` and `scale` (see [`cast_to`]): NaN and
/// the infinities NULL, a value too wide for the precision an error.
fn floats_to_decimals(value: &ArrayRef, precision: u8, scale: i8) -> Result<ArrayRef> {
    let floats = cast(value, &DataType::Float64)
        .map_err(|e| invalid(format!("cannot read {} as doubles: {e}", value.data_type())))?;
    let limit = 10i128
        .checked_pow(u32::from(precision))
        .unwrap_or(i128::MAX);
    let mut decimals = Vec::with_capacity(floats.len());
    for float in floats.as_primitive::<Float64Type>().iter() {
        let Some(float) = float.filter(|f| f.is_finite()) else {
            decimals.push(None);
            continue;
        };
        match float_to_unscaled(float, scale).filter(|unscaled| unscaled.abs() < limit) {
            Some(unscaled) => decimals.push(Some(unscaled)),
            None => {
                return Err(invalid(format!(
                    "cannot cast {float} to DECIMAL({precision},{scale}): it does not fit"
                )))
            }
        }
    }
    let decimals = Decimal128Array::from(decimals)
        .with_precision_and_scale(precision, scale)
        .map_err(|e| invalid(format!("DECIMAL({precision},{scale}): {e}")))?;
    Ok(Arc::new(decimals))
}

/// `value` times `10^scale`, from its shortest decimal text rounded half up (away from zero
/// at a tie); `None` when it does not fit in 128 bits.
fn float_to_unscaled(value: f64, scale: i8) -> Option<i128> {
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let magnitude: i128 = digits.parse().ok()?;
    // value = magnitude * 10^(exponent - (digits - 1)); the result scales it by 10^scale.
    let shift = exponent - (digits.len() as i32 - 1) + i32::from(scale);
    let unscaled = if shift >= 0 {
        magnitude.checked_mul(10i128.checked_pow(shift.unsigned_abs())?)?
    } else if shift.unsigned_abs() as usize > digits.len() {
        0
    } else {
        let divisor = 10i128.pow(shift.unsigned_abs());
        let (quotient, remainder) = (magnitude / divisor, magnitude % divisor);
        quotient + i128::from(remainder * 2 >= divisor)
    };
    Some(if mantissa.starts_with('-') {
        -unscaled
    } else {
        unscaled
    })
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
            let ty = operand_type(values.iter());
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
        Function::Abs => {
            arity(1..=1)?;
            absolute(&values[0])
        }
        Function::Length => {
            arity(1..=1)?;
            char_length(&values[0])
        }
        Function::Trim | Function::Ltrim | Function::Rtrim => {
            arity(1..=1)?;
            let text = strings(&values[0])?;
            let trimmed: StringArray = text
                .iter()
                .map(|v| {
                    v.map(|s| match function {
                        Function::Ltrim => s.trim_start_matches(' '),
                        Function::Rtrim => s.trim_end_matches(' '),
                        _ => s.trim_matches(' '),
                    })
                })
                .collect();
            Ok(Arc::new(trimmed))
        }
        Function::DateFormat => {
            arity(2..=2)?;
            let pattern = literal_text(&args[1], "date_format pattern")?;
            date_format(&values[0], &pattern)
        }
        Function::NamedStruct => named_struct(args, values, rows),
    }
}

/// `named_struct('a', x, 'b', y)`: a non-NULL struct of `x` (field `a`) and `y` (field `b`);
/// the names must be text literals.
fn named_struct(args: &[ValueExpr], values: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    if values.is_empty() || !values.len().is_multiple_of(2) {
        return Err(invalid(format!(
            "named_struct takes pairs of a name and a value, not {} arguments",
            values.len()
        )));
    }
    let mut fields = Vec::with_capacity(values.len() / 2);
    let mut columns = Vec::with_capacity(values.len() / 2);
    for (name, value) in args.iter().step_by(2).zip(values.iter().skip(1).step_by(2)) {
        let name = literal_text(name, "named_struct field name")?;
        fields.push(Field::new(name, value.data_type().clone(), true));
        columns.push(value.clone());
    }
    let built = StructArray::try_new_with_length(Fields::from(fields), columns, None, rows)
        .map_err(|e| invalid(format!("named_struct: {e}")))?;
    Ok(Arc::new(built))
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
fn operand_type<'a>(values: impl Iterator<Item = &'a ArrayRef>) -> DataType {
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

/// `abs(x)` as Spark's ANSI mode computes it: of `x`'s type; the minimum of an integer type
/// has no absolute value in it (an error, as Spark's `ARITHMETIC_OVERFLOW`); `-0.0` is `0.0`.
fn absolute(value: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::types::Float32Type;
    match value.data_type() {
        DataType::Null => Ok(value.clone()),
        DataType::Float32 => {
            let floats = value.as_primitive::<Float32Type>();
            Ok(Arc::new(floats.unary::<_, Float32Type>(f32::abs)))
        }
        DataType::Float64 => {
            let doubles = value.as_primitive::<Float64Type>();
            Ok(Arc::new(doubles.unary::<_, Float64Type>(f64::abs)))
        }
        ty if ty.is_integer() || matches!(ty, DataType::Decimal128(..)) => {
            let zero = cast_to(
                &(Arc::new(arrow_array::Int8Array::from(vec![0])) as ArrayRef),
                ty,
            )?;
            let negative = cmp::lt(value, &arrow_array::Scalar::new(zero))
                .map_err(|e| invalid(format!("abs: {e}")))?;
            // Negating the negative values alone finds an overflow; the others stay.
            let negatives = arrow::compute::filter(value, &negative)
                .map_err(|e| invalid(format!("abs: {e}")))?;
            numeric::neg(&negatives).map_err(|e| invalid(format!("abs: {e}")))?;
            let negated = numeric::neg_wrapping(value).map_err(|e| invalid(format!("abs: {e}")))?;
            zip(&negative, &negated, value).map_err(|e| invalid(format!("abs: {e}")))
        }
        other => Err(invalid(format!("abs needs a number, not {other}"))),
    }
}

/// `length(x)`: the characters of a string, the bytes of a binary value, as an int.
fn char_length(value: &ArrayRef) -> Result<ArrayRef> {
    if matches!(value.data_type(), DataType::Binary | DataType::LargeBinary) {
        let bytes = arrow::compute::kernels::length::length(value)
            .map_err(|e| invalid(format!("length: {e}")))?;
        return cast_to(&bytes, &DataType::Int32);
    }
    let text = strings(value)?;
    let counts: arrow_array::Int32Array = text
        .iter()
        .map(|v| v.map(|s| i32::try_from(s.chars().count()).unwrap_or(i32::MAX)))
        .collect();
    Ok(Arc::new(counts))
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
