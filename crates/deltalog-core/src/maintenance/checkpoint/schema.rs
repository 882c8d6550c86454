//! The Arrow schema of the checkpoints we write (spec "Checkpoint Schema", appendix
//! "Checkpoint Schema"), laid out as Delta on Spark lays out its own: top-level columns `txn`,
//! `add`, `remove`, `metaData`, `protocol`, `domainMetadata` (then `checkpointMetadata` and
//! `sidecar` for a V2 checkpoint), every field nullable (Spark reads checkpoints with an
//! all-nullable schema; required Parquet fields are what trip other readers), maps with
//! non-null string keys, lists with nullable elements.
//!
//! `add.stats` is present with `delta.checkpoint.writeStatsAsJson`; `add.stats_parsed` (the
//! statistics typed per the table's stats schema, physical names) and
//! `add.partitionValues_parsed` (partition values typed, physical names; only for a
//! partitioned table) with `delta.checkpoint.writeStatsAsStruct`. `remove` has no `stats` and
//! no `tags` (spec "Checkpoints").

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use serde_json::{json, Value};

use crate::actions::layout::{
    add, deletion_vector_type, remove, string_map, PARTITION_VALUES_PARSED,
};
use crate::error::{Error, Result};
use crate::schema::{to_arrow_data_type, DataType as DeltaType};
use crate::table_config::stats::{stats_schema_with_mode, TIGHT_BOUNDS};
use crate::table_config::{TableConfiguration, TableFeature};

/// `add.stats_parsed` (spec "Checkpoint Schema").
pub(crate) const STATS_PARSED: &str = "stats_parsed";

/// Top-level column names of a checkpoint.
pub(crate) mod column {
    pub(crate) const TXN: &str = "txn";
    pub(crate) const ADD: &str = "add";
    pub(crate) const REMOVE: &str = "remove";
    pub(crate) const METADATA: &str = "metaData";
    pub(crate) const PROTOCOL: &str = "protocol";
    pub(crate) const DOMAIN_METADATA: &str = "domainMetadata";
    pub(crate) const CHECKPOINT_METADATA: &str = "checkpointMetadata";
    pub(crate) const SIDECAR: &str = "sidecar";
}

/// The layout of one checkpoint file: its schema and what its `add` struct carries.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointLayout {
    /// The schema of a checkpoint file (or V2 manifest) of the table.
    pub schema: SchemaRef,
    /// The schema of a sidecar: the `add` and `remove` columns only.
    pub sidecar_schema: SchemaRef,
    /// The fields of the `add` struct.
    pub add_fields: Fields,
    /// The fields of the `remove` struct.
    pub remove_fields: Fields,
    /// `add.stats` is written.
    pub stats_json: bool,
    /// The type of `add.stats_parsed`, when it is written.
    pub stats_parsed: Option<DataType>,
    /// The fields of `add.partitionValues_parsed` (physical names), when it is written.
    pub partition_values_parsed: Option<Fields>,
}

impl CheckpointLayout {
    /// The layout for a table of `config`; `v2` adds the V2 columns.
    pub(crate) fn new(config: &TableConfiguration, v2: bool) -> Result<CheckpointLayout> {
        let properties = config.properties();
        let as_struct = properties.checkpoint_write_stats_as_struct;
        let stats_json = properties.checkpoint_write_stats_as_json;
        let stats_parsed = match as_struct {
            true => prune_empty_structs(&stats_type(config)?),
            false => None,
        };
        let partition_values_parsed = match as_struct {
            true => partition_fields(config)?,
            false => None,
        };
        let add_fields = checkpoint_add_fields(
            stats_json,
            stats_parsed.as_ref(),
            partition_values_parsed.as_ref(),
        );
        let remove_fields = checkpoint_remove_fields();
        let nullable_struct =
            |name: &str, fields: Fields| Field::new(name, DataType::Struct(fields), true);
        let mut columns = vec![
            nullable_struct(column::TXN, txn_fields()),
            nullable_struct(column::ADD, add_fields.clone()),
            nullable_struct(column::REMOVE, remove_fields.clone()),
            nullable_struct(column::METADATA, metadata_fields()),
            nullable_struct(column::PROTOCOL, protocol_fields()),
            nullable_struct(column::DOMAIN_METADATA, domain_metadata_fields()),
        ];
        if v2 {
            columns.push(nullable_struct(
                column::CHECKPOINT_METADATA,
                checkpoint_metadata_fields(),
            ));
            columns.push(nullable_struct(column::SIDECAR, sidecar_fields()));
        }
        let sidecar_schema = Schema::new(vec![
            nullable_struct(column::ADD, add_fields.clone()),
            nullable_struct(column::REMOVE, remove_fields.clone()),
        ]);
        Ok(CheckpointLayout {
            schema: Arc::new(Schema::new(columns)),
            sidecar_schema: Arc::new(sidecar_schema),
            add_fields,
            remove_fields,
            stats_json,
            stats_parsed,
            partition_values_parsed,
        })
    }

    /// The schema as a Delta struct-type JSON value, for `_last_checkpoint.checkpointSchema`
    /// (spec "Last Checkpoint File Schema").
    pub(crate) fn schema_json(&self) -> Result<Value> {
        let fields: Vec<&Field> = self.schema.fields().iter().map(|f| f.as_ref()).collect();
        struct_json(&fields)
    }
}

/// The statistics struct of the table (physical names), as `add.stats_parsed` holds it.
/// The type of `add.stats_parsed`: the statistics of the table's stats columns, with
/// `tightBounds` only when the table supports deletion vectors, as Delta on Spark writes it
/// (`StatisticsCollection.statsSchema`), so that a checkpoint written by either can be copied
/// by the next incremental checkpoint without parsing.
fn stats_type(config: &TableConfiguration) -> Result<DataType> {
    let metadata = config.metadata();
    let data_schema = config.schema().data_schema(&metadata.partition_columns);
    let stats = stats_schema_with_mode(
        &data_schema,
        &metadata.configuration,
        config.column_mapping(),
    )?;
    match stats {
        DataType::Struct(fields)
            if !config.is_feature_supported(&TableFeature::DeletionVectors) =>
        {
            let kept = fields.iter().filter(|field| field.name() != TIGHT_BOUNDS);
            Ok(DataType::Struct(kept.cloned().collect()))
        }
        stats => Ok(stats),
    }
}

/// The typed partition columns under their physical names; `None` for an unpartitioned table.
fn partition_fields(config: &TableConfiguration) -> Result<Option<Fields>> {
    let table = config.table_uri();
    let partition_schema = config
        .schema()
        .partition_schema(config.partition_columns())
        .map_err(|error| Error::invalid_table(table, error))?;
    if partition_schema.fields.is_empty() {
        return Ok(None);
    }
    let mode = config.column_mapping();
    let fields = partition_schema
        .fields
        .iter()
        .map(|field| {
            let physical = field.physical_name(mode)?;
            Ok(Field::new(
                physical,
                partition_arrow_type(&field.data_type)?,
                true,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(Fields::from(fields)))
}

fn partition_arrow_type(data_type: &DeltaType) -> Result<DataType> {
    to_arrow_data_type(data_type)
}

/// `data_type` without struct fields that have no children (Parquet cannot store an empty
/// group); `None` when nothing is left.
fn prune_empty_structs(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Struct(fields) => {
            let kept: Vec<Field> = fields
                .iter()
                .filter_map(|field| {
                    prune_empty_structs(field.data_type())
                        .map(|pruned| Field::new(field.name(), pruned, true))
                })
                .collect();
            (!kept.is_empty()).then(|| DataType::Struct(Fields::from(kept)))
        }
        other => Some(other.clone()),
    }
}

fn checkpoint_add_fields(
    stats_json: bool,
    stats_parsed: Option<&DataType>,
    partition_values_parsed: Option<&Fields>,
) -> Fields {
    let mut fields = vec![
        Field::new(add::PATH, DataType::Utf8, true),
        Field::new(add::PARTITION_VALUES, string_map(), true),
        Field::new(add::SIZE, DataType::Int64, true),
        Field::new(add::MODIFICATION_TIME, DataType::Int64, true),
        Field::new(add::DATA_CHANGE, DataType::Boolean, true),
        Field::new(add::TAGS, string_map(), true),
        Field::new(add::DELETION_VECTOR, deletion_vector_type(), true),
        Field::new(add::BASE_ROW_ID, DataType::Int64, true),
        Field::new(add::DEFAULT_ROW_COMMIT_VERSION, DataType::Int64, true),
        Field::new(add::CLUSTERING_PROVIDER, DataType::Utf8, true),
    ];
    if stats_json {
        fields.push(Field::new(add::STATS, DataType::Utf8, true));
    }
    if let Some(partitions) = partition_values_parsed {
        let parsed = DataType::Struct(partitions.clone());
        fields.push(Field::new(PARTITION_VALUES_PARSED, parsed, true));
    }
    if let Some(stats) = stats_parsed {
        fields.push(Field::new(STATS_PARSED, stats.clone(), true));
    }
    Fields::from(fields)
}

fn checkpoint_remove_fields() -> Fields {
    Fields::from(vec![
        Field::new(add::PATH, DataType::Utf8, true),
        Field::new(remove::DELETION_TIMESTAMP, DataType::Int64, true),
        Field::new(add::DATA_CHANGE, DataType::Boolean, true),
        Field::new(remove::EXTENDED_FILE_METADATA, DataType::Boolean, true),
        Field::new(add::PARTITION_VALUES, string_map(), true),
        Field::new(add::SIZE, DataType::Int64, true),
        Field::new(add::DELETION_VECTOR, deletion_vector_type(), true),
        Field::new(add::BASE_ROW_ID, DataType::Int64, true),
        Field::new(add::DEFAULT_ROW_COMMIT_VERSION, DataType::Int64, true),
    ])
}

fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
}

fn txn_fields() -> Fields {
    Fields::from(vec![
        Field::new("appId", DataType::Utf8, true),
        Field::new("version", DataType::Int64, true),
        Field::new("lastUpdated", DataType::Int64, true),
    ])
}

fn metadata_fields() -> Fields {
    let format = Fields::from(vec![
        Field::new("provider", DataType::Utf8, true),
        Field::new("options", string_map(), true),
    ]);
    Fields::from(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("description", DataType::Utf8, true),
        Field::new("format", DataType::Struct(format), true),
        Field::new("schemaString", DataType::Utf8, true),
        Field::new("partitionColumns", string_list(), true),
        Field::new("configuration", string_map(), true),
        Field::new("createdTime", DataType::Int64, true),
    ])
}

fn protocol_fields() -> Fields {
    Fields::from(vec![
        Field::new("minReaderVersion", DataType::Int32, true),
        Field::new("minWriterVersion", DataType::Int32, true),
        Field::new("readerFeatures", string_list(), true),
        Field::new("writerFeatures", string_list(), true),
    ])
}

fn domain_metadata_fields() -> Fields {
    Fields::from(vec![
        Field::new("domain", DataType::Utf8, true),
        Field::new("configuration", DataType::Utf8, true),
        Field::new("removed", DataType::Boolean, true),
    ])
}

fn checkpoint_metadata_fields() -> Fields {
    Fields::from(vec![
        Field::new("version", DataType::Int64, true),
        Field::new("tags", string_map(), true),
    ])
}

fn sidecar_fields() -> Fields {
    Fields::from(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new("sizeInBytes", DataType::Int64, true),
        Field::new("modificationTime", DataType::Int64, true),
        Field::new("tags", string_map(), true),
    ])
}

/// A Delta struct type as JSON (spec "Schema Serialization Format") for Arrow `fields`.
fn struct_json(fields: &[&Field]) -> Result<Value> {
    let fields = fields
        .iter()
        .map(|field| {
            Ok(json!({
                "name": field.name(),
                "type": type_json(field.data_type())?,
                "nullable": field.is_nullable(),
                "metadata": {},
            }))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({"type": "struct", "fields": fields}))
}

fn type_json(data_type: &DataType) -> Result<Value> {
    let primitive = |name: &str| Ok(Value::String(name.to_string()));
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => primitive("string"),
        DataType::Int8 => primitive("byte"),
        DataType::Int16 => primitive("short"),
        DataType::Int32 => primitive("integer"),
        DataType::Int64 => primitive("long"),
        DataType::Float32 => primitive("float"),
        DataType::Float64 => primitive("double"),
        DataType::Boolean => primitive("boolean"),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => primitive("binary"),
        DataType::Date32 => primitive("date"),
        DataType::Timestamp(_, Some(_)) => primitive("timestamp"),
        DataType::Timestamp(_, None) => primitive("timestamp_ntz"),
        DataType::Decimal128(precision, scale) => {
            primitive(&format!("decimal({precision},{scale})"))
        }
        DataType::Null => primitive("void"),
        DataType::Struct(fields) => {
            let fields: Vec<&Field> = fields.iter().map(|f| f.as_ref()).collect();
            struct_json(&fields)
        }
        DataType::List(element) => Ok(json!({
            "type": "array",
            "elementType": type_json(element.data_type())?,
            "containsNull": element.is_nullable(),
        })),
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(Error::InvalidArgument(format!(
                    "a map without entries: {data_type}"
                )));
            };
            let (Some(key), Some(value)) = (kv.first(), kv.get(1)) else {
                return Err(Error::InvalidArgument(format!(
                    "a map without entries: {data_type}"
                )));
            };
            Ok(json!({
                "type": "map",
                "keyType": type_json(key.data_type())?,
                "valueType": type_json(value.data_type())?,
                "valueContainsNull": value.is_nullable(),
            }))
        }
        other => Err(Error::InvalidArgument(format!(
            "no Delta type for the checkpoint column type {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_structs_are_pruned() {
        let inner = DataType::Struct(Fields::empty());
        let outer = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", inner.clone(), true),
        ]));
        let pruned = prune_empty_structs(&outer).unwrap();
        assert!(matches!(&pruned, DataType::Struct(f) if f.len() == 1));
        assert_eq!(prune_empty_structs(&inner), None);
    }

    #[test]
    fn map_and_list_types_serialise_as_delta_json() {
        let map = type_json(&string_map()).unwrap();
        assert_eq!(map["type"], "map");
        assert_eq!(map["keyType"], "string");
        assert_eq!(type_json(&string_list()).unwrap()["elementType"], "string");
        assert_eq!(
            type_json(&DataType::Decimal128(10, 2)).unwrap(),
            Value::String("decimal(10,2)".into())
        );
    }
}
