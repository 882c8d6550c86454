//! Whole operations on a table built from the writer and the transaction: creating a table
//! ([`create_table`]) and writing Arrow data to it ([`write_table`], [`TableTransaction`]),
//! with the semantics of Delta on Spark's `CREATE TABLE` and `DataFrameWriter` (save modes,
//! `partitionBy`, `replaceWhere`, `mergeSchema`, `overwriteSchema`, `txnAppId` /
//! `txnVersion`). Every decision about what to commit is taken here; bindings only convert
//! arguments.

pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod dml;
pub(crate) mod files;
pub(crate) mod schema;
pub(crate) mod update;
pub(crate) mod write;

pub use create::{create_table, CreateMode, CreateTable};
pub use delete::{delete, DeleteOptions};
pub use files::{adds_from_file_list, parse_isolation_level};
pub use schema::struct_type_from_arrow;
pub use update::{update, UpdateOptions};
pub use write::{
    write_table, SchemaMode, TableCommit, TableTransaction, WriteMode, WriteTableOptions,
};
