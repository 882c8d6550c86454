//! A Delta table: where it is, and every verb on it (spec "Delta Log Entries", "Last
//! Checkpoint File", "Checkpoints"; catalogue A, G). The verbs that read the log (snapshots,
//! history, commits) are here; the others are one-line delegations to the module that does
//! the work, in the order of the layers.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use futures::{Stream, StreamExt, TryStreamExt};

use crate::actions::CommitInfo;
use crate::error::{Error, Result};
use crate::expr::{Expr, ValueExpr};
use crate::log::commit_range::CommitRange;
use crate::log::decode::commit::action_lines;
use crate::log::path::LogPath;
use crate::log::segment::LogSegment;
use crate::maintenance::checkpoint::{CheckpointOptions, CheckpointResult};
use crate::maintenance::cleanup::CleanupResult;
use crate::ops::{
    Alteration, CloneOptions, ConvertResult, CreateMode, CreateTable, DeleteOptions, MergeClauses,
    MergeOptions, OptimizeOptions, OptimizeResult, RestoreOptions, RestoreResult, UpdateOptions,
    VacuumOptions, VacuumResult, WriteTableOptions,
};
use crate::scan::changes::{ChangeScan, ChangesOptions};
use crate::schema::StructType;
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::transaction::{CommitResult, TableSpec, Transaction};
use crate::write::WriteFailure;

/// A Delta table at a location. Cheap to clone; holds no snapshot state.
#[derive(Clone, Debug)]
pub struct Table {
    storage: Storage,
}

impl Table {
    /// Opens the table at `uri` (see [`Storage::open`] for the forms accepted).
    ///
    /// Fails with [`Error::TableNotFound`] unless `_delta_log` holds at least one log file.
    pub async fn open(uri: &str, storage_options: &HashMap<String, String>) -> Result<Table> {
        let storage = Storage::open(uri, storage_options)?;
        let table = Table::from_storage(storage);
        if !crate::log::has_log_files(&table.storage).await? {
            return Err(Error::TableNotFound {
                location: table.uri().to_string(),
                reason: "it has no _delta_log folder, or no commit or checkpoint in it".into(),
            });
        }
        Ok(table)
    }

    /// A table on an already configured store.
    pub fn from_storage(storage: Storage) -> Table {
        Table { storage }
    }

    /// The table root as a URL ending in `/`.
    pub fn uri(&self) -> &str {
        self.storage.uri()
    }

    /// The store access of this table.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The newest version: the highest commit (or complete checkpoint) in the log.
    pub async fn latest_version(&self) -> Result<u64> {
        crate::log::latest_version(&self.storage).await
    }

    /// Loads the snapshot of the version `at` names, its file list replayed now (see
    /// [`Table::lazy_snapshot`] for one that replays it on first need).
    pub async fn snapshot(&self, at: SnapshotAt) -> Result<Snapshot> {
        Snapshot::load(&self.storage, at).await
    }

    /// The snapshot of the version `at` names, its file list replayed on first need: the head
    /// (protocol, metadata, transactions, domains) comes from the version's `.crc` file when
    /// it has a usable one, else from the log without the file actions (see
    /// `crate::snapshot`).
    pub async fn lazy_snapshot(&self, at: SnapshotAt) -> Result<Snapshot> {
        Snapshot::load_lazy(&self.storage, at).await
    }

    /// The snapshot of the version `at` names, holding only the live files that may hold rows
    /// matching `filter` by their statistics and partition values: file skipping pushed into
    /// replay. Checkpoint row groups whose `stats_parsed` bounds rule the filter out are never
    /// decoded, so a selective filter costs a fraction of a full load. Everything else (schema,
    /// protocol, metadata, transactions) is that of the full snapshot; its file list and scans
    /// see only the matching files.
    pub async fn snapshot_matching(&self, at: SnapshotAt, filter: &Expr) -> Result<Snapshot> {
        Snapshot::load_matching(&self.storage, at, filter).await
    }

    /// The files that make up version `target` (`None`: the latest); see
    /// `crate::log::locate_segment`.
    pub async fn log_segment(&self, target: Option<u64>) -> Result<LogSegment> {
        crate::log::locate_segment(&self.storage, target).await
    }

    /// The newest version committed at or before `timestamp_ms`.
    pub async fn version_at(&self, timestamp_ms: i64) -> Result<u64> {
        crate::log::version_at(&self.storage, timestamp_ms).await
    }

    /// Commit information, newest first: one row per version still in the log (up to `limit`).
    /// Timestamps follow `crate::log::timestamps`, as time travel does.
    pub async fn history(&self, limit: Option<usize>) -> Result<RecordBatch> {
        let listing = self.list_from(0).await?;
        let range = CommitRange::all_listed(&listing).newest(limit.unwrap_or(usize::MAX));
        let mut rows = range
            .stream(&self.storage)
            .map(|file| {
                let file = file?;
                let info = file.commit_info()?;
                Ok((file.version, file.timestamp_ms(info.as_ref()), info))
            })
            .try_collect::<Vec<_>>()
            .await?;
        rows.reverse();
        history_batch(&rows)
    }

    /// The actions of the commits `start..=end` (`end` `None`: the latest), one batch per
    /// commit with columns `version`, `action` (the action name) and `json` (the action object
    /// as written).
    pub async fn commits(&self, start: u64, end: Option<u64>) -> Result<Vec<RecordBatch>> {
        if let Some(end) = end.filter(|end| start > *end) {
            return Err(Error::VersionNotFound {
                table: self.uri().to_string(),
                version: start,
                reason: format!("the requested range {start}..={end} is empty"),
            });
        }
        let range = CommitRange::list(&self.storage, start, end).await?;
        range
            .stream(&self.storage)
            .map(|file| {
                let file = file?;
                actions_batch(&file.name, file.version, &file.bytes)
            })
            .try_collect()
            .await
    }

    /// Every log file of version `start` or later.
    pub async fn list_from(&self, start: u64) -> Result<Vec<LogPath>> {
        crate::log::list_log_from(&self.storage, start).await
    }

    // ── transactions (crate::transaction)

    /// A transaction reading the latest snapshot (see [`Snapshot::transaction`]).
    pub async fn transaction(&self, operation: &str) -> Result<Transaction> {
        Ok(self
            .snapshot(SnapshotAt::Latest)
            .await?
            .transaction(operation))
    }

    /// A transaction for a blind append to the latest version: it reads the protocol,
    /// metadata, `txn` versions and domains (the row-id high-water mark) from a lazy snapshot
    /// ([`Table::lazy_snapshot`]), never the file list unless the transaction removes files
    /// or records reads, so an append costs the same on a table of a million files as on one
    /// of ten.
    pub async fn append_transaction(&self, operation: &str) -> Result<Transaction> {
        Ok(self
            .lazy_snapshot(SnapshotAt::Latest)
            .await?
            .transaction(operation))
    }

    /// A transaction creating the table at version 0 with `spec` (operation `CREATE TABLE`);
    /// files may be added to it. The protocol is the least one covering the features the
    /// metadata uses (`least_protocol`).
    ///
    /// Errors: [`Error::NotAllowed`] when the location already holds a Delta log;
    /// [`Error::InvalidArgument`] for partition columns not in the schema, or column mapping
    /// asked for on a schema without physical names and ids. A creator that loses the race
    /// for version 0 gets an [`Error::CommitConflict`] of kind
    /// [`ProtocolChanged`](crate::ConflictKind::ProtocolChanged) from [`Transaction::commit`], as Delta on Spark.
    pub async fn create_transaction(&self, spec: TableSpec) -> Result<Transaction> {
        crate::transaction::create_transaction(&self.storage, spec).await
    }

    /// Creates the table at version 0 with `spec` and no files (see
    /// [`Table::create_transaction`]).
    pub async fn create(&self, spec: TableSpec) -> Result<CommitResult> {
        self.create_transaction(spec).await?.commit().await
    }

    // ── reads (crate::scan)

    /// The change data feed of the versions `start..=end` (`end` `None`: the latest); see
    /// [`ChangeScan::new`].
    pub async fn changes(
        &self,
        start: u64,
        end: Option<u64>,
        options: ChangesOptions,
    ) -> Result<ChangeScan> {
        ChangeScan::new(&self.storage, start, end, options).await
    }

    // ── writes and row-level changes (crate::ops)

    /// Writes `batches` of `schema` to the table, creating it when absent (see
    /// [`crate::ops::write_table`]).
    pub async fn write<S>(
        &self,
        schema: SchemaRef,
        batches: S,
        options: WriteTableOptions,
    ) -> std::result::Result<CommitResult, WriteFailure>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        crate::ops::write_table(&self.storage, schema, batches, options).await
    }

    /// Creates the table as `create` describes, as Delta on Spark's `CREATE TABLE` with
    /// `mode` (see [`crate::ops::create_table`]).
    pub async fn create_table(
        &self,
        create: CreateTable,
        mode: CreateMode,
    ) -> Result<CommitResult> {
        crate::ops::create_table(&self.storage, create, mode).await
    }

    /// Commits one `ALTER TABLE` change on the latest version (see [`crate::ops::alter_table`]).
    pub async fn alter(&self, alteration: Alteration) -> Result<CommitResult> {
        crate::ops::alter_table(&self.storage, alteration).await
    }

    /// Deletes the rows matching `predicate` (every row when `None`); see [`crate::ops::delete`].
    pub async fn delete(
        &self,
        predicate: Option<Expr>,
        options: DeleteOptions,
    ) -> std::result::Result<CommitResult, WriteFailure> {
        crate::ops::delete(&self.storage, predicate, options).await
    }

    /// Sets the columns of `set` in the rows matching `predicate` (see [`crate::ops::update`]).
    pub async fn update(
        &self,
        set: Vec<(String, ValueExpr)>,
        predicate: Option<Expr>,
        options: UpdateOptions,
    ) -> std::result::Result<CommitResult, WriteFailure> {
        crate::ops::update(&self.storage, set, predicate, options).await
    }

    /// Merges `source` into the table on `on` with `clauses` (see [`crate::ops::merge`]).
    pub async fn merge(
        &self,
        source: Vec<RecordBatch>,
        source_schema: SchemaRef,
        on: Expr,
        clauses: MergeClauses,
        options: MergeOptions,
    ) -> std::result::Result<CommitResult, WriteFailure> {
        crate::ops::merge(&self.storage, source, source_schema, on, clauses, options).await
    }

    // ── table maintenance (crate::ops::commands)

    /// Deletes the files no retained version needs (see [`crate::ops::vacuum`]).
    pub async fn vacuum(&self, options: VacuumOptions) -> Result<VacuumResult> {
        crate::ops::vacuum(&self.storage, options).await
    }

    /// Compacts small files, optionally Z-ordered (see [`crate::ops::optimize`]).
    pub async fn optimize(&self, options: OptimizeOptions) -> Result<OptimizeResult> {
        crate::ops::optimize(&self.storage, options).await
    }

    /// Restores the table to the version `at` names (see [`crate::ops::restore`]).
    pub async fn restore(&self, at: SnapshotAt) -> Result<RestoreResult> {
        crate::ops::restore(&self.storage, at).await
    }

    /// [`Table::restore`] with `options` (see [`crate::ops::restore_with`]).
    pub async fn restore_with(
        &self,
        at: SnapshotAt,
        options: &RestoreOptions,
    ) -> Result<RestoreResult> {
        crate::ops::restore_with(&self.storage, at, options).await
    }

    /// Shallow-clones the version `at` names of this table to `target` in one commit (see
    /// [`crate::ops::shallow_clone`]).
    pub async fn shallow_clone(
        &self,
        at: SnapshotAt,
        target: &Table,
        options: &CloneOptions,
    ) -> Result<CommitResult> {
        crate::ops::shallow_clone(&self.storage, at, &target.storage, options).await
    }

    /// Makes the Parquet files at this location a Delta table (see
    /// [`crate::ops::convert_to_delta`]).
    pub async fn convert_to_delta(
        &self,
        partition_schema: Option<StructType>,
    ) -> Result<ConvertResult> {
        crate::ops::convert_to_delta(&self.storage, partition_schema).await
    }

    // ── log maintenance (crate::maintenance)

    /// Writes a checkpoint of `version` (`None`: the latest), of the kind the table's
    /// properties ask for (see `crate::maintenance::checkpoint`), with default options.
    pub async fn checkpoint(&self, version: Option<u64>) -> Result<CheckpointResult> {
        self.checkpoint_with(version, &CheckpointOptions::default())
            .await
    }

    /// [`Table::checkpoint`] with `options`.
    ///
    /// Errors: those of loading the snapshot, [`Error::Storage`] when a file cannot be written
    /// (nothing is left under a checkpoint's name then; a sidecar already written stays, to be
    /// removed by [`Table::cleanup_metadata`] after a day), [`Error::InvalidArgument`] for a
    /// `part_size` or `sidecar_actions` of 0.
    pub async fn checkpoint_with(
        &self,
        version: Option<u64>,
        options: &CheckpointOptions,
    ) -> Result<CheckpointResult> {
        crate::maintenance::checkpoint::checkpoint(&self.storage, version, options).await
    }

    /// Deletes the log files that `delta.logRetentionDuration` lets go (see
    /// `crate::maintenance::cleanup`). Every version from the returned
    /// [`CleanupResult::oldest_kept_version`] on stays readable. The table's files are not
    /// read: only its protocol and metadata.
    pub async fn cleanup_metadata(&self) -> Result<CleanupResult> {
        self.cleanup_metadata_with(false).await
    }

    /// [`Table::cleanup_metadata`]; with `dry_run`, nothing is written or deleted and the
    /// report lists what would be deleted (`compat_checkpoint` stays `None`).
    pub async fn cleanup_metadata_with(&self, dry_run: bool) -> Result<CleanupResult> {
        crate::maintenance::cleanup::cleanup_metadata(&self.storage, dry_run).await
    }

    /// Writes the log compaction file of the commits `start_version..=end_version` and returns
    /// its URL. The file is never replaced: one already there is an [`Error::NotAllowed`].
    ///
    /// Errors: [`Error::InvalidArgument`] when `start_version >= end_version`,
    /// [`Error::VersionNotFound`] when a commit of the range is not in the log.
    pub async fn compact_logs(&self, start_version: u64, end_version: u64) -> Result<String> {
        crate::maintenance::compaction::compact_logs(&self.storage, start_version, end_version)
            .await
    }
}

/// The history rows: version, commit timestamp and `commitInfo` of each commit.
fn history_batch(rows: &[(u64, i64, Option<CommitInfo>)]) -> Result<RecordBatch> {
    let text = |f: &dyn Fn(&CommitInfo) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from(
            rows.iter()
                .map(|(_, _, info)| info.as_ref().and_then(f))
                .collect::<Vec<_>>(),
        ))
    };
    let field_text = |name: &'static str| {
        move |info: &CommitInfo| {
            info.raw
                .get(name)
                .and_then(|v| v.as_str())
                .map(str::to_string)
        }
    };
    let utc = Some(Arc::from("UTC"));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|(version, _, _)| *version as i64),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(rows.iter().map(|(_, time, _)| *time))
                .with_timezone_opt(utc.clone()),
        ),
        Arc::new(
            TimestampMillisecondArray::from(
                rows.iter()
                    .map(|(_, _, i)| i.as_ref().and_then(CommitInfo::in_commit_timestamp))
                    .collect::<Vec<_>>(),
            )
            .with_timezone_opt(utc.clone()),
        ),
        text(&|i| i.operation().map(str::to_string)),
        text(&|i| i.raw.get("operationParameters").map(|v| v.to_string())),
        text(&field_text("userName")),
        text(&field_text("engineInfo")),
        text(&|i| serde_json::to_string(&i.raw).ok()),
    ];
    let timestamp = DataType::Timestamp(TimeUnit::Millisecond, utc);
    let schema = Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new("timestamp", timestamp.clone(), false),
        Field::new("in_commit_timestamp", timestamp, true),
        Field::new("operation", DataType::Utf8, true),
        Field::new("operation_parameters", DataType::Utf8, true),
        Field::new("user_name", DataType::Utf8, true),
        Field::new("engine_info", DataType::Utf8, true),
        Field::new("commit_info", DataType::Utf8, true),
    ]);
    RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|error| Error::arrow("building the history", error))
}

fn actions_batch(file: &str, version: u64, bytes: &[u8]) -> Result<RecordBatch> {
    let mut names = Vec::new();
    let mut texts = Vec::new();
    for (index, line) in action_lines(bytes, file) {
        let line = line?;
        let object: HashMap<String, serde_json::Value> = serde_json::from_slice(line.json)
            .map_err(|error| Error::corrupt(file, format!("line {}: {error}", index + 1)))?;
        let value = object.get(line.name).cloned().unwrap_or_default();
        names.push(line.name.to_string());
        texts.push(value.to_string());
    }
    let schema = Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new("action", DataType::Utf8, false),
        Field::new("json", DataType::Utf8, false),
    ]);
    let rows = names.len();
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![version as i64; rows])),
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(texts)),
        ],
    )
    .map_err(|error| Error::arrow(file, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: T) {}

    /// The futures of the public API can be spawned on a multi-threaded runtime.
    #[allow(dead_code)]
    fn futures_are_send(table: Table, snapshot: Snapshot) {
        assert_send(table.snapshot(SnapshotAt::Latest));
        assert_send(table.history(None));
        assert_send(table.commits(0, None));
        assert_send(snapshot.refresh());
        assert_send(snapshot.files(true));
    }
}
