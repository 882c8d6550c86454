//! `ALTER TABLE ... DROP FEATURE`: a table feature removed from the protocol, as Delta on
//! Spark 4.4's `AlterTableDropFeatureDeltaCommand` removes it (spec "Table Features",
//! "Protocol Evolution"; the `checkpointProtection` feature).
//!
//! 1. The feature's traces go first ([`traces::remove`]), each step its own commit as Spark
//!    makes it: the property that turns the feature on is unset, then what it left in the
//!    table is rewritten or removed (deletion vectors purged by a `REORG` and their files
//!    tombstoned, files of an old type rewritten, every file rewritten under the logical
//!    column names, row ids unbackfilled, domains removed).
//! 2. A reader-writer feature leaves traces in the history that readers without it cannot
//!    read. By default (Spark's fast drop) three empty commits each get a checkpoint, and the
//!    downgrade commit adds `checkpointProtection` with
//!    `delta.requireCheckpointProtectionBeforeVersion` at its own version: no reader replays
//!    the history before those checkpoints, and no cleanup removes them piecemeal. With
//!    `truncate_history` (Spark's `TRUNCATE HISTORY`), the history older than
//!    `delta.dropFeatureTruncateHistory.retentionDuration` (24 hours) is deleted instead, and
//!    the drop goes on only when what is left holds no trace ([`history`]); right after the
//!    traces were removed it cannot, and the call says to come back once that retention has
//!    passed.
//! 3. The downgrade commit (`DROP FEATURE`) checks again that the traces are gone, removes the
//!    feature from the protocol (normalized: legacy versions when they suffice) and the
//!    properties the feature kept to the end, then a checkpoint follows when history is
//!    protected.
//!
//! Refused as Spark refuses: a feature the protocol lacks, one that cannot be dropped, one
//! another supported feature needs (`domainMetadata` under `rowTracking` or `clustering`), a
//! CHECK constraint left behind, `checkpointProtection` without `truncate_history`, and
//! `truncate_history` for a writer-only feature.

mod history;
mod traces;

use crate::error::{Error, ProtocolKind, Result};
use crate::maintenance::checkpoint::{write_checkpoint, CheckpointOptions};
use crate::maintenance::cleanup::truncate_history;
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::properties::{known_key, REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION};
use crate::table_config::writing::protocol_without;
use crate::table_config::TableFeature;
use crate::transaction::{CommitResult, ROW_TRACKING_DOMAIN};
use crate::util::time::now_ms;

/// The checkpoints written before the downgrade commit (Spark's
/// `NUMBER_OF_BARRIER_CHECKPOINTS`): a reader that fails on one checkpoint tries older ones,
/// up to its retry limit.
const BARRIER_CHECKPOINTS: usize = 3;

/// The features this library drops, as Delta on Spark marks them `RemovableFeature`.
const REMOVABLE: &[TableFeature] = &[
    TableFeature::CheckConstraints,
    TableFeature::ColumnMapping,
    TableFeature::DeletionVectors,
    TableFeature::RowTracking,
    TableFeature::DomainMetadata,
    TableFeature::V2Checkpoint,
    TableFeature::TypeWidening,
    TableFeature::TypeWideningPreview,
    TableFeature::InCommitTimestamp,
    TableFeature::VacuumProtocolCheck,
    TableFeature::CheckpointProtection,
    TableFeature::MaterializePartitionColumns,
];

/// Drops the feature named `name` from `snapshot`'s table (see the module documentation);
/// returns the downgrade commit.
///
/// Errors, with the table as the last commit made left it (each step stands on its own):
/// [`Error::NotAllowed`] for what Delta on Spark refuses, or for history that still holds
/// traces with `truncate_history`; [`Error::InvalidArgument`] for a property named in place
/// of a feature; [`Error::UnsupportedFeature`] for a feature this library does not know;
/// commit conflicts as [`crate::Transaction::commit`] reports them.
pub(crate) async fn drop_feature(
    snapshot: &Snapshot,
    name: &str,
    truncate_history: bool,
) -> Result<CommitResult> {
    let feature = removable(snapshot, name, truncate_history)?;
    let storage = snapshot.storage().clone();
    let changed = traces::remove(snapshot, &feature).await?;
    let protects_history = feature.is_reader_writer();
    if truncate_history {
        if protects_history {
            empty_commit_and_checkpoint(&storage).await?;
            if changed {
                return Err(wait_for_retention(&storage, &feature).await?);
            }
        }
        let latest = latest(&storage).await?;
        if protects_history {
            clean_history(&latest, &feature).await?;
        }
        return downgrade(&latest, &feature, Downgrade::TruncatedHistory).await;
    }
    if protects_history {
        for _ in 0..BARRIER_CHECKPOINTS {
            empty_commit_and_checkpoint(&storage).await?;
        }
    }
    let latest = latest(&storage).await?;
    let how = match protects_history {
        true => Downgrade::ProtectingCheckpoints,
        false => Downgrade::Plain,
    };
    let result = downgrade(&latest, &feature, how).await?;
    if protects_history {
        write_checkpoint(
            &latest.refresh_to(result.version).await?,
            &CheckpointOptions::default(),
        )
        .await?;
    }
    Ok(result)
}

/// The feature `name` names, when `snapshot`'s table may drop it (see [`drop_feature`]).
fn removable(snapshot: &Snapshot, name: &str, truncate_history: bool) -> Result<TableFeature> {
    let config = snapshot.table_configuration();
    let table = config.table_uri();
    let feature = TableFeature::from(name);
    if !config.is_feature_supported(&feature) {
        if name.to_ascii_lowercase().starts_with("delta.") && known_key(name).is_some() {
            return Err(Error::InvalidArgument(format!(
                "{name} is a table property, not a table feature: unset it with \
                 unset_properties (Delta on Spark's DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY)"
            )));
        }
        if let TableFeature::Unknown(_) = feature {
            return Err(unknown(table, name));
        }
        return Err(Error::NotAllowed(format!(
            "{table} does not support the feature {name}: there is nothing to drop (Delta on \
             Spark's DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT)"
        )));
    }
    if !REMOVABLE.contains(&feature) {
        if let TableFeature::Unknown(_) = feature {
            return Err(unknown(table, name));
        }
        return Err(Error::NotAllowed(format!(
            "the feature {name} cannot be dropped from a table (Delta on Spark's \
             DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE)"
        )));
    }
    let protectable = feature.is_reader_writer() || feature == TableFeature::CheckpointProtection;
    if truncate_history && !protectable {
        return Err(Error::NotAllowed(format!(
            "{name} is a writer feature: it leaves nothing in the history that readers need, \
             so it is dropped without truncate_history (Delta on Spark's \
             DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED)"
        )));
    }
    if feature == TableFeature::CheckpointProtection && !truncate_history {
        return Err(Error::NotAllowed(format!(
            "checkpointProtection can only be dropped with truncate_history: the history \
             before version {} goes with it (Delta on Spark's \
             DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION)",
            config
                .properties()
                .require_checkpoint_protection_before_version
        )));
    }
    let dependents: Vec<&str> = TableFeature::known()
        .iter()
        .filter(|other| other.requires().contains(&feature) && config.is_feature_supported(other))
        .map(TableFeature::name)
        .collect();
    if !dependents.is_empty() {
        return Err(Error::NotAllowed(format!(
            "{name} cannot be dropped from {table} while {} needs it: drop that first (Delta \
             on Spark's DELTA_FEATURE_DROP_DEPENDENT_FEATURE)",
            dependents.join(" and ")
        )));
    }
    Ok(feature)
}

fn unknown(table: &str, name: &str) -> Error {
    Error::UnsupportedFeature {
        table: table.to_string(),
        kind: ProtocolKind::Writer,
        feature: name.to_string(),
    }
}

/// How the downgrade commit protects readers from the history before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Downgrade {
    /// A writer feature: nothing to protect.
    Plain,
    /// `checkpointProtection` added, protecting the version of the commit.
    ProtectingCheckpoints,
    /// The history was truncated and holds no trace.
    TruncatedHistory,
}

/// The `DROP FEATURE` commit on `latest`: the feature out of the protocol, the properties it
/// kept to the end out of the metadata (and the row tracking domain removed), after checking
/// once more that its traces are gone. The commit reads the whole table, so that a
/// concurrent change that could bring traces back conflicts with it.
async fn downgrade(
    latest: &Snapshot,
    feature: &TableFeature,
    how: Downgrade,
) -> Result<CommitResult> {
    if !traces::gone(latest, feature).await? {
        return Err(Error::NotAllowed(format!(
            "{} holds traces of {} again: a concurrent commit brought them back; drop the \
             feature again (Delta on Spark's DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL)",
            latest.table_uri(),
            feature.name()
        )));
    }
    let config = latest.table_configuration();
    let mut metadata = config.metadata().clone();
    for key in traces::kept_to_the_end(feature) {
        metadata.configuration.remove(*key);
    }
    let mut added = Vec::new();
    if how == Downgrade::ProtectingCheckpoints {
        added.push(TableFeature::CheckpointProtection);
        metadata.configuration.insert(
            REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION.to_string(),
            (latest.version() + 1).to_string(),
        );
    }
    let protocol = protocol_without(config.protocol(), feature, &added);
    let mut transaction = latest
        .transaction("DROP FEATURE")
        .with_operation_parameter("featureName", feature.name())
        .with_operation_parameter("truncateHistory", how == Downgrade::TruncatedHistory);
    transaction.record_read_whole_table();
    if *feature == TableFeature::RowTracking {
        transaction.remove_any_domain(ROW_TRACKING_DOMAIN);
    }
    transaction.downgrade(protocol, metadata);
    transaction.commit().await
}

/// Commits nothing but `commitInfo` (`Empty Commit`, as Spark) and checkpoints the version
/// it made.
async fn empty_commit_and_checkpoint(storage: &Storage) -> Result<()> {
    let latest = latest(storage).await?;
    let committed = latest.transaction("Empty Commit").commit().await?;
    let snapshot = latest.refresh_to(committed.version).await?;
    write_checkpoint(&snapshot, &CheckpointOptions::default()).await?;
    Ok(())
}

/// Deletes the history `delta.dropFeatureTruncateHistory.retentionDuration` lets go, then
/// refuses when what is left still holds traces of `feature`.
async fn clean_history(latest: &Snapshot, feature: &TableFeature) -> Result<()> {
    let config = latest.table_configuration();
    truncate_history(latest.storage(), config, latest.version(), now_ms()).await?;
    if history::holds_traces(latest, feature).await? {
        let retention = config.properties().drop_feature_truncate_history_retention;
        return Err(Error::NotAllowed(format!(
            "the history of {} still holds traces of {} within the last {} hours of \
             delta.dropFeatureTruncateHistory.retentionDuration: run the drop again once they \
             are older (Delta on Spark's DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST)",
            latest.table_uri(),
            feature.name(),
            retention.as_secs() / 3600
        )));
    }
    Ok(())
}

/// The error of a truncating drop whose trace removal just committed: the history holds those
/// traces until the retention passes.
async fn wait_for_retention(storage: &Storage, feature: &TableFeature) -> Result<Error> {
    let latest = latest(storage).await?;
    let retention = latest
        .table_configuration()
        .properties()
        .drop_feature_truncate_history_retention;
    Ok(Error::NotAllowed(format!(
        "the traces of {} are removed from the latest version of {}; the history before it \
         still holds them: run drop_feature with truncate_history again in {} hours \
         (delta.dropFeatureTruncateHistory.retentionDuration) to drop it (Delta on Spark's \
         DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD)",
        feature.name(),
        latest.table_uri(),
        retention.as_secs() / 3600
    )))
}

async fn latest(storage: &Storage) -> Result<Snapshot> {
    Snapshot::load(storage, SnapshotAt::Latest).await
}
#[cfg(test)]
mod tests;
