//! A snapshot's head from the version's `.crc` file (Delta on Spark's `VersionChecksum`,
//! written after each commit) and its newest commit file: no checkpoint is read and no
//! earlier commit, as Delta on Spark and Trino take protocol and metadata from the checksum.
//!
//! The head also knows the version's file count and size (`numFiles`, `tableSizeBytes`), as
//! Delta on Spark takes them from the checksum. A replay does not check those (a read never
//! fails on them, as in Delta on Spark); `Snapshot::validate_checksum` does.
//!
//! A checksum is used only when it parses, carries the transactions and domains, and agrees
//! with the protocol and metadata of the newest commit when that commit changes them;
//! otherwise the head is read from the log, as Delta on Spark ignores an unreadable checksum.
//! When the file list is later replayed, the replayed protocol, metadata, transactions and
//! domains must equal the checksum's ([`differences`]).

use crate::actions::CommitInfo;
use crate::error::{Error, Result};
use crate::log::checksum::read_checksum;
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use crate::log::path::checksum_file_name;
use crate::log::segment::LogSegment;
use crate::replay::load::TableState;
use crate::replay::reconcile::ReplayedFiles;
use crate::snapshot::{live_domains, transactions_of, TableSize};
use crate::storage::Storage;
use crate::table_config::TableProperties;
use crate::util::cpu;

/// A head read from a `.crc` file.
pub(crate) struct ChecksumHead {
    /// Protocol, metadata, transactions, domains and the newest commit's `commitInfo`.
    pub state: TableState,
    /// The file's `numFiles` and `tableSizeBytes`.
    pub size: TableSize,
    /// The URL of the `.crc` file.
    pub checksum_url: String,
}

/// The fields of the `head` state that the `replayed` state contradicts.
pub(crate) fn differences(head: &TableState, replayed: &TableState) -> Vec<String> {
    let mut found = Vec::new();
    if replayed.protocol != head.protocol {
        found.push(format!(
            "protocol: the file says {:?}, the log gives {:?}",
            head.protocol, replayed.protocol
        ));
    }
    if replayed.metadata != head.metadata {
        found.push(format!(
            "metadata: the file says {:?}, the log gives {:?}",
            head.metadata, replayed.metadata
        ));
    }
    if transactions_of(replayed) != transactions_of(head) {
        found.push("setTransactions differ from the log's".into());
    }
    if live_domains(replayed) != live_domains(head) {
        found.push("domainMetadata differs from the log's".into());
    }
    found
}

/// The head of `segment`'s version from its checksum and newest commit; `None` when the
/// checksum is absent, unusable, or contradicted by the newest commit.
pub(crate) async fn head(storage: &Storage, segment: &LogSegment) -> Result<Option<ChecksumHead>> {
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
    let checksum_url = storage.url_of(&crc);
    Ok(Some(ChecksumHead {
        state,
        size,
        checksum_url,
    }))
}

/// The non-file state of `segment.end_version` (protocol, metadata, `txn` versions, domains,
/// in-commit timestamp) taken from its `.crc` file without reading any commit or checkpoint:
/// `None` when the segment lists no checksum for its version, the file does not parse (Delta on
/// Spark ignores an unreadable checksum and replays), or the checksum lacks the transactions,
/// the domains, or the in-commit timestamp of a table that records them.
async fn non_file_state_from_checksum(
    storage: &Storage,
    segment: &LogSegment,
) -> Result<Option<ChecksumState>> {
    if segment.checksum.is_none() {
        return Ok(None);
    }
    let checksum = match read_checksum(storage, segment.end_version).await {
        Ok(Some(checksum)) => checksum,
        Ok(None) | Err(Error::CorruptLogFile { .. }) => return Ok(None),
        Err(error) => return Err(error),
    };
    let (Some(txns), Some(domains)) = (checksum.set_transactions, checksum.domain_metadata) else {
        return Ok(None);
    };
    let properties = TableProperties::from_configuration(&checksum.metadata.configuration);
    let commit_info = match (
        properties.enable_in_commit_timestamps,
        checksum.in_commit_timestamp_opt,
    ) {
        (true, None) => return Ok(None),
        (_, Some(timestamp)) => {
            let mut raw = serde_json::Map::new();
            raw.insert("inCommitTimestamp".into(), timestamp.into());
            Some(CommitInfo { raw })
        }
        (false, None) => None,
    };
    let (num_files, table_size_bytes) = (checksum.num_files, checksum.table_size_bytes);
    let state = TableState {
        version: segment.end_version,
        protocol: checksum.protocol,
        metadata: checksum.metadata,
        files: ReplayedFiles::default(),
        txns: txns
            .into_iter()
            .map(|txn| (txn.app_id.clone(), txn))
            .collect(),
        domains: domains.into_iter().map(|d| (d.domain.clone(), d)).collect(),
        commit_info,
        has_stats: false,
    };
    Ok(Some(ChecksumState {
        state,
        num_files,
        table_size_bytes,
    }))
}

/// The non-file state a `.crc` file gives, with its `numFiles` and `tableSizeBytes`.
struct ChecksumState {
    pub state: TableState,
    pub num_files: i64,
    pub table_size_bytes: i64,
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

/// The decoded commit file of the segment's version, when the segment replays it: its
/// protocol, metadata and `commitInfo` (its `add` and `remove` lines are checked to be JSON,
/// not decoded: the head needs no file list).
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
        stats: StatsText::Dropped,
        skip_file_actions: true,
        skip_commit_info: false,
    };
    let file = name.clone();
    let decode = move || decode_actions(&bytes, version, &name, options);
    cpu::run(decode, |reason| Error::corrupt(file, reason))
        .await
        .map(Some)
}
