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
//! one source row is an error ([`Error::MergeMultipleMatch`]) unless the merge only inserts or
//! its only matched clause is an unconditional delete (as Delta on Spark 4.4 decides it: even
//! a merge with no matched clause but `WHEN NOT MATCHED BY SOURCE` ones is refused).
//!
//! How: the source is read into memory and indexed by the equality keys of the condition
//! (`join.rs`); only the target files that may hold a matching row are read, chosen by
//! partition values and statistics against the condition's target-only conjuncts and the
//! range of the source's keys (every file when a `NOT MATCHED BY SOURCE` clause exists);
//! each file's rows are joined with the source (`batch.rs`). Touched rows are deleted as
//! [`crate::ops::dml::delete`] deletes them (deletion vectors with `delta.enableDeletionVectors`, else
//! the touched files are rewritten with their untouched rows); updated and inserted rows go
//! to new files; with `delta.enableChangeDataFeed`, change data files hold `update_preimage`,
//! `update_postimage`, `delete` and `insert` rows (spec "Change Data Files"); with row
//! tracking, updated rows keep their row id and get the commit's version, inserted rows get
//! fresh ids (spec "Row Tracking").
//!
//! `UPDATE SET *` and `INSERT *` take each target column from the source column of the same
//! name; source columns the target lacks are ignored. With schema evolution
//! ([`MergeOptions::merge_schema`], `evolution.rs`) the target first gains the source columns
//! the clauses assign, and `*` then names the source's columns: an update keeps the target's
//! others (and the struct fields only the target has), an insert gives them NULL.

mod batch;
mod clauses;
pub(crate) mod evolution;
mod join;

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::StreamExt;

pub use clauses::{MatchedAction, MergeClauses, NotMatchedAction, NotMatchedBySourceAction};

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::storage::Storage;
use crate::transaction::CommitResult;
use crate::write::{WriteFailure, WriterOptions};

use crate::ops::dml::{
    candidates, load_deletion_vector, read_rows_as, Candidate, Candidates, FileMatches, RowChange,
    RowWriter, Touched,
};
use batch::{BatchChanges, Counts, Plan};
use clauses::{Resolved, Sides};
use join::{target_filter, SourceIndex};

/// The metrics Delta on Spark writes in the `commitInfo` of a `MERGE`.
/// The file metrics of a row-level change (this crate's names, right) under the names a
/// MERGE records them (left).
pub(crate) const FILE_METRICS: [(&str, &str); 9] = [
    ("numTargetFilesAdded", "numAddedFiles"),
    ("numTargetFilesRemoved", "numRemovedFiles"),
    ("numTargetChangeFilesAdded", "numAddedChangeFiles"),
    ("numTargetChangeFileBytes", "changeFileBytes"),
    ("numTargetBytesAdded", "numAddedBytes"),
    ("numTargetBytesRemoved", "numRemovedBytes"),
    ("numTargetDeletionVectorsAdded", "numDeletionVectorsAdded"),
    (
        "numTargetDeletionVectorsRemoved",
        "numDeletionVectorsRemoved",
    ),
    (
        "numTargetDeletionVectorsUpdated",
        "numDeletionVectorsUpdated",
    ),
];

pub(crate) const SPARK_METRICS: [&str; 23] = [
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
    /// Schema evolution (Spark's `withSchemaEvolution()`): the target gains the source
    /// columns and struct fields the clauses assign, `*` actions name the source's columns
    /// (see the module documentation).
    pub merge_schema: bool,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            source_alias: "source".into(),
            target_alias: "target".into(),
            writer: WriterOptions::default(),
            commit_info: serde_json::Map::new(),
            merge_schema: false,
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
/// [`Error::SchemaMismatch`] for `UPDATE SET *` / `INSERT *` when the source lacks a target
/// column (without schema evolution); [`Error::MergeMultipleMatch`] for a target row
/// matched by several source rows; [`Error::ConstraintViolation`] for rows breaking a rule
/// of the table; [`Error::NotAllowed`] for updates or deletes on an append-only table;
/// conflicts as [`crate::Transaction::commit`] reports them. Files written before a failure
/// are named in the [`WriteFailure`].
pub async fn merge(
    storage: &Storage,
    source: Vec<RecordBatch>,
    source_schema: SchemaRef,
    on: Expr,
    clauses: MergeClauses,
    options: MergeOptions,
) -> Result<CommitResult, WriteFailure> {
    let mut run = MergeRun {
        change: RowChange::open(storage, "MERGE").await?,
        counts: Counts::default(),
    };
    let prepared = match run.plan(source, source_schema, &on, clauses, &options) {
        Ok(plan) => run.prepare(Arc::new(plan), &options.writer).await,
        Err(error) => Err(error),
    };
    if let Err(error) = prepared {
        return Err(run.change.fail(error));
    }
    run.commit().await
}

/// A merge being prepared: the staged change and the rows counted so far.
struct MergeRun {
    change: RowChange,
    counts: Counts,
}

impl MergeRun {
    /// Stages every action of the merge `plan`, new files written with `writer_options`.
    async fn prepare(&mut self, plan: Arc<Plan>, writer_options: &WriterOptions) -> Result<()> {
        let scan_started = Instant::now();
        let found = self.target_files(&plan).await?;
        let mut writer = self.change.open_writer(writer_options)?;
        let deletion_vectors = self
            .change
            .snapshot
            .table_configuration()
            .is_deletion_vectors_enabled();
        let mut source_matched = vec![false; plan.source.num_rows()];
        let mut touched: Vec<Touched> = Vec::new();
        for file in found.files {
            let outcome = self
                .merge_file(
                    &plan,
                    file,
                    &mut writer,
                    &mut source_matched,
                    !deletion_vectors,
                )
                .await;
            match outcome {
                Ok(Some(file)) => touched.push(file),
                Ok(None) => {}
                Err(error) => return Err(self.change.abandon(writer, error).await),
            }
        }
        self.change
            .metrics
            .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
        let rewrite_started = Instant::now();
        if let Err(error) = self.insert(&plan, &source_matched, &mut writer).await {
            return Err(self.change.abandon(writer, error).await);
        }
        self.change.stage_writer(writer).await?;
        self.change
            .remove_touched(touched, deletion_vectors)
            .await?;
        self.change.metrics.set(
            "rewriteTimeMs",
            rewrite_started.elapsed().as_millis() as u64,
        );
        Ok(())
    }

    /// Checks the table can take the merge, resolves the clauses, stages the operation
    /// parameters and the caller's `commitInfo`, and indexes the source (counting
    /// `numSourceRows` and `materializeSourceTimeMs`).
    fn plan(
        &mut self,
        source: Vec<RecordBatch>,
        source_schema: SchemaRef,
        on: &Expr,
        clauses: MergeClauses,
        options: &MergeOptions,
    ) -> Result<Plan> {
        let started = Instant::now();
        let changes_rows = !clauses.matched.is_empty() || !clauses.not_matched_by_source.is_empty();
        let refusal = changes_rows.then_some("a merge may only insert rows");
        self.change.begin(refusal, &options.commit_info)?;
        if options.merge_schema {
            evolution::evolve_target(
                &mut self.change,
                &clauses,
                &source_schema,
                &options.target_alias,
            )?;
        }
        let config = self.change.transaction.configuration()?;
        let target = Arc::new(crate::schema::to_arrow_schema(config.schema())?);
        let source = arrow::compute::concat_batches(&source_schema, &source)
            .map_err(|error| Error::arrow("reading the merge source", error))?;
        let sides = Sides {
            target_alias: options.target_alias.clone(),
            source_alias: options.source_alias.clone(),
            target,
            source: source_schema,
            evolving: options.merge_schema,
        };
        let table = config.table_uri().to_string();
        let resolved = Resolved::try_new(on, clauses, sides, &table)?;
        self.stage_parameters(&resolved);
        let index = SourceIndex::build(&resolved, &source)?;
        let metrics = &mut self.change.metrics;
        metrics.set(
            "materializeSourceTimeMs",
            started.elapsed().as_millis() as u64,
        );
        metrics.set("numSourceRows", source.num_rows() as u64);
        Ok(Plan {
            resolved,
            source,
            index,
            now_micros: chrono::Utc::now().timestamp_micros(),
            row_tracking: config.is_row_tracking_enabled(),
            metadata: config.metadata().clone(),
            table,
        })
    }

    /// `predicate`, `matchedPredicates`, `notMatchedPredicates` and
    /// `notMatchedBySourcePredicates` as Spark writes them.
    fn stage_parameters(&mut self, resolved: &Resolved) {
        let predicate = serde_json::Value::from(vec![resolved.on.to_string()]);
        let transaction = &mut self.change.transaction;
        transaction.set_operation_parameter("predicate", predicate.to_string());
        let describe = |clauses: &[clauses::Clause],
                        kind: &dyn Fn(&clauses::Clause) -> &'static str| {
            let list: Vec<serde_json::Value> =
                clauses.iter().map(|c| c.describe(kind(c))).collect();
            serde_json::Value::from(list).to_string()
        };
        let update_or_delete =
            |c: &clauses::Clause| if c.is_delete() { "delete" } else { "update" };
        transaction.set_operation_parameter(
            "matchedPredicates",
            describe(&resolved.matched, &update_or_delete),
        );
        transaction.set_operation_parameter(
            "notMatchedPredicates",
            describe(&resolved.not_matched, &|_| "insert"),
        );
        transaction.set_operation_parameter(
            "notMatchedBySourcePredicates",
            describe(&resolved.not_matched_by_source, &update_or_delete),
        );
    }

    /// The target files that may hold rows the merge touches or matches (every file with a
    /// `NOT MATCHED BY SOURCE` clause; none when no source row can match), recorded as read.
    async fn target_files(&mut self, plan: &Plan) -> Result<Candidates> {
        let snapshot = &self.change.snapshot;
        let every_file = !plan.resolved.not_matched_by_source.is_empty();
        let filter = match every_file {
            true => None,
            false => target_filter(
                &plan.resolved,
                &plan.index,
                &plan.source,
                snapshot.table_configuration().schema(),
            )?,
        };
        let mut found = candidates(snapshot, filter.as_ref()).await?;
        let metrics = &mut self.change.metrics;
        metrics.set("numTargetFilesBeforeSkipping", found.files_before_skipping);
        metrics.set("numTargetBytesBeforeSkipping", found.bytes_before_skipping);
        if !every_file && plan.index.is_empty() {
            found.files.clear();
        }
        metrics.set("numTargetFilesAfterSkipping", found.files.len() as u64);
        metrics.set(
            "numTargetBytesAfterSkipping",
            found.files.iter().map(|f| f.size.max(0) as u64).sum(),
        );
        self.change.record_read(filter.as_ref(), &found.files);
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
        let deleted_before = load_deletion_vector(&self.change.snapshot, &file).await?;
        let mut rows = read_rows_as(
            &self.change.snapshot,
            &plan.metadata,
            &file,
            plan.row_tracking,
        )?;
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
            let changes = crate::util::cpu::run(
                move || job.0.merge_batch(&job.1, &live),
                |reason| Error::internal_invariant(format!("merging target rows: {reason}")),
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
        matches.count_recorded_rows(&file);
        if matches.matched.is_empty() {
            return Ok(None);
        }
        for (first, batch) in kept_batches {
            let copied = writer.copy_kept_rows(&batch, &matches, first).await?;
            self.change.metrics.add("numTargetRowsCopied", copied);
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
        let changes = crate::util::cpu::run(
            move || job.insert(&unmatched),
            |reason| Error::internal_invariant(format!("inserting source rows: {reason}")),
        )
        .await?;
        self.write(changes, writer).await
    }

    /// Writes the new rows and change rows of `changes`.
    async fn write(&mut self, changes: BatchChanges, writer: &mut RowWriter) -> Result<()> {
        self.counts.add(changes.counts);
        for (rows, origin) in &changes.written {
            writer.write_data(rows, false, *origin).await?;
        }
        for (rows, change_type) in &changes.changes {
            writer.write_changes(rows, change_type).await?;
        }
        Ok(())
    }

    /// Commits what was staged (nothing when no row changed), with Spark's metric names.
    async fn commit(mut self) -> Result<CommitResult, WriteFailure> {
        let counts = self.counts;
        let updated = counts.matched_updated + counts.not_matched_by_source_updated;
        let deleted = counts.matched_deleted + counts.not_matched_by_source_deleted;
        let copied = self.change.metrics.get("numTargetRowsCopied");
        let m = &mut self.change.metrics;
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
        for (spark, ours) in FILE_METRICS {
            let value = m.get(ours);
            m.0.remove(ours);
            m.set(spark, value);
        }
        let changed = counts.inserted + updated + deleted > 0;
        self.change.commit(&SPARK_METRICS, changed).await
    }
}

#[cfg(test)]
mod tests;
