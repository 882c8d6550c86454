//! One data file being written: its Parquet encoder (`crate::util::parquet_encoder`, the
//! leaf columns encoded in parallel) and statistics, moved to the rayon pool for every batch,
//! and its upload.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;

use super::plan::{Part, PartitionKey, WritePlan};
use super::stats::FileStats;
use super::WrittenFile;
use crate::error::{Error, Result};
use crate::storage::{ObjectUpload, Storage};
use crate::util::parquet_encoder::ParquetEncoder;
use crate::util::time::now_ms;

/// An open data file.
pub(crate) struct OpenFile {
    key: PartitionKey,
    path: String,
    partition_values: Arc<Vec<(String, Option<String>)>>,
    tags: Vec<(String, Option<String>)>,
    encoder: Option<Encoder>,
    upload: ObjectUpload,
}

struct Encoder {
    writer: ParquetEncoder,
    stats: FileStats,
    rows: u64,
}

impl std::fmt::Debug for OpenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenFile")
            .field("path", &self.path)
            .finish()
    }
}

/// What writing one part did: the files it completed, the file it left open, and the error
/// that stopped it (the file being written when it happened is aborted).
pub(crate) struct PartOutcome {
    pub completed: Vec<WrittenFile>,
    pub open: Option<OpenFile>,
    pub error: Option<Error>,
}

/// Writes the rows of `part` to `file` (or a new file of its partition), closing files that
/// reach the target size or record count and opening new ones as needed.
pub(crate) async fn write_part(
    storage: Storage,
    plan: Arc<WritePlan>,
    mut file: Option<OpenFile>,
    part: Part,
) -> PartOutcome {
    let mut completed = Vec::new();
    let mut rest = part.batch.clone();
    while rest.num_rows() > 0 {
        let mut current = match file.take() {
            Some(current) => current,
            None => match OpenFile::create(&storage, &plan, &part) {
                Ok(created) => created,
                Err(error) => {
                    return PartOutcome {
                        completed,
                        open: None,
                        error: Some(error),
                    }
                }
            },
        };
        let room = match plan.options.max_records_per_file {
            Some(limit) => limit.saturating_sub(current.rows()).max(1),
            None => u64::MAX,
        };
        let take = rest
            .num_rows()
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        let slice = rest.slice(0, take);
        rest = rest.slice(take, rest.num_rows() - take);
        if let Err(error) = current.encode(&plan, slice).await {
            current.abort().await;
            return PartOutcome {
                completed,
                open: None,
                error: Some(error),
            };
        }
        if current.is_full(&plan) {
            match current.close(plan.clone()).await {
                Ok(written) => completed.push(written),
                Err(error) => {
                    return PartOutcome {
                        completed,
                        open: None,
                        error: Some(error),
                    }
                }
            }
        } else {
            file = Some(current);
        }
    }
    PartOutcome {
        completed,
        open: file,
        error: None,
    }
}

impl OpenFile {
    /// A new file for the partition of `part`: `<partition dirs or random prefix>/part-<n>-
    /// <uuid>-c000<suffix>`.
    fn create(storage: &Storage, plan: &WritePlan, part: &Part) -> Result<OpenFile> {
        let index = plan.file_counter.fetch_add(1, Ordering::Relaxed);
        let uuid = uuid::Uuid::new_v4();
        let name = format!("part-{index:05}-{uuid}-c000{}", plan.file_suffix());
        let directory = match plan.random_prefix {
            Some(length) => random_prefix(length),
            None => part.directory.clone(),
        };
        let path = if directory.is_empty() {
            name
        } else {
            format!("{directory}/{name}")
        };
        let path = match &plan.options.directory {
            Some(folder) => format!("{folder}/{path}"),
            None => path,
        };
        let location = storage.resolve_decoded(&path)?;
        let writer = ParquetEncoder::try_new(plan.physical_arrow.clone(), plan.properties.clone())
            .map_err(|e| Error::arrow(format!("starting data file {path}"), e.into()))?;
        Ok(OpenFile {
            key: part.key.clone(),
            partition_values: part.partition_values.clone(),
            tags: plan.file_tags.clone(),
            encoder: Some(Encoder {
                writer,
                stats: plan.stats.start(),
                rows: 0,
            }),
            upload: storage.upload_with_part_size(&location, plan.options.upload_part_size),
            path,
        })
    }

    /// The partition the file belongs to.
    pub(super) fn key(&self) -> &PartitionKey {
        &self.key
    }

    fn rows(&self) -> u64 {
        self.encoder.as_ref().map_or(0, |encoder| encoder.rows)
    }

    fn is_full(&self, plan: &WritePlan) -> bool {
        let Some(encoder) = &self.encoder else {
            return true;
        };
        let size = self.upload.bytes_written() + encoder.writer.in_progress_size() as u64;
        size >= plan.target_file_size
            || plan
                .options
                .max_records_per_file
                .is_some_and(|limit| encoder.rows >= limit)
    }

    /// Encodes `batch` and computes its statistics on the rayon pool, side by side, then
    /// uploads the row groups completed.
    async fn encode(&mut self, plan: &Arc<WritePlan>, batch: RecordBatch) -> Result<()> {
        let mut encoder = self
            .encoder
            .take()
            .ok_or_else(|| Error::InvalidArgument(format!("data file {} is closed", self.path)))?;
        let plan = plan.clone();
        let path = self.path.clone();
        let (encoder, bytes) = crate::util::cpu::run(
            move || {
                let Encoder {
                    writer,
                    stats,
                    rows,
                } = &mut encoder;
                let (written, counted) = rayon::join(
                    || writer.write(&batch),
                    || stats.update(&plan.stats, &batch),
                );
                written
                    .map_err(|e| Error::arrow(format!("encoding data file {path}"), e.into()))?;
                counted?;
                *rows += batch.num_rows() as u64;
                let bytes = drain(writer, &path)?;
                Ok((encoder, bytes))
            },
            |reason| Error::internal_invariant(format!("encoding a data file: {reason}")),
        )
        .await?;
        self.encoder = Some(encoder);
        self.upload.put(bytes).await
    }

    /// Writes the footer, completes the upload and returns the file's facts.
    pub(crate) async fn close(mut self, plan: Arc<WritePlan>) -> Result<WrittenFile> {
        let Some(encoder) = self.encoder.take() else {
            self.upload.abort().await?;
            return Err(Error::InvalidArgument(format!(
                "data file {} is closed",
                self.path
            )));
        };
        let path = self.path.clone();
        let job_plan = plan.clone();
        let finished = crate::util::cpu::run(
            move || {
                let Encoder {
                    mut writer,
                    stats,
                    rows,
                } = encoder;
                writer
                    .finish()
                    .map_err(|e| Error::arrow(format!("finishing data file {path}"), e.into()))?;
                let bytes = drain(&mut writer, &path)?;
                Ok((bytes, stats.to_json(&job_plan.stats)?, rows))
            },
            |reason| Error::internal_invariant(format!("finishing a data file: {reason}")),
        )
        .await;
        let (bytes, stats, rows) = match finished {
            Ok(finished) => finished,
            Err(error) => {
                let _ = self.upload.abort().await;
                return Err(error);
            }
        };
        if let Err(error) = self.upload.put(bytes).await {
            let _ = self.upload.abort().await;
            return Err(error);
        }
        let size = self.upload.finish().await?;
        Ok(WrittenFile {
            path: self.path,
            size,
            partition_values: self.partition_values.as_ref().clone(),
            stats,
            num_records: rows,
            modification_time: now_ms(),
            tags: self.tags,
        })
    }

    /// Drops the file: nothing of it stays in the store.
    pub(crate) async fn abort(self) {
        let _ = self.upload.abort().await;
    }
}

/// The bytes the writer has produced since the last call.
fn drain(writer: &mut ParquetEncoder, path: &str) -> Result<Bytes> {
    writer
        .drain()
        .map_err(|e| Error::arrow(format!("encoding data file {path}"), e.into()))
}

/// `length` random letters and digits (Spark's random file prefix).
fn random_prefix(length: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut prefix = String::with_capacity(length);
    while prefix.len() < length {
        for byte in uuid::Uuid::new_v4().as_bytes() {
            if prefix.len() == length {
                break;
            }
            prefix.push(char::from(ALPHABET[usize::from(*byte) % ALPHABET.len()]));
        }
    }
    prefix
}
