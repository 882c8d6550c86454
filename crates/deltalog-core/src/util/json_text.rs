//! JSON text handed to arrow-json, mended where its decoder reads it wrong.
//!
//! arrow-json 60 decodes a `\uXXXX\uXXXX` surrogate pair for a character above U+1FFFF
//! wrongly: it ORs the `0x10000` offset into the code point instead of adding it, so U+20000
//! comes out as U+10000. Writers that escape every non-ASCII character (Python's `json.dumps`,
//! for one) write such pairs into paths, partition values and statistics.
//! [`mend_wide_surrogates`] replaces those escapes with the character's UTF-8 bytes, which a
//! JSON string may hold as they are (RFC 8259 section 7) and arrow-json reads right.

use std::borrow::Cow;

use memchr::memmem;

/// The first high surrogate whose pairs make characters above U+1FFFF (the ones arrow-json
/// gets wrong).
const WIDE_HIGH_SURROGATES: u32 = 0xD840;

/// `json` with every escaped surrogate pair of a character above U+1FFFF replaced by the
/// character's UTF-8 bytes; borrowed unchanged (after one fast search for `\u`) when it has
/// none. Anything else, malformed escapes included, is left for the decoder to judge.
pub(crate) fn mend_wide_surrogates(json: &[u8]) -> Cow<'_, [u8]> {
    let mut mended: Vec<u8> = Vec::new();
    let mut copied = 0;
    let mut search = 0;
    while let Some(offset) = memmem::find(&json[search..], b"\\u") {
        let at = search + offset;
        search = at + 2;
        if !starts_escape(json, at) {
            continue;
        }
        let Some(character) = wide_surrogate_pair(json, at) else {
            continue;
        };
        mended.extend_from_slice(&json[copied..at]);
        let mut utf8 = [0u8; 4];
        mended.extend_from_slice(character.encode_utf8(&mut utf8).as_bytes());
        copied = at + 12;
        search = copied;
    }
    if copied == 0 {
        return Cow::Borrowed(json);
    }
    mended.extend_from_slice(&json[copied..]);
    Cow::Owned(mended)
}

/// True when the backslash at `at` starts an escape: it ends an odd run of backslashes
/// (in `\\u`, the second backslash is the escaped character, not an escape).
fn starts_escape(json: &[u8], at: usize) -> bool {
    let run = json[..=at]
        .iter()
        .rev()
        .take_while(|byte| **byte == b'\\')
        .count();
    run % 2 == 1
}

/// The character of the 12-byte escape `\uHHHH\uLLLL` at `at`, when it is a surrogate pair of
/// a character above U+1FFFF.
fn wide_surrogate_pair(json: &[u8], at: usize) -> Option<char> {
    let high = hex4(json.get(at + 2..at + 6)?)?;
    if !(WIDE_HIGH_SURROGATES..0xDC00).contains(&high) || json.get(at + 6..at + 8)? != b"\\u" {
        return None;
    }
    let low = hex4(json.get(at + 8..at + 12)?)?;
    if !(0xDC00..0xE000).contains(&low) {
        return None;
    }
    char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
}

fn hex4(digits: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(digits).ok()?;
    match text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        true => u32::from_str_radix(text, 16).ok(),
        false => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mended(json: &str) -> String {
        String::from_utf8(mend_wide_surrogates(json.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn wide_pairs_become_utf8() {
        assert_eq!(
            mended(r#"{"p":"a\uD840\uDC00b"}"#),
            "{\"p\":\"a\u{20000}b\"}"
        );
        assert_eq!(mended(r#""\udbff\udfff""#), "\"\u{10FFFF}\"");
        assert_eq!(
            mended(r#"["\uD87E\uDC04","\uD840\uDC01"]"#),
            "[\"\u{2F804}\",\"\u{20001}\"]"
        );
    }

    #[test]
    fn everything_else_is_left_alone() {
        for json in [
            r#"{"stats":"{\"numRecords\":1}"}"#,
            r#""\u00e9 \uD83D\uDE00""#,
            r#""\\uD840\uDC00""#,
            r#""\uD840""#,
            r#""\uD840\u0041""#,
            r#""\uD840\uDC0""#,
            r#""\uZZZZ""#,
            r#""\u"#,
        ] {
            assert!(matches!(
                mend_wide_surrogates(json.as_bytes()),
                Cow::Borrowed(_)
            ));
        }
    }

    #[test]
    fn an_escaped_backslash_before_a_real_escape_is_kept() {
        assert_eq!(mended(r#""\\\uD840\uDC00""#), "\"\\\\\u{20000}\"");
    }

    #[test]
    fn arrow_json_reads_the_mended_text_right() {
        use arrow_array::cast::AsArray;
        use std::sync::Arc;
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "p",
            arrow_schema::DataType::Utf8,
            true,
        )]));
        let mut decoder = arrow_json::ReaderBuilder::new(schema)
            .build_decoder()
            .unwrap();
        let json = mend_wide_surrogates(br#"{"p":"\uD840\uDC00\uD83D\uDE00"}"#);
        decoder.decode(&json).unwrap();
        let batch = decoder.flush().unwrap().unwrap();
        assert_eq!(
            batch.column(0).as_string::<i32>().value(0),
            "\u{20000}\u{1F600}"
        );
    }
}
