//! Input columns matched to the table's columns and cast to the table's types without loss.
//!
//! Names match exactly, else ASCII-case-insensitively when exactly one column matches (as
//! Spark resolves them), at every nesting level. Casts allowed (anything else is an
//! [`Error::SchemaMismatch`] naming the column):
//! - integers to a wider integer (unsigned ones to a signed type that holds them all), floats
//!   and integers of up to 32 bits to `double`, `float` from `float`/half floats;
//! - decimals to a decimal with at least as many integer and fraction digits, integers to a
//!   decimal with enough integer digits;
//! - `Utf8`, `LargeUtf8`, `Utf8View` to `string`; the binary kinds to `binary`;
//! - `Date32`/`Date64` to `date`;
//! - timestamps of any unit with a zone to `timestamp` (the instant is kept), zone-less ones
//!   to `timestamp_ntz`, and zone-less ones to `timestamp` read as UTC; nanoseconds are
//!   truncated to microseconds as Spark truncates them;
//! - dictionary-encoded columns by their values, the Arrow `Null` type to any type;
//! - structs field by field (missing nullable fields become NULL), lists (large and fixed-size
//!   too) and maps element by element.
//!
//! Non-nullable nested fields are checked here: a NULL in a non-nullable struct field of a
//! non-NULL struct, or a NULL element of an array or map whose elements are not nullable, is an
//! [`Error::ConstraintViolation`].

use std::sync::Arc;

use arrow::buffer::NullBuffer;
use arrow::compute::{cast_with_options, CastOptions};
use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, MapArray, RecordBatch, StructArray};
use arrow_schema::{DataType as ArrowType, Fields, SchemaRef};

use crate::error::{Error, Result};
pub(crate) use crate::schema::match_name;
use crate::schema::{DataType, PrimitiveType, StructType};

/// The columns of `batch` matched to the top-level columns of `schema` (whose Arrow form is
/// `arrow`), in table order: `Some` cast to the column's Arrow type, `None` when the batch does
/// not have the column.
pub(crate) fn conform_batch(
    batch: &RecordBatch,
    schema: &StructType,
    arrow: &SchemaRef,
    table: &str,
) -> Result<Vec<Option<ArrayRef>>> {
    let input = batch.schema();
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    let mut columns: Vec<Option<ArrayRef>> = vec![None; names.len()];
    for (input_field, array) in input.fields().iter().zip(batch.columns()) {
        let index = match_name(&names, input_field.name()).ok_or_else(|| {
            mismatch(
                table,
                input_field.name(),
                "the table has no such column".into(),
            )
        })?;
        if columns[index].is_some() {
            return Err(mismatch(
                table,
                input_field.name(),
                format!("the data has more than one column for `{}`", names[index]),
            ));
        }
        let field = &schema.fields[index];
        let target = arrow.field(index);
        columns[index] = Some(conform_array(
            array,
            &field.data_type,
            target.data_type(),
            &field.name,
            table,
        )?);
    }
    Ok(columns)
}

/// `array` cast to the Delta type `target` (whose Arrow form is `arrow_target`), as the
/// module docs describe; `path` names the column in errors.
pub(crate) fn conform_array(
    array: &ArrayRef,
    target: &DataType,
    arrow_target: &ArrowType,
    path: &str,
    table: &str,
) -> Result<ArrayRef> {
    let from = array.data_type();
    if from == arrow_target {
        check_nested_not_null(array, target, arrow_target, path, table)?;
        return Ok(array.clone());
    }
    if from == &ArrowType::Null {
        return Ok(new_null_array(arrow_target, array.len()));
    }
    if let ArrowType::Dictionary(_, values) = from {
        let decoded = cast(array, values, path, table)?;
        return conform_array(&decoded, target, arrow_target, path, table);
    }
    match (target, arrow_target) {
        (DataType::Primitive(PrimitiveType::Variant), ArrowType::Struct(fields))
        | (DataType::Struct(_), ArrowType::Struct(fields)) => {
            conform_struct(array, target, fields, path, table)
        }
        (DataType::Primitive(primitive), _) => {
            if !is_lossless(from, primitive) {
                return Err(mismatch(
                    table,
                    path,
                    format!("data of type {from} cannot be written to a column of type {primitive} without loss"),
                ));
            }
            cast(array, arrow_target, path, table)
        }
        (DataType::Array(array_type), ArrowType::List(element)) => {
            let list = match from {
                ArrowType::List(_) => array.clone(),
                ArrowType::LargeList(item)
                | ArrowType::FixedSizeList(item, _)
                | ArrowType::ListView(item)
                | ArrowType::LargeListView(item) => {
                    let as_list = ArrowType::List(item.clone());
                    cast(array, &as_list, path, table)?
                }
                other => return Err(kind_mismatch(table, path, other, "an array")),
            };
            let list = list.as_list::<i32>();
            let element_path = format!("{path}.element");
            let values = conform_array(
                list.values(),
                &array_type.element_type,
                element.data_type(),
                &element_path,
                table,
            )?;
            if !array_type.contains_null {
                check_no_nulls(&values, &element_path, table)?;
            }
            let rebuilt = arrow_array::ListArray::try_new(
                element.clone(),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )
            .map_err(|e| mismatch(table, path, e.to_string()))?;
            Ok(Arc::new(rebuilt))
        }
        (DataType::Map(map_type), ArrowType::Map(entries, sorted)) => {
            let ArrowType::Map(..) = from else {
                return Err(kind_mismatch(table, path, from, "a map"));
            };
            let ArrowType::Struct(entry_fields) = entries.data_type() else {
                return Err(mismatch(
                    table,
                    path,
                    "the map type has no entries struct".into(),
                ));
            };
            let map = array.as_map();
            let key_path = format!("{path}.key");
            let value_path = format!("{path}.value");
            let keys = conform_array(
                map.keys(),
                &map_type.key_type,
                entry_fields[0].data_type(),
                &key_path,
                table,
            )?;
            check_no_nulls(&keys, &key_path, table)?;
            let values = conform_array(
                map.values(),
                &map_type.value_type,
                entry_fields[1].data_type(),
                &value_path,
                table,
            )?;
            if !map_type.value_contains_null {
                check_no_nulls(&values, &value_path, table)?;
            }
            let entries_array =
                StructArray::try_new(entry_fields.clone(), vec![keys, values], None)
                    .map_err(|e| mismatch(table, path, e.to_string()))?;
            let rebuilt = MapArray::try_new(
                entries.clone(),
                map.offsets().clone(),
                entries_array,
                map.nulls().cloned(),
                *sorted,
            )
            .map_err(|e| mismatch(table, path, e.to_string()))?;
            Ok(Arc::new(rebuilt))
        }
        _ => Err(mismatch(
            table,
            path,
            format!("data of type {from} cannot be written to a column of type {target}"),
        )),
    }
}

fn conform_struct(
    array: &ArrayRef,
    target: &DataType,
    fields: &Fields,
    path: &str,
    table: &str,
) -> Result<ArrayRef> {
    let ArrowType::Struct(input_fields) = array.data_type() else {
        return Err(kind_mismatch(table, path, array.data_type(), "a struct"));
    };
    let input = array.as_struct();
    let delta_fields = match target {
        DataType::Struct(st) => st
            .fields
            .iter()
            .map(|f| (f.name.as_str(), &f.data_type))
            .collect(),
        _ => Vec::new(),
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    let mut children: Vec<Option<ArrayRef>> = vec![None; fields.len()];
    for (input_field, child) in input_fields.iter().zip(input.columns()) {
        let child_path = format!("{path}.{}", input_field.name());
        let index = match_name(&names, input_field.name())
            .ok_or_else(|| mismatch(table, &child_path, "the table has no such field".into()))?;
        if children[index].is_some() {
            return Err(mismatch(
                table,
                &child_path,
                "the data has this field twice".into(),
            ));
        }
        let field = &fields[index];
        let delta_type = match delta_fields.get(index) {
            Some((_, ty)) => (*ty).clone(),
            None => DataType::Primitive(PrimitiveType::Binary),
        };
        let child_path = format!("{path}.{}", field.name());
        children[index] = Some(conform_array(
            child,
            &delta_type,
            field.data_type(),
            &child_path,
            table,
        )?);
    }
    let len = array.len();
    let columns: Vec<ArrayRef> = children
        .into_iter()
        .zip(fields.iter())
        .map(|(child, field)| child.unwrap_or_else(|| new_null_array(field.data_type(), len)))
        .collect();
    check_struct_children(fields, &columns, input.nulls(), path, table)?;
    let rebuilt = StructArray::try_new(fields.clone(), columns, input.nulls().cloned())
        .map_err(|e| mismatch(table, path, e.to_string()))?;
    Ok(Arc::new(rebuilt))
}

/// A NULL in a non-nullable field of a non-NULL struct is a violation.
fn check_struct_children(
    fields: &Fields,
    columns: &[ArrayRef],
    parent: Option<&NullBuffer>,
    path: &str,
    table: &str,
) -> Result<()> {
    for (field, column) in fields.iter().zip(columns) {
        if field.is_nullable() {
            continue;
        }
        if let Some(nulls) = column.logical_nulls() {
            let offending = (0..column.len())
                .find(|&row| nulls.is_null(row) && parent.is_none_or(|p| p.is_valid(row)));
            if let Some(row) = offending {
                return Err(not_null_violation(
                    table,
                    &format!("{path}.{}", field.name()),
                    row,
                ));
            }
        }
    }
    Ok(())
}

/// The NOT NULL checks of a column that needed no cast.
fn check_nested_not_null(
    array: &ArrayRef,
    target: &DataType,
    arrow_target: &ArrowType,
    path: &str,
    table: &str,
) -> Result<()> {
    match (target, arrow_target) {
        (DataType::Struct(st), ArrowType::Struct(fields)) => {
            let input = array.as_struct();
            check_struct_children(fields, input.columns(), input.nulls(), path, table)?;
            for ((field, child), delta) in fields.iter().zip(input.columns()).zip(&st.fields) {
                let child_path = format!("{path}.{}", field.name());
                check_nested_not_null(
                    child,
                    &delta.data_type,
                    field.data_type(),
                    &child_path,
                    table,
                )?;
            }
            Ok(())
        }
        (DataType::Array(array_type), ArrowType::List(element)) => {
            let values = array.as_list::<i32>().values();
            let element_path = format!("{path}.element");
            if !array_type.contains_null {
                check_no_nulls(values, &element_path, table)?;
            }
            check_nested_not_null(
                values,
                &array_type.element_type,
                element.data_type(),
                &element_path,
                table,
            )
        }
        (DataType::Map(map_type), ArrowType::Map(entries, _)) => {
            let map = array.as_map();
            if !map_type.value_contains_null {
                check_no_nulls(map.values(), &format!("{path}.value"), table)?;
            }
            if let ArrowType::Struct(entry_fields) = entries.data_type() {
                check_nested_not_null(
                    map.keys(),
                    &map_type.key_type,
                    entry_fields[0].data_type(),
                    &format!("{path}.key"),
                    table,
                )?;
                check_nested_not_null(
                    map.values(),
                    &map_type.value_type,
                    entry_fields[1].data_type(),
                    &format!("{path}.value"),
                    table,
                )?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_no_nulls(array: &ArrayRef, path: &str, table: &str) -> Result<()> {
    match array.logical_nulls() {
        Some(nulls) if nulls.null_count() > 0 => {
            let row = (0..array.len())
                .find(|&row| nulls.is_null(row))
                .unwrap_or(0);
            Err(Error::ConstraintViolation {
                table: table.to_string(),
                constraint: format!("NOT NULL constraint on `{path}`"),
                reason: format!("element {row} of the nested values is NULL"),
            })
        }
        _ => Ok(()),
    }
}

/// The NOT NULL violation of `column` at `row`.
pub(crate) fn not_null_violation(table: &str, column: &str, row: usize) -> Error {
    Error::ConstraintViolation {
        table: table.to_string(),
        constraint: format!("NOT NULL constraint on `{column}`"),
        reason: format!("row {row} has NULL in `{column}`"),
    }
}

fn cast(array: &ArrayRef, to: &ArrowType, path: &str, table: &str) -> Result<ArrayRef> {
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(array, to, &options).map_err(|e| {
        mismatch(
            table,
            path,
            format!("cannot cast {} to {to}: {e}", array.data_type()),
        )
    })
}

/// True when every value of Arrow type `from` is a value of the Delta type `to`.
fn is_lossless(from: &ArrowType, to: &PrimitiveType) -> bool {
    use ArrowType as A;
    match to {
        PrimitiveType::Boolean => matches!(from, A::Boolean),
        PrimitiveType::Byte => matches!(from, A::Int8),
        PrimitiveType::Short => matches!(from, A::Int8 | A::Int16 | A::UInt8),
        PrimitiveType::Integer => {
            matches!(from, A::Int8 | A::Int16 | A::Int32 | A::UInt8 | A::UInt16)
        }
        PrimitiveType::Long => matches!(
            from,
            A::Int8 | A::Int16 | A::Int32 | A::Int64 | A::UInt8 | A::UInt16 | A::UInt32
        ),
        PrimitiveType::Float => matches!(from, A::Float16 | A::Float32),
        PrimitiveType::Double => matches!(
            from,
            A::Float16
                | A::Float32
                | A::Float64
                | A::Int8
                | A::Int16
                | A::Int32
                | A::UInt8
                | A::UInt16
                | A::UInt32
        ),
        PrimitiveType::Decimal { precision, scale } => {
            let integer_digits = i16::from(*precision) - i16::from(*scale);
            let fits = |p: u8, s: i8| s <= *scale && i16::from(p) - i16::from(s) <= integer_digits;
            match from {
                A::Decimal32(p, s)
                | A::Decimal64(p, s)
                | A::Decimal128(p, s)
                | A::Decimal256(p, s) => fits(*p, *s),
                A::Int8 | A::UInt8 => integer_digits >= 3,
                A::Int16 | A::UInt16 => integer_digits >= 5,
                A::Int32 | A::UInt32 => integer_digits >= 10,
                A::Int64 => integer_digits >= 19,
                A::UInt64 => integer_digits >= 20,
                _ => false,
            }
        }
        PrimitiveType::String => matches!(from, A::Utf8 | A::LargeUtf8 | A::Utf8View),
        PrimitiveType::Binary => matches!(
            from,
            A::Binary | A::LargeBinary | A::BinaryView | A::FixedSizeBinary(_)
        ),
        PrimitiveType::Date => matches!(from, A::Date32 | A::Date64),
        PrimitiveType::Timestamp => matches!(from, A::Timestamp(..)),
        PrimitiveType::TimestampNtz => matches!(from, A::Timestamp(_, None)),
        PrimitiveType::Void => matches!(from, A::Null),
        PrimitiveType::Variant => false,
    }
}

fn mismatch(table: &str, column: &str, reason: String) -> Error {
    Error::SchemaMismatch {
        table: table.to_string(),
        column: column.to_string(),
        reason,
    }
}

fn kind_mismatch(table: &str, path: &str, from: &ArrowType, expected: &str) -> Error {
    mismatch(
        table,
        path,
        format!("data of type {from} cannot be written to a column that holds {expected}"),
    )
}
