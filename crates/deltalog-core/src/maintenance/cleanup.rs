//! Metadata cleanup: deleting expired log files (spec "Metadata Cleanup", and the
//! `checkpointProtection` feature).
//!
//! The procedure, as the spec gives it:
//! 1. The cutoff is midnight UTC of the day `delta.logRetentionDuration` ago; the cutoff
//!    commit is the newest commit not newer than it (by the commit file's time).
//! 2. The cutoff checkpoint is the newest complete checkpoint not newer than the cutoff commit;
//!    it and everything after it are kept, so every version from it on stays readable.
//! 3. Commits, checksum files and checkpoints of older versions are deleted, and compaction
//!    files starting at or before the cutoff checkpoint.
//! 4. Sidecars that a kept checkpoint references, or that are less than a day old (as of
//!    midnight UTC), are kept; every other file in `_delta_log/_sidecars` is deleted.
//!
//! Before anything is deleted, a table that supports `v2Checkpoint` whose newest checkpoint
//! is UUID-named and has no classic-named one of its version gets its classic-named copy
//! (`checkpoint_write::compat`), as Delta on Spark writes it: readers that know only classic
//! names then find a checkpoint, read its protocol and fail gracefully.
//!
//! With `checkpointProtection` supported and `delta.requireCheckpointProtectionBeforeVersion`
//! at `P`, the history before `P` is removed whole or not at all: nothing is deleted while
//! the cutoff checkpoint is older than `P`.

use std::collections::HashSet;

use object_store::path::Path;

use crate::error::Result;
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::checkpoint::{read_parquet_actions_skipping, CheckpointProjection};
use crate::log::decode::commit::{decode_actions, DecodeOptions};
use crate::log::list_log_from;
use crate::log::path::{CheckpointFormat, CheckpointKind, LogFileKind, LogPath, SIDECARS_DIR};
use crate::log::segment::{complete_checkpoints, CheckpointFiles};
use crate::maintenance::checkpoint::compat::{needs_classic_copy, write_classic_copy};
use crate::replay::load::load_segment_without_files;
use crate::storage::Storage;
use crate::table_config::{TableConfiguration, TableFeature};
use crate::util::time::{duration_ms, now_ms};

const MINUTE_MS: i64 = 60 * 1000;
const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

/// What a metadata cleanup deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupResult {
    /// The version of the cutoff checkpoint: the oldest version still readable. `None` when
    /// no checkpoint is old enough, and nothing was deleted.
    pub oldest_kept_version: Option<u64>,
    /// The log files deleted (URLs).
    pub deleted: Vec<String>,
    /// The sidecar files deleted (URLs).
    pub deleted_sidecars: Vec<String>,
    /// The classic-named copy of the newest V2 checkpoint written before deleting (URL).
    pub compat_checkpoint: Option<String>,
}

/// Deletes the log files that `delta.logRetentionDuration` lets go, or with `dry_run` only
/// reports them ([`crate::Table::cleanup_metadata_with`]). Reads the protocol and metadata,
/// never the file list.
pub(crate) async fn cleanup_metadata(storage: &Storage, dry_run: bool) -> Result<CleanupResult> {
    let segment = crate::log::locate_segment(storage, None).await?;
    let state = load_segment_without_files(storage, storage.uri(), &segment).await?;
    let config = TableConfiguration::try_new(state.protocol, state.metadata, storage.uri())?;
    let latest = state.version;
    let now = now_ms();
    let cutoff_ms = retention_cutoff(&config, now);
    plan_cleanup(storage, &config, latest, (now, cutoff_ms), dry_run).await
}

/// Runs the cleanup for a table of `config` whose latest version is `latest`, as of `now_ms`.
pub(crate) async fn cleanup_expired_logs(
    storage: &Storage,
    config: &TableConfiguration,
    latest: u64,
    now_ms: i64,
) -> Result<CleanupResult> {
    let cutoff_ms = retention_cutoff(config, now_ms);
    plan_cleanup(storage, config, latest, (now_ms, cutoff_ms), false).await
}

/// The cleanup `DROP FEATURE ... TRUNCATE HISTORY` runs (Delta on Spark's
/// `cleanUpExpiredLogs` with `delta.dropFeatureTruncateHistory.retentionDuration`, default
/// 24 hours, and minute granularity): commits older than that, as of `now_ms`, go.
pub(crate) async fn truncate_history(
    storage: &Storage,
    config: &TableConfiguration,
    latest: u64,
    now_ms: i64,
) -> Result<CleanupResult> {
    let retention = duration_ms(config.properties().drop_feature_truncate_history_retention);
    let cutoff = now_ms.saturating_sub(retention);
    let cutoff_ms = cutoff - cutoff.rem_euclid(MINUTE_MS);
    plan_cleanup(storage, config, latest, (now_ms, cutoff_ms), false).await
}

/// The cutoff of `delta.logRetentionDuration` as of `now_ms`: midnight UTC of the day it
/// falls in (spec "Metadata Cleanup").
fn retention_cutoff(config: &TableConfiguration, now_ms: i64) -> i64 {
    let retention = duration_ms(config.properties().log_retention_duration);
    midnight_utc(now_ms.saturating_sub(retention))
}

/// The cleanup, as of `now_ms`, of every log file older than the cutoff checkpoint of
/// `cutoff_ms`, run or (with `dry_run`) only reported.
async fn plan_cleanup(
    storage: &Storage,
    config: &TableConfiguration,
    latest: u64,
    (now_ms, cutoff_ms): (i64, i64),
    dry_run: bool,
) -> Result<CleanupResult> {
    let listing = list_log_from(storage, 0).await?;
    let Some(checkpoint) = cutoff_checkpoint(&listing, cutoff_ms, latest) else {
        return Ok(CleanupResult::default());
    };
    let protected = config
        .properties()
        .require_checkpoint_protection_before_version;
    let protects = config.is_feature_supported(&TableFeature::CheckpointProtection);
    if protects && protected > 0 && i128::from(checkpoint.version) < i128::from(protected) {
        return Ok(CleanupResult::default());
    }
    let mut report = CleanupResult {
        oldest_kept_version: Some(checkpoint.version),
        ..CleanupResult::default()
    };
    // Oldest first, stopping at the first failure: the log kept stays contiguous.
    let mut expired_files: Vec<&LogPath> = listing
        .iter()
        .filter(|file| expired(file, checkpoint.version))
        .collect();
    expired_files.sort_by_key(|file| file.version);
    let v2 = config.is_feature_supported(&TableFeature::V2Checkpoint);
    if !dry_run && !expired_files.is_empty() && v2 {
        report.compat_checkpoint =
            write_compat_checkpoint(storage, config, &listing, latest).await?;
    }
    for file in expired_files {
        if !dry_run {
            storage.delete_log_file(&file.location).await?;
        }
        report.deleted.push(storage.url_of(&file.location));
    }
    let kept: Vec<LogPath> = listing
        .into_iter()
        .filter(|file| !expired(file, checkpoint.version))
        .collect();
    let keep_after_ms = midnight_utc(now_ms) - DAY_MS;
    report.deleted_sidecars = cleanup_sidecars(storage, &kept, keep_after_ms, dry_run).await?;
    Ok(report)
}

/// Writes the classic-named copy of the newest checkpoint at or below `latest` when it is
/// UUID-named and its version has no classic-named checkpoint; returns the copy's URL.
async fn write_compat_checkpoint(
    storage: &Storage,
    config: &TableConfiguration,
    listing: &[LogPath],
    latest: u64,
) -> Result<Option<String>> {
    let checkpoints = complete_checkpoints(listing);
    let Some(newest) = checkpoints
        .iter()
        .rfind(|c| c.version <= latest)
        .map(|c| c.version)
    else {
        return Ok(None);
    };
    let of_newest: Vec<CheckpointFiles> = checkpoints
        .into_iter()
        .filter(|c| c.version == newest)
        .collect();
    let Some(manifest) = needs_classic_copy(&of_newest).and_then(|c| c.parts.first()) else {
        return Ok(None);
    };
    let LogFileKind::Checkpoint(CheckpointKind::Uuid { format, .. }) = &manifest.kind else {
        return Ok(None);
    };
    let rows_per_group =
        crate::maintenance::checkpoint::CheckpointOptions::default().row_group_rows;
    let copy = write_classic_copy(
        storage,
        config,
        &manifest.location,
        *format,
        newest,
        rows_per_group,
    )
    .await?;
    Ok(Some(copy.url))
}

/// Midnight UTC at or before `ms`.
fn midnight_utc(ms: i64) -> i64 {
    ms - ms.rem_euclid(DAY_MS)
}

/// The newest complete checkpoint at or below the newest commit not newer than `cutoff_ms`.
fn cutoff_checkpoint(listing: &[LogPath], cutoff_ms: i64, latest: u64) -> Option<CheckpointFiles> {
    let cutoff_commit = listing
        .iter()
        .filter(|file| file.is_commit() && file.last_modified_ms <= cutoff_ms)
        .map(|file| file.version)
        .filter(|version| *version <= latest)
        .max()?;
    complete_checkpoints(listing)
        .into_iter()
        .rfind(|checkpoint| checkpoint.version <= cutoff_commit)
}

/// True for a file the cutoff checkpoint at `kept_from` makes unnecessary.
fn expired(file: &LogPath, kept_from: u64) -> bool {
    match file.kind {
        LogFileKind::Compaction { .. } => file.version <= kept_from,
        _ => file.version < kept_from,
    }
}

/// Deletes (unless `dry_run`) the sidecars no kept checkpoint references that are older than
/// `keep_after_ms`; returns them.
async fn cleanup_sidecars(
    storage: &Storage,
    kept: &[LogPath],
    keep_after_ms: i64,
    dry_run: bool,
) -> Result<Vec<String>> {
    let dir = storage.log_dir().clone().join(SIDECARS_DIR);
    let sidecars = storage.list_log_subdir(&dir).await?;
    if sidecars.is_empty() {
        return Ok(Vec::new());
    }
    let referenced = referenced_sidecars(storage, kept).await?;
    let mut deleted = Vec::new();
    for sidecar in sidecars {
        let name = sidecar.location.filename().unwrap_or_default().to_string();
        let recent = sidecar.last_modified.timestamp_millis() >= keep_after_ms;
        if recent || referenced.contains(&name) {
            continue;
        }
        if !dry_run {
            storage.delete_log_file(&sidecar.location).await?;
        }
        deleted.push(storage.url_of(&sidecar.location));
    }
    Ok(deleted)
}

/// The file names of the sidecars the checkpoints among `kept` reference.
async fn referenced_sidecars(storage: &Storage, kept: &[LogPath]) -> Result<HashSet<String>> {
    let mut names = HashSet::new();
    for file in kept {
        let LogFileKind::Checkpoint(kind) = &file.kind else {
            continue;
        };
        if matches!(kind, CheckpointKind::MultiPart { .. }) {
            continue;
        }
        for path in sidecars_of(storage, file, kind).await? {
            let name = path.rsplit('/').next().unwrap_or_default().to_string();
            names.insert(name);
        }
    }
    Ok(names)
}

async fn sidecars_of(
    storage: &Storage,
    file: &LogPath,
    kind: &CheckpointKind,
) -> Result<Vec<String>> {
    let name = storage.url_of(&file.location);
    let decoded = match kind {
        CheckpointKind::Uuid {
            format: CheckpointFormat::Json,
            ..
        } => {
            let bytes = storage.read(&file.location).await?;
            let options = DecodeOptions {
                from_checkpoint: true,
                stats: StatsText::Dropped,
                skip_file_actions: false,
                skip_commit_info: false,
            };
            decode_actions(&bytes, file.version, &name, options)?
        }
        _ => {
            let projection = CheckpointProjection {
                file_actions: false,
                ..CheckpointProjection::default()
            };
            let location: &Path = &file.location;
            read_parquet_actions_skipping(
                storage,
                location,
                file.size,
                file.version,
                projection,
                None,
            )
            .await?
        }
    };
    Ok(decoded
        .sidecars
        .into_iter()
        .map(|sidecar| sidecar.path)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Snapshot, SnapshotAt};
    use crate::util::test_tables::table_with_history;

    async fn cleanup(snapshot: &Snapshot, now: i64) -> CleanupResult {
        let config = snapshot.table_configuration();
        cleanup_expired_logs(snapshot.storage(), config, snapshot.version(), now)
            .await
            .unwrap()
    }

    fn set_mtime(path: &std::path::Path, ms: i64) {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(time).unwrap();
    }

    fn log_names(dir: &tempfile::TempDir) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with('.') && !n.starts_with('_'))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn midnight_is_the_start_of_the_utc_day() {
        assert_eq!(midnight_utc(DAY_MS * 3 + 5), DAY_MS * 3);
        assert_eq!(midnight_utc(DAY_MS * 3), DAY_MS * 3);
    }

    #[tokio::test]
    async fn cleanup_keeps_a_checkpoint_at_the_oldest_kept_version() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(
            &dir,
            &[("delta.logRetentionDuration", "interval 2 days")],
            4,
        )
        .await;
        table.checkpoint(Some(2)).await.unwrap();
        let now = now_ms();
        let old = now - 10 * DAY_MS;
        for version in 0..=3u64 {
            let path = dir.path().join(format!("_delta_log/{version:020}.json"));
            set_mtime(&path, old + version as i64);
        }
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let report = cleanup(&snapshot, now).await;
        assert_eq!(report.oldest_kept_version, Some(2));
        assert_eq!(report.deleted.len(), 2);
        let names = log_names(&dir);
        assert_eq!(names[0], format!("{:020}.checkpoint.parquet", 2));
        for version in 2..=4u64 {
            let at = table.snapshot(SnapshotAt::Version(version)).await.unwrap();
            assert_eq!(at.version(), version);
        }
        assert!(table.snapshot(SnapshotAt::Version(1)).await.is_err());
    }

    #[tokio::test]
    async fn nothing_is_deleted_without_an_old_enough_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(&dir, &[], 3).await;
        table.checkpoint(None).await.unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let report = cleanup(&snapshot, now_ms()).await;
        assert_eq!(report, CleanupResult::default());
    }

    #[tokio::test]
    async fn checkpoint_protection_keeps_the_protected_history_whole() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(
            &dir,
            &[
                ("delta.feature.checkpointProtection", "supported"),
                ("delta.requireCheckpointProtectionBeforeVersion", "3"),
                ("delta.logRetentionDuration", "interval 2 days"),
            ],
            4,
        )
        .await;
        table.checkpoint(Some(2)).await.unwrap();
        let now = now_ms();
        for version in 0..=4u64 {
            let path = dir.path().join(format!("_delta_log/{version:020}.json"));
            set_mtime(&path, now - 10 * DAY_MS + version as i64);
        }
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let report = cleanup(&snapshot, now).await;
        assert!(report.deleted.is_empty());
        table.checkpoint(Some(3)).await.unwrap();
        let report = cleanup(&snapshot, now).await;
        assert_eq!(report.oldest_kept_version, Some(3));
    }

    #[tokio::test]
    async fn unreferenced_old_sidecars_go_and_referenced_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_with_history(&dir, crate::util::test_tables::V2, 2).await;
        let written = table.checkpoint(None).await.unwrap();
        let sidecars = dir.path().join("_delta_log/_sidecars");
        let stray = sidecars.join("stray.parquet");
        std::fs::write(&stray, b"x").unwrap();
        let now = now_ms();
        set_mtime(&stray, now - 3 * DAY_MS);
        for entry in std::fs::read_dir(&sidecars).unwrap() {
            set_mtime(&entry.unwrap().path(), now - 3 * DAY_MS);
        }
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let kept: Vec<LogPath> = list_log_from(table.storage(), 0).await.unwrap();
        let planned = cleanup_sidecars(table.storage(), &kept, midnight_utc(now) - DAY_MS, true)
            .await
            .unwrap();
        assert!(stray.exists());
        let deleted = cleanup_sidecars(table.storage(), &kept, midnight_utc(now) - DAY_MS, false)
            .await
            .unwrap();
        assert_eq!(planned, deleted);
        assert_eq!(deleted.len(), 1);
        assert!(deleted[0].ends_with("stray.parquet"));
        assert_eq!(
            std::fs::read_dir(&sidecars).unwrap().count(),
            written.sidecars.len()
        );
        assert_eq!(snapshot.num_files().await.unwrap(), 3);
    }

    #[tokio::test]
    async fn cleanup_writes_the_classic_copy_of_the_newest_v2_checkpoint_before_deleting() {
        let dir = tempfile::tempdir().unwrap();
        let mut properties = crate::util::test_tables::V2.to_vec();
        properties.push(("delta.logRetentionDuration", "interval 2 days"));
        let table = table_with_history(&dir, &properties, 4).await;
        table.checkpoint(Some(2)).await.unwrap();
        let newest = table.checkpoint(Some(4)).await.unwrap();
        let now = now_ms();
        for version in 0..=3u64 {
            let path = dir.path().join(format!("_delta_log/{version:020}.json"));
            set_mtime(&path, now - 10 * DAY_MS + version as i64);
        }
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let report = cleanup(&snapshot, now).await;
        let classic = format!("{:020}.checkpoint.parquet", 4);
        assert!(report
            .compat_checkpoint
            .as_deref()
            .is_some_and(|url| url.ends_with(&classic)));
        assert_eq!(report.oldest_kept_version, Some(2));
        // The copy shares the manifest's sidecars: none is deleted, and it reads alone.
        assert!(report.deleted_sidecars.is_empty());
        let manifest = newest.files[0].rsplit('/').next().unwrap().to_string();
        std::fs::remove_file(dir.path().join("_delta_log").join(manifest)).unwrap();
        let through_copy = table.snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(
            through_copy.num_files().await.unwrap(),
            snapshot.num_files().await.unwrap()
        );
        // With a classic-named checkpoint of the newest version, no copy is written again.
        let again = cleanup(&through_copy, now).await;
        assert_eq!(again.compat_checkpoint, None);
    }
}
