//! Creating a table: [`create_table`], as Delta on Spark's `CREATE TABLE`, `CREATE TABLE IF
//! NOT EXISTS` and `CREATE OR REPLACE TABLE` (spec "Writer Requirements": version 0 holds the
//! protocol and the metadata; "Column Mapping": ids and physical names assigned at creation;
//! "Clustered Table": `CLUSTER BY` columns recorded in the `delta.clustering` domain).

use std::collections::HashMap;

use crate::error::{ConflictKind, Error, Result};
use crate::schema::{ColumnMappingMode, StructType};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::clustering::{
    clustering_domain_configuration, resolve_clustering_columns, CLUSTERING_DOMAIN,
};
use crate::table_config::iceberg;
use crate::table_config::properties::FEATURE_PREFIX;
use crate::table_config::properties::{TableProperties, COLUMN_MAPPING_MAX_COLUMN_ID};
use crate::table_config::writing::is_protocol_key;
use crate::table_config::TableFeature;
use crate::transaction::{CommitResult, MetadataUpdate, TableSpec, Transaction};

use crate::schema::from_arrow::assign_column_mapping;
use crate::table_config::user_properties::checked_new_table_configuration;

/// A table to create.
#[derive(Debug, Clone, Default)]
pub struct CreateTable {
    pub schema: StructType,
    pub partition_by: Vec<String>,
    /// Table properties; `delta.minReaderVersion`, `delta.minWriterVersion` and
    /// `delta.feature.<name>` steer the protocol.
    pub configuration: HashMap<String, String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// `CLUSTER BY`: the clustering columns (column paths, `a` or `s.x`); the table gets the
    /// `clustering` feature and cannot be partitioned. Empty: not clustered.
    pub cluster_by: Vec<String>,
}

/// What [`create_table`] does when a table exists at the location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CreateMode {
    /// Refuses ([`Error::NotAllowed`]), as `CREATE TABLE`.
    #[default]
    ErrorIfExists,
    /// Commits nothing, as `CREATE TABLE IF NOT EXISTS`.
    Ignore,
    /// Replaces the table's schema, partitioning and properties and removes its files in one
    /// commit (operation `CREATE OR REPLACE TABLE`); its history stays.
    Overwrite,
}

impl CreateMode {
    /// The mode named `error` (or `errorifexists`), `ignore` or `overwrite`.
    pub fn parse(name: &str) -> Result<CreateMode> {
        match name.to_ascii_lowercase().as_str() {
            "error" | "errorifexists" => Ok(CreateMode::ErrorIfExists),
            "ignore" => Ok(CreateMode::Ignore),
            "overwrite" => Ok(CreateMode::Overwrite),
            _ => Err(Error::InvalidArgument(format!(
                "mode must be 'error', 'ignore' or 'overwrite', not {name:?}"
            ))),
        }
    }
}

/// Creates the table `create` at `table`'s location with no files (see [`CreateMode`] for a
/// location that holds a table already). Under column mapping
/// (`delta.columnMapping.mode`), every column gets an id and a physical name, and
/// `delta.columnMapping.maxColumnId` is set.
///
/// Errors: [`Error::NotAllowed`] for an existing table under [`CreateMode::ErrorIfExists`];
/// [`Error::InvalidArgument`] for partition columns not in the schema or bad properties.
/// When another writer creates the table between the check and the commit, the loser gets
/// the [`Error::CommitConflict`] of kind [`ConflictKind::ProtocolChanged`] (as Delta on
/// Spark), except under [`CreateMode::Ignore`], where the table now existing means nothing
/// is to be done.
pub async fn create_table(
    storage: &Storage,
    create: CreateTable,
    mode: CreateMode,
) -> Result<CommitResult> {
    if !crate::log::has_log_files(storage).await? {
        let created = async { creation(storage, create).await?.commit().await };
        let error = match created.await {
            Ok(result) => return Ok(result),
            Err(error) => error,
        };
        if mode == CreateMode::Ignore && created_by_another(storage, &error).await? {
            return ignored(storage).await;
        }
        return Err(error);
    }
    match mode {
        CreateMode::ErrorIfExists => Err(Error::NotAllowed(format!(
            "a Delta table already exists at {} (mode 'error'; use 'ignore' or 'overwrite')",
            storage.uri()
        ))),
        CreateMode::Ignore => ignored(storage).await,
        CreateMode::Overwrite => replace(storage, create).await,
    }
}

/// Nothing committed: the table exists.
async fn ignored(storage: &Storage) -> Result<CommitResult> {
    let version = crate::log::latest_version(storage).await?;
    Ok(CommitResult::unchanged(version, None))
}

/// True when `error` says another creator made the table first: this creator lost the race
/// for version 0, or found the log there when it looked again before committing.
async fn created_by_another(storage: &Storage, error: &Error) -> Result<bool> {
    Ok(match error {
        Error::CommitConflict {
            kind: ConflictKind::ProtocolChanged,
            version: 0,
            ..
        } => true,
        Error::NotAllowed(_) => crate::log::has_log_files(storage).await?,
        _ => false,
    })
}

/// The transaction creating the table `create` at `storage`'s location (version 0 of
/// [`new_table_spec`]), with its clustering columns staged when it is clustered.
pub(crate) async fn creation(storage: &Storage, create: CreateTable) -> Result<Transaction> {
    let cluster_by = create.cluster_by.clone();
    let spec = new_table_spec(storage.uri(), create)?;
    let clustering = clustering_of(&spec, &cluster_by)?;
    let mut transaction = crate::transaction::create_transaction(storage, spec).await?;
    stage_clustering(&mut transaction, clustering);
    Ok(transaction)
}

/// The logical names and the `delta.clustering` configuration of `cluster_by` in the table
/// `spec` describes; `None` when it is not clustered.
fn clustering_of(spec: &TableSpec, cluster_by: &[String]) -> Result<Option<(Vec<String>, String)>> {
    if cluster_by.is_empty() {
        return Ok(None);
    }
    let mode = TableProperties::try_from_configuration(&spec.configuration)?.column_mapping_mode;
    let resolved = resolve_clustering_columns(&spec.schema, mode, cluster_by)?;
    let names = resolved.iter().map(|(column, _)| column.name()).collect();
    let physical: Vec<Vec<String>> = resolved.into_iter().map(|(_, path)| path).collect();
    Ok(Some((names, clustering_domain_configuration(&physical))))
}

/// Stages `clustering` (from [`clustering_of`]) on a transaction creating or replacing a
/// table: the domain, and `clusterBy` among the operation's parameters, as Spark records it.
fn stage_clustering(transaction: &mut Transaction, clustering: Option<(Vec<String>, String)>) {
    if let Some((names, configuration)) = clustering {
        transaction.set_system_domain(CLUSTERING_DOMAIN, configuration);
        let names = serde_json::to_string(&names).unwrap_or_default();
        transaction.set_operation_parameter("clusterBy", names);
    }
}

/// The spec of version 0 for `create` at `table`, its configuration checked as `ALTER TABLE
/// SET TBLPROPERTIES` checks properties, with column mapping assigned, and the `clustering`
/// feature asked for when `cluster_by` is given.
///
/// Errors: [`Error::InvalidArgument`] for a table both partitioned and clustered (Delta on
/// Spark's `DELTA_CLUSTER_BY_WITH_PARTITIONED_BY`), bad properties.
pub(crate) fn new_table_spec(table: &str, create: CreateTable) -> Result<TableSpec> {
    if !create.cluster_by.is_empty() && !create.partition_by.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{table} cannot be both clustered and partitioned: give cluster_by or partition_by \
             (Delta on Spark's DELTA_CLUSTER_BY_WITH_PARTITIONED_BY)"
        )));
    }
    let mut schema = create.schema;
    let mut configuration = checked_new_table_configuration(table, create.configuration)?;
    if !create.cluster_by.is_empty() {
        let key = format!("{FEATURE_PREFIX}{}", TableFeature::Clustering.name());
        configuration.insert(key, "supported".into());
    }
    iceberg::complete_new_table(&mut configuration);
    let properties = TableProperties::try_from_configuration(&configuration)?;
    let mode = properties.column_mapping_mode;
    let mut max = assign_column_mapping(&mut schema, mode, 0);
    if (properties.enable_iceberg_compat_v2 || properties.enable_iceberg_compat_v3)
        && mode != ColumnMappingMode::None
    {
        max = iceberg::assign_nested_ids(&mut schema, mode, max)?;
    }
    if max > 0 {
        configuration.insert(COLUMN_MAPPING_MAX_COLUMN_ID.into(), max.to_string());
    }
    Ok(TableSpec {
        schema,
        partition_columns: create.partition_by,
        configuration,
        name: create.name,
        description: create.description,
    })
}

/// `CREATE OR REPLACE TABLE` of an existing table.
async fn replace(storage: &Storage, create: CreateTable) -> Result<CommitResult> {
    let snapshot = Snapshot::load(storage, SnapshotAt::Latest).await?;
    let mut transaction = snapshot.transaction("CREATE OR REPLACE TABLE");
    transaction.remove_where(None, true).await?;
    let cluster_by = create.cluster_by.clone();
    let spec = new_table_spec(storage.uri(), create)?;
    let mut clustering = clustering_of(&spec, &cluster_by)?;
    if clustering.is_none() && snapshot.domain_metadata(CLUSTERING_DOMAIN).is_some() {
        // The replaced table was clustered; the new one is not (as CLUSTER BY NONE).
        clustering = Some((Vec::new(), clustering_domain_configuration(&[])));
    }
    let mut configuration: Vec<(String, Option<String>)> = snapshot
        .metadata()
        .configuration
        .keys()
        .filter(|key| !spec.configuration.contains_key(*key) && !is_protocol_key(key))
        .map(|key| (key.clone(), None))
        .collect();
    configuration.extend(
        spec.configuration
            .iter()
            .map(|(key, value)| (key.clone(), Some(value.clone()))),
    );
    let update = MetadataUpdate {
        schema: Some(spec.schema),
        configuration,
        name: spec.name,
        description: spec.description,
    };
    transaction.replace_metadata(update, spec.partition_columns.clone())?;
    let partition_by = serde_json::to_string(&spec.partition_columns).unwrap_or_default();
    transaction.set_operation_parameter("partitionBy", partition_by);
    transaction.set_operation_parameter("isManaged", "false");
    stage_clustering(&mut transaction, clustering);
    transaction.commit().await
}
