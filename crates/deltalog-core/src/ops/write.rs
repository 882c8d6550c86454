//! Writing Arrow data to a table: [`write_table`] (one call, as Delta on Spark's
//! `df.write.format("delta").mode(..).save(path)`) and [`TableTransaction`] (data files
//! written into a transaction that may also stage other actions).
//!
//! Bad input never half-writes: a table with a writer feature or a rule this library cannot
//! honour is refused before any file is written (`ensure_writable`,
//! [`crate::write::unsupported_writer_duties`]); a batch that breaks the schema or a
//! constraint fails the write before its rows are written; and any failure after files were
//! written is a [`WriteFailure`] naming them (no commit references them; VACUUM removes
//! them).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::{Stream, StreamExt};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::maintenance::PostCommitOptions;
use crate::schema::{evolve_schema, ColumnMappingMode, StructType};
use crate::storage::Storage;
use crate::table_config::properties::COLUMN_MAPPING_MAX_COLUMN_ID;
use crate::table_config::TableConfiguration;
use crate::transaction::{
    CommitResult, MetadataUpdate, TableTransaction, Transaction, DATA_WRITER_FEATURES,
};
use crate::write::changes::rows_match;
use crate::write::{WriteFailure, WriterOptions};

use crate::ops::create::{creation, CreateTable};
use crate::ops::dml::check_predicate;
use crate::ops::dml::replace_where::stage_replaced_rows;
use crate::schema::from_arrow::{assign_column_mapping, max_column_id, struct_type_from_arrow};
use crate::table_config::clustering::{
    clustering_columns, resolve_clustering_columns, CLUSTERING_DOMAIN,
};
use crate::table_config::ClusteringColumn;

/// What a write does when the table exists (Spark's `SaveMode`); when it does not, every
/// mode creates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// Adds the rows (a blind append, which never loads the file list).
    #[default]
    Append,
    /// Replaces every row, or with a predicate the rows matching it (`replaceWhere`).
    Overwrite,
    /// Refuses to write ([`Error::NotAllowed`]).
    ErrorIfExists,
    /// Writes nothing.
    Ignore,
}

impl WriteMode {
    /// The mode named `append`, `overwrite`, `error` (or `errorifexists`) or `ignore`, in
    /// any case.
    pub fn parse(name: &str) -> Result<WriteMode> {
        match name.to_ascii_lowercase().as_str() {
            "append" => Ok(WriteMode::Append),
            "overwrite" => Ok(WriteMode::Overwrite),
            "error" | "errorifexists" => Ok(WriteMode::ErrorIfExists),
            "ignore" => Ok(WriteMode::Ignore),
            _ => Err(Error::InvalidArgument(format!(
                "mode must be 'append', 'overwrite', 'error' or 'ignore', not {name:?}"
            ))),
        }
    }

    /// The name `commitInfo.operationParameters.mode` gives it, as Spark's `SaveMode`.
    pub fn spark_name(self) -> &'static str {
        match self {
            WriteMode::Append => "Append",
            WriteMode::Overwrite => "Overwrite",
            WriteMode::ErrorIfExists => "ErrorIfExists",
            WriteMode::Ignore => "Ignore",
        }
    }
}

/// How the table's schema may change with the data written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaMode {
    /// New top-level columns of the data are added to the table as nullable columns
    /// (`mergeSchema`).
    Merge,
    /// The data's schema (and `partition_by`) replaces the table's; overwrite only
    /// (`overwriteSchema`).
    Overwrite,
}

impl SchemaMode {
    /// The mode named `merge` or `overwrite`.
    pub fn parse(name: &str) -> Result<SchemaMode> {
        match name.to_ascii_lowercase().as_str() {
            "merge" => Ok(SchemaMode::Merge),
            "overwrite" => Ok(SchemaMode::Overwrite),
            _ => Err(Error::InvalidArgument(format!(
                "schema_mode must be 'merge' or 'overwrite', not {name:?}"
            ))),
        }
    }
}

/// The options of [`write_table`].
#[derive(Debug, Clone, Default)]
pub struct WriteTableOptions {
    pub mode: WriteMode,
    /// Partition columns: of the new table, or checked against the existing table's.
    pub partition_by: Option<Vec<String>>,
    /// With [`WriteMode::Overwrite`] (`replaceWhere`): only the rows matching this predicate
    /// (over data and partition columns) are replaced, and every row written must match it
    /// (see `operations::replace_where`).
    pub predicate: Option<Expr>,
    /// With `predicate`: rows written need not match it (Delta on Spark's
    /// `spark.databricks.delta.replaceWhere.constraintCheck.enabled` set to false).
    pub skip_predicate_check: bool,
    pub schema_mode: Option<SchemaMode>,
    /// Table properties of a table created by the write (ignored for an existing table, as
    /// Delta on Spark ignores them).
    pub configuration: HashMap<String, String>,
    /// Clustering columns (`CLUSTER BY`, column paths) of a table created by the write; for
    /// an existing table they must be its clustering columns.
    pub cluster_by: Option<Vec<String>>,
    /// How the data files are written (target file size, codec, ...).
    pub writer: WriterOptions,
    /// `(app_id, version)`: the write commits a `txn` action, and writes nothing when the
    /// table already holds that application at this version or a later one (spec "Set
    /// Transaction Identifiers").
    pub app_version: Option<(String, i64)>,
    /// Extra `commitInfo` fields (such as `userMetadata`).
    pub commit_info: Map<String, Value>,
    /// The post-commit steps of this write (all on by default; `checkpoint: false` leaves a
    /// due checkpoint to a later write or to `Table::checkpoint`).
    pub post_commit: PostCommitOptions,
}

/// Writes the batches of `batches` (of Arrow schema `schema`) to `table` and commits, as
/// Delta on Spark's `DataFrameWriter` does with `options.mode`:
///
/// - no table at the location: every mode creates it (operation `WRITE`, the protocol the
///   least that covers the configuration and schema), with the data's schema, `partition_by`
///   and `configuration`;
/// - an existing table: [`WriteMode::ErrorIfExists`] is an [`Error::NotAllowed`],
///   [`WriteMode::Ignore`] commits nothing, [`WriteMode::Append`] is a blind append,
///   [`WriteMode::Overwrite`] removes every file and adds the new ones in one commit, or
///   with `predicate` (`replaceWhere`) deletes the rows matching it (over data and partition
///   columns, as `DELETE` does, recording the read) and adds the new ones in one commit
///   (`operations::replace_where`).
///
/// `partition_by` on an existing table must name its partition columns (unless the schema is
/// overwritten); `schema_mode` merges or replaces the schema (replacing it cannot go with a
/// predicate); `predicate` needs [`WriteMode::Overwrite`], and every row written to an
/// existing table must match it ([`Error::ReplaceWhereMismatch`] otherwise, as Spark refuses
/// such rows, unless `skip_predicate_check`); an `app_version` already committed makes the
/// write a no-op. Nothing is written to a table
/// this library cannot write ([`Error::UnsupportedFeature`]) or that is append-only when the
/// write removes rows ([`Error::NotAllowed`]).
///
/// Errors come as a [`WriteFailure`] naming the data files written and left unreferenced.
pub async fn write_table<S>(
    storage: &Storage,
    schema: SchemaRef,
    batches: S,
    options: WriteTableOptions,
) -> Result<CommitResult, WriteFailure>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let prepared = prepare_write(storage, &schema, &options)
        .await
        .map_err(WriteFailure::unwritten)?;
    let Some(mut transaction) = prepared else {
        let version = crate::log::latest_version(storage)
            .await
            .map_err(WriteFailure::unwritten)?;
        return Ok(CommitResult::unchanged(version, None));
    };
    let replaced = replaced_predicate(&transaction, &options);
    let mut insert_changes = false;
    if let Some(predicate) = &replaced {
        let (staged, rows) = stage_replaced_rows(transaction, predicate, &options.writer).await?;
        transaction = staged;
        transaction.add_metrics(&rows.metrics);
        insert_changes = rows.wrote_changes;
    }
    let check = replaced
        .filter(|_| !options.skip_predicate_check)
        .map(|predicate| {
            let table = storage.uri().to_string();
            move |batch: &RecordBatch| rows_match(&predicate, batch, &table)
        });
    let batches = batches.map(move |batch| {
        let batch = batch?;
        if let Some(check) = &check {
            check(&batch)?;
        }
        Ok(batch)
    });
    transaction.write_rows(batches, insert_changes).await?;
    let post_commit = options.post_commit.clone();
    transaction
        .transaction_mut()
        .set_post_commit_options(post_commit);
    transaction.commit().await
}

/// The predicate of a `replaceWhere` whose rows the write deletes: an overwrite of an
/// existing table with a predicate (a table the write creates has no rows to replace, and
/// Delta on Spark then checks none of the rows written against it).
pub(super) fn replaced_predicate(
    transaction: &TableTransaction,
    options: &WriteTableOptions,
) -> Option<Expr> {
    let existing = transaction.transaction().read_snapshot().is_some();
    let overwrite = options.mode == WriteMode::Overwrite;
    options.predicate.clone().filter(|_| existing && overwrite)
}

/// Checks that the table `transaction` writes to is clustered by `wanted` (column paths;
/// names compared ignoring case), as Delta on Spark checks a write's `clusterBy` against an
/// existing table (`DELTA_CLUSTERING_COLUMNS_MISMATCH`).
fn check_cluster_by(transaction: &Transaction, wanted: &[String]) -> Result<()> {
    let config = transaction.configuration()?;
    let domain = transaction.domain_metadata(CLUSTERING_DOMAIN);
    let current = clustering_columns(&config, domain)?;
    let asked = resolve_clustering_columns(config.schema(), config.column_mapping(), wanted)?;
    let same = current.len() == asked.len()
        && current
            .iter()
            .zip(&asked)
            .all(|(have, (want, _))| have == want);
    if same {
        return Ok(());
    }
    let names = |columns: Vec<String>| format!("[{}]", columns.join(", "));
    Err(Error::InvalidArgument(format!(
        "{} is clustered by {}, not {} (Delta on Spark's DELTA_CLUSTERING_COLUMNS_MISMATCH); \
         change its clustering columns with alter.cluster_by",
        config.table_uri(),
        names(current.iter().map(ClusteringColumn::name).collect()),
        names(asked.iter().map(|(column, _)| column.name()).collect()),
    )))
}

/// The transaction of a write, ready for its data, or `None` when the write commits nothing.
pub(super) async fn prepare_write(
    storage: &Storage,
    schema: &SchemaRef,
    options: &WriteTableOptions,
) -> Result<Option<TableTransaction>> {
    if options.predicate.is_some() && options.mode != WriteMode::Overwrite {
        return Err(Error::InvalidArgument(
            "a predicate (replaceWhere) needs mode 'overwrite'".into(),
        ));
    }
    if options.schema_mode == Some(SchemaMode::Overwrite) && options.predicate.is_some() {
        return Err(Error::InvalidArgument(
            "schema_mode 'overwrite' replaces the whole table; it cannot go with a predicate \
             (replaceWhere)"
                .into(),
        ));
    }
    if options.schema_mode == Some(SchemaMode::Overwrite) && options.mode != WriteMode::Overwrite {
        return Err(Error::InvalidArgument(
            "schema_mode 'overwrite' needs mode 'overwrite'".into(),
        ));
    }
    let data_schema = struct_type_from_arrow(schema)?;
    let mut transaction = match crate::log::has_log_files(storage).await? {
        false => create_for_write(storage, data_schema, options).await?,
        true => match existing_for_write(storage, data_schema, options).await? {
            Some(transaction) => {
                if let Some(wanted) = &options.cluster_by {
                    check_cluster_by(&transaction, wanted)?;
                }
                transaction
            }
            None => return Ok(None),
        },
    };
    let tx = &mut transaction;
    tx.set_operation_parameter("mode", options.mode.spark_name());
    let partition_by = options.partition_by.clone().unwrap_or_default();
    tx.set_operation_parameter("partitionBy", json_text(&partition_by));
    if let Some(predicate) = &options.predicate {
        tx.set_operation_parameter("predicate", predicate.to_string());
    }
    for (key, value) in &options.commit_info {
        tx.set_commit_info(key, value.clone());
    }
    if let Some((app_id, version)) = &options.app_version {
        tx.set_app_version(app_id, *version)?;
    }
    Ok(Some(TableTransaction::new(
        transaction,
        options.writer.clone(),
    )))
}

/// The transaction creating the table with the data's schema.
async fn create_for_write(
    storage: &Storage,
    data_schema: StructType,
    options: &WriteTableOptions,
) -> Result<Transaction> {
    let create = CreateTable {
        schema: data_schema,
        partition_by: options.partition_by.clone().unwrap_or_default(),
        configuration: options.configuration.clone(),
        name: None,
        description: None,
        cluster_by: options.cluster_by.clone().unwrap_or_default(),
    };
    let mut transaction = creation(storage, create).await?;
    transaction.set_operation("WRITE");
    Ok(transaction)
}

/// The transaction writing to the existing table, or `None` when the write commits nothing.
async fn existing_for_write(
    storage: &Storage,
    data_schema: StructType,
    options: &WriteTableOptions,
) -> Result<Option<Transaction>> {
    let mut transaction = match options.mode {
        WriteMode::ErrorIfExists => {
            return Err(Error::NotAllowed(format!(
                "a Delta table already exists at {} (mode 'error'; use 'append', 'overwrite' or 'ignore')",
                storage.uri()
            )))
        }
        WriteMode::Ignore => return Ok(None),
        WriteMode::Append => crate::transaction::append_transaction(storage, "WRITE").await?,
        WriteMode::Overwrite => crate::transaction::latest_transaction(storage, "WRITE").await?,
    };
    if let Some((app_id, version)) = &options.app_version {
        if transaction
            .app_version(app_id)
            .is_some_and(|v| v >= *version)
        {
            return Ok(None);
        }
    }
    let Some(config) = transaction.read_configuration().cloned() else {
        return Err(Error::InvalidArgument(
            "the table has no configuration".into(),
        ));
    };
    config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
    let overwrites_schema = options.schema_mode == Some(SchemaMode::Overwrite);
    if let Some(partition_by) = options.partition_by.as_ref().filter(|_| !overwrites_schema) {
        let same = partition_by.len() == config.partition_columns().len()
            && partition_by
                .iter()
                .zip(config.partition_columns())
                .all(|(a, b)| a.eq_ignore_ascii_case(b));
        if !same {
            return Err(Error::InvalidArgument(format!(
                "partition_by {partition_by:?} does not match the table's partition columns {:?}",
                config.partition_columns()
            )));
        }
    }
    match options.schema_mode {
        None => {}
        Some(SchemaMode::Merge) => {
            let evolution = config.schema_evolution();
            let (merged, changed) = evolve_schema(config.schema(), &data_schema, evolution);
            if changed {
                stage_schema(&mut transaction, &config, merged, None)?;
            }
        }
        Some(SchemaMode::Overwrite) => {
            let partition_by = options
                .partition_by
                .clone()
                .unwrap_or_else(|| config.partition_columns().to_vec());
            stage_schema(&mut transaction, &config, data_schema, Some(partition_by))?;
        }
    }
    if options.mode == WriteMode::Overwrite {
        if config.properties().append_only {
            return Err(Error::NotAllowed(format!(
                "{} is append-only (delta.appendOnly): it cannot be overwritten",
                storage.uri()
            )));
        }
        match &options.predicate {
            Some(predicate) => check_predicate(&config, predicate)?,
            None => {
                transaction.remove_where(None, true).await?;
            }
        }
    }
    Ok(Some(transaction))
}

/// Stages `schema` as the table's (and `partition_by` as its partition columns when given),
/// with column mapping ids and physical names for its new columns when the table maps
/// columns.
pub(crate) fn stage_schema(
    transaction: &mut Transaction,
    config: &TableConfiguration,
    mut schema: StructType,
    partition_by: Option<Vec<String>>,
) -> Result<()> {
    let mode = config.column_mapping();
    let mut configuration = Vec::new();
    if mode != ColumnMappingMode::None {
        let known = config
            .properties()
            .column_mapping_max_column_id
            .unwrap_or(0)
            .max(max_column_id(config.schema()));
        let max = assign_column_mapping(&mut schema, mode, known);
        configuration.push((
            COLUMN_MAPPING_MAX_COLUMN_ID.to_string(),
            Some(max.to_string()),
        ));
    }
    let update = MetadataUpdate {
        schema: Some(schema),
        configuration,
        ..MetadataUpdate::default()
    };
    match partition_by {
        Some(columns) => transaction.replace_metadata(update, columns),
        None => transaction.update_metadata(update),
    }
}

fn json_text(values: &[String]) -> String {
    serde_json::to_string(values).unwrap_or_default()
}
