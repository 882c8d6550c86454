//! deltalog-core: the Delta Lake transaction log, from listing `_delta_log` to an immutable
//! [`Snapshot`], with no Python in it.
//!
//! The spec sections cited in doc comments are those of the Delta protocol document
//! (`PROTOCOL.md`); catalogue ids (`A-01`, `C-07`, ...) are those of the project's requirements
//! catalogue.

pub mod action_schema;
pub mod actions;
pub mod deletion_vector;
pub mod error;
pub mod features;
pub mod last_checkpoint;
pub mod log_path;
pub mod log_segment;
pub mod partition;
pub mod schema;
pub mod stats;

pub use error::{Error, ProtocolKind, Result};
