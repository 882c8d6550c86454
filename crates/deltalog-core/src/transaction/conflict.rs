//! Conflict checks against the commits that won the race for a version (reliability notes
//! §1.3, after Delta on Spark's `ConflictChecker`).
//!
//! Each rule is one function over the losing transaction ([`Current`]) and one winning
//! commit ([`Winner`]); [`RULES`] runs them in the reference order. A rule either fails with
//! an [`Error::CommitConflict`] of its [`ConflictKind`] or moves the [`Rebase`] state on
//! (row-id high-water mark, last commit timestamp), from which the next attempt's commit is
//! rebuilt: the transaction's data files are never rewritten.
//!
//! Simplifications, all on the safe side: any winning `protocol` that differs from the one
//! read, and any winning `metaData`, is a conflict (Spark adopts some of them).

use std::collections::HashSet;

use arrow::compute::filter;
use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, StructArray};

use crate::actions::layout::add;
use crate::actions::Protocol;
use crate::error::{ConflictKind, Error, Result};
use crate::expr::{files_may_match, partition_only, Expr};
use crate::log::decode::commit::DecodedActions;
use crate::replay::file_list::{active_files, file_list_stats, FileListOptions};
use crate::replay::reconcile::FileKeys;
use crate::snapshot::Snapshot;
use crate::table_config::properties::IsolationLevel;

/// The domain of the row-id high-water mark (spec "Row Tracking").
pub(crate) const ROW_TRACKING_DOMAIN: &str = "delta.rowTracking";

/// The `commitInfo` tag of a commit whose only metadata change is identity high-water marks
/// (Delta on Spark's `DeltaSourceUtils.IDENTITY_COMMITINFO_TAG`).
pub(crate) const IDENTITY_SCHEMA_UPDATE_TAG: &str = "delta.identity.schemaUpdate";

/// What the losing transaction read and writes, as the rules need it.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Current<'a> {
    /// The table, for messages.
    pub table: &'a str,
    /// The snapshot read, when there is one (partition values of winning adds are typed
    /// with its schema).
    pub snapshot: Option<&'a Snapshot>,
    /// The protocol read (`None` when creating the table).
    pub read_protocol: Option<&'a Protocol>,
    /// The isolation level in force, after the snapshot-isolation downgrade.
    pub isolation: IsolationLevel,
    /// Predicates over the partition columns of what was read.
    pub read_predicates: &'a [Expr],
    /// The canonical paths of the files read.
    pub read_files: &'a HashSet<String>,
    pub read_whole_table: bool,
    /// The application ids whose `txn` version was read, or is written.
    pub app_ids: &'a HashSet<String>,
    /// The metadata domains written (the row-tracking domain excepted).
    pub domains: &'a HashSet<String>,
    /// The canonical paths of the files removed.
    pub removed_files: &'a HashSet<String>,
    pub writes_metadata: bool,
    pub writes_protocol: bool,
    pub keys: &'a FileKeys,
}

/// One winning commit, decoded once.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Winner<'a> {
    pub version: u64,
    pub actions: &'a DecodedActions,
    /// Its commit timestamp: the in-commit timestamp, else the file's monotonic time.
    pub timestamp_ms: i64,
}

/// What rebasing on the winners changes in the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Rebase {
    /// The highest row id assigned so far (`-1`: none).
    pub row_id_high_water_mark: i64,
    /// The newest commit timestamp seen, which an in-commit timestamp must exceed.
    pub last_commit_timestamp: Option<i64>,
}

/// A conflict rule.
pub(crate) type Rule = fn(&Current<'_>, &Winner<'_>, &mut Rebase) -> Result<()>;

/// The rules, in the order of the reference implementation.
pub(crate) const RULES: &[(&str, Rule)] = &[
    ("protocol", check_protocol),
    ("metadata", check_metadata),
    ("domain metadata", check_domains),
    ("application transactions", check_app_ids),
    ("row-id high-water mark", rebase_row_ids),
    ("concurrent append", check_appends),
    ("delete against read", check_delete_read),
    ("delete against delete", check_delete_delete),
    ("in-commit timestamp", rebase_timestamp),
];

/// Runs every rule of [`RULES`] for `winner`, in order.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn check_winner(
    current: &Current<'_>,
    winner: &Winner<'_>,
    rebase: &mut Rebase,
) -> Result<()> {
    for (_, rule) in RULES {
        rule(current, winner, rebase)?;
    }
    Ok(())
}

/// The row-id high-water mark of a `delta.rowTracking` domain configuration
/// (`{"rowIdHighWaterMark": n}`, as Delta on Spark writes it; `highWaterMark` as the spec
/// names it).
pub(crate) fn high_water_mark(configuration: &str) -> Option<i64> {
    let value: serde_json::Value = serde_json::from_str(configuration).ok()?;
    value
        .get("rowIdHighWaterMark")
        .or_else(|| value.get("highWaterMark"))?
        .as_i64()
}

/// #1: a winning `protocol` conflicts when this transaction also changes the protocol or
/// when it differs from the protocol read.
pub(crate) fn check_protocol(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    let Some(protocol) = &winner.actions.protocol else {
        return Ok(());
    };
    if current.writes_protocol || current.read_protocol != Some(protocol) {
        return Err(conflict(
            current,
            winner,
            ConflictKind::ProtocolChanged,
            "the protocol was changed by a concurrent commit (or the table was created concurrently)",
        ));
    }
    Ok(())
}

/// #2: a winning `metaData` conflicts, unless it only moved identity high-water marks (the
/// commit is tagged [`IDENTITY_SCHEMA_UPDATE_TAG`]) and this transaction changes no
/// metadata, as Delta on Spark's `checkNoMetadataUpdates` tolerates it.
pub(crate) fn check_metadata(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    if winner.actions.metadata.is_none() {
        return Ok(());
    }
    if !current.writes_metadata && identity_only_metadata_update(winner) {
        return Ok(());
    }
    Err(conflict(
        current,
        winner,
        ConflictKind::MetadataChanged,
        "the metadata (schema, partitioning or properties) was changed by a concurrent commit",
    ))
}

/// Whether the winner's `commitInfo` says its metadata change only moved identity
/// high-water marks.
fn identity_only_metadata_update(winner: &Winner<'_>) -> bool {
    let Some(info) = &winner.actions.commit_info else {
        return false;
    };
    let tag = info
        .raw
        .get("tags")
        .and_then(|tags| tags.get(IDENTITY_SCHEMA_UPDATE_TAG));
    match tag {
        Some(serde_json::Value::String(text)) => text.eq_ignore_ascii_case("true"),
        Some(serde_json::Value::Bool(flag)) => *flag,
        _ => false,
    }
}

/// #3: a domain this transaction writes was also written by the winner (the row-tracking
/// domain excepted: its high-water mark is rebased).
pub(crate) fn check_domains(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    let clash = winner.actions.domains.iter().find(|domain| {
        domain.domain != ROW_TRACKING_DOMAIN && current.domains.contains(&domain.domain)
    });
    match clash {
        Some(domain) => Err(conflict(
            current,
            winner,
            ConflictKind::ConcurrentTransaction,
            &format!("a conflicting metadata domain {} was added", domain.domain),
        )),
        None => Ok(()),
    }
}

/// #4: the winner wrote a `txn` of an application id this transaction read or writes.
pub(crate) fn check_app_ids(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    match winner
        .actions
        .txns
        .iter()
        .find(|txn| current.app_ids.contains(&txn.app_id))
    {
        Some(txn) => Err(conflict(
            current,
            winner,
            ConflictKind::ConcurrentTransaction,
            &format!(
                "application {} committed version {} concurrently",
                txn.app_id, txn.version
            ),
        )),
        None => Ok(()),
    }
}

/// #6: the winner's row-id high-water mark becomes the one fresh row ids start after.
pub(crate) fn rebase_row_ids(
    _: &Current<'_>,
    winner: &Winner<'_>,
    rebase: &mut Rebase,
) -> Result<()> {
    for domain in &winner.actions.domains {
        if domain.domain == ROW_TRACKING_DOMAIN && !domain.removed {
            if let Some(mark) = high_water_mark(&domain.configuration) {
                rebase.row_id_high_water_mark = rebase.row_id_high_water_mark.max(mark);
            }
        }
    }
    Ok(())
}

/// #8: files the winner added that match what this transaction read. Which added files count
/// depends on the isolation level: all data-changing adds under `Serializable`; under
/// `WriteSerializable` those of a winner that is not a blind append, or all when this
/// transaction changes the metadata; none under `SnapshotIsolation`. A transaction that read
/// nothing (a blind append) never conflicts; one that read the whole table conflicts with
/// any such file; otherwise the partition part of each read predicate is matched against
/// the files' partition values (a predicate without one reads the whole table).
pub(crate) fn check_appends(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    let counted = match current.isolation {
        IsolationLevel::SnapshotIsolation => false,
        IsolationLevel::Serializable => true,
        IsolationLevel::WriteSerializable => current.writes_metadata || !is_blind_append(winner),
    };
    let reads = current.read_whole_table || !current.read_predicates.is_empty();
    if !counted || !reads {
        return Ok(());
    }
    for batch in &winner.actions.file_actions {
        let added = data_changing(&batch.adds)?;
        if added.is_empty() {
            continue;
        }
        if let Some(path) = first_matching(current, &added)? {
            return Err(conflict(
                current,
                winner,
                ConflictKind::ConcurrentAppend,
                &format!("files were added that this transaction should have read: {path}"),
            ));
        }
    }
    Ok(())
}

/// #9: the winner removed a file this transaction read, or removed any file when this
/// transaction read the whole table.
pub(crate) fn check_delete_read(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    for path in removed_paths(winner) {
        let key = current.keys.canonical(path);
        if current.read_whole_table || current.read_files.contains(key.as_ref()) {
            return Err(conflict(
                current,
                winner,
                ConflictKind::ConcurrentDeleteRead,
                &format!("a file this transaction read was removed: {key}"),
            ));
        }
    }
    Ok(())
}

/// #10: the winner removed a file this transaction removes too.
pub(crate) fn check_delete_delete(
    current: &Current<'_>,
    winner: &Winner<'_>,
    _: &mut Rebase,
) -> Result<()> {
    for path in removed_paths(winner) {
        let key = current.keys.canonical(path);
        if current.removed_files.contains(key.as_ref()) {
            return Err(conflict(
                current,
                winner,
                ConflictKind::ConcurrentDeleteDelete,
                &format!("a file this transaction removes was removed concurrently: {key}"),
            ));
        }
    }
    Ok(())
}

/// #11: the next in-commit timestamp must exceed the winner's commit timestamp.
pub(crate) fn rebase_timestamp(
    _: &Current<'_>,
    winner: &Winner<'_>,
    rebase: &mut Rebase,
) -> Result<()> {
    let last = rebase.last_commit_timestamp.unwrap_or(i64::MIN);
    rebase.last_commit_timestamp = Some(last.max(winner.timestamp_ms));
    Ok(())
}

fn conflict(current: &Current<'_>, winner: &Winner<'_>, kind: ConflictKind, reason: &str) -> Error {
    Error::CommitConflict {
        kind,
        version: winner.version,
        table: current.table.to_string(),
        reason: reason.to_string(),
    }
}

/// True when the winner's `commitInfo.isBlindAppend` is `true`.
fn is_blind_append(winner: &Winner<'_>) -> bool {
    let info = winner.actions.commit_info.as_ref();
    info.and_then(|info| info.raw.get("isBlindAppend"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// The valid rows of `adds` whose `dataChange` is not `false`.
fn data_changing(adds: &StructArray) -> Result<StructArray> {
    let changes = adds
        .column_by_name(add::DATA_CHANGE)
        .and_then(|c| c.as_boolean_opt());
    let mask: BooleanArray = (0..adds.len())
        .map(|row| {
            let change = changes.is_none_or(|c| c.is_null(row) || c.value(row));
            Some(adds.is_valid(row) && change)
        })
        .collect();
    let kept = filter(adds, &mask).map_err(|error| Error::arrow("winning adds", error))?;
    Ok(kept.as_struct().clone())
}

/// The path of the first of `added` that may match the current transaction's reads.
fn first_matching(current: &Current<'_>, added: &StructArray) -> Result<Option<String>> {
    let first_path = |mask: Option<&BooleanArray>| {
        let paths = added.column_by_name(add::PATH)?.as_string_opt::<i32>()?;
        let row = match mask {
            Some(mask) => (0..mask.len()).find(|row| mask.is_valid(*row) && mask.value(*row))?,
            None => 0,
        };
        Some(current.keys.canonical(paths.value(row)).into_owned())
    };
    let Some(snapshot) = current.snapshot.filter(|_| !current.read_whole_table) else {
        return Ok(first_path(None));
    };
    let (_, files) = active_files(
        snapshot.table_configuration(),
        std::slice::from_ref(added),
        &FileListOptions::default(),
    )?;
    let partition_columns = snapshot.partition_columns();
    for predicate in current.read_predicates {
        let Some(partition_predicate) = partition_only(predicate, partition_columns) else {
            return Ok(first_path(None));
        };
        for batch in &files {
            let may_match = files_may_match(&partition_predicate, &file_list_stats(batch)?)?;
            if may_match.true_count() > 0 {
                return Ok(first_path(Some(&may_match)));
            }
        }
    }
    Ok(None)
}

/// The paths (as written) of the files the winner removed.
fn removed_paths<'a>(winner: &Winner<'a>) -> impl Iterator<Item = &'a str> {
    winner.actions.file_actions.iter().flat_map(|batch| {
        let removes = &batch.removes;
        let paths = removes
            .column_by_name(add::PATH)
            .and_then(|c| c.as_string_opt::<i32>());
        (0..removes.len()).filter_map(move |row| {
            let paths = paths?;
            (removes.is_valid(row) && paths.is_valid(row)).then(|| paths.value(row))
        })
    })
}
