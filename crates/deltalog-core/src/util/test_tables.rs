//! Fixtures the unit tests of several modules share: tables on a temporary directory, with
//! and without a history, and ways to compare what they hold.

use std::collections::{BTreeMap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::Array;

use crate::schema::{PrimitiveType, StructField, StructType};
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::table::Table;
use crate::transaction::{AddFile, CommitOptions, TableSpec};

/// The table properties of a table that writes V2 checkpoints.
pub(crate) const V2: &[(&str, &str)] = &[
    ("delta.feature.v2Checkpoint", "supported"),
    ("delta.checkpointPolicy", "v2"),
];

pub(crate) fn table(dir: &tempfile::TempDir) -> Table {
    Table::from_storage(Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap())
}

/// A partitioned table with `commits` appends of two files each, a txn and a domain, and one
/// remove; post-commit work off so that the test decides what is written.
pub(crate) async fn table_with_history(
    dir: &tempfile::TempDir,
    configuration: &[(&str, &str)],
    commits: usize,
) -> Table {
    let table = table(dir);
    let mut configuration: HashMap<String, String> = configuration
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    configuration.insert("delta.feature.domainMetadata".into(), "supported".into());
    let spec = TableSpec {
        schema: StructType::new(vec![
            StructField::new("a", PrimitiveType::Long, true),
            StructField::new("p", PrimitiveType::String, true),
        ]),
        partition_columns: vec!["p".into()],
        configuration,
        ..TableSpec::default()
    };
    let quiet = CommitOptions::without_post_commit_work();
    let create = table.create_transaction(spec).await.unwrap();
    create
        .with_commit_options(quiet.clone())
        .commit()
        .await
        .unwrap();
    for commit in 0..commits {
        let mut tx = table.transaction("WRITE").await.unwrap();
        let files: Vec<AddFile> = (0..2)
            .map(|n| AddFile {
                path: format!("p={commit}/f{n}.parquet"),
                partition_values: vec![("p".into(), Some(commit.to_string()))],
                size: 100 + n,
                modification_time: 1,
                data_change: true,
                stats: Some(format!(
                    r#"{{"numRecords":3,"minValues":{{"a":{n}}},"maxValues":{{"a":9}},"nullCount":{{"a":0}}}}"#
                )),
                ..AddFile::default()
            })
            .collect();
        tx.add(&files).unwrap();
        tx.set_app_version("app", commit as i64).unwrap();
        tx.set_domain_metadata("user.d", Some(format!("c{commit}")))
            .unwrap();
        if commit == 1 {
            tx.remove_paths(&["p=0/f0.parquet"], true).await.unwrap();
        }
        tx.with_commit_options(quiet.clone())
            .commit()
            .await
            .unwrap();
    }
    table
}

/// What a snapshot holds, in a comparable form.
pub(crate) async fn state_of(
    snapshot: &Snapshot,
) -> (Vec<String>, BTreeMap<String, i64>, BTreeMap<String, String>) {
    let (_, batches) = snapshot.files(true).await.unwrap();
    let mut paths: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let paths = b.column_by_name("path").unwrap().as_string::<i32>().clone();
            (0..paths.len()).map(move |row| paths.value(row).to_string())
        })
        .collect();
    paths.sort();
    (
        paths,
        snapshot.transactions().into_iter().collect(),
        snapshot.domains().into_iter().collect(),
    )
}

/// Every file under `dir` (relative path and bytes), to show a dry run changed nothing.
pub(crate) fn files_under(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}
