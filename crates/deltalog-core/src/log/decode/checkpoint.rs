//! Reading checkpoint parts and sidecars (spec "Checkpoints", "Checkpoint Schema", "V2
//! Checkpoint", catalogue F/H-CK).
//!
//! Parquet files are read with a column projection: only the action columns replay needs.
//! `add` and `remove` come out as [`FileActionBatch`]es normalised to the layout of
//! [`crate::actions::layout`], whatever optional fields the writer included; the other actions
//! (protocol, metaData, txn, domainMetadata, checkpointMetadata, sidecar) are turned into JSON
//! lines and decoded like a commit, so both formats share one decoder.
//!
//! Bytes come through [`Storage::parquet_reader`]; the row groups of a part are fetched by
//! several readers at once and each row group is decoded as a job of [`crate::util::cpu::run`], so
//! row groups decode in parallel on the rayon pool.

use std::sync::Arc;

use arrow::compute::{cast, filter_record_batch, is_not_null, nullif};
use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray,
    StructArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Fields, Schema};
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};

use crate::actions::layout::{
    add, add_fields, finish_adds, remove_fields, FileActionBatch, PARTITION_VALUES_PARSED,
};
use crate::actions::Metadata;
use crate::error::{Error, Result};
use crate::expr::{files_may_match, Expr};
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use crate::storage::Storage;
use crate::table_config::logical_schema;
use crate::table_config::properties::column_mapping_mode;
use crate::util::cpu;

/// Top-level checkpoint columns that hold non-file actions.
const OTHER_ACTIONS: &[&str] = &[
    "protocol",
    "metaData",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
];

/// A required field of each action of [`OTHER_ACTIONS`]: NULL exactly where the action is.
const OTHER_ACTION_KEYS: &[(&str, &str)] = &[
    ("protocol", "minReaderVersion"),
    ("metaData", "id"),
    ("txn", "appId"),
    ("domainMetadata", "domain"),
    ("checkpointMetadata", "version"),
    ("sidecar", "path"),
];

/// What of a checkpoint part to read.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CheckpointProjection {
    /// Read the non-file actions too (not needed for sidecars).
    pub other_actions: bool,
    /// Keep `add.stats` (the JSON statistics); without it only `numRecords` is kept.
    pub stats: bool,
    /// Read the `add` and `remove` actions (true unless only the other actions are wanted).
    pub file_actions: bool,
    /// With `stats`, take the statistics from `add.stats_parsed` when the file has it and
    /// skip the JSON strings of `add.stats` (they are rebuilt, for the rows kept, from the
    /// struct): the cheaper read when most rows are dropped by skipping.
    pub prefer_parsed_stats: bool,
}

impl Default for CheckpointProjection {
    fn default() -> Self {
        CheckpointProjection {
            other_actions: true,
            stats: false,
            file_actions: true,
            prefer_parsed_stats: false,
        }
    }
}

/// Reads the Parquet checkpoint part (or sidecar) at `path` of `size` bytes, for `version`.
///
/// The footer is read once; the row groups are then shared among several readers that run at
/// once, each fetching only the projected column chunks of its row groups and handing each
/// row group to [`crate::util::cpu::run`] to decode.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn read_parquet_actions(
    storage: &Storage,
    path: &Path,
    size: u64,
    version: u64,
    projection: CheckpointProjection,
) -> Result<DecodedActions> {
    read_parquet_actions_skipping(storage, path, size, version, projection, None).await
}

/// [`read_parquet_actions`], skipping the file actions of row groups in which no file may
/// hold rows matching `skipping`, judged by the row group statistics of the
/// `add.stats_parsed` bounds (the other actions of those row groups are still read). The
/// live files then lack those that cannot match: the state is for a filtered listing only.
pub(crate) async fn read_parquet_actions_skipping(
    storage: &Storage,
    path: &Path,
    size: u64,
    version: u64,
    projection: CheckpointProjection,
    skipping: Option<&RowGroupSkipping>,
) -> Result<DecodedActions> {
    let file: Arc<str> = Arc::from(storage.url_of(path));
    let mut reader = storage.parquet_reader(path, Some(size));
    let metadata = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
        .await
        .map_err(|error| Error::corrupt(&*file, error))?;
    let row_groups = metadata.metadata().num_row_groups();
    let may_match = match skipping {
        Some(skipping) => skipping.row_groups_may_match(&metadata)?,
        None => vec![true; row_groups],
    };
    let has_others = row_groups_with_other_actions(&metadata);
    let mut plans: [Vec<usize>; 3] = Default::default();
    for index in 0..row_groups {
        let wanted = (
            projection.file_actions && may_match[index],
            projection.other_actions && has_others[index],
        );
        match wanted {
            (true, true) => plans[0].push(index),
            (true, false) => plans[1].push(index),
            (false, true) => plans[2].push(index),
            (false, false) => {}
        }
    }
    let source = PartSource {
        storage,
        path,
        size,
        version,
        file: file.clone(),
        metadata,
    };
    let [both, files_only, others_only] = plans;
    let projection = CheckpointProjection {
        prefer_parsed_stats: skipping.is_some(),
        ..projection
    };
    let skipping = skipping.cloned().map(Arc::new);
    let mut readers = source.decode(both, projection, skipping.clone());
    let files = CheckpointProjection {
        other_actions: false,
        ..projection
    };
    readers.extend(source.decode(files_only, files, skipping));
    let others = CheckpointProjection {
        file_actions: false,
        stats: false,
        ..projection
    };
    readers.extend(source.decode(others_only, others, None));
    let mut decoded = DecodedActions::default();
    for part in futures::future::try_join_all(readers).await? {
        merge(&mut decoded, part, &file)?;
    }
    Ok(decoded)
}

/// File skipping pushed into checkpoint reading: a filter judged against the bounds that
/// Parquet keeps per row group for the `add.stats_parsed` columns (spec "Checkpoint Schema":
/// `stats_parsed` holds `minValues` and `maxValues` typed as the table's columns).
#[derive(Debug, Clone)]
pub(crate) struct RowGroupSkipping {
    /// The filter, on logical column names.
    pub filter: Expr,
    /// The physical name (under `minValues`/`maxValues`) of each top-level column the filter
    /// names, by logical name.
    pub physical_names: Vec<(String, String)>,
}

impl RowGroupSkipping {
    /// Skipping by `filter` in a table of `metadata` (its schema and column mapping give the
    /// physical names of the statistics). Only top-level data columns are judged; partition
    /// columns and nested fields never rule a row group out.
    pub(crate) fn new(filter: Expr, metadata: &Metadata, table: &str) -> Result<RowGroupSkipping> {
        let schema = logical_schema(metadata, table)?;
        let mode = column_mapping_mode(&metadata.configuration)?;
        let mut physical_names = Vec::new();
        for path in filter.column_paths() {
            let [name] = path.as_slice() else { continue };
            let Some(field) = schema.field(name) else {
                continue;
            };
            let is_partition = metadata.partition_columns.iter().any(|p| p == name);
            let known = physical_names.iter().any(|(logical, _)| logical == name);
            if !is_partition && !known {
                physical_names.push((name.clone(), field.physical_name(mode)?.to_string()));
            }
        }
        Ok(RowGroupSkipping {
            filter,
            physical_names,
        })
    }

    /// One flag per row group: false when no file of the row group can hold a matching row.
    /// A row group without usable statistics (missing, or a file without bounds) may match.
    fn row_groups_may_match(&self, metadata: &ArrowReaderMetadata) -> Result<Vec<bool>> {
        let row_groups = metadata.metadata().row_groups().len();
        let files_without_path = leaf_null_counts(metadata, &["add", "path"]);
        let bounds = |side: &str| -> Vec<Option<ArrayRef>> {
            let bound = |physical: &String| {
                row_group_bounds(metadata, side, physical, files_without_path.as_ref())
            };
            self.physical_names
                .iter()
                .map(|(_, physical)| bound(physical))
                .collect()
        };
        let judged = self.judge(bounds("minValues"), bounds("maxValues"), None, row_groups)?;
        Ok(judged.iter().map(|flag| flag != Some(false)).collect())
    }

    /// The rows of a decoded checkpoint batch, without the `add` rows whose `stats_parsed`
    /// bounds rule the filter out (rows without bounds, and other actions, are kept).
    fn rows_that_may_match(&self, batch: &RecordBatch, file: &str) -> Result<RecordBatch> {
        let parsed = batch
            .column_by_name("add")
            .and_then(|add| add.as_struct_opt())
            .and_then(|add| add.column_by_name("stats_parsed"))
            .and_then(|stats| stats.as_struct_opt());
        let Some(parsed) = parsed else {
            return Ok(batch.clone());
        };
        let side = |name: &str| -> Vec<Option<ArrayRef>> {
            let values = parsed.column_by_name(name).and_then(|v| v.as_struct_opt());
            let leaf = |physical: &String| values?.column_by_name(physical).cloned();
            self.physical_names
                .iter()
                .map(|(_, physical)| leaf(physical))
                .collect()
        };
        let records = parsed.column_by_name("numRecords").cloned();
        let judged = self.judge(
            side("minValues"),
            side("maxValues"),
            records,
            batch.num_rows(),
        )?;
        let keep: BooleanArray = judged
            .iter()
            .map(|flag| Some(flag != Some(false)))
            .collect();
        filter_record_batch(batch, &keep).map_err(|error| Error::corrupt(file, error))
    }

    /// [`files_may_match`] on bounds given per top-level column (`None`: unknown).
    fn judge(
        &self,
        mins: Vec<Option<ArrayRef>>,
        maxes: Vec<Option<ArrayRef>>,
        num_records: Option<ArrayRef>,
        rows: usize,
    ) -> Result<BooleanArray> {
        let mut fields = Vec::new();
        let (mut min_columns, mut max_columns) = (Vec::new(), Vec::new());
        for (((logical, _), min), max) in self.physical_names.iter().zip(mins).zip(maxes) {
            let (Some(min), Some(max)) = (min, max) else {
                continue;
            };
            if min.data_type() != max.data_type() {
                continue;
            }
            fields.push(Field::new(logical, min.data_type().clone(), true));
            min_columns.push(min);
            max_columns.push(max);
        }
        if fields.is_empty() {
            return Ok(BooleanArray::from(vec![true; rows]));
        }
        let fields = Fields::from(fields);
        let struct_of = |columns| StructArray::try_new(fields.clone(), columns, None);
        let (Ok(min), Ok(max)) = (struct_of(min_columns), struct_of(max_columns)) else {
            return Ok(BooleanArray::from(vec![true; rows]));
        };
        let mut columns = vec![
            (
                crate::table_config::stats::MIN_VALUES,
                Arc::new(min) as ArrayRef,
            ),
            (
                crate::table_config::stats::MAX_VALUES,
                Arc::new(max) as ArrayRef,
            ),
        ];
        columns
            .extend(num_records.map(|records| (crate::table_config::stats::NUM_RECORDS, records)));
        let batch = RecordBatch::try_from_iter(columns)
            .map_err(|error| Error::arrow("statistics for skipping", error))?;
        files_may_match(&self.filter, &batch)
    }
}

/// The bounds of `add.stats_parsed.<side>.<column>` per row group, NULL where a row group has
/// an `add` without that bound (its files cannot be judged); `None` without such a column.
fn row_group_bounds(
    metadata: &ArrowReaderMetadata,
    side: &str,
    column: &str,
    files_without_path: Option<&UInt64Array>,
) -> Option<ArrayRef> {
    let path = ["add", "stats_parsed", side, column];
    let index = leaf_index(metadata, &path)?;
    let field = nested_field(metadata.schema().fields(), &path)?;
    let schema = metadata.parquet_schema();
    let converter = StatisticsConverter::from_column_index(index, field, schema).ok()?;
    let row_groups = metadata.metadata().row_groups();
    let bounds = match side {
        "minValues" => converter.row_group_mins(row_groups.iter()).ok()?,
        _ => converter.row_group_maxes(row_groups.iter()).ok()?,
    };
    let nulls = converter.row_group_null_counts(row_groups.iter()).ok()?;
    let unjudged: BooleanArray = nulls
        .iter()
        .zip(0..)
        .map(|(nulls, index)| {
            let without_path = files_without_path
                .and_then(|counts| counts.is_valid(index).then(|| counts.value(index)));
            Some(match (nulls, without_path) {
                (Some(nulls), Some(without_path)) => nulls > without_path,
                _ => true,
            })
        })
        .collect();
    nullif(&bounds, &unjudged).ok()
}

/// Per row group, whether it may hold an action other than `add` and `remove`: false only
/// when the Parquet null counts show that the key field of each such action (`metaData.id`,
/// `protocol.minReaderVersion`, ...) is NULL in every row. Checkpoints hold millions of file
/// actions and a handful of others; their all-NULL columns need not be decoded.
fn row_groups_with_other_actions(metadata: &ArrowReaderMetadata) -> Vec<bool> {
    let row_groups = metadata.metadata().row_groups();
    let mut has_others = vec![false; row_groups.len()];
    let has_action = |action: &str| {
        let columns = metadata.parquet_schema().columns();
        columns
            .iter()
            .any(|column| column.path().parts().first().map(String::as_str) == Some(action))
    };
    for (action, key) in OTHER_ACTION_KEYS {
        if !has_action(action) {
            continue;
        }
        let nulls = leaf_null_counts(metadata, &[action, key]);
        for (index, row_group) in row_groups.iter().enumerate() {
            let rows = u64::try_from(row_group.num_rows()).unwrap_or(u64::MAX);
            let all_null = nulls
                .as_ref()
                .is_some_and(|nulls| nulls.is_valid(index) && nulls.value(index) == rows);
            has_others[index] |= !all_null;
        }
    }
    has_others
}

/// The Parquet null counts of the leaf at `path`, per row group.
fn leaf_null_counts(metadata: &ArrowReaderMetadata, path: &[&str]) -> Option<UInt64Array> {
    let index = leaf_index(metadata, path)?;
    let field = nested_field(metadata.schema().fields(), path)?;
    let converter =
        StatisticsConverter::from_column_index(index, field, metadata.parquet_schema()).ok()?;
    let row_groups = metadata.metadata().row_groups();
    converter.row_group_null_counts(row_groups.iter()).ok()
}

fn leaf_index(metadata: &ArrowReaderMetadata, path: &[&str]) -> Option<usize> {
    metadata
        .parquet_schema()
        .columns()
        .iter()
        .position(|column| {
            column
                .path()
                .parts()
                .iter()
                .map(String::as_str)
                .eq(path.iter().copied())
        })
}

fn nested_field<'a>(fields: &'a Fields, path: &[&str]) -> Option<&'a Field> {
    let (first, rest) = path.split_first()?;
    let field = fields.iter().find(|field| field.name() == first)?;
    match (rest.is_empty(), field.data_type()) {
        (true, _) => Some(field),
        (false, DataType::Struct(children)) => nested_field(children, rest),
        _ => None,
    }
}

/// A checkpoint part whose footer has been read.
struct PartSource<'a> {
    storage: &'a Storage,
    path: &'a Path,
    size: u64,
    version: u64,
    file: Arc<str>,
    metadata: ArrowReaderMetadata,
}

impl<'a> PartSource<'a> {
    /// Readers of `row_groups` with `projection`, a share of them each, one per thread of the
    /// rayon pool at most. Each fetches its row groups one after the other and decodes each
    /// one as a job of [`cpu::run`].
    fn decode(
        &self,
        row_groups: Vec<usize>,
        projection: CheckpointProjection,
        skipping: Option<Arc<RowGroupSkipping>>,
    ) -> Vec<BoxFuture<'a, Result<DecodedActions>>> {
        let mask = projection_mask(self.metadata.parquet_schema(), projection);
        let readers = rayon::current_num_threads().clamp(1, row_groups.len().max(1));
        let per_reader = row_groups.len().div_ceil(readers).max(1);
        let version = self.version;
        let batch_size = self.storage.io().checkpoint_batch_size;
        row_groups
            .chunks(per_reader)
            .map(|chunk| {
                let chunk = chunk.to_vec();
                let reader = self.storage.parquet_reader(self.path, Some(self.size));
                let (metadata, mask) = (self.metadata.clone(), mask.clone());
                let file = self.file.clone();
                let skipping = skipping.clone();
                async move {
                    let corrupt = |error| Error::corrupt(&*file, error);
                    let mut stream =
                        ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
                            .with_projection(mask)
                            .with_row_groups(chunk)
                            .with_batch_size(batch_size)
                            .build()
                            .map_err(corrupt)?;
                    let mut decoded = DecodedActions::default();
                    while let Some(row_group) = stream.next_row_group().await.map_err(corrupt)? {
                        let (name, skipping) = (file.clone(), skipping.clone());
                        let job = move || {
                            let batches = row_group
                                .collect::<Result<Vec<RecordBatch>, _>>()
                                .map_err(|error| Error::corrupt(&*name, error))?;
                            decode_batches(
                                &batches,
                                version,
                                &name,
                                projection,
                                skipping.as_deref(),
                            )
                        };
                        let part = cpu::run(job, |reason| Error::corrupt(&*file, reason)).await?;
                        merge(&mut decoded, part, &file)?;
                    }
                    Ok(decoded)
                }
                .boxed()
            })
            .collect()
    }
}

fn decode_batches(
    batches: &[RecordBatch],
    version: u64,
    file: &str,
    projection: CheckpointProjection,
    skipping: Option<&RowGroupSkipping>,
) -> Result<DecodedActions> {
    let mut decoded = DecodedActions::default();
    for batch in batches {
        let kept;
        let batch = match skipping {
            Some(skipping) => {
                kept = skipping.rows_that_may_match(batch, file)?;
                &kept
            }
            None => batch,
        };
        if let Some(file_actions) = file_action_batch(batch, version, file, projection)? {
            decoded.file_actions.push(file_actions);
        }
        if projection.other_actions {
            merge_other_actions(&mut decoded, batch, version, file)?;
        }
    }
    Ok(decoded)
}

/// The leaves of the action columns replay needs.
fn projection_mask(
    schema: &parquet::schema::types::SchemaDescriptor,
    projection: CheckpointProjection,
) -> ProjectionMask {
    let has_parsed_records = schema
        .columns()
        .iter()
        .any(|column| column.path().parts() == ["add", "stats_parsed", "numRecords"]);
    let wanted = schema
        .columns()
        .iter()
        .enumerate()
        .filter_map(|(index, column)| {
            let parts = column.path().parts();
            let top = parts.first().map(String::as_str)?;
            let second = parts.get(1).map(String::as_str);
            let third = parts.get(2).map(String::as_str);
            if !projection.file_actions && matches!(top, "add" | "remove") {
                return None;
            }
            let keep = match (top, second) {
                ("add", Some("stats_parsed")) => projection.stats || third == Some("numRecords"),
                ("add", Some("stats")) => {
                    let parsed_instead = projection.prefer_parsed_stats && has_parsed_records;
                    (projection.stats && !parsed_instead) || !has_parsed_records
                }
                ("add", Some("partitionValues_parsed")) => true,
                ("remove", Some("stats_parsed" | "partitionValues_parsed")) => false,
                ("remove", Some("stats" | "tags")) => false,
                ("add" | "remove", _) => true,
                (other, _) => projection.other_actions && OTHER_ACTIONS.contains(&other),
            };
            keep.then_some(index)
        });
    ProjectionMask::leaves(schema, wanted)
}

/// The `add`/`remove` columns of `batch` in the normalised layout; `None` when it has neither.
fn file_action_batch(
    batch: &RecordBatch,
    version: u64,
    file: &str,
    projection: CheckpointProjection,
) -> Result<Option<FileActionBatch>> {
    let adds = batch.column_by_name("add");
    let removes = batch.column_by_name("remove");
    if adds.is_none() && removes.is_none() {
        return Ok(None);
    }
    if adds.is_none() && projection.file_actions {
        return Err(Error::corrupt(
            file,
            "it has a `remove` column but no `add` column (spec \"Checkpoint Schema\")",
        ));
    }
    let rows = batch.num_rows();
    let adds_struct = adds.and_then(|a| a.as_any().downcast_ref::<StructArray>());
    let stats_parsed = adds_struct.and_then(|a| a.column_by_name("stats_parsed"));
    let parsed_records = stats_parsed
        .and_then(|s| s.as_any().downcast_ref::<StructArray>())
        .and_then(|s| s.column_by_name("numRecords"))
        .and_then(|n| n.as_any().downcast_ref::<Int64Array>());
    let mut normalized = normalize_struct(adds, &add_fields(), rows, file)?;
    if projection.stats {
        if let Some(parsed) = stats_parsed {
            normalized = fill_missing_stats(normalized, parsed, file)?;
        }
    }
    let mut adds = finish_adds(normalized, parsed_records, projection.stats)?;
    if let Some(parsed) = adds_struct.and_then(|a| a.column_by_name(PARTITION_VALUES_PARSED)) {
        adds = with_child(adds, PARTITION_VALUES_PARSED, parsed.clone(), file)?;
    }
    Ok(Some(FileActionBatch {
        version,
        from_checkpoint: true,
        file: Arc::from(file),
        adds,
        removes: normalize_struct(removes, &remove_fields(), rows, file)?,
        may_match: None,
        stats_escaped: false,
    }))
}

/// `array` with one more child, `name`.
fn with_child(array: StructArray, name: &str, child: ArrayRef, file: &str) -> Result<StructArray> {
    let (fields, mut columns, nulls) = array.into_parts();
    let mut fields: Vec<Arc<Field>> = fields.iter().cloned().collect();
    fields.push(Arc::new(Field::new(name, child.data_type().clone(), true)));
    columns.push(child);
    StructArray::try_new(Fields::from(fields), columns, nulls)
        .map_err(|error| Error::corrupt(file, error))
}

/// Where a row has `stats_parsed` but no `stats` string (spec "Checkpoint Schema": writers
/// may write either), the JSON statistics are rebuilt from the struct, so that one decoder
/// serves both layouts.
pub(crate) fn fill_missing_stats(
    adds: StructArray,
    stats_parsed: &ArrayRef,
    file: &str,
) -> Result<StructArray> {
    let Some(parsed) = stats_parsed.as_any().downcast_ref::<StructArray>() else {
        return Ok(adds);
    };
    let Some(stats) = adds
        .column_by_name(add::STATS)
        .and_then(|s| s.as_any().downcast_ref::<StringArray>())
    else {
        return Ok(adds);
    };
    let missing = (0..adds.len()).any(|row| stats.is_null(row) && parsed.is_valid(row));
    if !missing {
        return Ok(adds);
    }
    let (fields, columns, _) = parsed.clone().into_parts();
    let nullable: Vec<Field> = fields
        .iter()
        .map(|field| field.as_ref().clone().with_nullable(true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(nullable)), columns)
        .map_err(|error| Error::corrupt(file, format!("stats_parsed: {error}")))?;
    let mut json = Vec::new();
    {
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut json);
        writer
            .write(&batch)
            .and_then(|()| writer.finish())
            .map_err(|error| Error::corrupt(file, format!("stats_parsed: {error}")))?;
    }
    let text = String::from_utf8_lossy(&json);
    let mut lines = text.lines();
    let rebuilt: StringArray = (0..adds.len())
        .map(|row| {
            let line = lines.next();
            if stats.is_valid(row) {
                Some(stats.value(row).to_string())
            } else if parsed.is_valid(row) {
                line.map(str::to_string)
            } else {
                None
            }
        })
        .collect();
    let (fields, mut columns, nulls) = adds.into_parts();
    if let Some(at) = fields.iter().position(|f| f.name() == add::STATS) {
        columns[at] = Arc::new(rebuilt);
    }
    StructArray::try_new(fields, columns, nulls).map_err(|error| Error::corrupt(file, error))
}

/// `column` (a struct, or absent) reshaped to exactly `fields`: missing children become nulls,
/// children of another but compatible type are cast, extra children are dropped.
pub(crate) fn normalize_struct(
    column: Option<&ArrayRef>,
    fields: &Fields,
    rows: usize,
    file: &str,
) -> Result<StructArray> {
    let Some(column) = column else {
        return Ok(StructArray::new_null(fields.clone(), rows));
    };
    let array = column
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::corrupt(file, "an action column is not a struct"))?;
    let children = fields
        .iter()
        .map(|field| normalize_child(array.column_by_name(field.name()), field, rows, file))
        .collect::<Result<Vec<_>>>()?;
    StructArray::try_new(fields.clone(), children, array.nulls().cloned())
        .map_err(|error| Error::corrupt(file, error))
}

pub(crate) fn normalize_child(
    child: Option<&ArrayRef>,
    field: &Field,
    rows: usize,
    file: &str,
) -> Result<ArrayRef> {
    let Some(child) = child else {
        return Ok(new_null_array(field.data_type(), rows));
    };
    if child.data_type() == field.data_type() {
        return Ok(child.clone());
    }
    match field.data_type() {
        DataType::Struct(fields) => {
            Ok(Arc::new(normalize_struct(Some(child), fields, rows, file)?))
        }
        target => cast(child, target)
            .map_err(|error| Error::corrupt(file, format!("column '{}': {error}", field.name()))),
    }
}

/// Decodes the non-file actions of `batch` by writing them as JSON lines.
fn merge_other_actions(
    decoded: &mut DecodedActions,
    batch: &RecordBatch,
    version: u64,
    file: &str,
) -> Result<()> {
    let mut lines = Vec::new();
    for name in OTHER_ACTIONS {
        let Some(column) = batch.column_by_name(name) else {
            continue;
        };
        if column.null_count() == column.len() {
            continue;
        }
        let single = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                *name,
                column.data_type().clone(),
                true,
            )])),
            vec![column.clone()],
        )
        .and_then(|single| filter_record_batch(&single, &is_not_null(column)?))
        .map_err(|error| Error::corrupt(file, error))?;
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut lines);
        writer
            .write(&single)
            .and_then(|()| writer.finish())
            .map_err(|error| Error::corrupt(file, error))?;
    }
    if lines.is_empty() {
        return Ok(());
    }
    let options = DecodeOptions {
        from_checkpoint: true,
        stats: StatsText::Dropped,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    let other = decode_actions(&lines, version, file, options)?;
    merge(decoded, other, file)
}

/// Adds the non-file actions of `other` to `into`; a checkpoint holds one protocol and one
/// metaData at most.
pub(crate) fn merge(into: &mut DecodedActions, other: DecodedActions, file: &str) -> Result<()> {
    let twice = |what: &str| Error::corrupt(file, format!("more than one {what} action"));
    if other.protocol.is_some() {
        if into.protocol.is_some() {
            return Err(twice("protocol"));
        }
        into.protocol = other.protocol;
    }
    if other.metadata.is_some() {
        if into.metadata.is_some() {
            return Err(twice("metaData"));
        }
        into.metadata = other.metadata;
    }
    if other.checkpoint_metadata.is_some() {
        into.checkpoint_metadata = other.checkpoint_metadata;
    }
    into.txns.extend(other.txns);
    into.domains.extend(other.domains);
    into.sidecars.extend(other.sidecars);
    into.file_actions.extend(other.file_actions);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BooleanArray, Int64Array};
    use arrow_schema::DataType;

    /// A checkpoint may carry `stats_parsed` without `stats`, with null rows (removes,
    /// metadata); the JSON statistics are rebuilt for the rows that have them.
    #[test]
    fn stats_are_rebuilt_from_stats_parsed_with_null_rows() {
        let parsed_fields = Fields::from(vec![Field::new("numRecords", DataType::Int64, false)]);
        let parsed = StructArray::try_new(
            parsed_fields,
            vec![Arc::new(Int64Array::from(vec![5, 0]))],
            Some(vec![true, false].into()),
        )
        .unwrap();
        let rows = 2;
        let adds = normalize_struct(None, &add_fields(), rows, "cp").unwrap();
        let (fields, columns, _) = adds.into_parts();
        let adds = StructArray::try_new(
            fields,
            columns,
            Some(
                BooleanArray::from(vec![true, false])
                    .values()
                    .clone()
                    .into(),
            ),
        )
        .unwrap();
        let filled = fill_missing_stats(adds, &(Arc::new(parsed) as ArrayRef), "cp").unwrap();
        let stats = filled.column_by_name(add::STATS).unwrap();
        let stats = stats.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(stats.value(0), r#"{"numRecords":5}"#);
        assert!(stats.is_null(1));
    }
}
