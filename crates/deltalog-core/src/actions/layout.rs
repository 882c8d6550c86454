//! The Arrow layout of file actions, shared by JSON commits and Parquet checkpoints.
//!
//! A decoded log file becomes [`FileActionBatch`]es: nullable `add` and `remove` struct
//! columns laid out as in a checkpoint (spec "Checkpoint Schema"), one row per action. JSON
//! commits decode straight into this layout; checkpoint parts are read with a projection and
//! normalised to it, so replay sees one representation.

use std::sync::{Arc, LazyLock};

#[cfg(any(test, feature = "internal-api"))]
use arrow_array::ArrayRef;
use arrow_array::{
    new_null_array, Array, BooleanArray, Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::error::{Error, Result};

/// Field names of the `add` struct.
pub(crate) mod add {
    pub(crate) const PATH: &str = "path";
    pub(crate) const PARTITION_VALUES: &str = "partitionValues";
    pub(crate) const SIZE: &str = "size";
    pub(crate) const MODIFICATION_TIME: &str = "modificationTime";
    pub(crate) const DATA_CHANGE: &str = "dataChange";
    pub(crate) const STATS: &str = "stats";
    pub(crate) const TAGS: &str = "tags";
    pub(crate) const DELETION_VECTOR: &str = "deletionVector";
    pub(crate) const BASE_ROW_ID: &str = "baseRowId";
    pub(crate) const DEFAULT_ROW_COMMIT_VERSION: &str = "defaultRowCommitVersion";
    pub(crate) const CLUSTERING_PROVIDER: &str = "clusteringProvider";
    /// Not a protocol field: the record count taken from the statistics while decoding, so
    /// that the statistics themselves need not be kept.
    pub(crate) const NUM_RECORDS: &str = "numRecords";
}

/// Field names of the `remove` struct that differ from `add`.
pub(crate) mod remove {
    pub(crate) const DELETION_TIMESTAMP: &str = "deletionTimestamp";
    pub(crate) const EXTENDED_FILE_METADATA: &str = "extendedFileMetadata";
}

/// The typed partition values a checkpoint may carry next to `partitionValues` (spec
/// "Checkpoint Schema"). Checkpoint `add` structs keep it as an extra child when present.
pub(crate) const PARTITION_VALUES_PARSED: &str = "partitionValues_parsed";

/// `map<string, string>` as Delta's checkpoints lay it out (`key_value` entries).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn string_map() -> DataType {
    let entries = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("key_value", DataType::Struct(entries), false)),
        false,
    )
}

/// The deletion vector descriptor struct (catalogue B-V).
pub(crate) fn deletion_vector_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("storageType", DataType::Utf8, true),
        Field::new("pathOrInlineDv", DataType::Utf8, true),
        Field::new("offset", DataType::Int32, true),
        Field::new("sizeInBytes", DataType::Int32, true),
        Field::new("cardinality", DataType::Int64, true),
    ]))
}

/// The fields of `add` (catalogue B-A), all nullable so that absent JSON fields decode.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn add_fields() -> Fields {
    Fields::from(vec![
        Field::new(add::PATH, DataType::Utf8, true),
        Field::new(add::PARTITION_VALUES, string_map(), true),
        Field::new(add::SIZE, DataType::Int64, true),
        Field::new(add::MODIFICATION_TIME, DataType::Int64, true),
        Field::new(add::DATA_CHANGE, DataType::Boolean, true),
        Field::new(add::STATS, DataType::Utf8, true),
        Field::new(add::TAGS, string_map(), true),
        Field::new(add::DELETION_VECTOR, deletion_vector_type(), true),
        Field::new(add::BASE_ROW_ID, DataType::Int64, true),
        Field::new(add::DEFAULT_ROW_COMMIT_VERSION, DataType::Int64, true),
        Field::new(add::CLUSTERING_PROVIDER, DataType::Utf8, true),
        Field::new(add::NUM_RECORDS, DataType::Int64, true),
    ])
}

/// The rows of `adds` in exactly the layout of [`add_fields`], without the children a
/// state's add rows may carry besides (`partitionValues_parsed` of rows read from a
/// checkpoint that has it). `None` when a field of the layout is missing or has another type.
pub(crate) fn in_add_layout(adds: &StructArray) -> Option<StructArray> {
    let fields = add_fields();
    if adds.fields() == &fields {
        return Some(adds.clone());
    }
    let columns = fields
        .iter()
        .map(|field| {
            adds.column_by_name(field.name())
                .filter(|column| column.data_type() == field.data_type())
                .cloned()
        })
        .collect::<Option<Vec<_>>>()?;
    StructArray::try_new(fields, columns, adds.nulls().cloned()).ok()
}

/// The fields of `remove` (catalogue B-R).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn remove_fields() -> Fields {
    Fields::from(vec![
        Field::new(add::PATH, DataType::Utf8, true),
        Field::new(remove::DELETION_TIMESTAMP, DataType::Int64, true),
        Field::new(add::DATA_CHANGE, DataType::Boolean, true),
        Field::new(remove::EXTENDED_FILE_METADATA, DataType::Boolean, true),
        Field::new(add::PARTITION_VALUES, string_map(), true),
        Field::new(add::SIZE, DataType::Int64, true),
        Field::new(add::STATS, DataType::Utf8, true),
        Field::new(add::TAGS, string_map(), true),
        Field::new(add::DELETION_VECTOR, deletion_vector_type(), true),
        Field::new(add::BASE_ROW_ID, DataType::Int64, true),
        Field::new(add::DEFAULT_ROW_COMMIT_VERSION, DataType::Int64, true),
    ])
}

/// The fields of `cdc` (catalogue B-C).
pub(crate) fn cdc_fields() -> Fields {
    Fields::from(vec![
        Field::new(add::PATH, DataType::Utf8, true),
        Field::new(add::PARTITION_VALUES, string_map(), true),
        Field::new(add::SIZE, DataType::Int64, true),
        Field::new(add::DATA_CHANGE, DataType::Boolean, true),
        Field::new(add::TAGS, string_map(), true),
    ])
}

/// `{add, remove}`: the schema of a [`FileActionBatch`].
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn file_action_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        Arc::new(Schema::new(vec![
            Field::new("add", DataType::Struct(add_fields()), true),
            Field::new("remove", DataType::Struct(remove_fields()), true),
        ]))
    });
    SCHEMA.clone()
}

/// Decoded `add` and `remove` actions of one log file (or one piece of it), in the layout of
/// [`file_action_schema`]. A row holds an add, a remove, or neither.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FileActionBatch {
    /// The version of the commit (or checkpoint) the rows come from.
    #[cfg_attr(
        not(any(test, feature = "internal-api")),
        expect(dead_code, reason = "read by the replay benchmarks and tests")
    )]
    pub version: u64,
    /// True for checkpoint parts and sidecars: their rows are already reconciled.
    #[cfg_attr(
        not(any(test, feature = "internal-api")),
        expect(dead_code, reason = "read by the replay benchmarks and tests")
    )]
    pub from_checkpoint: bool,
    /// The log file the rows come from, for error messages.
    pub file: Arc<str>,
    pub adds: StructArray,
    pub removes: StructArray,
    /// Set by a filtered load (`crate::replay::load::load_segment_matching`): per row, false when
    /// its `add` cannot match the filter by its statistics. Such a row still counts in
    /// reconciliation (its key hides older actions) but never becomes a live file.
    pub may_match: Option<BooleanArray>,
    /// The `stats` strings of `adds` are as the commit's lines hold them, escapes not decoded
    /// (`log::decode::add_scanner::StatsText::Escaped`). Only a filtered load's decoding sets
    /// it, and its judge decodes them (the strings of the files that may match) before the
    /// batch goes on: no other reader sees such a batch.
    pub stats_escaped: bool,
}

impl FileActionBatch {
    /// Splits a batch of [`file_action_schema`] into its two struct columns.
    pub(crate) fn from_record_batch(
        batch: &RecordBatch,
        version: u64,
        from_checkpoint: bool,
        file: &str,
    ) -> Result<Self> {
        let adds = struct_column(batch, "add", file)?;
        let removes = struct_column(batch, "remove", file)?;
        require_children(
            &adds,
            "add",
            &[add::PATH, add::PARTITION_VALUES, add::SIZE],
            file,
        )?;
        require_children(&removes, "remove", &[add::PATH], file)?;
        Ok(FileActionBatch {
            version,
            from_checkpoint,
            file: Arc::from(file),
            adds,
            removes,
            may_match: None,
            stats_escaped: false,
        })
    }

    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn num_rows(&self) -> usize {
        self.adds.len()
    }

    /// False when row `row`'s add was judged unable to match a filtered load's filter.
    pub(crate) fn may_match(&self, row: usize) -> bool {
        self.may_match
            .as_ref()
            .is_none_or(|mask| mask.is_valid(row) && mask.value(row))
    }
}

/// Fills the `numRecords` child of `adds` from `stats_parsed_records` (the checkpoint's
/// `stats_parsed.numRecords`) or else from the `stats` JSON, and drops the `stats` strings
/// unless `keep_stats` (spec "Per-file Statistics": `numRecords` is a top-level key).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn finish_adds(
    adds: StructArray,
    stats_parsed_records: Option<&Int64Array>,
    keep_stats: bool,
) -> Result<StructArray> {
    let (fields, mut columns, nulls) = adds.into_parts();
    let position = |name: &str| fields.iter().position(|f| f.name() == name);
    let (Some(stats_at), Some(records_at)) = (position(add::STATS), position(add::NUM_RECORDS))
    else {
        return StructArray::try_new(fields, columns, nulls)
            .map_err(|error| Error::arrow("file actions", error));
    };
    let stats = columns[stats_at].as_any().downcast_ref::<StringArray>();
    let records: Int64Array = (0..columns[records_at].len())
        .map(|row| {
            stats_parsed_records
                .filter(|parsed| parsed.is_valid(row))
                .map(|parsed| parsed.value(row))
                .or_else(|| {
                    let stats = stats.filter(|s| s.is_valid(row))?;
                    num_records(stats.value(row))
                })
        })
        .collect();
    columns[records_at] = Arc::new(records);
    if !keep_stats {
        columns[stats_at] = new_null_array(&DataType::Utf8, columns[stats_at].len());
    }
    StructArray::try_new(fields, columns, nulls)
        .map_err(|error| Error::arrow("file actions", error))
}

/// `numRecords` of a statistics JSON object, read without parsing the rest. Spark writes it
/// first; when it is not found before any nested object, the whole object is parsed.
pub(crate) fn num_records(stats: &str) -> Option<i64> {
    const KEY: &str = "\"numRecords\"";
    if let Some(records) = stats
        .strip_prefix("{\"numRecords\":")
        .and_then(leading_count)
    {
        return Some(records);
    }
    if let Some(at) = stats.find(KEY) {
        if !stats[..at].contains('{') || stats[..at].trim_end() == "{" {
            let rest = stats[at + KEY.len()..]
                .trim_start()
                .strip_prefix(':')?
                .trim_start();
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(rest.len());
            if let Ok(value) = rest[..end].parse() {
                return Some(value);
            }
        }
    }
    let value: serde_json::Value = serde_json::from_str(stats).ok()?;
    value.get("numRecords")?.as_i64()
}

/// The count `text` opens with, when digits alone run up to a `,` or `}` (the value of
/// `numRecords` as writers put it first in the statistics).
pub(crate) fn leading_count(text: &str) -> Option<i64> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let ends = matches!(text.as_bytes().get(digits), Some(b',' | b'}'));
    text[..digits].parse().ok().filter(|_| ends)
}

/// The struct column `name` of `batch`, or a corrupt-file error naming `file`.
pub(crate) fn struct_column(batch: &RecordBatch, name: &str, file: &str) -> Result<StructArray> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<StructArray>())
        .cloned()
        .ok_or_else(|| Error::corrupt(file, format!("no struct column '{name}'")))
}

/// Refuses (naming `file`) an `action` row that is present but lacks one of the `required`
/// fields (spec "Add File and Remove File": `path` and, for `add`, `partitionValues` and `size` are required).
fn require_children(
    actions: &StructArray,
    action: &str,
    required: &[&str],
    file: &str,
) -> Result<()> {
    for name in required {
        let Some(column) = actions.column_by_name(name) else {
            return Err(Error::corrupt(
                file,
                format!("`{action}` has no field `{name}`"),
            ));
        };
        let missing = (0..actions.len()).find(|&row| actions.is_valid(row) && column.is_null(row));
        if let Some(row) = missing {
            let reason = format!("`{action}` number {} has no `{name}`", row + 1);
            return Err(Error::corrupt(file, reason));
        }
    }
    Ok(())
}

/// The child `name` of a struct array, if present.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn child<'a>(array: &'a StructArray, name: &str) -> Option<&'a ArrayRef> {
    array.column_by_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_records_is_read_without_parsing() {
        assert_eq!(
            num_records(r#"{"numRecords":42,"minValues":{"a":1}}"#),
            Some(42)
        );
        assert_eq!(num_records(r#"{ "numRecords" : 7 }"#), Some(7));
        assert_eq!(
            num_records(r#"{"minValues":{"numRecords":1},"numRecords":3}"#),
            Some(3)
        );
        assert_eq!(num_records(r#"{"minValues":{}}"#), None);
        assert_eq!(num_records("not json"), None);
    }

    #[test]
    fn file_action_schema_has_add_and_remove() {
        let schema = file_action_schema();
        assert_eq!(schema.fields().len(), 2);
        assert!(matches!(schema.field(0).data_type(), DataType::Struct(f) if f.len() == 12));
    }
}
