//! An immutable snapshot of one table version (spec "Action Reconciliation").

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::actions::{CommitInfo, Metadata, Protocol};
use crate::error::Result;
use crate::expr::Expr;
use crate::log::commit_range::CommitRange;
use crate::log::segment::{latest_version, LogSegment};
use crate::log::timestamps::{commit_timestamp, MONOTONIC_LOOKBACK};
use crate::replay::file_list::{active_files, FileListOptions};
use crate::replay::load::{
    decode_commits, fold_state_async, load_segment, load_segment_matching, TableState,
};
use crate::replay::reconcile::FileKeys;
use crate::schema::{ColumnMappingMode, StructType};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;
use arrow_array::{Array, RecordBatch};

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

/// The state of a table at one version. Cheap to clone; never changes.
#[derive(Clone, Debug)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

#[derive(Debug)]
struct SnapshotInner {
    storage: Storage,
    state: TableState,
    /// The same version loaded with statistics, when they were asked for and `state` lacks them.
    with_stats: tokio::sync::OnceCell<TableState>,
    timestamp_ms: i64,
    config: TableConfiguration,
    /// Set on a snapshot holding only the files that may match this filter.
    matching: Option<Expr>,
}

impl Snapshot {
    /// Loads the snapshot of the version `at` names from the table on `storage`.
    pub(crate) async fn load(storage: &Storage, at: SnapshotAt) -> Result<Snapshot> {
        let segment =
            crate::log::locate_segment(storage, target_version(storage, at).await?).await?;
        Snapshot::load_segment(storage, &segment).await
    }

    /// Loads the snapshot of the version `segment` makes.
    pub(crate) async fn load_segment(storage: &Storage, segment: &LogSegment) -> Result<Snapshot> {
        let table = storage.root_url().as_str();
        let state = load_segment(storage, table, segment, false, None).await?;
        Snapshot::from_state(storage.clone(), state, segment.file_time_ms, None)
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
        Snapshot::new_matching(storage.clone(), state, &segment, filter.clone())
    }

    /// A snapshot of the files of `state`, judged against `filter` while loading (see
    /// [`crate::table::Table::snapshot_matching`]); `state` holds statistics.
    fn new_matching(
        storage: Storage,
        state: TableState,
        segment: &LogSegment,
        filter: Expr,
    ) -> Result<Self> {
        Snapshot::from_state(storage, state, segment.file_time_ms, Some(filter))
    }

    fn from_state(
        storage: Storage,
        state: TableState,
        commit_file_time: i64,
        matching: Option<Expr>,
    ) -> Result<Self> {
        let config = TableConfiguration::try_new(
            state.protocol.clone(),
            state.metadata.clone(),
            storage.root_url().as_str(),
        )?;
        let timestamp_ms = commit_timestamp(state.commit_info.as_ref(), commit_file_time);
        Ok(Snapshot {
            inner: Arc::new(SnapshotInner {
                storage,
                state,
                with_stats: tokio::sync::OnceCell::new(),
                timestamp_ms,
                config,
                matching,
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

    /// The number of live files.
    pub fn num_files(&self) -> usize {
        self.inner.state.files.adds.iter().map(|a| a.len()).sum()
    }

    /// The live `add` actions, as filtered struct arrays (the internal layout of
    /// `crate::actions::layout::add_fields`).
    pub fn add_actions(&self) -> &[arrow_array::StructArray] {
        &self.inner.state.files.adds
    }

    /// The tombstones (`remove` actions still in the state, for vacuum).
    pub fn remove_actions(&self) -> &[arrow_array::StructArray] {
        &self.inner.state.files.removes
    }

    /// The sum of the sizes of the live files, in bytes.
    pub fn total_size(&self) -> i64 {
        crate::replay::file_list::total_size(self.add_actions())
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
            false => self.add_actions(),
        };
        active_files(self.table_configuration(), adds, options)
    }

    /// True for a snapshot holding only the files that may match a filter.
    pub(crate) fn is_filtered(&self) -> bool {
        self.inner.matching.is_some()
    }

    /// The reconciled state of this version (files without their `stats` strings unless the
    /// snapshot was loaded with them).
    pub(crate) fn state(&self) -> &TableState {
        &self.inner.state
    }

    /// The live `add` actions with their `stats` strings (read once and kept, as for
    /// [`Snapshot::files`] with statistics), in the order [`Snapshot::file_list`] with
    /// statistics lists them.
    pub(crate) async fn add_actions_with_stats(&self) -> Result<&[arrow_array::StructArray]> {
        Ok(&self.state_with_stats().await?.files.adds)
    }

    /// The state of this version with the `stats` strings of its files.
    pub(crate) async fn state_with_stats(&self) -> Result<&TableState> {
        let state = &self.inner.state;
        if state.has_stats {
            return Ok(state);
        }
        self.inner
            .with_stats
            .get_or_try_init(|| async {
                let storage = self.storage();
                let segment = crate::log::locate_segment(storage, Some(state.version)).await?;
                load_segment(storage, self.table_uri(), &segment, true, None).await
            })
            .await
    }

    /// The newest version recorded for `app_id` by a `txn` action.
    pub fn transaction_version(&self, app_id: &str) -> Option<i64> {
        self.inner.state.txns.get(app_id).map(|txn| txn.version)
    }

    /// All `txn` app ids with their versions.
    pub fn transactions(&self) -> HashMap<String, i64> {
        let txns = &self.inner.state.txns;
        txns.iter()
            .map(|(app, txn)| (app.clone(), txn.version))
            .collect()
    }

    /// The configuration of `domain`, or `None` when it is absent or removed.
    pub fn domain_metadata(&self, domain: &str) -> Option<&str> {
        self.inner
            .state
            .domains
            .get(domain)
            .filter(|d| !d.removed)
            .map(|d| d.configuration.as_str())
    }

    /// The live domains and their configurations.
    pub fn domains(&self) -> HashMap<String, String> {
        let domains = self.inner.state.domains.values();
        domains
            .filter(|d| !d.removed)
            .map(|d| (d.domain.clone(), d.configuration.clone()))
            .collect()
    }

    /// The snapshot of the newest version, reading only the commits added since this one.
    /// Falls back to a full load when those commits cannot all be read (a gap, or a cleanup).
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
        let Ok(range) = CommitRange::from_listing(self.table_uri(), &listing, start, newest) else {
            return Snapshot::load(storage, at).await;
        };
        let file_time = range.file_times().last().copied().unwrap_or_default();
        let files = range.read_all(storage).await?;
        let deltas = decode_commits(files, self.inner.state.has_stats).await?;
        let keys = FileKeys::new(storage.root_url());
        let base = Some(self.inner.state.clone());
        let state = fold_state_async(self.table_uri(), newest, deltas, None, base, keys).await?;
        Snapshot::from_state(storage.clone(), state, file_time, None)
    }
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
