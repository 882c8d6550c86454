//! Data files: Arrow record batches in, Parquet files with Delta statistics out, and for every
//! file the facts a transaction needs for its `add` action ([`WrittenFile`]).
//!
//! A [`DataFileWriter`] is made for one table version ([`TableConfiguration`]) and fed batches;
//! for every batch it
//! 1. matches the input columns to the table's columns by name (exactly, else
//!    case-insensitively when unambiguous) and casts them to the table's types where that loses
//!    nothing (`conform`); an unknown column or a lossy type is an [`Error::SchemaMismatch`];
//! 2. fills what the table computes (`duties`): literal default values (spec "Default
//!    Columns"), identity values (spec "Identity Columns"), generated columns whose expression
//!    is a column or a literal (spec "Generated Columns"), and NULL for other missing nullable
//!    columns;
//! 3. checks every row: NOT NULL columns (nested struct fields too), CHECK constraints (spec
//!    "CHECK Constraints"), column invariants (spec "Invariants") and provided generated
//!    columns; a failing row is an [`Error::ConstraintViolation`] naming the rule, the row and
//!    its values, raised before any of the batch is written;
//! 4. splits the rows by partition values (spec "Partition Value Serialization") and writes the
//!    data columns (and after them the partition columns, when the table materialises them:
//!    Iceberg compatibility, `materializePartitionColumns`) to one open file per partition, under
//!    Hive-style directories `column=value/` escaped as Spark escapes them (or a random prefix
//!    under `delta.randomizeFilePrefixes`), with physical names and Parquet field ids under
//!    column mapping (spec "Column Mapping");
//! 5. gathers per-file statistics as Delta on Spark writes them (`stats`; spec "Per-file
//!    Statistics").
//!
//! A table whose rules cannot all be honoured (a CHECK constraint or generation expression our
//! expression language cannot evaluate, a non-literal default) is refused
//! when the writer is made, with an [`Error::UnsupportedFeature`];
//! [`unsupported_writer_duties`] lists those rules without failing.
//!
//! Memory: the writer holds one batch being prepared, and per open file one row group being
//! encoded ([`WriterOptions::row_group_bytes`]) plus at most a few upload parts
//! (`crate::storage::upload`); it never holds the input. A partitioned write keeps one file
//! open per partition seen, so its memory grows with the partitions written at once, as
//! Spark's does for unsorted input.
//!
//! CPU: preparing a batch and encoding it run on the rayon pool through `crate::util::cpu::run`,
//! never on the thread polling the future; the files of different partitions encode in
//! parallel, and within one file encoding and statistics run side by side.

pub(crate) mod changes;
pub(crate) mod claims;
pub(crate) mod conform;
pub(crate) mod duties;
#[cfg(feature = "internal-api")]
pub mod stats;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod stats;

mod file;
mod plan;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use futures::{Stream, StreamExt};

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;

use claims::IdentityClaims;
pub use duties::{unsupported_writer_duties, UnsupportedDuty};
use file::OpenFile;
pub(crate) use plan::scalar_at;
use plan::{PartitionKey, WritePlan};

/// The target size of a data file when neither the options nor `delta.targetFileSize` say:
/// 128 MiB (the size Spark's Parquet writer aims its row groups at, and about what Delta's
/// optimized writes produce).
pub(crate) const DEFAULT_TARGET_FILE_SIZE: u64 = 128 * 1024 * 1024;

/// The default estimated encoded size of a row group: 64 MiB.
pub(crate) const DEFAULT_ROW_GROUP_BYTES: usize = 64 * 1024 * 1024;

/// The default largest number of rows in a row group: 1 Mi (1,048,576).
pub(crate) const DEFAULT_ROW_GROUP_ROWS: usize = 1024 * 1024;

/// One data file written, with what its `add` action needs (spec "Add File and Remove File").
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WrittenFile {
    /// The path relative to the table root, not URL-encoded (encode it for `add.path`):
    /// `p=a b/part-00000-<uuid>-c000.zstd.parquet`.
    pub path: String,
    /// The size of the file in bytes.
    pub size: u64,
    /// Partition values keyed by physical column name (the logical name without column
    /// mapping), as the scalar codec writes them (`crate::scalar::to_partition_value`);
    /// `None` for NULL. Every partition column has an entry; empty for unpartitioned tables.
    pub partition_values: Vec<(String, Option<String>)>,
    /// The statistics JSON for `add.stats` (spec "Per-file Statistics").
    pub stats: String,
    /// Rows in the file.
    pub num_records: u64,
    /// When the file was completed, in milliseconds since the epoch.
    pub modification_time: i64,
    /// The tags its add carries (`ICEBERG_COMPAT_VERSION` under Iceberg compatibility V2 and
    /// V3, as Delta on Spark tags them); usually empty.
    pub tags: Vec<(String, Option<String>)>,
}

/// What a finished write produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteResult {
    /// The files written, in the order they were completed.
    pub files: Vec<WrittenFile>,
    /// For every identity column that generated values: its logical path (dot-joined) and the
    /// new high-water mark (the last value generated), to be stored in the column's
    /// `delta.identity.highWaterMark` by the commit (spec "Identity Columns").
    pub identity_high_water_marks: Vec<(String, i64)>,
}

/// A write that failed, with the files it had already completed. They are not referenced by
/// any commit; the caller may delete them or leave them to VACUUM. Files still open were
/// aborted and left nothing behind.
#[derive(Debug)]
pub struct WriteFailure {
    /// What went wrong.
    pub error: Error,
    /// Paths (relative to the table root, not URL-encoded) of the completed files.
    pub written_files: Vec<String>,
}

impl WriteFailure {
    /// The failure of an operation that wrote no file before `error`.
    pub(crate) fn unwritten(error: Error) -> WriteFailure {
        WriteFailure {
            error,
            written_files: Vec::new(),
        }
    }
}

impl std::fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for WriteFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The Parquet compression codec of data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// Zstandard (level 1), `.zstd.parquet`.
    #[default]
    Zstd,
    /// Snappy, `.snappy.parquet` (Spark's default).
    Snappy,
    /// No compression, `.parquet`.
    Uncompressed,
}

/// How a [`DataFileWriter`] writes.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// A file is closed once its estimated size reaches this. `None`: `delta.targetFileSize`,
    /// else `DEFAULT_TARGET_FILE_SIZE`.
    pub target_file_size: Option<u64>,
    /// A row group is closed once its estimated encoded size reaches this. Default
    /// `DEFAULT_ROW_GROUP_BYTES`. This bounds the memory of each open file.
    pub row_group_bytes: usize,
    /// A row group holds at most this many rows. Default `DEFAULT_ROW_GROUP_ROWS`.
    pub row_group_rows: usize,
    /// The compression codec. Default [`Codec::Zstd`].
    pub codec: Codec,
    /// A file holds at most this many rows (Spark's `maxRecordsPerFile`). Default `None`.
    pub max_records_per_file: Option<u64>,
    /// The part size of multipart uploads, and the size below which a file is written with one
    /// put. Default `crate::storage::upload::DEFAULT_PART_SIZE`.
    pub upload_part_size: usize,
    /// A folder under the table root that every file goes in, before its partition
    /// directories (`_change_data` for change data files). Default `None`: the table root.
    pub directory: Option<String>,
    /// The key of the identity claims this writer takes its identity values from, when it is
    /// one task of a distributed write (see `claims`). Default `None`: values follow the
    /// high-water marks of the writer's table configuration.
    pub identity_claims: Option<String>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            target_file_size: None,
            row_group_bytes: DEFAULT_ROW_GROUP_BYTES,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            codec: Codec::Zstd,
            max_records_per_file: None,
            upload_part_size: crate::storage::upload::DEFAULT_PART_SIZE,
            directory: None,
            identity_claims: None,
        }
    }
}

/// Where the rows given to a [`DataFileWriter`] come from, which decides what it does with
/// identity columns (spec "Identity Columns").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowOrigin {
    /// New rows (an append, an insert): an identity column the batch lacks is generated, and
    /// values given for a `GENERATED ALWAYS` identity column are refused.
    #[default]
    New,
    /// Rows already in the table, written again (UPDATE, MERGE's updated and copied rows,
    /// OPTIMIZE, a copy-on-write DELETE, the rows `replaceWhere` keeps, their change rows):
    /// they keep the identity values they have, as Delta on Spark keeps them.
    Existing,
}

/// Writes the data files of one table version; see the module docs.
#[derive(Debug)]
pub struct DataFileWriter {
    storage: Storage,
    plan: Arc<WritePlan>,
    open: HashMap<PartitionKey, OpenFile>,
    done: Vec<WrittenFile>,
    identity: duties::IdentityState,
    claims: Option<IdentityClaims>,
}

impl DataFileWriter {
    /// A writer of data files for the table `config` in `storage` (the table root).
    ///
    /// Refused with an [`Error::UnsupportedFeature`] when the table has a rule this writer
    /// cannot honour ([`unsupported_writer_duties`]); an option of zero (row group size, rows,
    /// target size, records per file) is an [`Error::InvalidArgument`]; a schema that does not
    /// convert (a column without a physical name under column mapping) is an
    /// [`Error::InvalidTable`].
    pub fn try_new(
        config: &TableConfiguration,
        storage: Storage,
        options: WriterOptions,
    ) -> Result<DataFileWriter> {
        if let Some(duty) = unsupported_writer_duties(config).into_iter().next() {
            return Err(duty.into_error(config.table_uri()));
        }
        let claims = options
            .identity_claims
            .as_deref()
            .map(|key| IdentityClaims::new(storage.clone(), key))
            .transpose()?;
        let plan = WritePlan::try_new(config, options)?;
        let identity = duties::IdentityState::new(&plan.duties);
        Ok(DataFileWriter {
            storage,
            plan: Arc::new(plan),
            open: HashMap::new(),
            done: Vec::new(),
            identity,
            claims,
        })
    }

    /// Writes the rows of `batch`. Every row is checked before any is written: a batch refused
    /// for its schema or its values ([`Error::SchemaMismatch`], [`Error::ConstraintViolation`])
    /// leaves the writer as it was, and the caller may go on with other batches. After any
    /// other error (storage, encoding) the caller should [`DataFileWriter::abort`].
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        self.write_rows(batch, RowOrigin::New).await
    }

    /// [`DataFileWriter::write`] of rows from `origin`: [`RowOrigin::Existing`] rows keep the
    /// values of their identity columns.
    pub async fn write_rows(&mut self, batch: RecordBatch, origin: RowOrigin) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.claim_identity_positions(&batch).await?;
        let plan = self.plan.clone();
        let identity = self.identity.clone();
        let (parts, identity) = crate::util::cpu::run(
            move || {
                let mut identity = identity;
                let parts = plan.prepare(&batch, origin, &mut identity)?;
                Ok((parts, identity))
            },
            |reason| Error::internal_invariant(format!("preparing a batch to write: {reason}")),
        )
        .await?;
        self.identity = identity;
        let mut jobs = Vec::with_capacity(parts.len());
        for part in parts {
            let file = self.open.remove(&part.key);
            jobs.push(file::write_part(
                self.storage.clone(),
                self.plan.clone(),
                file,
                part,
            ));
        }
        let mut first_error = None;
        for outcome in futures::future::join_all(jobs).await {
            self.done.extend(outcome.completed);
            if let Some(file) = outcome.open {
                self.open.insert(file.key().clone(), file);
            }
            if let (Some(error), None) = (outcome.error, &first_error) {
                first_error = Some(error);
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Claims the identity positions `batch` needs, when the writer takes its identity
    /// values from claims.
    async fn claim_identity_positions(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.claims.is_none() {
            return Ok(());
        }
        let schema = batch.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let columns = self.plan.duties.generated_identity_columns(&names) as u64;
        self.claim_positions(columns * batch.num_rows() as u64)
            .await
    }

    /// Claims until at least `needed` claimed positions are free, when the writer takes its
    /// identity values from claims.
    async fn claim_positions(&mut self, needed: u64) -> Result<()> {
        let Some(claims) = &mut self.claims else {
            return Ok(());
        };
        while self.identity.free_positions() < needed {
            let missing = needed - self.identity.free_positions();
            let (positions, marks) = claims.claim(missing).await?;
            self.identity.add_claim(positions, marks);
        }
        Ok(())
    }

    /// New values of the identity columns `columns` (top-level names) for `rows` new rows,
    /// one array per column, numbered as this writer numbers the identity columns a batch
    /// lacks (spec "Identity Columns": `start + k·step` beyond the high-water mark, or from
    /// the identity claims of a distributed write), so that [`DataFileWriter::finish`]
    /// reports the new high-water marks. For rows written to several files alike (data and
    /// change data): number them once here, then write them with the values as
    /// [`RowOrigin::Existing`] rows. A name that is not an identity column of the table is an
    /// [`Error::InvalidArgument`].
    pub(crate) async fn generate_identity(
        &mut self,
        columns: &[&str],
        rows: usize,
    ) -> Result<Vec<arrow_array::ArrayRef>> {
        if rows == 0 || columns.is_empty() {
            let empty = arrow_array::new_empty_array(&arrow_schema::DataType::Int64);
            return Ok(vec![empty; columns.len()]);
        }
        self.claim_positions(columns.len() as u64 * rows as u64)
            .await?;
        let plan = &self.plan;
        columns
            .iter()
            .map(|name| {
                plan.duties
                    .generate_identity(name, rows, &mut self.identity, &plan.table)
            })
            .collect()
    }

    /// The files completed so far.
    pub fn written_files(&self) -> &[WrittenFile] {
        &self.done
    }

    /// Closes every open file and returns every file written, with the identity high-water
    /// marks. On failure the files already completed are named in the [`WriteFailure`] and
    /// the files still open are aborted.
    pub async fn finish(mut self) -> Result<WriteResult, WriteFailure> {
        let open: Vec<OpenFile> = self.open.drain().map(|(_, file)| file).collect();
        let closes = open.into_iter().map(|file| file.close(self.plan.clone()));
        let mut first_error = None;
        for outcome in futures::future::join_all(closes).await {
            match outcome {
                Ok(written) => self.done.push(written),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        if let Some(error) = first_error {
            return Err(WriteFailure {
                error,
                written_files: self.done.into_iter().map(|file| file.path).collect(),
            });
        }
        Ok(WriteResult {
            files: self.done,
            identity_high_water_marks: self.identity.high_water_marks(&self.plan.duties),
        })
    }

    /// Gives up: aborts every open file (nothing of them stays in the store) and returns the
    /// paths of the files already completed, which no commit references.
    pub async fn abort(mut self) -> Vec<String> {
        let aborts = self.open.drain().map(|(_, file)| file.abort());
        futures::future::join_all(aborts).await;
        self.done.into_iter().map(|file| file.path).collect()
    }
}

/// Writes every batch of `batches` to new data files of the table `config` in `storage` and
/// returns them ([`DataFileWriter`]). The stream is read one batch at a time. On the first
/// error (of the stream or of a batch) the open files are aborted and the completed ones are
/// named in the [`WriteFailure`].
pub async fn write_batches<S>(
    config: &TableConfiguration,
    storage: Storage,
    options: WriterOptions,
    batches: S,
) -> Result<WriteResult, WriteFailure>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let mut writer =
        DataFileWriter::try_new(config, storage, options).map_err(|error| WriteFailure {
            error,
            written_files: Vec::new(),
        })?;
    let mut batches = std::pin::pin!(batches);
    while let Some(batch) = batches.next().await {
        let written = match batch {
            Ok(batch) => writer.write(batch).await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            let written_files = writer.abort().await;
            return Err(WriteFailure {
                error,
                written_files,
            });
        }
    }
    writer.finish().await
}
