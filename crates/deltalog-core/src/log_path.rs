//! Names of the files in `_delta_log`, parsed once into typed values (spec "Delta Log Entries",
//! "Checkpoints", "Log Compaction Files"; catalogue ..A-13, A-26).
//!
//! Every name a listing returns goes through [`LogPath::parse`]; everything that is not a commit,
//! a checkpoint, a compaction or a version checksum (`_last_checkpoint`, sidecars, `_commits/`,
//! Hadoop `.crc` side files, temporary files, foreign files) is `None` and is skipped by the
//! caller. The name builders at the end of the public section are the exact inverses of the
//! parser, for writers.

use object_store::path::Path;
use object_store::ObjectMeta;

/// The directory of the log under the table root (catalogue A-01).
pub const DELTA_LOG_DIR: &str = "_delta_log";

/// The name of the checkpoint hint inside `_delta_log` (catalogue A-13).
pub const LAST_CHECKPOINT_FILE: &str = "_last_checkpoint";

/// The directory of V2 checkpoint sidecars inside `_delta_log` (catalogue A-11).
pub const SIDECARS_DIR: &str = "_sidecars";

/// One file of `_delta_log`, with its name already understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPath {
    /// Where the file is in the store.
    pub location: Path,
    /// The table version of the file. For a compaction file: the first version it covers.
    pub version: u64,
    /// What the file is.
    pub kind: LogFileKind,
    /// The size in bytes reported by the listing.
    pub size: u64,
    /// The modification time reported by the listing, in ms since the epoch.
    pub last_modified_ms: i64,
}

/// The kinds of file that make up the log.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LogFileKind {
    /// `<v>.json` (catalogue A-03).
    Commit,
    /// A checkpoint file (catalogue A-08..A-10).
    Checkpoint(CheckpointKind),
    /// `<x>.<y>.compacted.json`: the reconciled actions of commits `x..=y` (catalogue A-12).
    Compaction {
        /// The last version covered (`y`); the first one is [`LogPath::version`].
        end_version: u64,
    },
    /// `<v>.crc`: the version checksum file Delta on Spark writes next to commits.
    Checksum,
}

/// How a checkpoint file is named (spec "Checkpoint Naming Scheme").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CheckpointKind {
    /// `<v>.checkpoint.parquet`: one file, V1 or V2 content (catalogue A-08).
    Classic,
    /// `<v>.checkpoint.<o>.<p>.parquet`: part `o` of `p`, V1 content (catalogue A-09).
    MultiPart {
        /// The 1-based part number `o`.
        part: u32,
        /// The number of parts `p`.
        num_parts: u32,
    },
    /// `<v>.checkpoint.<uuid>.(json|parquet)`: a V2 checkpoint (catalogue A-10).
    Uuid {
        /// The UUID as written in the name (hyphenated form).
        uuid: String,
        /// The file format the extension names.
        format: CheckpointFormat,
    },
}

/// The file format of a UUID-named checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckpointFormat {
    /// Newline-delimited JSON actions, like a commit.
    Json,
    /// Parquet with one struct column per action type.
    Parquet,
}

impl LogPath {
    /// Parses a listed object. `None` when it is not a log file (catalogue A-26): the name does
    /// not match one of the log file patterns exactly, or the object is not directly inside
    /// `_delta_log` (sidecars in `_delta_log/_sidecars/`, staged commits in `_delta_log/_commits/`).
    pub fn parse(meta: &ObjectMeta) -> Option<LogPath> {
        LogPath::parse_location(
            &meta.location,
            meta.size,
            meta.last_modified.timestamp_millis(),
        )
    }

    /// [`LogPath::parse`] for a location whose size and modification time are known otherwise.
    /// The location's parent directory must be `_delta_log`, or absent (a store rooted at
    /// `_delta_log` itself).
    pub fn parse_location(location: &Path, size: u64, last_modified_ms: i64) -> Option<LogPath> {
        let parts: Vec<_> = location.parts().collect();
        let (name, parent) = match parts.as_slice() {
            [.., parent, name] => (name.as_ref(), Some(parent.as_ref())),
            [name] => (name.as_ref(), None),
            [] => return None,
        };
        if parent.is_some_and(|parent| parent != DELTA_LOG_DIR) {
            return None;
        }
        let (version, kind) = parse_file_name(name)?;
        Some(LogPath {
            location: location.clone(),
            version,
            kind,
            size,
            last_modified_ms,
        })
    }

    /// The file's name, without the directories before it.
    pub fn file_name(&self) -> &str {
        self.location
            .as_ref()
            .rsplit('/')
            .next()
            .unwrap_or_default()
    }

    /// True for a commit file.
    pub fn is_commit(&self) -> bool {
        self.kind == LogFileKind::Commit
    }

    /// True for any kind of checkpoint file.
    pub fn is_checkpoint(&self) -> bool {
        matches!(self.kind, LogFileKind::Checkpoint(_))
    }
}

/// Parses a bare file name of `_delta_log` into its version and kind; `None` for anything that is
/// not exactly one of the log file patterns.
pub fn parse_file_name(name: &str) -> Option<(u64, LogFileKind)> {
    let (version_text, rest) = name.split_at_checked(VERSION_DIGITS)?;
    let version = parse_fixed_digits(version_text, VERSION_DIGITS)?;
    let kind = match rest {
        ".json" => LogFileKind::Commit,
        ".crc" => LogFileKind::Checksum,
        ".checkpoint.parquet" => LogFileKind::Checkpoint(CheckpointKind::Classic),
        _ => {
            if let Some(checkpoint_rest) = rest.strip_prefix(".checkpoint.") {
                LogFileKind::Checkpoint(parse_checkpoint_suffix(checkpoint_rest)?)
            } else {
                parse_compaction_suffix(version, rest)?
            }
        }
    };
    Some((version, kind))
}

/// The name of the file of `kind` for `version`: the inverse of [`parse_file_name`]. For a
/// compaction, `version` is the first version covered.
pub fn log_file_name(version: u64, kind: &LogFileKind) -> String {
    match kind {
        LogFileKind::Commit => commit_file_name(version),
        LogFileKind::Checksum => checksum_file_name(version),
        LogFileKind::Compaction { end_version } => compaction_file_name(version, *end_version),
        LogFileKind::Checkpoint(CheckpointKind::Classic) => classic_checkpoint_file_name(version),
        LogFileKind::Checkpoint(CheckpointKind::MultiPart { part, num_parts }) => {
            multi_part_checkpoint_file_name(version, *part, *num_parts)
        }
        LogFileKind::Checkpoint(CheckpointKind::Uuid { uuid, format }) => {
            uuid_checkpoint_file_name(version, uuid, *format)
        }
    }
}

/// `<v>.json` (catalogue A-03).
pub fn commit_file_name(version: u64) -> String {
    format!("{version:020}.json")
}

/// `<v>.checkpoint.parquet` (catalogue A-08).
pub fn classic_checkpoint_file_name(version: u64) -> String {
    format!("{version:020}.checkpoint.parquet")
}

/// `<v>.checkpoint.<part>.<num_parts>.parquet`, the numbers padded to 10 digits (catalogue A-09).
pub fn multi_part_checkpoint_file_name(version: u64, part: u32, num_parts: u32) -> String {
    format!("{version:020}.checkpoint.{part:010}.{num_parts:010}.parquet")
}

/// `<v>.checkpoint.<uuid>.json` or `.parquet` (catalogue A-10). `uuid` should be the hyphenated
/// form (`uuid::Uuid::to_string`); other text does not parse back.
pub fn uuid_checkpoint_file_name(version: u64, uuid: &str, format: CheckpointFormat) -> String {
    let extension = match format {
        CheckpointFormat::Json => "json",
        CheckpointFormat::Parquet => "parquet",
    };
    format!("{version:020}.checkpoint.{uuid}.{extension}")
}

/// `<start>.<end>.compacted.json`, both padded to 20 digits (catalogue A-12).
pub fn compaction_file_name(start_version: u64, end_version: u64) -> String {
    format!("{start_version:020}.{end_version:020}.compacted.json")
}

/// `<v>.crc`, the version checksum file.
pub fn checksum_file_name(version: u64) -> String {
    format!("{version:020}.crc")
}

const VERSION_DIGITS: usize = 20;
const PART_DIGITS: usize = 10;
const UUID_TEXT_LEN: usize = 36;

/// Parses what follows `<v>.checkpoint.` in a UUID-named or multi-part checkpoint name.
fn parse_checkpoint_suffix(rest: &str) -> Option<CheckpointKind> {
    if let Some((uuid, format)) = parse_uuid_suffix(rest) {
        return Some(CheckpointKind::Uuid {
            uuid: uuid.to_string(),
            format,
        });
    }
    let parts = rest.strip_suffix(".parquet")?;
    let (part_text, num_parts_text) = parts.split_once('.')?;
    let part = u32::try_from(parse_fixed_digits(part_text, PART_DIGITS)?).ok()?;
    let num_parts = u32::try_from(parse_fixed_digits(num_parts_text, PART_DIGITS)?).ok()?;
    (1..=num_parts)
        .contains(&part)
        .then_some(CheckpointKind::MultiPart { part, num_parts })
}

/// Splits `<uuid>.json` / `<uuid>.parquet`, with the UUID in hyphenated 8-4-4-4-12 form.
fn parse_uuid_suffix(rest: &str) -> Option<(&str, CheckpointFormat)> {
    let (uuid, format) = if let Some(uuid) = rest.strip_suffix(".json") {
        (uuid, CheckpointFormat::Json)
    } else {
        (rest.strip_suffix(".parquet")?, CheckpointFormat::Parquet)
    };
    is_hyphenated_uuid(uuid).then_some((uuid, format))
}

/// Parses what follows `<x>` in `<x>.<y>.compacted.json`; `None` unless `x <= y`.
fn parse_compaction_suffix(start_version: u64, rest: &str) -> Option<LogFileKind> {
    let end_text = rest.strip_prefix('.')?.strip_suffix(".compacted.json")?;
    let end_version = parse_fixed_digits(end_text, VERSION_DIGITS)?;
    (start_version <= end_version).then_some(LogFileKind::Compaction { end_version })
}

/// Parses exactly `width` ASCII digits; `None` for anything else or an overflow.
fn parse_fixed_digits(text: &str, width: usize) -> Option<u64> {
    if text.len() != width || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn is_hyphenated_uuid(text: &str) -> bool {
    text.len() == UUID_TEXT_LEN
        && text.bytes().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
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
}
