//! `replaceWhere`: an overwrite that replaces only the rows matching a predicate, over data
//! and partition columns, in one commit, as Delta on Spark's `WriteIntoDelta` does with
//! `spark.databricks.delta.replaceWhere.dataColumns.enabled` (its default).
//!
//! 1. The rows of the table matching the predicate are deleted as `DELETE` deletes them
//!    ([`stage_delete`]): whole files for a predicate over partition columns only, else
//!    deletion vectors when the table has `delta.enableDeletionVectors`, else the files
//!    holding matching rows rewritten without them (copy-on-write), with their deleted rows
//!    as `delete` change rows when the change data feed is on. The predicate and the files
//!    read are recorded, so that a concurrent commit adding rows the predicate may match
//!    (under the isolation level's rules) or removing a file read is a conflict.
//! 2. The new rows are written. Every one must match the predicate
//!    ([`Error::ReplaceWhereMismatch`] otherwise) unless the check is turned off (Spark's
//!    `spark.databricks.delta.replaceWhere.constraintCheck.enabled`). When the delete wrote
//!    change data files, the new rows are written to change data files too, as `insert` rows
//!    (the spec's change data feed is either wholly in change data files or wholly derived
//!    from adds and removes within one commit).
//!
//! Row tracking: rewritten rows keep their row ids; new rows get fresh ones at the commit.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::table_config::TableConfiguration;
use crate::transaction::TableTransaction;
use crate::write::{WriteFailure, WriterOptions};

use crate::ops::dml::delete::stage_delete;
use crate::ops::dml::{check_predicate, is_partition_only, RowChange};

/// The metrics of the delete half that Delta on Spark reports in the `commitInfo` of a
/// `replaceWhere`, zero included (the write half's `numFiles`, `numOutputRows`,
/// `numOutputBytes` and `numRemovedFiles` are computed from the actions at the commit;
/// `numAddedChangeFiles` grows with the change files of the inserts).
const DELETE_METRICS: [&str; 4] = [
    "numDeletedRows",
    "numCopiedRows",
    "numRemovedBytes",
    "numAddedChangeFiles",
];

/// What the delete half of a `replaceWhere` staged.
#[derive(Debug, Default)]
pub(crate) struct ReplacedRows {
    /// True when it wrote change data files: the new rows must then be written as `insert`
    /// change rows too.
    pub wrote_changes: bool,
    /// Its metrics (Spark's names).
    pub metrics: BTreeMap<String, u64>,
}

/// Stages on `transaction` (made to overwrite the table it read, nothing written yet) the
/// delete of the rows matching `predicate`, rewritten files written with `writer`; see the
/// module documentation. Returns the transaction, which names the files written for the
/// delete in its errors; an error here names them too (rewritten data, change data,
/// deletion vectors).
pub(crate) async fn stage_replaced_rows(
    transaction: TableTransaction,
    predicate: &Expr,
    writer: &WriterOptions,
) -> Result<(TableTransaction, ReplacedRows), WriteFailure> {
    let staging = transaction.into_transaction();
    let Some(snapshot) = staging.read_snapshot().cloned() else {
        return Err(WriteFailure::unwritten(Error::InvalidArgument(
            "replacing rows needs a transaction that read the table".into(),
        )));
    };
    check_predicate(snapshot.table_configuration(), predicate).map_err(WriteFailure::unwritten)?;
    let mut change = RowChange::new(snapshot, staging);
    if let Err(error) = stage_delete(&mut change, Some(predicate), writer).await {
        return Err(change.fail(error));
    }
    let RowChange {
        transaction: staging,
        metrics,
        written,
        ..
    } = change;
    let mut reported = BTreeMap::new();
    for name in DELETE_METRICS {
        reported.insert(name.to_string(), metrics.get(name));
    }
    let replaced = ReplacedRows {
        wrote_changes: metrics.get("numAddedChangeFiles") > 0,
        metrics: reported,
    };
    let transaction = TableTransaction::new(staging, writer.clone()).with_written(written);
    Ok((transaction, replaced))
}

/// Whether the tasks of a distributed `replaceWhere` write their rows as `insert` change rows
/// too: when the delete half will write change data files (change data feed on, no
/// deletion vectors, a predicate over data columns). Should no row match at the commit, the
/// change rows of the inserts still describe the commit exactly.
pub(crate) fn inserts_need_changes(config: &TableConfiguration, predicate: &Expr) -> bool {
    config.properties().enable_change_data_feed
        && !config.is_deletion_vectors_enabled()
        && !is_partition_only(config, predicate)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    use super::*;
    use crate::expr::parse_sql;
    use crate::ops::dml::test_tables::{ids, ids_batch, table_of};
    use crate::ops::{write_table, WriteMode, WriteTableOptions};
    use crate::scan::changes::ChangeScan;
    use crate::snapshot::SnapshotAt;
    use crate::table::Table;
    use crate::write::changes::CHANGE_TYPE;

    async fn table_with_rows(dir: &std::path::Path, properties: &[(&str, &str)]) -> Table {
        table_of(dir, ids_batch(0..10), properties).await
    }

    async fn replace(table: &Table, ids: Vec<i64>, predicate: &str) -> Result<u64, WriteFailure> {
        let batch = ids_batch(ids);
        let options = WriteTableOptions {
            mode: WriteMode::Overwrite,
            predicate: Some(parse_sql(predicate).unwrap()),
            ..WriteTableOptions::default()
        };
        let stream = futures::stream::iter([Ok(batch.clone())]);
        let commit = write_table(table.storage(), batch.schema(), stream, options).await?;
        Ok(commit.version)
    }

    #[tokio::test]
    async fn data_column_predicates_replace_only_matching_rows() {
        for dv in ["true", "false"] {
            let dir = tempfile::tempdir().unwrap();
            let table = table_with_rows(dir.path(), &[("delta.enableDeletionVectors", dv)]).await;
            let version = replace(&table, vec![4, 40], "id >= 3 AND id < 6 OR id = 40")
                .await
                .unwrap();
            assert_eq!(version, 1);
            assert_eq!(ids(&table).await, vec![0, 1, 2, 4, 6, 7, 8, 9, 40]);
        }
    }

    #[tokio::test]
    async fn rows_outside_the_predicate_are_refused_and_nothing_commits() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_rows(dir.path(), &[("delta.enableDeletionVectors", "false")]).await;
        let failure = replace(&table, vec![4, 7], "id < 5").await.unwrap_err();
        assert!(matches!(
            failure.error,
            Error::ReplaceWhereMismatch { ref predicate, .. } if predicate.contains("id")
        ));
        assert_eq!(table.latest_version().await.unwrap(), 0);
        assert_eq!(ids(&table).await, (0..10).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn copy_on_write_with_the_change_feed_writes_deletes_and_inserts() {
        let dir = tempfile::tempdir().unwrap();
        let properties = [
            ("delta.enableDeletionVectors", "false"),
            ("delta.enableChangeDataFeed", "true"),
        ];
        let table = table_with_rows(dir.path(), &properties).await;
        replace(&table, vec![3, 30], "id = 3 OR id = 30")
            .await
            .unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let changes = ChangeScan::new(table.storage(), 1, Some(1), Default::default())
            .await
            .unwrap()
            .to_batches()
            .await
            .unwrap();
        let mut seen: Vec<(String, i64)> = Vec::new();
        for batch in changes {
            let ids = batch
                .column_by_name("id")
                .unwrap()
                .as_primitive::<Int64Type>();
            let kinds = batch
                .column_by_name(CHANGE_TYPE)
                .unwrap()
                .as_string::<i32>();
            for row in 0..batch.num_rows() {
                seen.push((kinds.value(row).to_string(), ids.value(row)));
            }
        }
        seen.sort();
        let expected = [("delete", 3), ("insert", 3), ("insert", 30)];
        let expected: Vec<(String, i64)> =
            expected.iter().map(|(k, i)| (k.to_string(), *i)).collect();
        assert_eq!(seen, expected);
        assert_eq!(snapshot.version(), 1);
        let log = dir.path().join("_delta_log/00000000000000000001.json");
        let commit = std::fs::read_to_string(log).unwrap();
        let cdc_actions = commit.lines().filter(|l| l.starts_with("{\"cdc\"")).count();
        assert_eq!(
            cdc_actions, 2,
            "a delete and an insert change file: {commit}"
        );
    }
}
