//! The transaction log as files (spec "Delta Log Entries", "Checkpoints", "Last Checkpoint
//! File", "Log Compaction Files", "In-Commit Timestamps"): the names in `_delta_log`, which of
//! them make up a version, the `_last_checkpoint` hint, the commits of a range of versions and
//! the timestamp of each commit. Nothing here replays actions into table state.

pub mod commit_range;
pub mod last_checkpoint;
pub mod path;
pub mod segment;
pub mod timestamps;
