//! A cursor over one JSON text for the decoders that read the common shapes of the log's
//! JSON straight into Arrow builders (`log::decode::add_scanner` for `add` and `remove`
//! lines, `table_config::stats_json` for file statistics). Every reading method answers
//! `None` for text that is not what it reads; the decoders then give the text to the
//! general JSON decoder.

/// Objects and arrays nested deeper than this are not skipped ([`Cursor::skip_value`]).
const MAX_DEPTH: usize = 64;

/// The offset of the first byte of `bytes` that ends a run of plain string text: a quote, a
/// backslash or a control character (below 0x20, which JSON strings may not hold raw); `None`
/// when there is none. It tests eight bytes at a time: the lines it reads are mostly string
/// text (paths, and `stats` values of hundreds of bytes).
#[inline]
fn string_stop(bytes: &[u8]) -> Option<usize> {
    const WORD: usize = std::mem::size_of::<u64>();
    let mut words = bytes.chunks_exact(WORD);
    let mut offset = 0;
    for word in words.by_ref() {
        let mut array = [0u8; WORD];
        array.copy_from_slice(word);
        let stops = stop_bytes(u64::from_le_bytes(array));
        if stops != 0 {
            return Some(offset + stops.trailing_zeros() as usize / 8);
        }
        offset += WORD;
    }
    let at = words
        .remainder()
        .iter()
        .position(|&byte| ends_plain_text(byte))?;
    Some(offset + at)
}

/// A quote, a backslash or a control character: what ends a run of plain string text.
fn ends_plain_text(byte: u8) -> bool {
    matches!(byte, b'"' | b'\\') || byte < 0x20
}

/// The character of a two-character escape whose second character is `byte` (`\"`, `\n`,
/// ...); `None` for `u` and for a byte that escapes nothing.
#[inline]
fn short_escape(byte: Option<&u8>) -> Option<char> {
    Some(match byte? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// A mask with the high bit set in the byte of `word` (little-endian) that is the first quote,
/// backslash or control character, and possibly in bytes after it: the lowest set bit is
/// exact, which is all [`string_stop`] reads. A byte's test can only be wrong past an earlier
/// byte that passed it (the borrow of the subtraction runs upwards).
fn stop_bytes(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let below = |word: u64, limit: u8| word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGHS;
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    let control = below(word, 0x20);
    quote | backslash | control
}

/// The high bit of every byte of `word` that is zero, and of no other byte (exact per byte, unlike
/// [`stop_bytes`]: no carry crosses a byte).
fn zero_bytes(word: u64) -> u64 {
    const LOWS: u64 = u64::from_le_bytes([0x7f; 8]);
    !(((word & LOWS).wrapping_add(LOWS)) | word | LOWS)
}

/// The eight high bits of `mask` (one per byte, as [`zero_bytes`] sets them) gathered into its
/// low byte: bit `i` for byte `i`. The multiplication moves the bit of byte `i` to bit `56 + i`;
/// no two products land on the same bit, so nothing carries.
fn gather_high_bits(mask: u64) -> u64 {
    const SPREAD: u64 = 0x0102_0408_1020_4080;
    ((mask >> 7).wrapping_mul(SPREAD)) >> 56
}

/// Bit `i` set where byte `i` of a 64-byte block of string text is a quote, a backslash or a
/// control character (below 0x20).
struct BlockMasks {
    quotes: u64,
    backslashes: u64,
    controls: u64,
}

impl BlockMasks {
    const BYTES: usize = 64;

    fn of(block: &[u8; Self::BYTES]) -> Self {
        #[cfg(target_arch = "x86_64")]
        return Self::of_sse2(block);
        #[cfg(not(target_arch = "x86_64"))]
        return Self::of_words(block);
    }

    /// Sixteen bytes at a time with SSE2, which every x86_64 processor has.
    #[cfg(target_arch = "x86_64")]
    fn of_sse2(block: &[u8; Self::BYTES]) -> Self {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_set1_epi8,
        };
        let mut masks = BlockMasks::empty();
        for (index, chunk) in block.chunks_exact(16).enumerate() {
            // SAFETY: SSE2 is part of every x86_64 target (its baseline), and the load reads the
            // 16 bytes of `chunk` (unaligned loads are allowed).
            let (quotes, backslashes, controls) = unsafe {
                let bytes = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
                let equal =
                    |byte: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(byte as i8)));
                // A byte is below 0x20 when its maximum with 0x1f is 0x1f.
                let below = _mm_cmpeq_epi8(
                    _mm_max_epu8(bytes, _mm_set1_epi8(0x1f)),
                    _mm_set1_epi8(0x1f),
                );
                (equal(b'"'), equal(b'\\'), _mm_movemask_epi8(below))
            };
            let bits = |mask: i32| u64::from(mask as u16) << (index * 16);
            masks.quotes |= bits(quotes);
            masks.backslashes |= bits(backslashes);
            masks.controls |= bits(controls);
        }
        masks
    }

    /// Eight bytes at a time in a `u64`, for every processor.
    #[cfg_attr(
        all(target_arch = "x86_64", not(test)),
        expect(dead_code, reason = "SSE2 serves x86_64; tested there against it")
    )]
    fn of_words(block: &[u8; Self::BYTES]) -> Self {
        let mut masks = BlockMasks::empty();
        for (index, chunk) in block.chunks_exact(8).enumerate() {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(chunk);
            let word = u64::from_le_bytes(bytes);
            let shift = index * 8;
            let equal = |byte: u8| zero_bytes(word ^ u64::from_le_bytes([byte; 8]));
            masks.quotes |= gather_high_bits(equal(b'"')) << shift;
            masks.backslashes |= gather_high_bits(equal(b'\\')) << shift;
            let control = zero_bytes(word & u64::from_le_bytes([0xe0; 8]));
            masks.controls |= gather_high_bits(control) << shift;
        }
        masks
    }

    fn empty() -> Self {
        BlockMasks {
            quotes: 0,
            backslashes: 0,
            controls: 0,
        }
    }
}

/// The bytes of a block that a backslash escapes (bit `i` for byte `i`), given the block's
/// `backslashes` and whether a backslash ending the previous block escapes its first byte
/// (`carried`, updated for the next block).
///
/// In a run of backslashes starting on bit `s`, the bytes at an odd distance from `s` are
/// escaped, up to and including the byte just past the run. Which bits those are depends on
/// the parity of `s`: adding the start bits of the runs that start on odd bits to the
/// backslashes clears those runs and sets the bit just past each (one carry through the run);
/// shifted by one, what is left flips the even-bit mask exactly over the runs starting on even
/// bits. A carry out of the block is an odd run that escapes the next block's first byte.
fn escaped_bytes(backslashes: u64, carried: &mut bool) -> u64 {
    const EVEN_BITS: u64 = 0x5555_5555_5555_5555;
    let carried_in = u64::from(*carried);
    // A first byte escaped by the previous block escapes nothing itself.
    let backslashes = backslashes & !carried_in;
    let after_backslash = (backslashes << 1) | carried_in;
    let odd_starts = backslashes & !EVEN_BITS & !after_backslash;
    let (even_runs_and_odd_ends, carry_out) = backslashes.overflowing_add(odd_starts);
    *carried = carry_out;
    (EVEN_BITS ^ (even_runs_and_odd_ends << 1)) & after_backslash
}

/// A position in one JSON line; every method skips the whitespace before its token.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
    /// The text is JSON held in a JSON string, its escapes not decoded (as `stats` values sit
    /// in a commit's line): its strings open and close with `\"` and may hold no escape.
    escaped_quotes: bool,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor {
            text,
            at: 0,
            escaped_quotes: false,
        }
    }

    /// A cursor over `body`, the text between the quotes of a JSON string token, read as the
    /// JSON text the string holds without decoding the string first: the held text's strings
    /// are `\"`-quoted in the body. A held string that needs another escape (a quote or a
    /// backslash inside it, `\\n`, ...) and whitespace written as an escape are not of the
    /// shape this reads: every reading method answers `None` there, as for text that is not
    /// JSON, and the caller decodes the string instead ([`decode_string_body`]).
    pub(crate) fn in_string_body(body: &'a str) -> Self {
        Cursor {
            text: body,
            at: 0,
            escaped_quotes: true,
        }
    }

    /// True when the next token is a string (not consumed).
    pub(crate) fn at_string(&mut self) -> bool {
        let quote = if self.escaped_quotes { b'\\' } else { b'"' };
        self.peek() == Some(quote)
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_whitespace(&mut self) {
        let bytes = self.bytes();
        while self.at < bytes.len() && matches!(bytes[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    /// Consumes `byte`, or fails.
    pub(crate) fn expect(&mut self, byte: u8) -> Option<()> {
        self.next_is(byte).then_some(())
    }

    /// Consumes `byte` when it comes next.
    pub(crate) fn next_is(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        if self.bytes().get(self.at) == Some(&byte) {
            self.at += 1;
            return true;
        }
        false
    }

    /// True, consuming it, when the next token is `null`.
    pub(crate) fn null(&mut self) -> bool {
        self.keyword("null")
    }

    pub(crate) fn keyword(&mut self, word: &str) -> bool {
        self.skip_whitespace();
        if self.bytes()[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            return true;
        }
        false
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.skip_whitespace();
        (self.at == self.bytes().len()).then_some(())
    }

    pub(crate) fn boolean(&mut self) -> Option<bool> {
        if self.keyword("true") {
            return Some(true);
        }
        self.keyword("false").then_some(false)
    }

    /// An integer in JSON's spelling (no fraction, no exponent) that fits an `i64`.
    pub(crate) fn integer(&mut self) -> Option<i64> {
        self.skip_whitespace();
        let bytes = self.bytes();
        let negative = bytes.get(self.at) == Some(&b'-');
        let start = self.at + usize::from(negative);
        let digits = bytes[start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let end = start + digits;
        let leading_zero = digits > 1 && bytes[start] == b'0';
        if digits == 0 || leading_zero || matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let mut value: i64 = 0;
        for byte in &bytes[start..end] {
            let digit = i64::from(byte - b'0');
            value = value.checked_mul(10)?;
            value = match negative {
                true => value.checked_sub(digit)?,
                false => value.checked_add(digit)?,
            };
        }
        self.at = end;
        Some(value)
    }

    /// The next string token: borrowed from the line when it has no escapes, else decoded
    /// into `scratch`.
    pub(crate) fn string<'s>(&mut self, scratch: &'s mut String) -> Option<&'s str>
    where
        'a: 's,
    {
        if self.escaped_quotes {
            return self.held_string();
        }
        self.expect(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let end = start + string_stop(&bytes[start..])?;
        if bytes[end] == b'"' {
            self.at = end + 1;
            return Some(&self.text[start..end]);
        }
        scratch.clear();
        scratch.push_str(&self.text[start..end]);
        self.at = end;
        self.escaped_rest(Some(scratch))?;
        Some(scratch.as_str())
    }

    /// A string of the text a string body holds ([`Cursor::in_string_body`]): `\"`, text
    /// without escapes, `\"`.
    fn held_string(&mut self) -> Option<&'a str> {
        self.skip_whitespace();
        let bytes = self.bytes();
        if !bytes[self.at..].starts_with(b"\\\"") {
            return None;
        }
        let start = self.at + 2;
        let end = start + string_stop(&bytes[start..])?;
        if !bytes[end..].starts_with(b"\\\"") {
            return None;
        }
        self.at = end + 2;
        Some(&self.text[start..end])
    }

    /// Reads the rest of a string holding escapes up to its closing quote, decoding it into
    /// `out` when given, else only checking it.
    fn escaped_rest(&mut self, mut out: Option<&mut String>) -> Option<()> {
        let bytes = self.bytes();
        loop {
            let run = string_stop(&bytes[self.at..])?;
            if let Some(out) = out.as_deref_mut() {
                out.push_str(&self.text[self.at..self.at + run]);
            }
            self.at += run;
            if bytes[self.at] == b'"' {
                self.at += 1;
                return Some(());
            }
            let character = self.escape()?;
            if let Some(out) = out.as_deref_mut() {
                out.push(character);
            }
        }
    }

    /// The character of the escape at the cursor, consumed; `None` when the cursor is not at a
    /// backslash opening an escape JSON knows.
    fn escape(&mut self) -> Option<char> {
        let bytes = self.bytes();
        if bytes.get(self.at) != Some(&b'\\') {
            return None;
        }
        let next = bytes.get(self.at + 1);
        self.at += 2;
        match next {
            Some(b'u') => self.unicode_escape(),
            next => short_escape(next),
        }
    }

    /// Skips the next string token, checking its escapes as [`Cursor::string`] does (a lone
    /// surrogate fails) without decoding them.
    ///
    /// It reads 64 bytes at a time, escapes included: the strings it skips most are `stats`
    /// values, JSON held in a string, with an escaped quote every few bytes. From a block
    /// holding another escape (`\n`, `\u0041`, ...) or a control character before the closing
    /// quote on, the byte-at-a-time reader goes on.
    pub(crate) fn skip_string(&mut self) -> Option<()> {
        const BLOCK: usize = BlockMasks::BYTES;
        if self.escaped_quotes {
            return self.held_string().map(drop);
        }
        self.expect(b'"')?;
        let bytes = self.bytes();
        let mut carried = false;
        loop {
            let start = self.at;
            let carried_in = usize::from(carried);
            // Past the end of the line the block is zeros: control characters, which stop it.
            let mut block = [0u8; BLOCK];
            let rest = bytes.get(start..)?;
            let taken = rest.len().min(BLOCK);
            block[..taken].copy_from_slice(&rest[..taken]);
            let masks = BlockMasks::of(&block);
            let escaped = escaped_bytes(masks.backslashes, &mut carried);
            let stops = (masks.quotes & !escaped) | masks.controls;
            let first_stop = stops & stops.wrapping_neg();
            let before_stop = first_stop.wrapping_sub(1);
            let other_escapes = escaped & !(masks.quotes | masks.backslashes) & before_stop;
            if other_escapes != 0 || first_stop & masks.controls != 0 {
                // From the backslash of an escape reaching into the block.
                self.at = start - carried_in;
                return self.escaped_rest(None);
            }
            if first_stop != 0 {
                self.at = start + first_stop.trailing_zeros() as usize + 1;
                return Some(());
            }
            self.at = start + BLOCK;
        }
    }

    /// The character of `\uXXXX` (after the `u`), pairing surrogates; a lone surrogate is not
    /// of the known shape.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if !(0xD800..0xDC00).contains(&first) {
            return char::from_u32(first);
        }
        if !self.bytes()[self.at..].starts_with(b"\\u") {
            return None;
        }
        self.at += 2;
        let second = self.hex4()?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// Skips the next string token as [`Cursor::skip_string`] does; the text between its
    /// quotes, escapes not decoded. `None` in held text ([`Cursor::in_string_body`]), where
    /// a string's text is what [`Cursor::string`] gives.
    pub(crate) fn string_body(&mut self) -> Option<&'a str> {
        if self.escaped_quotes {
            return None;
        }
        self.skip_whitespace();
        let start = self.at;
        self.skip_string()?;
        self.text.get(start + 1..self.at - 1)
    }

    /// The next byte after whitespace, not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes().get(self.at).copied()
    }

    /// The text of the next JSON number
    /// (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), consumed.
    pub(crate) fn number(&mut self) -> Option<&'a str> {
        self.skip_whitespace();
        let bytes = self.bytes();
        let run = |at: usize| {
            bytes.get(at..).map_or(0, |rest| {
                rest.iter().take_while(|b| b.is_ascii_digit()).count()
            })
        };
        let start = self.at;
        let mut at = start + usize::from(bytes.get(start) == Some(&b'-'));
        let whole = run(at);
        if whole == 0 || (whole > 1 && bytes.get(at) == Some(&b'0')) {
            return None;
        }
        at += whole;
        if bytes.get(at) == Some(&b'.') {
            let fraction = run(at + 1);
            if fraction == 0 {
                return None;
            }
            at += 1 + fraction;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            let exponent = run(at);
            if exponent == 0 {
                return None;
            }
            at += exponent;
        }
        let number = self.text.get(start..at)?;
        self.at = at;
        Some(number)
    }

    /// Skips one well-formed JSON value, nested at most [`MAX_DEPTH`] deep below `depth`,
    /// decoding nothing.
    pub(crate) fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        if self.at_string() {
            return self.skip_string();
        }
        match self.peek()? {
            b'{' => {
                self.at += 1;
                if self.next_is(b'}') {
                    return Some(());
                }
                loop {
                    self.skip_string()?;
                    self.expect(b':')?;
                    self.skip_value(depth + 1)?;
                    if self.next_is(b'}') {
                        return Some(());
                    }
                    self.expect(b',')?;
                }
            }
            b'[' => {
                self.at += 1;
                if self.next_is(b']') {
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if self.next_is(b']') {
                        return Some(());
                    }
                    self.expect(b',')?;
                }
            }
            b't' => self.keyword("true").then_some(()),
            b'f' => self.keyword("false").then_some(()),
            b'n' => self.null().then_some(()),
            _ => self.number().map(drop),
        }
    }
}

/// Decodes `body`, the text between the quotes of a JSON string token, into `out` (cleared
/// first); `None` when it is not a string's text (a quote, a control character, an escape JSON
/// does not know, a lone surrogate).
pub(crate) fn decode_string_body(body: &str, out: &mut String) -> Option<()> {
    out.clear();
    let mut cursor = Cursor::new(body);
    let bytes = body.as_bytes();
    loop {
        let rest = &bytes[cursor.at..];
        let run = string_stop(rest).unwrap_or(rest.len());
        out.push_str(&body[cursor.at..cursor.at + run]);
        cursor.at += run;
        if cursor.at == bytes.len() {
            return Some(());
        }
        out.push(cursor.escape()?);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte-at-a-time answer [`string_stop`] must give.
    fn first_stop(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&byte| ends_plain_text(byte))
    }

    /// Bytes near the stops (each side of the quote, the backslash and 0x20), the high bytes
    /// of UTF-8 and plain text.
    fn tricky_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            Just(b'"'),
            Just(b'\\'),
            Just(b'!'),
            Just(b'#'),
            Just(b'['),
            Just(b']'),
            0x00u8..0x21,
            0x7fu8..=0xff,
            b'a'..=b'z',
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn string_stop_is_the_first_stop_byte(
            plain in prop::collection::vec(b'a'..=b'z', 0..24),
            rest in prop::collection::vec(tricky_byte(), 0..24),
        ) {
            let bytes: Vec<u8> = plain.into_iter().chain(rest).collect();
            for start in 0..bytes.len() {
                prop_assert_eq!(string_stop(&bytes[start..]), first_stop(&bytes[start..]));
            }
        }
    }

    /// String text near every case of [`Cursor::skip_string`]: quotes, backslash runs, the escapes JSON
    /// knows (and one it does not), `\\u` escapes with surrogates, control characters,
    /// UTF-8 and plain text.
    fn string_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\\\"".to_string()),
            Just("\\\\".to_string()),
            Just("\\n".to_string()),
            Just("\\/".to_string()),
            Just("\\q".to_string()),
            Just("\\u0041".to_string()),
            Just("\\ud83d\\ude00".to_string()),
            Just("\\ud83d".to_string()),
            Just("\\u00".to_string()),
            Just("\u{1}".to_string()),
            Just("\t".to_string()),
            Just("é€".to_string()),
            "[a-z{}:,]{1,9}",
            "[a-z]{30,70}",
        ];
        prop::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn block_masks_mark_quotes_backslashes_and_controls(
            bytes in prop::collection::vec(tricky_byte(), 64),
        ) {
            let mut block = [0u8; BlockMasks::BYTES];
            block.copy_from_slice(&bytes);
            let mask = |test: fn(u8) -> bool| {
                bytes.iter().enumerate().fold(0u64, |mask, (at, &byte)| mask | (u64::from(test(byte)) << at))
            };
            let expected = (mask(|b| b == b'"'), mask(|b| b == b'\\'), mask(|b| b < 0x20));
            for masks in [BlockMasks::of(&block), BlockMasks::of_words(&block)] {
                prop_assert_eq!((masks.quotes, masks.backslashes, masks.controls), expected);
            }
        }
    }

    /// The bytes a backslash escapes, one byte at a time.
    fn escaped_one_by_one(backslashes: u64, carried: bool) -> (u64, bool) {
        let mut escaped = 0;
        let mut escaping = carried;
        for bit in 0..64 {
            if escaping {
                escaped |= 1 << bit;
                escaping = false;
            } else {
                escaping = backslashes & (1 << bit) != 0;
            }
        }
        (escaped, escaping)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn escaped_bytes_are_those_of_the_byte_at_a_time_reading(
            backslashes in prop_oneof![any::<u64>(), any::<u64>().prop_map(|bits| bits | bits << 1 | bits << 2)],
            carried in any::<bool>(),
        ) {
            let mut carried_out = carried;
            let escaped = escaped_bytes(backslashes, &mut carried_out);
            prop_assert_eq!((escaped, carried_out), escaped_one_by_one(backslashes, carried));
        }

        #[test]
        fn skip_string_ends_where_the_byte_at_a_time_reader_ends(
            body in string_text(),
            tail in "[ a-z\"\\\\]{0,3}",
        ) {
            let text = format!("\"{body}{tail}");
            let mut fast = Cursor::new(&text);
            let skipped = fast.skip_string().map(|()| fast.at);
            let mut slow = Cursor::new(&text);
            let expected = slow.expect(b'"').and_then(|()| slow.escaped_rest(None)).map(|()| slow.at);
            prop_assert_eq!(skipped, expected);
        }
    }

    #[test]
    fn string_bodies_read_as_the_json_they_hold_or_decode() {
        let mut scratch = String::new();
        let body = r#"{\"a\": \"x y\",\"b\":[1,\"z\",{\"c\":null}]}"#;
        let mut held = Cursor::in_string_body(body);
        assert_eq!(held.expect(b'{'), Some(()));
        assert_eq!(held.string(&mut scratch), Some("a"));
        assert_eq!(held.expect(b':'), Some(()));
        assert!(held.at_string());
        assert_eq!(held.string(&mut scratch), Some("x y"));
        assert_eq!(held.expect(b','), Some(()));
        assert_eq!(held.string(&mut scratch), Some("b"));
        assert_eq!(held.expect(b':'), Some(()));
        assert_eq!(held.skip_value(0), Some(()));
        assert_eq!(held.expect(b'}'), Some(()));
        assert_eq!(held.end(), Some(()));
        // A held string needing another escape, or a plain quote, is not read.
        for other in [r#"\"a\\\"b\""#, r#"\"a\nb\""#, r#""a""#, r#"\"open"#] {
            assert_eq!(
                Cursor::in_string_body(other).string(&mut scratch),
                None,
                "{other}"
            );
        }

        assert_eq!(decode_string_body(body, &mut scratch), Some(()));
        assert_eq!(scratch, r#"{"a": "x y","b":[1,"z",{"c":null}]}"#);
        assert_eq!(
            decode_string_body(r"\u00e9\ud83d\ude00\n", &mut scratch),
            Some(())
        );
        assert_eq!(scratch, "\u{e9}\u{1f600}\n");
        for bad in ["a\"b", r"a\q", r"\ud800", "a\u{1}"] {
            assert_eq!(decode_string_body(bad, &mut scratch), None, "{bad}");
        }
        let mut cursor = Cursor::new(r#" "x\"y" 1"#);
        assert_eq!(cursor.string_body(), Some(r#"x\"y"#));
    }

    #[test]
    fn strings_borrow_when_plain_and_decode_escapes() {
        let mut scratch = String::new();
        let line = r#""a long plain path/part-00000.parquet" "say \"hi\"\n" "\ud83d\ude00x""#;
        let mut cursor = Cursor::new(line);
        assert_eq!(
            cursor.string(&mut scratch),
            Some("a long plain path/part-00000.parquet")
        );
        assert_eq!(cursor.string(&mut scratch), Some("say \"hi\"\n"));
        assert_eq!(cursor.string(&mut scratch), Some("\u{1f600}x"));
        assert_eq!(cursor.end(), Some(()));
        for bad in [
            "\"unterminated",
            "\"raw \u{1} control\"",
            "\"bad \\q escape\"",
        ] {
            assert_eq!(Cursor::new(bad).string(&mut scratch), None, "{bad}");
        }
    }
}
