//! Deletion vectors: locating, decoding, applying and encoding them (spec "Deletion Vectors",
//! "Deletion Vector Format" and "Deletion Vector File Storage Format"; catalogue B-V, E2).
//!
//! Everything here is a pure function over bytes except [`read_record`], [`load`] and
//! [`load_many`], which read through a [`Storage`]: resolving a descriptor ([`resolve`]) and
//! decoding what was read ([`decode_dv_file`], [`decode_dv_record`], [`decode_inline`]) never
//! touch a store.
//!
//! A deletion vector is a set of 0-based physical row indexes of one parquet file, held here as a
//! [`RoaringTreemap`].

use std::collections::HashMap;
use std::io::Cursor;
use std::ops::Range;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::BooleanArray;
#[cfg(any(test, feature = "internal-api"))]
use arrow_array::UInt64Array;
use futures::StreamExt;
use object_store::path::Path;
use roaring::{RoaringBitmap, RoaringTreemap};
use url::Url;
use uuid::Uuid;

use crate::actions::DeletionVectorDescriptor;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// Magic number of the portable "RoaringBitmapArray" serialisation, read little-endian
/// (catalogue E2-14). The only format this module writes.
pub(crate) const PORTABLE_MAGIC: u32 = 1_681_511_377;

/// Magic number of the older "native" RoaringBitmapArray serialisation, which readers accept in
/// either byte order (catalogue E2-18, X-01).
pub(crate) const NATIVE_MAGIC: u32 = 1_681_511_376;

/// The format-version byte that starts every deletion vector file (catalogue E2-15, X-02).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const DV_FILE_FORMAT_VERSION: u8 = 1;

/// Offset of the first record of a deletion vector file: right after the version byte
/// (catalogue E2-15, X-02). Used when a file-backed descriptor has no `offset`.
pub(crate) const FIRST_RECORD_OFFSET: u64 = 1;

/// Number of Z85 characters that encode a UUID's 16 bytes (catalogue B-V02, E2-06).
pub(crate) const ENCODED_UUID_LEN: usize = 20;

/// Encodes `bytes` in Z85, the ZeroMQ Base85 variant (catalogue E2-09).
///
/// Each 4-byte group is read as a big-endian `u32` and written as 5 digits, most significant
/// first. Input whose length is not a multiple of 4 is padded with zero bytes, as Delta does for
/// inline deletion vectors (catalogue X-03): the descriptor's `sizeInBytes` tells a reader how many
/// decoded bytes to keep.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn z85_encode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(4) * 5);
    for chunk in bytes.chunks(4) {
        let mut group = [0u8; 4];
        group[..chunk.len()].copy_from_slice(chunk);
        let mut value = u32::from_be_bytes(group);
        let mut digits = [0u8; 5];
        for digit in digits.iter_mut().rev() {
            *digit = Z85_ALPHABET[(value % 85) as usize];
            value /= 85;
        }
        text.extend(digits.iter().map(|&digit| char::from(digit)));
    }
    text
}

/// Decodes Z85 text (catalogue E2-09) into `4 * len / 5` bytes, padding included.
///
/// The text's length must be a multiple of 5, every character must be in the Z85 alphabet and
/// every 5-character group must fit in 32 bits; otherwise the error is an
/// [`Error::InvalidArgument`] quoting the text.
pub(crate) fn z85_decode(text: &str) -> Result<Vec<u8>> {
    let invalid = |reason: String| {
        Error::InvalidArgument(format!("invalid Z85 text {:?}: {reason}", abbreviate(text)))
    };
    if !text.len().is_multiple_of(5) {
        return Err(invalid(format!(
            "its length {} is not a multiple of 5",
            text.len()
        )));
    }
    let mut bytes = Vec::with_capacity(text.len() / 5 * 4);
    for (group_index, group) in text.as_bytes().chunks(5).enumerate() {
        let mut value: u64 = 0;
        for (digit_index, &character) in group.iter().enumerate() {
            let digit = z85_digit(character).ok_or_else(|| {
                invalid(format!(
                    "character {:?} at position {} is not in the Z85 alphabet",
                    char::from(character),
                    group_index * 5 + digit_index
                ))
            })?;
            value = value * 85 + u64::from(digit);
        }
        let value = u32::try_from(value).map_err(|_| {
            invalid(format!(
                "the group at position {} does not fit in 32 bits",
                group_index * 5
            ))
        })?;
        bytes.extend_from_slice(&value.to_be_bytes());
    }
    Ok(bytes)
}

/// Where a deletion vector's bytes are (catalogue B-V07).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum DvLocation {
    /// Storage type `i`: the serialised bitmap (magic included), already Z85-decoded and cut to
    /// `sizeInBytes`. No envelope, size prefix or checksum (catalogue E2-08).
    Inline(Vec<u8>),
    /// Storage types `u` and `p`: a deletion vector file and the byte offset of this vector's
    /// record (its 4-byte size prefix) in it.
    File { url: Url, offset: u64 },
}

/// Where the deletion vector of `descriptor` is, for a table rooted at `table_root`
/// (catalogue B-V07, E2-06…E2-08).
///
/// - `u`: `<root>/<prefix>/deletion_vector_<uuid>.bin`, the UUID being the Z85 decoding of the
///   last 20 characters and the prefix the characters before them (may be empty).
/// - `p`: the stored URI; a relative one is taken relative to the table root, like `add.path`.
/// - `i`: the Z85-decoded bytes cut to `sizeInBytes` (catalogue X-03).
///
/// The file offset is the descriptor's `offset`, or [`FIRST_RECORD_OFFSET`] when absent.
/// A `u` prefix or a `p` path with a `..` segment is an [`Error::InvalidPath`]; a malformed
/// descriptor (unknown storage type, bad Z85, negative size or offset) is an
/// [`Error::CorruptDeletionVector`] naming it.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn resolve(
    descriptor: &DeletionVectorDescriptor,
    table_root: &Url,
) -> Result<DvLocation> {
    match descriptor.storage_type.as_str() {
        "u" => Ok(DvLocation::File {
            url: uuid_file_url(descriptor, table_root)?,
            offset: record_offset(descriptor)?,
        }),
        "p" => Ok(DvLocation::File {
            url: absolute_file_url(descriptor, table_root)?,
            offset: record_offset(descriptor)?,
        }),
        "i" => inline_bytes(descriptor).map(DvLocation::Inline),
        other => Err(corrupt(
            descriptor_name(descriptor),
            format!("unknown storage type {other:?} (expected \"u\", \"p\" or \"i\")"),
        )),
    }
}

/// Decodes a serialised deletion vector: a magic number, then the bitmap (catalogue E2-14).
///
/// Reads the portable format (little-endian [`PORTABLE_MAGIC`], `u64` bucket count, then for each
/// bucket in ascending key order a `u32` key and a standard 32-bit RoaringBitmap) and the native
/// format ([`NATIVE_MAGIC`] in either byte order, catalogue X-01). Keys must have their most
/// significant bit clear. Unknown magic, truncation, unsorted keys and trailing bytes are an
/// [`Error::CorruptDeletionVector`] whose path is `context` (which should name the file or
/// descriptor).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_bitmap(bytes: &[u8], context: &str) -> Result<RoaringTreemap> {
    parse_bitmap(bytes).map_err(|reason| corrupt(context, reason))
}

/// Decodes an inline deletion vector's bytes (from [`DvLocation::Inline`]) and checks that its
/// cardinality is `descriptor.cardinality` (catalogue E2-08, E2-10).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_inline(
    serialised: &[u8],
    descriptor: &DeletionVectorDescriptor,
) -> Result<RoaringTreemap> {
    let name = descriptor_name(descriptor);
    let bitmap = decode_bitmap(serialised, &name)?;
    check_cardinality(&bitmap, descriptor, &name)?;
    Ok(bitmap)
}

/// Decodes the deletion vector of `descriptor` from the whole deletion vector file `file_bytes`
/// (catalogue E2-15, E2-16): checks the version byte, then reads the record at the descriptor's
/// offset with [`decode_dv_record`]. `path` names the file in errors.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_dv_file(
    file_bytes: &[u8],
    descriptor: &DeletionVectorDescriptor,
    path: &str,
) -> Result<RoaringTreemap> {
    match file_bytes.first() {
        None => return Err(corrupt(path, "the file is empty")),
        Some(&DV_FILE_FORMAT_VERSION) => {}
        Some(&version) => {
            return Err(corrupt(
                path,
                format!(
                    "unknown file format version {version} (expected {DV_FILE_FORMAT_VERSION})"
                ),
            ))
        }
    }
    let offset = record_offset(descriptor)?;
    let record = usize::try_from(offset)
        .ok()
        .and_then(|offset| file_bytes.get(offset..))
        .ok_or_else(|| {
            corrupt(
                path,
                format!(
                    "truncated: the record offset {offset} is past the end of the {}-byte file",
                    file_bytes.len()
                ),
            )
        })?;
    decode_dv_record(record, descriptor, path)
}

/// Decodes one record of a deletion vector file (catalogue E2-15, E2-16). `record_bytes` start at
/// the record's offset: a big-endian `u32` size, which must equal `sizeInBytes`, the serialised
/// bitmap, and its big-endian CRC-32, which must match. Bytes after the record are ignored (they
/// belong to other records). The decoded cardinality must equal `descriptor.cardinality`.
/// Every failure is an [`Error::CorruptDeletionVector`] naming `path`.
pub(crate) fn decode_dv_record(
    record_bytes: &[u8],
    descriptor: &DeletionVectorDescriptor,
    path: &str,
) -> Result<RoaringTreemap> {
    let data =
        checked_record_data(record_bytes, descriptor).map_err(|reason| corrupt(path, reason))?;
    let bitmap = decode_bitmap(data, path)?;
    check_cardinality(&bitmap, descriptor, path)?;
    Ok(bitmap)
}

/// The bytes of the record at `offset` for `descriptor`: size prefix, serialised bitmap and
/// checksum, `offset .. offset + 4 + sizeInBytes + 4`.
pub(crate) fn record_range(
    offset: u64,
    descriptor: &DeletionVectorDescriptor,
) -> Result<Range<u64>> {
    let size = declared_size(descriptor)?;
    Ok(offset..offset.saturating_add(size as u64 + 8))
}

/// Reads and decodes the record at `offset` of the deletion vector file `file` of `storage`,
/// fetching only that record's byte range (see [`record_range`] and [`decode_dv_record`]).
/// The file's version byte is not read. Store failures are an [`Error::Storage`] naming `file`.
pub(crate) async fn read_record(
    storage: &Storage,
    file: &Path,
    offset: u64,
    descriptor: &DeletionVectorDescriptor,
) -> Result<RoaringTreemap> {
    let range = record_range(offset, descriptor)?;
    let bytes = match storage
        .read_range(file, range.start, range.end - range.start)
        .await
    {
        Ok(bytes) => bytes,
        Err(error) => return Err(past_end_or(storage, file, &[range], error).await),
    };
    decode_dv_record(&bytes, descriptor, file.as_ref())
}

/// Loads the deletion vector of `descriptor` for the table of `storage`: [`resolve`]s it
/// against the table root, decodes inline vectors without IO, and reads file-backed ones with
/// [`read_record`] (a file outside the table's store is an [`Error::InvalidPath`]).
pub(crate) async fn load(
    storage: &Storage,
    descriptor: &DeletionVectorDescriptor,
) -> Result<RoaringTreemap> {
    match resolve(descriptor, storage.root_url())? {
        DvLocation::Inline(serialised) => decode_inline(&serialised, descriptor),
        DvLocation::File { url, offset } => {
            let file = storage.resolve(url.as_str())?;
            read_record(storage, &file, offset, descriptor).await
        }
    }
}

/// Loads many deletion vectors at once, as [`load`] does one: inline vectors are decoded
/// without IO; the records of each deletion vector file are fetched together with one
/// coalescing ranged read per file ([`Storage::read_ranges`]),
/// [`crate::storage::IoConfig::deletion_vectors`] files at a time. The bitmaps come back in
/// the order of `descriptors`.
pub(crate) async fn load_many(
    storage: &Storage,
    descriptors: &[DeletionVectorDescriptor],
) -> Result<Vec<RoaringTreemap>> {
    let mut bitmaps: Vec<Option<RoaringTreemap>> = vec![None; descriptors.len()];
    let mut by_file: HashMap<Path, Vec<(usize, u64)>> = HashMap::new();
    for (index, descriptor) in descriptors.iter().enumerate() {
        match resolve(descriptor, storage.root_url())? {
            DvLocation::Inline(serialised) => {
                bitmaps[index] = Some(decode_inline(&serialised, descriptor)?);
            }
            DvLocation::File { url, offset } => {
                let file = storage.resolve(url.as_str())?;
                by_file.entry(file).or_default().push((index, offset));
            }
        }
    }
    let mut files = futures::stream::iter(by_file)
        .map(|(file, records)| async move {
            let ranges = records
                .iter()
                .map(|(index, offset)| record_range(*offset, &descriptors[*index]))
                .collect::<Result<Vec<_>>>()?;
            let contents = match storage.read_ranges(&file, &ranges).await {
                Ok(contents) => contents,
                Err(error) => return Err(past_end_or(storage, &file, &ranges, error).await),
            };
            records
                .into_iter()
                .zip(contents)
                .map(|((index, _), bytes)| {
                    decode_dv_record(&bytes, &descriptors[index], file.as_ref())
                        .map(|bitmap| (index, bitmap))
                })
                .collect::<Result<Vec<_>>>()
        })
        .buffer_unordered(storage.io().deletion_vectors.max(1));
    while let Some(decoded) = files.next().await {
        for (index, bitmap) in decoded? {
            bitmaps[index] = Some(bitmap);
        }
    }
    Ok(bitmaps.into_iter().flatten().collect())
}

/// The error of a failed read of the records `ranges` of the deletion vector file `file`: a
/// [`Error::CorruptDeletionVector`] naming the file when a record lies past its end (the
/// descriptor's offset or size is wrong), else `error` as it is.
async fn past_end_or(storage: &Storage, file: &Path, ranges: &[Range<u64>], error: Error) -> Error {
    if error.is_not_found() {
        return error;
    }
    let Ok(size) = storage.size(file).await else {
        return error;
    };
    match ranges.iter().find(|range| range.end > size) {
        Some(range) => corrupt(
            file.as_ref(),
            format!(
                "the record at bytes {}..{} is past the end of the {size}-byte file",
                range.start, range.end
            ),
        ),
        None => error,
    }
}

/// `error`, met loading the deletion vector of the data file `data_file`, with that file
/// named in its reason when it is an [`Error::CorruptDeletionVector`] (a descriptor does not
/// say whose it is).
pub(crate) fn for_data_file(error: Error, data_file: &str) -> Error {
    match error {
        Error::CorruptDeletionVector { path, reason } => Error::CorruptDeletionVector {
            path,
            reason: format!("{reason} (the deletion vector of data file {data_file})"),
        },
        error => error,
    }
}

/// The deleted row indexes in ascending order.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn deleted_row_indexes(bitmap: &RoaringTreemap) -> UInt64Array {
    UInt64Array::from_iter_values(bitmap.iter())
}

/// The selection mask of a batch of `num_rows` rows whose first row is row `first_row_index` of
/// the data file: element `i` is `false` when row `first_row_index + i` is deleted and `true`
/// (keep) otherwise. Only the deleted rows inside the batch are visited.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn row_mask(
    bitmap: &RoaringTreemap,
    num_rows: usize,
    first_row_index: u64,
) -> BooleanArray {
    let mut mask = BooleanBufferBuilder::new(num_rows);
    mask.append_n(num_rows, true);
    let end = first_row_index.saturating_add(num_rows as u64);
    let mut deleted = bitmap.iter();
    deleted.advance_to(first_row_index);
    for row in deleted.take_while(|&row| row < end) {
        if let Some(position) = row
            .checked_sub(first_row_index)
            .and_then(|position| usize::try_from(position).ok())
        {
            mask.set_bit(position, false);
        }
    }
    BooleanArray::new(mask.finish(), None)
}

/// Serialises `bitmap` in the portable RoaringBitmapArray format with its magic number
/// (catalogue E2-14). Row indexes of 2^63 or more cannot be stored (their bucket key would have
/// its most significant bit set) and are an [`Error::InvalidArgument`].
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn encode_bitmap(bitmap: &RoaringTreemap) -> Result<Vec<u8>> {
    let buckets: Vec<(u32, &RoaringBitmap)> = bitmap
        .bitmaps()
        .filter(|(_, bucket)| !bucket.is_empty())
        .collect();
    if let Some((key, _)) = buckets.iter().find(|(key, _)| key & KEY_SIGN_BIT != 0) {
        return Err(Error::InvalidArgument(format!(
            "a deletion vector cannot hold row indexes of 2^63 or more (bucket key {key})"
        )));
    }
    let mut bytes = Vec::with_capacity(bitmap.serialized_size() + 4);
    bytes.extend_from_slice(&PORTABLE_MAGIC.to_le_bytes());
    bytes.extend_from_slice(&(buckets.len() as u64).to_le_bytes());
    for (key, bucket) in buckets {
        bytes.extend_from_slice(&key.to_le_bytes());
        bucket.serialize_into(&mut bytes).map_err(|error| {
            Error::internal_invariant(format!("cannot serialise a deletion vector: {error}"))
        })?;
    }
    Ok(bytes)
}

/// Where one vector went in a deletion vector file written by [`encode_dv_file`]: the values of
/// its descriptor's `offset`, `sizeInBytes` and `cardinality`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DvFileEntry {
    pub offset: i32,
    pub size_in_bytes: i32,
    pub cardinality: i64,
}

/// The bytes of a deletion vector file holding `vectors` in order (catalogue E2-15): the version
/// byte, then for each vector a big-endian `u32` size, the serialised bitmap and its big-endian
/// CRC-32. Returns the file and one [`DvFileEntry`] per vector. A file past 2 GiB (offsets are
/// `int` in the descriptor) is an [`Error::InvalidArgument`].
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn encode_dv_file(vectors: &[RoaringTreemap]) -> Result<(Vec<u8>, Vec<DvFileEntry>)> {
    let mut file = vec![DV_FILE_FORMAT_VERSION];
    let mut entries = Vec::with_capacity(vectors.len());
    for vector in vectors {
        let serialised = encode_bitmap(vector)?;
        entries.push(DvFileEntry {
            offset: to_descriptor_int(file.len(), "offset")?,
            size_in_bytes: to_descriptor_int(serialised.len(), "size")?,
            cardinality: cardinality_of(vector)?,
        });
        file.extend_from_slice(&(serialised.len() as u32).to_be_bytes());
        file.extend_from_slice(&serialised);
        file.extend_from_slice(&crc32fast::hash(&serialised).to_be_bytes());
    }
    Ok((file, entries))
}

/// An inline (`i`) descriptor holding `bitmap` (catalogue E2-08, X-03): the Z85 of the
/// serialised bitmap, zero-padded to a multiple of 4 bytes, with the unpadded size.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn encode_inline(bitmap: &RoaringTreemap) -> Result<DeletionVectorDescriptor> {
    let serialised = encode_bitmap(bitmap)?;
    Ok(DeletionVectorDescriptor {
        storage_type: "i".to_string(),
        path_or_inline_dv: z85_encode(&serialised),
        offset: None,
        size_in_bytes: to_descriptor_int(serialised.len(), "size")?,
        cardinality: cardinality_of(bitmap)?,
    })
}

/// A UUID-relative (`u`) descriptor for the vector `entry` of the file named by `uuid` under the
/// directory `prefix` (catalogue B-V02, E2-06). The prefix may be empty; otherwise it must be
/// ASCII letters and digits ([`Error::InvalidArgument`]).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn uuid_descriptor(
    uuid: &Uuid,
    prefix: &str,
    entry: &DvFileEntry,
) -> Result<DeletionVectorDescriptor> {
    check_prefix(prefix)?;
    Ok(DeletionVectorDescriptor {
        storage_type: "u".to_string(),
        path_or_inline_dv: format!("{prefix}{}", z85_encode(uuid.as_bytes())),
        offset: Some(entry.offset),
        size_in_bytes: entry.size_in_bytes,
        cardinality: entry.cardinality,
    })
}

/// The path, relative to the table root, of the deletion vector file named by `uuid` under
/// `prefix`: `<prefix>/deletion_vector_<uuid>.bin`, or just the file name when `prefix` is empty
/// (catalogue A-19). The prefix must be ASCII letters and digits ([`Error::InvalidArgument`]).
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn uuid_relative_path(uuid: &Uuid, prefix: &str) -> Result<String> {
    check_prefix(prefix)?;
    let name = dv_file_name(uuid);
    Ok(if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    })
}

/// `deletion_vector_<uuid in canonical 8-4-4-4-12 form>.bin` (catalogue B-V07).
pub(crate) fn dv_file_name(uuid: &Uuid) -> String {
    format!("deletion_vector_{}.bin", uuid.hyphenated())
}

const Z85_ALPHABET: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

const Z85_DIGITS: [u8; 128] = z85_digit_table();

const NO_DIGIT: u8 = u8::MAX;

/// The most significant bit of a bucket key, which Delta requires to be clear.
const KEY_SIGN_BIT: u32 = 1 << 31;

/// The smallest serialised bucket: a key and an empty 32-bit bitmap (cookie and count), or in the
/// native format a size and an empty bitmap.
const MIN_BUCKET_BYTES: u64 = 12;

/// Longest excerpt of a descriptor or Z85 text quoted in an error message.
const QUOTE_LIMIT: usize = 48;

const fn z85_digit_table() -> [u8; 128] {
    let mut table = [NO_DIGIT; 128];
    let mut index = 0;
    while index < Z85_ALPHABET.len() {
        table[Z85_ALPHABET[index] as usize] = index as u8;
        index += 1;
    }
    table
}

fn z85_digit(character: u8) -> Option<u8> {
    Z85_DIGITS
        .get(usize::from(character))
        .copied()
        .filter(|&digit| digit != NO_DIGIT)
}

fn corrupt(path: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::CorruptDeletionVector {
        path: path.into(),
        reason: reason.into(),
    }
}

/// How errors name a descriptor rather than a file: `descriptor <uniqueId>`, abbreviated.
fn descriptor_name(descriptor: &DeletionVectorDescriptor) -> String {
    format!("descriptor {}", abbreviate(&descriptor.unique_id()))
}

fn abbreviate(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

fn uuid_file_url(descriptor: &DeletionVectorDescriptor, table_root: &Url) -> Result<Url> {
    let text = &descriptor.path_or_inline_dv;
    let split = text
        .len()
        .checked_sub(ENCODED_UUID_LEN)
        .filter(|&split| text.is_char_boundary(split))
        .ok_or_else(|| {
            corrupt(
                descriptor_name(descriptor),
                format!(
                    "pathOrInlineDv must end with the {ENCODED_UUID_LEN}-character Z85 of a UUID"
                ),
            )
        })?;
    let (prefix, encoded_uuid) = text.split_at(split);
    let uuid_bytes = z85_decode(encoded_uuid)
        .map_err(|error| corrupt(descriptor_name(descriptor), error.to_string()))?;
    let uuid = Uuid::from_slice(&uuid_bytes)
        .map_err(|error| corrupt(descriptor_name(descriptor), error.to_string()))?;
    let mut segments: Vec<&str> = Vec::new();
    for segment in prefix.split('/').filter(|segment| !segment.is_empty()) {
        if is_dot_segment(segment) {
            return Err(leaves_root(text));
        }
        segments.push(segment);
    }
    let name = dv_file_name(&uuid);
    segments.push(&name);
    child_url(table_root, &segments)
}

fn absolute_file_url(descriptor: &DeletionVectorDescriptor, table_root: &Url) -> Result<Url> {
    let text = &descriptor.path_or_inline_dv;
    let path_part = text.split(['?', '#']).next().unwrap_or_default();
    if path_part.split('/').any(is_dot_segment) {
        return Err(leaves_root(text));
    }
    let invalid = |reason: String| Error::InvalidPath {
        path: text.clone(),
        reason,
    };
    match Url::parse(text) {
        Ok(url) => Ok(url),
        Err(url::ParseError::RelativeUrlWithoutBase) => directory_url(table_root)
            .join(text)
            .map_err(|error| invalid(format!("not a valid relative URI: {error}"))),
        Err(error) => Err(invalid(format!("not a valid URI: {error}"))),
    }
}

fn is_dot_segment(segment: &str) -> bool {
    let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
    decoded == "." || decoded == ".."
}

fn leaves_root(path: &str) -> Error {
    Error::InvalidPath {
        path: path.to_string(),
        reason: "a deletion vector path must not have '.' or '..' segments".to_string(),
    }
}

/// `table_root` with a trailing slash, so that joins stay inside it.
fn directory_url(table_root: &Url) -> Url {
    let mut root = table_root.clone();
    if !root.path().ends_with('/') {
        let path = format!("{}/", root.path());
        root.set_path(&path);
    }
    root
}

fn child_url(table_root: &Url, segments: &[&str]) -> Result<Url> {
    let mut url = table_root.clone();
    url.path_segments_mut()
        .map_err(|()| Error::InvalidPath {
            path: table_root.to_string(),
            reason: "a table root must be a hierarchical URL".to_string(),
        })?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

fn record_offset(descriptor: &DeletionVectorDescriptor) -> Result<u64> {
    match descriptor.offset {
        None => Ok(FIRST_RECORD_OFFSET),
        Some(offset) if offset >= 1 => Ok(offset as u64),
        Some(offset) => Err(corrupt(
            descriptor_name(descriptor),
            format!("offset {offset} is not a record position (the first record is at 1)"),
        )),
    }
}

fn declared_size(descriptor: &DeletionVectorDescriptor) -> Result<u32> {
    u32::try_from(descriptor.size_in_bytes).map_err(|_| {
        corrupt(
            descriptor_name(descriptor),
            format!("sizeInBytes {} is negative", descriptor.size_in_bytes),
        )
    })
}

fn inline_bytes(descriptor: &DeletionVectorDescriptor) -> Result<Vec<u8>> {
    let size = declared_size(descriptor)? as usize;
    let mut bytes = z85_decode(&descriptor.path_or_inline_dv)
        .map_err(|error| corrupt(descriptor_name(descriptor), error.to_string()))?;
    if bytes.len() < size {
        return Err(corrupt(
            descriptor_name(descriptor),
            format!(
                "the inline data decodes to {} bytes but sizeInBytes is {size}",
                bytes.len()
            ),
        ));
    }
    bytes.truncate(size);
    Ok(bytes)
}

fn checked_record_data<'a>(
    record_bytes: &'a [u8],
    descriptor: &DeletionVectorDescriptor,
) -> std::result::Result<&'a [u8], String> {
    let mut record = ByteReader::new(record_bytes);
    let stored_size = record.u32_be("the record size")?;
    if i64::from(stored_size) != i64::from(descriptor.size_in_bytes) {
        return Err(format!(
            "the record is {stored_size} bytes but the descriptor's sizeInBytes is {}",
            descriptor.size_in_bytes
        ));
    }
    let data = record.take(stored_size as usize, "the serialised bitmap")?;
    let stored_checksum = record.u32_be("the checksum")?;
    let checksum = crc32fast::hash(data);
    if stored_checksum != checksum {
        return Err(format!(
            "checksum mismatch: the file stores CRC-32 {stored_checksum:#010x} \
             but the bitmap's is {checksum:#010x}"
        ));
    }
    Ok(data)
}

fn check_cardinality(
    bitmap: &RoaringTreemap,
    descriptor: &DeletionVectorDescriptor,
    path: &str,
) -> Result<()> {
    if u64::try_from(descriptor.cardinality).ok() == Some(bitmap.len()) {
        return Ok(());
    }
    Err(corrupt(
        path,
        format!(
            "the bitmap holds {} rows but the descriptor's cardinality is {}",
            bitmap.len(),
            descriptor.cardinality
        ),
    ))
}

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
fn cardinality_of(bitmap: &RoaringTreemap) -> Result<i64> {
    i64::try_from(bitmap.len()).map_err(|_| {
        Error::InvalidArgument(format!(
            "a deletion vector of {} rows is too large",
            bitmap.len()
        ))
    })
}

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
fn to_descriptor_int(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| {
        Error::InvalidArgument(format!(
            "a deletion vector file {what} of {value} bytes does not fit a descriptor's int"
        ))
    })
}

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "deletion vector prefix {prefix:?} must be ASCII letters and digits"
    )))
}

fn parse_bitmap(bytes: &[u8]) -> std::result::Result<RoaringTreemap, String> {
    let mut reader = ByteReader::new(bytes);
    let magic: [u8; 4] = reader.array("the magic number")?;
    let bitmap = if u32::from_le_bytes(magic) == PORTABLE_MAGIC {
        parse_portable(&mut reader)?
    } else if u32::from_le_bytes(magic) == NATIVE_MAGIC {
        parse_native(&mut reader, u32::from_le_bytes)?
    } else if u32::from_be_bytes(magic) == NATIVE_MAGIC {
        parse_native(&mut reader, u32::from_be_bytes)?
    } else {
        return Err(format!(
            "unknown magic number {} (bytes {magic:02x?}, expected {PORTABLE_MAGIC})",
            u32::from_le_bytes(magic)
        ));
    };
    match reader.remaining() {
        0 => Ok(bitmap),
        extra => Err(format!("{extra} unexpected bytes after the bitmap")),
    }
}

/// The portable 64-bit layout after the magic: `u64` bucket count, then (`u32` key, bitmap)
/// pairs in strictly ascending key order, all little-endian.
fn parse_portable(reader: &mut ByteReader<'_>) -> std::result::Result<RoaringTreemap, String> {
    let count = u64::from_le_bytes(reader.array("the bucket count")?);
    check_bucket_count(count, reader)?;
    let mut buckets = Vec::new();
    let mut previous_key: Option<u32> = None;
    for _ in 0..count {
        let key = u32::from_le_bytes(reader.array("a bucket key")?);
        if key & KEY_SIGN_BIT != 0 {
            return Err(format!("bucket key {key} has its most significant bit set"));
        }
        if let Some(previous) = previous_key.filter(|&previous| previous >= key) {
            return Err(format!(
                "bucket keys are not in ascending order ({previous} then {key})"
            ));
        }
        previous_key = Some(key);
        buckets.push((key, reader.roaring_bitmap(key)?));
    }
    Ok(from_buckets(buckets))
}

/// The native layout after the magic: `u32` bitmap count, then (`u32` size, bitmap) pairs whose
/// position is their key. Counts and sizes are in the magic's byte order.
fn parse_native(
    reader: &mut ByteReader<'_>,
    read_u32: fn([u8; 4]) -> u32,
) -> std::result::Result<RoaringTreemap, String> {
    let count = read_u32(reader.array("the bitmap count")?);
    if count & KEY_SIGN_BIT != 0 {
        return Err(format!("bitmap count {count} is negative as a Java int"));
    }
    check_bucket_count(u64::from(count), reader)?;
    let mut buckets = Vec::new();
    for key in 0..count {
        let size = read_u32(reader.array("a bitmap size")?);
        let data = reader.take(size as usize, "a bitmap")?;
        let mut bitmap_reader = ByteReader::new(data);
        let bitmap = bitmap_reader.roaring_bitmap(key)?;
        if bitmap_reader.remaining() != 0 {
            return Err(format!(
                "bitmap {key} is {size} bytes but its serialisation is shorter"
            ));
        }
        buckets.push((key, bitmap));
    }
    Ok(from_buckets(buckets))
}

fn check_bucket_count(count: u64, reader: &ByteReader<'_>) -> std::result::Result<(), String> {
    let available = reader.remaining() as u64;
    if count > available / MIN_BUCKET_BYTES {
        return Err(format!(
            "truncated: {count} buckets declared but only {available} bytes follow"
        ));
    }
    Ok(())
}

fn from_buckets(buckets: Vec<(u32, RoaringBitmap)>) -> RoaringTreemap {
    RoaringTreemap::from_bitmaps(buckets.into_iter().filter(|(_, bitmap)| !bitmap.is_empty()))
}

/// A cursor over a byte slice whose reads fail with a sentence instead of panicking.
struct ByteReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> ByteReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        ByteReader { bytes, position: 0 }
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.position)
    }

    fn take(&mut self, len: usize, what: &str) -> std::result::Result<&'a [u8], String> {
        let slice = self
            .position
            .checked_add(len)
            .and_then(|end| self.bytes.get(self.position..end))
            .ok_or_else(|| {
                format!(
                    "truncated: {what} needs {len} bytes at byte {} but only {} remain",
                    self.position,
                    self.remaining()
                )
            })?;
        self.position += len;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> std::result::Result<[u8; N], String> {
        let mut array = [0u8; N];
        array.copy_from_slice(self.take(N, what)?);
        Ok(array)
    }

    fn u32_be(&mut self, what: &str) -> std::result::Result<u32, String> {
        self.array(what).map(u32::from_be_bytes)
    }

    /// A standard 32-bit RoaringBitmap serialisation (catalogue E2-17), for the bucket `key`.
    fn roaring_bitmap(&mut self, key: u32) -> std::result::Result<RoaringBitmap, String> {
        let rest = self.bytes.get(self.position..).unwrap_or_default();
        let mut cursor = Cursor::new(rest);
        let bitmap = RoaringBitmap::deserialize_from(&mut cursor).map_err(|error| {
            if error.kind() == std::io::ErrorKind::UnexpectedEof {
                format!("truncated: the 32-bit bitmap of bucket {key} ends early")
            } else {
                format!("the 32-bit bitmap of bucket {key} is invalid: {error}")
            }
        })?;
        self.position += cursor.position() as usize;
        Ok(bitmap)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};
    use std::sync::Arc;

    use crate::storage::IoConfig;
    use proptest::prelude::*;

    /// Catalogue B-V08: the spec's `u` example and the file it names.
    const EXAMPLE_U_PATH: &str = "ab^-aqEH.-t@S}K{vb[*k^";
    const EXAMPLE_UUID: &str = "d2c639aa-8816-431a-aaf6-d3fe2512ff61";

    /// Catalogue E2-18: the spec's inline example (native layout, big-endian magic).
    const EXAMPLE_INLINE: &str = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L";

    fn descriptor(storage_type: &str, path_or_inline_dv: &str) -> DeletionVectorDescriptor {
        DeletionVectorDescriptor {
            storage_type: storage_type.to_string(),
            path_or_inline_dv: path_or_inline_dv.to_string(),
            offset: Some(1),
            size_in_bytes: 40,
            cardinality: 6,
        }
    }

    fn treemap(values: &[u64]) -> RoaringTreemap {
        values.iter().copied().collect()
    }

    fn root() -> Url {
        Url::parse("s3://mytable/").unwrap()
    }

    /// The table `memory:///tables/t/` on `store`.
    fn memory_table(store: &Arc<InMemory>) -> Storage {
        let root = Url::parse("memory:///tables/t/").unwrap();
        Storage::with_store(store.clone(), root, Path::from("tables/t"))
    }

    fn assert_corrupt(result: Result<RoaringTreemap>, path: &str, reason_part: &str) {
        match result {
            Err(Error::CorruptDeletionVector { path: got, reason }) => {
                assert_eq!(got, path);
                assert!(
                    reason.contains(reason_part),
                    "reason {reason:?} should mention {reason_part:?}"
                );
            }
            other => panic!("expected a corrupt deletion vector error, got {other:?}"),
        }
    }

    fn assert_invalid_path(result: Result<DvLocation>, path: &str) {
        match result {
            Err(Error::InvalidPath { path: got, .. }) => assert_eq!(got, path),
            other => panic!("expected an invalid path error, got {other:?}"),
        }
    }

    #[test]
    fn z85_matches_the_zeromq_reference_vector() {
        let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
        assert_eq!(z85_encode(&bytes), "HelloWorld");
        assert_eq!(z85_decode("HelloWorld").unwrap(), bytes);
    }

    #[test]
    fn z85_pads_unaligned_input_with_zero_bytes() {
        assert_eq!(z85_encode(&[0x86, 0x4F, 0xD2, 0x6F, 0x01]).len(), 10);
        let decoded = z85_decode(&z85_encode(&[1, 2, 3, 4, 5, 6])).unwrap();
        assert_eq!(decoded, [1, 2, 3, 4, 5, 6, 0, 0]);
        assert_eq!(z85_encode(&[]), "");
    }

    #[test]
    fn z85_rejects_bad_text_and_quotes_it() {
        let message = z85_decode("Hello~").unwrap_err().to_string();
        assert!(message.contains("\"Hello~\""), "{message}");
        assert!(z85_decode("Hell")
            .unwrap_err()
            .to_string()
            .contains("multiple of 5"));
        assert!(z85_decode("Hell~").unwrap_err().to_string().contains("'~'"));
        assert!(z85_decode("#####")
            .unwrap_err()
            .to_string()
            .contains("32 bits"));
        assert!(matches!(
            z85_decode("Hellé"),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn resolves_the_spec_uuid_example() {
        let mut example = descriptor("u", EXAMPLE_U_PATH);
        example.offset = Some(4);
        let expected = format!("s3://mytable/ab/deletion_vector_{EXAMPLE_UUID}.bin");
        for table_root in ["s3://mytable/", "s3://mytable"] {
            let location = resolve(&example, &Url::parse(table_root).unwrap()).unwrap();
            assert_eq!(
                location,
                DvLocation::File {
                    url: Url::parse(&expected).unwrap(),
                    offset: 4
                }
            );
        }
    }

    #[test]
    fn resolves_a_uuid_without_prefix_at_the_root_and_defaults_the_offset() {
        let mut example = descriptor("u", &EXAMPLE_U_PATH[2..]);
        example.offset = None;
        let location = resolve(&example, &Url::parse("file:///data/t/").unwrap()).unwrap();
        let url = format!("file:///data/t/deletion_vector_{EXAMPLE_UUID}.bin");
        assert_eq!(
            location,
            DvLocation::File {
                url: Url::parse(&url).unwrap(),
                offset: FIRST_RECORD_OFFSET
            }
        );
    }

    #[test]
    fn uuid_descriptor_round_trips_through_resolve() {
        let uuid = Uuid::parse_str(EXAMPLE_UUID).unwrap();
        let entry = DvFileEntry {
            offset: 4,
            size_in_bytes: 40,
            cardinality: 6,
        };
        let built = uuid_descriptor(&uuid, "ab", &entry).unwrap();
        assert_eq!(built.path_or_inline_dv, EXAMPLE_U_PATH);
        assert_eq!(built.offset, Some(4));
        assert_eq!(
            uuid_relative_path(&uuid, "ab").unwrap(),
            format!("ab/deletion_vector_{EXAMPLE_UUID}.bin")
        );
        assert_eq!(
            uuid_relative_path(&uuid, "").unwrap(),
            format!("deletion_vector_{EXAMPLE_UUID}.bin")
        );
        assert!(matches!(
            uuid_descriptor(&uuid, "a/b", &entry),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn resolve_refuses_prefixes_that_leave_the_table_root() {
        for prefix in ["../", "..", "a/../../", "%2E%2E/", "./"] {
            let text = format!("{prefix}{}", &EXAMPLE_U_PATH[2..]);
            assert_invalid_path(resolve(&descriptor("u", &text), &root()), &text);
        }
    }

    #[test]
    fn resolve_rejects_short_or_non_z85_uuids() {
        assert_corrupt(
            resolve(&descriptor("u", "abc"), &root()).map(|_| RoaringTreemap::new()),
            "descriptor uabc@1",
            "20-character",
        );
        let bad = "ab~~~~~~~~~~~~~~~~~~~~";
        let result = resolve(&descriptor("u", bad), &root()).map(|_| RoaringTreemap::new());
        assert_corrupt(result, &format!("descriptor u{bad}@1"), "Z85");
    }

    #[test]
    fn resolves_absolute_and_relative_p_paths() {
        let absolute = "s3://other/deletion_vector_x.bin";
        assert_eq!(
            resolve(&descriptor("p", absolute), &root()).unwrap(),
            DvLocation::File {
                url: Url::parse(absolute).unwrap(),
                offset: 1
            }
        );
        let relative = resolve(
            &descriptor("p", "dv/a%20b.bin"),
            &Url::parse("s3://t/r").unwrap(),
        );
        assert_eq!(
            relative.unwrap(),
            DvLocation::File {
                url: Url::parse("s3://t/r/dv/a%20b.bin").unwrap(),
                offset: 1
            }
        );
    }

    #[test]
    fn resolve_refuses_p_paths_with_dot_segments() {
        for path in [
            "s3://mytable/../other/dv.bin",
            "../dv.bin",
            "s3://mytable/a/%2e%2e/dv.bin",
        ] {
            assert_invalid_path(resolve(&descriptor("p", path), &root()), path);
        }
    }

    #[test]
    fn resolve_names_unknown_storage_types_and_bad_offsets() {
        let result = resolve(&descriptor("x", "abc"), &root()).map(|_| RoaringTreemap::new());
        assert_corrupt(result, "descriptor xabc@1", "unknown storage type \"x\"");
        let mut negative = descriptor("p", "s3://t/dv.bin");
        negative.offset = Some(-3);
        let result = resolve(&negative, &root()).map(|_| RoaringTreemap::new());
        assert_corrupt(result, "descriptor ps3://t/dv.bin@-3", "offset -3");
    }

    #[test]
    fn decodes_the_spec_inline_example_in_native_layout() {
        let mut example = descriptor("i", EXAMPLE_INLINE);
        example.offset = None;
        let DvLocation::Inline(bytes) = resolve(&example, &root()).unwrap() else {
            panic!("an inline descriptor resolves inline");
        };
        assert_eq!(bytes.len(), 40);
        assert_eq!(&bytes[..4], &[0x64, 0x39, 0xD3, 0xD0]);
        let bitmap = decode_inline(&bytes, &example).unwrap();
        assert_eq!(bitmap.iter().collect::<Vec<_>>(), [3, 4, 7, 11, 18, 29]);
    }

    #[test]
    fn inline_vectors_of_any_length_round_trip() {
        for values in [vec![], vec![5], vec![1, 2, 3, 1 << 40], (0..5000).collect()] {
            let bitmap = treemap(&values);
            let inline = encode_inline(&bitmap).unwrap();
            assert_eq!(inline.storage_type, "i");
            assert_eq!(inline.offset, None);
            assert_eq!(inline.cardinality, values.len() as i64);
            let DvLocation::Inline(bytes) = resolve(&inline, &root()).unwrap() else {
                panic!("an inline descriptor resolves inline");
            };
            assert_eq!(bytes.len(), inline.size_in_bytes as usize);
            assert_eq!(decode_inline(&bytes, &inline).unwrap(), bitmap);
        }
    }

    #[test]
    fn inline_data_shorter_than_its_size_is_corrupt() {
        let mut short = descriptor("i", "HelloWorld");
        short.offset = None;
        let result = resolve(&short, &root()).map(|_| RoaringTreemap::new());
        assert_corrupt(result, "descriptor iHelloWorld", "decodes to 8 bytes");
    }

    #[test]
    fn portable_layout_matches_the_spec_byte_for_byte() {
        let bytes = encode_bitmap(&treemap(&[1, 3, (1 << 32) + 2])).unwrap();
        assert_eq!(&bytes[..4], &[0xD1, 0xD3, 0x39, 0x64]);
        assert_eq!(&bytes[4..12], &2u64.to_le_bytes());
        assert_eq!(&bytes[12..16], &0u32.to_le_bytes());
        let first_bucket = RoaringBitmap::from_iter([1u32, 3]);
        let second_key_at = 16 + first_bucket.serialized_size();
        assert_eq!(
            &bytes[second_key_at..second_key_at + 4],
            &1u32.to_le_bytes()
        );
    }

    #[test]
    fn bitmaps_spanning_several_buckets_round_trip() {
        let bitmap = treemap(&[0, 7, u32::MAX as u64, 1 << 32, (5 << 32) + 9, (1 << 63) - 1]);
        let decoded = decode_bitmap(&encode_bitmap(&bitmap).unwrap(), "ctx").unwrap();
        assert_eq!(decoded, bitmap);
    }

    #[test]
    fn encode_bitmap_refuses_row_indexes_with_the_sign_bit() {
        assert!(matches!(
            encode_bitmap(&treemap(&[1 << 63])),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn decode_bitmap_rejects_bad_magic_truncation_and_trailing_bytes() {
        let good = encode_bitmap(&treemap(&[1, 2, 3, 1 << 33])).unwrap();
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 0xFF;
        assert_corrupt(decode_bitmap(&bad_magic, "f.bin"), "f.bin", "unknown magic");
        for cut in [0, 3, 8, 13, good.len() - 1] {
            assert_corrupt(decode_bitmap(&good[..cut], "f.bin"), "f.bin", "truncated");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert_corrupt(
            decode_bitmap(&trailing, "f.bin"),
            "f.bin",
            "1 unexpected bytes",
        );
    }

    #[test]
    fn decode_bitmap_rejects_keys_with_the_sign_bit_or_out_of_order() {
        let bucket = {
            let mut bytes = Vec::new();
            RoaringBitmap::from_iter([1u32])
                .serialize_into(&mut bytes)
                .unwrap();
            bytes
        };
        let portable = |keys: &[u32]| {
            let mut bytes = PORTABLE_MAGIC.to_le_bytes().to_vec();
            bytes.extend_from_slice(&(keys.len() as u64).to_le_bytes());
            for key in keys {
                bytes.extend_from_slice(&key.to_le_bytes());
                bytes.extend_from_slice(&bucket);
            }
            bytes
        };
        assert_eq!(decode_bitmap(&portable(&[0, 2]), "f").unwrap().len(), 2);
        assert_corrupt(
            decode_bitmap(&portable(&[1 << 31]), "f"),
            "f",
            "most significant",
        );
        assert_corrupt(decode_bitmap(&portable(&[2, 1]), "f"), "f", "ascending");
        assert_corrupt(decode_bitmap(&portable(&[1, 1]), "f"), "f", "ascending");
        let mut huge_count = portable(&[0]);
        huge_count[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_corrupt(decode_bitmap(&huge_count, "f"), "f", "buckets declared");
    }

    #[test]
    fn decode_bitmap_reads_the_native_layout_in_both_byte_orders() {
        let bucket = {
            let mut bytes = Vec::new();
            RoaringBitmap::from_iter([4u32, 9])
                .serialize_into(&mut bytes)
                .unwrap();
            bytes
        };
        let native = |to_bytes: fn(u32) -> [u8; 4]| {
            let mut bytes = to_bytes(NATIVE_MAGIC).to_vec();
            bytes.extend_from_slice(&to_bytes(2));
            for _ in 0..2 {
                bytes.extend_from_slice(&to_bytes(bucket.len() as u32));
                bytes.extend_from_slice(&bucket);
            }
            bytes
        };
        let expected = treemap(&[4, 9, (1 << 32) + 4, (1 << 32) + 9]);
        assert_eq!(
            decode_bitmap(&native(u32::to_le_bytes), "f").unwrap(),
            expected
        );
        assert_eq!(
            decode_bitmap(&native(u32::to_be_bytes), "f").unwrap(),
            expected
        );
    }

    fn two_vector_file() -> (Vec<u8>, Vec<DeletionVectorDescriptor>, Vec<RoaringTreemap>) {
        let vectors = vec![treemap(&[0, 5, 9]), treemap(&[2, 1 << 32])];
        let (file, entries) = encode_dv_file(&vectors).unwrap();
        let uuid = Uuid::parse_str(EXAMPLE_UUID).unwrap();
        let descriptors = entries
            .iter()
            .map(|entry| uuid_descriptor(&uuid, "", entry).unwrap())
            .collect();
        (file, descriptors, vectors)
    }

    #[test]
    fn dv_files_hold_several_records_at_their_offsets() {
        let (file, descriptors, vectors) = two_vector_file();
        assert_eq!(file[0], DV_FILE_FORMAT_VERSION);
        assert_eq!(descriptors[0].offset, Some(1));
        let first_size = descriptors[0].size_in_bytes;
        assert_eq!(descriptors[1].offset, Some(1 + 4 + first_size + 4));
        assert_eq!(&file[1..5], &(first_size as u32).to_be_bytes());
        for (descriptor, vector) in descriptors.iter().zip(&vectors) {
            assert_eq!(&decode_dv_file(&file, descriptor, "f.bin").unwrap(), vector);
            let range = record_range(descriptor.offset.unwrap() as u64, descriptor).unwrap();
            let record = &file[range.start as usize..range.end as usize];
            assert_eq!(
                &decode_dv_record(record, descriptor, "f.bin").unwrap(),
                vector
            );
        }
        assert_eq!(
            record_range(1, &descriptors[1]).unwrap().end as usize,
            1 + 8 + descriptors[1].size_in_bytes as usize
        );
    }

    #[test]
    fn corrupt_dv_files_name_the_file() {
        let (file, descriptors, _) = two_vector_file();
        let first = &descriptors[0];
        let checksum_at = 1 + 4 + first.size_in_bytes as usize;

        let mut flipped_crc = file.clone();
        flipped_crc[checksum_at] ^= 0x01;
        assert_corrupt(
            decode_dv_file(&flipped_crc, first, "t/dv.bin"),
            "t/dv.bin",
            "checksum",
        );

        let mut flipped_data = file.clone();
        flipped_data[8] ^= 0x40;
        assert_corrupt(
            decode_dv_file(&flipped_data, first, "t/dv.bin"),
            "t/dv.bin",
            "checksum",
        );

        for cut in [0, 1, 3, 10, checksum_at + 2] {
            let result = decode_dv_file(&file[..cut], first, "t/dv.bin");
            let expected = if cut == 0 { "empty" } else { "truncated" };
            assert_corrupt(result, "t/dv.bin", expected);
        }

        let mut wrong_size = first.clone();
        wrong_size.size_in_bytes += 1;
        assert_corrupt(
            decode_dv_file(&file, &wrong_size, "t/dv.bin"),
            "t/dv.bin",
            "sizeInBytes",
        );

        let mut wrong_version = file.clone();
        wrong_version[0] = 2;
        assert_corrupt(
            decode_dv_file(&wrong_version, first, "t/dv.bin"),
            "t/dv.bin",
            "version 2",
        );

        let mut wrong_cardinality = first.clone();
        wrong_cardinality.cardinality = 4;
        let result = decode_dv_file(&file, &wrong_cardinality, "t/dv.bin");
        assert_corrupt(result, "t/dv.bin", "cardinality is 4");

        let mut past_end = first.clone();
        past_end.offset = Some(10_000);
        assert_corrupt(
            decode_dv_file(&file, &past_end, "t/dv.bin"),
            "t/dv.bin",
            "past the end",
        );
    }

    #[test]
    fn a_wrong_magic_with_a_valid_checksum_is_reported_as_such() {
        let (mut file, descriptors, _) = two_vector_file();
        let first = &descriptors[0];
        let data = 5..5 + first.size_in_bytes as usize;
        file[data.start] ^= 0xFF;
        let checksum = crc32fast::hash(&file[data.clone()]);
        file[data.end..data.end + 4].copy_from_slice(&checksum.to_be_bytes());
        assert_corrupt(
            decode_dv_file(&file, first, "t/dv.bin"),
            "t/dv.bin",
            "unknown magic",
        );
    }

    #[test]
    fn row_indexes_come_out_sorted() {
        let bitmap = treemap(&[1 << 33, 9, 2, 1 << 32]);
        let indexes = deleted_row_indexes(&bitmap);
        assert_eq!(indexes.values().to_vec(), [2, 9, 1 << 32, 1 << 33]);
        assert_eq!(deleted_row_indexes(&RoaringTreemap::new()).len(), 0);
    }

    #[test]
    fn row_mask_covers_only_the_batch() {
        let bitmap = treemap(&[0, 3, 4, 10, 11, (1 << 32) + 1]);
        let mask = row_mask(&bitmap, 6, 3);
        let keep: Vec<bool> = mask.iter().map(Option::unwrap).collect();
        assert_eq!(keep, [false, false, true, true, true, true]);
        assert_eq!(mask.null_count(), 0);

        let across_buckets = row_mask(&bitmap, 4, (1 << 32) - 1);
        let keep: Vec<bool> = across_buckets.iter().map(Option::unwrap).collect();
        assert_eq!(keep, [true, true, false, true]);

        assert_eq!(row_mask(&bitmap, 0, 0).len(), 0);
        assert_eq!(row_mask(&bitmap, 3, u64::MAX - 1).true_count(), 3);
    }

    #[tokio::test]
    async fn load_reads_only_the_record_and_decodes_inline_without_io() {
        let store = Arc::new(InMemory::new());
        let storage = memory_table(&store);
        let (file, descriptors, vectors) = two_vector_file();
        let uuid = Uuid::parse_str(EXAMPLE_UUID).unwrap();
        let file_path = Path::from(format!("tables/t/{}", dv_file_name(&uuid)));
        store.put(&file_path, PutPayload::from(file)).await.unwrap();
        for (descriptor, vector) in descriptors.iter().zip(&vectors) {
            let loaded = load(&storage, descriptor).await.unwrap();
            assert_eq!(&loaded, vector);
        }
        let inline = encode_inline(&vectors[1]).unwrap();
        let empty_store = memory_table(&Arc::new(InMemory::new()));
        assert_eq!(load(&empty_store, &inline).await.unwrap(), vectors[1]);

        let missing = uuid_descriptor(
            &Uuid::nil(),
            "",
            &DvFileEntry {
                offset: 1,
                size_in_bytes: 10,
                cardinality: 1,
            },
        )
        .unwrap();
        let error = load(&storage, &missing).await.unwrap_err();
        assert!(error.is_not_found(), "{error}");
    }

    #[tokio::test]
    async fn a_record_past_the_end_of_its_file_names_the_file() {
        let store = Arc::new(InMemory::new());
        let storage = memory_table(&store);
        let (file, descriptors, _) = two_vector_file();
        let uuid = Uuid::parse_str(EXAMPLE_UUID).unwrap();
        let file_path = Path::from(format!("tables/t/{}", dv_file_name(&uuid)));
        store.put(&file_path, PutPayload::from(file)).await.unwrap();
        let beyond = DeletionVectorDescriptor {
            offset: Some(1_000_000),
            ..descriptors[0].clone()
        };
        for result in [
            load(&storage, &beyond).await,
            load_many(&storage, std::slice::from_ref(&beyond))
                .await
                .map(|mut all| all.remove(0)),
        ] {
            match result {
                Err(Error::CorruptDeletionVector { path, reason }) => {
                    assert_eq!(path, file_path.as_ref());
                    assert!(reason.contains("past the end"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn load_many_reads_each_file_once_and_keeps_the_order() {
        let store = Arc::new(InMemory::new());
        let storage = memory_table(&store).with_io(IoConfig {
            deletion_vectors: 2,
            ..IoConfig::default()
        });
        let (file, descriptors, vectors) = two_vector_file();
        let uuid = Uuid::parse_str(EXAMPLE_UUID).unwrap();
        let file_path = Path::from(format!("tables/t/{}", dv_file_name(&uuid)));
        store
            .put(&file_path, PutPayload::from(file.clone()))
            .await
            .unwrap();
        let inline = encode_inline(&treemap(&[3, 4])).unwrap();
        let asked = [
            descriptors[1].clone(),
            inline,
            descriptors[0].clone(),
            descriptors[1].clone(),
        ];
        let loaded = load_many(&storage, &asked).await.unwrap();
        let expected = [
            vectors[1].clone(),
            treemap(&[3, 4]),
            vectors[0].clone(),
            vectors[1].clone(),
        ];
        assert_eq!(loaded, expected);

        let truncated = PutPayload::from(file[..file.len() - 2].to_vec());
        store.put(&file_path, truncated).await.unwrap();
        let result = load_many(&storage, &asked).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, Error::CorruptDeletionVector { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(&dv_file_name(&uuid)), "{error}");
    }

    #[test]
    fn load_futures_can_be_spawned() {
        fn assert_send<T: Send>(_: &T) {}
        let storage = memory_table(&Arc::new(InMemory::new()));
        let inline = encode_inline(&treemap(&[1])).unwrap();
        let future = load(&storage, &inline);
        assert_send(&future);
    }

    #[tokio::test]
    async fn load_reports_a_truncated_file_as_corrupt() {
        let store = Arc::new(InMemory::new());
        let storage = memory_table(&store);
        let (file, descriptors, _) = two_vector_file();
        let path = Path::from("t/dv.bin");
        store
            .put(&path, PutPayload::from(file[..file.len() - 2].to_vec()))
            .await
            .unwrap();
        let result = read_record(
            &storage,
            &path,
            descriptors[1].offset.unwrap() as u64,
            &descriptors[1],
        )
        .await;
        assert_corrupt(result, "t/dv.bin", "truncated");
    }

    proptest! {
        #[test]
        fn z85_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = z85_encode(&bytes);
            prop_assert_eq!(text.len(), bytes.len().div_ceil(4) * 5);
            let decoded = z85_decode(&text).unwrap();
            prop_assert_eq!(&decoded[..bytes.len()], &bytes[..]);
            prop_assert!(decoded[bytes.len()..].iter().all(|&byte| byte == 0));
        }

        #[test]
        fn bitmaps_round_trip(
            low in proptest::collection::vec(0u64..200_000, 0..300),
            high in proptest::collection::vec(0u64..(1 << 63), 0..20),
            runs in proptest::collection::vec((0u64..1 << 34, 1u64..5_000), 0..4),
        ) {
            let mut bitmap = treemap(&low);
            bitmap.extend(high);
            for (start, len) in runs {
                bitmap.insert_range(start..start + len);
            }
            let bytes = encode_bitmap(&bitmap).unwrap();
            prop_assert_eq!(decode_bitmap(&bytes, "p").unwrap(), bitmap.clone());
            let (file, entries) = encode_dv_file(std::slice::from_ref(&bitmap)).unwrap();
            let descriptor = uuid_descriptor(&Uuid::nil(), "", &entries[0]).unwrap();
            prop_assert_eq!(decode_dv_file(&file, &descriptor, "p").unwrap(), bitmap);
        }

        #[test]
        fn decode_bitmap_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut with_magic = PORTABLE_MAGIC.to_le_bytes().to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = decode_bitmap(&with_magic, "p");
            let _ = decode_bitmap(&bytes, "p");
        }
    }

    mod golden {
        use super::*;
        use std::process::Command;

        /// Unpacks the golden table `name` (from `tests/data/golden`) into a temporary
        /// directory.
        fn unpack(name: &str) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
            let archive = crate::golden_archives()
                .join(format!("{name}.tar.zst"))
                .display()
                .to_string();
            let dir = tempfile::tempdir().unwrap();
            let status = Command::new("tar")
                .args(["--zstd", "-xf", &archive, "-C"])
                .arg(dir.path())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "cannot unpack {archive}");
            let table = dir.path().join(name).join("delta");
            Some((dir, table))
        }

        fn descriptors_in_log(table: &std::path::Path) -> Vec<DeletionVectorDescriptor> {
            let mut descriptors = Vec::new();
            for entry in std::fs::read_dir(table.join("_delta_log")).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|extension| extension != "json") {
                    continue;
                }
                for line in std::fs::read_to_string(&path).unwrap().lines() {
                    let action: serde_json::Value = serde_json::from_str(line).unwrap();
                    for kind in ["add", "remove"] {
                        if let Some(dv) =
                            action.get(kind).and_then(|file| file.get("deletionVector"))
                        {
                            if !dv.is_null() {
                                descriptors.push(serde_json::from_value(dv.clone()).unwrap());
                            }
                        }
                    }
                }
            }
            descriptors
        }

        fn check_table(name: &str, expected_descriptors: usize) {
            let Some((_dir, table)) = unpack(name) else {
                return;
            };
            let root = Url::from_directory_path(&table).unwrap();
            let descriptors = descriptors_in_log(&table);
            assert_eq!(descriptors.len(), expected_descriptors, "{name}");
            for descriptor in &descriptors {
                let DvLocation::File { url, offset } = resolve(descriptor, &root).unwrap() else {
                    panic!("{name}: Delta wrote a file-backed vector");
                };
                let file_path = url.to_file_path().unwrap();
                let bytes = std::fs::read(&file_path).unwrap();
                let label = file_path.display().to_string();
                let bitmap = decode_dv_file(&bytes, descriptor, &label).unwrap();
                assert_eq!(bitmap.len(), descriptor.cardinality as u64, "{label}");
                let record =
                    decode_dv_record(&bytes[offset as usize..], descriptor, &label).unwrap();
                assert_eq!(record, bitmap);
                let reencoded = encode_bitmap(&bitmap).unwrap();
                assert_eq!(
                    reencoded.len(),
                    descriptor.size_in_bytes as usize,
                    "{label}"
                );
            }
        }

        #[test]
        fn dv_partitioned_with_checkpoint() {
            check_table("dv-partitioned-with-checkpoint", 18);
        }

        #[test]
        fn dv_with_columnmapping() {
            check_table("dv-with-columnmapping", 18);
        }

        #[test]
        fn log_replay_dv_key_cases() {
            check_table("log-replay-dv-key-cases", 5);
        }

        #[tokio::test]
        async fn load_reads_golden_vectors_through_a_local_store() {
            let Some((_dir, table)) = unpack("log-replay-dv-key-cases") else {
                return;
            };
            let options = HashMap::new();
            let storage = Storage::open(table.to_str().unwrap(), &options).unwrap();
            for descriptor in descriptors_in_log(&table) {
                let bitmap = load(&storage, &descriptor).await.unwrap();
                assert_eq!(bitmap.len(), descriptor.cardinality as u64);
            }
        }

        #[test]
        fn corrupting_a_golden_file_names_it() {
            let Some((_dir, table)) = unpack("log-replay-dv-key-cases") else {
                return;
            };
            let root = Url::from_directory_path(&table).unwrap();
            let descriptor = descriptors_in_log(&table).remove(0);
            let DvLocation::File { url, .. } = resolve(&descriptor, &root).unwrap() else {
                panic!("Delta wrote a file-backed vector");
            };
            let label = url.to_file_path().unwrap().display().to_string();
            let mut bytes = std::fs::read(&label).unwrap();
            let last = bytes.len() - 1;
            bytes[last] ^= 0x80;
            assert_corrupt(
                decode_dv_file(&bytes, &descriptor, &label),
                &label,
                "checksum",
            );
        }
    }
}
