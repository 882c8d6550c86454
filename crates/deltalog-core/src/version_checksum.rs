//! Version checksum files, `_delta_log/<v>.crc`: the state summary Delta on Spark writes after
//! each commit and checks a replayed snapshot against (delta-io/delta `Checksum.scala`,
//! `VersionChecksum`), and that lets a reader take the protocol and metadata of a version
//! without replaying its log.
//!
//! The JSON is Spark's: `txnId`, `tableSizeBytes`, `numFiles`, `numDeletedRecordsOpt` and
//! `numDeletionVectorsOpt` (tables that support deletion vectors), `numMetadata`,
//! `numProtocol`, `inCommitTimestampOpt`, `setTransactions` (up to 100, as Spark), `domainMetadata`
//! (the live domains, up to 10, as Spark), `metadata`, `protocol` and `histogramOpt` (file
//! sizes binned by Spark's default boundaries; read under either of its names); absent fields
//! are left out and `allFiles` is never written.
//!
//! A checksum is computed from a snapshot's state ([`VersionChecksum::from_snapshot`]), or
//! from the previous version's checksum and one commit's actions
//! ([`VersionChecksum::apply_commit`], as Spark's incremental commit does).

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, StructArray};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::actions::layout::add;
use crate::actions::{CommitInfo, DomainMetadata, Metadata, Protocol, Txn};
use crate::error::{Error, Result};
use crate::log::decode::commit::DecodedActions;
use crate::log::path::checksum_file_name;
use crate::log::segment::LogSegment;
use crate::replay::load::TableState;
use crate::replay::reconcile::ReplayedFiles;
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::table_config::{TableFeature, TableProperties};

/// Spark writes `setTransactions` only up to this many (`DELTA_MAX_SET_TRANSACTIONS_IN_CRC`).
const MAX_SET_TRANSACTIONS: usize = 100;
/// Spark writes `domainMetadata` only up to this many (`DELTA_MAX_DOMAIN_METADATAS_IN_CRC`).
const MAX_DOMAINS: usize = 10;

/// The content of a `<v>.crc` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionChecksum {
    /// The `commitInfo.txnId` of the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_id: Option<String>,
    /// The sum of the sizes of the live files.
    pub table_size_bytes: i64,
    /// The number of live files.
    pub num_files: i64,
    /// The rows deleted by deletion vectors (tables supporting them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_deleted_records_opt: Option<i64>,
    /// The live files with a deletion vector (tables supporting them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_deletion_vectors_opt: Option<i64>,
    /// Always 1.
    pub num_metadata: i64,
    /// Always 1.
    pub num_protocol: i64,
    /// The in-commit timestamp of the version, when the table records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_commit_timestamp_opt: Option<i64>,
    /// Every `txn` of the version, sorted by app id (absent when too many).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_transactions: Option<Vec<Txn>>,
    /// Every live domain, sorted by name (absent when too many).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_metadata: Option<Vec<DomainMetadata>>,
    pub metadata: Metadata,
    pub protocol: Protocol,
    /// The file size histogram (Spark's `histogramOpt`, the spec's `fileSizeHistogram`).
    #[serde(
        default,
        rename = "histogramOpt",
        alias = "fileSizeHistogram",
        skip_serializing_if = "Option::is_none"
    )]
    pub file_size_histogram: Option<FileSizeHistogram>,
}

/// File counts and bytes per size bin (Spark's `FileSizeHistogram`): bin `i` holds the files of
/// at least `sorted_bin_boundaries[i]` bytes and less than the next boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSizeHistogram {
    pub sorted_bin_boundaries: Vec<i64>,
    pub file_counts: Vec<i64>,
    pub total_bytes: Vec<i64>,
}

impl FileSizeHistogram {
    /// An empty histogram with Spark's default bins.
    pub fn empty() -> FileSizeHistogram {
        let boundaries = default_bins();
        let bins = boundaries.len();
        FileSizeHistogram {
            sorted_bin_boundaries: boundaries,
            file_counts: vec![0; bins],
            total_bytes: vec![0; bins],
        }
    }

    /// Counts a file of `size` bytes in.
    pub fn insert(&mut self, size: i64) {
        self.update(size, 1);
    }

    /// Counts a file of `size` bytes out.
    pub fn remove(&mut self, size: i64) {
        self.update(size, -1);
    }

    fn update(&mut self, size: i64, sign: i64) {
        let bin = self
            .sorted_bin_boundaries
            .partition_point(|start| *start <= size);
        let Some(index) = bin.checked_sub(1) else {
            return;
        };
        if let (Some(count), Some(bytes)) = (
            self.file_counts.get_mut(index),
            self.total_bytes.get_mut(index),
        ) {
            *count += sign;
            *bytes += sign * size;
        }
    }
}

/// Spark's `FileSizeHistogram.DEFAULT_BINS`.
fn default_bins() -> Vec<i64> {
    const KB: i64 = 1024;
    const MB: i64 = 1024 * KB;
    const GB: i64 = 1024 * MB;
    let mut bins = vec![0];
    bins.extend([8, 16, 32, 64, 128, 256, 512].map(|k| k * KB));
    bins.extend([1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40].map(|m| m * MB));
    bins.extend((48..=120).step_by(8).map(|m| m * MB));
    bins.extend([124, 128, 132, 136, 140, 144].map(|m| m * MB));
    bins.extend((160..=576).step_by(16).map(|m| m * MB));
    bins.extend((640..=1408).step_by(64).map(|m| m * MB));
    bins.extend((1536..=2048).step_by(128).map(|m| m * MB));
    bins.extend((2304..=3840).step_by(256).map(|m| m * MB));
    bins.extend([4, 8, 16, 32, 64, 128, 256].map(|g| g * GB));
    bins
}

impl VersionChecksum {
    /// The checksum of `snapshot`'s version, computed from its state; `txn_id` is the
    /// commit's, when known.
    pub fn from_snapshot(snapshot: &Snapshot, txn_id: Option<String>) -> Result<VersionChecksum> {
        let config = snapshot.table_configuration();
        let mut summary =
            FileSummary::new(config.is_feature_supported(&TableFeature::DeletionVectors));
        for adds in snapshot.add_actions() {
            summary.add_all(adds, 1)?;
        }
        let state = snapshot.state();
        let mut txns: Vec<Txn> = state.txns.values().cloned().collect();
        txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
        let mut domains: Vec<DomainMetadata> = state
            .domains
            .values()
            .filter(|d| !d.removed)
            .cloned()
            .collect();
        domains.sort_by(|a, b| a.domain.cmp(&b.domain));
        let in_commit_timestamp = match config.is_in_commit_timestamps_enabled() {
            true => Some(snapshot.timestamp_ms()),
            false => None,
        };
        Ok(summary.into_checksum(
            txn_id,
            config.metadata().clone(),
            config.protocol().clone(),
            in_commit_timestamp,
            txns,
            domains,
        ))
    }

    /// The checksum of the version after `previous`'s, given that version's commit actions
    /// (Spark's `computeNewChecksum`). `None` when it cannot be derived: a `remove` without a
    /// size, or a `previous` without its histogram, transactions or domains.
    pub(crate) fn apply_commit(
        previous: &VersionChecksum,
        commit: &DecodedActions,
        txn_id: Option<String>,
    ) -> Result<Option<VersionChecksum>> {
        let (Some(histogram), Some(old_txns), Some(old_domains)) = (
            previous.file_size_histogram.clone(),
            previous.set_transactions.as_ref(),
            previous.domain_metadata.as_ref(),
        ) else {
            return Ok(None);
        };
        let protocol = commit
            .protocol
            .clone()
            .unwrap_or_else(|| previous.protocol.clone());
        let uses_dvs =
            crate::table_config::features::supports(&protocol, &TableFeature::DeletionVectors);
        let mut summary = FileSummary {
            size: previous.table_size_bytes,
            files: previous.num_files,
            deleted_records: previous.num_deleted_records_opt.filter(|_| uses_dvs),
            deletion_vectors: previous.num_deletion_vectors_opt.filter(|_| uses_dvs),
            histogram,
        };
        if uses_dvs && summary.deleted_records.is_none() && previous.num_files == 0 {
            summary.deleted_records = Some(0);
            summary.deletion_vectors = Some(0);
        }
        for batch in &commit.file_actions {
            summary.add_all(&batch.adds, 1)?;
            if !summary.remove_all(&batch.removes)? {
                return Ok(None);
            }
        }
        let mut txns: BTreeMap<String, Txn> = old_txns
            .iter()
            .map(|t| (t.app_id.clone(), t.clone()))
            .collect();
        txns.extend(commit.txns.iter().map(|t| (t.app_id.clone(), t.clone())));
        let mut domains: BTreeMap<String, DomainMetadata> = old_domains
            .iter()
            .map(|d| (d.domain.clone(), d.clone()))
            .collect();
        for domain in &commit.domains {
            match domain.removed {
                true => domains.remove(&domain.domain),
                false => domains.insert(domain.domain.clone(), domain.clone()),
            };
        }
        let in_commit_timestamp = commit
            .commit_info
            .as_ref()
            .and_then(|info| info.in_commit_timestamp());
        Ok(Some(
            summary.into_checksum(
                txn_id,
                commit
                    .metadata
                    .clone()
                    .unwrap_or_else(|| previous.metadata.clone()),
                protocol,
                in_commit_timestamp,
                txns.into_values().collect(),
                domains.into_values().collect(),
            ),
        ))
    }

    /// Parses the content of a `.crc` file (`file` names it in errors).
    pub fn parse(bytes: &[u8], file: &str) -> Result<VersionChecksum> {
        let text = std::str::from_utf8(bytes)
            .map_err(|error| Error::corrupt(file, format!("not UTF-8: {error}")))?;
        let line = text
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default();
        serde_json::from_str(line)
            .map_err(|error| Error::corrupt(file, format!("not a version checksum: {error}")))
    }

    /// The JSON line of the file, as Spark writes it.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|error| {
            Error::internal_invariant(format!("cannot serialise a version checksum: {error}"))
        })
    }

    /// The fields of `self` (read from a file) that differ from `computed`, each with both
    /// values, as Spark's `checkMismatch` compares them: sizes, counts, metadata, protocol,
    /// transactions and domains when the file has them, the histogram when both have one.
    pub fn mismatches(&self, computed: &VersionChecksum) -> Vec<String> {
        let mut found = Vec::new();
        let mut compare = |name: &str, stored: String, actual: String| {
            if stored != actual {
                found.push(format!(
                    "{name}: the file says {stored}, the log gives {actual}"
                ));
            }
        };
        compare(
            "tableSizeBytes",
            self.table_size_bytes.to_string(),
            computed.table_size_bytes.to_string(),
        );
        compare(
            "numFiles",
            self.num_files.to_string(),
            computed.num_files.to_string(),
        );
        compare("numMetadata", self.num_metadata.to_string(), "1".into());
        compare("numProtocol", self.num_protocol.to_string(), "1".into());
        if self.metadata != computed.metadata {
            compare(
                "metadata",
                format!("{:?}", self.metadata),
                format!("{:?}", computed.metadata),
            );
        }
        if self.protocol != computed.protocol {
            compare(
                "protocol",
                format!("{:?}", self.protocol),
                format!("{:?}", computed.protocol),
            );
        }
        if let (Some(stored), Some(actual)) = (&self.set_transactions, &computed.set_transactions) {
            let sorted = |txns: &Vec<Txn>| {
                let mut txns = txns.clone();
                txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
                format!("{txns:?}")
            };
            compare("setTransactions", sorted(stored), sorted(actual));
        }
        if let (Some(stored), Some(actual)) = (&self.domain_metadata, &computed.domain_metadata) {
            let sorted = |domains: &Vec<DomainMetadata>| {
                let mut domains = domains.clone();
                domains.sort_by(|a, b| a.domain.cmp(&b.domain));
                format!("{domains:?}")
            };
            compare("domainMetadata", sorted(stored), sorted(actual));
        }
        if let (Some(stored), Some(actual)) =
            (&self.file_size_histogram, &computed.file_size_histogram)
        {
            if stored != actual {
                compare("histogramOpt", format!("{stored:?}"), format!("{actual:?}"));
            }
        }
        for (name, stored, actual) in [
            (
                "numDeletedRecordsOpt",
                self.num_deleted_records_opt,
                computed.num_deleted_records_opt,
            ),
            (
                "numDeletionVectorsOpt",
                self.num_deletion_vectors_opt,
                computed.num_deletion_vectors_opt,
            ),
        ] {
            if let (Some(stored), Some(actual)) = (stored, actual) {
                compare(name, stored.to_string(), actual.to_string());
            }
        }
        found
    }
}

/// Reads `<version>.crc`, or `None` when there is none.
pub(crate) async fn read_checksum(
    storage: &Storage,
    version: u64,
) -> Result<Option<VersionChecksum>> {
    let path = storage.log_file(&checksum_file_name(version));
    match storage.read_if_exists(&path).await? {
        Some(bytes) => VersionChecksum::parse(&bytes, &storage.url_of(&path)).map(Some),
        None => Ok(None),
    }
}

/// Writes `<version>.crc` unless it exists (a checksum file is never replaced). Returns its URL.
pub(crate) async fn write_checksum(
    storage: &Storage,
    version: u64,
    checksum: &VersionChecksum,
) -> Result<String> {
    let path = storage.log_file(&checksum_file_name(version));
    let text = checksum.to_json()? + "\n";
    storage.put_if_absent(&path, Bytes::from(text)).await?;
    Ok(storage.url_of(&path))
}

/// The non-file state of `segment.end_version` (protocol, metadata, `txn` versions, domains,
/// in-commit timestamp) taken from its `.crc` file without reading any commit or checkpoint:
/// `None` when the segment lists no checksum for its version, the file does not parse (Delta on
/// Spark ignores an unreadable checksum and replays), or the checksum lacks the transactions,
/// the domains, or the in-commit timestamp of a table that records them.
pub(crate) async fn non_file_state_from_checksum(
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
pub(crate) struct ChecksumState {
    pub state: TableState,
    pub num_files: i64,
    pub table_size_bytes: i64,
}

impl Snapshot {
    /// The version checksum of this version: the `.crc` file's content when the version has
    /// one, else computed from the state (spec-free: Delta on Spark's `VersionChecksum`).
    pub async fn version_checksum(&self) -> Result<VersionChecksum> {
        match read_checksum(self.storage(), self.version()).await? {
            Some(stored) => Ok(stored),
            None => VersionChecksum::from_snapshot(self, self.commit_txn_id()),
        }
    }

    /// The content of this version's `.crc` file, or `None` when it has none.
    pub async fn stored_version_checksum(&self) -> Result<Option<VersionChecksum>> {
        read_checksum(self.storage(), self.version()).await
    }

    /// Checks the `.crc` file of this version, when there is one, against the replayed state.
    /// Returns whether a file was checked; a difference is an [`Error::ChecksumMismatch`]
    /// naming the file and every field that differs.
    pub async fn validate_checksum(&self) -> Result<bool> {
        let Some(stored) = read_checksum(self.storage(), self.version()).await? else {
            return Ok(false);
        };
        let computed = VersionChecksum::from_snapshot(self, None)?;
        let mismatches = stored.mismatches(&computed);
        if mismatches.is_empty() {
            return Ok(true);
        }
        let path = self.storage().log_file(&checksum_file_name(self.version()));
        Err(Error::ChecksumMismatch {
            path: self.storage().url_of(&path),
            reason: mismatches.join("; "),
        })
    }

    fn commit_txn_id(&self) -> Option<String> {
        self.commit_info()
            .and_then(|info| info.txn_id())
            .map(str::to_string)
    }
}

/// Running totals over file actions.
struct FileSummary {
    size: i64,
    files: i64,
    deleted_records: Option<i64>,
    deletion_vectors: Option<i64>,
    histogram: FileSizeHistogram,
}

impl FileSummary {
    fn new(uses_dvs: bool) -> FileSummary {
        FileSummary {
            size: 0,
            files: 0,
            deleted_records: uses_dvs.then_some(0),
            deletion_vectors: uses_dvs.then_some(0),
            histogram: FileSizeHistogram::empty(),
        }
    }

    /// Counts the valid rows of `adds` in (`sign` 1) or out (-1).
    fn add_all(&mut self, adds: &StructArray, sign: i64) -> Result<()> {
        let sizes = sizes(adds);
        let cardinalities = dv_cardinalities(adds);
        for row in (0..adds.len()).filter(|row| adds.is_valid(*row)) {
            let size = sizes
                .filter(|s| s.is_valid(row))
                .map_or(0, |s| s.value(row));
            self.count(size, cardinalities.as_ref().and_then(|c| c[row]), sign);
        }
        Ok(())
    }

    /// Counts the valid rows of `removes` out; false when one has no size.
    fn remove_all(&mut self, removes: &StructArray) -> Result<bool> {
        let sizes = sizes(removes);
        let cardinalities = dv_cardinalities(removes);
        for row in (0..removes.len()).filter(|row| removes.is_valid(*row)) {
            let Some(size) = sizes.filter(|s| s.is_valid(row)).map(|s| s.value(row)) else {
                return Ok(false);
            };
            self.count(size, cardinalities.as_ref().and_then(|c| c[row]), -1);
        }
        Ok(true)
    }

    fn count(&mut self, size: i64, dv_cardinality: Option<i64>, sign: i64) {
        self.size += sign * size;
        self.files += sign;
        match sign {
            1 => self.histogram.insert(size),
            _ => self.histogram.remove(size),
        }
        if let Some(cardinality) = dv_cardinality {
            self.deleted_records = self.deleted_records.map(|n| n + sign * cardinality);
            self.deletion_vectors = self.deletion_vectors.map(|n| n + sign);
        }
    }

    fn into_checksum(
        self,
        txn_id: Option<String>,
        metadata: Metadata,
        protocol: Protocol,
        in_commit_timestamp: Option<i64>,
        txns: Vec<Txn>,
        domains: Vec<DomainMetadata>,
    ) -> VersionChecksum {
        VersionChecksum {
            txn_id,
            table_size_bytes: self.size,
            num_files: self.files,
            num_deleted_records_opt: self.deleted_records,
            num_deletion_vectors_opt: self.deletion_vectors,
            num_metadata: 1,
            num_protocol: 1,
            in_commit_timestamp_opt: in_commit_timestamp,
            set_transactions: (txns.len() <= MAX_SET_TRANSACTIONS).then_some(txns),
            domain_metadata: (domains.len() <= MAX_DOMAINS).then_some(domains),
            metadata,
            protocol,
            file_size_histogram: Some(self.histogram),
        }
    }
}

fn sizes(actions: &StructArray) -> Option<&arrow_array::Int64Array> {
    actions
        .column_by_name(add::SIZE)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
}

/// The deletion vector cardinality of each row (`None` without a deletion vector).
fn dv_cardinalities(actions: &StructArray) -> Option<Vec<Option<i64>>> {
    let dvs = actions
        .column_by_name(add::DELETION_VECTOR)?
        .as_struct_opt()?;
    let cardinality = dvs
        .column_by_name("cardinality")?
        .as_primitive_opt::<Int64Type>()?;
    Some(
        (0..dvs.len())
            .map(|row| {
                (dvs.is_valid(row) && cardinality.is_valid(row)).then(|| cardinality.value(row))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_bins_are_sparks() {
        let bins = default_bins();
        assert_eq!(bins.len(), 95);
        assert_eq!(bins[0], 0);
        assert_eq!(bins[1], 8 * 1024);
        assert!(bins.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(bins.last().copied(), Some(256 * 1024 * 1024 * 1024));
    }

    #[test]
    fn histogram_bins_by_lower_bound() {
        let mut histogram = FileSizeHistogram::empty();
        histogram.insert(100);
        histogram.insert(8 * 1024);
        histogram.insert(8 * 1024 - 1);
        assert_eq!(histogram.file_counts[0], 2);
        assert_eq!(histogram.file_counts[1], 1);
        assert_eq!(histogram.total_bytes[0], 100 + 8 * 1024 - 1);
        histogram.remove(100);
        assert_eq!(histogram.file_counts[0], 1);
    }

    #[test]
    fn spark_field_names_round_trip() {
        let text = r#"{"txnId":"t","tableSizeBytes":10,"numFiles":1,"numMetadata":1,"numProtocol":1,"setTransactions":[],"domainMetadata":[],"metadata":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{},"createdTime":1},"protocol":{"minReaderVersion":1,"minWriterVersion":2},"fileSizeHistogram":{"sortedBinBoundaries":[0],"fileCounts":[1],"totalBytes":[10]},"allFiles":[]}"#;
        let checksum = VersionChecksum::parse(text.as_bytes(), "x.crc").unwrap();
        assert_eq!(
            checksum.file_size_histogram.as_ref().unwrap().total_bytes,
            vec![10]
        );
        let written = checksum.to_json().unwrap();
        assert!(written.contains("\"histogramOpt\""));
        assert!(!written.contains("allFiles"));
        assert_eq!(
            VersionChecksum::parse(written.as_bytes(), "y").unwrap(),
            checksum
        );
    }
}
