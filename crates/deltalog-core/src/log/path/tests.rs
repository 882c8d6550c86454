use super::*;
use chrono::{TimeZone, Utc};
use proptest::prelude::*;

fn meta(location: &str) -> ObjectMeta {
    ObjectMeta {
        location: Path::from(location),
        last_modified: Utc.timestamp_millis_opt(1_700_000_000_123).unwrap(),
        size: 42,
        e_tag: None,
        version: None,
    }
}

fn kind_of(name: &str) -> Option<(u64, LogFileKind)> {
    let path = LogPath::parse(&meta(&format!("table/_delta_log/{name}")))?;
    Some((path.version, path.kind))
}

#[test]
fn parses_a_commit_with_its_listing_metadata() {
    let path = LogPath::parse(&meta("t/_delta_log/00000000000000000010.json")).unwrap();
    assert_eq!(path.version, 10);
    assert_eq!(path.kind, LogFileKind::Commit);
    assert_eq!(path.size, 42);
    assert_eq!(path.last_modified_ms, 1_700_000_000_123);
    assert_eq!(path.file_name(), "00000000000000000010.json");
    assert!(path.is_commit() && !path.is_checkpoint());
}

#[test]
fn parses_every_checkpoint_naming_scheme() {
    assert_eq!(
        kind_of("00000000000000000010.checkpoint.parquet"),
        Some((10, LogFileKind::Checkpoint(CheckpointKind::Classic)))
    );
    assert_eq!(
        kind_of("00000000000000000010.checkpoint.0000000002.0000000003.parquet"),
        Some((
            10,
            LogFileKind::Checkpoint(CheckpointKind::MultiPart {
                part: 2,
                num_parts: 3
            })
        ))
    );
    assert_eq!(
        kind_of("00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"),
        Some((
            10,
            LogFileKind::Checkpoint(CheckpointKind::Uuid {
                uuid: "80a083e8-7026-4e79-81be-64bd76c43a11".to_string(),
                format: CheckpointFormat::Json
            })
        ))
    );
    assert_eq!(
        kind_of("00000000000000000020.checkpoint.80A083E8-7026-4E79-81BE-64BD76C43A11.parquet"),
        Some((
            20,
            LogFileKind::Checkpoint(CheckpointKind::Uuid {
                uuid: "80A083E8-7026-4E79-81BE-64BD76C43A11".to_string(),
                format: CheckpointFormat::Parquet
            })
        ))
    );
}

#[test]
fn parses_compactions_and_version_checksums() {
    assert_eq!(
        kind_of("00000000000000000004.00000000000000000006.compacted.json"),
        Some((4, LogFileKind::Compaction { end_version: 6 }))
    );
    assert_eq!(
        kind_of("00000000000000000007.00000000000000000007.compacted.json"),
        Some((7, LogFileKind::Compaction { end_version: 7 }))
    );
    assert_eq!(
        kind_of("00000000000000000003.crc"),
        Some((3, LogFileKind::Checksum))
    );
}

#[test]
fn rejects_files_that_are_not_log_files() {
    let foreign = [
        "_last_checkpoint",
        ".00000000000000000000.json.crc",
        ".00000000000000000010.checkpoint.parquet.crc",
        "00000000000000000000.json.tmp",
        ".00000000000000000000.json.5f1c6a3e-1d3b-4a7e-9f43-0c3e1e0b7d11.tmp",
        "00000000000000000000.json.crc",
        "0000000000000000000.json",
        "000000000000000000000.json",
        "0000000000000000000a.json",
        "+0000000000000000001.json",
        "abc.json",
        "00000000000000000000.JSON",
        "00000000000000000000.checkpoint.json",
        "00000000000000000000.checkpoint.parquet.crc",
        "00000000000000000000.checkpoint.1.2.parquet",
        "00000000000000000000.checkpoint.000000001.0000000002.parquet",
        "00000000000000000000.checkpoint.0000000000.0000000002.parquet",
        "00000000000000000000.checkpoint.0000000003.0000000002.parquet",
        "00000000000000000000.checkpoint.9999999999.9999999999.parquet",
        "00000000000000000000.checkpoint.0000000001.0000000002.json",
        "00000000000000000000.checkpoint.not-a-uuid.json",
        "00000000000000000000.checkpoint.80a083e870264e7981be64bd76c43a11.json",
        "00000000000000000000.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a1g.json",
        "00000000000000000000.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.avro",
        "00000000000000000006.00000000000000000004.compacted.json",
        "00000000000000000004.0000000000000000006.compacted.json",
        "00000000000000000004.00000000000000000006.compacted.parquet",
        "99999999999999999999.json",
        "00000000000000000001.crc.tmp",
    ];
    for name in foreign {
        assert_eq!(kind_of(name), None, "{name} must not parse");
    }
}

#[test]
fn rejects_files_below_the_log_directory() {
    let nested = [
        "t/_delta_log/_sidecars/00000000000000000002.checkpoint.0000000001.0000000002.bd1885fd-6ec0-4370-b0f5-43b5162fd4de.parquet",
        "t/_delta_log/_sidecars/00000000000000000001.json",
        "t/_delta_log/_commits/00000000000000000001.json",
        "t/00000000000000000001.json",
    ];
    for location in nested {
        assert_eq!(LogPath::parse(&meta(location)), None, "{location}");
    }
}

#[test]
fn accepts_a_location_relative_to_the_log_directory() {
    let path = LogPath::parse(&meta("00000000000000000001.json")).unwrap();
    assert_eq!(path.version, 1);
    let path = LogPath::parse(&meta("_delta_log/00000000000000000001.crc")).unwrap();
    assert_eq!(path.kind, LogFileKind::Checksum);
}

#[test]
fn builders_write_the_documented_names() {
    assert_eq!(commit_file_name(0), "00000000000000000000.json");
    assert_eq!(
        multi_part_checkpoint_file_name(10, 2, 3),
        "00000000000000000010.checkpoint.0000000002.0000000003.parquet"
    );
    assert_eq!(
        compaction_file_name(4, 6),
        "00000000000000000004.00000000000000000006.compacted.json"
    );
    assert_eq!(
        uuid_checkpoint_file_name(
            10,
            "80a083e8-7026-4e79-81be-64bd76c43a11",
            CheckpointFormat::Json
        ),
        "00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"
    );
    assert_eq!(checksum_file_name(u64::MAX), "18446744073709551615.crc");
    assert_eq!(
        classic_checkpoint_file_name(7),
        "00000000000000000007.checkpoint.parquet"
    );
}

fn any_kind() -> impl Strategy<Value = (u64, LogFileKind)> {
    let version = any::<u64>();
    prop_oneof![
        version.prop_map(|v| (v, LogFileKind::Commit)),
        version.prop_map(|v| (v, LogFileKind::Checksum)),
        version.prop_map(|v| (v, LogFileKind::Checkpoint(CheckpointKind::Classic))),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| (
            a.min(b),
            LogFileKind::Compaction {
                end_version: a.max(b)
            }
        )),
        (version, 1..=u32::MAX, any::<u32>()).prop_map(|(v, num_parts, seed)| {
            let part = seed % num_parts + 1;
            (
                v,
                LogFileKind::Checkpoint(CheckpointKind::MultiPart { part, num_parts }),
            )
        }),
        (version, any::<u128>(), any::<bool>()).prop_map(|(v, bits, json)| {
            let format = if json {
                CheckpointFormat::Json
            } else {
                CheckpointFormat::Parquet
            };
            let uuid = uuid::Uuid::from_u128(bits).to_string();
            (
                v,
                LogFileKind::Checkpoint(CheckpointKind::Uuid { uuid, format }),
            )
        }),
    ]
}

proptest! {
    #[test]
    fn every_built_name_parses_back((version, kind) in any_kind()) {
        let name = log_file_name(version, &kind);
        prop_assert_eq!(parse_file_name(&name), Some((version, kind.clone())));
        let path = LogPath::parse(&meta(&format!("a/b/_delta_log/{name}"))).unwrap();
        prop_assert_eq!(path.file_name(), name.as_str());
        prop_assert_eq!(path.kind, kind);
    }

    #[test]
    fn arbitrary_names_never_panic(name in "[0-9a-z._-]{0,80}") {
        let _ = parse_file_name(&name);
    }
}
