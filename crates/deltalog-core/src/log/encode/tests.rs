use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;

use super::*;
use crate::actions::Format;
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::commit::DecodedActions;

fn decode(text: &[u8]) -> DecodedActions {
    let options = DecodeOptions {
        from_checkpoint: false,
        stats: StatsText::Decoded,
        skip_file_actions: false,
        skip_commit_info: false,
    };
    decode_actions(text, 3, "test.json", options).unwrap()
}

fn file(path: &str) -> AddFile {
    AddFile {
        path: path.to_string(),
        partition_values: vec![
            ("p".to_string(), Some("a b".to_string())),
            ("q".to_string(), None),
        ],
        size: 10,
        modification_time: 5,
        data_change: true,
        stats: Some(r#"{"numRecords":3,"minValues":{"x":1}}"#.to_string()),
        tags: vec![("k".to_string(), Some("v".to_string()))],
        deletion_vector: Some(DeletionVectorDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(4),
            size_in_bytes: 40,
            cardinality: 6,
        }),
        base_row_id: Some(7),
        default_row_commit_version: Some(2),
        clustering_provider: Some("liquid".into()),
    }
}

#[test]
fn paths_are_encoded_as_hadoop_encodes_them() {
    assert_eq!(encode_path("p=a b/x.parquet"), "p=a%20b/x.parquet");
    assert_eq!(
        encode_path("p=2020-01-01 08%3A09%3A10/f.parquet"),
        "p=2020-01-01%2008%253A09%253A10/f.parquet"
    );
    assert_eq!(encode_path("a#b?c/é.parquet"), "a%23b%3Fc/é.parquet");
    assert_eq!(encode_path("s3://bucket/a b"), "s3://bucket/a b");
    assert_eq!(encode_path("p=x:y/f.parquet"), "p=x:y/f.parquet");
}

#[test]
fn non_file_actions_round_trip() {
    let protocol = Protocol {
        min_reader_version: 3,
        min_writer_version: 7,
        reader_features: Some(vec!["deletionVectors".into()]),
        writer_features: Some(vec!["deletionVectors".into(), "rowTracking".into()]),
    };
    let legacy = Protocol {
        min_reader_version: 1,
        min_writer_version: 2,
        reader_features: Some(vec!["ignored".into()]),
        writer_features: None,
    };
    let metadata = Metadata {
        id: "id-1".into(),
        name: Some("n \"quoted\"".into()),
        description: None,
        format: Format::default(),
        schema_string: Some(r#"{"type":"struct","fields":[]}"#.into()),
        partition_columns: vec!["p".into()],
        created_time: Some(12),
        configuration: HashMap::from([("delta.appendOnly".into(), "true".into())]),
    };
    let txn = Txn {
        app_id: "app\n1".into(),
        version: 4,
        last_updated: Some(9),
    };
    let domain = DomainMetadata {
        domain: "delta.rowTracking".into(),
        configuration: r#"{"rowIdHighWaterMark":9}"#.into(),
        removed: false,
    };
    let mut raw = serde_json::Map::new();
    raw.insert("operation".into(), "WRITE".into());
    raw.insert("txnId".into(), "t".into());
    let info = CommitInfo { raw };
    let lines = [
        commit_info_line(&info).unwrap(),
        protocol_line(&protocol),
        metadata_line(&metadata),
        txn_line(&txn),
        domain_metadata_line(&domain),
    ]
    .join("\n");
    let decoded = decode(lines.as_bytes());
    assert_eq!(decoded.commit_info.unwrap(), info);
    assert_eq!(decoded.protocol.unwrap(), protocol);
    assert_eq!(decoded.metadata.unwrap(), metadata);
    assert_eq!(decoded.txns, vec![txn]);
    assert_eq!(decoded.domains, vec![domain]);
    let legacy_line = protocol_line(&legacy);
    assert_eq!(
        legacy_line,
        r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#
    );
    let empty = Protocol {
        min_reader_version: 1,
        min_writer_version: 7,
        reader_features: None,
        writer_features: None,
    };
    assert_eq!(
        protocol_line(&empty),
        r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":[]}}"#
    );
}

#[test]
fn add_rows_and_add_lines_round_trip() {
    let files = vec![file("p=a b/x.parquet"), {
        let mut plain = file("y.parquet");
        plain.deletion_vector = None;
        plain.tags.clear();
        plain.base_row_id = None;
        plain.default_row_commit_version = None;
        plain.clustering_provider = None;
        plain.stats = None;
        plain
    }];
    let adds = add_rows(&files).unwrap();
    assert_eq!(adds.len(), 2);
    let paths = adds.column_by_name(add::PATH).unwrap().as_string::<i32>();
    assert_eq!(paths.value(0), "p=a%20b/x.parquet");
    let records = adds.column_by_name(add::NUM_RECORDS).unwrap();
    assert_eq!(records.as_primitive::<Int64Type>().value(0), 3);
    let mut text = Vec::new();
    write_add_lines(&adds, &mut text).unwrap();
    let first = String::from_utf8(text.clone()).unwrap();
    let first = first.lines().next().unwrap();
    assert_eq!(
        first,
        concat!(
            r#"{"add":{"path":"p=a%20b/x.parquet","partitionValues":{"p":"a b","q":null},"#,
            r#""size":10,"modificationTime":5,"dataChange":true,"#,
            r#""stats":"{\"numRecords\":3,\"minValues\":{\"x\":1}}","tags":{"k":"v"},"#,
            r#""deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","#,
            r#""offset":4,"sizeInBytes":40,"cardinality":6},"baseRowId":7,"#,
            r#""defaultRowCommitVersion":2,"clusteringProvider":"liquid"}}"#
        )
    );
    let decoded = decode(&text);
    let again = &decoded.file_actions[0].adds;
    assert_eq!(again, &adds);
}

#[test]
fn removes_from_adds_copy_the_extended_metadata() {
    let adds = add_rows(&[file("a.parquet")]).unwrap();
    let removes = removes_from_adds(&adds, 99, true).unwrap();
    let mut text = Vec::new();
    write_remove_lines(&removes, &mut text).unwrap();
    let line = String::from_utf8(text.clone()).unwrap();
    assert!(
        line.starts_with(concat!(
            r#"{"remove":{"path":"a.parquet","deletionTimestamp":99,"dataChange":true,"#,
            r#""extendedFileMetadata":true,"partitionValues":{"p":"a b","q":null},"size":10,"#
        )),
        "{line}"
    );
    assert!(line.contains(r#""baseRowId":7,"defaultRowCommitVersion":2}}"#));
    let decoded = decode(&text);
    let batch = &decoded.file_actions[0];
    assert!(batch.adds.is_null(0));
    let fields = batch.removes.fields().clone();
    for (index, field) in fields.iter().enumerate() {
        assert_eq!(
            batch.removes.column(index).as_ref(),
            removes.column(index).as_ref(),
            "{}",
            field.name()
        );
    }
}

#[test]
fn cdc_lines_decode() {
    let adds = add_rows(&[file("_change_data/c.parquet")]).unwrap();
    let cdc = StructArray::try_new(
        crate::actions::layout::cdc_fields(),
        vec![
            adds.column_by_name(add::PATH).unwrap().clone(),
            adds.column_by_name(add::PARTITION_VALUES).unwrap().clone(),
            adds.column_by_name(add::SIZE).unwrap().clone(),
            Arc::new(BooleanArray::from(vec![false])),
            adds.column_by_name(add::TAGS).unwrap().clone(),
        ],
        None,
    )
    .unwrap();
    let mut text = Vec::new();
    write_cdc_lines(&cdc, &mut text).unwrap();
    assert_eq!(
        String::from_utf8(text.clone()).unwrap().trim_end(),
        concat!(
            r#"{"cdc":{"path":"_change_data/c.parquet","partitionValues":{"p":"a b","q":null},"#,
            r#""size":10,"dataChange":false,"tags":{"k":"v"}}}"#
        )
    );
    assert_eq!(decode(&text).cdc_count, 1);
}

#[test]
fn bad_files_are_refused() {
    let mut bad = file("a");
    bad.stats = Some("[1]".into());
    assert!(matches!(add_rows(&[bad]), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        add_rows(&[file("")]),
        Err(Error::InvalidArgument(_))
    ));
}

/// The paths Delta on Spark 4.4 wrote for these partition values (Hive-escaped directory
/// names, then `Path.toUri`): non-ASCII stays, but white space and control characters are
/// escaped as UTF-8 (differential seed 344: Spark's VACUUM deleted live files written as
/// `%C3%A9`).
#[test]
fn paths_are_encoded_as_delta_on_spark_writes_them() {
    let cases = [
        ("p=é/f", "p=é/f"),
        ("p=emoji 🚀/f", "p=emoji%20🚀/f"),
        ("p=a%25b/f", "p=a%2525b/f"),
        ("p=x\u{a0}y/f", "p=x%C2%A0y/f"),
        ("p=c\u{85}d/f", "p=c%C2%85d/f"),
        ("p=z\u{2028}w/f", "p=z%E2%80%A8w/f"),
        ("p=q%23%3F/f", "p=q%2523%253F/f"),
        ("p=日本語/f", "p=日本語/f"),
    ];
    for (path, expected) in cases {
        assert_eq!(encode_path(path), expected, "{path:?}");
    }
}
