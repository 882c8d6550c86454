//! Whole operations on a table built from the writer and the transaction: creating a table
//! ([`create_table`]) and writing Arrow data to it ([`write_table`], through
//! [`crate::transaction::TableTransaction`]), with the semantics of Delta on Spark's
//! `CREATE TABLE` and `DataFrameWriter` (save modes, `partitionBy`, `replaceWhere`,
//! `mergeSchema`, `overwriteSchema`, `txnAppId` / `txnVersion`). Every decision about what to
//! commit is taken here; bindings only convert arguments.
//!
//! Row-level changes live in `dml/` and `merge/`; table maintenance, with the semantics of
//! Delta on Spark's commands ([`vacuum`], [`optimize`], [`restore`], [`convert_to_delta`],
//! [`shallow_clone`]),
//! in `commands/`.

pub(crate) mod alter;
pub(crate) mod commands;
pub(crate) mod create;
pub(crate) mod distributed;
pub(crate) mod dml;
pub(crate) mod files;
pub(crate) mod merge;
pub(crate) mod streaming_sink;
pub(crate) mod write;

pub use crate::maintenance::manifest::{
    generate_symlink_manifest, ManifestResult, MANIFEST_DIRECTORY,
};
pub use crate::schema::from_arrow::struct_type_from_arrow;
pub use alter::{alter_snapshot, alter_table, Alteration, ColumnChange, ColumnPosition, NewColumn};
pub use commands::clone::{shallow_clone, CloneOptions, CLONE_OPERATION};
pub use commands::convert::{convert_to_delta, ConvertResult};
pub use commands::optimize::{
    optimize, FileSizeMetrics, OptimizeOptions, OptimizeResult, DEFAULT_OPTIMIZE_FILE_SIZE,
};
pub use commands::restore::{restore, restore_with, RestoreOptions, RestoreResult};
pub use commands::vacuum::{vacuum, VacuumOptions, VacuumResult};
pub use create::{create_table, CreateMode, CreateTable};
pub use dml::delete::{delete, DeleteOptions};
pub use dml::update::{update, UpdateOptions};
pub use files::parse_isolation_level;
pub use merge::{
    merge, MatchedAction, MergeClauses, MergeOptions, NotMatchedAction, NotMatchedBySourceAction,
};
pub use write::{write_table, SchemaMode, WriteMode, WriteTableOptions};

#[cfg(test)]
mod clustering_tests;
#[cfg(test)]
mod maintenance_tests;
#[cfg(test)]
mod tests;
