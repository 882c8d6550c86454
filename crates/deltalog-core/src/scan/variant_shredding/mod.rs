//! Shredded variant columns (Delta's `variantShredding-preview` reader feature; Parquet
//! "Variant Shredding"): a variant group holding a `typed_value` next to its `metadata` and
//! `value` binaries is reassembled into the unshredded variant, so that it reads exactly as an
//! unshredded column of the same values.
//!
//! Each `value`/`typed_value` pair is read by the spec's table: `value` alone is the encoded
//! value; `typed_value` alone is the value of its type (a primitive, an array of element
//! groups, or an object of field groups); both set is a partially shredded object, whose
//! `value` holds the fields that are not shredded; neither is a missing object field, and
//! anywhere else the Variant null. Anything else (both set for a non-object, a residual
//! `value` that is not an object or that repeats a shredded field, a `typed_value` of a type
//! the spec does not allow, broken encoded bytes) is an error naming the column; the reader
//! turns it into [`crate::Error::CorruptDataFile`] naming the file.

mod encoding;
#[cfg(test)]
mod tests;

use std::ops::Range;
use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::builder::BinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time64MicrosecondType, TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray, ListArray,
    PrimitiveArray, StringArray, StructArray,
};
use arrow_schema::{DataType as ArrowType, Field, Fields, TimeUnit};

use encoding::{
    object_fields, write_array, write_long_bytes, write_object, write_primitive, write_string,
    Dictionary, EncodingResult, PrimitiveId, VARIANT_NULL,
};

/// The name of the shredded column in a variant group.
const TYPED_VALUE: &str = "typed_value";

/// True when the file's variant group is shredded (it has a `typed_value`).
pub(super) fn is_shredded(group: &StructArray) -> bool {
    group.column_by_name(TYPED_VALUE).is_some()
}

/// The unshredded form of the shredded variant group `group` of column `path`: a struct of
/// non-null `metadata` and `value` binaries with the nulls of `group` (a SQL NULL variant).
/// A present variant whose `value` and `typed_value` are both null reads as the Variant null.
pub(super) fn unshred(group: &StructArray, path: &str) -> Result<ArrayRef, String> {
    let located = |problem: String| format!("column {problem}");
    let metadata = group.column_by_name("metadata").ok_or_else(|| {
        located(format!(
            "`{path}`: the shredded variant group has no `metadata` field"
        ))
    })?;
    let metadata = as_binary(metadata, &format!("{path}.metadata")).map_err(located)?;
    let shredded = Shredded::plan(group, path).map_err(located)?;
    let mut values = BinaryBuilder::with_capacity(group.len(), group.len() * 16);
    let mut dictionaries = Dictionaries::default();
    let mut encoded = Vec::new();
    for row in 0..group.len() {
        encoded.clear();
        if group.is_valid(row) {
            if metadata.is_null(row) {
                return Err(located(format!(
                    "`{path}.metadata` is null in a row whose variant is not null"
                )));
            }
            let mut context = RowContext {
                metadata: metadata.value(row),
                dictionaries: &mut dictionaries,
            };
            if !shredded
                .append(row, &mut context, &mut encoded)
                .map_err(located)?
            {
                encoded.push(VARIANT_NULL);
            }
        }
        values.append_value(&encoded);
    }
    let fields = Fields::from(vec![
        Field::new("metadata", ArrowType::Binary, false),
        Field::new("value", ArrowType::Binary, false),
    ]);
    let children: Vec<ArrayRef> = vec![Arc::new(metadata), Arc::new(values.finish())];
    let built = StructArray::try_new(fields, children, group.nulls().cloned())
        .map_err(|error| located(format!("`{path}`: {error}")))?;
    Ok(Arc::new(built))
}

/// One `value`/`typed_value` pair of a variant group, an object field or an array element.
#[derive(Debug)]
struct Shredded {
    /// Where the pair is (`v.typed_value.a`), for messages.
    path: String,
    value: Option<BinaryArray>,
    typed: Option<Typed>,
}

/// What a `typed_value` column holds.
#[derive(Debug)]
enum Typed {
    Primitive(Primitive),
    /// A shredded object: the group's validity and one pair per shredded field, by name.
    Object(StructArray, Vec<(String, Shredded)>),
    /// A shredded array: the list and the pair of its elements.
    Array(ListArray, Box<Shredded>),
}

/// A shredded primitive column, with the Variant type its values take (spec "Shredded Value
/// Types").
#[derive(Debug)]
enum Primitive {
    Boolean(BooleanArray),
    Int8(PrimitiveArray<Int8Type>),
    Int16(PrimitiveArray<Int16Type>),
    Int32(PrimitiveArray<Int32Type>),
    Int64(PrimitiveArray<Int64Type>),
    Float(PrimitiveArray<Float32Type>),
    Double(PrimitiveArray<Float64Type>),
    /// decimal4, decimal8 or decimal16 by the column's precision, and the scale.
    Decimal(Decimal128Array, PrimitiveId, u8),
    Date(PrimitiveArray<Date32Type>),
    Time(PrimitiveArray<Time64MicrosecondType>),
    /// timestamp or timestamp_ntz (microseconds).
    Micros(PrimitiveArray<TimestampMicrosecondType>, PrimitiveId),
    /// timestamp or timestamp_ntz with nanoseconds.
    Nanos(PrimitiveArray<TimestampNanosecondType>, PrimitiveId),
    Binary(BinaryArray),
    String(StringArray),
    Uuid(FixedSizeBinaryArray),
}

/// What reassembling one row needs besides the columns: its metadata dictionary.
struct RowContext<'a> {
    metadata: &'a [u8],
    dictionaries: &'a mut Dictionaries,
}

/// The dictionary of the last metadata parsed: rows of a file mostly share one.
#[derive(Default)]
struct Dictionaries {
    metadata: Vec<u8>,
    parsed: Option<Arc<Dictionary>>,
}

impl RowContext<'_> {
    fn dictionary(&mut self) -> EncodingResult<Arc<Dictionary>> {
        let cache = &mut *self.dictionaries;
        if let Some(parsed) = cache
            .parsed
            .as_ref()
            .filter(|_| cache.metadata == self.metadata)
        {
            return Ok(parsed.clone());
        }
        let parsed = Arc::new(Dictionary::parse(self.metadata)?);
        cache.metadata = self.metadata.to_vec();
        cache.parsed = Some(parsed.clone());
        Ok(parsed)
    }
}

impl Shredded {
    /// The pair of `group` (a struct with `value` and/or `typed_value`).
    fn plan(group: &StructArray, path: &str) -> EncodingResult<Shredded> {
        let value = match group.column_by_name("value") {
            Some(value) => Some(as_binary(value, &format!("{path}.value"))?),
            None => None,
        };
        let typed_path = format!("{path}.{TYPED_VALUE}");
        let typed = match group.column_by_name(TYPED_VALUE) {
            Some(typed) => Some(Typed::plan(typed, &typed_path)?),
            None => None,
        };
        if value.is_none() && typed.is_none() {
            return Err(format!("`{path}` has neither `value` nor `typed_value`"));
        }
        Ok(Shredded {
            path: path.to_string(),
            value,
            typed,
        })
    }

    /// Appends the encoded value of `row` to `out`; false (nothing appended) when missing.
    fn append(
        &self,
        row: usize,
        context: &mut RowContext<'_>,
        out: &mut Vec<u8>,
    ) -> EncodingResult<bool> {
        let value = self
            .value
            .as_ref()
            .filter(|value| value.is_valid(row))
            .map(|value| value.value(row));
        let typed = self.typed.as_ref().filter(|typed| typed.is_valid(row));
        match (value, typed) {
            (None, None) => Ok(false),
            (Some(value), None) => {
                encoding::value_size(value).map_err(|problem| self.located(problem))?;
                out.extend_from_slice(value);
                Ok(true)
            }
            (residual, Some(Typed::Object(_, fields))) => {
                self.append_object(fields, residual, row, context, out)?;
                Ok(true)
            }
            (None, Some(Typed::Array(list, element))) => {
                append_array(list, element, row, context, out)?;
                Ok(true)
            }
            (None, Some(Typed::Primitive(primitive))) => {
                primitive.append(row, out);
                Ok(true)
            }
            (Some(_), Some(_)) => Err(self.located(
                "both `value` and `typed_value` are set, which the spec allows for objects only"
                    .into(),
            )),
        }
    }

    /// Appends the object of the shredded `fields` present in `row` and the fields of the
    /// `residual` object, sorted by field name.
    fn append_object(
        &self,
        fields: &[(String, Shredded)],
        residual: Option<&[u8]>,
        row: usize,
        context: &mut RowContext<'_>,
        out: &mut Vec<u8>,
    ) -> EncodingResult<()> {
        let dictionary = context
            .dictionary()
            .map_err(|problem| self.located(problem))?;
        let mut data = Vec::new();
        let mut entries: Vec<(u32, Range<usize>)> = Vec::with_capacity(fields.len());
        for (name, field) in fields {
            let start = data.len();
            if field.append(row, context, &mut data)? {
                let id = dictionary
                    .id(name)
                    .map_err(|problem| self.located(problem))?;
                entries.push((id, start..data.len()));
            }
        }
        if let Some(residual) = residual {
            let unshredded = object_fields(residual).map_err(|problem| self.located(problem))?;
            for (id, value) in unshredded {
                let name = dictionary
                    .name(id)
                    .map_err(|problem| self.located(problem))?;
                if fields
                    .iter()
                    .any(|(shredded, _)| shredded.as_bytes() == name)
                {
                    return Err(self.located(format!(
                        "the residual `value` repeats the shredded field `{}`",
                        String::from_utf8_lossy(name)
                    )));
                }
                let start = data.len();
                data.extend_from_slice(value);
                entries.push((id, start..data.len()));
            }
        }
        let mut named = Vec::with_capacity(entries.len());
        for (id, range) in entries {
            let name = dictionary
                .name(id)
                .map_err(|problem| self.located(problem))?;
            named.push((name, id, range));
        }
        named.sort_by(|a, b| a.0.cmp(b.0));
        let sorted: Vec<(u32, Range<usize>)> = named
            .into_iter()
            .map(|(_, id, range)| (id, range))
            .collect();
        write_object(out, &sorted, &data);
        Ok(())
    }

    fn located(&self, problem: String) -> String {
        format!("`{}`: {problem}", self.path)
    }
}

/// Appends the array of `row` of `list`: each element reassembled, a missing one as the
/// Variant null.
fn append_array(
    list: &ListArray,
    element: &Shredded,
    row: usize,
    context: &mut RowContext<'_>,
    out: &mut Vec<u8>,
) -> EncodingResult<()> {
    let offsets = list.value_offsets();
    let (Some(start), Some(end)) = (offsets.get(row), offsets.get(row + 1)) else {
        return Err(element.located("the list offsets end early".into()));
    };
    let (start, end) = (as_index(*start)?, as_index(*end)?);
    let mut data = Vec::new();
    let mut elements = Vec::with_capacity(end.saturating_sub(start));
    for index in start..end {
        let at = data.len();
        if !element.append(index, context, &mut data)? {
            data.push(VARIANT_NULL);
        }
        elements.push(at..data.len());
    }
    write_array(out, &elements, &data);
    Ok(())
}

impl Typed {
    /// What the `typed_value` column `array` holds; an error for a type the spec does not
    /// allow.
    fn plan(array: &ArrayRef, path: &str) -> EncodingResult<Typed> {
        match array.data_type() {
            ArrowType::Struct(_) => {
                let group = array.as_struct();
                let mut fields = Vec::with_capacity(group.num_columns());
                for (field, column) in group.fields().iter().zip(group.columns()) {
                    let field_path = format!("{path}.{}", field.name());
                    let field_group = column.as_struct_opt().ok_or_else(|| {
                        format!(
                            "`{field_path}` is a {}, not a group of a shredded object field",
                            column.data_type()
                        )
                    })?;
                    fields.push((
                        field.name().clone(),
                        Shredded::plan(field_group, &field_path)?,
                    ));
                }
                Ok(Typed::Object(group.clone(), fields))
            }
            ArrowType::List(_) | ArrowType::LargeList(_) => {
                let list = match array.data_type() {
                    ArrowType::LargeList(element) => cast(array, &ArrowType::List(element.clone()))
                        .map_err(|e| format!("`{path}`: {e}"))?,
                    _ => array.clone(),
                };
                let list = list.as_list::<i32>().clone();
                let element = list.values().as_struct_opt().ok_or_else(|| {
                    format!(
                        "`{path}` is a list of {}, not of element groups",
                        list.value_type()
                    )
                })?;
                let element = Shredded::plan(element, &format!("{path}.element"))?;
                Ok(Typed::Array(list, Box::new(element)))
            }
            _ => Primitive::plan(array, path).map(Typed::Primitive),
        }
    }

    fn is_valid(&self, row: usize) -> bool {
        match self {
            Typed::Primitive(primitive) => primitive.array().is_valid(row),
            Typed::Object(group, _) => group.is_valid(row),
            Typed::Array(list, _) => list.is_valid(row),
        }
    }
}

impl Primitive {
    fn plan(array: &ArrayRef, path: &str) -> EncodingResult<Primitive> {
        use PrimitiveId::{Timestamp, TimestampNanos, TimestampNtz, TimestampNtzNanos};
        let converted =
            |target: &ArrowType| cast(array, target).map_err(|error| format!("`{path}`: {error}"));
        Ok(match array.data_type() {
            ArrowType::Boolean => Primitive::Boolean(array.as_boolean().clone()),
            ArrowType::Int8 => Primitive::Int8(array.as_primitive().clone()),
            ArrowType::Int16 => Primitive::Int16(array.as_primitive().clone()),
            ArrowType::Int32 => Primitive::Int32(array.as_primitive().clone()),
            ArrowType::Int64 => Primitive::Int64(array.as_primitive().clone()),
            ArrowType::Float32 => Primitive::Float(array.as_primitive().clone()),
            ArrowType::Float64 => Primitive::Double(array.as_primitive().clone()),
            ArrowType::Decimal32(precision, scale)
            | ArrowType::Decimal64(precision, scale)
            | ArrowType::Decimal128(precision, scale)
                if *scale >= 0 =>
            {
                let wide = converted(&ArrowType::Decimal128(*precision, *scale))?;
                let id = match precision {
                    0..=9 => PrimitiveId::Decimal4,
                    10..=18 => PrimitiveId::Decimal8,
                    _ => PrimitiveId::Decimal16,
                };
                Primitive::Decimal(wide.as_primitive().clone(), id, *scale as u8)
            }
            ArrowType::Date32 => Primitive::Date(array.as_primitive().clone()),
            ArrowType::Time64(TimeUnit::Microsecond) => {
                Primitive::Time(array.as_primitive().clone())
            }
            ArrowType::Timestamp(TimeUnit::Microsecond, zone) => {
                let id = if zone.is_some() {
                    Timestamp
                } else {
                    TimestampNtz
                };
                Primitive::Micros(array.as_primitive().clone(), id)
            }
            ArrowType::Timestamp(TimeUnit::Nanosecond, zone) => {
                let id = if zone.is_some() {
                    TimestampNanos
                } else {
                    TimestampNtzNanos
                };
                Primitive::Nanos(array.as_primitive().clone(), id)
            }
            ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => {
                Primitive::Binary(converted(&ArrowType::Binary)?.as_binary().clone())
            }
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
                Primitive::String(converted(&ArrowType::Utf8)?.as_string().clone())
            }
            ArrowType::FixedSizeBinary(16) => Primitive::Uuid(array.as_fixed_size_binary().clone()),
            other => {
                return Err(format!(
                    "`{path}` is a {other}, which is not a type a shredded variant can hold"
                ))
            }
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            Primitive::Boolean(a) => a,
            Primitive::Int8(a) => a,
            Primitive::Int16(a) => a,
            Primitive::Int32(a) => a,
            Primitive::Int64(a) => a,
            Primitive::Float(a) => a,
            Primitive::Double(a) => a,
            Primitive::Decimal(a, _, _) => a,
            Primitive::Date(a) => a,
            Primitive::Time(a) => a,
            Primitive::Micros(a, _) => a,
            Primitive::Nanos(a, _) => a,
            Primitive::Binary(a) => a,
            Primitive::String(a) => a,
            Primitive::Uuid(a) => a,
        }
    }

    /// Appends the encoded value of (non-null) `row`.
    fn append(&self, row: usize, out: &mut Vec<u8>) {
        match self {
            Primitive::Boolean(a) => {
                let id = if a.value(row) {
                    PrimitiveId::True
                } else {
                    PrimitiveId::False
                };
                write_primitive(out, id, &[]);
            }
            Primitive::Int8(a) => {
                write_primitive(out, PrimitiveId::Int8, &a.value(row).to_le_bytes())
            }
            Primitive::Int16(a) => {
                write_primitive(out, PrimitiveId::Int16, &a.value(row).to_le_bytes())
            }
            Primitive::Int32(a) => {
                write_primitive(out, PrimitiveId::Int32, &a.value(row).to_le_bytes())
            }
            Primitive::Int64(a) => {
                write_primitive(out, PrimitiveId::Int64, &a.value(row).to_le_bytes())
            }
            Primitive::Float(a) => {
                write_primitive(out, PrimitiveId::Float, &a.value(row).to_le_bytes())
            }
            Primitive::Double(a) => {
                write_primitive(out, PrimitiveId::Double, &a.value(row).to_le_bytes())
            }
            Primitive::Decimal(a, id, scale) => {
                let unscaled = a.value(row).to_le_bytes();
                let width = match id {
                    PrimitiveId::Decimal4 => 4,
                    PrimitiveId::Decimal8 => 8,
                    _ => 16,
                };
                let mut payload = Vec::with_capacity(1 + width);
                payload.push(*scale);
                payload.extend_from_slice(unscaled.get(..width).unwrap_or(&unscaled));
                write_primitive(out, *id, &payload);
            }
            Primitive::Date(a) => {
                write_primitive(out, PrimitiveId::Date, &a.value(row).to_le_bytes())
            }
            Primitive::Time(a) => {
                write_primitive(out, PrimitiveId::Time, &a.value(row).to_le_bytes())
            }
            Primitive::Nanos(a, id) => write_primitive(out, *id, &a.value(row).to_le_bytes()),
            Primitive::Micros(a, id) => write_primitive(out, *id, &a.value(row).to_le_bytes()),
            Primitive::Binary(a) => write_long_bytes(out, PrimitiveId::Binary, a.value(row)),
            Primitive::String(a) => write_string(out, a.value(row).as_bytes()),
            Primitive::Uuid(a) => write_primitive(out, PrimitiveId::Uuid, a.value(row)),
        }
    }
}

/// `array` (a `metadata` or `value` column) as a binary array.
fn as_binary(array: &ArrayRef, name: &str) -> EncodingResult<BinaryArray> {
    match array.data_type() {
        ArrowType::Binary => Ok(array.as_binary::<i32>().clone()),
        ArrowType::LargeBinary | ArrowType::BinaryView => cast(array, &ArrowType::Binary)
            .map(|binary| binary.as_binary::<i32>().clone())
            .map_err(|error| format!("`{name}`: {error}")),
        other => Err(format!("`{name}` is a {other}, not a binary")),
    }
}

fn as_index(offset: i32) -> EncodingResult<usize> {
    usize::try_from(offset).map_err(|_| format!("a negative list offset {offset}"))
}
