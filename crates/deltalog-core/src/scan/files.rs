//! Reading data files the caller names, rather than a snapshot's file list: the reader of
//! [`super::Scan`] for the change data feed ([`crate::scan::changes`]). Each file comes with the
//! values of the columns that are constant over its rows (partition values, the commit
//! version, ...) and may be restricted to a set of row indexes.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use futures::stream::BoxStream;
use roaring::RoaringTreemap;

use super::read::{FileTask, OutputColumn, ScanContext};
use super::{check_options, file_stream, filter_only_columns, select_columns, ScanOptions};
use crate::actions::DeletionVectorDescriptor;
use crate::error::{Error, Result};
use crate::expr::evaluate;
use crate::schema::{to_arrow_schema, ColumnMappingMode, StructType};
use crate::storage::Storage;

/// A planned read of data files that share one set of columns. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct FileSetScan {
    context: Arc<ScanContext>,
}

/// One data file of a [`FileSetScan`].
#[derive(Debug, Clone)]
pub(crate) struct FileToRead {
    /// The path as the log names it, URL-decoded.
    pub path: String,
    pub size: Option<u64>,
    /// One single-row array per constant column, in the order given to [`FileSetScan::new`],
    /// of the Arrow type of that column.
    pub constants: Vec<ArrayRef>,
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    /// When set, only the rows at these indexes are read (before the deletion vector applies).
    pub selected_rows: Option<Arc<RoaringTreemap>>,
}

impl FileSetScan {
    /// Plans reading files whose rows have the columns of `schema`: the columns named in
    /// `constants` come with each file ([`FileToRead::constants`]), the others are read from
    /// the files (matched as `mode` says, missing ones null, cast to the schema's types).
    ///
    /// `options.columns` and `options.filter` work as for [`super::Scan::new`] over `schema`
    /// (the filter may name columns that are not returned), with the same errors; row tracking
    /// cannot be asked for.
    pub(crate) fn new(
        storage: &Storage,
        schema: &StructType,
        constants: &[&str],
        mode: ColumnMappingMode,
        options: &ScanOptions,
    ) -> Result<FileSetScan> {
        check_options(options)?;
        if options.row_tracking {
            return Err(Error::InvalidArgument(
                "row tracking columns cannot be read here".to_string(),
            ));
        }
        let selected = select_columns(schema, options.columns.as_deref())?;
        let hidden = match &options.filter {
            Some(filter) => filter_only_columns(filter, schema, &selected, options)?,
            None => Vec::new(),
        };
        let columns = selected
            .iter()
            .chain(&hidden)
            .map(
                |field| match constants.iter().position(|c| *c == field.name) {
                    Some(index) => OutputColumn::Partition(index),
                    None => OutputColumn::Data(field.clone()),
                },
            )
            .collect();
        let output_schema = to_arrow_schema(&StructType::new(selected))?;
        let hidden_schema = to_arrow_schema(&StructType::new(hidden))?;
        let read_fields: Vec<Arc<Field>> = output_schema
            .fields()
            .iter()
            .chain(hidden_schema.fields())
            .cloned()
            .collect();
        let read_schema = Arc::new(Schema::new(read_fields));
        if let Some(filter) = &options.filter {
            evaluate(filter, &RecordBatch::new_empty(read_schema.clone()))?;
        }
        let context = ScanContext {
            storage: storage.clone(),
            schema: read_schema,
            output_schema: Arc::new(output_schema),
            columns,
            filter: options.filter.clone(),
            mode,
            batch_size: options.batch_size,
            materialized_row_id: None,
            materialized_row_commit_version: None,
        };
        Ok(FileSetScan {
            context: Arc::new(context),
        })
    }

    /// The schema of the batches: the selected columns of `schema`, logical names.
    pub(crate) fn schema(&self) -> SchemaRef {
        self.context.output_schema.clone()
    }

    /// The rows of `file` that its deletion vector, its selected rows and the filter keep, in
    /// file order; decoded by a task of the current tokio runtime when there is one. Batches
    /// are never empty.
    pub(crate) fn read(&self, file: FileToRead) -> BoxStream<'static, Result<RecordBatch>> {
        let task = FileTask {
            path: file.path,
            size: file.size,
            partition_values: file.constants,
            deletion_vector: file.deletion_vector,
            selected_rows: file.selected_rows,
            base_row_id: None,
            default_row_commit_version: None,
        };
        file_stream(self.context.clone(), task)
    }
}
