//! The post-commit report every commit returns (checksum file, checkpoint, cleanup, failed
//! steps), and the tuples of checkpoints and cleanups, as Python receives them.

use deltalog_core::{CheckpointWritten, CleanupReport, PostCommitReport};

/// A checkpoint written: version, kind, files, sidecars, actions, add files, bytes, and
/// whether it was only planned (a dry run).
pub type CheckpointTuple = (u64, String, Vec<String>, Vec<String>, u64, u64, u64, bool);
/// A cleanup: oldest kept version, log files deleted, sidecars deleted, the classic-named
/// copy of a V2 checkpoint written.
pub type CleanupTuple = (Option<u64>, Vec<String>, Vec<String>, Option<String>);
/// The post-commit report: checksum file, checkpoint, cleanup, failed steps (step, message).
pub type PostCommitTuple = (
    Option<String>,
    Option<CheckpointTuple>,
    Option<CleanupTuple>,
    Vec<(String, String)>,
);
/// The tuple of a [`PostCommitReport`].
pub fn post_commit_tuple(report: PostCommitReport) -> PostCommitTuple {
    let errors = report
        .errors
        .into_iter()
        .map(|error| (error.step.to_string(), error.message))
        .collect();
    (
        report.checksum,
        report.checkpoint.map(checkpoint_tuple),
        report.cleanup.map(cleanup_tuple),
        errors,
    )
}

pub fn checkpoint_tuple(written: CheckpointWritten) -> CheckpointTuple {
    (
        written.version,
        written.kind.to_string(),
        written.files,
        written.sidecars,
        written.num_actions,
        written.num_add_files,
        written.size_in_bytes,
        written.dry_run,
    )
}

pub fn cleanup_tuple(report: CleanupReport) -> CleanupTuple {
    (
        report.oldest_kept_version,
        report.deleted,
        report.deleted_sidecars,
        report.compat_checkpoint,
    )
}
