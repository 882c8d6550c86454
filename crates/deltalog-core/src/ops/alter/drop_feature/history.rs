//! Whether the history left after a truncation still holds traces of a reader-writer feature
//! (Spark's `historyContainsFeature` with `actionUsesFeature`): the state of the earliest
//! checkpoint (its live files and metadata; its tombstones do not count) and every commit
//! left up to the version the drop reads.

use arrow_array::{Array, StructArray};

use crate::actions::layout::add;
use crate::actions::Metadata;
use crate::error::Result;
use crate::log::decode::commit::{decode_actions, DecodeOptions};
use crate::log::list_log_from;
use crate::log::path::LogFileKind;
use crate::log::segment::complete_checkpoints;
use crate::schema::{ColumnMappingMode, StructType, TYPE_CHANGES_KEY};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::table_config::properties::{CheckpointPolicy, TableProperties};
use crate::table_config::{logical_schema, TableFeature};

/// True when the history of `latest`'s table, as far back as it goes now, holds a trace of
/// `feature`.
pub(super) async fn holds_traces(latest: &Snapshot, feature: &TableFeature) -> Result<bool> {
    let storage = latest.storage();
    let listing = list_log_from(storage, 0).await?;
    let earliest = complete_checkpoints(&listing)
        .into_iter()
        .filter(|checkpoint| checkpoint.version <= latest.version())
        .min_by_key(|checkpoint| checkpoint.version);
    if let Some(checkpoint) = earliest {
        let v2 = *feature == TableFeature::V2Checkpoint;
        if v2 && super::traces::is_v2_checkpoint(storage, &checkpoint).await? {
            return Ok(true);
        }
        let state = Snapshot::load(storage, SnapshotAt::Version(checkpoint.version)).await?;
        if metadata_uses(state.metadata(), feature, storage.uri())? {
            return Ok(true);
        }
        for adds in state.add_actions().await? {
            if files_use(adds, feature) {
                return Ok(true);
            }
        }
    }
    for file in listing
        .iter()
        .filter(|file| file.kind == LogFileKind::Commit && file.version <= latest.version())
    {
        let bytes = storage.read(&file.location).await?;
        let name = storage.url_of(&file.location);
        let actions = decode_actions(&bytes, file.version, &name, DecodeOptions::default())?;
        if let Some(metadata) = &actions.metadata {
            if metadata_uses(metadata, feature, storage.uri())? {
                return Ok(true);
            }
        }
        let v2_actions = actions.checkpoint_metadata.is_some() || !actions.sidecars.is_empty();
        if v2_actions && *feature == TableFeature::V2Checkpoint {
            return Ok(true);
        }
        for batch in &actions.file_actions {
            if files_use(&batch.adds, feature) || files_use(&batch.removes, feature) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// True when `metadata` turns `feature` on or records what it did (Spark's
/// `actionUsesFeature` for `Metadata`).
fn metadata_uses(metadata: &Metadata, feature: &TableFeature, table: &str) -> Result<bool> {
    let properties = TableProperties::from_configuration(&metadata.configuration);
    Ok(match feature {
        TableFeature::DeletionVectors => properties.enable_deletion_vectors,
        TableFeature::V2Checkpoint => properties.checkpoint_policy == CheckpointPolicy::V2,
        TableFeature::ColumnMapping => properties.column_mapping_mode != ColumnMappingMode::None,
        TableFeature::TypeWidening | TableFeature::TypeWideningPreview => {
            has_type_changes(&logical_schema(metadata, table)?)
        }
        _ => false,
    })
}

/// True when a row of `files` (add or remove layout) has a deletion vector and `feature` is
/// `deletionVectors`.
fn files_use(files: &StructArray, feature: &TableFeature) -> bool {
    if *feature != TableFeature::DeletionVectors {
        return false;
    }
    files
        .column_by_name(add::DELETION_VECTOR)
        .is_some_and(|dvs| (0..files.len()).any(|row| files.is_valid(row) && dvs.is_valid(row)))
}

/// True when a field of `schema`, at any depth, carries `delta.typeChanges`.
fn has_type_changes(schema: &StructType) -> bool {
    schema.fields.iter().any(|field| {
        field.metadata.contains_key(TYPE_CHANGES_KEY)
            || field.data_type.as_struct().is_some_and(has_type_changes)
    })
}
