//! What operations built on a [`Transaction`] (such as [`crate::ops::write_table`])
//! read from it and adjust after it was made: the configuration its commit leaves the table
//! with, its operation name, and the writer features its data writer enforces.

use crate::actions::Metadata;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::table_config::{TableConfiguration, TableFeature};

use super::{MetadataUpdate, Transaction};

impl Transaction {
    /// The store of the table written to.
    pub fn storage(&self) -> &Storage {
        &self.storage
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

    /// Sets an entry of `commitInfo.operationMetrics`, replacing the computed one.
    pub fn set_operation_metric(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.operation_metrics.insert(key.to_string(), value.into());
    }

    /// Removes every entry of `commitInfo.operationParameters` (an operation renamed with
    /// [`Transaction::set_operation`] that has parameters of its own).
    pub fn clear_operation_parameters(&mut self) {
        self.operation_parameters.clear();
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

    /// Stages a metadata change that also repartitions the table (an overwrite that
    /// replaces the schema, `CREATE OR REPLACE TABLE`): `update` as
    /// [`Transaction::update_metadata`] applies it, with `partition_columns`, which must be
    /// in the new schema.
    pub fn replace_metadata(
        &mut self,
        update: MetadataUpdate,
        partition_columns: Vec<String>,
    ) -> Result<()> {
        let current = match (&self.metadata, &self.read.config) {
            (Some(staged), _) => staged.clone(),
            (None, Some(config)) => config.metadata().clone(),
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "a table being created takes its metadata from its spec".into(),
                ))
            }
        };
        let saved = self.metadata.replace(Metadata {
            partition_columns: partition_columns.clone(),
            ..current
        });
        let outcome = self.update_metadata(update);
        if outcome.is_err() {
            self.metadata = saved;
        }
        outcome
    }
}
