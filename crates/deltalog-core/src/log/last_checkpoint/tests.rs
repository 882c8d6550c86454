use super::*;

const SPEC_VECTOR: &str = r#"{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}"#;

#[test]
fn the_spec_test_vector_canonicalises_and_hashes_as_published() {
    assert_eq!(
        canonical_json(SPEC_VECTOR).unwrap(),
        r#""k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7""#
    );
    assert_eq!(
        json_checksum(SPEC_VECTOR).unwrap(),
        "6a92d155a59bf2eecbd4b4ec7fd1f875"
    );
}

#[test]
fn the_spec_object_and_array_examples_canonicalise_as_published() {
    assert_eq!(
        canonical_json(r#"{"a": 10, "b": {"y": null, "x": "https://delta.io"} }"#).unwrap(),
        r#""a"=10,"b"+"x"="https%3A%2F%2Fdelta.io","b"+"y"=null"#
    );
    assert_eq!(
        canonical_json(r#"[null, "hi ho", 2.71]"#).unwrap(),
        r#"0=null,1="hi%20ho",2=2.71"#
    );
    assert_eq!(
        canonical_json(r#"{"k1": "v1", "checksum": "<anything>", "k3": 23}"#).unwrap(),
        r#""k1"="v1","k3"=23"#
    );
}

#[test]
fn numbers_keep_their_token_and_literals_are_bare() {
    assert_eq!(
        canonical_json(r#"{"a":1.0,"b":1,"c":-0.5E+3,"d":true,"e":false}"#).unwrap(),
        r#""a"=1.0,"b"=1,"c"=-0.5E+3,"d"=true,"e"=false"#
    );
    assert_ne!(
        json_checksum(r#"{"a":1.0}"#).unwrap(),
        json_checksum(r#"{"a":1}"#).unwrap()
    );
}

#[test]
fn strict_url_encoding_of_keys_and_strings() {
    assert_eq!(
        canonical_json(r#"{"a b+c":"x%y~z-._>é\u00e9\ud83d\ude00\"/"}"#).unwrap(),
        r#""a%20b%2Bc"="x%25y~z-._%3E%C3%A9%C3%A9%F0%9F%98%80%22%2F""#
    );
}

#[test]
fn paths_sort_by_bytes_so_index_10_comes_before_2() {
    let canonical = canonical_json(r#"{"a":[0,1,2,3,4,5,6,7,8,9,10]}"#).unwrap();
    assert!(
        canonical.starts_with(r#""a"+0=0,"a"+1=1,"a"+10=10,"a"+2=2"#),
        "{canonical}"
    );
    assert_eq!(
        canonical_json(r#"{"b":1,"a":{"z":1},"a~":2,"A":3}"#).unwrap(),
        r#""A"=3,"a"+"z"=1,"a~"=2,"b"=1"#
    );
}

#[test]
fn empty_containers_give_no_pairs_and_only_the_top_checksum_is_dropped() {
    assert_eq!(
        canonical_json(r#"{"a":{},"b":[],"c":{"checksum":"x"},"checksum":"y"}"#).unwrap(),
        r#""c"+"checksum"="x""#
    );
}

#[test]
fn invalid_json_is_refused() {
    let invalid = [
        "",
        "{",
        r#"{"a":1,}"#,
        r#"{"a":1} x"#,
        r#"{"a":01}"#,
        r#"{"a":1.}"#,
        r#"{"a":.5}"#,
        r#"{"a":+1}"#,
        r#"{"a":"\ud800"}"#,
        r#"{"a":"\udc00"}"#,
        "{\"a\":\"\u{1}\"}",
        r#"{"a":"\x"}"#,
        r#"{"a":tru}"#,
        r#"{'a':1}"#,
        r#"{"a" 1}"#,
        "[1 2]",
    ];
    for text in invalid {
        assert!(
            matches!(canonical_json(text), Err(Error::InvalidArgument(_))),
            "{text:?} must be refused"
        );
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(canonical_json(&deep).is_err());
}

#[test]
fn duplicate_keys_anywhere_are_refused() {
    assert!(canonical_json(r#"{"a":1,"a":2}"#).is_err());
    assert!(canonical_json(r#"{"a":{"b":1,"c":2,"b":3}}"#).is_err());
    assert!(canonical_json(r#"{"a":[{"b":1},{"b":2}]}"#).is_ok());
    assert!(canonical_json(r#"{"a":1,"\u0061":2}"#).is_err());
    let error = parse_last_checkpoint(
        br#"{"version":1,"size":2,"version":3}"#,
        "log/_last_checkpoint",
    )
    .unwrap_err();
    match error {
        Error::CorruptLogFile { path, reason } => {
            assert_eq!(path, "log/_last_checkpoint");
            assert!(reason.contains("duplicate key \"version\""), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn parses_all_fields_and_ignores_unknown_ones() {
    let text = br#"{"version":10,"size":13,"parts":2,"sizeInBytes":14800,"numOfAddFiles":1,
        "checkpointSchema":{"type":"struct","fields":[]},"tags":{"k":"v"},
        "v2Checkpoint":{"path":"x.json"},"somethingNew":[1,2]}"#;
    let hint = parse_last_checkpoint(text, "_last_checkpoint").unwrap();
    assert_eq!(hint.version, 10);
    assert_eq!(hint.size, Some(13));
    assert_eq!(hint.parts, Some(2));
    assert_eq!(hint.size_in_bytes, Some(14800));
    assert_eq!(hint.num_of_add_files, Some(1));
    assert_eq!(
        hint.checkpoint_schema,
        Some(serde_json::json!({"type":"struct","fields":[]}))
    );
    assert_eq!(
        hint.tags,
        Some(HashMap::from([("k".to_string(), "v".to_string())]))
    );
    assert_eq!(
        hint.v2_checkpoint,
        Some(serde_json::json!({"path":"x.json"}))
    );
    assert_eq!(hint.checksum, None);
}

#[test]
fn minimal_and_null_fields() {
    let hint = parse_last_checkpoint(br#"{"version":3,"parts":null}"#, "f").unwrap();
    assert_eq!(
        hint,
        LastCheckpointHint {
            version: 3,
            ..LastCheckpointHint::default()
        }
    );
}

#[test]
fn corrupt_hints_name_the_file() {
    let corrupt: [&[u8]; 8] = [
        b"",
        b"  \n",
        b"\xff\xfe",
        br#"{"size":1}"#,
        br#"{"version":-1}"#,
        br#"{"version":"1"}"#,
        br#"{"version":1,"parts":0}"#,
        br#"[1]"#,
    ];
    for bytes in corrupt {
        match parse_last_checkpoint(bytes, "t/_delta_log/_last_checkpoint") {
            Err(Error::CorruptLogFile { path, .. }) => {
                assert_eq!(path, "t/_delta_log/_last_checkpoint")
            }
            other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(bytes)),
        }
    }
}

#[test]
fn checksums_are_verified() {
    let unsigned = r#"{"version":1,"size":2,"tags":{"a b":"c"}}"#;
    let checksum = json_checksum(unsigned).unwrap();
    let signed =
        format!(r#"{{"version":1,"size":2,"checksum":"{checksum}","tags":{{"a b":"c"}}}}"#);
    let hint = parse_last_checkpoint(signed.as_bytes(), "f").unwrap();
    assert_eq!(hint.checksum.as_deref(), Some(checksum.as_str()));
    let upper = signed.replace(&checksum, &checksum.to_uppercase());
    assert!(parse_last_checkpoint(upper.as_bytes(), "f").is_ok());

    let tampered = signed.replace(r#""size":2"#, r#""size":3"#);
    match parse_last_checkpoint(tampered.as_bytes(), "f") {
        Err(Error::CorruptLogFile { reason, .. }) => {
            assert!(reason.contains("checksum mismatch"), "{reason}")
        }
        other => panic!("unexpected {other:?}"),
    }
    let reformatted = signed.replace(r#""size":2"#, r#""size":2.0"#);
    assert!(parse_last_checkpoint(reformatted.as_bytes(), "f").is_err());
    let not_a_string = r#"{"version":1,"checksum":5}"#;
    assert!(parse_last_checkpoint(not_a_string.as_bytes(), "f").is_err());
}

#[test]
fn written_hints_parse_back_with_a_valid_checksum() {
    let hint = LastCheckpointHint {
        version: 42,
        size: Some(7),
        parts: Some(3),
        size_in_bytes: Some(1 << 40),
        num_of_add_files: Some(5),
        checkpoint_schema: Some(
            serde_json::json!({"type":"struct","fields":[{"name":"é x","n":1.5}]}),
        ),
        checksum: Some("stale".to_string()),
        tags: Some(HashMap::from([("k%".to_string(), "v+".to_string())])),
        v2_checkpoint: Some(serde_json::json!({"path":"p","sidecarFiles":[]})),
    };
    let bytes = write_last_checkpoint(&hint).unwrap();
    let parsed = parse_last_checkpoint(&bytes, "f").unwrap();
    let expected_checksum = parsed.checksum.clone().unwrap();
    assert_eq!(expected_checksum.len(), 32);
    assert_ne!(expected_checksum, "stale");
    assert_eq!(
        parsed,
        LastCheckpointHint {
            checksum: Some(expected_checksum),
            ..hint
        }
    );
    let minimal = write_last_checkpoint(&LastCheckpointHint {
        version: 1,
        size: Some(2),
        ..LastCheckpointHint::default()
    })
    .unwrap();
    let text = String::from_utf8(minimal).unwrap();
    assert!(
        text.starts_with(r#"{"version":1,"size":2,"checksum":""#),
        "{text}"
    );
}

#[test]
fn golden_hints_written_by_delta_on_spark_verify() {
    let Some(golden) = crate::log::segment::golden_tables_dir() else {
        return;
    };
    let mut verified = 0;
    for entry in std::fs::read_dir(golden).unwrap() {
        let table = entry.unwrap().path();
        let hint_path = table.join("delta/_delta_log/_last_checkpoint");
        let Ok(bytes) = std::fs::read(&hint_path) else {
            continue;
        };
        let name = hint_path.display().to_string();
        let parsed = parse_last_checkpoint(&bytes, &name);
        if table.ends_with("corrupted-last-checkpoint-kernel") {
            assert!(
                matches!(parsed, Err(Error::CorruptLogFile { .. })),
                "{name}"
            );
            continue;
        }
        let hint = parsed.unwrap_or_else(|error| panic!("{name}: {error}"));
        if hint.checksum.is_some() {
            verified += 1;
        }
        let log = table.join("delta/_delta_log");
        let has_checkpoint = std::fs::read_dir(&log).unwrap().any(|file| {
            let file_name = file.unwrap().file_name().to_string_lossy().into_owned();
            file_name.starts_with(&format!("{:020}.checkpoint.", hint.version))
        });
        assert!(has_checkpoint, "{name} points at a missing checkpoint");
    }
    assert_eq!(verified, 9, "golden hints carrying a checksum");
}
