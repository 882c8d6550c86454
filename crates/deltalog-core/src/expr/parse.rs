//! The SQL-like filter language: a lexer and a recursive-descent parser into [`Expr`].

use super::ast::{CompareOp, Expr};
use super::invalid;
use crate::error::{Error, Result};
use crate::scalar::{parse_sql_typed, Scalar};

/// Parses a SQL-like filter such as `x > 5 AND p IN ('a', 'b') AND y IS NOT NULL`.
///
/// Grammar (keywords case-insensitive, loosest binding first): `OR`; `AND`; `NOT`; a predicate
/// `operand (= | == | != | <> | < | <= | > | >=) operand`, `operand [NOT] IN (literal, ...)`,
/// `operand IS [NOT] NULL`, `operand [NOT] BETWEEN operand AND operand`,
/// `operand [NOT] LIKE 'pattern'` or a bare operand (a boolean value); an operand is a value
/// expression of [`super::parse_value_sql`] (a column, a literal, arithmetic, a function call,
/// `CASE`, `CAST`) or a parenthesised filter. Columns: identifiers
/// (`[A-Za-z_][A-Za-z0-9_$]*`), `` `backtick quoted` `` or `"double quoted"` names (the quote
/// doubled inside), joined by `.` for nested fields. Literals: `'strings'` (`''` inside for a
/// quote), integers, decimals (`1.50`, exact), floats with an exponent (`1e-3`), `TRUE`,
/// `FALSE`, `NULL`, `DATE 'YYYY-MM-DD'`, `TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.ffffff][Z|±HH:MM]'`
/// (without an offset the time is read as UTC), `TIMESTAMP_NTZ '...'` and `X'hex'` bytes; a
/// `-` right before a number makes a negative literal.
///
/// Errors are [`Error::InvalidArgument`] naming the 1-based character position, what was
/// expected there and what was found.
pub fn parse_sql(text: &str) -> Result<Expr> {
    let mut parser = Parser::new(text, "filter")?;
    let expr = parser.parse_or()?;
    parser.expect_end("AND, OR or the end of the filter")?;
    Ok(expr)
}

// ---------------------------------------------------------------------------------------------
// Tokenizer and parser

#[derive(Debug, Clone, PartialEq)]
pub(super) enum TokenKind {
    Word(String),
    QuotedName(String),
    Str(String),
    Hex(Vec<u8>),
    Number(String),
    Op(CompareOp, &'static str),
    LParen,
    RParen,
    Comma,
    Dot,
    Minus,
    /// `+`, `*`, `/` or `%` (`-` is [`TokenKind::Minus`]).
    Arith(char),
    End,
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) kind: TokenKind,
    /// 1-based character position of the token's first character.
    pub(super) position: usize,
}

fn tokenize(text: &str, noun: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while let Some(&c) = chars.get(index) {
        let position = index + 1;
        let at = |offset: usize| chars.get(index + offset).copied();
        let (kind, length) = match c {
            c if c.is_whitespace() => {
                index += 1;
                continue;
            }
            '(' => (TokenKind::LParen, 1),
            ')' => (TokenKind::RParen, 1),
            ',' => (TokenKind::Comma, 1),
            '.' => (TokenKind::Dot, 1),
            '-' => (TokenKind::Minus, 1),
            '+' | '*' | '/' | '%' => (TokenKind::Arith(c), 1),
            '=' if at(1) == Some('=') => (TokenKind::Op(CompareOp::Eq, "=="), 2),
            '=' => (TokenKind::Op(CompareOp::Eq, "="), 1),
            '!' if at(1) == Some('=') => (TokenKind::Op(CompareOp::NotEq, "!="), 2),
            '<' if at(1) == Some('=') => (TokenKind::Op(CompareOp::LtEq, "<="), 2),
            '<' if at(1) == Some('>') => (TokenKind::Op(CompareOp::NotEq, "<>"), 2),
            '<' => (TokenKind::Op(CompareOp::Lt, "<"), 1),
            '>' if at(1) == Some('=') => (TokenKind::Op(CompareOp::GtEq, ">="), 2),
            '>' => (TokenKind::Op(CompareOp::Gt, ">"), 1),
            '\'' => {
                let (value, length) = read_quoted(text, noun, &chars, index, '\'', "string")?;
                (TokenKind::Str(value), length)
            }
            '`' | '"' => {
                let (value, length) = read_quoted(text, noun, &chars, index, c, "quoted name")?;
                (TokenKind::QuotedName(value), length)
            }
            'x' | 'X' if at(1) == Some('\'') => {
                let (value, length) =
                    read_quoted(text, noun, &chars, index + 1, '\'', "hex string")?;
                let bytes = hex_bytes(&value).ok_or_else(|| {
                    parse_error(
                        text,
                        noun,
                        position,
                        "an even number of hex digits in X'...'",
                        &format!("X'{value}'"),
                    )
                })?;
                (TokenKind::Hex(bytes), length + 1)
            }
            c if c.is_ascii_digit() => {
                let length = number_length(&chars, index);
                let number: String = chars.iter().skip(index).take(length).collect();
                (TokenKind::Number(number), length)
            }
            c if c.is_alphabetic() || c == '_' => {
                let word: String = chars
                    .iter()
                    .skip(index)
                    .take_while(|c| c.is_alphanumeric() || **c == '_' || **c == '$')
                    .collect();
                let length = word.chars().count();
                (TokenKind::Word(word), length)
            }
            other => {
                return Err(parse_error(
                    text,
                    noun,
                    position,
                    "a column, a value, an operator or a parenthesis",
                    &format!("'{other}'"),
                ))
            }
        };
        tokens.push(Token { kind, position });
        index += length;
    }
    tokens.push(Token {
        kind: TokenKind::End,
        position: chars.len() + 1,
    });
    Ok(tokens)
}

/// Reads a `quote`-delimited run starting at `start` (where the opening quote is), with the
/// quote doubled inside; returns the content and the number of characters consumed.
fn read_quoted(
    text: &str,
    noun: &str,
    chars: &[char],
    start: usize,
    quote: char,
    what: &str,
) -> Result<(String, usize)> {
    let mut value = String::new();
    let mut index = start + 1;
    loop {
        match chars.get(index) {
            None => {
                return Err(parse_error(
                    text,
                    noun,
                    start + 1,
                    &format!("a closing {quote} for the {what} starting here"),
                    "end of input",
                ))
            }
            Some(&c) if c == quote => {
                if chars.get(index + 1) == Some(&quote) {
                    value.push(quote);
                    index += 2;
                } else {
                    return Ok((value, index + 1 - start));
                }
            }
            Some(&c) => {
                value.push(c);
                index += 1;
            }
        }
    }
}

fn number_length(chars: &[char], start: usize) -> usize {
    let digits_from = |from: usize| {
        chars
            .iter()
            .skip(from)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut end = start + digits_from(start);
    if chars.get(end) == Some(&'.') {
        end += 1 + digits_from(end + 1);
    }
    if matches!(chars.get(end), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(end + 1), Some('+' | '-')));
        let exponent = digits_from(end + 1 + sign);
        if exponent > 0 {
            end += 1 + sign + exponent;
        }
    }
    end - start
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| {
            text.get(at..at + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}

fn parse_error(text: &str, noun: &str, position: usize, expected: &str, found: &str) -> Error {
    invalid(format!(
        "cannot parse {noun} {text:?}: expected {expected} at position {position}, found {found}"
    ))
}

/// The recursive-descent parser of filters (here) and of value expressions (`value_parse`),
/// over one token stream.
pub(super) struct Parser<'t> {
    text: &'t str,
    /// What is parsed, for errors: `filter` or `expression`.
    noun: &'static str,
    tokens: Vec<Token>,
    index: usize,
    /// How deep the expression being parsed is nested so far (see [`MAX_DEPTH`]).
    depth: usize,
}

/// How deep an expression may nest: parentheses, calls, `NOT`s, signs and chained arithmetic
/// operators each add a level. Parsing and evaluating recurse once per level, so a deeper
/// expression is refused rather than allowed to exhaust the stack.
pub(super) const MAX_DEPTH: usize = 128;

impl<'t> Parser<'t> {
    pub(super) fn new(text: &'t str, noun: &'static str) -> Result<Self> {
        Ok(Parser {
            text,
            noun,
            tokens: tokenize(text, noun)?,
            index: 0,
            depth: 0,
        })
    }

    pub(super) fn expect_end(&self, expected: &str) -> Result<()> {
        match self.peek().kind {
            TokenKind::End => Ok(()),
            _ => Err(self.unexpected(expected)),
        }
    }

    pub(super) fn peek(&self) -> Token {
        self.tokens
            .get(self.index)
            .or_else(|| self.tokens.last())
            .cloned()
            .unwrap_or(Token {
                kind: TokenKind::End,
                position: self.text.chars().count() + 1,
            })
    }

    pub(super) fn advance(&mut self) -> Token {
        let token = self.peek();
        if self.index < self.tokens.len() {
            self.index += 1;
        }
        token
    }

    pub(super) fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Word(word) if word.eq_ignore_ascii_case(keyword))
    }

    pub(super) fn eat_keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        if found {
            self.advance();
        }
        found
    }

    pub(super) fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.unexpected(keyword))
        }
    }

    pub(super) fn unexpected(&self, expected: &str) -> Error {
        let token = self.peek();
        self.error_at(token.position, expected, &describe_token(&token.kind))
    }

    pub(super) fn error_at(&self, position: usize, expected: &str, found: &str) -> Error {
        parse_error(self.text, self.noun, position, expected, found)
    }

    /// How deep the expression is nested at the current token.
    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    /// Runs `parse` one nesting level deeper; [`Error::InvalidArgument`] beyond
    /// [`MAX_DEPTH`] levels.
    pub(super) fn nested<T>(&mut self, parse: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(self.too_deep());
        }
        self.depth += 1;
        let parsed = parse(self);
        self.depth -= 1;
        parsed
    }

    /// The error for an expression nested deeper than [`MAX_DEPTH`] levels at the current token.
    pub(super) fn too_deep(&self) -> Error {
        self.unexpected(&format!(
            "an expression nested at most {MAX_DEPTH} levels deep"
        ))
    }

    /// `and (OR and)*`, as a balanced tree of `OR`s (a long chain stays shallow).
    pub(super) fn parse_or(&mut self) -> Result<Expr> {
        let mut terms = vec![self.parse_and()?];
        while self.eat_keyword("OR") {
            terms.push(self.parse_and()?);
        }
        Ok(balanced(terms, Expr::or))
    }

    /// `not (AND not)*`, as a balanced tree of `AND`s.
    fn parse_and(&mut self) -> Result<Expr> {
        let mut terms = vec![self.parse_not()?];
        while self.eat_keyword("AND") {
            terms.push(self.parse_not()?);
        }
        Ok(balanced(terms, Expr::and))
    }

    fn parse_not(&mut self) -> Result<Expr> {
        if self.eat_keyword("NOT") {
            Ok(!self.nested(Self::parse_not)?)
        } else {
            self.parse_predicate()
        }
    }

    fn parse_predicate(&mut self) -> Result<Expr> {
        let left = self.parse_operand()?;
        if let TokenKind::Op(op, _) = self.peek().kind {
            self.advance();
            let right = self.parse_operand()?;
            return Ok(left.compare(op, right));
        }
        if self.eat_keyword("IS") {
            let negated = self.eat_keyword("NOT");
            self.expect_keyword("NULL")?;
            return Ok(Expr::IsNull {
                expr: Box::new(left),
                negated,
            });
        }
        let negated = self.eat_keyword("NOT");
        if self.eat_keyword("IN") {
            let list = self.parse_literal_list()?;
            return Ok(left.in_list(list, negated));
        }
        if self.eat_keyword("BETWEEN") {
            let low = self.parse_operand()?;
            self.expect_keyword("AND")?;
            let high = self.parse_operand()?;
            return Ok(Expr::Between {
                expr: Box::new(left),
                low: Box::new(low),
                high: Box::new(high),
                negated,
            });
        }
        if self.eat_keyword("LIKE") {
            let TokenKind::Str(pattern) = self.peek().kind else {
                return Err(self.unexpected("a quoted pattern after LIKE"));
            };
            self.advance();
            return Ok(Expr::Like {
                expr: Box::new(left),
                pattern,
                negated,
            });
        }
        if negated {
            return Err(self.unexpected("IN, BETWEEN or LIKE after NOT"));
        }
        Ok(left)
    }

    fn parse_literal_list(&mut self) -> Result<Vec<Scalar>> {
        if !matches!(self.peek().kind, TokenKind::LParen) {
            return Err(self.unexpected("'(' after IN"));
        }
        self.advance();
        let mut list = Vec::new();
        if matches!(self.peek().kind, TokenKind::RParen) {
            self.advance();
            return Ok(list);
        }
        loop {
            let token = self.peek();
            match self.parse_operand()? {
                Expr::Literal(value) => list.push(value),
                other => {
                    return Err(self.error_at(
                        token.position,
                        "a literal value in the IN list",
                        &format!("{other}"),
                    ))
                }
            }
            match self.advance().kind {
                TokenKind::Comma => continue,
                TokenKind::RParen => return Ok(list),
                _ => {
                    self.index = self.index.saturating_sub(1);
                    return Err(self.unexpected("',' or ')' in the IN list"));
                }
            }
        }
    }

    /// An operand: a value expression or a parenthesised filter (see `value_parse`).
    fn parse_operand(&mut self) -> Result<Expr> {
        self.parse_additive()
    }
}

/// `terms` (at least one) joined by `join` as a balanced tree, in order: `AND` and `OR` are
/// associative, also over NULLs, so any grouping means the same.
fn balanced(mut terms: Vec<Expr>, join: fn(Expr, Expr) -> Expr) -> Expr {
    while terms.len() > 1 {
        let mut joined = Vec::with_capacity(terms.len().div_ceil(2));
        let mut pairs = terms.into_iter();
        while let Some(left) = pairs.next() {
            joined.push(match pairs.next() {
                Some(right) => join(left, right),
                None => left,
            });
        }
        terms = joined;
    }
    terms.pop().unwrap_or(Expr::Literal(Scalar::Boolean(true)))
}

fn describe_token(kind: &TokenKind) -> String {
    match kind {
        TokenKind::Word(word) => format!("'{word}'"),
        TokenKind::QuotedName(name) => format!("the quoted name `{name}`"),
        TokenKind::Str(value) => format!("the string '{value}'"),
        TokenKind::Hex(bytes) => format!("{}", Scalar::Binary(bytes.clone())),
        TokenKind::Number(number) => format!("the number {number}"),
        TokenKind::Op(_, symbol) => format!("'{symbol}'"),
        TokenKind::LParen => "'('".to_string(),
        TokenKind::RParen => "')'".to_string(),
        TokenKind::Comma => "','".to_string(),
        TokenKind::Dot => "'.'".to_string(),
        TokenKind::Minus => "'-'".to_string(),
        TokenKind::Arith(symbol) => format!("'{symbol}'"),
        TokenKind::End => "end of input".to_string(),
    }
}

pub(super) fn typed_literal(
    parser: &Parser<'_>,
    keyword: &str,
    value: &str,
    position: usize,
) -> Result<Scalar> {
    parse_sql_typed(keyword, value).ok_or_else(|| {
        let expected = if keyword == "DATE" {
            "a date 'YYYY-MM-DD'".to_string()
        } else {
            format!("a {keyword} 'YYYY-MM-DD HH:MM:SS[.ffffff][Z|±HH:MM]'")
        };
        parser.error_at(position, &expected, &format!("'{value}'"))
    })
}
