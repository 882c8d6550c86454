//! What writing a table asks of a writer (spec "Table Features", "Writer Requirements" of
//! each feature, "Protocol Evolution"): which writer features this library honours, which it
//! honours only when the data writer enforces them row by row, and the least protocol that
//! covers the features a table uses.

use std::collections::HashMap;

use crate::actions::{Metadata, Protocol};
use crate::error::{Error, ProtocolKind, Result};
use crate::schema::ColumnMappingMode;
use crate::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::table_config::features::{MAX_READER_VERSION, MAX_WRITER_VERSION};
use crate::table_config::properties::{
    CheckpointPolicy, FEATURE_PREFIX, MIN_READER_VERSION, MIN_WRITER_VERSION,
};
use crate::table_config::{TableConfiguration, TableFeature, TableProperties};

/// Column metadata key of a column invariant (spec "Column Invariants").
pub(crate) const INVARIANTS_KEY: &str = "delta.invariants";
/// Column metadata key of a generated column's expression (spec "Generated Columns").
pub(crate) const GENERATION_EXPRESSION_KEY: &str = "delta.generationExpression";
/// Column metadata key of an identity column's start (spec "Identity Columns").
pub(crate) const IDENTITY_START_KEY: &str = "delta.identity.start";
/// Column metadata key of a column default (spec "Default Columns").
pub(crate) const CURRENT_DEFAULT_KEY: &str = "CURRENT_DEFAULT";
/// Configuration key prefix of CHECK constraints (spec "CHECK Constraints").
pub(crate) const CONSTRAINTS_PREFIX: &str = "delta.constraints.";

/// How a writer feature is honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriterDuty {
    /// Its duties are at the log level and the transaction carries them out (append-only
    /// checks, row ids, in-commit timestamps, domain metadata), or it asks nothing of a
    /// writer that only adds and removes whole files.
    Log,
    /// Its duties are row by row or inside the data files (invariants, CHECK constraints,
    /// generated, identity and default columns, physical column names, clustering
    /// statistics, partition values in the data files under Iceberg compatibility and
    /// `materializePartitionColumns`): honoured only when the data writer says it enforces them, or when the
    /// table does not use it.
    DataWriter,
    /// Not honoured: writes are refused.
    Unsupported,
}

/// The duty of `feature` for this library's writer.
pub(crate) fn writer_duty(feature: &TableFeature) -> WriterDuty {
    use TableFeature::*;
    match feature {
        AppendOnly | ChangeDataFeed | DomainMetadata | RowTracking | InCommitTimestamp
        | DeletionVectors | TimestampNtz | V2Checkpoint | VacuumProtocolCheck
        | CheckpointProtection | TypeWidening | TypeWideningPreview | VariantType
        | VariantTypePreview => WriterDuty::Log,
        Invariants
        | CheckConstraints
        | GeneratedColumns
        | IdentityColumns
        | AllowColumnDefaults
        | ColumnMapping
        | Clustering
        | IcebergCompatV1
        | IcebergCompatV2
        | IcebergCompatV3
        | MaterializePartitionColumns => WriterDuty::DataWriter,
        IcebergWriterCompatV1
        | VariantShredding
        | VariantShreddingPreview
        | CatalogManaged
        | CatalogOwnedPreview
        | Geospatial
        | GeospatialDev
        | Unknown(_) => WriterDuty::Unsupported,
    }
}

impl TableConfiguration {
    /// Checks that this library may write a commit to a table with this configuration, naming
    /// the first feature it cannot honour in an [`Error::UnsupportedFeature`] of kind writer
    /// (an [`Error::UnsupportedProtocolVersion`] for a writer version above 7).
    ///
    /// Every writer feature of the protocol must be honoured: `WriterDuty::Log` features
    /// always are; `WriterDuty::DataWriter` features are when the commit adds no new data
    /// (`adds_data` false), when the table does not use them ([`Self::uses_feature`]), or
    /// when `data_writer` (the features the writer of the data files enforces) lists them.
    pub fn ensure_writable(&self, adds_data: bool, data_writer: &[TableFeature]) -> Result<()> {
        let version = self.protocol().min_writer_version;
        if !(1..=MAX_WRITER_VERSION).contains(&version) {
            return Err(Error::UnsupportedProtocolVersion {
                table: self.table_uri().to_string(),
                kind: ProtocolKind::Writer,
                version,
            });
        }
        for feature in self.writer_features().iter().chain(self.reader_features()) {
            let honoured = match writer_duty(feature) {
                WriterDuty::Log => true,
                WriterDuty::DataWriter => {
                    !adds_data || !self.uses_feature(feature) || data_writer.contains(feature)
                }
                WriterDuty::Unsupported => false,
            };
            if !honoured {
                return Err(Error::UnsupportedFeature {
                    table: self.table_uri().to_string(),
                    kind: ProtocolKind::Writer,
                    feature: feature.name().to_string(),
                });
            }
        }
        Ok(())
    }

    /// True when the table uses `feature` so that writing data must honour it: its property
    /// or schema metadata is there (invariants, CHECK constraints, generation expressions,
    /// identity columns, defaults, a column mapping mode); features without such a marker
    /// are in use whenever they are supported.
    pub fn uses_feature(&self, feature: &TableFeature) -> bool {
        if !self.is_feature_supported(feature) {
            return false;
        }
        let schema = self.schema();
        match feature {
            TableFeature::Invariants => any_field(schema, &|f| {
                !f.nullable || f.metadata.contains_key(INVARIANTS_KEY)
            }),
            TableFeature::CheckConstraints => has_constraints(&self.metadata().configuration),
            TableFeature::GeneratedColumns => any_field(schema, &|f| {
                f.metadata.contains_key(GENERATION_EXPRESSION_KEY)
            }),
            TableFeature::IdentityColumns => {
                any_field(schema, &|f| f.metadata.contains_key(IDENTITY_START_KEY))
            }
            TableFeature::AllowColumnDefaults => {
                any_field(schema, &|f| f.metadata.contains_key(CURRENT_DEFAULT_KEY))
            }
            TableFeature::ColumnMapping => self.column_mapping() != ColumnMappingMode::None,
            _ => self.is_feature_enabled(feature),
        }
    }
}

/// The features a table with `metadata` uses, from its configuration and schema, in the
/// order of [`TableFeature::known`], plus every `delta.feature.<name>` key of the
/// configuration (spec "Table Features": a property that forces a feature into the
/// protocol).
pub(crate) fn required_features(metadata: &Metadata, schema: &StructType) -> Vec<TableFeature> {
    use TableFeature::*;
    let configuration = &metadata.configuration;
    let properties = TableProperties::from_configuration(configuration);
    let field_has = |key: &str| any_field(schema, &|f| f.metadata.contains_key(key));
    let has_type = |wanted: PrimitiveType| any_type(schema, &wanted);
    let mut features: Vec<TableFeature> = TableFeature::known()
        .iter()
        .filter(|feature| match feature {
            AppendOnly => properties.append_only,
            // Delta on Spark counts NOT NULL columns as invariants too
            // (`Invariants.getFromSchema`): it refuses to read a table-features protocol
            // that leaves `invariants` out of a schema with one.
            Invariants => field_has(INVARIANTS_KEY) || any_field(schema, &|f| !f.nullable),
            CheckConstraints => has_constraints(configuration),
            ChangeDataFeed => properties.enable_change_data_feed,
            GeneratedColumns => field_has(GENERATION_EXPRESSION_KEY),
            IdentityColumns => field_has(IDENTITY_START_KEY),
            AllowColumnDefaults => field_has(CURRENT_DEFAULT_KEY),
            ColumnMapping => properties.column_mapping_mode != ColumnMappingMode::None,
            DeletionVectors => properties.enable_deletion_vectors,
            RowTracking | DomainMetadata => properties.enable_row_tracking,
            InCommitTimestamp => properties.enable_in_commit_timestamps,
            TypeWidening => properties.enable_type_widening,
            V2Checkpoint => properties.checkpoint_policy == CheckpointPolicy::V2,
            TimestampNtz => has_type(PrimitiveType::TimestampNtz),
            VariantType => has_type(PrimitiveType::Variant),
            Geospatial => any_geospatial(schema),
            IcebergCompatV1 => properties.enable_iceberg_compat_v1,
            IcebergCompatV2 => properties.enable_iceberg_compat_v2,
            IcebergCompatV3 => properties.enable_iceberg_compat_v3,
            MaterializePartitionColumns => properties.enable_materialize_partition_columns,
            _ => false,
        })
        .cloned()
        .collect();
    let mut forced: Vec<&String> = configuration
        .keys()
        .filter(|key| key.starts_with(FEATURE_PREFIX))
        .collect();
    forced.sort();
    for key in forced {
        let feature = TableFeature::from(&key[FEATURE_PREFIX.len()..]);
        if !features.contains(&feature) {
            features.push(feature);
        }
    }
    let mut index = 0;
    while let Some(feature) = features.get(index) {
        let needed: Vec<TableFeature> = feature
            .requires()
            .iter()
            .filter(|needed| !features.contains(needed))
            .cloned()
            .collect();
        features.extend(needed);
        index += 1;
    }
    features
}

/// The least protocol that supports `features` and is at least `(min_reader, min_writer)`
/// (spec "Protocol Evolution", "Table Features"): legacy versions when every feature has one
/// (at least reader 1 / writer 2, as Delta on Spark creates tables), else writer version 7
/// listing every feature, and reader version 3 listing the reader-writer features when one
/// of them needs it (column mapping alone is covered by reader version 2).
pub(crate) fn least_protocol(
    features: &[TableFeature],
    min_reader: i32,
    min_writer: i32,
) -> Protocol {
    let legacy = features.iter().all(|f| f.legacy_versions().is_some());
    if legacy && min_writer < MAX_WRITER_VERSION && min_reader < MAX_READER_VERSION {
        let (reader, writer) = features
            .iter()
            .filter_map(TableFeature::legacy_versions)
            .fold(
                (min_reader.max(1), min_writer.max(2)),
                |(r, w), (fr, fw)| (r.max(fr), w.max(fw)),
            );
        return Protocol {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: None,
            writer_features: None,
        };
    }
    let reader_writer: Vec<&TableFeature> =
        features.iter().filter(|f| f.is_reader_writer()).collect();
    let needs_reader_features = min_reader >= MAX_READER_VERSION
        || reader_writer
            .iter()
            .any(|f| **f != TableFeature::ColumnMapping);
    let names = |list: &mut dyn Iterator<Item = &TableFeature>| -> Vec<String> {
        list.map(|f| f.name().to_string()).collect()
    };
    let (reader, reader_features) = if needs_reader_features {
        let listed = names(&mut reader_writer.iter().copied());
        (MAX_READER_VERSION, Some(listed))
    } else if reader_writer.is_empty() {
        (min_reader.max(1), None)
    } else {
        (min_reader.max(2), None)
    };
    Protocol {
        min_reader_version: reader,
        min_writer_version: MAX_WRITER_VERSION,
        reader_features,
        writer_features: Some(names(&mut features.iter())),
    }
}

/// `protocol` widened to also support `features` (unchanged when it already does): legacy
/// versions stay legacy while they suffice, otherwise the protocol moves to table features
/// listing what the old versions implied plus the new features.
pub(crate) fn upgrade_protocol(protocol: &Protocol, features: &[TableFeature]) -> Protocol {
    use crate::table_config::features::{reader_features, supports, writer_features};
    let missing: Vec<&TableFeature> = features.iter().filter(|f| !supports(protocol, f)).collect();
    if missing.is_empty() {
        return protocol.clone();
    }
    let mut all: Vec<TableFeature> = writer_features(protocol);
    for feature in reader_features(protocol) {
        if !all.contains(&feature) {
            all.push(feature);
        }
    }
    for feature in missing {
        if !all.contains(feature) {
            all.push(feature.clone());
        }
    }
    least_protocol(
        &all,
        protocol.min_reader_version,
        protocol.min_writer_version,
    )
}

/// `protocol` without `dropped` and with `added`, normalized as Delta on Spark normalizes a
/// protocol after `DROP FEATURE` (`Protocol.removeFeature`): the features the old protocol
/// supports (legacy versions spelled out as their features), less `dropped`, plus `added`,
/// in the weakest form that supports exactly them ([`exact_protocol`]).
pub(crate) fn protocol_without(
    protocol: &Protocol,
    dropped: &TableFeature,
    added: &[TableFeature],
) -> Protocol {
    use crate::table_config::features::{reader_features, writer_features};
    let mut features: Vec<TableFeature> = writer_features(protocol);
    for feature in reader_features(protocol)
        .into_iter()
        .chain(added.iter().cloned())
    {
        if !features.contains(&feature) {
            features.push(feature);
        }
    }
    features.retain(|feature| feature != dropped);
    exact_protocol(&features)
}

/// The weakest protocol supporting exactly `features` (Delta on Spark's
/// `Protocol.normalized`): legacy versions when those imply exactly these features, else
/// writer version 7 listing them, with reader version 3 listing the reader-writer features
/// (2 for column mapping alone, 1 for none).
pub(crate) fn exact_protocol(features: &[TableFeature]) -> Protocol {
    use crate::table_config::features::supports;
    if features.iter().all(|f| f.legacy_versions().is_some()) {
        let (reader, writer) = features
            .iter()
            .filter_map(TableFeature::legacy_versions)
            .fold((1, 1), |(r, w), (fr, fw)| (r.max(fr), w.max(fw)));
        let legacy = Protocol {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: None,
            writer_features: None,
        };
        let implied = TableFeature::known()
            .iter()
            .filter(|feature| supports(&legacy, feature))
            .count();
        if implied == features.len() {
            return legacy;
        }
    }
    least_protocol(features, 1, MAX_WRITER_VERSION)
}

/// The protocol-version keys (`delta.minReaderVersion`, `delta.minWriterVersion`) of a
/// configuration, parsed; absent or unparsable keys give `(1, 2)`.
pub(crate) fn requested_versions(configuration: &HashMap<String, String>) -> (i32, i32) {
    let version = |key: &str, default: i32| {
        configuration
            .get(key)
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    (
        version(MIN_READER_VERSION, 1),
        version(MIN_WRITER_VERSION, 2),
    )
}

/// True when a configuration holds the keys that only steer the protocol
/// (`delta.minReaderVersion`, `delta.minWriterVersion`, `delta.feature.*`), which writers
/// do not store in `metaData.configuration`.
pub(crate) fn is_protocol_key(key: &str) -> bool {
    key == MIN_READER_VERSION || key == MIN_WRITER_VERSION || key.starts_with(FEATURE_PREFIX)
}

fn has_constraints(configuration: &HashMap<String, String>) -> bool {
    configuration
        .keys()
        .any(|key| key.starts_with(CONSTRAINTS_PREFIX))
}

/// True when a field of `schema` (at any depth) satisfies `test`.
fn any_field(schema: &StructType, test: &dyn Fn(&StructField) -> bool) -> bool {
    schema
        .fields
        .iter()
        .any(|field| test(field) || nested_struct_fields(&field.data_type, test))
}

fn nested_struct_fields(data_type: &DataType, test: &dyn Fn(&StructField) -> bool) -> bool {
    match data_type {
        DataType::Primitive(_) | DataType::Geospatial(_) => false,
        DataType::Struct(inner) => any_field(inner, test),
        DataType::Array(array) => nested_struct_fields(&array.element_type, test),
        DataType::Map(map) => {
            nested_struct_fields(&map.key_type, test) || nested_struct_fields(&map.value_type, test)
        }
    }
}

/// True when a column of `schema` (at any depth) has the primitive type `wanted`.
fn any_type(schema: &StructType, wanted: &PrimitiveType) -> bool {
    fn visit(data_type: &DataType, wanted: &PrimitiveType) -> bool {
        match data_type {
            DataType::Primitive(primitive) => primitive == wanted,
            DataType::Geospatial(_) => false,
            DataType::Struct(inner) => inner.fields.iter().any(|f| visit(&f.data_type, wanted)),
            DataType::Array(array) => visit(&array.element_type, wanted),
            DataType::Map(map) => visit(&map.key_type, wanted) || visit(&map.value_type, wanted),
        }
    }
    schema.fields.iter().any(|f| visit(&f.data_type, wanted))
}

/// True when a column of `schema` (at any depth) has a geospatial type.
fn any_geospatial(schema: &StructType) -> bool {
    fn visit(data_type: &DataType) -> bool {
        match data_type {
            DataType::Primitive(_) => false,
            DataType::Geospatial(_) => true,
            DataType::Struct(inner) => inner.fields.iter().any(|f| visit(&f.data_type)),
            DataType::Array(array) => visit(&array.element_type),
            DataType::Map(map) => visit(&map.key_type) || visit(&map.value_type),
        }
    }
    schema.fields.iter().any(|f| visit(&f.data_type))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::Format;

    fn legacy(reader: i32, writer: i32) -> Protocol {
        Protocol {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: None,
            writer_features: None,
        }
    }

    #[test]
    fn dropping_a_feature_normalizes_as_spark_does() {
        // (1, 3) without checkConstraints is exactly (1, 2).
        let dropped = protocol_without(&legacy(1, 3), &TableFeature::CheckConstraints, &[]);
        assert_eq!(dropped, legacy(1, 2));
        // (2, 5) without columnMapping, with checkpointProtection: the features (2, 5)
        // implied, spelled out.
        let dropped = protocol_without(
            &legacy(2, 5),
            &TableFeature::ColumnMapping,
            &[TableFeature::CheckpointProtection],
        );
        assert_eq!(
            (dropped.min_reader_version, dropped.min_writer_version),
            (1, 7)
        );
        let mut names = dropped.writer_features.clone().unwrap();
        names.sort();
        assert_eq!(
            names,
            [
                "appendOnly",
                "changeDataFeed",
                "checkConstraints",
                "checkpointProtection",
                "generatedColumns",
                "invariants"
            ]
        );
        assert_eq!(dropped.reader_features, None);
        // The last reader feature gone, the reader version drops to 1.
        let with_dvs = Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: Some(vec!["deletionVectors".into()]),
            writer_features: Some(vec!["deletionVectors".into(), "appendOnly".into()]),
        };
        let dropped = protocol_without(&with_dvs, &TableFeature::DeletionVectors, &[]);
        assert_eq!(
            dropped,
            Protocol {
                min_reader_version: 1,
                min_writer_version: 7,
                reader_features: None,
                writer_features: Some(vec!["appendOnly".into()]),
            }
        );
        assert_eq!(exact_protocol(&[]), legacy(1, 1));
    }

    fn metadata(configuration: &[(&str, &str)], schema: &StructType) -> Metadata {
        Metadata {
            id: "t".into(),
            name: None,
            description: None,
            format: Format::default(),
            schema_string: Some(schema.to_json().unwrap()),
            partition_columns: Vec::new(),
            created_time: None,
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn plain() -> StructType {
        StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)])
    }

    fn least(configuration: &[(&str, &str)], schema: &StructType) -> Protocol {
        let meta = metadata(configuration, schema);
        let (reader, writer) = requested_versions(&meta.configuration);
        least_protocol(&required_features(&meta, schema), reader, writer)
    }

    fn versions(protocol: &Protocol) -> (i32, i32) {
        (protocol.min_reader_version, protocol.min_writer_version)
    }

    /// A NOT NULL column counts as an invariant (Delta on Spark refuses to read a
    /// table-features protocol without `invariants` for one), and `clustering` brings
    /// `domainMetadata`.
    #[test]
    fn not_null_columns_need_invariants_and_clustering_needs_domains() {
        let strict = StructType::new(vec![StructField::new("a", PrimitiveType::Long, false)]);
        let protocol = least(&[("delta.enableDeletionVectors", "true")], &strict);
        let features = protocol.writer_features.unwrap_or_default();
        assert!(features.contains(&"invariants".to_string()), "{features:?}");
        let protocol = least(&[("delta.enableDeletionVectors", "true")], &plain());
        let features = protocol.writer_features.unwrap_or_default();
        assert!(
            !features.contains(&"invariants".to_string()),
            "{features:?}"
        );
        let protocol = least(&[("delta.feature.clustering", "supported")], &plain());
        let features = protocol.writer_features.unwrap_or_default();
        assert!(
            features.contains(&"domainMetadata".to_string()),
            "{features:?}"
        );
    }

    #[test]
    fn legacy_versions_when_they_suffice() {
        assert_eq!(versions(&least(&[], &plain())), (1, 2));
        assert_eq!(
            versions(&least(&[("delta.enableChangeDataFeed", "true")], &plain())),
            (1, 4)
        );
        assert_eq!(
            versions(&least(&[("delta.columnMapping.mode", "name")], &plain())),
            (2, 5)
        );
        assert_eq!(
            versions(&least(&[("delta.constraints.positive", "a > 0")], &plain())),
            (1, 3)
        );
        assert_eq!(
            versions(&least(&[("delta.minWriterVersion", "4")], &plain())),
            (1, 4)
        );
    }

    #[test]
    fn table_features_otherwise_with_reader_features_in_both_lists() {
        let protocol = least(
            &[
                ("delta.enableDeletionVectors", "true"),
                ("delta.appendOnly", "true"),
            ],
            &plain(),
        );
        assert_eq!(versions(&protocol), (3, 7));
        assert_eq!(
            protocol.reader_features,
            Some(vec!["deletionVectors".into()])
        );
        assert_eq!(
            protocol.writer_features,
            Some(vec!["deletionVectors".into(), "appendOnly".into()])
        );
        let protocol = least(&[("delta.enableRowTracking", "true")], &plain());
        assert_eq!(versions(&protocol), (1, 7));
        assert_eq!(
            protocol.writer_features,
            Some(vec!["rowTracking".into(), "domainMetadata".into()])
        );
        let ntz = StructType::new(vec![StructField::new(
            "t",
            PrimitiveType::TimestampNtz,
            true,
        )]);
        let protocol = least(&[], &ntz);
        assert_eq!(protocol.reader_features, Some(vec!["timestampNtz".into()]));
        let protocol = least(
            &[("delta.feature.inCommitTimestamp", "supported")],
            &plain(),
        );
        assert_eq!(
            protocol.writer_features,
            Some(vec!["inCommitTimestamp".into()])
        );
    }

    #[test]
    fn upgrades_keep_what_the_old_versions_implied() {
        let legacy = Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: None,
            writer_features: None,
        };
        assert_eq!(
            upgrade_protocol(&legacy, &[TableFeature::AppendOnly]),
            legacy
        );
        let upgraded = upgrade_protocol(&legacy, &[TableFeature::DeletionVectors]);
        assert_eq!(versions(&upgraded), (3, 7));
        assert_eq!(
            upgraded.writer_features,
            Some(vec![
                "appendOnly".into(),
                "invariants".into(),
                "deletionVectors".into()
            ])
        );
    }

    #[test]
    fn data_writer_features_are_honoured_only_when_used_and_enforced() {
        let constrained = metadata(&[("delta.constraints.c", "a > 0")], &plain());
        let protocol = Protocol {
            min_reader_version: 1,
            min_writer_version: 3,
            reader_features: None,
            writer_features: None,
        };
        let config = TableConfiguration::try_new(protocol.clone(), constrained, "t").unwrap();
        assert!(config.ensure_writable(false, &[]).is_ok());
        let error = config.ensure_writable(true, &[]).unwrap_err();
        assert!(
            matches!(&error, Error::UnsupportedFeature { feature, kind: ProtocolKind::Writer, .. } if feature == "checkConstraints"),
            "{error}"
        );
        assert!(config
            .ensure_writable(true, &[TableFeature::CheckConstraints])
            .is_ok());
        let unconstrained = metadata(&[], &plain());
        let config = TableConfiguration::try_new(protocol, unconstrained, "t").unwrap();
        assert!(config.ensure_writable(true, &[]).is_ok());
        let unknown = Protocol {
            min_reader_version: 1,
            min_writer_version: 7,
            reader_features: None,
            writer_features: Some(vec!["futureThing".into()]),
        };
        let config = TableConfiguration::try_new(unknown, metadata(&[], &plain()), "t").unwrap();
        let error = config.ensure_writable(false, &[]).unwrap_err();
        assert!(error.to_string().contains("futureThing"), "{error}");
    }
}
