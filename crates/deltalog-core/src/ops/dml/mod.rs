//! What the row-level operations (`delete`, `update`) share: finding the live files a
//! predicate may touch (partitions pruned and files skipped by statistics before any data
//! file is read), finding the physical row positions that match in a file, marking rows
//! deleted with deletion vectors (spec "Deletion Vectors", "Deletion Vector Format"),
//! rewriting files (copy-on-write), writing change data files (spec "Change Data Files",
//! "Add CDC File") and keeping row ids (spec "Row Tracking"), as Delta on Spark's
//! `DeleteCommand`, `UpdateCommand` and `DMLWithDeletionVectorsHelper` do.
//!
//! Row positions are the physical positions in the Parquet file: every row of the file counts,
//! deleted or not (the scan of a candidate file is made without its deletion vector, so its
//! batches hold every row in file order).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::stream::BoxStream;
use futures::StreamExt;
use roaring::RoaringTreemap;
use serde_json::Value;

use crate::actions::deletion_vector::{
    self, dv_file_name, encode_dv_file, row_mask, uuid_descriptor,
};
use crate::actions::layout::{add, deletion_vector_type, in_add_layout};
use crate::actions::{DeletionVectorDescriptor, Metadata};
use crate::error::{Error, Result};
use crate::expr::{evaluate, files_may_match, partition_only, Expr};
use crate::replay::file_list::{file_list_stats, FileListOptions};
use crate::scan::{Scan, ScanOptions, ROW_COMMIT_VERSION_COLUMN, ROW_ID_COLUMN};
use crate::schema::{PrimitiveType, StructType};
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::table_config::properties::{
    ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
    ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME,
};
use crate::table_config::TableConfiguration;
use crate::transaction::{
    add_file, stage_identity_high_water_marks, CommitResult, MetadataUpdate, Transaction,
    DATA_WRITER_FEATURES,
};
use crate::write::changes::{cdc_rows, with_extra_columns, CHANGE_DATA_DIR, CHANGE_TYPE};
use crate::write::duties::{is_identity_column, refuse_identity_insert};
use crate::write::{
    DataFileWriter, RowOrigin, WriteFailure, WriteResult, WriterOptions, WrittenFile,
};

pub(crate) mod assignments;
pub(crate) mod delete;
pub(crate) mod distributed;
pub(crate) mod replace_where;
pub(crate) mod update;

#[cfg(test)]
pub(crate) mod test_tables;

/// A live file of the snapshot a row-level operation considers.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// Its row of the snapshot's add actions (the add layout), removed or re-added as is.
    pub add: StructArray,
    /// Its row of the file list.
    pub listed: RecordBatch,
    pub size: i64,
    pub num_records: Option<i64>,
    pub deletion_vector: Option<DeletionVectorDescriptor>,
}

/// The live files, before and after skipping.
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    pub files: Vec<Candidate>,
    pub files_before_skipping: u64,
    pub bytes_before_skipping: u64,
}

/// The rows of one candidate file a predicate matches.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileMatches {
    /// Physical positions of the live rows that match (not those deleted before).
    pub matched: RoaringTreemap,
    /// The file's deletion vector before the operation.
    pub deleted_before: RoaringTreemap,
    /// Every row of the file, deleted or not.
    pub physical_rows: u64,
}

impl FileMatches {
    /// True when no live row of the file is left once the matched rows go.
    pub(crate) fn deletes_every_row(&self) -> bool {
        self.matched.len() + self.deleted_before.len() >= self.physical_rows
    }

    /// Counts at least the rows the log records for `file` (`numRecords`) as its physical
    /// rows, once every row read has been counted.
    pub(crate) fn count_recorded_rows(&mut self, file: &Candidate) {
        if let Some(records) = file.num_records {
            self.physical_rows = self.physical_rows.max(u64::try_from(records).unwrap_or(0));
        }
    }

    /// The mask of the rows of a batch of `num_rows` rows (the first at physical position
    /// `first`) that stay in the table: neither deleted before nor matched.
    pub(crate) fn kept_rows(&self, num_rows: usize, first: u64) -> Result<BooleanArray> {
        let gone = rows_in(&self.deleted_before, num_rows, first)?;
        let matched = rows_in(&self.matched, num_rows, first)?;
        let dropped = arrow::compute::or(&gone, &matched)
            .map_err(|error| Error::arrow("selecting rows", error))?;
        arrow::compute::not(&dropped).map_err(|error| Error::arrow("selecting rows", error))
    }
}

/// The operation metrics, as Delta on Spark names them (`commitInfo.operationMetrics`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Metrics(pub BTreeMap<String, u64>);

impl Metrics {
    pub(crate) fn add(&mut self, name: &str, value: u64) {
        *self.0.entry(name.to_string()).or_insert(0) += value;
    }

    pub(crate) fn set(&mut self, name: &str, value: u64) {
        self.0.insert(name.to_string(), value);
    }

    pub(crate) fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Stages the metrics named `names` on `transaction` as Spark writes them: decimal
    /// strings.
    pub(crate) fn stage(&self, mut transaction: Transaction, names: &[&str]) -> Transaction {
        for name in names {
            let value = self.get(name);
            transaction = transaction.with_operation_metric(name, value.to_string());
        }
        transaction
    }
}

/// A target file with the rows a row-level operation touched in it.
pub(crate) type Touched = (Candidate, FileMatches);

/// A row-level operation being prepared: the snapshot it read, the transaction its actions
/// are staged on, its metrics (this crate's names until [`RowChange::commit`]) and every file
/// it wrote so far (data, change data, deletion vectors), which a failure names.
pub(crate) struct RowChange {
    pub snapshot: Snapshot,
    pub transaction: Transaction,
    pub metrics: Metrics,
    pub written: Vec<String>,
    started: Instant,
}

impl RowChange {
    /// An operation on `snapshot` staging its actions on `transaction` (which read it).
    pub(crate) fn new(snapshot: Snapshot, transaction: Transaction) -> RowChange {
        RowChange {
            snapshot,
            transaction,
            metrics: Metrics::default(),
            written: Vec::new(),
            started: Instant::now(),
        }
    }

    /// The operation `operation` (its `commitInfo.operation`) on the latest version of
    /// `table`; `executionTimeMs` counts from here.
    pub(crate) async fn open(
        storage: &Storage,
        operation: &str,
    ) -> Result<RowChange, WriteFailure> {
        let snapshot = Snapshot::load(storage, SnapshotAt::Latest)
            .await
            .map_err(WriteFailure::unwritten)?;
        let transaction = snapshot.transaction(operation);
        Ok(RowChange::new(snapshot, transaction))
    }

    /// Checks that this library can change rows of the table (with `refusal`, that the table
    /// is not append-only: [`Error::NotAllowed`] saying it) and stages the table features
    /// the data writer needs and the caller's `commitInfo` fields.
    pub(crate) fn begin(
        &mut self,
        refusal: Option<&str>,
        commit_info: &serde_json::Map<String, Value>,
    ) -> Result<()> {
        let config = self.snapshot.table_configuration();
        if let (true, Some(refusal)) = (config.properties().append_only, refusal) {
            return Err(Error::NotAllowed(format!(
                "{} is append-only (delta.appendOnly): {refusal}",
                config.table_uri()
            )));
        }
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        self.transaction
            .add_data_writer_features(&DATA_WRITER_FEATURES);
        for (key, value) in commit_info {
            self.transaction.set_commit_info(key, value.clone());
        }
        Ok(())
    }

    /// Checks `predicate` against the table ([`check_predicate`]) and stages it as the
    /// operation parameter `predicate`, a JSON list as Spark writes it (empty for `None`).
    pub(crate) fn stage_predicate(&mut self, predicate: Option<&Expr>) -> Result<()> {
        if let Some(predicate) = predicate {
            check_predicate(self.snapshot.table_configuration(), predicate)?;
        }
        let predicates: Vec<String> = predicate.iter().map(|p| p.to_string()).collect();
        let text = serde_json::to_string(&predicates).unwrap_or_default();
        self.transaction.set_operation_parameter("predicate", text);
        Ok(())
    }

    /// Records what the operation read, so that a concurrent commit changing it is a
    /// conflict: the rows `predicate` may match (the whole table for `None`) and `files`.
    pub(crate) fn record_read(&mut self, predicate: Option<&Expr>, files: &[Candidate]) {
        match predicate {
            Some(predicate) => self.transaction.record_read_predicate(predicate.clone()),
            None => self.transaction.record_read_whole_table(),
        }
        let keys: Vec<String> = files.iter().map(|f| log_path(&f.add)).collect();
        self.transaction
            .record_read_files(keys.iter().map(String::as_str));
    }

    /// The writer of the operation's rows, with `options`: the materialised row tracking
    /// columns when the table keeps row ids (their names staged when new, see
    /// [`row_tracking_columns`]), change data files when `delta.enableChangeDataFeed` is on.
    pub(crate) fn open_writer(&mut self, options: &WriterOptions) -> Result<RowWriter> {
        let config = self.transaction.configuration()?;
        let row_tracking = row_tracking_columns(&config, &mut self.transaction)?;
        RowWriter::try_new(
            &config,
            self.snapshot.storage(),
            options,
            row_tracking,
            config.properties().enable_change_data_feed,
        )
    }

    /// Gives `writer` up after `error`, recording the files it completed; returns `error`.
    pub(crate) async fn abandon(&mut self, writer: RowWriter, error: Error) -> Error {
        self.written.extend(writer.abort().await);
        error
    }

    /// Closes `writer`, records its files as written and stages their adds and `cdc`
    /// actions ([`stage_written`]) and the new high-water marks of the identity columns it
    /// numbered (spec "Identity Columns"; tagged `delta.identity.schemaUpdate` when they are
    /// the commit's only metadata change). When a file fails to close, its error is
    /// returned.
    pub(crate) async fn stage_writer(&mut self, writer: RowWriter) -> Result<()> {
        let (data, changes) = match writer.finish().await {
            Ok(done) => done,
            Err(failure) => {
                self.written.extend(failure.written_files);
                return Err(failure.error);
            }
        };
        self.written
            .extend(data.files.iter().map(|f| f.path.clone()));
        self.written.extend(changes.iter().map(|f| f.path.clone()));
        stage_written(
            &mut self.transaction,
            &data.files,
            &changes,
            &mut self.metrics,
        )?;
        let config = self.transaction.configuration()?;
        stage_identity_high_water_marks(
            &mut self.transaction,
            &config,
            &data.identity_high_water_marks,
        )
    }

    /// Deletes the touched rows of `touched`: with `deletion_vectors`, marked in the files'
    /// deletion vectors ([`stage_deletion_vectors`]); otherwise (copy-on-write, their other
    /// live rows written again by the caller) the files are removed. Counts
    /// `numRemovedBytes`, `numRemovedFiles` and the deletion vector metrics.
    pub(crate) async fn remove_touched(
        &mut self,
        touched: Vec<Touched>,
        deletion_vectors: bool,
    ) -> Result<()> {
        let removed_bytes: u64 = touched.iter().map(|(f, _)| f.size.max(0) as u64).sum();
        self.metrics.add("numRemovedBytes", removed_bytes);
        if deletion_vectors {
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

    /// `error`, naming the files written so far (nothing was committed).
    pub(crate) fn fail(self, error: Error) -> WriteFailure {
        WriteFailure {
            error,
            written_files: self.written,
        }
    }

    /// Commits the staged actions with `executionTimeMs` and the metrics `names` as Spark
    /// reports them (zero where unset); commits nothing when `changed` is false (no row
    /// changed). On failure the error names the files written.
    pub(crate) async fn commit(
        mut self,
        names: &[&str],
        changed: bool,
    ) -> Result<CommitResult, WriteFailure> {
        let elapsed = self.started.elapsed().as_millis() as u64;
        self.metrics.set("executionTimeMs", elapsed);
        for name in names {
            self.metrics.add(name, 0);
        }
        if !changed {
            let version = self.snapshot.version();
            return Ok(CommitResult {
                metrics: self.metrics.0,
                ..CommitResult::unchanged(version, Some(self.snapshot))
            });
        }
        let transaction = self.metrics.stage(self.transaction, names);
        let result = transaction.commit().await.map_err(|error| WriteFailure {
            error,
            written_files: self.written,
        })?;
        Ok(CommitResult {
            metrics: self.metrics.0,
            ..result
        })
    }
}

/// Checks that `predicate` names columns of the table with values they can be compared
/// with, by evaluating it on no rows ([`Error::InvalidArgument`] otherwise).
pub(crate) fn check_predicate(config: &TableConfiguration, predicate: &Expr) -> Result<()> {
    let schema = crate::schema::to_arrow_schema(config.schema())?;
    evaluate(predicate, &RecordBatch::new_empty(Arc::new(schema)))?;
    Ok(())
}

/// True when `predicate` names partition columns only: it holds for every row of a file or
/// for none, and file skipping decides it exactly.
pub(crate) fn is_partition_only(config: &TableConfiguration, predicate: &Expr) -> bool {
    let partitions = config.partition_columns();
    predicate.columns().iter().all(|column| {
        partitions
            .iter()
            .any(|partition| partition.eq_ignore_ascii_case(column))
    }) && partition_only(predicate, partitions).is_some()
}

/// The live files of `snapshot` that may hold rows matching `predicate` (every file when
/// `None`), by exact evaluation on partition values and by statistics; no data file is read.
pub(crate) async fn candidates(
    snapshot: &Snapshot,
    predicate: Option<&Expr>,
) -> Result<Candidates> {
    let options = FileListOptions {
        with_stats: true,
        ..FileListOptions::default()
    };
    let (_, listed) = snapshot.file_list(&options).await?;
    let adds = snapshot.add_actions_with_stats().await?;
    let mut candidates = Candidates::default();
    for (adds, files) in adds.iter().zip(&listed) {
        let mask = match predicate {
            Some(predicate) => files_may_match(predicate, &file_list_stats(files)?)?,
            None => BooleanArray::from(vec![true; files.num_rows()]),
        };
        let sizes = adds
            .column_by_name(add::SIZE)
            .and_then(|c| c.as_primitive_opt::<Int64Type>());
        for row in 0..files.num_rows() {
            let size = sizes
                .filter(|s| s.is_valid(row))
                .map_or(0, |s| s.value(row));
            candidates.files_before_skipping += 1;
            candidates.bytes_before_skipping += u64::try_from(size).unwrap_or(0);
            if mask.is_valid(row) && mask.value(row) {
                candidates.files.push(candidate(adds, files, row, size)?);
            }
        }
    }
    Ok(candidates)
}

/// The rows of `file`, every one in physical order (its deletion vector not applied): the
/// table's columns (logical names), then `row_id` and `row_commit_version` when
/// `row_tracking`. Only `columns` are read when given.
pub(crate) fn read_every_row(
    snapshot: &Snapshot,
    file: &Candidate,
    columns: Option<Vec<String>>,
    row_tracking: bool,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    read_file_rows(snapshot, snapshot.metadata(), file, columns, row_tracking)
}

/// Every row of `file` (deleted ones too) in the schema of `metadata` (the snapshot's
/// evolved by the operation: columns the file lacks read as NULL, widened ones cast).
pub(crate) fn read_rows_as(
    snapshot: &Snapshot,
    metadata: &Metadata,
    file: &Candidate,
    row_tracking: bool,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    read_file_rows(snapshot, metadata, file, None, row_tracking)
}

fn read_file_rows(
    snapshot: &Snapshot,
    metadata: &Metadata,
    file: &Candidate,
    columns: Option<Vec<String>>,
    row_tracking: bool,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let listed = without_deletion_vector(&file.listed)?;
    let options = ScanOptions {
        columns,
        row_tracking,
        ..ScanOptions::default()
    };
    let scan = Scan::over_files(
        snapshot.storage(),
        snapshot.version(),
        snapshot.protocol(),
        metadata,
        options,
        vec![listed],
    )?;
    Ok(scan.stream())
}

/// The live rows of `file` that `predicate` matches (NULL is not a match), by physical
/// position. Only the columns the predicate names are read.
pub(crate) async fn find_matches(
    snapshot: &Snapshot,
    file: &Candidate,
    predicate: &Expr,
) -> Result<FileMatches> {
    let deleted_before = load_deletion_vector(snapshot, file).await?;
    let columns = predicate_columns(snapshot.table_configuration().schema(), predicate);
    let mut rows = read_every_row(snapshot, file, columns, false)?;
    let mut matches = FileMatches {
        deleted_before,
        ..FileMatches::default()
    };
    while let Some(batch) = rows.next().await {
        let batch = batch?;
        let first = matches.physical_rows;
        let predicate = predicate.clone();
        let mask = crate::util::cpu::run(
            move || evaluate(&predicate, &batch),
            |reason| {
                Error::internal(
                    snapshot.table_uri(),
                    format!("evaluating the predicate: {reason}"),
                )
            },
        )
        .await?;
        for (offset, hit) in mask.iter().enumerate() {
            let position = first + offset as u64;
            if hit == Some(true) && !matches.deleted_before.contains(position) {
                matches.matched.insert(position);
            }
        }
        matches.physical_rows += mask.len() as u64;
    }
    matches.count_recorded_rows(file);
    Ok(matches)
}

/// The files of `files` holding live rows that `predicate` matches, each with those rows
/// ([`find_matches`]); files without such rows are left out.
pub(crate) async fn touched_files(
    snapshot: &Snapshot,
    files: Vec<Candidate>,
    predicate: &Expr,
) -> Result<Vec<Touched>> {
    let mut touched = Vec::new();
    for file in files {
        let matches = find_matches(snapshot, &file, predicate).await?;
        if !matches.matched.is_empty() {
            touched.push((file, matches));
        }
    }
    Ok(touched)
}

/// The deletion vector of `file` before the operation (empty when it has none).
pub(crate) async fn load_deletion_vector(
    snapshot: &Snapshot,
    file: &Candidate,
) -> Result<RoaringTreemap> {
    match &file.deletion_vector {
        Some(descriptor) => deletion_vector::load(snapshot.storage(), descriptor).await,
        None => Ok(RoaringTreemap::new()),
    }
}

/// The mask of the rows of a batch (whose first row is at physical position `first`) that are
/// in `rows`.
pub(crate) fn rows_in(rows: &RoaringTreemap, num_rows: usize, first: u64) -> Result<BooleanArray> {
    arrow::compute::not(&row_mask(rows, num_rows, first))
        .map_err(|error| Error::arrow("selecting rows", error))
}

/// Stages the new deletion vectors of `files` (each with the rows to delete added to its
/// existing vector): every vector is written to one `deletion_vector_<uuid>.bin` file at the
/// table root (written through storage before the commit), and each file is removed and
/// re-added with its new descriptor, its statistics kept with `tightBounds` false. A file whose
/// every row ends up deleted is removed instead. Counts `numRemovedFiles` and
/// `numDeletionVectorsAdded`, `...Removed` and `...Updated` in `metrics`. Returns the
/// deletion vector file written, if any.
pub(crate) async fn stage_deletion_vectors(
    snapshot: &Snapshot,
    transaction: &mut Transaction,
    files: Vec<(Candidate, FileMatches)>,
    metrics: &mut Metrics,
) -> Result<Option<String>> {
    let mut kept: Vec<(Candidate, RoaringTreemap)> = Vec::new();
    for (file, matches) in files {
        let had_vector = file.deletion_vector.is_some();
        if matches.deletes_every_row() {
            transaction.remove_files(&file.add, true)?;
            metrics.add("numRemovedFiles", 1);
            metrics.add("numDeletionVectorsRemoved", u64::from(had_vector));
            continue;
        }
        let mut vector = matches.deleted_before;
        vector |= matches.matched;
        match had_vector {
            true => metrics.add("numDeletionVectorsUpdated", 1),
            false => metrics.add("numDeletionVectorsAdded", 1),
        }
        kept.push((file, vector));
    }
    if kept.is_empty() {
        return Ok(None);
    }
    let vectors: Vec<RoaringTreemap> = kept.iter().map(|(_, v)| v.clone()).collect();
    let (name, descriptors) = write_deletion_vectors(snapshot.storage(), vectors).await?;
    for ((file, _), descriptor) in kept.iter().zip(&descriptors) {
        transaction.remove_files(&file.add, true)?;
        let readded = with_deletion_vector(&file.add, descriptor)
            .ok_or_else(|| Error::internal(snapshot.table_uri(), READD_INVARIANT))?;
        transaction.add_files(readded)?;
    }
    Ok(Some(name))
}

/// Writes `vectors` to one new `deletion_vector_<uuid>.bin` file at the root of the table in
/// `storage` (spec "Deletion Vector Format"); returns its name and, in the order of
/// `vectors`, the descriptor of each.
pub(crate) async fn write_deletion_vectors(
    storage: &Storage,
    vectors: Vec<RoaringTreemap>,
) -> Result<(String, Vec<DeletionVectorDescriptor>)> {
    let uuid = uuid::Uuid::new_v4();
    let name = dv_file_name(&uuid);
    let (bytes, entries) = crate::util::cpu::run(
        move || encode_dv_file(&vectors),
        |reason| {
            Error::internal(
                storage.uri(),
                format!("encoding deletion vectors: {reason}"),
            )
        },
    )
    .await?;
    storage
        .put(&storage.resolve_decoded(&name)?, bytes.into())
        .await?;
    let descriptors = entries
        .iter()
        .map(|entry| uuid_descriptor(&uuid, "", entry))
        .collect::<Result<Vec<_>>>()?;
    Ok((name, descriptors))
}

/// The names of the materialised row tracking columns, when the table keeps row ids
/// (`delta.enableRowTracking`): those of the configuration, else new ones staged on
/// `transaction` as Delta on Spark names them.
pub(crate) fn row_tracking_columns(
    config: &TableConfiguration,
    transaction: &mut Transaction,
) -> Result<Option<(String, String)>> {
    if !config.is_row_tracking_enabled() {
        return Ok(None);
    }
    let properties = config.properties();
    if let (Some(id), Some(version)) = (
        &properties.materialized_row_id_column_name,
        &properties.materialized_row_commit_version_column_name,
    ) {
        return Ok(Some((id.clone(), version.clone())));
    }
    let id = format!("_row-id-col-{}", uuid::Uuid::new_v4());
    let version = format!("_row-commit-version-col-{}", uuid::Uuid::new_v4());
    stage_row_tracking_names(transaction, &id, &version)?;
    Ok(Some((id, version)))
}

/// Stages on `transaction` `id` and `version` as the names of the materialised row tracking
/// columns (`delta.rowTracking.materializedRowIdColumnName`, ...).
pub(crate) fn stage_row_tracking_names(
    transaction: &mut Transaction,
    id: &str,
    version: &str,
) -> Result<()> {
    transaction.update_metadata(MetadataUpdate {
        configuration: vec![
            (
                ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME.to_string(),
                Some(id.to_string()),
            ),
            (
                ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME.to_string(),
                Some(version.to_string()),
            ),
        ],
        ..MetadataUpdate::default()
    })
}

/// Writes the rows of a row-level operation: data files, with the materialised row tracking
/// columns when the table keeps row ids, and change data files under `_change_data/` with a
/// `_change_type` column when the change data feed is on.
pub(crate) struct RowWriter {
    data: DataFileWriter,
    changes: Option<DataFileWriter>,
    /// The materialised row id and row commit version columns.
    row_tracking: Option<(String, String)>,
    table_columns: usize,
    /// The table's columns as Arrow fields with their Delta metadata (identity columns).
    table_fields: arrow_schema::Fields,
    /// The table's URI, for errors.
    table: String,
}

impl RowWriter {
    /// The writers for `config`; `changes` turns the change data writer on.
    pub(crate) fn try_new(
        config: &TableConfiguration,
        storage: &crate::storage::Storage,
        options: &WriterOptions,
        row_tracking: Option<(String, String)>,
        changes: bool,
    ) -> Result<RowWriter> {
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        let data_config = match &row_tracking {
            Some((id, version)) => with_extra_columns(
                config,
                &[id.as_str(), version.as_str()],
                PrimitiveType::Long,
            )?,
            None => config.clone(),
        };
        let data = DataFileWriter::try_new(&data_config, storage.clone(), options.clone())?;
        let changes = match changes {
            true => {
                let change_config =
                    with_extra_columns(config, &[CHANGE_TYPE], PrimitiveType::String)?;
                let options = WriterOptions {
                    directory: Some(CHANGE_DATA_DIR.to_string()),
                    ..options.clone()
                };
                Some(DataFileWriter::try_new(
                    &change_config,
                    storage.clone(),
                    options,
                )?)
            }
            false => None,
        };
        Ok(RowWriter {
            data,
            changes,
            row_tracking,
            table_columns: config.schema().fields.len(),
            table_fields: crate::schema::to_arrow_schema(config.schema())?
                .fields()
                .clone(),
            table: config.table_uri().to_string(),
        })
    }

    /// True when change data files are written.
    pub(crate) fn writes_changes(&self) -> bool {
        self.changes.is_some()
    }

    /// True when the data files hold the materialised row tracking columns.
    pub(crate) fn keeps_row_ids(&self) -> bool {
        self.row_tracking.is_some()
    }

    /// Copy-on-write: writes again the rows of `batch` (every row of a file, the first at
    /// physical position `first`) that stay in the table ([`FileMatches::kept_rows`]), with
    /// their row ids and row commit versions. Returns how many rows it wrote.
    pub(crate) async fn copy_kept_rows(
        &mut self,
        batch: &RecordBatch,
        matches: &FileMatches,
        first: u64,
    ) -> Result<u64> {
        let kept = matches.kept_rows(batch.num_rows(), first)?;
        let rows = filter(batch, &kept)?;
        self.write_data(&rows, true, RowOrigin::Existing).await?;
        Ok(rows.num_rows() as u64)
    }

    /// Writes `rows` (the table's columns, then `row_id` and `row_commit_version` when the
    /// table keeps row ids) as table data, from `origin` (rows already in the table keep their
    /// identity values). `keep_commit_version` false writes no row commit version, so the rows
    /// get the version of this commit.
    pub(crate) async fn write_data(
        &mut self,
        rows: &RecordBatch,
        keep_commit_version: bool,
        origin: RowOrigin,
    ) -> Result<()> {
        if rows.num_rows() == 0 {
            return Ok(());
        }
        let mut fields: Vec<Field> = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for index in 0..self.table_columns {
            fields.push(rows.schema().field(index).clone());
            columns.push(rows.column(index).clone());
        }
        if let Some((id, version)) = &self.row_tracking {
            let row_ids = column_named(rows, ROW_ID_COLUMN)?;
            fields.push(Field::new(id, ArrowType::Int64, true));
            columns.push(row_ids);
            fields.push(Field::new(version, ArrowType::Int64, true));
            columns.push(match keep_commit_version {
                true => column_named(rows, ROW_COMMIT_VERSION_COLUMN)?,
                false => arrow_array::new_null_array(&ArrowType::Int64, rows.num_rows()),
            });
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|error| Error::arrow("assembling rows to write", error))?;
        self.data.write_rows(batch, origin).await
    }

    /// Writes `rows`, new rows (a MERGE's inserts: the table's columns, then `row_id` and
    /// `row_commit_version` when the table keeps row ids), as table data with fresh row ids
    /// and as `insert` change rows. The identity columns at the indexes `generate` get new
    /// values (spec "Identity Columns"), numbered once so that the data and change rows hold
    /// the same ones, and their high-water marks move; the values of the other identity
    /// columns are kept (`GENERATED BY DEFAULT`, the marks stay) or refused for a
    /// `GENERATED ALWAYS` one ([`Error::ConstraintViolation`] naming the column, as Delta on
    /// Spark's `DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED`). Returns the identity
    /// columns numbered (none for no rows).
    pub(crate) async fn write_inserted(
        &mut self,
        rows: &RecordBatch,
        generate: &[usize],
    ) -> Result<Vec<String>> {
        if rows.num_rows() == 0 {
            return Ok(Vec::new());
        }
        for (index, field) in self.table_fields.iter().enumerate() {
            if !generate.contains(&index) {
                refuse_identity_insert(field, &self.table)?;
            }
        }
        let schema = rows.schema();
        let mut names: Vec<String> = Vec::with_capacity(generate.len());
        for index in generate {
            match self.table_fields.get(*index) {
                Some(field) if is_identity_column(field) => names.push(field.name().clone()),
                _ => {
                    let name = schema.fields().get(*index).map(|f| f.name().as_str());
                    return Err(Error::InvalidArgument(format!(
                        "{}: `{}` is not an identity column of the table, whose values an \
                         insert could leave to the table",
                        self.table,
                        name.unwrap_or("?")
                    )));
                }
            }
        }
        let shown: Vec<&str> = names.iter().map(String::as_str).collect();
        let values = self.data.generate_identity(&shown, rows.num_rows()).await?;
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let mut columns: Vec<ArrayRef> = rows.columns().to_vec();
        for (index, value) in generate.iter().zip(values) {
            fields[*index] = fields[*index]
                .clone()
                .with_data_type(value.data_type().clone())
                .with_nullable(true);
            columns[*index] = value;
        }
        let numbered = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|error| Error::arrow("numbering inserted rows", error))?;
        self.write_data(&numbered, false, RowOrigin::Existing)
            .await?;
        self.write_changes(&numbered, "insert").await?;
        Ok(names)
    }

    /// Writes `rows` (the table's columns first) to the change data files as changes of
    /// `change_type` (`delete`, `update_preimage`, `update_postimage`, `insert`). They are
    /// rows as the table holds them, identity values included ([`RowOrigin::Existing`]).
    pub(crate) async fn write_changes(
        &mut self,
        rows: &RecordBatch,
        change_type: &str,
    ) -> Result<()> {
        let Some(changes) = &mut self.changes else {
            return Ok(());
        };
        if rows.num_rows() == 0 {
            return Ok(());
        }
        let mut fields: Vec<Field> = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for index in 0..self.table_columns {
            fields.push(rows.schema().field(index).clone());
            columns.push(rows.column(index).clone());
        }
        fields.push(Field::new(CHANGE_TYPE, ArrowType::Utf8, true));
        columns.push(Arc::new(StringArray::from(vec![
            change_type;
            rows.num_rows()
        ])));
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|error| Error::arrow("assembling change rows", error))?;
        changes.write_rows(batch, RowOrigin::Existing).await
    }

    /// Closes every file: the data files and the change data files written. On failure, the
    /// first error with every file completed (by either writer).
    pub(crate) async fn finish(self) -> Result<(WriteResult, Vec<WrittenFile>), WriteFailure> {
        let data = self.data.finish().await;
        let changes = match self.changes {
            Some(writer) => Some(writer.finish().await),
            None => None,
        };
        match (data, changes) {
            (Ok(data), None) => Ok((data, Vec::new())),
            (Ok(data), Some(Ok(changes))) => Ok((data, changes.files)),
            (data, changes) => {
                let mut written = Vec::new();
                let mut first_error = None;
                for outcome in [Some(data), changes].into_iter().flatten() {
                    match outcome {
                        Ok(result) => written.extend(result.files.into_iter().map(|f| f.path)),
                        Err(failure) => {
                            written.extend(failure.written_files);
                            first_error.get_or_insert(failure.error);
                        }
                    }
                }
                Err(WriteFailure {
                    error: first_error.unwrap_or_else(|| {
                        Error::InvalidArgument("closing the written files failed".into())
                    }),
                    written_files: written,
                })
            }
        }
    }

    /// Gives up, returning the files already completed.
    pub(crate) async fn abort(self) -> Vec<String> {
        let mut written = self.data.abort().await;
        if let Some(changes) = self.changes {
            written.extend(changes.abort().await);
        }
        written
    }
}

/// Stages the adds of the data files and the `cdc` actions of the change data files written;
/// counts `numAddedFiles`, `numAddedBytes`, `numAddedChangeFiles` and `changeFileBytes`.
pub(crate) fn stage_written(
    transaction: &mut Transaction,
    data: &[WrittenFile],
    changes: &[WrittenFile],
    metrics: &mut Metrics,
) -> Result<()> {
    let adds: Vec<_> = data.iter().map(add_file).collect();
    transaction.add(&adds)?;
    metrics.add("numAddedFiles", data.len() as u64);
    metrics.add("numAddedBytes", data.iter().map(|f| f.size).sum());
    if !changes.is_empty() {
        transaction.add_cdc_files(cdc_rows(changes)?)?;
    }
    metrics.add("numAddedChangeFiles", changes.len() as u64);
    metrics.add("changeFileBytes", changes.iter().map(|f| f.size).sum());
    Ok(())
}

/// The rows of `batch` where `mask` is true.
pub(crate) fn filter(batch: &RecordBatch, mask: &BooleanArray) -> Result<RecordBatch> {
    arrow::compute::filter_record_batch(batch, mask)
        .map_err(|error| Error::arrow("selecting rows", error))
}

/// The path of a one-row add as the log writes it.
pub(crate) fn log_path(add_row: &StructArray) -> String {
    add_row
        .column_by_name(add::PATH)
        .and_then(|c| c.as_string_opt::<i32>())
        .filter(|c| c.is_valid(0))
        .map(|c| c.value(0).to_string())
        .unwrap_or_default()
}

fn candidate(adds: &StructArray, files: &RecordBatch, row: usize, size: i64) -> Result<Candidate> {
    let records = adds
        .column_by_name(add::NUM_RECORDS)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .filter(|c| c.is_valid(row))
        .map(|c| c.value(row));
    Ok(Candidate {
        add: adds.slice(row, 1),
        listed: files.slice(row, 1),
        size,
        num_records: records,
        deletion_vector: descriptor_at(adds, row),
    })
}

/// The deletion vector descriptor of row `row` of the add layout `adds`.
fn descriptor_at(adds: &StructArray, row: usize) -> Option<DeletionVectorDescriptor> {
    let dv = adds
        .column_by_name(add::DELETION_VECTOR)?
        .as_struct_opt()?
        .clone();
    if !dv.is_valid(row) {
        return None;
    }
    let text = |name: &str| {
        dv.column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row).to_string())
    };
    let int = |name: &str| {
        dv.column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int32Type>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row))
    };
    let cardinality = dv
        .column_by_name("cardinality")
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .filter(|c| c.is_valid(row))
        .map(|c| c.value(row))?;
    Some(DeletionVectorDescriptor {
        storage_type: text("storageType")?,
        path_or_inline_dv: text("pathOrInlineDv")?,
        offset: int("offset"),
        size_in_bytes: int("sizeInBytes")?,
        cardinality,
    })
}

/// What [`with_deletion_vector`] relies on: a snapshot's add rows hold the add layout.
pub(crate) const READD_INVARIANT: &str =
    "a file re-added with a deletion vector must be a row of the \
     snapshot's add layout (action_schema::add_fields) and the descriptor must fit it";

/// The one-row add `add_row` (a snapshot's row: the add layout, perhaps with children
/// beyond it, such as a checkpoint's `partitionValues_parsed`, which are dropped) with
/// `descriptor` as its deletion vector, `dataChange` true and `tightBounds` false in its
/// statistics (spec "Deletion Vectors": statistics of a file with a deletion vector may be
/// wide). `None` when the row is not of the add layout: a broken invariant of ours.
pub(crate) fn with_deletion_vector(
    add_row: &StructArray,
    descriptor: &DeletionVectorDescriptor,
) -> Option<StructArray> {
    let add_row = in_add_layout(add_row)?;
    let ArrowType::Struct(dv_fields) = deletion_vector_type() else {
        return None;
    };
    let dv_columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![descriptor.storage_type.clone()])),
        Arc::new(StringArray::from(vec![descriptor
            .path_or_inline_dv
            .clone()])),
        Arc::new(Int32Array::from(vec![descriptor.offset])),
        Arc::new(Int32Array::from(vec![descriptor.size_in_bytes])),
        Arc::new(Int64Array::from(vec![descriptor.cardinality])),
    ];
    let dv = StructArray::try_new(dv_fields, dv_columns, None).ok()?;
    let stats = add_row
        .column_by_name(add::STATS)
        .and_then(|c| c.as_string_opt::<i32>())
        .filter(|c| c.is_valid(0))
        .map(|c| wide_bounds(c.value(0)));
    let columns: Vec<ArrayRef> = add_row
        .fields()
        .iter()
        .zip(add_row.columns())
        .map(|(field, column)| match field.name().as_str() {
            add::DELETION_VECTOR => Arc::new(dv.clone()) as ArrayRef,
            add::DATA_CHANGE => Arc::new(BooleanArray::from(vec![true])),
            add::STATS => Arc::new(StringArray::from(vec![stats.clone()])),
            _ => column.clone(),
        })
        .collect();
    StructArray::try_new(add_row.fields().clone(), columns, None).ok()
}

/// The statistics JSON with `tightBounds` false.
fn wide_bounds(stats: &str) -> String {
    match serde_json::from_str::<serde_json::Map<String, Value>>(stats) {
        Ok(mut object) => {
            object.insert("tightBounds".into(), Value::Bool(false));
            Value::Object(object).to_string()
        }
        Err(_) => stats.to_string(),
    }
}

/// The file list row `listed` without its deletion vector, so that a scan of it returns every
/// row.
fn without_deletion_vector(listed: &RecordBatch) -> Result<RecordBatch> {
    let schema = listed.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(listed.columns())
        .map(|(field, column)| match field.name().as_str() {
            "deletion_vector" => arrow_array::new_null_array(field.data_type(), listed.num_rows()),
            _ => column.clone(),
        })
        .collect();
    RecordBatch::try_new(schema, columns)
        .map_err(|error| Error::arrow("planning the read of a file", error))
}

/// The top-level columns `predicate` needs, or `None` to read every column.
fn predicate_columns(schema: &StructType, predicate: &Expr) -> Option<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for path in predicate.column_paths() {
        let field = schema
            .fields
            .iter()
            .find(|f| f.name == path[0])
            .or_else(|| {
                schema
                    .fields
                    .iter()
                    .find(|f| f.name.eq_ignore_ascii_case(&path[0]))
            })?;
        if !names.contains(&field.name) {
            names.push(field.name.clone());
        }
    }
    (!names.is_empty()).then_some(names)
}

fn column_named(batch: &RecordBatch, name: &str) -> Result<ArrayRef> {
    batch
        .column_by_name(name)
        .cloned()
        .ok_or_else(|| Error::internal_invariant(format!("the rows read have a column {name}")))
}
