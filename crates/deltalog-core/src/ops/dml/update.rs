//! Updating rows: [`update`], as Delta on Spark's `UPDATE t SET c = <expr> WHERE ...`
//! (`UpdateCommand`).
//!
//! Files are found as a delete finds them (partitions pruned and files skipped by statistics,
//! then the physical positions of the matching rows). The updated rows are written to new
//! files; the old rows are deleted as [`crate::ops::dml::delete`] deletes them: marked in deletion
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
use crate::expr::{assign_to, cast_to, evaluate_value, Expr, ValueExpr};
use crate::scalar::Scalar;
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::transaction::CommitResult;
use crate::write::duties::{generated_columns_reading, refuse_identity_update};
use crate::write::{RowOrigin, WriteFailure, WriterOptions};

use crate::ops::dml::assignments::resolve_assignments;
use crate::ops::dml::{
    candidates, filter, read_every_row, rows_in, touched_files, Candidate, FileMatches, RowChange,
    RowWriter, Touched,
};

/// The metrics Delta on Spark writes in the `commitInfo` of an `UPDATE`.
pub(crate) const SPARK_METRICS: [&str; 13] = [
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
/// A target of `set` is a top-level column or a field nested in struct columns
/// (`address.city`): the struct is rebuilt with the new field values and its other fields
/// kept, so a NULL struct becomes one holding the new values, as in Spark.
///
/// Errors, with nothing committed: [`Error::InvalidArgument`] for a target of `set` that is
/// not a column or struct field of the table (or is set twice, or with a field of it), an expression or predicate naming
/// an unknown column or mixing kinds, an arithmetic error (overflow, division by zero) or a
/// failing cast; [`Error::ConstraintViolation`] for new values that break a rule of the table
/// (NOT NULL, CHECK); [`Error::NotAllowed`] for an append-only table; conflicts as
/// [`crate::Transaction::commit`] reports them. Files written before a failure are named in
/// the [`WriteFailure`].
pub async fn update(
    storage: &Storage,
    set: Vec<(String, ValueExpr)>,
    predicate: Option<Expr>,
    options: UpdateOptions,
) -> Result<CommitResult, WriteFailure> {
    let mut change = RowChange::open(storage, "UPDATE").await?;
    if let Err(error) = prepare(&mut change, set, predicate.as_ref(), &options).await {
        return Err(change.fail(error));
    }
    let changed = change.metrics.get("numUpdatedRows") > 0;
    change.commit(&SPARK_METRICS, changed).await
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
        for (index, expr) in resolve_assignments(schema.fields(), set, None)? {
            let field = schema.field(index);
            refuse_identity_update(field)?;
            resolved.push((index, expr, field.data_type().clone()));
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
            columns[*index] = assign_to(&value, ty)?;
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

/// Stages every action of the update.
async fn prepare(
    change: &mut RowChange,
    set: Vec<(String, ValueExpr)>,
    predicate: Option<&Expr>,
    options: &UpdateOptions,
) -> Result<()> {
    change.begin(Some("rows cannot be updated"), &options.commit_info)?;
    change.stage_predicate(predicate)?;
    let assignments = Assignments::resolve(&change.snapshot, set)?;
    let scan_started = Instant::now();
    let found = candidates(&change.snapshot, predicate).await?;
    change.record_read(predicate, &found.files);
    let every_row = Expr::Literal(Scalar::Boolean(true));
    let predicate = predicate.unwrap_or(&every_row);
    let touched = touched_files(&change.snapshot, found.files, predicate).await?;
    change
        .metrics
        .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
    if touched.is_empty() {
        return Ok(());
    }
    let rewrite_started = Instant::now();
    write(change, &touched, &assignments, &options.writer).await?;
    let deletion_vectors = change
        .snapshot
        .table_configuration()
        .is_deletion_vectors_enabled();
    change.remove_touched(touched, deletion_vectors).await?;
    change.metrics.set(
        "rewriteTimeMs",
        rewrite_started.elapsed().as_millis() as u64,
    );
    Ok(())
}

/// Writes the updated rows (and, copy-on-write, the other live rows of the touched files)
/// and the change rows; stages their adds and `cdc` actions.
async fn write(
    change: &mut RowChange,
    touched: &[Touched],
    assignments: &Assignments,
    options: &WriterOptions,
) -> Result<()> {
    let mut writer = change.open_writer(options)?;
    let copy = !change
        .snapshot
        .table_configuration()
        .is_deletion_vectors_enabled();
    let now_micros = chrono::Utc::now().timestamp_micros();
    for (file, matches) in touched {
        let written = update_file(
            &change.snapshot,
            file,
            matches,
            assignments,
            &mut writer,
            (copy, now_micros),
        )
        .await;
        match written {
            Ok((updated, copied)) => {
                change.metrics.add("numUpdatedRows", updated);
                change.metrics.add("numCopiedRows", copied);
            }
            Err(error) => return Err(change.abandon(writer, error).await),
        }
    }
    change.stage_writer(writer).await
}

/// Writes the updated rows of `file` (and with `copy` its other live rows), and the change
/// rows; returns how many rows were updated and copied.
async fn update_file(
    snapshot: &Snapshot,
    file: &Candidate,
    matches: &FileMatches,
    assignments: &Assignments,
    writer: &mut RowWriter,
    (copy, now_micros): (bool, i64),
) -> Result<(u64, u64)> {
    let mut rows = read_every_row(snapshot, file, None, writer.keeps_row_ids())?;
    let mut position = 0u64;
    let (mut updated, mut copied) = (0u64, 0u64);
    while let Some(batch) = rows.next().await {
        let batch = batch?;
        let count = batch.num_rows();
        let matched = rows_in(&matches.matched, count, position)?;
        let before = filter(&batch, &matched)?;
        let job_assignments = assignments.clone();
        let job_rows = before.clone();
        let after = crate::util::cpu::run(
            move || job_assignments.apply(&job_rows, now_micros),
            |reason| {
                Error::internal(
                    snapshot.table_uri(),
                    format!("evaluating the new values: {reason}"),
                )
            },
        )
        .await?;
        updated += after.num_rows() as u64;
        writer
            .write_data(&after, false, RowOrigin::Existing)
            .await?;
        writer.write_changes(&before, "update_preimage").await?;
        writer.write_changes(&after, "update_postimage").await?;
        if copy {
            copied += writer.copy_kept_rows(&batch, matches, position).await?;
        }
        position += count as u64;
    }
    Ok((updated, copied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{parse_sql, parse_value_sql};
    use crate::ops::dml::test_tables::{ids, ids_batch, table_of};

    async fn values_after_update(deletion_vectors: bool) -> (CommitResult, Vec<i64>) {
        let dir = tempfile::tempdir().unwrap();
        let dv = deletion_vectors.to_string();
        let configuration = [("delta.enableDeletionVectors", dv.as_str())];
        let table = table_of(dir.path(), ids_batch(0..6), &configuration).await;
        let set = vec![("id".to_string(), parse_value_sql("id * 100").unwrap())];
        let predicate = Some(parse_sql("id >= 4").unwrap());
        let done = update(table.storage(), set, predicate, UpdateOptions::default())
            .await
            .unwrap();
        (done, ids(&table).await)
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
