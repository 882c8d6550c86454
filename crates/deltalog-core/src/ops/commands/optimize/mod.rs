//! OPTIMIZE: compacting small files and purging deletion vectors, as Delta on Spark's
//! `OptimizeTableCommand` does, optionally Z-ordering the rows of each partition.
//!
//! Per partition (optionally only those matching a filter over partition columns), the
//! candidate files are those smaller than the minimum file size and those with a deletion
//! vector; with Z-order every file of the partition is a candidate. Candidates, sorted by
//! size (Spark's compaction order), are packed greedily into bins of at most the target size;
//! a bin is rewritten when it holds more than one file, when one of its files has a deletion
//! vector (the rewrite drops the deleted rows, so the vector goes away), or under Z-order.
//! Each bin is read through the scan (which applies deletion vectors) and written through the
//! data-file writer, and the whole run is one commit of `dataChange=false` adds and removes
//! (operation `OPTIMIZE`). The commit records the files it read: a concurrent append commits
//! before or after without conflict and is never lost; a concurrent delete of a compacted
//! file is a [`crate::ConflictKind::ConcurrentDeleteDelete`] conflict and nothing is
//! committed. On a table with row tracking, rewritten rows keep their row ids and row commit
//! versions in the materialised row tracking columns (spec "Row Tracking"), as Spark keeps
//! them.
//!
//! Z-order sorts the rows of a bin along the Z-order curve of the Z-order columns
//! ([`curves`]); a Z-ordered bin is sorted in memory.
//!
//! On a clustered table with clustering columns (spec "Clustered Table"), OPTIMIZE clusters
//! instead, as Delta on Spark's liquid clustering does: [`clustering`] picks the files
//! (incrementally: unclustered files and small cubes of its own) and packs them into cubes;
//! each cube's rows are sorted along the Hilbert curve of the clustering columns (Z-order for
//! one column) and written as files tagged with the cube (`ZCUBE_ID`, `ZCUBE_ZORDER_BY`) and
//! `clusteringProvider` `liquid`. A partition filter or Z-order columns are refused on a
//! clustered table, as Spark refuses them; [`OptimizeOptions::full`] (`OPTIMIZE FULL`)
//! reclusters also the files clustered by other columns.
//!
//! A dry run ([`OptimizeOptions::dry_run`]) stops once the bins are packed: it reports the
//! files of the bins and the metrics of their removal, and writes nothing.

mod clustering;
mod curves;
mod distributed;
mod reorg;

pub use distributed::{BinOutcome, DistributedOptimize, OptimizeSpec};

pub(crate) use reorg::{reorg, rewrite_without_column_mapping, Reorg};

use std::collections::BTreeMap;

use arrow::compute::concat_batches;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, RecordBatch, StructArray};
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use serde_json::Value;

use crate::actions::layout::add;
use crate::error::{Error, Result};
use crate::expr::{files_may_match, Expr};
use crate::replay::file_list::file_list_stats;
use crate::scan::{Scan, ScanOptions};
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::table_config::clustering::{
    clustering_columns, CLUSTERING_DOMAIN, LIQUID_PROVIDER, ZCUBE_ID_TAG, ZCUBE_ZORDER_BY_TAG,
};
use crate::table_config::stats::select_stats_columns;
use crate::table_config::{ClusteringColumn, TableConfiguration, TableFeature};
use crate::transaction::{add_file, AddFile, Transaction, DATA_WRITER_FEATURES};
use crate::write::{RowOrigin, WriteFailure, WriterOptions, WrittenFile};
use clustering::Cube;
use curves::{curve_sort, Curve};

use crate::ops::dml::{row_tracking_columns, RowWriter};

/// Spark's default `spark.databricks.delta.optimize.maxFileSize` and `minFileSize`: 1 GiB.
pub const DEFAULT_OPTIMIZE_FILE_SIZE: u64 = 1024 * 1024 * 1024;

/// The options of [`optimize`].
#[derive(Debug, Clone, Default)]
pub struct OptimizeOptions {
    /// Only the partitions matching this predicate over partition columns.
    pub filter: Option<Expr>,
    /// The size of a bin and of the files written; `None`: the table's `delta.targetFileSize`,
    /// else [`DEFAULT_OPTIMIZE_FILE_SIZE`]. Files smaller than this are compacted.
    pub target_size: Option<u64>,
    /// Z-order the rows of each rewritten bin by these columns (not partition columns).
    pub z_order_by: Vec<String>,
    /// `OPTIMIZE FULL`: on a clustered table, recluster also the files clustered by other
    /// columns than today's (or by another clustering implementation). Refused on a table
    /// without clustering columns. Default false.
    pub full: bool,
    /// How the new files are written (codec, row groups); its target size is replaced.
    pub writer: WriterOptions,
    /// Plan exactly as the real run (the same candidate files and bins) but write and commit
    /// nothing: the metrics returned have no version, the removal side filled as the real
    /// run fills it, the added side empty, and [`OptimizeResult::files_to_rewrite`] the
    /// files the run would rewrite. Default false.
    pub dry_run: bool,
}

/// Size statistics of a set of files, as Spark's `FileSizeMetrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileSizeMetrics {
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub avg: f64,
    pub total_files: u64,
    pub total_size: u64,
}

/// What [`optimize`] did (or with [`OptimizeOptions::dry_run`] would do), named as Spark's
/// `OptimizeResult`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OptimizeResult {
    /// The version committed; `None` when there was nothing to rewrite, and for a dry run.
    pub version: Option<u64>,
    pub num_files_added: u64,
    pub num_files_removed: u64,
    pub files_added: FileSizeMetrics,
    pub files_removed: FileSizeMetrics,
    pub partitions_optimized: u64,
    pub num_batches: u64,
    pub total_considered_files: u64,
    pub total_files_skipped: u64,
    pub num_deletion_vectors_removed: u64,
    pub num_deletion_vector_rows_removed: u64,
    /// The Z-order columns used (empty for plain compaction and clustering).
    pub z_order_by: Vec<String>,
    /// The clustering columns the table was clustered by (empty unless it is clustered).
    pub cluster_by: Vec<String>,
    /// Filled by a dry run only ([`OptimizeOptions::dry_run`]): the paths of the files the
    /// run would rewrite, relative to the table root as the log names them, bin by bin.
    pub files_to_rewrite: Vec<String>,
}

/// Compacts the files of the latest version of `table` (see the module documentation).
///
/// Errors: [`Error::InvalidArgument`] for a filter on a column that is not a partition column,
/// an unknown Z-order column or a partition column among them, a zero target size, a filter
/// or Z-order columns on a clustered table, or `full` on a table without clustering columns;
/// [`Error::UnsupportedFeature`] for a table this library cannot write;
/// commit conflicts as [`Transaction::commit`] reports them. Files written before a failure
/// are deleted again when possible (and are unreferenced in any case).
pub async fn optimize(storage: &Storage, options: OptimizeOptions) -> Result<OptimizeResult> {
    let snapshot = Snapshot::load(storage, SnapshotAt::Latest).await?;
    let Planned {
        layout,
        target,
        bins,
        mut metrics,
    } = Planned::of(&snapshot, &options).await?;
    if options.dry_run {
        fill_removed_metrics(&mut metrics, &bins);
        metrics.files_to_rewrite = bins.iter().flatten().filter_map(Candidate::path).collect();
        return Ok(metrics);
    }
    if bins.is_empty() {
        return Ok(metrics);
    }
    let mut writer = options.writer.clone();
    writer.target_file_size = Some(target);
    let mut written: Vec<WrittenFile> = Vec::new();
    let run = Run {
        snapshot: &snapshot,
        options: &options,
        layout: &layout,
        operation: Operation::Optimize,
    };
    let outcome = run.rewrite_and_commit(&bins, writer, &mut written).await;
    match outcome {
        Ok(version) => {
            fill_metrics(&mut metrics, &bins, &written, version);
            Ok(metrics)
        }
        Err(error) => {
            let paths = written.iter().map(|file| file.path.clone()).collect();
            let _ = storage.delete_relative(paths).await;
            Err(error)
        }
    }
}

/// An OPTIMIZE run planned on a snapshot: how it lays out rows, the size of its bins and
/// files, the bins, and the metrics of what it considered.
struct Planned {
    layout: Layout,
    target: u64,
    bins: Vec<Vec<Candidate>>,
    metrics: OptimizeResult,
}

impl Planned {
    /// Checks `options` against `snapshot` (see [`optimize`]'s errors) and packs the bins.
    async fn of(snapshot: &Snapshot, options: &OptimizeOptions) -> Result<Planned> {
        let config = snapshot.table_configuration();
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        let target = options
            .target_size
            .or(config.properties().target_file_size)
            .unwrap_or(DEFAULT_OPTIMIZE_FILE_SIZE);
        if target == 0 {
            return Err(Error::InvalidArgument(
                "the target size of OPTIMIZE must be above 0".into(),
            ));
        }
        let layout = Layout::of(snapshot, options)?;
        let files = candidate_files(snapshot, options, layout.rewrites_all(), target).await?;
        let metrics = considered_metrics(files.len() as u64, options, &layout);
        let bins = layout.bins(files, target, options.full);
        Ok(Planned {
            layout,
            target,
            bins,
            metrics,
        })
    }
}

/// The metrics of a run before it rewrites anything: `considered` candidate files, all of
/// them skipped so far, one batch, the Z-order and clustering columns.
fn considered_metrics(
    considered: u64,
    options: &OptimizeOptions,
    layout: &Layout,
) -> OptimizeResult {
    OptimizeResult {
        total_considered_files: considered,
        total_files_skipped: considered,
        // Spark runs every bin in one batch (no `spark.databricks.delta.optimize.batchSize`).
        num_batches: 1,
        z_order_by: options.z_order_by.clone(),
        cluster_by: layout.cluster_by(),
        ..OptimizeResult::default()
    }
}

/// How OPTIMIZE lays out the rows it rewrites, as Delta on Spark's `OptimizeTableStrategy`.
#[derive(Debug, Clone)]
enum Layout {
    /// Small files packed into bigger ones, rows in file order.
    Compaction,
    /// Every file of a partition rewritten, rows along the Z-order of these columns.
    ZOrder(Vec<String>),
    /// The files [`clustering::select`] picks, rows along the curve of the clustering
    /// columns.
    Clustering(Vec<ClusteringColumn>),
}

impl Layout {
    /// The layout for `options` on the latest `snapshot`, checking the options against the
    /// table (see [`optimize`]'s errors).
    fn of(snapshot: &Snapshot, options: &OptimizeOptions) -> Result<Layout> {
        let config = snapshot.table_configuration();
        let table = snapshot.storage().uri();
        let columns = clustering_columns(config, snapshot.domain_metadata(CLUSTERING_DOMAIN))?;
        if config.is_feature_supported(&TableFeature::Clustering) {
            if options.filter.is_some() {
                return Err(Error::InvalidArgument(format!(
                    "{table} is a clustered table: OPTIMIZE takes no partition filter on it \
                     (Delta on Spark's DELTA_CLUSTERING_WITH_PARTITION_PREDICATE)"
                )));
            }
            if !options.z_order_by.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{table} is a clustered table: OPTIMIZE clusters it by its clustering \
                     columns and cannot Z-order it (Delta on Spark's \
                     DELTA_CLUSTERING_WITH_ZORDER_BY)"
                )));
            }
        }
        if options.full && columns.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "OPTIMIZE FULL needs a clustered table with clustering columns; {table} has \
                 none (Delta on Spark's DELTA_OPTIMIZE_FULL_NOT_SUPPORTED)"
            )));
        }
        check_columns(snapshot, options)?;
        Ok(match (columns.is_empty(), options.z_order_by.is_empty()) {
            (false, _) => Layout::Clustering(columns),
            (true, false) => Layout::ZOrder(options.z_order_by.clone()),
            (true, true) => Layout::Compaction,
        })
    }

    /// True when every file is a candidate, whatever its size.
    fn rewrites_all(&self) -> bool {
        !matches!(self, Layout::Compaction)
    }

    /// The clustering columns' names (empty unless clustering).
    fn cluster_by(&self) -> Vec<String> {
        match self {
            Layout::Clustering(columns) => columns.iter().map(ClusteringColumn::name).collect(),
            _ => Vec::new(),
        }
    }

    /// The bins to rewrite out of the candidate `files`.
    fn bins(&self, files: Vec<Candidate>, target: u64, full: bool) -> Vec<Vec<Candidate>> {
        match self {
            Layout::Clustering(_) => {
                clustering::pack_cubes(clustering::select(files, &self.cluster_by(), full))
            }
            Layout::ZOrder(_) => pack_bins(&files, target, true),
            Layout::Compaction => pack_bins(&files, target, false),
        }
    }

    /// The rows of `scan`, ordered for writing as this layout asks.
    async fn order(&self, scan: &Scan) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let (paths, curve): (Vec<Vec<String>>, Curve) = match self {
            Layout::Compaction => return Ok(scan.stream()),
            Layout::ZOrder(columns) => {
                let paths = columns.iter().map(|c| vec![c.clone()]).collect();
                (paths, Curve::ZOrder)
            }
            Layout::Clustering(columns) => {
                let paths = columns.iter().map(|c| c.path.clone()).collect();
                (paths, Curve::for_clustering(columns.len()))
            }
        };
        curve_ordered(scan, paths, curve).await
    }

    /// The add of `file`, written for one bin: `dataChange=false`, and under clustering
    /// tagged with the bin's `cube` id and `clusteringProvider` `liquid`.
    fn add(&self, file: &WrittenFile, cube: &str) -> AddFile {
        let add = AddFile {
            data_change: false,
            ..add_file(file)
        };
        match self {
            Layout::Clustering(_) => AddFile {
                tags: vec![
                    (ZCUBE_ID_TAG.to_string(), Some(cube.to_string())),
                    (
                        ZCUBE_ZORDER_BY_TAG.to_string(),
                        serde_json::to_string(&self.cluster_by()).ok(),
                    ),
                ],
                clustering_provider: Some(LIQUID_PROVIDER.to_string()),
                ..add
            },
            _ => add,
        }
    }
}

/// One live file of the snapshot considered for compaction.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// The partition values (as the log writes them) keying its partition.
    partition: Vec<(String, Option<String>)>,
    size: u64,
    /// The deleted rows of its deletion vector, when it has one.
    deleted_rows: Option<u64>,
    /// The clustering cube it was written in, from its tags.
    cube: Option<Cube>,
    /// Its `clusteringProvider`.
    provider: Option<String>,
    /// Its row of the snapshot's add actions (for the remove).
    add: StructArray,
    /// Its row of the snapshot's file list (for the scan).
    listed: RecordBatch,
}

impl Candidate {
    /// Its path as the log names it.
    fn path(&self) -> Option<String> {
        self.add
            .column_by_name(add::PATH)
            .and_then(|c| c.as_string_opt::<i32>())
            .filter(|c| c.is_valid(0))
            .map(|c| c.value(0).to_string())
    }
}

/// Refuses unknown Z-order columns, partition columns among them, Z-order columns without
/// statistics (as Spark does: the Z-order could not skip files), and a filter on other
/// columns than partition columns.
fn check_columns(snapshot: &Snapshot, options: &OptimizeOptions) -> Result<()> {
    let partition_columns = snapshot.partition_columns();
    let is_partition = |c: &str| partition_columns.iter().any(|p| p.eq_ignore_ascii_case(c));
    if let Some(column) = options
        .filter
        .as_ref()
        .and_then(|f| f.columns().into_iter().find(|c| !is_partition(c)))
    {
        return Err(Error::InvalidArgument(format!(
            "OPTIMIZE can only filter on partition columns; {column} is not one"
        )));
    }
    let schema = snapshot.schema();
    let with_stats = select_stats_columns(
        &schema.data_schema(partition_columns),
        &snapshot.metadata().configuration,
    )?;
    for column in &options.z_order_by {
        if is_partition(column) {
            return Err(Error::InvalidArgument(format!(
                "{column} is a partition column: Z-ordering by it is meaningless"
            )));
        }
        if !schema
            .fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(column))
        {
            return Err(Error::InvalidArgument(format!(
                "cannot Z-order by {column}: the table has no such column"
            )));
        }
        if !with_stats
            .fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(column))
        {
            return Err(Error::InvalidArgument(format!(
                "Z-ordering by {column} would be ineffective: the table collects no statistics \
                 for it (Spark's DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS); name it in \
                 delta.dataSkippingStatsColumns or raise delta.dataSkippingNumIndexedCols"
            )));
        }
    }
    Ok(())
}

/// The live files of the partitions matching the filter that are small or have a deletion
/// vector (with `every_file`, all of them), in file-list order.
async fn candidate_files(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    every_file: bool,
    target: u64,
) -> Result<Vec<Candidate>> {
    let (_, listed) = snapshot.files(false).await?;
    let mut candidates = Vec::new();
    for (adds, files) in snapshot.add_actions().await?.iter().zip(&listed) {
        let mask = match &options.filter {
            Some(filter) => files_may_match(filter, &file_list_stats(files)?)?,
            None => BooleanArray::from(vec![true; files.num_rows()]),
        };
        let sizes = adds
            .column_by_name(add::SIZE)
            .and_then(|c| c.as_primitive_opt::<Int64Type>());
        let dvs = adds
            .column_by_name(add::DELETION_VECTOR)
            .and_then(|c| c.as_struct_opt());
        let providers = adds
            .column_by_name(add::CLUSTERING_PROVIDER)
            .and_then(|c| c.as_string_opt::<i32>());
        for row in 0..adds.len() {
            if !mask.value(row) || mask.is_null(row) {
                continue;
            }
            let size = sizes
                .filter(|s| s.is_valid(row))
                .map_or(0, |s| u64::try_from(s.value(row)).unwrap_or(0));
            let deleted_rows = dvs.filter(|d| d.is_valid(row)).map(|d| {
                d.column_by_name("cardinality")
                    .and_then(|c| c.as_primitive_opt::<Int64Type>())
                    .filter(|c| c.is_valid(row))
                    .map_or(0, |c| u64::try_from(c.value(row)).unwrap_or(0))
            });
            let wanted = size < target || deleted_rows.is_some() || every_file;
            if wanted {
                let tags = map_entries(adds, add::TAGS, row);
                let tag = |key: &str| {
                    tags.iter()
                        .find(|(k, _)| k == key)
                        .and_then(|t| t.1.clone())
                };
                candidates.push(Candidate {
                    partition: map_entries(adds, add::PARTITION_VALUES, row),
                    size,
                    deleted_rows,
                    cube: Cube::from_tags(tag(ZCUBE_ID_TAG), tag(ZCUBE_ZORDER_BY_TAG)),
                    provider: providers
                        .filter(|p| p.is_valid(row))
                        .map(|p| p.value(row).to_string()),
                    add: adds.slice(row, 1),
                    listed: files.slice(row, 1),
                });
            }
        }
    }
    Ok(candidates)
}

/// The bins to rewrite: per partition, the candidates packed greedily into bins of at most
/// `target` bytes, by size unless `every_bin`; a bin is kept when it has more than one file,
/// a file with a deletion vector, or when `every_bin` (Z-order, REORG) rewrites them all.
fn pack_bins(files: &[Candidate], target: u64, every_bin: bool) -> Vec<Vec<Candidate>> {
    let mut partitions: BTreeMap<Vec<(String, Option<String>)>, Vec<&Candidate>> = BTreeMap::new();
    for file in files {
        partitions
            .entry(file.partition.clone())
            .or_default()
            .push(file);
    }
    let mut bins = Vec::new();
    for (_, mut files) in partitions {
        if !every_bin {
            files.sort_by_key(|file| file.size);
        }
        let mut bin: Vec<Candidate> = Vec::new();
        let mut bin_size = 0u64;
        for file in files {
            if !bin.is_empty() && bin_size.saturating_add(file.size) > target {
                bins.push(std::mem::take(&mut bin));
                bin_size = 0;
            }
            bin_size = bin_size.saturating_add(file.size);
            bin.push(file.clone());
        }
        if !bin.is_empty() {
            bins.push(bin);
        }
    }
    bins.retain(|bin| bin.len() > 1 || every_bin || bin.iter().any(|f| f.deleted_rows.is_some()));
    bins
}

/// The operation a rewrite commits as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// `OPTIMIZE`, with its predicate, Z-order and clustering parameters.
    Optimize,
    /// `REORG` ([`reorg`]): predicate and `applyPurge`.
    Reorg,
}

/// One OPTIMIZE or REORG run: the snapshot it reads, its options, layout and operation.
struct Run<'a> {
    snapshot: &'a Snapshot,
    options: &'a OptimizeOptions,
    layout: &'a Layout,
    operation: Operation,
}

impl Run<'_> {
    /// Rewrites every bin (files written are pushed to `written` as they complete) and
    /// commits. On a table with row tracking, the rewritten rows keep their row ids and row
    /// commit versions in the materialised columns (whose names are staged first when the
    /// table has none yet), as Delta on Spark's OPTIMIZE keeps them.
    async fn rewrite_and_commit(
        &self,
        bins: &[Vec<Candidate>],
        writer: WriterOptions,
        written: &mut Vec<WrittenFile>,
    ) -> Result<u64> {
        let snapshot = self.snapshot;
        let name = match self.operation {
            Operation::Optimize => "OPTIMIZE",
            Operation::Reorg => "REORG",
        };
        let mut transaction = snapshot.transaction(name);
        let row_tracking = row_tracking_columns(snapshot.table_configuration(), &mut transaction)?;
        let mut adds = Vec::new();
        for bin in bins {
            let scan = bin_scan(snapshot, bin, row_tracking.is_some())?;
            let rows = self.layout.order(&scan).await?;
            let config = snapshot.table_configuration();
            let tracking = row_tracking.clone();
            match rewrite_bin(config, snapshot.storage(), &writer, tracking, rows).await {
                Ok(files) => {
                    let cube = uuid::Uuid::new_v4().to_string();
                    adds.extend(files.iter().map(|file| self.layout.add(file, &cube)));
                    written.extend(files);
                }
                Err(failure) => {
                    written.extend(failure.written_files.into_iter().map(unsized_file));
                    return Err(failure.error);
                }
            }
        }
        let transaction = self.stage(transaction, bins, &adds)?;
        Ok(transaction.commit().await?.version)
    }

    /// Stages on `transaction` the `OPTIMIZE` commit: removes of the bins' files, `adds`
    /// (`dataChange=false`), the files read recorded, Spark's parameters and metrics.
    fn stage(
        &self,
        mut transaction: Transaction,
        bins: &[Vec<Candidate>],
        adds: &[AddFile],
    ) -> Result<Transaction> {
        let options = self.options;
        let predicates: Vec<String> = options.filter.iter().map(|f| f.to_string()).collect();
        let cluster_by = self.layout.cluster_by();
        transaction.set_operation_parameter("predicate", json_text(&predicates));
        if self.operation == Operation::Reorg {
            transaction.set_operation_parameter("applyPurge", true);
        } else {
            transaction.set_operation_parameter("zOrderBy", json_text(&options.z_order_by));
            transaction.set_operation_parameter("clusterBy", json_text(&cluster_by));
            transaction.set_operation_parameter("auto", false);
            if !cluster_by.is_empty() {
                transaction.set_operation_parameter("isFull", options.full);
            }
        }
        for file in bins.iter().flatten() {
            transaction.record_read_files(file.path().as_deref());
            transaction.remove_files(&file.add, false)?;
        }
        transaction.add(adds)?;
        Ok(with_metrics(transaction, bins, adds))
    }
}

/// `transaction` with Spark's OPTIMIZE metrics of removing `bins` and adding `adds`.
fn with_metrics(
    transaction: Transaction,
    bins: &[Vec<Candidate>],
    adds: &[AddFile],
) -> Transaction {
    let removed: Vec<u64> = bins.iter().flatten().map(|f| f.size).collect();
    let mut added: Vec<u64> = adds
        .iter()
        .map(|f| u64::try_from(f.size).unwrap_or(0))
        .collect();
    added.sort_unstable();
    let dvs: Vec<u64> = bins
        .iter()
        .flatten()
        .filter_map(|f| f.deleted_rows)
        .collect();
    let percentile =
        |p: usize| added.get((added.len() * p / 100).min(added.len().saturating_sub(1)));
    let metric = |value: Option<&u64>| value.copied().unwrap_or(0).to_string();
    transaction
        .with_operation_metric("numAddedFiles", added.len().to_string())
        .with_operation_metric("numRemovedFiles", removed.len().to_string())
        .with_operation_metric("numAddedBytes", added.iter().sum::<u64>().to_string())
        .with_operation_metric("numRemovedBytes", removed.iter().sum::<u64>().to_string())
        .with_operation_metric("minFileSize", metric(added.first()))
        .with_operation_metric("p25FileSize", metric(percentile(25)))
        .with_operation_metric("p50FileSize", metric(percentile(50)))
        .with_operation_metric("p75FileSize", metric(percentile(75)))
        .with_operation_metric("maxFileSize", metric(added.last()))
        .with_operation_metric("numDeletionVectorsRemoved", dvs.len().to_string())
        .with_operation_metric(
            "numDeletionVectorRowsRemoved",
            dvs.iter().sum::<u64>().to_string(),
        )
}

/// The scan of the rows of `bin` in `snapshot`, with the row tracking columns when
/// `row_tracking`.
fn bin_scan(snapshot: &Snapshot, bin: &[Candidate], row_tracking: bool) -> Result<Scan> {
    let files: Vec<RecordBatch> = bin.iter().map(|file| file.listed.clone()).collect();
    let options = ScanOptions {
        row_tracking,
        ..ScanOptions::default()
    };
    Scan::over_files(
        snapshot.storage(),
        snapshot.version(),
        snapshot.protocol(),
        snapshot.metadata(),
        options,
        files,
    )
}

/// Writes `rows` (the table's columns, then the row tracking columns when `row_tracking`
/// names the materialised ones) as new data files of a table configured as `config`.
async fn rewrite_bin(
    config: &TableConfiguration,
    storage: &Storage,
    writer: &WriterOptions,
    row_tracking: Option<(String, String)>,
    mut rows: BoxStream<'static, Result<RecordBatch>>,
) -> std::result::Result<Vec<WrittenFile>, WriteFailure> {
    let mut out = RowWriter::try_new(config, storage, writer, row_tracking, false)
        .map_err(WriteFailure::unwritten)?;
    while let Some(batch) = rows.next().await {
        let outcome = match batch {
            Ok(batch) => out.write_data(&batch, true, RowOrigin::Existing).await,
            Err(error) => Err(error),
        };
        if let Err(error) = outcome {
            let written_files = out.abort().await;
            return Err(WriteFailure {
                error,
                written_files,
            });
        }
    }
    out.finish().await.map(|(data, _)| data.files)
}

/// A completed file known only by its path (to delete it after a failure).
fn unsized_file(path: String) -> WrittenFile {
    WrittenFile {
        path,
        size: 0,
        partition_values: Vec::new(),
        stats: String::new(),
        num_records: 0,
        modification_time: 0,
        tags: Vec::new(),
    }
}

/// Fills the metrics of a committed run: the version, the files added and removed.
fn fill_metrics(
    metrics: &mut OptimizeResult,
    bins: &[Vec<Candidate>],
    written: &[WrittenFile],
    version: u64,
) {
    let added: Vec<u64> = written.iter().map(|f| f.size).collect();
    metrics.version = Some(version);
    metrics.num_files_added = added.len() as u64;
    metrics.files_added = size_metrics(&added);
    fill_removed_metrics(metrics, bins);
}

/// Fills the metrics of the files the bins remove: counts, sizes, partitions, files skipped
/// and deletion vectors purged.
fn fill_removed_metrics(metrics: &mut OptimizeResult, bins: &[Vec<Candidate>]) {
    let removed: Vec<u64> = bins.iter().flatten().map(|f| f.size).collect();
    let partitions: std::collections::HashSet<&Vec<(String, Option<String>)>> =
        bins.iter().flatten().map(|f| &f.partition).collect();
    metrics.num_files_removed = removed.len() as u64;
    metrics.files_removed = size_metrics(&removed);
    metrics.partitions_optimized = partitions.len() as u64;
    metrics.total_files_skipped = metrics.total_considered_files - removed.len() as u64;
    let dvs: Vec<u64> = bins
        .iter()
        .flatten()
        .filter_map(|f| f.deleted_rows)
        .collect();
    metrics.num_deletion_vectors_removed = dvs.len() as u64;
    metrics.num_deletion_vector_rows_removed = dvs.iter().sum();
}

fn size_metrics(sizes: &[u64]) -> FileSizeMetrics {
    let total: u64 = sizes.iter().sum();
    FileSizeMetrics {
        min: sizes.iter().min().copied(),
        max: sizes.iter().max().copied(),
        avg: match sizes.len() {
            0 => 0.0,
            n => total as f64 / n as f64,
        },
        total_files: sizes.len() as u64,
        total_size: total,
    }
}

/// The rows of `scan` sorted along `curve` over the columns at `paths` ([`curves`]).
async fn curve_ordered(
    scan: &Scan,
    paths: Vec<Vec<String>>,
    curve: Curve,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let schema: SchemaRef = scan.schema();
    let batches: Vec<RecordBatch> = scan.stream().try_collect().await?;
    let sorted = crate::util::cpu::run(
        move || {
            let all = concat_batches(&schema, &batches)
                .map_err(|error| Error::arrow("gathering the rows to order", error))?;
            curve_sort(&all, &paths, curve)
        },
        |message| Error::internal_invariant(format!("ordering rows failed: {message}")),
    )
    .await?;
    Ok(futures::stream::iter([Ok(sorted)]).boxed())
}

/// The entries of the string map `column` (partition values, tags) of row `row` of an add
/// layout array, sorted by key.
fn map_entries(adds: &StructArray, column: &str, row: usize) -> Vec<(String, Option<String>)> {
    let Some(map) = adds.column_by_name(column).and_then(|c| c.as_map_opt()) else {
        return Vec::new();
    };
    if map.is_null(row) {
        return Vec::new();
    }
    let entries = map.value(row);
    let (Some(keys), Some(values)) = (
        entries.column(0).as_string_opt::<i32>(),
        entries.column(1).as_string_opt::<i32>(),
    ) else {
        return Vec::new();
    };
    let mut pairs: Vec<(String, Option<String>)> = (0..entries.len())
        .map(|i| {
            let value = values.is_valid(i).then(|| values.value(i).to_string());
            (keys.value(i).to_string(), value)
        })
        .collect();
    pairs.sort();
    pairs
}

fn json_text(values: &[String]) -> Value {
    Value::String(serde_json::to_string(values).unwrap_or_default())
}

/// The two halves of [`optimize`], for a test that commits between them.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// The bins [`optimize`] would rewrite.
    pub(crate) async fn candidates(
        snapshot: &Snapshot,
        options: &OptimizeOptions,
        target: u64,
    ) -> Vec<Vec<Candidate>> {
        let layout = Layout::of(snapshot, options).unwrap();
        let files = candidate_files(snapshot, options, layout.rewrites_all(), target)
            .await
            .unwrap();
        layout.bins(files, target, options.full)
    }

    /// Rewrites `bins` and commits; returns the version.
    pub(crate) async fn finish(
        snapshot: &Snapshot,
        options: &OptimizeOptions,
        bins: Vec<Vec<Candidate>>,
        target: u64,
    ) -> u64 {
        let writer = WriterOptions {
            target_file_size: Some(target),
            ..WriterOptions::default()
        };
        let mut written = Vec::new();
        let layout = Layout::of(snapshot, options).unwrap();
        let run = Run {
            snapshot,
            options,
            layout: &layout,
            operation: Operation::Optimize,
        };
        run.rewrite_and_commit(&bins, writer, &mut written)
            .await
            .unwrap()
    }
}
