use super::*;
use crate::log::path::{
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
    let archives = crate::golden_archives();
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
