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

use futures::StreamExt;

use crate::error::Result;
use crate::expr::Expr;
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::transaction::CommitResult;
use crate::write::{WriteFailure, WriterOptions};

use crate::ops::dml::{
    candidates, filter, is_partition_only, read_every_row, rows_in, touched_files, Candidate,
    FileMatches, RowChange, RowWriter, Touched,
};

/// The metrics Delta on Spark writes in the `commitInfo` of a `DELETE`.
pub(crate) const SPARK_METRICS: [&str; 13] = [
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
/// Errors, with nothing committed: [`crate::Error::InvalidArgument`] for a predicate naming an
/// unknown column or comparing a column with a value of another kind;
/// [`crate::Error::NotAllowed`] for an append-only table; [`crate::Error::UnsupportedFeature`]
/// for a table this library cannot write; conflicts as [`crate::Transaction::commit`] reports
/// them. Files written before a failure are named in the [`WriteFailure`] (unreferenced;
/// VACUUM removes them).
pub async fn delete(
    storage: &Storage,
    predicate: Option<Expr>,
    options: DeleteOptions,
) -> Result<CommitResult, WriteFailure> {
    let mut change = RowChange::open(storage, "DELETE").await?;
    if let Err(error) = prepare(&mut change, predicate.as_ref(), &options).await {
        return Err(change.fail(error));
    }
    let metrics = &change.metrics;
    let changed = metrics.get("numRemovedFiles") > 0
        || metrics.get("numDeletionVectorsAdded") > 0
        || metrics.get("numDeletionVectorsUpdated") > 0;
    change.commit(&SPARK_METRICS, changed).await
}

/// Stages every action of the delete.
async fn prepare(
    change: &mut RowChange,
    predicate: Option<&Expr>,
    options: &DeleteOptions,
) -> Result<()> {
    change.begin(Some("rows cannot be deleted"), &options.commit_info)?;
    change.stage_predicate(predicate)?;
    stage_delete(change, predicate, &options.writer).await
}

/// Stages on `change` the removal of the rows matching `predicate` (every row when `None`),
/// recording the read: whole files for a partition predicate, else deletion vectors or
/// copy-on-write rewrites written with `writer` (see the module documentation). The
/// predicate must have been checked against the table
/// ([`crate::ops::dml::check_predicate`]).
pub(crate) async fn stage_delete(
    change: &mut RowChange,
    predicate: Option<&Expr>,
    writer: &WriterOptions,
) -> Result<()> {
    let config = change.snapshot.table_configuration().clone();
    let scan_started = Instant::now();
    let found = candidates(&change.snapshot, predicate).await?;
    let metrics = &mut change.metrics;
    metrics.set("numFilesBeforeSkipping", found.files_before_skipping);
    metrics.set("numBytesBeforeSkipping", found.bytes_before_skipping);
    metrics.set("numFilesAfterSkipping", found.files.len() as u64);
    change.record_read(predicate, &found.files);
    let whole_files = predicate.is_none_or(|p| is_partition_only(&config, p));
    let Some(predicate) = predicate.filter(|_| !whole_files) else {
        remove_whole_files(change, &found.files)?;
        change
            .metrics
            .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
        return Ok(());
    };
    let touched = touched_files(&change.snapshot, found.files, predicate).await?;
    change
        .metrics
        .set("scanTimeMs", scan_started.elapsed().as_millis() as u64);
    let rewrite_started = Instant::now();
    let deleted: u64 = touched.iter().map(|(_, m)| m.matched.len()).sum();
    change.metrics.set("numDeletedRows", deleted);
    if config.is_deletion_vectors_enabled() {
        change.remove_touched(touched, true).await?;
    } else {
        rewrite(change, touched, writer).await?;
    }
    change.metrics.set(
        "rewriteTimeMs",
        rewrite_started.elapsed().as_millis() as u64,
    );
    Ok(())
}

/// Removes `files` whole (a delete of every row, or of whole partitions).
fn remove_whole_files(change: &mut RowChange, files: &[Candidate]) -> Result<()> {
    let mut rows = Some(0u64);
    for file in files {
        change.transaction.remove_files(&file.add, true)?;
        change.metrics.add("numRemovedFiles", 1);
        change
            .metrics
            .add("numRemovedBytes", file.size.max(0) as u64);
        change.metrics.add(
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
    change.metrics.set("numDeletedRows", rows.unwrap_or(0));
    change.metrics.set("numCopiedRows", 0);
    Ok(())
}

/// Copy-on-write: every touched file rewritten without its matching rows (and those its
/// deletion vector marked), the deleted rows written as `delete` change rows when the
/// change data feed is on.
async fn rewrite(
    change: &mut RowChange,
    touched: Vec<Touched>,
    writer_options: &WriterOptions,
) -> Result<()> {
    if touched.is_empty() {
        return Ok(());
    }
    let mut writer = change.open_writer(writer_options)?;
    let mut copied = 0u64;
    for (file, matches) in &touched {
        match copy_file(&change.snapshot, file, matches, &mut writer).await {
            Ok(rows) => copied += rows,
            Err(error) => return Err(change.abandon(writer, error).await),
        }
    }
    change.metrics.set("numCopiedRows", copied);
    change.remove_touched(touched, false).await?;
    change.stage_writer(writer).await
}

/// Writes the rows of `file` that stay (not matched, not deleted before) to `writer`, and the
/// matched rows as `delete` changes; returns how many rows were copied.
async fn copy_file(
    snapshot: &Snapshot,
    file: &Candidate,
    matches: &FileMatches,
    writer: &mut RowWriter,
) -> Result<u64> {
    let mut rows = read_every_row(snapshot, file, None, writer.keeps_row_ids())?;
    let mut position = 0u64;
    let mut copied = 0u64;
    while let Some(batch) = rows.next().await {
        let batch = batch?;
        copied += writer.copy_kept_rows(&batch, matches, position).await?;
        if writer.writes_changes() {
            let matched = rows_in(&matches.matched, batch.num_rows(), position)?;
            writer
                .write_changes(&filter(&batch, &matched)?, "delete")
                .await?;
        }
        position += batch.num_rows() as u64;
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;

    use super::*;
    use crate::error::Error;
    use crate::expr::parse_sql;
    use crate::ops::dml::test_tables::{ids, ids_batch, table_of};
    use crate::table::Table;

    async fn table_with_rows(dir: &std::path::Path, deletion_vectors: bool) -> Table {
        let dv = deletion_vectors.to_string();
        table_of(
            dir,
            ids_batch(0..10),
            &[("delta.enableDeletionVectors", &dv)],
        )
        .await
    }

    #[tokio::test]
    async fn deletion_vectors_mark_the_physical_rows_that_match() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_rows(dir.path(), true).await;
        let predicate = Some(parse_sql("id >= 3 AND id < 6").unwrap());
        let done = delete(table.storage(), predicate, DeleteOptions::default())
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
            table.storage(),
            Some(parse_sql("id > 100").unwrap()),
            DeleteOptions::default(),
        )
        .await
        .unwrap();
        assert!(!none.committed);
        let done = delete(
            table.storage(),
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
            table.storage(),
            Some(parse_sql("missing = 1").unwrap()),
            DeleteOptions::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(failure.error, Error::InvalidArgument(_)));
        assert_eq!(table.latest_version().await.unwrap(), 0);
    }
}
