//! Writing to a table: transactions, the atomic commit, conflict checks and retries (spec
//! "Writer Requirements", "Table Features", "Commit Provenance Information", "Row Tracking",
//! "Domain Metadata", "Set Transaction Identifiers", "Action Reconciliation"; reliability
//! notes §1 and §2).
//!
//! A [`Transaction`] starts from what it reads: a [`Snapshot`] ([`Snapshot::transaction`],
//! [`Table::transaction`](crate::Table::transaction)), the non-file state a blind append needs
//! ([`Table::append_transaction`](crate::Table::append_transaction), which never builds the file list), or nothing when it
//! creates the table ([`Table::create_transaction`](crate::Table::create_transaction), [`Table::create`](crate::Table::create)). It stages file
//! actions as Arrow rows of the internal add/remove layout, `txn` versions, domain metadata,
//! metadata and protocol changes, and records what it read. [`Transaction::commit`] checks
//! the commit (writer features, append-only, action reconciliation), writes it in one
//! put-if-absent through a [`Committer`], and when another writer won the version, reads the
//! winners once, checks them (`conflict`), rebases (row ids, in-commit timestamp) and
//! retries at the newest version, with jittered backoff, up to a limit.

pub(crate) mod committer;
#[cfg(feature = "internal-api")]
pub mod conflict;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod conflict;
mod data;

mod access;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use arrow::compute::filter;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, StructArray};
use bytes::Bytes;
use serde_json::{Map, Value};

use crate::actions::layout::{add, cdc_fields, in_add_layout};
use crate::actions::{CommitInfo, DomainMetadata, Format, Metadata, Protocol, Txn};
use crate::error::{ConflictKind, Error, Result};
use crate::expr::{files_may_match, Expr};
use crate::log::commit_range::CommitRange;
use crate::log::decode::commit::{decode_actions, DecodeOptions};
use crate::log::encode;
use crate::log::segment::latest_version;
use crate::log::timestamps::MONOTONIC_LOOKBACK;
use crate::maintenance::manifest::SYMLINK_MANIFEST_KEY;
use crate::maintenance::post_commit::{
    Committed, PostCommitError, PostCommitOptions, PostCommitResult, PostCommitStep,
};
use crate::replay::file_list::{file_list_stats, FileListOptions};
use crate::replay::reconcile::FileKeys;
use crate::schema::from_arrow::max_column_id;
use crate::schema::{ColumnMappingMode, StructType};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::clustering::{
    clustering_columns, ensure_clustering_stats, CLUSTERING_DOMAIN,
};
use crate::table_config::iceberg;
use crate::table_config::properties::{
    IsolationLevel, TableProperties, COLUMN_MAPPING_MAX_COLUMN_ID,
    IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP, IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION,
    ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
    ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME,
};
use crate::table_config::writing::{
    is_protocol_key, least_protocol, requested_versions, required_features, upgrade_protocol,
};
use crate::table_config::{TableConfiguration, TableFeature};
use crate::util::time::now_ms;

pub use crate::log::encode::AddFile;
pub use committer::{CommitOutcome, Committer, FileSystemCommitter};
pub(crate) use conflict::ROW_TRACKING_DOMAIN;
pub use data::TableTransaction;
pub(crate) use data::{add_file, stage_identity_high_water_marks, DATA_WRITER_FEATURES};

/// `commitInfo.engineInfo` of every commit this library writes.
pub(crate) const ENGINE_INFO: &str = concat!("deltalog/", env!("CARGO_PKG_VERSION"));

/// How a transaction commits: the committer, and how often and how patiently it retries
/// after losing a race.
#[derive(Debug, Clone)]
pub struct CommitOptions {
    /// The committer writing the commit file.
    pub committer: Arc<dyn Committer>,
    /// How many times to rebase and retry after losing the race for a version (and to retry
    /// a version whose write failed without landing). Default 1,000: a writer among many
    /// faster ones may lose hundreds of rounds before it wins one (Delta on Spark's
    /// `maxCommitAttempts` is 10 million); each round reads only the commits that won.
    pub max_retries: u32,
    /// The first backoff before a retry; it doubles each retry, with jitter. Default 10 ms.
    pub backoff_base: Duration,
    /// The longest backoff. Default 1 s.
    pub backoff_max: Duration,
    /// The work done once the commit landed: checksum, checkpoint, log cleanup (all on).
    pub post_commit: PostCommitOptions,
}

impl Default for CommitOptions {
    fn default() -> Self {
        CommitOptions {
            committer: Arc::new(FileSystemCommitter),
            max_retries: 1_000,
            backoff_base: Duration::from_millis(10),
            backoff_max: Duration::from_secs(1),
            post_commit: PostCommitOptions::default(),
        }
    }
}

impl CommitOptions {
    /// The default options with every post-commit step off.
    pub fn without_post_commit_work() -> CommitOptions {
        CommitOptions {
            post_commit: PostCommitOptions::none(),
            ..CommitOptions::default()
        }
    }
}

/// What a transaction, a write or an operation committed.
#[derive(Debug, Clone)]
pub struct CommitResult {
    /// The version committed, or the table's version when nothing was committed.
    pub version: u64,
    /// False when nothing was committed ([`crate::WriteMode::Ignore`] on an existing table, an
    /// application version already committed, a DELETE that matched no row).
    pub committed: bool,
    /// How many times the commit was retried after losing a race.
    pub retries: u32,
    /// The `commitInfo.txnId` of the commit; `None` when nothing was committed.
    pub txn_id: Option<String>,
    /// The snapshot of the committed version, refreshed from the snapshot read (loaded at
    /// version 0 for a created table); `None` for a transaction that started without one
    /// ([`Table::append_transaction`](crate::Table::append_transaction)), or when loading it
    /// failed after the commit landed (then a [`PostCommitStep::Snapshot`] error in
    /// `post_commit`: the commit stands).
    pub snapshot: Option<Snapshot>,
    /// The operation's metrics: `numFiles` and `numRemovedFiles` (the add and remove actions
    /// committed) for every commit; a write adds `numOutputRows` and `numOutputBytes`, a
    /// row-level operation reports Spark's metrics instead.
    pub metrics: BTreeMap<String, u64>,
    /// What the post-commit steps did, and which of them failed (the commit stands; empty
    /// when nothing was committed).
    pub post_commit: PostCommitResult,
}

impl CommitResult {
    /// Nothing committed: the table stays at `version` (`snapshot`, when one was read).
    pub(crate) fn unchanged(version: u64, snapshot: Option<Snapshot>) -> CommitResult {
        CommitResult {
            version,
            committed: false,
            retries: 0,
            txn_id: None,
            snapshot,
            metrics: BTreeMap::new(),
            post_commit: PostCommitResult::default(),
        }
    }
}

/// A new table: what version 0 holds.
#[derive(Debug, Clone, Default)]
pub struct TableSpec {
    pub schema: StructType,
    pub partition_columns: Vec<String>,
    /// Table properties; `delta.minReaderVersion`, `delta.minWriterVersion` and
    /// `delta.feature.<name>` steer the protocol and are not stored.
    pub configuration: HashMap<String, String>,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// A metadata change: each `Some` replaces that part of the table's metadata;
/// `configuration` entries are set (a `None` value removes the key).
#[derive(Debug, Clone, Default)]
pub struct MetadataUpdate {
    pub schema: Option<StructType>,
    pub configuration: Vec<(String, Option<String>)>,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// A pending write to one table. Built by [`Snapshot::transaction`],
/// [`Table::transaction`](crate::Table::transaction), [`Table::append_transaction`](crate::Table::append_transaction) or [`Table::create_transaction`](crate::Table::create_transaction);
/// nothing is written until [`Transaction::commit`].
#[derive(Debug)]
pub struct Transaction {
    storage: Storage,
    read: ReadBase,
    operation: String,
    operation_parameters: Map<String, Value>,
    operation_metrics: Map<String, Value>,
    commit_info: Map<String, Value>,
    isolation_level: Option<IsolationLevel>,
    options: CommitOptions,
    data_writer_features: Vec<TableFeature>,
    adds: Vec<StructArray>,
    removes: Vec<StructArray>,
    cdc: Vec<StructArray>,
    txns: Vec<Txn>,
    domains: Vec<DomainMetadata>,
    metadata: Option<Metadata>,
    protocol: Option<Protocol>,
    read_predicates: Vec<Expr>,
    read_files: HashSet<String>,
    read_whole_table: bool,
    read_app_ids: HashSet<String>,
}

/// What the transaction read: the state of its read version.
#[derive(Debug, Clone)]
struct ReadBase {
    /// `None` when the transaction creates the table.
    version: Option<u64>,
    config: Option<TableConfiguration>,
    txns: HashMap<String, i64>,
    domains: HashMap<String, DomainMetadata>,
    /// The commit timestamp of the read version.
    timestamp_ms: Option<i64>,
    snapshot: Option<Snapshot>,
}

impl Snapshot {
    /// A transaction reading this snapshot, for the operation named `operation` (`WRITE`,
    /// `DELETE`, ..., as `commitInfo.operation`).
    pub fn transaction(&self, operation: &str) -> Transaction {
        let read = ReadBase {
            version: Some(self.version()),
            config: Some(self.table_configuration().clone()),
            txns: self.transactions(),
            domains: self
                .domains()
                .into_iter()
                .map(|(domain, configuration)| {
                    let action = DomainMetadata {
                        domain: domain.clone(),
                        configuration,
                        removed: false,
                    };
                    (domain, action)
                })
                .collect(),
            timestamp_ms: Some(self.timestamp_ms()),
            snapshot: Some(self.clone()),
        };
        Transaction::new(self.storage().clone(), read, operation)
    }
}

/// A transaction reading the latest snapshot of the table on `storage`
/// ([`crate::Table::transaction`]).
pub(crate) async fn latest_transaction(storage: &Storage, operation: &str) -> Result<Transaction> {
    Ok(Snapshot::load(storage, SnapshotAt::Latest)
        .await?
        .transaction(operation))
}

/// A transaction for a blind append to the latest version of the table on `storage`, on a
/// lazy snapshot ([`crate::Table::append_transaction`]).
pub(crate) async fn append_transaction(storage: &Storage, operation: &str) -> Result<Transaction> {
    let snapshot = Snapshot::load_lazy(storage, SnapshotAt::Latest).await?;
    Ok(snapshot.transaction(operation))
}

/// A transaction creating the table at version 0 with `spec` (operation `CREATE TABLE`);
/// files may be added to it. The protocol is the least one covering the features the
/// metadata uses (`least_protocol`).
///
/// Errors: [`Error::NotAllowed`] when the location already holds a Delta log;
/// [`Error::InvalidArgument`] for partition columns not in the schema, or column mapping
/// asked for on a schema without physical names and ids. A creator that loses the race
/// for version 0 gets an [`Error::CommitConflict`] of kind
/// [`ConflictKind::ProtocolChanged`] from [`Transaction::commit`], as Delta on Spark.
pub(crate) async fn create_transaction(storage: &Storage, spec: TableSpec) -> Result<Transaction> {
    if crate::log::has_log_files(storage).await? {
        return Err(Error::NotAllowed(format!(
            "a Delta table already exists at {}",
            storage.uri()
        )));
    }
    let metadata = new_metadata(&spec)?;
    let schema = &spec.schema;
    let (reader, writer) = requested_versions(&spec.configuration);
    let protocol = least_protocol(
        &required_features(&spec_metadata(&spec)?, schema),
        reader,
        writer,
    );
    let read = ReadBase {
        version: None,
        config: None,
        txns: HashMap::new(),
        domains: HashMap::new(),
        timestamp_ms: None,
        snapshot: None,
    };
    let mut metadata = metadata;
    name_row_tracking_columns(&mut metadata, &protocol);
    let mut transaction = Transaction::new(storage.clone(), read, "CREATE TABLE");
    transaction.metadata = Some(metadata);
    transaction.protocol = Some(protocol);
    let partition_by = serde_json::to_string(&spec.partition_columns).unwrap_or_default();
    transaction
        .operation_parameters
        .insert("partitionBy".into(), Value::String(partition_by));
    transaction
        .operation_parameters
        .insert("isManaged".into(), Value::String("false".into()));
    Ok(transaction)
}

impl Transaction {
    fn new(storage: Storage, read: ReadBase, operation: &str) -> Transaction {
        Transaction {
            storage,
            read,
            operation: operation.to_string(),
            operation_parameters: Map::new(),
            operation_metrics: Map::new(),
            commit_info: Map::new(),
            isolation_level: None,
            options: CommitOptions::default(),
            data_writer_features: Vec::new(),
            adds: Vec::new(),
            removes: Vec::new(),
            cdc: Vec::new(),
            txns: Vec::new(),
            domains: Vec::new(),
            metadata: None,
            protocol: None,
            read_predicates: Vec::new(),
            read_files: HashSet::new(),
            read_whole_table: false,
            read_app_ids: HashSet::new(),
        }
    }

    /// The version read (`None` when creating the table).
    pub fn read_version(&self) -> Option<u64> {
        self.read.version
    }

    /// Sets an entry of `commitInfo.operationParameters` (Delta on Spark writes strings).
    pub fn with_operation_parameter(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.operation_parameters
            .insert(key.to_string(), value.into());
        self
    }

    /// Sets an entry of `commitInfo.operationMetrics`, replacing the computed one.
    pub fn with_operation_metric(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.operation_metrics.insert(key.to_string(), value.into());
        self
    }

    /// Adds a field to `commitInfo` (the fields this library writes cannot be replaced).
    pub fn with_commit_info(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.commit_info.insert(key.to_string(), value.into());
        self
    }

    /// Sets the tag `key` of `commitInfo.tags` (a map of strings, as Delta on Spark writes
    /// it), keeping the other tags.
    pub(crate) fn set_commit_tag(&mut self, key: &str, value: &str) {
        let tags = self
            .commit_info
            .entry("tags")
            .or_insert_with(|| Value::Object(Map::new()));
        if !tags.is_object() {
            *tags = Value::Object(Map::new());
        }
        if let Value::Object(tags) = tags {
            tags.insert(key.to_string(), Value::from(value));
        }
    }

    /// Whether the transaction stages a `metaData` action.
    pub(crate) fn stages_metadata(&self) -> bool {
        self.metadata.is_some()
    }

    /// The schema of the staged `metaData`, when one is staged.
    pub(crate) fn staged_schema(&self) -> Result<Option<StructType>> {
        let Some(metadata) = &self.metadata else {
            return Ok(None);
        };
        crate::table_config::logical_schema(metadata, self.storage.uri()).map(Some)
    }

    /// Overrides the isolation level (`delta.isolationLevel`, else `WriteSerializable`).
    pub fn with_isolation_level(mut self, level: IsolationLevel) -> Self {
        self.isolation_level = Some(level);
        self
    }

    /// Sets the committer and the retry policy.
    pub fn with_commit_options(mut self, options: CommitOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets which post-commit steps run after the commit (checksum, checkpoint, log cleanup).
    pub fn set_post_commit_options(&mut self, options: PostCommitOptions) {
        self.options.post_commit = options;
    }

    /// The hook of the data writer: the writer features whose per-row or per-file duties
    /// (invariants, CHECK constraints, generated, identity and default columns, physical
    /// column names, clustering statistics) the writer of the added files enforced. A
    /// commit adding data to a table that uses one of them is refused unless it is listed
    /// here (see [`TableConfiguration::ensure_writable`]).
    pub fn with_data_writer_features(mut self, features: Vec<TableFeature>) -> Self {
        self.data_writer_features = features;
        self
    }

    /// Stages files to add: rows of the internal add layout
    /// (`crate::actions::layout::add_fields`; paths URL-encoded, `numRecords` set when row
    /// tracking needs it), such as `encode::add_rows` builds or a snapshot's
    /// [`Snapshot::add_actions`] holds (children beyond the layout, such as a checkpoint's
    /// `partitionValues_parsed`, are dropped). Rows in another layout are an
    /// [`Error::Internal`]: only this crate builds them.
    pub fn add_files(&mut self, adds: StructArray) -> Result<()> {
        let Some(adds) = in_add_layout(&adds) else {
            return Err(Error::internal(
                self.storage.uri(),
                format!(
                    "added files must be in the add layout of action_schema::add_fields, not \
                     the fields {}",
                    field_names(adds.fields())
                ),
            ));
        };
        self.adds.push(adds);
        Ok(())
    }

    /// Stages the files described by `files` (see `encode::add_rows`).
    pub fn add(&mut self, files: &[AddFile]) -> Result<()> {
        let rows = encode::add_rows(files)?;
        self.add_files(rows)
    }

    /// Stages change data files: rows of `crate::actions::layout::cdc_fields`.
    pub fn add_cdc_files(&mut self, cdc: StructArray) -> Result<()> {
        if cdc.fields() != &cdc_fields() {
            return Err(Error::internal(
                self.storage.uri(),
                "change data files must be in the layout of action_schema::cdc_fields",
            ));
        }
        self.cdc.push(cdc);
        Ok(())
    }

    /// Stages removes of `files`, rows of the add layout selected from the snapshot read
    /// (its [`Snapshot::add_actions`]), deleted now, with extended file metadata. Reads are
    /// not recorded: the caller that selected the rows records what it read
    /// ([`Transaction::record_read_files`], [`Transaction::record_read_predicate`]).
    pub fn remove_files(&mut self, files: &StructArray, data_change: bool) -> Result<()> {
        self.require_snapshot("remove files")?;
        let removes = encode::removes_from_adds(files, now_ms(), data_change)?;
        self.removes.push(removes);
        Ok(())
    }

    /// Stages removes of the live files of the snapshot read whose paths (as
    /// [`Snapshot::files`] lists them: relative and URL-decoded) are in `paths`. Returns how
    /// many files were found; paths not in the snapshot are an [`Error::InvalidArgument`].
    pub async fn remove_paths(&mut self, wanted: &[&str], data_change: bool) -> Result<usize> {
        let snapshot = self.require_snapshot("remove files")?.clone();
        let wanted: HashSet<&str> = wanted.iter().copied().collect();
        let keys = self.keys();
        let mut found: HashSet<String> = HashSet::new();
        for adds in snapshot.add_actions().await? {
            let Some(column) = adds
                .column_by_name(add::PATH)
                .and_then(|c| c.as_string_opt::<i32>())
            else {
                continue;
            };
            let mask: BooleanArray = (0..adds.len())
                .map(|row| {
                    let key = keys.canonical(column.value(row));
                    let hit = wanted.contains(key.as_ref());
                    if hit {
                        found.insert(key.into_owned());
                    }
                    Some(hit)
                })
                .collect();
            if mask.true_count() > 0 {
                let selected = select(adds, &mask)?;
                self.record_read_files(paths(&selected).iter().map(String::as_str));
                self.remove_files(&selected, data_change)?;
            }
        }
        if let Some(missing) = wanted.iter().find(|path| !found.contains(**path)) {
            return Err(Error::InvalidArgument(format!(
                "{missing} is not a live file of version {} of {}",
                snapshot.version(),
                self.storage.uri()
            )));
        }
        Ok(found.len())
    }

    /// Stages removes of every live file of the snapshot read in the partitions matching
    /// `filter` (`None`: every file), recording the read: `filter` as a read predicate (and
    /// the files), or the whole table. Returns how many files are removed.
    ///
    /// Errors: [`Error::InvalidArgument`] when `filter` names a column that is not a
    /// partition column (removing whole files by a data filter would drop rows that do not
    /// match).
    pub async fn remove_where(
        &mut self,
        filter: Option<&Expr>,
        data_change: bool,
    ) -> Result<usize> {
        let snapshot = self.require_snapshot("remove files")?.clone();
        if let Some(filter) = filter {
            let partition_columns = snapshot.partition_columns();
            let is_partition = |column: &String| {
                partition_columns
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(column))
            };
            if let Some(column) = filter.columns().iter().find(|c| !is_partition(c)) {
                return Err(Error::InvalidArgument(format!(
                    "files can only be removed by a filter on partition columns; {column} is not one"
                )));
            }
        }
        let (_, files) = snapshot.file_list(&FileListOptions::default()).await?;
        let mut removed = 0;
        for (adds, listed) in snapshot.add_actions().await?.iter().zip(&files) {
            let mask = match filter {
                Some(filter) => files_may_match(filter, &file_list_stats(listed)?)?,
                None => BooleanArray::from(vec![true; adds.len()]),
            };
            if mask.true_count() == 0 {
                continue;
            }
            removed += mask.true_count();
            let selected = select(adds, &mask)?;
            self.record_read_files(paths(&selected).iter().map(String::as_str));
            self.remove_files(&selected, data_change)?;
        }
        match filter {
            None => self.read_whole_table = true,
            Some(filter) => self.read_predicates.push(filter.clone()),
        }
        Ok(removed)
    }

    /// Records that what this transaction writes depends on the rows of the snapshot read
    /// matching `filter` (any columns), or on every row (`None`): the filter becomes a read
    /// predicate and the files that may hold such rows read files, so that a concurrent
    /// commit adding rows that may match (under the isolation level's rules) or removing a
    /// file read is a conflict (reliability notes §1.3). Returns how many files were read.
    ///
    /// Errors: [`Error::InvalidArgument`] for a transaction without a snapshot (one creating
    /// the table).
    pub async fn record_read(&mut self, filter: Option<&Expr>) -> Result<usize> {
        let snapshot = self.require_snapshot("record a read")?.clone();
        let Some(filter) = filter else {
            self.read_whole_table = true;
            return snapshot.num_files().await;
        };
        let (_, files) = snapshot.file_list(&FileListOptions::default()).await?;
        let mut read = 0;
        for (adds, listed) in snapshot.add_actions().await?.iter().zip(&files) {
            let mask = files_may_match(filter, &file_list_stats(listed)?)?;
            read += mask.true_count();
            let selected = select(adds, &mask)?;
            self.record_read_files(paths(&selected).iter().map(String::as_str));
        }
        self.read_predicates.push(filter.clone());
        Ok(read)
    }

    /// Records that the transaction read the files matching `predicate` (over partition
    /// columns; see `conflict::check_appends`).
    pub fn record_read_predicate(&mut self, predicate: Expr) {
        self.read_predicates.push(predicate);
    }

    /// Records that the transaction read these files (paths as the log writes them).
    pub fn record_read_files<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) {
        let keys = self.keys();
        for path in paths {
            self.read_files.insert(keys.canonical(path).into_owned());
        }
    }

    /// Records that the transaction read the whole table.
    pub fn record_read_whole_table(&mut self) {
        self.read_whole_table = true;
    }

    /// The version of application `app_id` in the version read (spec "Set Transaction
    /// Identifiers"), recorded as read: a concurrent `txn` of the same application is a
    /// [`ConflictKind::ConcurrentTransaction`].
    pub fn app_version(&mut self, app_id: &str) -> Option<i64> {
        self.read_app_ids.insert(app_id.to_string());
        self.read.txns.get(app_id).copied()
    }

    /// Stages `txn` for `app_id` at `version` (spec "Set Transaction Identifiers"). The
    /// version must be above the one read, which makes a retried write idempotent: the
    /// retry finds its version already there. Errors: [`Error::InvalidArgument`] when
    /// `version` is not above the version recorded, or the id is staged twice.
    pub fn set_app_version(&mut self, app_id: &str, version: i64) -> Result<()> {
        if let Some(current) = self.app_version(app_id).filter(|v| *v >= version) {
            return Err(Error::InvalidArgument(format!(
                "application {app_id} is already at version {current}, not below {version}"
            )));
        }
        if self.txns.iter().any(|txn| txn.app_id == app_id) {
            return Err(Error::InvalidArgument(format!(
                "application {app_id} has a version staged already"
            )));
        }
        self.txns.push(Txn {
            app_id: app_id.to_string(),
            version,
            last_updated: None,
        });
        Ok(())
    }

    /// The configuration of `domain` in the version read, when it is set.
    pub fn domain_metadata(&self, domain: &str) -> Option<&str> {
        self.read
            .domains
            .get(domain)
            .map(|d| d.configuration.as_str())
    }

    /// The configuration `domain` will have after this transaction: staged, else read;
    /// `None` when it is absent or removed.
    fn staged_domain(&self, domain: &str) -> Option<&str> {
        let staged = self.domains.iter().find(|d| d.domain == domain);
        let action = staged.or_else(|| self.read.domains.get(domain))?;
        (!action.removed).then_some(action.configuration.as_str())
    }

    /// Stages the system domain `domain` (a `delta.*` domain this library maintains, such as
    /// `delta.clustering`) set to `configuration`, replacing what was staged for it.
    pub(crate) fn set_system_domain(&mut self, domain: &str, configuration: String) {
        self.domains.retain(|d| d.domain != domain);
        self.domains.push(DomainMetadata {
            domain: domain.to_string(),
            configuration,
            removed: false,
        });
    }

    /// Stages the removal of `domain` (system or user domain, spec "Domain Metadata"), as the
    /// cleanup of `DROP FEATURE` does; nothing when the table read has no such domain.
    pub(crate) fn remove_any_domain(&mut self, domain: &str) {
        let Some(existing) = self.read.domains.get(domain) else {
            return;
        };
        let removal = DomainMetadata {
            removed: true,
            ..existing.clone()
        };
        self.domains.retain(|d| d.domain != domain);
        self.domains.push(removal);
    }

    /// Stages tombstones (`remove` actions with only `path`, `deletionTimestamp` and
    /// `dataChange` false) of files that are not data files: the deletion vector files that
    /// dropping `deletionVectors` keeps from VACUUM for the retention period. `paths` are
    /// relative to the table root, URL-encoded as the log writes them.
    pub(crate) fn add_tombstones(&mut self, paths: &[String]) -> Result<()> {
        self.require_snapshot("add tombstones")?;
        self.removes.push(encode::tombstones(paths, now_ms())?);
        Ok(())
    }

    /// Stages `domain` set to `configuration`, or removed (`None`) (spec "Domain Metadata").
    /// The table must support `domainMetadata` (after this transaction's protocol change);
    /// domains named `delta.*` belong to the system and are refused.
    pub fn set_domain_metadata(
        &mut self,
        domain: &str,
        configuration: Option<String>,
    ) -> Result<()> {
        if domain.starts_with("delta.") {
            return Err(Error::InvalidArgument(format!(
                "the metadata domain {domain} is reserved for Delta itself"
            )));
        }
        if self.domains.iter().any(|d| d.domain == domain) {
            return Err(Error::InvalidArgument(format!(
                "the metadata domain {domain} is staged already"
            )));
        }
        let removed = configuration.is_none();
        let configuration = match configuration {
            Some(configuration) => configuration,
            None => match self.read.domains.get(domain) {
                Some(existing) => existing.configuration.clone(),
                None => return Ok(()),
            },
        };
        self.domains.push(DomainMetadata {
            domain: domain.to_string(),
            configuration,
            removed,
        });
        Ok(())
    }

    /// Stages a metadata change, and the protocol upgrade the new properties and schema need
    /// (`upgrade_protocol`; `delta.feature.*` and protocol-version keys act on the
    /// protocol only). Partition columns do not change.
    pub fn update_metadata(&mut self, update: MetadataUpdate) -> Result<()> {
        let current = match (&self.metadata, &self.read.config) {
            (Some(staged), _) => staged.clone(),
            (None, Some(config)) => config.metadata().clone(),
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "a table being created takes its metadata from its spec".into(),
                ))
            }
        };
        let mut metadata = current;
        if let Some(schema) = &update.schema {
            metadata.schema_string = Some(schema.to_json()?);
        }
        let mut protocol_keys = HashMap::new();
        for (key, value) in update.configuration {
            match value {
                Some(value) if is_protocol_key(&key) => {
                    protocol_keys.insert(key, value);
                }
                Some(value) => {
                    metadata.configuration.insert(key, value);
                }
                None => {
                    metadata.configuration.remove(&key);
                }
            }
        }
        if update.name.is_some() {
            metadata.name = update.name;
        }
        if update.description.is_some() {
            metadata.description = update.description;
        }
        for (key, value) in iceberg::implied_changes(&metadata.configuration) {
            if let Some(value) = value {
                metadata.configuration.insert(key, value);
            }
        }
        let mut schema = crate::table_config::logical_schema(&metadata, self.storage.uri())?;
        give_nested_ids(&mut metadata, &mut schema)?;
        schema
            .partition_schema(&metadata.partition_columns)
            .map_err(|error| Error::InvalidArgument(error.to_string()))?;
        let mut wanted = metadata.clone();
        wanted.configuration.extend(protocol_keys.clone());
        let features = required_features(&wanted, &schema);
        let current_protocol = self.effective_protocol()?;
        let (reader, writer) = requested_versions(&protocol_keys);
        let mut protocol = upgrade_protocol(&current_protocol, &features);
        if reader > protocol.min_reader_version || writer > protocol.min_writer_version {
            protocol = least_protocol(
                &features,
                reader.max(protocol.min_reader_version),
                writer.max(protocol.min_writer_version),
            );
        }
        name_row_tracking_columns(&mut metadata, &protocol);
        if protocol != current_protocol {
            self.protocol = Some(protocol);
        }
        self.metadata = Some(metadata);
        Ok(())
    }

    /// Stages a new protocol. It must keep every feature of the current one (dropping
    /// features is not supported): [`Error::InvalidArgument`] otherwise.
    pub fn update_protocol(&mut self, protocol: Protocol) -> Result<()> {
        let current = self.effective_protocol()?;
        let keeps = crate::table_config::features::writer_features(&current)
            .iter()
            .chain(&crate::table_config::features::reader_features(&current))
            .all(|f| crate::table_config::features::supports(&protocol, f));
        if !keeps {
            return Err(Error::InvalidArgument(
                "the new protocol drops features of the current one".into(),
            ));
        }
        self.protocol = Some(protocol);
        Ok(())
    }

    /// Stages `protocol` and `metadata` as they are, even when the protocol drops features:
    /// the downgrade commit of `DROP FEATURE`, once the feature's traces are gone. Nothing
    /// is derived from them (no protocol upgrade, no row tracking column names), so a later
    /// [`Transaction::update_metadata`] must not follow.
    pub(crate) fn downgrade(&mut self, protocol: Protocol, metadata: Metadata) {
        self.protocol = Some(protocol);
        self.metadata = Some(metadata);
    }

    /// Makes the checks [`Transaction::commit`] makes before its first attempt, and writes
    /// nothing: what a dry run calls to report the errors the commit would meet.
    pub fn check(&self) -> Result<()> {
        self.prepare().map(|_| ())
    }

    /// Commits: checks the staged actions, writes them as the next version in one
    /// put-if-absent, and on a lost race checks the winners, rebases and retries (see the
    /// module documentation).
    ///
    /// Errors, with nothing committed: [`Error::UnsupportedFeature`] (writer) for a writer
    /// feature this transaction cannot honour, [`Error::NotAllowed`] for a data-changing
    /// remove on an append-only table, [`Error::InvalidArgument`] for actions the spec does
    /// not allow together (a file added or removed twice, or both), or added files without
    /// `numRecords` on a table with row tracking, [`Error::CommitConflict`] for a conflict
    /// (kind [`ConflictKind::MaxCommitAttemptsExceeded`] after too many retries),
    /// [`Error::VersionNotFound`] when metadata cleanup deleted the version written while the
    /// transaction ran (a transaction older than `delta.logRetentionDuration`), and
    /// [`Error::CommitStateUnknown`] when a failed write cannot be read back.
    pub async fn commit(self) -> Result<CommitResult> {
        let prepared = self.prepare()?;
        let txn_id = uuid::Uuid::new_v4().to_string();
        let storage = self.storage.clone();
        let committer = self.options.committer.clone();
        let mut version = self.read.version.map_or(0, |v| v + 1);
        let mut rebase = conflict::Rebase {
            row_id_high_water_mark: self
                .read
                .domains
                .get(ROW_TRACKING_DOMAIN)
                .and_then(|d| conflict::high_water_mark(&d.configuration))
                .unwrap_or(-1),
            last_commit_timestamp: self.read.timestamp_ms,
        };
        let mut retries = 0u32;
        let mut landed;
        loop {
            let bytes = self.build(&prepared, version, &rebase, &txn_id)?;
            landed = Some(bytes.clone());
            let outcome =
                committer::attempt(committer.as_ref(), &storage, version, bytes, &txn_id).await?;
            match outcome {
                committer::Attempt::Committed => {
                    self.refuse_if_behind_cleanup(&prepared, version, &rebase)
                        .await?;
                    break;
                }
                committer::Attempt::NotWritten => {
                    retries = self.count_retry(retries, version)?;
                    self.backoff(retries).await;
                }
                committer::Attempt::Lost => {
                    retries = self.count_retry(retries, version)?;
                    match self
                        .check_winners(&prepared, version, &txn_id, &mut rebase)
                        .await?
                    {
                        Winners::Ours(ours) => {
                            version = ours;
                            landed = None;
                            break;
                        }
                        Winners::Rebased(next) => version = next,
                        Winners::NoneLanded => {}
                    }
                    self.backoff(retries).await;
                }
            }
        }
        // The commit has landed: from here on nothing may turn it into an error.
        // A snapshot whose file list was never replayed is not replayed for the post-commit
        // steps: they load what they need.
        let loaded = match &self.read.snapshot {
            Some(snapshot) if snapshot.files_replayed() => Some(snapshot.refresh_to(version).await),
            Some(_) => None,
            None if self.read.version.is_none() => {
                Some(Snapshot::load(&self.storage, SnapshotAt::Version(version)).await)
            }
            None => None,
        };
        let (snapshot, snapshot_error) = match loaded {
            Some(Ok(snapshot)) => (Some(snapshot), None),
            Some(Err(error)) => (None, Some(error)),
            None => (None, None),
        };
        let committed = Committed {
            storage: &storage,
            version,
            actions: landed,
            txn_id: &txn_id,
            snapshot: snapshot.as_ref(),
            checkpoint_interval: prepared.config.properties().checkpoint_interval,
            symlink_manifest: prepared
                .config
                .metadata()
                .configuration
                .get(SYMLINK_MANIFEST_KEY)
                .is_some_and(|value| value.eq_ignore_ascii_case("true")),
        };
        let mut post_commit = self.post_commit_hook(&committed).await;
        if let Some(error) = snapshot_error {
            post_commit.errors.insert(
                0,
                PostCommitError {
                    step: PostCommitStep::Snapshot,
                    message: error.to_string(),
                },
            );
        }
        let metrics = BTreeMap::from([
            ("numFiles".to_string(), prepared.num_adds as u64),
            ("numRemovedFiles".to_string(), prepared.num_removes as u64),
        ]);
        Ok(CommitResult {
            version,
            committed: true,
            retries,
            txn_id: Some(txn_id),
            snapshot,
            metrics,
            post_commit,
        })
    }

    /// Fails when the commit just written at `version` landed behind the table
    /// ([`committer::landed_behind_cleanup`]): metadata cleanup had deleted the version, so
    /// the winners it must be checked against are gone. The file is deleted again.
    async fn refuse_if_behind_cleanup(
        &self,
        prepared: &Prepared,
        version: u64,
        rebase: &conflict::Rebase,
    ) -> Result<()> {
        let storage = &self.storage;
        let retention = prepared.config.properties().log_retention_duration;
        let retention_ms = crate::util::time::duration_ms(retention);
        let previous_ms = rebase.last_commit_timestamp;
        if !committer::landed_behind_cleanup(storage, version, previous_ms, retention_ms, now_ms())
            .await?
        {
            return Ok(());
        }
        let path = storage.log_file(&crate::log::path::commit_file_name(version));
        let undone = match storage.delete_log_file(&path).await {
            Ok(()) => "it was deleted again".to_string(),
            Err(error) => format!(
                "deleting it again failed ({error}); it lies below the newest checkpoint, \
                 where readers do not look, and the next metadata cleanup deletes it"
            ),
        };
        Err(Error::VersionNotFound {
            table: self.storage.uri().to_string(),
            version,
            reason: format!(
                "metadata cleanup deleted the log up to this version while the transaction \
                 ran, so the commits it must be checked against are gone and its commit file \
                 landed where no reader looks ({undone}); nothing was committed: run the \
                 operation again on the latest version"
            ),
        })
    }

    /// Post-commit work (`.crc` files, checkpoints, log cleanup; see [`crate::maintenance::post_commit`]).
    /// Called once the commit is in the log; nothing done here fails the commit.
    async fn post_commit_hook(&self, committed: &Committed<'_>) -> PostCommitResult {
        crate::maintenance::post_commit::run(committed, &self.options.post_commit).await
    }

    fn count_retry(&self, retries: u32, version: u64) -> Result<u32> {
        if retries >= self.options.max_retries {
            return Err(Error::CommitConflict {
                kind: ConflictKind::MaxCommitAttemptsExceeded,
                version,
                table: self.storage.uri().to_string(),
                reason: format!(
                    "gave up after {} retries; nothing was committed",
                    self.options.max_retries
                ),
            });
        }
        Ok(retries + 1)
    }

    async fn backoff(&self, retries: u32) {
        let base = self.options.backoff_base.as_micros() as u64;
        let ceiling = self.options.backoff_max.as_micros() as u64;
        let exponential = base.saturating_mul(1u64 << retries.min(20)).min(ceiling);
        let random = uuid::Uuid::new_v4().as_u64_pair().0;
        let jittered = exponential / 2 + random % (exponential / 2 + 1);
        if jittered > 0 {
            tokio::time::sleep(Duration::from_micros(jittered)).await;
        }
    }

    /// Reads the commits from `version` to the newest once, in order: one holding `txn_id`
    /// is this transaction's own earlier attempt (the idempotent self-commit); every other
    /// is checked against what this transaction read and writes. Returns the next version
    /// to try (the newest plus one: commit peeking).
    async fn check_winners(
        &self,
        prepared: &Prepared,
        version: u64,
        txn_id: &str,
        rebase: &mut conflict::Rebase,
    ) -> Result<Winners> {
        let storage = &self.storage;
        let listing =
            crate::log::list_log_from(storage, version.saturating_sub(MONOTONIC_LOOKBACK)).await?;
        let Some(newest) = latest_version(&listing).filter(|newest| *newest >= version) else {
            return Ok(Winners::NoneLanded);
        };
        let range = CommitRange::from_listing(self.storage.uri(), &listing, version, newest)?;
        let winners = range.read_all(storage).await?;
        let keys = self.keys();
        let domains: HashSet<String> = self.domains.iter().map(|d| d.domain.clone()).collect();
        let mut app_ids = self.read_app_ids.clone();
        app_ids.extend(self.txns.iter().map(|txn| txn.app_id.clone()));
        let current = conflict::Current {
            table: self.storage.uri(),
            snapshot: self.read.snapshot.as_ref(),
            read_protocol: self.read.config.as_ref().map(|c| c.protocol()),
            isolation: prepared.isolation,
            read_predicates: &self.read_predicates,
            read_files: &self.read_files,
            read_whole_table: self.read_whole_table,
            app_ids: &app_ids,
            domains: &domains,
            removed_files: &prepared.removed_keys,
            writes_metadata: self.metadata.is_some(),
            writes_protocol: self.protocol.is_some(),
            keys: &keys,
        };
        for file in &winners {
            let actions = file.decode(false)?;
            let info = actions.commit_info.as_ref();
            if info.and_then(|info| info.txn_id()) == Some(txn_id) {
                return Ok(Winners::Ours(file.version));
            }
            if self.read.version.is_none() {
                return Err(lost_creation_race(self.storage.uri(), file.version));
            }
            let winner = conflict::Winner {
                version: file.version,
                actions: &actions,
                timestamp_ms: file.timestamp_ms(info),
            };
            conflict::check_winner(&current, &winner, rebase)?;
        }
        Ok(Winners::Rebased(newest + 1))
    }

    /// Checks the staged actions once, before the first attempt.
    fn prepare(&self) -> Result<Prepared> {
        let config = self.effective_config()?;
        let adds_data = self
            .adds
            .iter()
            .any(|adds| data_change_rows(adds).iter().any(|(_, change)| *change));
        config.ensure_writable(adds_data, &self.data_writer_features)?;
        let changes_clustering = self.domains.iter().any(|d| d.domain == CLUSTERING_DOMAIN);
        if adds_data || self.metadata.is_some() || changes_clustering {
            let columns = clustering_columns(&config, self.staged_domain(CLUSTERING_DOMAIN))?;
            ensure_clustering_stats(&config, &columns)?;
        }
        let removes_data = self
            .removes
            .iter()
            .any(|removes| data_change_rows(removes).iter().any(|(_, change)| *change));
        if removes_data && config.properties().append_only {
            return Err(Error::NotAllowed(format!(
                "{} is append-only (delta.appendOnly): this transaction removes data",
                self.storage.uri()
            )));
        }
        let keys = self.keys();
        let added_keys = file_keys(&self.adds, &keys, "added")?;
        let removed_keys = file_keys(&self.removes, &keys, "removed")?;
        if let Some(both) = added_keys.intersection(&removed_keys).next() {
            return Err(Error::InvalidArgument(format!(
                "{} is both added and removed by the transaction",
                both.replace('\u{0}', " with deletion vector ")
            )));
        }
        if self.metadata.is_some() || !self.adds.is_empty() {
            let without_records = match config.iceberg_compat() {
                Some(_) => add_without_records(&self.adds, None),
                None => None,
            };
            iceberg::check_commit(
                self.read.config.as_ref(),
                &config,
                without_records.as_deref(),
            )?;
        }
        if config.assigns_row_ids() {
            if let Some(path) = add_without_records(&self.adds, Some(add::BASE_ROW_ID)) {
                return Err(Error::InvalidArgument(format!(
                    "row tracking needs numRecords in the statistics of every added file; \
                     {path} has none"
                )));
            }
        }
        if !self.domains.is_empty() && !config.is_feature_supported(&TableFeature::DomainMetadata) {
            return Err(Error::NotAllowed(format!(
                "{} does not support the domainMetadata feature",
                self.storage.uri()
            )));
        }
        let is_blind_append = self.removes.is_empty()
            && self.cdc.is_empty()
            && self.read_predicates.is_empty()
            && self.read_files.is_empty()
            && !self.read_whole_table;
        let base_level = self
            .isolation_level
            .unwrap_or(config.properties().isolation_level);
        let changes_data = adds_data || removes_data;
        let only_file_actions = self.metadata.is_none()
            && self.protocol.is_none()
            && self.txns.is_empty()
            && self.domains.is_empty();
        let isolation = match only_file_actions && !changes_data {
            true => IsolationLevel::SnapshotIsolation,
            false => base_level,
        };
        let removed_paths = self
            .removes
            .iter()
            .flat_map(|removes| paths(removes).into_iter())
            .map(|path| keys.canonical(&path).into_owned())
            .collect();
        Ok(Prepared {
            config,
            isolation,
            reported_isolation: base_level,
            is_blind_append,
            removed_keys: removed_paths,
            num_adds: self.adds.iter().map(|a| a.len() - a.null_count()).sum(),
            num_removes: self.removes.iter().map(|r| r.len() - r.null_count()).sum(),
        })
    }

    /// The bytes of the commit at `version`: `commitInfo` first, then protocol, metadata,
    /// `txn`s, domains, removes, adds and change data files.
    fn build(
        &self,
        prepared: &Prepared,
        version: u64,
        rebase: &conflict::Rebase,
        txn_id: &str,
    ) -> Result<Bytes> {
        let now = now_ms();
        let config = &prepared.config;
        let ict = config.is_in_commit_timestamps_enabled().then(|| {
            let after = rebase
                .last_commit_timestamp
                .map_or(i64::MIN, |t| t.saturating_add(1));
            now.max(after)
        });
        let mut metadata = self.metadata.clone();
        let enables_ict = self.read.version.is_some()
            && !self
                .read
                .config
                .as_ref()
                .is_some_and(TableConfiguration::is_in_commit_timestamps_enabled);
        if let (Some(ict), true) = (ict, enables_ict) {
            let metadata = metadata.get_or_insert_with(|| config.metadata().clone());
            metadata.configuration.insert(
                IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION.into(),
                version.to_string(),
            );
            metadata.configuration.insert(
                IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP.into(),
                ict.to_string(),
            );
        }
        let (adds, high_water_mark) = match config.assigns_row_ids() {
            true => assign_row_ids(&self.adds, rebase.row_id_high_water_mark, version)?,
            false => (self.adds.clone(), rebase.row_id_high_water_mark),
        };
        let mut domains = self.domains.clone();
        if high_water_mark > rebase.row_id_high_water_mark {
            domains.push(DomainMetadata {
                domain: ROW_TRACKING_DOMAIN.into(),
                configuration: format!("{{\"rowIdHighWaterMark\":{high_water_mark}}}"),
                removed: false,
            });
        }
        let info = self.commit_info(prepared, now, ict, txn_id, &adds);
        let mut out = Vec::new();
        let mut line = |text: String| {
            out.extend_from_slice(text.as_bytes());
            out.push(b'\n');
        };
        line(encode::commit_info_line(&info)?);
        if let Some(protocol) = &self.protocol {
            line(encode::protocol_line(protocol));
        }
        if let Some(metadata) = &metadata {
            line(encode::metadata_line(metadata));
        }
        for txn in &self.txns {
            let txn = Txn {
                last_updated: Some(now),
                ..txn.clone()
            };
            line(encode::txn_line(&txn));
        }
        for domain in &domains {
            line(encode::domain_metadata_line(domain));
        }
        for removes in &self.removes {
            encode::write_remove_lines(removes, &mut out)?;
        }
        for adds in &adds {
            encode::write_add_lines(adds, &mut out)?;
        }
        for cdc in &self.cdc {
            encode::write_cdc_lines(cdc, &mut out)?;
        }
        let options = DecodeOptions::default();
        decode_actions(&out, version, "the commit being written", options)?;
        Ok(Bytes::from(out))
    }

    fn commit_info(
        &self,
        prepared: &Prepared,
        now: i64,
        ict: Option<i64>,
        txn_id: &str,
        adds: &[StructArray],
    ) -> CommitInfo {
        let mut raw = self.commit_info.clone();
        if let Some(ict) = ict {
            raw.insert("inCommitTimestamp".into(), ict.into());
        }
        raw.insert("timestamp".into(), now.into());
        raw.insert("operation".into(), self.operation.clone().into());
        raw.insert(
            "operationParameters".into(),
            Value::Object(self.operation_parameters.clone()),
        );
        if let Some(read_version) = self.read.version {
            raw.insert("readVersion".into(), read_version.into());
        }
        raw.insert(
            "isolationLevel".into(),
            isolation_name(prepared.reported_isolation).into(),
        );
        raw.insert("isBlindAppend".into(), prepared.is_blind_append.into());
        let mut metrics = Map::new();
        let rows: Option<i64> = adds
            .iter()
            .map(|adds| {
                let records = int_column(adds, add::NUM_RECORDS)?;
                (0..adds.len())
                    .filter(|row| adds.is_valid(*row))
                    .map(|row| records.is_valid(row).then(|| records.value(row)))
                    .sum::<Option<i64>>()
            })
            .sum();
        let bytes: i64 = adds
            .iter()
            .filter_map(|adds| int_column(adds, add::SIZE))
            .map(|sizes| sizes.iter().flatten().sum::<i64>())
            .sum();
        metrics.insert("numFiles".into(), prepared.num_adds.to_string().into());
        metrics.insert("numOutputBytes".into(), bytes.to_string().into());
        if let Some(rows) = rows {
            metrics.insert("numOutputRows".into(), rows.to_string().into());
        }
        if prepared.num_removes > 0 {
            metrics.insert(
                "numRemovedFiles".into(),
                prepared.num_removes.to_string().into(),
            );
        }
        metrics.extend(self.operation_metrics.clone());
        raw.insert("operationMetrics".into(), Value::Object(metrics));
        raw.insert("engineInfo".into(), ENGINE_INFO.into());
        raw.insert("txnId".into(), txn_id.into());
        CommitInfo { raw }
    }

    /// The protocol and metadata the commit leaves the table with, validated.
    fn effective_config(&self) -> Result<TableConfiguration> {
        let protocol = self.effective_protocol()?;
        let metadata = match (&self.metadata, &self.read.config) {
            (Some(metadata), _) => metadata.clone(),
            (None, Some(config)) => config.metadata().clone(),
            (None, None) => {
                return Err(Error::InvalidArgument("a new table needs metadata".into()))
            }
        };
        TableConfiguration::try_new(protocol, metadata, self.storage.uri())
    }

    fn effective_protocol(&self) -> Result<Protocol> {
        match (&self.protocol, &self.read.config) {
            (Some(protocol), _) => Ok(protocol.clone()),
            (None, Some(config)) => Ok(config.protocol().clone()),
            (None, None) => Err(Error::InvalidArgument(
                "a new table needs a protocol".into(),
            )),
        }
    }

    fn require_snapshot(&self, what: &str) -> Result<&Snapshot> {
        self.read.snapshot.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a transaction that did not read a snapshot cannot {what}"
            ))
        })
    }

    fn keys(&self) -> FileKeys {
        FileKeys::new(self.storage.root_url())
    }
}

/// What [`Transaction::prepare`] worked out once.
#[derive(Debug)]
struct Prepared {
    config: TableConfiguration,
    /// The isolation level conflicts are checked under.
    isolation: IsolationLevel,
    /// The isolation level written to `commitInfo`.
    reported_isolation: IsolationLevel,
    is_blind_append: bool,
    removed_keys: HashSet<String>,
    num_adds: usize,
    num_removes: usize,
}

/// What reading the winners of a lost race found.
enum Winners {
    /// The version holds this transaction's own commit.
    Ours(u64),
    /// Every winner was checked; try this version next.
    Rebased(u64),
    /// Nothing is at the version after all (a store that reported a conflict for a write
    /// that did not land): try it again.
    NoneLanded,
}

/// The name of an isolation level as `commitInfo.isolationLevel` spells it.
/// The error of a transaction creating the table when another writer committed version 0
/// first: [`ConflictKind::ProtocolChanged`], as Delta on Spark reports it (its
/// `ConflictChecker` meets the winner's `protocol` first; `DELTA_PROTOCOL_CHANGED` with "This
/// happens when multiple writers are writing to an empty directory").
fn lost_creation_race(table: &str, version: u64) -> Error {
    Error::CommitConflict {
        kind: ConflictKind::ProtocolChanged,
        version,
        table: table.to_string(),
        reason: "another writer created the table concurrently (this happens when several \
                 writers write to an empty directory; creating the table ahead of time \
                 avoids it); nothing was committed"
            .into(),
    }
}

pub(crate) fn isolation_name(level: IsolationLevel) -> &'static str {
    match level {
        IsolationLevel::Serializable => "Serializable",
        IsolationLevel::WriteSerializable => "WriteSerializable",
        IsolationLevel::SnapshotIsolation => "SnapshotIsolation",
    }
}

/// The metadata of a new table: a fresh id, the schema, partitioning and the configuration
/// without its protocol keys, created now.
fn new_metadata(spec: &TableSpec) -> Result<Metadata> {
    let mut metadata = spec_metadata(spec)?;
    metadata
        .configuration
        .retain(|key, _| !is_protocol_key(key));
    let config_check = crate::table_config::properties::TableProperties::try_from_configuration(
        &metadata.configuration,
    )?;
    if config_check.column_mapping_mode != ColumnMappingMode::None {
        spec.schema
            .physical_schema(config_check.column_mapping_mode)
            .map_err(|error| {
                Error::InvalidArgument(format!(
                    "column mapping needs a physical name and id on every column: {error}"
                ))
            })?;
    }
    spec.schema
        .partition_schema(&spec.partition_columns)
        .map_err(|error| Error::InvalidArgument(error.to_string()))?;
    Ok(metadata)
}

/// Gives the arrays and maps of `schema` (the schema of `metadata`) their nested field ids
/// when `metadata` turns Iceberg compatibility V2 or V3 on (`iceberg::assign_nested_ids`),
/// updating the schema string and `delta.columnMapping.maxColumnId`.
fn give_nested_ids(metadata: &mut Metadata, schema: &mut StructType) -> Result<()> {
    let properties = TableProperties::from_configuration(&metadata.configuration);
    let wanted = properties.enable_iceberg_compat_v2 || properties.enable_iceberg_compat_v3;
    let mode = properties.column_mapping_mode;
    if !wanted || mode == ColumnMappingMode::None {
        return Ok(());
    }
    let known = properties
        .column_mapping_max_column_id
        .unwrap_or(0)
        .max(max_column_id(schema));
    let mut with_ids = schema.clone();
    let max = iceberg::assign_nested_ids(&mut with_ids, mode, known)
        .map_err(|error| Error::InvalidArgument(error.to_string()))?;
    if with_ids != *schema {
        metadata.schema_string = Some(with_ids.to_json()?);
        metadata
            .configuration
            .insert(COLUMN_MAPPING_MAX_COLUMN_ID.into(), max.to_string());
        *schema = with_ids;
    }
    Ok(())
}

/// Names the materialised row id and row commit version columns in `metadata` when
/// `protocol` supports row tracking and the names are not there yet, as Delta on Spark does
/// whenever it writes metadata (`MaterializedRowTrackingColumn.updateMaterializedColumnName`):
/// its UPDATE, MERGE and `_metadata.row_id` need them from the table's creation on.
fn name_row_tracking_columns(metadata: &mut Metadata, protocol: &Protocol) {
    if !crate::table_config::features::supports(protocol, &TableFeature::RowTracking) {
        return;
    }
    let names = [
        (ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME, "_row-id-col-"),
        (
            ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
            "_row-commit-version-col-",
        ),
    ];
    for (key, prefix) in names {
        metadata
            .configuration
            .entry(key.to_string())
            .or_insert_with(|| format!("{prefix}{}", uuid::Uuid::new_v4()));
    }
}

fn spec_metadata(spec: &TableSpec) -> Result<Metadata> {
    Ok(Metadata {
        id: uuid::Uuid::new_v4().to_string(),
        name: spec.name.clone(),
        description: spec.description.clone(),
        format: Format::default(),
        schema_string: Some(spec.schema.to_json()?),
        partition_columns: spec.partition_columns.clone(),
        created_time: Some(now_ms()),
        configuration: spec.configuration.clone(),
    })
}

/// The adds with fresh row ids (spec "Row Tracking"): each add without `baseRowId` gets the
/// next ids after `high_water_mark` (`numRecords` of them), each without
/// `defaultRowCommitVersion` gets `version`. Returns the adds and the new high-water mark.
fn assign_row_ids(
    adds: &[StructArray],
    mut high_water_mark: i64,
    version: u64,
) -> Result<(Vec<StructArray>, i64)> {
    let mut assigned = Vec::with_capacity(adds.len());
    for batch in adds {
        let bases = int_column(batch, add::BASE_ROW_ID);
        let records = int_column(batch, add::NUM_RECORDS);
        let versions = int_column(batch, add::DEFAULT_ROW_COMMIT_VERSION);
        let mut new_bases = Vec::with_capacity(batch.len());
        let mut new_versions = Vec::with_capacity(batch.len());
        for row in 0..batch.len() {
            let base = bases.filter(|b| b.is_valid(row)).map(|b| b.value(row));
            let base = match (base, batch.is_valid(row)) {
                (Some(base), _) => Some(base),
                (None, false) => None,
                (None, true) => {
                    let count = records
                        .filter(|r| r.is_valid(row))
                        .map(|r| r.value(row))
                        .unwrap_or(0);
                    let base = high_water_mark + 1;
                    high_water_mark += count.max(0);
                    if count == 0 {
                        high_water_mark = high_water_mark.max(base - 1);
                    }
                    Some(base)
                }
            };
            new_bases.push(base);
            let commit_version = versions.filter(|v| v.is_valid(row)).map(|v| v.value(row));
            new_versions.push(match batch.is_valid(row) {
                true => commit_version.or(Some(version as i64)),
                false => commit_version,
            });
        }
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        let position = |name: &str| batch.fields().iter().position(|f| f.name() == name);
        if let (Some(base_at), Some(version_at)) = (
            position(add::BASE_ROW_ID),
            position(add::DEFAULT_ROW_COMMIT_VERSION),
        ) {
            columns[base_at] = Arc::new(Int64Array::from(new_bases));
            columns[version_at] = Arc::new(Int64Array::from(new_versions));
        }
        let rebuilt = StructArray::try_new(batch.fields().clone(), columns, batch.nulls().cloned())
            .map_err(|error| Error::arrow("assigning row ids", error))?;
        assigned.push(rebuilt);
    }
    Ok((assigned, high_water_mark))
}

/// The canonical keys (path and deletion vector) of the valid rows of `batches`, refusing
/// a key that appears twice (spec "Action Reconciliation").
fn file_keys(batches: &[StructArray], keys: &FileKeys, what: &str) -> Result<HashSet<String>> {
    let mut seen = HashSet::new();
    for batch in batches {
        let paths = paths(batch);
        let dvs = batch
            .column_by_name(add::DELETION_VECTOR)
            .and_then(|c| c.as_struct_opt());
        let valid_rows = (0..batch.len()).filter(|row| batch.is_valid(*row));
        for (path, row) in paths.iter().zip(valid_rows) {
            let mut key = keys.canonical(path).into_owned();
            if let Some(dv) = dvs.filter(|dv| dv.is_valid(row)) {
                let text = |name: &str| {
                    dv.column_by_name(name)
                        .and_then(|c| c.as_string_opt::<i32>())
                        .filter(|c| c.is_valid(row))
                        .map(|c| c.value(row).to_string())
                        .unwrap_or_default()
                };
                key.push('\u{0}');
                key.push_str(&text("storageType"));
                key.push_str(&text("pathOrInlineDv"));
            }
            if !seen.insert(key.clone()) {
                return Err(Error::InvalidArgument(format!(
                    "{} is {what} twice by the transaction",
                    key.replace('\u{0}', " with deletion vector ")
                )));
            }
        }
    }
    Ok(seen)
}

/// The paths of the valid rows of a file action array.
/// The path of the first add of `batches` without `numRecords` (and without a value in the
/// column `excused_by`, when given: a file with its base row id needs no count).
fn add_without_records(batches: &[StructArray], excused_by: Option<&str>) -> Option<String> {
    batches.iter().find_map(|adds| {
        let records = int_column(adds, add::NUM_RECORDS);
        let excuse = excused_by.and_then(|name| int_column(adds, name));
        let row = (0..adds.len()).find(|row| {
            adds.is_valid(*row)
                && records.is_none_or(|r| r.is_null(*row))
                && excuse.is_none_or(|e| e.is_null(*row))
        })?;
        Some(path_at(adds, row))
    })
}

/// The path of the first added file that carries a deletion vector but no `numRecords`, if
/// any (catalogue E2-12: such an add must count its rows).
pub(crate) fn vector_without_records(batches: &[StructArray]) -> Option<String> {
    batches.iter().find_map(|adds| {
        let records = int_column(adds, add::NUM_RECORDS);
        let vectors = adds.column_by_name(add::DELETION_VECTOR)?;
        let row = (0..adds.len()).find(|row| {
            adds.is_valid(*row) && vectors.is_valid(*row) && records.is_none_or(|r| r.is_null(*row))
        })?;
        Some(path_at(adds, row))
    })
}

/// The path of row `row` of an add array.
fn path_at(adds: &StructArray, row: usize) -> String {
    adds.column_by_name(add::PATH)
        .and_then(|c| c.as_string_opt::<i32>())
        .filter(|c| c.is_valid(row))
        .map_or("an added file", |c| c.value(row))
        .to_string()
}

fn paths(batch: &StructArray) -> Vec<String> {
    let Some(column) = batch
        .column_by_name(add::PATH)
        .and_then(|c| c.as_string_opt::<i32>())
    else {
        return Vec::new();
    };
    (0..batch.len())
        .filter(|row| batch.is_valid(*row) && column.is_valid(*row))
        .map(|row| column.value(row).to_string())
        .collect()
}

/// `(row, dataChange)` of the valid rows of a file action array (`dataChange` absent: true).
fn data_change_rows(batch: &StructArray) -> Vec<(usize, bool)> {
    let changes = batch
        .column_by_name(add::DATA_CHANGE)
        .and_then(|c| c.as_boolean_opt());
    (0..batch.len())
        .filter(|row| batch.is_valid(*row))
        .map(|row| {
            let change = changes.is_none_or(|c| c.is_null(row) || c.value(row));
            (row, change)
        })
        .collect()
}

fn int_column<'a>(batch: &'a StructArray, name: &str) -> Option<&'a Int64Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
}

fn select(batch: &StructArray, mask: &BooleanArray) -> Result<StructArray> {
    let selected = filter(batch, mask).map_err(|error| Error::arrow("selecting files", error))?;
    Ok(selected.as_struct().clone())
}

#[cfg(test)]
mod tests;

/// The names of `fields`, comma-separated, for messages.
fn field_names(fields: &arrow_schema::Fields) -> String {
    let names: Vec<&str> = fields.iter().map(|field| field.name().as_str()).collect();
    names.join(", ")
}
