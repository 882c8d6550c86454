//! The head of a snapshot: what a version is (protocol, metadata, `txn` versions, domains,
//! commit time) without its file list.
//!
//! When the version has a `<v>.crc` file (Delta on Spark's `VersionChecksum`, written after
//! each commit), the head comes from it and the newest commit file alone: no checkpoint is
//! read and no earlier commit, as Delta on Spark and Trino take protocol and metadata from the
//! checksum. Without a usable checksum the head is folded from the log with the file actions
//! left out (the checkpoint's non-file columns and the commits after it). The file list is
//! replayed only when [`SnapshotHead::snapshot`] is asked for.
//!
//! A head from a checksum also knows the version's file count and size (`numFiles`,
//! `tableSizeBytes`, [`SnapshotHead::table_size_from_checksum`]), as Delta on Spark takes them
//! from the checksum; [`SnapshotHead::table_size`] counts the replayed files otherwise. A
//! replay does not check them (a read never fails on them, as in Delta on Spark);
//! `Snapshot::validate_checksum` does.
//!
//! A checksum is used only when it parses, carries the transactions and domains, and agrees
//! with the protocol and metadata of the newest commit when that commit changes them;
//! otherwise the head is read from the log, as Delta on Spark ignores an unreadable checksum.
//! When the file list is later replayed, the replayed protocol, metadata, transactions and
//! domains must equal the checksum's, else [`Error::ChecksumMismatch`] names the file.

use std::collections::HashMap;
use std::sync::Arc;

use crate::actions::{CommitInfo, DomainMetadata, Metadata, Protocol};
use crate::error::{Error, Result};
use crate::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use crate::log::path::checksum_file_name;
use crate::log::segment::LogSegment;
use crate::log::timestamps::commit_timestamp;
use crate::replay::load::{load_segment_without_files, TableState};
use crate::schema::StructType;
use crate::snapshot::{target_version, Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table::Table;
use crate::table_config::TableConfiguration;
use crate::util::cpu;
use crate::version_checksum::non_file_state_from_checksum;

/// Where a [`SnapshotHead`] took its state from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadSource {
    /// The version's `.crc` file (its URL) and the newest commit file.
    Checksum(String),
    /// The log replayed without file actions.
    Log,
}

/// How many live data files a version has and their total size in bytes (`add.size` summed,
/// deletion vectors not subtracted): the `.crc` file's `numFiles` and `tableSizeBytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSize {
    /// The number of live data files.
    pub num_files: u64,
    /// Their total size in bytes.
    pub size_in_bytes: u64,
}

/// A version's protocol, metadata, `txn` versions and domains, loaded without its file list.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct SnapshotHead {
    inner: Arc<HeadInner>,
}

#[derive(Debug)]
struct HeadInner {
    storage: Storage,
    segment: LogSegment,
    state: TableState,
    config: TableConfiguration,
    timestamp_ms: i64,
    source: HeadSource,
    checksum_size: Option<TableSize>,
}

impl Table {
    /// The head of the version `at` names: protocol, metadata, transactions and domains, read
    /// from the version's `.crc` file when it has a usable one, else from the log without the
    /// file actions (see `crate::snapshot_head`).
    pub async fn snapshot_head(&self, at: SnapshotAt) -> Result<SnapshotHead> {
        SnapshotHead::load(self.storage(), at).await
    }
}

impl SnapshotHead {
    /// Loads the head of the version `at` names.
    pub(crate) async fn load(storage: &Storage, at: SnapshotAt) -> Result<SnapshotHead> {
        let target = target_version(storage, at).await?;
        let segment = crate::log::locate_segment(storage, target).await?;
        let table = storage.root_url().as_str();
        let (state, source, checksum_size) = match head_from_checksum(storage, &segment).await? {
            Some((state, size, crc)) => (state, HeadSource::Checksum(crc), Some(size)),
            None => {
                let state = load_segment_without_files(storage, table, &segment).await?;
                (state, HeadSource::Log, None)
            }
        };
        let config =
            TableConfiguration::try_new(state.protocol.clone(), state.metadata.clone(), table)?;
        let timestamp_ms = commit_timestamp(state.commit_info.as_ref(), segment.file_time_ms);
        let inner = HeadInner {
            storage: storage.clone(),
            segment,
            state,
            config,
            timestamp_ms,
            source,
            checksum_size,
        };
        Ok(SnapshotHead {
            inner: Arc::new(inner),
        })
    }

    /// The version.
    pub fn version(&self) -> u64 {
        self.inner.state.version
    }

    /// When the version was committed, in ms since the epoch, by the rule of
    /// [`Snapshot::timestamp_ms`].
    pub fn timestamp_ms(&self) -> i64 {
        self.inner.timestamp_ms
    }

    /// Where the state was read from.
    pub fn source(&self) -> &HeadSource {
        &self.inner.source
    }

    /// The file count and size from the version's `.crc` file, without replaying the file
    /// list: `Some` when the head came from the checksum ([`HeadSource::Checksum`]).
    pub fn table_size_from_checksum(&self) -> Option<TableSize> {
        self.inner.checksum_size
    }

    /// The file count and size: from the `.crc` file when the head came from it, else
    /// counted from the file list, replayed now (see [`SnapshotHead::snapshot`] for errors).
    pub async fn table_size(&self) -> Result<TableSize> {
        match self.inner.checksum_size {
            Some(size) => Ok(size),
            None => Ok(table_size_of(&self.snapshot().await?)),
        }
    }

    /// The table's protocol at this version.
    pub fn protocol(&self) -> &Protocol {
        self.inner.config.protocol()
    }

    /// The table's metadata at this version.
    pub fn metadata(&self) -> &Metadata {
        self.inner.config.metadata()
    }

    /// The validated protocol and metadata.
    pub fn table_configuration(&self) -> &TableConfiguration {
        &self.inner.config
    }

    /// The logical schema.
    pub fn schema(&self) -> &StructType {
        self.inner.config.schema()
    }

    /// The logical schema as Arrow.
    pub fn arrow_schema(&self) -> arrow_schema::SchemaRef {
        self.inner.config.arrow_schema()
    }

    /// The partition columns, in order.
    pub fn partition_columns(&self) -> &[String] {
        self.inner.config.partition_columns()
    }

    /// The newest version recorded for `app_id` by a `txn` action.
    pub fn transaction_version(&self, app_id: &str) -> Option<i64> {
        self.inner.state.txns.get(app_id).map(|txn| txn.version)
    }

    /// The configuration of `domain`, or `None` when it is absent or removed.
    pub fn domain_metadata(&self, domain: &str) -> Option<&str> {
        let domain = self.inner.state.domains.get(domain).filter(|d| !d.removed);
        domain.map(|d| d.configuration.as_str())
    }

    /// All `txn` app ids with their versions.
    pub fn transactions(&self) -> HashMap<String, i64> {
        let txns = self.inner.state.txns.iter();
        txns.map(|(app, txn)| (app.clone(), txn.version)).collect()
    }

    /// The live domains and their configurations.
    pub fn domains(&self) -> HashMap<String, String> {
        live_domains(&self.inner.state.domains)
    }

    /// The newest `domainMetadata` action per domain, tombstones included.
    pub(crate) fn domain_actions(&self) -> &HashMap<String, DomainMetadata> {
        &self.inner.state.domains
    }

    /// The commit information of this version, when its commit file was read.
    pub fn commit_info(&self) -> Option<&CommitInfo> {
        self.inner.state.commit_info.as_ref()
    }

    /// The full snapshot of this version: the file list replayed from the log. When the head
    /// came from a `.crc` file, the replayed protocol, metadata, transactions and domains must
    /// equal it, else [`Error::ChecksumMismatch`] names the file and the fields.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let snapshot = Snapshot::load_segment(&self.inner.storage, &self.inner.segment).await?;
        if let HeadSource::Checksum(crc) = &self.inner.source {
            let differences = self.differences(&snapshot);
            if !differences.is_empty() {
                return Err(Error::ChecksumMismatch {
                    path: crc.clone(),
                    reason: differences.join("; "),
                });
            }
        }
        Ok(snapshot)
    }

    /// The fields of the head that the replayed `snapshot` contradicts.
    fn differences(&self, snapshot: &Snapshot) -> Vec<String> {
        let mut found = Vec::new();
        if snapshot.protocol() != self.protocol() {
            found.push(format!(
                "protocol: the file says {:?}, the log gives {:?}",
                self.protocol(),
                snapshot.protocol()
            ));
        }
        if snapshot.metadata() != self.metadata() {
            found.push(format!(
                "metadata: the file says {:?}, the log gives {:?}",
                self.metadata(),
                snapshot.metadata()
            ));
        }
        if snapshot.transactions() != self.transactions() {
            found.push("setTransactions differ from the log's".into());
        }
        if snapshot.domains() != self.domains() {
            found.push("domainMetadata differs from the log's".into());
        }
        found
    }
}

/// The file count and size of a replayed snapshot.
fn table_size_of(snapshot: &Snapshot) -> TableSize {
    TableSize {
        num_files: snapshot.num_files() as u64,
        size_in_bytes: u64::try_from(snapshot.total_size()).unwrap_or_default(),
    }
}

fn live_domains(domains: &HashMap<String, DomainMetadata>) -> HashMap<String, String> {
    let live = domains.values().filter(|d| !d.removed);
    live.map(|d| (d.domain.clone(), d.configuration.clone()))
        .collect()
}

/// The head state from the version's checksum and newest commit, with the checksum's URL;
/// `None` when the checksum is absent, unusable, or contradicted by the newest commit.
async fn head_from_checksum(
    storage: &Storage,
    segment: &LogSegment,
) -> Result<Option<(TableState, TableSize, String)>> {
    let Some(checksum) = non_file_state_from_checksum(storage, segment).await? else {
        return Ok(None);
    };
    let mut state = checksum.state;
    let (Ok(num_files), Ok(size_in_bytes)) = (
        u64::try_from(checksum.num_files),
        u64::try_from(checksum.table_size_bytes),
    ) else {
        return Ok(None);
    };
    let size = TableSize {
        num_files,
        size_in_bytes,
    };
    if let Some(commit) = read_latest_commit(storage, segment).await? {
        if !agrees(&state, &commit) {
            return Ok(None);
        }
        state.commit_info = commit.commit_info.or(state.commit_info);
    }
    let crc = storage.log_file(&checksum_file_name(segment.end_version));
    Ok(Some((state, size, storage.url_of(&crc))))
}

/// True when the protocol and metadata the commit sets (if any) are the checksum's.
fn agrees(state: &TableState, commit: &DecodedActions) -> bool {
    let protocol_agrees = commit
        .protocol
        .as_ref()
        .is_none_or(|p| *p == state.protocol);
    let metadata_agrees = commit
        .metadata
        .as_ref()
        .is_none_or(|m| *m == state.metadata);
    protocol_agrees && metadata_agrees
}

/// The decoded commit file of the segment's version, when the segment replays it.
async fn read_latest_commit(
    storage: &Storage,
    segment: &LogSegment,
) -> Result<Option<DecodedActions>> {
    let last = segment.commits.last();
    let Some(commit) = last.filter(|commit| commit.version == segment.end_version) else {
        return Ok(None);
    };
    let bytes = storage.read(&commit.location).await?;
    let name = storage.url_of(&commit.location);
    let version = segment.end_version;
    let options = DecodeOptions {
        from_checkpoint: false,
        keep_stats: false,
        skip_file_actions: false,
    };
    let file = name.clone();
    let decode = move || decode_actions(&bytes, version, &name, options);
    cpu::run(decode, |reason| Error::corrupt(file, reason))
        .await
        .map(Some)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;
    use crate::maintenance::checkpoint::tests::table;
    use crate::schema::{PrimitiveType, StructField};
    use crate::transaction::{AddFile, MetadataUpdate, TableSpec};

    /// A table of versions 0..=2 (each with its `.crc`), a domain set at version 1.
    async fn three_versions(dir: &tempfile::TempDir) -> Table {
        let table = table(dir);
        let spec = TableSpec {
            schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
            configuration: HashMap::from([(
                "delta.feature.domainMetadata".to_string(),
                "supported".to_string(),
            )]),
            ..TableSpec::default()
        };
        table.create(spec).await.unwrap();
        for version in 1..=2 {
            let mut tx = table.transaction("WRITE").await.unwrap();
            let file = AddFile {
                path: format!("f{version}.parquet"),
                size: 100,
                modification_time: 1,
                data_change: true,
                ..AddFile::default()
            };
            tx.add(&[file]).unwrap();
            tx.set_app_version("app", version).unwrap();
            if version == 1 {
                tx.set_domain_metadata("user.d", Some("from-log".into()))
                    .unwrap();
            }
            tx.commit().await.unwrap();
        }
        table
    }

    fn log_file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
        dir.path().join("_delta_log").join(name)
    }

    #[tokio::test]
    async fn the_head_comes_from_the_checksum_without_reading_earlier_commits() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        let expected = table.snapshot(SnapshotAt::Latest).await.unwrap();
        for version in 0..2 {
            let name = format!("{version:020}.json");
            std::fs::write(log_file(&dir, &name), "not a commit\n").unwrap();
        }
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert!(matches!(head.source(), HeadSource::Checksum(crc)
            if crc.ends_with("00000000000000000002.crc")));
        assert_eq!(head.version(), 2);
        assert_eq!(head.schema(), expected.schema());
        assert_eq!(head.metadata(), expected.metadata());
        assert_eq!(head.protocol(), expected.protocol());
        let segment = table.log_segment(None).await.unwrap();
        assert_eq!(head.timestamp_ms(), segment.file_time_ms);
        assert_eq!(head.transaction_version("app"), Some(2));
        assert_eq!(head.domain_metadata("user.d"), Some("from-log"));
        let error = head.snapshot().await.unwrap_err();
        assert!(matches!(error, Error::CorruptLogFile { .. }), "{error}");
        let append = table.append_transaction("WRITE").await.unwrap();
        assert_eq!(append.domain_metadata("user.d"), Some("from-log"));
    }

    #[tokio::test]
    async fn a_checksum_that_does_not_parse_falls_back_to_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        std::fs::write(log_file(&dir, "00000000000000000002.crc"), "{\"numFiles\":").unwrap();
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert_eq!(head.source(), &HeadSource::Log);
        assert_eq!(head.transaction_version("app"), Some(2));
        let snapshot = head.snapshot().await.unwrap();
        assert_eq!(snapshot.num_files(), 2);
        table.append_transaction("WRITE").await.unwrap();
    }

    #[tokio::test]
    async fn a_checksum_the_newest_commit_contradicts_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        let mut tx = table.transaction("SET TBLPROPERTIES").await.unwrap();
        let update = MetadataUpdate {
            description: Some("from the log".into()),
            ..MetadataUpdate::default()
        };
        tx.update_metadata(update).unwrap();
        tx.commit().await.unwrap();
        let crc = log_file(&dir, "00000000000000000003.crc");
        let text = std::fs::read_to_string(&crc).unwrap();
        std::fs::write(&crc, text.replace("from the log", "from the crc")).unwrap();
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert_eq!(head.source(), &HeadSource::Log);
        assert_eq!(head.metadata().description.as_deref(), Some("from the log"));
    }

    #[tokio::test]
    async fn a_replay_that_contradicts_the_checksum_is_a_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        let crc = log_file(&dir, "00000000000000000002.crc");
        let text = std::fs::read_to_string(&crc).unwrap();
        std::fs::write(&crc, text.replace("from-log", "from-crc")).unwrap();
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert_eq!(head.domain_metadata("user.d"), Some("from-crc"));
        let error = head.snapshot().await.unwrap_err();
        assert!(
            matches!(&error, Error::ChecksumMismatch { path, reason }
                if path.ends_with("00000000000000000002.crc") && reason.contains("domainMetadata")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn without_a_checksum_the_head_is_read_from_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        std::fs::remove_file(log_file(&dir, "00000000000000000002.crc")).unwrap();
        let head = table.snapshot_head(SnapshotAt::Version(2)).await.unwrap();
        assert_eq!(head.source(), &HeadSource::Log);
        assert_eq!(head.domain_metadata("user.d"), Some("from-log"));
        let at_one = table.snapshot_head(SnapshotAt::Version(1)).await.unwrap();
        assert!(matches!(at_one.source(), HeadSource::Checksum(_)));
        assert_eq!(at_one.transaction_version("app"), Some(1));
    }

    #[tokio::test]
    async fn the_file_count_and_size_come_from_the_checksum_without_a_replay() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        let replayed = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let expected = TableSize {
            num_files: 2,
            size_in_bytes: 200,
        };
        assert_eq!(table_size_of(&replayed), expected);
        // The earlier commits unreadable: a replay would fail, the checksum answers.
        for version in 0..2 {
            let name = format!("{version:020}.json");
            std::fs::write(log_file(&dir, &name), "not a commit\n").unwrap();
        }
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert_eq!(head.table_size_from_checksum(), Some(expected));
        assert_eq!(head.table_size().await.unwrap(), expected);
    }

    #[tokio::test]
    async fn without_a_checksum_the_file_count_and_size_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        std::fs::remove_file(log_file(&dir, "00000000000000000002.crc")).unwrap();
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert_eq!(head.table_size_from_checksum(), None);
        let size = head.table_size().await.unwrap();
        assert_eq!((size.num_files, size.size_in_bytes), (2, 200));
    }

    #[tokio::test]
    async fn a_wrong_checksum_file_count_is_reported_until_the_replay() {
        let dir = tempfile::tempdir().unwrap();
        let table = three_versions(&dir).await;
        let crc = log_file(&dir, "00000000000000000002.crc");
        let text = std::fs::read_to_string(&crc).unwrap();
        std::fs::write(&crc, text.replace("\"numFiles\":2", "\"numFiles\":7")).unwrap();
        let head = table.snapshot_head(SnapshotAt::Latest).await.unwrap();
        assert_eq!(
            head.table_size_from_checksum().map(|s| s.num_files),
            Some(7)
        );
        let snapshot = head.snapshot().await.unwrap();
        assert_eq!(snapshot.num_files(), 2);
        let error = snapshot.validate_checksum().await.unwrap_err();
        assert!(
            matches!(&error, Error::ChecksumMismatch { reason, .. } if reason.contains("numFiles")),
            "{error}"
        );
    }
}
