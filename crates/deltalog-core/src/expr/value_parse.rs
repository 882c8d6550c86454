//! Parsing value expressions ([`parse_value_sql`]): SQL text into a [`ValueExpr`]. Literals
//! and the conditions of `CASE WHEN` are read by the filter parser ([`parse_sql`]), so both
//! languages share one grammar for them.

use super::ast::{CompareOp, Expr};
use super::invalid;
use super::parse::parse_sql;
use super::value::{type_named, ArithOp, Function, ValueExpr};
use crate::error::Result;
use crate::scalar::Scalar;

/// Parses `text` as a value expression (see the `expr::value` module). Errors are
/// [`crate::Error::InvalidArgument`]s quoting the text and the position.
pub fn parse_value_sql(text: &str) -> Result<ValueExpr> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        text,
        tokens,
        at: 0,
    };
    let expr = parser.expr()?;
    match parser.peek() {
        None => Ok(expr),
        Some(token) => Err(parser.error(token.start, "the end of the expression")),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Word(String),
    Quoted(String),
    Number,
    Text,
    Symbol(char),
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars.get(i).map_or(text.len(), |(at, _)| *at);
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let (kind, next) = if c.is_ascii_alphabetic() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].1.is_ascii_alphanumeric() || "_$".contains(chars[j].1)) {
                j += 1;
            }
            (Kind::Word(text[start..end_of(j)].to_string()), j)
        } else if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|n| n.1.is_ascii_digit())) {
            let mut j = i;
            while j < chars.len() && (chars[j].1.is_ascii_alphanumeric() || chars[j].1 == '.') {
                let exponent_sign = "eE".contains(chars[j].1)
                    && chars.get(j + 1).is_some_and(|n| "+-".contains(n.1));
                j += if exponent_sign { 2 } else { 1 };
            }
            (Kind::Number, j)
        } else if c == '\'' || c == '`' {
            let mut j = i + 1;
            let mut value = String::new();
            loop {
                match chars.get(j) {
                    None => return Err(invalid(format!("unterminated {c} in {text:?} at {start}"))),
                    Some((_, q)) if *q == c && chars.get(j + 1).is_some_and(|n| n.1 == c) => {
                        value.push(c);
                        j += 2;
                    }
                    Some((_, q)) if *q == c => break,
                    Some((_, other)) => {
                        value.push(*other);
                        j += 1;
                    }
                }
            }
            let kind = if c == '`' { Kind::Quoted(value) } else { Kind::Text };
            (kind, j + 1)
        } else if "+-*/%(),.<>=!".contains(c) {
            (Kind::Symbol(c), i + 1)
        } else {
            return Err(invalid(format!(
                "cannot parse expression {text:?}: unexpected {c:?} at position {start}"
            )));
        };
        tokens.push(Token {
            kind,
            start,
            end: end_of(next),
        });
        i = next;
    }
    Ok(tokens)
}

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.at).cloned()
    }

    fn error(&self, position: usize, expected: &str) -> crate::Error {
        invalid(format!(
            "cannot parse expression {:?}: expected {expected} at position {position}",
            self.text
        ))
    }

    fn eat_symbol(&mut self, symbol: char) -> bool {
        if self.peek().is_some_and(|t| t.kind == Kind::Symbol(symbol)) {
            self.at += 1;
            return true;
        }
        false
    }

    fn expect_symbol(&mut self, symbol: char) -> Result<()> {
        if self.eat_symbol(symbol) {
            return Ok(());
        }
        Err(self.error(self.position(), &format!("'{symbol}'")))
    }

    fn is_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token { kind: Kind::Word(w), .. }) if w.eq_ignore_ascii_case(keyword))
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.is_keyword(keyword) {
            self.at += 1;
            return Ok(());
        }
        Err(self.error(self.position(), keyword))
    }

    fn position(&self) -> usize {
        self.peek().map_or(self.text.len(), |t| t.start)
    }

    fn expr(&mut self) -> Result<ValueExpr> {
        let mut left = self.term()?;
        loop {
            let op = if self.eat_symbol('+') {
                ArithOp::Add
            } else if self.eat_symbol('-') {
                ArithOp::Sub
            } else {
                return Ok(left);
            };
            let right = self.term()?;
            left = arith(op, left, right);
        }
    }

    fn term(&mut self) -> Result<ValueExpr> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat_symbol('*') {
                ArithOp::Mul
            } else if self.eat_symbol('/') {
                ArithOp::Div
            } else if self.eat_symbol('%') {
                ArithOp::Rem
            } else {
                return Ok(left);
            };
            let right = self.unary()?;
            left = arith(op, left, right);
        }
    }

    fn unary(&mut self) -> Result<ValueExpr> {
        if self.eat_symbol('-') {
            return Ok(ValueExpr::Negate(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<ValueExpr> {
        let Some(token) = self.peek() else {
            return Err(self.error(self.text.len(), "a value"));
        };
        self.at += 1;
        match &token.kind {
            Kind::Symbol('(') => {
                let inner = self.expr()?;
                self.expect_symbol(')')?;
                Ok(inner)
            }
            Kind::Number | Kind::Text => self.literal(token.start, token.end),
            Kind::Quoted(name) => self.column_rest(name.clone()),
            Kind::Word(word) => self.word(word.clone(), &token),
            Kind::Symbol(_) => Err(self.error(token.start, "a value")),
        }
    }

    fn word(&mut self, word: String, token: &Token) -> Result<ValueExpr> {
        match word.to_ascii_uppercase().as_str() {
            "NULL" => Ok(ValueExpr::Literal(Scalar::Null)),
            "TRUE" => Ok(ValueExpr::Literal(Scalar::Boolean(true))),
            "FALSE" => Ok(ValueExpr::Literal(Scalar::Boolean(false))),
            "DATE" | "TIMESTAMP" | "TIMESTAMP_NTZ" | "X"
                if self.peek().is_some_and(|t| t.kind == Kind::Text) =>
            {
                let end = self.tokens[self.at].end;
                self.at += 1;
                self.literal(token.start, end)
            }
            "CASE" => self.case(),
            "CAST" => self.cast(),
            "WHEN" | "THEN" | "ELSE" | "END" | "AS" => Err(self.error(token.start, "a value")),
            _ if self.eat_symbol('(') => self.call(&word, token.start),
            _ => self.column_rest(word),
        }
    }

    fn column_rest(&mut self, first: String) -> Result<ValueExpr> {
        let mut path = vec![first];
        while self.eat_symbol('.') {
            match self.peek().map(|t| t.kind) {
                Some(Kind::Word(name)) | Some(Kind::Quoted(name)) => {
                    self.at += 1;
                    path.push(name);
                }
                _ => return Err(self.error(self.position(), "a field name")),
            }
        }
        Ok(ValueExpr::Column(path))
    }

    /// The literal spelled by `text[start..end]`, read by the filter parser.
    fn literal(&self, start: usize, end: usize) -> Result<ValueExpr> {
        let spelled = &self.text[start..end];
        match parse_sql(&format!("`v` = {spelled}")) {
            Ok(Expr::Compare {
                op: CompareOp::Eq,
                right,
                ..
            }) => match *right {
                Expr::Literal(value) => Ok(ValueExpr::Literal(value)),
                _ => Err(self.error(start, "a literal")),
            },
            _ => Err(self.error(start, "a literal")),
        }
    }

    fn call(&mut self, name: &str, start: usize) -> Result<ValueExpr> {
        let function = match name.to_ascii_lowercase().as_str() {
            "concat" => Function::Concat,
            "lower" | "lcase" => Function::Lower,
            "upper" | "ucase" => Function::Upper,
            "substring" | "substr" => Function::Substring,
            "coalesce" => Function::Coalesce,
            "current_timestamp" | "now" => Function::CurrentTimestamp,
            "year" => Function::Year,
            "month" => Function::Month,
            "day" | "dayofmonth" => Function::Day,
            "hour" => Function::Hour,
            "to_date" => Function::ToDate,
            "date_format" => Function::DateFormat,
            _ => {
                return Err(invalid(format!(
                    "cannot parse expression {:?}: unknown function {name} at position {start}",
                    self.text
                )))
            }
        };
        let mut args = Vec::new();
        if !self.eat_symbol(')') {
            loop {
                args.push(self.expr()?);
                if self.eat_symbol(')') {
                    break;
                }
                self.expect_symbol(',')?;
            }
        }
        Ok(ValueExpr::Call { function, args })
    }

    fn case(&mut self) -> Result<ValueExpr> {
        let mut branches = Vec::new();
        while self.is_keyword("WHEN") {
            self.at += 1;
            let from = self.position();
            let then = self.find_keyword_at_depth("THEN")?;
            let condition = parse_sql(&self.text[from..self.tokens[then].start])?;
            self.at = then + 1;
            branches.push((condition, self.expr()?));
        }
        if branches.is_empty() {
            return Err(self.error(self.position(), "WHEN"));
        }
        let otherwise = match self.is_keyword("ELSE") {
            true => {
                self.at += 1;
                Some(Box::new(self.expr()?))
            }
            false => None,
        };
        self.expect_keyword("END")?;
        Ok(ValueExpr::Case {
            branches,
            otherwise,
        })
    }

    fn cast(&mut self) -> Result<ValueExpr> {
        self.expect_symbol('(')?;
        let expr = self.expr()?;
        self.expect_keyword("AS")?;
        let from = self.position();
        let mut depth = 0usize;
        while let Some(token) = self.peek() {
            match token.kind {
                Kind::Symbol('(') => depth += 1,
                Kind::Symbol(')') if depth == 0 => break,
                Kind::Symbol(')') => depth -= 1,
                _ => {}
            }
            self.at += 1;
        }
        let name = &self.text[from..self.position()];
        let to = type_named(name).ok_or_else(|| self.error(from, "a type name"))?;
        self.expect_symbol(')')?;
        Ok(ValueExpr::Cast {
            expr: Box::new(expr),
            to,
        })
    }

    /// The index of the next token that is `keyword` outside parentheses.
    fn find_keyword_at_depth(&self, keyword: &str) -> Result<usize> {
        let mut depth = 0usize;
        for (index, token) in self.tokens.iter().enumerate().skip(self.at) {
            match &token.kind {
                Kind::Symbol('(') => depth += 1,
                Kind::Symbol(')') => depth = depth.saturating_sub(1),
                Kind::Word(word) if depth == 0 && word.eq_ignore_ascii_case(keyword) => {
                    return Ok(index)
                }
                _ => {}
            }
        }
        Err(self.error(self.text.len(), keyword))
    }
}

fn arith(op: ArithOp, left: ValueExpr, right: ValueExpr) -> ValueExpr {
    ValueExpr::Arith {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

    use super::parse_value_sql;
    use crate::expr::value::evaluate_value;

    fn rows() -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(7), None]));
        let names: ArrayRef = Arc::new(StringArray::from(vec![Some("Ab"), None, Some("xyz")]));
        RecordBatch::try_from_iter([("id", ids), ("s", names)]).unwrap()
    }

    fn eval(text: &str) -> ArrayRef {
        evaluate_value(&parse_value_sql(text).unwrap(), &rows(), 0).unwrap()
    }

    fn ints(text: &str) -> Vec<Option<i64>> {
        let value = eval(text);
        let value = crate::expr::cast_to(&value, &arrow_schema::DataType::Int64).unwrap();
        value.as_primitive::<Int64Type>().iter().collect()
    }

    fn texts(text: &str) -> Vec<Option<String>> {
        let value = eval(text);
        let value = crate::expr::cast_to(&value, &arrow_schema::DataType::Utf8).unwrap();
        value
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn arithmetic_follows_precedence_and_null_semantics() {
        assert_eq!(ints("id + 2 * 3"), vec![Some(7), Some(13), None]);
        assert_eq!(ints("(id + 2) * 3"), vec![Some(9), Some(27), None]);
        assert_eq!(ints("-id % 4"), vec![Some(-1), Some(-3), None]);
        let halves = eval("id / 2");
        let halves: Vec<_> = halves.as_primitive::<Float64Type>().iter().collect();
        assert_eq!(halves, vec![Some(0.5), Some(3.5), None]);
    }

    #[test]
    fn string_functions_case_cast_and_coalesce() {
        let lowered = texts("lower(concat(s, '-', CAST(id AS STRING)))");
        assert_eq!(lowered, vec![Some("ab-1".into()), None, None]);
        assert_eq!(
            texts("upper(substring(s, 2))"),
            vec![Some("B".into()), None, Some("YZ".into())]
        );
        assert_eq!(
            texts("CASE WHEN id > 5 THEN 'big' WHEN id IS NULL THEN 'none' ELSE s END"),
            vec![Some("Ab".into()), Some("big".into()), Some("none".into())]
        );
        assert_eq!(ints("coalesce(id, 0)"), vec![Some(1), Some(7), Some(0)]);
    }

    fn moments() -> RecordBatch {
        use arrow_array::{Date32Array, TimestampMicrosecondArray};
        // 2024-03-05 07:08:09 UTC, one microsecond before the epoch, NULL.
        let ts: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_709_622_489_000_000), Some(-1), None])
                .with_timezone("UTC"),
        );
        let ntz: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_709_622_489_000_000),
            Some(-1),
            None,
        ]));
        let day: ArrayRef = Arc::new(Date32Array::from(vec![Some(19_787), Some(-1), None]));
        let text: ArrayRef = Arc::new(StringArray::from(vec![
            Some("2024-03-05"),
            Some("1969-12-31"),
            None,
        ]));
        RecordBatch::try_from_iter([("ts", ts), ("ntz", ntz), ("d", day), ("s", text)]).unwrap()
    }

    fn on_moments(text: &str) -> Vec<Option<String>> {
        let value = evaluate_value(&parse_value_sql(text).unwrap(), &moments(), 0).unwrap();
        let value = crate::expr::cast_to(&value, &arrow_schema::DataType::Utf8).unwrap();
        value
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn date_parts_of_timestamps_dates_and_text() {
        let some = |a: &str, b: &str| vec![Some(a.to_string()), Some(b.to_string()), None];
        assert_eq!(on_moments("year(ts)"), some("2024", "1969"));
        assert_eq!(on_moments("month(ntz)"), some("3", "12"));
        assert_eq!(on_moments("dayofmonth(ts)"), some("5", "31"));
        assert_eq!(on_moments("day(d)"), some("5", "31"));
        assert_eq!(on_moments("hour(ts)"), some("7", "23"));
        assert_eq!(on_moments("hour(d)"), some("0", "0"));
        assert_eq!(on_moments("year(s)"), some("2024", "1969"));
        assert_eq!(
            on_moments("CAST(ts AS DATE)"),
            some("2024-03-05", "1969-12-31")
        );
        assert_eq!(on_moments("to_date(ntz)"), some("2024-03-05", "1969-12-31"));
        assert_eq!(on_moments("to_date(s)"), some("2024-03-05", "1969-12-31"));
        assert_eq!(
            on_moments("date_format(ts, 'yyyy-MM-dd HH:mm:ss')"),
            some("2024-03-05 07:08:09", "1969-12-31 23:59:59")
        );
        assert_eq!(
            on_moments("date_format(d, 'yyyy/MM')"),
            some("2024/03", "1969/12")
        );
        let year_type = evaluate_value(&parse_value_sql("year(ts)").unwrap(), &moments(), 0)
            .unwrap()
            .data_type()
            .clone();
        assert_eq!(year_type, arrow_schema::DataType::Int32);
        for unsupported in ["date_format(ts, 'yyyy-MMM')", "date_format(ts, s)"] {
            let expr = parse_value_sql(unsupported).unwrap();
            assert!(
                evaluate_value(&expr, &moments(), 0).is_err(),
                "{unsupported}"
            );
        }
    }

    #[test]
    fn errors_are_typed() {
        for text in ["id +", "nope(id)", "CAST(id AS wat)", "CASE id END", "'open"] {
            assert!(parse_value_sql(text).is_err(), "{text}");
        }
        let unknown = parse_value_sql("missing + 1").unwrap();
        assert!(evaluate_value(&unknown, &rows(), 0).is_err());
        let zero = parse_value_sql("id / 0").unwrap();
        assert!(evaluate_value(&zero, &rows(), 0).is_err());
        let overflow = parse_value_sql("id * 9223372036854775807").unwrap();
        assert!(evaluate_value(&overflow, &rows(), 0).is_err());
        let cast = parse_value_sql("CAST(s AS BIGINT)").unwrap();
        assert!(evaluate_value(&cast, &rows(), 0).is_err());
    }
}
