//! Helpers shared by the integration tests: the golden tables, a runtime, and the Delta
//! checkpoint schema for writing checkpoints by hand.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use deltalog_core::actions::layout::{file_action_schema, string_map};
use serde_json::Value;

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

/// Unpacks every golden table once into a temporary folder (panics when the set is absent).
pub fn unpacked() -> Option<&'static Path> {
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    DIR.get_or_init(|| {
        let source = golden_dir();
        if !source.is_dir() {
            panic!("the golden tables are not at {}", source.display());
        }
        let target = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(&source).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".tar.zst") {
                let file = std::fs::File::open(&path).unwrap();
                let decoder = zstd::stream::read::Decoder::new(file).unwrap();
                tar::Archive::new(decoder).unpack(target.path()).unwrap();
            }
        }
        Some(target)
    })
    .as_ref()
    .map(|dir| dir.path())
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub fn checkpoint_schema(v2: bool) -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    let long = |name: &str| Field::new(name, DataType::Int64, true);
    let mut fields = vec![struct_field(
        "txn",
        vec![text("appId"), long("version"), long("lastUpdated")],
    )];
    fields.extend(file_action_fields());
    fields.push(struct_field(
        "metaData",
        vec![
            text("id"),
            text("name"),
            text("description"),
            struct_field(
                "format",
                vec![text("provider"), Field::new("options", string_map(), true)],
            ),
            text("schemaString"),
            Field::new("partitionColumns", string_list(), true),
            long("createdTime"),
            Field::new("configuration", string_map(), true),
        ],
    ));
    fields.push(struct_field(
        "protocol",
        vec![
            Field::new("minReaderVersion", DataType::Int32, true),
            Field::new("minWriterVersion", DataType::Int32, true),
            Field::new("readerFeatures", string_list(), true),
            Field::new("writerFeatures", string_list(), true),
        ],
    ));
    fields.push(struct_field(
        "domainMetadata",
        vec![
            text("domain"),
            text("configuration"),
            Field::new("removed", DataType::Boolean, true),
        ],
    ));
    if v2 {
        fields.push(struct_field(
            "checkpointMetadata",
            vec![long("version"), Field::new("tags", string_map(), true)],
        ));
        fields.push(struct_field(
            "sidecar",
            vec![
                text("path"),
                long("sizeInBytes"),
                long("modificationTime"),
                Field::new("tags", string_map(), true),
            ],
        ));
    }
    Arc::new(Schema::new(fields))
}

/// The file action columns: `add` as the library lays it out, and `remove` without `stats`
/// and `tags`, which checkpoints leave out.
pub fn file_action_fields() -> Vec<Field> {
    let schema = file_action_schema();
    let add = schema.field_with_name("add").unwrap().clone();
    let remove = schema.field_with_name("remove").unwrap();
    let DataType::Struct(remove_fields) = remove.data_type() else {
        panic!("remove is not a struct");
    };
    let kept: Vec<Field> = remove_fields
        .iter()
        .filter(|field| !matches!(field.name().as_str(), "stats" | "tags"))
        .map(|field| field.as_ref().clone())
        .collect();
    vec![add, struct_field("remove", kept)]
}

pub fn struct_field(name: &str, fields: Vec<Field>) -> Field {
    Field::new(name, DataType::Struct(Fields::from(fields)), true)
}

pub fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
}

/// `actions` (one JSON object per row, keyed by the action name) as Parquet with `schema`.
pub fn parquet_file(schema: SchemaRef, actions: &[Value]) -> Vec<u8> {
    let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
        .with_batch_size(actions.len().max(1))
        .build_decoder()
        .unwrap();
    let lines = json_lines(actions);
    assert_eq!(decoder.decode(&lines).unwrap(), lines.len());
    let batch = decoder
        .flush()
        .unwrap()
        .unwrap_or_else(|| RecordBatch::new_empty(schema.clone()));
    let mut bytes = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut bytes, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    bytes
}

pub fn json_lines(actions: &[Value]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for action in actions {
        serde_json::to_writer(&mut bytes, action).unwrap();
        bytes.push(b'\n');
    }
    bytes
}
