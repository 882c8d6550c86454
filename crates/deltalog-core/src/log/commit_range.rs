//! The commits of a range of versions, listed once and read once (spec "Delta Log Entries",
//! "Commit Provenance Information", "In-Commit Timestamps").
//!
//! A [`CommitRange`] is what history, the change data feed, snapshot refreshes and conflict
//! checks have in common: the commit files of versions `start..=end`, each with its commit
//! timestamp under the one rule of [`crate::log::timestamps`]. Listing is separate from reading:
//! [`CommitRange::list`] (or [`CommitRange::from_listing`] on a listing the caller already has)
//! only checks that every version is there; [`CommitRange::stream`] then reads the files a few
//! at once, in version order, and each [`CommitFile`] is decoded the way its caller needs.

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};

use crate::actions::CommitInfo;
use crate::error::{Error, Result};
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::{decode_actions, read_commit_info, DecodeOptions, DecodedActions};
use crate::log::path::LogPath;
use crate::log::segment::latest_version;
use crate::log::timestamps::{
    commit_timestamp, monotonic_file_times, sorted_commits, MONOTONIC_LOOKBACK,
};
use crate::storage::Storage;

/// The commit files of some versions of a table, ascending, each with its file time made
/// monotonic. Built by [`CommitRange::list`] or [`CommitRange::from_listing`] (versions
/// `start..=end`, every one present) or by [`CommitRange::all_listed`] (every commit listed,
/// gaps allowed). Reads nothing until [`CommitRange::stream`].
#[derive(Debug, Clone, Default)]
pub(crate) struct CommitRange {
    commits: Vec<LogPath>,
    /// The monotonic file time of each commit, in the order of `commits`.
    file_times: Vec<i64>,
}

/// One commit file of a [`CommitRange`], read.
#[derive(Debug, Clone)]
pub(crate) struct CommitFile {
    pub version: u64,
    /// The URL of the file, for messages.
    pub name: String,
    /// The content of the file.
    pub bytes: Bytes,
    /// The modification time of the file made monotonic (see [`crate::log::timestamps`]).
    pub file_time_ms: i64,
}

impl CommitRange {
    /// Lists the commits `start..=end` of the table in `storage` (`end` `None`: up to the latest
    /// version), with the [`MONOTONIC_LOOKBACK`] versions before `start` for their timestamps.
    ///
    /// Errors: [`Error::VersionNotFound`] when `start` or `end` is after the latest version (the
    /// reason says which that is), or when a commit file of the range is not in the log (cleaned
    /// up or never written; the error names the first missing version). A `start` after a given
    /// `end` is a [`Error::VersionNotFound`] of `start`; callers that treat it as a bad argument
    /// check it first.
    pub(crate) async fn list(
        storage: &Storage,
        start: u64,
        end: Option<u64>,
    ) -> Result<CommitRange> {
        let mut listing =
            crate::log::list_log_from(storage, start.saturating_sub(MONOTONIC_LOOKBACK)).await?;
        if latest_version(&listing).is_none() {
            listing = crate::log::list_log_from(storage, 0).await?;
        }
        let table = storage.root_url().as_str();
        let latest = latest_version(&listing).ok_or_else(|| Error::TableNotFound {
            location: table.to_string(),
            reason: "the log holds no commit or checkpoint".into(),
        })?;
        let out_of_range = |version: u64| Error::VersionNotFound {
            table: table.to_string(),
            version,
            reason: format!("the latest version is {latest}"),
        };
        if start > latest {
            return Err(out_of_range(start));
        }
        let end = end.unwrap_or(latest);
        if end > latest {
            return Err(out_of_range(end));
        }
        CommitRange::from_listing(table, &listing, start, end)
    }

    /// The commits `start..=end` of `listing` (log files of the table `table`, a name for
    /// errors, in any order). File times are made monotonic over every commit of `listing` up
    /// to `end`, so a listing that starts [`MONOTONIC_LOOKBACK`] versions before `start` gives
    /// the timestamps of history. Reads nothing.
    ///
    /// Errors: [`Error::VersionNotFound`] naming the first version of `start..=end` without a
    /// commit file in `listing` (`start` itself when `start > end`).
    pub(crate) fn from_listing(
        table: &str,
        listing: &[LogPath],
        start: u64,
        end: u64,
    ) -> Result<CommitRange> {
        let commits: Vec<&LogPath> = sorted_commits(listing)
            .into_iter()
            .take_while(|commit| commit.version <= end)
            .collect();
        let file_times = monotonic_file_times(commits.iter().copied());
        let first = commits.partition_point(|commit| commit.version < start);
        let in_range = &commits[first..];
        let missing = (start..=end)
            .zip(
                in_range
                    .iter()
                    .map(|commit| Some(commit.version))
                    .chain(std::iter::repeat(None)),
            )
            .find(|(expected, found)| Some(*expected) != *found)
            .map(|(version, _)| version);
        if start > end || missing.is_some() {
            return Err(Error::VersionNotFound {
                table: table.to_string(),
                version: missing.unwrap_or(start),
                reason: "its commit file is not in the log (cleaned up or never written)".into(),
            });
        }
        Ok(CommitRange {
            commits: in_range.iter().map(|commit| (*commit).clone()).collect(),
            file_times: file_times[first..].to_vec(),
        })
    }

    /// Every commit of `listing` (all the log files still in the log), ascending, gaps
    /// allowed: the versions history shows. File times are made monotonic over all of them.
    pub(crate) fn all_listed(listing: &[LogPath]) -> CommitRange {
        let commits = sorted_commits(listing);
        let file_times = monotonic_file_times(commits.iter().copied());
        CommitRange {
            commits: commits.into_iter().cloned().collect(),
            file_times,
        }
    }

    /// The newest `count` commits of the range (all of them when it has fewer), keeping their
    /// timestamps.
    pub(crate) fn newest(&self, count: usize) -> CommitRange {
        let first = self.commits.len().saturating_sub(count);
        CommitRange {
            commits: self.commits[first..].to_vec(),
            file_times: self.file_times[first..].to_vec(),
        }
    }

    /// The commit files, ascending by version.
    #[cfg(test)]
    pub(crate) fn commits(&self) -> &[LogPath] {
        &self.commits
    }

    /// The monotonic file time of each commit, in the order of [`CommitRange::commits`].
    pub(crate) fn file_times(&self) -> &[i64] {
        &self.file_times
    }

    /// The first version of the range, `None` when it is empty.
    #[cfg(test)]
    pub(crate) fn start(&self) -> Option<u64> {
        self.commits.first().map(|commit| commit.version)
    }

    /// The last version of the range, `None` when it is empty.
    #[cfg(test)]
    pub(crate) fn end(&self) -> Option<u64> {
        self.commits.last().map(|commit| commit.version)
    }

    /// The number of commits.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.commits.len()
    }

    /// Reads the commit files, [`crate::storage::IoConfig::concurrent_reads`] at once, yielding them in version order.
    pub(crate) fn stream<'a>(
        &'a self,
        storage: &'a Storage,
    ) -> impl Stream<Item = Result<CommitFile>> + Send + 'a {
        futures::stream::iter(self.commits.iter().zip(&self.file_times))
            .map(move |(commit, file_time_ms)| async move {
                let bytes = storage.read(&commit.location).await?;
                Ok(CommitFile {
                    version: commit.version,
                    name: storage.url_of(&commit.location),
                    bytes,
                    file_time_ms: *file_time_ms,
                })
            })
            .buffered(storage.io().concurrent_reads)
    }

    /// Every commit file of [`CommitRange::stream`], in memory.
    pub(crate) async fn read_all(&self, storage: &Storage) -> Result<Vec<CommitFile>> {
        self.stream(storage).try_collect().await
    }
}

impl CommitFile {
    /// The `commitInfo` of the commit (see [`crate::log::decode::commit::read_commit_info`]).
    pub(crate) fn commit_info(&self) -> Result<Option<CommitInfo>> {
        read_commit_info(&self.bytes, &self.name)
    }

    /// The commit timestamp, given the commit's `commitInfo` (see
    /// [`crate::log::timestamps::commit_timestamp`]).
    pub(crate) fn timestamp_ms(&self, info: Option<&CommitInfo>) -> i64 {
        commit_timestamp(info, self.file_time_ms)
    }

    /// Every action of the commit, decoded (see [`crate::log::decode::commit::decode_actions`]).
    pub(crate) fn decode(&self, keep_stats: bool) -> Result<DecodedActions> {
        let options = DecodeOptions {
            from_checkpoint: false,
            stats: StatsText::kept(keep_stats),
            skip_file_actions: false,
            skip_commit_info: false,
        };
        decode_actions(&self.bytes, self.version, &self.name, options)
    }
}

#[cfg(test)]
mod tests;
