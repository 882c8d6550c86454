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
pub(crate) const DELTA_LOG_DIR: &str = "_delta_log";

/// The name of the checkpoint hint inside `_delta_log` (catalogue A-13).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const LAST_CHECKPOINT_FILE: &str = "_last_checkpoint";

/// The directory of V2 checkpoint sidecars inside `_delta_log` (catalogue A-11).
pub(crate) const SIDECARS_DIR: &str = "_sidecars";

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
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn parse_file_name(name: &str) -> Option<(u64, LogFileKind)> {
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
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn log_file_name(version: u64, kind: &LogFileKind) -> String {
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
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn commit_file_name(version: u64) -> String {
    format!("{version:020}.json")
}

/// `<v>.checkpoint.parquet` (catalogue A-08).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn classic_checkpoint_file_name(version: u64) -> String {
    format!("{version:020}.checkpoint.parquet")
}

/// `<v>.checkpoint.<part>.<num_parts>.parquet`, the numbers padded to 10 digits (catalogue A-09).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn multi_part_checkpoint_file_name(version: u64, part: u32, num_parts: u32) -> String {
    format!("{version:020}.checkpoint.{part:010}.{num_parts:010}.parquet")
}

/// `<v>.checkpoint.<uuid>.json` or `.parquet` (catalogue A-10). `uuid` should be the hyphenated
/// form (`uuid::Uuid::to_string`); other text does not parse back.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn uuid_checkpoint_file_name(
    version: u64,
    uuid: &str,
    format: CheckpointFormat,
) -> String {
    let extension = match format {
        CheckpointFormat::Json => "json",
        CheckpointFormat::Parquet => "parquet",
    };
    format!("{version:020}.checkpoint.{uuid}.{extension}")
}

/// `<start>.<end>.compacted.json`, both padded to 20 digits (catalogue A-12).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn compaction_file_name(start_version: u64, end_version: u64) -> String {
    format!("{start_version:020}.{end_version:020}.compacted.json")
}

/// `<v>.crc`, the version checksum file.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn checksum_file_name(version: u64) -> String {
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
mod tests;
