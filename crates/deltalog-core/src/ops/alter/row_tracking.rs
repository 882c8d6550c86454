//! Enabling row tracking on a table that already holds files, as Delta on Spark's
//! `RowTrackingBackfillCommand` does it (spec "Row Tracking"): first a commit that adds the
//! `rowTracking` feature to the protocol (`UPGRADE PROTOCOL`), so that every file added from
//! then on gets row ids; then a `ROW TRACKING BACKFILL` commit that re-adds, with
//! `dataChange` false, every live file still without a `baseRowId`, the commit giving each
//! its base row id and default row commit version and raising the high-water mark. The
//! `SET TBLPROPERTIES` that turns `delta.enableRowTracking` on follows.

use std::sync::Arc;

use arrow::compute::filter;
use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, StructArray};

use crate::actions::layout::{add, in_add_layout};
use crate::error::{Error, Result};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::table_config::properties::FEATURE_PREFIX;
use crate::table_config::TableFeature;
use crate::transaction::MetadataUpdate;

/// Backfills row ids on `snapshot`'s table (see the module docs); returns the latest
/// snapshot afterwards, or `None` when there was nothing to do.
pub(super) async fn backfill_row_ids(snapshot: &Snapshot) -> Result<Option<Snapshot>> {
    let mut current = None;
    if !snapshot
        .table_configuration()
        .is_feature_supported(&TableFeature::RowTracking)
    {
        let mut upgrade = snapshot.transaction("UPGRADE PROTOCOL");
        upgrade.update_metadata(MetadataUpdate {
            configuration: vec![(
                format!("{FEATURE_PREFIX}{}", TableFeature::RowTracking.name()),
                Some("supported".into()),
            )],
            ..MetadataUpdate::default()
        })?;
        upgrade.commit().await?;
        current = Some(Snapshot::load(snapshot.storage(), SnapshotAt::Latest).await?);
    }
    let base = current.as_ref().unwrap_or(snapshot);
    let missing = files_without_row_ids(base.add_actions_with_stats().await?, base)?;
    if missing.is_empty() {
        return Ok(current);
    }
    let mut backfill = base
        .transaction("ROW TRACKING BACKFILL")
        .with_operation_parameter("batchId", 0);
    for adds in missing {
        backfill.add_files(adds)?;
    }
    backfill.commit().await?;
    Ok(Some(
        Snapshot::load(snapshot.storage(), SnapshotAt::Latest).await?,
    ))
}

/// The rows of `adds` without a `baseRowId`, in the add layout with `dataChange` false.
fn files_without_row_ids(adds: &[StructArray], snapshot: &Snapshot) -> Result<Vec<StructArray>> {
    let broken = || {
        Error::internal(
            snapshot.storage().uri(),
            "the live files of a snapshot are rows of the add layout",
        )
    };
    let mut missing = Vec::new();
    for batch in adds {
        let batch = in_add_layout(batch).ok_or_else(broken)?;
        let bases = batch.column_by_name(add::BASE_ROW_ID).ok_or_else(broken)?;
        let mask: BooleanArray = (0..batch.len())
            .map(|row| Some(batch.is_valid(row) && bases.is_null(row)))
            .collect();
        if mask.true_count() == 0 {
            continue;
        }
        let kept = filter(&batch, &mask).map_err(|e| Error::arrow("selecting files", e))?;
        let (fields, mut columns, nulls) = kept.as_struct().clone().into_parts();
        let index = fields
            .iter()
            .position(|f| f.name() == add::DATA_CHANGE)
            .ok_or_else(broken)?;
        columns[index] = Arc::new(BooleanArray::from(vec![false; kept.len()]));
        let rows = StructArray::try_new(fields, columns, nulls)
            .map_err(|e| Error::arrow("re-adding files", e))?;
        missing.push(rows);
    }
    Ok(missing)
}
