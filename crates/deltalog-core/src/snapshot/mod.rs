//! An immutable snapshot of one table version (spec "Action Reconciliation").
//!
//! A snapshot has two halves. Its head (protocol, metadata, `txn` versions, domains, commit
//! time) is known when it loads. Its file list is replayed when it loads
//! (`Snapshot::load`), or on first need (`Snapshot::load_lazy`): a lazy snapshot takes
//! its head from the version's `.crc` file and newest commit when they are usable (see
//! `from_checksum`), else from the log without the file actions, and replays the file list
//! only when something asks for it. A replay that contradicts the `.crc` file it opened from
//! is an [`Error::ChecksumMismatch`].

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::SchemaRef;

use crate::actions::{CommitInfo, Metadata, Protocol};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::log::commit_range::CommitRange;
use crate::log::segment::{latest_version, LogSegment};
use crate::log::timestamps::{commit_timestamp, MONOTONIC_LOOKBACK};
use crate::replay::file_list::{active_files, FileListOptions};
use crate::replay::load::{
    decode_commits, fold_state_async, load_segment, load_segment_matching,
    load_segment_without_files, TableState,
};
use crate::replay::reconcile::FileKeys;
use crate::schema::{ColumnMappingMode, StructType};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;

pub(crate) mod from_checksum;

#[cfg(test)]
mod tests;

/// Which version of a table to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotAt {
    /// The newest version.
    Latest,
    /// A version number.
    Version(u64),
    /// The newest version committed at or before this time (ms since the epoch, UTC).
    Timestamp(i64),
}

/// Where a [`Snapshot`] took its head (protocol, metadata, transactions, domains) from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadSource {
    /// The version's `.crc` file (its URL) and the newest commit file.
    Checksum(String),
    /// The log.
    Log,
}

/// How many live data files a version has and their total size in bytes (`add.size` summed,
/// deletion vectors not subtracted), as the `.crc` file's `numFiles` and `tableSizeBytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSize {
    /// The number of live data files.
    pub num_files: u64,
    /// Their total size in bytes.
    pub size_in_bytes: u64,
}

/// The state of a table at one version. Cheap to clone; never changes (its file list, when
/// replayed on first need, is kept).
#[derive(Clone, Debug)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

#[derive(Debug)]
struct SnapshotInner {
    storage: Storage,
    /// The log files of the version, when known (a refreshed snapshot locates them on need).
    segment: Option<LogSegment>,
    /// The head state; the file list too when [`FileList::InState`].
    state: TableState,
    files: FileList,
    /// The same version loaded with statistics, when they were asked for and the state
    /// lacks them.
    with_stats: tokio::sync::OnceCell<TableState>,
    timestamp_ms: i64,
    config: TableConfiguration,
    /// Set on a snapshot holding only the files that may match this filter.
    matching: Option<Expr>,
    source: HeadSource,
    /// The `.crc` file's file count and size, when the head came from it.
    checksum_size: Option<TableSize>,
}

/// Where a snapshot's file list is.
#[derive(Debug)]
enum FileList {
    /// In the head state: replayed when the snapshot loaded.
    InState,
    /// Replayed on first need.
    Lazy(Box<tokio::sync::OnceCell<TableState>>),
}

impl Snapshot {
    /// Loads the snapshot of the version `at` names, its file list replayed now.
    pub(crate) async fn load(storage: &Storage, at: SnapshotAt) -> Result<Snapshot> {
        let segment =
            crate::log::locate_segment(storage, target_version(storage, at).await?).await?;
        Snapshot::load_segment(storage, segment).await
    }

    /// Loads the snapshot of the version `segment` makes, its file list replayed now.
    pub(crate) async fn load_segment(storage: &Storage, segment: LogSegment) -> Result<Snapshot> {
        let table = storage.root_url().as_str();
        let state = load_segment(storage, table, &segment, false, None).await?;
        let file_time = segment.file_time_ms;
        let loaded = Loaded::replayed(state, file_time).in_segment(segment);
        Snapshot::new(storage.clone(), loaded)
    }

    /// Loads the head of the version `at` names; the file list is replayed on first need.
    /// The head comes from the version's `.crc` file and newest commit when they are usable
    /// (see [`from_checksum`]), else from the log without the file actions.
    pub(crate) async fn load_lazy(storage: &Storage, at: SnapshotAt) -> Result<Snapshot> {
        let target = target_version(storage, at).await?;
        let segment = crate::log::locate_segment(storage, target).await?;
        let file_time = segment.file_time_ms;
        let loaded = match from_checksum::head(storage, &segment).await? {
            Some(head) => Loaded {
                state: head.state,
                file_time,
                files: FileList::Lazy(Box::default()),
                segment: None,
                source: HeadSource::Checksum(head.checksum_url),
                checksum_size: Some(head.size),
                matching: None,
            },
            None => {
                let table = storage.root_url().as_str();
                let state = load_segment_without_files(storage, table, &segment).await?;
                Loaded {
                    files: FileList::Lazy(Box::default()),
                    ..Loaded::replayed(state, file_time)
                }
            }
        };
        Snapshot::new(storage.clone(), loaded.in_segment(segment))
    }

    /// The snapshot of the version `at` names holding only the files that may match `filter`
    /// (see [`crate::table::Table::snapshot_matching`]).
    pub(crate) async fn load_matching(
        storage: &Storage,
        at: SnapshotAt,
        filter: &Expr,
    ) -> Result<Snapshot> {
        let segment =
            crate::log::locate_segment(storage, target_version(storage, at).await?).await?;
        let table = storage.root_url().as_str();
        let state = load_segment_matching(storage, table, &segment, filter).await?;
        let loaded = Loaded {
            matching: Some(filter.clone()),
            ..Loaded::replayed(state, segment.file_time_ms)
        };
        Snapshot::new(storage.clone(), loaded.in_segment(segment))
    }

    fn new(storage: Storage, loaded: Loaded) -> Result<Self> {
        let state = loaded.state;
        let config = TableConfiguration::try_new(
            state.protocol.clone(),
            state.metadata.clone(),
            storage.root_url().as_str(),
        )?;
        let timestamp_ms = commit_timestamp(state.commit_info.as_ref(), loaded.file_time);
        Ok(Snapshot {
            inner: Arc::new(SnapshotInner {
                storage,
                segment: loaded.segment,
                state,
                files: loaded.files,
                with_stats: tokio::sync::OnceCell::new(),
                timestamp_ms,
                config,
                matching: loaded.matching,
                source: loaded.source,
                checksum_size: loaded.checksum_size,
            }),
        })
    }

    /// The store of the table this snapshot belongs to.
    pub fn storage(&self) -> &Storage {
        &self.inner.storage
    }

    /// The table root as a URL ending in `/`.
    pub fn table_uri(&self) -> &str {
        self.inner.storage.root_url().as_str()
    }

    /// The version of the snapshot.
    pub fn version(&self) -> u64 {
        self.inner.state.version
    }

    /// When the version was committed, in ms since the epoch: the in-commit timestamp when the
    /// writer recorded one, else the modification time of the commit file made monotonic (see
    /// `crate::log::timestamps`).
    pub fn timestamp_ms(&self) -> i64 {
        self.inner.timestamp_ms
    }

    /// Where the head was read from.
    pub fn source(&self) -> &HeadSource {
        &self.inner.source
    }

    /// The table's protocol at this version.
    pub fn protocol(&self) -> &Protocol {
        self.inner.config.protocol()
    }

    /// The table's metadata at this version.
    pub fn metadata(&self) -> &Metadata {
        self.inner.config.metadata()
    }

    /// The validated protocol and metadata of this version: features, typed properties, the
    /// logical and physical schema.
    pub fn table_configuration(&self) -> &TableConfiguration {
        &self.inner.config
    }

    /// The logical schema (empty when `metaData` has no `schemaString`).
    pub fn schema(&self) -> &StructType {
        self.inner.config.schema()
    }

    /// The logical schema as Arrow.
    pub fn arrow_schema(&self) -> SchemaRef {
        self.inner.config.arrow_schema()
    }

    /// The column mapping mode (`delta.columnMapping.mode`).
    pub fn column_mapping(&self) -> ColumnMappingMode {
        self.inner.config.column_mapping()
    }

    /// The partition columns, in order.
    pub fn partition_columns(&self) -> &[String] {
        self.inner.config.partition_columns()
    }

    /// The commit information of this version, when its commit file was read.
    pub fn commit_info(&self) -> Option<&CommitInfo> {
        self.inner.state.commit_info.as_ref()
    }

    /// The newest version recorded for `app_id` by a `txn` action.
    pub fn transaction_version(&self, app_id: &str) -> Option<i64> {
        self.inner.state.txns.get(app_id).map(|txn| txn.version)
    }

    /// All `txn` app ids with their versions.
    pub fn transactions(&self) -> HashMap<String, i64> {
        transactions_of(&self.inner.state)
    }

    /// The configuration of `domain`, or `None` when it is absent or removed.
    pub fn domain_metadata(&self, domain: &str) -> Option<&str> {
        let domain = self.inner.state.domains.get(domain).filter(|d| !d.removed);
        domain.map(|d| d.configuration.as_str())
    }

    /// The live domains and their configurations.
    pub fn domains(&self) -> HashMap<String, String> {
        live_domains(&self.inner.state)
    }

    /// True when the file list is in hand: replayed when the snapshot loaded, or since.
    pub fn files_replayed(&self) -> bool {
        match &self.inner.files {
            FileList::InState => true,
            FileList::Lazy(replayed) => replayed.initialized(),
        }
    }

    /// The file count and size from the version's `.crc` file, when the head came from it
    /// ([`HeadSource::Checksum`]); never replays the file list.
    pub fn table_size_from_checksum(&self) -> Option<TableSize> {
        self.inner.checksum_size
    }

    /// The file count and size: counted from the file list when it is in hand, else the
    /// `.crc` file's when the head came from it, else counted from the file list replayed
    /// now (a replay contradicting the `.crc` file is an [`Error::ChecksumMismatch`]).
    pub async fn table_size(&self) -> Result<TableSize> {
        match self.inner.checksum_size {
            Some(size) if !self.files_replayed() => Ok(size),
            _ => Ok(TableSize {
                num_files: self.num_files().await? as u64,
                size_in_bytes: u64::try_from(self.total_size().await?).unwrap_or_default(),
            }),
        }
    }

    /// The number of live files (replaying the file list on first need).
    pub async fn num_files(&self) -> Result<usize> {
        let adds = &self.replayed().await?.files.adds;
        Ok(adds.iter().map(|batch| batch.len()).sum())
    }

    /// The live `add` actions, as filtered struct arrays (the internal layout of
    /// `crate::actions::layout::add_fields`), replaying the file list on first need.
    pub async fn add_actions(&self) -> Result<&[StructArray]> {
        Ok(&self.replayed().await?.files.adds)
    }

    /// The tombstones (`remove` actions still in the state, for vacuum), replaying the file
    /// list on first need.
    pub async fn remove_actions(&self) -> Result<&[StructArray]> {
        Ok(&self.replayed().await?.files.removes)
    }

    /// The sum of the sizes of the live files, in bytes (replaying the file list on first
    /// need).
    pub async fn total_size(&self) -> Result<i64> {
        let adds = self.add_actions().await?;
        Ok(crate::replay::file_list::total_size(adds))
    }

    /// The live files, one row per file (see `crate::replay::file_list` for the columns).
    ///
    /// Snapshots are loaded without the JSON statistics of their files (only `numRecords` is
    /// kept); asking for statistics reads them once and keeps them with the snapshot.
    pub async fn files(&self, with_stats: bool) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let options = FileListOptions {
            with_stats,
            ..FileListOptions::default()
        };
        self.file_list(&options).await
    }

    /// The live files, as [`Snapshot::files`] with every option.
    pub async fn file_list(
        &self,
        options: &FileListOptions,
    ) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let adds = match options.with_stats {
            true => &self.state_with_stats().await?.files.adds,
            false => self.add_actions().await?,
        };
        active_files(self.table_configuration(), adds, options)
    }

    /// True for a snapshot holding only the files that may match a filter.
    pub(crate) fn is_filtered(&self) -> bool {
        self.inner.matching.is_some()
    }

    /// The reconciled state of this version with its file list (without the files' `stats`
    /// strings unless the snapshot was loaded with them), replayed on first need. A replay of
    /// a snapshot whose head came from a `.crc` file checks the file: a replayed protocol,
    /// metadata, transactions or domains that differ from it are an
    /// [`Error::ChecksumMismatch`] naming the file and the fields.
    pub(crate) async fn replayed(&self) -> Result<&TableState> {
        match &self.inner.files {
            FileList::InState => Ok(&self.inner.state),
            FileList::Lazy(replayed) => replayed.get_or_try_init(|| self.replay(false)).await,
        }
    }

    /// The live `add` actions with their `stats` strings (read once and kept, as for
    /// [`Snapshot::files`] with statistics), in the order [`Snapshot::file_list`] with
    /// statistics lists them.
    pub(crate) async fn add_actions_with_stats(&self) -> Result<&[StructArray]> {
        Ok(&self.state_with_stats().await?.files.adds)
    }

    /// The state of this version with the `stats` strings of its files.
    pub(crate) async fn state_with_stats(&self) -> Result<&TableState> {
        let state = &self.inner.state;
        if state.has_stats && matches!(self.inner.files, FileList::InState) {
            return Ok(state);
        }
        let load = || self.replay(true);
        self.inner.with_stats.get_or_try_init(load).await
    }

    /// The log files that make this version (located anew for a refreshed snapshot).
    pub(crate) async fn log_segment(&self) -> Result<LogSegment> {
        match &self.inner.segment {
            Some(segment) => Ok(segment.clone()),
            None => crate::log::locate_segment(self.storage(), Some(self.version())).await,
        }
    }

    /// The file list of this version read from the log (with the files' `stats` strings
    /// when `with_stats`), checked against the `.crc` file the head came from.
    async fn replay(&self, with_stats: bool) -> Result<TableState> {
        let storage = self.storage();
        let segment = self.log_segment().await?;
        let state = load_segment(storage, self.table_uri(), &segment, with_stats, None).await?;
        if let HeadSource::Checksum(crc) = &self.inner.source {
            let differences = from_checksum::differences(&self.inner.state, &state);
            if !differences.is_empty() {
                return Err(Error::ChecksumMismatch {
                    path: crc.clone(),
                    reason: differences.join("; "),
                });
            }
        }
        Ok(state)
    }

    /// The snapshot of the newest version, reading only the commits added since this one.
    /// Falls back to a full load when those commits cannot all be read (a gap, or a cleanup).
    /// A snapshot whose file list is not yet replayed refreshes to a snapshot of the same
    /// kind, loaded anew.
    pub async fn refresh(&self) -> Result<Snapshot> {
        self.refresh_up_to(None).await
    }

    /// The snapshot of `version` (not before this one), reading only the commits added since
    /// this one, as [`Snapshot::refresh`] does.
    pub async fn refresh_to(&self, version: u64) -> Result<Snapshot> {
        self.refresh_up_to(Some(version)).await
    }

    async fn refresh_up_to(&self, target: Option<u64>) -> Result<Snapshot> {
        let storage = self.storage();
        let at = target.map_or(SnapshotAt::Latest, SnapshotAt::Version);
        if let Some(filter) = &self.inner.matching {
            return Snapshot::load_matching(storage, at, filter).await;
        }
        let start = self.version() + 1;
        let listing =
            crate::log::list_log_from(storage, start.saturating_sub(MONOTONIC_LOOKBACK)).await?;
        let newest = latest_version(&listing).map(|newest| target.unwrap_or(newest).min(newest));
        let Some(newest) = newest.filter(|newest| *newest >= start) else {
            return Ok(self.clone());
        };
        if !self.files_replayed() {
            return Snapshot::load_lazy(storage, SnapshotAt::Version(newest)).await;
        }
        let Ok(range) = CommitRange::from_listing(self.table_uri(), &listing, start, newest) else {
            return Snapshot::load(storage, at).await;
        };
        let base = self.replayed().await?.clone();
        let file_time = range.file_times().last().copied().unwrap_or_default();
        let files = range.read_all(storage).await?;
        let deltas = decode_commits(files, base.has_stats).await?;
        let keys = FileKeys::new(storage.root_url());
        let table = self.table_uri();
        let state = fold_state_async(table, newest, deltas, None, Some(base), keys).await?;
        Snapshot::new(storage.clone(), Loaded::replayed(state, file_time))
    }
}

/// What a load found, before it becomes a [`Snapshot`].
struct Loaded {
    state: TableState,
    /// The modification time of the version's commit file (ms).
    file_time: i64,
    files: FileList,
    segment: Option<LogSegment>,
    source: HeadSource,
    checksum_size: Option<TableSize>,
    matching: Option<Expr>,
}

impl Loaded {
    /// A state replayed from the log, files included.
    fn replayed(state: TableState, file_time: i64) -> Loaded {
        Loaded {
            state,
            file_time,
            files: FileList::InState,
            segment: None,
            source: HeadSource::Log,
            checksum_size: None,
            matching: None,
        }
    }

    /// The same, remembering the log files of the version.
    fn in_segment(self, segment: LogSegment) -> Loaded {
        Loaded {
            segment: Some(segment),
            ..self
        }
    }
}

/// The `txn` app ids of `state` with their versions.
fn transactions_of(state: &TableState) -> HashMap<String, i64> {
    let txns = state.txns.iter();
    txns.map(|(app, txn)| (app.clone(), txn.version)).collect()
}

/// The live domains of `state` and their configurations.
fn live_domains(state: &TableState) -> HashMap<String, String> {
    let live = state.domains.values().filter(|d| !d.removed);
    live.map(|d| (d.domain.clone(), d.configuration.clone()))
        .collect()
}

/// The version `at` names (`None`: the latest).
pub(crate) async fn target_version(storage: &Storage, at: SnapshotAt) -> Result<Option<u64>> {
    Ok(match at {
        SnapshotAt::Latest => None,
        SnapshotAt::Version(version) => Some(version),
        SnapshotAt::Timestamp(timestamp_ms) => {
            Some(crate::log::version_at(storage, timestamp_ms).await?)
        }
    })
}
