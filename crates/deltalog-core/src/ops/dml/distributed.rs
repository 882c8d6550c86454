//! A row-level change (`DELETE`, `UPDATE`) run by a distributed engine's tasks, as
//! `deltalog.spark.DeltaTable` runs one on Spark's executors. The engine evaluates the
//! conditions and the new values itself; this module does the Delta part:
//!
//! 1. [`DistributedChange::plan`], on the driver: the snapshot read, the checks of a
//!    row-level change, the candidate files (pruned by a predicate this library reads,
//!    when the engine's condition has one), the materialised row tracking columns. The
//!    plan is JSON, so it travels to the tasks.
//! 2. The engine reads the candidate files' rows with their addresses (a [`crate::scan::Scan`]
//!    with `row_address`, and `row_tracking` when [`DistributedChange::keeps_row_ids`]) and
//!    gives each task rows of the table's columns, the address columns, the row tracking
//!    columns and an [`ACTION_COLUMN`] saying what becomes of the row ([`RowAction`]). Every
//!    row addressed to one data file must reach the same task.
//! 3. [`DistributedChange::write_task`], in each task: the rows deleted are marked in new
//!    deletion vectors (one file per task, merged with each file's vector) when the plan
//!    uses them, else their files are rewritten whole (copy-on-write: the task reads each
//!    such file itself and writes its other live rows again, so the engine never ships
//!    the rows that stay); new rows go to data files, change rows to change data files.
//!    What the task did travels back as a [`TaskOutcome`], JSON again.
//! 4. [`DistributedChange::commit`], on the driver: every task's outcome in ONE commit,
//!    with the operation's parameters and Delta on Spark's metrics, conflict checks against
//!    concurrent commits (the candidate files and the pruning predicate are recorded as
//!    read) and retries.
//!
//! A DELETE whose predicate this library reads and that names partition columns only (or a
//! DELETE of every row) needs no task: [`DistributedChange::removes_whole_files`] says so,
//! and the commit removes the candidate files whole, as Delta on Spark's metadata-only
//! delete does.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, StringArray};
use futures::{Stream, StreamExt};
use roaring::RoaringTreemap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::actions::deletion_vector;
use crate::actions::{DeletionVectorDescriptor, Metadata, Protocol};
use crate::error::{Error, Result};
use crate::expr::{parse_sql, CompareOp, Expr};
use crate::ops::merge::evolution::{assigned_path, stage_evolved_schema};
use crate::scan::{ROW_FILE_COLUMN, ROW_INDEX_COLUMN};
use crate::schema::parse_schema;
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;
use crate::transaction::{CommitResult, MetadataUpdate};
use crate::write::{RowOrigin, WriteFailure, WriterOptions, WrittenFile};

use super::{
    candidates, is_partition_only, load_deletion_vector, read_rows_as, row_tracking_columns,
    stage_written, with_deletion_vector, write_deletion_vectors, Candidate, FileMatches, RowChange,
    RowWriter, READD_INVARIANT,
};

/// The column of a task's rows that says what becomes of each row ([`RowAction`]).
pub const ACTION_COLUMN: &str = "__deltalog_action";
/// The column of a MERGE task's rows that says which kind of clause acted on each row:
/// `matched`, `not_matched` or `not_matched_by_source` (the commit's metrics count them
/// apart).
pub const CLAUSE_COLUMN: &str = "__deltalog_clause";

/// What becomes of a row given to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowAction {
    /// The row at the address is deleted; with the change data feed it is a `delete` change.
    Delete,
    /// The row at the address is replaced by these values (written as table data with its
    /// row id and the commit's version).
    Update,
    /// The row at the address is replaced; these are its old values, an `update_preimage`
    /// change. Its new values come as an [`RowAction::UpdatePostimage`] row.
    UpdatePreimage,
    /// New values of an updated row (its address is not used): table data and an
    /// `update_postimage` change.
    UpdatePostimage,
    /// A new row (a MERGE's insert; no address): table data with new row ids and an
    /// `insert` change.
    Insert,
    /// A target row a MERGE matched but no clause changes: nothing is written; it counts
    /// towards the check that a target row matches one source row.
    None,
}

impl RowAction {
    /// The action named `name` (`delete`, `update`, `update_preimage`,
    /// `update_postimage`, `insert`, `none`).
    pub fn parse(name: &str) -> Result<RowAction> {
        Ok(match name {
            "delete" => RowAction::Delete,
            "update" => RowAction::Update,
            "update_preimage" => RowAction::UpdatePreimage,
            "update_postimage" => RowAction::UpdatePostimage,
            "insert" => RowAction::Insert,
            "none" => RowAction::None,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "`{other}` is not a row action (delete, update, update_preimage, \
                     update_postimage, insert, none)"
                )))
            }
        })
    }

    /// True when the row at the address leaves the table.
    fn removes_address(self) -> bool {
        matches!(
            self,
            RowAction::Delete | RowAction::Update | RowAction::UpdatePreimage
        )
    }

    /// True for the one row a matched (target, source) pair gives before any other: what
    /// the multiple-match check counts.
    fn is_pair_row(self) -> bool {
        matches!(
            self,
            RowAction::Delete | RowAction::Update | RowAction::UpdatePreimage | RowAction::None
        )
    }

    const ALL: [RowAction; 6] = [
        RowAction::Delete,
        RowAction::Update,
        RowAction::UpdatePreimage,
        RowAction::UpdatePostimage,
        RowAction::Insert,
        RowAction::None,
    ];
}

/// The options of a distributed row-level change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeOptions {
    /// `DELETE`, `UPDATE` or `MERGE`.
    pub operation: String,
    /// The engine's condition as the user wrote it: the operation parameter `predicate`
    /// (none for every row).
    pub condition: Option<String>,
    /// A predicate in this library's SQL that every row the condition matches also matches:
    /// it prunes the candidate files and is recorded as the rows read. `None`: every file.
    pub prune: Option<String>,
    /// True when `prune` is the condition itself (not a looser one).
    #[serde(default)]
    pub prune_is_condition: bool,
    /// A MERGE that only inserts (allowed on append-only tables).
    #[serde(default)]
    pub insert_only: bool,
    /// A MERGE with insert clauses (refused on tables whose identity columns need values:
    /// independent tasks cannot share the sequence).
    #[serde(default)]
    pub inserts: bool,
    /// A MERGE whose target rows may match several source rows (insert-only, or an
    /// unconditional delete as the only matched clause: Delta on Spark's exceptions).
    #[serde(default)]
    pub allows_multiple_matches: bool,
    /// Operation parameters recorded as given (a MERGE's `matchedPredicates`, ...).
    #[serde(default)]
    pub parameters: Map<String, Value>,
    /// Operation metrics the engine counted (a MERGE's `numSourceRows`).
    #[serde(default)]
    pub metrics: BTreeMap<String, u64>,
    pub target_file_size: Option<u64>,
    pub max_records_per_file: Option<u64>,
    /// Extra `commitInfo` fields (such as `userMetadata`).
    #[serde(default)]
    pub commit_info: Map<String, Value>,
    /// A MERGE's schema evolution (`withSchemaEvolution()`); `None`: the schema stays.
    #[serde(default)]
    pub schema_evolution: Option<SchemaEvolution>,
}

/// What a MERGE with schema evolution adds to the target (Delta on Spark's
/// `MERGE WITH SCHEMA EVOLUTION`): the source columns and struct fields its clauses assign,
/// and, with `delta.enableTypeWidening`, the wider types of source columns. The plan stages
/// the evolved schema; the tasks write it; the commit records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaEvolution {
    /// The source's schema as JSON (the format of Delta's `schemaString`, which Spark's
    /// `StructType.json()` writes).
    pub source: String,
    /// The target columns the matched updates and the inserts assign, as the clauses name
    /// them (`a`, `a.b`, `` `a.b` ``, `t.a`); `None` when one of them is `UPDATE SET *` or
    /// `INSERT *`, which assigns every source column.
    pub assigned: Option<Vec<String>>,
    /// The alias qualifying target columns in `assigned`, if any.
    #[serde(default)]
    pub target_alias: Option<String>,
}

/// One candidate file of a plan: what the tasks need to know of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFile {
    /// The path as the file list (and [`ROW_FILE_COLUMN`]) names it.
    pub path: String,
    pub num_records: Option<i64>,
    pub deletion_vector: Option<DeletionVectorDescriptor>,
}

/// A planned distributed row-level change; see the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DistributedChange {
    options: ChangeOptions,
    /// The table version the change read.
    version: u64,
    /// The protocol and metadata the files written follow (the table's, with the names of
    /// new materialised row tracking columns).
    protocol: Protocol,
    #[serde(rename = "metaData")]
    metadata: Metadata,
    /// Deleted rows are marked in deletion vectors (else their files are rewritten).
    deletion_vectors: bool,
    /// The candidate files are removed whole, with no task.
    whole_files: bool,
    /// Rows written again keep their row ids (row tracking is on).
    keeps_row_ids: bool,
    /// Change data files are written (the change data feed is on).
    writes_changes: bool,
    files: Vec<PlannedFile>,
    /// When planning started, in milliseconds since the epoch (`executionTimeMs` counts
    /// from there).
    started_ms: i64,
    files_before_skipping: u64,
    bytes_before_skipping: u64,
}

/// What one task did: the files whose rows it deleted, with their new deletion vectors
/// (`None`: the file is removed), and the files it wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOutcome {
    pub removed: Vec<(String, Option<DeletionVectorDescriptor>)>,
    pub data_files: Vec<WrittenFile>,
    pub change_files: Vec<WrittenFile>,
    /// The deletion vector file written, if any.
    pub vector_file: Option<String>,
    /// Rows deleted, updated, inserted and copied (`deleted`, `updated`, `inserted`,
    /// `copied`; a MERGE's also per kind of clause: `deleted.matched`, ...).
    pub counts: BTreeMap<String, u64>,
}

impl TaskOutcome {
    /// Every file the task wrote, relative to the table root.
    pub fn written_paths(&self) -> Vec<String> {
        let data = self.data_files.iter().chain(&self.change_files);
        let mut paths: Vec<String> = data.map(|f| f.path.clone()).collect();
        paths.extend(self.vector_file.iter().cloned());
        paths
    }

    fn count(&mut self, name: &str, rows: usize) {
        *self.counts.entry(name.to_string()).or_insert(0) += rows as u64;
    }
}

impl DistributedChange {
    /// Plans the change on the latest version of the table in `storage`: checks that this
    /// library can change its rows (not append-only, every writer feature known), parses
    /// the pruning predicate and lists the candidate files.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown operation or a pruning predicate
    /// that does not parse or names no column; [`Error::NotAllowed`] for an append-only
    /// table; [`Error::UnsupportedFeature`] for a table this library cannot write.
    pub async fn plan(storage: &Storage, options: ChangeOptions) -> Result<DistributedChange> {
        let started_ms = chrono::Utc::now().timestamp_millis();
        let refusal = refusal(&options)?;
        let snapshot = Snapshot::load(storage, SnapshotAt::Latest).await?;
        let mut change = RowChange::new(snapshot.clone(), snapshot.transaction(&options.operation));
        change.begin(refusal, &options.commit_info)?;
        if let Some(evolution) = &options.schema_evolution {
            stage_schema_evolution(&mut change, &options.operation, evolution)?;
        }
        let prune = parse_prune(&options)?;
        change.stage_predicate(prune.as_ref())?;
        row_tracking_columns(
            &snapshot.table_configuration().clone(),
            &mut change.transaction,
        )?;
        let config = change.transaction.configuration()?;
        let found = candidates(&snapshot, prune.as_ref()).await?;
        let whole_files = options.operation == "DELETE"
            && match &prune {
                None => options.condition.is_none(),
                Some(prune) => options.prune_is_condition && is_partition_only(&config, prune),
            };
        Ok(DistributedChange {
            version: snapshot.version(),
            protocol: config.protocol().clone(),
            metadata: config.metadata().clone(),
            deletion_vectors: config.is_deletion_vectors_enabled(),
            whole_files,
            keeps_row_ids: config.is_row_tracking_enabled(),
            writes_changes: config.properties().enable_change_data_feed,
            files: found.files.iter().map(planned_file).collect(),
            started_ms,
            files_before_skipping: found.files_before_skipping,
            bytes_before_skipping: found.bytes_before_skipping,
            options,
        })
    }

    /// The plan as JSON text.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self)
            .map_err(|error| Error::internal_invariant(format!("encoding a change plan: {error}")))
    }

    /// The plan of [`DistributedChange::to_json`]'s text.
    pub fn from_json(text: &str) -> Result<DistributedChange> {
        serde_json::from_str(text)
            .map_err(|error| Error::InvalidArgument(format!("not a deltalog change plan: {error}")))
    }

    /// The schema of the rows the tasks write, as Delta's JSON schema: the table's, evolved
    /// when the change asked for [`SchemaEvolution`].
    pub fn schema_json(&self) -> Option<&str> {
        self.metadata.schema_string.as_deref()
    }

    /// The table version the change read (and the engine reads the rows of).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The paths of the candidate files, as the file list names them.
    pub fn candidate_paths(&self) -> Vec<String> {
        self.files.iter().map(|file| file.path.clone()).collect()
    }

    /// True when deleted rows are marked in deletion vectors; false when their files are
    /// rewritten whole (each task reads the files it removes rows from and writes their
    /// other live rows again).
    pub fn uses_deletion_vectors(&self) -> bool {
        self.deletion_vectors
    }

    /// True when the commit removes the candidate files whole and no task runs.
    pub fn removes_whole_files(&self) -> bool {
        self.whole_files
    }

    /// True when rows written again must keep their row ids: the engine reads the rows with
    /// the row tracking columns.
    pub fn keeps_row_ids(&self) -> bool {
        self.keeps_row_ids
    }

    /// True when the change data feed is on: the engine sends the old values of deleted and
    /// updated rows (`update_preimage` rows).
    pub fn writes_changes(&self) -> bool {
        self.writes_changes
    }

    /// Does what the rows of `batches` say ([`RowAction`]) to the table in `storage`: marks
    /// deleted rows in one new deletion vector file (or lists their files for removal) and
    /// writes new rows and change rows to new files. Nothing is committed. On failure the
    /// [`WriteFailure`] names the files completed.
    pub async fn write_task<S>(
        &self,
        storage: &Storage,
        batches: S,
    ) -> Result<TaskOutcome, WriteFailure>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        let config = self
            .config(storage.uri())
            .map_err(WriteFailure::unwritten)?;
        let row_tracking = match (
            config.is_row_tracking_enabled(),
            &config.properties().materialized_row_id_column_name,
            &config
                .properties()
                .materialized_row_commit_version_column_name,
        ) {
            (true, Some(id), Some(version)) => Some((id.clone(), version.clone())),
            _ => None,
        };
        let options = WriterOptions {
            target_file_size: self.options.target_file_size,
            max_records_per_file: self.options.max_records_per_file,
            ..WriterOptions::default()
        };
        let changes = self.writes_changes;
        let mut writer = RowWriter::try_new(&config, storage, &options, row_tracking, changes)
            .map_err(WriteFailure::unwritten)?;
        let mut task = Task {
            deletes_write_changes: !self.deletion_vectors || self.options.operation == "MERGE",
            allows_multiple_matches: self.options.allows_multiple_matches,
            table: storage.uri().to_string(),
            ..Task::default()
        };
        let mut batches = std::pin::pin!(batches);
        while let Some(batch) = batches.next().await {
            let done = match batch {
                Ok(batch) => task.take(&batch, &mut writer).await,
                Err(error) => Err(error),
            };
            if let Err(error) = done {
                return Err(WriteFailure {
                    error,
                    written_files: writer.abort().await,
                });
            }
        }
        if !self.deletion_vectors {
            if let Err(error) = self.copy_kept_rows(storage, &mut task, &mut writer).await {
                return Err(WriteFailure {
                    error,
                    written_files: writer.abort().await,
                });
            }
        }
        let (data, changes) = writer.finish().await?;
        task.outcome.data_files = data.files;
        task.outcome.change_files = changes;
        let written = task.outcome.written_paths();
        self.removals(storage, task)
            .await
            .map_err(|error| WriteFailure {
                error,
                written_files: written,
            })
    }

    /// Commits the outcomes of every task in one transaction on top of the version read
    /// (conflicts with commits made since are checked, and the commit retried, as for any
    /// row-level change). Nothing is committed when no row changed. Errors name the files
    /// the tasks wrote, which nothing references then.
    pub async fn commit(
        &self,
        storage: &Storage,
        outcomes: Vec<TaskOutcome>,
    ) -> Result<CommitResult, WriteFailure> {
        let written: Vec<String> = outcomes.iter().flat_map(|o| o.written_paths()).collect();
        let failure = |error: Error| WriteFailure {
            error,
            written_files: written.clone(),
        };
        let snapshot = Snapshot::load(storage, SnapshotAt::Version(self.version))
            .await
            .map_err(failure)?;
        let mut change = RowChange::new(
            snapshot.clone(),
            snapshot.transaction(&self.options.operation),
        );
        change.written = written.clone();
        let elapsed = chrono::Utc::now().timestamp_millis() - self.started_ms;
        let elapsed = std::time::Duration::from_millis(u64::try_from(elapsed).unwrap_or(0));
        if let Some(started) = std::time::Instant::now().checked_sub(elapsed) {
            change.started = started;
        }
        match self.stage(&mut change, outcomes).await {
            Ok(()) => {}
            Err(error) => return Err(change.fail(error)),
        }
        let metrics = &change.metrics;
        let changed = [
            "numRemovedFiles",
            "numAddedFiles",
            "numDeletionVectorsAdded",
            "numDeletionVectorsUpdated",
            "numTargetFilesRemoved",
            "numTargetFilesAdded",
            "numTargetDeletionVectorsAdded",
            "numTargetDeletionVectorsUpdated",
        ]
        .iter()
        .any(|name| metrics.get(name) > 0);
        change.commit(self.metric_names(), changed).await
    }

    /// Stages every action of the commit on `change`.
    async fn stage(&self, change: &mut RowChange, outcomes: Vec<TaskOutcome>) -> Result<()> {
        let refusal = refusal(&self.options)?;
        change.begin(refusal, &self.options.commit_info)?;
        let prune = parse_prune(&self.options)?;
        change.stage_predicate(prune.as_ref())?;
        if let Some(condition) = &self.options.condition {
            let text = serde_json::to_string(&[condition]).unwrap_or_default();
            change
                .transaction
                .set_operation_parameter("predicate", text);
        }
        for (key, value) in &self.options.parameters {
            change
                .transaction
                .set_operation_parameter(key, value.clone());
        }
        for (name, value) in &self.options.metrics {
            change.metrics.set(name, *value);
        }
        self.stage_planned_metadata(change)?;
        let found = candidates(&change.snapshot, None).await?;
        let planned: HashSet<&str> = self.files.iter().map(|f| f.path.as_str()).collect();
        let files: HashMap<String, Candidate> = found
            .files
            .into_iter()
            .map(|file| (listed_path(&file), file))
            .filter(|(path, _)| planned.contains(path.as_str()))
            .collect();
        let read: Vec<Candidate> = files.values().cloned().collect();
        change.record_read(prune.as_ref(), &read);
        let metrics = &mut change.metrics;
        metrics.set("numFilesBeforeSkipping", self.files_before_skipping);
        metrics.set("numBytesBeforeSkipping", self.bytes_before_skipping);
        metrics.set("numFilesAfterSkipping", self.files.len() as u64);
        if self.whole_files {
            return self.remove_whole_files(change, &read);
        }
        let mut removed_once: HashSet<String> = HashSet::new();
        for outcome in outcomes {
            for (path, descriptor) in &outcome.removed {
                let file = files.get(path).ok_or_else(|| {
                    Error::internal(
                        change.snapshot.table_uri(),
                        format!("a task removed rows of {path}, which the plan did not read"),
                    )
                })?;
                if !removed_once.insert(path.clone()) {
                    return Err(Error::internal(
                        change.snapshot.table_uri(),
                        format!("two tasks removed rows of {path}: the rows of a data file must reach one task"),
                    ));
                }
                self.stage_removal(change, file, descriptor.as_ref())?;
            }
            for (name, value) in &outcome.counts {
                change.metrics.add(name, *value);
            }
            stage_written(
                &mut change.transaction,
                &outcome.data_files,
                &outcome.change_files,
                &mut change.metrics,
            )?;
        }
        self.name_row_counts(change);
        Ok(())
    }

    /// Removes `file`, re-adding it with `descriptor` when it has one.
    fn stage_removal(
        &self,
        change: &mut RowChange,
        file: &Candidate,
        descriptor: Option<&DeletionVectorDescriptor>,
    ) -> Result<()> {
        let metrics = &mut change.metrics;
        change.transaction.remove_files(&file.add, true)?;
        let had_vector = file.deletion_vector.is_some();
        let Some(descriptor) = descriptor else {
            metrics.add("numRemovedBytes", file.size.max(0) as u64);
            metrics.add("numRemovedFiles", 1);
            metrics.add("numDeletionVectorsRemoved", u64::from(had_vector));
            return Ok(());
        };
        match had_vector {
            true => metrics.add("numDeletionVectorsUpdated", 1),
            false => metrics.add("numDeletionVectorsAdded", 1),
        }
        let readded = with_deletion_vector(&file.add, descriptor)
            .ok_or_else(|| Error::internal(change.snapshot.table_uri(), READD_INVARIANT))?;
        change.transaction.add_files(readded)
    }

    /// Removes every candidate file whole (a DELETE of whole partitions or of every row).
    fn remove_whole_files(&self, change: &mut RowChange, files: &[Candidate]) -> Result<()> {
        let mut rows = 0u64;
        for file in files {
            let before = file.deletion_vector.as_ref().map_or(0, |dv| dv.cardinality);
            rows += u64::try_from(file.num_records.unwrap_or(0) - before).unwrap_or(0);
            self.stage_removal(change, file, None)?;
        }
        change.metrics.set("numDeletedRows", rows);
        Ok(())
    }

    /// Renames the tasks' row counts to the operation's metric names.
    fn name_row_counts(&self, change: &mut RowChange) {
        let metrics = &mut change.metrics;
        let counts: BTreeMap<String, u64> = metrics
            .0
            .iter()
            .filter(|(name, _)| {
                let base = name.split('.').next().unwrap_or_default();
                ["deleted", "updated", "inserted", "copied"].contains(&base)
            })
            .map(|(name, value)| (name.clone(), *value))
            .collect();
        for name in counts.keys() {
            metrics.0.remove(name);
        }
        let count = |name: &str| counts.get(name).copied().unwrap_or(0);
        match self.options.operation.as_str() {
            "MERGE" => {
                let renamed = [
                    ("numTargetRowsInserted", "inserted"),
                    ("numTargetRowsUpdated", "updated"),
                    ("numTargetRowsMatchedUpdated", "updated.matched"),
                    (
                        "numTargetRowsNotMatchedBySourceUpdated",
                        "updated.not_matched_by_source",
                    ),
                    ("numTargetRowsDeleted", "deleted"),
                    ("numTargetRowsMatchedDeleted", "deleted.matched"),
                    (
                        "numTargetRowsNotMatchedBySourceDeleted",
                        "deleted.not_matched_by_source",
                    ),
                    ("numTargetRowsCopied", "copied"),
                ];
                for (spark, ours) in renamed {
                    metrics.set(spark, count(ours));
                }
                let output = count("inserted") + count("updated") + count("copied");
                metrics.set("numOutputRows", output);
                for (spark, ours) in crate::ops::merge::FILE_METRICS {
                    let value = metrics.get(ours);
                    metrics.0.remove(ours);
                    metrics.set(spark, value);
                }
            }
            "UPDATE" => {
                metrics.set("numCopiedRows", count("copied"));
                metrics.set("numUpdatedRows", count("updated"));
            }
            _ => {
                metrics.set("numCopiedRows", count("copied"));
                let deleted = metrics.get("numDeletedRows") + count("deleted");
                metrics.set("numDeletedRows", deleted);
            }
        }
    }

    /// Stages what the plan changed of the table's metadata (the files the tasks wrote
    /// follow it): an evolved schema, the names of new materialised row tracking columns, the
    /// column mapping's new largest id.
    fn stage_planned_metadata(&self, change: &mut RowChange) -> Result<()> {
        let current = change.snapshot.metadata().clone();
        let planned = &self.metadata;
        let mut keys: Vec<&String> = planned.configuration.keys().collect();
        keys.extend(current.configuration.keys());
        keys.sort();
        keys.dedup();
        let configuration: Vec<(String, Option<String>)> = keys
            .into_iter()
            .filter(|key| planned.configuration.get(*key) != current.configuration.get(*key))
            .map(|key| (key.clone(), planned.configuration.get(key).cloned()))
            .collect();
        let schema = match &planned.schema_string {
            Some(text) if planned.schema_string != current.schema_string => {
                Some(parse_schema(text)?)
            }
            _ => None,
        };
        if configuration.is_empty() && schema.is_none() {
            return Ok(());
        }
        change.transaction.update_metadata(MetadataUpdate {
            schema,
            configuration,
            ..MetadataUpdate::default()
        })
    }

    /// The metrics Delta on Spark records for the operation.
    fn metric_names(&self) -> &'static [&'static str] {
        match self.options.operation.as_str() {
            "MERGE" => &crate::ops::merge::SPARK_METRICS,
            "UPDATE" => &super::update::SPARK_METRICS,
            _ => &super::delete::SPARK_METRICS,
        }
    }

    /// Copy-on-write: writes again the live rows of every file `task` removes rows from,
    /// but those rows, with their row ids and row commit versions; counts them `copied`.
    /// Each file is read from the snapshot the plan read, in the plan's schema (evolved by
    /// a merge's schema evolution: new columns NULL, widened types cast). A file losing
    /// every row is not read.
    async fn copy_kept_rows(
        &self,
        storage: &Storage,
        task: &mut Task,
        writer: &mut RowWriter,
    ) -> Result<()> {
        if task.rows.values().all(|rows| rows.deleted.is_empty()) {
            return Ok(());
        }
        let snapshot = Snapshot::load(storage, SnapshotAt::Version(self.version)).await?;
        let mut files: HashMap<String, Candidate> = candidates(&snapshot, None)
            .await?
            .files
            .into_iter()
            .map(|file| (listed_path(&file), file))
            .collect();
        let mut copied = 0u64;
        for (path, rows) in &task.rows {
            if rows.deleted.is_empty() {
                continue;
            }
            let file = files.remove(path).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "a row's address names {path}, which is not a live file of version {}",
                    self.version
                ))
            })?;
            let mut matches = FileMatches {
                matched: rows.deleted.clone(),
                deleted_before: load_deletion_vector(&snapshot, &file).await?,
                physical_rows: 0,
            };
            matches.count_recorded_rows(&file);
            // Only a file whose row count the log records can be known to lose every row.
            if file.num_records.is_some() && matches.deletes_every_row() {
                continue;
            }
            let mut batches =
                read_rows_as(&snapshot, &self.metadata, &file, writer.keeps_row_ids())?;
            let mut position = 0u64;
            while let Some(batch) = batches.next().await {
                let batch = batch?;
                copied += writer.copy_kept_rows(&batch, &matches, position).await?;
                position += batch.num_rows() as u64;
            }
        }
        task.outcome
            .count("copied", usize::try_from(copied).unwrap_or(usize::MAX));
        Ok(())
    }

    /// The outcome of `task`: with deletion vectors, each file's new vector (its old one
    /// merged in), written to one file; copy-on-write, the files to remove.
    async fn removals(&self, storage: &Storage, mut task: Task) -> Result<TaskOutcome> {
        let by_path: HashMap<&str, &PlannedFile> =
            self.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut vectors: Vec<(String, RoaringTreemap)> = Vec::new();
        for (path, rows) in std::mem::take(&mut task.rows) {
            let file = by_path.get(path.as_str()).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "a row's address names {path}, which is not a file this change read"
                ))
            })?;
            if rows.deleted.is_empty() {
                continue;
            }
            if !self.deletion_vectors {
                task.outcome.removed.push((path, None));
                continue;
            }
            let mut vector = match &file.deletion_vector {
                Some(descriptor) => deletion_vector::load(storage, descriptor).await?,
                None => RoaringTreemap::new(),
            };
            vector |= rows.deleted;
            let records = file.num_records.and_then(|n| u64::try_from(n).ok());
            match records.is_some_and(|records| vector.len() >= records) {
                true => task.outcome.removed.push((path, None)),
                false => vectors.push((path, vector)),
            }
        }
        if vectors.is_empty() {
            return Ok(task.outcome);
        }
        let bitmaps = vectors.iter().map(|(_, v)| v.clone()).collect();
        let (name, descriptors) = write_deletion_vectors(storage, bitmaps).await?;
        task.outcome.vector_file = Some(name);
        for ((path, _), descriptor) in vectors.into_iter().zip(descriptors) {
            task.outcome.removed.push((path, Some(descriptor)));
        }
        Ok(task.outcome)
    }

    fn config(&self, uri: &str) -> Result<TableConfiguration> {
        TableConfiguration::try_new(self.protocol.clone(), self.metadata.clone(), uri)
    }
}

/// The rows a task was given for one data file.
#[derive(Debug, Default, Clone)]
struct FileRows {
    /// Physical positions of the rows deleted or replaced.
    deleted: RoaringTreemap,
}

/// A task's work so far.
#[derive(Debug, Default)]
struct Task {
    rows: BTreeMap<String, FileRows>,
    outcome: TaskOutcome,
    /// Deleted rows are written as `delete` change rows: by a MERGE always, by a DELETE
    /// copy-on-write only (the change data feed reads the rows its deletion vectors mark
    /// from the vectors, as Delta on Spark's DELETE leaves them).
    deletes_write_changes: bool,
    /// A target row may be matched by several source rows (its repeats are skipped).
    allows_multiple_matches: bool,
    /// The table's URI, for messages.
    table: String,
    /// Per data file, the positions of the target rows a MERGE matched.
    matched: BTreeMap<String, RoaringTreemap>,
}

impl Task {
    /// Does what the rows of `batch` say.
    async fn take(&mut self, batch: &RecordBatch, writer: &mut RowWriter) -> Result<()> {
        let actions = utf8_column(batch, ACTION_COLUMN)?;
        let actions: Vec<RowAction> = (0..batch.num_rows())
            .map(|row| match actions.is_valid(row) {
                true => RowAction::parse(actions.value(row)),
                false => Err(Error::InvalidArgument(format!(
                    "a row has no {ACTION_COLUMN}"
                ))),
            })
            .collect::<Result<_>>()?;
        let clauses = match batch.column_by_name(CLAUSE_COLUMN) {
            Some(_) => Some(utf8_column(batch, CLAUSE_COLUMN)?),
            None => None,
        };
        let clause_of = |row: usize| {
            clauses
                .as_ref()
                .filter(|c| c.is_valid(row))
                .map(|c| c.value(row).to_string())
        };
        let repeated = self.mark_addresses(batch, &actions, &clause_of)?;
        let mut groups: BTreeMap<(usize, Option<String>), Vec<u32>> = BTreeMap::new();
        for (row, action) in actions.iter().enumerate() {
            if repeated.contains(&row) {
                continue;
            }
            let index = RowAction::ALL.iter().position(|a| a == action).unwrap_or(0);
            let rows = groups.entry((index, clause_of(row))).or_default();
            rows.push(u32::try_from(row).unwrap_or(u32::MAX));
        }
        for ((index, clause), rows) in groups {
            let rows =
                arrow::compute::take_record_batch(batch, &arrow_array::UInt32Array::from(rows))
                    .map_err(|error| Error::arrow("selecting rows", error))?;
            self.write(RowAction::ALL[index], clause.as_deref(), &rows, writer)
                .await?;
        }
        Ok(())
    }

    /// Records the addresses of the rows that leave the table; checks that a MERGE's target
    /// row is matched once (by the rows of `matched`
    /// clauses). Returns the rows to skip: repeats of a target row matched more than once
    /// where the merge allows it.
    fn mark_addresses(
        &mut self,
        batch: &RecordBatch,
        actions: &[RowAction],
        clause_of: &dyn Fn(usize) -> Option<String>,
    ) -> Result<HashSet<usize>> {
        let files = utf8_column(batch, ROW_FILE_COLUMN)?;
        let positions = batch
            .column_by_name(ROW_INDEX_COLUMN)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int64Type>())
            .ok_or_else(|| missing_column(ROW_INDEX_COLUMN))?;
        let mut repeated = HashSet::new();
        for (row, action) in actions.iter().enumerate() {
            let pair = action.is_pair_row() && clause_of(row).as_deref() == Some("matched");
            if !pair && !action.removes_address() {
                continue;
            }
            if files.is_null(row) || positions.is_null(row) {
                return Err(Error::InvalidArgument(format!(
                    "a row to delete, update or match has no address ({ROW_FILE_COLUMN}, \
                     {ROW_INDEX_COLUMN})"
                )));
            }
            let path = files.value(row);
            let position = u64::try_from(positions.value(row)).map_err(|_| {
                Error::InvalidArgument(format!("a row's {ROW_INDEX_COLUMN} is negative"))
            })?;
            if pair
                && !self
                    .matched
                    .entry(path.to_string())
                    .or_default()
                    .insert(position)
            {
                if !self.allows_multiple_matches {
                    return Err(self.multiple_matches(path, position));
                }
                repeated.insert(row);
                continue;
            }
            let file = self.rows.entry(path.to_string()).or_default();
            if action.removes_address() && !file.deleted.insert(position) {
                return Err(Error::InvalidArgument(format!(
                    "row {position} of {path} is changed twice by one operation"
                )));
            }
        }
        Ok(repeated)
    }

    fn multiple_matches(&self, path: &str, position: u64) -> Error {
        Error::MergeMultipleMatch {
            table: self.table.clone(),
            reason: format!(
                "the target row at position {position} of {path} matched more than one \
                 source row; a merge may update or delete a target row with one source row \
                 only (DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE): make the \
                 source rows unique per key, or narrow the merge condition"
            ),
        }
    }

    /// Writes `rows`, all of `action` (from a clause of kind `clause`), as data and change
    /// rows, and counts them.
    async fn write(
        &mut self,
        action: RowAction,
        clause: Option<&str>,
        rows: &RecordBatch,
        writer: &mut RowWriter,
    ) -> Result<()> {
        let count = rows.num_rows();
        let counted = match action {
            RowAction::Delete => {
                if self.deletes_write_changes {
                    writer.write_changes(rows, "delete").await?;
                }
                Some("deleted")
            }
            RowAction::Update => {
                writer.write_data(rows, false, RowOrigin::Existing).await?;
                Some("updated")
            }
            RowAction::UpdatePreimage => {
                writer.write_changes(rows, "update_preimage").await?;
                None
            }
            RowAction::UpdatePostimage => {
                writer.write_data(rows, false, RowOrigin::Existing).await?;
                writer.write_changes(rows, "update_postimage").await?;
                Some("updated")
            }
            RowAction::Insert => {
                writer.write_data(rows, false, RowOrigin::New).await?;
                writer.write_changes(rows, "insert").await?;
                Some("inserted")
            }
            RowAction::None => None,
        };
        if let Some(name) = counted {
            self.outcome.count(name, count);
            if let Some(clause) = clause {
                self.outcome.count(&format!("{name}.{clause}"), count);
            }
        }
        Ok(())
    }
}

/// What refusing the operation on an append-only table says (`None`: an append-only table
/// takes it); an unknown operation is an [`Error::InvalidArgument`].
fn refusal(options: &ChangeOptions) -> Result<Option<&'static str>> {
    match options.operation.as_str() {
        "DELETE" => Ok(Some("rows cannot be deleted")),
        "UPDATE" => Ok(Some("rows cannot be updated")),
        "MERGE" => Ok((!options.insert_only).then_some("a merge may only insert rows")),
        other => Err(Error::InvalidArgument(format!(
            "`{other}` is not an operation a distributed change runs (DELETE, UPDATE, MERGE)"
        ))),
    }
}

/// What narrows the target files a MERGE reads, from its condition: a target row that no
/// conjunct naming only the target holds, or whose equality key lies outside the source's
/// keys, matches no source row (so a merge without `WHEN NOT MATCHED BY SOURCE` clauses
/// leaves it alone), as Delta on Spark's merge prunes its target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MergePruning {
    /// The conjuncts naming only target columns, with the target alias removed, as this
    /// library's SQL; `None` when there are none.
    pub target_only: Option<String>,
    /// The equality conjuncts `target.column = other` of a top-level target column and a
    /// column of the other side: the target column's name and the other column's path.
    pub keys: Vec<(String, Vec<String>)>,
}

/// The [`MergePruning`] of a merge condition (this library's SQL) whose target columns
/// are qualified by `target_alias` (any case). A conjunct with an unqualified column names
/// neither side for sure and is left out.
///
/// Errors: [`Error::InvalidArgument`] when `condition` does not parse.
pub fn merge_pruning(condition: &str, target_alias: &str) -> Result<MergePruning> {
    let parsed = parse_sql(condition)?;
    let is_target = |path: &[String]| path.len() > 1 && path[0].eq_ignore_ascii_case(target_alias);
    let is_other = |path: &[String]| path.len() > 1 && !is_target(path);
    let mut target_only = Vec::new();
    let mut keys = Vec::new();
    for conjunct in parsed.conjuncts() {
        let paths = conjunct.column_paths();
        if !paths.is_empty() && paths.iter().all(|path| is_target(path)) {
            let stripped = conjunct.try_map_columns(&mut |path| {
                Ok::<_, Error>(path.get(1..).unwrap_or_default().to_vec())
            })?;
            target_only.push(stripped);
            continue;
        }
        if let Expr::Compare {
            op: CompareOp::Eq,
            left,
            right,
        } = conjunct
        {
            match (left.as_ref(), right.as_ref()) {
                (Expr::Column(t), Expr::Column(o)) | (Expr::Column(o), Expr::Column(t))
                    if t.len() == 2 && is_target(t) && is_other(o) =>
                {
                    keys.push((t[1].clone(), o.clone()));
                }
                _ => {}
            }
        }
    }
    Ok(MergePruning {
        target_only: Expr::conjunction(target_only).map(|expr| expr.to_string()),
        keys,
    })
}

/// Stages on `change` the target schema `evolution` asks for (a MERGE's only).
fn stage_schema_evolution(
    change: &mut RowChange,
    operation: &str,
    evolution: &SchemaEvolution,
) -> Result<()> {
    if operation != "MERGE" {
        return Err(Error::InvalidArgument(format!(
            "schema evolution is a MERGE's, not a {operation}'s"
        )));
    }
    let source = parse_schema(&evolution.source)?;
    let alias = evolution.target_alias.as_deref().unwrap_or_default();
    let assigned: Option<Vec<Vec<String>>> = evolution.assigned.as_ref().map(|names| {
        names
            .iter()
            .map(|name| assigned_path(name, alias))
            .collect()
    });
    stage_evolved_schema(change, &source, assigned.as_deref())
}

fn parse_prune(options: &ChangeOptions) -> Result<Option<Expr>> {
    options.prune.as_deref().map(parse_sql).transpose()
}

fn planned_file(file: &Candidate) -> PlannedFile {
    PlannedFile {
        path: listed_path(file),
        num_records: file.num_records,
        deletion_vector: file.deletion_vector.clone(),
    }
}

/// The path of a candidate as its file list row names it.
fn listed_path(file: &Candidate) -> String {
    file.listed
        .column_by_name("path")
        .and_then(|c| c.as_string_opt::<i32>())
        .filter(|c| c.len() == 1 && c.is_valid(0))
        .map(|c| c.value(0).to_string())
        .unwrap_or_default()
}

/// The text column `name` of `batch` (large or view strings cast to plain ones).
fn utf8_column(batch: &RecordBatch, name: &str) -> Result<StringArray> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| missing_column(name))?;
    let text = arrow::compute::cast(column, &arrow_schema::DataType::Utf8)
        .map_err(|error| Error::arrow(format!("reading the column {name}"), error))?;
    Ok(text.as_string::<i32>().clone())
}

fn missing_column(name: &str) -> Error {
    Error::InvalidArgument(format!(
        "the rows given to a change task have no column {name}"
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, BooleanArray, Int64Array};
    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::expr::evaluate;
    use crate::ops::dml::filter;
    use crate::ops::dml::test_tables::{ids, ids_batch, table_of};
    use crate::scan::{Scan, ScanOptions};
    use crate::table::Table;

    fn options(operation: &str, condition: &str) -> ChangeOptions {
        ChangeOptions {
            operation: operation.into(),
            condition: Some(condition.into()),
            prune: Some(condition.into()),
            prune_is_condition: true,
            ..ChangeOptions::default()
        }
    }

    /// What the engine does: reads the candidate rows with their addresses and gives each
    /// row matching `condition` the action `action` (the others are not given), with `id`
    /// multiplied by 100 in the rows written as updates.
    async fn engine_rows(
        table: &Table,
        plan: &DistributedChange,
        condition: &str,
        action: &str,
    ) -> Vec<RecordBatch> {
        let snapshot = table
            .snapshot(SnapshotAt::Version(plan.version()))
            .await
            .unwrap();
        let paths: HashSet<String> = plan.candidate_paths().into_iter().collect();
        let scan_options = ScanOptions {
            row_address: true,
            row_tracking: plan.keeps_row_ids(),
            only_files: Some(Arc::new(paths)),
            ..ScanOptions::default()
        };
        let scan = Scan::new(&snapshot, scan_options).await.unwrap();
        let condition = parse_sql(condition).unwrap();
        let mut rows = Vec::new();
        for batch in scan.to_batches().await.unwrap() {
            let matched = evaluate(&condition, &batch).unwrap();
            let actions: StringArray = matched
                .iter()
                .map(|hit| (hit == Some(true)).then_some(action))
                .collect();
            let ids = batch.column(0).as_primitive::<Int64Type>();
            let written: Int64Array = ids
                .iter()
                .zip(actions.iter())
                .map(|(id, a)| match a {
                    Some("update") => id.map(|id| id * 100),
                    _ => id,
                })
                .collect();
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            columns[0] = Arc::new(written);
            columns.push(Arc::new(actions.clone()));
            let mut fields: Vec<Field> = batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new(
                ACTION_COLUMN,
                arrow_schema::DataType::Utf8,
                true,
            ));
            let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
            let given: BooleanArray = actions.iter().map(|a| Some(a.is_some())).collect();
            rows.push(filter(&batch, &given).unwrap());
        }
        rows
    }

    /// Plans, runs the rows in two tasks (the first batch in one, the rest in the other:
    /// each file is one batch here) and commits.
    async fn run(table: &Table, options: ChangeOptions, action: &str) -> CommitResult {
        let plan = DistributedChange::plan(table.storage(), options.clone())
            .await
            .unwrap();
        let plan = DistributedChange::from_json(&plan.to_json().unwrap()).unwrap();
        let condition = options.condition.unwrap();
        let mut rows = engine_rows(table, &plan, &condition, action).await;
        let rest = rows.split_off(rows.len().min(1));
        let mut outcomes = Vec::new();
        for share in [rows, rest] {
            let stream = futures::stream::iter(share.into_iter().map(Ok));
            let outcome = plan.write_task(table.storage(), stream).await.unwrap();
            let text = serde_json::to_string(&outcome).unwrap();
            outcomes.push(serde_json::from_str(&text).unwrap());
        }
        plan.commit(table.storage(), outcomes).await.unwrap()
    }

    async fn two_file_table(dir: &std::path::Path, deletion_vectors: bool) -> Table {
        let dv = deletion_vectors.to_string();
        let configuration = [("delta.enableDeletionVectors", dv.as_str())];
        let table = table_of(dir, ids_batch(0..5), &configuration).await;
        let stream = futures::stream::iter([Ok(ids_batch(5..10))]);
        crate::ops::write_table(
            table.storage(),
            ids_batch(0..0).schema(),
            stream,
            Default::default(),
        )
        .await
        .unwrap();
        table
    }

    #[tokio::test]
    async fn a_delete_marks_deletion_vectors_merged_with_the_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let table = two_file_table(dir.path(), true).await;
        let first = run(&table, options("DELETE", "id = 1 OR id = 7"), "delete").await;
        assert_eq!(first.metrics["numDeletedRows"], 2);
        assert_eq!(first.metrics["numDeletionVectorsAdded"], 2);
        let second = run(&table, options("DELETE", "id = 2 OR id = 3"), "delete").await;
        assert_eq!(second.metrics["numDeletionVectorsUpdated"], 1);
        assert_eq!(second.metrics["numFilesAfterSkipping"], 1);
        assert_eq!(ids(&table).await, vec![0, 4, 5, 6, 8, 9]);
        let log = std::fs::read_to_string(dir.path().join("_delta_log/00000000000000000003.json"))
            .unwrap();
        assert!(
            log.contains(r#""predicate":"[\"id = 2 OR id = 3\"]""#),
            "{log}"
        );
    }

    #[tokio::test]
    async fn an_update_rewrites_touched_files_without_deletion_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let table = two_file_table(dir.path(), false).await;
        let done = run(&table, options("UPDATE", "id >= 8"), "update").await;
        assert_eq!(done.metrics["numUpdatedRows"], 2);
        assert_eq!(done.metrics["numCopiedRows"], 3);
        assert_eq!(done.metrics["numRemovedFiles"], 1);
        assert_eq!(ids(&table).await, vec![0, 1, 2, 3, 4, 5, 6, 7, 800, 900]);
    }

    #[tokio::test]
    async fn a_rewritten_file_without_statistics_keeps_its_other_rows() {
        let dir = tempfile::tempdir().unwrap();
        let table = two_file_table(dir.path(), false).await;
        for commit in ["00000000000000000000.json", "00000000000000000001.json"] {
            let path = dir.path().join("_delta_log").join(commit);
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<String> = text
                .lines()
                .map(|line| {
                    let mut action: Value = serde_json::from_str(line).unwrap();
                    if let Some(add) = action.get_mut("add").and_then(Value::as_object_mut) {
                        add.remove("stats");
                    }
                    action.to_string()
                })
                .collect();
            std::fs::write(&path, lines.join("\n")).unwrap();
        }
        let done = run(&table, options("UPDATE", "id >= 8"), "update").await;
        assert_eq!(done.metrics["numUpdatedRows"], 2);
        assert_eq!(ids(&table).await, vec![0, 1, 2, 3, 4, 5, 6, 7, 800, 900]);
    }

    #[tokio::test]
    async fn deleting_every_row_of_a_file_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let table = two_file_table(dir.path(), true).await;
        let done = run(&table, options("DELETE", "id < 5"), "delete").await;
        assert_eq!(done.metrics["numRemovedFiles"], 1);
        assert_eq!(done.metrics["numDeletionVectorsAdded"], 0);
        assert_eq!(ids(&table).await, vec![5, 6, 7, 8, 9]);
    }

    #[tokio::test]
    async fn a_row_changed_twice_is_refused_and_nothing_is_committed() {
        let dir = tempfile::tempdir().unwrap();
        let table = two_file_table(dir.path(), true).await;
        let plan = DistributedChange::plan(table.storage(), options("DELETE", "id = 1"))
            .await
            .unwrap();
        let rows = engine_rows(&table, &plan, "id = 1", "delete").await;
        let twice = futures::stream::iter(rows.iter().chain(&rows).cloned().map(Ok));
        let failure = plan.write_task(table.storage(), twice).await.unwrap_err();
        assert!(matches!(failure.error, Error::InvalidArgument(_)));
        assert_eq!(table.latest_version().await.unwrap(), 1);
    }

    /// `rows` (the candidate rows of `engine_rows`, every one `action`) with a clause kind.
    fn with_clause(rows: &[RecordBatch], clause: &str) -> Vec<RecordBatch> {
        rows.iter()
            .map(|batch| {
                let mut fields: Vec<Field> = batch
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone())
                    .collect();
                fields.push(Field::new(
                    CLAUSE_COLUMN,
                    arrow_schema::DataType::Utf8,
                    true,
                ));
                let mut columns = batch.columns().to_vec();
                let kinds = StringArray::from(vec![clause; batch.num_rows()]);
                columns.push(Arc::new(kinds));
                RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
            })
            .collect()
    }

    fn merge_options(allows_multiple_matches: bool) -> ChangeOptions {
        ChangeOptions {
            operation: "MERGE".into(),
            condition: Some("t.id = s.id".into()),
            allows_multiple_matches,
            metrics: BTreeMap::from([("numSourceRows".to_string(), 3)]),
            ..ChangeOptions::default()
        }
    }

    #[tokio::test]
    async fn a_merge_counts_its_clauses_and_refuses_a_row_matched_twice() {
        let dir = tempfile::tempdir().unwrap();
        let table = two_file_table(dir.path(), true).await;
        let plan = DistributedChange::plan(table.storage(), merge_options(false))
            .await
            .unwrap();
        let updates = with_clause(
            &engine_rows(&table, &plan, "id = 2", "update").await,
            "matched",
        );
        let deletes = with_clause(
            &engine_rows(&table, &plan, "id = 9", "delete").await,
            "not_matched_by_source",
        );
        let mut insert = with_clause(&[ids_batch(100..101)], "not_matched").remove(0);
        let schema = updates[0].schema();
        let nulls = |ty: &arrow_schema::DataType| arrow_array::new_null_array(ty, 1);
        let mut columns: Vec<ArrayRef> = vec![insert.column(0).clone()];
        for field in schema.fields().iter().skip(1) {
            columns.push(match field.name().as_str() {
                ACTION_COLUMN => Arc::new(StringArray::from(vec!["insert"])),
                CLAUSE_COLUMN => Arc::new(StringArray::from(vec!["not_matched"])),
                _ => nulls(field.data_type()),
            });
        }
        let nullable: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        insert = RecordBatch::try_new(Arc::new(Schema::new(nullable)), columns).unwrap();
        let rows: Vec<RecordBatch> = updates
            .iter()
            .chain(&deletes)
            .cloned()
            .chain([insert])
            .collect();
        let outcome = plan
            .write_task(
                table.storage(),
                futures::stream::iter(rows.into_iter().map(Ok)),
            )
            .await
            .unwrap();
        let done = plan.commit(table.storage(), vec![outcome]).await.unwrap();
        assert_eq!(done.metrics["numTargetRowsMatchedUpdated"], 1);
        assert_eq!(done.metrics["numTargetRowsNotMatchedBySourceDeleted"], 1);
        assert_eq!(done.metrics["numTargetRowsInserted"], 1);
        assert_eq!(done.metrics["numSourceRows"], 3);
        assert_eq!(ids(&table).await, vec![0, 1, 3, 4, 5, 6, 7, 8, 100, 200]);

        let plan = DistributedChange::plan(table.storage(), merge_options(false))
            .await
            .unwrap();
        let twice = with_clause(
            &engine_rows(&table, &plan, "id = 1", "none").await,
            "matched",
        );
        let rows = twice.iter().chain(&twice).cloned().map(Ok);
        let failure = plan
            .write_task(table.storage(), futures::stream::iter(rows))
            .await;
        assert!(matches!(
            failure.unwrap_err().error,
            Error::MergeMultipleMatch { .. }
        ));
    }

    #[test]
    fn merge_pruning_keeps_target_only_conjuncts_and_equality_keys() {
        let condition = "t.id = s.id AND T.p = 'a' AND s.x > 1 AND t.q < s.q AND n = 4 \
                         AND s.k = t.k";
        let pruning = merge_pruning(condition, "t").unwrap();
        let target_only = parse_sql(pruning.target_only.as_deref().unwrap()).unwrap();
        assert_eq!(target_only, parse_sql("p = 'a'").unwrap());
        let keys = [("id", ["s", "id"]), ("k", ["s", "k"])];
        let expected: Vec<(String, Vec<String>)> = keys
            .iter()
            .map(|(t, o)| (t.to_string(), o.iter().map(|p| p.to_string()).collect()))
            .collect();
        assert_eq!(pruning.keys, expected);
        let none = merge_pruning("s.id = 1 OR t.id = 2", "t").unwrap();
        assert_eq!(none, MergePruning::default());
        assert!(merge_pruning("t.id <=> s.id", "t").is_err());
    }

    /// One MERGE insert row of `id` and `extra` in a task's layout (no address).
    fn insert_row(id: i64, extra: &str) -> RecordBatch {
        let fields = vec![
            Field::new("id", arrow_schema::DataType::Int64, true),
            Field::new("extra", arrow_schema::DataType::Utf8, true),
            Field::new(ROW_FILE_COLUMN, arrow_schema::DataType::Utf8, true),
            Field::new(ROW_INDEX_COLUMN, arrow_schema::DataType::Int64, true),
            Field::new(ACTION_COLUMN, arrow_schema::DataType::Utf8, true),
            Field::new(CLAUSE_COLUMN, arrow_schema::DataType::Utf8, true),
        ];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![id])),
            Arc::new(StringArray::from(vec![extra])),
            Arc::new(StringArray::from(vec![None::<&str>])),
            Arc::new(Int64Array::from(vec![None])),
            Arc::new(StringArray::from(vec!["insert"])),
            Arc::new(StringArray::from(vec!["not_matched"])),
        ];
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    #[tokio::test]
    async fn a_merge_with_schema_evolution_commits_the_evolved_schema() {
        let dir = tempfile::tempdir().unwrap();
        let configuration = [("delta.columnMapping.mode", "name")];
        let table = table_of(dir.path(), ids_batch(0..3), &configuration).await;
        let source = r#"{"type":"struct","fields":[
            {"name":"id","type":"long","nullable":true,"metadata":{}},
            {"name":"extra","type":"string","nullable":true,"metadata":{}},
            {"name":"unused","type":"integer","nullable":true,"metadata":{}}]}"#;
        let options = ChangeOptions {
            schema_evolution: Some(SchemaEvolution {
                source: source.into(),
                assigned: Some(vec!["t.extra".into(), "id".into()]),
                target_alias: Some("t".into()),
            }),
            inserts: true,
            insert_only: true,
            ..merge_options(true)
        };
        let plan = DistributedChange::plan(table.storage(), options)
            .await
            .unwrap();
        let plan = DistributedChange::from_json(&plan.to_json().unwrap()).unwrap();
        let schema = parse_schema(plan.schema_json().unwrap()).unwrap();
        let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["id", "extra"]);
        let rows = futures::stream::iter([Ok(insert_row(7, "new"))]);
        let outcome = plan.write_task(table.storage(), rows).await.unwrap();
        let done = plan.commit(table.storage(), vec![outcome]).await.unwrap();
        assert_eq!(done.metrics["numTargetRowsInserted"], 1);
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let committed = snapshot.schema();
        let extra = committed.fields.iter().find(|f| f.name == "extra").unwrap();
        let planned = schema.fields.iter().find(|f| f.name == "extra").unwrap();
        assert_eq!(
            extra.metadata, planned.metadata,
            "the plan's physical name is kept"
        );
        assert_eq!(ids(&table).await, vec![0, 1, 2, 7]);

        let update = ChangeOptions {
            schema_evolution: Some(SchemaEvolution::default()),
            ..options_of_update()
        };
        let refused = DistributedChange::plan(table.storage(), update).await;
        assert!(matches!(refused, Err(Error::InvalidArgument(_))));
    }

    fn options_of_update() -> ChangeOptions {
        options("UPDATE", "id = 1")
    }
}
