//! What operations built on a [`Transaction`] (such as [`crate::operations::write_table`])
//! read from it and adjust after it was made: the configuration its commit leaves the table
//! with, its operation name, and the writer features its data writer enforces.

use crate::error::Result;
use crate::snapshot::Snapshot;
use crate::table::Table;
use crate::table_config::{TableConfiguration, TableFeature};

use super::Transaction;

impl Transaction {
    /// The table written to.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The snapshot read, when the transaction read one ([`Snapshot::transaction`]).
    pub fn read_snapshot(&self) -> Option<&Snapshot> {
        self.read.snapshot.as_ref()
    }

    /// The configuration of the version read (`None` when the transaction creates the table).
    pub fn read_configuration(&self) -> Option<&TableConfiguration> {
        self.read.config.as_ref()
    }

    /// The protocol and metadata the commit would leave the table with: the version read
    /// with the staged metadata and protocol changes, validated. Data files written for this
    /// transaction follow it.
    pub fn configuration(&self) -> Result<TableConfiguration> {
        self.effective_config()
    }

    /// Renames the operation (`commitInfo.operation`): a table created by a write is a
    /// `WRITE`, as Delta on Spark records it.
    pub fn set_operation(&mut self, operation: &str) {
        self.operation = operation.to_string();
    }

    /// Sets an entry of `commitInfo.operationParameters`.
    pub fn set_operation_parameter(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.operation_parameters
            .insert(key.to_string(), value.into());
    }

    /// Adds a field to `commitInfo` (the fields this library writes cannot be replaced).
    pub fn set_commit_info(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.commit_info.insert(key.to_string(), value.into());
    }

    /// Adds to the writer features whose duties the writer of the added files enforced (see
    /// [`Transaction::with_data_writer_features`]).
    pub fn add_data_writer_features(&mut self, features: &[TableFeature]) {
        for feature in features {
            if !self.data_writer_features.contains(feature) {
                self.data_writer_features.push(feature.clone());
            }
        }
    }

    /// Replaces the partition columns of the staged metadata (an overwrite that replaces the
    /// schema may repartition the table, as Delta on Spark's `overwriteSchema` does). Needs
    /// a staged metadata change ([`Transaction::update_metadata`]) first; the columns must
    /// be in the staged schema.
    pub fn set_partition_columns(&mut self, columns: Vec<String>) -> Result<()> {
        let Some(metadata) = self.metadata.as_mut() else {
            return Err(crate::error::Error::InvalidArgument(
                "partition columns change only with a staged metadata change".into(),
            ));
        };
        let schema = crate::table_config::logical_schema(metadata, self.table.uri())?;
        schema
            .partition_schema(&columns)
            .map_err(|error| crate::error::Error::InvalidArgument(error.to_string()))?;
        metadata.partition_columns = columns;
        Ok(())
    }
}
