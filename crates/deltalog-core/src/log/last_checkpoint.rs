//! `_delta_log/_last_checkpoint`: the hint that points at a recent checkpoint, and the JSON
//! checksum that protects it (spec "Last Checkpoint File", "Last Checkpoint File Schema",
//! "JSON checksum"; catalogue A-13..A-17, H-LC, X-06, X-07).
//!
//! The hint is only a hint (catalogue G-08, X-05): a caller that gets an error here should fall
//! back to listing `_delta_log`. The checksum is computed over the *text* of the file, because
//! numbers are canonicalised by their original token (`1.0` is not `1`); the small JSON parser
//! at the end of this file keeps those tokens and rejects duplicate keys, which `serde_json`
//! silently merges.

use std::collections::HashMap;

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The content of `_last_checkpoint` (catalogue H-LC). Unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct LastCheckpointHint {
    /// The table version of the checkpoint (H-LC01).
    pub version: u64,
    /// The number of actions in the checkpoint (H-LC02; required by the spec, tolerated absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// The number of parts of a multi-part checkpoint (H-LC03).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<u32>,
    /// The total size of the checkpoint in bytes (H-LC04).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_in_bytes: Option<i64>,
    /// The number of `add` actions in the checkpoint (H-LC05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_of_add_files: Option<i64>,
    /// The schema of the checkpoint file, as a struct-type JSON value (H-LC06).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_schema: Option<serde_json::Value>,
    /// The MD5 of the canonical JSON (H-LC08, A-14..A-17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// Free-form string metadata (H-LC07).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, String>>,
    /// A V2 checkpoint embedded in the hint (E7-07). Its layout is not in the spec; Delta
    /// on Spark writes `{path, sizeInBytes, modificationTime, nonFileActions, sidecarFiles}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v2_checkpoint: Option<serde_json::Value>,
}

/// Parses `_last_checkpoint` (`path` names the file in errors).
///
/// Returns [`Error::CorruptLogFile`] when the bytes are not a UTF-8 JSON object, the JSON has duplicate
/// keys anywhere (H-LC09), a field has the wrong type, `version` is missing, `parts` is zero, or
/// a `checksum` is present and differs from the one computed (A-14; compared ignoring case).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn parse_last_checkpoint(bytes: &[u8], path: &str) -> Result<LastCheckpointHint> {
    let text = std::str::from_utf8(bytes)
        .map_err(|error| Error::corrupt(path, format!("not UTF-8: {error}")))?;
    if text.trim().is_empty() {
        return Err(Error::corrupt(path, "the file is empty"));
    }
    let document = parse_json(text).map_err(|reason| Error::corrupt(path, reason))?;
    if !matches!(document, Json::Object(_)) {
        return Err(Error::corrupt(path, "not a JSON object"));
    }
    let hint: LastCheckpointHint = serde_json::from_str(text)
        .map_err(|error| Error::corrupt(path, format!("not a checkpoint hint: {error}")))?;
    if hint.parts == Some(0) {
        return Err(Error::corrupt(path, "`parts` is 0"));
    }
    if let Some(stored) = &hint.checksum {
        let computed = md5_hex(&canonicalize(&document));
        if !stored.eq_ignore_ascii_case(&computed) {
            return Err(Error::corrupt(
                path,
                format!("checksum mismatch: the file says {stored}, its content gives {computed}"),
            ));
        }
    }
    Ok(hint)
}

/// The checksum of a JSON text (catalogue A-15..A-17): the MD5 of [`canonical_json`], as 32
/// lowercase hex digits. Errors ([`Error::InvalidArgument`]) when the text is not JSON or has
/// duplicate keys.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn json_checksum(value_text: &str) -> Result<String> {
    canonical_json(value_text).map(|canonical| md5_hex(&canonical))
}

/// The canonical form of a JSON text that the checksum is computed over (catalogue A-15,
/// one `<path>=<value>` pair per leaf, paths made of strictly URL-encoded quoted keys and
/// bare array indexes joined by `+`, numbers as written, pairs sorted by the bytes of the path
/// and joined by `,`. A top-level `checksum` member is left out; empty objects and arrays give
/// no pairs.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn canonical_json(value_text: &str) -> Result<String> {
    let document = parse_json(value_text).map_err(|reason| {
        Error::InvalidArgument(format!("invalid JSON for a checksum: {reason}"))
    })?;
    Ok(canonicalize(&document))
}

/// Serialises `hint` for writing `_last_checkpoint`, with a freshly computed `checksum` (the
/// one in `hint`, if any, is replaced). Fields that are `None` are left out.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn write_last_checkpoint(hint: &LastCheckpointHint) -> Result<Vec<u8>> {
    let mut hint = hint.clone();
    hint.checksum = None;
    let unsigned = serialize_hint(&hint)?;
    hint.checksum = Some(json_checksum(&unsigned)?);
    serialize_hint(&hint).map(String::into_bytes)
}

/// Nesting deeper than this is refused, so that hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 256;

const CHECKSUM_KEY: &str = "checksum";

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
fn serialize_hint(hint: &LastCheckpointHint) -> Result<String> {
    serde_json::to_string(hint).map_err(|error| {
        Error::internal_invariant(format!("cannot serialise the checkpoint hint: {error}"))
    })
}

fn md5_hex(text: &str) -> String {
    let digest = Md5::digest(text.as_bytes());
    let mut hex = String::with_capacity(digest.len() * 2);
    for byte in digest {
        push_hex(&mut hex, byte, b"0123456789abcdef");
    }
    hex
}

fn push_hex(out: &mut String, byte: u8, digits: &[u8; 16]) {
    out.push(char::from(digits[usize::from(byte >> 4)]));
    out.push(char::from(digits[usize::from(byte & 0x0f)]));
}

/// Strict URL encoding (catalogue A-17): every UTF-8 byte except `A-Z a-z 0-9 - . _ ~` becomes
/// `%XX` with uppercase hex digits.
fn push_strict_url_encoded(out: &mut String, text: &str) {
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            push_hex(out, byte, b"0123456789ABCDEF");
        }
    }
}

fn quoted_url_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    push_strict_url_encoded(&mut out, text);
    out.push('"');
    out
}

/// A parsed JSON value that keeps number tokens as written and members in file order.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

fn canonicalize(document: &Json) -> String {
    let mut pairs = Vec::new();
    match document {
        Json::Object(members) => {
            for (key, value) in members.iter().filter(|(key, _)| key != CHECKSUM_KEY) {
                collect_pairs(value, quoted_url_encoded(key), &mut pairs);
            }
        }
        other => collect_pairs(other, String::new(), &mut pairs),
    }
    pairs.sort_by(|(left, _), (right, _)| left.as_bytes().cmp(right.as_bytes()));
    let rendered: Vec<String> = pairs
        .into_iter()
        .map(|(path, value)| format!("{path}={value}"))
        .collect();
    rendered.join(",")
}

fn collect_pairs(value: &Json, path: String, pairs: &mut Vec<(String, String)>) {
    let child_path = |segment: &str| {
        if path.is_empty() {
            segment.to_string()
        } else {
            format!("{path}+{segment}")
        }
    };
    match value {
        Json::Null => pairs.push((path, "null".to_string())),
        Json::Bool(flag) => pairs.push((path, flag.to_string())),
        Json::Number(token) => pairs.push((path, token.clone())),
        Json::String(text) => pairs.push((path, quoted_url_encoded(text))),
        Json::Array(elements) => {
            for (index, element) in elements.iter().enumerate() {
                collect_pairs(element, child_path(&index.to_string()), pairs);
            }
        }
        Json::Object(members) => {
            for (key, member) in members {
                collect_pairs(member, child_path(&quoted_url_encoded(key)), pairs);
            }
        }
    }
}

/// Parses one JSON document (RFC 8259) strictly; the error says what is wrong and where.
fn parse_json(text: &str) -> std::result::Result<Json, String> {
    let mut parser = JsonParser {
        bytes: text.as_bytes(),
        position: 0,
    };
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.position < parser.bytes.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

struct JsonParser<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl JsonParser<'_> {
    fn error(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {what}", self.position)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn next_byte(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.position += 1;
        Some(byte)
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    fn expect(&mut self, expected: u8) -> std::result::Result<(), String> {
        if self.next_byte() == Some(expected) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", char::from(expected))))
        }
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.skip_whitespace();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a value")),
            None => Err(self.error("unexpected end of input")),
        }
    }

    fn literal(&mut self, word: &str, value: Json) -> std::result::Result<Json, String> {
        let end = self.position + word.len();
        if self.bytes.get(self.position..end) == Some(word.as_bytes()) {
            self.position = end;
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn object(&mut self, depth: usize) -> std::result::Result<Json, String> {
        self.expect(b'{')?;
        let mut members: Vec<(String, Json)> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.position += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_whitespace();
            let key_position = self.position;
            let key = self.string()?;
            if members.iter().any(|(existing, _)| *existing == key) {
                return Err(format!(
                    "invalid JSON at byte {key_position}: duplicate key \"{key}\""
                ));
            }
            self.skip_whitespace();
            self.expect(b':')?;
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_whitespace();
            match self.next_byte() {
                Some(b',') => continue,
                Some(b'}') => return Ok(Json::Object(members)),
                _ => return Err(self.error("expected ',' or '}' in an object")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> std::result::Result<Json, String> {
        self.expect(b'[')?;
        let mut elements = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.position += 1;
            return Ok(Json::Array(elements));
        }
        loop {
            elements.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.next_byte() {
                Some(b',') => continue,
                Some(b']') => return Ok(Json::Array(elements)),
                _ => return Err(self.error("expected ',' or ']' in an array")),
            }
        }
    }

    /// A number token, checked against the JSON grammar and kept as written.
    fn number(&mut self) -> std::result::Result<Json, String> {
        let start = self.position;
        if self.peek() == Some(b'-') {
            self.position += 1;
        }
        match self.peek() {
            Some(b'0') => self.position += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.position += 1;
            self.required_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.position += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.position += 1;
            }
            self.required_digits()?;
        }
        if matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(self.error("a number may not have leading zeros"));
        }
        let token = self.bytes.get(start..self.position).unwrap_or_default();
        Ok(Json::Number(String::from_utf8_lossy(token).into_owned()))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
    }

    fn required_digits(&mut self) -> std::result::Result<(), String> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(self.error("expected a digit"));
        }
        self.digits();
        Ok(())
    }

    /// A string token, unescaped.
    fn string(&mut self) -> std::result::Result<String, String> {
        self.expect(b'"')?;
        let mut content = Vec::new();
        loop {
            match self.next_byte() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => break,
                Some(b'\\') => self.escape(&mut content)?,
                Some(byte) if byte < 0x20 => {
                    return Err(self.error("unescaped control character in a string"))
                }
                Some(byte) => content.push(byte),
            }
        }
        String::from_utf8(content).map_err(|_| self.error("a string is not valid UTF-8"))
    }

    fn escape(&mut self, content: &mut Vec<u8>) -> std::result::Result<(), String> {
        let unescaped = match self.next_byte() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => self.unicode_escape()?,
            _ => return Err(self.error("invalid escape in a string")),
        };
        let mut buffer = [0u8; 4];
        content.extend_from_slice(unescaped.encode_utf8(&mut buffer).as_bytes());
        Ok(())
    }

    /// The rest of `\uXXXX`, including the low half of a surrogate pair.
    fn unicode_escape(&mut self) -> std::result::Result<char, String> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.next_byte() != Some(b'\\') || self.next_byte() != Some(b'u') {
                    return Err(self.error("a high surrogate must be followed by a low one"));
                }
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.error("a high surrogate must be followed by a low one"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error("a lone low surrogate")),
            _ => first,
        };
        char::from_u32(code).ok_or_else(|| self.error("an invalid \\u escape"))
    }

    fn hex4(&mut self) -> std::result::Result<u32, String> {
        let mut code = 0;
        for _ in 0..4 {
            let digit = self
                .next_byte()
                .and_then(|byte| char::from(byte).to_digit(16))
                .ok_or_else(|| self.error("expected four hex digits after \\u"))?;
            code = code * 16 + digit;
        }
        Ok(code)
    }
}

#[cfg(test)]
mod tests;
