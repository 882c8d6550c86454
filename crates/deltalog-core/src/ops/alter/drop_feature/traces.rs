//! What each droppable feature leaves in a table, how to tell it is gone ([`gone`], Spark's
//! `validateDropInvariants`) and how to remove it ([`remove`], Spark's
//! `PreDowngradeTableFeatureCommand`s), one commit per step as Spark commits them.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use serde_json::{json, Value};

use super::super::row_tracking::{has_row_ids, unbackfill_row_ids};
use super::super::{json_text, set_properties, unset_properties};
use super::latest;
use crate::actions::layout::{add, remove};
use crate::error::{Error, Result};
use crate::log::encode::encode_path;
use crate::log::list_log_from;
use crate::log::path::{CheckpointKind, LogFileKind};
use crate::log::segment::{complete_checkpoints, CheckpointFiles};
use crate::maintenance::cleanup::truncate_history;
use crate::ops::commands::optimize::rewrite_without_column_mapping;
use crate::ops::commands::optimize::{reorg, Reorg};
use crate::ops::commands::vacuum::{descriptor, dv_store_path, relative_store_path};
use crate::schema::{
    ArrayType, ColumnMappingMode, DataType, MapType, StructField, StructType,
    COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, NESTED_IDS_KEY,
    PARQUET_FIELD_NESTED_IDS_KEY, TYPE_CHANGES_KEY,
};
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::table_config::properties::{
    CheckpointPolicy, CHECKPOINT_POLICY, COLUMN_MAPPING_MAX_COLUMN_ID, COLUMN_MAPPING_MODE,
    ENABLE_DELETION_VECTORS, ENABLE_IN_COMMIT_TIMESTAMPS, ENABLE_MATERIALIZE_PARTITION_COLUMNS,
    ENABLE_ROW_TRACKING, ENABLE_TYPE_WIDENING, IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP,
    IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION, REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION,
    ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
    ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME, ROW_TRACKING_SUSPENDED,
};
use crate::table_config::writing::CONSTRAINTS_PREFIX;
use crate::table_config::TableFeature;
use crate::transaction::MetadataUpdate;
use crate::util::time::{duration_ms, now_ms};

/// The properties a feature keeps until the downgrade commit removes them with it (Spark's
/// `tablePropertiesToRemoveAtDowngradeCommit`): concurrent writers still read them while the
/// feature is in the protocol.
pub(super) fn kept_to_the_end(feature: &TableFeature) -> &'static [&'static str] {
    match feature {
        TableFeature::RowTracking => &[
            ENABLE_ROW_TRACKING,
            ROW_TRACKING_SUSPENDED,
            ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME,
            ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
        ],
        // Files written with partition values stay as they are: readers take the values
        // from the log.
        TableFeature::MaterializePartitionColumns => &[ENABLE_MATERIALIZE_PARTITION_COLUMNS],
        _ => &[],
    }
}

/// True when `snapshot` holds no trace of `feature` that would stop the protocol downgrade.
pub(super) async fn gone(snapshot: &Snapshot, feature: &TableFeature) -> Result<bool> {
    let config = snapshot.table_configuration();
    let properties = config.properties();
    let configuration = &snapshot.metadata().configuration;
    Ok(match feature {
        TableFeature::CheckConstraints => constraint_names(snapshot).is_empty(),
        TableFeature::DeletionVectors => {
            !properties.enable_deletion_vectors && !has_deletion_vectors(snapshot).await?
        }
        TableFeature::V2Checkpoint => {
            properties.checkpoint_policy != CheckpointPolicy::V2
                && !newest_checkpoint_is_v2(snapshot).await?
        }
        TableFeature::InCommitTimestamp => {
            !properties.enable_in_commit_timestamps
                && in_commit_timestamp_provenance(snapshot).is_empty()
        }
        TableFeature::TypeWidening | TableFeature::TypeWideningPreview => {
            !properties.enable_type_widening && widened_fields(config.schema()).is_empty()
        }
        TableFeature::RowTracking => {
            !properties.enable_row_tracking
                && properties.row_tracking_suspended
                && !has_row_ids(snapshot).await?
        }
        TableFeature::DomainMetadata => snapshot.domains().is_empty(),
        TableFeature::ColumnMapping => {
            config.column_mapping() == ColumnMappingMode::None
                && !all_fields(config.schema()).into_iter().any(|field| {
                    MAPPING_KEYS
                        .iter()
                        .any(|key| field.metadata.contains_key(*key))
                })
        }
        TableFeature::CheckpointProtection => {
            !configuration.contains_key(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION)
        }
        _ => true,
    })
}

/// Removes the traces of `feature` from the latest version of `snapshot`'s table; true when
/// that changed what the history holds (a truncating drop must then wait for the retention).
pub(super) async fn remove(snapshot: &Snapshot, feature: &TableFeature) -> Result<bool> {
    match feature {
        TableFeature::CheckConstraints => refuse_constraints(snapshot).map(|()| false),
        TableFeature::DeletionVectors => purge_deletion_vectors(snapshot).await,
        TableFeature::V2Checkpoint => use_classic_checkpoints(snapshot).await,
        TableFeature::InCommitTimestamp => disable_in_commit_timestamps(snapshot).await,
        TableFeature::TypeWidening | TableFeature::TypeWideningPreview => {
            rewrite_widened_columns(snapshot).await
        }
        TableFeature::RowTracking => match gone(snapshot, feature).await? {
            true => Ok(false),
            false => unbackfill_row_ids(snapshot).await.map(|_| true),
        },
        TableFeature::DomainMetadata => remove_domains(snapshot).await,
        TableFeature::ColumnMapping => remove_column_mapping(snapshot).await,
        TableFeature::CheckpointProtection => truncate_protected_history(snapshot).await,
        _ => Ok(false),
    }
}

/// The names of the table's CHECK constraints, sorted.
fn constraint_names(snapshot: &Snapshot) -> Vec<String> {
    let mut names: Vec<String> = snapshot
        .metadata()
        .configuration
        .keys()
        .filter_map(|key| key.strip_prefix(CONSTRAINTS_PREFIX))
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// Refuses while CHECK constraints remain: dropping a feature never changes what the table
/// means, so the user drops them (as Spark asks).
fn refuse_constraints(snapshot: &Snapshot) -> Result<()> {
    let names = constraint_names(snapshot);
    if names.is_empty() {
        return Ok(());
    }
    Err(Error::NotAllowed(format!(
        "{} has CHECK constraints ({}): drop them with drop_constraint before dropping \
         checkConstraints (Delta on Spark's DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE)",
        snapshot.table_uri(),
        names.join(", ")
    )))
}

/// Dropping `deletionVectors` (Spark's `DeletionVectorsPreDowngradeCommand`): when the table
/// still writes or holds deletion vectors, `delta.enableDeletionVectors` is unset; then a
/// `REORG ... APPLY (PURGE)` rewrites the files with one, and the deletion vector files that
/// tombstones within the retention still reference get tombstones of their own, so that
/// VACUUM by a client without the feature keeps them as long as time travel needs them.
async fn purge_deletion_vectors(snapshot: &Snapshot) -> Result<bool> {
    let found = !gone(snapshot, &TableFeature::DeletionVectors).await?;
    if found {
        let keys = [ENABLE_DELETION_VECTORS.to_string()];
        unset_properties(snapshot, &keys, true)?.commit().await?;
    }
    let storage = snapshot.storage();
    reorg(&latest(storage).await?, Reorg::Purge).await?;
    tombstone_deletion_vectors(&latest(storage).await?).await?;
    Ok(found)
}

/// True when a live file of `snapshot` has a deletion vector.
async fn has_deletion_vectors(snapshot: &Snapshot) -> Result<bool> {
    for adds in snapshot.add_actions().await? {
        if let Some(dvs) = adds.column_by_name(add::DELETION_VECTOR) {
            if (0..adds.len()).any(|row| adds.is_valid(row) && dvs.is_valid(row)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Commits `Deletion Vector Tombstones`: a bare tombstone for every deletion vector file
/// that a tombstone within `delta.deletedFileRetentionDuration` references and that has no
/// tombstone yet (Spark's `generateDVTombstones`).
async fn tombstone_deletion_vectors(snapshot: &Snapshot) -> Result<()> {
    let storage = snapshot.storage();
    let retention = snapshot
        .table_configuration()
        .properties()
        .deleted_file_retention_duration;
    let cutoff = now_ms().saturating_sub(duration_ms(retention));
    let mut dv_files = BTreeSet::new();
    let mut tombstoned = HashSet::new();
    for removes in snapshot.remove_actions().await? {
        let (Some(paths), Some(deleted_at)) = (
            removes
                .column_by_name(add::PATH)
                .and_then(|c| c.as_string_opt::<i32>()),
            removes
                .column_by_name(remove::DELETION_TIMESTAMP)
                .and_then(|c| c.as_primitive_opt::<Int64Type>()),
        ) else {
            continue;
        };
        let dvs = removes
            .column_by_name(add::DELETION_VECTOR)
            .and_then(|c| c.as_struct_opt());
        for row in (0..removes.len()).filter(|row| removes.is_valid(*row)) {
            let at = deleted_at.is_valid(row).then(|| deleted_at.value(row));
            if at.unwrap_or(0) < cutoff || paths.is_null(row) {
                continue;
            }
            match dvs.and_then(|dvs| descriptor(dvs, row)) {
                Some(dv) => dv_files.extend(dv_store_path(storage, &dv)),
                None => tombstoned.extend(relative_store_path(storage, paths.value(row))),
            }
        }
    }
    let missing: Vec<String> = dv_files
        .into_iter()
        .filter(|path| !tombstoned.contains(path))
        .map(|path| encode_path(&path))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut transaction = snapshot.transaction("Deletion Vector Tombstones");
    transaction.add_tombstones(&missing)?;
    transaction.commit().await?;
    Ok(())
}

/// Dropping `v2Checkpoint`: `delta.checkpointPolicy` set to `classic`, so that the
/// checkpoints written from then on (the drop's own first) are classic ones.
async fn use_classic_checkpoints(snapshot: &Snapshot) -> Result<bool> {
    if gone(snapshot, &TableFeature::V2Checkpoint).await? {
        return Ok(false);
    }
    let classic = BTreeMap::from([(CHECKPOINT_POLICY.to_string(), "classic".to_string())]);
    set_properties(snapshot, classic).await?.commit().await?;
    Ok(true)
}

/// True when the newest checkpoint at or below `snapshot`'s version is a V2 checkpoint: named
/// with a UUID, or classic-named with a `checkpointMetadata` column.
async fn newest_checkpoint_is_v2(snapshot: &Snapshot) -> Result<bool> {
    let storage = snapshot.storage();
    let listing = list_log_from(storage, 0).await?;
    let newest = complete_checkpoints(&listing)
        .into_iter()
        .filter(|checkpoint| checkpoint.version <= snapshot.version())
        .max_by_key(|checkpoint| checkpoint.version);
    match newest {
        Some(checkpoint) => is_v2_checkpoint(storage, &checkpoint).await,
        None => Ok(false),
    }
}

/// True when `checkpoint` is a V2 checkpoint: named with a UUID, or classic-named with a
/// `checkpointMetadata` column (the classic-named copy of a V2 checkpoint).
pub(super) async fn is_v2_checkpoint(
    storage: &Storage,
    checkpoint: &CheckpointFiles,
) -> Result<bool> {
    let Some(part) = checkpoint.parts.first() else {
        return Ok(false);
    };
    match part.kind {
        LogFileKind::Checkpoint(CheckpointKind::Classic) => {
            let mut reader = storage.parquet_reader(&part.location, Some(part.size));
            let footer = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
                .await
                .map_err(|error| Error::CorruptLogFile {
                    path: storage.url_of(&part.location),
                    reason: error.to_string(),
                })?;
            Ok(footer
                .schema()
                .field_with_name("checkpointMetadata")
                .is_ok())
        }
        LogFileKind::Checkpoint(CheckpointKind::MultiPart { .. }) => Ok(false),
        _ => Ok(true),
    }
}

/// The in-commit timestamp enablement properties the table has.
fn in_commit_timestamp_provenance(snapshot: &Snapshot) -> Vec<&'static str> {
    let configuration = &snapshot.metadata().configuration;
    [
        IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION,
        IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP,
    ]
    .into_iter()
    .filter(|key| configuration.contains_key(*key))
    .collect()
}

/// Dropping `inCommitTimestamp` (Spark's `InCommitTimestampsPreDowngradeCommand`): one
/// `UNSET TBLPROPERTIES` commit that removes the enablement properties and sets
/// `delta.enableInCommitTimestamps` to `false`.
async fn disable_in_commit_timestamps(snapshot: &Snapshot) -> Result<bool> {
    let provenance = in_commit_timestamp_provenance(snapshot);
    let enabled = snapshot
        .table_configuration()
        .properties()
        .enable_in_commit_timestamps;
    if provenance.is_empty() && !enabled {
        return Ok(false);
    }
    let mut keys: Vec<&str> = provenance.clone();
    let mut configuration: Vec<(String, Option<String>)> = provenance
        .iter()
        .map(|key| (key.to_string(), None))
        .collect();
    if enabled {
        keys.push(ENABLE_IN_COMMIT_TIMESTAMPS);
        configuration.push((ENABLE_IN_COMMIT_TIMESTAMPS.into(), Some("false".into())));
    }
    let mut transaction = snapshot
        .transaction("UNSET TBLPROPERTIES")
        .with_operation_parameter("properties", json_text(&keys))
        .with_operation_parameter("ifExists", "true");
    transaction.update_metadata(MetadataUpdate {
        configuration,
        ..MetadataUpdate::default()
    })?;
    transaction.commit().await?;
    Ok(true)
}

/// Dropping `typeWidening` (Spark's `TypeWideningPreDowngradeCommand`):
/// `delta.enableTypeWidening` unset, the files holding a widened column in its old type
/// rewritten (a `REORG`), then the `delta.typeChanges` of the schema removed in a commit
/// Spark names `DROP FEATURE` (its `columns` parameter the fields as they were). True when
/// files were rewritten or the schema changed.
async fn rewrite_widened_columns(snapshot: &Snapshot) -> Result<bool> {
    if gone(snapshot, &TableFeature::TypeWidening).await? {
        return Ok(false);
    }
    let keys = [ENABLE_TYPE_WIDENING.to_string()];
    unset_properties(snapshot, &keys, true)?.commit().await?;
    let storage = snapshot.storage();
    let rewritten = reorg(&latest(storage).await?, Reorg::RewriteTypeWidening)
        .await?
        .is_some();
    let current = latest(storage).await?;
    let widened = widened_fields(current.schema());
    if widened.is_empty() {
        return Ok(rewritten);
    }
    let columns: Vec<Value> = widened
        .iter()
        .map(|(path, field)| column_parameter(path, field))
        .collect();
    let mut transaction = current
        .transaction("DROP FEATURE")
        .with_operation_parameter("columns", json_text(&columns));
    transaction.update_metadata(MetadataUpdate {
        schema: Some(without_type_changes(current.schema())),
        ..MetadataUpdate::default()
    })?;
    transaction.commit().await?;
    Ok(true)
}

/// The fields of `schema` (at any depth through structs) with `delta.typeChanges`, each with
/// the path of its parent.
fn widened_fields(schema: &StructType) -> Vec<(Vec<String>, StructField)> {
    fn walk(
        schema: &StructType,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, StructField)>,
    ) {
        for field in &schema.fields {
            if field.metadata.contains_key(TYPE_CHANGES_KEY) {
                out.push((path.clone(), field.clone()));
            }
            if let DataType::Struct(inner) = &field.data_type {
                path.push(field.name.clone());
                walk(inner, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out
}

/// `schema` without `delta.typeChanges` at any depth.
fn without_type_changes(schema: &StructType) -> StructType {
    without_metadata_keys(schema, &[TYPE_CHANGES_KEY])
}

/// The field metadata of column mapping (Spark's `COLUMN_MAPPING_METADATA_KEYS`).
const MAPPING_KEYS: [&str; 5] = [
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    NESTED_IDS_KEY,
    "parquet.field.id",
    PARQUET_FIELD_NESTED_IDS_KEY,
];

/// The characters a column name cannot hold without column mapping (Spark's
/// `findInvalidColumnNamesInSchema`).
const INVALID_NAME_CHARACTERS: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];

/// Dropping `columnMapping` (Spark's `RemoveColumnMappingCommand`): one `REMOVE COLUMN
/// MAPPING` commit that rewrites every file under the logical names, strips the column
/// mapping metadata from the schema and unsets `delta.columnMapping.mode` and
/// `delta.columnMapping.maxColumnId`. Refused when a column name needs column mapping.
async fn remove_column_mapping(snapshot: &Snapshot) -> Result<bool> {
    if gone(snapshot, &TableFeature::ColumnMapping).await? {
        return Ok(false);
    }
    let schema = snapshot.schema();
    let invalid: Vec<String> = all_fields(schema)
        .into_iter()
        .filter(|field| field.name.contains(INVALID_NAME_CHARACTERS))
        .map(|field| format!("{:?}", field.name))
        .collect();
    if !invalid.is_empty() {
        return Err(Error::NotAllowed(format!(
            "{} has columns whose names need column mapping ({}): rename them before dropping \
             columnMapping (Delta on Spark's \
             DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING)",
            snapshot.table_uri(),
            invalid.join(", ")
        )));
    }
    let update = MetadataUpdate {
        schema: Some(without_metadata_keys(schema, &MAPPING_KEYS)),
        configuration: vec![
            (COLUMN_MAPPING_MODE.to_string(), None),
            (COLUMN_MAPPING_MAX_COLUMN_ID.to_string(), None),
        ],
        ..MetadataUpdate::default()
    };
    rewrite_without_column_mapping(snapshot, update).await?;
    Ok(true)
}

/// Every field of `schema`, at any depth (inside arrays and maps too), parents first.
fn all_fields(schema: &StructType) -> Vec<&StructField> {
    fn in_type<'a>(data_type: &'a DataType, out: &mut Vec<&'a StructField>) {
        match data_type {
            DataType::Struct(inner) => walk(inner, out),
            DataType::Array(array) => in_type(&array.element_type, out),
            DataType::Map(map) => {
                in_type(&map.key_type, out);
                in_type(&map.value_type, out);
            }
            _ => {}
        }
    }
    fn walk<'a>(schema: &'a StructType, out: &mut Vec<&'a StructField>) {
        for field in &schema.fields {
            out.push(field);
            in_type(&field.data_type, out);
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut out);
    out
}

/// `schema` without the field metadata `keys` at any depth (inside arrays and maps too).
fn without_metadata_keys(schema: &StructType, keys: &[&str]) -> StructType {
    fn in_type(data_type: &DataType, keys: &[&str]) -> DataType {
        match data_type {
            DataType::Struct(inner) => {
                DataType::Struct(Box::new(without_metadata_keys(inner, keys)))
            }
            DataType::Array(array) => DataType::Array(Box::new(ArrayType {
                element_type: in_type(&array.element_type, keys),
                contains_null: array.contains_null,
            })),
            DataType::Map(map) => DataType::Map(Box::new(MapType {
                key_type: in_type(&map.key_type, keys),
                value_type: in_type(&map.value_type, keys),
                value_contains_null: map.value_contains_null,
            })),
            other => other.clone(),
        }
    }
    let fields = schema
        .fields
        .iter()
        .map(|field| {
            let mut field = field.clone();
            for key in keys {
                field.metadata.remove(*key);
            }
            field.data_type = in_type(&field.data_type, keys);
            field
        })
        .collect();
    StructType::new(fields)
}

/// A changed column as Spark's `UpdateColumnMetadata` records it: its dotted name, type name,
/// nullability and metadata.
fn column_parameter(parent: &[String], field: &StructField) -> Value {
    let name = parent
        .iter()
        .chain(std::iter::once(&field.name))
        .map(|part| match part.contains('.') || part.contains('`') {
            true => format!("`{}`", part.replace('`', "``")),
            false => part.clone(),
        })
        .collect::<Vec<_>>()
        .join(".");
    let type_name = match &field.data_type {
        DataType::Struct(_) => "struct".to_string(),
        DataType::Array(_) => "array".to_string(),
        DataType::Map(_) => "map".to_string(),
        other => other.to_string(),
    };
    json!({
        "name": name,
        "type": type_name,
        "nullable": field.nullable,
        "metadata": Value::Object(field.metadata.clone()),
    })
}

/// Dropping `domainMetadata` (Spark's `DomainMetadataPreDowngradeCommand`): the domains
/// left behind (the features that write them are gone already) removed in one `DOMAIN
/// METADATA CLEANUP` commit.
async fn remove_domains(snapshot: &Snapshot) -> Result<bool> {
    let mut domains: Vec<String> = snapshot.domains().into_keys().collect();
    if domains.is_empty() {
        return Ok(false);
    }
    domains.sort();
    let mut transaction = snapshot
        .transaction("DOMAIN METADATA CLEANUP")
        .with_operation_parameter("domainMetadataRemovedCount", domains.len().to_string());
    for domain in &domains {
        transaction.remove_any_domain(domain);
    }
    transaction.commit().await?;
    Ok(true)
}

/// Dropping `checkpointProtection` (Spark's `CheckpointProtectionPreDowngradeCommand`): the
/// history before `delta.requireCheckpointProtectionBeforeVersion` must be gone; when it is
/// not, an empty commit gets a checkpoint and the history older than
/// `delta.dropFeatureTruncateHistory.retentionDuration` is deleted, which must reach that
/// version. Then the property is unset. Never changes what the history holds.
async fn truncate_protected_history(snapshot: &Snapshot) -> Result<bool> {
    let storage = snapshot.storage();
    if !history_before_protection_is_gone(snapshot).await? {
        super::empty_commit_and_checkpoint(storage).await?;
        let current = latest(storage).await?;
        let config = current.table_configuration();
        truncate_history(storage, config, current.version(), now_ms()).await?;
        if !history_before_protection_is_gone(snapshot).await? {
            let properties = snapshot.table_configuration().properties();
            return Err(Error::NotAllowed(format!(
                "the history of {} before version {} is not older than {} hours \
                 (delta.dropFeatureTruncateHistory.retentionDuration) yet: drop \
                 checkpointProtection once it is (Delta on Spark's \
                 DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD)",
                snapshot.table_uri(),
                properties.require_checkpoint_protection_before_version,
                properties.drop_feature_truncate_history_retention.as_secs() / 3600
            )));
        }
    }
    let keys = [REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION.to_string()];
    unset_properties(&latest(storage).await?, &keys, true)?
        .commit()
        .await?;
    Ok(false)
}

/// True when no commit before `delta.requireCheckpointProtectionBeforeVersion` is left and
/// the earliest checkpoint is at or after it (Spark's
/// `historyPriorToCheckpointProtectionVersionIsTruncated`).
async fn history_before_protection_is_gone(snapshot: &Snapshot) -> Result<bool> {
    let protected = snapshot
        .table_configuration()
        .properties()
        .require_checkpoint_protection_before_version;
    let Ok(protected) = u64::try_from(protected) else {
        return Ok(true);
    };
    if protected == 0 {
        return Ok(true);
    }
    let listing = list_log_from(snapshot.storage(), 0).await?;
    let earliest_checkpoint = complete_checkpoints(&listing)
        .into_iter()
        .map(|checkpoint| checkpoint.version)
        .min();
    let old_commits = listing
        .iter()
        .any(|file| file.kind == LogFileKind::Commit && file.version < protected);
    Ok(earliest_checkpoint.is_some_and(|version| version >= protected) && !old_commits)
}
