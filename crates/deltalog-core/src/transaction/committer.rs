//! The atomic commit: `_delta_log/<version>.json` written once, never overwritten, never
//! partial (spec "Delta Log Entries": writers must never overwrite an existing log entry;
//! "Writer Requirements"; reliability notes §2).
//!
//! A [`Committer`] is the one seam between a transaction and the store's mutual exclusion.
//! [`FileSystemCommitter`] writes the file in one put-if-absent ([`Storage::put_if_absent`]):
//! an exclusive create on the local filesystem, a conditional put (`If-None-Match`) on S3,
//! generation and ETag preconditions on GCS and Azure. [`attempt`] wraps a committer and
//! resolves the outcomes a transport error leaves unknown by reading the file back and
//! comparing its `commitInfo.txnId` with the transaction's own. [`landed_behind_cleanup`]
//! tells a put-if-absent that succeeded only because metadata cleanup had deleted the
//! version.

use std::fmt;

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::error::{Error, Result};
use crate::log::decode::commit::read_commit_info;
use crate::log::list_log_from;
use crate::log::path::commit_file_name;
use crate::storage::Storage;

/// What became of one attempt to write a commit file.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// The file is written: the version is ours.
    Committed,
    /// A file of that version already exists (another writer's, or our own from an earlier
    /// attempt whose answer was lost); nothing was written.
    VersionExists,
}

/// Writes the bytes of a commit as the log entry of a version, atomically.
///
/// Implementations must write all of `bytes` or nothing, must never replace an existing
/// entry, and return [`CommitOutcome::VersionExists`] when the entry exists. Any error means
/// the outcome is unknown to the implementation.
pub trait Committer: Send + Sync + fmt::Debug {
    /// Writes `bytes` as `_delta_log/<version>.json` of the table in `storage`.
    fn commit<'a>(
        &'a self,
        storage: &'a Storage,
        version: u64,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<CommitOutcome>>;
}

/// The committer for tables without a catalog: one put-if-absent of the commit file through
/// the table's object store.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileSystemCommitter;

impl Committer for FileSystemCommitter {
    fn commit<'a>(
        &'a self,
        storage: &'a Storage,
        version: u64,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<CommitOutcome>> {
        Box::pin(async move {
            let path = storage.log_file(&commit_file_name(version));
            Ok(match storage.put_if_absent(&path, bytes).await? {
                true => CommitOutcome::Committed,
                false => CommitOutcome::VersionExists,
            })
        })
    }
}

/// The outcome of [`attempt`], every unknown resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The commit file holds this transaction's commit.
    Committed,
    /// Another transaction's commit holds the version.
    Lost,
    /// The write failed and nothing is at the version: the same version may be tried again.
    NotWritten,
}

/// Writes `bytes` (a commit whose `commitInfo.txnId` is `txn_id`) at `version` through
/// `committer`. When the committer fails (a transport error: the put may or may not have
/// landed), the file is read back: holding our `txnId` it is [`Attempt::Committed`], holding
/// another it is [`Attempt::Lost`], absent it is [`Attempt::NotWritten`]. When it cannot be
/// read either, the result is an [`Error::CommitStateUnknown`] naming both failures.
pub(crate) async fn attempt(
    committer: &dyn Committer,
    storage: &Storage,
    version: u64,
    bytes: Bytes,
    txn_id: &str,
) -> Result<Attempt> {
    let failure = match committer.commit(storage, version, bytes).await {
        Ok(CommitOutcome::Committed) => return Ok(Attempt::Committed),
        Ok(CommitOutcome::VersionExists) => return Ok(Attempt::Lost),
        Err(failure) => failure,
    };
    let path = storage.log_file(&commit_file_name(version));
    let unknown = |reason: String| Error::CommitStateUnknown {
        table: storage.root_url().to_string(),
        version,
        reason,
    };
    match storage.read_if_exists(&path).await {
        Ok(None) => Ok(Attempt::NotWritten),
        Ok(Some(existing)) => {
            let name = storage.url_of(&path);
            match read_commit_info(&existing, &name) {
                Ok(info) if info.as_ref().and_then(|i| i.txn_id()) == Some(txn_id) => {
                    Ok(Attempt::Committed)
                }
                Ok(_) => Ok(Attempt::Lost),
                Err(read) => Err(unknown(format!(
                    "writing failed ({failure}) and the file there does not decode ({read})"
                ))),
            }
        }
        Err(read) => Err(unknown(format!(
            "writing failed ({failure}) and reading it back failed too ({read})"
        ))),
    }
}

/// One hour: the slack allowed between writers' clocks and the store's file times.
const CLOCK_SLACK_MS: i64 = 60 * 60 * 1000;

/// True when the commit just written at `version` landed behind the table: metadata cleanup
/// (spec "Metadata Cleanup") had deleted `version.json` below a newer checkpoint, and the
/// put-if-absent re-created it where no reader of the latest version looks. Cleanup deletes
/// oldest first, so `version - 1` is gone too: that is what is checked (one `HEAD`, and a
/// listing when its commit file is missing, for a checkpoint of it).
///
/// Cleanup only deletes commits older than the log retention, and the commit at `version`
/// came after the version before it (committed at `previous_commit_ms`): when that one is
/// younger than `retention_ms` (less an hour of slack for clocks), nothing is checked.
pub(crate) async fn landed_behind_cleanup(
    storage: &Storage,
    version: u64,
    previous_commit_ms: Option<i64>,
    retention_ms: i64,
    now_ms: i64,
) -> Result<bool> {
    let (Some(previous), Some(committed_ms)) = (version.checked_sub(1), previous_commit_ms) else {
        return Ok(false);
    };
    let cleanup_horizon = now_ms
        .saturating_sub(retention_ms)
        .saturating_add(CLOCK_SLACK_MS);
    if committed_ms > cleanup_horizon {
        return Ok(false);
    }
    let log_path = format!("_delta_log/{}", commit_file_name(previous));
    if storage.exists(&log_path).await? {
        return Ok(false);
    }
    let listing = list_log_from(storage, previous).await?;
    let kept = listing
        .iter()
        .any(|file| file.version == previous && (file.is_commit() || file.is_checkpoint()));
    Ok(!kept)
}
