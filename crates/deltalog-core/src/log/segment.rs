//! Which log files make up the snapshot of one version (spec "Checkpoints", "Log Compaction
//! Files"; catalogue A-02, A-25, C-17, G-03..G-09, G-13).
//!
//! [`build_log_segment`] takes the parsed listing of `_delta_log` and picks, for a target version:
//! the newest complete checkpoint at or below it, then the files that replay every later version
//! up to the target, exactly once each: commit files, or log compaction files standing in for
//! runs of commits. It reads nothing; the caller reads the chosen files.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::path::{CheckpointKind, LogFileKind, LogPath};
use crate::log::timestamps::monotonic_file_times;

/// The files to read for one version of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSegment {
    /// The version this segment reconstructs.
    pub end_version: u64,
    /// The checkpoint replay starts from; `None` means replay from version 0.
    pub checkpoint: Option<CheckpointFiles>,
    /// Commit files to replay, ascending. Together with [`LogSegment::compactions`] they cover
    /// every version from the checkpoint's (exclusive, or 0 inclusive) to `end_version`
    /// (inclusive) exactly once.
    pub commits: Vec<LogPath>,
    /// Log compaction files replacing the commits they cover, ascending and not overlapping.
    pub compactions: Vec<LogPath>,
    /// The version checksum file (`<end>.crc`) when it was listed.
    pub checksum: Option<LogPath>,
    /// The commit file of `end_version` when it was listed (its modification time is the
    /// version's commit time). `None` when `end_version` is the checkpoint's version and its
    /// commit was cleaned up, or when a compaction stands in for a missing last commit.
    pub latest_commit: Option<LogPath>,
    /// The file time of `end_version`: the modification time of its commit file made monotonic
    /// over the commits listed before it (see [`crate::log::timestamps`]), or that of the first
    /// checkpoint part when the commit is not listed; 0 when neither is.
    pub file_time_ms: i64,
}

/// One complete checkpoint: all the files of one checkpoint of one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointFiles {
    /// The version the checkpoint reconstructs.
    pub version: u64,
    /// One file for a classic or UUID-named checkpoint; every part, sorted by part number, for a
    /// multi-part one.
    pub parts: Vec<LogPath>,
}

impl LogSegment {
    /// Commits and compactions merged in replay order (ascending by first version covered).
    pub fn deltas_ascending(&self) -> Vec<&LogPath> {
        let mut deltas: Vec<&LogPath> = self.commits.iter().chain(&self.compactions).collect();
        deltas.sort_by_key(|path| path.version);
        deltas
    }

    /// The first version replayed on top of the checkpoint (0 without one).
    pub fn first_delta_version(&self) -> u64 {
        self.checkpoint
            .as_ref()
            .map_or(0, |checkpoint| checkpoint.version.saturating_add(1))
    }
}

impl CheckpointFiles {
    /// The naming scheme of this checkpoint (all parts share it, up to the part number).
    pub fn kind(&self) -> Option<&CheckpointKind> {
        match &self.parts.first()?.kind {
            LogFileKind::Checkpoint(kind) => Some(kind),
            _ => None,
        }
    }
}

/// Chooses the files that reconstruct version `target` (`None`: the latest version) of `table`
/// (a name used in errors) from `listing`, every log file found in `_delta_log` from some start
/// version, in any order.
///
/// Rules (catalogue G-03..G-09, G-13, C-17):
/// - The checkpoint is the newest complete one at or below the target. A multi-part checkpoint
///   with a missing part is ignored. When several complete checkpoints share a version, the
///   choice follows the Delta reference readers: UUID-named (V2) first, lowest UUID file name
///   among several; then multi-part, most parts first; then classic. A caller that finds the
///   chosen checkpoint unusable can drop its files from the listing and call again.
/// - Every version after the checkpoint up to the target must be covered by a commit file or a
///   log compaction file whose range lies wholly in that span. Compaction files are used to read
///   as few files as possible (ties go to plain commits); the ones not needed are left out.
///
/// Errors:
/// - [`Error::TableNotFound`]: the listing holds no commit and no complete checkpoint.
/// - [`Error::VersionNotFound`]: the target is newer than the latest version (the reason says
///   which that is), or older than the earliest version that can be reconstructed (the reason
///   says which that is; older commits were cleaned up).
/// - [`Error::NonContiguousLog`]: a version between the checkpoint and the target has no file
///   (the reason names it), or commit 0 is gone and there is no checkpoint at all, so that no
///   version can be reconstructed.
pub(crate) fn build_log_segment(
    table: &str,
    listing: Vec<LogPath>,
    target: Option<u64>,
) -> Result<LogSegment> {
    let files = SortedListing::new(listing);
    let Some(latest) = files.latest_version() else {
        return Err(Error::TableNotFound {
            location: table.to_string(),
            reason: files.why_no_table(),
        });
    };
    let end_version = target.unwrap_or(latest);
    if end_version > latest {
        return Err(Error::VersionNotFound {
            table: table.to_string(),
            version: end_version,
            reason: format!("the latest version is {latest}"),
        });
    }
    check_readable(table, &files, end_version)?;
    let checkpoint = files.newest_checkpoint_at_or_below(end_version);
    let first_delta = checkpoint
        .as_ref()
        .map_or(0, |checkpoint| u128::from(checkpoint.version) + 1);
    let (commits, compactions) = files.plan_deltas(table, first_delta, end_version)?;
    let checkpoint_file_time = checkpoint
        .as_ref()
        .and_then(|checkpoint| checkpoint.parts.first())
        .map(|part| part.last_modified_ms);
    Ok(LogSegment {
        end_version,
        checkpoint,
        commits,
        compactions,
        checksum: files.checksums.get(&end_version).cloned(),
        latest_commit: files.commits.get(&end_version).cloned(),
        file_time_ms: files.file_time(end_version, checkpoint_file_time),
    })
}

/// The latest version of the table the listing shows: the highest version of a commit file or
/// of a complete checkpoint. `None` when there is neither.
pub(crate) fn latest_version(listing: &[LogPath]) -> Option<u64> {
    SortedListing::new(listing.to_vec()).latest_version()
}

/// The oldest version that can be reconstructed from the listing: 0 when commit 0 is listed,
/// otherwise the version of the oldest complete checkpoint. `None` when there is neither (the
/// history was cleaned up without a checkpoint). Versions above it can still be unreadable when
/// the log has a gap.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn earliest_readable_version(listing: &[LogPath]) -> Option<u64> {
    SortedListing::new(listing.to_vec()).earliest_readable_version()
}

/// Every complete checkpoint in the listing, ascending by version; at one version, the preferred
/// one (see [`build_log_segment`]) comes first.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn complete_checkpoints(listing: &[LogPath]) -> Vec<CheckpointFiles> {
    SortedListing::new(listing.to_vec())
        .checkpoints
        .into_values()
        .flatten()
        .collect()
}

/// Fails unless `end_version` is at or above the earliest readable version.
fn check_readable(table: &str, files: &SortedListing, end_version: u64) -> Result<()> {
    match files.earliest_readable_version() {
        Some(earliest) if end_version < earliest => Err(Error::VersionNotFound {
            table: table.to_string(),
            version: end_version,
            reason: format!(
                "the earliest version that can be read is {earliest}; the log files of older \
                 versions were cleaned up"
            ),
        }),
        Some(_) => Ok(()),
        None => {
            let first_commit = files.commits.keys().next().copied().unwrap_or_default();
            Err(Error::NonContiguousLog {
                table: table.to_string(),
                reason: format!(
                    "the oldest commit is {first_commit} and there is no checkpoint, so versions \
                     0 to {} are missing (cleaned up without a checkpoint) and no version can \
                     be reconstructed",
                    first_commit.saturating_sub(1)
                ),
            })
        }
    }
}

/// The listing sorted by kind, with multi-part checkpoints assembled and incomplete ones
/// dropped.
struct SortedListing {
    commits: BTreeMap<u64, LogPath>,
    checksums: BTreeMap<u64, LogPath>,
    /// Sorted by (first, last) version covered, without duplicates.
    compactions: Vec<LogPath>,
    /// Complete checkpoints per version, the preferred one first.
    checkpoints: BTreeMap<u64, Vec<CheckpointFiles>>,
    /// True when at least one file was listed.
    any_file: bool,
}

/// A step of the replay plan: which file covers versions from a position onwards.
#[derive(Debug, Clone, Copy)]
enum Step {
    Commit(u64),
    Compaction(usize),
}

/// The best way found to reach a position: how many files, and the last step taken.
#[derive(Debug, Clone, Copy)]
struct Reached {
    files: usize,
    last_step: Option<(u128, Step)>,
}

impl SortedListing {
    /// The monotonic file time of the commit of `version` (its commits from the first listed
    /// on), else `fallback`, else 0.
    fn file_time(&self, version: u64, fallback: Option<i64>) -> i64 {
        if !self.commits.contains_key(&version) {
            return fallback.unwrap_or_default();
        }
        let times = monotonic_file_times(self.commits.range(..=version).map(|(_, commit)| commit));
        times.last().copied().unwrap_or_default()
    }

    fn new(listing: Vec<LogPath>) -> SortedListing {
        let any_file = !listing.is_empty();
        let mut commits = BTreeMap::new();
        let mut checksums = BTreeMap::new();
        let mut compactions = Vec::new();
        let mut checkpoint_files: BTreeMap<u64, Vec<LogPath>> = BTreeMap::new();
        for path in listing {
            match &path.kind {
                LogFileKind::Commit => {
                    commits.entry(path.version).or_insert(path);
                }
                LogFileKind::Checksum => {
                    checksums.entry(path.version).or_insert(path);
                }
                LogFileKind::Compaction { .. } => compactions.push(path),
                LogFileKind::Checkpoint(_) => {
                    checkpoint_files.entry(path.version).or_default().push(path)
                }
            }
        }
        compactions.sort_by_key(|path| (path.version, compaction_end(path)));
        compactions.dedup_by_key(|path| (path.version, compaction_end(path)));
        let checkpoints = checkpoint_files
            .into_iter()
            .filter_map(|(version, files)| {
                let complete = complete_checkpoints_of_version(version, files);
                (!complete.is_empty()).then_some((version, complete))
            })
            .collect();
        SortedListing {
            commits,
            checksums,
            compactions,
            checkpoints,
            any_file,
        }
    }

    fn latest_version(&self) -> Option<u64> {
        let latest_commit = self.commits.keys().next_back().copied();
        let latest_checkpoint = self.checkpoints.keys().next_back().copied();
        latest_commit.max(latest_checkpoint)
    }

    fn earliest_readable_version(&self) -> Option<u64> {
        if self.commits.contains_key(&0) {
            return Some(0);
        }
        self.checkpoints.keys().next().copied()
    }

    fn why_no_table(&self) -> String {
        if self.any_file {
            "_delta_log holds no commit file and no complete checkpoint".to_string()
        } else {
            "_delta_log is missing or holds no log files".to_string()
        }
    }

    fn newest_checkpoint_at_or_below(&self, version: u64) -> Option<CheckpointFiles> {
        let (_, candidates) = self.checkpoints.range(..=version).next_back()?;
        candidates.first().cloned()
    }

    /// Chooses commits and compactions covering versions `first..=end` exactly once, reading as
    /// few files as possible: a shortest path over positions, where a commit of version `p`
    /// leads from `p` to `p + 1` and a compaction of `p..=q` from `p` to `q + 1`.
    fn plan_deltas(
        &self,
        table: &str,
        first: u128,
        end: u64,
    ) -> Result<(Vec<LogPath>, Vec<LogPath>)> {
        let done = u128::from(end) + 1;
        if first >= done {
            return Ok((Vec::new(), Vec::new()));
        }
        let usable_compactions: Vec<&LogPath> = self
            .compactions
            .iter()
            .filter(|path| u128::from(path.version) >= first && compaction_end(path) <= end)
            .collect();
        let reached = self.shortest_cover(first, done, &usable_compactions);
        if !reached.contains_key(&done) {
            let stuck_at = reached.keys().next_back().copied().unwrap_or(first);
            return Err(self.gap_error(table, first, stuck_at, end));
        }
        let mut commits = Vec::new();
        let mut compactions = Vec::new();
        let mut position = done;
        while let Some((from, step)) = reached.get(&position).and_then(|reach| reach.last_step) {
            match step {
                Step::Commit(version) => commits.extend(self.commits.get(&version).cloned()),
                Step::Compaction(index) => {
                    compactions.extend(usable_compactions.get(index).map(|path| (*path).clone()))
                }
            }
            position = from;
        }
        commits.reverse();
        compactions.reverse();
        Ok((commits, compactions))
    }

    /// Every position reachable from `first` with the fewest files, processed in ascending order
    /// (steps only go forward, so a position is final once it is the smallest unprocessed one).
    /// `compactions` must be sorted by first version.
    fn shortest_cover(
        &self,
        first: u128,
        done: u128,
        compactions: &[&LogPath],
    ) -> BTreeMap<u128, Reached> {
        let mut reached = BTreeMap::from([(
            first,
            Reached {
                files: 0,
                last_step: None,
            },
        )]);
        let mut current = Some(first);
        while let Some(position) = current.filter(|position| *position < done) {
            let files = reached.get(&position).map_or(0, |reach| reach.files) + 1;
            let mut offer = |to: u128, step: Step| {
                let better = reached.get(&to).is_none_or(|reach| files < reach.files);
                if better {
                    let last_step = Some((position, step));
                    reached.insert(to, Reached { files, last_step });
                }
            };
            if let Ok(version) = u64::try_from(position) {
                if self.commits.contains_key(&version) {
                    offer(position + 1, Step::Commit(version));
                }
            }
            let first_starting_here =
                compactions.partition_point(|compaction| u128::from(compaction.version) < position);
            let starting_here = compactions
                .iter()
                .enumerate()
                .skip(first_starting_here)
                .take_while(|(_, compaction)| u128::from(compaction.version) == position);
            for (index, compaction) in starting_here {
                offer(
                    u128::from(compaction_end(compaction)) + 1,
                    Step::Compaction(index),
                );
            }
            current = reached.range(position + 1..).next().map(|(key, _)| *key);
        }
        reached
    }

    /// The error for a version at `missing` that no file covers on the way from `first` to `end`.
    fn gap_error(&self, table: &str, first: u128, missing: u128, end: u64) -> Error {
        let basis = match first.checked_sub(1) {
            Some(checkpoint) => format!("checkpoint {checkpoint}"),
            None => "version 0".to_string(),
        };
        let next = u64::try_from(missing)
            .ok()
            .and_then(|missing| self.commits.range(missing..).next())
            .map_or_else(
                || "no later commit is listed".to_string(),
                |(version, _)| format!("the next commit listed is {version}"),
            );
        let newer_checkpoint = u64::try_from(missing)
            .ok()
            .and_then(|missing| self.checkpoints.range(missing..).next())
            .map(|(version, _)| *version);
        if let Some(checkpoint) = newer_checkpoint {
            return Error::VersionNotFound {
                table: table.to_string(),
                version: end,
                reason: format!(
                    "commit {missing} is missing (cleaned up); versions from the \
                     checkpoint at {checkpoint} on can be read"
                ),
            };
        }
        Error::NonContiguousLog {
            table: table.to_string(),
            reason: format!(
                "commit {missing} is missing ({next}), so version {end} cannot be reconstructed \
                 from {basis}"
            ),
        }
    }
}

/// The complete checkpoints among the checkpoint files of one version, the preferred first.
fn complete_checkpoints_of_version(version: u64, files: Vec<LogPath>) -> Vec<CheckpointFiles> {
    let mut uuid_named = Vec::new();
    let mut classic = Vec::new();
    let mut multi_part: BTreeMap<u32, BTreeMap<u32, LogPath>> = BTreeMap::new();
    for path in files {
        match &path.kind {
            LogFileKind::Checkpoint(CheckpointKind::Uuid { .. }) => uuid_named.push(path),
            LogFileKind::Checkpoint(CheckpointKind::MultiPart { part, num_parts }) => {
                let (part, num_parts) = (*part, *num_parts);
                multi_part
                    .entry(num_parts)
                    .or_default()
                    .entry(part)
                    .or_insert(path);
            }
            _ => classic.push(path),
        }
    }
    uuid_named.sort_by(|left, right| left.file_name().cmp(right.file_name()));
    let single = |path: LogPath| CheckpointFiles {
        version,
        parts: vec![path],
    };
    let complete_multi_part = multi_part
        .into_iter()
        .rev()
        .filter(|(num_parts, parts)| usize::try_from(*num_parts).is_ok_and(|n| n == parts.len()))
        .map(|(_, parts)| CheckpointFiles {
            version,
            parts: parts.into_values().collect(),
        });
    uuid_named
        .into_iter()
        .map(single)
        .chain(complete_multi_part)
        .chain(classic.into_iter().take(1).map(single))
        .collect()
}

fn compaction_end(path: &LogPath) -> u64 {
    match path.kind {
        LogFileKind::Compaction { end_version } => end_version,
        _ => path.version,
    }
}

/// The directory of the unpacked golden tables (`tests/data/golden`), unpacking them on first
/// use.
#[cfg(test)]
pub(crate) fn golden_tables_dir() -> Option<std::path::PathBuf> {
    static UNPACKED: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    UNPACKED
        .get_or_init(|| {
            let archives = crate::golden_archives();
            if !archives.is_dir() {
                panic!("the golden tables are not at {}", archives.display());
            }
            let target = std::path::PathBuf::from("/tmp/golden");
            std::fs::create_dir_all(&target).ok()?;
            for archive in golden_table_names(&archives) {
                if !target.join(&archive).is_dir() {
                    unpack_golden_table(&archives, &target, &archive);
                }
            }
            Some(target)
        })
        .clone()
}

/// The names of the golden tables (the archives without `.tar.zst`).
#[cfg(test)]
pub(crate) fn golden_table_names(archives: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(archives)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok())
                .filter_map(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".tar.zst").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Unpacks one archive into a private directory first, then moves it into place, so that
/// concurrent readers never see half a table.
#[cfg(test)]
fn unpack_golden_table(archives: &std::path::Path, target: &std::path::Path, name: &str) {
    let scratch = target.join(format!(".unpack-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);
    let status = std::process::Command::new("tar")
        .arg("--zstd")
        .arg("-xf")
        .arg(archives.join(format!("{name}.tar.zst")))
        .arg("-C")
        .arg(&scratch)
        .status();
    if status.is_ok_and(|status| status.success()) {
        let _ = std::fs::rename(scratch.join(name), target.join(name));
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

#[cfg(test)]
mod tests;
