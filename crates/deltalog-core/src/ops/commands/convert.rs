//! CONVERT TO DELTA: a directory of Parquet files becomes a Delta table in place, as Delta on
//! Spark's `ConvertToDeltaCommand` does for a path-based Parquet table.
//!
//! Every non-hidden object under the root whose name ends in `.parquet` is a data file (hidden
//! as for VACUUM: a path segment starting with `_` or `.` other than a partition directory).
//! The table schema is the union of the files' schemas (read from their footers; a column
//! must have one type in every file), followed by the partition columns. With a partition
//! schema, each file must sit in Hive-style directories `col=value` for exactly those
//! columns in that order; values are unescaped as Spark escapes them and
//! `__HIVE_DEFAULT_PARTITION__` is NULL. Statistics are computed by reading each file (Spark's
//! `collectStats`), as the data-file writer writes them. Version 0 holds the protocol, the
//! metadata and one add per file (operation `CONVERT`); no data file is moved or rewritten.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use futures::TryStreamExt;
use parquet::arrow::ParquetRecordBatchStreamBuilder;

use crate::actions::partition::{
    partition_values_to_arrow, unescape_partition_path_value, SessionTimeZone,
};
use crate::error::{Error, Result};
use crate::schema::{to_arrow_schema, ColumnMappingMode, DataType, StructField, StructType};
use crate::storage::{Storage, TableObject};
use crate::transaction::{AddFile, TableSpec};
use crate::write::stats::StatsPlan;

use crate::ops::commands::vacuum::is_hidden;
use crate::schema::from_arrow::struct_type_from_arrow;

/// The name Spark gives a NULL partition value in a directory name.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// What [`convert_to_delta`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertResult {
    /// The version committed (0), or the existing version when the location already held a
    /// Delta table (then nothing is done, as Spark does).
    pub version: u64,
    /// False when the location already held a Delta table.
    pub converted: bool,
    /// The data files the table now references.
    pub num_files: u64,
}

/// Converts the Parquet files under `table`'s root into a Delta table partitioned by the
/// columns of `partition_schema` (see the module documentation).
///
/// Errors: [`Error::InvalidArgument`] for a file outside the expected partition directories,
/// a partition value that is not of its column's type, a partition column that is not of a
/// primitive type, or no Parquet file at all; [`Error::SchemaMismatch`] for a column with different types in two
/// files, or a partition column also stored in the files; [`Error::CorruptDataFile`] for a
/// file that is not Parquet.
pub async fn convert_to_delta(
    storage: &Storage,
    partition_schema: Option<StructType>,
) -> Result<ConvertResult> {
    if crate::log::has_log_files(storage).await? {
        return Ok(ConvertResult {
            version: crate::log::latest_version(storage).await?,
            converted: false,
            num_files: 0,
        });
    }
    let partition_schema = partition_schema.unwrap_or_default();
    let partition_columns: Vec<String> = partition_schema
        .fields
        .iter()
        .map(|f| f.name.clone())
        .collect();
    let files = parquet_files(storage, &partition_columns).await?;
    if files.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{} holds no Parquet file to convert",
            storage.uri()
        )));
    }
    let data_schema = merged_schema(storage, &files).await?;
    for column in &partition_columns {
        if data_schema
            .fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(column))
        {
            return Err(Error::SchemaMismatch {
                table: storage.uri().to_string(),
                column: column.clone(),
                reason: "a partition column is also stored in the data files".into(),
            });
        }
    }
    let plan = StatsPlan::try_new(
        &data_schema,
        &HashMap::new(),
        ColumnMappingMode::None,
        false,
    )?;
    let arrow_schema: SchemaRef = Arc::new(to_arrow_schema(&data_schema)?);
    let mut adds = Vec::with_capacity(files.len());
    for file in &files {
        let partition_values = partition_values(&file.path, &partition_columns)?;
        let stats = file_stats(storage, file, &plan, &arrow_schema).await?;
        adds.push(AddFile {
            path: file.path.clone(),
            partition_values,
            size: i64::try_from(file.size).unwrap_or(i64::MAX),
            modification_time: file.modified_ms,
            data_change: true,
            stats: Some(stats),
            ..AddFile::default()
        });
    }
    check_partition_values(&partition_schema, &adds)?;
    let mut schema = data_schema;
    schema.fields.extend(partition_schema.fields);
    let spec = TableSpec {
        schema,
        partition_columns: partition_columns.clone(),
        ..TableSpec::default()
    };
    let mut transaction = crate::transaction::create_transaction(storage, spec).await?;
    transaction.set_operation("CONVERT");
    transaction.set_operation_parameter("numFiles", adds.len());
    transaction.set_operation_parameter(
        "partitionedBy",
        serde_json::to_string(&partition_columns).unwrap_or_default(),
    );
    transaction.set_operation_parameter("collectStats", true);
    transaction.set_operation_parameter("sourceFormat", "parquet");
    transaction.add(&adds)?;
    let transaction =
        transaction.with_operation_metric("numConvertedFiles", adds.len().to_string());
    let committed = transaction.commit().await?;
    Ok(ConvertResult {
        version: committed.version,
        converted: true,
        num_files: adds.len() as u64,
    })
}

/// The Parquet files under the root, sorted by path.
async fn parquet_files(
    storage: &Storage,
    partition_columns: &[String],
) -> Result<Vec<TableObject>> {
    let mut files: Vec<TableObject> = storage
        .list_table()
        .try_filter(|object| {
            let wanted = !is_hidden(&object.path, partition_columns)
                && object.path.to_ascii_lowercase().ends_with(".parquet");
            async move { wanted }
        })
        .try_collect()
        .await?;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The union of the files' schemas, in order of first appearance.
async fn merged_schema(storage: &Storage, files: &[TableObject]) -> Result<StructType> {
    let mut fields: Vec<StructField> = Vec::new();
    let mut seen_in: HashMap<String, String> = HashMap::new();
    for file in files {
        let schema = footer_schema(storage, file).await?;
        let delta = struct_type_from_arrow(&schema)?;
        for field in delta.fields {
            match fields.iter().find(|f| f.name == field.name) {
                Some(existing) if existing.data_type != field.data_type => {
                    return Err(Error::SchemaMismatch {
                        table: storage.root_url().to_string(),
                        column: field.name.clone(),
                        reason: format!(
                            "it is {:?} in {} but {:?} in {}",
                            existing.data_type,
                            seen_in.get(&field.name).cloned().unwrap_or_default(),
                            field.data_type,
                            file.path
                        ),
                    })
                }
                Some(_) => {}
                None => {
                    seen_in.insert(field.name.clone(), file.path.clone());
                    fields.push(StructField {
                        nullable: true,
                        ..field
                    });
                }
            }
        }
    }
    Ok(StructType { fields })
}

async fn footer_schema(storage: &Storage, file: &TableObject) -> Result<SchemaRef> {
    let reader = reader(storage, file)?;
    let builder = ParquetRecordBatchStreamBuilder::new(reader)
        .await
        .map_err(|error| corrupt(storage, file, &error.to_string()))?;
    Ok(builder.schema().clone())
}

/// The statistics JSON of `file`, read whole, its columns arranged as `schema`.
async fn file_stats(
    storage: &Storage,
    file: &TableObject,
    plan: &StatsPlan,
    schema: &SchemaRef,
) -> Result<String> {
    let reader = reader(storage, file)?;
    let mut stream = ParquetRecordBatchStreamBuilder::new(reader)
        .await
        .and_then(|builder| builder.build())
        .map_err(|error| corrupt(storage, file, &error.to_string()))?;
    let mut stats = plan.start();
    while let Some(batch) = stream
        .try_next()
        .await
        .map_err(|error| corrupt(storage, file, &error.to_string()))?
    {
        let arranged =
            arrange(&batch, schema).map_err(|e| corrupt(storage, file, &e.to_string()))?;
        stats.update(plan, &arranged)?;
    }
    stats.to_json(plan)
}

/// `batch` with the columns of `schema`, in its order: missing columns are NULL, others cast.
fn arrange(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .map(|field: &Arc<Field>| -> Result<ArrayRef> {
            match batch.column_by_name(field.name()) {
                None => Ok(new_null_array(field.data_type(), batch.num_rows())),
                Some(column) if column.data_type() == field.data_type() => Ok(column.clone()),
                Some(column) => cast(column, field.data_type()).map_err(|error| {
                    Error::arrow(format!("reading column {}", field.name()), error)
                }),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let nullable: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(nullable)), columns)
        .map_err(|error| Error::arrow("arranging the columns of a data file", error))
}

/// The partition values of the file at `path`, from its `col=value` directories.
fn partition_values(path: &str, columns: &[String]) -> Result<Vec<(String, Option<String>)>> {
    let directories: Vec<&str> = path.split('/').collect();
    let directories = &directories[..directories.len().saturating_sub(1)];
    if directories.len() != columns.len() {
        return Err(Error::InvalidArgument(format!(
            "{path} is not in partition directories {}",
            columns
                .iter()
                .map(|c| format!("{c}=..."))
                .collect::<Vec<_>>()
                .join("/")
        )));
    }
    directories
        .iter()
        .zip(columns)
        .map(|(directory, column)| {
            let value = directory
                .strip_prefix(column.as_str())
                .and_then(|rest| rest.strip_prefix('='))
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{path}: the directory {directory} is not {column}=<value>"
                    ))
                })?;
            let value = unescape_partition_path_value(value);
            Ok((column.clone(), (value != HIVE_NULL).then_some(value)))
        })
        .collect()
}

/// Refuses a partition value that does not parse as its column's type (as the reader will
/// parse it).
fn check_partition_values(partition_schema: &StructType, adds: &[AddFile]) -> Result<()> {
    for (index, field) in partition_schema.fields.iter().enumerate() {
        let DataType::Primitive(ty) = &field.data_type else {
            return Err(Error::InvalidArgument(format!(
                "the partition column {} must be of a primitive type",
                field.name
            )));
        };
        let values: Vec<Option<&str>> = adds
            .iter()
            .map(|add| add.partition_values[index].1.as_deref())
            .collect();
        partition_values_to_arrow(&values, ty, &field.name, &SessionTimeZone::utc()).map_err(
            |error| Error::InvalidArgument(format!("a partition directory does not fit: {error}")),
        )?;
    }
    Ok(())
}

fn reader(storage: &Storage, file: &TableObject) -> Result<crate::storage::ParquetReader> {
    let location = match storage.root_path().as_ref() {
        "" => file.path.clone(),
        root => format!("{root}/{}", file.path),
    };
    let location =
        object_store::path::Path::parse(&location).map_err(|error| Error::InvalidPath {
            path: file.path.clone(),
            reason: error.to_string(),
        })?;
    Ok(storage.parquet_reader(&location, Some(file.size)))
}

fn corrupt(storage: &Storage, file: &TableObject, reason: &str) -> Error {
    Error::CorruptDataFile {
        path: format!("{}{}", storage.root_url(), file.path),
        reason: format!("not a readable Parquet file: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_directories_give_values() {
        let columns = vec!["a".to_string(), "b".to_string()];
        let values = partition_values("a=1/b=x%3Ay/part-0.parquet", &columns).unwrap();
        assert_eq!(
            values,
            vec![
                ("a".to_string(), Some("1".to_string())),
                ("b".to_string(), Some("x:y".to_string()))
            ]
        );
        let null = partition_values("a=__HIVE_DEFAULT_PARTITION__/b=2/f.parquet", &columns);
        assert_eq!(null.unwrap()[0].1, None);
        assert!(partition_values("a=1/f.parquet", &columns).is_err());
        assert!(partition_values("b=1/a=2/f.parquet", &columns).is_err());
    }
}
