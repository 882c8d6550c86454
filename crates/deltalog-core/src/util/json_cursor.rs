//! A cursor over one JSON text for the decoders that read the common shapes of the log's
//! JSON straight into Arrow builders (`log::decode::add_scanner` for `add` and `remove`
//! lines, `table_config::stats_json` for file statistics). Every reading method answers
//! `None` for text that is not what it reads; the decoders then give the text to the
//! general JSON decoder.

/// Objects and arrays nested deeper than this are not skipped ([`Cursor::skip_value`]).
const MAX_DEPTH: usize = 64;

/// A position in one JSON line; every method skips the whitespace before its token.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor { text, at: 0 }
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
        self.expect(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let plain = bytes[start..]
            .iter()
            .position(|byte| matches!(byte, b'"' | b'\\') || *byte < 0x20)?;
        let end = start + plain;
        if bytes[end] == b'"' {
            self.at = end + 1;
            return Some(&self.text[start..end]);
        }
        scratch.clear();
        scratch.push_str(&self.text[start..end]);
        self.at = end;
        self.escaped_rest(scratch)?;
        Some(scratch.as_str())
    }

    /// Decodes the rest of a string holding escapes into `out`, up to its closing quote.
    fn escaped_rest(&mut self, out: &mut String) -> Option<()> {
        let bytes = self.bytes();
        loop {
            let run = bytes[self.at..]
                .iter()
                .position(|byte| matches!(byte, b'"' | b'\\') || *byte < 0x20)?;
            out.push_str(&self.text[self.at..self.at + run]);
            self.at += run;
            match bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    self.at += 1;
                    out.push(self.escape()?);
                }
                _ => return None,
            }
        }
    }

    /// The character of the escape after a backslash.
    fn escape(&mut self) -> Option<char> {
        let byte = *self.bytes().get(self.at)?;
        self.at += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(),
            _ => return None,
        })
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

    /// Skips one well-formed JSON value (strings decoded into `scratch`), nested at most
    /// [`MAX_DEPTH`] deep below `depth`.
    pub(crate) fn skip_value(&mut self, depth: usize, scratch: &mut String) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string(scratch).map(drop),
            b'{' => {
                self.at += 1;
                if self.next_is(b'}') {
                    return Some(());
                }
                loop {
                    self.string(scratch)?;
                    self.expect(b':')?;
                    self.skip_value(depth + 1, scratch)?;
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
                    self.skip_value(depth + 1, scratch)?;
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
