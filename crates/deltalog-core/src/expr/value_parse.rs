//! Parsing value expressions: [`parse_value_sql`] reads SQL text into a [`ValueExpr`], and the
//! same grammar reads every operand of a filter ([`super::parse_sql`]), on the filter parser's
//! token stream, so both languages share one grammar. Loosest binding first: `+` and `-`;
//! `*`, `/` and `%`; unary `-` (right before a number it makes a negative literal); a primary:
//! a literal, a column, `name(args, ...)`, `CASE WHEN <filter> THEN v ... [ELSE v] END`,
//! `CAST(v AS type)` or a parenthesised filter (which is a value when it is one).

use super::ast::Expr;
use super::ast::RESERVED;
use super::ast::{type_named, ArithOp, Function, ValueExpr};
use super::parse::{typed_literal, Parser, Token, TokenKind, MAX_DEPTH};
use crate::error::Result;
use crate::scalar::{parse_sql_number, Scalar};

/// Parses `text` as a value expression (see the `expr::value` module). Errors are
/// [`crate::Error::InvalidArgument`]s quoting the text and the 1-based character position.
pub fn parse_value_sql(text: &str) -> Result<ValueExpr> {
    let mut parser = Parser::new(text, "expression")?;
    let start = parser.peek();
    let expr = parser.parse_additive()?;
    parser.expect_end("an operator or the end of the expression")?;
    parser.as_value(expr, &start)
}

impl Parser<'_> {
    /// `product (('+' | '-') product)*`.
    pub(super) fn parse_additive(&mut self) -> Result<Expr> {
        let mut left = self.parse_multiplicative()?;
        let mut chained = 0;
        loop {
            let op = match self.peek().kind {
                TokenKind::Arith('+') => ArithOp::Add,
                TokenKind::Minus => ArithOp::Sub,
                _ => return Ok(left),
            };
            let operator = self.advance();
            let right = self.parse_multiplicative()?;
            left = self.arith(op, left, right, &operator)?;
            chained += 1;
            self.check_chain(chained)?;
        }
    }

    fn parse_multiplicative(&mut self) -> Result<Expr> {
        let mut left = self.parse_unary()?;
        let mut chained = 0;
        loop {
            let op = match self.peek().kind {
                TokenKind::Arith('*') => ArithOp::Mul,
                TokenKind::Arith('/') => ArithOp::Div,
                TokenKind::Arith('%') => ArithOp::Rem,
                _ => return Ok(left),
            };
            let operator = self.advance();
            let right = self.parse_unary()?;
            left = self.arith(op, left, right, &operator)?;
            chained += 1;
            self.check_chain(chained)?;
        }
    }

    /// A chain of `chained` arithmetic operators nests its tree as deep (it groups to the
    /// left): refused beyond [`MAX_DEPTH`] levels with the nesting around it.
    fn check_chain(&self, chained: usize) -> Result<()> {
        match self.depth() + chained > MAX_DEPTH {
            true => Err(self.too_deep()),
            false => Ok(()),
        }
    }

    fn parse_unary(&mut self) -> Result<Expr> {
        if !matches!(self.peek().kind, TokenKind::Minus) {
            return self.parse_primary();
        }
        let minus = self.advance();
        if let TokenKind::Number(digits) = self.peek().kind {
            self.advance();
            return Ok(Expr::Literal(parse_sql_number(&format!("-{digits}"))));
        }
        let inner = self.nested(Self::parse_unary)?;
        let inner = self.as_value(inner, &minus)?;
        Ok(Expr::value(ValueExpr::Negate(Box::new(inner))))
    }

    /// A primary, one nesting level deeper (parentheses, calls, `CASE` and `CAST` recurse).
    fn parse_primary(&mut self) -> Result<Expr> {
        self.nested(Self::parse_primary_here)
    }

    fn parse_primary_here(&mut self) -> Result<Expr> {
        let token = self.peek();
        let literal = match token.kind {
            TokenKind::LParen => {
                self.advance();
                let inner = self.parse_or()?;
                self.expect_token(&TokenKind::RParen, "')'")?;
                return Ok(inner);
            }
            TokenKind::QuotedName(name) => {
                self.advance();
                return self.parse_column_rest(name);
            }
            TokenKind::Word(word) => return self.parse_word(word),
            TokenKind::Number(digits) => parse_sql_number(&digits),
            TokenKind::Str(value) => Scalar::Utf8(value),
            TokenKind::Hex(bytes) => Scalar::Binary(bytes),
            _ => return Err(self.unexpected("a column name or a value")),
        };
        self.advance();
        Ok(Expr::Literal(literal))
    }

    /// A word starting an operand: `TRUE`/`FALSE`/`NULL`, a typed literal (`DATE '...'`),
    /// `CASE WHEN`, `CAST(`, a function call `name(` or a column.
    fn parse_word(&mut self, word: String) -> Result<Expr> {
        let upper = word.to_ascii_uppercase();
        let keyword_literal = match upper.as_str() {
            "TRUE" => Some(Scalar::Boolean(true)),
            "FALSE" => Some(Scalar::Boolean(false)),
            "NULL" => Some(Scalar::Null),
            _ => None,
        };
        if let Some(literal) = keyword_literal {
            self.advance();
            return Ok(Expr::Literal(literal));
        }
        if RESERVED.contains(&upper.as_str()) {
            return Err(self.unexpected("a column name or a value"));
        }
        let token = self.advance();
        let next = self.peek();
        match (upper.as_str(), next.kind) {
            ("DATE" | "TIMESTAMP" | "TIMESTAMP_NTZ", TokenKind::Str(value)) => {
                self.advance();
                typed_literal(self, &upper, &value, next.position).map(Expr::Literal)
            }
            ("CASE", TokenKind::Word(when)) if when.eq_ignore_ascii_case("WHEN") => {
                self.parse_case()
            }
            ("CAST", TokenKind::LParen) => {
                self.advance();
                self.parse_cast()
            }
            (_, TokenKind::LParen) => {
                self.advance();
                self.parse_call(&word, &token)
            }
            _ => self.parse_column_rest(word),
        }
    }

    fn parse_column_rest(&mut self, first: String) -> Result<Expr> {
        let mut path = vec![first];
        while matches!(self.peek().kind, TokenKind::Dot) {
            self.advance();
            match self.peek().kind {
                TokenKind::Word(part) | TokenKind::QuotedName(part) => {
                    self.advance();
                    path.push(part);
                }
                _ => return Err(self.unexpected("a field name after '.'")),
            }
        }
        Ok(Expr::Column(path))
    }

    /// The arguments of `name(` up to the closing parenthesis.
    fn parse_call(&mut self, name: &str, token: &Token) -> Result<Expr> {
        let function = Function::named(name).ok_or_else(|| {
            self.error_at(token.position, "a known function", &format!("'{name}'"))
        })?;
        let mut args = Vec::new();
        if matches!(self.peek().kind, TokenKind::RParen) {
            self.advance();
        } else {
            loop {
                args.push(self.parse_value()?);
                let separator = self.peek().kind;
                if !matches!(separator, TokenKind::Comma | TokenKind::RParen) {
                    return Err(self.unexpected("',' or ')' after an argument"));
                }
                self.advance();
                if separator == TokenKind::RParen {
                    break;
                }
            }
        }
        Ok(Expr::value(ValueExpr::Call { function, args }))
    }

    /// `WHEN <filter> THEN <value> ... [ELSE <value>] END`, after `CASE`.
    fn parse_case(&mut self) -> Result<Expr> {
        let mut branches = Vec::new();
        while self.eat_keyword("WHEN") {
            let condition = self.parse_or()?;
            self.expect_keyword("THEN")?;
            branches.push((condition, self.parse_value()?));
        }
        let otherwise = match self.eat_keyword("ELSE") {
            true => Some(Box::new(self.parse_value()?)),
            false => None,
        };
        self.expect_keyword("END")?;
        Ok(Expr::value(ValueExpr::Case {
            branches,
            otherwise,
        }))
    }

    /// `<value> AS <type>)`, after `CAST(`.
    fn parse_cast(&mut self) -> Result<Expr> {
        let expr = self.parse_value()?;
        self.expect_keyword("AS")?;
        let start = self.peek();
        let mut name = String::new();
        let mut depth = 0usize;
        loop {
            let piece = match self.peek().kind {
                TokenKind::RParen if depth == 0 => break,
                TokenKind::RParen => {
                    depth -= 1;
                    ")".to_string()
                }
                TokenKind::LParen => {
                    depth += 1;
                    "(".to_string()
                }
                TokenKind::Word(word) | TokenKind::Number(word) => word,
                TokenKind::Comma => ",".to_string(),
                _ => return Err(self.unexpected("a type name and ')'")),
            };
            name.push_str(&piece);
            self.advance();
        }
        let to = type_named(&name)
            .ok_or_else(|| self.error_at(start.position, "a type name", &format!("'{name}'")))?;
        self.advance();
        Ok(Expr::value(ValueExpr::Cast {
            expr: Box::new(expr),
            to,
        }))
    }

    /// A value expression where a value must be (an argument, an arithmetic operand).
    fn parse_value(&mut self) -> Result<ValueExpr> {
        let start = self.peek();
        let expr = self.parse_additive()?;
        self.as_value(expr, &start)
    }

    fn expect_token(&mut self, kind: &TokenKind, expected: &str) -> Result<()> {
        if &self.peek().kind != kind {
            return Err(self.unexpected(expected));
        }
        self.advance();
        Ok(())
    }

    /// `expr` as a value; a condition (a comparison, `AND`, ...) where a value must be is an
    /// error at `at`.
    pub(super) fn as_value(&self, expr: Expr, at: &Token) -> Result<ValueExpr> {
        expr.into_value().map_err(|condition| {
            self.error_at(
                at.position,
                "a value, not a condition",
                &format!("`{condition}`"),
            )
        })
    }

    fn arith(&self, op: ArithOp, left: Expr, right: Expr, operator: &Token) -> Result<Expr> {
        Ok(Expr::value(ValueExpr::Arith {
            op,
            left: Box::new(self.as_value(left, operator)?),
            right: Box::new(self.as_value(right, operator)?),
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};

    use super::parse_value_sql;
    use crate::expr::eval::evaluate_value;

    fn rows() -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(7), None]));
        let names: ArrayRef = Arc::new(StringArray::from(vec![Some("Ab"), None, Some("xyz")]));
        RecordBatch::try_from_iter([("id", ids), ("s", names)]).unwrap()
    }

    fn eval(text: &str) -> ArrayRef {
        evaluate_value(&parse_value_sql(text).unwrap(), &rows(), 0).unwrap()
    }

    #[test]
    fn nan_and_infinities_cast_to_null_decimals_and_overflow_fails() {
        let x: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            1.005,
        ]));
        let batch = RecordBatch::try_from_iter([("x", x)]).unwrap();
        let cast = parse_value_sql("CAST(x AS DECIMAL(10,2))").unwrap();
        let decimals = evaluate_value(&cast, &batch, 0).unwrap();
        let decimals = decimals.as_primitive::<arrow_array::types::Decimal128Type>();
        assert_eq!(decimals.null_count(), 3);
        assert!(decimals.is_valid(3));
        let overflow = parse_value_sql("CAST(x * 1e20 AS DECIMAL(10,2))").unwrap();
        let finite: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0]));
        let batch = RecordBatch::try_from_iter([("x", finite)]).unwrap();
        assert!(evaluate_value(&overflow, &batch, 0).is_err());
    }

    /// Doubles become decimals through their shortest text, rounded half up, as Spark casts
    /// them (differential seed 675: `-0.285` is `-0.29` in Spark).
    #[test]
    fn doubles_cast_to_decimals_as_spark_rounds_them() {
        let cases: [(f64, i128); 8] = [
            (-0.285, -29),
            (0.285, 29),
            (1.005, 101),
            (0.125, 13),
            (-0.125, -13),
            (1e-30, 0),
            (123.456, 12346),
            (-0.0, 0),
        ];
        let x: ArrayRef = Arc::new(arrow_array::Float64Array::from(
            cases.iter().map(|(x, _)| *x).collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_from_iter([("x", x)]).unwrap();
        let cast = parse_value_sql("CAST(x AS DECIMAL(10,2))").unwrap();
        let decimals = evaluate_value(&cast, &batch, 0).unwrap();
        let decimals = decimals.as_primitive::<arrow_array::types::Decimal128Type>();
        let expected: Vec<i128> = cases.iter().map(|(_, d)| *d).collect();
        assert_eq!(decimals.values().to_vec(), expected);
        let halves: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![2.5, -2.5, 1e20]));
        let batch = RecordBatch::try_from_iter([("x", halves)]).unwrap();
        let whole = parse_value_sql("CAST(x AS DECIMAL(21,0))").unwrap();
        let decimals = evaluate_value(&whole, &batch, 0).unwrap();
        let decimals = decimals.as_primitive::<arrow_array::types::Decimal128Type>();
        assert_eq!(
            decimals.values().to_vec(),
            [3, -3, 100_000_000_000_000_000_000]
        );
        let narrow = parse_value_sql("CAST(x AS DECIMAL(5,2))").unwrap();
        let error = evaluate_value(&narrow, &batch, 0).unwrap_err();
        assert!(error.to_string().contains("does not fit"), "{error}");
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
        for text in [
            "id +",
            "nope(id)",
            "CAST(id AS wat)",
            "CASE id END",
            "'open",
        ] {
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
