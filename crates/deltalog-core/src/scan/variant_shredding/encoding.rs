//! The Variant binary encoding (Parquet "VariantEncoding"), as far as reassembling shredded
//! values needs it: the metadata dictionary, the extent of an encoded value, the fields of an
//! encoded object, and writing primitives, objects and arrays.
//!
//! Every value starts with one header byte: the basic type in its two low bits (0 primitive,
//! 1 short string, 2 object, 3 array), the type's header in the six high bits.

use std::collections::HashMap;
use std::ops::Range;

/// A problem with encoded bytes, as a sentence.
pub(super) type EncodingResult<T> = std::result::Result<T, String>;

const PRIMITIVE: u8 = 0;
const SHORT_STRING: u8 = 1;
const OBJECT: u8 = 2;
const ARRAY: u8 = 3;
/// The longest string a short string holds (six header bits).
const MAX_SHORT_STRING: usize = 0x3F;

/// The primitive type ids of the Variant encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PrimitiveId {
    True = 1,
    False = 2,
    Int8 = 3,
    Int16 = 4,
    Int32 = 5,
    Int64 = 6,
    Double = 7,
    Decimal4 = 8,
    Decimal8 = 9,
    Decimal16 = 10,
    Date = 11,
    Timestamp = 12,
    TimestampNtz = 13,
    Float = 14,
    Binary = 15,
    String = 16,
    Time = 17,
    TimestampNanos = 18,
    TimestampNtzNanos = 19,
    Uuid = 20,
}

/// The encoded Variant null: basic type primitive, type id 0.
pub(super) const VARIANT_NULL: u8 = 0;

/// A parsed metadata dictionary: the field names by id, and the ids by name.
#[derive(Debug)]
pub(super) struct Dictionary {
    names: Vec<Box<[u8]>>,
    ids: HashMap<Box<[u8]>, u32>,
}

impl Dictionary {
    /// Parses variant metadata: a header byte (version 1 in the low four bits, the offset
    /// size minus one in the two high bits), the dictionary size, its offsets, then its bytes.
    pub(super) fn parse(metadata: &[u8]) -> EncodingResult<Dictionary> {
        let header = *metadata.first().ok_or("the variant metadata is empty")?;
        if header & 0x0F != 1 {
            return Err(format!(
                "the variant metadata has version {}, only version 1 exists",
                header & 0x0F
            ));
        }
        let offset_size = usize::from(header >> 6) + 1;
        let size = read_unsigned(metadata, 1, offset_size)?;
        let offsets_start = 1 + offset_size;
        let bytes_start = size
            .checked_add(2)
            .and_then(|n| n.checked_mul(offset_size))
            .and_then(|n| n.checked_add(1))
            .ok_or("the variant metadata dictionary size overflows")?;
        let mut names = Vec::with_capacity(size.min(metadata.len()));
        let mut ids = HashMap::with_capacity(size.min(metadata.len()));
        let mut start = read_unsigned(metadata, offsets_start, offset_size)?;
        for id in 0..size {
            let end = read_unsigned(
                metadata,
                offsets_start + (id + 1) * offset_size,
                offset_size,
            )?;
            let name = slice(metadata, bytes_start + start..bytes_start + end)?;
            let name: Box<[u8]> = name.into();
            let id = u32::try_from(id).map_err(|_| "the variant metadata has too many names")?;
            ids.entry(name.clone()).or_insert(id);
            names.push(name);
            start = end;
        }
        Ok(Dictionary { names, ids })
    }

    /// The field name with id `id`.
    pub(super) fn name(&self, id: u32) -> EncodingResult<&[u8]> {
        usize::try_from(id)
            .ok()
            .and_then(|index| self.names.get(index))
            .map(|name| &name[..])
            .ok_or_else(|| format!("field id {id} is not in the variant metadata dictionary"))
    }

    /// The id of the field name `name` (the spec asks every field name, shredded or not, to be
    /// in the dictionary).
    pub(super) fn id(&self, name: &str) -> EncodingResult<u32> {
        self.ids.get(name.as_bytes()).copied().ok_or_else(|| {
            format!("the shredded field `{name}` is not in the variant metadata dictionary")
        })
    }
}

/// The fields of an encoded object, as (field id, encoded value) pairs in stored order.
pub(super) fn object_fields(value: &[u8]) -> EncodingResult<Vec<(u32, &[u8])>> {
    let header = *value.first().ok_or("an encoded variant value is empty")?;
    if header & 0x03 != OBJECT {
        return Err("the residual `value` of a shredded object is not an object".into());
    }
    let layout = ObjectLayout::parse(value)?;
    let mut fields = Vec::with_capacity(layout.count);
    for index in 0..layout.count {
        let id = read_unsigned(
            value,
            layout.ids_start + index * layout.id_size,
            layout.id_size,
        )?;
        let id = u32::try_from(id).map_err(|_| "an object field id overflows")?;
        let offset = layout.offset(value, index)?;
        let start = layout.data_start + offset;
        let rest = slice(value, start..value.len())?;
        let size = value_size(rest)?;
        fields.push((id, slice(rest, 0..size)?));
    }
    Ok(fields)
}

/// The number of bytes the value at the start of `value` takes.
pub(super) fn value_size(value: &[u8]) -> EncodingResult<usize> {
    let header = *value.first().ok_or("an encoded variant value is empty")?;
    let type_header = header >> 2;
    let size = match header & 0x03 {
        PRIMITIVE => primitive_size(value, type_header)?,
        SHORT_STRING => 1 + usize::from(type_header),
        OBJECT => {
            let layout = ObjectLayout::parse(value)?;
            layout.data_start + layout.offset(value, layout.count)?
        }
        _ => {
            let offset_size = usize::from(type_header & 0x03) + 1;
            let count_size = if type_header & 0x04 != 0 { 4 } else { 1 };
            let count = read_unsigned(value, 1, count_size)?;
            let offsets_start = 1 + count_size;
            let data_start = offsets_start + (count + 1) * offset_size;
            let last = read_unsigned(value, offsets_start + count * offset_size, offset_size)?;
            data_start + last
        }
    };
    if size > value.len() {
        return Err(format!(
            "an encoded variant value needs {size} bytes, only {} are there",
            value.len()
        ));
    }
    Ok(size)
}

/// Appends a primitive value: its header, then `payload` (little-endian, as the spec says).
pub(super) fn write_primitive(out: &mut Vec<u8>, id: PrimitiveId, payload: &[u8]) {
    out.push((id as u8) << 2);
    out.extend_from_slice(payload);
}

/// Appends a string: a short string up to 63 bytes, else a long one.
pub(super) fn write_string(out: &mut Vec<u8>, text: &[u8]) {
    if text.len() <= MAX_SHORT_STRING {
        out.push(((text.len() as u8) << 2) | SHORT_STRING);
        out.extend_from_slice(text);
    } else {
        write_long_bytes(out, PrimitiveId::String, text);
    }
}

/// Appends a binary value, or a long string: the header, a four-byte length, the bytes.
pub(super) fn write_long_bytes(out: &mut Vec<u8>, id: PrimitiveId, bytes: &[u8]) {
    out.push((id as u8) << 2);
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Appends an object whose fields are `fields` (field id, range of `data`), already sorted by
/// field name as the spec asks.
pub(super) fn write_object(out: &mut Vec<u8>, fields: &[(u32, Range<usize>)], data: &[u8]) {
    let large = fields.len() > usize::from(u8::MAX);
    let max_id = fields.iter().map(|(id, _)| *id as usize).max().unwrap_or(0);
    let id_size = bytes_needed(max_id);
    let total: usize = fields.iter().map(|(_, range)| range.len()).sum();
    let offset_size = bytes_needed(total);
    let type_header =
        (offset_size - 1) as u8 | (((id_size - 1) as u8) << 2) | (u8::from(large) << 4);
    out.push((type_header << 2) | OBJECT);
    write_unsigned(out, fields.len(), if large { 4 } else { 1 });
    for (id, _) in fields {
        write_unsigned(out, *id as usize, id_size);
    }
    write_offsets(
        out,
        fields.iter().map(|(_, range)| range.len()),
        offset_size,
    );
    for (_, range) in fields {
        out.extend_from_slice(data.get(range.clone()).unwrap_or_default());
    }
}

/// Appends an array whose elements are the ranges `elements` of `data`.
pub(super) fn write_array(out: &mut Vec<u8>, elements: &[Range<usize>], data: &[u8]) {
    let large = elements.len() > usize::from(u8::MAX);
    let total: usize = elements.iter().map(Range::len).sum();
    let offset_size = bytes_needed(total);
    let type_header = (offset_size - 1) as u8 | (u8::from(large) << 2);
    out.push((type_header << 2) | ARRAY);
    write_unsigned(out, elements.len(), if large { 4 } else { 1 });
    write_offsets(out, elements.iter().map(Range::len), offset_size);
    for range in elements {
        out.extend_from_slice(data.get(range.clone()).unwrap_or_default());
    }
}

/// Where the parts of an encoded object are: a header byte (offset size minus one in bits 2-3,
/// id size minus one in bits 4-5, "large" in bit 6), the field count (four bytes when large,
/// else one), the field ids, the field offsets (count + 1), the field values.
struct ObjectLayout {
    count: usize,
    id_size: usize,
    offset_size: usize,
    ids_start: usize,
    offsets_start: usize,
    data_start: usize,
}

impl ObjectLayout {
    fn parse(value: &[u8]) -> EncodingResult<ObjectLayout> {
        let type_header = value.first().map_or(0, |header| header >> 2);
        let offset_size = usize::from(type_header & 0x03) + 1;
        let id_size = usize::from((type_header >> 2) & 0x03) + 1;
        let count_size = if type_header & 0x10 != 0 { 4 } else { 1 };
        let count = read_unsigned(value, 1, count_size)?;
        let ids_start = 1 + count_size;
        let offsets_start = count
            .checked_mul(id_size)
            .and_then(|n| n.checked_add(ids_start))
            .ok_or("an object's field count overflows")?;
        let data_start = (count + 1)
            .checked_mul(offset_size)
            .and_then(|n| n.checked_add(offsets_start))
            .ok_or("an object's field count overflows")?;
        Ok(ObjectLayout {
            count,
            id_size,
            offset_size,
            ids_start,
            offsets_start,
            data_start,
        })
    }

    fn offset(&self, value: &[u8], index: usize) -> EncodingResult<usize> {
        read_unsigned(
            value,
            self.offsets_start + index * self.offset_size,
            self.offset_size,
        )
    }
}

fn primitive_size(value: &[u8], type_id: u8) -> EncodingResult<usize> {
    Ok(match type_id {
        0..=2 => 1,
        3 => 2,
        4 => 3,
        5 | 11 | 14 => 5,
        6 | 7 | 12 | 13 | 17..=19 => 9,
        8 => 6,
        9 => 10,
        10 => 18,
        15 | 16 => 5 + read_unsigned(value, 1, 4)?,
        20 => 17,
        other => return Err(format!("unknown variant primitive type id {other}")),
    })
}

/// The smallest number of bytes (1 to 4) that holds `value`.
fn bytes_needed(value: usize) -> usize {
    match value {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

fn write_offsets(out: &mut Vec<u8>, sizes: impl Iterator<Item = usize>, offset_size: usize) {
    let mut offset = 0;
    write_unsigned(out, offset, offset_size);
    for size in sizes {
        offset += size;
        write_unsigned(out, offset, offset_size);
    }
}

fn write_unsigned(out: &mut Vec<u8>, value: usize, size: usize) {
    out.extend_from_slice(&value.to_le_bytes()[..size]);
}

/// The little-endian unsigned integer of `size` bytes at `at`.
fn read_unsigned(bytes: &[u8], at: usize, size: usize) -> EncodingResult<usize> {
    let field = slice(bytes, at..at.saturating_add(size))?;
    Ok(field
        .iter()
        .rev()
        .fold(0usize, |acc, byte| (acc << 8) | usize::from(*byte)))
}

fn slice(bytes: &[u8], range: Range<usize>) -> EncodingResult<&[u8]> {
    let len = bytes.len();
    bytes.get(range.clone()).ok_or_else(|| {
        format!(
            "encoded variant bytes end early: bytes {}..{} of {len} asked for",
            range.start, range.end
        )
    })
}
