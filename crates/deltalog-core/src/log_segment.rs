//! Which log files make up the snapshot of one version (spec "Checkpoints", "Log Compaction
//! Files"; catalogue A-02, A-25, C-17, G-03..G-09, G-13).
//!
//! [`build_log_segment`] takes the parsed listing of `_delta_log` and picks, for a target version:
//! the newest complete checkpoint at or below it, then the files that replay every later version
//! up to the target, exactly once each: commit files, or log compaction files standing in for
//! runs of commits. It reads nothing; the caller reads the chosen files.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log_path::{CheckpointKind, LogFileKind, LogPath};

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
pub fn build_log_segment(
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
    Ok(LogSegment {
        end_version,
        checkpoint,
        commits,
        compactions,
        checksum: files.checksums.get(&end_version).cloned(),
        latest_commit: files.commits.get(&end_version).cloned(),
    })
}

/// The latest version of the table the listing shows: the highest version of a commit file or
/// of a complete checkpoint. `None` when there is neither.
pub fn latest_version(listing: &[LogPath]) -> Option<u64> {
    SortedListing::new(listing.to_vec()).latest_version()
}

/// The oldest version that can be reconstructed from the listing: 0 when commit 0 is listed,
/// otherwise the version of the oldest complete checkpoint. `None` when there is neither (the
/// history was cleaned up without a checkpoint). Versions above it can still be unreadable when
/// the log has a gap.
pub fn earliest_readable_version(listing: &[LogPath]) -> Option<u64> {
    SortedListing::new(listing.to_vec()).earliest_readable_version()
}

/// Every complete checkpoint in the listing, ascending by version; at one version, the preferred
/// one (see [`build_log_segment`]) comes first.
pub fn complete_checkpoints(listing: &[LogPath]) -> Vec<CheckpointFiles> {
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

/// The directory of the unpacked golden tables, unpacking them on first use; `None` (with a
/// note) when the shared conformance data is absent.
#[cfg(test)]
pub(crate) fn golden_tables_dir() -> Option<std::path::PathBuf> {
    static UNPACKED: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    UNPACKED
        .get_or_init(|| {
            let archives = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/conformance/golden");
            if !archives.is_dir() {
                eprintln!(
                    "note: {} is absent; golden-table checks skipped",
                    archives.display()
                );
                return None;
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
mod tests {
    use super::*;
    use crate::log_path::{
        checksum_file_name, classic_checkpoint_file_name, commit_file_name, compaction_file_name,
        multi_part_checkpoint_file_name, uuid_checkpoint_file_name, CheckpointFormat,
    };
    use object_store::path::Path;

    const UUID_A: &str = "0a8d73ee-aa83-49d0-9583-c99db75b89b2";
    const UUID_B: &str = "bd1885fd-6ec0-4370-b0f5-43b5162fd4de";

    fn log_path(name: &str) -> LogPath {
        LogPath::parse_location(&Path::from(format!("t/_delta_log/{name}")), 1, 0)
            .unwrap_or_else(|| panic!("{name} is not a log file name"))
    }

    fn commits(versions: impl IntoIterator<Item = u64>) -> Vec<LogPath> {
        versions
            .into_iter()
            .map(|version| log_path(&commit_file_name(version)))
            .collect()
    }

    fn classic(version: u64) -> LogPath {
        log_path(&classic_checkpoint_file_name(version))
    }

    fn part(version: u64, part: u32, num_parts: u32) -> LogPath {
        log_path(&multi_part_checkpoint_file_name(version, part, num_parts))
    }

    fn uuid(version: u64, uuid: &str) -> LogPath {
        log_path(&uuid_checkpoint_file_name(
            version,
            uuid,
            CheckpointFormat::Json,
        ))
    }

    fn compaction(start: u64, end: u64) -> LogPath {
        log_path(&compaction_file_name(start, end))
    }

    fn with(mut listing: Vec<LogPath>, more: impl IntoIterator<Item = LogPath>) -> Vec<LogPath> {
        listing.extend(more);
        listing
    }

    fn versions(paths: &[LogPath]) -> Vec<u64> {
        paths.iter().map(|path| path.version).collect()
    }

    fn ranges(paths: &[LogPath]) -> Vec<(u64, u64)> {
        paths
            .iter()
            .map(|path| (path.version, compaction_end(path)))
            .collect()
    }

    fn segment(listing: Vec<LogPath>, target: Option<u64>) -> LogSegment {
        build_log_segment("t", listing, target).unwrap()
    }

    fn checkpoint_names(segment: &LogSegment) -> Vec<String> {
        segment
            .checkpoint
            .iter()
            .flat_map(|checkpoint| &checkpoint.parts)
            .map(|path| path.file_name().to_string())
            .collect()
    }

    fn reason_of(error: Error) -> String {
        match error {
            Error::NonContiguousLog { reason, .. }
            | Error::VersionNotFound { reason, .. }
            | Error::TableNotFound { reason, .. } => reason,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn commits_only_replay_from_version_zero() {
        let mut listing = commits([2, 0, 1]);
        listing.reverse();
        let segment = segment(listing, None);
        assert_eq!(segment.end_version, 2);
        assert_eq!(segment.checkpoint, None);
        assert_eq!(versions(&segment.commits), [0, 1, 2]);
        assert_eq!(segment.first_delta_version(), 0);
        assert_eq!(segment.latest_commit.map(|path| path.version), Some(2));
    }

    #[test]
    fn the_newest_checkpoint_at_or_below_the_target_is_used() {
        let listing = with(commits(0..=14), [classic(5), classic(10)]);
        let latest = segment(listing.clone(), None);
        assert_eq!(latest.checkpoint.as_ref().map(|c| c.version), Some(10));
        assert_eq!(versions(&latest.commits), [11, 12, 13, 14]);
        assert_eq!(latest.first_delta_version(), 11);

        let travel = segment(listing.clone(), Some(9));
        assert_eq!(travel.checkpoint.as_ref().map(|c| c.version), Some(5));
        assert_eq!(versions(&travel.commits), [6, 7, 8, 9]);

        let at_checkpoint = segment(listing.clone(), Some(10));
        assert_eq!(
            at_checkpoint.checkpoint.as_ref().map(|c| c.version),
            Some(10)
        );
        assert!(at_checkpoint.commits.is_empty());
        assert_eq!(at_checkpoint.latest_commit.map(|p| p.version), Some(10));

        let before_any = segment(listing, Some(3));
        assert_eq!(before_any.checkpoint, None);
        assert_eq!(versions(&before_any.commits), [0, 1, 2, 3]);
    }

    #[test]
    fn multi_part_checkpoints_need_every_part() {
        let listing = with(
            commits(0..=12),
            [part(5, 2, 2), part(5, 1, 2), part(10, 1, 3), part(10, 3, 3)],
        );
        let segment = segment(listing, None);
        let checkpoint = segment.checkpoint.clone().unwrap();
        assert_eq!(checkpoint.version, 5);
        assert_eq!(
            checkpoint_names(&segment),
            [
                multi_part_checkpoint_file_name(5, 1, 2),
                multi_part_checkpoint_file_name(5, 2, 2)
            ]
        );
        assert_eq!(
            checkpoint.kind(),
            Some(&CheckpointKind::MultiPart {
                part: 1,
                num_parts: 2
            })
        );
        assert_eq!(versions(&segment.commits), (6..=12).collect::<Vec<_>>());
    }

    #[test]
    fn an_incomplete_checkpoint_falls_back_to_full_replay() {
        let listing = with(commits(0..=3), [part(2, 1, 2)]);
        let segment = segment(listing, None);
        assert_eq!(segment.checkpoint, None);
        assert_eq!(versions(&segment.commits), [0, 1, 2, 3]);
    }

    #[test]
    fn two_part_sets_at_one_version_use_the_complete_one() {
        let listing = with(
            commits(0..=4),
            [part(4, 1, 3), part(4, 3, 3), part(4, 1, 2), part(4, 2, 2)],
        );
        let segment = segment(listing, None);
        assert_eq!(segment.checkpoint.as_ref().map(|c| c.parts.len()), Some(2));
        let both_complete = with(
            commits(0..=4),
            [part(4, 2, 3), part(4, 1, 2), part(4, 2, 2)],
        );
        let both_complete = with(both_complete, [part(4, 1, 3), part(4, 3, 3)]);
        let segment = build_log_segment("t", both_complete, None).unwrap();
        assert_eq!(segment.checkpoint.as_ref().map(|c| c.parts.len()), Some(3));
    }

    #[test]
    fn several_checkpoints_at_one_version_are_chosen_deterministically() {
        let classic_and_uuids = with(
            commits(0..=3),
            [
                classic(3),
                uuid(3, UUID_B),
                uuid(3, UUID_A),
                part(3, 1, 2),
                part(3, 2, 2),
            ],
        );
        let mut reversed = classic_and_uuids.clone();
        reversed.reverse();
        for listing in [classic_and_uuids.clone(), reversed] {
            let segment = segment(listing, None);
            assert_eq!(
                checkpoint_names(&segment),
                [uuid_checkpoint_file_name(3, UUID_A, CheckpointFormat::Json)]
            );
        }
        let no_uuid: Vec<LogPath> = classic_and_uuids
            .iter()
            .filter(|path| {
                !matches!(
                    path.kind,
                    LogFileKind::Checkpoint(CheckpointKind::Uuid { .. })
                )
            })
            .cloned()
            .collect();
        assert_eq!(
            segment(no_uuid.clone(), None)
                .checkpoint
                .unwrap()
                .parts
                .len(),
            2
        );
        let classic_only: Vec<LogPath> = no_uuid
            .into_iter()
            .filter(|path| {
                !matches!(
                    path.kind,
                    LogFileKind::Checkpoint(CheckpointKind::MultiPart { .. })
                )
            })
            .collect();
        assert_eq!(
            checkpoint_names(&segment(classic_only, None)),
            [classic_checkpoint_file_name(3)]
        );
        let all = complete_checkpoints(&classic_and_uuids);
        let kinds: Vec<_> = all.iter().map(|c| c.kind().cloned()).collect();
        assert_eq!(all.len(), 4);
        assert!(matches!(kinds[2], Some(CheckpointKind::MultiPart { .. })));
        assert_eq!(kinds[3], Some(CheckpointKind::Classic));
    }

    #[test]
    fn a_gap_after_the_checkpoint_is_an_error_naming_the_version() {
        let listing = with(commits([10, 11, 13]), [classic(10)]);
        let error = build_log_segment("tbl", listing.clone(), None).unwrap_err();
        assert!(matches!(&error, Error::NonContiguousLog { table, .. } if table == "tbl"));
        let reason = reason_of(error);
        assert!(reason.contains("commit 12 is missing"), "{reason}");
        assert!(reason.contains("the next commit listed is 13"), "{reason}");
        assert!(reason.contains("from checkpoint 10"), "{reason}");
        let before_gap = segment(listing, Some(11));
        assert_eq!(versions(&before_gap.commits), [11]);
    }

    #[test]
    fn a_gap_without_checkpoint_is_an_error() {
        let reason = reason_of(build_log_segment("t", commits([0, 2]), None).unwrap_err());
        assert!(reason.contains("commit 1 is missing"), "{reason}");
        assert!(reason.contains("from version 0"), "{reason}");
    }

    #[test]
    fn the_spec_example_of_a_checkpoint_after_a_gap() {
        let listing = with(commits([0, 1, 3]), [classic(3)]);
        let latest = segment(listing.clone(), None);
        assert_eq!(latest.checkpoint.map(|c| c.version), Some(3));
        assert!(latest.commits.is_empty());
        assert!(segment(listing.clone(), Some(1)).checkpoint.is_none());
        let error = build_log_segment("t", listing, Some(2)).unwrap_err();
        assert!(reason_of(error).contains("commit 2 is missing"));
    }

    #[test]
    fn cleaned_up_history_without_a_checkpoint_cannot_be_read() {
        let error = build_log_segment("t", commits(3..=5), None).unwrap_err();
        assert!(matches!(error, Error::NonContiguousLog { .. }));
        let reason = reason_of(error);
        assert!(reason.contains("oldest commit is 3"), "{reason}");
        assert!(
            reason.contains("no version can be reconstructed"),
            "{reason}"
        );
        assert!(build_log_segment("t", commits(3..=5), Some(4)).is_err());
        assert_eq!(earliest_readable_version(&commits(3..=5)), None);
    }

    #[test]
    fn a_target_past_the_latest_version_names_the_latest() {
        let error = build_log_segment("t", commits(0..=4), Some(7)).unwrap_err();
        assert!(matches!(error, Error::VersionNotFound { version: 7, .. }));
        assert_eq!(reason_of(error), "the latest version is 4");
    }

    #[test]
    fn a_target_before_cleaned_up_history_names_the_earliest_readable_version() {
        let listing = with(commits(8..=12), [classic(8), classic(10)]);
        assert_eq!(earliest_readable_version(&listing), Some(8));
        let error = build_log_segment("t", listing.clone(), Some(5)).unwrap_err();
        assert!(matches!(error, Error::VersionNotFound { version: 5, .. }));
        assert!(reason_of(error).contains("earliest version that can be read is 8"));
        let oldest = segment(listing, Some(8));
        assert_eq!(oldest.checkpoint.map(|c| c.version), Some(8));
        assert!(oldest.commits.is_empty());
    }

    #[test]
    fn an_empty_listing_is_not_a_table() {
        let error = build_log_segment("s3://b/t", Vec::new(), None).unwrap_err();
        assert!(matches!(&error, Error::TableNotFound { location, .. } if location == "s3://b/t"));
        let only_extras = vec![log_path(&checksum_file_name(0)), part(1, 1, 2)];
        let error = build_log_segment("t", only_extras.clone(), None).unwrap_err();
        assert!(reason_of(error).contains("no commit file and no complete checkpoint"));
        assert_eq!(latest_version(&only_extras), None);
        assert_eq!(latest_version(&[]), None);
    }

    #[test]
    fn a_checkpoint_whose_commit_was_cleaned_up_is_enough() {
        let listing = vec![classic(20)];
        let segment = segment(listing.clone(), None);
        assert_eq!(segment.end_version, 20);
        assert!(segment.commits.is_empty());
        assert_eq!(segment.latest_commit, None);
        assert_eq!(latest_version(&listing), Some(20));
        let later = build_log_segment("t", with(listing, commits([21, 22])), None).unwrap();
        assert_eq!(versions(&later.commits), [21, 22]);
        assert_eq!(later.latest_commit.map(|p| p.version), Some(22));
    }

    #[test]
    fn latest_version_counts_commits_and_complete_checkpoints_only() {
        assert_eq!(latest_version(&commits(0..=3)), Some(3));
        assert_eq!(latest_version(&with(commits(0..=3), [classic(5)])), Some(5));
        assert_eq!(
            latest_version(&with(commits(0..=3), [part(5, 1, 2)])),
            Some(3)
        );
        let extras = [compaction(0, 9), log_path(&checksum_file_name(9))];
        assert_eq!(latest_version(&with(commits(0..=3), extras)), Some(3));
    }

    #[test]
    fn the_checksum_file_of_the_end_version_is_picked() {
        let listing = with(
            commits(0..=2),
            [
                log_path(&checksum_file_name(1)),
                log_path(&checksum_file_name(2)),
            ],
        );
        assert_eq!(
            segment(listing.clone(), None).checksum.map(|p| p.version),
            Some(2)
        );
        assert_eq!(
            segment(listing.clone(), Some(1))
                .checksum
                .map(|p| p.version),
            Some(1)
        );
        assert_eq!(segment(listing, Some(0)).checksum, None);
    }

    #[test]
    fn compactions_replace_the_commits_they_cover() {
        let listing = with(
            commits(0..=10),
            [classic(3), compaction(4, 6), compaction(7, 8)],
        );
        let segment = segment(listing, None);
        assert_eq!(ranges(&segment.compactions), [(4, 6), (7, 8)]);
        assert_eq!(versions(&segment.commits), [9, 10]);
        let order: Vec<u64> = segment
            .deltas_ascending()
            .iter()
            .map(|p| p.version)
            .collect();
        assert_eq!(order, [4, 7, 9, 10]);
        assert_eq!(segment.latest_commit.map(|p| p.version), Some(10));
    }

    #[test]
    fn compactions_straddling_the_checkpoint_or_target_are_not_used() {
        let listing = with(
            commits(0..=10),
            [
                classic(5),
                compaction(3, 7),
                compaction(5, 6),
                compaction(8, 10),
            ],
        );
        let latest = segment(listing.clone(), None);
        assert_eq!(ranges(&latest.compactions), [(8, 10)]);
        assert_eq!(versions(&latest.commits), [6, 7]);
        let travel = segment(listing, Some(9));
        assert!(travel.compactions.is_empty());
        assert_eq!(versions(&travel.commits), [6, 7, 8, 9]);
    }

    #[test]
    fn overlapping_compactions_are_chosen_to_read_the_fewest_files() {
        let listing = with(
            commits(0..=10),
            [
                compaction(0, 4),
                compaction(2, 9),
                compaction(5, 10),
                compaction(1, 1),
            ],
        );
        let segment = segment(listing, None);
        assert_eq!(ranges(&segment.compactions), [(0, 4), (5, 10)]);
        assert!(segment.commits.is_empty());

        let single_version = with(commits(0..=2), [compaction(1, 1)]);
        let segment = build_log_segment("t", single_version, None).unwrap();
        assert!(segment.compactions.is_empty(), "a tie goes to the commit");
        assert_eq!(versions(&segment.commits), [0, 1, 2]);
    }

    #[test]
    fn a_compaction_can_stand_in_for_cleaned_up_commits() {
        let listing = with(
            commits([0, 1, 2, 5, 6]),
            [compaction(1, 3), compaction(3, 5)],
        );
        let segment = segment(listing.clone(), None);
        assert_eq!(ranges(&segment.compactions), [(3, 5)]);
        assert_eq!(versions(&segment.commits), [0, 1, 2, 6]);

        let without_cover = with(commits([0, 1, 2, 5, 6]), [compaction(1, 3)]);
        let reason = reason_of(build_log_segment("t", without_cover, None).unwrap_err());
        assert!(reason.contains("commit 4 is missing"), "{reason}");
    }

    #[test]
    fn duplicate_listing_entries_are_harmless() {
        let listing = with(commits(0..=2), commits(0..=2));
        let listing = with(
            listing,
            [compaction(1, 2), compaction(1, 2), classic(1), classic(1)],
        );
        let segment = segment(listing, None);
        assert_eq!(segment.checkpoint.map(|c| c.parts.len()), Some(1));
        assert_eq!(versions(&segment.commits), [2]);
        assert!(segment.compactions.is_empty());
    }

    #[test]
    fn very_large_versions_do_not_overflow() {
        let listing = with(
            commits([u64::MAX]),
            [classic(u64::MAX - 1), commits([u64::MAX - 1]).remove(0)],
        );
        let segment = segment(listing, None);
        assert_eq!(segment.end_version, u64::MAX);
        assert_eq!(versions(&segment.commits), [u64::MAX]);
    }

    /// One golden table's `_delta_log`, listed recursively as an object store would list it.
    fn list_golden_log(log_dir: &std::path::Path, prefix: &str) -> Vec<LogPath> {
        let mut listing = Vec::new();
        let mut pending = vec![(log_dir.to_path_buf(), format!("{prefix}/_delta_log"))];
        while let Some((dir, location)) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = format!("{location}/{name}");
                let metadata = entry.metadata().unwrap();
                if metadata.is_dir() {
                    pending.push((entry.path(), child));
                    continue;
                }
                let meta = object_store::ObjectMeta {
                    location: Path::from(child),
                    last_modified: metadata.modified().unwrap().into(),
                    size: metadata.len(),
                    e_tag: None,
                    version: None,
                };
                listing.extend(LogPath::parse(&meta));
            }
        }
        listing
    }

    fn golden_checkpoint(name: &str, segment: &LogSegment) -> (u64, Vec<String>) {
        let checkpoint = segment
            .checkpoint
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no checkpoint chosen"));
        (checkpoint.version, checkpoint_names(segment))
    }

    #[test]
    fn golden_tables_give_sensible_segments() {
        let Some(golden) = golden_tables_dir() else {
            return;
        };
        let archives = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/golden");
        let names = golden_table_names(&archives);
        assert_eq!(names.len(), 89);
        let mut readable = 0;
        for name in &names {
            let log_dir = golden.join(name).join("delta/_delta_log");
            let listing = list_golden_log(&log_dir, name);
            assert!(
                listing.iter().all(|path| path
                    .location
                    .as_ref()
                    .starts_with(&format!("{name}/_delta_log/0"))),
                "{name}: a file outside _delta_log was parsed"
            );
            let result = build_log_segment(name, listing.clone(), None);
            match name.as_str() {
                "no-delta-log-folder" | "hive" => {
                    assert!(listing.is_empty(), "{name}");
                    assert!(matches!(result, Err(Error::TableNotFound { .. })), "{name}");
                    continue;
                }
                "versions-not-contiguous" => {
                    let reason = reason_of(result.unwrap_err());
                    assert!(reason.contains("commit 1 is missing"), "{reason}");
                    continue;
                }
                _ => {}
            }
            let segment = result.unwrap_or_else(|error| panic!("{name}: {error}"));
            check_golden_segment(name, &listing, &segment);
            readable += 1;
            match name.as_str() {
                "multi-part-checkpoint" => assert_eq!(
                    golden_checkpoint(name, &segment),
                    (
                        1,
                        vec![
                            multi_part_checkpoint_file_name(1, 1, 2),
                            multi_part_checkpoint_file_name(1, 2, 2)
                        ]
                    )
                ),
                "v2-checkpoint-json" => assert_eq!(
                    golden_checkpoint(name, &segment),
                    (
                        2,
                        vec![
                            "00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json"
                                .to_string()
                        ]
                    )
                ),
                "v2-checkpoint-parquet" => assert_eq!(
                    golden_checkpoint(name, &segment),
                    (
                        2,
                        vec![
                            "00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet"
                                .to_string()
                        ]
                    )
                ),
                "only-checkpoint-files" => {
                    assert_eq!(
                        golden_checkpoint(name, &segment),
                        (2, vec![classic_checkpoint_file_name(2)])
                    );
                    assert!(segment.commits.is_empty());
                    let travel = build_log_segment(name, listing.clone(), Some(1)).unwrap();
                    assert_eq!(golden_checkpoint(name, &travel).0, 1);
                }
                "corrupted-last-checkpoint-kernel" | "checkpoint" => {
                    assert_eq!(
                        golden_checkpoint(name, &segment),
                        (10, vec![classic_checkpoint_file_name(10)])
                    );
                    assert_eq!(segment.commits.first().map(|p| p.version), Some(11));
                }
                _ => {}
            }
        }
        assert_eq!(readable, 86, "every other golden table has a readable log");
    }

    /// Invariants every readable golden table must satisfy, at every version it has.
    fn check_golden_segment(name: &str, listing: &[LogPath], segment: &LogSegment) {
        let latest_commit = listing
            .iter()
            .filter(|p| p.is_commit())
            .map(|p| p.version)
            .max();
        assert_eq!(Some(segment.end_version), latest_commit, "{name}");
        let earliest = earliest_readable_version(listing).unwrap();
        for version in earliest..=segment.end_version {
            let travel = build_log_segment(name, listing.to_vec(), Some(version))
                .unwrap_or_else(|error| panic!("{name}@{version}: {error}"));
            let expected: Vec<u64> = (travel.first_delta_version()..=version).collect();
            assert_eq!(versions(&travel.commits), expected, "{name}@{version}");
            assert_eq!(
                travel.latest_commit.map(|p| p.version),
                Some(version),
                "{name}"
            );
            if let Some(checkpoint) = &travel.checkpoint {
                assert!(checkpoint.version <= version, "{name}@{version}");
            }
        }
    }
}
