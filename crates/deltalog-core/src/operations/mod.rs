//! Whole operations on a table built from the writer and the transaction: creating a table
//! ([`create_table`]) and writing Arrow data to it ([`write_table`], [`TableTransaction`]),
//! with the semantics of Delta on Spark's `CREATE TABLE` and `DataFrameWriter` (save modes,
//! `partitionBy`, `replaceWhere`, `mergeSchema`, `overwriteSchema`, `txnAppId` /
//! `txnVersion`). Every decision about what to commit is taken here; bindings only convert
//! arguments.
//!
//! Table maintenance lives here too, with the semantics of Delta on Spark's commands:
//! [`vacuum`], [`optimize`], [`restore`] and [`convert_to_delta`].

pub(crate) mod alter;
pub(crate) mod convert;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod distributed;
pub(crate) mod dml;
pub(crate) mod files;
pub(crate) mod merge;
pub(crate) mod optimize;
pub(crate) mod replace_where;
pub(crate) mod restore;
pub(crate) mod schema;
pub(crate) mod update;
pub(crate) mod vacuum;
pub(crate) mod write;

pub use alter::{alter_snapshot, alter_table, Alteration, NewColumn};
pub use convert::{convert_to_delta, ConvertResult};
pub use create::{create_table, CreateMode, CreateTable};
pub use delete::{delete, DeleteOptions};
pub use distributed::MicroBatch;
pub use distributed::{file_list_batch, DistributedWrite, DistributedWriteOptions};
pub use files::{adds_from_file_list, parse_isolation_level};
pub use merge::{
    merge, MatchedAction, MergeClauses, MergeOptions, NotMatchedAction, NotMatchedBySourceAction,
};
pub use optimize::{
    optimize, FileSizeMetrics, OptimizeMetrics, OptimizeOptions, DEFAULT_OPTIMIZE_FILE_SIZE,
};
pub use restore::{restore, restore_with, RestoreMetrics, RestoreOptions};
pub use schema::struct_type_from_arrow;
pub use update::{update, UpdateOptions};
pub use vacuum::{vacuum, VacuumOptions, VacuumResult};
pub use write::{write_table, SchemaMode, WriteMode, WriteTableOptions};

#[cfg(test)]
mod maintenance_tests;
#[cfg(test)]
mod tests;
