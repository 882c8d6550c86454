//! RESTORE: a new commit whose state equals that of an earlier version, as Delta on Spark's
//! `RestoreTableCommand` does.
//!
//! Files are matched by path and deletion vector id. The commit adds, with `dataChange=true`
//! and the statistics, deletion vector and row tracking fields they had, the files live at
//! the restored version but not now, and removes the files live now but not then. The
//! metadata becomes the restored version's (schema, partitioning, properties, name and
//! description); the protocol is the union of the current and the restored one, never a
//! downgrade (time travel to the versions in between must keep working). User metadata
//! domains are set back to the restored version's; system domains (`delta.*`) are left
//! alone. Set-transaction (`txn`) versions are not restored, as in Spark.
//!
//! Before anything is written every file to add is checked to exist: when VACUUM (or a
//! hand) deleted one, the restore is refused with [`Error::MissingDataFiles`] naming them.
//! The commit reads the whole table under `Serializable` isolation: any concurrent commit
//! that changes data makes it fail rather than silently undo that change.
//!
//! A dry run ([`RestoreOptions::dry_run`]) makes every check and stages the commit, then
//! returns the metrics without committing.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::compute::filter;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, StructArray};
use futures::StreamExt;
use serde_json::Value;

use crate::actions::deletion_vector::{resolve as resolve_dv, DvLocation};
use crate::actions::layout::{add, in_add_layout};
use crate::error::{Error, Result};
use crate::ops::commands::vacuum::descriptor;
use crate::replay::load::load_segment;
use crate::replay::reconcile::FileKeys;
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::table_config::features::{reader_features, writer_features};
use crate::table_config::properties::IsolationLevel;
use crate::table_config::writing::upgrade_protocol;
use crate::transaction::{MetadataUpdate, Transaction, DATA_WRITER_FEATURES};

/// How many missing files a [`Error::MissingDataFiles`] names at most (as Spark).
const MAX_MISSING_NAMED: usize = 100;

/// The options of [`restore_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Make every check the restore makes (the versions, the files to add still exist, the
    /// table is writable, the commit can be staged) and return its metrics, committing
    /// nothing ([`RestoreResult::version`] is `None`). Default false.
    pub dry_run: bool,
}

/// What [`restore`] did (or with [`RestoreOptions::dry_run`] would do), with the metrics
/// Spark records (`commitInfo.operationMetrics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreResult {
    /// The version committed; `None` when nothing was: a dry run, or a restore to the latest
    /// version (which Delta on Spark 4.4 accepts as a no-op).
    pub version: Option<u64>,
    /// The version whose state was restored.
    pub restored_version: u64,
    pub table_size_after_restore: u64,
    pub num_of_files_after_restore: u64,
    pub num_removed_files: u64,
    pub num_restored_files: u64,
    pub removed_files_size: u64,
    pub restored_files_size: u64,
}

/// Restores `table` to the version `at` names ([`SnapshotAt::Version`], or the newest version
/// committed at or before a [`SnapshotAt::Timestamp`]); see the module documentation.
///
/// Restoring the latest version itself commits nothing and returns zero changes, as Delta on
/// Spark 4.4 does.
///
/// Errors: [`Error::InvalidArgument`] for [`SnapshotAt::Latest`] or a version newer than the
/// latest; [`Error::VersionNotFound`] / [`Error::TimestampNotFound`] when the
/// version cannot be loaded; [`Error::MissingDataFiles`] when files it needs are gone;
/// [`Error::UnsupportedFeature`] for a table this library cannot write; commit conflicts.
pub async fn restore(storage: &Storage, at: SnapshotAt) -> Result<RestoreResult> {
    restore_with(storage, at, &RestoreOptions::default()).await
}

/// [`restore`] with `options`: with [`RestoreOptions::dry_run`], every check and no commit.
/// The errors are those of [`restore`].
pub async fn restore_with(
    storage: &Storage,
    at: SnapshotAt,
    options: &RestoreOptions,
) -> Result<RestoreResult> {
    let (version, timestamp) = match at {
        SnapshotAt::Version(version) => (version, None),
        SnapshotAt::Timestamp(ms) => (crate::log::version_at(storage, ms).await?, Some(ms)),
        SnapshotAt::Latest => {
            return Err(Error::InvalidArgument(
                "RESTORE needs a version or a timestamp".into(),
            ))
        }
    };
    let latest = Snapshot::load(storage, SnapshotAt::Latest).await?;
    if version > latest.version() {
        return Err(Error::InvalidArgument(format!(
            "the version to restore ({version}) is newer than the latest version ({}) of {}",
            latest.version(),
            storage.uri()
        )));
    }
    latest.table_configuration().ensure_writable(false, &[])?;
    if version == latest.version() {
        return Ok(RestoreResult {
            version: None,
            restored_version: version,
            table_size_after_restore: u64::try_from(latest.total_size().await?).unwrap_or(0),
            num_of_files_after_restore: latest.num_files().await? as u64,
            ..RestoreResult::default()
        });
    }
    let old = Snapshot::load(storage, SnapshotAt::Version(version)).await?;
    let segment = crate::log::locate_segment(storage, Some(version)).await?;
    let old_state = load_segment(storage, storage.uri(), &segment, true, None).await?;
    let keys = FileKeys::new(storage.root_url());
    let current_keys = file_keys(latest.add_actions().await?, &keys);
    let old_keys = file_keys(&old_state.files.adds, &keys);
    let to_add = select_missing(&old_state.files.adds, &keys, &current_keys)?;
    let to_remove = select_missing(latest.add_actions().await?, &keys, &old_keys)?;
    check_files_exist(storage, version, &to_add).await?;
    check_row_counts(&to_add)?;
    let metrics = RestoreResult {
        version: None,
        restored_version: version,
        table_size_after_restore: u64::try_from(old.total_size().await?).unwrap_or(0),
        num_of_files_after_restore: old.num_files().await? as u64,
        num_removed_files: rows(&to_remove),
        num_restored_files: rows(&to_add),
        removed_files_size: total_size(&to_remove),
        restored_files_size: total_size(&to_add),
    };
    let transaction = restore_transaction(&latest, &old, version, timestamp, &metrics)?;
    let transaction = stage_files(transaction, &to_add, &to_remove)?;
    if options.dry_run {
        transaction.check()?;
        return Ok(metrics);
    }
    let committed = transaction.commit().await?;
    Ok(RestoreResult {
        version: Some(committed.version),
        ..metrics
    })
}

/// The `RESTORE` transaction with the old metadata, the merged protocol, the old user domains,
/// Spark's parameters and metrics; no files yet.
/// Refuses to bring back a file with a deletion vector whose add has no `numRecords`
/// (catalogue E2-12: the log lost it when a checkpoint was written without statistics), as
/// Delta on Spark refuses (`DELTA_DELETION_VECTOR_MISSING_NUM_RECORDS`).
fn check_row_counts(to_add: &[StructArray]) -> Result<()> {
    let Some(path) = crate::transaction::vector_without_records(to_add) else {
        return Ok(());
    };
    Err(Error::NotAllowed(format!(
        "{path} would be added with a deletion vector but without numRecords in its \
         statistics, which the protocol requires (spec \"Deletion Vectors\"; Delta on Spark's \
         DELTA_DELETION_VECTOR_MISSING_NUM_RECORDS): the log kept no statistics for it \
         (checkpoints written with delta.checkpoint.writeStatsAsJson and writeStatsAsStruct \
         false lose them)"
    )))
}

fn restore_transaction(
    latest: &Snapshot,
    old: &Snapshot,
    version: u64,
    timestamp: Option<i64>,
    metrics: &RestoreResult,
) -> Result<Transaction> {
    let timestamp = timestamp.map(|ms| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
            .unwrap_or_else(|| ms.to_string())
    });
    // The files brought back were written under the table's rules (column mapping,
    // constraints, generated columns, ...) when they were first added; RESTORE checks no row
    // again, as Delta on Spark's does not.
    let mut transaction = latest
        .transaction("RESTORE")
        .with_data_writer_features(DATA_WRITER_FEATURES.to_vec())
        .with_isolation_level(IsolationLevel::Serializable)
        .with_operation_parameter(
            "version",
            match timestamp {
                None => Value::from(version),
                Some(_) => Value::Null,
            },
        )
        .with_operation_parameter("timestamp", timestamp.map_or(Value::Null, Value::from))
        .with_operation_metric(
            "tableSizeAfterRestore",
            metrics.table_size_after_restore.to_string(),
        )
        .with_operation_metric(
            "numOfFilesAfterRestore",
            metrics.num_of_files_after_restore.to_string(),
        )
        .with_operation_metric("numRemovedFiles", metrics.num_removed_files.to_string())
        .with_operation_metric("numRestoredFiles", metrics.num_restored_files.to_string())
        .with_operation_metric("removedFilesSize", metrics.removed_files_size.to_string())
        .with_operation_metric("restoredFilesSize", metrics.restored_files_size.to_string());
    transaction.record_read_whole_table();
    stage_old_metadata(&mut transaction, latest, old)?;
    stage_old_domains(&mut transaction, latest, old)?;
    Ok(transaction)
}

/// Stages the metadata of `old` and the union of both protocols.
fn stage_old_metadata(
    transaction: &mut Transaction,
    latest: &Snapshot,
    old: &Snapshot,
) -> Result<()> {
    let (now, then) = (latest.metadata(), old.metadata());
    let mut configuration: Vec<(String, Option<String>)> = then
        .configuration
        .iter()
        .map(|(key, value)| (key.clone(), Some(value.clone())))
        .collect();
    configuration.extend(
        now.configuration
            .keys()
            .filter(|key| !then.configuration.contains_key(*key))
            .map(|key| (key.clone(), None)),
    );
    let update = MetadataUpdate {
        schema: Some(old.schema().clone()),
        configuration,
        name: then.name.clone(),
        description: then.description.clone(),
    };
    transaction.replace_metadata(update, then.partition_columns.clone())?;
    let staged = transaction.configuration()?;
    let old_protocol = old.protocol();
    let mut features = writer_features(old_protocol);
    features.extend(reader_features(old_protocol));
    let mut merged = upgrade_protocol(staged.protocol(), &features);
    merged.min_reader_version = merged
        .min_reader_version
        .max(old_protocol.min_reader_version);
    merged.min_writer_version = merged
        .min_writer_version
        .max(old_protocol.min_writer_version);
    if &merged != staged.protocol() {
        transaction.update_protocol(merged)?;
    }
    Ok(())
}

/// Sets the user metadata domains back to those of `old`.
fn stage_old_domains(
    transaction: &mut Transaction,
    latest: &Snapshot,
    old: &Snapshot,
) -> Result<()> {
    let (now, then) = (latest.domains(), old.domains());
    let user = |domain: &String| !domain.starts_with("delta.");
    for (domain, configuration) in then.iter().filter(|(d, _)| user(d)) {
        if now.get(domain) != Some(configuration) {
            transaction.set_domain_metadata(domain, Some(configuration.clone()))?;
        }
    }
    for domain in now.keys().filter(|d| user(d) && !then.contains_key(*d)) {
        transaction.set_domain_metadata(domain, None)?;
    }
    Ok(())
}

/// Stages the adds (`dataChange=true`) and the removes.
fn stage_files(
    mut transaction: Transaction,
    to_add: &[StructArray],
    to_remove: &[StructArray],
) -> Result<Transaction> {
    for adds in to_add {
        let adds = as_data_change_adds(adds).ok_or_else(|| {
            Error::internal(
                transaction.storage().uri(),
                "the files to restore must be rows of the add layout (action_schema::add_fields)",
            )
        })?;
        transaction.add_files(adds)?;
    }
    for removes in to_remove {
        transaction.remove_files(removes, true)?;
    }
    Ok(transaction)
}

/// `adds` (a snapshot's rows) in exactly the add layout, with `dataChange` true; `None` when
/// they are not of the add layout (a broken invariant of ours).
fn as_data_change_adds(adds: &StructArray) -> Option<StructArray> {
    let adds = in_add_layout(adds)?;
    let (fields, mut columns, nulls) = adds.into_parts();
    let index = fields.iter().position(|f| f.name() == add::DATA_CHANGE)?;
    columns[index] = Arc::new(BooleanArray::from(vec![true; columns[index].len()]));
    StructArray::try_new(fields, columns, nulls).ok()
}

/// The (path, deletion vector id) keys of the valid rows of `batches`.
fn file_keys(batches: &[StructArray], keys: &FileKeys) -> HashSet<String> {
    batches
        .iter()
        .flat_map(|batch| (0..batch.len()).filter_map(move |row| row_key(batch, row, keys)))
        .collect()
}

/// The rows of `batches` whose key is not in `present`.
fn select_missing(
    batches: &[StructArray],
    keys: &FileKeys,
    present: &HashSet<String>,
) -> Result<Vec<StructArray>> {
    let mut selected = Vec::new();
    for batch in batches {
        let mask: BooleanArray = (0..batch.len())
            .map(|row| Some(row_key(batch, row, keys).is_some_and(|key| !present.contains(&key))))
            .collect();
        if mask.true_count() > 0 {
            let kept = filter(batch, &mask).map_err(|e| Error::arrow("selecting files", e))?;
            selected.push(kept.as_struct().clone());
        }
    }
    Ok(selected)
}

fn row_key(batch: &StructArray, row: usize, keys: &FileKeys) -> Option<String> {
    if !batch.is_valid(row) {
        return None;
    }
    let path = batch
        .column_by_name(add::PATH)
        .and_then(|c| c.as_string_opt::<i32>())
        .filter(|c| c.is_valid(row))?
        .value(row);
    let mut key = keys.canonical(path).into_owned();
    if let Some(dv) = batch
        .column_by_name(add::DELETION_VECTOR)
        .and_then(|c| c.as_struct_opt())
        .filter(|dv| dv.is_valid(row))
    {
        let text = |name: &str| {
            dv.column_by_name(name)
                .and_then(|c| c.as_string_opt::<i32>())
                .filter(|c| c.is_valid(row))
                .map(|c| c.value(row).to_string())
                .unwrap_or_default()
        };
        let offset = dv
            .column_by_name("offset")
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int32Type>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row));
        key.push('\u{0}');
        key.push_str(&crate::actions::unique_dv_id(
            &text("storageType"),
            &text("pathOrInlineDv"),
            offset,
        ));
    }
    Some(key)
}

/// Refuses the restore when a file of `to_add`, or the file of its deletion vector, no
/// longer exists (a vacuum removed it): the restored version could not be read. Delta on
/// Spark checks the data files only; a deletion vector file gone makes the restore as
/// unreadable (differential seed 1002).
async fn check_files_exist(storage: &Storage, version: u64, to_add: &[StructArray]) -> Result<()> {
    let mut paths: Vec<String> = Vec::new();
    // Many files share one deletion vector file: check each once.
    let mut vector_files = std::collections::BTreeSet::new();
    for batch in to_add {
        let column = batch
            .column_by_name(add::PATH)
            .and_then(|c| c.as_string_opt::<i32>());
        let vectors = batch
            .column_by_name(add::DELETION_VECTOR)
            .and_then(|c| c.as_struct_opt());
        for row in (0..batch.len()).filter(|row| batch.is_valid(*row)) {
            if let Some(column) = column {
                paths.push(column.value(row).to_string());
            }
            let vector = vectors.and_then(|dvs| descriptor(dvs, row));
            if let Some(DvLocation::File { url, .. }) =
                vector.and_then(|dv| resolve_dv(&dv, storage.root_url()).ok())
            {
                vector_files.insert(url.to_string());
            }
        }
    }
    paths.extend(vector_files);
    let checks = futures::stream::iter(paths)
        .map(|path| async move {
            let exists = storage.exists(&path).await;
            (path, exists)
        })
        .buffered(storage.io().concurrent_reads.max(1))
        .collect::<Vec<_>>()
        .await;
    let mut missing = Vec::new();
    for (path, exists) in checks {
        if !exists? {
            missing.push(path);
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    missing.truncate(MAX_MISSING_NAMED);
    Err(Error::MissingDataFiles {
        table: storage.uri().to_string(),
        version,
        paths: missing,
    })
}

fn rows(batches: &[StructArray]) -> u64 {
    batches
        .iter()
        .map(|b| (b.len() - b.null_count()) as u64)
        .sum()
}

fn total_size(batches: &[StructArray]) -> u64 {
    batches
        .iter()
        .filter_map(|b| {
            b.column_by_name(add::SIZE)?
                .as_primitive_opt::<Int64Type>()
                .cloned()
        })
        .map(|sizes| {
            sizes
                .iter()
                .flatten()
                .map(|s| u64::try_from(s).unwrap_or(0))
                .sum::<u64>()
        })
        .sum()
}
