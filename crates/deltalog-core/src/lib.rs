//! deltalog-core: the Delta Lake transaction log, from listing `_delta_log` to an immutable
//! [`Snapshot`], with no Python in it.
//!
//! The spec sections cited in doc comments are those of the Delta protocol document
//! (`PROTOCOL.md`); catalogue ids (`A-01`, `C-07`, ...) are those of the project's requirements
//! catalogue.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod action_schema;
pub mod actions;
pub mod changes;
pub mod checkpoint;
pub mod commit;
pub mod cpu;
pub mod deletion_vector;
pub mod error;
pub mod expr;
pub mod file_list;
pub mod load;
pub mod log;
pub mod operations;
pub mod partition;
pub mod replay;
pub mod scalar;
pub mod scan;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod storage;
pub mod table;
pub mod table_config;
pub mod transaction;
pub mod write;

/// Where the golden tables (written by Delta on Spark) are kept in this repository.
#[cfg(test)]
pub(crate) fn golden_archives() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

pub use error::{ConflictKind, Error, ProtocolKind, Result};
pub use snapshot::Snapshot;
pub use table::{SnapshotAt, Table};
