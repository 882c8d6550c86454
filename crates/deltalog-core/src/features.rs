//! Protocol versions and table features (spec "Protocol Evolution", "Table Features";
//! catalogue D).
//!
//! Reading a table needs every reader feature it lists; a reader feature we do not know makes
//! loading fail with [`Error::UnsupportedFeature`]. Writer features only matter to writers.

use crate::actions::Protocol;
use crate::error::{Error, ProtocolKind, Result};

/// The highest reader protocol version (3: explicit reader features).
pub const MAX_READER_VERSION: i32 = 3;
/// The highest writer protocol version (7: explicit writer features).
pub const MAX_WRITER_VERSION: i32 = 7;

/// Reader features this library implements when reading snapshots and data.
pub const SUPPORTED_READER_FEATURES: &[&str] = &[
    "columnMapping",
    "deletionVectors",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "variantType",
    "variantType-preview",
    "typeWidening",
    "typeWidening-preview",
];

/// Writer features this library knows the meaning of.
pub const KNOWN_WRITER_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
    "identityColumns",
    "deletionVectors",
    "rowTracking",
    "timestampNtz",
    "domainMetadata",
    "v2Checkpoint",
    "icebergCompatV1",
    "icebergCompatV2",
    "clustering",
    "allowColumnDefaults",
    "inCommitTimestamp",
    "typeWidening",
    "typeWidening-preview",
    "vacuumProtocolCheck",
    "variantType",
    "variantType-preview",
    "checkpointProtection",
];

/// Checks that this library can read a table with `protocol`, naming `table` in the error.
///
/// Reader version 1 needs nothing, 2 adds column mapping, 3 lists its features explicitly
/// (catalogue D). Anything above 3, and any reader feature not in
/// [`SUPPORTED_READER_FEATURES`], is refused.
pub fn ensure_readable(protocol: &Protocol, table: &str) -> Result<()> {
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
            if !SUPPORTED_READER_FEATURES.contains(&feature.as_str()) {
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

/// The reader features `protocol` makes readers implement, legacy versions included.
pub fn reader_features(protocol: &Protocol) -> Vec<String> {
    match protocol.min_reader_version {
        ..=1 => Vec::new(),
        2 => vec!["columnMapping".to_string()],
        _ => protocol.reader_features.clone().unwrap_or_default(),
    }
}

/// The writer features `protocol` makes writers implement, legacy versions included
/// (catalogue D: writer version 2 = appendOnly + invariants, 3 adds checkConstraints, 4 adds
/// changeDataFeed + generatedColumns, 5 adds columnMapping, 6 adds identityColumns).
pub fn writer_features(protocol: &Protocol) -> Vec<String> {
    const LEGACY: &[(i32, &str)] = &[
        (2, "appendOnly"),
        (2, "invariants"),
        (3, "checkConstraints"),
        (4, "changeDataFeed"),
        (4, "generatedColumns"),
        (5, "columnMapping"),
        (6, "identityColumns"),
    ];
    if protocol.min_writer_version >= MAX_WRITER_VERSION {
        return protocol.writer_features.clone().unwrap_or_default();
    }
    LEGACY
        .iter()
        .filter(|(version, _)| protocol.min_writer_version >= *version)
        .map(|(_, name)| name.to_string())
        .collect()
}

/// True when `protocol` supports `feature` for readers or writers (spec "Supported Features").
pub fn supports(protocol: &Protocol, feature: &str) -> bool {
    reader_features(protocol).iter().any(|f| f == feature)
        || writer_features(protocol).iter().any(|f| f == feature)
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
        assert_eq!(reader_features(&protocol(2, 5, &[])), vec!["columnMapping"]);
        assert!(supports(&protocol(1, 4, &[]), "changeDataFeed"));
        assert!(!supports(&protocol(1, 3, &[]), "changeDataFeed"));
        assert!(supports(
            &protocol(3, 7, &["deletionVectors"]),
            "deletionVectors"
        ));
    }
}
