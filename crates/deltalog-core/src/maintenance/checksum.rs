//! Computing and writing version checksum files (`_delta_log/<v>.crc`, read by
//! `crate::log::checksum`): from a snapshot's state ([`VersionChecksum::from_snapshot`]), or
//! from the previous version's checksum and one commit's actions
//! ([`VersionChecksum::apply_commit`], as Spark's incremental commit does); and checking a
//! snapshot against its file ([`Snapshot::validate_checksum`]).

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, StructArray};
use bytes::Bytes;

use crate::actions::layout::add;
use crate::actions::{DomainMetadata, Metadata, Protocol, Txn};
use crate::error::{Error, Result};
use crate::log::checksum::{read_checksum, FileSizeHistogram, VersionChecksum};
use crate::log::decode::commit::DecodedActions;
use crate::log::path::checksum_file_name;
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::table_config::TableFeature;

/// Operations whose adds re-add live files unchanged, which an incremental checksum ignores
/// (Spark's `operationNamesWhereAddFilesIgnoredForIncrementalCrc`).
const READDING_OPERATIONS: [&str; 4] = [
    "COMPUTE STATS",
    "ROW TRACKING BACKFILL",
    "ROW TRACKING UNBACKFILL",
    "DROP FEATURE",
];

/// Operations whose removes are not of data files, which an incremental checksum ignores
/// (Spark's `operationNamesWhereRemoveFilesIgnoredForIncrementalCrc`): the tombstones of
/// deletion vector files that dropping `deletionVectors` commits.
const TOMBSTONING_OPERATIONS: [&str; 1] = ["Deletion Vector Tombstones"];

/// Spark writes `setTransactions` only up to this many (`DELTA_MAX_SET_TRANSACTIONS_IN_CRC`).
const MAX_SET_TRANSACTIONS: usize = 100;
/// Spark writes `domainMetadata` only up to this many (`DELTA_MAX_DOMAIN_METADATAS_IN_CRC`).
const MAX_DOMAINS: usize = 10;

impl VersionChecksum {
    /// The checksum of `snapshot`'s version, computed from its state; `txn_id` is the
    /// commit's, when known.
    ///
    /// Replays the snapshot's file list when it is not yet (see `Snapshot::replayed`).
    pub async fn from_snapshot(
        snapshot: &Snapshot,
        txn_id: Option<String>,
    ) -> Result<VersionChecksum> {
        let config = snapshot.table_configuration();
        let mut summary =
            FileSummary::new(config.is_feature_supported(&TableFeature::DeletionVectors));
        let state = snapshot.replayed().await?;
        for adds in &state.files.adds {
            summary.add_all(adds, 1)?;
        }
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
    /// (Spark's `computeNewChecksum`; the adds of an operation that re-adds live files, such as
    /// `ROW TRACKING BACKFILL`, are not counted). `None` when it cannot be derived: a `remove` without a
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
        let operation = commit
            .commit_info
            .as_ref()
            .and_then(|info| info.operation());
        let readds = operation.is_some_and(|op| READDING_OPERATIONS.contains(&op));
        let tombstones = operation.is_some_and(|op| TOMBSTONING_OPERATIONS.contains(&op));
        for batch in &commit.file_actions {
            if !readds {
                summary.add_all(&batch.adds, 1)?;
            }
            if !tombstones && !summary.remove_all(&batch.removes)? {
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

impl Snapshot {
    /// The version checksum of this version: the `.crc` file's content when the version has
    /// one, else computed from the state (spec-free: Delta on Spark's `VersionChecksum`).
    pub async fn version_checksum(&self) -> Result<VersionChecksum> {
        match read_checksum(self.storage(), self.version()).await? {
            Some(stored) => Ok(stored),
            None => VersionChecksum::from_snapshot(self, self.commit_txn_id()).await,
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
        let computed = VersionChecksum::from_snapshot(self, None).await?;
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
