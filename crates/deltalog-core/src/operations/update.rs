//! Updating rows: [`update`], as Delta on Spark's `UPDATE t SET c = <expr> WHERE ...`
//! (`UpdateCommand`).
//!
//! Files are found as a delete finds them (partitions pruned and files skipped by statistics,
//! then the physical positions of the matching rows). The updated rows are written to new
//! files; the old rows are deleted as [`super::delete`] deletes them: marked in deletion
//! vectors with `delta.enableDeletionVectors`, else the touched files are rewritten whole
//! (updated and copied rows together). With `delta.enableChangeDataFeed`, change data files
//! hold every updated row twice (`update_preimage`, `update_postimage`). With row tracking,
//! updated rows keep their row id (written in the materialised row id column) and get the
//! commit's version as their row commit version.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch};
use futures::StreamExt;

use crate::error::{Error, Result};
use crate::expr::{cast_to, evaluate_value, Expr, ValueExpr};
use crate::scalar::Scalar;
use crate::snapshot::Snapshot;
use crate::table::{SnapshotAt, Table};
use crate::write::duties::generated_columns_reading;
use crate::write::{WriteFailure, WriterOptions};

use super::delete::{filter, log_path};
use super::dml::{
    commit_row_changes,
    candidates, check_predicate, find_matches, read_every_row, row_tracking_columns, rows_in,
    stage_deletion_vectors, stage_written, Candidate, FileMatches, Metrics, RowWriter,
};
use super::write::{TableCommit, DATA_WRITER_FEATURES};

/// The metrics Delta on Spark writes in the `commitInfo` of an `UPDATE`.
const SPARK_METRICS: [&str; 13] = [
    "numRemovedFiles",
    "numAddedFiles",
    "numUpdatedRows",
    "numCopiedRows",
    "numAddedChangeFiles",
    "numRemovedBytes",
    "numAddedBytes",
    "numDeletionVectorsAdded",
    "numDeletionVectorsRemoved",
    "numDeletionVectorsUpdated",
    "executionTimeMs",
    "scanTimeMs",
    "rewriteTimeMs",
];

/// The options of [`update`].
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// How the new files are written.
    pub writer: WriterOptions,
    /// Extra `commitInfo` fields (such as `userMetadata`).
    pub commit_info: serde_json::Map<String, serde_json::Value>,
}

/// Sets, in the rows of the latest version of `table` matching `predicate` (every row when
/// `None`), each column of `set` to its expression evaluated on the row as it was, and
/// commits (operation `UPDATE`, parameter `predicate`, Spark's metrics: `numUpdatedRows`,
/// `numCopiedRows`, `numRemovedFiles`, `numAddedFiles`, `numDeletionVectorsAdded`, ...).
/// Values are cast to the column's type (a value that does not convert is an error). See
/// the module documentation for how. Nothing is committed when no row matches.
///
/// Errors, with nothing committed: [`Error::InvalidArgument`] for a column of `set` that is
/// not a top-level column of the table (or is set twice), an expression or predicate naming
/// an unknown column or mixing kinds, an arithmetic error (overflow, division by zero) or a
/// failing cast; [`Error::ConstraintViolation`] for new values that break a rule of the table
/// (NOT NULL, CHECK); [`Error::NotAllowed`] for an append-only table; conflicts as
/// [`crate::Transaction::commit`] reports them. Files written before a failure are named in
/// the [`WriteFailure`].
pub async fn update(
    table: &Table,
    set: Vec<(String, ValueExpr)>,
    predicate: Option<Expr>,
    options: UpdateOptions,
) -> Result<TableCommit, WriteFailure> {
    let snapshot = table
        .snapshot(SnapshotAt::Latest)
        .await
        .map_err(WriteFailure::unwritten)?;
    let started = Instant::now();
    let mut run = UpdateRun {
        transaction: snapshot.transaction("UPDATE"),
        metrics: Metrics::default(),
        written: Vec::new(),
        snapshot,
    };
    if let Err(error) = run.prepare(set, predicate.as_ref(), &options).await {
        return Err(WriteFailure {
            error,
            written_files: run.written,
        });
    }
    run.metrics
        .set("executionTimeMs", started.elapsed().as_millis() as u64);
    run.commit().await
}

/// The assignments, resolved: the index of each column set, its expression and Arrow type;
/// then the generated columns reading a column set, recomputed from the new values.
#[derive(Debug, Clone)]
struct Assignments(
    Vec<(usize, ValueExpr, arrow_schema::DataType)>,
    Vec<(usize, ValueExpr, arrow_schema::DataType)>,
);

impl Assignments {
    fn resolve(snapshot: &Snapshot, set: Vec<(String, ValueExpr)>) -> Result<Assignments> {
        if set.is_empty() {
            return Err(Error::InvalidArgument(
                "an update needs at least one column to set".into(),
            ));
        }
        let schema = crate::schema::to_arrow_schema(snapshot.table_configuration().schema())?;
        let mut resolved: Vec<(usize, ValueExpr, arrow_schema::DataType)> = Vec::new();
        for (name, expr) in set {
            let fields = schema.fields();
            let index = fields
                .iter()
                .position(|f| f.name() == &name)
                .or_else(|| fields.iter().position(|f| f.name().eq_ignore_ascii_case(&name)))
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{name} is not a top-level column of the table"
                    ))
                })?;
            if resolved.iter().any(|(i, _, _)| *i == index) {
                return Err(Error::InvalidArgument(format!("{name} is set twice")));
            }
            resolved.push((index, expr, fields[index].data_type().clone()));
        }
        let changed: Vec<usize> = resolved.iter().map(|(index, _, _)| *index).collect();
        let regenerated =
            generated_columns_reading(snapshot.table_configuration().schema(), &changed)
                .into_iter()
                .map(|(index, expr)| (index, expr, schema.field(index).data_type().clone()))
                .collect();
        let assignments = Assignments(resolved, regenerated);
        assignments.apply(&RecordBatch::new_empty(Arc::new(schema)), 0)?;
        Ok(assignments)
    }

    /// `rows` with the assigned columns replaced by their new values.
    fn apply(&self, rows: &RecordBatch, now_micros: i64) -> Result<RecordBatch> {
        let mut columns: Vec<ArrayRef> = rows.columns().to_vec();
        for (index, expr, ty) in &self.0 {
            let value = evaluate_value(expr, rows, now_micros)?;
            columns[*index] = cast_to(&value, ty)?;
        }
        let updated = RecordBatch::try_new(rows.schema(), columns)
            .map_err(|error| Error::arrow("assembling updated rows", error))?;
        if self.1.is_empty() {
            return Ok(updated);
        }
        let mut columns: Vec<ArrayRef> = updated.columns().to_vec();
        for (index, expr, ty) in &self.1 {
            let value = evaluate_value(expr, &updated, now_micros)?;
            columns[*index] = cast_to(&value, ty)?;
        }
        RecordBatch::try_new(updated.schema(), columns)
            .map_err(|error| Error::arrow("assembling updated rows", error))
    }
}

/// An update being prepared.
struct UpdateRun {
    snapshot: Snapshot,
    transaction: crate::transaction::Transaction,
    metrics: Metrics,
    written: Vec<String>,
}

impl UpdateRun {
    async fn prepare(
        &mut self,
        set: Vec<(String, ValueExpr)>,
        predicate: Option<&Expr>,
        options: &UpdateOptions,
    ) -> Result<()> {
        let config = self.snapshot.table_configuration().clone();
        if config.properties().append_only {
            return Err(Error::NotAllowed(format!(
                "{} is append-only (delta.appendOnly): rows cannot be updated",
                config.table_uri()
            )));
        }
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        self.transaction
            .add_data_writer_features(&DATA_WRITER_FEATURES);
        if let Some(predicate) = predicate {
            check_predicate(&config, predicate)?;
        }
        let assignments = Assignments::resolve(&self.snapshot, set)?;
        let predicates: Vec<String> = predicate.iter().map(|p| p.to_string()).collect();
        let text = serde_json::to_string(&predicates).unwrap_or_default();
        self.transaction.set_operation_parameter("predicate", text);
        for (key, value) in &options.commit_info {
            self.transaction.set_commit_info(key, value.clone());
        }
        let scan_started = Instant::now();
        let found = candidates(&self.snapshot, predicate).await?;
        match predicate {
            Some(predicate) => self.transaction.record_read_predicate(predicate.clone()),
            None => self.transaction.record_read_whole_table(),
        }
        let keys: Vec<String> = found.files.iter().map(|f| log_path(&f.add)).collect();
        self.transaction
            .record_read_files(keys.iter().map(String::as_str));
        let every_row = Expr::Literal(Scalar::Boolean(true));
        let predicate = predicate.unwrap_or(&every_row);
        let mut touched = Vec::new();
        for file in found.files {
            let matches = find_matches(&self.snapshot, &file, predicate).await?;
            if !matches.matched.is_empty() {
                touched.push((file, matches));
            }
        }
        self.metrics
            .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
        if touched.is_empty() {
            return Ok(());
        }
        let rewrite_started = Instant::now();
        self.write(&touched, &assignments, options).await?;
        let removed_bytes = touched.iter().map(|(f, _)| f.size.max(0) as u64).sum();
        self.metrics.add("numRemovedBytes", removed_bytes);
        if config.is_deletion_vectors_enabled() {
            let dv_file = stage_deletion_vectors(
                &self.snapshot,
                &mut self.transaction,
                touched,
                &mut self.metrics,
            )
            .await?;
            self.written.extend(dv_file);
        } else {
            for (file, _) in &touched {
                self.transaction.remove_files(&file.add, true)?;
                self.metrics.add("numRemovedFiles", 1);
                self.metrics.add(
                    "numDeletionVectorsRemoved",
                    u64::from(file.deletion_vector.is_some()),
                );
            }
        }
        self.metrics
            .set("rewriteTimeMs", rewrite_started.elapsed().as_millis() as u64);
        Ok(())
    }

    /// Writes the updated rows (and, copy-on-write, the other live rows of the touched
    /// files) and the change rows; stages their adds and `cdc` actions.
    async fn write(
        &mut self,
        touched: &[(Candidate, FileMatches)],
        assignments: &Assignments,
        options: &UpdateOptions,
    ) -> Result<()> {
        let config = self.snapshot.table_configuration().clone();
        let row_tracking = row_tracking_columns(&config, &mut self.transaction)?;
        let mut writer = RowWriter::try_new(
            &config,
            self.snapshot.storage(),
            &options.writer,
            row_tracking.clone(),
            config.properties().enable_change_data_feed,
        )?;
        let copy = !config.is_deletion_vectors_enabled();
        let now_micros = chrono::Utc::now().timestamp_micros();
        for (file, matches) in touched {
            let written = update_file(
                &self.snapshot,
                file,
                matches,
                assignments,
                &mut writer,
                (row_tracking.is_some(), copy, now_micros),
            )
            .await;
            match written {
                Ok((updated, copied)) => {
                    self.metrics.add("numUpdatedRows", updated);
                    self.metrics.add("numCopiedRows", copied);
                }
                Err(error) => {
                    self.written.extend(writer.abort().await);
                    return Err(error);
                }
            }
        }
        let (data, changes) = match writer.finish().await {
            Ok(done) => done,
            Err(written) => {
                self.written.extend(written);
                return Err(Error::InvalidArgument(
                    "closing the updated files failed".into(),
                ));
            }
        };
        self.written.extend(data.files.iter().map(|f| f.path.clone()));
        self.written.extend(changes.iter().map(|f| f.path.clone()));
        stage_written(&mut self.transaction, &data.files, &changes, &mut self.metrics)
    }

    /// Commits what was staged (nothing when no row matched).
    async fn commit(self) -> Result<TableCommit, WriteFailure> {
        let changed = self.metrics.get("numUpdatedRows") > 0;
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

/// Writes the updated rows of `file` (and with `copy` its other live rows), and the change
/// rows; returns how many rows were updated and copied.
async fn update_file(
    snapshot: &Snapshot,
    file: &Candidate,
    matches: &FileMatches,
    assignments: &Assignments,
    writer: &mut RowWriter,
    (row_tracking, copy, now_micros): (bool, bool, i64),
) -> Result<(u64, u64)> {
    let mut rows = read_every_row(snapshot, file, None, row_tracking)?;
    let mut position = 0u64;
    let (mut updated, mut copied) = (0u64, 0u64);
    while let Some(batch) = rows.next().await {
        let batch = batch?;
        let count = batch.num_rows();
        let matched = rows_in(&matches.matched, count, position)?;
        let before = filter(&batch, &matched)?;
        let job_assignments = assignments.clone();
        let job_rows = before.clone();
        let after = crate::cpu::run(
            move || job_assignments.apply(&job_rows, now_micros),
            |reason| Error::InvalidArgument(format!("evaluating the new values: {reason}")),
        )
        .await?;
        updated += after.num_rows() as u64;
        writer.write_data(&after, false).await?;
        writer.write_changes(&before, "update_preimage").await?;
        writer.write_changes(&after, "update_postimage").await?;
        if copy {
            let gone = rows_in(&matches.deleted_before, count, position)?;
            let dropped = arrow::compute::or(&gone, &matched)
                .map_err(|error| Error::arrow("selecting rows", error))?;
            let kept = arrow::compute::not(&dropped)
                .map_err(|error| Error::arrow("selecting rows", error))?;
            let kept_rows = filter(&batch, &kept)?;
            copied += kept_rows.num_rows() as u64;
            writer.write_data(&kept_rows, true).await?;
        }
        position += count as u64;
    }
    Ok((updated, copied))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;

    use super::*;
    use crate::expr::{parse_sql, parse_value_sql};
    use crate::operations::{write_table, WriteTableOptions};
    use crate::scan::{Scan, ScanOptions};

    async fn values_after_update(deletion_vectors: bool) -> (TableCommit, Vec<i64>) {
        let dir = tempfile::tempdir().unwrap();
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..6));
        let batch = RecordBatch::try_from_iter([("id", ids)]).unwrap();
        let options = WriteTableOptions {
            configuration: HashMap::from([(
                "delta.enableDeletionVectors".to_string(),
                deletion_vectors.to_string(),
            )]),
            ..WriteTableOptions::default()
        };
        let storage =
            crate::storage::Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let table = Table::from_storage(storage);
        let stream = futures::stream::iter([Ok(batch.clone())]);
        write_table(&table, batch.schema(), stream, options)
            .await
            .unwrap();
        let set = vec![("id".to_string(), parse_value_sql("id * 100").unwrap())];
        let predicate = Some(parse_sql("id >= 4").unwrap());
        let done = update(&table, set, predicate, UpdateOptions::default())
            .await
            .unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
        let mut values: Vec<i64> = Vec::new();
        for batch in scan.to_batches().await.unwrap() {
            values.extend(batch.column(0).as_primitive::<Int64Type>().values());
        }
        values.sort_unstable();
        (done, values)
    }

    #[tokio::test]
    async fn updated_rows_replace_the_old_ones_in_both_modes() {
        for deletion_vectors in [true, false] {
            let (done, values) = values_after_update(deletion_vectors).await;
            assert_eq!(values, vec![0, 1, 2, 3, 400, 500]);
            assert_eq!(done.metrics["numUpdatedRows"], 2);
            let copied = if deletion_vectors { 0 } else { 4 };
            assert_eq!(done.metrics["numCopiedRows"], copied);
            assert_eq!(
                done.metrics["numDeletionVectorsAdded"],
                u64::from(deletion_vectors)
            );
        }
    }
}
