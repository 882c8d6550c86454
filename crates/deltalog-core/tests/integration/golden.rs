//! Golden conformance: every table of `shared/conformance/golden` (written by Delta on Spark)
//! loads as its README says. One line per table; the test names say what each pins down.

use crate::support::common::*;

use std::collections::HashMap;
use std::path::Path;

use deltalog_core::{Error, SnapshotAt, Table};

/// The latest snapshot, opened from its head (the `.crc` of Spark's tables when usable) so
/// that every table also checks the replayed state against the head.
async fn open(name: &str) -> deltalog_core::Result<deltalog_core::Snapshot> {
    let dir = unpacked().unwrap().join(name).join("delta");
    let table = Table::open(dir.to_str().unwrap(), &HashMap::new()).await?;
    let snapshot = table.lazy_snapshot(SnapshotAt::Latest).await?;
    snapshot.num_files().await?;
    Ok(snapshot)
}

fn file_count(name: &str) -> Option<usize> {
    unpacked()?;
    let snapshot = runtime().block_on(open(name)).unwrap();
    Some(runtime().block_on(snapshot.num_files()).unwrap())
}

fn refused(name: &str) -> Option<Error> {
    unpacked()?;
    match runtime().block_on(open(name)) {
        Ok(snapshot) => panic!("{name} loaded version {}", snapshot.version()),
        Err(error) => Some(error),
    }
}

macro_rules! refused {
    ($test:ident, $table:literal, $pattern:pat) => {
        #[test]
        fn $test() {
            if let Some(error) = refused($table) {
                assert!(matches!(error, $pattern), "{}: {error:?}", $table);
            }
        }
    };
}

macro_rules! files {
    ($test:ident, $table:literal, $count:expr) => {
        #[test]
        fn $test() {
            if let Some(count) = file_count($table) {
                assert_eq!(count, $count, "{}", $table);
            }
        }
    };
}

refused!(
    reader_version_above_three_is_refused,
    "deltalog-invalid-protocol-version",
    Error::UnsupportedProtocolVersion { .. }
);
refused!(
    checkpoint_without_metadata_is_refused,
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata",
    Error::InvalidTable { .. }
);
refused!(
    checkpoint_without_protocol_is_refused,
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol",
    Error::InvalidTable { .. }
);
refused!(
    log_without_metadata_is_refused,
    "deltalog-state-reconstruction-without-metadata",
    Error::InvalidTable { .. }
);
refused!(
    log_without_protocol_is_refused,
    "deltalog-state-reconstruction-without-protocol",
    Error::InvalidTable { .. }
);
refused!(
    log_without_any_metadata_action_is_refused,
    "data-reader-absolute-paths-escaped-chars",
    Error::InvalidTable { .. }
);
refused!(
    folder_without_log_is_not_a_table,
    "no-delta-log-folder",
    Error::TableNotFound { .. }
);
refused!(
    missing_version_is_refused,
    "versions-not-contiguous",
    Error::NonContiguousLog { .. }
);
refused!(
    folder_of_tables_is_not_a_table,
    "hive",
    Error::TableNotFound { .. }
);

files!(
    add_and_remove_in_other_spellings_cancel_normal_a,
    "canonicalized-paths-normal-a",
    0
);
files!(
    add_and_remove_in_other_spellings_cancel_normal_b,
    "canonicalized-paths-normal-b",
    0
);
files!(
    add_and_remove_in_other_spellings_cancel_special_a,
    "canonicalized-paths-special-a",
    0
);
files!(
    add_and_remove_in_other_spellings_cancel_special_b,
    "canonicalized-paths-special-b",
    0
);
files!(checkpoint_state_is_replayed, "checkpoint", 1);
files!(
    re_added_file_is_live_again,
    "delete-re-add-same-file-different-transactions",
    2
);
files!(
    metadata_without_schema_string_reads,
    "deltalog-commit-info",
    1
);
files!(
    special_characters_in_paths_replay,
    "log-replay-special-characters-b",
    1
);
files!(
    deleted_directory_files_stay_listed,
    "update-deleted-directory",
    10
);

/// Every golden table that is not refused loads, with a version equal to the newest commit or
/// checkpoint in its log, and its file list builds.
#[test]
fn every_other_table_loads_and_lists_files() {
    let Some(dir) = unpacked() else { return };
    let refused = [
        "deltalog-invalid-protocol-version",
        "deltalog-state-reconstruction-from-checkpoint-missing-metadata",
        "deltalog-state-reconstruction-from-checkpoint-missing-protocol",
        "deltalog-state-reconstruction-without-metadata",
        "deltalog-state-reconstruction-without-protocol",
        "data-reader-absolute-paths-escaped-chars",
        "no-delta-log-folder",
        "versions-not-contiguous",
        "hive",
    ];
    let runtime = runtime();
    let mut failures = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names.iter().filter(|n| !refused.contains(&n.as_str())) {
        let result = runtime.block_on(async {
            let snapshot = open(name).await?;
            let (_, batches) = snapshot.files(true).await?;
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(rows, snapshot.num_files().await.unwrap(), "{name}");
            Ok::<_, Error>(snapshot.version())
        });
        if let Err(error) = result {
            failures.push(format!("{name}: {error}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} tables failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Rows in the `.parquet` files under `dir` (recursively), from their footers.
fn parquet_rows(dir: &Path) -> u64 {
    let mut rows = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            rows += parquet_rows(&path);
        } else if name.ends_with(".parquet") && !name.starts_with('.') {
            let file = std::fs::File::open(&path).unwrap();
            let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
            use parquet::file::reader::FileReader;
            rows += reader.metadata().file_metadata().num_rows() as u64;
        }
    }
    rows
}

/// Where every live file has statistics, the live row count (records minus deleted rows)
/// equals the number of expected rows.
#[test]
fn live_row_counts_match_expected_rows() {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;
    let Some(dir) = unpacked() else { return };
    let runtime = runtime();
    let mut checked = 0;
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let table = entry.unwrap().path();
        let expected_dir = table.join("expected");
        if !expected_dir.is_dir() {
            continue;
        }
        let name = table.file_name().unwrap().to_string_lossy().into_owned();
        let snapshot = runtime.block_on(open(&name)).unwrap();
        let (_, batches) = runtime.block_on(snapshot.files(false)).unwrap();
        let mut live = 0i64;
        let mut complete = true;
        for batch in &batches {
            let records = batch
                .column_by_name("num_records")
                .unwrap()
                .as_primitive::<Int64Type>();
            complete &= records.null_count() == 0;
            live += records.iter().flatten().sum::<i64>();
            let dv = batch.column_by_name("deletion_vector").unwrap().as_struct();
            let cardinality = dv
                .column_by_name("cardinality")
                .unwrap()
                .as_primitive::<Int64Type>();
            live -= (0..dv.len())
                .filter(|&row| dv.is_valid(row))
                .map(|row| cardinality.value(row))
                .sum::<i64>();
        }
        if !complete {
            continue;
        }
        checked += 1;
        let expected = parquet_rows(&expected_dir) as i64;
        if live != expected {
            failures.push(format!("{name}: {live} live rows, {expected} expected"));
        }
    }
    assert!(
        checked > 20,
        "only {checked} tables had statistics on every file"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
