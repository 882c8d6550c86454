//! Incremental checkpoints against checkpoints of the whole replayed state: random histories
//! (adds, removes, re-adds, deletion vectors replacing files, property changes that reshape
//! the checkpoint rows, every checkpoint kind as a base and as a result) and the golden
//! tables written by Delta on Spark.

use std::collections::HashMap;

use arrow_array::{Array, RecordBatch};

use super::super::*;
use crate::actions::DeletionVectorDescriptor;
use crate::schema::{PrimitiveType, StructField, StructType};
use crate::storage::Storage;
use crate::table::Table;
use crate::transaction::{AddFile, CommitOptions, MetadataUpdate, TableSpec};
use crate::util::test_tables::table;

/// A small deterministic generator (xorshift), so that a failing seed replays.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The file-action rows (adds and removes) of the Parquet files `written` names, as sorted
/// JSON lines.
async fn file_action_rows(table: &Table, written: &CheckpointResult) -> Vec<String> {
    let mut lines = Vec::new();
    for url in written.files.iter().chain(&written.sidecars) {
        if url.ends_with(".json") {
            continue;
        }
        let path = table.storage().resolve(url).unwrap();
        let bytes = table.storage().read(&path).await.unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            lines.extend(json_lines(&batch.unwrap()));
        }
    }
    lines.sort();
    lines
}

/// The rows of `batch` with an `add` or a `remove`, each as a JSON line of those two columns.
fn json_lines(batch: &RecordBatch) -> Vec<String> {
    let keep: Vec<usize> = ["add", "remove"]
        .iter()
        .filter_map(|name| batch.schema().index_of(name).ok())
        .collect();
    let batch = batch.project(&keep).unwrap();
    let mut out = Vec::new();
    {
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut out);
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
    }
    String::from_utf8(out)
        .unwrap()
        .lines()
        .filter(|line| *line != "{}")
        .map(str::to_string)
        .collect()
}

/// Checkpoints the latest version of the table in `dir` incrementally, and the same version
/// of a copy of it from the whole state replayed (through the previous checkpoint), and
/// asserts both hold the same rows. Returns the incremental result.
async fn assert_incremental_matches_full(
    dir: &std::path::Path,
    options: &CheckpointOptions,
    context: &str,
) -> CheckpointResult {
    let twin_dir = tempfile::tempdir().unwrap();
    copy_dir(&dir.join("_delta_log"), &twin_dir.path().join("_delta_log"));
    let table = Table::from_storage(Storage::open(dir.to_str().unwrap(), &HashMap::new()).unwrap());
    let twin = self::table(&twin_dir);
    let snapshot = Snapshot::load(table.storage(), SnapshotAt::Latest)
        .await
        .unwrap();
    let outcome = write_checkpoint_with(&snapshot, options, FullReplay::Refused)
        .await
        .unwrap_or_else(|error| panic!("{context}: {error}"));
    let CheckpointOutcome::Written(incremental) = outcome else {
        panic!("{context}: {outcome:?}");
    };
    let incremental_rows = file_action_rows(&table, &incremental).await;
    let twin_snapshot = Snapshot::load(twin.storage(), SnapshotAt::Latest)
        .await
        .unwrap();
    let planned = plan_from_state(&twin_snapshot, options).await.unwrap();
    let storage = twin.storage();
    let full = match planned.kind {
        WriteKind::V2 => {
            write_v2(storage, &planned.content, options)
                .await
                .unwrap()
                .0
        }
        WriteKind::Classic => write_classic(storage, &planned.content, options)
            .await
            .unwrap(),
        WriteKind::MultiPart { .. } => panic!("{context}: multi-part"),
    };
    let full_rows = file_action_rows(&twin, &full).await;
    assert_eq!(incremental_rows.len(), full_rows.len(), "{context}");
    for (got, expected) in incremental_rows.iter().zip(&full_rows) {
        assert_eq!(got, expected, "{context}");
    }
    assert_eq!(incremental.num_add_files, full.num_add_files, "{context}");
    assert_eq!(incremental.num_actions, full.num_actions, "{context}");
    incremental
}

/// Copies the directory `from` to `to`, recursively.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((from, to)) = pending.pop() {
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                pending.push((entry.path(), target));
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}

fn quiet() -> CommitOptions {
    CommitOptions::without_post_commit_work()
}

fn stats(draw: &mut Draw) -> Option<String> {
    if draw.chance(10) {
        return None;
    }
    let low = draw.below(100);
    Some(format!(
        r#"{{"numRecords":{},"minValues":{{"a":{low},"b":"s{low}"}},"maxValues":{{"a":{},"b":"t{low}"}},"nullCount":{{"a":0,"b":{}}}}}"#,
        1 + draw.below(50),
        low + draw.below(100),
        draw.below(3)
    ))
}

fn dv(draw: &mut Draw) -> DeletionVectorDescriptor {
    DeletionVectorDescriptor {
        storage_type: "u".into(),
        path_or_inline_dv: format!("ab^-aqEH.-t@S}}K{{vb[*k{:03}", draw.below(1000)),
        offset: Some(1 + draw.below(100) as i32),
        size_in_bytes: 40,
        cardinality: 1 + draw.below(5) as i64,
    }
}

/// One random commit: new files, removes of live files, deletion vectors replacing live
/// files, re-adds of removed paths, a property change now and then.
async fn random_commit(table: &Table, draw: &mut Draw, commit: usize, removed: &mut Vec<String>) {
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let (_, files) = snapshot.files(false).await.unwrap();
    let live: Vec<String> = files
        .iter()
        .flat_map(|batch| {
            let paths = batch.column_by_name("path").unwrap();
            let paths = paths.as_any().downcast_ref::<StringArray>().unwrap();
            (0..paths.len())
                .map(|row| paths.value(row).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut tx = table.transaction("WRITE").await.unwrap();
    let mut adds = Vec::new();
    for n in 0..draw.below(4) {
        let part = draw.below(3);
        adds.push(AddFile {
            path: format!("p={part}/c{commit}-{n}.parquet"),
            partition_values: vec![("p".into(), Some(part.to_string()))],
            size: 100 + draw.below(1000) as i64,
            modification_time: 1,
            data_change: true,
            stats: stats(draw),
            ..AddFile::default()
        });
    }
    let mut touched: Vec<&str> = Vec::new();
    for path in &live {
        if draw.chance(8) {
            touched.push(path);
        }
    }
    if !touched.is_empty() {
        tx.remove_paths(&touched, true).await.unwrap();
        for path in &touched {
            if draw.chance(50) {
                // A deletion vector replacing the file: remove (path) + add (path, dv).
                let part = path[2..3].to_string();
                adds.push(AddFile {
                    path: path.to_string(),
                    partition_values: vec![("p".into(), Some(part))],
                    size: 500,
                    modification_time: 2,
                    data_change: true,
                    stats: stats(draw),
                    deletion_vector: Some(dv(draw)),
                    ..AddFile::default()
                });
            } else {
                removed.push(path.to_string());
            }
        }
    }
    if !removed.is_empty() && draw.chance(15) {
        let path = removed.remove(draw.below(removed.len() as u64) as usize);
        if !touched.contains(&path.as_str()) {
            let part = path[2..3].to_string();
            adds.push(AddFile {
                path,
                partition_values: vec![("p".into(), Some(part))],
                size: 77,
                modification_time: 3,
                data_change: true,
                stats: stats(draw),
                ..AddFile::default()
            });
        }
    }
    tx.add(&adds).unwrap();
    if draw.chance(30) {
        tx.set_app_version(&format!("app{}", draw.below(3)), commit as i64)
            .unwrap();
    }
    if draw.chance(20) {
        let (key, value) = match draw.below(5) {
            0 => ("delta.checkpoint.writeStatsAsStruct", "false"),
            1 => ("delta.checkpoint.writeStatsAsStruct", "true"),
            2 => (
                "delta.checkpoint.writeStatsAsJson",
                ["false", "true"][draw.below(2) as usize],
            ),
            3 => (
                "delta.dataSkippingNumIndexedCols",
                ["1", "32"][draw.below(2) as usize],
            ),
            _ => (
                "delta.deletedFileRetentionDuration",
                ["interval 0 seconds", "interval 1 weeks"][draw.below(2) as usize],
            ),
        };
        tx.update_metadata(MetadataUpdate {
            configuration: vec![(key.to_string(), Some(value.to_string()))],
            ..MetadataUpdate::default()
        })
        .unwrap();
    }
    tx.with_commit_options(quiet()).commit().await.unwrap();
}

async fn random_table(dir: &tempfile::TempDir, draw: &mut Draw) -> Table {
    let table = table(dir);
    let mut configuration: HashMap<String, String> = HashMap::from([
        ("delta.enableDeletionVectors".into(), "true".into()),
        ("delta.feature.domainMetadata".into(), "supported".into()),
    ]);
    if draw.chance(40) {
        configuration.insert("delta.feature.v2Checkpoint".into(), "supported".into());
        configuration.insert("delta.checkpointPolicy".into(), "v2".into());
    }
    let spec = TableSpec {
        schema: StructType::new(vec![
            StructField::new("a", PrimitiveType::Long, true),
            StructField::new("b", PrimitiveType::String, true),
            StructField::new("p", PrimitiveType::String, true),
        ]),
        partition_columns: vec!["p".into()],
        configuration,
        ..TableSpec::default()
    };
    let create = table.create_transaction(spec).await.unwrap();
    create.with_commit_options(quiet()).commit().await.unwrap();
    table
}

#[tokio::test]
async fn random_histories_checkpoint_incrementally_as_from_the_whole_state() {
    let seeds: u64 = std::env::var("DELTALOG_INCREMENTAL_SEEDS")
        .ok()
        .and_then(|seeds| seeds.parse().ok())
        .unwrap_or(16);
    for seed in 1..=seeds {
        let mut draw = Draw(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let dir = tempfile::tempdir().unwrap();
        let table = random_table(&dir, &mut draw).await;
        let mut removed = Vec::new();
        let mut previous: Option<u64> = None;
        for commit in 1..=24 {
            random_commit(&table, &mut draw, commit, &mut removed).await;
            if !draw.chance(25) {
                continue;
            }
            let options = CheckpointOptions {
                sidecar_actions: [2, 5, 50_000][draw.below(3) as usize],
                v2_sidecars: !draw.chance(25),
                row_group_rows: [3, 64 * 1024][draw.below(2) as usize],
                ..CheckpointOptions::default()
            };
            let context = format!("seed {seed}, commit {commit}, {options:?}");
            let written = assert_incremental_matches_full(dir.path(), &options, &context).await;
            assert_eq!(written.incremental_from, previous, "{context}");
            previous = Some(written.version);
        }
    }
}

/// Copies the `_delta_log` of the golden table `name` (sidecars included) into `dir`.
fn copy_golden_log(name: &str, dir: &std::path::Path) -> bool {
    let Some(golden) = crate::log::segment::golden_tables_dir() else {
        return false;
    };
    let source = golden.join(name).join("delta/_delta_log");
    if !source.is_dir() {
        return false;
    }
    copy_dir(&source, &dir.join("_delta_log"));
    true
}

#[tokio::test]
async fn golden_tables_checkpoint_incrementally_as_from_the_whole_state() {
    let archives = crate::golden_archives();
    let mut checked = 0;
    let mut on_a_spark_checkpoint = 0;
    for name in crate::log::segment::golden_table_names(&archives) {
        let dir = tempfile::tempdir().unwrap();
        if !copy_golden_log(&name, dir.path()) {
            continue;
        }
        let table = table(&dir);
        // Tables that must fail to open (see the golden README) are not checkpointed.
        let Ok(snapshot) = Snapshot::load(table.storage(), SnapshotAt::Latest).await else {
            continue;
        };
        if snapshot
            .table_configuration()
            .ensure_writable(false, &[])
            .is_err()
        {
            continue;
        }
        let options = CheckpointOptions::default();
        let written = assert_incremental_matches_full(dir.path(), &options, &name).await;
        checked += 1;
        on_a_spark_checkpoint += usize::from(written.incremental_from.is_some());
    }
    assert!(checked >= 60, "{checked} golden tables checkpointed");
    assert!(
        on_a_spark_checkpoint >= 10,
        "{on_a_spark_checkpoint} on a checkpoint"
    );
}
