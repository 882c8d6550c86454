//! What the suites share: hand-made logs and the golden tables (`common`), stores that fail
//! or pause on cue, and the operations the concurrency suites race.

pub mod common;
pub mod faulty_store;
pub mod phased_store;
pub mod table_ops;
