//! Clustered tables (spec "Clustered Table"; catalogue E8): the clustering columns a table
//! records in its `delta.clustering` domain, and what writers owe them.
//!
//! A table is clustered when its protocol supports the `clustering` writer feature. Its
//! clustering columns are the `clusteringColumns` of the `delta.clustering` domain's
//! configuration: physical names under column mapping, each either a list of name parts (as
//! Delta on Spark writes them, `[["id"],["a","b"]]`) or one string (the spec's example,
//! `["col-daadafd7-..."]`). An empty list (Spark's `CLUSTER BY NONE`) leaves the table
//! clustered by nothing. Writers must collect statistics on every clustering column (E8-04),
//! and files clustered by an implementation carry its name in `clusteringProvider` (E8-05):
//! `liquid` for Delta on Spark's, which this library follows.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::schema::{ColumnMappingMode, DataType, StructField, StructType};
use crate::table_config::stats::{parse_column_list, select_stats_columns};
use crate::table_config::{TableConfiguration, TableFeature};

/// The system domain holding the clustering columns.
pub(crate) const CLUSTERING_DOMAIN: &str = "delta.clustering";
/// The `clusteringProvider` of files clustered as Delta on Spark clusters them.
pub(crate) const LIQUID_PROVIDER: &str = "liquid";
/// The add tag naming the clustering run (Spark's "ZCube") a clustered file came from.
pub(crate) const ZCUBE_ID_TAG: &str = "ZCUBE_ID";
/// The add tag listing, as a JSON array of logical names, the columns a file was clustered by.
pub(crate) const ZCUBE_ZORDER_BY_TAG: &str = "ZCUBE_ZORDER_BY";

/// One clustering column: its logical path from the top-level column down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusteringColumn {
    /// The logical name parts, outermost first.
    pub path: Vec<String>,
}

impl ClusteringColumn {
    /// The name as Delta on Spark prints it: the parts joined by dots, a part holding a dot
    /// or a backtick quoted in backticks.
    pub fn name(&self) -> String {
        let quoted = self
            .path
            .iter()
            .map(|part| match part.contains('.') || part.contains('`') {
                true => format!("`{}`", part.replace('`', "``")),
                false => part.clone(),
            });
        quoted.collect::<Vec<_>>().join(".")
    }
}

/// The clustering columns of a table with `config` whose `delta.clustering` domain holds
/// `domain` (its configuration, `None` when the domain is absent or removed). Empty when the
/// table is not clustered or clustered by nothing.
///
/// Errors: [`Error::InvalidTable`] for a configuration that is not the JSON object above or
/// that names a column the schema does not have.
pub(crate) fn clustering_columns(
    config: &TableConfiguration,
    domain: Option<&str>,
) -> Result<Vec<ClusteringColumn>> {
    let Some(domain) = domain else {
        return Ok(Vec::new());
    };
    if !config.is_feature_supported(&TableFeature::Clustering) {
        return Ok(Vec::new());
    }
    let invalid = |reason: String| {
        Error::invalid_table(
            config.table_uri(),
            format!("the {CLUSTERING_DOMAIN} domain {reason}"),
        )
    };
    let parsed: Value = serde_json::from_str(domain)
        .map_err(|e| invalid(format!("configuration is not JSON ({e}): {domain}")))?;
    let Some(Value::Array(columns)) = parsed.get("clusteringColumns") else {
        return Err(invalid(format!("has no clusteringColumns list: {domain}")));
    };
    columns
        .iter()
        .map(|column| {
            let parts = physical_parts(column)
                .ok_or_else(|| invalid(format!("names a column as {column}")))?;
            logical_path(config.schema(), config.column_mapping(), &parts)
                .map(|path| ClusteringColumn { path })
                .ok_or_else(|| {
                    invalid(format!(
                        "names the column {}, which the schema does not have",
                        parts.join(".")
                    ))
                })
        })
        .collect()
}

/// The clustering columns named by `names` (column paths: dots between nested names,
/// backticks quoting a name, as `delta.dataSkippingStatsColumns` writes them) in a table with
/// `schema` under column mapping `mode`: each resolved to its logical path as the schema
/// spells it, with its physical path.
///
/// Errors: [`Error::InvalidArgument`] for a name that is not one column path, a column the
/// schema does not have, a column named twice, or one whose type carries no minimum and
/// maximum in statistics (structs, arrays, maps, booleans, binaries, variants), as Delta on
/// Spark refuses them (`DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED`).
pub(crate) fn resolve_clustering_columns(
    schema: &StructType,
    mode: ColumnMappingMode,
    names: &[String],
) -> Result<Vec<(ClusteringColumn, Vec<String>)>> {
    let mut resolved: Vec<(ClusteringColumn, Vec<String>)> = Vec::with_capacity(names.len());
    for name in names {
        let paths = parse_column_list(name);
        let [path] = paths.as_slice() else {
            return Err(Error::InvalidArgument(format!(
                "cannot cluster by `{name}`: name one column (a path such as a or s.x)"
            )));
        };
        let (logical, physical, data_type) = walk(schema, mode, path)?;
        let column = ClusteringColumn { path: logical };
        if !has_min_max(&data_type) {
            return Err(Error::InvalidArgument(format!(
                "cannot cluster by {}: its type {} has no minimum and maximum in statistics \
                 (Delta on Spark's DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED)",
                column.name(),
                data_type
            )));
        }
        if resolved.iter().any(|(seen, _)| seen == &column) {
            return Err(Error::InvalidArgument(format!(
                "{} is named twice among the clustering columns",
                column.name()
            )));
        }
        resolved.push((column, physical));
    }
    Ok(resolved)
}

/// The configuration of the `delta.clustering` domain for the clustering columns at
/// `physical` paths: lists of name parts, as Delta on Spark writes it.
pub(crate) fn clustering_domain_configuration(physical: &[Vec<String>]) -> String {
    let configuration = serde_json::json!({
        "clusteringColumns": physical,
        "domainName": CLUSTERING_DOMAIN,
    });
    configuration.to_string()
}

/// Checks that every clustering column gets statistics under the table's statistics
/// settings (`delta.dataSkippingStatsColumns`, `delta.dataSkippingNumIndexedCols`), as the
/// spec asks of writers (E8-04) and Delta on Spark checks
/// (`DELTA_CLUSTERING_COLUMN_MISSING_STATS`).
///
/// Errors: [`Error::NotAllowed`] naming the first column without statistics.
pub(crate) fn ensure_clustering_stats(
    config: &TableConfiguration,
    columns: &[ClusteringColumn],
) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    let data_schema = config.schema().data_schema(config.partition_columns());
    let with_stats = select_stats_columns(&data_schema, &config.metadata().configuration)?;
    for column in columns {
        if find_field(&with_stats, &column.path).is_none() {
            return Err(Error::NotAllowed(format!(
                "{}: the clustering column {} gets no statistics (Delta on Spark's \
                 DELTA_CLUSTERING_COLUMN_MISSING_STATS); name it in \
                 delta.dataSkippingStatsColumns or raise delta.dataSkippingNumIndexedCols",
                config.table_uri(),
                column.name()
            )));
        }
    }
    Ok(())
}

/// The physical name parts of one entry of `clusteringColumns`.
fn physical_parts(column: &Value) -> Option<Vec<String>> {
    match column {
        Value::String(name) => Some(vec![name.clone()]),
        Value::Array(parts) => parts
            .iter()
            .map(|part| part.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
            .filter(|parts| !parts.is_empty()),
        _ => None,
    }
}

/// The logical path of the column at physical `parts`, `None` when there is none.
fn logical_path(
    schema: &StructType,
    mode: ColumnMappingMode,
    parts: &[String],
) -> Option<Vec<String>> {
    let mut fields = schema;
    let mut path = Vec::with_capacity(parts.len());
    for (depth, part) in parts.iter().enumerate() {
        let field = fields
            .fields
            .iter()
            .find(|f| f.physical_name(mode).is_ok_and(|name| name == part))?;
        path.push(field.name.clone());
        if depth + 1 < parts.len() {
            let DataType::Struct(inner) = &field.data_type else {
                return None;
            };
            fields = inner;
        }
    }
    Some(path)
}

/// The logical path (as the schema spells it), physical path and type of the column at
/// `path` (names compared ignoring case).
fn walk(
    schema: &StructType,
    mode: ColumnMappingMode,
    path: &[String],
) -> Result<(Vec<String>, Vec<String>, DataType)> {
    let unknown = || {
        Error::InvalidArgument(format!(
            "cannot cluster by {}: the table has no such column",
            ClusteringColumn {
                path: path.to_vec()
            }
            .name()
        ))
    };
    let mut fields = schema;
    let mut logical = Vec::with_capacity(path.len());
    let mut physical = Vec::with_capacity(path.len());
    for (depth, part) in path.iter().enumerate() {
        let field = fields
            .fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(part))
            .ok_or_else(unknown)?;
        logical.push(field.name.clone());
        physical.push(field.physical_name(mode)?.to_string());
        match &field.data_type {
            _ if depth + 1 == path.len() => {
                return Ok((logical, physical, field.data_type.clone()))
            }
            DataType::Struct(inner) => fields = inner,
            _ => return Err(unknown()),
        }
    }
    Err(unknown())
}

/// True for a type whose statistics have a minimum and maximum.
fn has_min_max(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Primitive(primitive) if primitive.has_min_max_stats())
}

/// The field at logical `path` of `schema` (names compared ignoring case).
fn find_field<'a>(schema: &'a StructType, path: &[String]) -> Option<&'a StructField> {
    let (first, rest) = path.split_first()?;
    let field = schema
        .fields
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(first))?;
    match (rest.is_empty(), &field.data_type) {
        (true, _) => Some(field),
        (false, DataType::Struct(inner)) => find_field(inner, rest),
        (false, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::{Metadata, Protocol};
    use std::collections::HashMap;

    fn config(schema: &str, configuration: &[(&str, &str)]) -> TableConfiguration {
        let protocol = Protocol {
            min_reader_version: 1,
            min_writer_version: 7,
            reader_features: None,
            writer_features: Some(vec!["clustering".into(), "domainMetadata".into()]),
        };
        let metadata = Metadata {
            id: "t".into(),
            name: None,
            description: None,
            format: Default::default(),
            schema_string: Some(schema.to_string()),
            partition_columns: Vec::new(),
            created_time: None,
            configuration: configuration
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        };
        TableConfiguration::try_new(protocol, metadata, "t").unwrap()
    }

    const SCHEMA: &str = r#"{"type":"struct","fields":[
        {"name":"id","type":"long","nullable":true,"metadata":{}},
        {"name":"s","type":{"type":"struct","fields":[
            {"name":"a.b","type":"string","nullable":true,"metadata":{}}]},
         "nullable":true,"metadata":{}},
        {"name":"v","type":"double","nullable":true,"metadata":{}}]}"#;

    #[test]
    fn spark_and_spec_forms_both_parse() {
        let config = config(SCHEMA, &[]);
        let spark = r#"{"clusteringColumns":[["id"],["s","a.b"]],"domainName":"delta.clustering"}"#;
        let columns = clustering_columns(&config, Some(spark)).unwrap();
        let names: Vec<String> = columns.iter().map(ClusteringColumn::name).collect();
        assert_eq!(names, ["id", "s.`a.b`"]);
        let spec = r#"{"clusteringColumns":["v"]}"#;
        let columns = clustering_columns(&config, Some(spec)).unwrap();
        assert_eq!(columns[0].path, ["v"]);
        assert!(clustering_columns(&config, None).unwrap().is_empty());
        let none = r#"{"clusteringColumns":[]}"#;
        assert!(clustering_columns(&config, Some(none)).unwrap().is_empty());
    }

    #[test]
    fn a_bad_domain_is_an_invalid_table_naming_it() {
        let config = config(SCHEMA, &[]);
        for bad in ["nope", "{}", r#"{"clusteringColumns":[["gone"]]}"#] {
            let error = clustering_columns(&config, Some(bad)).unwrap_err();
            assert!(matches!(error, Error::InvalidTable { .. }), "{error}");
            assert!(error.to_string().contains("delta.clustering"), "{error}");
        }
    }

    #[test]
    fn columns_resolve_to_the_domain_spark_writes() {
        let config = config(SCHEMA, &[]);
        let names = vec!["S.`a.b`".to_string(), "ID".to_string()];
        let resolved =
            resolve_clustering_columns(config.schema(), config.column_mapping(), &names).unwrap();
        let logical: Vec<String> = resolved.iter().map(|(c, _)| c.name()).collect();
        assert_eq!(logical, ["s.`a.b`", "id"]);
        let physical: Vec<Vec<String>> = resolved.into_iter().map(|(_, p)| p).collect();
        let text = clustering_domain_configuration(&physical);
        assert_eq!(
            text,
            r#"{"clusteringColumns":[["s","a.b"],["id"]],"domainName":"delta.clustering"}"#
        );
        let back = clustering_columns(&config, Some(&text)).unwrap();
        assert_eq!(back[1].path, ["id"]);
        for (bad, why) in [
            ("gone", "no such column"),
            ("s", "has no minimum"),
            ("id, v", "name one column"),
        ] {
            let names = vec![bad.to_string()];
            let error =
                resolve_clustering_columns(config.schema(), config.column_mapping(), &names)
                    .unwrap_err();
            assert!(error.to_string().contains(why), "{bad}: {error}");
        }
        let twice = vec!["id".to_string(), "Id".to_string()];
        assert!(
            resolve_clustering_columns(config.schema(), config.column_mapping(), &twice).is_err()
        );
    }

    #[test]
    fn clustering_columns_need_statistics() {
        let columns = vec![ClusteringColumn {
            path: vec!["v".into()],
        }];
        assert!(ensure_clustering_stats(&config(SCHEMA, &[]), &columns).is_ok());
        let one = config(SCHEMA, &[("delta.dataSkippingNumIndexedCols", "1")]);
        let error = ensure_clustering_stats(&one, &columns).unwrap_err();
        assert!(error.to_string().contains("clustering column v"), "{error}");
        let named = config(SCHEMA, &[("delta.dataSkippingStatsColumns", "v")]);
        assert!(ensure_clustering_stats(&named, &columns).is_ok());
    }
}
