//! The transaction log as files (spec "Delta Log Entries", "Checkpoints", "Last Checkpoint
//! File", "Log Compaction Files", "In-Commit Timestamps"): the names in `_delta_log`, which of
//! them make up a version, the `_last_checkpoint` hint, the commits of a range of versions and
//! the timestamp of each commit. Nothing here replays actions into table state.

#[cfg(feature = "internal-api")]
pub mod checksum;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod checksum;
#[cfg(feature = "internal-api")]
pub mod commit_range;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod commit_range;
#[cfg(feature = "internal-api")]
pub mod decode;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod decode;
#[cfg(feature = "internal-api")]
pub mod encode;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod encode;
#[cfg(feature = "internal-api")]
pub mod last_checkpoint;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod last_checkpoint;
#[cfg(feature = "internal-api")]
pub mod path;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod path;
#[cfg(feature = "internal-api")]
pub mod segment;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod segment;
#[cfg(feature = "internal-api")]
pub mod timestamps;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod timestamps;

pub use checksum::{FileSizeHistogram, VersionChecksum};
pub use path::CheckpointFormat;

use crate::error::{Error, Result};
use crate::storage::Storage;
use last_checkpoint::parse_last_checkpoint;
use path::LogPath;
use segment::{build_log_segment, LogSegment};
use timestamps::{version_at_timestamp, MONOTONIC_LOOKBACK};

/// Every log file of version `from_version` or later, parsed, in no particular order. Files
/// that are not log files (`_last_checkpoint`, temporary files, sidecars) are skipped.
///
/// Writers change the log while it is listed, and a listing of a local filesystem (POSIX
/// `readdir`) may hold a commit created during it while missing an older one also created
/// during it. So a listing whose commits skip a version is listed again (at most
/// [`GAP_RELISTS`] times): the older commit exists by then, and callers see a gap only where
/// the log has one.
pub(crate) async fn list_log_from(storage: &Storage, from_version: u64) -> Result<Vec<LogPath>> {
    let mut listing = list_log_once(storage, from_version).await?;
    for _ in 0..GAP_RELISTS {
        if !commits_skip_a_version(&listing) {
            break;
        }
        listing = list_log_once(storage, from_version).await?;
    }
    Ok(listing)
}

/// How many times [`list_log_from`] lists again a listing whose commits skip a version.
const GAP_RELISTS: usize = 2;

async fn list_log_once(storage: &Storage, from_version: u64) -> Result<Vec<LogPath>> {
    let listing = storage
        .list_log_dir_from(&format!("{from_version:020}"))
        .await?;
    Ok(listing
        .iter()
        .filter_map(LogPath::parse)
        .filter(|log_path| log_path.version >= from_version)
        .collect())
}

/// True when the commits of `listing` are not consecutive versions.
fn commits_skip_a_version(listing: &[LogPath]) -> bool {
    let mut versions: Vec<u64> = listing
        .iter()
        .filter(|log_path| log_path.is_commit())
        .map(|log_path| log_path.version)
        .collect();
    versions.sort_unstable();
    versions.windows(2).any(|pair| pair[1] > pair[0] + 1)
}

/// True when `_delta_log` holds at least one log file. Stops at the first one found.
pub(crate) async fn has_log_files(storage: &Storage) -> Result<bool> {
    let found = storage
        .find_in_log_dir(|meta| LogPath::parse(meta).is_some())
        .await?;
    Ok(found.is_some())
}

/// The newest version of the table on `storage`: the highest commit (or complete checkpoint)
/// in the log. A log without either is an [`Error::TableNotFound`].
pub(crate) async fn latest_version(storage: &Storage) -> Result<u64> {
    let start = hint_version(storage).await.unwrap_or(0);
    let mut listing = list_log_from(storage, start).await?;
    if segment::latest_version(&listing).is_none() && start > 0 {
        listing = list_log_from(storage, 0).await?;
    }
    segment::latest_version(&listing).ok_or_else(|| Error::TableNotFound {
        location: storage.root_url().to_string(),
        reason: "the log holds no commit or checkpoint".into(),
    })
}

/// The files that make up version `target` (`None`: the latest). Listing starts at the
/// `_last_checkpoint` hint when it is usable (less [`MONOTONIC_LOOKBACK`] versions, for the
/// commit timestamp), and falls back to a full listing when the hint is missing, corrupt,
/// stale or points at files that are gone.
pub(crate) async fn locate_segment(storage: &Storage, target: Option<u64>) -> Result<LogSegment> {
    let table = storage.root_url().as_str();
    let hint = hint_version(storage).await;
    if let Some(start) = hint.filter(|start| target.is_none_or(|t| *start <= t)) {
        let listing = list_log_from(storage, start.saturating_sub(MONOTONIC_LOOKBACK)).await?;
        if let Ok(segment) = build_log_segment(table, listing, target) {
            if segment.checkpoint.is_some() || start == 0 {
                return Ok(segment);
            }
        }
    }
    build_log_segment(table, list_log_from(storage, 0).await?, target)
}

/// The newest version committed at or before `timestamp_ms` (see [`timestamps`]).
pub(crate) async fn version_at(storage: &Storage, timestamp_ms: i64) -> Result<u64> {
    let listing = list_log_from(storage, 0).await?;
    version_at_timestamp(storage, &listing, timestamp_ms).await
}

/// The version in `_last_checkpoint`, when the file exists and is valid.
async fn hint_version(storage: &Storage) -> Option<u64> {
    let path = storage.log_file("_last_checkpoint");
    let bytes = storage.read_if_exists(&path).await.ok()??;
    parse_last_checkpoint(&bytes, path.as_ref())
        .ok()
        .map(|hint| hint.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(names: &[String]) -> Vec<LogPath> {
        names
            .iter()
            .filter_map(|name| {
                let location = object_store::path::Path::from(format!("_delta_log/{name}"));
                LogPath::parse_location(&location, 1, 0)
            })
            .collect()
    }

    #[test]
    fn a_skipped_version_among_the_commits_is_a_gap() {
        let commit = path::commit_file_name;
        assert!(commits_skip_a_version(&listing(&[
            commit(4),
            commit(3),
            commit(6)
        ])));
        assert!(!commits_skip_a_version(&listing(&[
            commit(3),
            commit(5),
            commit(4),
            path::classic_checkpoint_file_name(9),
        ])));
        assert!(!commits_skip_a_version(&[]));
    }
}
