//! Writing one new object through the table's store in pieces: [`ObjectUpload`], used by the
//! data file writer to stream a Parquet file out as its row groups are encoded.
//!
//! Small objects go out with one put when the upload finishes; once more than a part's worth of
//! bytes has been given, a multipart upload starts and every full part is sent as it fills
//! (at most [`MAX_PARTS_IN_FLIGHT`] at once), so the memory an upload holds is bounded by the
//! part size times the parts in flight, whatever the object's size. Nothing is visible in the
//! store before [`ObjectUpload::finish`] succeeds; [`ObjectUpload::abort`] drops what was sent.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

use crate::error::{Error, Result};

/// The default size of one part of a multipart upload, and the size below which an object is
/// written with a single put: 10 MiB (object stores want at least 5 MiB per part).
pub(crate) const DEFAULT_PART_SIZE: usize = 10 * 1024 * 1024;

/// Parts of one multipart upload sent at once.
pub(crate) const MAX_PARTS_IN_FLIGHT: usize = 4;

/// One object being written, made by [`super::Storage::upload`].
pub struct ObjectUpload {
    store: Arc<dyn ObjectStore>,
    path: Path,
    part_size: usize,
    written: u64,
    state: State,
    /// How a small object is put: `Create` (never replacing), or `Overwrite` for stores
    /// written without preconditions.
    mode: PutMode,
    /// A file made stale by replacing the object (a Hadoop checksum file), deleted before
    /// the object is completed.
    stale: Option<Path>,
}

enum State {
    /// Fewer than `part_size` bytes so far, held until [`ObjectUpload::finish`].
    Buffered(Vec<Bytes>, usize),
    /// A multipart upload under way.
    Multipart(WriteMultipart),
}

impl std::fmt::Debug for ObjectUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectUpload")
            .field("path", &self.path.as_ref())
            .field("written", &self.written)
            .finish()
    }
}

impl ObjectUpload {
    pub(super) fn new(
        store: Arc<dyn ObjectStore>,
        path: Path,
        part_size: usize,
        mode: PutMode,
    ) -> Self {
        ObjectUpload {
            store,
            path,
            part_size: part_size.max(1),
            written: 0,
            state: State::Buffered(Vec::new(), 0),
            mode,
            stale: None,
        }
    }

    /// This upload deleting `stale` (when given) before it completes the object.
    pub(super) fn replacing(self, stale: Option<Path>) -> Self {
        ObjectUpload { stale, ..self }
    }

    /// The store path written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes given so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Appends `bytes`. Starts the multipart upload when the buffered bytes reach a part, and
    /// waits while too many parts are in flight.
    pub async fn put(&mut self, bytes: Bytes) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.written += bytes.len() as u64;
        match &mut self.state {
            State::Multipart(upload) => {
                upload
                    .wait_for_capacity(MAX_PARTS_IN_FLIGHT)
                    .await
                    .map_err(|source| Error::storage(self.path.as_ref(), source))?;
                upload.put(bytes);
            }
            State::Buffered(chunks, size) => {
                *size += bytes.len();
                chunks.push(bytes);
                if *size >= self.part_size {
                    let chunks = std::mem::take(chunks);
                    let multipart = self
                        .store
                        .put_multipart(&self.path)
                        .await
                        .map_err(|source| Error::storage(self.path.as_ref(), source))?;
                    let mut upload = WriteMultipart::new_with_chunk_size(multipart, self.part_size);
                    for chunk in chunks {
                        upload.put(chunk);
                    }
                    self.state = State::Multipart(upload);
                }
            }
        }
        Ok(())
    }

    /// Completes the object and returns its size in bytes. A small object is written with one
    /// put that never replaces an existing object (an object already at the path is an
    /// [`Error::Storage`]), unless the storage writes without preconditions; a multipart
    /// upload is completed.
    pub async fn finish(self) -> Result<u64> {
        if let Some(stale) = &self.stale {
            match self.store.delete(stale).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(source) => return Err(Error::storage(stale.as_ref(), source)),
            }
        }
        let path = self.path;
        match self.state {
            State::Buffered(chunks, _) => {
                let payload: PutPayload = chunks.into_iter().collect();
                let options = PutOptions {
                    mode: self.mode,
                    ..PutOptions::default()
                };
                self.store
                    .put_opts(&path, payload, options)
                    .await
                    .map_err(|source| Error::storage(path.as_ref(), source))?;
            }
            State::Multipart(upload) => {
                upload
                    .finish()
                    .await
                    .map_err(|source| Error::storage(path.as_ref(), source))?;
            }
        }
        Ok(self.written)
    }

    /// Abandons the object: a multipart upload is aborted (its parts dropped), buffered bytes
    /// are discarded. Nothing was visible at the path and nothing is left there.
    pub async fn abort(self) -> Result<()> {
        match self.state {
            State::Buffered(..) => Ok(()),
            State::Multipart(upload) => upload
                .abort()
                .await
                .map_err(|source| Error::storage(self.path.as_ref(), source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::storage::Storage;

    async fn round_trip(part_size: usize, pieces: usize) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let path = storage.resolve_decoded("a=1/file.bin").unwrap();
        let mut upload = storage.upload_with_part_size(&path, part_size);
        let mut expected = Vec::new();
        for piece in 0..pieces {
            let bytes: Vec<u8> = (0..1000).map(|i| ((i + piece) % 251) as u8).collect();
            expected.extend_from_slice(&bytes);
            upload.put(Bytes::from(bytes)).await.unwrap();
        }
        assert_eq!(upload.bytes_written(), expected.len() as u64);
        let size = upload.finish().await.unwrap();
        assert_eq!(size, expected.len() as u64);
        assert_eq!(storage.read(&path).await.unwrap(), Bytes::from(expected));
    }

    /// Found by the combination tests against Delta on Spark (issue 23): a checkpoint
    /// replacing Spark's left Hadoop's `.<name>.crc` beside it, and Spark failed every read.
    #[tokio::test]
    async fn replacing_a_local_file_deletes_its_hadoop_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        let name = "00000000000000000002.checkpoint.parquet";
        std::fs::write(log.join(name), b"spark's").unwrap();
        std::fs::write(log.join(format!(".{name}.crc")), b"checksum").unwrap();
        std::fs::write(log.join(".other.crc"), b"kept").unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let mut upload = storage.upload_replacing(&storage.log_file(name));
        upload.put(Bytes::from_static(b"ours")).await.unwrap();
        upload.finish().await.unwrap();
        assert_eq!(std::fs::read(log.join(name)).unwrap(), b"ours");
        assert!(!log.join(format!(".{name}.crc")).exists());
        assert!(log.join(".other.crc").exists());
    }

    #[tokio::test]
    async fn small_objects_are_one_put_and_large_ones_multipart() {
        round_trip(DEFAULT_PART_SIZE, 3).await;
        round_trip(2500, 11).await;
    }

    #[tokio::test]
    async fn a_single_put_never_replaces_an_object() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let path = storage.resolve_decoded("x.bin").unwrap();
        storage
            .put(&path, Bytes::from_static(b"old"))
            .await
            .unwrap();
        let mut upload = storage.upload(&path);
        upload.put(Bytes::from_static(b"new")).await.unwrap();
        assert!(matches!(upload.finish().await, Err(Error::Storage { .. })));
        assert_eq!(
            storage.read(&path).await.unwrap(),
            Bytes::from_static(b"old")
        );
    }

    #[tokio::test]
    async fn an_aborted_upload_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let path = storage.resolve_decoded("y.bin").unwrap();
        let mut upload = storage.upload_with_part_size(&path, 100);
        upload.put(Bytes::from(vec![1u8; 1000])).await.unwrap();
        upload.abort().await.unwrap();
        assert!(storage.read(&path).await.unwrap_err().is_not_found());
    }
}
