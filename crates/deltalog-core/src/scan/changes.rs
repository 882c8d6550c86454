//! The change data feed: the row-level changes of a range of commits, as Arrow (spec "Change
//! Data Files", "Add CDC File", "Reader Requirements for AddCDCFile"; catalogue B-C, E3, G-20),
//! with the semantics of Delta on Spark's `readChangeFeed`.
//!
//! For each commit of the range:
//! - when it has `cdc` actions, the rows of its change data files, and nothing else: their
//!   `_change_type` column is in the files (`insert`, `delete`, `update_preimage`,
//!   `update_postimage`; catalogue E3-03, E3-05);
//! - otherwise the rows of every `add` with `dataChange` true are `insert` rows and the rows of
//!   every `remove` with `dataChange` true are `delete` rows: the removed file is read (it stays
//!   in storage until vacuum) without the rows the remove's deletion vector marks, which were
//!   deleted earlier. A file removed with one deletion vector and added back with another (a
//!   deletion vector update) changes only the rows the two vectors disagree on: rows only the
//!   new vector marks are `delete` rows, rows only the old one marks are `insert` rows (a
//!   restore);
//! - `add` and `remove` actions with `dataChange` false (OPTIMIZE, ...) change no rows.
//!
//! Every row also has `_commit_version` (long) and `_commit_timestamp` (timestamp[µs, UTC]): the
//! commit's in-commit timestamp when its `commitInfo` has one, else the modification time of its
//! commit file made monotonic (see [`crate::log::timestamps`]; catalogue E3-06).
//!
//! Rows have the schema of the last version of the range; files written under an older schema
//! read missing columns as nulls and narrower types widened. The range is refused when the
//! metadata in force at one of its commits does not set `delta.enableChangeDataFeed` to `true`,
//! or when its schema cannot be read as the last one (a column dropped, renamed or retyped,
//! other partition columns).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int64Array, RecordBatch, RecordBatchOptions, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{Field, Schema, SchemaRef};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use percent_encoding::percent_decode_str;
use roaring::RoaringTreemap;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::actions::partition::{partition_values_to_arrow, SessionTimeZone};
use crate::actions::{CommitInfo, DeletionVectorDescriptor, Metadata, Protocol};
use crate::error::{Error, Result};
use crate::expr::{evaluate, partition_only, Expr};
use crate::log::commit_range::{CommitFile, CommitRange};
use crate::log::decode::commit::{action_lines, commit_info, ActionLine};
use crate::scan::{FileSetScan, FileToRead, ScanOptions};
use crate::schema::{
    ColumnMappingMode, DataType, PrimitiveType, StructField, StructType,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::{IoConfig, Storage};
use crate::table_config::features::ensure_readable;
use crate::table_config::properties::{parse_bool, ENABLE_CHANGE_DATA_FEED};
use crate::table_config::TableConfiguration;
use crate::util::cpu;

/// The column holding the kind of change of a row (catalogue E3-03).
pub(crate) const CHANGE_TYPE_COLUMN: &str = "_change_type";
/// The column holding the version of the commit that made the change (catalogue E3-06).
pub(crate) const COMMIT_VERSION_COLUMN: &str = "_commit_version";
/// The column holding the timestamp of the commit that made the change (catalogue E3-06).
pub(crate) const COMMIT_TIMESTAMP_COLUMN: &str = "_commit_timestamp";

/// The kind of change of a row, as its `_change_type` value says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ChangeType {
    Insert,
    Delete,
    /// The row before an update.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "only change data files hold updates; they are read as text"
        )
    )]
    UpdatePreimage,
    /// The row after an update.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "only change data files hold updates; they are read as text"
        )
    )]
    UpdatePostimage,
}

impl ChangeType {
    /// The `_change_type` value: `insert`, `delete`, `update_preimage` or `update_postimage`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeType::Insert => "insert",
            ChangeType::Delete => "delete",
            ChangeType::UpdatePreimage => "update_preimage",
            ChangeType::UpdatePostimage => "update_postimage",
        }
    }
}

/// What a change data feed read returns.
#[derive(Debug, Clone, Default)]
pub struct ChangesOptions {
    /// Columns to return, in this order: table columns (matched as
    /// [`crate::scan::ScanOptions::columns`] does) and the change columns `_change_type`,
    /// `_commit_version`, `_commit_timestamp`. `None`: every table column in table order, then
    /// the three change columns.
    pub columns: Option<Vec<String>>,
    /// Only rows for which this is true (SQL semantics, see `crate::expr::evaluate`). It may
    /// name any table column and the change columns, returned or not.
    pub filter: Option<Expr>,
    /// The zone in which zone-less `timestamp` partition values are read (default UTC).
    pub timezone: SessionTimeZone,
}

/// A planned read of the changes of a range of commits. Cheap to clone; every
/// [`ChangeScan::stream`] reads afresh.
#[derive(Debug, Clone)]
pub struct ChangeScan {
    inner: Arc<ChangeScanInner>,
}

#[derive(Debug)]
struct ChangeScanInner {
    start: u64,
    end: u64,
    schema: SchemaRef,
    reads: Vec<PlannedRead>,
}

/// One file to read, with the reader that knows its columns.
#[derive(Debug, Clone)]
struct PlannedRead {
    scan: FileSetScan,
    file: FileToRead,
}

impl ChangeScan {
    /// Plans reading the changes of the commits `start..=end` of `table` (`end` `None`: up to
    /// the latest version): reads those commits, checks the range and the options, loads the
    /// deletion vectors of deletion vector updates and lists the files to read (skipping those
    /// whose partition values, change type or commit make `options.filter` false).
    ///
    /// Errors:
    /// - `start` after `end`, an unknown or repeated column, a filter naming an unknown column
    ///   or comparing a column with a value of another kind: [`Error::InvalidArgument`];
    /// - a version after the latest one, or a commit file of the range that is not in the log
    ///   (cleaned up): [`Error::VersionNotFound`];
    /// - the change data feed off at some version of the range (the metadata of `start`, or a
    ///   `metaData` action of a later commit, without `delta.enableChangeDataFeed` = `true`), a
    ///   schema in the range that cannot be read as the schema of `end`, or a table column
    ///   named like a change column: [`Error::NotAllowed`], naming the versions.
    pub async fn new(
        storage: &Storage,
        start: u64,
        end: Option<u64>,
        options: ChangesOptions,
    ) -> Result<ChangeScan> {
        let commits = read_commits(storage, start, end).await?;
        let end = commits.last().map_or(start, |commit| commit.version);
        let layout = check_range(storage, start, end, &commits).await?;
        let planner = Planner::new(storage, &layout, &options)?;
        let reads = planner.plan(&commits).await?;
        Ok(ChangeScan {
            inner: Arc::new(ChangeScanInner {
                start,
                end,
                schema: planner.data.scan.schema(),
                reads,
            }),
        })
    }

    /// The schema of the batches: the requested columns (logical names, the Arrow types of
    /// `crate::schema::to_arrow_schema` for the schema of the last version), by default every
    /// table column then `_change_type` (utf8), `_commit_version` (int64) and
    /// `_commit_timestamp` (timestamp[µs, UTC]), the three not null.
    pub fn schema(&self) -> SchemaRef {
        self.inner.schema.clone()
    }

    /// The first version of the range.
    pub fn start_version(&self) -> u64 {
        self.inner.start
    }

    /// The last version of the range (the latest version when none was given).
    pub fn end_version(&self) -> u64 {
        self.inner.end
    }

    /// The number of data files (or pieces of files) the stream reads.
    pub fn num_files(&self) -> usize {
        self.inner.reads.len()
    }

    /// The change rows, read lazily, a few files at once (see [`crate::scan::Scan::stream`]):
    /// commit after commit in version order, within a commit file after file in the order of
    /// its actions. Batches are never empty.
    pub fn stream(&self) -> BoxStream<'static, Result<RecordBatch>> {
        let schema = self.inner.schema.clone();
        stream::iter(self.inner.reads.clone())
            .map(|read| async move { read.scan.read(read.file) })
            .buffered(IoConfig::DEFAULT.scan_files)
            .flatten()
            .map(move |batch| with_schema(batch?, &schema))
            .boxed()
    }

    /// Every batch of [`ChangeScan::stream`], in memory.
    pub async fn to_batches(&self) -> Result<Vec<RecordBatch>> {
        self.stream().try_collect().await
    }
}

/// The changes of the commits `start..=end` of `table` (`end` `None`: up to the latest
/// version): the schema and the rows of [`ChangeScan`].
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn changes(
    storage: &Storage,
    start: u64,
    end: Option<u64>,
    options: ChangesOptions,
) -> Result<(SchemaRef, BoxStream<'static, Result<RecordBatch>>)> {
    let scan = ChangeScan::new(storage, start, end, options).await?;
    Ok((scan.schema(), scan.stream()))
}

/// True when `metadata` turns the change data feed on (`delta.enableChangeDataFeed` is `true`,
/// in any case, as Spark parses booleans).
pub(crate) fn change_data_feed_enabled(metadata: &Metadata) -> bool {
    metadata
        .configuration
        .get(ENABLE_CHANGE_DATA_FEED)
        .and_then(|value| parse_bool(value))
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// Reading the commits

/// What a commit of the range says about changes.
#[derive(Debug, Default)]
struct DecodedCommit {
    version: u64,
    timestamp_ms: i64,
    metadata: Option<Metadata>,
    protocol: Option<Protocol>,
    /// `add`, `remove` and `cdc` actions, in log order.
    files: Vec<(FileActionKind, LoggedFile)>,
    /// A MERGE whose metrics say it changed no row (see [`changes_no_row`]).
    changes_no_row: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileActionKind {
    Add,
    Remove,
    Cdc,
}

/// The fields of an `add`, `remove` or `cdc` action that changes need.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoggedFile {
    path: String,
    #[serde(default)]
    partition_values: Option<HashMap<String, Option<String>>>,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default = "data_change_default")]
    data_change: bool,
    #[serde(default)]
    deletion_vector: Option<DeletionVectorDescriptor>,
}

fn data_change_default() -> bool {
    true
}

impl LoggedFile {
    /// The path with its URL escapes decoded.
    fn decoded_path(&self) -> String {
        percent_decode_str(&self.path)
            .decode_utf8_lossy()
            .into_owned()
    }
}

/// Lists, reads and decodes the commits `start..=end`, checking that every one is there.
async fn read_commits(
    storage: &Storage,
    start: u64,
    end: Option<u64>,
) -> Result<Vec<DecodedCommit>> {
    if let Some(end) = end.filter(|end| start > *end) {
        return Err(Error::InvalidArgument(format!(
            "the changes cannot start at version {start}, after their end version {end}"
        )));
    }

    let range = CommitRange::list(storage, start, end).await?;
    let files = range.read_all(storage).await?;
    let decode = move || files.iter().map(decode_commit).collect();
    let log = storage.url_of(storage.log_dir());
    cpu::run(decode, |reason| Error::corrupt(log, reason)).await
}

/// The actions of one commit file that matter to changes, with its commit timestamp (see
/// [`crate::log::timestamps`]).
fn decode_commit(commit: &CommitFile) -> Result<DecodedCommit> {
    let file = commit.name.as_str();
    let mut decoded = DecodedCommit {
        version: commit.version,
        ..DecodedCommit::default()
    };
    let mut info: Option<CommitInfo> = None;
    for (index, line) in action_lines(&commit.bytes, file) {
        let line = line?;
        let corrupt =
            |error: serde_json::Error| Error::corrupt(file, format!("line {}: {error}", index + 1));
        match line.name {
            "add" => decoded
                .files
                .push((FileActionKind::Add, action(line).map_err(corrupt)?)),
            "remove" => decoded
                .files
                .push((FileActionKind::Remove, action(line).map_err(corrupt)?)),
            "cdc" => decoded
                .files
                .push((FileActionKind::Cdc, action(line).map_err(corrupt)?)),
            "metaData" => decoded.metadata = Some(action(line).map_err(corrupt)?),
            "protocol" => decoded.protocol = Some(action(line).map_err(corrupt)?),
            "commitInfo" if info.is_none() => info = Some(commit_info(line).map_err(corrupt)?),
            _ => {}
        }
    }
    decoded.timestamp_ms = commit.timestamp_ms(info.as_ref());
    decoded.changes_no_row = info.as_ref().is_some_and(changes_no_row);
    Ok(decoded)
}

/// True for a MERGE whose `operationMetrics` say it inserted, updated and deleted no row:
/// Delta on Spark may still rewrite the files it read (`dataChange` true, no `cdc`), and its
/// change feed takes no rows from such a commit's adds and removes
/// (`CDCReader.shouldSkipFileActionsInCommit`). A metric missing means no such promise.
fn changes_no_row(info: &CommitInfo) -> bool {
    let metrics = info
        .raw
        .get("operationMetrics")
        .and_then(serde_json::Value::as_object);
    let is_zero = |name: &str| {
        metrics
            .and_then(|metrics| metrics.get(name))
            .and_then(serde_json::Value::as_str)
            == Some("0")
    };
    info.operation() == Some("MERGE")
        && [
            "numTargetRowsInserted",
            "numTargetRowsUpdated",
            "numTargetRowsDeleted",
        ]
        .into_iter()
        .all(is_zero)
}

/// The value of the single action in `line`.
fn action<T: DeserializeOwned>(line: ActionLine<'_>) -> serde_json::Result<T> {
    let mut object: HashMap<String, T> = serde_json::from_slice(line.json)?;
    object
        .remove(line.name)
        .ok_or_else(|| serde::de::Error::custom(format!("no '{}' key", line.name)))
}

// ---------------------------------------------------------------------------------------------
// Checking the range

/// Checks the metadata and protocol in force at every commit of the range: readable protocols,
/// the change data feed on, schemas readable as the last one. Returns the configuration rows
/// are read with: the last metadata of the range, with the protocol in force at its end.
async fn check_range(
    storage: &Storage,
    start: u64,
    end: u64,
    commits: &[DecodedCommit],
) -> Result<TableConfiguration> {
    let first = commits.iter().find(|commit| commit.version == start);
    let (start_metadata, start_protocol) = match first.map(|c| (&c.metadata, &c.protocol)) {
        Some((Some(metadata), Some(protocol))) => (metadata.clone(), protocol.clone()),
        _ => {
            let snapshot = Snapshot::load(storage, SnapshotAt::Version(start)).await?;
            (snapshot.metadata().clone(), snapshot.protocol().clone())
        }
    };
    ensure_readable(&start_protocol, storage.uri())?;
    // Each metadata of the range with the protocol in force where it took effect.
    let mut metadata_versions: Vec<(u64, &Metadata, &Protocol)> =
        vec![(start, &start_metadata, &start_protocol)];
    let mut protocol_in_force = &start_protocol;
    for commit in commits.iter().filter(|commit| commit.version > start) {
        if let Some(protocol) = &commit.protocol {
            ensure_readable(protocol, storage.uri())?;
            protocol_in_force = protocol;
        }
        if let Some(metadata) = &commit.metadata {
            metadata_versions.push((commit.version, metadata, protocol_in_force));
        }
    }
    for (version, metadata, _) in &metadata_versions {
        if !change_data_feed_enabled(metadata) {
            return Err(Error::NotAllowed(format!(
                "change data feed was not enabled at version {version} of {} \
                 ({ENABLE_CHANGE_DATA_FEED} is not `true` in the metadata in force there), \
                 so the changes of versions {start} to {end} cannot be read",
                storage.uri()
            )));
        }
    }
    let (end_version, end_metadata, _) =
        metadata_versions
            .last()
            .copied()
            .unwrap_or((start, &start_metadata, &start_protocol));
    let layout = read_layout(storage, end_version, end_metadata, protocol_in_force)?;
    for (version, metadata, protocol) in &metadata_versions {
        let older = read_layout(storage, *version, metadata, protocol)?;
        if let Some(reason) = read_incompatibility(&older, &layout) {
            return Err(Error::NotAllowed(format!(
                "the changes of versions {start} to {end} of {} cannot be read with the schema \
                 of version {end}: at version {version}, {reason}",
                storage.uri()
            )));
        }
    }
    Ok(layout)
}

/// The configuration of `metadata` and `protocol`, in force at `version`.
fn read_layout(
    storage: &Storage,
    version: u64,
    metadata: &Metadata,
    protocol: &Protocol,
) -> Result<TableConfiguration> {
    TableConfiguration::try_new_at_version(
        protocol.clone(),
        metadata.clone(),
        storage.uri(),
        version,
    )
}

/// Why rows written under `old` cannot be read as rows of `new`, or `None` when they can: the
/// partition columns must be the same, and every column of `old` must be in `new` (matched by
/// physical name, case-insensitively without column mapping) under the same name, with a type
/// the reader can widen to the new one, and not newly declared NOT NULL. Columns only `new`
/// has are read as nulls.
fn read_incompatibility(old: &TableConfiguration, new: &TableConfiguration) -> Option<String> {
    let (old_partitions, new_partitions) = (old.partition_columns(), new.partition_columns());
    let same_partitions = old_partitions.len() == new_partitions.len()
        && old_partitions
            .iter()
            .zip(new_partitions)
            .all(|(a, b)| a.eq_ignore_ascii_case(b));
    if !same_partitions {
        return Some(format!(
            "the partition columns were [{}], not [{}]",
            old_partitions.join(", "),
            new_partitions.join(", ")
        ));
    }
    let modes = (old.column_mapping(), new.column_mapping());
    fields_incompatibility(&old.schema().fields, &new.schema().fields, modes, "")
}

fn fields_incompatibility(
    old: &[StructField],
    new: &[StructField],
    modes: (ColumnMappingMode, ColumnMappingMode),
    prefix: &str,
) -> Option<String> {
    old.iter().find_map(|old_field| {
        let path = format!("{prefix}{}", old_field.name);
        let Some(new_field) = matching_field(old_field, new, modes) else {
            return Some(format!(
                "the table had a column `{path}` that the read schema lacks (dropped or renamed)"
            ));
        };
        if !new_field.name.eq_ignore_ascii_case(&old_field.name) {
            return Some(format!(
                "column `{path}` was later renamed to `{}`",
                new_field.name
            ));
        }
        if old_field.nullable && !new_field.nullable {
            return Some(format!(
                "column `{path}` could hold nulls, but the read schema declares it NOT NULL"
            ));
        }
        type_incompatibility(&old_field.data_type, &new_field.data_type, modes, &path)
    })
}

/// The field of `new` that holds the column `old_field`: same physical name, else (both
/// without column mapping) the same name in another case.
fn matching_field<'a>(
    old_field: &StructField,
    new: &'a [StructField],
    (old_mode, new_mode): (ColumnMappingMode, ColumnMappingMode),
) -> Option<&'a StructField> {
    let old_name = old_field.physical_name(old_mode).ok()?;
    let new_name = |field: &StructField| field.physical_name(new_mode).ok().map(str::to_string);
    let exact = new
        .iter()
        .find(|field| new_name(field).as_deref() == Some(old_name));
    let no_mapping = old_mode == ColumnMappingMode::None && new_mode == ColumnMappingMode::None;
    exact.or_else(|| {
        no_mapping
            .then(|| {
                new.iter()
                    .find(|field| field.name.eq_ignore_ascii_case(old_name))
            })
            .flatten()
    })
}

fn type_incompatibility(
    old: &DataType,
    new: &DataType,
    modes: (ColumnMappingMode, ColumnMappingMode),
    path: &str,
) -> Option<String> {
    match (old, new) {
        (DataType::Struct(old), DataType::Struct(new)) => {
            fields_incompatibility(&old.fields, &new.fields, modes, &format!("{path}."))
        }
        (DataType::Array(old), DataType::Array(new)) => {
            if old.contains_null && !new.contains_null {
                return Some(format!(
                    "the elements of column `{path}` could be null, but the read schema says \
                     they cannot"
                ));
            }
            let element = format!("{path}.element");
            type_incompatibility(&old.element_type, &new.element_type, modes, &element)
        }
        (DataType::Map(old), DataType::Map(new)) => {
            if old.value_contains_null && !new.value_contains_null {
                return Some(format!(
                    "the values of column `{path}` could be null, but the read schema says they \
                     cannot"
                ));
            }
            let (key, value) = (format!("{path}.key"), format!("{path}.value"));
            type_incompatibility(&old.key_type, &new.key_type, modes, &key)
                .or_else(|| type_incompatibility(&old.value_type, &new.value_type, modes, &value))
        }
        (DataType::Primitive(from), DataType::Primitive(to)) if from.widens_to(*to) => None,
        _ => Some(format!(
            "column `{path}` had type {old}, which cannot be read as {new}"
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// Planning the reads

/// What one file action of a commit contributes.
#[derive(Debug)]
enum PlannedChange<'c> {
    /// A change data file: its rows carry their `_change_type`.
    ChangeFile(&'c LoggedFile),
    /// Every row of the file its deletion vector keeps has this change type.
    WholeFile(&'c LoggedFile, ChangeType),
    /// The file removed with one deletion vector and added back with another.
    DeletionVectorUpdate {
        removed: &'c LoggedFile,
        added: &'c LoggedFile,
    },
}

/// The changes of `commit`, in the order of its actions: its cdc files when it has any, else
/// its data-changing adds and removes, a remove and an add of the same path making one
/// deletion vector update (at the place of the add); nothing for a MERGE that changed no row
/// ([`changes_no_row`]).
fn planned_changes(commit: &DecodedCommit) -> Vec<PlannedChange<'_>> {
    let of_kind = |kind: FileActionKind| {
        commit
            .files
            .iter()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, file)| file)
    };
    let change_files: Vec<PlannedChange<'_>> = of_kind(FileActionKind::Cdc)
        .map(PlannedChange::ChangeFile)
        .collect();
    if !change_files.is_empty() || commit.changes_no_row {
        return change_files;
    }
    let removed: HashMap<String, &LoggedFile> = of_kind(FileActionKind::Remove)
        .filter(|file| file.data_change)
        .map(|file| (file.decoded_path(), file))
        .collect();
    let added: HashSet<String> = of_kind(FileActionKind::Add)
        .filter(|file| file.data_change)
        .map(LoggedFile::decoded_path)
        .collect();
    commit
        .files
        .iter()
        .filter(|(_, file)| file.data_change)
        .filter_map(|(kind, file)| {
            let path = file.decoded_path();
            match kind {
                FileActionKind::Remove if added.contains(&path) => None,
                FileActionKind::Remove => Some(PlannedChange::WholeFile(file, ChangeType::Delete)),
                FileActionKind::Add => Some(match removed.get(&path) {
                    Some(removed) => PlannedChange::DeletionVectorUpdate {
                        removed,
                        added: file,
                    },
                    None => PlannedChange::WholeFile(file, ChangeType::Insert),
                }),
                FileActionKind::Cdc => None,
            }
        })
        .collect()
}

/// The version and timestamp of a commit.
#[derive(Debug, Clone, Copy)]
struct CommitStamp {
    version: u64,
    timestamp_ms: i64,
}

/// A change being planned: a read (or `None` when the filter skips it), or a deletion vector
/// update whose vectors are still to be loaded.
#[derive(Debug)]
enum Pending {
    Ready(Option<PlannedRead>),
    DeletionVectorUpdate {
        stamp: CommitStamp,
        /// The vector of the remove.
        removed: Option<DeletionVectorDescriptor>,
        /// The add, with its vector.
        added: LoggedFile,
    },
}

/// A partition column of the read layout.
#[derive(Debug)]
struct PartitionColumn {
    name: String,
    /// The key of the column in `partitionValues`.
    key: String,
    primitive: PrimitiveType,
}

/// One of the two ways files are read: data files (`_change_type` a constant) and change data
/// files (`_change_type` read from the file).
#[derive(Debug)]
struct FileKind {
    scan: FileSetScan,
    /// The names of the constant columns, in the order of [`FileToRead::constants`].
    constants: Vec<String>,
    /// The part of the filter that only needs the constant columns.
    skip: Option<Expr>,
}

impl FileKind {
    /// The constant columns: the partition columns, `_change_type` unless it is in the files,
    /// `_commit_version` and `_commit_timestamp`.
    fn constant_names(partition_names: &[String], change_type_in_file: bool) -> Vec<String> {
        let mut names = partition_names.to_vec();
        if !change_type_in_file {
            names.push(CHANGE_TYPE_COLUMN.to_string());
        }
        names.push(COMMIT_VERSION_COLUMN.to_string());
        names.push(COMMIT_TIMESTAMP_COLUMN.to_string());
        names
    }

    /// The reader of rows of the table columns of `layout` and the change columns.
    fn new(
        storage: &Storage,
        layout: &TableConfiguration,
        constants: Vec<String>,
        change_type_in_file: bool,
        options: &ScanOptions,
    ) -> Result<FileKind> {
        let mut change_type = StructField::new(CHANGE_TYPE_COLUMN, PrimitiveType::String, false);
        if change_type_in_file {
            let physical_name = [(COLUMN_MAPPING_PHYSICAL_NAME_KEY, CHANGE_TYPE_COLUMN)];
            change_type = change_type.with_metadata(physical_name);
        }
        let mut fields = layout.schema().fields.clone();
        fields.push(change_type);
        fields.push(StructField::new(
            COMMIT_VERSION_COLUMN,
            PrimitiveType::Long,
            false,
        ));
        fields.push(StructField::new(
            COMMIT_TIMESTAMP_COLUMN,
            PrimitiveType::Timestamp,
            false,
        ));
        let names: Vec<&str> = constants.iter().map(String::as_str).collect();
        let scan = FileSetScan::new(
            storage,
            &StructType::new(fields),
            &names,
            layout.column_mapping(),
            options,
        )?;
        let skip = options
            .filter
            .as_ref()
            .and_then(|filter| partition_only(filter, &constants));
        Ok(FileKind {
            scan,
            constants,
            skip,
        })
    }
}

/// Refuses a table with a column named like a change column (any case).
fn refuse_change_column_names(table: &str, schema: &StructType) -> Result<()> {
    let reserved = [
        CHANGE_TYPE_COLUMN,
        COMMIT_VERSION_COLUMN,
        COMMIT_TIMESTAMP_COLUMN,
    ];
    let clash = schema
        .fields
        .iter()
        .find(|field| reserved.iter().any(|r| field.name.eq_ignore_ascii_case(r)));
    match clash {
        Some(field) => Err(Error::NotAllowed(format!(
            "the changes of {table} cannot be read: its column `{}` has the name of a change \
             data feed column",
            field.name
        ))),
        None => Ok(()),
    }
}

/// The partition columns of `layout`, with their `partitionValues` keys.
fn partition_columns(table: &str, layout: &TableConfiguration) -> Result<Vec<PartitionColumn>> {
    let partition_schema = layout
        .schema()
        .partition_schema(layout.partition_columns())
        .map_err(|error| Error::invalid_table(table, error))?;
    partition_schema
        .fields
        .iter()
        .map(|field| {
            let primitive = field.data_type.as_primitive().copied().ok_or_else(|| {
                Error::invalid_table(
                    table,
                    format!(
                        "partition column `{}` is not of a primitive type",
                        field.name
                    ),
                )
            })?;
            Ok(PartitionColumn {
                name: field.name.clone(),
                key: field.physical_name(layout.column_mapping())?.to_string(),
                primitive,
            })
        })
        .collect()
}

/// Turns the actions of the range into files to read.
#[derive(Debug)]
struct Planner {
    storage: Storage,
    timezone: SessionTimeZone,
    partitions: Vec<PartitionColumn>,
    data: FileKind,
    change_files: FileKind,
}

impl Planner {
    fn new(
        storage: &Storage,
        layout: &TableConfiguration,
        options: &ChangesOptions,
    ) -> Result<Planner> {
        refuse_change_column_names(storage.uri(), layout.schema())?;
        let partitions = partition_columns(storage.uri(), layout)?;
        let scan_options = ScanOptions {
            columns: options.columns.clone(),
            timezone: options.timezone.clone(),
            row_tracking: false,
            filter: options.filter.clone(),
            ..ScanOptions::default()
        };
        let partition_names: Vec<String> = partitions.iter().map(|p| p.name.clone()).collect();
        let kind = |change_type_in_file| {
            let constants = FileKind::constant_names(&partition_names, change_type_in_file);
            FileKind::new(
                storage,
                layout,
                constants,
                change_type_in_file,
                &scan_options,
            )
        };
        Ok(Planner {
            storage: storage.clone(),
            timezone: options.timezone.clone(),
            partitions,
            data: kind(false)?,
            change_files: kind(true)?,
        })
    }

    /// The files to read for `commits`, in order. Deletion vector updates load their two
    /// vectors, several at once.
    async fn plan(&self, commits: &[DecodedCommit]) -> Result<Vec<PlannedRead>> {
        let mut pending = Vec::new();
        for commit in commits {
            let stamp = CommitStamp {
                version: commit.version,
                timestamp_ms: commit.timestamp_ms,
            };
            for change in planned_changes(commit) {
                pending.push(match change {
                    PlannedChange::ChangeFile(file) => {
                        Pending::Ready(self.read(&self.change_files, stamp, file, None, None)?)
                    }
                    PlannedChange::WholeFile(file, change_type) => Pending::Ready(self.read(
                        &self.data,
                        stamp,
                        file,
                        Some(change_type),
                        None,
                    )?),
                    PlannedChange::DeletionVectorUpdate { removed, added } => {
                        Pending::DeletionVectorUpdate {
                            stamp,
                            removed: removed.deletion_vector.clone(),
                            added: added.clone(),
                        }
                    }
                });
            }
        }
        let reads: Vec<Vec<PlannedRead>> = stream::iter(pending)
            .map(|pending| self.resolve(pending))
            .buffered(self.storage.io().deletion_vectors.max(1))
            .try_collect()
            .await?;
        Ok(reads.into_iter().flatten().collect())
    }

    /// The reads of a pending change. Of a deletion vector update: the rows only the added
    /// vector marks are deleted, the rows only the removed one marks come back.
    async fn resolve(&self, pending: Pending) -> Result<Vec<PlannedRead>> {
        let (stamp, removed, added) = match pending {
            Pending::Ready(read) => return Ok(read.into_iter().collect()),
            Pending::DeletionVectorUpdate {
                stamp,
                removed,
                added,
            } => (stamp, removed, added),
        };
        let before = self.load_deletion_vector(removed.as_ref()).await?;
        let after = self
            .load_deletion_vector(added.deletion_vector.as_ref())
            .await?;
        let file = LoggedFile {
            deletion_vector: None,
            ..added
        };
        let mut reads = Vec::new();
        for (change_type, rows) in [
            (ChangeType::Delete, &after - &before),
            (ChangeType::Insert, &before - &after),
        ] {
            if !rows.is_empty() {
                let selection = Some(Arc::new(rows));
                reads.extend(self.read(&self.data, stamp, &file, Some(change_type), selection)?);
            }
        }
        Ok(reads)
    }

    async fn load_deletion_vector(
        &self,
        descriptor: Option<&DeletionVectorDescriptor>,
    ) -> Result<RoaringTreemap> {
        let Some(descriptor) = descriptor else {
            return Ok(RoaringTreemap::new());
        };
        crate::scan::load_deletion_vector(&self.storage, descriptor).await
    }

    /// The read of `file` for the commit `stamp`, or `None` when its constant columns make the filter
    /// false.
    fn read(
        &self,
        kind: &FileKind,
        stamp: CommitStamp,
        file: &LoggedFile,
        change_type: Option<ChangeType>,
        selected_rows: Option<Arc<RoaringTreemap>>,
    ) -> Result<Option<PlannedRead>> {
        let mut constants = self.partition_values(file)?;
        if let Some(change_type) = change_type {
            constants.push(Arc::new(StringArray::from(vec![change_type.as_str()])));
        }
        let version = i64::try_from(stamp.version).unwrap_or(i64::MAX);
        constants.push(Arc::new(Int64Array::from(vec![version])));
        let micros = stamp.timestamp_ms.saturating_mul(1000);
        constants.push(Arc::new(
            TimestampMicrosecondArray::from(vec![micros]).with_timezone("UTC"),
        ));
        if let Some(skip) = &kind.skip {
            if !constants_match(skip, &kind.constants, &constants)? {
                return Ok(None);
            }
        }
        Ok(Some(PlannedRead {
            scan: kind.scan.clone(),
            file: FileToRead {
                path: file.decoded_path(),
                size: file.size.and_then(|size| u64::try_from(size).ok()),
                constants,
                deletion_vector: file.deletion_vector.clone(),
                selected_rows,
            },
        }))
    }

    /// The typed partition values of `file`, one single-row array per partition column.
    fn partition_values(&self, file: &LoggedFile) -> Result<Vec<ArrayRef>> {
        self.partitions
            .iter()
            .map(|column| {
                let value = file
                    .partition_values
                    .as_ref()
                    .and_then(|values| values.get(&column.key))
                    .and_then(Option::as_deref);
                partition_values_to_arrow(&[value], &column.primitive, &column.name, &self.timezone)
            })
            .collect()
    }
}

/// True when `filter` (naming only constant columns) holds for a file's constants.
fn constants_match(filter: &Expr, names: &[String], constants: &[ArrayRef]) -> Result<bool> {
    let fields: Vec<Field> = names
        .iter()
        .zip(constants)
        .map(|(name, array)| Field::new(name, array.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), constants.to_vec())
        .map_err(|error| Error::arrow("evaluating the filter on a file's constants", error))?;
    let mask = evaluate(filter, &batch)?;
    Ok((0..mask.len()).any(|row| mask.value(row)))
}

/// `batch` labelled with the scan's schema (change data files carry a column mapping
/// annotation on `_change_type` that the output does not show).
fn with_schema(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema_ref() == schema {
        return Ok(batch);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), batch.columns().to_vec(), &options)
        .map_err(|error| Error::arrow("labelling the change rows", error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Table;

    fn layout(fields: Vec<StructField>, partitions: &[&str], mode: &str) -> TableConfiguration {
        let schema = StructType::new(fields);
        let configuration = HashMap::from([
            ("delta.columnMapping.mode".to_string(), mode.to_string()),
            (ENABLE_CHANGE_DATA_FEED.to_string(), "true".to_string()),
        ]);
        let metadata = Metadata {
            id: "t".into(),
            name: None,
            description: None,
            format: Default::default(),
            schema_string: Some(schema.to_json().unwrap()),
            partition_columns: partitions.iter().map(|p| p.to_string()).collect(),
            created_time: None,
            configuration,
        };
        let protocol = Protocol {
            min_reader_version: 2,
            min_writer_version: 5,
            reader_features: None,
            writer_features: None,
        };
        TableConfiguration::try_new(protocol, metadata, "t").unwrap()
    }

    fn column(name: &str, primitive: PrimitiveType) -> StructField {
        StructField::new(name, primitive, true)
    }

    fn mapped(name: &str, physical: &str) -> StructField {
        column(name, PrimitiveType::Long)
            .with_metadata([(COLUMN_MAPPING_PHYSICAL_NAME_KEY, physical)])
    }

    #[test]
    fn added_columns_and_widened_types_are_readable() {
        let old = layout(vec![column("a", PrimitiveType::Integer)], &[], "none");
        let new = layout(
            vec![
                column("A", PrimitiveType::Long),
                column("b", PrimitiveType::String),
            ],
            &[],
            "none",
        );
        assert_eq!(read_incompatibility(&old, &new), None);
    }

    #[test]
    fn dropped_retyped_tightened_and_repartitioned_columns_are_not() {
        let old = layout(
            vec![
                column("a", PrimitiveType::Long),
                column("b", PrimitiveType::String),
            ],
            &["b"],
            "none",
        );
        let repartitioned = layout(old.schema().fields.clone(), &["a"], "none");
        let reason = read_incompatibility(&old, &repartitioned).unwrap();
        assert!(reason.contains("partition columns"), "{reason}");
        let dropped = layout(vec![column("a", PrimitiveType::Long)], &[], "none");
        let old_unpartitioned = layout(old.schema().fields.clone(), &[], "none");
        let reason = read_incompatibility(&old_unpartitioned, &dropped).unwrap();
        assert!(reason.contains("`b`"), "{reason}");
        let retyped = layout(
            vec![
                column("a", PrimitiveType::Integer),
                column("b", PrimitiveType::String),
            ],
            &[],
            "none",
        );
        let reason = read_incompatibility(&old_unpartitioned, &retyped).unwrap();
        assert!(
            reason.contains("long") && reason.contains("integer"),
            "{reason}"
        );
        let tightened = layout(
            vec![
                StructField::new("a", PrimitiveType::Long, false),
                column("b", PrimitiveType::String),
            ],
            &[],
            "none",
        );
        let reason = read_incompatibility(&old_unpartitioned, &tightened).unwrap();
        assert!(reason.contains("NOT NULL"), "{reason}");
    }

    #[test]
    fn column_mapping_matches_physical_names_and_sees_renames() {
        let old = layout(vec![mapped("a", "col-1")], &[], "name");
        let renamed = layout(vec![mapped("z", "col-1")], &[], "name");
        let reason = read_incompatibility(&old, &renamed).unwrap();
        assert!(reason.contains("renamed to `z`"), "{reason}");
        let replaced = layout(vec![mapped("a", "col-2")], &[], "name");
        assert!(read_incompatibility(&old, &replaced).is_some());
        let upgraded_from = layout(vec![column("a", PrimitiveType::Long)], &[], "none");
        let upgraded = layout(vec![mapped("a", "a")], &[], "name");
        assert_eq!(read_incompatibility(&upgraded_from, &upgraded), None);
    }

    #[test]
    fn nested_fields_are_compared_too() {
        let inner = |fields| DataType::from(StructType::new(fields));
        let old = layout(
            vec![StructField::new(
                "s",
                inner(vec![column("x", PrimitiveType::Integer)]),
                true,
            )],
            &[],
            "none",
        );
        let grown = layout(
            vec![StructField::new(
                "s",
                inner(vec![
                    column("x", PrimitiveType::Integer),
                    column("y", PrimitiveType::Integer),
                ]),
                true,
            )],
            &[],
            "none",
        );
        assert_eq!(read_incompatibility(&old, &grown), None);
        let shrunk = layout(
            vec![StructField::new(
                "s",
                inner(vec![column("y", PrimitiveType::Integer)]),
                true,
            )],
            &[],
            "none",
        );
        let reason = read_incompatibility(&old, &shrunk).unwrap();
        assert!(reason.contains("`s.x`"), "{reason}");
    }

    #[test]
    fn widening_follows_the_reader() {
        use PrimitiveType::*;
        assert!(Byte.widens_to(Long));
        assert!(Integer.widens_to(Double));
        assert!(Date.widens_to(TimestampNtz));
        assert!(Void.widens_to(String));
        assert!(Integer.widens_to(Decimal {
            precision: 12,
            scale: 2
        }));
        assert!(!Long.widens_to(Decimal {
            precision: 12,
            scale: 2
        }));
        assert!(Decimal {
            precision: 5,
            scale: 2
        }
        .widens_to(Decimal {
            precision: 7,
            scale: 3
        }));
        assert!(!Decimal {
            precision: 5,
            scale: 2
        }
        .widens_to(Decimal {
            precision: 5,
            scale: 3
        }));
        assert!(!Long.widens_to(Integer));
        assert!(!String.widens_to(Binary));
        assert!(!Timestamp.widens_to(TimestampNtz));
    }

    fn commit_file(text: &str, file_time_ms: i64) -> CommitFile {
        CommitFile {
            version: 1,
            name: "1.json".into(),
            bytes: bytes::Bytes::copy_from_slice(text.as_bytes()),
            file_time_ms,
        }
    }

    fn commit(text: &str) -> DecodedCommit {
        decode_commit(&commit_file(text, 77)).unwrap()
    }

    fn describe(changes: &[PlannedChange<'_>]) -> Vec<String> {
        changes
            .iter()
            .map(|change| match change {
                PlannedChange::ChangeFile(file) => format!("cdc {}", file.path),
                PlannedChange::WholeFile(file, change_type) => {
                    format!("{} {}", change_type.as_str(), file.path)
                }
                PlannedChange::DeletionVectorUpdate { removed, added } => {
                    format!("dv {} {}", removed.path, added.path)
                }
            })
            .collect()
    }

    /// The log of the golden table `deltalog-getChanges`, version 1.
    const CDC_AND_REMOVE: &str = r#"{"commitInfo":{"timestamp":1704392846030,"operation":"Manual Update"}}
{"cdc":{"path":"fake/path/2","partitionValues":{"partition_foo":"partition_bar"},"size":1,"tags":{"tag_foo":"tag_bar"},"dataChange":false}}
{"remove":{"path":"fake/path/1","deletionTimestamp":100,"dataChange":true}}
"#;

    #[test]
    fn a_merge_that_changed_no_row_has_no_changes() {
        let merge = |metric: &str| {
            format!(
                r#"{{"commitInfo":{{"timestamp":1,"operation":"MERGE","operationMetrics":{{"numTargetRowsInserted":"0","numTargetRowsUpdated":"0","numTargetRowsDeleted":"{metric}"}}}}}}
{{"remove":{{"path":"a","deletionTimestamp":1,"dataChange":true}}}}
{{"add":{{"path":"b","partitionValues":{{}},"size":1,"modificationTime":1,"dataChange":true}}}}
"#
            )
        };
        let decoded = commit(&merge("0"));
        assert!(planned_changes(&decoded).is_empty());
        let decoded = commit(&merge("1"));
        assert_eq!(describe(&planned_changes(&decoded)).len(), 2);
    }

    #[test]
    fn cdc_actions_hide_the_adds_and_removes_of_their_commit() {
        let decoded = commit(CDC_AND_REMOVE);
        assert_eq!(decoded.timestamp_ms, 77);
        assert_eq!(describe(&planned_changes(&decoded)), ["cdc fake/path/2"]);
    }

    #[test]
    fn adds_and_removes_pair_up_by_decoded_path_and_data_change_false_is_skipped() {
        let decoded = commit(
            r#"{"commitInfo":{"inCommitTimestamp":123}}
{"remove":{"path":"a%20b","dataChange":true}}
{"add":{"path":"a b","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true}}
{"remove":{"path":"gone","dataChange":true}}
{"add":{"path":"new","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true}}
{"remove":{"path":"compacted","dataChange":false}}
{"add":{"path":"compacted-into","partitionValues":{},"size":1,"modificationTime":0,"dataChange":false}}
"#,
        );
        assert_eq!(decoded.timestamp_ms, 123);
        assert_eq!(
            describe(&planned_changes(&decoded)),
            ["dv a%20b a b", "delete gone", "insert new"]
        );
    }

    #[test]
    fn a_bad_action_line_names_the_file_and_line() {
        let text = "{\"commitInfo\":{}}\n{\"add\":{\"size\":1}}";
        let error = decode_commit(&commit_file(text, 0)).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("1.json") && text.contains("line 2"), "{text}");
    }

    #[test]
    fn the_property_is_read_as_spark_reads_booleans() {
        let mut metadata = layout(Vec::new(), &[], "none").metadata().clone();
        assert!(change_data_feed_enabled(&metadata));
        metadata
            .configuration
            .insert(ENABLE_CHANGE_DATA_FEED.into(), "TRUE".into());
        assert!(change_data_feed_enabled(&metadata));
        metadata
            .configuration
            .insert(ENABLE_CHANGE_DATA_FEED.into(), "false".into());
        assert!(!change_data_feed_enabled(&metadata));
        metadata.configuration.clear();
        assert!(!change_data_feed_enabled(&metadata));
    }

    #[test]
    fn change_types_have_sparks_names() {
        let names: Vec<&str> = [
            ChangeType::Insert,
            ChangeType::Delete,
            ChangeType::UpdatePreimage,
            ChangeType::UpdatePostimage,
        ]
        .into_iter()
        .map(ChangeType::as_str)
        .collect();
        assert_eq!(
            names,
            ["insert", "delete", "update_preimage", "update_postimage"]
        );
    }

    fn assert_send<T: Send>(_: T) {}

    /// The futures and streams of the public API can be spawned on a multi-threaded runtime.
    #[allow(dead_code)]
    fn futures_are_send(table: Table, scan: ChangeScan) {
        assert_send(ChangeScan::new(
            table.storage(),
            0,
            None,
            ChangesOptions::default(),
        ));
        assert_send(changes(table.storage(), 0, None, ChangesOptions::default()));
        assert_send(scan.stream());
        assert_send(scan.to_batches());
    }
}
