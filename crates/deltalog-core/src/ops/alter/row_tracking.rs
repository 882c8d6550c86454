//! Enabling row tracking on a table that already holds files, as Delta on Spark's
//! `RowTrackingBackfillCommand` does it (spec "Row Tracking"): first a commit that adds the
//! `rowTracking` feature to the protocol (`UPGRADE PROTOCOL`), so that every file added from
//! then on gets row ids; then a `ROW TRACKING BACKFILL` commit that re-adds, with
//! `dataChange` false, every live file still without a `baseRowId`, the commit giving each
//! its base row id and default row commit version and raising the high-water mark. The
//! `SET TBLPROPERTIES` that turns `delta.enableRowTracking` on follows.
//!
//! Dropping the feature undoes it ([`unbackfill_row_ids`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::compute::filter;
use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, BooleanArray, StructArray};

use crate::actions::layout::{add, in_add_layout};
use crate::error::{Error, Result};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::table_config::properties::{
    ENABLE_ROW_TRACKING, FEATURE_PREFIX, ROW_TRACKING_SUSPENDED,
};
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
    let missing = readded_files(
        base.add_actions_with_stats().await?,
        base,
        Readd::WithoutRowIds,
    )?;
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

/// Which live files a backfill or an unbackfill re-adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readd {
    /// The files without a `baseRowId`, to get one.
    WithoutRowIds,
    /// The files with a `baseRowId` or `defaultRowCommitVersion`, to lose both.
    WithRowIds,
}

/// Removes the row ids of `snapshot`'s table, as Delta on Spark drops `rowTracking`
/// (`RowTrackingPreDowngradeCommand`): `SET TBLPROPERTIES` turns `delta.enableRowTracking`
/// off and `delta.rowTrackingSuspended` on (new files get no row ids from then on), then
/// `ROW TRACKING UNBACKFILL` re-adds, with `dataChange` false, every live file that has a
/// `baseRowId` or `defaultRowCommitVersion`, without them. Returns the snapshot after.
pub(super) async fn unbackfill_row_ids(snapshot: &Snapshot) -> Result<Snapshot> {
    let suspend = BTreeMap::from([
        (ENABLE_ROW_TRACKING.to_string(), "false".to_string()),
        (ROW_TRACKING_SUSPENDED.to_string(), "true".to_string()),
    ]);
    super::set_properties(snapshot, suspend)
        .await?
        .commit()
        .await?;
    let suspended = Snapshot::load(snapshot.storage(), SnapshotAt::Latest).await?;
    let tracked = readded_files(
        suspended.add_actions().await?,
        &suspended,
        Readd::WithRowIds,
    )?;
    if tracked.is_empty() {
        return Ok(suspended);
    }
    let mut unbackfill = suspended
        .transaction("ROW TRACKING UNBACKFILL")
        .with_operation_parameter("batchId", 0);
    for adds in tracked {
        unbackfill.add_files(adds)?;
    }
    unbackfill.commit().await?;
    Snapshot::load(snapshot.storage(), SnapshotAt::Latest).await
}

/// True when a live file of `snapshot` has a `baseRowId` or `defaultRowCommitVersion`.
pub(super) async fn has_row_ids(snapshot: &Snapshot) -> Result<bool> {
    let tracked = readded_files(snapshot.add_actions().await?, snapshot, Readd::WithRowIds)?;
    Ok(!tracked.is_empty())
}

/// The rows of `adds` that `which` re-adds, in the add layout with `dataChange` false (and,
/// for [`Readd::WithRowIds`], without row ids).
fn readded_files(
    adds: &[StructArray],
    snapshot: &Snapshot,
    which: Readd,
) -> Result<Vec<StructArray>> {
    let broken = || {
        Error::internal(
            snapshot.storage().uri(),
            "the live files of a snapshot are rows of the add layout",
        )
    };
    let mut chosen = Vec::new();
    for batch in adds {
        let batch = in_add_layout(batch).ok_or_else(broken)?;
        let bases = batch.column_by_name(add::BASE_ROW_ID).ok_or_else(broken)?;
        let versions = batch
            .column_by_name(add::DEFAULT_ROW_COMMIT_VERSION)
            .ok_or_else(broken)?;
        let mask: BooleanArray = (0..batch.len())
            .map(|row| {
                let wanted = match which {
                    Readd::WithoutRowIds => bases.is_null(row),
                    Readd::WithRowIds => bases.is_valid(row) || versions.is_valid(row),
                };
                Some(batch.is_valid(row) && wanted)
            })
            .collect();
        if mask.true_count() == 0 {
            continue;
        }
        let kept = filter(&batch, &mask).map_err(|e| Error::arrow("selecting files", e))?;
        let (fields, mut columns, nulls) = kept.as_struct().clone().into_parts();
        for (index, field) in fields.iter().enumerate() {
            let name = field.name().as_str();
            if name == add::DATA_CHANGE {
                columns[index] = Arc::new(BooleanArray::from(vec![false; kept.len()]));
            } else if which == Readd::WithRowIds
                && (name == add::BASE_ROW_ID || name == add::DEFAULT_ROW_COMMIT_VERSION)
            {
                columns[index] = new_null_array(field.data_type(), kept.len());
            }
        }
        let rows = StructArray::try_new(fields, columns, nulls)
            .map_err(|e| Error::arrow("re-adding files", e))?;
        chosen.push(rows);
    }
    Ok(chosen)
}
