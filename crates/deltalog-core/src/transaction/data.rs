//! The transaction that also writes data files ([`TableTransaction`]): the files are written
//! under the rules of the configuration the commit leaves the table with, their adds are
//! staged with the data-writer features, and new identity values move the columns'
//! high-water marks (spec "Identity Columns").

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use futures::Stream;
use serde_json::Value;

use super::conflict::IDENTITY_SCHEMA_UPDATE_TAG;
use super::{AddFile, CommitResult, MetadataUpdate, Transaction};
use crate::error::{Error, Result};
use crate::schema::StructType;
use crate::table_config::{TableConfiguration, TableFeature};
use crate::write::changes::{cdc_rows, write_with_insert_changes};
use crate::write::duties::IDENTITY_HIGH_WATER_MARK_KEY;
use crate::write::{write_batches, WriteFailure, WriterOptions, WrittenFile};

/// The writer features whose per-row and per-file duties [`crate::write::DataFileWriter`]
/// enforces (invariants, CHECK constraints, generated, identity and default columns,
/// physical names under column mapping, statistics on clustering columns, partition values
/// in the data files under Iceberg compatibility and `materializePartitionColumns`); rules of these
/// features it cannot evaluate are refused when the writer is made. (That the statistics
/// settings cover the clustering columns is checked at commit.)
pub(crate) const DATA_WRITER_FEATURES: [TableFeature; 11] = [
    TableFeature::Invariants,
    TableFeature::CheckConstraints,
    TableFeature::GeneratedColumns,
    TableFeature::IdentityColumns,
    TableFeature::AllowColumnDefaults,
    TableFeature::ColumnMapping,
    TableFeature::Clustering,
    TableFeature::IcebergCompatV1,
    TableFeature::IcebergCompatV2,
    TableFeature::IcebergCompatV3,
    TableFeature::MaterializePartitionColumns,
];

/// A [`Transaction`] that writes data files: [`TableTransaction::write`] writes Arrow batches
/// to new files following the configuration the commit will leave the table with, and
/// stages their adds. Until the commit those files are unreferenced; every error from here
/// on names them.
#[derive(Debug)]
pub struct TableTransaction {
    transaction: Transaction,
    writer: WriterOptions,
    written: Vec<String>,
    rows: u64,
    bytes: u64,
    /// Operation metrics of work staged besides the written files (a `replaceWhere`'s
    /// delete), reported in `commitInfo` and the result.
    metrics: BTreeMap<String, u64>,
}

impl TableTransaction {
    /// Wraps `transaction`; its data files are written with `writer`.
    pub fn new(transaction: Transaction, writer: WriterOptions) -> TableTransaction {
        TableTransaction {
            transaction,
            writer,
            written: Vec::new(),
            rows: 0,
            bytes: 0,
            metrics: BTreeMap::new(),
        }
    }

    /// The transaction with `written`, files already written for it (named by every error
    /// from here on).
    pub(crate) fn with_written(mut self, written: Vec<String>) -> TableTransaction {
        self.written.extend(written);
        self
    }

    /// The transaction itself, to stage work on it before any file is written.
    pub(crate) fn into_transaction(self) -> Transaction {
        self.transaction
    }

    /// Adds `metrics` to those the commit reports (`commitInfo.operationMetrics` and
    /// [`CommitResult::metrics`]).
    pub(crate) fn add_metrics(&mut self, metrics: &BTreeMap<String, u64>) {
        for (name, value) in metrics {
            *self.metrics.entry(name.clone()).or_insert(0) += value;
        }
    }

    /// The transaction, to stage other actions.
    pub fn transaction_mut(&mut self) -> &mut Transaction {
        &mut self.transaction
    }

    /// The transaction.
    pub fn transaction(&self) -> &Transaction {
        &self.transaction
    }

    /// The data files written so far (paths relative to the table root), unreferenced until
    /// the commit.
    pub fn written_files(&self) -> &[String] {
        &self.written
    }

    /// Writes every batch of `batches` to new data files and stages their adds; returns how
    /// many files were written. The table must be writable with data first
    /// ([`TableConfiguration::ensure_writable`]): a table using a writer feature this
    /// library cannot honour is refused before anything is written. New identity values
    /// move the columns' high-water marks in the staged metadata.
    pub async fn write<S>(&mut self, batches: S) -> Result<usize, WriteFailure>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        self.write_rows(batches, false).await
    }

    /// [`TableTransaction::write`], and with `insert_changes` the rows written again to
    /// change data files as `insert` rows, staged as `cdc` actions.
    pub(crate) async fn write_rows<S>(
        &mut self,
        batches: S,
        insert_changes: bool,
    ) -> Result<usize, WriteFailure>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        let config = self
            .transaction
            .configuration()
            .map_err(|e| self.failure(e))?;
        config
            .ensure_writable(true, &DATA_WRITER_FEATURES)
            .map_err(|e| self.failure(e))?;
        let storage = self.transaction.storage().clone();
        let writer = self.writer.clone();
        let result = match insert_changes {
            false => write_batches(&config, storage, writer, batches)
                .await
                .map(|result| (result, Vec::new())),
            true => write_with_insert_changes(&config, storage, writer, batches).await,
        };
        let result = result.map_err(|mut failure| {
            let mut files = self.written.clone();
            files.append(&mut failure.written_files);
            failure.written_files = files;
            failure
        })?;
        let (result, changes) = result;
        self.written
            .extend(result.files.iter().map(|file| file.path.clone()));
        self.written
            .extend(changes.iter().map(|file| file.path.clone()));
        if !changes.is_empty() {
            let staged = cdc_rows(&changes).and_then(|rows| self.transaction.add_cdc_files(rows));
            staged.map_err(|e| self.failure(e))?;
            let count = BTreeMap::from([("numAddedChangeFiles".to_string(), changes.len() as u64)]);
            self.add_metrics(&count);
        }
        self.rows += result.files.iter().map(|f| f.num_records).sum::<u64>();
        self.bytes += result.files.iter().map(|f| f.size).sum::<u64>();
        let adds: Vec<AddFile> = result.files.iter().map(add_file).collect();
        let staged = self.stage(&config, &adds, &result.identity_high_water_marks);
        staged.map_err(|e| self.failure(e))?;
        Ok(adds.len())
    }

    /// Commits (see [`Transaction::commit`]). On failure the error names the data files this
    /// transaction wrote.
    pub async fn commit(self) -> Result<CommitResult, WriteFailure> {
        let TableTransaction {
            mut transaction,
            written,
            rows,
            bytes,
            metrics: staged_metrics,
            ..
        } = self;
        for (name, value) in &staged_metrics {
            transaction.set_operation_metric(name, value.to_string());
        }
        let mut result = transaction.commit().await.map_err(|error| WriteFailure {
            error,
            written_files: written,
        })?;
        result.metrics.insert("numOutputRows".to_string(), rows);
        result.metrics.insert("numOutputBytes".to_string(), bytes);
        result.metrics.extend(staged_metrics);
        Ok(result)
    }

    fn stage(
        &mut self,
        config: &TableConfiguration,
        adds: &[AddFile],
        identity_marks: &[(String, i64)],
    ) -> Result<()> {
        self.transaction.add(adds)?;
        self.transaction
            .add_data_writer_features(&DATA_WRITER_FEATURES);
        stage_identity_high_water_marks(&mut self.transaction, config, identity_marks)
    }

    fn failure(&self, error: Error) -> WriteFailure {
        WriteFailure {
            error,
            written_files: self.written.clone(),
        }
    }
}

/// The add action of a written data file.
pub(crate) fn add_file(file: &WrittenFile) -> AddFile {
    AddFile {
        path: file.path.clone(),
        partition_values: file.partition_values.clone(),
        size: i64::try_from(file.size).unwrap_or(i64::MAX),
        modification_time: file.modification_time,
        data_change: true,
        stats: Some(file.stats.clone()),
        tags: file.tags.clone(),
        ..AddFile::default()
    }
}

/// Stages the new high-water marks of identity columns that generated values (`marks`:
/// dot-joined path and last value) in `config`'s schema, or in the schema the transaction
/// already stages. A commit whose only metadata change they are carries the `commitInfo` tag
/// `delta.identity.schemaUpdate`, as Delta on Spark tags it: a concurrent transaction that
/// changes no metadata does not conflict with it.
pub(crate) fn stage_identity_high_water_marks(
    transaction: &mut Transaction,
    config: &TableConfiguration,
    marks: &[(String, i64)],
) -> Result<()> {
    if marks.is_empty() {
        return Ok(());
    }
    let only_change = !transaction.stages_metadata();
    let mut schema = match transaction.staged_schema()? {
        Some(schema) => schema,
        None => config.schema().clone(),
    };
    for (path, mark) in marks {
        set_high_water_mark(&mut schema, path, *mark);
    }
    transaction.update_metadata(MetadataUpdate {
        schema: Some(schema),
        ..MetadataUpdate::default()
    })?;
    if only_change {
        transaction.set_commit_tag(IDENTITY_SCHEMA_UPDATE_TAG, "true");
    }
    Ok(())
}

/// Sets `delta.identity.highWaterMark` of the column at dot-joined `path`.
fn set_high_water_mark(schema: &mut StructType, path: &str, mark: i64) {
    let mut fields = &mut schema.fields;
    let parts: Vec<&str> = path.split('.').collect();
    for (depth, part) in parts.iter().enumerate() {
        let Some(field) = fields.iter_mut().find(|f| f.name == *part) else {
            return;
        };
        if depth + 1 == parts.len() {
            field
                .metadata
                .insert(IDENTITY_HIGH_WATER_MARK_KEY.into(), Value::from(mark));
            return;
        }
        match &mut field.data_type {
            crate::schema::DataType::Struct(inner) => fields = &mut inner.fields,
            _ => return,
        }
    }
}
