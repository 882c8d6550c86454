//! Reading the files of the log into actions: commits (`commit`: every action of a JSON line;
//! `add_scanner`: the fast path for `add` and `remove` lines) and checkpoints in Parquet
//! (`checkpoint`; spec "Delta Log Entries", "Checkpoints"). The inverse, actions as JSON
//! lines, is `log::encode`.

#[cfg(feature = "internal-api")]
pub mod add_scanner;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod add_scanner;
#[cfg(feature = "internal-api")]
pub mod checkpoint;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod checkpoint;
#[cfg(feature = "internal-api")]
pub mod commit;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod commit;
