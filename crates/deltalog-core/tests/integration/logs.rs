//! Hand-made logs: one per checkpoint kind (classic, multi-part, V2 UUID-named JSON and Parquet
//! with sidecars, V2 content under a classic name), log compaction files, the
//! `_last_checkpoint` hint and its failure modes, and every way a log can be refused (spec
//! "Checkpoints", "Last Checkpoint File", "Log Compaction Files", "Action Reconciliation";
//! catalogue A, C, D, G).
//!
//! Each test writes a small log into a temporary folder with [`LogBuilder`], loads it through
//! the public API and checks the version, the exact set of live paths, and for failures the
//! error variant and that the message names the file at fault.

use crate::support::common::*;
use futures::executor::block_on;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use arrow_array::{Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use deltalog_core::actions::layout::string_map;
use deltalog_core::log::last_checkpoint::{write_last_checkpoint, LastCheckpointHint};
use deltalog_core::log::path::{
    classic_checkpoint_file_name, commit_file_name, compaction_file_name,
    multi_part_checkpoint_file_name, uuid_checkpoint_file_name, CheckpointFormat,
};
use deltalog_core::log::segment::LogSegment;
use deltalog_core::{Error, ProtocolKind, Snapshot, SnapshotAt, Table};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Checkpoint kinds
// ---------------------------------------------------------------------------------------------

#[test]
fn classic_checkpoint_is_the_base_of_later_commits() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[remove("a"), add("c")]);
    log.classic_checkpoint(
        2,
        &[protocol(), metadata(), add("b"), add("c"), remove("a")],
    );
    log.commit(3, &[add("d"), remove("b")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 3);
    assert_eq!(live_paths(&snapshot), set(&["c", "d"]));
    assert_eq!(tombstones(&snapshot), set(&["a", "b"]));
    let at_two = log.load(SnapshotAt::Version(2)).unwrap();
    assert_eq!(live_paths(&at_two), set(&["b", "c"]));
    let segment = log.segment(None);
    assert_eq!(checkpoint_version(&segment), Some(2));
    assert_eq!(commit_versions(&segment), vec![3]);
}

#[test]
fn multi_part_checkpoint_reads_every_part() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a"), add("b")]);
    log.commit(1, &[add("c"), add("d"), txn("app", 7)]);
    log.multi_part_checkpoint(
        1,
        &[
            vec![protocol(), add("a")],
            vec![metadata(), add("b"), txn("app", 7)],
            vec![add("c"), add("d")],
        ],
    );
    log.commit(2, &[remove("c")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 2);
    assert_eq!(live_paths(&snapshot), set(&["a", "b", "d"]));
    assert_eq!(snapshot.transaction_version("app"), Some(7));
    let segment = log.segment(None);
    assert_eq!(checkpoint_version(&segment), Some(1));
    assert_eq!(segment.checkpoint.as_ref().unwrap().parts.len(), 3);
}

#[test]
fn multi_part_checkpoint_with_a_missing_part_is_ignored() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    // Parts 1 and 3 of 3: incomplete, and holding a file no commit adds.
    log.write(
        &multi_part_checkpoint_file_name(2, 1, 3),
        &checkpoint_parquet(&[protocol(), metadata(), add("bogus")]),
    );
    log.write(
        &multi_part_checkpoint_file_name(2, 3, 3),
        &checkpoint_parquet(&[add("a")]),
    );

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 2);
    assert_eq!(live_paths(&snapshot), set(&["a", "b", "c"]));
    let segment = log.segment(None);
    assert_eq!(checkpoint_version(&segment), None);
    assert_eq!(commit_versions(&segment), vec![0, 1, 2]);
}

#[test]
fn incomplete_multi_part_checkpoint_falls_back_to_an_older_complete_one() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.classic_checkpoint(1, &[protocol(), metadata(), add("a"), add("b")]);
    log.commit(2, &[add("c")]);
    log.commit(3, &[remove("a")]);
    log.write(
        &multi_part_checkpoint_file_name(3, 2, 2),
        &checkpoint_parquet(&[protocol(), metadata(), add("bogus")]),
    );
    log.delete(&commit_file_name(0));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["b", "c"]));
    assert_eq!(checkpoint_version(&log.segment(None)), Some(1));
}

#[test]
fn v2_json_checkpoint_with_sidecars() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a"), add("b")]);
    log.commit(1, &[add("c"), remove("a"), domain("d", "x")]);
    let first = log.sidecar(&[add("b"), remove("a")]);
    let second = log.sidecar(&[add("c")]);
    let name = log.uuid_json_checkpoint(
        1,
        &[
            checkpoint_metadata(1),
            protocol_v2(),
            metadata(),
            domain("d", "x"),
            first,
            second,
        ],
    );
    log.commit(2, &[add("e")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 2);
    assert_eq!(live_paths(&snapshot), set(&["b", "c", "e"]));
    assert_eq!(tombstones(&snapshot), set(&["a"]));
    assert_eq!(snapshot.domain_metadata("d"), Some("x"));
    assert_eq!(checkpoint_file(&log.segment(None)), name);
}

#[test]
fn v2_parquet_checkpoint_with_sidecars() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[protocol_v2(), metadata(), add("a"), add("b"), add("c")],
    );
    log.commit(1, &[remove("b"), txn("app", 3)]);
    let first = log.sidecar(&[add("a"), remove("b")]);
    let second = log.sidecar(&[add("c")]);
    let name = log.uuid_parquet_checkpoint(
        1,
        &[
            checkpoint_metadata(1),
            protocol_v2(),
            metadata(),
            txn("app", 3),
            first,
            second,
        ],
    );
    log.commit(2, &[add("d"), remove("c")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["a", "d"]));
    assert_eq!(tombstones(&snapshot), set(&["b", "c"]));
    assert_eq!(snapshot.transaction_version("app"), Some(3));
    assert_eq!(checkpoint_file(&log.segment(None)), name);
}

#[test]
fn v2_json_checkpoint_without_sidecars_holds_file_actions_inline() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.uuid_json_checkpoint(
        1,
        &[
            checkpoint_metadata(1),
            protocol_v2(),
            metadata(),
            add("a"),
            add("b"),
        ],
    );
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 1);
    assert_eq!(live_paths(&snapshot), set(&["a", "b"]));
}

#[test]
fn v2_content_in_a_classic_named_checkpoint() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a"), add("b")]);
    log.commit(1, &[remove("a")]);
    let sidecar = log.sidecar(&[add("b"), remove("a")]);
    log.classic_checkpoint(
        1,
        &[checkpoint_metadata(1), protocol_v2(), metadata(), sidecar],
    );
    log.commit(2, &[add("c")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["b", "c"]));
    assert_eq!(tombstones(&snapshot), set(&["a"]));
}

#[test]
fn sidecar_named_by_an_absolute_uri_in_the_table_is_read() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    let mut sidecar = log.sidecar(&[add("a")]);
    let name = sidecar["sidecar"]["path"].as_str().unwrap().to_string();
    sidecar["sidecar"]["path"] = json!(format!("{}_delta_log/_sidecars/{name}", log.root_url()));
    log.uuid_json_checkpoint(
        0,
        &[checkpoint_metadata(0), protocol_v2(), metadata(), sidecar],
    );
    log.delete(&commit_file_name(0));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["a"]));
}

#[test]
fn uuid_checkpoint_is_preferred_over_a_classic_one_of_the_same_version() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    log.classic_checkpoint(0, &[protocol_v2(), metadata(), add("a")]);
    let name = log.uuid_json_checkpoint(
        0,
        &[checkpoint_metadata(0), protocol_v2(), metadata(), add("a")],
    );
    assert_eq!(checkpoint_file(&log.segment(None)), name);
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["a"])
    );
}

#[test]
fn newest_complete_checkpoint_at_or_below_the_target_is_used() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.classic_checkpoint(1, &[protocol(), metadata(), add("a"), add("b")]);
    log.commit(2, &[add("c")]);
    log.commit(3, &[add("d")]);
    log.classic_checkpoint(
        3,
        &[
            protocol(),
            metadata(),
            add("a"),
            add("b"),
            add("c"),
            add("d"),
        ],
    );
    log.commit(4, &[remove("a")]);
    // Commit 2 is unreadable: only a replay that starts below checkpoint 3 reads it.
    log.write(&commit_file_name(2), b"not json at all\n");

    let latest = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(latest.version(), 4);
    assert_eq!(live_paths(&latest), set(&["b", "c", "d"]));
    assert_eq!(checkpoint_version(&log.segment(None)), Some(3));
    assert_eq!(checkpoint_version(&log.segment(Some(2))), Some(1));
    let error = log.load(SnapshotAt::Version(2)).unwrap_err();
    assert_corrupt_names(&error, &commit_file_name(2));
}

#[test]
fn compaction_file_replaces_the_commits_it_covers() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b"), txn("app", 1)]);
    log.commit(2, &[add("c"), remove("a")]);
    log.commit(3, &[remove("c"), txn("app", 2)]);
    log.commit(4, &[add("d")]);
    // Reconciled 1..=3: b live; a and c (added and removed inside the range) are tombstones.
    log.compaction(1, 3, &[add("b"), remove("a"), remove("c"), txn("app", 2)]);
    // Commit 2 is unreadable: only a replay that does not use the compaction reads it.
    log.write(&commit_file_name(2), b"{\"add\":{\"path\":\"c\",\"si");

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 4);
    assert_eq!(live_paths(&snapshot), set(&["b", "d"]));
    assert_eq!(tombstones(&snapshot), set(&["a", "c"]));
    assert_eq!(snapshot.transaction_version("app"), Some(2));
    let segment = log.segment(None);
    assert_eq!(commit_versions(&segment), vec![0, 4]);
    assert_eq!(segment.compactions.len(), 1);
    let at_three = log.load(SnapshotAt::Version(3)).unwrap();
    assert_eq!(live_paths(&at_three), set(&["b"]));
}

#[test]
fn compaction_file_reaching_past_the_target_is_not_used() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.commit(3, &[add("d")]);
    log.compaction(1, 3, &[add("b"), add("c"), add("d")]);

    let at_two = log.load(SnapshotAt::Version(2)).unwrap();
    assert_eq!(live_paths(&at_two), set(&["a", "b", "c"]));
    let segment = log.segment(Some(2));
    assert!(segment.compactions.is_empty());
    assert_eq!(commit_versions(&segment), vec![0, 1, 2]);
}

#[test]
fn compaction_file_after_a_checkpoint_is_combined_with_it() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.classic_checkpoint(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[remove("a"), add("c")]);
    log.compaction(1, 2, &[add("b"), add("c"), remove("a")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));
    log.delete(&commit_file_name(2));
    log.commit(3, &[add("d")]);

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["b", "c", "d"]));
}

#[test]
fn corrupt_compaction_file_is_named() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.write(
        &compaction_file_name(1, 2),
        b"{\"add\":{\"path\":\"b\"}}\n{oops\n",
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &compaction_file_name(1, 2));
}

#[test]
fn multi_part_checkpoint_sets_with_different_part_counts() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a"), add("b")]);
    // A complete two-part checkpoint, and an incomplete three-part one of the same version.
    log.multi_part_checkpoint(0, &[vec![protocol(), metadata(), add("a")], vec![add("b")]]);
    log.write(
        &multi_part_checkpoint_file_name(0, 1, 3),
        &checkpoint_parquet(&[protocol(), metadata(), add("bogus")]),
    );
    log.write(
        &multi_part_checkpoint_file_name(0, 2, 3),
        &checkpoint_parquet(&[add("bogus2")]),
    );
    log.delete(&commit_file_name(0));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["a", "b"]));
    assert_eq!(log.segment(None).checkpoint.unwrap().parts.len(), 2);
}

#[test]
fn corrupt_part_of_a_multi_part_checkpoint_is_named() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a"), add("b")]);
    log.multi_part_checkpoint(0, &[vec![protocol(), metadata(), add("a")], vec![add("b")]]);
    let name = multi_part_checkpoint_file_name(0, 2, 2);
    log.write(&name, b"garbage");

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &name);
}

#[test]
fn checkpoint_with_only_the_required_columns_reads() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a"), add("b")]);
    log.commit(1, &[remove("b")]);
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    let long = |name: &str| Field::new(name, DataType::Int64, true);
    let int = |name: &str| Field::new(name, DataType::Int32, true);
    let schema = Arc::new(Schema::new(vec![
        struct_field(
            "add",
            vec![
                text("path"),
                Field::new("partitionValues", string_map(), true),
                long("size"),
                long("modificationTime"),
                Field::new("dataChange", DataType::Boolean, true),
            ],
        ),
        struct_field(
            "remove",
            vec![
                text("path"),
                long("deletionTimestamp"),
                Field::new("dataChange", DataType::Boolean, true),
            ],
        ),
        struct_field(
            "metaData",
            vec![
                text("id"),
                struct_field("format", vec![text("provider")]),
                text("schemaString"),
                Field::new("partitionColumns", string_list(), true),
                Field::new("configuration", string_map(), true),
            ],
        ),
        struct_field(
            "protocol",
            vec![int("minReaderVersion"), int("minWriterVersion")],
        ),
    ]));
    let actions = [protocol(), metadata(), add("a"), remove("b")];
    log.write(
        &classic_checkpoint_file_name(1),
        &parquet_file(schema, &actions),
    );
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["a"]));
    assert_eq!(tombstones(&snapshot), set(&["b"]));
}

#[test]
fn typed_partition_values_of_a_checkpoint_are_taken_as_written() {
    let log = LogBuilder::new();
    let schema_string = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"integer","nullable":true,"metadata":{}}]}"#;
    let metadata = json!({"metaData": {"id": "7b4a6b0e-0000-4000-8000-000000000002",
        "format": {"provider": "parquet", "options": {}}, "schemaString": schema_string,
        "partitionColumns": ["p"], "createdTime": 1, "configuration": {}}});
    let add = json!({"add": {"path": "p=7/a", "partitionValues": {"p": "7"}, "size": 1,
        "modificationTime": 1, "dataChange": true, "partitionValues_parsed": {"p": 8}}});
    log.commit(0, &[protocol(), metadata.clone(), add.clone()]);
    let mut fields = checkpoint_schema(false).fields().to_vec();
    let add_at = fields.iter().position(|f| f.name() == "add").unwrap();
    let DataType::Struct(add_fields) = fields[add_at].data_type().clone() else {
        panic!("add is not a struct");
    };
    let mut add_fields: Vec<Field> = add_fields.iter().map(|f| f.as_ref().clone()).collect();
    add_fields.push(struct_field(
        "partitionValues_parsed",
        vec![Field::new("p", DataType::Int32, true)],
    ));
    fields[add_at] = Arc::new(struct_field("add", add_fields));
    let schema = Arc::new(Schema::new(fields));
    log.write(
        &classic_checkpoint_file_name(0),
        &parquet_file(schema, &[protocol(), metadata, add]),
    );

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    let batch = files_batch(&snapshot);
    let partitions =
        arrow::array::AsArray::as_struct(batch.column_by_name("partition_values").unwrap());
    let p = partitions.column_by_name("p").unwrap();
    let p = p
        .as_any()
        .downcast_ref::<arrow::array::Int32Array>()
        .unwrap();
    assert_eq!(
        p.value(0),
        8,
        "the checkpoint's partitionValues_parsed is used"
    );
}

#[test]
fn checkpoint_without_a_remove_column_reads() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    let full = checkpoint_schema(false);
    let fields: Vec<Field> = full
        .fields()
        .iter()
        .filter(|field| field.name() != "remove")
        .map(|field| field.as_ref().clone())
        .collect();
    let actions = [protocol(), metadata(), add("a")];
    log.write(
        &classic_checkpoint_file_name(0),
        &parquet_file(Arc::new(Schema::new(fields)), &actions),
    );
    log.delete(&commit_file_name(0));
    log.commit(1, &[add("b")]);
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["a", "b"])
    );
}

#[test]
fn sidecar_with_an_escaped_name_and_no_size() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    let sidecar = log.sidecar(&[add("a")]);
    let name = sidecar["sidecar"]["path"].as_str().unwrap().to_string();
    let sidecars = log.log_dir().join("_sidecars");
    std::fs::rename(sidecars.join(&name), sidecars.join(format!("x y {name}"))).unwrap();
    let sidecar = json!({"sidecar": {"path": format!("x%20y%20{name}"), "sizeInBytes": 0,
        "modificationTime": 0}});
    log.uuid_json_checkpoint(
        0,
        &[checkpoint_metadata(0), protocol_v2(), metadata(), sidecar],
    );
    log.delete(&commit_file_name(0));

    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["a"])
    );
}

// ---------------------------------------------------------------------------------------------
// The `_last_checkpoint` hint
// ---------------------------------------------------------------------------------------------

/// Commits 0..=6 with checkpoints at 2 and 4, commits 0..=3 cleaned up: only checkpoint 4 and
/// the commits after it can be read.
fn log_with_checkpoints_at_two_and_four() -> LogBuilder {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.classic_checkpoint(2, &[protocol(), metadata(), add("a"), add("b"), add("c")]);
    log.commit(3, &[remove("a")]);
    log.commit(4, &[add("d")]);
    log.classic_checkpoint(
        4,
        &[
            protocol(),
            metadata(),
            add("b"),
            add("c"),
            add("d"),
            remove("a"),
        ],
    );
    log.commit(5, &[add("e")]);
    log.commit(6, &[remove("b")]);
    for version in 0..=3 {
        log.delete(&commit_file_name(version));
    }
    log
}

fn assert_loads_version_six_from_checkpoint_four(log: &LogBuilder) {
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 6);
    assert_eq!(live_paths(&snapshot), set(&["c", "d", "e"]));
    let segment = log.segment(None);
    assert_eq!(checkpoint_version(&segment), Some(4));
    assert_eq!(commit_versions(&segment), vec![5, 6]);
    assert_eq!(runtime().block_on(log.table().latest_version()).unwrap(), 6);
}

#[test]
fn valid_hint_with_a_checksum_is_followed() {
    let log = log_with_checkpoints_at_two_and_four();
    log.last_checkpoint(&hint(4));
    let text = std::fs::read_to_string(log.log_dir().join("_last_checkpoint")).unwrap();
    assert!(text.contains("\"checksum\""), "{text}");
    assert_loads_version_six_from_checkpoint_four(&log);
}

#[test]
fn missing_hint_falls_back_to_listing() {
    let log = log_with_checkpoints_at_two_and_four();
    assert_loads_version_six_from_checkpoint_four(&log);
}

#[test]
fn stale_hint_behind_a_newer_checkpoint_is_overtaken() {
    let log = log_with_checkpoints_at_two_and_four();
    log.last_checkpoint(&hint(2));
    assert_loads_version_six_from_checkpoint_four(&log);
}

#[test]
fn hint_beyond_the_latest_version_falls_back_to_listing() {
    let log = log_with_checkpoints_at_two_and_four();
    log.last_checkpoint(&hint(40));
    assert_loads_version_six_from_checkpoint_four(&log);
}

#[test]
fn hint_pointing_at_a_missing_checkpoint_falls_back_to_listing() {
    let log = log_with_checkpoints_at_two_and_four();
    log.last_checkpoint(&hint(5));
    assert_loads_version_six_from_checkpoint_four(&log);
}

#[test]
fn hint_pointing_at_an_incomplete_multi_part_checkpoint_falls_back_to_listing() {
    let log = log_with_checkpoints_at_two_and_four();
    log.write(
        &multi_part_checkpoint_file_name(5, 1, 2),
        &checkpoint_parquet(&[protocol(), metadata(), add("bogus")]),
    );
    log.last_checkpoint(&LastCheckpointHint {
        parts: Some(2),
        ..hint(5)
    });
    assert_loads_version_six_from_checkpoint_four(&log);
}

#[test]
fn corrupt_hints_fall_back_to_listing() {
    let valid = String::from_utf8(write_last_checkpoint(&hint(4)).unwrap()).unwrap();
    let tampered = valid.replace("\"version\":4", "\"version\":5");
    assert_ne!(tampered, valid);
    let variants: [(&str, String); 7] = [
        ("checksum mismatch", tampered),
        ("truncated", valid[..valid.len() / 2].to_string()),
        ("empty", String::new()),
        ("not an object", "[4]".to_string()),
        (
            "duplicate keys",
            "{\"version\":4,\"version\":5}".to_string(),
        ),
        ("zero parts", "{\"version\":4,\"parts\":0}".to_string()),
        ("negative version", "{\"version\":-4}".to_string()),
    ];
    for (what, text) in variants {
        let log = log_with_checkpoints_at_two_and_four();
        log.write("_last_checkpoint", text.as_bytes());
        let snapshot = log
            .load(SnapshotAt::Latest)
            .unwrap_or_else(|error| panic!("{what}: {error}"));
        assert_eq!(snapshot.version(), 6, "{what}");
        assert_eq!(live_paths(&snapshot), set(&["c", "d", "e"]), "{what}");
        assert_eq!(checkpoint_version(&log.segment(None)), Some(4), "{what}");
    }
}

#[test]
fn hint_does_not_hide_older_versions_from_time_travel() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.classic_checkpoint(2, &[protocol(), metadata(), add("a"), add("b"), add("c")]);
    log.last_checkpoint(&hint(2));
    log.commit(3, &[remove("a")]);

    assert_eq!(
        live_paths(&log.load(SnapshotAt::Version(1)).unwrap()),
        set(&["a", "b"])
    );
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["b", "c"])
    );
}

#[test]
fn latest_version_agrees_with_the_latest_snapshot_under_an_orphan_hint() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    // The hint names version 5, where only one part of two of a checkpoint exists.
    log.write(
        &multi_part_checkpoint_file_name(5, 1, 2),
        &checkpoint_parquet(&[protocol(), metadata(), add("bogus")]),
    );
    log.last_checkpoint(&LastCheckpointHint {
        parts: Some(2),
        ..hint(5)
    });
    assert_eq!(log.load(SnapshotAt::Latest).unwrap().version(), 1);
    let runtime = runtime();
    let table = log.table();
    assert_eq!(runtime.block_on(table.latest_version()).unwrap(), 1);
    assert_eq!(runtime.block_on(table.commits(0, None)).unwrap().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Refused logs
// ---------------------------------------------------------------------------------------------

#[test]
fn gap_in_versions_is_refused_naming_the_missing_commit() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(3, &[add("d")]);

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(matches!(error, Error::NonContiguousLog { .. }), "{error:?}");
    assert!(error.to_string().contains("commit 2 is missing"), "{error}");
    let before_the_gap = log.load(SnapshotAt::Version(1)).unwrap();
    assert_eq!(live_paths(&before_the_gap), set(&["a", "b"]));
}

#[test]
fn gap_after_a_checkpoint_is_refused() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.classic_checkpoint(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(3, &[add("d")]);
    log.last_checkpoint(&hint(0));

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(matches!(error, Error::NonContiguousLog { .. }), "{error:?}");
    assert!(error.to_string().contains("commit 2 is missing"), "{error}");
}

#[test]
fn history_cleaned_up_without_a_checkpoint_is_refused() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.delete(&commit_file_name(0));

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(matches!(error, Error::NonContiguousLog { .. }), "{error:?}");
}

#[test]
fn folder_without_a_log_is_not_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let result = runtime().block_on(Table::open(dir.path().to_str().unwrap(), &HashMap::new()));
    assert!(
        matches!(result, Err(Error::TableNotFound { .. })),
        "{result:?}"
    );
}

#[test]
fn truncated_json_commit_is_refused_naming_the_file() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.write(
        &commit_file_name(2),
        b"{\"commitInfo\":{}}\n{\"add\":{\"path\":\"c\",\"size\":1,\"modificationTi",
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &commit_file_name(2));
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Version(1)).unwrap()),
        set(&["a", "b"])
    );
}

#[test]
fn garbage_line_in_a_commit_is_refused_naming_the_file_and_line() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.write(
        &commit_file_name(1),
        b"{\"add\":{\"path\":\"b\",\"size\":1,\"modificationTime\":1,\"dataChange\":true}}\nhello\n",
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &commit_file_name(1));
    assert!(error.to_string().contains("line 2"), "{error}");
}

#[test]
fn malformed_non_file_action_is_refused_naming_the_file() {
    for bad in [
        "{\"protocol\":{\"minReaderVersion\":\"one\"}}",
        "{\"txn\":{\"appId\":\"x\"}}",
        "{\"metaData\":[]}",
        "{\"domainMetadata\":{\"domain\":\"d\"}}",
    ] {
        let log = LogBuilder::new();
        log.commit(0, &[protocol(), metadata(), add("a")]);
        log.write(&commit_file_name(1), format!("{bad}\n").as_bytes());
        let error = log.load(SnapshotAt::Latest).unwrap_err();
        assert_corrupt_names(&error, &commit_file_name(1));
    }
}

#[test]
fn truncated_parquet_checkpoint_is_refused_naming_the_file() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    let bytes = checkpoint_parquet(&[protocol(), metadata(), add("a"), add("b")]);
    log.write(&classic_checkpoint_file_name(1), &bytes[..bytes.len() / 2]);

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &classic_checkpoint_file_name(1));
}

#[test]
fn checkpoint_that_is_not_parquet_is_refused_naming_the_file() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.write(
        &classic_checkpoint_file_name(0),
        b"PAR1 but not really a parquet file",
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &classic_checkpoint_file_name(0));
}

#[test]
fn corrupt_v2_json_checkpoint_is_refused_naming_the_file() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    let name = uuid_checkpoint_file_name(0, &uuid(), CheckpointFormat::Json);
    log.write(
        &name,
        b"{\"checkpointMetadata\":{\"version\":0}}\n{\"protocol\":{\"minRea",
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &name);
}

#[test]
fn corrupt_sidecar_is_refused_naming_the_file() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    let sidecar = log.sidecar(&[add("a")]);
    let name = sidecar["sidecar"]["path"].as_str().unwrap().to_string();
    let path = log.log_dir().join("_sidecars").join(&name);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
    let sidecar = json!({"sidecar": {"path": name, "sizeInBytes": bytes.len() - 9,
        "modificationTime": 0}});
    log.uuid_json_checkpoint(
        0,
        &[checkpoint_metadata(0), protocol_v2(), metadata(), sidecar],
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert_corrupt_names(&error, &name);
}

#[test]
fn missing_sidecar_is_refused_naming_the_file() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    let sidecar = log.sidecar(&[add("a")]);
    let name = sidecar["sidecar"]["path"].as_str().unwrap().to_string();
    std::fs::remove_file(log.log_dir().join("_sidecars").join(&name)).unwrap();
    log.uuid_json_checkpoint(
        0,
        &[checkpoint_metadata(0), protocol_v2(), metadata(), sidecar],
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(error.to_string().contains(&name), "{error}");
}

#[test]
fn sidecar_path_leaving_the_log_is_refused() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_v2(), metadata(), add("a")]);
    let mut sidecar = log.sidecar(&[add("a")]);
    let name = sidecar["sidecar"]["path"].as_str().unwrap().to_string();
    std::fs::copy(
        log.log_dir().join("_sidecars").join(&name),
        log.root().join("outside.parquet"),
    )
    .unwrap();
    sidecar["sidecar"]["path"] = json!("../../outside.parquet");
    log.uuid_json_checkpoint(
        0,
        &[checkpoint_metadata(0), protocol_v2(), metadata(), sidecar],
    );

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(matches!(error, Error::InvalidPath { .. }), "{error:?}");
    assert!(
        error.to_string().contains("../../outside.parquet"),
        "{error}"
    );
}

#[test]
fn unknown_reader_feature_is_refused_naming_it() {
    let log = LogBuilder::new();
    let future = json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors", "flyingCars"],
        "writerFeatures": ["deletionVectors", "flyingCars"]}});
    log.commit(0, &[future, metadata(), add("a")]);

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    match &error {
        Error::UnsupportedFeature { kind, feature, .. } => {
            assert_eq!(*kind, ProtocolKind::Reader);
            assert_eq!(feature, "flyingCars");
        }
        other => panic!("expected UnsupportedFeature, got {other:?}"),
    }
    assert!(error.to_string().contains("flyingCars"), "{error}");
}

#[test]
fn unknown_writer_feature_does_not_stop_readers() {
    let log = LogBuilder::new();
    let protocol = json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
        "writerFeatures": ["flyingCars"]}});
    log.commit(0, &[protocol, metadata(), add("a")]);
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["a"])
    );
}

#[test]
fn protocol_upgrade_to_an_unknown_feature_refuses_only_later_versions() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    let future = json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["flyingCars"], "writerFeatures": ["flyingCars"]}});
    log.commit(1, &[future]);

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(
        matches!(&error, Error::UnsupportedFeature { feature, .. } if feature == "flyingCars"),
        "{error:?}"
    );
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Version(0)).unwrap()),
        set(&["a"])
    );
}

#[test]
fn reader_version_four_is_refused() {
    let log = LogBuilder::new();
    let protocol = json!({"protocol": {"minReaderVersion": 4, "minWriterVersion": 7,
        "readerFeatures": [], "writerFeatures": []}});
    log.commit(0, &[protocol, metadata(), add("a")]);

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(
        matches!(
            error,
            Error::UnsupportedProtocolVersion {
                kind: ProtocolKind::Reader,
                version: 4,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn protocol_in_a_checkpoint_is_checked_too() {
    let log = LogBuilder::new();
    let future = json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["flyingCars"], "writerFeatures": ["flyingCars"]}});
    log.commit(0, &[future.clone(), metadata(), add("a")]);
    log.classic_checkpoint(0, &[future, metadata(), add("a")]);
    log.delete(&commit_file_name(0));

    let error = log.load(SnapshotAt::Latest).unwrap_err();
    assert!(
        matches!(error, Error::UnsupportedFeature { .. }),
        "{error:?}"
    );
}

#[test]
fn relative_add_path_leaving_the_table_is_refused() {
    for path in [
        "../outside.parquet",
        "x/../../outside.parquet",
        "x/%2E%2E/%2E%2E/outside.parquet",
    ] {
        let log = LogBuilder::new();
        log.commit(0, &[protocol(), metadata(), add("a"), add(path)]);
        let result = log.load(SnapshotAt::Latest).and_then(|snapshot| {
            runtime().block_on(snapshot.files(false))?;
            Ok(snapshot)
        });
        match result {
            Err(Error::InvalidPath { path: named, .. }) => assert_eq!(named, path),
            Err(other) => panic!("{path}: expected InvalidPath, got {other:?}"),
            Ok(snapshot) => panic!("{path}: accepted, live {:?}", live_paths(&snapshot)),
        }
    }
}

#[test]
fn version_beyond_the_latest_is_not_found() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);

    let error = log.load(SnapshotAt::Version(5)).unwrap_err();
    assert!(
        matches!(error, Error::VersionNotFound { version: 5, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("latest version is 1"), "{error}");
}

#[test]
fn cleaned_up_version_is_not_found() {
    let log = log_with_checkpoints_at_two_and_four();
    for version in [0, 1] {
        let error = log.load(SnapshotAt::Version(version)).unwrap_err();
        assert!(
            matches!(error, Error::VersionNotFound { version: v, .. } if v == version),
            "{version}: {error:?}"
        );
    }
    // Version 2 has a checkpoint, so it can still be read even though its commit is gone.
    let at_two = log.load(SnapshotAt::Version(2)).unwrap();
    assert_eq!(live_paths(&at_two), set(&["a", "b", "c"]));
    let at_four = log.load(SnapshotAt::Version(4)).unwrap();
    assert_eq!(live_paths(&at_four), set(&["b", "c", "d"]));
}

#[test]
fn version_between_two_checkpoints_whose_commit_was_cleaned_up_is_not_found() {
    let log = log_with_checkpoints_at_two_and_four();
    let error = log.load(SnapshotAt::Version(3)).unwrap_err();
    assert!(
        matches!(error, Error::VersionNotFound { version: 3, .. }),
        "{error:?}"
    );
}

#[test]
fn commits_of_a_cleaned_up_range_are_not_found() {
    let log = log_with_checkpoints_at_two_and_four();
    let table = log.table();
    let runtime = runtime();
    let error = runtime.block_on(table.commits(1, Some(5))).unwrap_err();
    assert!(
        matches!(error, Error::VersionNotFound { version: 1, .. }),
        "{error:?}"
    );
    let batches = runtime.block_on(table.commits(4, None)).unwrap();
    assert_eq!(batches.len(), 3);
    let error = runtime.block_on(table.commits(5, Some(9))).unwrap_err();
    assert!(matches!(error, Error::VersionNotFound { .. }), "{error:?}");
}

#[test]
fn files_that_are_not_log_entries_are_ignored() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    std::fs::create_dir_all(log.log_dir().join("_commits")).unwrap();
    let garbage: &[u8] = b"garbage that is no log entry";
    for name in [
        "00000000000000000002.json.tmp",
        ".00000000000000000002.json.crc",
        "2.json",
        "00000000000000000002.checkpoint.parquet.tmp",
        "_commits/00000000000000000002.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
        "00000000000000000002.JSON",
        "README",
    ] {
        log.write(name, garbage);
    }
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 1);
    assert_eq!(live_paths(&snapshot), set(&["a", "b"]));
}

#[test]
fn unreadable_version_checksum_file_does_not_stop_readers() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.write("00000000000000000000.crc", b"{not json");
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["a"])
    );
}

#[test]
fn commit_with_crlf_line_ends_and_blank_lines_reads() {
    let log = LogBuilder::new();
    let mut text = Vec::new();
    for action in [protocol(), metadata(), add("a"), add("b")] {
        serde_json::to_writer(&mut text, &action).unwrap();
        text.extend_from_slice(b"\r\n\r\n");
    }
    log.write(&commit_file_name(0), &text);
    assert_eq!(
        live_paths(&log.load(SnapshotAt::Latest).unwrap()),
        set(&["a", "b"])
    );
}

// ---------------------------------------------------------------------------------------------
// Time travel by timestamp
// ---------------------------------------------------------------------------------------------

#[test]
fn timestamp_travel_uses_in_commit_timestamps() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[
            commit_info(Some(1_000)),
            protocol_ict(),
            metadata_ict(),
            add("a"),
        ],
    );
    log.commit(1, &[commit_info(Some(2_000)), add("b")]);
    log.commit(2, &[commit_info(Some(3_000)), add("c")]);
    // File times disagree with the in-commit timestamps; the latter count.
    for version in 0..=2 {
        log.set_modified(&commit_file_name(version), 10_000_000 - version as i64);
    }

    let cases = [
        (1_000, 0),
        (1_999, 0),
        (2_000, 1),
        (2_999, 1),
        (3_000, 2),
        (i64::MAX, 2),
    ];
    for (timestamp, version) in cases {
        let snapshot = log.load(SnapshotAt::Timestamp(timestamp)).unwrap();
        assert_eq!(snapshot.version(), version, "at {timestamp}");
    }
    assert_eq!(
        log.load(SnapshotAt::Version(1)).unwrap().timestamp_ms(),
        2_000
    );
    let error = log.load(SnapshotAt::Timestamp(999)).unwrap_err();
    assert!(
        matches!(
            error,
            Error::TimestampNotFound {
                timestamp_ms: 999,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn timestamp_travel_uses_file_times_without_in_commit_timestamps() {
    let log = LogBuilder::new();
    log.commit(0, &[commit_info(None), protocol(), metadata(), add("a")]);
    log.commit(1, &[commit_info(None), add("b")]);
    log.commit(2, &[commit_info(None), add("c")]);
    log.set_modified(&commit_file_name(0), 100_000);
    log.set_modified(&commit_file_name(1), 200_000);
    log.set_modified(&commit_file_name(2), 300_000);

    assert_eq!(
        log.load(SnapshotAt::Timestamp(150_000)).unwrap().version(),
        0
    );
    assert_eq!(
        log.load(SnapshotAt::Timestamp(200_000)).unwrap().version(),
        1
    );
    assert_eq!(
        log.load(SnapshotAt::Timestamp(900_000)).unwrap().version(),
        2
    );
    assert_eq!(
        log.load(SnapshotAt::Version(1)).unwrap().timestamp_ms(),
        200_000
    );
    let error = log.load(SnapshotAt::Timestamp(99_999)).unwrap_err();
    assert!(
        matches!(error, Error::TimestampNotFound { .. }),
        "{error:?}"
    );
}

#[test]
fn file_times_that_go_backwards_give_monotonic_timestamps_everywhere() {
    let log = LogBuilder::new();
    log.commit(0, &[commit_info(None), protocol(), metadata(), add("a")]);
    log.commit(1, &[commit_info(None), add("b")]);
    log.commit(2, &[commit_info(None), add("c")]);
    log.commit(3, &[commit_info(None), add("d")]);
    for (version, ms) in [(0, 100_000), (1, 90_000), (2, 100_000), (3, 300_000)] {
        log.set_modified(&commit_file_name(version), ms);
    }

    let history = history_timestamps(&log);
    assert_eq!(
        history,
        [(3, 300_000), (2, 100_002), (1, 100_001), (0, 100_000)]
    );
    for (version, timestamp) in history {
        let at_time = log.load(SnapshotAt::Timestamp(timestamp)).unwrap();
        assert_eq!(at_time.version(), version, "at {timestamp}");
        let at_version = log.load(SnapshotAt::Version(version)).unwrap();
        assert_eq!(at_version.timestamp_ms(), timestamp, "version {version}");
    }
    assert_eq!(
        log.load(SnapshotAt::Timestamp(100_001)).unwrap().version(),
        1
    );
}

#[test]
fn history_and_time_travel_use_in_commit_timestamps() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[
            commit_info(Some(1_000)),
            protocol_ict(),
            metadata_ict(),
            add("a"),
        ],
    );
    log.commit(1, &[commit_info(Some(2_000)), add("b")]);
    log.commit(2, &[commit_info(Some(3_000)), add("c")]);
    for version in 0..=2 {
        log.set_modified(&commit_file_name(version), 10_000_000 - version as i64);
    }

    let history = history_timestamps(&log);
    assert_eq!(history, [(2, 3_000), (1, 2_000), (0, 1_000)]);
    for (version, timestamp) in history {
        let at_time = log.load(SnapshotAt::Timestamp(timestamp)).unwrap();
        assert_eq!(at_time.version(), version, "at {timestamp}");
        let at_version = log.load(SnapshotAt::Version(version)).unwrap();
        assert_eq!(at_version.timestamp_ms(), timestamp, "version {version}");
    }
}

/// `(version, timestamp)` of every row of the history, newest first.
fn history_timestamps(log: &LogBuilder) -> Vec<(u64, i64)> {
    let batch = runtime().block_on(log.table().history(None)).unwrap();
    let versions = batch
        .column_by_name("version")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>()
        .unwrap();
    let timestamps = batch
        .column_by_name("timestamp")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::TimestampMillisecondArray>()
        .unwrap();
    (0..batch.num_rows())
        .map(|row| (versions.value(row) as u64, timestamps.value(row)))
        .collect()
}

#[test]
fn timestamp_before_the_oldest_kept_commit_is_not_found() {
    let log = log_with_checkpoints_at_two_and_four();
    for version in 4..=6 {
        log.set_modified(&commit_file_name(version), 1_000 * version as i64);
    }
    let error = log.load(SnapshotAt::Timestamp(3_999)).unwrap_err();
    assert!(
        matches!(error, Error::TimestampNotFound { .. }),
        "{error:?}"
    );
    assert_eq!(log.load(SnapshotAt::Timestamp(4_500)).unwrap().version(), 4);
    assert_eq!(log.load(SnapshotAt::Timestamp(6_000)).unwrap().version(), 6);
}

#[test]
fn equal_timestamps_travel_to_the_newest_of_them() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[
            commit_info(Some(1_000)),
            protocol_ict(),
            metadata_ict(),
            add("a"),
        ],
    );
    log.commit(1, &[commit_info(Some(2_000)), add("b")]);
    log.commit(2, &[commit_info(Some(2_000)), add("c")]);
    log.commit(3, &[commit_info(Some(3_000)), add("d")]);
    assert_eq!(log.load(SnapshotAt::Timestamp(2_000)).unwrap().version(), 2);
    assert_eq!(log.load(SnapshotAt::Timestamp(2_500)).unwrap().version(), 2);
}

#[test]
fn file_times_that_go_backwards_are_made_monotonic() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.set_modified(&commit_file_name(0), 100_000);
    log.set_modified(&commit_file_name(1), 50_000);
    log.set_modified(&commit_file_name(2), 300_000);
    // Version 1 counts as committed at 100_001, just after version 0.
    assert_eq!(
        log.load(SnapshotAt::Timestamp(100_000)).unwrap().version(),
        0
    );
    assert_eq!(
        log.load(SnapshotAt::Timestamp(100_001)).unwrap().version(),
        1
    );
    assert_eq!(
        log.load(SnapshotAt::Timestamp(299_999)).unwrap().version(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Snapshot::refresh
// ---------------------------------------------------------------------------------------------

#[test]
fn refresh_equals_a_fresh_load() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[
            protocol_dv(),
            metadata(),
            add("a"),
            add_dv("b", "dv1"),
            txn("app", 4),
        ],
    );
    log.commit(1, &[add("c"), domain("d1", "one"), domain("d2", "two")]);
    let runtime = runtime();
    let table = log.table();
    let before = runtime
        .block_on(table.snapshot(SnapshotAt::Latest))
        .unwrap();

    log.commit(2, &[remove("a"), remove_dv("b", "dv1"), add_dv("b", "dv2")]);
    log.commit(3, &[txn("app", 2), domain_removed("d1"), add("e")]);
    log.commit(4, &[metadata_with(&[("k", "v")]), remove("e")]);
    let refreshed = runtime.block_on(before.refresh()).unwrap();
    let fresh = log.load(SnapshotAt::Latest).unwrap();

    assert_eq!(refreshed.version(), 4);
    assert_same_state(&refreshed, &fresh);
    assert_eq!(
        live_keys(&refreshed),
        keys(&[("b", Some("idv2")), ("c", None)])
    );
    assert_eq!(refreshed.transaction_version("app"), Some(2));
    assert_eq!(refreshed.domain_metadata("d1"), None);
    assert_eq!(refreshed.domain_metadata("d2"), Some("two"));
    assert_eq!(
        refreshed
            .metadata()
            .configuration
            .get("k")
            .map(String::as_str),
        Some("v")
    );
}

#[test]
fn refresh_reads_only_the_new_commits() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    // An old commit becomes unreadable: a full load fails, a refresh does not read it.
    log.write(&commit_file_name(0), b"garbage\n");
    log.commit(2, &[remove("a"), add("c")]);

    let refreshed = runtime.block_on(before.refresh()).unwrap();
    assert_eq!(refreshed.version(), 2);
    assert_eq!(live_paths(&refreshed), set(&["b", "c"]));
    assert!(log.load(SnapshotAt::Latest).is_err());
}

#[test]
fn refresh_without_new_commits_keeps_the_snapshot() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    let refreshed = runtime.block_on(before.refresh()).unwrap();
    assert_eq!(refreshed.version(), 0);
    assert_same_state(&before, &refreshed);
}

#[test]
fn refresh_of_an_old_version_reaches_the_latest() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    log.commit(2, &[remove("a")]);
    let runtime = runtime();
    let old = runtime
        .block_on(log.table().snapshot(SnapshotAt::Version(0)))
        .unwrap();
    let refreshed = runtime.block_on(old.refresh()).unwrap();
    assert_eq!(refreshed.version(), 2);
    assert_same_state(&refreshed, &log.load(SnapshotAt::Latest).unwrap());
}

#[test]
fn refresh_over_a_cleanup_falls_back_to_a_full_load() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    log.commit(1, &[add("b")]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    log.commit(2, &[add("c")]);
    log.commit(3, &[remove("b")]);
    log.classic_checkpoint(
        3,
        &[protocol(), metadata(), add("a"), add("c"), remove("b")],
    );
    log.commit(4, &[add("d")]);
    for version in 0..=3 {
        log.delete(&commit_file_name(version));
    }

    let refreshed = runtime.block_on(before.refresh()).unwrap();
    assert_eq!(refreshed.version(), 4);
    assert_eq!(live_paths(&refreshed), set(&["a", "c", "d"]));
    assert_same_state(&refreshed, &log.load(SnapshotAt::Latest).unwrap());
}

#[test]
fn refresh_over_a_gap_is_refused() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    log.commit(1, &[add("b")]);
    log.commit(3, &[add("d")]);
    let error = runtime.block_on(before.refresh()).unwrap_err();
    assert!(matches!(error, Error::NonContiguousLog { .. }), "{error:?}");
}

#[test]
fn refresh_to_an_unreadable_protocol_is_refused() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    let future = json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["flyingCars"], "writerFeatures": ["flyingCars"]}});
    log.commit(1, &[future]);
    let error = runtime.block_on(before.refresh()).unwrap_err();
    assert!(
        matches!(error, Error::UnsupportedFeature { .. }),
        "{error:?}"
    );
}

#[test]
fn refresh_keeps_the_commit_time_of_the_newest_commit() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[
            commit_info(Some(100)),
            protocol_ict(),
            metadata_ict(),
            add("a"),
        ],
    );
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    log.commit(1, &[commit_info(Some(123_456)), add("b")]);
    let refreshed = runtime.block_on(before.refresh()).unwrap();
    assert_eq!(before.timestamp_ms(), 100);
    assert_eq!(refreshed.timestamp_ms(), 123_456);
    assert!(refreshed.commit_info().is_some());
    assert_same_state(&refreshed, &log.load(SnapshotAt::Latest).unwrap());
}

#[test]
fn refresh_reaches_a_newest_version_known_only_by_its_checkpoint() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a")]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    log.commit(1, &[add("b")]);
    log.commit(2, &[add("c")]);
    log.classic_checkpoint(2, &[protocol(), metadata(), add("a"), add("b"), add("c")]);
    for version in 0..=2 {
        log.delete(&commit_file_name(version));
    }
    let fresh = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(fresh.version(), 2);
    let refreshed = runtime.block_on(before.refresh()).unwrap();
    assert_same_state(&refreshed, &fresh);
}

#[test]
fn refresh_then_statistics_cover_old_and_new_files() {
    let log = LogBuilder::new();
    let with_stats = |path: &str, rows: i64| {
        let mut action = add(path);
        action["add"]["stats"] = json!(format!("{{\"numRecords\":{rows},\"minValues\":{{\"id\":1}},\"maxValues\":{{\"id\":{rows}}},\"nullCount\":{{\"id\":0}}}}"));
        action
    };
    log.commit(0, &[protocol(), metadata(), with_stats("a", 5)]);
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Latest))
        .unwrap();
    log.commit(1, &[with_stats("b", 7)]);
    let refreshed = runtime.block_on(before.refresh()).unwrap();
    let fresh = log.load(SnapshotAt::Latest).unwrap();
    assert_same_state(&refreshed, &fresh);
    let rows = file_rows(&refreshed);
    assert_eq!(rows["a"].1, Some(5));
    assert_eq!(rows["b"].1, Some(7));
    for snapshot in [&refreshed, &fresh] {
        let (schema, batches) = runtime.block_on(snapshot.files(true)).unwrap();
        let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
        let max = batch.column_by_name("max_values").unwrap();
        let max = max.as_any().downcast_ref::<StructArray>().unwrap();
        let ids = max.column_by_name("id").unwrap();
        let ids = ids
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap();
        let paths = strings(batch.column_by_name("path").unwrap().as_ref());
        let by_path: BTreeMap<String, i64> = paths
            .into_iter()
            .zip(ids.iter().map(Option::unwrap))
            .collect();
        assert_eq!(
            by_path,
            BTreeMap::from([("a".to_string(), 5), ("b".to_string(), 7)])
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Reconciliation rules (catalogue C)
// ---------------------------------------------------------------------------------------------

#[test]
fn txn_newest_wins_even_when_lower() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[protocol(), metadata(), txn("app", 10), txn("other", 1)],
    );
    log.commit(1, &[txn("app", 5)]);
    let at_one = log.load(SnapshotAt::Version(1)).unwrap();
    assert_eq!(at_one.transaction_version("app"), Some(5));
    assert_eq!(at_one.transaction_version("other"), Some(1));
    assert_eq!(at_one.transaction_version("nobody"), None);

    // Across a checkpoint: the checkpoint holds 5, a later commit writes 3.
    log.classic_checkpoint(1, &[protocol(), metadata(), txn("app", 5), txn("other", 1)]);
    log.commit(2, &[txn("app", 3)]);
    log.delete(&commit_file_name(0));
    let latest = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(
        latest.transactions(),
        HashMap::from([("app".to_string(), 3), ("other".to_string(), 1)])
    );
}

#[test]
fn removed_domain_is_hidden() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[protocol(), metadata(), domain("a", "1"), domain("b", "2")],
    );
    log.commit(1, &[domain_removed("a")]);
    let at_one = log.load(SnapshotAt::Version(1)).unwrap();
    assert_eq!(at_one.domain_metadata("a"), None);
    assert_eq!(
        at_one.domains(),
        HashMap::from([("b".to_string(), "2".to_string())])
    );

    log.commit(2, &[domain("a", "3")]);
    assert_eq!(
        log.load(SnapshotAt::Version(2))
            .unwrap()
            .domain_metadata("a"),
        Some("3")
    );

    // Across a checkpoint: the checkpoint holds `b`, a later commit removes it.
    log.classic_checkpoint(
        2,
        &[protocol(), metadata(), domain("a", "3"), domain("b", "2")],
    );
    log.commit(3, &[domain_removed("b")]);
    log.delete(&commit_file_name(0));
    log.delete(&commit_file_name(1));
    let latest = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(
        latest.domains(),
        HashMap::from([("a".to_string(), "3".to_string())])
    );
}

#[test]
fn domain_tombstone_in_a_checkpoint_stays_hidden() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), domain("a", "1")]);
    log.commit(1, &[domain_removed("a")]);
    log.classic_checkpoint(1, &[protocol(), metadata(), domain_removed("a")]);
    log.delete(&commit_file_name(0));
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.domain_metadata("a"), None);
    assert!(snapshot.domains().is_empty());
}

#[test]
fn same_path_with_different_deletion_vectors_is_two_logical_files() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_dv(), metadata(), add("p")]);
    log.commit(1, &[add_dv("p", "dv1")]);
    log.commit(2, &[add_dv("p", "dv2")]);

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(block_on(snapshot.num_files()).unwrap(), 3);
    assert_eq!(
        live_keys(&snapshot),
        keys(&[("p", None), ("p", Some("idv1")), ("p", Some("idv2"))])
    );
}

#[test]
fn remove_without_a_deletion_vector_leaves_the_files_with_one() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[protocol_dv(), metadata(), add_dv("p", "dv1"), add("q")],
    );
    log.commit(1, &[remove("p"), remove_dv("q", "dv9")]);

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(
        live_keys(&snapshot),
        keys(&[("p", Some("idv1")), ("q", None)])
    );
    assert_eq!(
        tombstone_keys(&snapshot),
        keys(&[("p", None), ("q", Some("idv9"))])
    );
}

#[test]
fn replacing_a_deletion_vector_in_one_commit() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol_dv(), metadata(), add("p")]);
    log.commit(1, &[remove("p"), add_dv("p", "dv1")]);
    log.commit(2, &[remove_dv("p", "dv1"), add_dv("p", "dv2")]);

    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_keys(&snapshot), keys(&[("p", Some("idv2"))]));
    assert_eq!(
        tombstone_keys(&snapshot),
        keys(&[("p", None), ("p", Some("idv1"))])
    );
    let files = files_batch(&snapshot);
    let dv = files
        .column_by_name("deletion_vector")
        .unwrap()
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap()
        .clone();
    let cardinality = dv.column_by_name("cardinality").unwrap();
    assert_eq!(
        cardinality
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap()
            .value(0),
        3
    );

    // The same through a checkpoint at 1: its tombstone (p) and live (p, dv1) stay apart.
    log.classic_checkpoint(
        1,
        &[protocol_dv(), metadata(), add_dv("p", "dv1"), remove("p")],
    );
    log.delete(&commit_file_name(0));
    let from_checkpoint = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_keys(&from_checkpoint), keys(&[("p", Some("idv2"))]));
    assert_eq!(
        tombstone_keys(&from_checkpoint),
        keys(&[("p", None), ("p", Some("idv1"))])
    );
}

#[test]
fn deletion_vector_offset_is_part_of_the_key() {
    let log = LogBuilder::new();
    let stored = |offset: i32| {
        json!({"add": {"path": "p", "partitionValues": {}, "size": 10, "modificationTime": 1,
            "dataChange": true, "deletionVector": {"storageType": "u",
            "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": offset, "sizeInBytes": 40,
            "cardinality": 2}}})
    };
    log.commit(0, &[protocol_dv(), metadata(), stored(1)]);
    log.commit(1, &[stored(41)]);
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(block_on(snapshot.num_files()).unwrap(), 2);
}

#[test]
fn re_added_file_replaces_the_older_add() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add_sized("a", 10)]);
    log.commit(1, &[add_sized("a", 20)]);
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(block_on(snapshot.num_files()).unwrap(), 1);
    assert_eq!(block_on(snapshot.total_size()).unwrap(), 20);

    log.classic_checkpoint(1, &[protocol(), metadata(), add_sized("a", 20)]);
    log.commit(2, &[add_sized("a", 30)]);
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(block_on(snapshot.num_files()).unwrap(), 1);
    assert_eq!(block_on(snapshot.total_size()).unwrap(), 30);
}

#[test]
fn newest_metadata_and_protocol_win() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata_with(&[("x", "1"), ("y", "1")])]);
    log.commit(1, &[metadata_with(&[("x", "2")]), protocol_dv()]);
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    let configuration = &snapshot.metadata().configuration;
    assert_eq!(configuration.get("x").map(String::as_str), Some("2"));
    assert_eq!(configuration.get("y"), None);
    assert_eq!(snapshot.protocol().min_reader_version, 3);
}

#[test]
fn commit_info_and_cdc_do_not_change_the_state() {
    let log = LogBuilder::new();
    log.commit(0, &[commit_info(None), protocol(), metadata(), add("a")]);
    log.commit(
        1,
        &[
            commit_info(None),
            json!({"cdc": {"path": "_change_data/c.parquet", "partitionValues": {}, "size": 1,
                "dataChange": false}}),
            json!({"someFutureAction": {"x": 1}}),
        ],
    );
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(snapshot.version(), 1);
    assert_eq!(live_paths(&snapshot), set(&["a"]));
}

#[test]
fn canonicalised_path_spellings_name_one_file() {
    let root_spellings = |log: &LogBuilder| {
        let root = log.root_url();
        let plain = log.root().to_str().unwrap().to_string();
        vec![
            format!("{root}a%20b.parquet"),
            format!("{}a%20b.parquet", root.replacen("file:///", "file:/", 1)),
            format!("file://{plain}/a b.parquet"),
            format!("{plain}/a%20b.parquet"),
            "a%20b.parquet".to_string(),
        ]
    };
    for index in 0..5 {
        let log = LogBuilder::new();
        let spellings = root_spellings(&log);
        let removed = &spellings[index];
        log.commit(0, &[protocol(), metadata(), add("a%20b.parquet"), add("c")]);
        log.commit(1, &[remove(removed)]);
        let snapshot = log.load(SnapshotAt::Latest).unwrap();
        assert_eq!(live_paths(&snapshot), set(&["c"]), "removed as {removed}");

        // And the other way round: added absolute, removed relative.
        let log = LogBuilder::new();
        let spellings = root_spellings(&log);
        log.commit(
            0,
            &[protocol(), metadata(), add(&spellings[index]), add("c")],
        );
        log.commit(1, &[remove("a%20b.parquet")]);
        let snapshot = log.load(SnapshotAt::Latest).unwrap();
        assert_eq!(
            live_paths(&snapshot),
            set(&["c"]),
            "added as {}",
            spellings[index]
        );
    }
}

#[test]
fn escaped_paths_are_listed_decoded() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[
            protocol(),
            metadata(),
            add("a%20b.parquet"),
            add("x%3Dy/c%25d.parquet"),
        ],
    );
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(
        live_paths(&snapshot),
        set(&["a b.parquet", "x=y/c%d.parquet"])
    );
}

#[test]
fn canonicalised_paths_match_checkpoint_rows_too() {
    let log = LogBuilder::new();
    log.commit(0, &[protocol(), metadata(), add("a%20b.parquet")]);
    log.classic_checkpoint(0, &[protocol(), metadata(), add("a%20b.parquet")]);
    log.delete(&commit_file_name(0));
    let absolute = format!("{}a%20b.parquet", log.root_url());
    log.commit(1, &[remove(&absolute)]);
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert!(live_paths(&snapshot).is_empty());
}

#[test]
fn escaped_and_raw_spellings_of_a_relative_path_are_one_file() {
    for (added, removed) in [
        ("a%20b.parquet", "a b.parquet"),
        ("a b.parquet", "a%20b.parquet"),
        ("a+b.parquet", "a%2Bb.parquet"),
        ("p=%C3%A9/x.parquet", "p=é/x.parquet"),
    ] {
        let log = LogBuilder::new();
        log.commit(0, &[protocol(), metadata(), add(added), add("c")]);
        log.commit(1, &[remove(removed)]);
        let snapshot = log.load(SnapshotAt::Latest).unwrap();
        assert_eq!(
            live_paths(&snapshot),
            set(&["c"]),
            "{added} removed as {removed}"
        );
    }
}

#[test]
fn canonicalised_paths_under_a_root_with_escaped_characters() {
    let log = LogBuilder::with_prefix("root with space%25 ");
    let root = log.root_url();
    assert!(root.contains("root%20with%20space%2525"), "{root}");
    log.commit(
        0,
        &[
            protocol(),
            metadata(),
            add("a%20b.parquet"),
            add("c"),
            add("d"),
        ],
    );
    log.commit(
        1,
        &[
            remove(&format!("{root}a%20b.parquet")),
            remove(&format!(
                "{}/c",
                log.root()
                    .to_str()
                    .unwrap()
                    .replace(' ', "%20")
                    .replace("%25", "%2525")
            )),
        ],
    );
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["d"]));
    let runtime = runtime();
    let before = runtime
        .block_on(log.table().snapshot(SnapshotAt::Version(0)))
        .unwrap();
    assert_same_state(&runtime.block_on(before.refresh()).unwrap(), &snapshot);
}

#[test]
fn absolute_path_outside_the_table_is_a_distinct_file() {
    let log = LogBuilder::new();
    log.commit(
        0,
        &[protocol(), metadata(), add("a"), add("file:///elsewhere/a")],
    );
    let snapshot = log.load(SnapshotAt::Latest).unwrap();
    assert_eq!(live_paths(&snapshot), set(&["a", "file:///elsewhere/a"]));
}

// ---------------------------------------------------------------------------------------------
// Actions
// ---------------------------------------------------------------------------------------------

const SCHEMA: &str =
    r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#;

fn protocol() -> Value {
    json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
}

fn protocol_dv() -> Value {
    json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors", "domainMetadata"]}})
}

fn protocol_v2() -> Value {
    json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["v2Checkpoint"],
        "writerFeatures": ["v2Checkpoint", "domainMetadata"]}})
}

/// In-commit timestamps (spec "In-Commit Timestamps"): the writer feature and the property.
fn protocol_ict() -> Value {
    json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
        "writerFeatures": ["inCommitTimestamp"]}})
}

fn metadata_ict() -> Value {
    metadata_with(&[("delta.enableInCommitTimestamps", "true")])
}

fn metadata() -> Value {
    metadata_with(&[])
}

fn metadata_with(configuration: &[(&str, &str)]) -> Value {
    let configuration: BTreeMap<&str, &str> = configuration.iter().copied().collect();
    json!({"metaData": {"id": "7b4a6b0e-0000-4000-8000-000000000001",
        "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
        "partitionColumns": [], "createdTime": 1, "configuration": configuration}})
}

fn add(path: &str) -> Value {
    add_sized(path, 100)
}

fn add_sized(path: &str, size: i64) -> Value {
    json!({"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": 1,
        "dataChange": true}})
}

fn inline_dv(text: &str) -> Value {
    json!({"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": 12, "cardinality": 3})
}

fn add_dv(path: &str, dv: &str) -> Value {
    let mut action = add(path);
    action["add"]["deletionVector"] = inline_dv(dv);
    action
}

fn remove(path: &str) -> Value {
    json!({"remove": {"path": path, "deletionTimestamp": 2, "dataChange": true}})
}

fn remove_dv(path: &str, dv: &str) -> Value {
    let mut action = remove(path);
    action["remove"]["deletionVector"] = inline_dv(dv);
    action
}

fn txn(app: &str, version: i64) -> Value {
    json!({"txn": {"appId": app, "version": version}})
}

fn domain(name: &str, configuration: &str) -> Value {
    json!({"domainMetadata": {"domain": name, "configuration": configuration, "removed": false}})
}

fn domain_removed(name: &str) -> Value {
    json!({"domainMetadata": {"domain": name, "configuration": "", "removed": true}})
}

fn checkpoint_metadata(version: u64) -> Value {
    json!({"checkpointMetadata": {"version": version}})
}

fn commit_info(in_commit_timestamp: Option<i64>) -> Value {
    let mut info = json!({"commitInfo": {"timestamp": 5, "operation": "WRITE"}});
    if let Some(timestamp) = in_commit_timestamp {
        info["commitInfo"]["inCommitTimestamp"] = json!(timestamp);
    }
    info
}

fn hint(version: u64) -> LastCheckpointHint {
    LastCheckpointHint {
        version,
        size: Some(4),
        ..LastCheckpointHint::default()
    }
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

// ---------------------------------------------------------------------------------------------
// Reading results
// ---------------------------------------------------------------------------------------------

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|path| path.to_string()).collect()
}

type Key = (String, Option<String>);

fn keys(keys: &[(&str, Option<&str>)]) -> BTreeSet<Key> {
    keys.iter()
        .map(|(path, dv)| (path.to_string(), dv.map(str::to_string)))
        .collect()
}

/// The one batch of the file list (all batches concatenated).
fn files_batch(snapshot: &Snapshot) -> RecordBatch {
    let (schema, batches) = runtime().block_on(snapshot.files(false)).unwrap();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

/// The `path` column of [`Snapshot::files`], as a set; fails on duplicates.
fn live_paths(snapshot: &Snapshot) -> BTreeSet<String> {
    let batch = files_batch(snapshot);
    let paths = strings(batch.column_by_name("path").unwrap().as_ref());
    let unique: BTreeSet<String> = paths.iter().cloned().collect();
    assert_eq!(unique.len(), paths.len(), "duplicate live paths: {paths:?}");
    unique
}

/// The live `(path, dv unique id)` keys, from [`Snapshot::files`]; fails on duplicates.
fn live_keys(snapshot: &Snapshot) -> BTreeSet<Key> {
    let batch = files_batch(snapshot);
    let paths = strings(batch.column_by_name("path").unwrap().as_ref());
    let dv = batch.column_by_name("deletion_vector").unwrap();
    let dv_ids = dv_ids(dv.as_any().downcast_ref::<StructArray>().unwrap());
    let keys: Vec<Key> = paths.into_iter().zip(dv_ids).collect();
    let unique: BTreeSet<Key> = keys.iter().cloned().collect();
    assert_eq!(unique.len(), keys.len(), "duplicate live keys: {keys:?}");
    unique
}

/// The tombstones' paths (URL-decoded), from [`Snapshot::remove_actions`].
fn tombstones(snapshot: &Snapshot) -> BTreeSet<String> {
    tombstone_keys(snapshot)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

fn tombstone_keys(snapshot: &Snapshot) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    for removes in block_on(snapshot.remove_actions()).unwrap() {
        let paths = strings(removes.column_by_name("path").unwrap().as_ref());
        let dv = removes.column_by_name("deletionVector").unwrap();
        let dv_ids = dv_ids(dv.as_any().downcast_ref::<StructArray>().unwrap());
        for (path, dv) in paths.into_iter().zip(dv_ids) {
            let decoded = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
            assert!(
                keys.insert((decoded.into_owned(), dv)),
                "duplicate tombstone {path}"
            );
        }
    }
    keys
}

/// `storageType + pathOrInlineDv [@offset]` per row (children by position: storage type,
/// path or inline data, offset), `None` for rows without a deletion vector.
fn dv_ids(dv: &StructArray) -> Vec<Option<String>> {
    let storage = strings_nullable(dv.column(0).as_ref());
    let data = strings_nullable(dv.column(1).as_ref());
    let offsets = dv
        .column(2)
        .as_any()
        .downcast_ref::<arrow_array::Int32Array>()
        .unwrap();
    (0..dv.len())
        .map(|row| {
            dv.is_valid(row).then(|| {
                let base = format!(
                    "{}{}",
                    storage[row].clone().unwrap_or_default(),
                    data[row].clone().unwrap_or_default()
                );
                match offsets.is_valid(row) {
                    true => format!("{base}@{}", offsets.value(row)),
                    false => base,
                }
            })
        })
        .collect()
}

fn strings(array: &dyn Array) -> Vec<String> {
    strings_nullable(array)
        .into_iter()
        .map(|value| value.expect("a null string"))
        .collect()
}

fn strings_nullable(array: &dyn Array) -> Vec<Option<String>> {
    let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
    strings
        .iter()
        .map(|value| value.map(str::to_string))
        .collect()
}

fn checkpoint_version(segment: &LogSegment) -> Option<u64> {
    segment
        .checkpoint
        .as_ref()
        .map(|checkpoint| checkpoint.version)
}

fn checkpoint_file(segment: &LogSegment) -> String {
    let checkpoint = segment.checkpoint.as_ref().expect("a checkpoint");
    checkpoint.parts[0].file_name().to_string()
}

fn commit_versions(segment: &LogSegment) -> Vec<u64> {
    segment
        .commits
        .iter()
        .map(|commit| commit.version)
        .collect()
}

fn assert_corrupt_names(error: &Error, file_name: &str) {
    assert!(matches!(error, Error::CorruptLogFile { .. }), "{error:?}");
    assert!(error.to_string().contains(file_name), "{error}");
}

/// Same version, protocol, metadata, live files, tombstones, txns, domains and timestamp.
fn assert_same_state(left: &Snapshot, right: &Snapshot) {
    assert_eq!(left.version(), right.version());
    assert_eq!(left.protocol(), right.protocol());
    assert_eq!(left.metadata(), right.metadata());
    assert_eq!(live_keys(left), live_keys(right));
    assert_eq!(tombstone_keys(left), tombstone_keys(right));
    assert_eq!(left.transactions(), right.transactions());
    assert_eq!(left.domains(), right.domains());
    assert_eq!(left.timestamp_ms(), right.timestamp_ms());
    assert_eq!(
        block_on(left.total_size()).unwrap(),
        block_on(right.total_size()).unwrap()
    );
    assert_eq!(file_rows(left), file_rows(right));
}

/// `path -> (size, num_records)` of every live file.
fn file_rows(snapshot: &Snapshot) -> BTreeMap<String, (Option<i64>, Option<i64>)> {
    let batch = files_batch(snapshot);
    let paths = strings(batch.column_by_name("path").unwrap().as_ref());
    let int = |name: &str| {
        let column = batch.column_by_name(name).unwrap();
        let ints = column
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap();
        ints.iter().collect::<Vec<_>>()
    };
    let rows = int("size").into_iter().zip(int("num_records"));
    paths.into_iter().zip(rows).collect()
}

// ---------------------------------------------------------------------------------------------
// Writing logs
// ---------------------------------------------------------------------------------------------

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A table folder with a `_delta_log` in it, and writers for every kind of log file.
struct LogBuilder {
    dir: tempfile::TempDir,
}

impl LogBuilder {
    fn new() -> Self {
        LogBuilder::with_prefix(".tmp")
    }

    /// A table whose folder name starts with `prefix` (to put spaces or `%` in the root).
    fn with_prefix(prefix: &str) -> Self {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("_delta_log").join("_sidecars")).unwrap();
        LogBuilder { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn log_dir(&self) -> PathBuf {
        self.root().join("_delta_log")
    }

    /// The table root as a `file://` URL ending in `/`.
    fn root_url(&self) -> String {
        url::Url::from_directory_path(self.root())
            .unwrap()
            .to_string()
    }

    fn table(&self) -> Table {
        runtime()
            .block_on(Table::open(self.root().to_str().unwrap(), &HashMap::new()))
            .unwrap()
    }

    fn load(&self, at: SnapshotAt) -> deltalog_core::Result<Snapshot> {
        runtime().block_on(async {
            let table = Table::open(self.root().to_str().unwrap(), &HashMap::new()).await?;
            table.snapshot(at).await
        })
    }

    fn segment(&self, target: Option<u64>) -> LogSegment {
        runtime()
            .block_on(self.table().log_segment(target))
            .unwrap()
    }

    /// Writes `bytes` to `name` inside `_delta_log`, replacing what is there.
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.log_dir().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn delete(&self, name: &str) {
        std::fs::remove_file(self.log_dir().join(name)).unwrap();
    }

    fn set_modified(&self, name: &str, ms: i64) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(self.log_dir().join(name))
            .unwrap();
        file.set_modified(UNIX_EPOCH + Duration::from_millis(ms as u64))
            .unwrap();
    }

    fn commit(&self, version: u64, actions: &[Value]) {
        self.write(&commit_file_name(version), &json_lines(actions));
    }

    fn compaction(&self, start: u64, end: u64, actions: &[Value]) {
        self.write(&compaction_file_name(start, end), &json_lines(actions));
    }

    /// `<v>.checkpoint.parquet`; V2 layout when the actions hold a `checkpointMetadata`.
    fn classic_checkpoint(&self, version: u64, actions: &[Value]) {
        self.write(
            &classic_checkpoint_file_name(version),
            &checkpoint_parquet(actions),
        );
    }

    fn multi_part_checkpoint(&self, version: u64, parts: &[Vec<Value>]) {
        let num_parts = parts.len() as u32;
        for (index, actions) in parts.iter().enumerate() {
            let name = multi_part_checkpoint_file_name(version, index as u32 + 1, num_parts);
            self.write(&name, &checkpoint_parquet(actions));
        }
    }

    /// A UUID-named JSON checkpoint; returns its file name.
    fn uuid_json_checkpoint(&self, version: u64, actions: &[Value]) -> String {
        let name = uuid_checkpoint_file_name(version, &uuid(), CheckpointFormat::Json);
        self.write(&name, &json_lines(actions));
        name
    }

    /// A UUID-named Parquet checkpoint; returns its file name.
    fn uuid_parquet_checkpoint(&self, version: u64, actions: &[Value]) -> String {
        let name = uuid_checkpoint_file_name(version, &uuid(), CheckpointFormat::Parquet);
        self.write(&name, &checkpoint_parquet(actions));
        name
    }

    /// Writes a sidecar of `add`/`remove` actions into `_delta_log/_sidecars/` and returns the
    /// `sidecar` action that names it.
    fn sidecar(&self, actions: &[Value]) -> Value {
        let name = format!("{}.parquet", uuid());
        let bytes = parquet_file(sidecar_schema(), actions);
        std::fs::write(self.log_dir().join("_sidecars").join(&name), &bytes).unwrap();
        json!({"sidecar": {"path": name, "sizeInBytes": bytes.len(), "modificationTime": 1}})
    }

    fn last_checkpoint(&self, hint: &LastCheckpointHint) {
        self.write("_last_checkpoint", &write_last_checkpoint(hint).unwrap());
    }
}

/// A Parquet checkpoint part of `actions` (spec "Checkpoint Schema"), with the V2 columns
/// `checkpointMetadata` and `sidecar` when one of the actions is a `checkpointMetadata`.
fn checkpoint_parquet(actions: &[Value]) -> Vec<u8> {
    let v2 = actions
        .iter()
        .any(|action| action.get("checkpointMetadata").is_some());
    parquet_file(checkpoint_schema(v2), actions)
}

fn sidecar_schema() -> SchemaRef {
    Arc::new(Schema::new(file_action_fields()))
}
