//! The only IO module: a table root on an object store, the operations the rest of the crate
//! asks of it, and the tuning knobs of that IO ([`IoConfig`]).
//!
//! No other module touches `object_store::ObjectStore`: they ask a [`Storage`] to read an object
//! (whole, by ranges, or its size), list the log, write an object if absent, or open a Parquet
//! file ([`Storage::parquet_reader`], see `parquet`). Decoding what was read is CPU work and
//! runs through `crate::util::cpu::run`, never here.
//!
//! Locations in the log are table-relative, URL-encoded paths or absolute URIs (spec "Add File
//! and Remove File", catalogue A-21/A-22); [`Storage::resolve`] turns either into a path of the
//! table's store and refuses anything that leaves it.

pub(crate) mod parquet;
pub(crate) mod tree;
pub(crate) mod upload;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::{Path, PathPart};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use url::Url;

pub(crate) use self::parquet::ParquetReader;
pub(crate) use self::tree::TableObject;
pub(crate) use self::upload::ObjectUpload;
use crate::error::{Error, Result};

/// The largest object [`Storage::read`] reads whole: 1 GiB. Log files are read into memory
/// whole; a commit, checksum or JSON checkpoint claiming more is refused (a hostile or broken
/// log must not exhaust memory), before any of it is read.
pub const MAX_WHOLE_READ_BYTES: u64 = 1 << 30;

/// The tuning knobs of the crate's IO. [`IoConfig::default`] holds the values every reader uses
/// unless told otherwise; a [`Storage`] carries one ([`Storage::io`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoConfig {
    /// Small objects (commit files, checkpoint parts, sidecars) fetched at once. Default 16.
    pub concurrent_reads: usize,
    /// Data files a scan reads at once. Default 4.
    pub scan_files: usize,
    /// Deletion vector files loaded at once. Default 8.
    pub deletion_vectors: usize,
    /// Batches a data file may decode ahead of the reader of a scan. Default 2.
    pub read_ahead_batches: usize,
    /// Rows per batch read from a data file. Default 64 Ki (65,536).
    pub batch_size: usize,
    /// Rows per batch decoded from a Parquet checkpoint part or sidecar. Default 32 Ki (32,768).
    pub checkpoint_batch_size: usize,
}

impl IoConfig {
    /// The default knobs, usable in constant expressions.
    pub const DEFAULT: IoConfig = IoConfig {
        concurrent_reads: 16,
        scan_files: 4,
        deletion_vectors: 8,
        read_ahead_batches: 2,
        batch_size: 64 * 1024,
        checkpoint_batch_size: 32 * 1024,
    };
}

impl Default for IoConfig {
    fn default() -> Self {
        IoConfig::DEFAULT
    }
}

/// A table root on an object store, with the [`IoConfig`] its readers use. Cheap to clone.
#[derive(Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    root_url: Url,
    root: Path,
    log: Path,
    io: IoConfig,
    /// False when the user opted out of conditional puts (see [`Storage::open`]).
    conditional_put: bool,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("root_url", &self.root_url.as_str())
            .finish()
    }
}

impl Storage {
    /// Opens the table root at `uri`: a local path (relative or absolute) or a URL with a scheme
    /// object_store knows (`file`, `s3`/`s3a`, `gs`, `az`/`abfss`, `memory`). `options` go to the
    /// store's builder (`aws_endpoint`, `aws_access_key_id`, ...). Nothing is read yet.
    ///
    /// On S3, commits are conditional puts (`If-None-Match: *`, object_store's
    /// `aws_conditional_put=etag`), set explicitly whatever the builder's default. The only
    /// way out is explicit: `aws_conditional_put=disabled`, for stores without conditional
    /// writes; [`Storage::put_if_absent`] then checks and writes in two requests, which is
    /// safe for one writer at a time only (reliability notes §2.3).
    pub fn open(uri: &str, options: &HashMap<String, String>) -> Result<Storage> {
        let root_url = table_root_url(uri)?;
        let mut options = options.clone();
        let conditional_put = match root_url.scheme() {
            "s3" => conditional_put_on_s3(&mut options),
            _ => true,
        };
        let (store, root) = object_store::parse_url_opts(&root_url, options.iter())
            .map_err(|source| Error::storage(uri, source))?;
        let storage = Storage::with_store(Arc::from(store), root_url, root);
        Ok(Storage {
            conditional_put,
            ..storage
        })
    }

    /// A table at `root` (a path in `store`), known to callers as `root_url`.
    pub fn with_store(store: Arc<dyn ObjectStore>, root_url: Url, root: Path) -> Storage {
        let log = root.clone().join("_delta_log");
        Storage {
            store,
            root_url,
            root,
            log,
            io: IoConfig::default(),
            conditional_put: true,
        }
    }

    /// This storage writing new objects without preconditions: a check for the object, then
    /// a plain put (what `aws_conditional_put=disabled` selects on S3). Safe for one writer at
    /// a time only.
    pub fn without_conditional_put(self) -> Storage {
        Storage {
            conditional_put: false,
            ..self
        }
    }

    /// False when new objects are written without preconditions
    /// ([`Storage::without_conditional_put`]).
    pub fn has_conditional_put(&self) -> bool {
        self.conditional_put
    }

    /// This storage with the IO knobs `io`.
    pub fn with_io(self, io: IoConfig) -> Storage {
        Storage { io, ..self }
    }

    /// The IO knobs of the readers of this storage.
    pub fn io(&self) -> &IoConfig {
        &self.io
    }

    /// The table root as a URL ending in `/`.
    pub fn root_url(&self) -> &Url {
        &self.root_url
    }

    /// The table root as a URL string ending in `/`: the name errors give the table.
    pub fn uri(&self) -> &str {
        self.root_url.as_str()
    }

    /// The path of `_delta_log` in the store.
    pub fn log_dir(&self) -> &Path {
        &self.log
    }

    /// The path of a file directly inside `_delta_log`.
    pub fn log_file(&self, name: &str) -> Path {
        self.log.clone().join(name)
    }

    /// The objects directly inside `_delta_log` whose names sort at or after `offset_name`, in
    /// no particular order (what `crate::log::list_log_from` parses into log files).
    pub async fn list_log_dir_from(&self, offset_name: &str) -> Result<Vec<ObjectMeta>> {
        let offset = self.log.clone().join(offset_name);
        let listing: Vec<ObjectMeta> = self
            .store
            .list_with_offset(Some(&self.log), &offset)
            .try_collect()
            .await
            .map_err(|source| Error::storage(self.log.as_ref(), source))?;
        Ok(listing
            .into_iter()
            .filter(|meta| meta.location.prefix_matches(&self.log))
            .collect())
    }

    /// The first object inside `_delta_log` for which `accept` is true, listing no further
    /// than needed.
    pub async fn find_in_log_dir(
        &self,
        accept: impl Fn(&ObjectMeta) -> bool,
    ) -> Result<Option<ObjectMeta>> {
        let mut listing = self.store.list(Some(&self.log));
        while let Some(meta) = listing
            .try_next()
            .await
            .map_err(|source| Error::storage(self.log.as_ref(), source))?
        {
            if accept(&meta) {
                return Ok(Some(meta));
            }
        }
        Ok(None)
    }

    /// Reads a whole object (a log file: commit, checksum, hint, JSON checkpoint). An object
    /// larger than [`MAX_WHOLE_READ_BYTES`] is an [`Error::CorruptLogFile`] naming it, refused
    /// before its body is read.
    pub async fn read(&self, path: &Path) -> Result<Bytes> {
        let get = self.store.get(path).await;
        let result = get.map_err(|source| Error::storage(path.as_ref(), source))?;
        if result.meta.size > MAX_WHOLE_READ_BYTES {
            let reason = format!(
                "it is {} bytes, more than the {MAX_WHOLE_READ_BYTES} bytes deltalog reads \
                 into memory at once for a log file",
                result.meta.size
            );
            return Err(Error::corrupt(path.as_ref(), reason));
        }
        result
            .bytes()
            .await
            .map_err(|source| Error::storage(path.as_ref(), source))
    }

    /// Reads a whole object, or `None` when it does not exist.
    pub async fn read_if_exists(&self, path: &Path) -> Result<Option<Bytes>> {
        match self.read(path).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Reads several whole objects, [`IoConfig::concurrent_reads`] at once; the contents come
    /// back in the order of `paths`.
    pub async fn read_all(&self, paths: Vec<Path>) -> Result<Vec<Bytes>> {
        futures::stream::iter(paths)
            .map(|path| async move { self.read(&path).await })
            .buffered(self.io.concurrent_reads.max(1))
            .try_collect()
            .await
    }

    /// Reads `len` bytes at `offset`.
    pub async fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Bytes> {
        self.store
            .get_range(path, offset..offset + len)
            .await
            .map_err(|source| Error::storage(path.as_ref(), source))
    }

    /// Reads the byte ranges `ranges` of one object, in order. Nearby ranges are fetched with
    /// one request (object_store's coalescing `get_ranges`).
    pub async fn read_ranges(&self, path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.store
            .get_ranges(path, ranges)
            .await
            .map_err(|source| Error::storage(path.as_ref(), source))
    }

    /// The size of an object in bytes, without reading it.
    pub async fn size(&self, path: &Path) -> Result<u64> {
        self.store
            .head(path)
            .await
            .map(|meta| meta.size)
            .map_err(|source| Error::storage(path.as_ref(), source))
    }

    /// A Parquet reader of the object at `path`, of `size` bytes when known (the footer is then
    /// read with bounded ranges, else with a suffix request). Nothing is read yet.
    pub fn parquet_reader(&self, path: &Path, size: Option<u64>) -> ParquetReader {
        ParquetReader::new(self.store.clone(), path.clone(), size)
    }

    /// A new object at `path`, written in pieces (`ObjectUpload`): one put when it stays
    /// below `upload::DEFAULT_PART_SIZE`, a multipart upload otherwise. Nothing is sent yet.
    pub fn upload(&self, path: &Path) -> ObjectUpload {
        self.upload_with_part_size(path, upload::DEFAULT_PART_SIZE)
    }

    /// [`Storage::upload`] replacing what is already at `path`, in one atomic step (a reader
    /// sees the old object or the new one): for checkpoint files, whose content is fixed by
    /// their version, where the spec lets the last of racing writers win.
    ///
    /// On a local filesystem the Hadoop checksum file of the object it replaces
    /// (`Storage::hadoop_checksum_of`) is deleted first.
    pub fn upload_replacing(&self, path: &Path) -> ObjectUpload {
        let part_size = upload::DEFAULT_PART_SIZE;
        ObjectUpload::new(
            self.store.clone(),
            path.clone(),
            part_size,
            PutMode::Overwrite,
        )
        .replacing(self.hadoop_checksum_of(path))
    }

    /// The hidden checksum file that Hadoop's local filesystem (Delta on Spark's, on `file:`
    /// tables) keeps beside each file it writes, `.<name>.crc`, when the table is on a local
    /// filesystem. A file deltalog replaces must lose it: Hadoop's readers check the old
    /// checksum against the new bytes and fail.
    fn hadoop_checksum_of(&self, path: &Path) -> Option<Path> {
        if self.root_url.scheme() != "file" {
            return None;
        }
        let parts: Vec<PathPart<'_>> = path.parts().collect();
        let (name, directory) = parts.split_last()?;
        let checksum = PathPart::from(format!(".{}.crc", name.as_ref()));
        Some(
            directory
                .iter()
                .cloned()
                .chain(std::iter::once(checksum))
                .collect(),
        )
    }

    /// [`Storage::upload`] with parts of `part_size` bytes.
    pub fn upload_with_part_size(&self, path: &Path, part_size: usize) -> ObjectUpload {
        let mode = match self.conditional_put {
            true => PutMode::Create,
            false => PutMode::Overwrite,
        };
        ObjectUpload::new(self.store.clone(), path.clone(), part_size, mode)
    }

    /// Writes `bytes` to `path` only if nothing is there yet. Returns `Ok(false)` when another
    /// writer got there first; the existing object is never overwritten (spec: writers must
    /// never overwrite an existing log entry). Without conditional puts
    /// ([`Storage::without_conditional_put`]) the check and the write are two requests: a
    /// concurrent writer can slip in between them.
    pub async fn put_if_absent(&self, path: &Path, bytes: Bytes) -> Result<bool> {
        if !self.conditional_put {
            return self.check_then_put(path, bytes).await;
        }
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .store
            .put_opts(path, PutPayload::from_bytes(bytes), options)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(source) => Err(Error::storage(path.as_ref(), source)),
        }
    }

    async fn check_then_put(&self, path: &Path, bytes: Bytes) -> Result<bool> {
        match self.store.head(path).await {
            Ok(_) => return Ok(false),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(source) => return Err(Error::storage(path.as_ref(), source)),
        }
        self.put(path, bytes).await.map(|()| true)
    }

    /// Every object under `dir` (a directory of the log, such as `_delta_log/_sidecars`), in
    /// no particular order.
    pub async fn list_log_subdir(&self, dir: &Path) -> Result<Vec<ObjectMeta>> {
        self.store
            .list(Some(dir))
            .try_collect()
            .await
            .map_err(|source| Error::storage(dir.as_ref(), source))
    }

    /// Deletes the log file (or sidecar) at `path`; one already gone is not an error (metadata
    /// cleanup only).
    pub async fn delete_log_file(&self, path: &Path) -> Result<()> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(source) => Err(Error::storage(path.as_ref(), source)),
        }
    }

    /// Writes `bytes` to `path`, replacing what is there (for `_last_checkpoint` only), and
    /// the Hadoop checksum file of what it replaces (`Storage::hadoop_checksum_of`) first.
    pub async fn put(&self, path: &Path, bytes: Bytes) -> Result<()> {
        if let Some(checksum) = self.hadoop_checksum_of(path) {
            self.delete_log_file(&checksum).await?;
        }
        self.store
            .put(path, PutPayload::from_bytes(bytes))
            .await
            .map(|_| ())
            .map_err(|source| Error::storage(path.as_ref(), source))
    }

    /// The store path of a file named in the log: a URL-encoded path relative to the table root,
    /// or an absolute URI in the same store. Paths that leave the table's store, or relative
    /// paths with `.`/`..` segments, are an [`Error::InvalidPath`].
    pub fn resolve(&self, log_path: &str) -> Result<Path> {
        if let Some(absolute) = parse_absolute(log_path) {
            return self.resolve_url(absolute, log_path);
        }
        let decoded = percent_encoding::percent_decode_str(log_path)
            .decode_utf8()
            .map_err(|_| invalid_path(log_path, "its URL escapes are not UTF-8"))?;
        self.resolve_relative(&decoded, log_path)
    }

    /// As [`Storage::resolve`], for a path whose URL escapes were already decoded (the `path`
    /// column of a snapshot's file list).
    pub fn resolve_decoded(&self, path: &str) -> Result<Path> {
        match parse_absolute(path) {
            Some(absolute) => self.resolve_url(absolute, path),
            None => self.resolve_relative(path, path),
        }
    }

    fn resolve_url(&self, url: Result<Url, url::ParseError>, shown: &str) -> Result<Path> {
        let url = url.map_err(|_| invalid_path(shown, "not a valid URI"))?;
        if url.scheme() != self.root_url.scheme() || url.host() != self.root_url.host() {
            let reason = format!("it is not in the table's store {}", self.root_url);
            return Err(invalid_path(shown, &reason));
        }
        Path::from_url_path(url.path())
            .map_err(|error| invalid_path(shown, &format!("not a valid store path: {error}")))
    }

    /// `decoded` under the table root, taken literally: object names keep characters such as
    /// `%`, `{` or `[` that Spark leaves in partition directory names.
    fn resolve_relative(&self, decoded: &str, shown: &str) -> Result<Path> {
        for segment in decoded.split('/') {
            match segment {
                "" => return Err(invalid_path(shown, "it has an empty segment")),
                "." | ".." => return Err(invalid_path(shown, "it leaves the table root")),
                _ => {}
            }
        }
        let full = match self.root.as_ref() {
            "" => decoded.to_string(),
            root => format!("{root}/{decoded}"),
        };
        Path::parse(&full).map_err(|error| invalid_path(shown, &error.to_string()))
    }

    /// On the local file system, removes the directory `dir` when it is empty (a folder whose
    /// objects were all deleted stays behind there; object stores have no directories). Any
    /// other case, a directory not empty or already gone included, does nothing.
    pub(crate) fn remove_empty_local_dir(&self, dir: &Path) {
        if self.root_url.scheme() != "file" {
            return;
        }
        let local = Url::parse(&self.url_of(dir))
            .ok()
            .map(|url| url.to_file_path());
        if let Some(Ok(local)) = local {
            let _ = std::fs::remove_dir(local);
        }
    }

    /// The URL of a store path, for messages and for callers outside the store.
    pub fn url_of(&self, path: &Path) -> String {
        let mut url = self.root_url.clone();
        url.set_path(&format!("/{path}"));
        url.to_string()
    }
}

fn invalid_path(path: &str, reason: &str) -> Error {
    Error::InvalidPath {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

/// Whether commits to S3 with `options` use conditional puts: yes unless the options say
/// `aws_conditional_put` (or `conditional_put`) is `disabled`; otherwise it is set to `etag`
/// (`If-None-Match` / `If-Match`), so that no builder default decides.
fn conditional_put_on_s3(options: &mut HashMap<String, String>) -> bool {
    const KEYS: [&str; 2] = ["aws_conditional_put", "conditional_put"];
    let given: Vec<String> = options
        .keys()
        .filter(|key| KEYS.contains(&key.to_ascii_lowercase().as_str()))
        .cloned()
        .collect();
    let values: Vec<String> = given
        .iter()
        .filter_map(|key| options.remove(key))
        .map(|value| value.trim().to_ascii_lowercase())
        .collect();
    let disabled = values.iter().any(|value| value == "disabled");
    let value = match (disabled, values.last()) {
        (true, _) => "disabled".to_string(),
        (false, Some(value)) => value.clone(),
        (false, None) => "etag".to_string(),
    };
    options.insert(KEYS[0].to_string(), value);
    !disabled
}

/// The table root URL for `uri`, with a trailing slash. Local paths become absolute `file://`
/// URLs; `s3a` is read as `s3`.
pub(crate) fn table_root_url(uri: &str) -> Result<Url> {
    let invalid = |reason: String| Error::InvalidArgument(format!("table URI {uri:?}: {reason}"));
    let mut url = match parse_absolute(uri) {
        Some(parsed) => parsed.map_err(|error| invalid(error.to_string()))?,
        None => {
            let absolute = std::path::absolute(uri).map_err(|error| invalid(error.to_string()))?;
            Url::from_directory_path(&absolute)
                .map_err(|()| invalid("not an absolute local path".to_string()))?
        }
    };
    if url.scheme() == "s3a" {
        let rest = url.as_str().trim_start_matches("s3a:");
        url = Url::parse(&format!("s3:{rest}")).map_err(|error| invalid(error.to_string()))?;
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// `Some(parse result)` when `text` carries a URL scheme (`file:/a`, `s3://b/k`), `None` for
/// plain paths (Windows drive letters are not schemes).
fn parse_absolute(text: &str) -> Option<Result<Url, url::ParseError>> {
    let scheme_end = text.find(':')?;
    let scheme = &text[..scheme_end];
    let is_scheme = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    is_scheme.then(|| Url::parse(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(dir: &str) -> Storage {
        Storage::open(dir, &HashMap::new()).unwrap()
    }

    fn s3_options(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        let mut options: HashMap<String, String> = [
            ("aws_endpoint", "http://127.0.0.1:1"),
            ("aws_allow_http", "true"),
            ("aws_access_key_id", "k"),
            ("aws_secret_access_key", "s"),
            ("aws_region", "us-east-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        options.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        options
    }

    #[test]
    fn s3_commits_are_conditional_unless_disabled_explicitly() {
        let default = Storage::open("s3://b/t", &s3_options(&[])).unwrap();
        assert!(default.has_conditional_put());
        let etag = Storage::open("s3://b/t", &s3_options(&[("aws_conditional_put", "etag")]));
        assert!(etag.unwrap().has_conditional_put());
        let disabled = [("AWS_CONDITIONAL_PUT", "Disabled")];
        let opted_out = Storage::open("s3://b/t", &s3_options(&disabled)).unwrap();
        assert!(!opted_out.has_conditional_put());
        assert!(local("/tmp/t").has_conditional_put());
    }

    #[tokio::test]
    async fn without_conditional_put_an_existing_object_is_still_not_replaced() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let root = Url::parse("memory:///t/").unwrap();
        let storage = Storage::with_store(store, root, Path::from("t")).without_conditional_put();
        let path = storage.log_file("00000000000000000000.json");
        assert!(storage
            .put_if_absent(&path, Bytes::from("a"))
            .await
            .unwrap());
        assert!(!storage
            .put_if_absent(&path, Bytes::from("b"))
            .await
            .unwrap());
        assert_eq!(storage.read(&path).await.unwrap(), Bytes::from("a"));
        let mut upload = storage.upload(&storage.log_file("x"));
        upload.put(Bytes::from("data")).await.unwrap();
        assert_eq!(upload.finish().await.unwrap(), 4);
    }

    #[test]
    fn local_paths_become_directory_urls() {
        let url = table_root_url("/tmp/some table").unwrap();
        assert_eq!(url.as_str(), "file:///tmp/some%20table/");
        assert_eq!(table_root_url("s3a://b/t").unwrap().as_str(), "s3://b/t/");
    }

    #[test]
    fn relative_log_paths_are_decoded_and_confined() {
        let storage = local("/tmp/t");
        assert_eq!(
            storage.resolve("p=a%20b/x.parquet").unwrap().as_ref(),
            "tmp/t/p=a b/x.parquet"
        );
        assert!(matches!(
            storage.resolve("../other/x.parquet"),
            Err(Error::InvalidPath { .. })
        ));
        assert!(matches!(
            storage.resolve("a/%2E%2E/%2E%2E/x"),
            Err(Error::InvalidPath { .. })
        ));
    }

    #[test]
    fn object_names_keep_characters_spark_leaves_in_directory_names() {
        let storage = local("/tmp/t");
        let expected = "tmp/t/p=2020-01-01 08%3A09%3A10/{x}[y].parquet";
        let resolved = storage.resolve("p=2020-01-01%2008%253A09%253A10/{x}[y].parquet");
        assert_eq!(resolved.unwrap().as_ref(), expected);
        let decoded = storage.resolve_decoded("p=2020-01-01 08%3A09%3A10/{x}[y].parquet");
        assert_eq!(decoded.unwrap().as_ref(), expected);
    }

    #[test]
    fn absolute_log_paths_must_be_in_the_same_store() {
        let storage = local("/tmp/t");
        assert_eq!(
            storage.resolve("file:///tmp/t/x.parquet").unwrap().as_ref(),
            "tmp/t/x.parquet"
        );
        assert_eq!(
            storage.resolve("file:/tmp/t/x.parquet").unwrap().as_ref(),
            "tmp/t/x.parquet"
        );
        assert!(matches!(
            storage.resolve("s3://bucket/x.parquet"),
            Err(Error::InvalidPath { .. })
        ));
    }
}
