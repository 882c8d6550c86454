//! Protocol versions and table features (spec "Protocol Evolution", "Table Features", "Valid
//! Feature Names in Table Features"; catalogue D).
//!
//! Reading a table needs every reader feature it lists; a reader feature this library does not
//! implement makes loading fail with [`Error::UnsupportedFeature`]. Writer features only matter
//! to writers. Tables below reader version 3 / writer version 7 list no features: their
//! versions imply a fixed set ([`TableFeature::legacy_versions`]).

use std::fmt;
use std::str::FromStr;

use crate::actions::Protocol;
use crate::error::{Error, ProtocolKind, Result};

/// The highest reader protocol version (3: explicit reader features).
pub(crate) const MAX_READER_VERSION: i32 = 3;
/// The highest writer protocol version (7: explicit writer features).
pub(crate) const MAX_WRITER_VERSION: i32 = 7;

/// A table feature, as named in the protocol's `readerFeatures` / `writerFeatures` (spec
/// "Valid Feature Names in Table Features"), with the features Delta on Spark and Databricks
/// write that the spec does not list yet. Names compare exactly (they are case-sensitive).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TableFeature {
    // Reader and writer features.
    /// `columnMapping` (spec "Column Mapping").
    ColumnMapping,
    /// `deletionVectors` (spec "Deletion Vectors").
    DeletionVectors,
    /// `timestampNtz` (spec "Timestamp without timezone").
    TimestampNtz,
    /// `v2Checkpoint` (spec "V2 Checkpoint Table Feature").
    V2Checkpoint,
    /// `vacuumProtocolCheck`: vacuum checks the protocol before deleting files.
    VacuumProtocolCheck,
    /// `variantType`: columns of type `variant`.
    VariantType,
    /// `variantType-preview`: the preview name of `variantType`.
    VariantTypePreview,
    /// `variantShredding`: shredded `variant` columns (Parquet's shredded variant encoding).
    VariantShredding,
    /// `variantShredding-preview`: the preview name of `variantShredding`.
    VariantShreddingPreview,
    /// `typeWidening`: columns whose type was widened (`delta.typeChanges`).
    TypeWidening,
    /// `typeWidening-preview`: the preview name of `typeWidening`.
    TypeWideningPreview,
    /// `catalogManaged`: commits are ratified by a catalog.
    CatalogManaged,
    /// `catalogOwned-preview`: the preview name of `catalogManaged`.
    CatalogOwnedPreview,
    /// `geospatial`: columns of type `geometry(<crs>)` and `geography(<crs>, <algorithm>)`
    /// (Delta on Spark's `GeoSpatialTableFeature`).
    Geospatial,
    /// `geospatial-dev`: the preview name of `geospatial` (Delta on Spark's
    /// `GeoSpatialPreviewTableFeature`).
    GeospatialDev,
    // Writer-only features.
    /// `appendOnly` (spec "Append-only Tables").
    AppendOnly,
    /// `invariants` (spec "Column Invariants").
    Invariants,
    /// `checkConstraints` (spec "CHECK Constraints").
    CheckConstraints,
    /// `changeDataFeed` (spec "Change Data Feed").
    ChangeDataFeed,
    /// `generatedColumns` (spec "Generated Columns").
    GeneratedColumns,
    /// `identityColumns` (spec "Identity Columns").
    IdentityColumns,
    /// `rowTracking` (spec "Row Tracking").
    RowTracking,
    /// `domainMetadata` (spec "Domain Metadata").
    DomainMetadata,
    /// `icebergCompatV1` (spec "Iceberg Compatibility V1").
    IcebergCompatV1,
    /// `icebergCompatV2` (spec "Iceberg Compatibility V2").
    IcebergCompatV2,
    /// `icebergCompatV3`: Iceberg compatibility V3 (Delta on Spark's `IcebergCompatV3`).
    IcebergCompatV3,
    /// `icebergWriterCompatV1`: stricter Iceberg compatibility for writers.
    IcebergWriterCompatV1,
    /// `materializePartitionColumns`: partition values are also written into the data files.
    MaterializePartitionColumns,
    /// `clustering` (spec "Clustered Table").
    Clustering,
    /// `allowColumnDefaults` (spec "Default Columns").
    AllowColumnDefaults,
    /// `inCommitTimestamp`: commits carry their timestamp in `commitInfo`.
    InCommitTimestamp,
    /// `checkpointProtection`: checkpoints before a version may only be removed with care.
    CheckpointProtection,
    /// Any other name: a feature this library does not know.
    Unknown(String),
}

/// Every known feature, in the order of the enum.
const KNOWN_FEATURES: &[TableFeature] = &[
    TableFeature::ColumnMapping,
    TableFeature::DeletionVectors,
    TableFeature::TimestampNtz,
    TableFeature::V2Checkpoint,
    TableFeature::VacuumProtocolCheck,
    TableFeature::VariantType,
    TableFeature::VariantTypePreview,
    TableFeature::VariantShredding,
    TableFeature::VariantShreddingPreview,
    TableFeature::TypeWidening,
    TableFeature::TypeWideningPreview,
    TableFeature::CatalogManaged,
    TableFeature::CatalogOwnedPreview,
    TableFeature::Geospatial,
    TableFeature::GeospatialDev,
    TableFeature::AppendOnly,
    TableFeature::Invariants,
    TableFeature::CheckConstraints,
    TableFeature::ChangeDataFeed,
    TableFeature::GeneratedColumns,
    TableFeature::IdentityColumns,
    TableFeature::RowTracking,
    TableFeature::DomainMetadata,
    TableFeature::IcebergCompatV1,
    TableFeature::IcebergCompatV2,
    TableFeature::IcebergCompatV3,
    TableFeature::IcebergWriterCompatV1,
    TableFeature::MaterializePartitionColumns,
    TableFeature::Clustering,
    TableFeature::AllowColumnDefaults,
    TableFeature::InCommitTimestamp,
    TableFeature::CheckpointProtection,
];

/// The features legacy protocol versions imply, in the order of their versions.
const LEGACY_FEATURES: &[TableFeature] = &[
    TableFeature::AppendOnly,
    TableFeature::Invariants,
    TableFeature::CheckConstraints,
    TableFeature::ChangeDataFeed,
    TableFeature::GeneratedColumns,
    TableFeature::ColumnMapping,
    TableFeature::IdentityColumns,
];

impl TableFeature {
    /// Every feature this library knows by name (never [`TableFeature::Unknown`]).
    pub fn known() -> &'static [TableFeature] {
        KNOWN_FEATURES
    }

    /// The feature's name in the protocol action.
    pub fn name(&self) -> &str {
        use TableFeature::*;
        match self {
            ColumnMapping => "columnMapping",
            DeletionVectors => "deletionVectors",
            TimestampNtz => "timestampNtz",
            V2Checkpoint => "v2Checkpoint",
            VacuumProtocolCheck => "vacuumProtocolCheck",
            VariantType => "variantType",
            VariantTypePreview => "variantType-preview",
            VariantShredding => "variantShredding",
            VariantShreddingPreview => "variantShredding-preview",
            TypeWidening => "typeWidening",
            TypeWideningPreview => "typeWidening-preview",
            CatalogManaged => "catalogManaged",
            CatalogOwnedPreview => "catalogOwned-preview",
            Geospatial => "geospatial",
            GeospatialDev => "geospatial-dev",
            AppendOnly => "appendOnly",
            Invariants => "invariants",
            CheckConstraints => "checkConstraints",
            ChangeDataFeed => "changeDataFeed",
            GeneratedColumns => "generatedColumns",
            IdentityColumns => "identityColumns",
            RowTracking => "rowTracking",
            DomainMetadata => "domainMetadata",
            IcebergCompatV1 => "icebergCompatV1",
            IcebergCompatV2 => "icebergCompatV2",
            IcebergCompatV3 => "icebergCompatV3",
            IcebergWriterCompatV1 => "icebergWriterCompatV1",
            MaterializePartitionColumns => "materializePartitionColumns",
            Clustering => "clustering",
            AllowColumnDefaults => "allowColumnDefaults",
            InCommitTimestamp => "inCommitTimestamp",
            CheckpointProtection => "checkpointProtection",
            Unknown(name) => name,
        }
    }

    /// True for a reader-and-writer feature (listed in both `readerFeatures` and
    /// `writerFeatures`), false for a writer-only one (spec "Valid Feature Names in Table
    /// Features"). An unknown feature is taken to be writer-only; whether readers need it is
    /// decided by the list it appears in.
    pub fn is_reader_writer(&self) -> bool {
        use TableFeature::*;
        matches!(
            self,
            ColumnMapping
                | DeletionVectors
                | TimestampNtz
                | V2Checkpoint
                | VacuumProtocolCheck
                | VariantType
                | VariantTypePreview
                | VariantShredding
                | VariantShreddingPreview
                | TypeWidening
                | TypeWideningPreview
                | CatalogManaged
                | CatalogOwnedPreview
                | Geospatial
                | GeospatialDev
        )
    }

    /// The lowest legacy `(minReaderVersion, minWriterVersion)` that implies the feature, for
    /// features older than table features (catalogue D; Delta on Spark's legacy protocol
    /// versions): writer 2 implies `appendOnly` and `invariants`, 3 `checkConstraints`, 4
    /// `changeDataFeed` and `generatedColumns`, 5 (with reader 2) `columnMapping`, 6
    /// `identityColumns`. `None` for a feature that only reader 3 / writer 7 can list.
    pub fn legacy_versions(&self) -> Option<(i32, i32)> {
        use TableFeature::*;
        match self {
            AppendOnly | Invariants => Some((1, 2)),
            CheckConstraints => Some((1, 3)),
            ChangeDataFeed | GeneratedColumns => Some((1, 4)),
            ColumnMapping => Some((2, 5)),
            IdentityColumns => Some((1, 6)),
            _ => None,
        }
    }

    /// True when this library implements the feature for reading snapshots and data: a table
    /// listing a reader feature for which this is false cannot be read.
    pub fn is_supported_for_reading(&self) -> bool {
        use TableFeature::*;
        matches!(
            self,
            ColumnMapping
                | DeletionVectors
                | TimestampNtz
                | V2Checkpoint
                | VacuumProtocolCheck
                | VariantType
                | VariantTypePreview
                | VariantShredding
                | VariantShreddingPreview
                | TypeWidening
                | TypeWideningPreview
                | Geospatial
                | GeospatialDev
        )
    }

    /// The features this one needs supported beside it (spec "Table Features": `clustering`
    /// and `rowTracking` write domain metadata, so they need `domainMetadata`).
    pub(crate) fn requires(&self) -> &'static [TableFeature] {
        const DOMAINS: &[TableFeature] = &[TableFeature::DomainMetadata];
        match self {
            TableFeature::Clustering | TableFeature::RowTracking => DOMAINS,
            _ => &[],
        }
    }

    /// True when this library knows what the feature asks of writers.
    pub fn is_known_for_writing(&self) -> bool {
        use TableFeature::*;
        !matches!(
            self,
            VariantShredding
                | VariantShreddingPreview
                | CatalogManaged
                | CatalogOwnedPreview
                | IcebergWriterCompatV1
                | Geospatial
                | GeospatialDev
                | Unknown(_)
        )
    }
}

impl FromStr for TableFeature {
    type Err = std::convert::Infallible;

    /// The feature named `name` (exactly), [`TableFeature::Unknown`] for any other name.
    fn from_str(name: &str) -> std::result::Result<Self, Self::Err> {
        let known = KNOWN_FEATURES.iter().find(|feature| feature.name() == name);
        Ok(known
            .cloned()
            .unwrap_or_else(|| TableFeature::Unknown(name.to_string())))
    }
}

impl From<&str> for TableFeature {
    fn from(name: &str) -> Self {
        match name.parse() {
            Ok(feature) => feature,
            Err(never) => match never {},
        }
    }
}

impl fmt::Display for TableFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Checks that this library can read a table with `protocol`, naming `table` in the error.
///
/// Reader version 1 needs nothing, 2 adds column mapping, 3 lists its features explicitly
/// (catalogue D). Anything above 3 is an [`Error::UnsupportedProtocolVersion`]; a reader
/// feature for which [`TableFeature::is_supported_for_reading`] is false is an
/// [`Error::UnsupportedFeature`].
pub(crate) fn ensure_readable(protocol: &Protocol, table: &str) -> Result<()> {
    let version = protocol.min_reader_version;
    if !(1..=MAX_READER_VERSION).contains(&version) {
        return Err(Error::UnsupportedProtocolVersion {
            table: table.to_string(),
            kind: ProtocolKind::Reader,
            version,
        });
    }
    if version == MAX_READER_VERSION {
        for feature in protocol.reader_features.iter().flatten() {
            if !TableFeature::from(feature.as_str()).is_supported_for_reading() {
                return Err(Error::UnsupportedFeature {
                    table: table.to_string(),
                    kind: ProtocolKind::Reader,
                    feature: feature.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The reader features `protocol` makes readers implement, legacy versions included: none for
/// reader version 1, `columnMapping` for 2, the `readerFeatures` list from 3 on.
pub(crate) fn reader_features(protocol: &Protocol) -> Vec<TableFeature> {
    match protocol.min_reader_version {
        ..=1 => Vec::new(),
        2 => vec![TableFeature::ColumnMapping],
        _ => listed(protocol.reader_features.as_deref()),
    }
}

/// The writer features `protocol` makes writers implement, legacy versions included: from
/// writer version 7 the `writerFeatures` list, below it every feature whose
/// [`TableFeature::legacy_versions`] writer version is at most the table's.
pub(crate) fn writer_features(protocol: &Protocol) -> Vec<TableFeature> {
    if protocol.min_writer_version >= MAX_WRITER_VERSION {
        return listed(protocol.writer_features.as_deref());
    }
    LEGACY_FEATURES
        .iter()
        .filter(|feature| {
            feature
                .legacy_versions()
                .is_some_and(|(_, writer)| protocol.min_writer_version >= writer)
        })
        .cloned()
        .collect()
}

/// True when `protocol` supports `feature` for readers or writers (spec "Supported Features").
pub(crate) fn supports(protocol: &Protocol, feature: &TableFeature) -> bool {
    reader_features(protocol).contains(feature) || writer_features(protocol).contains(feature)
}

fn listed(names: Option<&[String]>) -> Vec<TableFeature> {
    names
        .unwrap_or_default()
        .iter()
        .map(|name| TableFeature::from(name.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(reader: i32, writer: i32, features: &[&str]) -> Protocol {
        let list = || Some(features.iter().map(|f| f.to_string()).collect());
        Protocol {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: (reader == 3).then(list).flatten(),
            writer_features: (writer == 7).then(list).flatten(),
        }
    }

    #[test]
    fn unknown_reader_feature_is_named() {
        let error =
            ensure_readable(&protocol(3, 7, &["deletionVectors", "futureThing"]), "t").unwrap_err();
        assert!(error.to_string().contains("futureThing"), "{error}");
    }

    #[test]
    fn reader_version_above_three_is_refused() {
        assert!(matches!(
            ensure_readable(&protocol(4, 7, &[]), "t"),
            Err(Error::UnsupportedProtocolVersion { version: 4, .. })
        ));
    }

    #[test]
    fn legacy_versions_imply_features() {
        use TableFeature::*;
        assert_eq!(
            reader_features(&protocol(2, 5, &[])),
            vec![TableFeature::ColumnMapping]
        );
        assert!(supports(&protocol(1, 4, &[]), &ChangeDataFeed));
        assert!(!supports(&protocol(1, 3, &[]), &ChangeDataFeed));
        assert!(supports(
            &protocol(3, 7, &["deletionVectors"]),
            &DeletionVectors
        ));
        assert!(writer_features(&protocol(1, 1, &[])).is_empty());
        assert_eq!(
            writer_features(&protocol(1, 2, &[])),
            vec![AppendOnly, Invariants]
        );
        assert_eq!(
            writer_features(&protocol(2, 6, &[])),
            vec![
                AppendOnly,
                Invariants,
                CheckConstraints,
                ChangeDataFeed,
                GeneratedColumns,
                ColumnMapping,
                IdentityColumns
            ]
        );
        assert!(reader_features(&protocol(1, 6, &[])).is_empty());
        // From writer version 7 only the list counts.
        assert_eq!(
            writer_features(&protocol(3, 7, &["rowTracking"])),
            vec![RowTracking]
        );
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_kept() {
        for feature in TableFeature::known() {
            assert_eq!(&TableFeature::from(feature.name()), feature);
            assert_eq!(feature.to_string(), feature.name());
        }
        let unknown = TableFeature::from("futureThing");
        assert_eq!(unknown, TableFeature::Unknown("futureThing".to_string()));
        assert_eq!(unknown.name(), "futureThing");
        assert!(!unknown.is_supported_for_reading());
        assert!(!unknown.is_known_for_writing());
        assert!(!unknown.is_reader_writer());
        assert_eq!(unknown.legacy_versions(), None);
        // Names are case-sensitive.
        assert!(matches!(
            TableFeature::from("ColumnMapping"),
            TableFeature::Unknown(_)
        ));
    }

    #[test]
    fn reading_support_and_writing_knowledge() {
        let readable: Vec<&str> = TableFeature::known()
            .iter()
            .filter(|f| f.is_supported_for_reading())
            .map(TableFeature::name)
            .collect();
        assert_eq!(
            readable,
            [
                "columnMapping",
                "deletionVectors",
                "timestampNtz",
                "v2Checkpoint",
                "vacuumProtocolCheck",
                "variantType",
                "variantType-preview",
                "variantShredding",
                "variantShredding-preview",
                "typeWidening",
                "typeWidening-preview",
                "geospatial",
                "geospatial-dev",
            ]
        );
        for feature in TableFeature::known() {
            if feature.is_supported_for_reading() {
                assert!(feature.is_reader_writer(), "{feature}");
            }
        }
        assert!(TableFeature::RowTracking.is_known_for_writing());
        assert!(!TableFeature::RowTracking.is_reader_writer());
        assert!(!TableFeature::CatalogManaged.is_supported_for_reading());
        assert!(ensure_readable(&protocol(3, 7, &["catalogManaged"]), "t").is_err());
        assert!(ensure_readable(&protocol(3, 7, &["variantShredding-preview"]), "t").is_ok());
        assert!(ensure_readable(&protocol(3, 7, &["variantShredding"]), "t").is_ok());
        assert!(ensure_readable(&protocol(2, 5, &[]), "t").is_ok());
        assert!(ensure_readable(&protocol(3, 7, &["geospatial"]), "t").is_ok());
        assert!(ensure_readable(&protocol(3, 7, &["geospatial-dev"]), "t").is_ok());
        assert!(!TableFeature::Geospatial.is_known_for_writing());
    }
}
