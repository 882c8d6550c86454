use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::log::path::commit_file_name;

/// A table in a temporary directory whose commits hold one `commitInfo` each.
struct TestLog {
    dir: tempfile::TempDir,
}

impl TestLog {
    fn new() -> TestLog {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("_delta_log")).unwrap();
        TestLog { dir }
    }

    /// Commit `version` with file time `file_time_ms` and, when given, an in-commit timestamp.
    fn commit(&self, version: u64, file_time_ms: i64, ict: Option<i64>) {
        let info = match ict {
            Some(ict) => format!("{{\"commitInfo\":{{\"inCommitTimestamp\":{ict}}}}}"),
            None => format!("{{\"commitInfo\":{{\"version\":{version}}}}}"),
        };
        let path = self
            .dir
            .path()
            .join("_delta_log")
            .join(commit_file_name(version));
        std::fs::write(
            &path,
            format!("{info}\n{{\"txn\":{{\"appId\":\"a\",\"version\":{version}}}}}\n"),
        )
        .unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_modified(UNIX_EPOCH + Duration::from_millis(file_time_ms as u64))
            .unwrap();
    }

    fn storage(&self) -> Storage {
        Storage::open(self.dir.path().to_str().unwrap(), &HashMap::new()).unwrap()
    }
}

fn versions(range: &CommitRange) -> Vec<u64> {
    range
        .commits()
        .iter()
        .map(|commit| commit.version)
        .collect()
}

#[tokio::test]
async fn reads_each_commit_of_the_range_once_in_order() {
    let log = TestLog::new();
    for version in 0..5 {
        log.commit(version, 1_000 * (version as i64 + 1), None);
    }
    let storage = log.storage();
    let range = CommitRange::list(&storage, 1, Some(3)).await.unwrap();
    assert_eq!(versions(&range), [1, 2, 3]);
    assert_eq!(
        (range.start(), range.end(), range.len()),
        (Some(1), Some(3), 3)
    );
    let files = range.read_all(&storage).await.unwrap();
    let read: Vec<u64> = files.iter().map(|file| file.version).collect();
    assert_eq!(read, [1, 2, 3]);
    for file in &files {
        let info = file.commit_info().unwrap().unwrap();
        assert_eq!(info.raw["version"], file.version);
        assert_eq!(
            file.decode(false).unwrap().txns[0].version,
            file.version as i64
        );
        assert!(file.name.ends_with(&commit_file_name(file.version)));
    }
    let latest = CommitRange::list(&storage, 3, None).await.unwrap();
    assert_eq!(versions(&latest), [3, 4]);
}

#[tokio::test]
async fn versions_past_the_end_are_not_found() {
    let log = TestLog::new();
    for version in 0..3 {
        log.commit(version, 1_000, None);
    }
    let storage = log.storage();
    for (start, end, missing) in [(3, None, 3), (0, Some(3), 3), (7, Some(9), 7)] {
        let error = CommitRange::list(&storage, start, end).await.unwrap_err();
        assert!(
            matches!(error, Error::VersionNotFound { version, .. } if version == missing),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_gap_is_the_version_not_found_of_the_first_missing_commit() {
    let log = TestLog::new();
    for version in [0, 1, 3, 4] {
        log.commit(version, 1_000, None);
    }
    let storage = log.storage();
    let error = CommitRange::list(&storage, 0, None).await.unwrap_err();
    assert!(
        matches!(error, Error::VersionNotFound { version: 2, .. }),
        "{error}"
    );
    assert_eq!(
        versions(&CommitRange::list(&storage, 3, None).await.unwrap()),
        [3, 4]
    );
    let listing = crate::log::list_log_from(&storage, 0).await.unwrap();
    assert_eq!(versions(&CommitRange::all_listed(&listing)), [0, 1, 3, 4]);
    let error = CommitRange::from_listing("t", &listing, 2, 1).unwrap_err();
    assert!(
        matches!(error, Error::VersionNotFound { version: 2, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn file_times_are_monotonic_over_the_commits_before_the_range() {
    let log = TestLog::new();
    log.commit(0, 5_000, None);
    log.commit(1, 4_000, None);
    log.commit(2, 3_000, None);
    log.commit(3, 9_000, None);
    let storage = log.storage();
    let range = CommitRange::list(&storage, 2, None).await.unwrap();
    assert_eq!(range.file_times(), [5_002, 9_000]);
    let files = range.read_all(&storage).await.unwrap();
    let stamps: Vec<i64> = files
        .iter()
        .map(|file| file.timestamp_ms(file.commit_info().unwrap().as_ref()))
        .collect();
    assert_eq!(stamps, [5_002, 9_000]);
    let listing = crate::log::list_log_from(&storage, 0).await.unwrap();
    assert_eq!(
        CommitRange::all_listed(&listing).newest(2).file_times(),
        [5_002, 9_000]
    );
}

#[tokio::test]
async fn in_commit_timestamps_win_over_file_times() {
    let log = TestLog::new();
    log.commit(0, 5_000, None);
    log.commit(1, 4_000, Some(6_000));
    log.commit(2, 1_000, Some(7_000));
    let storage = log.storage();
    let files = CommitRange::list(&storage, 0, None)
        .await
        .unwrap()
        .read_all(&storage)
        .await
        .unwrap();
    let stamps: Vec<i64> = files
        .iter()
        .map(|file| file.timestamp_ms(file.commit_info().unwrap().as_ref()))
        .collect();
    assert_eq!(stamps, [5_000, 6_000, 7_000]);
}
