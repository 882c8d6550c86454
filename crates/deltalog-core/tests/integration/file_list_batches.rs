//! The shape of file lists read from JSON-only logs: the rows leave in a handful of large
//! batches whatever the number of commits, and a filtered listing (`snapshot_matching`) keeps
//! exactly the files of the full listing whose statistics may match (spec "Action
//! Reconciliation", "Per-file Statistics").

use crate::support::common::*;

use std::collections::HashMap;
use std::path::Path;

use arrow_array::{Array, RecordBatch, StringArray};
use deltalog_core::{parse_sql, Snapshot, SnapshotAt, Table};
use serde_json::{json, Value};

const SCHEMA: &str = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"part","type":"string","nullable":true,"metadata":{}}]}"#;

const COMMITS: u64 = 1_000;

/// Writes a table of [`COMMITS`] commits, each adding 10 files (ids `10 * v .. 10 * v + 9`
/// in their statistics) and removing one file of the commit before.
fn write_table(root: &Path) {
    let log = root.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for version in 0..COMMITS {
        let mut actions: Vec<Value> = Vec::new();
        if version == 0 {
            actions.push(json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}));
            actions.push(
                json!({"metaData": {"id": "t", "format": {"provider": "parquet",
                "options": {}}, "schemaString": SCHEMA, "partitionColumns": ["part"],
                "createdTime": 1, "configuration": {}}}),
            );
        } else {
            let gone = format!("part=p{}/f-{}-3.parquet", (version - 1) % 4, version - 1);
            actions.push(json!({"remove": {"path": gone, "deletionTimestamp": 5,
                "dataChange": true}}));
        }
        for file in 0..10u64 {
            let id = version * 10 + file;
            let stats = format!(
                r#"{{"numRecords":1,"minValues":{{"id":{id}}},"maxValues":{{"id":{id}}},"nullCount":{{"id":0}}}}"#
            );
            actions.push(json!({"add": {
                "path": format!("part=p{}/f-{version}-{file}.parquet", version % 4),
                "partitionValues": {"part": format!("p{}", version % 4)},
                "size": 100 + id, "modificationTime": 1_700_000_000_000u64 + version,
                "dataChange": true, "stats": stats}}));
        }
        let name = format!("{version:020}.json");
        std::fs::write(log.join(name), json_lines(&actions)).unwrap();
    }
}

fn open(root: &Path) -> Table {
    runtime()
        .block_on(Table::open(root.to_str().unwrap(), &HashMap::new()))
        .unwrap()
}

fn files(snapshot: &Snapshot, with_stats: bool) -> Vec<RecordBatch> {
    runtime().block_on(snapshot.files(with_stats)).unwrap().1
}

fn paths(batches: &[RecordBatch]) -> Vec<String> {
    batches
        .iter()
        .flat_map(|batch| {
            let column = batch.column_by_name("path").unwrap();
            let column = column.as_any().downcast_ref::<StringArray>().unwrap();
            column
                .iter()
                .flatten()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The live paths as replay defines them: every add, newest commit first, minus the removed.
fn expected_paths() -> Vec<String> {
    (0..COMMITS)
        .rev()
        .flat_map(|version| {
            (0..10u64)
                .filter(move |file| !(*file == 3 && version + 1 < COMMITS))
                .map(move |file| format!("part=p{}/f-{version}-{file}.parquet", version % 4))
        })
        .collect()
}

#[test]
fn a_thousand_commit_file_list_leaves_in_a_handful_of_batches() {
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path());
    let snapshot = runtime()
        .block_on(open(dir.path()).snapshot(SnapshotAt::Latest))
        .unwrap();
    for with_stats in [false, true] {
        let batches = files(&snapshot, with_stats);
        assert!(batches.len() <= 2, "{} batches", batches.len());
        assert_eq!(paths(&batches), expected_paths());
    }
    let batch = &files(&snapshot, false)[0];
    let sizes = batch.column_by_name("size").unwrap();
    let sizes = sizes
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>()
        .unwrap();
    assert_eq!(sizes.value(0), 100 + (COMMITS - 1) as i64 * 10);
    assert!(
        futures::executor::block_on(snapshot.remove_actions())
            .unwrap()
            .len()
            <= 2
    );
}

#[test]
fn filtered_listing_keeps_the_matching_files_of_the_full_listing() {
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path());
    let table = open(dir.path());
    let full = runtime()
        .block_on(table.snapshot(SnapshotAt::Latest))
        .unwrap();
    let all = paths(&files(&full, false));
    for (filter, expected) in [
        ("id < 100", all.iter().filter(|p| id_of(p) < 100).count()),
        ("id >= 9990", 10),
        ("part = 'p1' AND id < 40", 9),
        ("id = 12345678", 0),
    ] {
        let filter = parse_sql(filter).unwrap();
        let matching = runtime()
            .block_on(table.snapshot_matching(SnapshotAt::Latest, &filter))
            .unwrap();
        let kept = paths(&files(&matching, true));
        let from_full: Vec<String> = all
            .iter()
            .filter(|path| kept.contains(path))
            .cloned()
            .collect();
        assert_eq!(kept, from_full, "{filter:?}: order of the full listing");
        assert_eq!(kept.len(), expected, "{filter:?}");
        assert_eq!(matching.version(), full.version());
    }
}

/// The id of the file `part=pX/f-<version>-<file>.parquet`.
fn id_of(path: &str) -> u64 {
    let name = path
        .rsplit('/')
        .next()
        .unwrap()
        .trim_end_matches(".parquet");
    let mut parts = name.split('-').skip(1);
    let version: u64 = parts.next().unwrap().parse().unwrap();
    let file: u64 = parts.next().unwrap().parse().unwrap();
    version * 10 + file
}

/// A file added again (same path, no remove in between) is judged by its newest add only:
/// an older add that matches never shows through a newer one that cannot.
#[test]
fn filtered_listing_judges_the_newest_add_of_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let add = |path: &str, id: i64| {
        let stats = format!(
            r#"{{"numRecords":1,"minValues":{{"id":{id}}},"maxValues":{{"id":{id}}},"nullCount":{{"id":0}}}}"#
        );
        json!({"add": {"path": path, "partitionValues": {"part": "p0"}, "size": 1,
            "modificationTime": 1, "dataChange": true, "stats": stats}})
    };
    let first = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json!({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA, "partitionColumns": ["part"], "createdTime": 1,
            "configuration": {}}}),
        add("x.parquet", 1),
        add("y.parquet", 500),
    ];
    let second = vec![add("x.parquet", 700), add("y.parquet", 2)];
    std::fs::write(log.join(format!("{:020}.json", 0)), json_lines(&first)).unwrap();
    std::fs::write(log.join(format!("{:020}.json", 1)), json_lines(&second)).unwrap();
    let table = open(dir.path());
    let filter = parse_sql("id < 10").unwrap();
    let matching = runtime()
        .block_on(table.snapshot_matching(SnapshotAt::Latest, &filter))
        .unwrap();
    assert_eq!(
        paths(&files(&matching, true)),
        vec!["y.parquet".to_string()]
    );
    let full = runtime()
        .block_on(table.snapshot(SnapshotAt::Latest))
        .unwrap();
    assert_eq!(paths(&files(&full, false)), vec!["x.parquet", "y.parquet"]);
}

/// A log long enough to be read in several chunks (commits are folded newest first, a few
/// hundred at a time): a remove in the newest chunk hides an add of the oldest, the newest
/// `metaData` wins over one chunks older, a `txn` of the oldest chunk survives, and the
/// snapshot's `commitInfo` is the newest commit's.
#[test]
fn a_log_read_in_chunks_replays_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let last = 700u64;
    let add = |path: String| {
        json!({"add": {"path": path, "partitionValues": {}, "size": 1,
            "modificationTime": 1, "dataChange": true}})
    };
    let metadata = |owner: &str| {
        json!({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA, "partitionColumns": [], "createdTime": 1,
            "configuration": {"owner": owner}}})
    };
    for version in 0..=last {
        let mut actions = vec![json!({"commitInfo": {"operation": format!("op-{version}")}})];
        match version {
            0 => {
                actions.push(json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}));
                actions.push(metadata("first"));
                actions.push(add("old.parquet".into()));
            }
            1 => actions.push(json!({"txn": {"appId": "app", "version": 7}})),
            _ if version == last => {
                actions.push(metadata("last"));
                actions.push(json!({"remove": {"path": "old.parquet", "dataChange": true,
                    "deletionTimestamp": 5}}));
            }
            _ => {}
        }
        actions.push(add(format!("f-{version}.parquet")));
        std::fs::write(
            log.join(format!("{version:020}.json")),
            json_lines(&actions),
        )
        .unwrap();
    }
    let snapshot = runtime()
        .block_on(open(dir.path()).snapshot(SnapshotAt::Latest))
        .unwrap();
    let live = paths(&files(&snapshot, false));
    let expected: Vec<String> = (0..=last).rev().map(|v| format!("f-{v}.parquet")).collect();
    assert_eq!(live, expected);
    assert_eq!(
        snapshot
            .metadata()
            .configuration
            .get("owner")
            .map(String::as_str),
        Some("last")
    );
    assert_eq!(snapshot.transaction_version("app"), Some(7));
    let operation = snapshot.commit_info().and_then(|info| info.operation());
    assert_eq!(operation, Some("op-700"));
    let removed = futures::executor::block_on(snapshot.remove_actions())
        .unwrap()
        .iter()
        .map(Array::len)
        .sum::<usize>();
    assert_eq!(removed, 1);
}
