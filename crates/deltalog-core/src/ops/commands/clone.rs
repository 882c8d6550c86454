//! SHALLOW CLONE: a new table (or an empty one replaced) whose one commit references the data
//! files of a version of another table where they are, as Delta on Spark's
//! `CloneTableCommand` does for a Delta source (`DeltaTable.clone`, `cloneAtVersion`,
//! `cloneAtTimestamp`, `CREATE TABLE ... SHALLOW CLONE`).
//!
//! The commit at the target (version 0 of a new table) holds:
//!
//! - the source's protocol, merged with the target's when the target existed (never a
//!   downgrade) and with what the property overrides need (spec "Protocol Evolution");
//! - the source's metadata (schema, partition columns, creation time, configuration with the
//!   overrides on top), under a new table id, or the replaced table's id, and with the
//!   target's name and description (spec "Change Metadata");
//! - every live `add` of the source version with an absolute path: the source root joined
//!   with the relative path (spec "Add File and Remove File": paths may be absolute URIs),
//!   `dataChange` true, statistics, tags and deletion vectors kept. A deletion vector stored
//!   relative to the source (`u`, or a relative `p`) becomes an absolute `p` (spec "Deletion
//!   Vector Descriptor Schema"); `baseRowId` and `defaultRowCommitVersion` are dropped so
//!   that the target assigns its own, and the materialized row tracking columns get new names
//!   (spec "Row Tracking");
//! - the source's `delta.clustering` domain, the one domain Delta on Spark copies
//!   (`DomainMetadataUtils.handleDomainMetadataForCloneTable`); a replaced target's clustering
//!   domain is removed when the source has none (spec "Domain Metadata");
//! - `commitInfo` with operation `CLONE`, parameters `source` and `sourceVersion` and Spark's
//!   metrics (`sourceTableSize`, `sourceNumOfFiles`, and `numRemovedFiles`,
//!   `numCopiedFiles`, `removedFilesSize`, `copiedFilesSize`, always 0 for a shallow clone).
//!
//! No data file is copied or written; the target's VACUUM never deletes the source's files,
//! which are outside the target's root. The source keeps no trace of the clone.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, StringArray, StructArray};
use futures::StreamExt;
use url::Url;

use crate::actions::deletion_vector::{resolve as resolve_dv, DvLocation};
use crate::actions::layout::{add, in_add_layout};
use crate::actions::{Metadata, Protocol};
use crate::error::{Error, Result};
use crate::ops::commands::vacuum::descriptor;
use crate::schema::ColumnMappingMode;
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::clustering::CLUSTERING_DOMAIN;
use crate::table_config::features::{reader_features, writer_features};
use crate::table_config::properties::{
    column_mapping_mode, ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
    ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME,
};
use crate::table_config::user_properties::checked_new_table_configuration;
use crate::table_config::writing::upgrade_protocol;
use crate::transaction::{
    CommitResult, MetadataUpdate, TableSpec, Transaction, DATA_WRITER_FEATURES,
};

/// The `commitInfo.operation` of a clone (Delta on Spark's `DeltaOperations.OP_CLONE`).
pub const CLONE_OPERATION: &str = "CLONE";

/// Configuration keys a clone never copies from its source (Delta on Spark's
/// `prepareSourceMetadata`): the coordinated-commits settings and a catalog-owned table's
/// Unity Catalog id belong to the source table alone.
const NOT_COPIED_PREFIXES: [&str; 2] = ["delta.coordinatedCommits.", "io.unitycatalog.tableId"];

/// The names of the materialized row tracking columns, which the target gets anew (as Delta
/// on Spark's clone does): row ids the source materialized in its files under its names are
/// then not the target's, whose row ids start again from the `baseRowId`s it assigns.
const RENAMED_KEYS: [&str; 2] = [
    ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME,
    ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
];

/// The options of [`shallow_clone`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneOptions {
    /// Clone over a Delta table that exists at the target (`replace=True` of delta-spark's
    /// `DeltaTable.clone`); it must hold no live file, as Delta on Spark requires
    /// (`DELTA_UNSUPPORTED_NON_EMPTY_CLONE`). Default false: an existing target is refused.
    pub replace: bool,
    /// Table properties set on the target over the source's (`properties` of
    /// `DeltaTable.clone`), checked as `CREATE TABLE ... TBLPROPERTIES` checks them;
    /// `delta.feature.<name>` and the protocol versions act on the protocol. The column
    /// mapping mode cannot change.
    pub properties: HashMap<String, String>,
}

/// Shallow-clones the version of the table at `source` that `at` names (the latest,
/// [`SnapshotAt::Version`], or the newest version committed at or before a
/// [`SnapshotAt::Timestamp`]) to `target`, in one commit (see the module documentation).
/// Returns that commit, whose snapshot is the target's new version.
///
/// Errors, with nothing committed: [`Error::TableNotFound`], [`Error::VersionNotFound`] or
/// [`Error::TimestampNotFound`] for the source; [`Error::NotAllowed`] when a Delta table
/// exists at `target` and `replace` is false, or other files are there (Delta on Spark's
/// `DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION`), when the replaced target has live files
/// (`DELTA_UNSUPPORTED_NON_EMPTY_CLONE`), when the properties change the column mapping mode
/// (`DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE`) or set `delta.columnMapping.maxColumnId`;
/// [`Error::InvalidArgument`] when the target is the source, is inside it or holds it, is in
/// another store (its files could not be read through the target's), or a property is
/// unknown or has a bad value; [`Error::UnsupportedFeature`] when the source or the replaced
/// target uses a feature this library cannot write; commit conflicts (another writer
/// created the target first: [`Error::CommitConflict`]).
pub async fn shallow_clone(
    source: &Storage,
    at: SnapshotAt,
    target: &Storage,
    options: &CloneOptions,
) -> Result<CommitResult> {
    check_locations(source, target)?;
    let snapshot = Snapshot::load(source, at).await?;
    let overrides = checked_new_table_configuration(target.uri(), options.properties.clone())?;
    let existing = match crate::log::has_log_files(target).await? {
        false => {
            check_empty(target, options.replace).await?;
            None
        }
        true if !options.replace => {
            return Err(Error::NotAllowed(format!(
                "a Delta table already exists at {}: clone with replace=True to replace it \
                 (Delta on Spark's DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION)",
                target.uri()
            )))
        }
        true => Some(replaced_target(target).await?),
    };
    let metadata = cloned_metadata(&snapshot, existing.as_ref());
    check_column_mapping(&snapshot, existing.as_ref(), &metadata, &overrides, target)?;
    let protocol = cloned_protocol(snapshot.protocol(), existing.as_ref());
    let mut transaction = match &existing {
        Some(replaced) => {
            let mut transaction = replaced.transaction(CLONE_OPERATION);
            transaction.record_read_whole_table();
            transaction
        }
        None => new_table_transaction(target, &snapshot).await?,
    };
    transaction.clear_operation_parameters();
    transaction.add_data_writer_features(&DATA_WRITER_FEATURES);
    transaction.downgrade(protocol, metadata);
    transaction.update_metadata(MetadataUpdate {
        configuration: overrides
            .into_iter()
            .map(|(key, value)| (key, Some(value)))
            .collect(),
        ..MetadataUpdate::default()
    })?;
    stage_clustering_domain(&mut transaction, &snapshot, existing.as_ref());
    let (num_files, size) = stage_files(&mut transaction, &snapshot, target).await?;
    let transaction = transaction
        .with_operation_parameter("source", source_name(source))
        .with_operation_parameter("sourceVersion", snapshot.version())
        .with_operation_metric("sourceTableSize", size.to_string())
        .with_operation_metric("sourceNumOfFiles", num_files.to_string())
        .with_operation_metric("numRemovedFiles", "0")
        .with_operation_metric("numCopiedFiles", "0")
        .with_operation_metric("removedFilesSize", "0")
        .with_operation_metric("copiedFilesSize", "0");
    transaction.commit().await
}

/// The name of the source in `commitInfo.operationParameters.source`: Delta on Spark's
/// `DeltaTableV2.name` of a table opened by path, ``delta.`<path>` ``, the path qualified
/// as Hadoop qualifies it (`file:/tmp/t` for a local table; URL escapes decoded).
fn source_name(source: &Storage) -> String {
    let uri = percent_encoding::percent_decode_str(source.uri()).decode_utf8_lossy();
    let root = uri.trim_end_matches('/');
    let qualified = match root.strip_prefix("file:///") {
        Some(local) => format!("file:/{local}"),
        None => root.to_string(),
    };
    format!("delta.`{qualified}`")
}

/// Refuses a target that is the source, is in another store than the source (the target
/// reads the source's files through its own store), or is inside the source or holds it: the
/// VACUUM of the outer table would delete the files of the inner one it does not reference
/// (the clone's own writes, or the source's files of other versions).
fn check_locations(source: &Storage, target: &Storage) -> Result<()> {
    let (from, to) = (source.root_url(), target.root_url());
    if from == to {
        return Err(Error::InvalidArgument(format!(
            "cannot clone {} onto itself",
            source.uri()
        )));
    }
    let (inner, outer) = (from.as_str(), to.as_str());
    if inner.starts_with(outer) || outer.starts_with(inner) {
        return Err(Error::InvalidArgument(format!(
            "cannot shallow-clone {} to {}: one is inside the other, and the VACUUM of the \
             outer table would delete the inner one's files",
            source.uri(),
            target.uri()
        )));
    }
    if from.scheme() != to.scheme() || from.host() != to.host() || from.port() != to.port() {
        return Err(Error::InvalidArgument(format!(
            "cannot shallow-clone {} to {}: the target must be in the source's store, whose \
             files it references where they are",
            source.uri(),
            target.uri()
        )));
    }
    Ok(())
}

/// Refuses a target that holds files but no Delta table, as Delta on Spark's `CREATE TABLE`
/// does (`DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION`); with `replace` (`CREATE OR REPLACE`)
/// it does not look.
async fn check_empty(target: &Storage, replace: bool) -> Result<()> {
    if replace {
        return Ok(());
    }
    let mut listing = target.list_table();
    match listing.next().await.transpose()? {
        None => Ok(()),
        Some(object) => Err(Error::NotAllowed(format!(
            "the clone target {} is not empty ({} is there) and holds no Delta table (Delta on \
             Spark's DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION)",
            target.uri(),
            object.path
        ))),
    }
}

/// The latest snapshot of the table a clone replaces, which must be writable and hold no
/// live file (Delta on Spark's `DELTA_UNSUPPORTED_NON_EMPTY_CLONE`).
async fn replaced_target(target: &Storage) -> Result<Snapshot> {
    let snapshot = Snapshot::load(target, SnapshotAt::Latest).await?;
    snapshot.table_configuration().ensure_writable(false, &[])?;
    let files = snapshot.num_files().await?;
    if files > 0 {
        return Err(Error::NotAllowed(format!(
            "the clone target {} is not empty ({files} live files): delete its rows before \
             cloning over it (Delta on Spark's DELTA_UNSUPPORTED_NON_EMPTY_CLONE)",
            target.uri()
        )));
    }
    Ok(snapshot)
}

/// A transaction creating the target at version 0, its metadata and protocol to be replaced
/// by the clone's.
async fn new_table_transaction(target: &Storage, source: &Snapshot) -> Result<Transaction> {
    let spec = TableSpec {
        schema: source.schema().clone(),
        partition_columns: source.metadata().partition_columns.clone(),
        ..TableSpec::default()
    };
    let mut transaction = crate::transaction::create_transaction(target, spec).await?;
    transaction.set_operation(CLONE_OPERATION);
    Ok(transaction)
}

/// The source's metadata under the target's id (a new one for a new table), name and
/// description, without the keys a clone never copies nor the names of the materialized row
/// tracking columns (the transaction names them anew).
fn cloned_metadata(source: &Snapshot, existing: Option<&Snapshot>) -> Metadata {
    let mut metadata = source.metadata().clone();
    metadata.configuration.retain(|key, _| {
        !NOT_COPIED_PREFIXES.iter().any(|p| key.starts_with(p))
            && !RENAMED_KEYS.contains(&key.as_str())
    });
    match existing {
        Some(target) => {
            let old = target.metadata();
            metadata.id = old.id.clone();
            metadata.name = old.name.clone();
            metadata.description = old.description.clone();
        }
        None => {
            metadata.id = uuid::Uuid::new_v4().to_string();
            metadata.name = None;
            metadata.description = None;
        }
    }
    metadata
}

/// Refuses a column mapping mode other than the source's (and the replaced target's), as
/// Delta on Spark's `checkColumnMappingMode` does.
fn check_column_mapping(
    source: &Snapshot,
    existing: Option<&Snapshot>,
    metadata: &Metadata,
    overrides: &HashMap<String, String>,
    target: &Storage,
) -> Result<()> {
    let mut configuration = metadata.configuration.clone();
    configuration.extend(overrides.clone());
    let after = column_mapping_mode(&configuration)?;
    let mut before = vec![source.table_configuration().column_mapping()];
    before.extend(existing.map(|t| t.table_configuration().column_mapping()));
    match before.into_iter().find(|mode| *mode != after) {
        None => Ok(()),
        Some(mode) => Err(Error::NotAllowed(format!(
            "cloning to {} cannot change the column mapping mode from '{}' to '{}' (Delta on \
             Spark's DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE)",
            target.uri(),
            mode_name(mode),
            mode_name(after)
        ))),
    }
}

fn mode_name(mode: ColumnMappingMode) -> &'static str {
    match mode {
        ColumnMappingMode::None => "none",
        ColumnMappingMode::Name => "name",
        ColumnMappingMode::Id => "id",
    }
}

/// The source's protocol; over an existing target, the union of both, never below the
/// target's (Delta on Spark's `determineTargetProtocol`).
fn cloned_protocol(source: &Protocol, existing: Option<&Snapshot>) -> Protocol {
    let Some(target) = existing else {
        return source.clone();
    };
    let mut features = writer_features(source);
    features.extend(reader_features(source));
    let mut merged = upgrade_protocol(target.protocol(), &features);
    merged.min_reader_version = merged.min_reader_version.max(source.min_reader_version);
    merged.min_writer_version = merged.min_writer_version.max(source.min_writer_version);
    merged
}

/// Copies the source's `delta.clustering` domain; removes a replaced target's when the
/// source has none.
fn stage_clustering_domain(
    transaction: &mut Transaction,
    source: &Snapshot,
    existing: Option<&Snapshot>,
) {
    match source.domain_metadata(CLUSTERING_DOMAIN) {
        Some(configuration) => {
            transaction.set_system_domain(CLUSTERING_DOMAIN, configuration.to_string())
        }
        None if existing.is_some_and(|t| t.domain_metadata(CLUSTERING_DOMAIN).is_some()) => {
            transaction.remove_any_domain(CLUSTERING_DOMAIN)
        }
        None => {}
    }
}

/// Stages every live file of `source` with absolute paths; returns how many and their size.
async fn stage_files(
    transaction: &mut Transaction,
    source: &Snapshot,
    target: &Storage,
) -> Result<(u64, u64)> {
    let root = source.storage().root_url();
    let (mut count, mut size) = (0u64, 0u64);
    for adds in source.add_actions().await? {
        let adds = in_add_layout(adds).ok_or_else(|| {
            Error::internal(
                source.storage().uri(),
                "a snapshot's files must be rows of the add layout (action_schema::add_fields)",
            )
        })?;
        count += (adds.len() - adds.null_count()) as u64;
        size += total_size(&adds);
        let cloned = cloned_adds(adds, root)
            .map_err(|error| with_target(error, source.storage(), target))?;
        transaction.add_files(cloned)?;
    }
    Ok((count, size))
}

/// `adds` as the clone commits them: absolute paths and deletion vectors, `dataChange`
/// true, no row tracking fields.
fn cloned_adds(adds: StructArray, root: &Url) -> Result<StructArray> {
    let (fields, mut columns, nulls) = adds.into_parts();
    let rows = nulls
        .as_ref()
        .map_or(columns.first().map_or(0, |c| c.len()), |n| n.len());
    for (index, field) in fields.iter().enumerate() {
        let column = &columns[index];
        columns[index] = match field.name().as_str() {
            add::PATH => Arc::new(absolute_paths(column, root)?) as ArrayRef,
            add::DATA_CHANGE => Arc::new(BooleanArray::from(vec![true; rows])),
            add::BASE_ROW_ID | add::DEFAULT_ROW_COMMIT_VERSION => {
                new_null_array(field.data_type(), rows)
            }
            add::DELETION_VECTOR => absolute_vectors(column, root)?,
            _ => continue,
        };
    }
    StructArray::try_new(fields, columns, nulls)
        .map_err(|error| Error::arrow("making the paths of cloned files absolute", error))
}

/// The `path` column with each relative path joined to `root` (paths are URL-encoded, as the
/// log holds them); absolute URIs are kept, a path absolute without a scheme gets the root's.
fn absolute_paths(column: &ArrayRef, root: &Url) -> Result<StringArray> {
    let paths = column.as_string_opt::<i32>().ok_or_else(|| {
        Error::internal(
            root.as_str(),
            "the add layout's path column must be a string",
        )
    })?;
    Ok(paths
        .iter()
        .map(|path| path.map(|path| absolute_path(path, root)))
        .collect())
}

/// `path` (URL-encoded, as in the log) as an absolute URI for a table rooted at `root`
/// (Delta on Spark's `DeltaFileOperations.absolutePath`).
fn absolute_path(path: &str, root: &Url) -> String {
    if has_scheme(path) {
        path.to_string()
    } else if path.starts_with('/') {
        format!("{}{path}", &root[..url::Position::BeforePath])
    } else {
        format!("{}/{path}", root.as_str().trim_end_matches('/'))
    }
}

/// True when `text` starts with a URI scheme (`s3:`, `file:`, ...).
fn has_scheme(text: &str) -> bool {
    text.split_once(':').is_some_and(|(scheme, _)| {
        scheme.len() > 1
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// The `deletionVector` column with every vector stored relative to the source (`u`, or a
/// `p` without a scheme) turned into an absolute `p` (Delta on Spark's
/// `DeletionVectorDescriptor.copyWithAbsolutePath`); inline and absolute ones are kept.
fn absolute_vectors(column: &ArrayRef, root: &Url) -> Result<ArrayRef> {
    let Some(vectors) = column.as_struct_opt() else {
        return Ok(column.clone());
    };
    let mut storage_types = Vec::with_capacity(vectors.len());
    let mut paths = Vec::with_capacity(vectors.len());
    let mut changed = false;
    for row in 0..vectors.len() {
        let Some(dv) = descriptor(vectors, row) else {
            storage_types.push(None);
            paths.push(None);
            continue;
        };
        let relative = dv.storage_type == "u"
            || (dv.storage_type == "p" && !has_scheme(&dv.path_or_inline_dv));
        if relative {
            if let DvLocation::File { url, .. } = resolve_dv(&dv, root)? {
                storage_types.push(Some("p".to_string()));
                paths.push(Some(url.to_string()));
                changed = true;
                continue;
            }
        }
        storage_types.push(Some(dv.storage_type));
        paths.push(Some(dv.path_or_inline_dv));
    }
    if !changed {
        return Ok(column.clone());
    }
    let (fields, mut children, nulls) = vectors.clone().into_parts();
    for (index, field) in fields.iter().enumerate() {
        match field.name().as_str() {
            "storageType" => children[index] = Arc::new(StringArray::from(storage_types.clone())),
            "pathOrInlineDv" => children[index] = Arc::new(StringArray::from(paths.clone())),
            _ => {}
        }
    }
    let rebuilt = StructArray::try_new(fields, children, nulls)
        .map_err(|error| Error::arrow("making deletion vector paths absolute", error))?;
    Ok(Arc::new(rebuilt))
}

fn total_size(adds: &StructArray) -> u64 {
    adds.column_by_name(add::SIZE)
        .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int64Type>())
        .map_or(0, |sizes| {
            (0..adds.len())
                .filter(|row| adds.is_valid(*row) && sizes.is_valid(*row))
                .map(|row| u64::try_from(sizes.value(row)).unwrap_or(0))
                .sum()
        })
}

/// `error` with the clone's two tables named, when it does not name one already.
fn with_target(error: Error, source: &Storage, target: &Storage) -> Error {
    match error {
        Error::InvalidPath { path, reason } => Error::InvalidPath {
            path,
            reason: format!("{reason} (cloning {} to {})", source.uri(), target.uri()),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema, SchemaRef};
    use futures::stream;
    use serde_json::Value;

    use super::*;
    use crate::ops::{
        delete, vacuum, write_table, DeleteOptions, VacuumOptions, WriteTableOptions,
    };
    use crate::scan::{Scan, ScanOptions};

    fn storage(dir: &std::path::Path) -> Storage {
        Storage::open(dir.to_str().unwrap(), &HashMap::new()).unwrap()
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("p", DataType::Int64, true),
        ]))
    }

    async fn append(table: &Storage, ids: std::ops::Range<i64>, configuration: &[(&str, &str)]) {
        let ids: Vec<i64> = ids.collect();
        let parts: Vec<i64> = ids.iter().map(|id| id % 2).collect();
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(Int64Array::from(parts)),
            ],
        )
        .unwrap();
        let options = WriteTableOptions {
            partition_by: Some(vec!["p".into()]),
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..WriteTableOptions::default()
        };
        write_table(table, schema(), stream::iter([Ok(batch)]), options)
            .await
            .unwrap();
    }

    /// A partitioned source with deletion vectors: v0 ids 0..10, v1 deletes id 3 (a
    /// deletion vector), v2 appends 10..12.
    async fn source(dir: &std::path::Path) -> Storage {
        let source = storage(dir);
        append(&source, 0..10, &[("delta.enableDeletionVectors", "true")]).await;
        let predicate = crate::expr::parse_sql("id = 3").unwrap();
        delete(&source, Some(predicate), DeleteOptions::default())
            .await
            .unwrap();
        append(&source, 10..12, &[]).await;
        source
    }

    async fn ids(table: &Storage, at: SnapshotAt) -> Vec<i64> {
        let snapshot = Snapshot::load(table, at).await.unwrap();
        let batches = Scan::new(&snapshot, ScanOptions::default())
            .await
            .unwrap()
            .to_batches()
            .await
            .unwrap();
        let mut ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                let column = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                column.iter().flatten().collect::<Vec<_>>()
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The actions of commit `version` of the table in `dir`, as JSON objects.
    fn actions(dir: &std::path::Path, version: u64) -> Vec<Value> {
        let file = dir.join(format!("_delta_log/{version:020}.json"));
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn of_kind<'a>(actions: &'a [Value], kind: &str) -> Vec<&'a Value> {
        actions.iter().filter_map(|a| a.get(kind)).collect()
    }

    #[test]
    fn relative_paths_are_joined_to_the_source_root() {
        let root = Url::parse("file:///tmp/src/").unwrap();
        assert_eq!(
            absolute_path("p=0/a%20b.parquet", &root),
            "file:///tmp/src/p=0/a%20b.parquet"
        );
        assert_eq!(
            absolute_path("s3://bucket/x.parquet", &root),
            "s3://bucket/x.parquet"
        );
        assert_eq!(
            absolute_path("/other/x.parquet", &root),
            "file:///other/x.parquet"
        );
        let bucket = Url::parse("s3://bucket/tables/t/").unwrap();
        assert_eq!(
            absolute_path("f.parquet", &bucket),
            "s3://bucket/tables/t/f.parquet"
        );
        assert!(!has_scheme("p=a%3Ab/f.parquet"));
        assert!(!has_scheme("c:x"));
    }

    #[test]
    fn the_source_is_named_as_delta_on_spark_names_a_path_table() {
        let local = Storage::open("/tmp/some/src", &HashMap::new()).unwrap();
        assert_eq!(source_name(&local), "delta.`file:/tmp/some/src`");
        let spaced = Storage::open("/tmp/a b", &HashMap::new()).unwrap();
        assert_eq!(source_name(&spaced), "delta.`file:/tmp/a b`");
    }

    #[tokio::test]
    async fn a_clone_references_the_source_files_where_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let (source_dir, target_dir) = (dir.path().join("src"), dir.path().join("dst"));
        let source = source(&source_dir).await;
        let target = storage(&target_dir);
        let options = CloneOptions {
            properties: HashMap::from([("foo".to_string(), "bar".to_string())]),
            ..CloneOptions::default()
        };
        let done = shallow_clone(&source, SnapshotAt::Latest, &target, &options)
            .await
            .unwrap();
        assert_eq!(done.version, 0);
        let expected: Vec<i64> = (0..12).filter(|id| *id != 3).collect();
        assert_eq!(ids(&target, SnapshotAt::Latest).await, expected);

        let commit = actions(&target_dir, 0);
        let info = of_kind(&commit, "commitInfo")[0];
        assert_eq!(info["operation"], "CLONE");
        let source_uri = source.uri().to_string();
        assert_eq!(info["operationParameters"]["sourceVersion"], 2);
        assert_eq!(info["operationMetrics"]["sourceNumOfFiles"], "4");
        assert_eq!(info["operationMetrics"]["numCopiedFiles"], "0");
        let source_meta = Snapshot::load(&source, SnapshotAt::Latest).await.unwrap();
        let metadata = of_kind(&commit, "metaData")[0];
        assert_ne!(metadata["id"], source_meta.metadata().id.as_str());
        assert_eq!(metadata["partitionColumns"][0], "p");
        assert_eq!(metadata["configuration"]["foo"], "bar");
        assert_eq!(
            metadata["configuration"]["delta.enableDeletionVectors"],
            "true"
        );
        let adds = of_kind(&commit, "add");
        assert_eq!(adds.len(), 4);
        for add in &adds {
            let path = add["path"].as_str().unwrap();
            assert!(path.starts_with(&source_uri), "{path}");
            assert_eq!(add["dataChange"], true);
            assert!(add.get("baseRowId").is_none());
            if let Some(dv) = add.get("deletionVector") {
                assert_eq!(dv["storageType"], "p");
                let dv_path = dv["pathOrInlineDv"].as_str().unwrap();
                assert!(dv_path.starts_with(&source_uri), "{dv_path}");
            }
        }
        assert!(adds.iter().any(|a| a.get("deletionVector").is_some()));

        // The source is untouched by the clone and by writes to the clone.
        append(&target, 20..22, &[]).await;
        assert_eq!(ids(&source, SnapshotAt::Latest).await, expected);
        assert_eq!(
            ids(&target, SnapshotAt::Latest).await.len(),
            expected.len() + 2
        );
    }

    #[tokio::test]
    async fn a_clone_at_a_version_has_that_version_s_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (source_dir, target_dir) = (dir.path().join("src"), dir.path().join("dst"));
        let source = source(&source_dir).await;
        let target = storage(&target_dir);
        shallow_clone(
            &source,
            SnapshotAt::Version(0),
            &target,
            &CloneOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(
            ids(&target, SnapshotAt::Latest).await,
            (0..10).collect::<Vec<_>>()
        );
        let info = of_kind(&actions(&target_dir, 0), "commitInfo")[0].clone();
        assert_eq!(info["operationParameters"]["sourceVersion"], 0);
    }

    #[tokio::test]
    async fn an_existing_target_needs_replace_and_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let (source_dir, target_dir) = (dir.path().join("src"), dir.path().join("dst"));
        let source = source(&source_dir).await;
        let target = storage(&target_dir);
        append(&target, 0..2, &[]).await;
        let plain = CloneOptions::default();
        let error = shallow_clone(&source, SnapshotAt::Latest, &target, &plain)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::NotAllowed(_)), "{error}");
        let replace = CloneOptions {
            replace: true,
            ..CloneOptions::default()
        };
        let error = shallow_clone(&source, SnapshotAt::Latest, &target, &replace)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("NON_EMPTY_CLONE"), "{error}");

        delete(&target, None, DeleteOptions::default())
            .await
            .unwrap();
        let old_id = Snapshot::load(&target, SnapshotAt::Latest)
            .await
            .unwrap()
            .metadata()
            .id
            .clone();
        let done = shallow_clone(&source, SnapshotAt::Version(0), &target, &replace)
            .await
            .unwrap();
        assert_eq!(done.version, 2);
        let replaced = Snapshot::load(&target, SnapshotAt::Latest).await.unwrap();
        assert_eq!(replaced.metadata().id, old_id);
        assert_eq!(
            ids(&target, SnapshotAt::Latest).await,
            (0..10).collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn the_column_mapping_mode_cannot_change() {
        let dir = tempfile::tempdir().unwrap();
        let (source_dir, target_dir) = (dir.path().join("src"), dir.path().join("dst"));
        let source = source(&source_dir).await;
        let target = storage(&target_dir);
        let options = CloneOptions {
            properties: HashMap::from([(
                "delta.columnMapping.mode".to_string(),
                "name".to_string(),
            )]),
            ..CloneOptions::default()
        };
        let error = shallow_clone(&source, SnapshotAt::Latest, &target, &options)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("column mapping mode"), "{error}");
        assert!(!crate::log::has_log_files(&target).await.unwrap());

        std::fs::create_dir_all(&target_dir).unwrap();
        std::fs::write(target_dir.join("notes.txt"), b"x").unwrap();
        let error = shallow_clone(
            &source,
            SnapshotAt::Latest,
            &target,
            &CloneOptions::default(),
        )
        .await
        .unwrap_err();
        assert!(error.to_string().contains("NON_EMPTY_LOCATION"), "{error}");

        for nested in [source_dir.join("copy"), dir.path().to_path_buf()] {
            let error = shallow_clone(
                &source,
                SnapshotAt::Latest,
                &storage(&nested),
                &CloneOptions::default(),
            )
            .await
            .unwrap_err();
            assert!(error.to_string().contains("inside the other"), "{error}");
        }
    }

    #[tokio::test]
    async fn vacuum_of_the_clone_keeps_the_source_files() {
        let dir = tempfile::tempdir().unwrap();
        let (source_dir, target_dir) = (dir.path().join("src"), dir.path().join("dst"));
        let source = source(&source_dir).await;
        let target = storage(&target_dir);
        shallow_clone(
            &source,
            SnapshotAt::Latest,
            &target,
            &CloneOptions::default(),
        )
        .await
        .unwrap();
        delete(&target, None, DeleteOptions::default())
            .await
            .unwrap();
        let options = VacuumOptions {
            retention_hours: Some(0.0),
            enforce_retention_duration: false,
            ..VacuumOptions::default()
        };
        vacuum(&target, options).await.unwrap();
        let expected: Vec<i64> = (0..12).filter(|id| *id != 3).collect();
        assert_eq!(ids(&source, SnapshotAt::Latest).await, expected);
        assert!(ids(&target, SnapshotAt::Latest).await.is_empty());
    }
}
