//! Commit timestamps and time travel by timestamp (spec "In-Commit Timestamps"; Delta on
//! Spark's `DeltaHistoryManager` semantics).
//!
//! A version's timestamp is its `commitInfo.inCommitTimestamp` when the writer recorded one
//! (in-commit timestamps feature), and otherwise the modification time of its commit file,
//! raised where needed so that timestamps never go backwards (clocks of different writers
//! disagree; Spark makes file times monotonic the same way).

use crate::actions::CommitInfo;
use crate::error::{Error, Result};
use crate::log_path::{LogFileKind, LogPath};
use crate::table::{first_commit_info, Table};

/// The timestamp of each commit: its in-commit timestamp when present, else its file time.
pub fn commit_timestamps(commits: &[LogPath], infos: &[Option<CommitInfo>]) -> Vec<i64> {
    commits
        .iter()
        .zip(infos)
        .map(|(commit, info)| {
            info.as_ref()
                .and_then(CommitInfo::in_commit_timestamp)
                .unwrap_or(commit.last_modified_ms)
        })
        .collect()
}

/// The newest version of `table` whose commit timestamp is at or before `timestamp_ms`.
/// A time after the newest commit gives the newest version; a time before the oldest commit
/// still in the log is an [`Error::TimestampNotFound`].
pub async fn version_at_timestamp(
    table: &Table,
    listing: &[LogPath],
    timestamp_ms: i64,
) -> Result<u64> {
    let mut commits: Vec<&LogPath> = listing
        .iter()
        .filter(|path| path.kind == LogFileKind::Commit)
        .collect();
    commits.sort_by_key(|path| path.version);
    let file_times = monotonic_file_times(&commits);
    let not_found = |reason: String| Error::TimestampNotFound {
        table: table.uri().to_string(),
        timestamp_ms,
        reason,
    };
    let Some(last) = commits.len().checked_sub(1) else {
        return Err(not_found("the log holds no commit files".into()));
    };
    let first_time = commit_time(table, commits[0], file_times[0]).await?;
    if timestamp_ms < first_time {
        return Err(not_found(format!(
            "the oldest commit still in the log, version {}, was made at {first_time} ms",
            commits[0].version
        )));
    }
    let (mut low, mut high) = (0, last);
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if commit_time(table, commits[middle], file_times[middle]).await? <= timestamp_ms {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    Ok(commits[low].version)
}

/// File times raised so that each is above the one before.
fn monotonic_file_times(commits: &[&LogPath]) -> Vec<i64> {
    let mut previous = i64::MIN;
    commits
        .iter()
        .map(|commit| {
            let time = commit.last_modified_ms.max(previous.saturating_add(1));
            previous = time;
            time
        })
        .collect()
}

async fn commit_time(table: &Table, commit: &LogPath, file_time: i64) -> Result<i64> {
    let bytes = table.storage().read(&commit.location).await?;
    let name = table.storage().url_of(&commit.location);
    let info = first_commit_info(&name, &bytes)?;
    Ok(info
        .as_ref()
        .and_then(CommitInfo::in_commit_timestamp)
        .unwrap_or(file_time))
}
