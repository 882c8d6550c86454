//! Reading one data file of a scan: the Parquet columns the scan needs, turned into table
//! columns, with partition constants, row tracking columns and the file's deletion vector
//! applied (catalogue G-16..G-23, E2-03, E4-10).
//!
//! IO goes through [`Storage::parquet_reader`], one row group's projected column chunks at a
//! time; decoding a batch and turning it into an output batch is CPU work, one job of
//! [`crate::util::cpu::run`] per batch.

use std::sync::Arc;

use arrow::compute::{and, filter_record_batch, not, take};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{
    new_null_array, Array, ArrayRef, Int64Array, RecordBatch, RecordBatchOptions, UInt32Array,
};
use arrow_schema::{DataType as ArrowType, SchemaRef};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
};
use parquet::arrow::async_reader::ParquetRecordBatchStream;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use roaring::RoaringTreemap;

use super::mapping::{find_file_field, int96_as_micros, to_table_column};
use crate::actions::deletion_vector::{self, row_mask};
use crate::actions::DeletionVectorDescriptor;
use crate::error::{Error, Result};
use crate::expr::{evaluate, Expr};
use crate::schema::{ColumnMappingMode, StructField};
use crate::storage::parquet::not_found_in;
use crate::storage::{ParquetReader, Storage};
use crate::util::cpu;

/// What every file of a scan shares: where to read, what to produce.
#[derive(Debug)]
pub(super) struct ScanContext {
    pub storage: Storage,
    /// What is read: one field per entry of `columns`; the output columns first, then the
    /// columns only the filter needs.
    pub schema: SchemaRef,
    /// What the scan returns: the first fields of `schema`.
    pub output_schema: SchemaRef,
    pub columns: Vec<OutputColumn>,
    /// The row filter, evaluated on batches of `schema`.
    pub filter: Option<Expr>,
    pub mode: ColumnMappingMode,
    pub batch_size: usize,
    /// Physical names of the materialised row tracking columns (catalogue E4-08).
    pub materialized_row_id: Option<String>,
    pub materialized_row_commit_version: Option<String>,
}

/// Where an output column comes from.
#[derive(Debug, Clone)]
pub(super) enum OutputColumn {
    /// A column stored in the data files (logical field, void fields removed).
    Data(StructField),
    /// A partition column: the file's value at this position of [`FileTask::partition_values`].
    Partition(usize),
    /// `row_id`: the materialised row id, else `baseRowId` + physical row index.
    RowId,
    /// `row_commit_version`: the materialised value, else `defaultRowCommitVersion`.
    RowCommitVersion,
    /// The row's data file: [`FileTask::path`].
    FilePath,
    /// The row's physical position in its data file.
    RowIndex,
}

/// One data file to read, from one row of the file list.
#[derive(Debug, Clone)]
pub(super) struct FileTask {
    /// The path as the log names it, URL-decoded.
    pub path: String,
    pub size: Option<u64>,
    /// One single-row array per partition output column, typed per the schema.
    pub partition_values: Vec<ArrayRef>,
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    /// When set, only the rows at these indexes (counted from the file's first row) are read;
    /// the deletion vector still drops the rows it marks.
    pub selected_rows: Option<Arc<RoaringTreemap>>,
    pub base_row_id: Option<i64>,
    pub default_row_commit_version: Option<i64>,
}

/// The batches of one file, in file order, with deleted rows removed; empty batches are skipped.
pub(super) fn read_file(
    context: Arc<ScanContext>,
    task: FileTask,
) -> BoxStream<'static, Result<RecordBatch>> {
    let opened = async move { FileReader::open(context, task).await };
    stream::once(opened)
        .map_ok(FileReader::batches)
        .try_flatten()
        .boxed()
}

/// Loads a deletion vector of the table in `storage` (catalogue E2-06..E2-08, E2-16).
pub(crate) async fn load_deletion_vector(
    storage: &Storage,
    descriptor: &DeletionVectorDescriptor,
) -> Result<RoaringTreemap> {
    deletion_vector::load(storage, descriptor).await
}

/// An opened data file: its row groups to fetch and what turns their batches into output
/// batches.
struct FileReader {
    row_groups: ParquetRecordBatchStream<ParquetReader>,
    assembler: Arc<BatchAssembler>,
}

/// Where [`FileReader::batches`] is in its file.
struct Position {
    row_groups: ParquetRecordBatchStream<ParquetReader>,
    /// The fetched row group being decoded, if any.
    row_group: Option<ParquetRecordBatchReader>,
    /// The index, in the file, of the next row to decode.
    next_row: u64,
}

impl FileReader {
    async fn open(context: Arc<ScanContext>, task: FileTask) -> Result<FileReader> {
        let storage = &context.storage;
        let location = storage.resolve_decoded(&task.path)?;
        let url = storage.url_of(&location);
        let deleted = match &task.deletion_vector {
            Some(descriptor) => Some(
                load_deletion_vector(storage, descriptor)
                    .await
                    .map_err(|error| deletion_vector::for_data_file(error, &url))?,
            ),
            None => None,
        };
        let corrupt = |error: parquet::errors::ParquetError| {
            not_found_in(&error, &url).unwrap_or_else(|| Error::CorruptDataFile {
                path: url.clone(),
                reason: error.to_string(),
            })
        };
        let mut reader = storage.parquet_reader(&location, task.size);
        let metadata = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
            .await
            .map_err(corrupt)?;
        let metadata = match int96_as_micros(metadata.schema(), metadata.parquet_schema()) {
            Some(hinted) => ArrowReaderMetadata::try_new(
                metadata.metadata().clone(),
                ArrowReaderOptions::new().with_schema(Arc::new(hinted)),
            )
            .map_err(corrupt)?,
            None => metadata,
        };
        let (roots, sources) = plan_projection(&context, metadata.schema())?;
        let mask = ProjectionMask::roots(metadata.parquet_schema(), roots);
        let row_groups = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
            .with_projection(mask)
            .with_batch_size(context.batch_size)
            .build()
            .map_err(corrupt)?;
        let assembler = Arc::new(BatchAssembler {
            context,
            task,
            url,
            sources,
            deleted,
        });
        Ok(FileReader {
            row_groups,
            assembler,
        })
    }

    /// The file's output batches: each row group is fetched, then its batches are decoded and
    /// assembled one [`cpu::run`] job at a time. Row indexes count every row of the file,
    /// deleted or not.
    fn batches(self) -> BoxStream<'static, Result<RecordBatch>> {
        let FileReader {
            row_groups,
            assembler,
        } = self;
        let start = Position {
            row_groups,
            row_group: None,
            next_row: 0,
        };
        stream::try_unfold(start, move |position| {
            let assembler = assembler.clone();
            async move { next_batch(position, assembler).await }
        })
        .try_filter(|batch| futures::future::ready(batch.num_rows() > 0))
        .boxed()
    }
}

/// The next output batch of a file and the position after it; `None` at the end of the file.
async fn next_batch(
    mut position: Position,
    assembler: Arc<BatchAssembler>,
) -> Result<Option<(RecordBatch, Position)>> {
    loop {
        let row_group = match position.row_group.take() {
            Some(row_group) => row_group,
            None => match position.row_groups.next_row_group().await {
                Ok(Some(row_group)) => row_group,
                Ok(None) => return Ok(None),
                Err(error) => return Err(assembler.corrupt(error.to_string())),
            },
        };
        let first_row = position.next_row;
        let job_assembler = assembler.clone();
        let job = move || decode_batch(row_group, &job_assembler, first_row);
        let failed = |reason| assembler.corrupt(reason);
        let Some((row_group, batch, rows)) = cpu::run(job, failed).await? else {
            continue;
        };
        position.row_group = Some(row_group);
        position.next_row += rows;
        return Ok(Some((batch, position)));
    }
}

/// Decodes the next batch of `row_group` (whose next row is row `first_row` of the file) and
/// assembles it: the row group to go on with, the output batch and the rows decoded; `None`
/// when the row group is done.
fn decode_batch(
    mut row_group: ParquetRecordBatchReader,
    assembler: &BatchAssembler,
    first_row: u64,
) -> Result<Option<(ParquetRecordBatchReader, RecordBatch, u64)>> {
    let Some(decoded) = row_group.next() else {
        return Ok(None);
    };
    let batch = decoded.map_err(|error| assembler.corrupt(error.to_string()))?;
    let rows = batch.num_rows() as u64;
    let output = assembler.assemble(&batch, first_row)?;
    Ok(Some((row_group, output, rows)))
}

/// Turns the batches of one data file into output batches.
struct BatchAssembler {
    context: Arc<ScanContext>,
    task: FileTask,
    /// The file's URL, for messages.
    url: String,
    /// For each entry of `context.columns`, the column of the file batch that holds it.
    sources: Vec<Option<usize>>,
    /// The rows the file's deletion vector marks.
    deleted: Option<RoaringTreemap>,
}

impl BatchAssembler {
    /// The output batch for a file batch whose first row is row `first_row` of the file.
    fn assemble(&self, file_batch: &RecordBatch, first_row: u64) -> Result<RecordBatch> {
        let rows = file_batch.num_rows();
        let schema = &self.context.schema;
        let mut columns = Vec::with_capacity(schema.fields().len());
        for ((output, field), source) in self
            .context
            .columns
            .iter()
            .zip(schema.fields())
            .zip(&self.sources)
        {
            let source = source.and_then(|index| file_batch.columns().get(index));
            let column = match output {
                OutputColumn::Data(logical) => match source {
                    Some(array) => to_table_column(
                        array,
                        &logical.data_type,
                        field.data_type(),
                        self.context.mode,
                        &logical.name,
                    )
                    .map_err(|reason| self.corrupt(reason))?,
                    None => new_null_array(field.data_type(), rows),
                },
                OutputColumn::Partition(index) => self.partition_constant(*index, rows)?,
                OutputColumn::RowId => {
                    let base = self.task.base_row_id;
                    let first = i64::try_from(first_row).unwrap_or(i64::MAX);
                    self.row_tracking_column(source, rows, "baseRowId", |row| {
                        let index = first.saturating_add(i64::try_from(row).unwrap_or(i64::MAX));
                        base.map(|base| base.saturating_add(index))
                    })?
                }
                OutputColumn::RowCommitVersion => {
                    let version = self.task.default_row_commit_version;
                    self.row_tracking_column(source, rows, "defaultRowCommitVersion", |_| version)?
                }
                OutputColumn::FilePath => Arc::new(arrow_array::StringArray::from_iter_values(
                    std::iter::repeat_n(self.task.path.as_str(), rows),
                )),
                OutputColumn::RowIndex => {
                    let first = i64::try_from(first_row).unwrap_or(i64::MAX);
                    let end = first.saturating_add(i64::try_from(rows).unwrap_or(i64::MAX));
                    Arc::new(Int64Array::from_iter_values(first..end))
                }
            };
            columns.push(column);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(schema.clone(), columns, &options)
            .map_err(|error| self.corrupt(error.to_string()))?;
        let batch = self.without_deleted_rows(batch, first_row)?;
        let batch = self.matching_rows(batch)?;
        self.output_columns(batch)
    }

    /// The rows of `batch` the scan's filter keeps.
    fn matching_rows(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let Some(filter) = &self.context.filter else {
            return Ok(batch);
        };
        let mask = evaluate(filter, &batch)?;
        filter_record_batch(&batch, &mask)
            .map_err(|error| Error::arrow(format!("filtering the rows of {}", self.url), error))
    }

    /// `batch` without the columns only the filter needed.
    fn output_columns(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let output = &self.context.output_schema;
        if output.fields().len() == batch.num_columns() {
            return Ok(batch);
        }
        let rows = batch.num_rows();
        let columns = batch
            .columns()
            .iter()
            .take(output.fields().len())
            .cloned()
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(output.clone(), columns, &options)
            .map_err(|error| Error::arrow(format!("reading {}", self.url), error))
    }

    /// The batch without the rows the deletion vector marks (catalogue E2-03), and without the
    /// rows outside the task's selected rows when it has some.
    fn without_deleted_rows(&self, batch: RecordBatch, first_row: u64) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let selecting = |error| Error::arrow(format!("selecting the rows of {}", self.url), error);
        let mut mask = self
            .deleted
            .as_ref()
            .map(|deleted| row_mask(deleted, rows, first_row));
        if let Some(selected) = &self.task.selected_rows {
            let inside = not(&row_mask(selected, rows, first_row)).map_err(selecting)?;
            mask = Some(match mask {
                Some(kept) => and(&kept, &inside).map_err(selecting)?,
                None => inside,
            });
        }
        let Some(mask) = mask else {
            return Ok(batch);
        };
        if mask.true_count() == rows {
            return Ok(batch);
        }
        filter_record_batch(&batch, &mask).map_err(|error| {
            Error::arrow(
                format!("applying the deletion vector of {}", self.url),
                error,
            )
        })
    }

    /// The file's partition value, repeated `rows` times.
    fn partition_constant(&self, index: usize, rows: usize) -> Result<ArrayRef> {
        let value = self.task.partition_values.get(index).ok_or_else(|| {
            Error::invalid_table(
                &self.url,
                "the file list has no value for a partition column",
            )
        })?;
        let indexes = UInt32Array::from(vec![0u32; rows]);
        take(value.as_ref(), &indexes, None)
            .map_err(|error| Error::arrow(format!("partition values of {}", self.url), error))
    }

    /// A row tracking column: the materialised values where present and non-null, else
    /// `default(row)`; a row with neither is an error naming the missing `field`.
    fn row_tracking_column(
        &self,
        materialized: Option<&ArrayRef>,
        rows: usize,
        field: &str,
        default: impl Fn(usize) -> Option<i64>,
    ) -> Result<ArrayRef> {
        let materialized = match materialized {
            Some(array) => Some(arrow::compute::cast(array, &ArrowType::Int64).map_err(
                |error| self.corrupt(format!("materialised row tracking column: {error}")),
            )?),
            None => None,
        };
        let materialized = materialized.as_ref().map(|a| a.as_primitive::<Int64Type>());
        let mut values = Vec::with_capacity(rows);
        for row in 0..rows {
            let stored = materialized
                .filter(|m| m.is_valid(row))
                .map(|m| m.value(row));
            let value = stored.or_else(|| default(row)).ok_or_else(|| {
                Error::invalid_table(
                    &self.url,
                    format!("row tracking was asked for but the file's add action has no {field}"),
                )
            })?;
            values.push(value);
        }
        Ok(Arc::new(Int64Array::from(values)))
    }

    fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::CorruptDataFile {
            path: self.url.clone(),
            reason: reason.into(),
        }
    }
}

/// The top-level file columns to read, in file order, and for each output column the position
/// of its source among them (`None`: not in the file, or not read from the file).
fn plan_projection(
    context: &ScanContext,
    file_schema: &SchemaRef,
) -> Result<(Vec<usize>, Vec<Option<usize>>)> {
    let file_fields = file_schema.fields();
    let by_name = |name: &Option<String>| {
        name.as_ref()
            .and_then(|name| file_fields.iter().position(|f| f.name() == name))
    };
    let mut wanted = Vec::with_capacity(context.columns.len());
    for column in &context.columns {
        wanted.push(match column {
            OutputColumn::Data(logical) => find_file_field(file_fields, logical, context.mode)?,
            OutputColumn::Partition(_) | OutputColumn::FilePath | OutputColumn::RowIndex => None,
            OutputColumn::RowId => by_name(&context.materialized_row_id),
            OutputColumn::RowCommitVersion => by_name(&context.materialized_row_commit_version),
        });
    }
    let mut roots: Vec<usize> = wanted.iter().flatten().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    let sources = wanted
        .iter()
        .map(|file_index| file_index.and_then(|i| roots.binary_search(&i).ok()))
        .collect();
    Ok((roots, sources))
}
