//! One checkpoint file (a part, a V2 manifest or a sidecar) streamed to the store: batches are
//! built and encoded to Parquet on the rayon pool ([`crate::util::cpu::run`]) and the encoded bytes
//! handed to an [`ObjectUpload`] as row groups complete, so the memory held is about one row
//! group whatever the size of the table. Nothing is visible under the file's name before
//! [`ParquetFileOut::finish`] (a single put, or a multipart upload completed); a failure
//! aborts the upload.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use object_store::path::Path;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::storage::{ObjectUpload, Storage};

/// A Parquet file being written.
pub(crate) struct ParquetFileOut {
    name: String,
    writer: Option<ArrowWriter<Vec<u8>>>,
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
            .set_max_row_group_row_count(Some(row_group_rows.max(1)))
            .build();
        let writer = ArrowWriter::try_new(Vec::new(), schema, Some(properties))
            .map_err(|error| Error::arrow(format!("starting {name}"), error.into()))?;
        Ok(ParquetFileOut {
            name,
            writer: Some(writer),
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
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| Error::InvalidArgument(format!("{} is closed", self.name)))?;
        let name = self.name.clone();
        let encoded = crate::util::cpu::run(
            move || {
                let rows = match build()? {
                    Some(batch) => {
                        writer.write(&batch).map_err(|error| {
                            Error::arrow(format!("encoding {name}"), error.into())
                        })?;
                        batch.num_rows() as u64
                    }
                    None => 0,
                };
                let bytes = drain(&mut writer, &name)?;
                Ok((writer, bytes, rows))
            },
            |reason| Error::internal_invariant(format!("encoding a checkpoint: {reason}")),
        )
        .await;
        let (writer, bytes, rows) = match encoded {
            Ok(encoded) => encoded,
            Err(error) => return Err(error),
        };
        self.writer = Some(writer);
        self.rows += rows;
        self.upload.put(bytes).await
    }

    /// Writes the footer and completes the upload; returns the file's size in bytes.
    pub(crate) async fn finish(mut self) -> Result<u64> {
        let Some(mut writer) = self.writer.take() else {
            return Err(Error::InvalidArgument(format!("{} is closed", self.name)));
        };
        let name = self.name.clone();
        let finished = crate::util::cpu::run(
            move || {
                writer
                    .finish()
                    .map_err(|error| Error::arrow(format!("finishing {name}"), error.into()))?;
                drain(&mut writer, &name)
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

fn drain(writer: &mut ArrowWriter<Vec<u8>>, name: &str) -> Result<Bytes> {
    writer
        .sync()
        .map_err(|error| Error::arrow(format!("encoding {name}"), error.into()))?;
    Ok(Bytes::from(std::mem::take(writer.inner_mut())))
}
