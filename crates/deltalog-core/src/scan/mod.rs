//! Reading the rows of a snapshot: the data files of its file list, decoded with the parquet
//! crate through [`crate::storage::Storage::parquet_reader`], several at once, each streamed in
//! batches (catalogue G-16..G-23, E1, E2, E4, E5). The defaults of [`ScanOptions`] and the
//! read-ahead come from [`crate::storage::IoConfig`].
//!
//! Every file goes through the same steps: resolve its path (never outside the table), read
//! only the Parquet columns asked for (matched by physical name or field id, spec "Column
//! Mapping"), cast them to the table types (type widening: files written before a
//! `delta.typeChanges` entry hold the narrower type; INT96, millisecond and nanosecond
//! timestamps become microseconds), fill columns the file lacks with nulls, add partition
//! columns from the typed `partitionValues`, add row tracking columns on request, and drop the
//! rows its deletion vector marks, counting row indexes before any row is dropped.

#[cfg(feature = "internal-api")]
pub mod changes;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod changes;
#[cfg(feature = "internal-api")]
pub mod streaming;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod streaming;

mod files;
mod mapping;
mod native;
mod read;
mod task;
mod variant_shredding;

use std::collections::HashSet;
use std::sync::Arc;

use arrow::compute::filter_record_batch;
use arrow_array::builder::{ListBuilder, StringBuilder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};

use crate::actions::partition::SessionTimeZone;
use crate::actions::{DeletionVectorDescriptor, Metadata, Protocol};
use crate::error::{Error, Result};
use crate::expr::{evaluate, files_may_match, Expr};
use crate::replay::file_list::{file_list_stats, FileListOptions};
use crate::schema::{to_arrow_schema, StructField, StructType};
use crate::snapshot::Snapshot;
use crate::storage::{IoConfig, Storage};
use crate::table_config::TableConfiguration;
pub use changes::{ChangeScan, ChangesOptions};
pub(crate) use files::{FileSetScan, FileToRead};
pub(crate) use native::{hadoop_path, is_absolute};
pub use native::{NativeColumn, NativeColumns, NativeFiles};
pub(crate) use read::load_deletion_vector;
use read::{read_file, FileTask, OutputColumn, ScanContext};
pub use streaming::{stream_files, StreamFiles, StreamOffset, StreamOptions, StreamStart};
use task::TaskSource;
pub use task::{ScanTask, DEFAULT_OPEN_COST, DEFAULT_TARGET_SIZE};

/// Name of the row id column a scan adds when asked for row tracking (catalogue E4-10).
pub(crate) const ROW_ID_COLUMN: &str = "row_id";
/// Name of the row commit version column a scan adds when asked for row tracking.
pub(crate) const ROW_COMMIT_VERSION_COLUMN: &str = "row_commit_version";
/// Name of the column a scan asked for row addresses adds: the path of the row's data file,
/// as the file list names it (URL-decoded, relative to the table root).
pub const ROW_FILE_COLUMN: &str = "__deltalog_file";
/// Name of the column a scan asked for row addresses adds: the row's physical position in
/// its data file, counting every row of the file (deleted ones too) from 0.
pub const ROW_INDEX_COLUMN: &str = "__deltalog_row_index";

/// What a scan reads.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Top-level logical columns to return, in this order; `None` for every column in table
    /// order. Names match exactly, else case-insensitively when that is unambiguous.
    pub columns: Option<Vec<String>>,
    /// The zone in which zone-less `timestamp` partition values are read (default UTC).
    pub timezone: SessionTimeZone,
    /// Append `ROW_ID_COLUMN` and `ROW_COMMIT_VERSION_COLUMN` (catalogue E4-10).
    pub row_tracking: bool,
    /// Append [`ROW_FILE_COLUMN`] and [`ROW_INDEX_COLUMN`], the address of every row (after
    /// the row tracking columns): what a row-level change run elsewhere needs to delete it.
    pub row_address: bool,
    /// Read only the files of the table whose file list path is one of these (every file
    /// when `None`). Planning only: a [`ScanTask`] carries its files already.
    pub only_files: Option<Arc<HashSet<String>>>,
    /// Rows per batch read from a file (at most; deleted rows make batches smaller). Default
    /// [`IoConfig::batch_size`].
    pub batch_size: usize,
    /// Data files read at once. Default [`IoConfig::scan_files`].
    pub concurrency: usize,
    /// Only rows for which this is true (SQL semantics, see `crate::expr::evaluate`),
    /// evaluated on the rows as the table defines them (after column mapping, casts,
    /// partition values and deletion vectors). It may name columns that are not read.
    pub filter: Option<Expr>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: None,
            timezone: SessionTimeZone::utc(),
            row_tracking: false,
            row_address: false,
            only_files: None,
            batch_size: IoConfig::DEFAULT.batch_size,
            concurrency: IoConfig::DEFAULT.scan_files,
            filter: None,
        }
    }
}

/// A planned read of a snapshot's rows. Cheap to clone; every [`Scan::stream`] reads afresh.
#[derive(Debug, Clone)]
pub struct Scan {
    inner: Arc<ScanInner>,
}

#[derive(Debug)]
struct ScanInner {
    context: Arc<ScanContext>,
    files_schema: SchemaRef,
    files: Vec<RecordBatch>,
    tasks: Vec<FileTask>,
    concurrency: usize,
    source: Arc<TaskSource>,
}

impl Scan {
    /// Plans a scan of `snapshot`: checks the options, works out the output schema and takes
    /// the file list (with partition values read in `options.timezone`). With a filter, the
    /// file list carries statistics and keeps only the files that may hold matching rows
    /// (`crate::expr::files_may_match`).
    ///
    /// An unknown or repeated column, a filter that names an unknown column or compares a
    /// column with a value of another kind, a zero batch size or concurrency, and row tracking
    /// on a table without the `rowTracking` feature (or with a column already called `row_id`
    /// or `row_commit_version`) are an [`Error::InvalidArgument`].
    pub async fn new(snapshot: &Snapshot, options: ScanOptions) -> Result<Scan> {
        let shape = TableShape {
            storage: snapshot.storage(),
            config: snapshot.table_configuration(),
        };
        let plan = plan(&shape, &options)?;
        let list_options = FileListOptions {
            with_stats: options.filter.is_some(),
            timezone: options.timezone.clone(),
        };
        let (files_schema, files) = snapshot.file_list(&list_options).await?;
        let files = match &options.filter {
            Some(filter) => files_matching(files, filter)?,
            None => files,
        };
        let files = match &options.only_files {
            Some(paths) => files_named(files, paths, shape.config.table_uri())?,
            None => files,
        };
        let source = TaskSource {
            table_uri: shape.config.table_uri().to_string(),
            version: snapshot.version(),
            protocol: snapshot.protocol().clone(),
            metadata: snapshot.metadata().clone(),
            options,
        };
        plan.with_files(files_schema, files, source)
    }

    /// Plans a scan of the files `files` of the table version `version`, known by its
    /// `protocol` and `metadata`, without reading the log: how a task of a distributed read (a Spark task)
    /// reads its share of a scan planned elsewhere. `files` are rows of a file list with the
    /// columns of [`Scan::files`] (say, a slice of them); they are read as given, with no
    /// skipping. `options` work as for [`Scan::new`], with the same errors; a protocol this
    /// library cannot read is refused as by [`Snapshot`].
    pub fn over_files(
        storage: &Storage,
        version: u64,
        protocol: &Protocol,
        metadata: &Metadata,
        options: ScanOptions,
        files: Vec<RecordBatch>,
    ) -> Result<Scan> {
        let config =
            TableConfiguration::try_new(protocol.clone(), metadata.clone(), storage.uri())?;
        let shape = TableShape {
            storage,
            config: &config,
        };
        let plan = plan(&shape, &options)?;
        let files_schema = files
            .first()
            .map_or_else(|| Arc::new(Schema::empty()), RecordBatch::schema);
        let source = TaskSource {
            table_uri: storage.uri().to_string(),
            version,
            protocol: protocol.clone(),
            metadata: metadata.clone(),
            options,
        };
        plan.with_files(files_schema, files, source)
    }

    /// The scan split into [`ScanTask`]s: the groups of [`Scan::pack_files`] (about
    /// `target_size` bytes each, a file counting its size plus `open_cost`; see
    /// [`DEFAULT_TARGET_SIZE`] and [`DEFAULT_OPEN_COST`]), each with what reading it needs.
    /// A scan with no files has no tasks.
    pub fn tasks(&self, target_size: u64, open_cost: u64) -> Result<Vec<ScanTask>> {
        let groups = self.pack_files(target_size, open_cost)?;
        Ok(groups
            .into_iter()
            .map(|files| ScanTask::new(self.inner.source.clone(), self.files_schema(), files))
            .collect())
    }

    /// The table root as a URL ending in '/'.
    pub fn table_uri(&self) -> &str {
        &self.inner.source.table_uri
    }

    /// The table version the scan reads.
    pub fn version(&self) -> u64 {
        self.inner.source.version
    }

    /// The total size in bytes of the files this scan reads.
    pub fn total_size(&self) -> Result<u64> {
        task::total_size(&self.inner.files, &self.inner.source.table_uri)
    }

    /// The rows of [`Scan::files`] bin-packed, in order, into groups of about `target_size`
    /// bytes, each file counting its size plus `open_cost` (the cost of opening it, as Spark
    /// counts it); a group closes before the file that would take it past `target_size`, so a
    /// file larger than that is a group alone. Every file is in exactly one group; no group
    /// is empty.
    pub fn pack_files(&self, target_size: u64, open_cost: u64) -> Result<Vec<Vec<RecordBatch>>> {
        let table = self.inner.context.storage.root_url().as_str();
        let mut groups: Vec<Vec<RecordBatch>> = Vec::new();
        let mut current: Vec<RecordBatch> = Vec::new();
        let mut current_size = 0u64;
        for batch in &self.inner.files {
            let sizes = int64_column(batch, "size", table)?;
            let mut start = 0;
            for row in 0..batch.num_rows() {
                let size = u64::try_from(sizes.value(row))
                    .unwrap_or(0)
                    .saturating_add(open_cost);
                let has_rows = !current.is_empty() || row > start;
                if has_rows && current_size.saturating_add(size) > target_size {
                    if row > start {
                        current.push(batch.slice(start, row - start));
                    }
                    groups.push(std::mem::take(&mut current));
                    current_size = 0;
                    start = row;
                }
                current_size = current_size.saturating_add(size);
            }
            if batch.num_rows() > start {
                current.push(batch.slice(start, batch.num_rows() - start));
            }
        }
        if !current.is_empty() {
            groups.push(current);
        }
        Ok(groups)
    }

    /// The schema of the batches: logical names and the Arrow types of
    /// `crate::schema::to_arrow_schema`; the requested columns in the order asked (else
    /// table order, partition columns where the table schema has them); `void` columns
    /// dropped at every depth (catalogue G-23); the row tracking columns last when asked for.
    pub fn schema(&self) -> SchemaRef {
        self.inner.context.output_schema.clone()
    }

    /// The rows of the file list (see `crate::replay::file_list`) of the files this scan reads.
    pub fn files(&self) -> &[RecordBatch] {
        &self.inner.files
    }

    /// The schema of [`Scan::files`] (with statistics when the scan has a filter).
    pub fn files_schema(&self) -> SchemaRef {
        self.inner.files_schema.clone()
    }

    /// The rows, read lazily: `concurrency` files are decoded at once (on the current tokio
    /// runtime when there is one), each a few batches ahead of the reader at most, so memory
    /// stays bounded whatever the table's size. Batches come in file-list order, each file's
    /// in file order, and are never empty.
    pub fn stream(&self) -> BoxStream<'static, Result<RecordBatch>> {
        let context = self.inner.context.clone();
        stream::iter(self.inner.tasks.clone())
            .map(move |task| {
                let context = context.clone();
                async move { file_stream(context, task) }
            })
            .buffered(self.inner.concurrency)
            .flatten()
            .boxed()
    }

    /// Every batch of [`Scan::stream`], in memory.
    pub async fn to_batches(&self) -> Result<Vec<RecordBatch>> {
        self.stream().try_collect().await
    }
}

/// Every deletion vector of `snapshot`, loaded and checked (size, magic, checksum and
/// cardinality; catalogue E2-06..E2-16): one row per file that has one, with `path` (utf8, the
/// file's URL-decoded log path) and `deleted_rows` (list of uint64, the deleted row indexes in
/// ascending order). The records of each deletion vector file are fetched with one coalescing
/// read, several files at once; memory grows with the vectors, not with the table's rows.
pub async fn deletion_vectors(snapshot: &Snapshot) -> Result<RecordBatch> {
    let (_, files) = snapshot.files(false).await?;
    let table = snapshot.table_uri();
    let mut described = Vec::new();
    for batch in &files {
        let paths = string_column(batch, "path", table)?;
        let descriptors = struct_column(batch, "deletion_vector", table)?;
        for row in 0..batch.num_rows() {
            if let Some(descriptor) = descriptor_at(descriptors, row, table)? {
                described.push((paths.value(row).to_string(), descriptor));
            }
        }
    }
    let storage = snapshot.storage();
    let (paths_in_order, descriptors): (Vec<String>, Vec<DeletionVectorDescriptor>) =
        described.into_iter().unzip();
    let bitmaps = crate::actions::deletion_vector::load_many(storage, &descriptors).await?;
    let item_field = Arc::new(Field::new("item", ArrowType::UInt64, false));
    let mut paths = StringBuilder::new();
    let mut rows = ListBuilder::new(UInt64Builder::new()).with_field(item_field.clone());
    for (path, bitmap) in paths_in_order.into_iter().zip(bitmaps) {
        paths.append_value(path);
        rows.values()
            .append_slice(&bitmap.iter().collect::<Vec<u64>>());
        rows.append(true);
    }
    let schema = Schema::new(vec![
        Field::new("path", ArrowType::Utf8, false),
        Field::new("deleted_rows", ArrowType::List(item_field), false),
    ]);
    let columns: Vec<ArrayRef> = vec![Arc::new(paths.finish()), Arc::new(rows.finish())];
    RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|error| Error::arrow("building the deletion vector list", error))
}

/// What planning a scan needs of a table version: everything but its file list.
struct TableShape<'a> {
    storage: &'a Storage,
    config: &'a TableConfiguration,
}

/// A scan planned up to its file list.
struct ScanPlan {
    context: ScanContext,
    partition_names: Vec<String>,
}

impl ScanPlan {
    /// The scan of `files` (file list rows of the schema `files_schema`).
    fn with_files(
        self,
        files_schema: SchemaRef,
        files: Vec<RecordBatch>,
        source: TaskSource,
    ) -> Result<Scan> {
        let tasks = file_tasks(&files, &self.partition_names, &source.table_uri)?;
        let concurrency = source.options.concurrency;
        Ok(Scan {
            inner: Arc::new(ScanInner {
                context: Arc::new(self.context),
                files_schema,
                files,
                tasks,
                concurrency,
                source: Arc::new(source),
            }),
        })
    }
}

/// Checks `options` against the table and works out the columns to read and return.
fn plan(shape: &TableShape<'_>, options: &ScanOptions) -> Result<ScanPlan> {
    check_options(options)?;
    let table = shape.config.table_uri();
    let schema = shape.config.schema();
    let selected = select_columns(schema, options.columns.as_deref())?;
    let hidden = match &options.filter {
        Some(filter) => filter_only_columns(filter, schema, &selected, options)?,
        None => Vec::new(),
    };
    let partition_schema = schema
        .partition_schema(shape.config.partition_columns())
        .map_err(|error| Error::invalid_table(table, error))?;
    let mut partition_names = Vec::new();
    let mut columns = output_columns(&selected, &partition_schema, &mut partition_names);
    let mut output_schema = to_arrow_schema(&StructType::new(selected))?;
    if options.row_tracking {
        check_row_tracking(shape, &output_schema)?;
        output_schema = with_row_tracking_fields(output_schema);
        columns.push(OutputColumn::RowId);
        columns.push(OutputColumn::RowCommitVersion);
    }
    if options.row_address {
        check_row_address(shape, &output_schema)?;
        output_schema = with_row_address_fields(output_schema);
        columns.push(OutputColumn::FilePath);
        columns.push(OutputColumn::RowIndex);
    }
    let hidden_schema = to_arrow_schema(&StructType::new(hidden.clone()))?;
    columns.extend(output_columns(
        &hidden,
        &partition_schema,
        &mut partition_names,
    ));
    let read_fields: Vec<Arc<Field>> = output_schema
        .fields()
        .iter()
        .chain(hidden_schema.fields())
        .cloned()
        .collect();
    let read_schema = Schema::new(read_fields);
    if let Some(filter) = &options.filter {
        evaluate(
            filter,
            &RecordBatch::new_empty(Arc::new(read_schema.clone())),
        )?;
    }
    let properties = shape.config.properties();
    let context = ScanContext {
        storage: shape.storage.clone(),
        schema: Arc::new(read_schema),
        output_schema: Arc::new(output_schema),
        columns,
        filter: options.filter.clone(),
        mode: shape.config.column_mapping(),
        batch_size: options.batch_size,
        materialized_row_id: properties.materialized_row_id_column_name.clone(),
        materialized_row_commit_version: properties
            .materialized_row_commit_version_column_name
            .clone(),
    };
    Ok(ScanPlan {
        context,
        partition_names,
    })
}

fn check_options(options: &ScanOptions) -> Result<()> {
    if options.batch_size == 0 {
        return Err(Error::InvalidArgument(
            "scan batch_size must be at least 1".to_string(),
        ));
    }
    if options.concurrency == 0 {
        return Err(Error::InvalidArgument(
            "scan concurrency must be at least 1".to_string(),
        ));
    }
    Ok(())
}

/// The logical fields to read, void fields removed at every depth; void top-level columns are
/// dropped even when asked for by name.
fn select_columns(schema: &StructType, requested: Option<&[String]>) -> Result<Vec<StructField>> {
    let Some(requested) = requested else {
        return Ok(schema
            .fields
            .iter()
            .filter_map(StructField::without_void)
            .collect());
    };
    let mut selected: Vec<&StructField> = Vec::with_capacity(requested.len());
    for name in requested {
        let field = schema.find_column(name).ok_or_else(|| {
            let known: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
            Error::InvalidArgument(format!(
                "unknown column `{name}`: the table's columns are {}",
                known.join(", ")
            ))
        })?;
        if selected.iter().any(|s| s.name == field.name) {
            return Err(Error::InvalidArgument(format!(
                "column `{name}` is asked for more than once"
            )));
        }
        selected.push(field);
    }
    Ok(selected
        .into_iter()
        .filter_map(StructField::without_void)
        .collect())
}

/// One [`OutputColumn`] per field: partition columns get the next index of `partition_names`.
fn output_columns(
    fields: &[StructField],
    partition_schema: &StructType,
    partition_names: &mut Vec<String>,
) -> Vec<OutputColumn> {
    fields
        .iter()
        .map(|field| {
            if partition_schema.field(&field.name).is_some() {
                partition_names.push(field.name.clone());
                OutputColumn::Partition(partition_names.len() - 1)
            } else {
                OutputColumn::Data(field.clone())
            }
        })
        .collect()
}

/// The top-level columns `filter` needs that the scan does not return, void fields removed.
/// A path names the column of its longest dotted prefix that the table has (`a.b.c` may be the
/// field `b.c` of `a`, or `c` of a column called `a.b`). A path naming no column is an
/// [`Error::InvalidArgument`].
fn filter_only_columns(
    filter: &Expr,
    schema: &StructType,
    selected: &[StructField],
    options: &ScanOptions,
) -> Result<Vec<StructField>> {
    let mut hidden: Vec<StructField> = Vec::new();
    for path in filter.column_paths() {
        let column = (1..=path.len())
            .rev()
            .find_map(|parts| schema.find_column(&path[..parts].join(".")));
        let Some(column) = column else {
            let name = path.join(".");
            let tracking = [ROW_ID_COLUMN, ROW_COMMIT_VERSION_COLUMN].contains(&name.as_str());
            if options.row_tracking && tracking {
                continue;
            }
            return Err(Error::InvalidArgument(format!(
                "the filter names `{name}`, which is not a column of the table"
            )));
        };
        let known = selected
            .iter()
            .chain(&hidden)
            .any(|f| f.name == column.name);
        if !known {
            hidden.extend(column.without_void());
        }
    }
    Ok(hidden)
}

/// The file list rows whose files may hold rows matching `filter`; empty batches dropped.
fn files_matching(files: Vec<RecordBatch>, filter: &Expr) -> Result<Vec<RecordBatch>> {
    let mut kept = Vec::with_capacity(files.len());
    for batch in files {
        let may_match = files_may_match(filter, &file_list_stats(&batch)?)?;
        let batch = filter_record_batch(&batch, &may_match)
            .map_err(|error| Error::arrow("skipping files with the filter", error))?;
        if batch.num_rows() > 0 {
            kept.push(batch);
        }
    }
    Ok(kept)
}

fn check_row_tracking(shape: &TableShape<'_>, schema: &Schema) -> Result<()> {
    let table = shape.config.table_uri();
    if !shape.config.is_row_tracking_supported() {
        return Err(Error::InvalidArgument(format!(
            "row tracking was asked for, but {table} does not support it (its protocol has no \
             rowTracking feature)"
        )));
    }
    for name in [ROW_ID_COLUMN, ROW_COMMIT_VERSION_COLUMN] {
        if shape.config.schema().field(name).is_some() || schema.field_with_name(name).is_ok() {
            return Err(Error::InvalidArgument(format!(
                "row tracking was asked for, but {table} already has a column `{name}`"
            )));
        }
    }
    Ok(())
}

/// Refuses row addresses on a table that has a column of their names.
fn check_row_address(shape: &TableShape<'_>, schema: &Schema) -> Result<()> {
    for name in [ROW_FILE_COLUMN, ROW_INDEX_COLUMN] {
        if shape.config.schema().field(name).is_some() || schema.field_with_name(name).is_ok() {
            return Err(Error::InvalidArgument(format!(
                "row addresses were asked for, but {} already has a column `{name}`",
                shape.config.table_uri()
            )));
        }
    }
    Ok(())
}

fn with_row_address_fields(schema: Schema) -> Schema {
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new(
        ROW_FILE_COLUMN,
        ArrowType::Utf8,
        false,
    )));
    fields.push(Arc::new(Field::new(
        ROW_INDEX_COLUMN,
        ArrowType::Int64,
        false,
    )));
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// The file list rows whose path is one of `paths`; empty batches dropped.
fn files_named(
    files: Vec<RecordBatch>,
    paths: &HashSet<String>,
    table: &str,
) -> Result<Vec<RecordBatch>> {
    let mut kept = Vec::with_capacity(files.len());
    for batch in files {
        let names = string_column(&batch, "path", table)?;
        let wanted: arrow_array::BooleanArray = names
            .iter()
            .map(|name| Some(name.is_some_and(|name| paths.contains(name))))
            .collect();
        let batch = filter_record_batch(&batch, &wanted)
            .map_err(|error| Error::arrow("selecting the files to read", error))?;
        if batch.num_rows() > 0 {
            kept.push(batch);
        }
    }
    Ok(kept)
}

fn with_row_tracking_fields(schema: Schema) -> Schema {
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new(ROW_ID_COLUMN, ArrowType::Int64, false)));
    fields.push(Arc::new(Field::new(
        ROW_COMMIT_VERSION_COLUMN,
        ArrowType::Int64,
        false,
    )));
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// One [`FileTask`] per row of the file list.
fn file_tasks(
    files: &[RecordBatch],
    partition_names: &[String],
    table: &str,
) -> Result<Vec<FileTask>> {
    let mut tasks = Vec::new();
    for batch in files {
        let paths = string_column(batch, "path", table)?;
        let sizes = int64_column(batch, "size", table)?;
        let partition_values = struct_column(batch, "partition_values", table)?;
        let descriptors = struct_column(batch, "deletion_vector", table)?;
        let base_row_ids = int64_column(batch, "base_row_id", table)?;
        let commit_versions = int64_column(batch, "default_row_commit_version", table)?;
        let partitions = partition_names
            .iter()
            .map(|name| {
                partition_values.column_by_name(name).ok_or_else(|| {
                    Error::invalid_table(
                        table,
                        format!("the file list has no partition column `{name}`"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        for row in 0..batch.num_rows() {
            tasks.push(FileTask {
                path: paths.value(row).to_string(),
                size: value_at(sizes, row).and_then(|size| u64::try_from(size).ok()),
                partition_values: partitions
                    .iter()
                    .map(|values| values.slice(row, 1))
                    .collect(),
                deletion_vector: descriptor_at(descriptors, row, table)?,
                selected_rows: None,
                base_row_id: value_at(base_row_ids, row),
                default_row_commit_version: value_at(commit_versions, row),
            });
        }
    }
    Ok(tasks)
}

/// The deletion vector descriptor of the file list row `row`, if it has one.
fn descriptor_at(
    descriptors: &StructArray,
    row: usize,
    table: &str,
) -> Result<Option<DeletionVectorDescriptor>> {
    if descriptors.is_null(row) {
        return Ok(None);
    }
    let text = |name: &str| -> Result<String> {
        let column = descriptors
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| missing(table, name))?;
        let value = if column.is_valid(row) {
            column.value(row)
        } else {
            ""
        };
        Ok(value.to_string())
    };
    let int32 = |name: &str| -> Result<Option<i32>> {
        let column = descriptors
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Int32Type>())
            .ok_or_else(|| missing(table, name))?;
        Ok(value_at(column, row))
    };
    let cardinality = descriptors
        .column_by_name("cardinality")
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or_else(|| missing(table, "cardinality"))?;
    Ok(Some(DeletionVectorDescriptor {
        storage_type: text("storage_type")?,
        path_or_inline_dv: text("path_or_inline_dv")?,
        offset: int32("offset")?,
        size_in_bytes: int32("size_in_bytes")?.unwrap_or_default(),
        cardinality: value_at(cardinality, row).unwrap_or_default(),
    }))
}

fn value_at<T: arrow_array::ArrowPrimitiveType>(
    array: &arrow_array::PrimitiveArray<T>,
    row: usize,
) -> Option<T::Native> {
    array.is_valid(row).then(|| array.value(row))
}

fn string_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
    table: &str,
) -> Result<&'a arrow_array::StringArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| missing(table, name))
}

fn int64_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
    table: &str,
) -> Result<&'a arrow_array::Int64Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or_else(|| missing(table, name))
}

fn struct_column<'a>(batch: &'a RecordBatch, name: &str, table: &str) -> Result<&'a StructArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_struct_opt())
        .ok_or_else(|| missing(table, name))
}

fn missing(table: &str, name: &str) -> Error {
    Error::invalid_table(
        table,
        format!("the file list has no usable `{name}` column"),
    )
}

/// The batches of one file, a few ahead of the reader: a task of the current tokio runtime
/// drives the file's IO and awaits its decoding jobs ([`crate::util::cpu::run`], so the task never
/// blocks a runtime thread), which lets several files progress while the reader consumes
/// another. Without a runtime the reader drives the file itself, one batch at a time.
fn file_stream(
    context: Arc<ScanContext>,
    task: FileTask,
) -> BoxStream<'static, Result<RecordBatch>> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return read_file(context, task);
    };
    let path = task.path.clone();
    let read_ahead = context.storage.io().read_ahead_batches.max(1);
    let (sender, receiver) = tokio::sync::mpsc::channel(read_ahead);
    let mut batches = read_file(context, task);
    let decoder = runtime.spawn(async move {
        while let Some(item) = batches.next().await {
            let failed = item.is_err();
            if sender.send(item).await.is_err() || failed {
                break;
            }
        }
    });
    let state = SpawnedFile {
        receiver,
        decoder: Some(decoder),
        path,
    };
    stream::unfold(state, |mut state| async move {
        if let Some(item) = state.receiver.recv().await {
            return Some((item, state));
        }
        let decoder = state.decoder.take()?;
        match decoder.await {
            Err(error) if error.is_panic() => {
                let failure = Error::CorruptDataFile {
                    path: state.path.clone(),
                    reason: format!("decoding failed: {error}"),
                };
                Some((Err(failure), state))
            }
            _ => None,
        }
    })
    .boxed()
}

/// The receiving end of a file decoded by a task; dropping it stops the task.
struct SpawnedFile {
    receiver: tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
    decoder: Option<tokio::task::JoinHandle<()>>,
    path: String,
}

impl Drop for SpawnedFile {
    fn drop(&mut self) {
        if let Some(decoder) = &self.decoder {
            decoder.abort();
        }
    }
}

#[cfg(test)]
mod tests;
