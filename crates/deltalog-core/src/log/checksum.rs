//! Version checksum files, `_delta_log/<v>.crc`, as read: the state summary Delta on Spark
//! writes after each commit and checks a replayed snapshot against (delta-io/delta
//! `Checksum.scala`, `VersionChecksum`), and that lets a reader take the protocol and metadata
//! of a version without replaying its log (`crate::snapshot::from_checksum`).
//!
//! The JSON is Spark's: `txnId`, `tableSizeBytes`, `numFiles`, `numDeletedRecordsOpt` and
//! `numDeletionVectorsOpt` (tables that support deletion vectors), `numMetadata`,
//! `numProtocol`, `inCommitTimestampOpt`, `setTransactions` (up to 100, as Spark), `domainMetadata`
//! (the live domains, up to 10, as Spark), `metadata`, `protocol` and `histogramOpt` (file
//! sizes binned by Spark's default boundaries; read under either of its names); absent fields
//! are left out and `allFiles` is never written. Computing and writing a checksum is
//! `crate::maintenance::checksum`.

use serde::{Deserialize, Serialize};

use crate::actions::{DomainMetadata, Metadata, Protocol, Txn};
use crate::error::{Error, Result};
use crate::log::path::checksum_file_name;
use crate::storage::Storage;

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
