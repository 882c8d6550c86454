//! What a [`super::DataFileWriter`] works out once per table version ([`WritePlan`]) and the
//! preparation of one input batch into the parts written to each partition's file.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use arrow::compute::take_record_batch;
use arrow::row::{RowConverter, SortField};
use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::conform::conform_batch;
use super::duties::{Duties, IdentityState};
use super::stats::StatsPlan;
use super::{Codec, RowOrigin, WriterOptions, DEFAULT_TARGET_FILE_SIZE};
use crate::actions::partition::{escape_partition_path_value, HIVE_DEFAULT_PARTITION};
use crate::error::{Error, Result};
use crate::scalar::{to_partition_value, Scalar};
use crate::schema::{
    to_arrow_physical_schema, to_arrow_schema, DataType, PrimitiveType, StructType,
};
use crate::table_config::TableConfiguration;

/// The text partition values of a file, in partition column order; `None` for NULL.
pub(crate) type PartitionKey = Vec<Option<String>>;

/// Everything about the table a write needs, worked out once.
#[derive(Debug)]
pub(crate) struct WritePlan {
    pub table: String,
    pub schema: StructType,
    pub logical_arrow: SchemaRef,
    /// Top-level index and physical name of each partition column, in partition order.
    partition_columns: Vec<(usize, String, PrimitiveType)>,
    /// Top-level indexes of the columns the data files hold: the data columns in schema
    /// order, then the partition columns in partition order when the table materialises
    /// them (`TableConfiguration::materializes_partition_columns`).
    data_columns: Vec<usize>,
    /// The Arrow schema of the data files: physical names, Parquet field ids.
    pub physical_arrow: SchemaRef,
    pub stats: StatsPlan,
    pub duties: Duties,
    pub options: WriterOptions,
    pub target_file_size: u64,
    pub properties: WriterProperties,
    /// The tags of the adds of the files written (`TableConfiguration::new_file_tags`).
    pub file_tags: Vec<(String, Option<String>)>,
    /// Length of the random directory prefix under `delta.randomizeFilePrefixes`.
    pub random_prefix: Option<usize>,
    pub file_counter: AtomicUsize,
}

/// `builder` with no Parquet statistics (chunk or page) and no dictionary encoding for float
/// and double columns, so that Spark's Parquet reader never skips a row group by their values:
/// parquet-rs leaves NaN out of their min and max, and Spark then skips a row group or page
/// holding a NaN for `x > v`, although Spark's NaN is above every number (differential seed
/// 201); and parquet-mr's dictionary filter orders `-0.0` below `0.0`, so a row group whose
/// dictionary holds `-0.0` and only negative numbers was skipped for `NOT (x < 0)` (seed
/// 495). The Delta statistics of the file (`stats`) are ours and keep both.
fn without_float_statistics(
    mut builder: parquet::file::properties::WriterPropertiesBuilder,
    physical: &arrow_schema::Schema,
) -> parquet::errors::Result<parquet::file::properties::WriterPropertiesBuilder> {
    let descriptor = parquet::arrow::ArrowSchemaConverter::new().convert(physical)?;
    for column in descriptor.columns() {
        if matches!(
            column.physical_type(),
            parquet::basic::Type::FLOAT | parquet::basic::Type::DOUBLE
        ) {
            builder = builder
                .set_column_statistics_enabled(
                    column.path().clone(),
                    parquet::file::properties::EnabledStatistics::None,
                )
                .set_column_dictionary_enabled(column.path().clone(), false);
        }
    }
    Ok(builder)
}

/// The rows of one input batch that go to one partition.
#[derive(Debug)]
pub(crate) struct Part {
    pub key: PartitionKey,
    /// Physical partition column name and value text.
    pub partition_values: Arc<Vec<(String, Option<String>)>>,
    /// `col=value/...` directories, empty for unpartitioned tables.
    pub directory: String,
    /// The data columns, as the data files store them.
    pub batch: RecordBatch,
}

impl WritePlan {
    pub(super) fn try_new(
        config: &TableConfiguration,
        options: WriterOptions,
    ) -> Result<WritePlan> {
        let positive = |value: u64, what: &str| {
            if value == 0 {
                Err(Error::InvalidArgument(format!(
                    "the {what} must be positive"
                )))
            } else {
                Ok(())
            }
        };
        positive(options.row_group_bytes as u64, "row group size")?;
        positive(options.row_group_rows as u64, "row group row count")?;
        positive(options.upload_part_size as u64, "upload part size")?;
        if let Some(records) = options.max_records_per_file {
            positive(records, "number of records per file")?;
        }
        let target_file_size = options
            .target_file_size
            .or(config.properties().target_file_size)
            .unwrap_or(DEFAULT_TARGET_FILE_SIZE);
        positive(target_file_size, "target file size")?;

        let table = config.table_uri().to_string();
        let schema = config.schema().clone();
        let mode = config.column_mapping();
        let partition_schema = schema.partition_schema(config.partition_columns())?;
        let mut partition_columns = Vec::new();
        for field in &partition_schema.fields {
            let index = schema
                .fields
                .iter()
                .position(|f| f.name == field.name)
                .ok_or_else(|| Error::invalid_table(&table, "partition column not found"))?;
            let ty = match &field.data_type {
                DataType::Primitive(primitive) => *primitive,
                other => {
                    return Err(Error::invalid_table(
                        &table,
                        format!("partition column `{}` has type {other}", field.name),
                    ))
                }
            };
            partition_columns.push((index, field.physical_name(mode)?.to_string(), ty));
        }
        let data_schema = schema.data_schema(config.partition_columns());
        let mut data_columns: Vec<usize> = schema
            .fields
            .iter()
            .enumerate()
            .filter(|(_, field)| data_schema.field(&field.name).is_some())
            .map(|(index, _)| index)
            .collect();
        let mut file_schema = data_schema.clone();
        if config.materializes_partition_columns() {
            // Spec "Iceberg Compatibility V1": partition values go after the data columns.
            for (index, _, _) in &partition_columns {
                data_columns.push(*index);
                file_schema.fields.push(schema.fields[*index].clone());
            }
        }
        let physical_arrow = Arc::new(to_arrow_physical_schema(&file_schema, mode)?);
        let stats = StatsPlan::try_new(
            &data_schema,
            &config.metadata().configuration,
            mode,
            config.is_feature_supported(&crate::table_config::TableFeature::DeletionVectors),
        )?;
        let duties = Duties::try_new(config).map_err(|duty| duty.into_error(config.table_uri()))?;
        let compression = match options.codec {
            Codec::Zstd => Compression::ZSTD(ZstdLevel::default()),
            Codec::Snappy => Compression::SNAPPY,
            Codec::Uncompressed => Compression::UNCOMPRESSED,
        };
        let builder = WriterProperties::builder()
            .set_compression(compression)
            .set_max_row_group_row_count(Some(options.row_group_rows))
            .set_max_row_group_bytes(Some(options.row_group_bytes));
        let properties = without_float_statistics(builder, &physical_arrow)
            .map_err(|e| Error::internal(table.as_str(), format!("the Parquet schema: {e}")))?
            .build();
        let properties_of_table = config.properties();
        let random_prefix = properties_of_table
            .randomize_file_prefixes
            .then_some(properties_of_table.random_prefix_length);
        Ok(WritePlan {
            table,
            logical_arrow: Arc::new(to_arrow_schema(&schema)?),
            schema,
            partition_columns,
            data_columns,
            physical_arrow,
            stats,
            duties,
            options,
            target_file_size,
            properties,
            file_tags: config.new_file_tags(),
            random_prefix,
            file_counter: AtomicUsize::new(0),
        })
    }

    /// The file name suffix of the codec (`.zstd.parquet`).
    pub(super) fn file_suffix(&self) -> &'static str {
        match self.options.codec {
            Codec::Zstd => ".zstd.parquet",
            Codec::Snappy => ".snappy.parquet",
            Codec::Uncompressed => ".parquet",
        }
    }

    /// Conforms `batch` to the table, does the table's per-row duties and splits the rows by
    /// partition; `origin` says whether the rows keep their identity values. CPU work: run it
    /// through [`crate::util::cpu::run`].
    pub(super) fn prepare(
        &self,
        batch: &RecordBatch,
        origin: RowOrigin,
        identity: &mut IdentityState,
    ) -> Result<Vec<Part>> {
        let given = conform_batch(batch, &self.schema, &self.logical_arrow, &self.table)?;
        let columns = self.duties.complete(
            &self.schema,
            &self.logical_arrow,
            given,
            batch.num_rows(),
            origin,
            identity,
            &self.table,
        )?;
        let logical = RecordBatch::try_new(self.logical_arrow.clone(), columns)
            .map_err(|e| Error::arrow(format!("assembling rows for {}", self.table), e))?;
        self.duties.check_rows(&logical, &self.table)?;
        if self.partition_columns.is_empty() {
            return Ok(vec![Part {
                key: Vec::new(),
                partition_values: Arc::new(Vec::new()),
                directory: String::new(),
                batch: self.data_batch(&logical)?,
            }]);
        }
        self.split(&logical)
    }

    /// The rows of `logical` grouped by their partition values, in order of first appearance.
    fn split(&self, logical: &RecordBatch) -> Result<Vec<Part>> {
        let arrays: Vec<ArrayRef> = self
            .partition_columns
            .iter()
            .map(|(index, _, _)| logical.column(*index).clone())
            .collect();
        let fields = arrays
            .iter()
            .map(|array| SortField::new(array.data_type().clone()))
            .collect();
        let converter =
            RowConverter::new(fields).map_err(|e| Error::arrow("grouping rows by partition", e))?;
        let rows = converter
            .convert_columns(&arrays)
            .map_err(|e| Error::arrow("grouping rows by partition", e))?;
        let mut groups: HashMap<&[u8], usize> = HashMap::new();
        let mut members: Vec<Vec<u32>> = Vec::new();
        for (row, bytes) in rows.iter().enumerate() {
            let group = *groups.entry(bytes.data()).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            members[group].push(row as u32);
        }
        // Groups whose values write the same partition (an empty string is a NULL
        // partition value, as Spark writes it) become one part.
        let mut parts: Vec<Part> = Vec::with_capacity(members.len());
        let mut part_rows: Vec<Vec<u32>> = Vec::with_capacity(members.len());
        let mut by_key: HashMap<Vec<Option<String>>, usize> = HashMap::new();
        for rows in members {
            let part = self.part_of(&arrays, rows[0] as usize)?;
            match by_key.get(&part.key) {
                Some(&index) => part_rows[index].extend(rows),
                None => {
                    by_key.insert(part.key.clone(), parts.len());
                    parts.push(part);
                    part_rows.push(rows);
                }
            }
        }
        for (part, mut rows) in parts.iter_mut().zip(part_rows) {
            rows.sort_unstable();
            let indices = UInt32Array::from(rows);
            let taken = take_record_batch(logical, &indices)
                .map_err(|e| Error::arrow("splitting rows by partition", e))?;
            part.batch = self.data_batch(&taken)?;
        }
        Ok(parts)
    }

    /// The partition (values, directory; no rows yet) of row `row` of the partition columns
    /// `arrays`.
    fn part_of(&self, arrays: &[ArrayRef], row: usize) -> Result<Part> {
        let mut key = Vec::with_capacity(arrays.len());
        let mut values = Vec::with_capacity(arrays.len());
        let mut directories = Vec::with_capacity(arrays.len());
        for ((_, physical, ty), array) in self.partition_columns.iter().zip(arrays) {
            let scalar = scalar_at(array.as_ref(), row, *ty)?;
            let text = to_partition_value(&scalar)?.filter(|text| !text.is_empty());
            let shown = match &text {
                Some(text) => escape_partition_path_value(text),
                None => HIVE_DEFAULT_PARTITION.to_string(),
            };
            directories.push(format!("{}={shown}", escape_partition_path_value(physical)));
            values.push((physical.clone(), text.clone()));
            key.push(text);
        }
        Ok(Part {
            key,
            partition_values: Arc::new(values),
            directory: directories.join("/"),
            batch: RecordBatch::new_empty(self.physical_arrow.clone()),
        })
    }

    /// The columns of `logical` the data files hold, retyped to the physical schema (names
    /// and field ids differ, the layout is the same). A materialised string partition value
    /// that is empty is written NULL, as its partition value is (Spark's `empty2null`).
    fn data_batch(&self, logical: &RecordBatch) -> Result<RecordBatch> {
        let columns = self
            .data_columns
            .iter()
            .zip(self.physical_arrow.fields())
            .map(|(index, field)| {
                let column = logical.column(*index);
                let is_partition = self.partition_columns.iter().any(|(i, ..)| i == index);
                let column = match column.as_string_opt::<i32>() {
                    Some(strings) if is_partition => empty_to_null(strings)?,
                    _ => column.clone(),
                };
                let data = retyped(column.to_data(), field.data_type())
                    .map_err(|e| Error::arrow("renaming columns to physical names", e))?;
                Ok(make_array(data))
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(self.physical_arrow.clone(), columns)
            .map_err(|e| Error::arrow(format!("assembling data columns for {}", self.table), e))
    }
}

/// `data` under `to`, a type of the same layout whose field names, nullability or metadata
/// differ (at any depth: a map's entries carry the field ids of its key and value).
fn retyped(
    data: arrow::array::ArrayData,
    to: &arrow_schema::DataType,
) -> std::result::Result<arrow::array::ArrayData, arrow_schema::ArrowError> {
    use arrow_schema::DataType as Arrow;
    let child_types: Vec<&Arrow> = match to {
        Arrow::Struct(fields) => fields.iter().map(|f| f.data_type()).collect(),
        Arrow::List(field)
        | Arrow::LargeList(field)
        | Arrow::Map(field, _)
        | Arrow::FixedSizeList(field, _) => vec![field.data_type()],
        _ => Vec::new(),
    };
    let children = match child_types.is_empty() {
        true => data.child_data().to_vec(),
        false => data
            .child_data()
            .iter()
            .zip(child_types)
            .map(|(child, ty)| retyped(child.clone(), ty))
            .collect::<std::result::Result<Vec<_>, _>>()?,
    };
    data.into_builder()
        .data_type(to.clone())
        .child_data(children)
        .build()
}

/// `strings` with its empty values made NULL.
fn empty_to_null(strings: &arrow_array::StringArray) -> Result<ArrayRef> {
    let empty =
        arrow::compute::kernels::cmp::eq(strings, &arrow_array::StringArray::new_scalar(""))
            .map_err(|e| Error::arrow("materialising partition values", e))?;
    arrow::compute::nullif(strings, &empty)
        .map_err(|e| Error::arrow("materialising partition values", e))
}

/// The value at `row` of a column of the primitive type `ty` (in its table Arrow type).
pub(crate) fn scalar_at(array: &dyn Array, row: usize, ty: PrimitiveType) -> Result<Scalar> {
    use arrow_array::types::{
        Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
        Int8Type, TimestampMicrosecondType,
    };
    if array.is_null(row) {
        return Ok(Scalar::Null);
    }
    let wrong = || {
        Error::InvalidArgument(format!(
            "a {} array cannot hold values of type {ty}",
            array.data_type()
        ))
    };
    Ok(match ty {
        PrimitiveType::Boolean => {
            Scalar::Boolean(array.as_boolean_opt().ok_or_else(wrong)?.value(row))
        }
        PrimitiveType::Byte => Scalar::Int8(
            array
                .as_primitive_opt::<Int8Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Short => Scalar::Int16(
            array
                .as_primitive_opt::<Int16Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Integer => Scalar::Int32(
            array
                .as_primitive_opt::<Int32Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Long => Scalar::Int64(
            array
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Float => Scalar::Float32(
            array
                .as_primitive_opt::<Float32Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Double => Scalar::Float64(
            array
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Decimal { scale, .. } => Scalar::Decimal {
            value: array
                .as_primitive_opt::<Decimal128Type>()
                .ok_or_else(wrong)?
                .value(row),
            scale: u8::try_from(scale).map_err(|_| wrong())?,
        },
        PrimitiveType::String => Scalar::Utf8(
            array
                .as_string_opt::<i32>()
                .ok_or_else(wrong)?
                .value(row)
                .to_string(),
        ),
        PrimitiveType::Binary => Scalar::Binary(
            array
                .as_binary_opt::<i32>()
                .ok_or_else(wrong)?
                .value(row)
                .to_vec(),
        ),
        PrimitiveType::Date => Scalar::Date(
            array
                .as_primitive_opt::<Date32Type>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Timestamp => Scalar::Timestamp(
            array
                .as_primitive_opt::<TimestampMicrosecondType>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::TimestampNtz => Scalar::TimestampNtz(
            array
                .as_primitive_opt::<TimestampMicrosecondType>()
                .ok_or_else(wrong)?
                .value(row),
        ),
        PrimitiveType::Void | PrimitiveType::Variant => Scalar::Null,
    })
}
