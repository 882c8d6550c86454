//! Golden data conformance: for every golden table with `expected/` (written by Delta on
//! Spark), scanning the latest snapshot with every column returns exactly the expected rows, in
//! any order. Rows are compared as a multiset of canonical text lines (columns sorted by name,
//! timestamps as UTC microseconds, string and binary kinds unified).

use crate::support::common::*;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use deltalog_core::scalar::SessionTimeZone;
use deltalog_core::scan::{Scan, ScanOptions};
use deltalog_core::{SnapshotAt, Table};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The session time zone each table was written in (README: only partition-values differs).
fn timezone_of(table: &str) -> SessionTimeZone {
    match table {
        "data-reader-partition-values" => SessionTimeZone::parse("America/Los_Angeles").unwrap(),
        _ => SessionTimeZone::utc(),
    }
}

/// Scans `table` and compares its rows with `expected/`; panics with a diff sample.
fn check(table: &str) {
    let Some(dir) = unpacked() else { return };
    let root = dir.join(table);
    let expected = expected_rows(&root.join("expected"));
    let actual = runtime().block_on(async {
        let location = root.join("delta");
        let table_handle = Table::open(location.to_str().unwrap(), &HashMap::new())
            .await
            .unwrap_or_else(|e| panic!("{table}: open: {e}"));
        let snapshot = table_handle
            .snapshot(SnapshotAt::Latest)
            .await
            .unwrap_or_else(|e| panic!("{table}: snapshot: {e}"));
        let options = ScanOptions {
            timezone: timezone_of(table),
            batch_size: 1000,
            ..ScanOptions::default()
        };
        let scan = Scan::new(&snapshot, options)
            .await
            .unwrap_or_else(|e| panic!("{table}: plan: {e}"));
        let batches = scan
            .to_batches()
            .await
            .unwrap_or_else(|e| panic!("{table}: read: {e}"));
        for batch in &batches {
            assert_eq!(batch.schema(), scan.schema(), "{table}: batch schema");
        }
        canonical_rows(
            &batches,
            &scan
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>(),
        )
    });
    compare(table, &expected, &actual);
}

fn expected_rows(dir: &Path) -> Rows {
    let mut batches = Vec::new();
    let mut names: Option<Vec<String>> = None;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".parquet") && !name.starts_with('.') && !name.starts_with('_')
        })
        .collect();
    files.sort();
    for path in files {
        let file = std::fs::File::open(&path).unwrap();
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        names.get_or_insert_with(|| {
            let fields = builder.schema().fields();
            fields.iter().map(|f| f.name().clone()).collect()
        });
        for batch in builder.build().unwrap() {
            batches.push(batch.unwrap());
        }
    }
    canonical_rows(&batches, &names.unwrap_or_default())
}

/// Column names (sorted) and one canonical line per row (sorted).
struct Rows {
    columns: Vec<String>,
    lines: Vec<String>,
}

fn canonical_rows(batches: &[RecordBatch], columns: &[String]) -> Rows {
    let mut sorted_columns = columns.to_vec();
    sorted_columns.sort();
    let options = FormatOptions::default().with_null("null");
    let mut lines = Vec::new();
    for batch in batches {
        let arrays: Vec<(String, ArrayRef)> = sorted_columns
            .iter()
            .map(|name| {
                let column = batch.column_by_name(name).unwrap();
                (name.clone(), canonical_array(column))
            })
            .collect();
        let formatters: Vec<(String, ArrayFormatter)> = arrays
            .iter()
            .map(|(name, array)| {
                (
                    name.clone(),
                    ArrayFormatter::try_new(array, &options).unwrap(),
                )
            })
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|(name, formatter)| format!("{name}={}", formatter.value(row)))
                .collect();
            lines.push(cells.join(" | "));
        }
    }
    lines.sort();
    Rows {
        columns: sorted_columns,
        lines,
    }
}

fn canonical_array(array: &ArrayRef) -> ArrayRef {
    let target = canonical_type(array.data_type());
    if &target == array.data_type() {
        return array.clone();
    }
    cast(array, &target).unwrap_or_else(|e| panic!("canonical form of {}: {e}", array.data_type()))
}

/// Timestamps as UTC microseconds without a zone, one string and one binary kind, every field
/// nullable and list/map fields named alike.
fn canonical_type(data_type: &DataType) -> DataType {
    let field = |name: &str, inner: &DataType, nullable: bool| {
        Arc::new(Field::new(name, canonical_type(inner), nullable))
    };
    match data_type {
        DataType::Timestamp(_, _) => DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            DataType::Binary
        }
        DataType::Struct(fields) => DataType::Struct(Fields::from(
            fields
                .iter()
                .map(|f| Field::new(f.name(), canonical_type(f.data_type()), true))
                .collect::<Vec<_>>(),
        )),
        DataType::List(element) | DataType::LargeList(element) => {
            DataType::List(field("item", element.data_type(), true))
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                panic!("map entries are not a struct")
            };
            let entries = Field::new(
                "entries",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", canonical_type(kv[0].data_type()), false),
                    Field::new("value", canonical_type(kv[1].data_type()), true),
                ])),
                false,
            );
            DataType::Map(Arc::new(entries), false)
        }
        other => other.clone(),
    }
}

fn compare(table: &str, expected: &Rows, actual: &Rows) {
    assert_eq!(
        actual.columns, expected.columns,
        "{table}: the columns differ"
    );
    if actual.lines == expected.lines {
        return;
    }
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for line in &expected.lines {
        *counts.entry(line).or_default() += 1;
    }
    for line in &actual.lines {
        *counts.entry(line).or_default() -= 1;
    }
    let missing: Vec<&str> = counts
        .iter()
        .filter(|(_, &c)| c > 0)
        .map(|(l, _)| *l)
        .collect();
    let extra: Vec<&str> = counts
        .iter()
        .filter(|(_, &c)| c < 0)
        .map(|(l, _)| *l)
        .collect();
    let sample = |lines: &[&str]| {
        lines
            .iter()
            .take(5)
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    panic!(
        "{table}: {} rows read, {} expected; {} expected rows missing, {} rows unexpected\n  \
         missing (sample):\n{}\n  unexpected (sample):\n{}",
        actual.lines.len(),
        expected.lines.len(),
        missing.len(),
        extra.len(),
        sample(&missing),
        sample(&extra)
    );
}

/// Every table with `expected/` has a test below.
#[test]
fn every_table_with_expected_rows_is_checked() {
    let Some(dir) = unpacked() else { return };
    let mut unchecked: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected").is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| !TABLES.contains(&name.as_str()))
        .collect();
    unchecked.sort();
    assert!(unchecked.is_empty(), "tables without a test: {unchecked:?}");
}

macro_rules! golden {
    ($($(#[$attr:meta])* $test:ident => $table:literal,)*) => {
        const TABLES: &[&str] = &[$($table),*];
        $(
            #[test]
            $(#[$attr])*
            fn $test() {
                check($table);
            }
        )*
    };
}

golden! {
    decimals_decode_exactly => "124-decimal-decode-bug",
    rows_of_many_files_are_all_read => "125-iterator-bug",
    decimals_in_legacy_parquet_encoding => "basic-decimal-table-legacy",
    decimals_of_several_precisions => "basic-decimal-table",
    inserts_and_deletes_across_a_checkpoint => "basic-with-inserts-deletes-checkpoint",
    rows_after_a_merge => "basic-with-inserts-merge",
    rows_after_overwrite_and_restore => "basic-with-inserts-overwrite-restore",
    rows_after_updates => "basic-with-inserts-updates",
    vacuum_protocol_check_feature_is_readable => "basic-with-vacuum-protocol-check-feature",
    corrupted_last_checkpoint_still_reads => "corrupted-last-checkpoint-kernel",
    arrays_of_nested_objects => "data-reader-array-complex-objects",
    arrays_of_primitives => "data-reader-array-primitives",
    dates_and_timestamps_written_in_america => "data-reader-date-types-America",
    dates_and_timestamps_written_in_asia => "data-reader-date-types-Asia",
    dates_and_timestamps_written_in_etc_zone => "data-reader-date-types-Etc",
    dates_and_timestamps_written_in_iceland => "data-reader-date-types-Iceland",
    dates_and_timestamps_written_in_jst => "data-reader-date-types-Jst",
    dates_and_timestamps_written_in_pst => "data-reader-date-types-Pst",
    dates_and_timestamps_written_in_utc => "data-reader-date-types-utc",
    escaped_characters_in_partition_paths => "data-reader-escaped-chars",
    maps_of_every_kind => "data-reader-map",
    nested_structs => "data-reader-nested-struct",
    nullable_array_elements => "data-reader-nullable-field-invalid-schema-key",
    partition_values_of_every_type_in_los_angeles_time => "data-reader-partition-values",
    primitive_types => "data-reader-primitives",
    timestamp_ntz_with_column_mapping_by_id => "data-reader-timestamp_ntz-id-mode",
    timestamp_ntz_with_column_mapping_by_name => "data-reader-timestamp_ntz-name-mode",
    timestamp_ntz_values_and_partitions => "data-reader-timestamp_ntz",
    all_types_from_a_checkpoint => "data-skipping-basic-stats-all-types-checkpoint",
    all_types_with_column_mapping_by_id => "data-skipping-basic-stats-all-types-columnmapping-id",
    all_types_with_column_mapping_by_name => "data-skipping-basic-stats-all-types-columnmapping-name",
    all_types => "data-skipping-basic-stats-all-types",
    rows_unchanged_by_stats_collected_across_versions => "data-skipping-change-stats-collected-across-versions",
    partition_and_data_columns => "data-skipping-partition-and-data-column",
    decimals_of_various_scales_and_precisions => "decimal-various-scale-precision",
    rows_after_a_history_of_changes => "deltalog-getChanges",
    deletion_vectors_in_a_partitioned_table_with_checkpoint => "dv-partitioned-with-checkpoint",
    deletion_vectors_with_column_mapping => "dv-with-columnmapping",
    int96_timestamps => "kernel-timestamp-int96",
    timestamps_written_in_pst => "kernel-timestamp-pst",
    microsecond_timestamps => "kernel-timestamp-timestamp_micros",
    millisecond_timestamps => "kernel-timestamp-timestamp_millis",
    deletion_vector_key_cases => "log-replay-dv-key-cases",
    latest_metadata_and_protocol_win => "log-replay-latest-metadata-protocol",
    special_characters_in_file_paths => "log-replay-special-characters-a",
    special_characters_in_file_paths_after_replay => "log-replay-special-characters",
    multi_part_checkpoint => "multi-part-checkpoint",
    table_of_only_checkpoint_files => "only-checkpoint-files",
    all_parquet_types_in_legacy_layout => "parquet-all-types-legacy-format",
    all_parquet_types => "parquet-all-types",
    dictionary_encoded_decimals_in_v2_pages => "parquet-decimal-dictionaries-v2",
    dictionary_encoded_decimals => "parquet-decimal-dictionaries",
    decimals_of_every_parquet_physical_type => "parquet-decimal-type",
    snapshot_of_first_write => "snapshot-data0",
    snapshot_after_an_append => "snapshot-data1",
    snapshot_after_an_overwrite => "snapshot-data2",
    snapshot_after_a_delete => "snapshot-data2-deleted",
    snapshot_after_more_appends => "snapshot-data3",
    snapshot_after_repartitioning => "snapshot-repartitioned",
    snapshot_after_vacuum => "snapshot-vacuumed",
    column_mapping_by_id => "table-with-columnmapping-mode-id",
    column_mapping_by_name => "table-with-columnmapping-mode-name",
    latest_rows_after_partition_changes_a => "time-travel-partition-changes-a",
    latest_rows_after_partition_changes_b => "time-travel-partition-changes-b",
    columns_added_later_read_as_null_a => "time-travel-schema-changes-a",
    columns_added_later_read_as_null_b => "time-travel-schema-changes-b",
    latest_rows_of_time_travel_table => "time-travel-start",
    latest_rows_after_two_writes => "time-travel-start-start20",
    latest_rows_after_three_writes => "time-travel-start-start20-start40",
    v2_checkpoint_with_json_sidecars => "v2-checkpoint-json",
    v2_checkpoint_with_parquet_sidecars => "v2-checkpoint-parquet",
}
