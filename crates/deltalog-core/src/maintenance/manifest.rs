//! `GENERATE symlink_format_manifest`: the manifest files that let engines reading plain
//! Hive-style directories (Presto, Trino, Athena, Redshift Spectrum) read a table's current
//! files, as Delta on Spark's `GenerateSymlinkManifest` writes them.
//!
//! Every live file of the snapshot is listed, one absolute path per line (decoded, in
//! Hadoop's form: `file:/tmp/t/p=1/part-0.parquet`, `s3://bucket/t/part-0.parquet`), in
//! `_symlink_format_manifest/manifest` for an unpartitioned table, else in
//! `_symlink_format_manifest/<col>=<value>/.../manifest` per partition (names and values
//! escaped as Spark escapes partition directories, NULL as `__HIVE_DEFAULT_PARTITION__`).
//! Manifests of partitions that no longer hold files are deleted. Like Spark, a table with
//! column mapping (the files' column names are not the table's) or with live deletion
//! vectors (the manifests cannot say which rows are gone) is refused.

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::cast::AsArray;
use arrow_array::{Array, StructArray};
use bytes::Bytes;
use futures::TryStreamExt;
use percent_encoding::percent_decode_str;

use crate::actions::layout::add;
use crate::actions::partition::{escape_partition_path_value, HIVE_DEFAULT_PARTITION};
use crate::error::{Error, Result};
use crate::scan::{hadoop_path, is_absolute};
use crate::schema::ColumnMappingMode;
use crate::snapshot::Snapshot;

/// The directory under the table root the manifests are written to.
pub const MANIFEST_DIRECTORY: &str = "_symlink_format_manifest";
const MANIFEST_NAME: &str = "manifest";
/// The table property that has every commit regenerate the manifests (Delta on Spark's
/// post-commit hook; here a full generation after each commit).
pub(crate) const SYMLINK_MANIFEST_KEY: &str = "delta.compatibility.symlinkFormatManifest.enabled";

/// What [`generate_symlink_manifest`] did: the manifests written and deleted, as paths
/// relative to the table root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestResult {
    pub written: Vec<String>,
    pub deleted: Vec<String>,
}

/// Writes the symlink format manifests of `snapshot` (see the module documentation) and
/// deletes those of partitions without files. Errors: [`Error::NotAllowed`] for a table with
/// column mapping or live deletion vectors, storage errors naming the file.
pub async fn generate_symlink_manifest(snapshot: &Snapshot) -> Result<ManifestResult> {
    let table = snapshot.table_uri();
    let config = snapshot.table_configuration();
    if config.column_mapping() != ColumnMappingMode::None {
        return Err(Error::NotAllowed(format!(
            "cannot generate symlink_format_manifest for {table}: manifest generation is not \
             supported for tables that use column mapping, as in Delta on Spark"
        )));
    }
    let root = snapshot.storage().root_url().as_str();
    let partitions = snapshot.partition_columns().to_vec();
    let mut manifests: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if partitions.is_empty() {
        manifests.insert(String::new(), Vec::new());
    }
    for adds in snapshot.add_actions().await? {
        if adds
            .column_by_name(add::DELETION_VECTOR)
            .is_some_and(|column| column.null_count() < column.len())
        {
            return Err(Error::NotAllowed(format!(
                "cannot generate symlink_format_manifest for {table}: it has files with \
                 deletion vectors (purge them with REORG TABLE ... APPLY (PURGE)), as in Delta \
                 on Spark"
            )));
        }
        let paths = adds
            .column_by_name(add::PATH)
            .and_then(|column| column.as_string_opt::<i32>())
            .ok_or_else(|| listing_invariant(table, add::PATH))?;
        let directories = partition_directories(adds, &partitions, table)?;
        for (row, directory) in directories.into_iter().enumerate() {
            let logged = paths.value(row);
            let path = percent_decode_str(logged).decode_utf8_lossy();
            let line = match is_absolute(logged) {
                true => hadoop_path(root, logged),
                false => hadoop_path(root, &path),
            };
            manifests.entry(directory).or_default().push(line);
        }
    }
    let storage = snapshot.storage();
    let mut result = ManifestResult::default();
    for (directory, lines) in &manifests {
        let relative = manifest_path(directory);
        let location = storage.resolve_decoded(&relative)?;
        storage
            .put(&location, Bytes::from(lines.join("\n")))
            .await?;
        result.written.push(relative);
    }
    let kept: BTreeSet<String> = result.written.iter().cloned().collect();
    let prefix = format!("{MANIFEST_DIRECTORY}/");
    let stale: Vec<String> = storage
        .list_table_under(MANIFEST_DIRECTORY)
        .try_filter_map(|object| {
            let gone = object.path.starts_with(&prefix)
                && object.path.ends_with(&format!("/{MANIFEST_NAME}"))
                && !kept.contains(&object.path);
            async move { Ok(gone.then_some(object.path)) }
        })
        .try_collect()
        .await?;
    storage.delete_relative(stale.clone()).await?;
    result.deleted = stale;
    Ok(result)
}

/// The manifest of the partition directory `directory` (empty: the table's only one).
fn manifest_path(directory: &str) -> String {
    match directory {
        "" => format!("{MANIFEST_DIRECTORY}/{MANIFEST_NAME}"),
        _ => format!("{MANIFEST_DIRECTORY}/{directory}/{MANIFEST_NAME}"),
    }
}

/// Each file's partition directory (`a=1/b=x`), as Spark names it from the text of the
/// add actions' partition values (`adds`: the add layout).
fn partition_directories(
    adds: &StructArray,
    partitions: &[String],
    table: &str,
) -> Result<Vec<String>> {
    if partitions.is_empty() {
        return Ok(vec![String::new(); adds.len()]);
    }
    let values = adds
        .column_by_name(add::PARTITION_VALUES)
        .and_then(|column| column.as_map_opt())
        .ok_or_else(|| listing_invariant(table, add::PARTITION_VALUES))?;
    let mut directories = Vec::with_capacity(adds.len());
    for row in 0..adds.len() {
        let entries = values.value(row);
        let keys = entries.column(0).as_string_opt::<i32>();
        let texts = entries.column(1).as_string_opt::<i32>();
        let (Some(keys), Some(texts)) = (keys, texts) else {
            return Err(listing_invariant(table, add::PARTITION_VALUES));
        };
        let parts: Vec<String> = partitions
            .iter()
            .map(|name| {
                let text = (0..keys.len())
                    .find(|&entry| keys.value(entry) == name)
                    .filter(|&entry| texts.is_valid(entry) && !texts.value(entry).is_empty())
                    .map(|entry| texts.value(entry));
                let value = match text {
                    Some(text) => escape_partition_path_value(text),
                    None => HIVE_DEFAULT_PARTITION.to_string(),
                };
                format!("{}={value}", escape_partition_path_value(name))
            })
            .collect();
        directories.push(parts.join("/"));
    }
    Ok(directories)
}

fn listing_invariant(table: &str, column: &str) -> Error {
    Error::internal(
        table,
        format!("a snapshot's file list has no usable `{column}` column"),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

    use super::*;
    use crate::ops::{write_table, WriteMode, WriteTableOptions};
    use crate::snapshot::SnapshotAt;
    use crate::storage::Storage;
    use crate::table::Table;

    fn rows(ids: Vec<i64>, parts: Vec<Option<&str>>) -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from(ids));
        let parts: ArrayRef = Arc::new(StringArray::from(parts));
        RecordBatch::try_from_iter([("id", ids), ("p", parts)]).unwrap()
    }

    async fn write(table: &Table, batch: RecordBatch, mode: WriteMode) {
        let options = WriteTableOptions {
            mode,
            partition_by: Some(vec!["p".into()]),
            ..WriteTableOptions::default()
        };
        let stream = futures::stream::iter([Ok(batch.clone())]);
        write_table(table.storage(), batch.schema(), stream, options)
            .await
            .unwrap();
    }

    fn manifest(dir: &std::path::Path, partition: &str) -> Vec<String> {
        let path = dir
            .join(MANIFEST_DIRECTORY)
            .join(partition)
            .join("manifest");
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    }

    #[tokio::test]
    async fn each_partition_lists_its_files_and_emptied_partitions_lose_their_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let table = Table::from_storage(storage);
        let batch = rows(vec![1, 2, 3], vec![Some("a"), None, Some("x:y")]);
        write(&table, batch, WriteMode::Append).await;
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let done = generate_symlink_manifest(&snapshot).await.unwrap();
        assert_eq!(done.written.len(), 3);
        let (_, files) = snapshot.files(false).await.unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (partition, shown) in [
            ("p=a", "p=a"),
            (
                "p=__HIVE_DEFAULT_PARTITION__",
                "p=__HIVE_DEFAULT_PARTITION__",
            ),
            ("p=x%3Ay", "p=x%3Ay"),
        ] {
            let lines = manifest(dir.path(), partition);
            assert_eq!(lines.len(), 1, "{partition}");
            let expected = format!("file:{}/{shown}/", root.display());
            assert!(lines[0].starts_with(&expected), "{lines:?} {expected}");
        }
        assert_eq!(files.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);

        write(&table, rows(vec![4], vec![Some("a")]), WriteMode::Overwrite).await;
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let done = generate_symlink_manifest(&snapshot).await.unwrap();
        assert_eq!(
            done.written,
            vec![format!("{MANIFEST_DIRECTORY}/p=a/manifest")]
        );
        assert_eq!(done.deleted.len(), 2, "{done:?}");
        assert!(!dir
            .path()
            .join(MANIFEST_DIRECTORY)
            .join("p=x%3Ay/manifest")
            .exists());
    }
}
