//! Merging a source into a table: [`merge`], as Delta on Spark's
//! `MERGE INTO target USING source ON <condition> WHEN ...` (`MergeIntoCommand`,
//! `ClassicMergeExecutor`).
//!
//! Semantics are Spark's: a target row and a source row match when the merge condition
//! holds for them (NULL is not a match, so a NULL key never matches); to each matched
//! target row the first `WHEN MATCHED` clause whose condition holds applies (update or
//! delete; none: the row stays), to each source row no target row matched the first
//! `WHEN NOT MATCHED` clause (insert), to each target row no source row matched the first
//! `WHEN NOT MATCHED BY SOURCE` clause (update or delete). A target row matched by more than
//! one source row is an error ([`Error::MergeMultipleMatch`]) unless the only matched clause
//! is an unconditional delete.
//!
//! How: the source is read into memory and indexed by the equality keys of the condition
//! (`join.rs`); only the target files that may hold a matching row are read, chosen by
//! partition values and statistics against the condition's target-only conjuncts and the
//! range of the source's keys (every file when a `NOT MATCHED BY SOURCE` clause exists);
//! each file's rows are joined with the source (`batch.rs`). Touched rows are deleted as
//! [`super::delete`] deletes them (deletion vectors with `delta.enableDeletionVectors`, else
//! the touched files are rewritten with their untouched rows); updated and inserted rows go
//! to new files; with `delta.enableChangeDataFeed`, change data files hold `update_preimage`,
//! `update_postimage`, `delete` and `insert` rows (spec "Change Data Files"); with row
//! tracking, updated rows keep their row id and get the commit's version, inserted rows get
//! fresh ids (spec "Row Tracking").

mod batch;
mod clauses;
mod join;

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use futures::StreamExt;

pub use clauses::{MatchedAction, MergeClauses, NotMatchedAction, NotMatchedBySourceAction};

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::snapshot::Snapshot;
use crate::table::{SnapshotAt, Table};
use crate::transaction::Transaction;
use crate::write::{WriteFailure, WriterOptions};

use super::delete::log_path;
use super::dml::{
    candidates, commit_row_changes, load_deletion_vector, read_every_row, row_tracking_columns,
    rows_in, stage_deletion_vectors, stage_written, Candidate, Candidates, FileMatches, Metrics,
    RowWriter,
};
use super::write::{TableCommit, DATA_WRITER_FEATURES};
use batch::{BatchChanges, Counts, Plan};
use clauses::{Resolved, Sides};
use join::{target_filter, SourceIndex};

/// The metrics Delta on Spark writes in the `commitInfo` of a `MERGE`.
const SPARK_METRICS: [&str; 23] = [
    "numSourceRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsMatchedUpdated",
    "numTargetRowsNotMatchedBySourceUpdated",
    "numTargetRowsDeleted",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted",
    "numTargetRowsCopied",
    "numOutputRows",
    "numTargetFilesAdded",
    "numTargetFilesRemoved",
    "numTargetChangeFilesAdded",
    "numTargetBytesAdded",
    "numTargetBytesRemoved",
    "numTargetDeletionVectorsAdded",
    "numTargetDeletionVectorsRemoved",
    "numTargetDeletionVectorsUpdated",
    "executionTimeMs",
    "scanTimeMs",
    "rewriteTimeMs",
    "materializeSourceTimeMs",
    "numTargetChangeFileBytes",
];

/// The options of [`merge`].
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// The name that qualifies source columns (`s` in `s.id`); `source` by default.
    pub source_alias: String,
    /// The name that qualifies target columns; `target` by default.
    pub target_alias: String,
    /// How the new files are written.
    pub writer: WriterOptions,
    /// Extra `commitInfo` fields (such as `userMetadata`).
    pub commit_info: serde_json::Map<String, serde_json::Value>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            source_alias: "source".into(),
            target_alias: "target".into(),
            writer: WriterOptions::default(),
            commit_info: serde_json::Map::new(),
        }
    }
}

/// Merges `source` (its batches, of `source_schema`) into the latest version of `table`
/// on the condition `on` with `clauses` (see the module documentation) and commits
/// (operation `MERGE`, parameters `predicate`, `matchedPredicates`, `notMatchedPredicates`,
/// `notMatchedBySourcePredicates`, Spark's metrics: `numSourceRows`,
/// `numTargetRowsInserted`, `numTargetRowsUpdated`, `numTargetRowsDeleted`,
/// `numTargetRowsCopied`, `numOutputRows`, `numTargetFilesAdded`, `numTargetFilesRemoved`,
/// `numTargetDeletionVectorsAdded`, ...). Column references are qualified by the aliases
/// of [`MergeOptions`] or bare when only one side has the column. Nothing is committed when
/// no row changes. The transaction records the files it read, so a concurrent commit adding
/// rows they may match or removing them fails it with a conflict.
///
/// Errors, with nothing committed: [`Error::InvalidArgument`] for an unknown or ambiguous
/// column, a clause naming a side it cannot see, values that do not convert to their
/// column's type, an unconditional clause before another of its kind, no clause at all;
/// [`Error::SchemaMismatch`] for `UPDATE SET *` / `INSERT *` when the source's columns are
/// not the target's (no schema evolution); [`Error::MergeMultipleMatch`] for a target row
/// matched by several source rows; [`Error::ConstraintViolation`] for rows breaking a rule
/// of the table; [`Error::NotAllowed`] for updates or deletes on an append-only table;
/// conflicts as [`crate::Transaction::commit`] reports them. Files written before a failure
/// are named in the [`WriteFailure`].
pub async fn merge(
    table: &Table,
    source: Vec<RecordBatch>,
    source_schema: SchemaRef,
    on: Expr,
    clauses: MergeClauses,
    options: MergeOptions,
) -> Result<TableCommit, WriteFailure> {
    let snapshot = table
        .snapshot(SnapshotAt::Latest)
        .await
        .map_err(WriteFailure::unwritten)?;
    let started = Instant::now();
    let mut run = MergeRun {
        transaction: snapshot.transaction("MERGE"),
        metrics: Metrics::default(),
        written: Vec::new(),
        counts: Counts::default(),
        snapshot,
    };
    let prepared = run
        .prepare(source, source_schema, &on, clauses, &options)
        .await;
    if let Err(error) = prepared {
        return Err(WriteFailure {
            error,
            written_files: run.written,
        });
    }
    run.metrics
        .set("executionTimeMs", started.elapsed().as_millis() as u64);
    run.commit().await
}

/// A merge being prepared.
struct MergeRun {
    snapshot: Snapshot,
    transaction: Transaction,
    metrics: Metrics,
    counts: Counts,
    /// Data, change data and deletion vector files written so far.
    written: Vec<String>,
}

/// A target file with rows the merge touched.
type Touched = (Candidate, FileMatches);

impl MergeRun {
    /// Stages every action of the merge.
    async fn prepare(
        &mut self,
        source: Vec<RecordBatch>,
        source_schema: SchemaRef,
        on: &Expr,
        clauses: MergeClauses,
        options: &MergeOptions,
    ) -> Result<()> {
        let materialize_started = Instant::now();
        let plan = Arc::new(self.plan(source, source_schema, on, clauses, options)?);
        self.metrics.set(
            "materializeSourceTimeMs",
            materialize_started.elapsed().as_millis() as u64,
        );
        self.metrics
            .set("numSourceRows", plan.source.num_rows() as u64);
        let scan_started = Instant::now();
        let found = self.target_files(&plan).await?;
        let config = self.snapshot.table_configuration().clone();
        let row_tracking = row_tracking_columns(&config, &mut self.transaction)?;
        let mut writer = RowWriter::try_new(
            &config,
            self.snapshot.storage(),
            &options.writer,
            row_tracking,
            config.properties().enable_change_data_feed,
        )?;
        let copy = !config.is_deletion_vectors_enabled();
        let mut source_matched = vec![false; plan.source.num_rows()];
        let mut touched: Vec<Touched> = Vec::new();
        for file in found.files {
            let outcome = self
                .merge_file(&plan, file, &mut writer, &mut source_matched, copy)
                .await;
            match outcome {
                Ok(Some(file)) => touched.push(file),
                Ok(None) => {}
                Err(error) => {
                    self.written.extend(writer.abort().await);
                    return Err(error);
                }
            }
        }
        self.metrics
            .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
        let rewrite_started = Instant::now();
        if let Err(error) = self.insert(&plan, &source_matched, &mut writer).await {
            self.written.extend(writer.abort().await);
            return Err(error);
        }
        self.stage_files(writer).await?;
        self.remove_touched(touched, copy).await?;
        self.metrics
            .set("rewriteTimeMs", rewrite_started.elapsed().as_millis() as u64);
        Ok(())
    }

    /// Checks the table can take the merge, resolves the clauses, stages the operation
    /// parameters and indexes the source.
    fn plan(
        &mut self,
        source: Vec<RecordBatch>,
        source_schema: SchemaRef,
        on: &Expr,
        clauses: MergeClauses,
        options: &MergeOptions,
    ) -> Result<Plan> {
        let config = self.snapshot.table_configuration().clone();
        let changes_rows = !clauses.matched.is_empty() || !clauses.not_matched_by_source.is_empty();
        if config.properties().append_only && changes_rows {
            return Err(Error::NotAllowed(format!(
                "{} is append-only (delta.appendOnly): a merge may only insert rows",
                config.table_uri()
            )));
        }
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        self.transaction
            .add_data_writer_features(&DATA_WRITER_FEATURES);
        let target = Arc::new(crate::schema::to_arrow_schema(config.schema())?);
        let source = arrow::compute::concat_batches(&source_schema, &source)
            .map_err(|error| Error::arrow("reading the merge source", error))?;
        let sides = Sides {
            target_alias: options.target_alias.clone(),
            source_alias: options.source_alias.clone(),
            target,
            source: source_schema,
        };
        let table = config.table_uri().to_string();
        let resolved = Resolved::try_new(on, clauses, sides, &table)?;
        self.stage_parameters(&resolved, options);
        let index = SourceIndex::build(&resolved, &source)?;
        Ok(Plan {
            resolved,
            source,
            index,
            now_micros: chrono::Utc::now().timestamp_micros(),
            row_tracking: config.is_row_tracking_enabled(),
            table,
        })
    }

    /// `predicate`, `matchedPredicates`, `notMatchedPredicates` and
    /// `notMatchedBySourcePredicates` as Spark writes them, and the caller's `commitInfo`.
    fn stage_parameters(&mut self, resolved: &Resolved, options: &MergeOptions) {
        let predicate = serde_json::Value::from(vec![resolved.on.to_string()]);
        self.transaction
            .set_operation_parameter("predicate", predicate.to_string());
        let describe = |clauses: &[clauses::Clause], kind: &dyn Fn(&clauses::Clause) -> &'static str| {
            let list: Vec<serde_json::Value> =
                clauses.iter().map(|c| c.describe(kind(c))).collect();
            serde_json::Value::from(list).to_string()
        };
        let update_or_delete = |c: &clauses::Clause| if c.is_delete() { "delete" } else { "update" };
        self.transaction.set_operation_parameter(
            "matchedPredicates",
            describe(&resolved.matched, &update_or_delete),
        );
        self.transaction.set_operation_parameter(
            "notMatchedPredicates",
            describe(&resolved.not_matched, &|_| "insert"),
        );
        self.transaction.set_operation_parameter(
            "notMatchedBySourcePredicates",
            describe(&resolved.not_matched_by_source, &update_or_delete),
        );
        for (key, value) in &options.commit_info {
            self.transaction.set_commit_info(key, value.clone());
        }
    }

    /// The target files that may hold rows the merge touches or matches (every file with a
    /// `NOT MATCHED BY SOURCE` clause; none when no source row can match), recorded as read.
    async fn target_files(&mut self, plan: &Plan) -> Result<Candidates> {
        let config = self.snapshot.table_configuration().clone();
        let every_file = !plan.resolved.not_matched_by_source.is_empty();
        let filter = match every_file {
            true => None,
            false => target_filter(&plan.resolved, &plan.index, &plan.source, config.schema())?,
        };
        let mut found = candidates(&self.snapshot, filter.as_ref()).await?;
        self.metrics
            .set("numTargetFilesBeforeSkipping", found.files_before_skipping);
        self.metrics
            .set("numTargetBytesBeforeSkipping", found.bytes_before_skipping);
        if !every_file && plan.index.is_empty() {
            found.files.clear();
        }
        self.metrics
            .set("numTargetFilesAfterSkipping", found.files.len() as u64);
        self.metrics.set(
            "numTargetBytesAfterSkipping",
            found.files.iter().map(|f| f.size.max(0) as u64).sum(),
        );
        match &filter {
            Some(filter) => self.transaction.record_read_predicate(filter.clone()),
            None => self.transaction.record_read_whole_table(),
        }
        let keys: Vec<String> = found.files.iter().map(|f| log_path(&f.add)).collect();
        self.transaction
            .record_read_files(keys.iter().map(String::as_str));
        Ok(found)
    }

    /// Merges the rows of one target file; returns it with the rows touched, if any. With
    /// `copy` (copy-on-write), a touched file's other live rows are written again.
    async fn merge_file(
        &mut self,
        plan: &Arc<Plan>,
        file: Candidate,
        writer: &mut RowWriter,
        source_matched: &mut [bool],
        copy: bool,
    ) -> Result<Option<Touched>> {
        let deleted_before = load_deletion_vector(&self.snapshot, &file).await?;
        let mut rows = read_every_row(&self.snapshot, &file, None, plan.row_tracking)?;
        let mut matches = FileMatches {
            deleted_before,
            ..FileMatches::default()
        };
        let mut kept_batches: Vec<(u64, RecordBatch)> = Vec::new();
        while let Some(batch) = rows.next().await {
            let batch = batch?;
            let first = matches.physical_rows;
            let live: Vec<bool> = (0..batch.num_rows() as u64)
                .map(|row| !matches.deleted_before.contains(first + row))
                .collect();
            let job = (plan.clone(), batch.clone());
            let changes = crate::cpu::run(
                move || job.0.merge_batch(&job.1, &live),
                |reason| Error::InvalidArgument(format!("merging target rows: {reason}")),
            )
            .await?;
            for source in &changes.matched_sources {
                source_matched[*source as usize] = true;
            }
            matches
                .matched
                .extend(changes.touched.iter().map(|row| first + u64::from(*row)));
            self.write(changes, writer).await?;
            matches.physical_rows += batch.num_rows() as u64;
            if copy {
                kept_batches.push((first, batch));
            }
        }
        if let Some(records) = file.num_records {
            matches.physical_rows = matches
                .physical_rows
                .max(u64::try_from(records).unwrap_or(0));
        }
        if matches.matched.is_empty() {
            return Ok(None);
        }
        for (first, batch) in kept_batches {
            let gone = rows_in(&matches.deleted_before, batch.num_rows(), first)?;
            let touched = rows_in(&matches.matched, batch.num_rows(), first)?;
            let kept = keep_mask(&gone, &touched)?;
            let rows = batch::select(&batch, &kept)?;
            self.metrics.add("numTargetRowsCopied", rows.num_rows() as u64);
            writer.write_data(&rows, true).await?;
        }
        Ok(Some((file, matches)))
    }

    /// Inserts the source rows no target row matched, as the `WHEN NOT MATCHED` clauses say.
    async fn insert(
        &mut self,
        plan: &Arc<Plan>,
        source_matched: &[bool],
        writer: &mut RowWriter,
    ) -> Result<()> {
        let unmatched: Vec<u32> = source_matched
            .iter()
            .enumerate()
            .filter(|(_, matched)| !**matched)
            .map(|(row, _)| row as u32)
            .collect();
        let job = plan.clone();
        let changes = crate::cpu::run(
            move || job.insert(&unmatched),
            |reason| Error::InvalidArgument(format!("inserting source rows: {reason}")),
        )
        .await?;
        self.write(changes, writer).await
    }

    /// Writes the new rows and change rows of `changes`.
    async fn write(&mut self, changes: BatchChanges, writer: &mut RowWriter) -> Result<()> {
        self.counts.add(changes.counts);
        for rows in &changes.written {
            writer.write_data(rows, false).await?;
        }
        for (rows, change_type) in &changes.changes {
            writer.write_changes(rows, change_type).await?;
        }
        Ok(())
    }

    /// Closes the writer and stages the adds and `cdc` actions of its files.
    async fn stage_files(&mut self, writer: RowWriter) -> Result<()> {
        let (data, changes) = match writer.finish().await {
            Ok(done) => done,
            Err(written) => {
                self.written.extend(written);
                return Err(Error::InvalidArgument(
                    "closing the merged files failed".into(),
                ));
            }
        };
        self.written.extend(data.files.iter().map(|f| f.path.clone()));
        self.written.extend(changes.iter().map(|f| f.path.clone()));
        stage_written(&mut self.transaction, &data.files, &changes, &mut self.metrics)
    }

    /// Deletes the touched rows of the target files: deletion vectors, or (copy-on-write)
    /// the files removed, their untouched rows having been written again.
    async fn remove_touched(&mut self, touched: Vec<Touched>, copy: bool) -> Result<()> {
        let removed_bytes: u64 = touched.iter().map(|(f, _)| f.size.max(0) as u64).sum();
        self.metrics.add("numRemovedBytes", removed_bytes);
        if !copy {
            let dv_file = stage_deletion_vectors(
                &self.snapshot,
                &mut self.transaction,
                touched,
                &mut self.metrics,
            )
            .await?;
            self.written.extend(dv_file);
            return Ok(());
        }
        for (file, _) in &touched {
            self.transaction.remove_files(&file.add, true)?;
            self.metrics.add("numRemovedFiles", 1);
            self.metrics.add(
                "numDeletionVectorsRemoved",
                u64::from(file.deletion_vector.is_some()),
            );
        }
        Ok(())
    }

    /// Commits what was staged (nothing when no row changed), with Spark's metric names.
    async fn commit(mut self) -> Result<TableCommit, WriteFailure> {
        let counts = self.counts;
        let updated = counts.matched_updated + counts.not_matched_by_source_updated;
        let deleted = counts.matched_deleted + counts.not_matched_by_source_deleted;
        let copied = self.metrics.get("numTargetRowsCopied");
        let m = &mut self.metrics;
        m.set("numTargetRowsInserted", counts.inserted);
        m.set("numTargetRowsUpdated", updated);
        m.set("numTargetRowsMatchedUpdated", counts.matched_updated);
        m.set(
            "numTargetRowsNotMatchedBySourceUpdated",
            counts.not_matched_by_source_updated,
        );
        m.set("numTargetRowsDeleted", deleted);
        m.set("numTargetRowsMatchedDeleted", counts.matched_deleted);
        m.set(
            "numTargetRowsNotMatchedBySourceDeleted",
            counts.not_matched_by_source_deleted,
        );
        m.set("numOutputRows", counts.inserted + updated + copied);
        for (spark, ours) in [
            ("numTargetFilesAdded", "numAddedFiles"),
            ("numTargetFilesRemoved", "numRemovedFiles"),
            ("numTargetChangeFilesAdded", "numAddedChangeFiles"),
            ("numTargetChangeFileBytes", "changeFileBytes"),
            ("numTargetBytesAdded", "numAddedBytes"),
            ("numTargetBytesRemoved", "numRemovedBytes"),
            ("numTargetDeletionVectorsAdded", "numDeletionVectorsAdded"),
            ("numTargetDeletionVectorsRemoved", "numDeletionVectorsRemoved"),
            ("numTargetDeletionVectorsUpdated", "numDeletionVectorsUpdated"),
        ] {
            let value = m.get(ours);
            m.0.remove(ours);
            m.set(spark, value);
        }
        let changed = counts.inserted + updated + deleted > 0;
        commit_row_changes(
            self.snapshot,
            self.transaction,
            self.metrics,
            &SPARK_METRICS,
            changed,
            self.written,
        )
        .await
    }
}

/// True for the rows neither deleted before nor touched.
fn keep_mask(gone: &BooleanArray, touched: &BooleanArray) -> Result<BooleanArray> {
    let dropped = arrow::compute::or(gone, touched)
        .map_err(|error| Error::arrow("selecting rows", error))?;
    arrow::compute::not(&dropped).map_err(|error| Error::arrow("selecting rows", error))
}

#[cfg(test)]
mod tests;
