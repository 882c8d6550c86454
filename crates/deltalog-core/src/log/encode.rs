//! Actions as Delta JSON lines, exactly as the spec lays them out and Delta on Spark writes
//! them (spec "Delta Log Entries", "Actions"; catalogue B).
//!
//! Non-file actions are encoded from their structs ([`crate::actions`]); file actions from
//! Arrow struct arrays in the internal layouts of [`crate::actions::layout`] (`add_fields`,
//! `remove_fields`, `cdc_fields`), the layout replay produces, so the rows of a snapshot are
//! removed by selecting them. Optional fields that are null are left out; `numRecords`, an
//! internal column of the add layout, is never written. [`AddFile`] builds add rows from the
//! facts of a written data file.

use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int32Array, Int64Array, MapArray, StringArray,
    StructArray,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

use crate::actions::layout::{add, remove, remove_fields};
use crate::actions::{
    CommitInfo, DeletionVectorDescriptor, DomainMetadata, Metadata, Protocol, Txn,
};
use crate::error::{Error, Result};
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::{decode_actions, DecodeOptions};
use crate::table_config::features::{MAX_READER_VERSION, MAX_WRITER_VERSION};

/// The facts of one data file to add (spec "Add File and Remove File"), turned into a row of
/// the add layout by `add_rows`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AddFile {
    /// The file's path relative to the table root, as the object is named (not URL-encoded:
    /// `add_rows` encodes it), or an absolute URI, kept as given.
    pub path: String,
    /// Partition values by partition column (physical names under column mapping), in the
    /// order of the partition columns; `None` is a null value.
    pub partition_values: Vec<(String, Option<String>)>,
    /// The size of the file in bytes.
    pub size: i64,
    /// When the file was written, in ms since the epoch.
    pub modification_time: i64,
    /// False for files that only rearrange existing data (compaction).
    pub data_change: bool,
    /// The statistics as a JSON object (spec "Per-file Statistics"); `numRecords` is needed
    /// for row tracking.
    pub stats: Option<String>,
    pub tags: Vec<(String, Option<String>)>,
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    /// Set only when recommitting a file that already has row ids; fresh files get theirs
    /// when the transaction commits.
    pub base_row_id: Option<i64>,
    pub default_row_commit_version: Option<i64>,
    pub clustering_provider: Option<String>,
}

/// `files` as rows of the internal add layout ([`crate::actions::layout::add_fields`], with
/// `stats` kept and `numRecords` read from it).
///
/// Errors: [`Error::InvalidArgument`] for a file without a path or with a negative size, or
/// statistics that are not a JSON object.
pub(crate) fn add_rows(files: &[AddFile]) -> Result<StructArray> {
    let mut text = Vec::new();
    for file in files {
        if file.path.is_empty() || file.size < 0 {
            return Err(Error::InvalidArgument(format!(
                "an added file needs a path and a size of at least 0: {:?} of {} bytes",
                file.path, file.size
            )));
        }
        if let Some(stats) = &file.stats {
            let parsed: serde_json::Result<serde_json::Map<String, serde_json::Value>> =
                serde_json::from_str(stats);
            if parsed.is_err() {
                return Err(Error::InvalidArgument(format!(
                    "the statistics of {} are not a JSON object",
                    file.path
                )));
            }
        }
        text.extend_from_slice(add_file_line(file).as_bytes());
        text.push(b'\n');
    }
    let options = DecodeOptions {
        from_checkpoint: false,
        stats: StatsText::Decoded,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    let decoded = decode_actions(&text, 0, "the added files", options)?;
    match decoded.file_actions.into_iter().next() {
        Some(batch) => Ok(batch.adds),
        None => Ok(StructArray::new_null(
            crate::actions::layout::add_fields(),
            0,
        )),
    }
}

/// Removes of the files in `adds` (rows of the add layout, such as a snapshot's), deleted at
/// `deletion_timestamp` (ms since the epoch), with `extendedFileMetadata` (partition values,
/// size, statistics, tags, deletion vector and row tracking fields copied from the add, as
/// the spec asks writers to do).
pub(crate) fn removes_from_adds(
    adds: &StructArray,
    deletion_timestamp: i64,
    data_change: bool,
) -> Result<StructArray> {
    let rows = adds.len();
    let column = |name: &str| {
        adds.column_by_name(name).cloned().ok_or_else(|| {
            Error::internal_invariant(format!("the files to remove have a '{name}' column"))
        })
    };
    let columns = vec![
        column(add::PATH)?,
        Arc::new(Int64Array::from(vec![deletion_timestamp; rows])) as _,
        Arc::new(BooleanArray::from(vec![data_change; rows])) as _,
        Arc::new(BooleanArray::from(vec![true; rows])) as _,
        column(add::PARTITION_VALUES)?,
        column(add::SIZE)?,
        column(add::STATS)?,
        column(add::TAGS)?,
        column(add::DELETION_VECTOR)?,
        column(add::BASE_ROW_ID)?,
        column(add::DEFAULT_ROW_COMMIT_VERSION)?,
    ];
    StructArray::try_new(remove_fields(), columns, adds.nulls().cloned())
        .map_err(|error| Error::arrow("the files to remove", error))
}

/// Bare tombstones of `paths` (relative, URL-encoded), deleted at `deletion_timestamp`: rows
/// of the remove layout with `dataChange` false and every other field null, which the
/// encoder leaves out.
pub(crate) fn tombstones(paths: &[String], deletion_timestamp: i64) -> Result<StructArray> {
    let rows = paths.len();
    let fields = remove_fields();
    let columns = fields
        .iter()
        .map(|field| match field.name().as_str() {
            add::PATH => Arc::new(StringArray::from_iter_values(paths)) as ArrayRef,
            remove::DELETION_TIMESTAMP => {
                Arc::new(Int64Array::from(vec![deletion_timestamp; rows])) as _
            }
            add::DATA_CHANGE => Arc::new(BooleanArray::from(vec![false; rows])) as _,
            _ => new_null_array(field.data_type(), rows),
        })
        .collect();
    StructArray::try_new(fields, columns, None)
        .map_err(|error| Error::arrow("the tombstones", error))
}

/// The `path` of a file relative to the table root, URL-encoded as the spec requires (RFC
/// 2396), exactly as Hadoop's `Path.toUri` writes it for Delta on Spark: ASCII characters
/// outside the URI path alphabet, `%` included, are escaped; `/` separates segments; other
/// characters stay as they are, except white space and control characters (`java.net.URI`'s
/// "other" category), which are escaped as UTF-8. Delta on Spark's VACUUM compares these
/// strings with its listing in that form: a `é` written as `%C3%A9` is a file it does not
/// know, and deletes. Absolute URIs are returned unchanged.
pub(crate) fn encode_path(path: &str) -> String {
    if has_scheme(path) {
        return path.to_string();
    }
    let mut encoded = String::with_capacity(path.len());
    let mut buffer = [0u8; 4];
    for character in path.chars() {
        let text: &str = character.encode_utf8(&mut buffer);
        if character.is_ascii() {
            encoded.extend(percent_encoding::utf8_percent_encode(text, PATH_ESCAPES));
        } else if character.is_whitespace() || character.is_control() {
            encoded.extend(percent_encoding::percent_encode(
                text.as_bytes(),
                NON_ALPHANUMERIC,
            ));
        } else {
            encoded.push_str(text);
        }
    }
    encoded
}

/// `{"protocol":...}`. `readerFeatures` is written only at reader version 3 and
/// `writerFeatures` only at writer version 7 (always, empty if need be), as the spec requires.
pub(crate) fn protocol_line(protocol: &Protocol) -> String {
    let mut object = Object::new();
    object.int("minReaderVersion", i64::from(protocol.min_reader_version));
    object.int("minWriterVersion", i64::from(protocol.min_writer_version));
    if protocol.min_reader_version == MAX_READER_VERSION {
        object.strings("readerFeatures", protocol.reader_features.iter().flatten());
    }
    if protocol.min_writer_version == MAX_WRITER_VERSION {
        object.strings("writerFeatures", protocol.writer_features.iter().flatten());
    }
    action("protocol", object)
}

/// `{"metaData":...}` with `format`, `schemaString`, `partitionColumns`, `configuration`
/// (keys sorted) and `createdTime`; `name` and `description` when set.
pub(crate) fn metadata_line(metadata: &Metadata) -> String {
    let mut object = Object::new();
    object.string("id", &metadata.id);
    if let Some(name) = &metadata.name {
        object.string("name", name);
    }
    if let Some(description) = &metadata.description {
        object.string("description", description);
    }
    let mut format = Object::new();
    format.string("provider", &metadata.format.provider);
    format.map("options", sorted(metadata.format.options.iter()));
    object.raw("format", &format.finish());
    if let Some(schema) = &metadata.schema_string {
        object.string("schemaString", schema);
    }
    object.strings("partitionColumns", metadata.partition_columns.iter());
    object.map("configuration", sorted(metadata.configuration.iter()));
    if let Some(created) = metadata.created_time {
        object.int("createdTime", created);
    }
    action("metaData", object)
}

/// `{"txn":{"appId","version","lastUpdated"}}`.
pub(crate) fn txn_line(txn: &Txn) -> String {
    let mut object = Object::new();
    object.string("appId", &txn.app_id);
    object.int("version", txn.version);
    if let Some(last_updated) = txn.last_updated {
        object.int("lastUpdated", last_updated);
    }
    action("txn", object)
}

/// `{"domainMetadata":{"domain","configuration","removed"}}`.
pub(crate) fn domain_metadata_line(domain: &DomainMetadata) -> String {
    let mut object = Object::new();
    object.string("domain", &domain.domain);
    object.string("configuration", &domain.configuration);
    object.boolean("removed", domain.removed);
    action("domainMetadata", object)
}

/// `{"commitInfo":{...}}`, the object as given.
pub(crate) fn commit_info_line(info: &CommitInfo) -> Result<String> {
    let object = serde_json::to_string(&info.raw)
        .map_err(|error| Error::InvalidArgument(format!("commitInfo: {error}")))?;
    Ok(format!("{{\"commitInfo\":{object}}}"))
}

/// Appends one `{"add":...}` line per valid row of `adds` (the add layout) to `out`.
pub(crate) fn write_add_lines(adds: &StructArray, out: &mut Vec<u8>) -> Result<()> {
    let columns = FileColumns::new(adds, "added files")?;
    for row in (0..adds.len()).filter(|row| adds.is_valid(*row)) {
        let mut object = Object::new();
        object.string("path", columns.path(row)?);
        object.pairs(
            "partitionValues",
            &columns.map(&columns.partition_values, row),
        );
        object.int("size", columns.int(&columns.size, row).unwrap_or(0));
        let time = columns.int(&columns.modification_time, row).unwrap_or(0);
        object.int("modificationTime", time);
        let data_change = columns.flag(&columns.data_change, row).unwrap_or(true);
        object.boolean("dataChange", data_change);
        columns.write_tail(&mut object, row, true);
        out.extend_from_slice(action("add", object).as_bytes());
        out.push(b'\n');
    }
    Ok(())
}

/// Appends one `{"remove":...}` line per valid row of `removes` (the remove layout) to `out`.
pub(crate) fn write_remove_lines(removes: &StructArray, out: &mut Vec<u8>) -> Result<()> {
    let columns = FileColumns::new(removes, "removed files")?;
    let timestamps = int_column(removes, remove::DELETION_TIMESTAMP);
    let extended = bool_column(removes, remove::EXTENDED_FILE_METADATA);
    for row in (0..removes.len()).filter(|row| removes.is_valid(*row)) {
        let mut object = Object::new();
        object.string("path", columns.path(row)?);
        if let Some(timestamp) = columns.int(&timestamps, row) {
            object.int("deletionTimestamp", timestamp);
        }
        let data_change = columns.flag(&columns.data_change, row).unwrap_or(true);
        object.boolean("dataChange", data_change);
        let extended = columns.flag(&extended, row);
        if let Some(extended) = extended {
            object.boolean("extendedFileMetadata", extended);
        }
        if columns.partition_values.is_some_and(|m| m.is_valid(row)) {
            object.pairs(
                "partitionValues",
                &columns.map(&columns.partition_values, row),
            );
        }
        if let Some(size) = columns.int(&columns.size, row) {
            object.int("size", size);
        }
        columns.write_tail(&mut object, row, false);
        out.extend_from_slice(action("remove", object).as_bytes());
        out.push(b'\n');
    }
    Ok(())
}

/// Appends one `{"cdc":...}` line per valid row of `cdc` (the layout of
/// [`crate::actions::layout::cdc_fields`]) to `out`; `dataChange` is always `false`.
pub(crate) fn write_cdc_lines(cdc: &StructArray, out: &mut Vec<u8>) -> Result<()> {
    let columns = FileColumns::new(cdc, "change data files")?;
    for row in (0..cdc.len()).filter(|row| cdc.is_valid(*row)) {
        let mut object = Object::new();
        object.string("path", columns.path(row)?);
        object.pairs(
            "partitionValues",
            &columns.map(&columns.partition_values, row),
        );
        object.int("size", columns.int(&columns.size, row).unwrap_or(0));
        object.boolean("dataChange", false);
        if columns.tags.is_some_and(|m| m.is_valid(row)) {
            object.pairs("tags", &columns.map(&columns.tags, row));
        }
        out.extend_from_slice(action("cdc", object).as_bytes());
        out.push(b'\n');
    }
    Ok(())
}

/// The characters Hadoop's URI encoding escapes in a path: everything but letters, digits,
/// `/` and the path characters `-_.!~*'();:@&=+$,`.
const PATH_ESCAPES: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b';')
    .remove(b':')
    .remove(b'@')
    .remove(b'&')
    .remove(b'=')
    .remove(b'+')
    .remove(b'$')
    .remove(b',');

/// True when `path` starts with a URI scheme (`s3:`, `file:`), not a drive letter.
fn has_scheme(path: &str) -> bool {
    path.find(':').is_some_and(|end| {
        let scheme = &path[..end];
        scheme.len() > 1
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// The add line of one [`AddFile`], its path encoded.
fn add_file_line(file: &AddFile) -> String {
    let mut object = Object::new();
    object.string("path", &encode_path(&file.path));
    let values: Vec<(&str, Option<&str>)> = file
        .partition_values
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_deref()))
        .collect();
    object.pairs("partitionValues", &values);
    object.int("size", file.size);
    object.int("modificationTime", file.modification_time);
    object.boolean("dataChange", file.data_change);
    if let Some(stats) = &file.stats {
        object.string("stats", stats);
    }
    if !file.tags.is_empty() {
        let tags: Vec<(&str, Option<&str>)> = file
            .tags
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_deref()))
            .collect();
        object.pairs("tags", &tags);
    }
    if let Some(dv) = &file.deletion_vector {
        object.raw("deletionVector", &dv_object(dv));
    }
    if let Some(base) = file.base_row_id {
        object.int("baseRowId", base);
    }
    if let Some(version) = file.default_row_commit_version {
        object.int("defaultRowCommitVersion", version);
    }
    if let Some(provider) = &file.clustering_provider {
        object.string("clusteringProvider", provider);
    }
    action("add", object)
}

fn dv_object(dv: &DeletionVectorDescriptor) -> String {
    let mut object = Object::new();
    object.string("storageType", &dv.storage_type);
    object.string("pathOrInlineDv", &dv.path_or_inline_dv);
    if let Some(offset) = dv.offset {
        object.int("offset", i64::from(offset));
    }
    object.int("sizeInBytes", i64::from(dv.size_in_bytes));
    object.int("cardinality", dv.cardinality);
    object.finish()
}

fn action(name: &str, object: Object) -> String {
    format!("{{\"{name}\":{}}}", object.finish())
}

fn sorted<'a>(entries: impl Iterator<Item = (&'a String, &'a String)>) -> Vec<(&'a str, &'a str)> {
    let mut entries: Vec<(&str, &str)> = entries.map(|(k, v)| (k.as_str(), v.as_str())).collect();
    entries.sort_unstable();
    entries
}

/// The columns of a file action struct array, looked up once.
struct FileColumns<'a> {
    context: &'static str,
    path: &'a StringArray,
    partition_values: Option<&'a MapArray>,
    size: Option<&'a Int64Array>,
    modification_time: Option<&'a Int64Array>,
    data_change: Option<&'a BooleanArray>,
    stats: Option<&'a StringArray>,
    tags: Option<&'a MapArray>,
    deletion_vector: Option<&'a StructArray>,
    base_row_id: Option<&'a Int64Array>,
    default_row_commit_version: Option<&'a Int64Array>,
    clustering_provider: Option<&'a StringArray>,
}

impl<'a> FileColumns<'a> {
    fn new(actions: &'a StructArray, context: &'static str) -> Result<Self> {
        let path = actions
            .column_by_name(add::PATH)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| Error::internal_invariant(format!("{context} have a path column")))?;
        let map = |name: &str| {
            actions
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<MapArray>())
        };
        let text = |name: &str| {
            actions
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        };
        Ok(FileColumns {
            context,
            path,
            partition_values: map(add::PARTITION_VALUES),
            size: int_column(actions, add::SIZE),
            modification_time: int_column(actions, add::MODIFICATION_TIME),
            data_change: bool_column(actions, add::DATA_CHANGE),
            stats: text(add::STATS),
            tags: map(add::TAGS),
            deletion_vector: actions
                .column_by_name(add::DELETION_VECTOR)
                .and_then(|c| c.as_any().downcast_ref::<StructArray>()),
            base_row_id: int_column(actions, add::BASE_ROW_ID),
            default_row_commit_version: int_column(actions, add::DEFAULT_ROW_COMMIT_VERSION),
            clustering_provider: text(add::CLUSTERING_PROVIDER),
        })
    }

    fn path(&self, row: usize) -> Result<&'a str> {
        if self.path.is_null(row) {
            return Err(Error::InvalidArgument(format!(
                "{}: row {row} has no path",
                self.context
            )));
        }
        Ok(self.path.value(row))
    }

    fn int(&self, column: &Option<&Int64Array>, row: usize) -> Option<i64> {
        column.filter(|c| c.is_valid(row)).map(|c| c.value(row))
    }

    fn flag(&self, column: &Option<&BooleanArray>, row: usize) -> Option<bool> {
        column.filter(|c| c.is_valid(row)).map(|c| c.value(row))
    }

    fn map(&self, column: &Option<&'a MapArray>, row: usize) -> Vec<(&'a str, Option<&'a str>)> {
        let Some(map) = column.filter(|m| m.is_valid(row)) else {
            return Vec::new();
        };
        let keys = map.keys().as_any().downcast_ref::<StringArray>();
        let values = map.values().as_any().downcast_ref::<StringArray>();
        let (Some(keys), Some(values)) = (keys, values) else {
            return Vec::new();
        };
        let offsets = map.value_offsets();
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        (start..end)
            .map(|entry| {
                let value = values.is_valid(entry).then(|| values.value(entry));
                (keys.value(entry), value)
            })
            .collect()
    }

    /// `stats`, `tags`, `deletionVector`, `baseRowId`, `defaultRowCommitVersion` and, for
    /// adds, `clusteringProvider`, each when present.
    fn write_tail(&self, object: &mut Object, row: usize, is_add: bool) {
        if let Some(stats) = self.stats.filter(|s| s.is_valid(row)) {
            object.string("stats", stats.value(row));
        }
        if self.tags.is_some_and(|m| m.is_valid(row)) {
            object.pairs("tags", &self.map(&self.tags, row));
        }
        if let Some(dv) = self.deletion_vector.filter(|dv| dv.is_valid(row)) {
            if let Some(descriptor) = dv_at(dv, row) {
                object.raw("deletionVector", &dv_object(&descriptor));
            }
        }
        if let Some(base) = self.int(&self.base_row_id, row) {
            object.int("baseRowId", base);
        }
        if let Some(version) = self.int(&self.default_row_commit_version, row) {
            object.int("defaultRowCommitVersion", version);
        }
        if is_add {
            if let Some(provider) = self.clustering_provider.filter(|p| p.is_valid(row)) {
                object.string("clusteringProvider", provider.value(row));
            }
        }
    }
}

fn dv_at(dv: &StructArray, row: usize) -> Option<DeletionVectorDescriptor> {
    let text = |name: &str| {
        dv.column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row).to_string())
    };
    let int = |name: &str| {
        dv.column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<Int32Array>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row))
    };
    let cardinality = dv
        .column_by_name("cardinality")
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        .filter(|c| c.is_valid(row))
        .map(|c| c.value(row))?;
    Some(DeletionVectorDescriptor {
        storage_type: text("storageType")?,
        path_or_inline_dv: text("pathOrInlineDv")?,
        offset: int("offset"),
        size_in_bytes: int("sizeInBytes")?,
        cardinality,
    })
}

fn int_column<'a>(actions: &'a StructArray, name: &str) -> Option<&'a Int64Array> {
    actions
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
}

fn bool_column<'a>(actions: &'a StructArray, name: &str) -> Option<&'a BooleanArray> {
    actions
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<BooleanArray>())
}

/// A JSON object written key by key, in order.
struct Object {
    text: String,
}

impl Object {
    fn new() -> Self {
        Object {
            text: String::from("{"),
        }
    }

    fn key(&mut self, key: &str) {
        if self.text.len() > 1 {
            self.text.push(',');
        }
        push_string(&mut self.text, key);
        self.text.push(':');
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        push_string(&mut self.text, value);
    }

    fn int(&mut self, key: &str, value: i64) {
        self.key(key);
        self.text.push_str(&value.to_string());
    }

    fn boolean(&mut self, key: &str, value: bool) {
        self.key(key);
        self.text.push_str(if value { "true" } else { "false" });
    }

    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.text.push_str(json);
    }

    fn strings<'s>(&mut self, key: &str, values: impl Iterator<Item = &'s String>) {
        self.key(key);
        self.text.push('[');
        for (index, value) in values.enumerate() {
            if index > 0 {
                self.text.push(',');
            }
            push_string(&mut self.text, value);
        }
        self.text.push(']');
    }

    fn map(&mut self, key: &str, entries: Vec<(&str, &str)>) {
        let entries: Vec<(&str, Option<&str>)> = entries
            .into_iter()
            .map(|(key, value)| (key, Some(value)))
            .collect();
        self.pairs(key, &entries);
    }

    fn pairs(&mut self, key: &str, entries: &[(&str, Option<&str>)]) {
        let mut inner = Object::new();
        for (entry, value) in entries {
            match value {
                Some(value) => inner.string(entry, value),
                None => inner.raw(entry, "null"),
            }
        }
        self.raw(key, &inner.finish());
    }

    fn finish(mut self) -> String {
        self.text.push('}');
        self.text
    }
}

/// `value` as a JSON string literal.
fn push_string(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests;
