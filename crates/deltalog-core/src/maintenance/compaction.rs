//! Writing log compaction files, `<x>.<y>.compacted.json` (spec "Log Compaction Files"): the
//! commits `x..=y` reconciled into one JSON file that readers may read instead of them.
//!
//! The file holds, per the rules of action reconciliation applied to those commits only: the
//! newest `protocol` and `metaData` of the range (when it has one), the newest `txn` per
//! application, the newest `domainMetadata` per domain (removals included: they cancel older
//! ones), and for every file the newest of its `add` or `remove` (removes are kept whatever
//! their age: they cancel adds of earlier commits). `commitInfo` and `cdc` are left out.

use std::collections::HashMap;

use bytes::Bytes;

use crate::actions::{DomainMetadata, Txn};
use crate::error::{Error, Result};
use crate::log::commit_range::CommitRange;
use crate::log::encode::{
    domain_metadata_line, metadata_line, protocol_line, txn_line, write_add_lines,
    write_remove_lines,
};
use crate::log::list_log_from;
use crate::log::path::compaction_file_name;
use crate::replay::load::decode_commits;
use crate::replay::reconcile::{replay_files, FileKeys};
use crate::storage::Storage;

/// Writes the log compaction file of the commits `start_version..=end_version` and returns
/// its URL ([`crate::Table::compact_logs`]).
pub(crate) async fn compact_logs(
    storage: &Storage,
    start_version: u64,
    end_version: u64,
) -> Result<String> {
    if start_version >= end_version {
        return Err(Error::InvalidArgument(format!(
            "a log compaction needs start_version < end_version, got {start_version} and \
             {end_version}"
        )));
    }
    let listing = list_log_from(storage, start_version).await?;
    let range = CommitRange::from_listing(storage.uri(), &listing, start_version, end_version)?;
    let commits = decode_commits(range.read_all(storage).await?, true).await?;
    let keys = FileKeys::new(storage.root_url());
    let uri = storage.uri().to_string();
    let content = crate::util::cpu::run(
        move || compacted_lines(commits, &keys),
        |reason| Error::invalid_table(uri, reason),
    )
    .await?;
    let path = storage.log_file(&compaction_file_name(start_version, end_version));
    if !storage.put_if_absent(&path, Bytes::from(content)).await? {
        return Err(Error::NotAllowed(format!(
            "the log compaction file {} already exists",
            storage.url_of(&path)
        )));
    }
    Ok(storage.url_of(&path))
}

/// The reconciled actions of `commits` (newest first) as JSON lines.
fn compacted_lines(commits: crate::replay::load::Deltas, keys: &FileKeys) -> Result<Vec<u8>> {
    let mut protocol = None;
    let mut metadata = None;
    let mut txns: HashMap<String, Txn> = HashMap::new();
    let mut domains: HashMap<String, DomainMetadata> = HashMap::new();
    let mut batches = Vec::new();
    for (_, commit) in commits {
        protocol = protocol.or(commit.protocol);
        metadata = metadata.or(commit.metadata);
        for txn in commit.txns {
            txns.entry(txn.app_id.clone()).or_insert(txn);
        }
        for domain in commit.domains {
            domains.entry(domain.domain.clone()).or_insert(domain);
        }
        batches.extend(commit.file_actions);
    }
    let files = replay_files(batches, Vec::new(), keys)?;
    let mut out = Vec::new();
    let mut push = |line: String| {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    };
    if let Some(protocol) = &protocol {
        push(protocol_line(protocol));
    }
    if let Some(metadata) = &metadata {
        push(metadata_line(metadata));
    }
    let mut txns: Vec<Txn> = txns.into_values().collect();
    txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
    txns.iter().for_each(|txn| push(txn_line(txn)));
    let mut domains: Vec<DomainMetadata> = domains.into_values().collect();
    domains.sort_by(|a, b| a.domain.cmp(&b.domain));
    domains
        .iter()
        .for_each(|domain| push(domain_metadata_line(domain)));
    for adds in &files.adds {
        write_add_lines(adds, &mut out)?;
    }
    for removes in &files.removes {
        write_remove_lines(removes, &mut out)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::log::segment::build_log_segment;
    use crate::snapshot::SnapshotAt;
    use crate::util::test_tables::{state_of, table_with_history};

    #[tokio::test]
    async fn a_compaction_file_replaces_its_commits_for_readers() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(&dir, &[], 4).await;
        let before = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let written = table.compact_logs(1, 3).await.unwrap();
        assert!(written.ends_with("00000000000000000001.00000000000000000003.compacted.json"));
        let listing = crate::log::list_log_from(table.storage(), 0).await.unwrap();
        let segment = build_log_segment(table.uri(), listing, None).unwrap();
        assert_eq!(
            segment.compactions.len(),
            1,
            "the reader uses the compaction"
        );
        let after = table.snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(state_of(&before).await, state_of(&after).await);
        assert_eq!(before.metadata(), after.metadata());
        assert!(table.compact_logs(1, 3).await.is_err(), "never replaced");
        assert!(table.compact_logs(3, 3).await.is_err());
    }
}
