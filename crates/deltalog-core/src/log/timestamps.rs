//! The timestamp of a commit, and time travel by timestamp (spec "In-Commit Timestamps"; Delta
//! on Spark's `DeltaHistoryManager` semantics).
//!
//! The one rule: a version's timestamp is its `commitInfo.inCommitTimestamp` when the writer
//! recorded one (in-commit timestamps feature, from its enablement version on), and otherwise
//! the modification time of its commit file made monotonic: raised to one ms after the previous
//! commit's when it is not above it (clocks of different writers disagree; Delta on Spark makes
//! file times monotonic the same way). History, snapshots, the change data feed and time travel
//! all take their timestamps from here, so a timestamp read in one of them selects the same
//! version in time travel.
//!
//! File times are made monotonic over the commits a caller listed. History and time travel list
//! every commit still in the log; snapshots, refreshes and commit ranges list from
//! [`MONOTONIC_LOOKBACK`] versions before the first version they need (as Delta on Spark's change
//! data feed does), which gives the same times unless more than that many consecutive commits
//! each had to be raised.

use crate::actions::CommitInfo;
use crate::error::{Error, Result};
use crate::log::decode::commit::read_commit_info;
use crate::log::path::{LogFileKind, LogPath};
use crate::storage::Storage;

/// How many versions before the first one it needs a reader lists to make file times monotonic
/// (Delta on Spark's `POTENTIALLY_UNMONOTONIZED_TIMESTAMPS`).
pub(crate) const MONOTONIC_LOOKBACK: u64 = 100;

/// The timestamp of a commit whose `commitInfo` is `info` and whose file time, already made
/// monotonic by [`monotonic_file_times`], is `monotonic_file_time_ms`: the in-commit timestamp
/// when present, else the file time.
pub(crate) fn commit_timestamp(info: Option<&CommitInfo>, monotonic_file_time_ms: i64) -> i64 {
    info.and_then(CommitInfo::in_commit_timestamp)
        .unwrap_or(monotonic_file_time_ms)
}

/// The modification times of `commits` (ascending by version) raised so that each is above the
/// one before: `max(own, previous + 1)`.
pub(crate) fn monotonic_file_times<'a>(commits: impl IntoIterator<Item = &'a LogPath>) -> Vec<i64> {
    let mut previous = i64::MIN;
    commits
        .into_iter()
        .map(|commit| {
            let time = commit.last_modified_ms.max(previous.saturating_add(1));
            previous = time;
            time
        })
        .collect()
}

/// The commit files of `listing`, ascending by version, one per version.
pub(crate) fn sorted_commits(listing: &[LogPath]) -> Vec<&LogPath> {
    let mut commits: Vec<&LogPath> = listing
        .iter()
        .filter(|path| path.kind == LogFileKind::Commit)
        .collect();
    commits.sort_by_key(|path| path.version);
    commits.dedup_by_key(|path| path.version);
    commits
}

/// The newest version of the table in `storage` whose commit timestamp is at or before
/// `timestamp_ms`, among the commits of `listing` (every log file still in the log). A time
/// after the newest commit gives the newest version; a time before the oldest commit still in
/// the log is an [`Error::TimestampNotFound`]. Reads the `commitInfo` of about log2(commits)
/// commit files.
pub(crate) async fn version_at_timestamp(
    storage: &Storage,
    listing: &[LogPath],
    timestamp_ms: i64,
) -> Result<u64> {
    let commits = sorted_commits(listing);
    let file_times = monotonic_file_times(commits.iter().copied());
    let not_found = |reason: String| Error::TimestampNotFound {
        table: storage.root_url().to_string(),
        timestamp_ms,
        reason,
    };
    let Some(last) = commits.len().checked_sub(1) else {
        return Err(not_found("the log holds no commit files".into()));
    };
    let first_time = read_timestamp(storage, commits[0], file_times[0]).await?;
    if timestamp_ms < first_time {
        return Err(not_found(format!(
            "the oldest commit still in the log, version {}, was made at {first_time} ms",
            commits[0].version
        )));
    }
    let (mut low, mut high) = (0, last);
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if read_timestamp(storage, commits[middle], file_times[middle]).await? <= timestamp_ms {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    Ok(commits[low].version)
}

/// Reads the `commitInfo` of `commit` and applies the rule.
async fn read_timestamp(storage: &Storage, commit: &LogPath, file_time_ms: i64) -> Result<i64> {
    let bytes = storage.read(&commit.location).await?;
    let info = read_commit_info(&bytes, &storage.url_of(&commit.location))?;
    Ok(commit_timestamp(info.as_ref(), file_time_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::path::Path;

    fn commit(version: u64, last_modified_ms: i64) -> LogPath {
        LogPath {
            location: Path::from(format!("_delta_log/{version:020}.json")),
            version,
            kind: LogFileKind::Commit,
            size: 1,
            last_modified_ms,
        }
    }

    #[test]
    fn file_times_that_go_backwards_or_repeat_are_raised() {
        let commits = [
            commit(0, 100),
            commit(1, 50),
            commit(2, 101),
            commit(3, 500),
            commit(4, 500),
        ];
        assert_eq!(monotonic_file_times(&commits), [100, 101, 102, 500, 501]);
    }

    #[test]
    fn the_in_commit_timestamp_wins_over_the_file_time() {
        let mut raw = serde_json::Map::new();
        raw.insert("inCommitTimestamp".into(), 7.into());
        let info = CommitInfo { raw };
        assert_eq!(commit_timestamp(Some(&info), 1_000), 7);
        assert_eq!(commit_timestamp(None, 1_000), 1_000);
        let without = CommitInfo {
            raw: serde_json::Map::new(),
        };
        assert_eq!(commit_timestamp(Some(&without), 1_000), 1_000);
    }

    #[test]
    fn sorted_commits_keep_only_commits_once_each() {
        let checkpoint = LogPath::parse_location(
            &Path::from("_delta_log/00000000000000000001.checkpoint.parquet"),
            1,
            0,
        )
        .unwrap();
        let listing = vec![commit(2, 0), checkpoint, commit(1, 0), commit(2, 0)];
        let versions: Vec<u64> = sorted_commits(&listing).iter().map(|c| c.version).collect();
        assert_eq!(versions, [1, 2]);
    }
}
