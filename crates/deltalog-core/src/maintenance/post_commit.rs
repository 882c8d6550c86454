//! The work done after a commit lands, as Delta on Spark does it: the version checksum file
//! `<v>.crc` for every commit, a checkpoint every `delta.checkpointInterval` versions, and,
//! after a checkpoint, metadata cleanup when `delta.enableExpiredLogCleanup`; the symlink
//! format manifests when `delta.compatibility.symlinkFormatManifest.enabled` (regenerated
//! whole, where Spark updates the touched partitions' only). Each step can be
//! turned off ([`PostCommitOptions`]); a step that fails is reported in a
//! [`PostCommitResult`] and never turns the committed write into an error.

use crate::error::Result;
use crate::log::checksum::{read_checksum, VersionChecksum};
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::{decode_actions, DecodeOptions};
use crate::log::path::commit_file_name;
use crate::maintenance::checkpoint::{
    write_checkpoint_with, CheckpointOptions, CheckpointOutcome, CheckpointResult, FullReplay,
};
use crate::maintenance::checksum::write_checksum;
use crate::maintenance::cleanup::{cleanup_expired_logs, CleanupResult};
use crate::maintenance::manifest::generate_symlink_manifest;
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::util::time::now_ms;

/// Which post-commit steps run. All on by default, as in Delta on Spark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostCommitOptions {
    /// Write `<v>.crc` after each commit.
    pub checksum: bool,
    /// Write a checkpoint when the version is a multiple of `delta.checkpointInterval`.
    pub checkpoint: bool,
    /// After a checkpoint, delete expired log files when `delta.enableExpiredLogCleanup`.
    pub log_cleanup: bool,
    /// How checkpoints are written.
    pub checkpoint_options: CheckpointOptions,
}

impl Default for PostCommitOptions {
    fn default() -> Self {
        PostCommitOptions {
            checksum: true,
            checkpoint: true,
            log_cleanup: true,
            checkpoint_options: CheckpointOptions::default(),
        }
    }
}

impl PostCommitOptions {
    /// Every step off.
    pub fn none() -> PostCommitOptions {
        PostCommitOptions {
            checksum: false,
            checkpoint: false,
            log_cleanup: false,
            checkpoint_options: CheckpointOptions::default(),
        }
    }
}

/// A post-commit step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostCommitStep {
    /// Loading the snapshot of the committed version for the commit's result.
    Snapshot,
    /// Writing `<v>.crc`.
    Checksum,
    /// Writing a checkpoint.
    Checkpoint,
    /// Deleting expired log files.
    LogCleanup,
    /// Writing the symlink format manifests (`delta.compatibility.symlinkFormatManifest.enabled`).
    SymlinkManifest,
}

impl std::fmt::Display for PostCommitStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PostCommitStep::Snapshot => "snapshot",
            PostCommitStep::Checksum => "checksum",
            PostCommitStep::Checkpoint => "checkpoint",
            PostCommitStep::LogCleanup => "log cleanup",
            PostCommitStep::SymlinkManifest => "symlink manifest",
        })
    }
}

/// A post-commit step that failed; the commit stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostCommitError {
    pub step: PostCommitStep,
    /// The error, naming the file and the problem.
    pub message: String,
}

/// What the post-commit steps did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostCommitResult {
    /// The `.crc` file written (URL), or `None` (turned off, failed, or no way to compute
    /// it: no previous checksum and no snapshot of the version).
    pub checksum: Option<String>,
    /// The checkpoint written, if one was due.
    pub checkpoint: Option<CheckpointResult>,
    /// Why the checkpoint that was due was not written: it could not be written
    /// incrementally (from the previous checkpoint's rows and the commits after it), and a
    /// write never waits for a checkpoint of the whole state replayed; `Table::checkpoint`
    /// writes it.
    pub checkpoint_deferred: Option<String>,
    /// What cleanup deleted, if it ran.
    pub cleanup: Option<CleanupResult>,
    /// The steps that failed.
    pub errors: Vec<PostCommitError>,
}

/// What the hook knows about the commit just made.
pub(crate) struct Committed<'a> {
    pub storage: &'a Storage,
    pub version: u64,
    /// The bytes of the commit file, when at hand (else it is read back).
    pub actions: Option<bytes::Bytes>,
    /// `delta.checkpointInterval` of the committed version.
    pub checkpoint_interval: u64,
    /// `delta.compatibility.symlinkFormatManifest.enabled` of the committed version.
    pub symlink_manifest: bool,
    pub txn_id: &'a str,
    /// The snapshot of `version`, when the transaction had one to refresh.
    pub snapshot: Option<&'a Snapshot>,
}

/// Runs the post-commit steps `options` asks for after `committed`.
pub(crate) async fn run(
    committed: &Committed<'_>,
    options: &PostCommitOptions,
) -> PostCommitResult {
    let mut report = PostCommitResult::default();
    if options.checksum {
        match write_version_checksum(committed).await {
            Ok(written) => report.checksum = written,
            Err(error) => report.fail(PostCommitStep::Checksum, &error),
        }
    }
    if committed.symlink_manifest {
        let generated = match full_snapshot(committed).await {
            Ok(snapshot) => generate_symlink_manifest(&snapshot).await,
            Err(error) => Err(error),
        };
        if let Err(error) = generated {
            report.fail(PostCommitStep::SymlinkManifest, &error);
        }
    }
    let interval = committed.checkpoint_interval.max(1);
    if !options.checkpoint || committed.version == 0 || !committed.version.is_multiple_of(interval)
    {
        return report;
    }
    let snapshot = match head_snapshot(committed).await {
        Ok(snapshot) => snapshot,
        Err(error) => {
            report.fail(PostCommitStep::Checkpoint, &error);
            return report;
        }
    };
    let properties = snapshot.table_configuration().properties();
    let checkpoint_options = &options.checkpoint_options;
    match write_checkpoint_with(&snapshot, checkpoint_options, FullReplay::Refused).await {
        Ok(CheckpointOutcome::Written(written)) => report.checkpoint = Some(written),
        Ok(CheckpointOutcome::NeedsFullReplay(reason)) => {
            report.checkpoint_deferred = Some(reason);
            return report;
        }
        Err(error) => {
            report.fail(PostCommitStep::Checkpoint, &error);
            return report;
        }
    }
    if options.log_cleanup && properties.enable_expired_log_cleanup {
        let config = snapshot.table_configuration();
        match cleanup_expired_logs(committed.storage, config, snapshot.version(), now_ms()).await {
            Ok(cleanup) => report.cleanup = Some(cleanup),
            Err(error) => report.fail(PostCommitStep::LogCleanup, &error),
        }
    }
    report
}

impl PostCommitResult {
    fn fail(&mut self, step: PostCommitStep, error: &crate::error::Error) {
        self.errors.push(PostCommitError {
            step,
            message: error.to_string(),
        });
    }
}

/// Writes `<v>.crc`: from the previous version's checksum and this commit's actions when
/// that works, else from the snapshot of the version, else nothing.
async fn write_version_checksum(committed: &Committed<'_>) -> Result<Option<String>> {
    let txn_id = Some(committed.txn_id.to_string());
    let mut checksum = None;
    if let Some(previous) = committed.version.checked_sub(1) {
        if let Some(previous) = read_checksum(committed.storage, previous).await? {
            let path = committed
                .storage
                .log_file(&commit_file_name(committed.version));
            let bytes = match &committed.actions {
                Some(bytes) => bytes.clone(),
                None => committed.storage.read(&path).await?,
            };
            let options = DecodeOptions {
                from_checkpoint: false,
                stats: StatsText::Dropped,
                skip_file_actions: false,
                skip_commit_info: false,
            };
            let name = committed.storage.url_of(&path);
            let actions = decode_actions(&bytes, committed.version, &name, options)?;
            checksum = VersionChecksum::apply_commit(&previous, &actions, txn_id.clone())?;
        }
    }
    if checksum.is_none() {
        if let Some(snapshot) = committed.snapshot.filter(|s| !s.is_filtered()) {
            checksum = Some(VersionChecksum::from_snapshot(snapshot, txn_id).await?);
        }
    }
    match checksum {
        Some(checksum) => write_checksum(committed.storage, committed.version, &checksum)
            .await
            .map(Some),
        None => Ok(None),
    }
}

/// The snapshot of the committed version, its file list replayed only if it already was:
/// what a checkpoint needs (it reads the previous checkpoint and the commits after it).
async fn head_snapshot(committed: &Committed<'_>) -> Result<Snapshot> {
    match committed.snapshot {
        Some(snapshot) => Ok(snapshot.clone()),
        None => {
            Snapshot::load_lazy(committed.storage, SnapshotAt::Version(committed.version)).await
        }
    }
}

/// The snapshot of the committed version holding every live file.
async fn full_snapshot(committed: &Committed<'_>) -> Result<Snapshot> {
    match committed.snapshot.filter(|s| !s.is_filtered()) {
        Some(snapshot) => Ok(snapshot.clone()),
        None => Snapshot::load(committed.storage, SnapshotAt::Version(committed.version)).await,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use crate::log::path::{CheckpointKind, LogFileKind};
    use crate::schema::{PrimitiveType, StructField, StructType};
    use crate::snapshot::SnapshotAt;
    use crate::transaction::{AddFile, TableSpec};
    use crate::util::test_tables::table;

    #[tokio::test]
    async fn every_commit_gets_a_checksum_and_every_tenth_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(&dir);
        let spec = TableSpec {
            schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
            configuration: HashMap::from([(
                "delta.feature.domainMetadata".to_string(),
                "supported".to_string(),
            )]),
            ..TableSpec::default()
        };
        let created = table.create(spec).await.unwrap();
        assert!(created.post_commit.checksum.is_some());
        for version in 1..=11u64 {
            let mut tx = if version % 2 == 0 {
                table.append_transaction("WRITE").await.unwrap()
            } else {
                table.transaction("WRITE").await.unwrap()
            };
            let file = AddFile {
                path: format!("f{version}.parquet"),
                size: 1000 * version as i64,
                modification_time: 1,
                data_change: true,
                ..AddFile::default()
            };
            tx.add(&[file]).unwrap();
            tx.set_app_version("app", version as i64).unwrap();
            tx.set_domain_metadata("user.d", Some(version.to_string()))
                .unwrap();
            if version == 5 {
                tx.remove_paths(&["f1.parquet"], true).await.unwrap();
            }
            let result = tx.commit().await.unwrap();
            assert!(
                result.post_commit.errors.is_empty(),
                "{:?}",
                result.post_commit.errors
            );
            assert!(result.post_commit.checksum.is_some(), "version {version}");
            assert_eq!(result.post_commit.checkpoint.is_some(), version == 10);
            let snapshot = table.snapshot(SnapshotAt::Version(version)).await.unwrap();
            assert!(
                snapshot.validate_checksum().await.unwrap(),
                "version {version}"
            );
            let stored = snapshot.version_checksum().await.unwrap();
            assert_eq!(stored.num_files, snapshot.num_files().await.unwrap() as i64);
            assert_eq!(
                stored.table_size_bytes,
                snapshot.total_size().await.unwrap()
            );
        }
        let kinds: Vec<_> = crate::log::list_log_from(table.storage(), 0)
            .await
            .unwrap()
            .into_iter()
            .filter(|p| p.kind == LogFileKind::Checkpoint(CheckpointKind::Classic))
            .map(|p| p.version)
            .collect();
        assert_eq!(kinds, vec![10]);
    }

    /// Appends of one file each, from version 1 to `last`, with `options` after each commit.
    async fn appends(
        table: &crate::Table,
        last: u64,
        options: &crate::transaction::CommitOptions,
    ) -> Vec<crate::transaction::CommitResult> {
        let mut results = Vec::new();
        for version in 1..=last {
            let mut tx = table.append_transaction("WRITE").await.unwrap();
            tx.add(&[AddFile {
                path: format!("f{version}.parquet"),
                size: 10,
                modification_time: 1,
                data_change: true,
                ..AddFile::default()
            }])
            .unwrap();
            let tx = tx.with_commit_options(options.clone());
            results.push(tx.commit().await.unwrap());
        }
        results
    }

    #[tokio::test]
    async fn post_commit_checkpoints_build_on_the_previous_one() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(&dir);
        let spec = TableSpec {
            schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
            ..TableSpec::default()
        };
        table.create(spec).await.unwrap();
        let results = appends(&table, 20, &Default::default()).await;
        let first = results[9].post_commit.checkpoint.as_ref().unwrap();
        assert_eq!((first.version, first.incremental_from), (10, None));
        let second = results[19].post_commit.checkpoint.as_ref().unwrap();
        assert_eq!((second.version, second.incremental_from), (20, Some(10)));
        assert_eq!(second.num_add_files, 20);
    }

    #[tokio::test]
    async fn a_checkpoint_needing_the_whole_state_is_deferred_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(&dir);
        let spec = TableSpec {
            schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
            ..TableSpec::default()
        };
        table.create(spec).await.unwrap();
        let mut options = crate::transaction::CommitOptions::default();
        options.post_commit.checkpoint_options.part_size = Some(2);
        let results = appends(&table, 10, &options).await;
        let report = &results[9].post_commit;
        assert!(report.checkpoint.is_none() && report.errors.is_empty());
        let reason = report.checkpoint_deferred.as_deref().unwrap();
        assert!(reason.contains("multi-part"), "{reason}");
        let written = table.checkpoint(None).await.unwrap();
        assert_eq!((written.version, written.kind), (10, "classic"));
    }

    #[tokio::test]
    async fn a_wrong_checksum_file_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(&dir);
        let spec = TableSpec {
            schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
            ..TableSpec::default()
        };
        table.create(spec).await.unwrap();
        let path = dir.path().join("_delta_log/00000000000000000000.crc");
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace("\"numFiles\":0", "\"numFiles\":7");
        std::fs::write(&path, text).unwrap();
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let error = snapshot.validate_checksum().await.unwrap_err();
        assert!(
            matches!(&error, crate::Error::ChecksumMismatch { path, reason }
                if path.ends_with("00000000000000000000.crc") && reason.contains("numFiles")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_blind_append_reads_its_state_from_the_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(&dir);
        let spec = TableSpec {
            schema: StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]),
            configuration: HashMap::from([(
                "delta.feature.domainMetadata".to_string(),
                "supported".to_string(),
            )]),
            ..TableSpec::default()
        };
        table.create(spec).await.unwrap();
        let mut tx = table.transaction("WRITE").await.unwrap();
        tx.set_domain_metadata("user.d", Some("from-log".into()))
            .unwrap();
        tx.commit().await.unwrap();
        let path = dir.path().join("_delta_log/00000000000000000001.crc");
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("from-log", "from-crc");
        std::fs::write(&path, text).unwrap();
        let tx = table.append_transaction("WRITE").await.unwrap();
        assert_eq!(tx.domain_metadata("user.d"), Some("from-crc"));
        std::fs::remove_file(&path).unwrap();
        let tx = table.append_transaction("WRITE").await.unwrap();
        assert_eq!(tx.domain_metadata("user.d"), Some("from-log"));
    }
}
