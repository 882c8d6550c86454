//! OPTIMIZE run by a distributed engine's tasks, as `deltalog.spark.DeltaTable.optimize()`
//! runs it on Spark's executors:
//!
//! 1. [`DistributedOptimize::plan`], on the driver: the same checks, candidate files and bins
//!    as [`super::optimize`]; the plan is JSON naming each bin's files, so it travels to the
//!    tasks.
//! 2. [`DistributedOptimize::rewrite_bin`], in one task per bin: the bin's rows read (deletion
//!    vectors applied, row ids kept under row tracking), laid out as the run asks (file
//!    order, Z-order, clustering) and written as new files. What the task wrote travels back
//!    as a [`BinOutcome`].
//! 3. [`DistributedOptimize::commit`], on the driver: every bin's outcome in ONE `OPTIMIZE`
//!    commit (`dataChange=false`), with Delta on Spark's parameters and metrics and the
//!    conflict checks of [`super::optimize`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{
    bin_scan, candidate_files, considered_metrics, fill_metrics, rewrite_bin, Candidate, Layout,
    Operation, OptimizeOptions, OptimizeResult, Planned, Run,
};
use crate::error::{Error, Result};
use crate::expr::parse_sql;
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::transaction::Transaction;
use crate::write::{WriteFailure, WriterOptions, WrittenFile};

use crate::ops::dml::{row_tracking_columns, stage_row_tracking_names};

/// What to optimize: [`OptimizeOptions`] in a form that travels as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OptimizeSpec {
    /// Only the partitions matching this predicate (this library's SQL) over partition
    /// columns.
    pub filter: Option<String>,
    /// The size of a bin and of the files written (see [`OptimizeOptions::target_size`]).
    pub target_size: Option<u64>,
    /// Z-order the rows of each bin by these columns.
    #[serde(default)]
    pub z_order_by: Vec<String>,
    /// `OPTIMIZE FULL` on a clustered table (see [`OptimizeOptions::full`]).
    #[serde(default)]
    pub full: bool,
}

impl OptimizeSpec {
    fn options(&self) -> Result<OptimizeOptions> {
        Ok(OptimizeOptions {
            filter: self.filter.as_deref().map(parse_sql).transpose()?,
            target_size: self.target_size,
            z_order_by: self.z_order_by.clone(),
            full: self.full,
            ..OptimizeOptions::default()
        })
    }
}

/// A planned distributed OPTIMIZE; see the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DistributedOptimize {
    spec: OptimizeSpec,
    /// The table version planned on (every task reads it; the commit builds on it).
    version: u64,
    /// The size of the files written.
    target: u64,
    /// The materialised row tracking columns the rewritten files hold (row ids kept).
    row_tracking: Option<(String, String)>,
    /// The paths (as the log names them) of each bin's files, in the order they are read.
    bins: Vec<Vec<String>>,
    /// The number of candidate files considered.
    considered: u64,
}

/// What the task of one bin wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BinOutcome {
    /// The bin's index in the plan.
    pub bin: usize,
    pub files: Vec<WrittenFile>,
    /// The bin's id (the `ZCUBE_ID` tag of its files under clustering).
    pub cube: String,
}

impl DistributedOptimize {
    /// Plans OPTIMIZE on the latest version of the table in `storage`, with the checks and
    /// errors of [`super::optimize`].
    pub async fn plan(storage: &Storage, spec: OptimizeSpec) -> Result<DistributedOptimize> {
        let snapshot = Snapshot::load(storage, SnapshotAt::Latest).await?;
        let options = spec.options()?;
        let planned = Planned::of(&snapshot, &options).await?;
        let mut scratch = snapshot.transaction("OPTIMIZE");
        let row_tracking = row_tracking_columns(snapshot.table_configuration(), &mut scratch)?;
        let bins = planned
            .bins
            .iter()
            .map(|bin| bin.iter().filter_map(Candidate::path).collect())
            .collect();
        Ok(DistributedOptimize {
            spec,
            version: snapshot.version(),
            target: planned.target,
            row_tracking,
            bins,
            considered: planned.metrics.total_considered_files,
        })
    }

    /// The plan as JSON text.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|error| {
            Error::internal_invariant(format!("encoding an OPTIMIZE plan: {error}"))
        })
    }

    /// The plan of [`DistributedOptimize::to_json`]'s text.
    pub fn from_json(text: &str) -> Result<DistributedOptimize> {
        serde_json::from_str(text).map_err(|error| {
            Error::InvalidArgument(format!("not a deltalog OPTIMIZE plan: {error}"))
        })
    }

    /// The number of bins: one task each.
    pub fn bin_count(&self) -> usize {
        self.bins.len()
    }

    /// Reads the rows of bin `bin` and writes them as new files (nothing is committed). On
    /// failure the [`WriteFailure`] names the files completed.
    pub async fn rewrite_bin(
        &self,
        storage: &Storage,
        bin: usize,
    ) -> Result<BinOutcome, WriteFailure> {
        let (snapshot, options, layout) =
            self.open(storage).await.map_err(WriteFailure::unwritten)?;
        let files = self
            .bin_files(&snapshot, &options, std::slice::from_ref(&bin))
            .await
            .map_err(WriteFailure::unwritten)?;
        let scan = bin_scan(&snapshot, &files, self.row_tracking.is_some())
            .map_err(WriteFailure::unwritten)?;
        let rows = layout.order(&scan).await.map_err(WriteFailure::unwritten)?;
        let writer = WriterOptions {
            target_file_size: Some(self.target),
            ..options.writer.clone()
        };
        let config = snapshot.table_configuration();
        let tracking = self.row_tracking.clone();
        let files = rewrite_bin(config, storage, &writer, tracking, rows).await?;
        Ok(BinOutcome {
            bin,
            files,
            cube: uuid::Uuid::new_v4().to_string(),
        })
    }

    /// Commits every bin's outcome (one per bin) in one `OPTIMIZE` commit on top of the
    /// version planned on; returns the run's metrics (no version, nothing committed, for a
    /// plan without bins). Errors name the files the tasks wrote,
    /// which nothing references then.
    pub async fn commit(
        &self,
        storage: &Storage,
        mut outcomes: Vec<BinOutcome>,
    ) -> Result<OptimizeResult, WriteFailure> {
        let written: Vec<WrittenFile> = outcomes.iter().flat_map(|o| o.files.clone()).collect();
        let failure = |error: Error| WriteFailure {
            error,
            written_files: written.iter().map(|f| f.path.clone()).collect(),
        };
        outcomes.sort_by_key(|outcome| outcome.bin);
        let indexes: Vec<usize> = outcomes.iter().map(|outcome| outcome.bin).collect();
        if indexes != (0..self.bins.len()).collect::<Vec<_>>() {
            let table = storage.uri();
            return Err(failure(Error::internal(
                table,
                format!(
                    "an OPTIMIZE of {} bins got the outcomes of bins {indexes:?}: each bin \
                     must be rewritten exactly once",
                    self.bins.len()
                ),
            )));
        }
        let (snapshot, options, layout) = self.open(storage).await.map_err(failure)?;
        let mut metrics = considered_metrics(self.considered, &options, &layout);
        if self.bins.is_empty() {
            return Ok(metrics);
        }
        let all: Vec<usize> = (0..self.bins.len()).collect();
        let files = self
            .bin_files(&snapshot, &options, &all)
            .await
            .map_err(failure)?;
        let mut bins: Vec<Vec<Candidate>> = Vec::new();
        let mut rest = files.into_iter();
        for paths in &self.bins {
            bins.push(rest.by_ref().take(paths.len()).collect());
        }
        let adds: Vec<_> = outcomes
            .iter()
            .flat_map(|o| o.files.iter().map(|file| layout.add(file, &o.cube)))
            .collect();
        let mut transaction = snapshot.transaction("OPTIMIZE");
        self.stage_row_tracking_columns(&snapshot, &mut transaction)
            .map_err(failure)?;
        let run = Run {
            snapshot: &snapshot,
            options: &options,
            layout: &layout,
            operation: Operation::Optimize,
        };
        let staged = run.stage(transaction, &bins, &adds).map_err(failure)?;
        let version = staged.commit().await.map_err(failure)?.version;
        fill_metrics(&mut metrics, &bins, &written, version);
        Ok(metrics)
    }

    /// The planned snapshot, options and layout.
    async fn open(&self, storage: &Storage) -> Result<(Snapshot, OptimizeOptions, Layout)> {
        let snapshot = Snapshot::load(storage, SnapshotAt::Version(self.version)).await?;
        let options = self.spec.options()?;
        let layout = Layout::of(&snapshot, &options)?;
        Ok((snapshot, options, layout))
    }

    /// The files of the bins `bins`, in the plan's order.
    async fn bin_files(
        &self,
        snapshot: &Snapshot,
        options: &OptimizeOptions,
        bins: &[usize],
    ) -> Result<Vec<Candidate>> {
        let mut wanted = Vec::new();
        for &bin in bins {
            let paths = self.bins.get(bin).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "the OPTIMIZE plan has {} bins; there is no bin {bin}",
                    self.bins.len()
                ))
            })?;
            wanted.extend(paths.iter().cloned());
        }
        // Every live file of the partitions filtered is looked up: the plan chose among them.
        let mut found: HashMap<String, Candidate> =
            candidate_files(snapshot, options, true, self.target)
                .await?
                .into_iter()
                .filter_map(|file| file.path().map(|path| (path, file)))
                .collect();
        wanted
            .into_iter()
            .map(|path| {
                found.remove(&path).ok_or_else(|| {
                    Error::internal(
                        snapshot.table_uri(),
                        format!("the OPTIMIZE plan names {path}, which is not a live file of version {}", self.version),
                    )
                })
            })
            .collect()
    }

    /// Stages the names of the materialised row tracking columns when the plan chose them
    /// (the rewritten files hold them) and the table had none.
    fn stage_row_tracking_columns(
        &self,
        snapshot: &Snapshot,
        transaction: &mut Transaction,
    ) -> Result<()> {
        let Some((id, version)) = &self.row_tracking else {
            return Ok(());
        };
        let properties = snapshot.table_configuration().properties();
        if properties.materialized_row_id_column_name.is_some() {
            return Ok(());
        }
        stage_row_tracking_names(transaction, id, version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::dml::test_tables::{ids, ids_batch, table_of};
    use crate::table::Table;

    /// A table of `files` files of two rows each (ids 0, 1, 2, ...).
    async fn small_files(dir: &std::path::Path, files: i64) -> Table {
        let configuration = [("delta.enableRowTracking", "true")];
        let table = table_of(dir, ids_batch(0..2), &configuration).await;
        for file in 1..files {
            let batch = ids_batch(file * 2..file * 2 + 2);
            let stream = futures::stream::iter([Ok(batch)]);
            let schema = ids_batch(0..0).schema();
            crate::ops::write_table(table.storage(), schema, stream, Default::default())
                .await
                .unwrap();
        }
        table
    }

    #[tokio::test]
    async fn bins_rewritten_apart_commit_as_one_optimize() {
        let dir = tempfile::tempdir().unwrap();
        let table = small_files(dir.path(), 4).await;
        let spec = OptimizeSpec {
            target_size: Some(1 << 30),
            ..OptimizeSpec::default()
        };
        let plan = DistributedOptimize::plan(table.storage(), spec)
            .await
            .unwrap();
        let plan = DistributedOptimize::from_json(&plan.to_json().unwrap()).unwrap();
        assert_eq!(plan.bin_count(), 1);
        let outcome = plan.rewrite_bin(table.storage(), 0).await.unwrap();
        let text = serde_json::to_string(&outcome).unwrap();
        let outcome: BinOutcome = serde_json::from_str(&text).unwrap();

        let missing = plan.commit(table.storage(), Vec::new()).await.unwrap_err();
        assert!(
            matches!(missing.error, Error::Internal { .. }),
            "{}",
            missing.error
        );
        let done = plan.commit(table.storage(), vec![outcome]).await.unwrap();
        assert_eq!(done.version, Some(4));
        assert_eq!(done.num_files_removed, 4);
        assert_eq!(done.num_files_added, 1);
        assert_eq!(ids(&table).await, (0..8).collect::<Vec<i64>>());
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let (_, files) = snapshot.files(false).await.unwrap();
        assert_eq!(files.iter().map(|f| f.num_rows()).sum::<usize>(), 1);
        let properties = snapshot.table_configuration().properties().clone();
        assert!(properties.materialized_row_id_column_name.is_some());

        let again = DistributedOptimize::plan(table.storage(), OptimizeSpec::default())
            .await
            .unwrap();
        assert_eq!(again.bin_count(), 0);
        let nothing = again.commit(table.storage(), Vec::new()).await.unwrap();
        assert_eq!(nothing.version, None);
    }
}
