//! The change data a write produces besides its data files (spec "Change Data Files", "Add
//! CDC File"): the `_change_type` column and the `_change_data/` folder, the writer
//! configuration of files holding columns beyond the table schema, the `cdc` actions of change
//! data files, and rows written together with their `insert` change rows. Also the check that
//! every row a `replaceWhere` writes matches its predicate.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Schema};
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::{DataFileWriter, WriteFailure, WriteResult, WriterOptions, WrittenFile};
use crate::error::{Error, Result};
use crate::expr::{evaluate, Expr};
use crate::schema::{
    PrimitiveType, StructField, StructType, COLUMN_MAPPING_PHYSICAL_NAME_KEY, EXTRA_COLUMN_KEY,
};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;

/// The column of change data files holding the kind of change (spec "Change Data Files").
pub(crate) const CHANGE_TYPE: &str = "_change_type";
/// The folder of change data files under the table root.
pub(crate) const CHANGE_DATA_DIR: &str = "_change_data";

/// `config` with `names` appended to its schema as nullable columns of type `ty`, for the
/// writer of data files that hold them beyond the table schema (materialised row tracking
/// columns, `_change_type`): stored under their own names and, under column mapping, without
/// a column id, as Delta on Spark writes them (see [`EXTRA_COLUMN_KEY`]).
pub(crate) fn with_extra_columns(
    config: &TableConfiguration,
    names: &[&str],
    ty: PrimitiveType,
) -> Result<TableConfiguration> {
    let mut schema: StructType = config.schema().clone();
    for name in names {
        let field = StructField::new(*name, ty, true).with_metadata([
            (COLUMN_MAPPING_PHYSICAL_NAME_KEY, Value::from(*name)),
            (EXTRA_COLUMN_KEY, Value::Bool(true)),
        ]);
        schema.fields.push(field);
    }
    let mut metadata = config.metadata().clone();
    metadata.schema_string = Some(schema.to_json()?);
    TableConfiguration::try_new(config.protocol().clone(), metadata, config.table_uri())
}

/// `cdc` actions (the layout of `action_schema::cdc_fields`) of change data files.
pub(crate) fn cdc_rows(files: &[WrittenFile]) -> Result<StructArray> {
    use arrow_array::builder::{MapBuilder, MapFieldNames, StringBuilder};
    let names = MapFieldNames {
        entry: "key_value".to_string(),
        key: "key".to_string(),
        value: "value".to_string(),
    };
    let mut partitions = MapBuilder::new(Some(names), StringBuilder::new(), StringBuilder::new());
    for file in files {
        for (key, value) in &file.partition_values {
            partitions.keys().append_value(key);
            partitions.values().append_option(value.as_deref());
        }
        partitions
            .append(true)
            .map_err(|error| Error::arrow("change data file partition values", error))?;
    }
    let fields = crate::actions::layout::cdc_fields();
    let paths: StringArray = files
        .iter()
        .map(|f| Some(crate::log::encode::encode_path(&f.path)))
        .collect();
    let partitions = partitions.finish();
    let partitions = match fields[1].data_type() {
        ty @ DataType::Map(_, _) => arrow::compute::cast(&partitions, ty)
            .map_err(|error| Error::arrow("change data file partition values", error))?,
        _ => Arc::new(partitions) as ArrayRef,
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(paths),
        partitions,
        Arc::new(Int64Array::from_iter_values(
            files
                .iter()
                .map(|f| i64::try_from(f.size).unwrap_or(i64::MAX)),
        )),
        Arc::new(BooleanArray::from(vec![false; files.len()])),
        arrow_array::new_null_array(fields[4].data_type(), files.len()),
    ];
    StructArray::try_new(fields, columns, None)
        .map_err(|error| Error::arrow("change data file actions", error))
}

/// Refuses `batch` unless every row matches `predicate` (NULL is no match), with Delta on
/// Spark's `DELTA_REPLACE_WHERE_MISMATCH` ([`Error::ReplaceWhereMismatch`]).
pub(crate) fn rows_match(predicate: &Expr, batch: &RecordBatch, table: &str) -> Result<()> {
    let mask = evaluate(predicate, batch)?;
    if mask.true_count() == batch.num_rows() {
        return Ok(());
    }
    let row = (0..mask.len())
        .find(|row| mask.is_null(*row) || !mask.value(*row))
        .unwrap_or(0);
    Err(Error::ReplaceWhereMismatch {
        table: table.to_string(),
        predicate: predicate.to_string(),
        reason: format!(
            "row {row} of the data written does not match it; every row written must \
             (spark.databricks.delta.replaceWhere.constraintCheck.enabled)"
        ),
    })
}

/// Writes every batch of `batches` to new data files of the table `config` and, the same
/// rows with `_change_type` `insert`, to change data files under `_change_data/`. Returns the
/// data files written and the change data files. On failure the [`WriteFailure`] names every
/// file completed.
pub(crate) async fn write_with_insert_changes<S>(
    config: &TableConfiguration,
    storage: Storage,
    options: WriterOptions,
    batches: S,
) -> Result<(WriteResult, Vec<WrittenFile>), WriteFailure>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let change_config = with_extra_columns(config, &[CHANGE_TYPE], PrimitiveType::String)
        .map_err(WriteFailure::unwritten)?;
    let change_options = WriterOptions {
        directory: Some(CHANGE_DATA_DIR.to_string()),
        ..options.clone()
    };
    let mut data = DataFileWriter::try_new(config, storage.clone(), options)
        .map_err(WriteFailure::unwritten)?;
    let mut changes = match DataFileWriter::try_new(&change_config, storage, change_options) {
        Ok(writer) => writer,
        Err(error) => {
            return Err(WriteFailure {
                error,
                written_files: data.abort().await,
            })
        }
    };
    let mut batches = std::pin::pin!(batches);
    while let Some(batch) = batches.next().await {
        let written = match batch {
            Ok(batch) => write_both(&mut data, &mut changes, batch).await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            let mut written_files = data.abort().await;
            written_files.extend(changes.abort().await);
            return Err(WriteFailure {
                error,
                written_files,
            });
        }
    }
    let data = data.finish().await;
    let changes = changes.finish().await;
    match (data, changes) {
        (Ok(data), Ok(changes)) => Ok((data, changes.files)),
        (data, changes) => {
            let mut error = None;
            let mut written_files = Vec::new();
            for outcome in [data, changes] {
                match outcome {
                    Ok(result) => written_files.extend(result.files.into_iter().map(|f| f.path)),
                    Err(failure) => {
                        written_files.extend(failure.written_files);
                        error.get_or_insert(failure.error);
                    }
                }
            }
            Err(WriteFailure {
                error: error.unwrap_or_else(|| {
                    Error::InvalidArgument("closing the written files failed".into())
                }),
                written_files,
            })
        }
    }
}

/// Writes `batch` as data, then as `insert` change rows. Both writers fill defaults and
/// generated values and number identity values the same way from the same start, so the
/// change rows equal the rows written.
async fn write_both(
    data: &mut DataFileWriter,
    changes: &mut DataFileWriter,
    batch: RecordBatch,
) -> Result<()> {
    let rows = batch.num_rows();
    data.write(batch.clone()).await?;
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    fields.push(Field::new(CHANGE_TYPE, DataType::Utf8, true));
    columns.push(Arc::new(StringArray::from(vec!["insert"; rows])));
    let with_type = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|error| Error::arrow("assembling insert change rows", error))?;
    changes.write(with_type).await
}
