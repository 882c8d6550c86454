//! Keeping a table's log in shape: writing checkpoints (`checkpoint`; spec "Checkpoints"),
//! deleting expired log files (`cleanup`; "Metadata Cleanup"), log compaction files
//! (`compaction`; "Log Compaction Files"), the symlink format manifests other engines read a
//! table through (`manifest`) and the steps run after a commit (`post_commit`: the `.crc`
//! file, a checkpoint at the interval, cleanup, the manifests).

#[cfg(feature = "internal-api")]
pub mod checkpoint;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod checkpoint;
#[cfg(feature = "internal-api")]
pub mod checksum;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod checksum;
#[cfg(feature = "internal-api")]
pub mod cleanup;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod cleanup;
#[cfg(feature = "internal-api")]
pub mod compaction;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod compaction;
pub(crate) mod manifest;
#[cfg(feature = "internal-api")]
pub mod post_commit;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod post_commit;

pub use checkpoint::{CheckpointOptions, CheckpointResult};
pub use cleanup::CleanupResult;
pub use post_commit::{PostCommitError, PostCommitOptions, PostCommitResult, PostCommitStep};
