//! Iceberg compatibility (spec "Iceberg Compatibility V1" and "V2"; `IcebergCompatV3` as Delta
//! on Spark 4.4 defines it in `IcebergCompat.scala`) and the materialisation of partition
//! values into data files that it, the `materializePartitionColumns` feature and
//! `delta.writePartitionColumnsToParquet` ask for.
//!
//! A table with `delta.enableIcebergCompatV<n>` keeps its data files and schema convertible to
//! Iceberg; the Iceberg metadata itself (UniForm) is out of scope. The rules, checked on every
//! commit that changes the metadata or adds files ([`check_commit`]):
//! - one version at most is on, and V3 cannot be turned off again;
//! - column mapping `name` or `id`; V3 row tracking as well;
//! - V1: the `deletionVectors` feature is not supported; V2: deletion vectors are not enabled
//!   (before or after the commit); V3 allows them;
//! - the schema's types: V1 no arrays, maps or `void`; V2 only byte to decimal, string,
//!   binary, boolean, dates and timestamps, arrays, maps and structs; V3 adds `variant`;
//! - type changes only those Iceberg can follow (wider integers, float to double, decimal
//!   precision at the same scale);
//! - partition columns never change on a partitioned table;
//! - every added file has `numRecords`.
//!
//! What writers do for it: partition values are written into every data file after the data
//! columns ([`TableConfiguration::materializes_partition_columns`]); from V2 on, arrays'
//! elements and maps' keys and values get field ids (`delta.columnMapping.nested.ids`,
//! [`assign_nested_ids`]) and new files are tagged `ICEBERG_COMPAT_VERSION`
//! ([`TableConfiguration::new_file_tags`]). A new table gets column mapping `name` (and, for
//! V3, row tracking) when its properties do not say otherwise ([`complete_new_table`]).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::schema::{
    ColumnMappingMode, DataType, PrimitiveType, StructField, StructType, NESTED_IDS_KEY,
    TYPE_CHANGES_KEY,
};
use crate::table_config::properties::{
    COLUMN_MAPPING_MODE, ENABLE_ICEBERG_COMPAT_V1, ENABLE_ICEBERG_COMPAT_V2,
    ENABLE_ICEBERG_COMPAT_V3, ENABLE_ROW_TRACKING, ICEBERG_ATOMIC_CONVERSION_SUPPORTED,
};
use crate::table_config::{TableConfiguration, TableFeature, TableProperties};

/// The add tag naming the Iceberg compatibility version a file was written under (V2 on).
pub(crate) const ICEBERG_COMPAT_VERSION_TAG: &str = "ICEBERG_COMPAT_VERSION";

/// The Iceberg compatibility versions whose property is `true`, in order.
fn enabled_versions(properties: &TableProperties) -> Vec<u8> {
    [
        (1, properties.enable_iceberg_compat_v1),
        (2, properties.enable_iceberg_compat_v2),
        (3, properties.enable_iceberg_compat_v3),
    ]
    .into_iter()
    .filter_map(|(version, on)| on.then_some(version))
    .collect()
}

impl TableConfiguration {
    /// The Iceberg compatibility version turned on (`delta.enableIcebergCompatV<n>`), the
    /// lowest when several are.
    pub(crate) fn iceberg_compat(&self) -> Option<u8> {
        enabled_versions(self.properties()).first().copied()
    }

    /// True when data files hold the partition values too, after the data columns: under
    /// Iceberg compatibility, the `materializePartitionColumns` feature, or
    /// `delta.writePartitionColumnsToParquet` = `true`.
    pub(crate) fn materializes_partition_columns(&self) -> bool {
        self.iceberg_compat().is_some()
            || self.is_feature_supported(&TableFeature::MaterializePartitionColumns)
            || self.properties().write_partition_columns_to_parquet == Some(true)
    }

    /// The tags of the add of a file written now: `ICEBERG_COMPAT_VERSION` from V2 on, as
    /// Delta on Spark tags them.
    pub(crate) fn new_file_tags(&self) -> Vec<(String, Option<String>)> {
        match self.iceberg_compat() {
            Some(version) if version >= 2 => {
                vec![(ICEBERG_COMPAT_VERSION_TAG.into(), Some(version.to_string()))]
            }
            _ => Vec::new(),
        }
    }
}

/// Completes the `configuration` of a new table with Iceberg compatibility as Delta on Spark
/// does: column mapping `name`, `delta.universalFormat.iceberg.atomicConversion.supported`,
/// and for V3 row tracking, each only where the configuration does not set it.
pub(crate) fn complete_new_table(configuration: &mut HashMap<String, String>) {
    let Ok(properties) = TableProperties::try_from_configuration(configuration) else {
        return;
    };
    let versions = enabled_versions(&properties);
    if versions.is_empty() {
        return;
    }
    let mut set = |key: &str, value: &str| {
        configuration
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
    };
    set(COLUMN_MAPPING_MODE, "name");
    set(ICEBERG_ATOMIC_CONVERSION_SUPPORTED, "true");
    if versions.contains(&3) {
        set(ENABLE_ROW_TRACKING, "true");
    }
}

/// The configuration changes that turning Iceberg compatibility V3 on brings along, as Delta
/// on Spark makes them (`RequireRowTracking`, auto-enabled on existing tables): row tracking,
/// unless `configuration` (the new configuration) sets it.
pub(crate) fn implied_changes(
    configuration: &HashMap<String, String>,
) -> Vec<(String, Option<String>)> {
    let v3 = configuration
        .get(ENABLE_ICEBERG_COMPAT_V3)
        .is_some_and(|value| value.eq_ignore_ascii_case("true"));
    if v3 && !configuration.contains_key(ENABLE_ROW_TRACKING) {
        vec![(ENABLE_ROW_TRACKING.to_string(), Some("true".to_string()))]
    } else {
        Vec::new()
    }
}

/// Gives every field of `schema` the nested ids key of Delta on Spark
/// (`delta.columnMapping.nested.ids`, an empty object for fields without arrays or maps) and
/// a fresh id above `max_id` to each array element and map key and value that has none, in
/// Spark's pre-order (`DeltaColumnMapping.rewriteFieldIdsForIceberg`). Keys are the field's
/// physical name followed by `.element`, `.key` or `.value` per level. Returns the new largest
/// id (for `delta.columnMapping.maxColumnId`).
pub(crate) fn assign_nested_ids(
    schema: &mut StructType,
    mode: ColumnMappingMode,
    max_id: i64,
) -> Result<i64> {
    let mut next = max_id;
    assign_struct(schema, mode, &mut next)?;
    Ok(next)
}

fn assign_struct(schema: &mut StructType, mode: ColumnMappingMode, next: &mut i64) -> Result<()> {
    for field in &mut schema.fields {
        let physical = field.physical_name(mode)?.to_string();
        let mut ids = match field.metadata.get(NESTED_IDS_KEY) {
            Some(Value::Object(ids)) => ids.clone(),
            _ => Map::new(),
        };
        assign_type(&mut field.data_type, &physical, &mut ids, mode, next)?;
        field
            .metadata
            .insert(NESTED_IDS_KEY.into(), Value::Object(ids));
    }
    Ok(())
}

fn assign_type(
    data_type: &mut DataType,
    path: &str,
    ids: &mut Map<String, Value>,
    mode: ColumnMappingMode,
    next: &mut i64,
) -> Result<()> {
    match data_type {
        DataType::Primitive(_) | DataType::Geospatial(_) => Ok(()),
        DataType::Struct(inner) => assign_struct(inner, mode, next),
        DataType::Array(array) => {
            let element = assign_id(format!("{path}.element"), ids, next);
            assign_type(&mut array.element_type, &element, ids, mode, next)
        }
        DataType::Map(map) => {
            let key = assign_id(format!("{path}.key"), ids, next);
            assign_type(&mut map.key_type, &key, ids, mode, next)?;
            let value = assign_id(format!("{path}.value"), ids, next);
            assign_type(&mut map.value_type, &value, ids, mode, next)
        }
    }
}

/// Gives `key` the next id unless `ids` has it; returns the key.
fn assign_id(key: String, ids: &mut Map<String, Value>, next: &mut i64) -> String {
    if !ids.contains_key(&key) {
        *next += 1;
        ids.insert(key.clone(), Value::from(*next));
    }
    key
}

/// Checks a commit against the Iceberg compatibility rules (module documentation): `config`
/// is what the commit leaves, `previous` the table before it (`None` when it creates the
/// table), `without_records` an added file that lacks `numRecords`, if any.
///
/// Errors: [`Error::NotAllowed`] naming the version and the rule broken.
pub(crate) fn check_commit(
    previous: Option<&TableConfiguration>,
    config: &TableConfiguration,
    without_records: Option<&str>,
) -> Result<()> {
    let was_v3 = previous.is_some_and(|p| enabled_versions(p.properties()).contains(&3));
    let versions = enabled_versions(config.properties());
    if was_v3 && !versions.contains(&3) {
        return Err(violation(
            config,
            3,
            "IcebergCompatV3 cannot be turned off once on",
        ));
    }
    let Some(&version) = versions.first() else {
        return Ok(());
    };
    if versions.len() > 1 {
        return Err(violation(
            config,
            version,
            &format!(
                "only one of {ENABLE_ICEBERG_COMPAT_V1}, {ENABLE_ICEBERG_COMPAT_V2} and \
                 {ENABLE_ICEBERG_COMPAT_V3} may be true"
            ),
        ));
    }
    if config.column_mapping() == ColumnMappingMode::None {
        return Err(violation(
            config,
            version,
            &format!("it needs {COLUMN_MAPPING_MODE} `name` or `id`"),
        ));
    }
    if version == 3 && !config.properties().enable_row_tracking {
        return Err(violation(
            config,
            version,
            &format!("it needs {ENABLE_ROW_TRACKING} = true"),
        ));
    }
    check_deletion_vectors(previous, config, version)?;
    check_types(config, version)?;
    if let Some(previous) = previous {
        let before = previous.partition_columns();
        if !before.is_empty() && before != config.partition_columns() {
            return Err(violation(
                config,
                version,
                &format!(
                    "the partition columns of a partitioned table cannot change (from {before:?} \
                     to {:?})",
                    config.partition_columns()
                ),
            ));
        }
    }
    if let Some(path) = without_records {
        return Err(violation(
            config,
            version,
            &format!("every added file needs numRecords in its statistics; {path} has none"),
        ));
    }
    Ok(())
}

fn check_deletion_vectors(
    previous: Option<&TableConfiguration>,
    config: &TableConfiguration,
    version: u8,
) -> Result<()> {
    let refused = match version {
        1 => config.is_feature_supported(&TableFeature::DeletionVectors),
        2 => {
            config.is_deletion_vectors_enabled()
                || previous.is_some_and(TableConfiguration::is_deletion_vectors_enabled)
        }
        _ => false,
    };
    if !refused {
        return Ok(());
    }
    let rule = match version {
        1 => "the deletionVectors feature must not be supported",
        _ => {
            "deletion vectors must be disabled (delta.enableDeletionVectors = false; purge the \
              existing ones with REORG ... APPLY (PURGE))"
        }
    };
    Err(violation(config, version, rule))
}

fn check_types(config: &TableConfiguration, version: u8) -> Result<()> {
    let mut problem = None;
    visit_fields(config.schema(), &mut |field| {
        if problem.is_some() {
            return;
        }
        problem = unsupported_type(&field.data_type, version)
            .map(|ty| format!("column `{}` has type {ty}", field.name))
            .or_else(|| unsupported_type_change(field));
    });
    match problem {
        Some(problem) => Err(violation(config, version, &problem)),
        None => Ok(()),
    }
}

fn visit_fields(schema: &StructType, visit: &mut dyn FnMut(&StructField)) {
    fn nested(data_type: &DataType, visit: &mut dyn FnMut(&StructField)) {
        match data_type {
            DataType::Primitive(_) | DataType::Geospatial(_) => {}
            DataType::Struct(inner) => visit_fields(inner, visit),
            DataType::Array(array) => nested(&array.element_type, visit),
            DataType::Map(map) => {
                nested(&map.key_type, visit);
                nested(&map.value_type, visit);
            }
        }
    }
    for field in &schema.fields {
        visit(field);
        nested(&field.data_type, visit);
    }
}

/// The name of a type `data_type` holds (itself, not its nested structs' fields) that the
/// version does not allow.
fn unsupported_type(data_type: &DataType, version: u8) -> Option<String> {
    match data_type {
        DataType::Primitive(PrimitiveType::Void) => Some("void".into()),
        DataType::Primitive(PrimitiveType::Variant) if version < 3 => Some("variant".into()),
        // Delta on Spark's `CheckGeoSpatialTableFeatureDisabled` (V1, V2); V3 allows them.
        DataType::Geospatial(geospatial) if version < 3 => Some(geospatial.to_string()),
        DataType::Primitive(_) | DataType::Geospatial(_) | DataType::Struct(_) => None,
        DataType::Array(_) | DataType::Map(_) if version == 1 => Some(data_type.to_string()),
        DataType::Array(array) => match &array.element_type {
            DataType::Struct(_) => None,
            element => unsupported_type(element, version),
        },
        DataType::Map(map) => [&map.key_type, &map.value_type]
            .into_iter()
            .filter(|inner| !matches!(inner, DataType::Struct(_)))
            .find_map(|inner| unsupported_type(inner, version)),
    }
}

/// A recorded type change of `field` (`delta.typeChanges`) that Iceberg cannot follow: only
/// wider integers, float to double and decimal precision at the same scale can.
fn unsupported_type_change(field: &StructField) -> Option<String> {
    let Some(Value::Array(changes)) = field.metadata.get(TYPE_CHANGES_KEY) else {
        return None;
    };
    changes.iter().find_map(|change| {
        let type_of =
            |key: &str| -> Option<PrimitiveType> { change.get(key)?.as_str()?.parse().ok() };
        let (from, to) = (type_of("fromType")?, type_of("toType")?);
        (!iceberg_follows(from, to)).then(|| {
            format!(
                "column `{}` was changed from {from} to {to}, which Iceberg cannot follow",
                field.name
            )
        })
    })
}

/// True for a type change Delta allows ([`PrimitiveType::widens_to`]) that Iceberg can follow
/// too (Spark's `TypeWidening.isTypeChangeSupportedByIceberg`).
fn iceberg_follows(from: PrimitiveType, to: PrimitiveType) -> bool {
    use PrimitiveType::*;
    let integral = |ty: PrimitiveType| matches!(ty, Byte | Short | Integer | Long);
    from == to
        || from.widens_to(to)
            && match (from, to) {
                (Float, Double) => true,
                (Decimal { scale: s1, .. }, Decimal { scale: s2, .. }) => s1 == s2,
                _ => integral(from) && integral(to),
            }
}

fn violation(config: &TableConfiguration, version: u8, rule: &str) -> Error {
    Error::NotAllowed(format!(
        "{}: IcebergCompatV{version} ({}) is violated: {rule}",
        config.table_uri(),
        match version {
            1 => ENABLE_ICEBERG_COMPAT_V1,
            2 => ENABLE_ICEBERG_COMPAT_V2,
            _ => ENABLE_ICEBERG_COMPAT_V3,
        }
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::parse_schema;

    #[test]
    fn nested_ids_follow_the_column_ids_in_spark_order() {
        let field = |name: &str, id: i64, ty: Value| {
            json!({"name": name, "type": ty, "nullable": true, "metadata": {
                "delta.columnMapping.id": id,
                "delta.columnMapping.physicalName": format!("col-{name}")}})
        };
        let text = json!({"type": "struct", "fields": [
            field("id", 1, json!("long")),
            field("a", 2, json!({"type": "array", "elementType": "integer", "containsNull": true})),
            field("m", 3, json!({"type": "map", "keyType": "string", "valueType":
                {"type": "array", "elementType": "integer", "containsNull": true},
                "valueContainsNull": true})),
        ]})
        .to_string();
        let mut schema = parse_schema(&text).unwrap();
        let max = assign_nested_ids(&mut schema, ColumnMappingMode::Name, 3).unwrap();
        assert_eq!(max, 7);
        let ids = |index: usize| schema.fields[index].metadata[NESTED_IDS_KEY].clone();
        assert_eq!(ids(0), json!({}));
        assert_eq!(ids(1), json!({"col-a.element": 4}));
        assert_eq!(
            ids(2),
            json!({"col-m.key": 5, "col-m.value": 6, "col-m.value.element": 7})
        );
        // Ids already given are kept.
        assert_eq!(
            assign_nested_ids(&mut schema, ColumnMappingMode::Name, 7).unwrap(),
            7
        );
    }

    #[test]
    fn iceberg_follows_only_its_own_widenings() {
        use PrimitiveType::*;
        assert!(iceberg_follows(Integer, Long));
        assert!(iceberg_follows(Byte, Short));
        assert!(iceberg_follows(Float, Double));
        let decimal = |precision, scale| Decimal { precision, scale };
        assert!(iceberg_follows(decimal(10, 2), decimal(12, 2)));
        assert!(!iceberg_follows(decimal(10, 2), decimal(12, 3)));
        assert!(!iceberg_follows(Integer, Double));
        assert!(!iceberg_follows(Date, TimestampNtz));
        assert!(!iceberg_follows(Integer, decimal(10, 0)));
    }

    #[test]
    fn each_version_allows_its_types() {
        let array = DataType::Array(Box::new(crate::schema::ArrayType {
            element_type: DataType::Primitive(PrimitiveType::Variant),
            contains_null: true,
        }));
        assert!(unsupported_type(&array, 1).is_some());
        assert_eq!(unsupported_type(&array, 2).as_deref(), Some("variant"));
        assert_eq!(unsupported_type(&array, 3), None);
        let void = DataType::Primitive(PrimitiveType::Void);
        assert!(unsupported_type(&void, 3).is_some());
    }
}
