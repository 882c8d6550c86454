//! Deleting rows: [`delete`], as Delta on Spark's `DELETE FROM t WHERE ...`
//! (`DeleteCommand`).
//!
//! - No predicate, or one over partition columns only: the matching files are removed whole,
//!   without reading them, and no change data file is written (the change data feed reads
//!   the removed files).
//! - Any other predicate: partitions are pruned and files skipped by their statistics, then
//!   each remaining file is read to find the physical positions of its matching rows. With
//!   `delta.enableDeletionVectors`, those rows are marked in the file's deletion vector (one
//!   new `deletion_vector_<uuid>.bin` per commit) and the file re-added with it; a file left
//!   with no row is removed. Otherwise (copy-on-write) each file holding matching rows is
//!   rewritten with the other rows, and with `delta.enableChangeDataFeed` the deleted rows go
//!   to change data files as `delete` rows.
//!
//! The commit records the predicate and the files read, so that a concurrent change to them
//! is a conflict. Nothing is committed when no row matches.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::snapshot::Snapshot;
use crate::table::{SnapshotAt, Table};
use crate::transaction::Transaction;
use crate::write::{WriteFailure, WriterOptions};

use super::dml::{
    commit_row_changes,
    candidates, check_predicate, find_matches, is_partition_only, read_every_row,
    row_tracking_columns, rows_in, stage_deletion_vectors, stage_written, Candidate,
    FileMatches, Metrics, RowWriter,
};
use super::write::{TableCommit, DATA_WRITER_FEATURES};

/// The metrics Delta on Spark writes in the `commitInfo` of a `DELETE`.
const SPARK_METRICS: [&str; 13] = [
    "numRemovedFiles",
    "numAddedFiles",
    "numDeletedRows",
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

/// The options of [`delete`].
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// How rewritten files are written (copy-on-write).
    pub writer: WriterOptions,
    /// Extra `commitInfo` fields (such as `userMetadata`).
    pub commit_info: serde_json::Map<String, serde_json::Value>,
}

/// Deletes the rows of the latest version of `table` that match `predicate` (every row when
/// `None`; a NULL predicate value is not a match) and commits (operation `DELETE`, parameter
/// `predicate`, Spark's metrics: `numDeletedRows`, `numRemovedFiles`, `numAddedFiles`,
/// `numCopiedRows`, `numDeletionVectorsAdded`, `numDeletionVectorsRemoved`,
/// `numDeletionVectorsUpdated`, `numAddedChangeFiles`, `numRemovedBytes`, `numAddedBytes`,
/// `executionTimeMs`, `scanTimeMs`, `rewriteTimeMs`). See the module documentation for how.
///
/// Errors, with nothing committed: [`Error::InvalidArgument`] for a predicate naming an
/// unknown column or comparing a column with a value of another kind; [`Error::NotAllowed`]
/// for an append-only table; [`Error::UnsupportedFeature`] for a table this library cannot
/// write; conflicts as [`crate::Transaction::commit`] reports them. Files written before a
/// failure are named in the [`WriteFailure`] (unreferenced; VACUUM removes them).
pub async fn delete(
    table: &Table,
    predicate: Option<Expr>,
    options: DeleteOptions,
) -> Result<TableCommit, WriteFailure> {
    let snapshot = table
        .snapshot(SnapshotAt::Latest)
        .await
        .map_err(WriteFailure::unwritten)?;
    let started = Instant::now();
    let mut run = DeleteRun {
        transaction: snapshot.transaction("DELETE"),
        metrics: Metrics::default(),
        written: Vec::new(),
        snapshot,
    };
    let prepared = run.prepare(predicate.as_ref(), &options).await;
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

/// A delete being prepared: the actions are staged on `transaction`, which read `snapshot`.
pub(crate) struct DeleteRun {
    pub(crate) snapshot: Snapshot,
    pub(crate) transaction: Transaction,
    pub(crate) metrics: Metrics,
    /// Data, change data and deletion vector files written so far.
    pub(crate) written: Vec<String>,
}

impl DeleteRun {
    /// Stages every action of the delete.
    async fn prepare(&mut self, predicate: Option<&Expr>, options: &DeleteOptions) -> Result<()> {
        let config = self.snapshot.table_configuration().clone();
        if config.properties().append_only {
            return Err(Error::NotAllowed(format!(
                "{} is append-only (delta.appendOnly): rows cannot be deleted",
                config.table_uri()
            )));
        }
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        self.transaction
            .add_data_writer_features(&DATA_WRITER_FEATURES);
        if let Some(predicate) = predicate {
            check_predicate(&config, predicate)?;
        }
        let predicates: Vec<String> = predicate.iter().map(|p| p.to_string()).collect();
        let text = serde_json::to_string(&predicates).unwrap_or_default();
        self.transaction.set_operation_parameter("predicate", text);
        for (key, value) in &options.commit_info {
            self.transaction.set_commit_info(key, value.clone());
        }
        self.stage(predicate, &options.writer).await
    }

    /// Stages the removal of the rows matching `predicate` (every row when `None`) on the
    /// transaction, recording the read: whole files for a partition predicate, else deletion
    /// vectors or copy-on-write rewrites (see the module documentation); the predicate must
    /// have been checked against the table ([`check_predicate`]).
    pub(crate) async fn stage(
        &mut self,
        predicate: Option<&Expr>,
        writer: &WriterOptions,
    ) -> Result<()> {
        let config = self.snapshot.table_configuration().clone();
        let scan_started = Instant::now();
        let found = candidates(&self.snapshot, predicate).await?;
        self.metrics
            .set("numFilesBeforeSkipping", found.files_before_skipping);
        self.metrics
            .set("numBytesBeforeSkipping", found.bytes_before_skipping);
        self.metrics
            .set("numFilesAfterSkipping", found.files.len() as u64);
        self.record_read(predicate, &found.files);
        let whole_files = predicate.is_none_or(|p| is_partition_only(&config, p));
        if whole_files {
            self.remove_whole_files(&found.files)?;
            self.metrics
                .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
            return Ok(());
        }
        let Some(predicate) = predicate else {
            return Ok(());
        };
        let mut touched = Vec::new();
        for file in found.files {
            let matches = find_matches(&self.snapshot, &file, predicate).await?;
            if !matches.matched.is_empty() {
                touched.push((file, matches));
            }
        }
        self.metrics
            .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
        let rewrite_started = Instant::now();
        let deleted: u64 = touched.iter().map(|(_, m)| m.matched.len()).sum();
        self.metrics.set("numDeletedRows", deleted);
        let removed_bytes = touched.iter().map(|(f, _)| f.size.max(0) as u64).sum();
        if config.is_deletion_vectors_enabled() {
            self.metrics.add("numRemovedBytes", removed_bytes);
            let dv_file =
                stage_deletion_vectors(&self.snapshot, &mut self.transaction, touched, &mut self.metrics)
                    .await?;
            self.written.extend(dv_file);
        } else {
            self.rewrite(touched, writer, removed_bytes).await?;
        }
        self.metrics
            .set("rewriteTimeMs", rewrite_started.elapsed().as_millis() as u64);
        Ok(())
    }

    /// Removes `files` whole (a delete of every row, or of whole partitions).
    fn remove_whole_files(&mut self, files: &[Candidate]) -> Result<()> {
        let mut rows = Some(0u64);
        for file in files {
            self.transaction.remove_files(&file.add, true)?;
            self.metrics.add("numRemovedFiles", 1);
            self.metrics.add("numRemovedBytes", file.size.max(0) as u64);
            self.metrics.add(
                "numDeletionVectorsRemoved",
                u64::from(file.deletion_vector.is_some()),
            );
            let deleted_before = file.deletion_vector.as_ref().map_or(0, |dv| dv.cardinality);
            rows = match (rows, file.num_records) {
                (Some(total), Some(records)) => {
                    Some(total + u64::try_from(records - deleted_before).unwrap_or(0))
                }
                _ => None,
            };
        }
        self.metrics.set("numDeletedRows", rows.unwrap_or(0));
        self.metrics.set("numCopiedRows", 0);
        Ok(())
    }

    /// Copy-on-write: every touched file rewritten without its matching rows (and those its
    /// deletion vector marked), the deleted rows written as `delete` change rows when the
    /// change data feed is on.
    async fn rewrite(
        &mut self,
        touched: Vec<(Candidate, FileMatches)>,
        writer_options: &WriterOptions,
        removed_bytes: u64,
    ) -> Result<()> {
        if touched.is_empty() {
            return Ok(());
        }
        let config = self.snapshot.table_configuration().clone();
        let row_tracking = row_tracking_columns(&config, &mut self.transaction)?;
        let mut writer = RowWriter::try_new(
            &config,
            self.snapshot.storage(),
            writer_options,
            row_tracking.clone(),
            config.properties().enable_change_data_feed,
        )?;
        let mut copied = 0u64;
        for (file, matches) in &touched {
            match copy_file(&self.snapshot, file, matches, &mut writer, row_tracking.is_some()).await {
                Ok(rows) => copied += rows,
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
                    "closing the rewritten files failed".into(),
                ));
            }
        };
        self.written.extend(data.files.iter().map(|f| f.path.clone()));
        self.written.extend(changes.iter().map(|f| f.path.clone()));
        for (file, _) in &touched {
            self.transaction.remove_files(&file.add, true)?;
        }
        self.metrics.add("numRemovedFiles", touched.len() as u64);
        self.metrics.add("numRemovedBytes", removed_bytes);
        self.metrics.add(
            "numDeletionVectorsRemoved",
            touched
                .iter()
                .filter(|(f, _)| f.deletion_vector.is_some())
                .count() as u64,
        );
        self.metrics.set("numCopiedRows", copied);
        stage_written(&mut self.transaction, &data.files, &changes, &mut self.metrics)
    }

    fn record_read(&mut self, predicate: Option<&Expr>, files: &[Candidate]) {
        match predicate {
            Some(predicate) => self.transaction.record_read_predicate(predicate.clone()),
            None => self.transaction.record_read_whole_table(),
        }
        let keys: Vec<String> = files.iter().map(|f| log_path(&f.add)).collect();
        self.transaction
            .record_read_files(keys.iter().map(String::as_str));
    }

    /// Commits what was staged (nothing when no row matched).
    async fn commit(self) -> Result<TableCommit, WriteFailure> {
        let changed = self.metrics.get("numRemovedFiles") > 0
            || self.metrics.get("numDeletionVectorsAdded") > 0
            || self.metrics.get("numDeletionVectorsUpdated") > 0;
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

/// Writes the rows of `file` that stay (not matched, not deleted before) to `writer`, and the
/// matched rows as `delete` changes; returns how many rows were copied.
pub(crate) async fn copy_file(
    snapshot: &Snapshot,
    file: &Candidate,
    matches: &FileMatches,
    writer: &mut RowWriter,
    row_tracking: bool,
) -> Result<u64> {
    use futures::StreamExt;
    let mut rows = read_every_row(snapshot, file, None, row_tracking)?;
    let mut position = 0u64;
    let mut copied = 0u64;
    while let Some(batch) = rows.next().await {
        let batch = batch?;
        let count = batch.num_rows();
        let gone = rows_in(&matches.deleted_before, count, position)?;
        let matched = rows_in(&matches.matched, count, position)?;
        let dropped = arrow::compute::or(&gone, &matched)
            .map_err(|error| Error::arrow("selecting rows", error))?;
        let kept = arrow::compute::not(&dropped)
            .map_err(|error| Error::arrow("selecting rows", error))?;
        let kept_rows = filter(&batch, &kept)?;
        copied += kept_rows.num_rows() as u64;
        writer.write_data(&kept_rows, true).await?;
        if writer.writes_changes() {
            writer.write_changes(&filter(&batch, &matched)?, "delete").await?;
        }
        position += count as u64;
    }
    Ok(copied)
}

pub(crate) fn filter(
    batch: &arrow_array::RecordBatch,
    mask: &arrow_array::BooleanArray,
) -> Result<arrow_array::RecordBatch> {
    arrow::compute::filter_record_batch(batch, mask)
        .map_err(|error| Error::arrow("selecting rows", error))
}

/// The path of a one-row add as the log writes it.
pub(crate) fn log_path(add: &arrow_array::StructArray) -> String {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    add.column_by_name(crate::action_schema::add::PATH)
        .and_then(|c| c.as_string_opt::<i32>())
        .filter(|c| c.is_valid(0))
        .map(|c| c.value(0).to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};

    use super::*;
    use crate::expr::parse_sql;
    use crate::operations::{write_table, WriteTableOptions};
    use crate::scan::{Scan, ScanOptions};

    async fn table_with_rows(dir: &std::path::Path, deletion_vectors: bool) -> Table {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10));
        let batch = RecordBatch::try_from_iter([("id", ids)]).unwrap();
        let options = WriteTableOptions {
            configuration: HashMap::from([(
                "delta.enableDeletionVectors".to_string(),
                deletion_vectors.to_string(),
            )]),
            ..WriteTableOptions::default()
        };
        let uri = dir.to_str().unwrap();
        let storage = crate::storage::Storage::open(uri, &HashMap::new()).unwrap();
        let table = Table::from_storage(storage);
        let stream = futures::stream::iter([Ok(batch.clone())]);
        write_table(&table, batch.schema(), stream, options)
            .await
            .unwrap();
        table
    }

    async fn ids(table: &Table) -> Vec<i64> {
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
        let mut ids: Vec<i64> = Vec::new();
        for batch in scan.to_batches().await.unwrap() {
            ids.extend(batch.column(0).as_primitive::<Int64Type>().values());
        }
        ids.sort_unstable();
        ids
    }

    #[tokio::test]
    async fn deletion_vectors_mark_the_physical_rows_that_match() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_rows(dir.path(), true).await;
        let predicate = Some(parse_sql("id >= 3 AND id < 6").unwrap());
        let done = delete(&table, predicate, DeleteOptions::default())
            .await
            .unwrap();
        assert!(done.committed);
        assert_eq!(done.metrics["numDeletedRows"], 3);
        assert_eq!(done.metrics["numDeletionVectorsAdded"], 1);
        assert_eq!(ids(&table).await, vec![0, 1, 2, 6, 7, 8, 9]);
        let snapshot = done.snapshot.unwrap();
        let vectors = crate::scan::deletion_vectors(&snapshot).await.unwrap();
        let deleted = vectors.column(1).as_list::<i32>().value(0);
        let deleted = deleted.as_primitive::<arrow_array::types::UInt64Type>();
        assert_eq!(deleted.values().to_vec(), vec![3, 4, 5]);
    }

    #[tokio::test]
    async fn copy_on_write_rewrites_only_files_with_matches() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_rows(dir.path(), false).await;
        let none = delete(
            &table,
            Some(parse_sql("id > 100").unwrap()),
            DeleteOptions::default(),
        )
        .await
        .unwrap();
        assert!(!none.committed);
        let done = delete(
            &table,
            Some(parse_sql("id = 4").unwrap()),
            DeleteOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(done.metrics["numCopiedRows"], 9);
        assert_eq!(done.metrics["numRemovedFiles"], 1);
        assert_eq!(done.metrics["numAddedFiles"], 1);
        assert_eq!(ids(&table).await, vec![0, 1, 2, 3, 5, 6, 7, 8, 9]);
    }

    #[tokio::test]
    async fn an_unknown_column_commits_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_rows(dir.path(), true).await;
        let failure = delete(
            &table,
            Some(parse_sql("missing = 1").unwrap()),
            DeleteOptions::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(failure.error, Error::InvalidArgument(_)));
        assert_eq!(table.latest_version().await.unwrap(), 0);
    }
}
