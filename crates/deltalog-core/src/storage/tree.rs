//! The whole table directory, not only its log: listing every object under the table root as
//! a stream (for VACUUM and CONVERT TO DELTA, whose tables may hold millions of files),
//! checking that objects exist (RESTORE), and deleting objects in parallel batches (VACUUM).
//!
//! Paths handed out and taken back are relative to the table root (`p=1/part-0.parquet`);
//! nothing here reaches outside the root.

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::Storage;
use crate::error::{Error, Result};

/// How many deletes are in flight at once.
pub(crate) const DELETE_CONCURRENCY: usize = 32;

/// One object under the table root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableObject {
    /// The path relative to the table root, as the store names it (`/`-separated segments).
    pub(crate) path: String,
    /// The size in bytes.
    pub(crate) size: u64,
    /// The last modification time, in milliseconds since the epoch.
    pub(crate) modified_ms: i64,
}

impl Storage {
    /// Every object under the table root, `_delta_log` included, streamed as the store lists
    /// them (in no particular order): memory stays bounded whatever the number of objects.
    pub(crate) fn list_table(&self) -> BoxStream<'static, Result<TableObject>> {
        self.list_prefix(&self.root)
    }

    /// Every object under the root-relative `directory` (named relative to the table root),
    /// streamed as [`Storage::list_table`] streams them; none when it does not exist.
    pub(crate) fn list_table_under(
        &self,
        directory: &str,
    ) -> BoxStream<'static, Result<TableObject>> {
        match self.child(directory) {
            Ok(prefix) => self.list_prefix(&prefix),
            Err(error) => futures::stream::once(async move { Err(error) }).boxed(),
        }
    }

    /// The objects under the store path `prefix`, named relative to the table root.
    fn list_prefix(&self, prefix: &Path) -> BoxStream<'static, Result<TableObject>> {
        let root = self.root.clone();
        let shown = self.root_url.to_string();
        self.store
            .list(Some(prefix))
            .map(move |meta| {
                let meta = meta.map_err(|source| Error::storage(shown.clone(), source))?;
                Ok(relative_object(&root, meta))
            })
            .try_filter_map(|object| async move { Ok(object) })
            .boxed()
    }

    /// The table root as a path of the store.
    pub(crate) fn root_path(&self) -> &Path {
        &self.root
    }

    /// True when the file the log names `log_path` (URL-encoded relative, or absolute; see
    /// [`Storage::resolve`]) exists.
    pub(crate) async fn exists(&self, log_path: &str) -> Result<bool> {
        let location = self.resolve(log_path)?;
        match self.store.head(&location).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(source) => Err(Error::storage(location.as_ref(), source)),
        }
    }

    /// Deletes the objects at the root-relative `paths` (as [`Storage::list_table`] names
    /// them), [`DELETE_CONCURRENCY`] at once. An object already gone counts as deleted.
    /// Returns how many were deleted; the first other failure is returned as an error.
    pub(crate) async fn delete_relative(&self, paths: Vec<String>) -> Result<usize> {
        let locations: Vec<Path> = paths
            .iter()
            .map(|path| self.child(path))
            .collect::<Result<_>>()?;
        futures::stream::iter(locations)
            .map(|location| async move {
                match self.store.delete(&location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(1usize),
                    Err(source) => Err(Error::storage(location.as_ref(), source)),
                }
            })
            .buffer_unordered(DELETE_CONCURRENCY)
            .try_fold(0usize, |count, deleted| async move { Ok(count + deleted) })
            .await
    }

    /// The store path of the root-relative `path` as [`Storage::list_table`] names it.
    fn child(&self, path: &str) -> Result<Path> {
        if path.is_empty()
            || path
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(Error::InvalidPath {
                path: path.to_string(),
                reason: "not a path inside the table root".into(),
            });
        }
        let full = match self.root.as_ref() {
            "" => path.to_string(),
            root => format!("{root}/{path}"),
        };
        Path::parse(&full).map_err(|error| Error::InvalidPath {
            path: path.to_string(),
            reason: error.to_string(),
        })
    }
}

/// `meta` as a [`TableObject`] relative to `root`, or `None` when it is not strictly inside it.
fn relative_object(root: &Path, meta: object_store::ObjectMeta) -> Option<TableObject> {
    let location = meta.location.as_ref();
    let relative = match root.as_ref() {
        "" => location,
        root => location.strip_prefix(root)?.strip_prefix('/')?,
    };
    if relative.is_empty() {
        return None;
    }
    Some(TableObject {
        path: relative.to_string(),
        size: meta.size,
        modified_ms: meta.last_modified.timestamp_millis(),
    })
}
