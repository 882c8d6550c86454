//! REORG: an OPTIMIZE that rewrites every file it chooses, whatever its size, as Delta on
//! Spark's `DeltaReorgTableCommand` does. `APPLY (PURGE)` chooses the files with deletion
//! vectors; the rewrite that dropping `typeWidening` needs chooses the files whose Parquet
//! types are not the table's current ones (written before a type change, spec "Type
//! Widening"). One commit, operation `REORG` with `applyPurge` true (as Spark records both).
//!
//! [`rewrite_without_column_mapping`] rewrites every file under the columns' logical names,
//! in the commit that removes column mapping (Spark's `RemoveColumnMappingCommand`).

use arrow_schema::{DataType as ArrowType, Field, Fields};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};

use super::{bin_scan, candidate_files, pack_bins, rewrite_bin, unsized_file, Candidate, Layout};
use super::{Operation, OptimizeOptions, Run, DATA_WRITER_FEATURES, DEFAULT_OPTIMIZE_FILE_SIZE};
use crate::error::{Error, Result};
use crate::ops::dml::row_tracking_columns;
use crate::schema::{to_arrow_data_type, DataType, StructType, TYPE_CHANGES_KEY};
use crate::snapshot::Snapshot;
use crate::transaction::{add_file, AddFile, MetadataUpdate};
use crate::write::{WriterOptions, WrittenFile};

/// Which files a REORG rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reorg {
    /// `REORG TABLE ... APPLY (PURGE)`: the files with a deletion vector.
    Purge,
    /// The files holding a widened column in its old type.
    RewriteTypeWidening,
}

/// Rewrites the files of `snapshot` that `reorg` chooses, in bins of the table's target file
/// size, as one `REORG` commit; returns its version, `None` when no file needed it.
pub(crate) async fn reorg(snapshot: &Snapshot, reorg: Reorg) -> Result<Option<u64>> {
    let config = snapshot.table_configuration();
    config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
    let target = config
        .properties()
        .target_file_size
        .unwrap_or(DEFAULT_OPTIMIZE_FILE_SIZE);
    let options = OptimizeOptions::default();
    let files = candidate_files(snapshot, &options, true, target).await?;
    let chosen = match reorg {
        Reorg::Purge => files
            .into_iter()
            .filter(|file| file.deleted_rows.is_some())
            .collect(),
        Reorg::RewriteTypeWidening => with_old_types(snapshot, files).await?,
    };
    let bins = pack_bins(&chosen, target, true);
    if bins.is_empty() {
        return Ok(None);
    }
    let writer = WriterOptions {
        target_file_size: Some(target),
        ..WriterOptions::default()
    };
    let run = Run {
        snapshot,
        options: &options,
        layout: &Layout::Compaction,
        operation: Operation::Reorg,
    };
    let mut written = Vec::new();
    match run.rewrite_and_commit(&bins, writer, &mut written).await {
        Ok(version) => Ok(Some(version)),
        Err(error) => {
            let paths = written.into_iter().map(|file| file.path).collect();
            let _ = snapshot.storage().delete_relative(paths).await;
            Err(error)
        }
    }
}

/// Rewrites every live file of `snapshot` in the commit `REMOVE COLUMN MAPPING` that stages
/// `update` (the schema without column mapping metadata, the mode and maximum id unset):
/// the rows are read under the old physical names and written under the logical ones,
/// `dataChange` false, row ids and row commit versions kept in the materialised columns.
/// Returns the version.
pub(crate) async fn rewrite_without_column_mapping(
    snapshot: &Snapshot,
    update: MetadataUpdate,
) -> Result<u64> {
    let old = snapshot.table_configuration();
    old.ensure_writable(true, &DATA_WRITER_FEATURES)?;
    let mut transaction = snapshot.transaction("REMOVE COLUMN MAPPING");
    let row_tracking = row_tracking_columns(old, &mut transaction)?;
    transaction.update_metadata(update)?;
    let new = transaction.configuration()?;
    let target = old
        .properties()
        .target_file_size
        .unwrap_or(DEFAULT_OPTIMIZE_FILE_SIZE);
    let files = candidate_files(snapshot, &OptimizeOptions::default(), true, target).await?;
    let writer = WriterOptions {
        target_file_size: Some(target),
        ..WriterOptions::default()
    };
    let mut written: Vec<WrittenFile> = Vec::new();
    let outcome = async {
        for bin in pack_bins(&files, target, true) {
            let scan = bin_scan(snapshot, &bin, row_tracking.is_some())?;
            let rows = scan.stream();
            let tracking = row_tracking.clone();
            match rewrite_bin(&new, snapshot.storage(), &writer, tracking, rows).await {
                Ok(files) => written.extend(files),
                Err(failure) => {
                    written.extend(failure.written_files.into_iter().map(unsized_file));
                    return Err(failure.error);
                }
            }
            for file in &bin {
                transaction.record_read_files(file.path().as_deref());
                transaction.remove_files(&file.add, false)?;
            }
        }
        let adds: Vec<AddFile> = written
            .iter()
            .map(|file| AddFile {
                data_change: false,
                ..add_file(file)
            })
            .collect();
        transaction.add(&adds)?;
        Ok(transaction.commit().await?.version)
    }
    .await;
    if outcome.is_err() {
        let paths = written.into_iter().map(|file| file.path).collect();
        let _ = snapshot.storage().delete_relative(paths).await;
    }
    outcome
}

/// The `files` whose Parquet schema holds a widened column (a field with
/// `delta.typeChanges`, at any depth) in another type than the table's.
async fn with_old_types(snapshot: &Snapshot, files: Vec<Candidate>) -> Result<Vec<Candidate>> {
    let config = snapshot.table_configuration();
    let mut widened = Vec::new();
    widened_fields(config.physical_schema()?, &mut Vec::new(), &mut widened)?;
    if widened.is_empty() {
        return Ok(Vec::new());
    }
    let storage = snapshot.storage();
    let mut old = Vec::new();
    for file in files {
        let path = file.path().ok_or_else(|| {
            Error::internal(storage.uri(), "a live file of the snapshot has a path")
        })?;
        let location = storage.resolve(&path)?;
        let mut reader = storage.parquet_reader(&location, Some(file.size));
        let footer = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
            .await
            .map_err(|error| Error::CorruptDataFile {
                path: storage.url_of(&location),
                reason: error.to_string(),
            })?;
        let fields = footer.schema().fields();
        let differs = widened.iter().any(|(path, table_type)| {
            field_at(fields, path).is_some_and(|field| !same_type(field.data_type(), table_type))
        });
        if differs {
            old.push(file);
        }
    }
    Ok(old)
}

/// Pushes to `out` the physical path and Arrow type of every field of `schema` (descending
/// into structs) that carries `delta.typeChanges`.
fn widened_fields(
    schema: &StructType,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, ArrowType)>,
) -> Result<()> {
    for field in &schema.fields {
        path.push(field.name.clone());
        if field.metadata.contains_key(TYPE_CHANGES_KEY) {
            out.push((path.clone(), to_arrow_data_type(&field.data_type)?));
        }
        if let DataType::Struct(inner) = &field.data_type {
            widened_fields(inner, path, out)?;
        }
        path.pop();
    }
    Ok(())
}

/// The field at `path` (names through structs) among `fields`, `None` when the file lacks it.
fn field_at<'a>(fields: &'a Fields, path: &[String]) -> Option<&'a Field> {
    let (first, rest) = path.split_first()?;
    let field = fields.iter().find(|f| f.name() == first)?;
    match (rest.is_empty(), field.data_type()) {
        (true, _) => Some(field),
        (false, ArrowType::Struct(inner)) => field_at(inner, rest),
        _ => None,
    }
}

/// True when a file's `file` type stores the values of the table's `table` type as they
/// are: the same primitive (text and binary in any Arrow layout, timestamps in any unit),
/// and for nested types the same element types and, for structs, the same types of the
/// fields both have.
fn same_type(file: &ArrowType, table: &ArrowType) -> bool {
    use ArrowType::*;
    match (file, table) {
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (Binary | LargeBinary | BinaryView, Binary | LargeBinary | BinaryView) => true,
        (Timestamp(_, a), Timestamp(_, b)) => a.is_some() == b.is_some(),
        (
            List(a) | LargeList(a) | ListView(a) | LargeListView(a),
            List(b) | LargeList(b) | ListView(b) | LargeListView(b),
        ) => same_type(a.data_type(), b.data_type()),
        (Map(a, _), Map(b, _)) => same_type(a.data_type(), b.data_type()),
        (Struct(a), Struct(b)) => a.iter().all(|field| {
            b.iter()
                .find(|other| other.name() == field.name())
                .is_none_or(|other| same_type(field.data_type(), other.data_type()))
        }),
        _ => file == table,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::TimeUnit;

    use super::*;

    #[test]
    fn types_compare_by_what_they_store() {
        use ArrowType::*;
        assert!(same_type(&Int32, &Int32));
        assert!(!same_type(&Int16, &Int32));
        assert!(!same_type(&Float32, &Float64));
        assert!(!same_type(&Decimal128(10, 2), &Decimal128(12, 2)));
        assert!(!same_type(&Date32, &Timestamp(TimeUnit::Microsecond, None)));
        assert!(same_type(&LargeUtf8, &Utf8));
        assert!(same_type(
            &Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            &Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
        ));
        let list = |t: ArrowType, name: &str| List(Arc::new(Field::new(name, t, true)));
        assert!(same_type(&list(Int64, "element"), &list(Int64, "item")));
        assert!(!same_type(&list(Int32, "element"), &list(Int64, "item")));
    }
}
