//! Decoding one JSON commit (spec "Delta Log Entries", catalogue A-04, B).
//!
//! A commit is newline-delimited JSON, one action per line, keyed by the action name. Lines
//! holding `add` or `remove` go, as they are, through arrow-json's decoder into a
//! [`FileActionBatch`]; the few other actions become structs. Unknown actions are skipped after
//! checking they are valid JSON (catalogue B-02).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_json::ReaderBuilder;
use serde::de::DeserializeOwned;

use crate::actions::layout::{file_action_schema, finish_adds, FileActionBatch};
use crate::actions::{
    CheckpointMetadata, CommitInfo, DomainMetadata, Metadata, Protocol, Sidecar, Txn,
};
use crate::error::{Error, Result};
use crate::log::decode::add_scanner::{scan_file_actions, StatsText};
use crate::util::json_cursor::Cursor;
use crate::util::json_text::mend_wide_surrogates;

/// The actions of one commit (or of a JSON V2 checkpoint or a compaction file).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DecodedActions {
    /// `add` and `remove` rows, in batches; empty when there are none.
    pub file_actions: Vec<FileActionBatch>,
    pub protocol: Option<Protocol>,
    pub metadata: Option<Metadata>,
    pub txns: Vec<Txn>,
    pub domains: Vec<DomainMetadata>,
    pub commit_info: Option<CommitInfo>,
    pub checkpoint_metadata: Option<CheckpointMetadata>,
    pub sidecars: Vec<Sidecar>,
    /// How many `cdc` actions the file holds.
    pub cdc_count: usize,
}

/// One line of a commit: the action name and the line's bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActionLine<'a> {
    pub name: &'a str,
    pub json: &'a [u8],
}

/// How to decode a JSON log file.
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DecodeOptions {
    /// The file actions are already reconciled (JSON V2 checkpoints, compaction files).
    pub from_checkpoint: bool,
    /// What becomes of the `stats` strings of `add` actions (their `numRecords` is always
    /// kept). [`StatsText::Escaped`] holds only for the lines the fast scanner reads (the batch
    /// says so in [`FileActionBatch::stats_escaped`]); lines of other shapes keep them decoded.
    pub stats: StatsText,
    /// Check that `add` and `remove` lines are JSON but decode none of them
    /// ([`DecodedActions::file_actions`] stays empty): for states that need no file list.
    pub skip_file_actions: bool,
    /// Check that `commitInfo` lines are JSON but decode none of them
    /// ([`DecodedActions::commit_info`] stays `None`): for the commits of a state older than
    /// its version, whose provenance it does not keep.
    pub skip_commit_info: bool,
}

/// Decodes the actions in `bytes`, the content of the log file `file` at `version`.
/// Errors name the file and the line.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_actions(
    bytes: &[u8],
    version: u64,
    file: &str,
    options: DecodeOptions,
) -> Result<DecodedActions> {
    let mut decoded = DecodedActions::default();
    let mut file_lines: Vec<&[u8]> = Vec::new();
    for (index, line) in action_lines(bytes, file) {
        let line = line?;
        let at_line = |error: &dyn std::fmt::Display| {
            Error::corrupt(file, format!("line {}: {error}", index + 1))
        };
        match line.name {
            "add" | "remove" if options.skip_file_actions => {
                validate_json(line.json).map_err(|e| at_line(&e))?
            }
            "add" | "remove" => file_lines.push(line.json),
            "cdc" => {
                validate_json(line.json).map_err(|e| at_line(&e))?;
                decoded.cdc_count += 1;
            }
            "protocol" => replace_once(
                &mut decoded.protocol,
                action(line).map_err(|e| at_line(&e))?,
            )
            .map_err(|e| at_line(&e))?,
            "metaData" => replace_once(
                &mut decoded.metadata,
                action(line).map_err(|e| at_line(&e))?,
            )
            .map_err(|e| at_line(&e))?,
            "txn" => decoded.txns.push(action(line).map_err(|e| at_line(&e))?),
            "domainMetadata" => decoded.domains.push(action(line).map_err(|e| at_line(&e))?),
            "commitInfo" if options.skip_commit_info => {
                validate_json(line.json).map_err(|e| at_line(&e))?
            }
            "commitInfo" => decoded.commit_info = Some(commit_info(line).map_err(|e| at_line(&e))?),
            "checkpointMetadata" => {
                decoded.checkpoint_metadata = Some(action(line).map_err(|e| at_line(&e))?)
            }
            "sidecar" => decoded
                .sidecars
                .push(action(line).map_err(|e| at_line(&e))?),
            _ => validate_json(line.json).map_err(|e| at_line(&e))?,
        }
    }
    if !file_lines.is_empty() {
        decoded
            .file_actions
            .push(decode_file_actions(&file_lines, version, file, options)?);
    }
    Ok(decoded)
}

/// The `commitInfo` of the commit file `file` holding `bytes`: its first `commitInfo` action,
/// or `None` when it has none. Lines after it are not looked at. Errors name the file and the
/// line.
pub(crate) fn read_commit_info(bytes: &[u8], file: &str) -> Result<Option<CommitInfo>> {
    for (index, line) in action_lines(bytes, file) {
        let line = line?;
        if line.name == "commitInfo" {
            return commit_info(line)
                .map(Some)
                .map_err(|error| Error::corrupt(file, format!("line {}: {error}", index + 1)));
        }
    }
    Ok(None)
}

/// Decodes a `commitInfo` line (spec "Commit Provenance Information"): the object as written.
pub(crate) fn commit_info(line: ActionLine<'_>) -> serde_json::Result<CommitInfo> {
    action(line).map(|raw| CommitInfo { raw })
}

/// The non-empty lines of a log file with their action names, numbered from 0.
pub(crate) fn action_lines<'a>(
    bytes: &'a [u8],
    file: &'a str,
) -> impl Iterator<Item = (usize, Result<ActionLine<'a>>)> + 'a {
    lines_of(bytes)
        .enumerate()
        .filter(|(_, line)| !line.trim_ascii().is_empty())
        .map(move |(index, line)| {
            let line = line.trim_ascii();
            let name = action_name(line).ok_or_else(|| {
                Error::corrupt(
                    file,
                    format!(
                        "line {}: not a JSON object keyed by an action name: {}",
                        index + 1,
                        preview(line)
                    ),
                )
            });
            (index, name.map(|name| ActionLine { name, json: line }))
        })
}

/// The lines of `bytes`, split at each `\n` (the last one ends the text or is followed by
/// the empty line after it).
fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(bytes);
    std::iter::from_fn(move || {
        let text = rest?;
        match memchr::memchr(b'\n', text) {
            Some(end) => {
                rest = Some(&text[end + 1..]);
                Some(&text[..end])
            }
            None => rest.take(),
        }
    })
}

/// Decodes `add`/`remove` lines into one batch of [`file_action_schema`], the adds finished
/// ([`finish_adds`]): through the fast scanner of the common line shape
/// ([`scan_file_actions`]), or the generic decoder when a line is of another shape.
fn decode_file_actions(
    lines: &[&[u8]],
    version: u64,
    file: &str,
    options: DecodeOptions,
) -> Result<FileActionBatch> {
    let from_checkpoint = options.from_checkpoint;
    if let Some(batch) = scan_file_actions(lines, options.stats) {
        let mut actions =
            FileActionBatch::from_record_batch(&batch, version, from_checkpoint, file)?;
        actions.stats_escaped = options.stats == StatsText::Escaped;
        return Ok(actions);
    }
    let batch = decode_file_lines(lines, file)?;
    let mut actions = FileActionBatch::from_record_batch(&batch, version, from_checkpoint, file)?;
    actions.adds = finish_adds(actions.adds, None, options.stats != StatsText::Dropped)?;
    Ok(actions)
}

/// The generic decoder: `add`/`remove` lines of any shape through arrow-json, as one batch of
/// [`file_action_schema`]. Errors name `file`.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_file_lines(lines: &[&[u8]], file: &str) -> Result<RecordBatch> {
    let context = |error| Error::corrupt(file, error);
    let mut decoder = ReaderBuilder::new(file_action_schema())
        .with_batch_size(lines.len().max(1))
        .build_decoder()
        .map_err(context)?;
    let mut buffer = Vec::with_capacity(lines.iter().map(|line| line.len() + 1).sum());
    for line in lines {
        buffer.extend_from_slice(line);
        buffer.push(b'\n');
    }
    let buffer = mend_wide_surrogates(&buffer);
    let mut rest = &buffer[..];
    while !rest.is_empty() {
        let consumed = decoder.decode(rest).map_err(context)?;
        if consumed == 0 {
            break;
        }
        rest = &rest[consumed..];
    }
    decoder
        .flush()
        .map_err(context)?
        .ok_or_else(|| Error::corrupt(file, "its add and remove lines decoded to nothing"))
}

/// The first key of a JSON object line, read without parsing the rest.
fn action_name(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(b"{")?.trim_ascii_start();
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|byte| *byte == b'"')?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// The value of the single action in `line`.
fn action<T: DeserializeOwned>(line: ActionLine<'_>) -> serde_json::Result<T> {
    let mut object: HashMap<String, T> = serde_json::from_slice(line.json)?;
    object
        .remove(line.name)
        .ok_or_else(|| serde::de::Error::custom(format!("no '{}' key", line.name)))
}

/// Checks that `line` is UTF-8 JSON without decoding it: by the cursor's skip, which accepts
/// only well-formed JSON, or, for what it does not take (a lone surrogate, deep nesting), by
/// serde_json. (serde_json skips over the strings of a value it ignores without checking
/// their UTF-8, hence the separate check.)
fn validate_json(line: &[u8]) -> std::result::Result<(), String> {
    let text = std::str::from_utf8(line).map_err(|error| format!("not UTF-8: {error}"))?;
    let mut cursor = Cursor::new(text);
    if cursor.skip_value(0).and_then(|()| cursor.end()).is_some() {
        return Ok(());
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(line)
        .map(|_| ())
        .map_err(|error| error.to_string())
}

/// Stores `value` in `slot`, refusing a second one (catalogue C-15: one protocol and one
/// metaData per commit).
fn replace_once<T>(slot: &mut Option<T>, value: T) -> std::result::Result<(), String> {
    if slot.is_some() {
        return Err("a second action of a kind that may appear once per commit".to_string());
    }
    *slot = Some(value);
    Ok(())
}

fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(80)]);
    if line.len() > 80 {
        format!("{text}...")
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, StringArray};

    const COMMIT: &str = r#"{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE","operationParameters":{"mode":"Append"}}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"abc","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{},"createdTime":1}}
{"add":{"path":"a%20b.parquet","partitionValues":{},"size":10,"modificationTime":5,"dataChange":true,"stats":"{\"numRecords\":3}"}}
{"remove":{"path":"old.parquet","deletionTimestamp":7,"dataChange":true}}
{"txn":{"appId":"app","version":3}}
{"futureAction":{"x":[1,2]}}
"#;

    #[test]
    fn decodes_every_action_kind() {
        let decoded =
            decode_actions(COMMIT.as_bytes(), 4, "c.json", DecodeOptions::default()).unwrap();
        assert_eq!(decoded.protocol.unwrap().min_writer_version, 2);
        assert_eq!(decoded.metadata.unwrap().id, "abc");
        assert_eq!(decoded.txns[0].app_id, "app");
        assert_eq!(
            decoded.commit_info.unwrap().timestamp(),
            Some(1700000000000)
        );
        let files = &decoded.file_actions[0];
        assert_eq!(files.num_rows(), 2);
        let paths = files.adds.column_by_name("path").unwrap();
        let paths = paths.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(paths.value(0), "a%20b.parquet");
        assert!(files.adds.is_null(1));
        assert!(files.removes.is_valid(1));
    }

    #[test]
    fn truncated_line_names_file_and_line() {
        let text = "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n{\"metaData\":{\"id\":";
        let error =
            decode_actions(text.as_bytes(), 0, "00.json", DecodeOptions::default()).unwrap_err();
        assert!(error.to_string().contains("00.json"), "{error}");
        assert!(error.to_string().contains("line 2"), "{error}");
    }

    #[test]
    fn truncated_add_is_an_error() {
        let text = "{\"add\":{\"path\":\"a\",\"size\":1";
        let error =
            decode_actions(text.as_bytes(), 0, "00.json", DecodeOptions::default()).unwrap_err();
        assert!(matches!(error, Error::CorruptLogFile { .. }), "{error}");
    }

    #[test]
    fn file_actions_without_required_fields_are_refused() {
        let lines = [
            r#"{"add":{"path":"a","partitionValues":{},"modificationTime":1,"dataChange":true}}"#,
            r#"{"add":{"path":"a","size":1,"modificationTime":1,"dataChange":true}}"#,
            r#"{"add":{"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#,
            r#"{"remove":{"deletionTimestamp":1,"dataChange":true}}"#,
        ];
        for line in lines {
            let decoded = decode_actions(line.as_bytes(), 0, "07.json", DecodeOptions::default());
            match decoded {
                Err(Error::CorruptLogFile { path, reason }) => {
                    assert_eq!(path, "07.json");
                    assert!(reason.contains("has no"), "{reason}");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    /// Lines made of JSON tokens, well-formed or not.
    fn token_soup() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let token = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            " ",
            "\"a\"",
            "\"k\":",
            "\"\\\"q\\\"\"",
            "\"\\u00e9\"",
            "\"\\ud83d\\ude00\"",
            "\"\\ud800\"",
            "\"\\x\"",
            "\"open",
            "1",
            "-0.5e3",
            "01",
            "1.",
            "true",
            "nul",
            "null",
            "\u{1}",
        ]);
        prop::collection::vec(token, 1..16).prop_map(|tokens| tokens.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        #[test]
        fn validation_agrees_with_serde_json(line in token_soup()) {
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(&line).is_ok();
            proptest::prop_assert_eq!(validate_json(line.as_bytes()).is_ok(), serde, "{}", line);
        }
    }

    #[test]
    fn validation_takes_nested_and_escaped_json() {
        let lines = [
            r#"{"add":{"path":"a","stats":"{\"numRecords\":3,\"minValues\":{\"s\":\"\u00e9\"}}","tags":null}}"#,
            r#"{"x":[1,-2.5e-3,true,false,null,{"y":[]},{}]}"#,
            "{\"lone\":\"\\ud800\"}",
        ];
        for line in lines {
            assert_eq!(validate_json(line.as_bytes()), Ok(()), "{line}");
        }
        for line in [
            r#"{"a":1"#,
            r#"{"a":01}"#,
            r#"{"a":"\q"}"#,
            "{\"a\":\"\u{1}\"}",
        ] {
            assert!(validate_json(line.as_bytes()).is_err(), "{line}");
        }
    }

    #[test]
    fn two_protocols_in_one_commit_are_refused() {
        let line = "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n";
        let text = format!("{line}{line}");
        assert!(decode_actions(text.as_bytes(), 0, "x", DecodeOptions::default()).is_err());
    }
}
