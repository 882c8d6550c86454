//! The core's integration tests, in one binary: each module is a suite (`logs`, `golden`,
//! `conflict_matrix`, ...); `support` holds what they share.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod changes;
mod conflict_matrix;
mod faults;
mod file_list_batches;
mod fuzz_regressions;
mod golden;
mod golden_data;
mod interleavings;
mod logs;
mod replay_model;
