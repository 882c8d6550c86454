//! The entry points of the fuzz targets: each takes arbitrary bytes, hands them to one of the
//! core's parsers and returns whatever the parser says. None may panic, abort or run out of
//! memory; a parser error is a correct answer. Besides the fuzz targets (`fuzz_targets/`), the
//! core's `tests/fuzz_regressions.rs` includes this file to replay `fuzz/regressions/`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once, OnceLock};

use arrow_array::StringArray;
use bytes::Bytes;
use deltalog_core::actions::deletion_vector::{
    decode_bitmap, decode_dv_file, decode_inline, resolve, DvLocation,
};
use deltalog_core::actions::partition::partition_values_to_arrow;
use deltalog_core::actions::DeletionVectorDescriptor;
use deltalog_core::expr::parse_value_sql;
use deltalog_core::log::decode::add_scanner::StatsText;
use deltalog_core::log::decode::checkpoint::{read_parquet_actions, CheckpointProjection};
use deltalog_core::log::decode::commit::{decode_actions, DecodeOptions};
use deltalog_core::log::last_checkpoint::{json_checksum, parse_last_checkpoint};
use deltalog_core::log::path::{log_file_name, parse_file_name};
use deltalog_core::scalar::SessionTimeZone;
use deltalog_core::schema::{PrimitiveType, StructType};
use deltalog_core::snapshot::SnapshotAt;
use deltalog_core::storage::Storage;
use deltalog_core::table::Table;
use deltalog_core::table_config::stats::{parse_stats, stats_schema};
use deltalog_core::{parse_sql, Error};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use url::Url;

/// The entry point of a fuzz target.
pub type EntryPoint = fn(&[u8]);

/// The targets, by name: the name of the fuzz target, of its seed and regression directories.
pub const TARGETS: &[(&str, EntryPoint)] = &[
    ("commit_json", commit_json),
    ("last_checkpoint", last_checkpoint),
    ("dv_descriptor", dv_descriptor),
    ("dv_file", dv_file),
    ("checkpoint_parquet", checkpoint_parquet),
    ("partition_stats", partition_stats),
    ("expressions", expressions),
    ("log_file_name", log_file_name_target),
];

/// A commit file: decoded on its own, then as version 0 of a table in memory whose snapshot is
/// loaded and whose file list (statistics and partition values parsed) is built, and whose
/// snapshot filtered on a column is loaded (the `stats` strings judged as the lines hold them)
/// and listed.
pub fn commit_json(data: &[u8]) {
    let options = DecodeOptions {
        from_checkpoint: false,
        stats: StatsText::Decoded,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    let _ = decode_actions(data, 0, "00000000000000000000.json", options);
    let storage = memory_table(&[("_delta_log/00000000000000000000.json", data)]);
    block_on(async move {
        let table = Table::from_storage(storage);
        if let Ok(snapshot) = no_panic(table.snapshot(SnapshotAt::Latest).await) {
            let _ = no_panic(snapshot.files(true).await);
        }
        if let Ok(filter) = parse_sql("id < 5") {
            let filtered = no_panic(table.snapshot_matching(SnapshotAt::Latest, &filter).await);
            if let Ok(snapshot) = filtered {
                let _ = no_panic(snapshot.files(true).await);
            }
        }
    });
}

/// `_last_checkpoint`: parsed (duplicate keys, checksum) and canonicalised for its MD5.
pub fn last_checkpoint(data: &[u8]) {
    let _ = parse_last_checkpoint(data, "_delta_log/_last_checkpoint");
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = json_checksum(text);
    }
}

/// A deletion vector descriptor as JSON: resolved against a table root, which a `u` vector's file
/// must stay under, and decoded when inline.
pub fn dv_descriptor(data: &[u8]) {
    let Ok(descriptor) = serde_json::from_slice::<DeletionVectorDescriptor>(data) else {
        return;
    };
    let Ok(root) = Url::parse("file:///fuzz/table/") else {
        return;
    };
    match resolve(&descriptor, &root) {
        Ok(DvLocation::Inline(bytes)) => {
            let _ = decode_inline(&bytes, &descriptor);
        }
        Ok(DvLocation::File { url, .. }) => {
            if descriptor.storage_type == "u" {
                assert!(
                    url.as_str().starts_with(root.as_str()) && !url.path().contains("/../"),
                    "a `u` deletion vector resolved outside the table root: {url}"
                );
            }
        }
        Err(_) => {}
    }
}

/// A deletion vector file: the first 12 bytes give the descriptor's offset, size and
/// cardinality, the rest is the file; also the rest decoded as a bare bitmap.
pub fn dv_file(data: &[u8]) {
    let Some((header, file)) = data.split_at_checked(12) else {
        return;
    };
    let word = |at: usize| {
        i32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let descriptor = DeletionVectorDescriptor {
        storage_type: "u".into(),
        path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
        offset: Some(word(0) % 4096),
        size_in_bytes: word(4) % 65536,
        cardinality: i64::from(word(8)),
    };
    let _ = decode_dv_file(file, &descriptor, "deletion_vector.bin");
    let _ = decode_bitmap(file, "deletion_vector.bin");
}

/// A classic checkpoint file in a table in memory: its actions read, then the snapshot loaded
/// from it.
pub fn checkpoint_parquet(data: &[u8]) {
    contain_known_panics();
    CONTAINED_PANICS_SEEN.store(0, Ordering::SeqCst);
    let name = "_delta_log/00000000000000000000.checkpoint.parquet";
    let storage = memory_table(&[(name, data)]);
    let size = data.len() as u64;
    block_on(async move {
        let path = Path::from(format!("table/{name}"));
        let projection = CheckpointProjection {
            stats: true,
            ..CheckpointProjection::default()
        };
        let _ = no_panic(read_parquet_actions(&storage, &path, size, 0, projection).await);
        let table = Table::from_storage(storage);
        if let Ok(snapshot) = no_panic(table.snapshot(SnapshotAt::Latest).await) {
            let _ = no_panic(snapshot.files(true).await);
        }
    });
}

/// Partition values and statistics: the first byte picks a column type; the rest, split at
/// newlines, are partition values of that type and `add.stats` texts of a table with a column
/// of every type.
pub fn partition_stats(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let values: Vec<Option<&str>> = text.split('\n').map(Some).collect();
    let types = column_types();
    let ty = &types[usize::from(selector) % types.len()];
    let _ = partition_values_to_arrow(&values, ty, "p", &SessionTimeZone::utc());
    if let Some(schema) = stats_test_schema() {
        let stats = StringArray::from(values);
        let _ = parse_stats(&stats, schema);
    }
}

/// Filter and value expressions in SQL text.
pub fn expressions(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_sql(text);
        let _ = parse_value_sql(text);
    }
}

/// Log file names: a name that parses must name the same file when written back.
pub fn log_file_name_target(data: &[u8]) {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((version, kind)) = parse_file_name(name) {
        let written = log_file_name(version, &kind);
        assert!(
            parse_file_name(&written) == Some((version, kind)),
            "{name:?} parsed, but its name written back, {written:?}, does not parse the same"
        );
    }
}

/// A storage in memory rooted at `memory:///table/`, holding `files` (paths under the root).
fn memory_table(files: &[(&str, &[u8])]) -> Storage {
    let store = Arc::new(InMemory::new());
    block_on({
        let store = Arc::clone(&store);
        let files: Vec<(Path, Bytes)> = files
            .iter()
            .map(|(name, bytes)| {
                (
                    Path::from(format!("table/{name}")),
                    Bytes::copy_from_slice(bytes),
                )
            })
            .collect();
        async move {
            for (path, bytes) in files {
                let _ = store.put(&path, bytes.into()).await;
            }
        }
    });
    let root = Url::parse("memory:///table/").unwrap_or_else(|_| unreachable!());
    Storage::with_store(store, root, Path::from("table"))
}

/// Dependencies whose panics deltalog contains, by the source folder of the crate version.
/// The parquet crate panics on some malformed files instead of returning an error; so far:
/// a map whose keys and values disagree in length (`array_reader/map_array.rs`, which unwraps
/// its child's error) and a dictionary-encoded page with no dictionary page
/// (`column/reader/decoder.rs`). deltalog decodes Parquet only inside CPU jobs that turn a panic
/// into a corrupt-file error naming the file, so users never see one; the fuzz targets let such
/// a panic unwind (libFuzzer's panic hook aborts on every panic), check that the error says
/// corrupt, and go on fuzzing. A panic anywhere else still fails. The entry names the crate's
/// version, so that an upgrade is fuzzed afresh.
pub const CONTAINED_PANICS: &[&str] = &["/parquet-60.1.0/src/"];

/// How many panics of [`CONTAINED_PANICS`] happened since the last [`no_panic`] check.
static CONTAINED_PANICS_SEEN: AtomicUsize = AtomicUsize::new(0);

/// Installs, once, a panic hook that counts the panics of [`CONTAINED_PANICS`] and hands every
/// other panic to the hook it replaces (libFuzzer's, which aborts).
fn contain_known_panics() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let contained = info.location().is_some_and(|location| {
                let file = location.file().replace('\\', "/");
                CONTAINED_PANICS.iter().any(|known| file.contains(known))
            });
            if contained {
                CONTAINED_PANICS_SEEN.fetch_add(1, Ordering::SeqCst);
            } else {
                previous(info);
            }
        }));
    });
}

/// `result`, after checking that it is not a panic turned into an error, unless the panic was
/// one of [`CONTAINED_PANICS`] and the error says the file is corrupt.
fn no_panic<T>(result: Result<T, Error>) -> Result<T, Error> {
    if let Err(error) = &result {
        let message = error.to_string();
        if message.contains("panicked") {
            let contained = CONTAINED_PANICS_SEEN.swap(0, Ordering::SeqCst) > 0;
            let corrupt = matches!(
                error,
                Error::CorruptLogFile { .. } | Error::CorruptDataFile { .. }
            );
            assert!(
                contained && corrupt,
                "a panic was turned into an error: {message}"
            );
        }
    }
    result
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|error| unreachable!("no tokio runtime: {error}"))
        })
        .block_on(future)
}

fn column_types() -> Vec<PrimitiveType> {
    use PrimitiveType::*;
    vec![
        String,
        Long,
        Integer,
        Short,
        Byte,
        Float,
        Double,
        Boolean,
        Binary,
        Date,
        Timestamp,
        TimestampNtz,
        Decimal {
            precision: 10,
            scale: 2,
        },
        Decimal {
            precision: 38,
            scale: 18,
        },
        Void,
    ]
}

/// The statistics schema of a table with one column of every type and a nested struct.
fn stats_test_schema() -> Option<&'static arrow_schema::DataType> {
    static SCHEMA: OnceLock<Option<arrow_schema::DataType>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let schema: StructType = serde_json::from_str(STATS_TABLE_SCHEMA).ok()?;
            stats_schema(&schema, &HashMap::new()).ok()
        })
        .as_ref()
}

const STATS_TABLE_SCHEMA: &str = r#"{"type":"struct","fields":[
{"name":"s","type":"string","nullable":true,"metadata":{}},
{"name":"l","type":"long","nullable":true,"metadata":{}},
{"name":"i","type":"integer","nullable":true,"metadata":{}},
{"name":"f","type":"float","nullable":true,"metadata":{}},
{"name":"d","type":"double","nullable":true,"metadata":{}},
{"name":"b","type":"boolean","nullable":true,"metadata":{}},
{"name":"dt","type":"date","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
{"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},
{"name":"n","type":{"type":"struct","fields":[
  {"name":"x","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}"#;
