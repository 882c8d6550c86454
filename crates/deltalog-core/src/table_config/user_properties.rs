//! The one check of table properties set by users: `ALTER TABLE SET TBLPROPERTIES`
//! ([`crate::ops::alter_table`]), `CREATE TABLE ... TBLPROPERTIES`
//! ([`crate::ops::create_table`]) and the configuration of a table created by a write
//! ([`crate::ops::write_table`]).
//!
//! `delta.*` keys must be keys Delta on Spark knows (`table_config/properties.rs`), are stored
//! as it spells them, and their values must parse as the property's type (and pass Delta on
//! Spark's own checks); `delta.feature.<name>` must name a known feature and be `supported`;
//! `delta.minReaderVersion` / `delta.minWriterVersion` must be protocol versions that exist
//! (and, on an existing table, not below its own); `delta.columnMapping.maxColumnId` is kept
//! by the table, never set. Other keys are stored as given.

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, ProtocolKind, Result};
use crate::table_config::properties::{
    known_key, IsolationLevel, TableProperties, COLUMN_MAPPING_MAX_COLUMN_ID,
    DATA_SKIPPING_NUM_INDEXED_COLS, FEATURE_PREFIX, ISOLATION_LEVEL, MIN_READER_VERSION,
    MIN_WRITER_VERSION,
};
use crate::table_config::writing::CONSTRAINTS_PREFIX;
use crate::table_config::{TableConfiguration, TableFeature};

/// Prefix of Delta on Spark's universal-format settings, which take any name.
const UNIVERSAL_FORMAT_CONFIG_PREFIX: &str = "delta.universalformat.config.";

/// The table whose properties are set.
pub(crate) enum PropertyTarget<'a> {
    /// An existing table: CHECK constraints are added with `ADD CONSTRAINT` (which checks
    /// the existing rows), and its protocol may not go down.
    Existing(&'a TableConfiguration),
    /// A table being created at this location: it has no rows, so CHECK constraints
    /// (`delta.constraints.<name>`) may be given as properties.
    New(&'a str),
}

impl PropertyTarget<'_> {
    fn table_uri(&self) -> &str {
        match self {
            PropertyTarget::Existing(config) => config.table_uri(),
            PropertyTarget::New(uri) => uri,
        }
    }
}

/// The configuration of the new table at `table`, checked as `ALTER TABLE SET TBLPROPERTIES`
/// checks properties, with each known `delta.*` key spelled as Delta on Spark stores it.
///
/// Errors: [`Error::InvalidArgument`] for an unknown `delta.*` key or a bad value,
/// [`Error::NotAllowed`] for `delta.columnMapping.maxColumnId`, [`Error::UnsupportedFeature`]
/// for `delta.feature.<name>` naming no known feature.
pub(crate) fn checked_new_table_configuration(
    table: &str,
    configuration: HashMap<String, String>,
) -> Result<HashMap<String, String>> {
    let target = PropertyTarget::New(table);
    let mut checked = BTreeMap::new();
    for (key, value) in configuration {
        let key = settable_key(&target, &key, &value)?;
        checked.insert(key, value);
    }
    check_values(&checked)?;
    Ok(checked.into_iter().collect())
}

/// The key to store for `key`, or why it cannot be set on `target`.
pub(crate) fn settable_key(target: &PropertyTarget, key: &str, value: &str) -> Result<String> {
    let lower = key.to_ascii_lowercase();
    if lower.starts_with(CONSTRAINTS_PREFIX) {
        return match target {
            PropertyTarget::New(_) => Ok(lower),
            PropertyTarget::Existing(_) => Err(Error::NotAllowed(format!(
                "{key}: CHECK constraints are added with add_constraint (ALTER TABLE ADD \
                 CONSTRAINT), not as a property"
            ))),
        };
    }
    if lower.starts_with(FEATURE_PREFIX) {
        if !["supported", "enabled"].contains(&value.to_ascii_lowercase().as_str()) {
            return Err(Error::InvalidArgument(format!(
                "{key} must be `supported`, got `{value}`"
            )));
        }
        let feature = known_feature_of(target.table_uri(), &key[FEATURE_PREFIX.len()..])?;
        return Ok(format!("{FEATURE_PREFIX}{}", feature.name()));
    }
    if lower.starts_with(UNIVERSAL_FORMAT_CONFIG_PREFIX) {
        return Ok(lower);
    }
    if !lower.starts_with("delta.") {
        return Ok(key.to_string());
    }
    let known = known_key(key).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "unknown Delta table property {key} (Delta on Spark refuses it too)"
        ))
    })?;
    if known == COLUMN_MAPPING_MAX_COLUMN_ID {
        return Err(Error::NotAllowed(format!(
            "{known} is kept by the table as columns are added; it cannot be set"
        )));
    }
    if known == MIN_READER_VERSION || known == MIN_WRITER_VERSION {
        check_protocol_version(target, known, value)?;
    }
    Ok(known.to_string())
}

/// Refuses values of `delta.*` keys that do not parse as their property's type, and the
/// values Delta on Spark's own checks refuse (`delta.isolationLevel` other than
/// `Serializable`, `delta.dataSkippingNumIndexedCols` below -1).
pub(crate) fn check_values(pairs: &BTreeMap<String, String>) -> Result<()> {
    let configuration = pairs.clone().into_iter().collect();
    let properties = TableProperties::from_configuration(&configuration);
    if let Some(invalid) = properties.invalid.first() {
        return Err(Error::InvalidArgument(invalid.reason.clone()));
    }
    if let Some(level) = pairs.get(ISOLATION_LEVEL) {
        if properties.isolation_level != IsolationLevel::Serializable {
            return Err(Error::InvalidArgument(format!(
                "{ISOLATION_LEVEL} must be Serializable, got `{level}` (Delta on Spark refuses \
                 the others)"
            )));
        }
    }
    if let Some(count) = pairs.get(DATA_SKIPPING_NUM_INDEXED_COLS) {
        if count.trim().parse::<i64>().is_ok_and(|n| n < -1) {
            return Err(Error::InvalidArgument(format!(
                "{DATA_SKIPPING_NUM_INDEXED_COLS} must be -1 (every column) or more, got \
                 `{count}`"
            )));
        }
    }
    Ok(())
}

/// The known feature named `name` (any case), or [`Error::UnsupportedFeature`] of `table`.
pub(crate) fn known_feature_of(table: &str, name: &str) -> Result<TableFeature> {
    TableFeature::known()
        .iter()
        .find(|feature| feature.name().eq_ignore_ascii_case(name))
        .cloned()
        .ok_or_else(|| Error::UnsupportedFeature {
            table: table.to_string(),
            kind: ProtocolKind::Writer,
            feature: name.to_string(),
        })
}

/// A protocol version asked for must be a version that exists and, on an existing table,
/// not below the table's.
fn check_protocol_version(target: &PropertyTarget, key: &str, value: &str) -> Result<()> {
    let max = match key == MIN_READER_VERSION {
        true => 3,
        false => 7,
    };
    let wanted: i32 = value
        .trim()
        .parse()
        .map_err(|_| Error::InvalidArgument(format!("{key} must be an integer, got `{value}`")))?;
    if !(1..=max).contains(&wanted) {
        return Err(Error::InvalidArgument(format!(
            "{key} must be between 1 and {max}, got {wanted}"
        )));
    }
    let PropertyTarget::Existing(config) = target else {
        return Ok(());
    };
    let protocol = config.protocol();
    let current = match key == MIN_READER_VERSION {
        true => protocol.min_reader_version,
        false => protocol.min_writer_version,
    };
    if wanted < current {
        return Err(Error::NotAllowed(format!(
            "{key} {wanted} would downgrade the protocol of {} (now {current})",
            config.table_uri()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::checked_new_table_configuration;
    use crate::error::Error;

    fn check(pairs: &[(&str, &str)]) -> crate::error::Result<HashMap<String, String>> {
        let configuration = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        checked_new_table_configuration("file:///t", configuration)
    }

    #[test]
    fn new_tables_get_the_alter_check() {
        let checked = check(&[
            ("delta.appendonly", "true"),
            ("delta.feature.deletionvectors", "supported"),
            ("delta.constraints.Positive", "v > 0"),
            ("delta.minWriterVersion", "7"),
            ("owner", "me"),
        ])
        .unwrap();
        let mut keys: Vec<&str> = checked.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "delta.appendOnly",
                "delta.constraints.positive",
                "delta.feature.deletionVectors",
                "delta.minWriterVersion",
                "owner"
            ]
        );
        let refused = [
            (("delta.nope", "1"), "unknown Delta table property"),
            (("delta.appendOnly", "maybe"), "delta.appendOnly"),
            (("delta.isolationLevel", "Snapshot"), "Serializable"),
            (("delta.dataSkippingNumIndexedCols", "-2"), "-1"),
            (("delta.minReaderVersion", "9"), "between 1 and 3"),
            (("delta.feature.deletionVectors", "off"), "supported"),
            (("delta.columnMapping.maxColumnId", "3"), "cannot be set"),
            (("delta.feature.noSuchThing", "supported"), "noSuchThing"),
        ];
        for ((key, value), said) in refused {
            let error = check(&[(key, value)]).unwrap_err();
            assert!(error.to_string().contains(said), "{key}: {error}");
            assert!(
                matches!(
                    error,
                    Error::InvalidArgument(_)
                        | Error::NotAllowed(_)
                        | Error::UnsupportedFeature { .. }
                ),
                "{key}: {error}"
            );
        }
    }
}
