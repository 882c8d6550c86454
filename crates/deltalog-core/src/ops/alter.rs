//! Altering a table: [`alter_table`] applies one [`Alteration`] as one commit, as Delta on
//! Spark's `ALTER TABLE` does (operation names and `operationParameters` as its
//! `DeltaOperations` writes them: `SET TBLPROPERTIES`, `UNSET TBLPROPERTIES`, `ADD COLUMNS`,
//! `RENAME COLUMN`, `DROP COLUMNS`, `CHANGE COLUMN` ([`change`]), `ADD CONSTRAINT`,
//! `DROP CONSTRAINT`, `CLUSTER BY`). `DROP FEATURE` is the one alteration of several commits
//! ([`drop_feature`]).
//!
//! Properties are validated against the keys this library and Delta on Spark know
//! (`table_config/properties.rs`); properties that turn features on upgrade the protocol (spec
//! "Table Features", "Protocol Evolution"). Renaming and dropping columns need column mapping
//! (spec "Column Mapping": the physical names stay, so data files are not rewritten). A new
//! CHECK constraint is checked against every existing row first (spec "CHECK Constraints": a
//! writer "must validate the existing data in the table and ensure every row satisfies the new
//! CHECK constraint before committing the change"). `delta.columnMapping.maxColumnId` is kept
//! by the table, never set by users (spec "Writer Requirements for Column Mapping").

mod change;
mod drop_feature;
mod row_tracking;

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::expr::{parse_sql, Expr};
use crate::scan::{Scan, ScanOptions};
use crate::schema::{
    ColumnMappingMode, DataType, StructField, StructType, COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
};
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::table_config::clustering::{
    clustering_columns, clustering_domain_configuration, resolve_clustering_columns,
    CLUSTERING_DOMAIN,
};
use crate::table_config::properties::{
    known_key, COLUMN_MAPPING_MAX_COLUMN_ID, COLUMN_MAPPING_MODE, ENABLE_ROW_TRACKING,
    FEATURE_PREFIX,
};
use crate::table_config::writing::{
    is_protocol_key, CONSTRAINTS_PREFIX, CURRENT_DEFAULT_KEY, GENERATION_EXPRESSION_KEY,
    IDENTITY_START_KEY, INVARIANTS_KEY,
};
use crate::table_config::{ClusteringColumn, TableConfiguration, TableFeature};
use crate::transaction::{CommitResult, MetadataUpdate, Transaction};

use crate::table_config::user_properties::{
    check_values, known_feature_of, settable_key, PropertyTarget,
};

use crate::schema::from_arrow::{assign_column_mapping, max_column_id};

/// The table property Delta on Spark maps to the table description (`metaData.description`).
const COMMENT_PROPERTY: &str = "comment";

/// One change to a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Alteration {
    /// `ALTER TABLE SET TBLPROPERTIES`: sets these properties; `comment` sets the description.
    SetProperties(BTreeMap<String, String>),
    /// `ALTER TABLE UNSET TBLPROPERTIES [IF EXISTS]`.
    UnsetProperties { keys: Vec<String>, if_exists: bool },
    /// `ALTER TABLE ADD COLUMNS`: nullable columns appended to the top level, or to the struct
    /// column at `parent` (a path of names).
    AddColumns(Vec<NewColumn>),
    /// `ALTER TABLE RENAME COLUMN from TO to`: `from` is a column path (`a`, `s.x`,
    /// `` `a.b` ``), `to` the new name of its last part, taken as written (no quoting).
    RenameColumn { from: String, to: String },
    /// `ALTER TABLE DROP COLUMNS [IF EXISTS]`: column paths.
    DropColumns {
        columns: Vec<String>,
        if_exists: bool,
    },
    /// `ALTER TABLE ADD CONSTRAINT name CHECK (expression)`.
    AddConstraint { name: String, expression: String },
    /// `ALTER TABLE DROP CONSTRAINT [IF EXISTS] name`.
    DropConstraint { name: String, if_exists: bool },
    /// `ALTER TABLE SET TBLPROPERTIES ('delta.feature.<name>' = 'supported')`.
    AddFeature(String),
    /// `ALTER TABLE SET TBLPROPERTIES ('comment' = text)`.
    SetDescription(String),
    /// `ALTER TABLE CLUSTER BY (columns)`: the clustering columns (column paths) a later
    /// OPTIMIZE clusters by; empty is `CLUSTER BY NONE`. An unpartitioned table that is not
    /// clustered yet gets the `clustering` feature (spec "Clustered Table").
    ClusterBy(Vec<String>),
    /// `ALTER TABLE CHANGE COLUMN`: a column's comment, type (a widening), nullability or
    /// position.
    ChangeColumn(ColumnChange),
    /// `ALTER TABLE DROP FEATURE name [TRUNCATE HISTORY]`: the feature's traces removed, then
    /// the feature removed from the protocol, in several commits, as Delta on Spark 4.4 drops
    /// it: for a reader-writer feature, three checkpoints on empty commits and
    /// `checkpointProtection` protect the history; with `truncate_history` the history older
    /// than `delta.dropFeatureTruncateHistory.retentionDuration` is deleted instead. The
    /// result is the `DROP FEATURE` commit.
    DropFeature {
        name: String,
        truncate_history: bool,
    },
}

pub use change::{ColumnChange, ColumnPosition};

/// A column to add: `field` inside the struct column at `parent` (a column path such as
/// `s` or `` s.`inner struct` ``; `None`: the top level).
#[derive(Debug, Clone, PartialEq)]
pub struct NewColumn {
    pub parent: Option<String>,
    pub field: StructField,
}

/// Applies `alteration` to the latest version of `table` in one commit (see
/// [`alter_snapshot`]).
pub async fn alter_table(storage: &Storage, alteration: Alteration) -> Result<CommitResult> {
    let snapshot = Snapshot::load(storage, SnapshotAt::Latest).await?;
    alter_snapshot(&snapshot, alteration).await
}

/// Applies `alteration` to `snapshot`'s table in one commit (several for
/// [`Alteration::DropFeature`]), as Delta on Spark's `ALTER TABLE`.
///
/// Errors, with nothing committed: [`Error::InvalidArgument`] for an unknown `delta.*` key, a
/// bad value, a column that does not exist or exists already, a NOT NULL new column, a
/// constraint this library cannot parse; [`Error::NotAllowed`] for what Delta on Spark refuses
/// (renaming or dropping without column mapping, dropping a partition column or every column,
/// changing a column used by a constraint, changing the column mapping mode other than from
/// `none` to `name`, adding a constraint that exists); [`Error::UnsupportedFeature`] for an
/// unknown table feature or one this library cannot honour; [`Error::ConstraintViolation`]
/// when existing rows break a new constraint; [`Error::CommitConflict`] when a concurrent
/// commit conflicts.
pub async fn alter_snapshot(snapshot: &Snapshot, alteration: Alteration) -> Result<CommitResult> {
    let transaction = match alteration {
        Alteration::DropFeature {
            name,
            truncate_history,
        } => return drop_feature::drop_feature(snapshot, &name, truncate_history).await,
        Alteration::SetProperties(properties) => set_properties(snapshot, properties).await?,
        Alteration::UnsetProperties { keys, if_exists } => {
            unset_properties(snapshot, &keys, if_exists)?
        }
        Alteration::AddColumns(columns) => add_columns(snapshot, columns)?,
        Alteration::RenameColumn { from, to } => rename_column(snapshot, &from, &to)?,
        Alteration::DropColumns { columns, if_exists } => {
            drop_columns(snapshot, &columns, if_exists)?
        }
        Alteration::AddConstraint { name, expression } => {
            add_constraint(snapshot, &name, &expression).await?
        }
        Alteration::DropConstraint { name, if_exists } => {
            drop_constraint(snapshot, &name, if_exists)?
        }
        Alteration::AddFeature(name) => {
            let feature = known_feature(snapshot, &name)?;
            let key = format!("{FEATURE_PREFIX}{}", feature.name());
            set_properties(snapshot, BTreeMap::from([(key, "supported".into())])).await?
        }
        Alteration::SetDescription(text) => {
            let comment = BTreeMap::from([(COMMENT_PROPERTY.to_string(), text)]);
            set_properties(snapshot, comment).await?
        }
        Alteration::ClusterBy(columns) => cluster_by(snapshot, &columns)?,
        Alteration::ChangeColumn(change) => change::change_column(snapshot, &change)?,
    };
    transaction.commit().await
}

/// `CLUSTER BY`: the new clustering columns in the `delta.clustering` domain, with the
/// `clustering` feature added first when the table lacks it; parameters as Spark records them
/// (`oldClusteringColumns`, `newClusteringColumns`, comma-separated names). A partitioned
/// table is refused, as Spark refuses it.
fn cluster_by(snapshot: &Snapshot, columns: &[String]) -> Result<Transaction> {
    let config = snapshot.table_configuration();
    if !config.partition_columns().is_empty() {
        return Err(Error::NotAllowed(format!(
            "{} is partitioned: a table cannot be both partitioned and clustered (Delta on \
             Spark's DELTA_ALTER_CLUSTER_BY_NOT_ALLOWED)",
            config.table_uri()
        )));
    }
    let old = clustering_columns(config, snapshot.domain_metadata(CLUSTERING_DOMAIN))?;
    let new = resolve_clustering_columns(config.schema(), config.column_mapping(), columns)?;
    let joined = |names: Vec<String>| names.join(",");
    let mut transaction = snapshot
        .transaction("CLUSTER BY")
        .with_operation_parameter(
            "oldClusteringColumns",
            joined(old.iter().map(ClusteringColumn::name).collect()),
        )
        .with_operation_parameter(
            "newClusteringColumns",
            joined(new.iter().map(|(column, _)| column.name()).collect()),
        );
    if !config.is_feature_supported(&TableFeature::Clustering) {
        let key = format!("{FEATURE_PREFIX}{}", TableFeature::Clustering.name());
        transaction.update_metadata(MetadataUpdate {
            configuration: vec![(key, Some("supported".into()))],
            ..MetadataUpdate::default()
        })?;
    }
    let physical: Vec<Vec<String>> = new.into_iter().map(|(_, path)| path).collect();
    transaction.set_system_domain(
        CLUSTERING_DOMAIN,
        clustering_domain_configuration(&physical),
    );
    Ok(transaction)
}

/// True when the column at logical `path` is a partition column (a top-level one, named
/// ignoring case).
fn is_partition_column(config: &TableConfiguration, path: &[String]) -> bool {
    match path {
        [name] => config
            .partition_columns()
            .iter()
            .any(|p| p.eq_ignore_ascii_case(name)),
        _ => false,
    }
}

/// Refuses to drop the column at logical `path` when it is, or holds, a clustering column,
/// as Delta on Spark refuses it (`DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN`): the
/// `delta.clustering` domain would name a column the schema lost.
fn refuse_clustering_column(snapshot: &Snapshot, path: &[String]) -> Result<()> {
    let config = snapshot.table_configuration();
    let columns = clustering_columns(config, snapshot.domain_metadata(CLUSTERING_DOMAIN))?;
    let within = |column: &ClusteringColumn| {
        column.path.len() >= path.len()
            && column
                .path
                .iter()
                .zip(path)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    };
    match columns.iter().find(|column| within(column)) {
        Some(column) => Err(Error::NotAllowed(format!(
            "cannot drop {}: {} is a clustering column (Delta on Spark's \
             DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN); change the clustering columns with \
             alter.cluster_by first",
            quote_path(path),
            column.name()
        ))),
        None => Ok(()),
    }
}

/// `SET TBLPROPERTIES`: every key validated and spelled as Delta on Spark stores it.
async fn set_properties(
    snapshot: &Snapshot,
    properties: BTreeMap<String, String>,
) -> Result<Transaction> {
    let mut description = None;
    let mut pairs: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in properties {
        if key.eq_ignore_ascii_case(COMMENT_PROPERTY) {
            description = Some(value);
            continue;
        }
        let key = settable_key(
            &PropertyTarget::Existing(snapshot.table_configuration()),
            &key,
            &value,
        )?;
        pairs.insert(key, value);
    }
    check_values(&pairs)?;
    let mut update = MetadataUpdate {
        configuration: pairs
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect(),
        description: description.clone(),
        ..MetadataUpdate::default()
    };
    if let Some(mode) = pairs.get(COLUMN_MAPPING_MODE) {
        enable_column_mapping(snapshot, mode, &mut update)?;
    }
    let enables_row_tracking = pairs
        .get(ENABLE_ROW_TRACKING)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let backfilled = match enables_row_tracking && snapshot.num_files().await? > 0 {
        true => row_tracking::backfill_row_ids(snapshot).await?,
        false => None,
    };
    let snapshot = backfilled.as_ref().unwrap_or(snapshot);
    let mut parameters: BTreeMap<String, String> = pairs;
    if let Some(text) = description {
        parameters.insert(COMMENT_PROPERTY.into(), text);
    }
    let mut transaction = snapshot
        .transaction("SET TBLPROPERTIES")
        .with_operation_parameter("properties", json_text(&parameters));
    transaction.update_metadata(update)?;
    Ok(transaction)
}

/// Column mapping may go from `none` to `name` only (Delta on Spark refuses the rest): the
/// existing columns get ids and keep their names as physical names, so the data files stay
/// readable as they are.
fn enable_column_mapping(
    snapshot: &Snapshot,
    value: &str,
    update: &mut MetadataUpdate,
) -> Result<()> {
    let config = snapshot.table_configuration();
    let current = config.column_mapping();
    let wanted: ColumnMappingMode = value.parse().map_err(|_| {
        Error::InvalidArgument(format!(
            "{COLUMN_MAPPING_MODE} must be none, name or id, got `{value}`"
        ))
    })?;
    if wanted == current {
        return Ok(());
    }
    if current != ColumnMappingMode::None || wanted != ColumnMappingMode::Name {
        return Err(Error::NotAllowed(format!(
            "changing {COLUMN_MAPPING_MODE} of {} from {current} to {wanted} is not \
             supported (only none to name is; id mapping is chosen when the table is created)",
            config.table_uri()
        )));
    }
    let mut schema = snapshot.schema().clone();
    let mut next = max_column_id(&schema);
    assign_ids_keeping_names(&mut schema.fields, &mut next);
    update.schema = Some(schema);
    update
        .configuration
        .push((COLUMN_MAPPING_MAX_COLUMN_ID.into(), Some(next.to_string())));
    Ok(())
}

fn assign_ids_keeping_names(fields: &mut [StructField], next: &mut i64) {
    for field in fields {
        if !field.metadata.contains_key(COLUMN_MAPPING_ID_KEY) {
            *next += 1;
            field
                .metadata
                .insert(COLUMN_MAPPING_ID_KEY.into(), Value::from(*next));
            field.metadata.insert(
                COLUMN_MAPPING_PHYSICAL_NAME_KEY.into(),
                Value::from(field.name.clone()),
            );
        }
        for nested in nested_structs_mut(&mut field.data_type) {
            assign_ids_keeping_names(&mut nested.fields, next);
        }
    }
}

/// `UNSET TBLPROPERTIES`.
fn unset_properties(snapshot: &Snapshot, keys: &[String], if_exists: bool) -> Result<Transaction> {
    let config = snapshot.table_configuration();
    let table = config.table_uri();
    let configuration = &snapshot.metadata().configuration;
    let mut removed = Vec::new();
    for key in keys {
        let lower = key.to_ascii_lowercase();
        if lower.starts_with(CONSTRAINTS_PREFIX) {
            return Err(Error::NotAllowed(format!(
                "{key}: CHECK constraints are dropped with drop_constraint (ALTER TABLE DROP \
                 CONSTRAINT), not as a property"
            )));
        }
        if is_protocol_key(key) || lower.starts_with(FEATURE_PREFIX) {
            return Err(Error::NotAllowed(format!(
                "{key} is a protocol setting, not a stored property; table features cannot be \
                 removed by unsetting it"
            )));
        }
        if lower == COMMENT_PROPERTY {
            return Err(Error::InvalidArgument(
                "the description is changed with set_description".into(),
            ));
        }
        let stored = known_key(key).unwrap_or(key);
        if stored == COLUMN_MAPPING_MODE && config.column_mapping() != ColumnMappingMode::None {
            return Err(Error::NotAllowed(format!(
                "{COLUMN_MAPPING_MODE} cannot be unset on {table}: its columns are mapped"
            )));
        }
        match configuration.contains_key(stored) {
            true => removed.push(stored.to_string()),
            false if if_exists => {}
            false => {
                return Err(Error::InvalidArgument(format!(
                    "{table} has no property {key} to unset (use if_exists to ignore it)"
                )))
            }
        }
    }
    let mut transaction = snapshot
        .transaction("UNSET TBLPROPERTIES")
        .with_operation_parameter("properties", json_text(&keys))
        .with_operation_parameter("ifExists", if_exists.to_string());
    transaction.update_metadata(MetadataUpdate {
        configuration: removed.into_iter().map(|key| (key, None)).collect(),
        ..MetadataUpdate::default()
    })?;
    Ok(transaction)
}

/// `ADD COLUMNS`: nullable columns, with ids and physical names under column mapping.
fn add_columns(snapshot: &Snapshot, columns: Vec<NewColumn>) -> Result<Transaction> {
    let config = snapshot.table_configuration();
    if columns.is_empty() {
        return Err(Error::InvalidArgument("no columns to add".into()));
    }
    let mut schema = snapshot.schema().clone();
    let mut logged = Vec::new();
    for column in columns {
        check_new_field(&column.field)?;
        let (parent_path, parent) = match &column.parent {
            None => (Vec::new(), &mut schema),
            Some(parent) => {
                let indices = resolve(&schema, &parse_path(parent)?)?;
                let names = path_names(&schema, &indices);
                let field = field_mut(&mut schema, &indices)?;
                let DataType::Struct(inner) = &mut field.data_type else {
                    return Err(Error::InvalidArgument(format!(
                        "{} is not a struct column; columns can only be added to structs",
                        quote_path(&names)
                    )));
                };
                (names, inner.as_mut())
            }
        };
        let name = &column.field.name;
        if let Some(existing) = parent
            .fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
        {
            let mut path = parent_path.clone();
            path.push(existing.name.clone());
            return Err(Error::InvalidArgument(format!(
                "column {} already exists",
                quote_path(&path)
            )));
        }
        let mut path = parent_path;
        path.push(name.clone());
        logged.push(json!({ "column": field_log(&path, &column.field) }));
        parent.fields.push(column.field);
    }
    let mut update = MetadataUpdate::default();
    let mode = config.column_mapping();
    if mode != ColumnMappingMode::None {
        let current = config
            .properties()
            .column_mapping_max_column_id
            .unwrap_or(0)
            .max(max_column_id(&schema));
        let max = assign_column_mapping(&mut schema, mode, current);
        update
            .configuration
            .push((COLUMN_MAPPING_MAX_COLUMN_ID.into(), Some(max.to_string())));
    }
    update.schema = Some(schema);
    let mut transaction = snapshot
        .transaction("ADD COLUMNS")
        .with_operation_parameter("columns", Value::Array(logged).to_string());
    transaction.update_metadata(update)?;
    Ok(transaction)
}

/// A new column must be nullable and carry no metadata of Delta's own.
fn check_new_field(field: &StructField) -> Result<()> {
    if !field.nullable {
        return Err(Error::InvalidArgument(format!(
            "column {} must be nullable: existing rows have no value for it",
            field.name
        )));
    }
    let reserved = [
        COLUMN_MAPPING_ID_KEY,
        COLUMN_MAPPING_PHYSICAL_NAME_KEY,
        GENERATION_EXPRESSION_KEY,
        IDENTITY_START_KEY,
        INVARIANTS_KEY,
        CURRENT_DEFAULT_KEY,
    ];
    match reserved
        .iter()
        .find(|key| field.metadata.contains_key(**key))
    {
        Some(key) => Err(Error::InvalidArgument(format!(
            "column {} carries {key}, which cannot be given to an added column",
            field.name
        ))),
        None => Ok(()),
    }
}

/// `RENAME COLUMN`: the logical name changes, the physical name stays.
fn rename_column(snapshot: &Snapshot, from: &str, to: &str) -> Result<Transaction> {
    let config = snapshot.table_configuration();
    require_column_mapping(snapshot, "renaming a column")?;
    let mut schema = snapshot.schema().clone();
    let indices = resolve(&schema, &parse_path(from)?)?;
    let old_path = path_names(&schema, &indices);
    if to.is_empty() {
        return Err(Error::InvalidArgument(
            "the new column name is empty".into(),
        ));
    }
    let new_name = to.to_string();
    let (parent_indices, _) = indices.split_at(indices.len() - 1);
    let parent = struct_mut(&mut schema, parent_indices)?;
    let position = indices[indices.len() - 1];
    let clash = parent
        .fields
        .iter()
        .enumerate()
        .any(|(i, f)| i != position && f.name.eq_ignore_ascii_case(&new_name));
    let mut new_path = old_path[..old_path.len() - 1].to_vec();
    new_path.push(new_name.clone());
    if clash {
        return Err(Error::InvalidArgument(format!(
            "column {} already exists",
            quote_path(&new_path)
        )));
    }
    refuse_constraint_columns(snapshot, &indices, "rename")?;
    parent.fields[position].name = new_name.clone();
    let mut partition_columns = config.partition_columns().to_vec();
    if indices.len() == 1 {
        for column in &mut partition_columns {
            if column.eq_ignore_ascii_case(&old_path[0]) {
                *column = new_name.clone();
            }
        }
    }
    let mut transaction = snapshot
        .transaction("RENAME COLUMN")
        .with_operation_parameter("oldColumnPath", quote_path(&old_path))
        .with_operation_parameter("newColumnPath", quote_path(&new_path));
    let update = MetadataUpdate {
        schema: Some(schema),
        ..MetadataUpdate::default()
    };
    match partition_columns == config.partition_columns() {
        true => transaction.update_metadata(update)?,
        false => transaction.replace_metadata(update, partition_columns)?,
    }
    Ok(transaction)
}

/// `DROP COLUMNS`: the columns leave the schema; their data stays in the files, unread.
fn drop_columns(snapshot: &Snapshot, columns: &[String], if_exists: bool) -> Result<Transaction> {
    let config = snapshot.table_configuration();
    require_column_mapping(snapshot, "dropping a column")?;
    if columns.is_empty() {
        return Err(Error::InvalidArgument("no columns to drop".into()));
    }
    let mut schema = snapshot.schema().clone();
    let mut dropped: Vec<Vec<String>> = Vec::new();
    for column in columns {
        let indices = match resolve(&schema, &parse_path(column)?) {
            Ok(indices) => indices,
            Err(_) if if_exists => continue,
            Err(error) => return Err(error),
        };
        let path = path_names(&schema, &indices);
        if is_partition_column(config, &path) {
            return Err(Error::NotAllowed(format!(
                "{} is a partition column and cannot be dropped",
                quote_path(&path)
            )));
        }
        refuse_constraint_columns_in(snapshot, &schema, &indices, "drop")?;
        refuse_clustering_column(snapshot, &path)?;
        let (parent_indices, last) = indices.split_at(indices.len() - 1);
        let parent = struct_mut(&mut schema, parent_indices)?;
        if parent.fields.len() == 1 {
            return Err(Error::NotAllowed(format!(
                "{} is the last column of its {}; it cannot be dropped",
                quote_path(&path),
                if parent_indices.is_empty() {
                    "table"
                } else {
                    "struct"
                }
            )));
        }
        parent.fields.remove(last[0]);
        dropped.push(path);
    }
    let names: Vec<String> = dropped.iter().map(|path| quote_path(path)).collect();
    let mut transaction = snapshot
        .transaction("DROP COLUMNS")
        .with_operation_parameter("columns", json_text(&names));
    transaction.update_metadata(MetadataUpdate {
        schema: Some(schema),
        ..MetadataUpdate::default()
    })?;
    Ok(transaction)
}

/// `ADD CONSTRAINT`: checked against every row of the snapshot before anything is committed.
async fn add_constraint(snapshot: &Snapshot, name: &str, expression: &str) -> Result<Transaction> {
    let config = snapshot.table_configuration();
    let table = config.table_uri();
    let key = constraint_key(name)?;
    if let Some(existing) = snapshot.metadata().configuration.get(&key) {
        return Err(Error::NotAllowed(format!(
            "constraint {name} already exists in {table} ({existing}); drop it first"
        )));
    }
    let expr = parse_sql(expression).map_err(|error| {
        Error::InvalidArgument(format!(
            "CHECK constraint {name} ({expression}) cannot be evaluated by deltalog: {error}"
        ))
    })?;
    if expr.reads_clock() {
        return Err(Error::InvalidArgument(format!(
            "CHECK constraint {name} ({expression}) is not deterministic: it reads \
             current_timestamp()"
        )));
    }
    let schema = snapshot.schema();
    for path in expr.column_paths() {
        resolve(schema, &path).map_err(|_| {
            Error::InvalidArgument(format!(
                "CHECK constraint {name} ({expression}) names unknown column `{}`",
                path.join(".")
            ))
        })?;
    }
    check_existing_rows(snapshot, name, expression, &expr).await?;
    let mut transaction = snapshot
        .transaction("ADD CONSTRAINT")
        .with_operation_parameter("name", name)
        .with_operation_parameter("expr", expression);
    transaction.record_read_whole_table();
    transaction.update_metadata(MetadataUpdate {
        configuration: vec![(key, Some(expression.to_string()))],
        ..MetadataUpdate::default()
    })?;
    Ok(transaction)
}

/// Reads the rows of `snapshot` for which `expr` is false or NULL (files whose statistics
/// prove it true are skipped) and fails with [`Error::ConstraintViolation`] when there are any.
async fn check_existing_rows(
    snapshot: &Snapshot,
    name: &str,
    expression: &str,
    expr: &Expr,
) -> Result<()> {
    let violation = Expr::Or(
        Box::new(Expr::Not(Box::new(expr.clone()))),
        Box::new(Expr::IsNull {
            expr: Box::new(expr.clone()),
            negated: false,
        }),
    );
    let mut columns: Vec<String> = Vec::new();
    for path in expr.column_paths() {
        let indices = resolve(snapshot.schema(), &path)?;
        let top = path_names(snapshot.schema(), &indices[..1]).remove(0);
        if !columns.contains(&top) {
            columns.push(top);
        }
    }
    let options = ScanOptions {
        columns: (!columns.is_empty()).then_some(columns),
        filter: Some(violation),
        ..ScanOptions::default()
    };
    let scan = Scan::new(snapshot, options).await?;
    let mut stream = scan.stream();
    let mut count = 0usize;
    let mut example = None;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.num_rows() > 0 && example.is_none() {
            example = Some(first_row(&batch));
        }
        count += batch.num_rows();
    }
    match example {
        None => Ok(()),
        Some(values) => Err(Error::ConstraintViolation {
            table: snapshot.table_configuration().table_uri().to_string(),
            constraint: format!("new CHECK constraint {name} ({expression})"),
            reason: format!(
                "{count} existing row(s) of version {} break it, such as the row with {values}; \
                 nothing was committed",
                snapshot.version()
            ),
        }),
    }
}

fn first_row(batch: &arrow_array::RecordBatch) -> String {
    use arrow::util::display::array_value_to_string;
    let schema = batch.schema();
    schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| {
            let value = match column.is_null(0) {
                true => "NULL".to_string(),
                false => array_value_to_string(column, 0).unwrap_or_else(|_| "?".into()),
            };
            format!("{} = {value}", field.name())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `DROP CONSTRAINT`: commits even for a constraint that is not there when `if_exists`, as
/// Delta on Spark does (`existed` = `false`).
fn drop_constraint(snapshot: &Snapshot, name: &str, if_exists: bool) -> Result<Transaction> {
    let key = constraint_key(name)?;
    let existing = snapshot.metadata().configuration.get(&key).cloned();
    let mut transaction = snapshot
        .transaction("DROP CONSTRAINT")
        .with_operation_parameter("name", name);
    match &existing {
        Some(expression) => {
            transaction = transaction
                .with_operation_parameter("expr", expression.clone())
                .with_operation_parameter("existed", "true");
        }
        None if if_exists => {
            transaction = transaction.with_operation_parameter("existed", "false");
        }
        None => {
            return Err(Error::InvalidArgument(format!(
                "{} has no constraint {name} to drop (use if_exists to ignore it)",
                snapshot.table_configuration().table_uri()
            )))
        }
    }
    transaction.update_metadata(MetadataUpdate {
        configuration: vec![(key, None)],
        ..MetadataUpdate::default()
    })?;
    Ok(transaction)
}

/// `delta.constraints.<name>`, the name in lower case as Delta on Spark stores it.
fn constraint_key(name: &str) -> Result<String> {
    if name.trim().is_empty() {
        return Err(Error::InvalidArgument("a constraint needs a name".into()));
    }
    Ok(format!("{CONSTRAINTS_PREFIX}{}", name.to_lowercase()))
}

/// The known feature named `name` (any case), or [`Error::UnsupportedFeature`].
fn known_feature(snapshot: &Snapshot, name: &str) -> Result<TableFeature> {
    known_feature_of(snapshot.table_configuration().table_uri(), name)
}

fn require_column_mapping(snapshot: &Snapshot, what: &str) -> Result<()> {
    let config = snapshot.table_configuration();
    match config.column_mapping() {
        ColumnMappingMode::None => Err(Error::NotAllowed(format!(
            "{what} of {} needs column mapping: set {COLUMN_MAPPING_MODE} to name first \
             (set_properties({{'{COLUMN_MAPPING_MODE}': 'name'}}))",
            config.table_uri()
        ))),
        _ => Ok(()),
    }
}

/// Refuses changing a column that a CHECK constraint or a generated column reads (or a column
/// inside or around it), as Delta on Spark does.
fn refuse_constraint_columns(snapshot: &Snapshot, indices: &[usize], what: &str) -> Result<()> {
    refuse_constraint_columns_in(snapshot, snapshot.schema(), indices, what)
}

fn refuse_constraint_columns_in(
    snapshot: &Snapshot,
    schema: &StructType,
    indices: &[usize],
    what: &str,
) -> Result<()> {
    let mut users: Vec<(String, String)> = snapshot
        .metadata()
        .configuration
        .iter()
        .filter(|(key, _)| key.starts_with(CONSTRAINTS_PREFIX))
        .map(|(key, text)| {
            let name = &key[CONSTRAINTS_PREFIX.len()..];
            (format!("CHECK constraint {name}"), text.clone())
        })
        .collect();
    users.sort();
    for field in &schema.fields {
        if let Some(text) = field.metadata.get(GENERATION_EXPRESSION_KEY) {
            let text = text.as_str().unwrap_or_default().to_string();
            users.push((format!("generated column {}", field.name), text));
        }
    }
    for (user, text) in users {
        let Ok(expr) = parse_sql(&text) else { continue };
        for path in expr.column_paths() {
            let Ok(used) = resolve(schema, &path) else {
                continue;
            };
            let shared = used.len().min(indices.len());
            if used[..shared] == indices[..shared] {
                return Err(Error::NotAllowed(format!(
                    "cannot {what} column {}: {user} ({text}) uses it",
                    quote_path(&path_names(schema, indices)),
                )));
            }
        }
    }
    Ok(())
}

/// A column path as a user writes it (`a`, `s.x`, `` `a.b` ``), parsed by the filter grammar.
fn parse_path(text: &str) -> Result<Vec<String>> {
    match parse_sql(text) {
        Ok(Expr::Column(path)) => Ok(path),
        _ => Err(Error::InvalidArgument(format!(
            "`{text}` is not a column name (quote names with backticks: `my col`)"
        ))),
    }
}

/// The field indices of `path` in `schema`, descending through structs: each part matches a
/// field exactly, else without case; a run of parts joined by `.` may also name one field.
fn resolve(schema: &StructType, path: &[String]) -> Result<Vec<usize>> {
    let missing = || Error::InvalidArgument(format!("no column {} in the table", path.join(".")));
    let mut indices = Vec::new();
    let mut current = schema;
    let mut rest = path;
    while !rest.is_empty() {
        let (index, used) = (1..=rest.len())
            .rev()
            .find_map(|take| {
                let name = rest[..take].join(".");
                let exact = current.fields.iter().position(|f| f.name == name);
                let loose = || {
                    current
                        .fields
                        .iter()
                        .position(|f| f.name.eq_ignore_ascii_case(&name))
                };
                exact.or_else(loose).map(|index| (index, take))
            })
            .ok_or_else(missing)?;
        indices.push(index);
        rest = &rest[used..];
        if !rest.is_empty() {
            current = match &current.fields[index].data_type {
                DataType::Struct(inner) => inner,
                _ => return Err(missing()),
            };
        }
    }
    if indices.is_empty() {
        return Err(missing());
    }
    Ok(indices)
}

/// The field names along `indices`.
fn path_names(schema: &StructType, indices: &[usize]) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = Some(schema);
    for &index in indices {
        let Some(field) = current.and_then(|s| s.fields.get(index)) else {
            break;
        };
        names.push(field.name.clone());
        current = field.data_type.as_struct();
    }
    names
}

fn field_mut<'a>(schema: &'a mut StructType, indices: &[usize]) -> Result<&'a mut StructField> {
    let (last, parents) = indices
        .split_last()
        .ok_or_else(|| Error::InvalidArgument("an empty column path".into()))?;
    struct_mut(schema, parents)?
        .fields
        .get_mut(*last)
        .ok_or_else(|| Error::internal_invariant("a resolved column path lies inside the schema"))
}

fn struct_mut<'a>(schema: &'a mut StructType, indices: &[usize]) -> Result<&'a mut StructType> {
    let mut current = schema;
    for &index in indices {
        let field = current.fields.get_mut(index).ok_or_else(|| {
            Error::internal_invariant("a resolved column path lies inside the schema")
        })?;
        current = match &mut field.data_type {
            DataType::Struct(inner) => inner.as_mut(),
            _ => {
                return Err(Error::internal_invariant(
                    "a resolved column path passes through structs only",
                ))
            }
        };
    }
    Ok(current)
}

fn nested_structs_mut(data_type: &mut DataType) -> Vec<&mut StructType> {
    match data_type {
        DataType::Struct(inner) => vec![inner.as_mut()],
        DataType::Array(array) => nested_structs_mut(&mut array.element_type),
        DataType::Map(map) => {
            let mut found = nested_structs_mut(&mut map.key_type);
            found.extend(nested_structs_mut(&mut map.value_type));
            found
        }
        DataType::Primitive(_) | DataType::Geospatial(_) => Vec::new(),
    }
}

/// A column path as Delta on Spark logs it: parts joined by `.`, a part holding a `.` or a
/// backtick quoted with backticks.
fn quote_path(path: &[String]) -> String {
    path.iter()
        .map(|part| match part.contains('.') || part.contains('`') {
            true => format!("`{}`", part.replace('`', "``")),
            false => part.clone(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// A field as Delta on Spark logs it in `ADD COLUMNS` parameters.
fn field_log(path: &[String], field: &StructField) -> Value {
    let type_name = match &field.data_type {
        DataType::Primitive(primitive) => primitive.type_name(),
        DataType::Geospatial(geospatial) => geospatial.type_name(),
        DataType::Struct(_) => "struct".into(),
        DataType::Array(_) => "array".into(),
        DataType::Map(_) => "map".into(),
    };
    json!({
        "name": quote_path(path),
        "type": type_name,
        "nullable": field.nullable,
        "metadata": Value::Object(field.metadata.clone().into_iter().collect::<Map<_, _>>()),
    })
}

/// `value` as JSON text (Delta on Spark logs maps and lists as JSON strings).
fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests;
