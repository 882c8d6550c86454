//! The validated configuration of one table version: its protocol and metadata checked and
//! parsed once (spec "Protocol Evolution", "Table Features", "Column Mapping", "Change
//! Metadata"; catalogue D, E1).
//!
//! A [`TableConfiguration`] is what every reader (snapshot, scan, change feed) and, later,
//! every writer asks about a table's shape: can this library read it, its logical schema (and
//! as Arrow), its physical schema under column mapping, its partition columns, its typed
//! properties ([`properties::TableProperties`]) and which table features
//! ([`features::TableFeature`]) it supports and has turned on.

pub(crate) mod clustering;
pub(crate) mod features;
pub(crate) mod iceberg;
pub(crate) mod properties;
#[cfg(feature = "internal-api")]
pub mod stats;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod stats;
pub(crate) mod stats_json;
pub(crate) mod user_properties;
pub(crate) mod writing;

use std::sync::{Arc, OnceLock};

use arrow_schema::SchemaRef;

use crate::actions::{Metadata, Protocol};
use crate::error::{Error, Result};
use crate::schema::{parse_schema, to_arrow_schema, ColumnMappingMode, Evolution, StructType};

pub use clustering::ClusteringColumn;
pub use features::TableFeature;
pub use properties::TableProperties;

/// The protocol and metadata of one table version, validated: built only for tables this
/// library can read. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TableConfiguration {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    protocol: Protocol,
    metadata: Metadata,
    table_uri: String,
    schema: StructType,
    arrow_schema: SchemaRef,
    properties: TableProperties,
    reader_features: Vec<TableFeature>,
    writer_features: Vec<TableFeature>,
    /// Built on first use: a schema whose columns lack physical names still reads as long as
    /// nothing asks for it.
    physical_schema: OnceLock<StructType>,
}

impl TableConfiguration {
    /// Validates `protocol` and `metadata` of the table at `table_uri`, in this order:
    /// - the protocol must be readable (`features::ensure_readable`):
    ///   [`Error::UnsupportedProtocolVersion`] or [`Error::UnsupportedFeature`];
    /// - `schemaString` must parse (`logical_schema`; absent is an empty schema): an
    ///   [`Error::InvalidTable`] of `table_uri`;
    /// - `delta.columnMapping.mode` must be `none`, `name` or `id`: an [`Error::InvalidTable`]
    ///   of `metaData.configuration`.
    ///
    /// Every other property is parsed leniently (see `properties`).
    pub fn try_new(
        protocol: Protocol,
        metadata: Metadata,
        table_uri: &str,
    ) -> Result<TableConfiguration> {
        TableConfiguration::build(protocol, metadata, table_uri, None)
    }

    /// [`TableConfiguration::try_new`] for the metadata in force at `version`, its schema
    /// errors naming the version (as the change feed reports them).
    pub fn try_new_at_version(
        protocol: Protocol,
        metadata: Metadata,
        table_uri: &str,
        version: u64,
    ) -> Result<TableConfiguration> {
        TableConfiguration::build(protocol, metadata, table_uri, Some(version))
    }

    /// The protocol.
    pub fn protocol(&self) -> &Protocol {
        &self.inner.protocol
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.inner.metadata
    }

    /// The table's URI, as given.
    pub fn table_uri(&self) -> &str {
        &self.inner.table_uri
    }

    /// The logical schema (empty when `metaData` has no `schemaString`).
    pub fn schema(&self) -> &StructType {
        &self.inner.schema
    }

    /// The logical schema as Arrow (`crate::schema::to_arrow_schema`).
    pub fn arrow_schema(&self) -> SchemaRef {
        self.inner.arrow_schema.clone()
    }

    /// The column mapping mode (`delta.columnMapping.mode`).
    pub fn column_mapping(&self) -> ColumnMappingMode {
        self.inner.properties.column_mapping_mode
    }

    /// The schema as the data files see it: every column renamed to its physical name under
    /// the column mapping mode, column ids kept in the metadata
    /// ([`StructType::physical_schema`]; catalogue E1-06). Without column mapping, the
    /// logical schema. A column without a physical name under `name` or `id` mapping is an
    /// [`Error::InvalidTable`].
    pub fn physical_schema(&self) -> Result<&StructType> {
        if let Some(schema) = self.inner.physical_schema.get() {
            return Ok(schema);
        }
        let schema = self.inner.schema.physical_schema(self.column_mapping())?;
        Ok(self.inner.physical_schema.get_or_init(|| schema))
    }

    /// The partition columns, in order.
    pub fn partition_columns(&self) -> &[String] {
        &self.inner.metadata.partition_columns
    }

    /// What a schema evolution of this table may change besides adding fields: widen types
    /// under `delta.enableTypeWidening`; never the partition columns' types.
    pub(crate) fn schema_evolution(&self) -> Evolution<'_> {
        Evolution {
            widen_types: self.properties().enable_type_widening,
            fixed_columns: self.partition_columns(),
        }
    }

    /// The `delta.*` properties of the metadata, typed, with their defaults.
    pub fn properties(&self) -> &TableProperties {
        &self.inner.properties
    }

    /// The reader features the protocol makes readers implement, legacy versions included
    /// (`features::reader_features`).
    pub fn reader_features(&self) -> &[TableFeature] {
        &self.inner.reader_features
    }

    /// The writer features the protocol makes writers implement, legacy versions included
    /// (`features::writer_features`).
    pub fn writer_features(&self) -> &[TableFeature] {
        &self.inner.writer_features
    }

    /// True when the protocol supports `feature` for readers or writers, legacy versions
    /// included (spec "Supported Features").
    pub fn is_feature_supported(&self, feature: &TableFeature) -> bool {
        self.inner.reader_features.contains(feature) || self.inner.writer_features.contains(feature)
    }

    /// True when `feature` is supported and active (spec "Active Features"): features that a
    /// property turns on need it (`appendOnly`: `delta.appendOnly`, `changeDataFeed`:
    /// `delta.enableChangeDataFeed`, `columnMapping`: a mode other than `none`,
    /// `deletionVectors`: `delta.enableDeletionVectors`, `rowTracking`:
    /// `delta.enableRowTracking`, `inCommitTimestamp`: `delta.enableInCommitTimestamps`,
    /// `typeWidening`: `delta.enableTypeWidening`, `icebergCompatV1`/`V2`/`V3`: their
    /// `delta.enableIcebergCompat*`); every other feature is active when supported.
    pub fn is_feature_enabled(&self, feature: &TableFeature) -> bool {
        if !self.is_feature_supported(feature) {
            return false;
        }
        let properties = &self.inner.properties;
        match feature {
            TableFeature::AppendOnly => properties.append_only,
            TableFeature::ChangeDataFeed => properties.enable_change_data_feed,
            TableFeature::ColumnMapping => {
                properties.column_mapping_mode != ColumnMappingMode::None
            }
            TableFeature::DeletionVectors => properties.enable_deletion_vectors,
            TableFeature::RowTracking => properties.enable_row_tracking,
            TableFeature::InCommitTimestamp => properties.enable_in_commit_timestamps,
            TableFeature::TypeWidening | TableFeature::TypeWideningPreview => {
                properties.enable_type_widening
            }
            TableFeature::IcebergCompatV1 => properties.enable_iceberg_compat_v1,
            TableFeature::IcebergCompatV2 => properties.enable_iceberg_compat_v2,
            TableFeature::IcebergCompatV3 => properties.enable_iceberg_compat_v3,
            _ => true,
        }
    }

    /// True when the change data feed may be read: `delta.enableChangeDataFeed` is `true`.
    /// Delta on Spark reads the property alone, whatever the protocol says, and so does this.
    pub fn is_change_data_feed_enabled(&self) -> bool {
        self.inner.properties.enable_change_data_feed
    }

    /// True when deletion vectors are supported and `delta.enableDeletionVectors` is `true`
    /// (writers may write them; readers honour existing ones either way).
    pub fn is_deletion_vectors_enabled(&self) -> bool {
        self.is_feature_enabled(&TableFeature::DeletionVectors)
    }

    /// True when row tracking is supported (row ids can be read; catalogue E4).
    pub fn is_row_tracking_supported(&self) -> bool {
        self.is_feature_supported(&TableFeature::RowTracking)
    }

    /// True when writers give new files row ids: row tracking is supported and not suspended
    /// (`delta.rowTrackingSuspended`, set while the feature is being dropped).
    pub fn assigns_row_ids(&self) -> bool {
        self.is_row_tracking_supported() && !self.properties().row_tracking_suspended
    }

    /// True when row tracking is supported and `delta.enableRowTracking` is `true`.
    pub fn is_row_tracking_enabled(&self) -> bool {
        self.is_feature_enabled(&TableFeature::RowTracking)
    }

    /// True when in-commit timestamps are supported and `delta.enableInCommitTimestamps` is
    /// `true`.
    pub fn is_in_commit_timestamps_enabled(&self) -> bool {
        self.is_feature_enabled(&TableFeature::InCommitTimestamp)
    }

    fn build(
        protocol: Protocol,
        metadata: Metadata,
        table_uri: &str,
        version: Option<u64>,
    ) -> Result<TableConfiguration> {
        features::ensure_readable(&protocol, table_uri)?;
        let schema = match version {
            None => logical_schema(&metadata, table_uri)?,
            Some(version) => parse_or_empty(&metadata).map_err(|error| {
                Error::invalid_table(table_uri, format!("version {version}: {error}"))
            })?,
        };
        let arrow_schema = Arc::new(to_arrow_schema(&schema)?);
        let properties = TableProperties::try_from_configuration(&metadata.configuration)?;
        let reader_features = features::reader_features(&protocol);
        let writer_features = features::writer_features(&protocol);
        Ok(TableConfiguration {
            inner: Arc::new(Inner {
                protocol,
                metadata,
                table_uri: table_uri.to_string(),
                schema,
                arrow_schema,
                properties,
                reader_features,
                writer_features,
                physical_schema: OnceLock::new(),
            }),
        })
    }
}

/// The logical schema of `metadata` (empty when it has no `schemaString`, as Delta on Spark
/// reads it); a schema that does not parse is an [`Error::InvalidTable`] of `table_uri`.
pub(crate) fn logical_schema(metadata: &Metadata, table_uri: &str) -> Result<StructType> {
    parse_or_empty(metadata).map_err(|error| Error::invalid_table(table_uri, error))
}

fn parse_or_empty(metadata: &Metadata) -> Result<StructType> {
    match &metadata.schema_string {
        Some(text) => parse_schema(text),
        None => Ok(StructType::new(Vec::new())),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::schema::{
        PrimitiveType, StructField, COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    };

    fn protocol(reader: i32, writer: i32, features: &[&str]) -> Protocol {
        let list = || Some(features.iter().map(|f| f.to_string()).collect());
        Protocol {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: (reader == 3).then(list).flatten(),
            writer_features: (writer == 7).then(list).flatten(),
        }
    }

    fn metadata(schema: &StructType, configuration: &[(&str, &str)]) -> Metadata {
        Metadata {
            id: "t".into(),
            name: None,
            description: None,
            format: Default::default(),
            schema_string: Some(schema.to_json().unwrap()),
            partition_columns: vec!["p".to_string()],
            created_time: None,
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        }
    }

    fn mapped_schema() -> StructType {
        let column = |name: &str, id: i64, physical: &str, data_type: crate::schema::DataType| {
            StructField::new(name, data_type, true).with_metadata([
                (COLUMN_MAPPING_ID_KEY, json!(id)),
                (COLUMN_MAPPING_PHYSICAL_NAME_KEY, json!(physical)),
            ])
        };
        let inner = StructType::new(vec![column("x", 3, "col-x", PrimitiveType::Long.into())]);
        StructType::new(vec![
            column("a", 1, "col-a", PrimitiveType::Integer.into()),
            column("s", 2, "col-s", inner.into()),
            column("p", 4, "col-p", PrimitiveType::String.into()),
        ])
    }

    #[test]
    fn unreadable_protocols_are_refused_before_anything_else() {
        let mut broken = metadata(&mapped_schema(), &[]);
        broken.schema_string = Some("not json".to_string());
        let error = TableConfiguration::try_new(
            protocol(3, 7, &["deletionVectors", "futureThing"]),
            broken.clone(),
            "t",
        )
        .unwrap_err();
        assert!(
            matches!(&error, Error::UnsupportedFeature { feature, .. } if feature == "futureThing"),
            "{error}"
        );
        let error = TableConfiguration::try_new(protocol(4, 7, &[]), broken.clone(), "t");
        assert!(matches!(
            error,
            Err(Error::UnsupportedProtocolVersion { version: 4, .. })
        ));
        let error = TableConfiguration::try_new(protocol(1, 2, &[]), broken, "t").unwrap_err();
        assert!(
            matches!(&error, Error::InvalidTable { table, .. } if table == "t"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_column_mapping_mode_is_refused() {
        let meta = metadata(
            &mapped_schema(),
            &[(properties::COLUMN_MAPPING_MODE, "bogus")],
        );
        let error = TableConfiguration::try_new(protocol(2, 5, &[]), meta, "t").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("unknown delta.columnMapping.mode `bogus`"),
            "{error}"
        );
    }

    #[test]
    fn schema_errors_name_the_version_when_given() {
        let mut meta = metadata(&mapped_schema(), &[]);
        meta.schema_string = Some("{".to_string());
        let error =
            TableConfiguration::try_new_at_version(protocol(1, 2, &[]), meta, "t", 4).unwrap_err();
        assert!(error.to_string().contains("version 4: "), "{error}");
    }

    #[test]
    fn physical_schema_under_name_and_id_mapping() {
        for mode in ["name", "id"] {
            let meta = metadata(&mapped_schema(), &[(properties::COLUMN_MAPPING_MODE, mode)]);
            let config = TableConfiguration::try_new(protocol(2, 5, &[]), meta, "t").unwrap();
            assert_eq!(config.column_mapping().to_string(), mode);
            assert_eq!(config.schema().fields[0].name, "a");
            assert_eq!(config.arrow_schema().field(0).name(), "a");
            let physical = config.physical_schema().unwrap();
            let names: Vec<&str> = physical.fields.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(names, ["col-a", "col-s", "col-p"]);
            let nested = physical.fields[1].data_type.as_struct().unwrap();
            assert_eq!(nested.fields[0].name, "col-x");
            assert_eq!(nested.fields[0].field_id(), Some(3));
            assert_eq!(physical.fields[0].field_id(), Some(1));
            assert_eq!(config.partition_columns(), ["p"]);
        }
        let meta = metadata(&mapped_schema(), &[]);
        let config = TableConfiguration::try_new(protocol(1, 2, &[]), meta, "t").unwrap();
        assert_eq!(config.column_mapping(), ColumnMappingMode::None);
        assert_eq!(config.physical_schema().unwrap(), config.schema());
    }

    #[test]
    fn a_column_without_physical_name_fails_only_the_physical_schema() {
        let plain = StructType::new(vec![StructField::new("a", PrimitiveType::Long, true)]);
        let meta = metadata(&plain, &[(properties::COLUMN_MAPPING_MODE, "name")]);
        let config = TableConfiguration::try_new(protocol(2, 5, &[]), meta, "t").unwrap();
        let error = config.physical_schema().unwrap_err().to_string();
        assert!(error.contains("column `a` has no string"), "{error}");
    }

    #[test]
    fn features_are_supported_by_the_protocol_and_enabled_by_properties() {
        let schema = mapped_schema();
        let on = [
            (properties::ENABLE_DELETION_VECTORS, "true"),
            (properties::ENABLE_ROW_TRACKING, "true"),
            (properties::ENABLE_CHANGE_DATA_FEED, "true"),
            (properties::ENABLE_IN_COMMIT_TIMESTAMPS, "true"),
        ];
        let names = |names: &[&str]| Some(names.iter().map(|n| n.to_string()).collect());
        let listed = Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: names(&["deletionVectors"]),
            writer_features: names(&[
                "deletionVectors",
                "rowTracking",
                "inCommitTimestamp",
                "changeDataFeed",
            ]),
        };
        let config =
            TableConfiguration::try_new(listed.clone(), metadata(&schema, &on), "t").unwrap();
        assert!(config.is_deletion_vectors_enabled());
        assert!(config.is_row_tracking_supported() && config.is_row_tracking_enabled());
        assert!(config.is_in_commit_timestamps_enabled());
        assert!(config.is_change_data_feed_enabled());
        assert!(config.is_feature_enabled(&TableFeature::ChangeDataFeed));
        assert!(!config.is_feature_supported(&TableFeature::AppendOnly));

        let off = TableConfiguration::try_new(listed, metadata(&schema, &[]), "t").unwrap();
        assert!(off.is_feature_supported(&TableFeature::DeletionVectors));
        assert!(!off.is_deletion_vectors_enabled());
        assert!(off.is_row_tracking_supported() && !off.is_row_tracking_enabled());
        assert!(!off.is_in_commit_timestamps_enabled());

        // Properties without the feature in the protocol turn nothing on, except the change
        // feed, which readers take from the property alone.
        let legacy =
            TableConfiguration::try_new(protocol(1, 2, &[]), metadata(&schema, &on), "t").unwrap();
        assert!(!legacy.is_deletion_vectors_enabled());
        assert!(!legacy.is_row_tracking_enabled());
        assert!(!legacy.is_feature_enabled(&TableFeature::ChangeDataFeed));
        assert!(legacy.is_change_data_feed_enabled());
        assert!(legacy.is_feature_supported(&TableFeature::AppendOnly));
        assert!(!legacy.is_feature_enabled(&TableFeature::AppendOnly));
        assert!(legacy.is_feature_enabled(&TableFeature::Invariants));
    }
}
