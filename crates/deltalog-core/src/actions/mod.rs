//! The non-file actions of the log as plain structs (spec "Actions").
//!
//! File actions (`add`, `remove`, `cdc`) live in Arrow record batches (see `layout`);
//! everything else is rare enough to be a struct. Unknown fields are ignored, as the spec
//! requires (catalogue B-02).
//!
//! Beside them: the Arrow layout of file actions (`layout`), deletion vectors
//! (`deletion_vector`), partition values (`partition`) and per-file statistics (`stats`).

#[cfg(feature = "internal-api")]
pub mod deletion_vector;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod deletion_vector;
#[cfg(feature = "internal-api")]
pub mod layout;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod layout;
#[cfg(feature = "internal-api")]
pub mod partition;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod partition;

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

/// `protocol`: the lowest reader and writer versions, and the table features
/// (spec "Protocol Evolution", catalogue B-P).
///
/// Two protocols are equal when their versions are and their feature lists hold the same
/// names: `readerFeatures` and `writerFeatures` are sets, whatever order a writer lists them
/// in (Delta on Spark's `.crc` files list them in hash-set order).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_features: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_features: Option<Vec<String>>,
}

impl PartialEq for Protocol {
    fn eq(&self, other: &Self) -> bool {
        fn as_set(features: &Option<Vec<String>>) -> Option<BTreeSet<&str>> {
            features
                .as_ref()
                .map(|names| names.iter().map(String::as_str).collect())
        }
        self.min_reader_version == other.min_reader_version
            && self.min_writer_version == other.min_writer_version
            && as_set(&self.reader_features) == as_set(&other.reader_features)
            && as_set(&self.writer_features) == as_set(&other.writer_features)
    }
}

impl Eq for Protocol {}

/// `metaData.format`: how data files are encoded (catalogue B-M12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    #[serde(default = "Format::default_provider")]
    pub provider: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub options: HashMap<String, String>,
}

impl Format {
    fn default_provider() -> String {
        "parquet".to_string()
    }
}

impl Default for Format {
    fn default() -> Self {
        Format {
            provider: Format::default_provider(),
            options: HashMap::new(),
        }
    }
}

/// `metaData`: the table's identity, schema, partitioning and properties (catalogue B-M).
///
/// A `metaData` without `schemaString` is read as the empty schema, as Delta on Spark does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub format: Format,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_string: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub partition_columns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub configuration: HashMap<String, String>,
}

/// `txn`: an application's progress marker (catalogue B-T).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Txn {
    pub app_id: String,
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<i64>,
}

/// `domainMetadata`: named configuration owned by a system or user domain (catalogue B-D).
///
/// Tables written under older versions of the spec stored `configuration` as a map; such a map
/// is kept as its JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainMetadata {
    pub domain: String,
    #[serde(deserialize_with = "string_or_json_text")]
    pub configuration: String,
    #[serde(default)]
    pub removed: bool,
}

/// `checkpointMetadata`: the header of a V2 checkpoint (catalogue B-K).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CheckpointMetadata {
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, String>>,
}

/// `sidecar`: a file of a V2 checkpoint holding `add` and `remove` rows (catalogue B-S).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Sidecar {
    pub path: String,
    pub size_in_bytes: i64,
    pub modification_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, String>>,
}

/// `commitInfo`: free-form provenance. The whole object is kept as JSON (catalogue B-I); the
/// fields the library itself uses are pulled out.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitInfo {
    /// The object as written.
    pub raw: serde_json::Map<String, serde_json::Value>,
}

impl CommitInfo {
    /// `commitInfo.timestamp`: the writer's wall clock, in ms since the epoch.
    pub fn timestamp(&self) -> Option<i64> {
        self.raw
            .get("timestamp")
            .and_then(serde_json::Value::as_i64)
    }

    /// `commitInfo.inCommitTimestamp` (in-commit timestamps feature).
    pub fn in_commit_timestamp(&self) -> Option<i64> {
        self.raw
            .get("inCommitTimestamp")
            .and_then(serde_json::Value::as_i64)
    }

    /// `commitInfo.operation`, such as `WRITE` or `DELETE`.
    pub fn operation(&self) -> Option<&str> {
        self.raw
            .get("operation")
            .and_then(serde_json::Value::as_str)
    }

    /// `commitInfo.txnId`: the writer's unique id for the transaction.
    pub fn txn_id(&self) -> Option<&str> {
        self.raw.get("txnId").and_then(serde_json::Value::as_str)
    }
}

/// A deletion vector descriptor (`add.deletionVector`, catalogue B-V).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVectorDescriptor {
    pub storage_type: String,
    pub path_or_inline_dv: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    pub size_in_bytes: i32,
    pub cardinality: i64,
}

impl DeletionVectorDescriptor {
    /// The descriptor's unique id (catalogue B-V06): storage type, path or inline data, and
    /// `@offset` when there is an offset.
    pub fn unique_id(&self) -> String {
        unique_dv_id(&self.storage_type, &self.path_or_inline_dv, self.offset)
    }
}

/// `<storageType><pathOrInlineDv>[@<offset>]`, the id of a deletion vector (catalogue B-V06).
pub(crate) fn unique_dv_id(
    storage_type: &str,
    path_or_inline_dv: &str,
    offset: Option<i32>,
) -> String {
    match offset {
        Some(offset) => format!("{storage_type}{path_or_inline_dv}@{offset}"),
        None => format!("{storage_type}{path_or_inline_dv}"),
    }
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn string_or_json_text<'de, D>(deserializer: D) -> Result<String, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => text,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the differential test against Delta on Spark: its `.crc` lists features in
    /// hash-set order, which made the checksum "disagree" with the log.
    #[test]
    fn protocols_compare_their_features_as_sets() {
        let protocol = |writer: &[&str]| Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: Some(vec!["columnMapping".into(), "v2Checkpoint".into()]),
            writer_features: Some(writer.iter().map(|f| f.to_string()).collect()),
        };
        let ordered = protocol(&["appendOnly", "invariants", "columnMapping", "v2Checkpoint"]);
        let hashed = protocol(&["v2Checkpoint", "invariants", "columnMapping", "appendOnly"]);
        assert_eq!(ordered, hashed);
        assert_ne!(
            ordered,
            protocol(&["appendOnly", "invariants", "columnMapping"])
        );
        let legacy = Protocol {
            reader_features: None,
            writer_features: None,
            ..ordered.clone()
        };
        assert_ne!(legacy, ordered);
    }

    #[test]
    fn metadata_without_schema_string_reads() {
        let m: Metadata = serde_json::from_str(r#"{"id":"x","format":{"provider":"parquet","options":{}},"partitionColumns":[],"configuration":{}}"#).unwrap();
        assert_eq!(m.schema_string, None);
    }

    #[test]
    fn domain_configuration_map_is_kept_as_json() {
        let d: DomainMetadata =
            serde_json::from_str(r#"{"domain":"d","configuration":{"a":"b"},"removed":false}"#)
                .unwrap();
        assert_eq!(d.configuration, r#"{"a":"b"}"#);
    }

    #[test]
    fn dv_unique_id_has_offset() {
        assert_eq!(unique_dv_id("u", "abc", Some(4)), "uabc@4");
        assert_eq!(unique_dv_id("i", "abc", None), "iabc");
    }
}
