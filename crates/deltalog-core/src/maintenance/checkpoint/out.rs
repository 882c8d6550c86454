//! One checkpoint file (a part, a V2 manifest or a sidecar) streamed to the store: batches are
//! built and encoded to Parquet on the rayon pool ([`crate::util::cpu::run`]), each row group's
//! columns encoded in parallel (`crate::util::parquet_encoder`), and the encoded bytes handed
//! to an [`ObjectUpload`] as row groups complete, so the memory held is about one row group
//! whatever the size of the table. Columns are written without dictionaries: a checkpoint's
//! values are mostly unique (paths, statistics), where a dictionary only grows and is then
//! dropped. Nothing is visible under the file's name before
//! [`ParquetFileOut::finish`] (a single put, or a multipart upload completed); a failure
//! aborts the upload.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use object_store::path::Path;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::storage::{ObjectUpload, Storage};
use crate::util::parquet_encoder::ParquetEncoder;

/// A Parquet file being written.
pub(crate) struct ParquetFileOut {
    name: String,
    encoder: Option<ParquetEncoder>,
    upload: ObjectUpload,
    rows: u64,
}

impl ParquetFileOut {
    /// Starts the file at `path` with `schema`, row groups of at most `row_group_rows` rows,
    /// Snappy-compressed as Spark writes checkpoints. A file already at `path` is replaced
    /// when this one is complete (spec "Checkpoint Naming Scheme": of racing writers of one
    /// classic checkpoint the latest wins; both hold the same version's state).
    pub(crate) fn create(
        storage: &Storage,
        path: &Path,
        schema: SchemaRef,
        row_group_rows: usize,
    ) -> Result<ParquetFileOut> {
        let name = storage.url_of(path);
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(row_group_rows.max(1)))
            .set_max_row_group_bytes(None)
            .build();
        let encoder = ParquetEncoder::try_new(schema, properties)
            .map_err(|error| Error::arrow(format!("starting {name}"), error.into()))?;
        Ok(ParquetFileOut {
            name: name.clone(),
            encoder: Some(encoder),
            upload: storage.upload_replacing(path),
            rows: 0,
        })
    }

    /// The URL of the file.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Rows written so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Builds a batch with `build` and encodes it, both on the rayon pool, then uploads the
    /// row groups completed.
    pub(crate) async fn write_with<F>(&mut self, build: F) -> Result<()>
    where
        F: FnOnce() -> Result<Option<RecordBatch>> + Send + 'static,
    {
        let mut encoder = self
            .encoder
            .take()
            .ok_or_else(|| Error::InvalidArgument(format!("{} is closed", self.name)))?;
        let name = self.name.clone();
        let (encoder, bytes, rows) = crate::util::cpu::run(
            move || {
                let rows = match build()? {
                    Some(batch) => {
                        encoder.write(&batch).map_err(|error| {
                            Error::arrow(format!("encoding {name}"), error.into())
                        })?;
                        batch.num_rows() as u64
                    }
                    None => 0,
                };
                let bytes = encoder
                    .drain()
                    .map_err(|error| Error::arrow(format!("encoding {name}"), error.into()))?;
                Ok((encoder, bytes, rows))
            },
            |reason| Error::internal_invariant(format!("encoding a checkpoint: {reason}")),
        )
        .await?;
        self.encoder = Some(encoder);
        self.rows += rows;
        self.upload.put(bytes).await
    }

    /// Writes the footer and completes the upload; returns the file's size in bytes.
    pub(crate) async fn finish(mut self) -> Result<u64> {
        let Some(mut encoder) = self.encoder.take() else {
            return Err(Error::InvalidArgument(format!("{} is closed", self.name)));
        };
        let name = self.name.clone();
        let finished = crate::util::cpu::run(
            move || {
                let finishing = |error: parquet::errors::ParquetError| {
                    Error::arrow(format!("finishing {name}"), error.into())
                };
                encoder.finish().map_err(finishing)?;
                encoder.drain().map_err(finishing)
            },
            |reason| Error::internal_invariant(format!("finishing a checkpoint: {reason}")),
        )
        .await;
        let bytes = match finished {
            Ok(bytes) => bytes,
            Err(error) => {
                let _ = self.upload.abort().await;
                return Err(error);
            }
        };
        if let Err(error) = self.upload.put(bytes).await {
            let _ = self.upload.abort().await;
            return Err(error);
        }
        self.upload.finish().await
    }

    /// Drops the file: nothing of it stays in the store.
    pub(crate) async fn abort(self) {
        let _ = self.upload.abort().await;
    }
}
