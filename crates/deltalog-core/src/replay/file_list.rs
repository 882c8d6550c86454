//! The live files of a snapshot as Arrow, one row per file (what `Snapshot::files` returns).
//!
//! Columns: `path` (URL-decoded, as the log names the file), `size`, `modification_time`
//! (timestamp[ms, UTC]), `partition_values` (a struct typed per the schema, logical names;
//! catalogue H-PV), `deletion_vector` (the descriptor, or null), `num_records`, `base_row_id`,
//! `default_row_commit_version`, `tags`; with statistics also `min_values`, `max_values`,
//! `null_count` (structs with logical names) and `tight_bounds` (catalogue H-ST).

use std::borrow::Cow;
use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int64Array, MapArray, RecordBatch, RecordBatchOptions,
    StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::actions::layout::{add, PARTITION_VALUES_PARSED};
use crate::actions::partition::{partition_values_to_arrow, SessionTimeZone};
use crate::error::{Error, Result};
use crate::expr::{files_may_match, Expr};
use crate::schema::{to_arrow_data_type, ColumnMappingMode, DataType as DeltaType, StructType};
use crate::table_config::stats::{self, parse_escaped_stats, parse_stats, stats_schema};
use crate::table_config::TableConfiguration;

/// What to put in the file list.
#[derive(Debug, Clone, Default)]
pub struct FileListOptions {
    /// Add `min_values`, `max_values`, `null_count` and `tight_bounds`.
    pub with_stats: bool,
    /// The zone partition timestamps are read in (default UTC).
    pub timezone: SessionTimeZone,
}

/// The live files of a table version with `config` (its `adds`, with or without statistics), one batch per
/// replayed batch.
pub(crate) fn active_files(
    config: &TableConfiguration,
    adds: &[StructArray],
    options: &FileListOptions,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let builder = FileListBuilder::new(config, options)?;
    let batches = adds
        .iter()
        .map(|adds| builder.build(adds))
        .collect::<Result<Vec<_>>>()?;
    Ok((builder.schema.clone(), batches))
}

/// Judges `add` rows against a filter by their partition values and JSON statistics, one
/// batch at a time, as a filtered listing keeps them ([`crate::expr::files_may_match`] over
/// `partitionValues_parsed`, `numRecords` and the decoded `minValues`, `maxValues`,
/// `nullCount` and `tightBounds`, logical names). Only the statistics of the columns the
/// filter names are decoded.
///
/// Partition values of `timestamp` columns depend on the session time zone, which only a scan
/// knows: on a table with such a partition column no partition values are given to the filter
/// (every partition may match).
///
/// When every column the filter names is found by its exact name, the inputs it does not read
/// are left out: no partition values for a filter of data columns only, no statistics JSON
/// decoded for a filter of partition columns only.
pub(crate) struct MatchJudge<'a> {
    builder: FileListBuilder<'a>,
    filter: &'a Expr,
    with_partitions: bool,
    with_stats: bool,
}

impl<'a> MatchJudge<'a> {
    /// A judge of the files of a table with `config` (`options` gives the time zone).
    pub(crate) fn new(
        config: &'a TableConfiguration,
        options: &'a FileListOptions,
        filter: &'a Expr,
    ) -> Result<Self> {
        let mut builder = FileListBuilder::new(config, options)?;
        let keys = stats_keys_of(config, filter);
        if let Some(keep) = &keys {
            builder.stats_type = project_stats_type(&builder.stats_type, keep);
        }
        let (reads_partitions, with_stats) = match &keys {
            Some(keys) => {
                let partitions = &config.metadata().partition_columns;
                let paths = filter.column_paths();
                let partition =
                    |path: &Vec<String>| path.first().is_some_and(|name| partitions.contains(name));
                (paths.iter().any(partition), !keys.is_empty())
            }
            None => (true, true),
        };
        let zoned = |field: &arrow_schema::FieldRef| {
            matches!(field.data_type(), DataType::Timestamp(_, Some(_)))
        };
        let with_partitions = reads_partitions && !builder.partition_fields.iter().any(zoned);
        Ok(MatchJudge {
            builder,
            filter,
            with_partitions,
            with_stats,
        })
    }

    /// Per row of `adds` (with their `stats` strings, escaped as a commit's line holds them
    /// when `stats_escaped`): false when the file cannot hold a row matching the filter. Rows
    /// without statistics may match.
    pub(crate) fn may_match(
        &self,
        adds: &StructArray,
        stats_escaped: bool,
    ) -> Result<BooleanArray> {
        let stats =
            self.builder
                .stats_batch(adds, self.with_partitions, self.with_stats, stats_escaped)?;
        files_may_match(self.filter, &stats)
    }
}

/// The statistics keys (physical names of top-level data columns) `filter` reads, or `None`
/// when one of its columns is not found by its exact name (then every key is decoded).
fn stats_keys_of(config: &TableConfiguration, filter: &Expr) -> Option<Vec<String>> {
    let partitions = &config.metadata().partition_columns;
    let data_schema = config.schema().data_schema(partitions);
    let mut keys = Vec::new();
    for path in filter.column_paths() {
        let name = path.first()?;
        if partitions.contains(name) {
            continue;
        }
        let field = data_schema
            .fields
            .iter()
            .find(|field| &field.name == name)?;
        keys.push(
            field
                .physical_name(config.column_mapping())
                .ok()?
                .to_string(),
        );
    }
    Some(keys)
}

/// `stats_type` with only the children named in `keep` inside `minValues`, `maxValues` and
/// `nullCount` (a struct left empty is dropped); `numRecords` and `tightBounds` stay.
fn project_stats_type(stats_type: &DataType, keep: &[String]) -> DataType {
    let DataType::Struct(fields) = stats_type else {
        return stats_type.clone();
    };
    let projected: Vec<Field> = fields
        .iter()
        .filter_map(|field| match field.data_type() {
            DataType::Struct(children) => {
                let kept: Vec<_> = children
                    .iter()
                    .filter(|child| keep.iter().any(|key| key == child.name()))
                    .cloned()
                    .collect();
                (!kept.is_empty()).then(|| {
                    field
                        .as_ref()
                        .clone()
                        .with_data_type(DataType::Struct(Fields::from(kept)))
                })
            }
            _ => Some(field.as_ref().clone()),
        })
        .collect();
    DataType::Struct(Fields::from(projected))
}

/// The per-file statistics of file list rows (the columns [`active_files`] gives with
/// statistics) in the layout [`crate::expr::files_may_match`] reads: `partition_values`
/// becomes `partitionValues_parsed`, `num_records` `numRecords`, `min_values`, `max_values`,
/// `null_count` and `tight_bounds` `minValues`, `maxValues`, `nullCount` and `tightBounds`.
pub(crate) fn file_list_stats(files: &RecordBatch) -> Result<RecordBatch> {
    let renames = [
        ("partition_values", PARTITION_VALUES_PARSED),
        ("num_records", stats::NUM_RECORDS),
        ("min_values", stats::MIN_VALUES),
        ("max_values", stats::MAX_VALUES),
        ("null_count", stats::NULL_COUNT),
        ("tight_bounds", stats::TIGHT_BOUNDS),
    ];
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (listed, name) in renames {
        if let Some(column) = files.column_by_name(listed) {
            fields.push(Field::new(name, column.data_type().clone(), true));
            columns.push(column.clone());
        }
    }
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(files.num_rows())),
    )
    .map_err(|error| Error::arrow("statistics of the file list", error))
}

/// The sum of `size` over the given add structs.
pub(crate) fn total_size(adds: &[StructArray]) -> i64 {
    adds.iter()
        .filter_map(|adds| adds.column_by_name(add::SIZE))
        .filter_map(|sizes| sizes.as_any().downcast_ref::<Int64Array>())
        .map(|sizes| sizes.iter().flatten().sum::<i64>())
        .sum()
}

struct FileListBuilder<'a> {
    config: &'a TableConfiguration,
    options: &'a FileListOptions,
    partition_schema: StructType,
    partition_fields: Fields,
    /// The physical (stats-key) schema of the data columns and its stats type.
    stats_type: DataType,
    schema: SchemaRef,
    table: String,
}

impl<'a> FileListBuilder<'a> {
    fn new(config: &'a TableConfiguration, options: &'a FileListOptions) -> Result<Self> {
        let table = config.table_uri().to_string();
        let metadata = config.metadata();
        let partition_schema = config
            .schema()
            .partition_schema(&metadata.partition_columns)
            .map_err(|error| Error::invalid_table(&table, error))?;
        let partition_fields = partition_schema
            .fields
            .iter()
            .map(|field| {
                Ok(Field::new(
                    &field.name,
                    to_arrow_data_type(&field.data_type)?,
                    true,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let data_schema = config.schema().data_schema(&metadata.partition_columns);
        let stats_type = stats_schema(&data_schema, &metadata.configuration)?;
        let mut fields = vec![
            Field::new("path", DataType::Utf8, false),
            Field::new("size", DataType::Int64, true),
            Field::new(
                "modification_time",
                DataType::Timestamp(TimeUnit::Millisecond, Some(Arc::from("UTC"))),
                true,
            ),
            Field::new(
                "partition_values",
                DataType::Struct(Fields::from(partition_fields.clone())),
                true,
            ),
            Field::new("deletion_vector", deletion_vector_type(), true),
            Field::new("num_records", DataType::Int64, true),
            Field::new("base_row_id", DataType::Int64, true),
            Field::new("default_row_commit_version", DataType::Int64, true),
            Field::new("tags", crate::actions::layout::string_map(), true),
        ];
        if options.with_stats {
            let logical = logical_stats_type(&stats_type, &data_schema, config.column_mapping())?;
            if let DataType::Struct(stats_fields) = &logical {
                for (name, output) in [
                    ("minValues", "min_values"),
                    ("maxValues", "max_values"),
                    ("nullCount", "null_count"),
                    ("tightBounds", "tight_bounds"),
                ] {
                    if let Some(field) = stats_fields.iter().find(|f| f.name() == name) {
                        fields.push(Field::new(output, field.data_type().clone(), true));
                    }
                }
            }
        }
        Ok(FileListBuilder {
            config,
            options,
            partition_schema,
            partition_fields: Fields::from(partition_fields),
            stats_type,
            schema: Arc::new(Schema::new(fields)),
            table,
        })
    }

    fn build(&self, adds: &StructArray) -> Result<RecordBatch> {
        let column = |name: &str| -> Result<ArrayRef> {
            adds.column_by_name(name).cloned().ok_or_else(|| {
                Error::invalid_table(&self.table, format!("add actions lack '{name}'"))
            })
        };
        let paths = decoded_paths(column(add::PATH)?.as_ref());
        let modification_time = cast(
            &column(add::MODIFICATION_TIME)?,
            &DataType::Timestamp(TimeUnit::Millisecond, Some(Arc::from("UTC"))),
        )
        .map_err(|error| Error::arrow("modification times", error))?;
        let num_records = column(add::NUM_RECORDS)?;
        let mut columns: Vec<ArrayRef> = vec![
            paths,
            column(add::SIZE)?,
            modification_time,
            self.partition_values(adds)?,
            rename_struct_fields(&column(add::DELETION_VECTOR)?, &deletion_vector_type())?,
            num_records,
            column(add::BASE_ROW_ID)?,
            column(add::DEFAULT_ROW_COMMIT_VERSION)?,
            column(add::TAGS)?,
        ];
        if self.options.with_stats {
            let stats = self.parse_stats(adds, false)?;
            let logical = logical_stats(
                &stats,
                &self
                    .config
                    .schema()
                    .data_schema(&self.config.metadata().partition_columns),
                self.config.column_mapping(),
            )?;
            for name in ["minValues", "maxValues", "nullCount", "tightBounds"] {
                if let Some(array) = logical.column_by_name(name) {
                    columns.push(array.clone());
                }
            }
        }
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|error| Error::arrow("building the file list", error))
    }

    /// The statistics [`MatchJudge`] reads for `adds`: with or without the partition values
    /// and the decoded statistics JSON (`stats_escaped`: as [`MatchJudge::may_match`] says).
    fn stats_batch(
        &self,
        adds: &StructArray,
        with_partitions: bool,
        with_stats: bool,
        stats_escaped: bool,
    ) -> Result<RecordBatch> {
        let mut columns: Vec<(&str, ArrayRef)> = Vec::with_capacity(6);
        if with_partitions {
            columns.push((PARTITION_VALUES_PARSED, self.partition_values(adds)?));
        }
        if let Some(records) = adds.column_by_name(add::NUM_RECORDS) {
            columns.push((stats::NUM_RECORDS, records.clone()));
        }
        if with_stats {
            let parsed = self.parse_stats(adds, stats_escaped)?;
            let data_schema = self
                .config
                .schema()
                .data_schema(&self.config.metadata().partition_columns);
            let logical = logical_stats(&parsed, &data_schema, self.config.column_mapping())?;
            for name in [
                stats::MIN_VALUES,
                stats::MAX_VALUES,
                stats::NULL_COUNT,
                stats::TIGHT_BOUNDS,
            ] {
                if let Some(array) = logical.column_by_name(name) {
                    columns.push((name, array.clone()));
                }
            }
        }
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, column)| Field::new(*name, column.data_type().clone(), true))
            .collect();
        RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns.into_iter().map(|(_, column)| column).collect(),
            &RecordBatchOptions::new().with_row_count(Some(adds.len())),
        )
        .map_err(|error| Error::arrow("statistics for skipping", error))
    }

    /// The statistics of `adds` decoded, from their `stats` strings (`escaped`: as a
    /// commit's line holds them).
    fn parse_stats(&self, adds: &StructArray, escaped: bool) -> Result<StructArray> {
        let strings = adds
            .column_by_name(add::STATS)
            .and_then(|column| column.as_any().downcast_ref::<StringArray>());
        match strings {
            Some(strings) if escaped => parse_escaped_stats(strings, &self.stats_type),
            Some(strings) => parse_stats(strings, &self.stats_type),
            None => Ok(StructArray::new_null(
                match &self.stats_type {
                    DataType::Struct(fields) => fields.clone(),
                    _ => Fields::empty(),
                },
                adds.len(),
            )),
        }
    }

    /// `error`, raised by a partition value that does not parse as its column's type, as an
    /// [`Error::InvalidTable`] of this table that names the data file holding the value.
    fn partition_value_error(
        &self,
        adds: &StructArray,
        values: &[Option<&str>],
        primitive: &crate::schema::PrimitiveType,
        column: &str,
        error: Error,
    ) -> Error {
        let timezone = &self.options.timezone;
        let bad_row = values.iter().position(|value| {
            partition_values_to_arrow(std::slice::from_ref(value), primitive, column, timezone)
                .is_err()
        });
        let paths = adds
            .column_by_name(add::PATH)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>());
        let file = bad_row.zip(paths).map(|(row, paths)| paths.value(row));
        match (error, file) {
            (Error::InvalidTable { reason, .. }, Some(file)) => {
                Error::invalid_table(&self.table, format!("data file {file}: {reason}"))
            }
            (error, _) => error,
        }
    }

    /// The typed partition values: one child per partition column, read from the
    /// `partitionValues` map under the column's physical name.
    fn partition_values(&self, adds: &StructArray) -> Result<ArrayRef> {
        let rows = adds.len();
        let maps = adds
            .column_by_name(add::PARTITION_VALUES)
            .and_then(|c| c.as_any().downcast_ref::<MapArray>());
        let mode = self.config.column_mapping();
        let mut children = Vec::with_capacity(self.partition_schema.fields.len());
        let parsed = adds
            .column_by_name(PARTITION_VALUES_PARSED)
            .and_then(|c| c.as_any().downcast_ref::<StructArray>());
        for (field, target) in self
            .partition_schema
            .fields
            .iter()
            .zip(&self.partition_fields)
        {
            let key = field.physical_name(mode)?;
            if let Some(typed) = parsed_partition_values(parsed, key, field, target.data_type()) {
                children.push(typed);
                continue;
            }
            let values = map_values(maps, key, rows);
            let DeltaType::Primitive(primitive) = &field.data_type else {
                return Err(Error::invalid_table(
                    &self.table,
                    format!(
                        "partition column '{}' is not of a primitive type",
                        field.name
                    ),
                ));
            };
            let typed =
                partition_values_to_arrow(&values, primitive, &field.name, &self.options.timezone)
                    .map_err(|error| {
                        self.partition_value_error(adds, &values, primitive, &field.name, error)
                    })?;
            children.push(typed);
        }
        let array = if children.is_empty() {
            StructArray::new_empty_fields(rows, None)
        } else {
            StructArray::try_new(self.partition_fields.clone(), children, None)
                .map_err(|error| Error::arrow("building partition values", error))?
        };
        Ok(Arc::new(array))
    }
}

/// The column `key` of a checkpoint's `partitionValues_parsed`, when it can stand in for
/// parsing the strings: same type, and not a `timestamp` (whose strings are read in the
/// caller's session time zone, which the writer's parsed value does not know).
fn parsed_partition_values(
    parsed: Option<&StructArray>,
    key: &str,
    field: &crate::schema::StructField,
    target: &DataType,
) -> Option<ArrayRef> {
    let is_timestamp = matches!(
        field.data_type,
        DeltaType::Primitive(crate::schema::PrimitiveType::Timestamp)
    );
    let parsed = parsed.filter(|parsed| parsed.null_count() == 0)?;
    let column = parsed.column_by_name(key)?;
    (!is_timestamp && column.data_type() == target).then(|| column.clone())
}

/// The value of `key` in each row's map (None when the map or the key is absent or null).
pub(crate) fn map_values<'m>(
    maps: Option<&'m MapArray>,
    key: &str,
    rows: usize,
) -> Vec<Option<&'m str>> {
    let Some(maps) = maps else {
        return vec![None; rows];
    };
    let keys = maps.keys().as_any().downcast_ref::<StringArray>();
    let values = maps.values().as_any().downcast_ref::<StringArray>();
    let (Some(keys), Some(values)) = (keys, values) else {
        return vec![None; rows];
    };
    let offsets = maps.value_offsets();
    (0..rows)
        .map(|row| {
            if maps.is_null(row) {
                return None;
            }
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            (start..end)
                .find(|&entry| keys.value(entry) == key)
                .filter(|&entry| values.is_valid(entry))
                .map(|entry| values.value(entry))
        })
        .collect()
}

/// Paths with their URL escapes decoded.
fn decoded_paths(paths: &dyn Array) -> ArrayRef {
    let Some(strings) = paths.as_any().downcast_ref::<StringArray>() else {
        return Arc::new(StringArray::new_null(paths.len()));
    };
    if !strings.iter().flatten().any(|path| path.contains('%')) {
        return Arc::new(strings.clone());
    }
    Arc::new(
        strings
            .iter()
            .map(|path| path.map(decode_path))
            .collect::<StringArray>(),
    )
}

fn decode_path(path: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(path).decode_utf8_lossy()
}

/// The deletion vector struct with snake_case field names.
fn deletion_vector_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("storage_type", DataType::Utf8, true),
        Field::new("path_or_inline_dv", DataType::Utf8, true),
        Field::new("offset", DataType::Int32, true),
        Field::new("size_in_bytes", DataType::Int32, true),
        Field::new("cardinality", DataType::Int64, true),
    ]))
}

/// `array` (a struct) with its children renamed, by position, to the fields of `target`.
fn rename_struct_fields(array: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    let (Some(array), DataType::Struct(fields)) =
        (array.as_any().downcast_ref::<StructArray>(), target)
    else {
        return Ok(array.clone());
    };
    let renamed = StructArray::try_new(
        fields.clone(),
        array.columns().to_vec(),
        array.nulls().cloned(),
    )
    .map_err(|error| Error::arrow("renaming struct fields", error))?;
    Ok(Arc::new(renamed))
}

/// The stats struct type with physical column names replaced by logical ones.
fn logical_stats_type(
    stats_type: &DataType,
    data_schema: &StructType,
    mode: ColumnMappingMode,
) -> Result<DataType> {
    let empty = StructArray::new_null(
        match stats_type {
            DataType::Struct(fields) => fields.clone(),
            _ => Fields::empty(),
        },
        0,
    );
    Ok(logical_stats(&empty, data_schema, mode)?
        .data_type()
        .clone())
}

/// `stats` with the physical column names inside `minValues`, `maxValues` and `nullCount`
/// replaced by the logical names of `data_schema`.
fn logical_stats(
    stats: &StructArray,
    data_schema: &StructType,
    mode: ColumnMappingMode,
) -> Result<StructArray> {
    if mode == ColumnMappingMode::None {
        return Ok(stats.clone());
    }
    let (fields, columns, nulls) = stats.clone().into_parts();
    let mut new_fields = Vec::with_capacity(fields.len());
    let mut new_columns = Vec::with_capacity(columns.len());
    for (field, column) in fields.iter().zip(columns) {
        let renamed = match column.as_any().downcast_ref::<StructArray>() {
            Some(values) => Arc::new(logical_names(values, data_schema, mode)?) as ArrayRef,
            None => column,
        };
        new_fields.push(Field::new(field.name(), renamed.data_type().clone(), true));
        new_columns.push(renamed);
    }
    StructArray::try_new(Fields::from(new_fields), new_columns, nulls)
        .map_err(|error| Error::arrow("renaming statistics", error))
}

fn logical_names(
    values: &StructArray,
    schema: &StructType,
    mode: ColumnMappingMode,
) -> Result<StructArray> {
    let (fields, columns, nulls) = values.clone().into_parts();
    let mut new_fields = Vec::with_capacity(fields.len());
    let mut new_columns = Vec::with_capacity(columns.len());
    for (field, column) in fields.iter().zip(columns) {
        let logical = schema
            .fields
            .iter()
            .find(|f| f.physical_name(mode).ok() == Some(field.name().as_str()));
        let (name, column) = match logical {
            Some(logical) => {
                let column = match (
                    &logical.data_type,
                    column.as_any().downcast_ref::<StructArray>(),
                ) {
                    (DeltaType::Struct(inner), Some(nested)) => {
                        Arc::new(logical_names(nested, inner, mode)?) as ArrayRef
                    }
                    _ => column,
                };
                (logical.name.clone(), column)
            }
            None => (field.name().clone(), column),
        };
        new_fields.push(Field::new(name, column.data_type().clone(), true));
        new_columns.push(column);
    }
    StructArray::try_new(Fields::from(new_fields), new_columns, nulls)
        .map_err(|error| Error::arrow("renaming statistics", error))
}
