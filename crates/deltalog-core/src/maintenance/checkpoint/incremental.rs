//! Checkpoints written incrementally (spec "Checkpoints": a checkpoint holds the reconciled
//! state of its version, however it is computed).
//!
//! The new checkpoint of version `v` is the previous checkpoint's file-action rows minus those
//! that the commits after it supersede (an action with the same key, spec "Action
//! Reconciliation") and the tombstones that have expired, plus the live files and tombstones
//! of those commits. The previous checkpoint's Parquet files (its parts, or a V2 checkpoint's
//! manifest and sidecars) are read one row group at a time and each row group is written out
//! as soon as it is converted, so memory holds a few row groups whatever the table's size;
//! statistics already parsed (`stats_parsed`) are copied, and only the JSON statistics of
//! files that lack them are parsed ([`super::rows::carried_adds`]).
//!
//! The rows are produced by a task running one batch ahead of the writer
//! ([`file_action_batches`]): the next row group is read and converted while the current one
//! is encoded.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{BooleanArray, RecordBatch, StructArray};
use arrow_schema::SchemaRef;
use object_store::path::Path;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use tokio::sync::mpsc;

use super::rows::{carried_adds, carried_removes, file_actions_batch, unexpired_tombstones};
use super::schema::{column, CheckpointLayout};
use super::{file_action_batch, Content};
use crate::error::{Error, Result};
use crate::log::path::{CheckpointFormat, CheckpointKind, LogFileKind};
use crate::log::segment::LogSegment;
use crate::replay::load::{sidecar_path, CheckpointDelta};
use crate::replay::reconcile::TouchedKeys;
use crate::storage::Storage;
use crate::table_config::TableConfiguration;
use crate::util::cpu;

/// The previous checkpoint a new one is built on.
#[derive(Clone)]
pub(super) struct Base {
    /// The version of the previous checkpoint.
    pub(super) version: u64,
    /// The Parquet files holding its file actions, with their sizes.
    files: Vec<(Path, u64)>,
    /// The keys of every file action of the commits after it.
    touched: Arc<TouchedKeys>,
    /// Tombstones deleted at or before this time have expired.
    cutoff_ms: i64,
}

impl Base {
    /// The previous checkpoint of `segment` as a base, with `delta` read from it; `None`
    /// without one. A JSON V2 checkpoint holding file actions itself cannot be a base (its
    /// rows are not in Parquet): the caller replays the whole state instead.
    pub(super) async fn locate(
        storage: &Storage,
        segment: &LogSegment,
        delta: &CheckpointDelta,
        cutoff_ms: i64,
    ) -> Result<Option<Base>> {
        let Some(checkpoint) = &segment.checkpoint else {
            return Ok(None);
        };
        if delta.json_file_actions {
            return Ok(None);
        }
        let mut files = Vec::new();
        for part in &checkpoint.parts {
            let json = matches!(
                &part.kind,
                LogFileKind::Checkpoint(CheckpointKind::Uuid {
                    format: CheckpointFormat::Json,
                    ..
                })
            );
            if !json {
                files.push((part.location.clone(), part.size));
            }
        }
        for sidecar in &delta.sidecars {
            let path = sidecar_path(storage, &sidecar.path)?;
            let size = match u64::try_from(sidecar.size_in_bytes) {
                Ok(size) if size > 0 => size,
                _ => storage.size(&path).await?,
            };
            files.push((path, size));
        }
        Ok(Some(Base {
            version: checkpoint.version,
            files,
            touched: Arc::new(delta.touched.clone()),
            cutoff_ms,
        }))
    }
}

/// Every file-action row of `content` as batches of `schema` (the checkpoint's or a
/// sidecar's), in order: the base checkpoint's rows kept, then the replayed live files and
/// tombstones, in batches of at most `rows_per_batch` rows. A task produces them one batch
/// ahead of the reader; it stops at the first error (the last item) or when the reader is
/// dropped.
pub(super) fn file_action_batches(
    storage: &Storage,
    content: &Content,
    schema: SchemaRef,
    rows_per_batch: usize,
) -> FileActionBatches {
    let (sender, receiver) = mpsc::channel(1);
    let producer = Producer {
        storage: storage.clone(),
        layout: content.layout.clone(),
        config: content.config.clone(),
        schema,
        base: content.base.clone(),
        chunks: content.file_chunks(rows_per_batch),
        rows_per_batch: rows_per_batch.max(1),
        sender,
    };
    let task = tokio::spawn(producer.run());
    FileActionBatches {
        receiver,
        task: Some(task),
    }
}

/// The batches [`file_action_batches`] produces.
pub(super) struct FileActionBatches {
    receiver: mpsc::Receiver<Result<RecordBatch>>,
    /// The producing task, until it has been awaited.
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FileActionBatches {
    /// The next batch; `None` once every row was produced. A producing task that ended
    /// without finishing (it panicked or was cancelled) is an internal error, never the end
    /// of the rows: a checkpoint missing rows must not be written.
    pub(super) async fn next(&mut self) -> Option<Result<RecordBatch>> {
        if let Some(item) = self.receiver.recv().await {
            return Some(item);
        }
        match self.task.take()?.await {
            Ok(()) => None,
            Err(error) => Some(Err(Error::internal_invariant(format!(
                "the task producing checkpoint rows ended early: {error}"
            )))),
        }
    }
}

/// What [`file_action_batches`]' task owns.
struct Producer {
    storage: Storage,
    layout: Arc<CheckpointLayout>,
    config: Arc<TableConfiguration>,
    schema: SchemaRef,
    base: Option<Base>,
    chunks: Vec<(bool, StructArray)>,
    /// Rows per batch, read from a base file or cut from the chunks.
    rows_per_batch: usize,
    sender: mpsc::Sender<Result<RecordBatch>>,
}

impl Producer {
    async fn run(self) {
        if let Err(error) = self.produce().await {
            let _ = self.sender.send(Err(error)).await;
        }
    }

    async fn produce(&self) -> Result<()> {
        if let Some(base) = &self.base {
            for (path, size) in &base.files {
                if !self.carry_file(base, path, *size).await? {
                    return Ok(());
                }
            }
        }
        for (is_add, chunk) in &self.chunks {
            let (layout, config) = (self.layout.clone(), self.config.clone());
            let (schema, is_add, chunk) = (self.schema.clone(), *is_add, chunk.clone());
            let build = move || file_action_batch(&layout, &config, &schema, is_add, &chunk);
            let batch = cpu::run(build, |reason| {
                Error::internal_invariant(format!("building checkpoint rows: {reason}"))
            })
            .await?;
            if !self.send(batch).await {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Sends `batch` when there is one; false once the receiver is gone.
    async fn send(&self, batch: Option<RecordBatch>) -> bool {
        match batch {
            Some(batch) => self.sender.send(Ok(batch)).await.is_ok(),
            None => true,
        }
    }

    /// Reads the `add` and `remove` columns of the base file at `path` a row group at a time
    /// and sends the rows kept; false once the receiver is gone.
    async fn carry_file(&self, base: &Base, path: &Path, size: u64) -> Result<bool> {
        let name: Arc<str> = Arc::from(self.storage.url_of(path));
        let corrupt = |error: parquet::errors::ParquetError| Error::corrupt(&*name, error);
        let reader = self.storage.parquet_reader(path, Some(size));
        let builder = ParquetRecordBatchStreamBuilder::new(reader)
            .await
            .map_err(corrupt)?;
        let roots: Vec<usize> = builder
            .parquet_schema()
            .root_schema()
            .get_fields()
            .iter()
            .enumerate()
            .filter(|(_, field)| matches!(field.name(), column::ADD | column::REMOVE))
            .map(|(index, _)| index)
            .collect();
        if roots.is_empty() {
            return Ok(true);
        }
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let batch_size = self.rows_per_batch;
        let mut stream = builder
            .with_projection(mask)
            .with_batch_size(batch_size)
            .build()
            .map_err(corrupt)?;
        while let Some(row_group) = stream.next_row_group().await.map_err(corrupt)? {
            let (layout, config) = (self.layout.clone(), self.config.clone());
            let (schema, base, file) = (self.schema.clone(), base.clone(), name.clone());
            let carry = move || {
                let batches = row_group
                    .collect::<Result<Vec<RecordBatch>, _>>()
                    .map_err(|error| Error::corrupt(&*file, error))?;
                carry_batches(&layout, &config, &schema, &base, &batches, &file)
            };
            let batches = cpu::run(carry, |reason| Error::corrupt(&*name, reason)).await?;
            for batch in batches {
                if !self.send(Some(batch)).await {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

/// The rows of `batches` (a row group of the base file `file`) that the new checkpoint keeps,
/// as batches of `schema` (see [`carry_batch`]).
fn carry_batches(
    layout: &CheckpointLayout,
    config: &TableConfiguration,
    schema: &SchemaRef,
    base: &Base,
    batches: &[RecordBatch],
    file: &str,
) -> Result<Vec<RecordBatch>> {
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        kept.extend(carry_batch(layout, config, schema, base, batch, file)?);
    }
    Ok(kept)
}

/// The rows of `batch` that the new checkpoint keeps, as a batch of `schema`: adds whose key
/// no later commit touched, and tombstones whose key no later commit touched and that have
/// not expired. `None` when none is kept.
fn carry_batch(
    layout: &CheckpointLayout,
    config: &TableConfiguration,
    schema: &SchemaRef,
    base: &Base,
    batch: &RecordBatch,
    file: &str,
) -> Result<Option<RecordBatch>> {
    let rows = batch.num_rows();
    let actions = |name: &str| -> Result<Option<StructArray>> {
        match batch.column_by_name(name) {
            None => Ok(None),
            Some(column) => column.as_struct_opt().cloned().map(Some).ok_or_else(|| {
                Error::corrupt(file, format!("its `{name}` column is not a struct"))
            }),
        }
    };
    let (adds, removes) = (actions(column::ADD)?, actions(column::REMOVE)?);
    let none = || BooleanArray::from(vec![false; rows]);
    let live = match &adds {
        Some(adds) => base.touched.untouched(adds, file)?,
        None => none(),
    };
    let dead = match &removes {
        Some(removes) => {
            let untouched = base.touched.untouched(removes, file)?;
            unexpired_tombstones(removes, base.cutoff_ms, |row| untouched.value(row))
        }
        None => none(),
    };
    let keep = arrow::compute::or(&live, &dead)
        .map_err(|error| Error::arrow(format!("the rows carried from {file}"), error))?;
    if keep.true_count() == 0 {
        return Ok(None);
    }
    let all = keep.true_count() == rows;
    let kept =
        |actions: Option<StructArray>, fields: &arrow_schema::Fields| -> Result<StructArray> {
            match actions {
                Some(actions) if all => Ok(actions),
                Some(actions) => arrow::compute::filter(&actions, &keep)
                    .map(|kept| kept.as_struct().clone())
                    .map_err(|error| Error::arrow(format!("the rows carried from {file}"), error)),
                None => Ok(StructArray::new_null(fields.clone(), keep.true_count())),
            }
        };
    let adds = kept(adds, &layout.add_fields)?;
    let removes = kept(removes, &layout.remove_fields)?;
    let adds = carried_adds(layout, config, &adds, file)?;
    let removes = carried_removes(layout, &removes, file)?;
    file_actions_batch(schema, adds, removes).map(Some)
}

#[cfg(test)]
mod tests;
