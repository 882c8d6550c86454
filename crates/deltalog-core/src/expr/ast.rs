//! The expression trees, and their display as SQL that parses back: filters ([`Expr`]) and
//! the values they compare ([`ValueExpr`]), each holding the other.
//!
//! Value expressions: what an `UPDATE ... SET column = <expression>` computes for every row,
//! and the computed operands of filters ([`Expr::Value`]). They grow from the filter language: column references and the literals of
//! [`super::parse_sql`], arithmetic (`+ - * / %`, unary `-`), `concat`, `lower`, `upper`,
//! `substring`, `coalesce`, `CASE WHEN <filter> THEN ... ELSE ... END`,
//! `CAST(x AS type)`, `current_timestamp()` and the date parts Spark users put in generated
//! columns (`year`, `month`, `day`/`dayofmonth`, `hour`, `to_date`, `date_format` with the
//! pattern letters `y M d H m s`), evaluated on Arrow batches with Arrow's
//! compute kernels in SQL's null semantics (an operand that is NULL makes the result NULL;
//! `coalesce` and `CASE` excepted) and Spark's ANSI mode: integer overflow, division by zero
//! and a failing cast are errors, not NULLs. `/` divides as doubles, as Spark's does.

use std::collections::HashSet;
use std::fmt;

use arrow_schema::{DataType, TimeUnit};

use crate::scalar::Scalar;

/// The words of the filter language: a column so named is written quoted.
pub(super) const RESERVED: &[&str] = &[
    "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "LIKE",
];

/// Words that start or delimit a value expression (`CASE WHEN ... THEN ... ELSE ... END`,
/// `CAST(... AS ...)`): columns so named are written quoted.
pub(super) const VALUE_KEYWORDS: &[&str] = &["CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "AS"];

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// A filter expression.
///
/// A column is named by its path of field names (`["a", "b"]` is the field `b` of the struct
/// column `a`). When a path is resolved against a schema, a run of parts joined by `.` may also
/// name one field, so `["a.b"]` and `["a", "b"]` both find a top-level column called `a.b` or
/// the nested field `a.b`. Names match exactly first, then ASCII-case-insensitively.
///
/// Every operand (both sides of a comparison, the tested value of `IN`, `IS NULL` and `LIKE`,
/// the three of `BETWEEN`) is a column, a literal or a computed [`Expr::Value`].
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Column(Vec<String>),
    Literal(Scalar),
    /// A computed value (`price * qty`, `lower(name)`, `CAST(s AS INT)`): never a plain column
    /// or literal, which are [`Expr::Column`] and [`Expr::Literal`] (build it with
    /// [`Expr::value`]). As a whole filter it must be boolean.
    Value(Box<ValueExpr>),
    Compare {
        op: CompareOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `expr IN (list)`, or `expr NOT IN (list)` when `negated`.
    InList {
        expr: Box<Expr>,
        list: Vec<Scalar>,
        negated: bool,
    },
    /// `expr IS NULL`, or `expr IS NOT NULL` when `negated`.
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `expr BETWEEN low AND high` (both ends included), or `NOT BETWEEN` when `negated`.
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    /// `expr LIKE pattern` (`%` any run, `_` one character, `\` escapes), or `NOT LIKE`.
    Like {
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

impl CompareOp {
    /// The SQL spelling (`=`, `!=`, `<`, `<=`, `>`, `>=`).
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::NotEq => "!=",
            CompareOp::Lt => "<",
            CompareOp::LtEq => "<=",
            CompareOp::Gt => ">",
            CompareOp::GtEq => ">=",
        }
    }

    /// The operator with its operands swapped: `a op b` ⇔ `b op.swapped() a`.
    pub fn swapped(self) -> Self {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::LtEq => CompareOp::GtEq,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::GtEq => CompareOp::LtEq,
            other => other,
        }
    }

    /// The complement: `NOT (a op b)` ⇔ `a op.negated() b` (both are NULL on NULL operands).
    pub fn negated(self) -> Self {
        match self {
            CompareOp::Eq => CompareOp::NotEq,
            CompareOp::NotEq => CompareOp::Eq,
            CompareOp::Lt => CompareOp::GtEq,
            CompareOp::LtEq => CompareOp::Gt,
            CompareOp::Gt => CompareOp::LtEq,
            CompareOp::GtEq => CompareOp::Lt,
        }
    }
}

impl Expr {
    /// A column reference; dots separate nested field names (`"a.b"` is `["a", "b"]`).
    pub fn column(name: &str) -> Expr {
        Expr::Column(name.split('.').map(str::to_string).collect())
    }

    /// A column reference by its path of field names.
    pub fn column_path<I, S>(parts: I) -> Expr
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Expr::Column(parts.into_iter().map(Into::into).collect())
    }

    /// A literal.
    pub fn literal(value: impl Into<Scalar>) -> Expr {
        Expr::Literal(value.into())
    }

    /// The operand computing `value`: [`Expr::Column`] or [`Expr::Literal`] when `value` is
    /// a plain column or literal, [`Expr::Value`] otherwise.
    pub fn value(value: ValueExpr) -> Expr {
        match value {
            ValueExpr::Column(path) => Expr::Column(path),
            ValueExpr::Literal(literal) => Expr::Literal(literal),
            computed => Expr::Value(Box::new(computed)),
        }
    }

    /// The value `self` computes, or `self` back when it is a condition (a comparison, a
    /// test, `AND`, `OR`, `NOT`), which is not a value.
    pub fn into_value(self) -> std::result::Result<ValueExpr, Expr> {
        match self {
            Expr::Column(path) => Ok(ValueExpr::Column(path)),
            Expr::Literal(literal) => Ok(ValueExpr::Literal(literal)),
            Expr::Value(value) => Ok(*value),
            condition => Err(condition),
        }
    }

    /// `self op other`.
    pub fn compare(self, op: CompareOp, other: Expr) -> Expr {
        Expr::Compare {
            op,
            left: Box::new(self),
            right: Box::new(other),
        }
    }

    /// `self AND other`.
    pub fn and(self, other: Expr) -> Expr {
        Expr::And(Box::new(self), Box::new(other))
    }

    /// `self OR other`.
    pub fn or(self, other: Expr) -> Expr {
        Expr::Or(Box::new(self), Box::new(other))
    }

    /// `self IS NULL`.
    pub fn is_null(self) -> Expr {
        Expr::IsNull {
            expr: Box::new(self),
            negated: false,
        }
    }

    /// `self IS NOT NULL`.
    pub fn is_not_null(self) -> Expr {
        Expr::IsNull {
            expr: Box::new(self),
            negated: true,
        }
    }

    /// `self IN (list)`, or `self NOT IN (list)` when `negated`.
    pub fn in_list(self, list: Vec<Scalar>, negated: bool) -> Expr {
        Expr::InList {
            expr: Box::new(self),
            list,
            negated,
        }
    }

    /// The AND of all `exprs`, or `None` when there are none.
    pub fn conjunction(exprs: impl IntoIterator<Item = Expr>) -> Option<Expr> {
        exprs.into_iter().reduce(Expr::and)
    }

    /// The AND operands of this expression, flattened (the expression itself when it is no
    /// AND).
    pub fn conjuncts(&self) -> Vec<&Expr> {
        fn collect<'e>(expr: &'e Expr, found: &mut Vec<&'e Expr>) {
            match expr {
                Expr::And(left, right) => {
                    collect(left, found);
                    collect(right, found);
                }
                other => found.push(other),
            }
        }
        let mut found = Vec::new();
        collect(self, &mut found);
        found
    }

    /// The OR of all `exprs`, or `None` when there are none.
    pub fn disjunction(exprs: impl IntoIterator<Item = Expr>) -> Option<Expr> {
        exprs.into_iter().reduce(Expr::or)
    }

    /// The referenced columns as dotted names (path parts joined by `.`), each once, in order
    /// of first appearance.
    pub fn columns(&self) -> Vec<String> {
        self.column_paths()
            .into_iter()
            .map(|path| path.join("."))
            .collect()
    }

    /// The referenced column paths, each once, in order of first appearance.
    pub fn column_paths(&self) -> Vec<Vec<String>> {
        let mut paths = Vec::new();
        let mut seen = HashSet::new();
        self.visit_columns(&mut |path| {
            if seen.insert(path.to_vec()) {
                paths.push(path.to_vec());
            }
        });
        paths
    }

    /// Whether a computed operand depends on the clock (`current_timestamp()`): such a
    /// filter is not deterministic.
    pub fn reads_clock(&self) -> bool {
        match self {
            Expr::Column(_) | Expr::Literal(_) => false,
            Expr::Value(value) => value.reads_clock(),
            Expr::Compare { left, right, .. } | Expr::And(left, right) | Expr::Or(left, right) => {
                left.reads_clock() || right.reads_clock()
            }
            Expr::InList { expr, .. }
            | Expr::IsNull { expr, .. }
            | Expr::Like { expr, .. }
            | Expr::Not(expr) => expr.reads_clock(),
            Expr::Between {
                expr, low, high, ..
            } => expr.reads_clock() || low.reads_clock() || high.reads_clock(),
        }
    }

    /// The expression that is true exactly where `self` is false (and NULL where `self` is
    /// NULL), with the negation pushed one level down (De Morgan for AND/OR, the complementary
    /// operator for leaves). Exact in three-valued logic.
    pub fn negate(&self) -> Expr {
        match self {
            Expr::Column(_) | Expr::Value(_) => {
                self.clone().compare(CompareOp::Eq, Expr::literal(false))
            }
            Expr::Literal(Scalar::Boolean(value)) => Expr::literal(!value),
            Expr::Literal(Scalar::Null) => Expr::Literal(Scalar::Null),
            Expr::Literal(_) => Expr::Not(Box::new(self.clone())),
            Expr::Compare { op, left, right } => Expr::Compare {
                op: op.negated(),
                left: left.clone(),
                right: right.clone(),
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: expr.clone(),
                list: list.clone(),
                negated: !negated,
            },
            Expr::IsNull { expr, negated } => Expr::IsNull {
                expr: expr.clone(),
                negated: !negated,
            },
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => Expr::Between {
                expr: expr.clone(),
                low: low.clone(),
                high: high.clone(),
                negated: !negated,
            },
            Expr::Like {
                expr,
                pattern,
                negated,
            } => Expr::Like {
                expr: expr.clone(),
                pattern: pattern.clone(),
                negated: !negated,
            },
            Expr::And(left, right) => left.negate().or(right.negate()),
            Expr::Or(left, right) => left.negate().and(right.negate()),
            Expr::Not(inner) => inner.as_ref().clone(),
        }
    }

    /// The expression with every column path replaced by `rename` of it (the first error
    /// returned stops the rewrite and is returned); everything else is kept.
    pub fn try_map_columns<E, F>(&self, rename: &mut F) -> std::result::Result<Expr, E>
    where
        F: FnMut(&[String]) -> std::result::Result<Vec<String>, E>,
    {
        let mut map = |inner: &Expr| inner.try_map_columns(rename).map(Box::new);
        Ok(match self {
            Expr::Column(path) => Expr::Column(rename(path)?),
            Expr::Literal(_) => self.clone(),
            Expr::Value(value) => Expr::Value(Box::new(value.try_map_columns(rename)?)),
            Expr::Compare { op, left, right } => Expr::Compare {
                op: *op,
                left: map(left)?,
                right: map(right)?,
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: map(expr)?,
                list: list.clone(),
                negated: *negated,
            },
            Expr::IsNull { expr, negated } => Expr::IsNull {
                expr: map(expr)?,
                negated: *negated,
            },
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => Expr::Between {
                expr: map(expr)?,
                low: map(low)?,
                high: map(high)?,
                negated: *negated,
            },
            Expr::Like {
                expr,
                pattern,
                negated,
            } => Expr::Like {
                expr: map(expr)?,
                pattern: pattern.clone(),
                negated: *negated,
            },
            Expr::And(left, right) => Expr::And(map(left)?, map(right)?),
            Expr::Or(left, right) => Expr::Or(map(left)?, map(right)?),
            Expr::Not(inner) => Expr::Not(map(inner)?),
        })
    }

    pub(super) fn visit_columns(&self, visit: &mut dyn FnMut(&[String])) {
        match self {
            Expr::Column(path) => visit(path),
            Expr::Literal(_) => {}
            Expr::Value(value) => value.visit_columns(visit),
            Expr::Compare { left, right, .. } | Expr::And(left, right) | Expr::Or(left, right) => {
                left.visit_columns(visit);
                right.visit_columns(visit);
            }
            Expr::InList { expr, .. }
            | Expr::IsNull { expr, .. }
            | Expr::Like { expr, .. }
            | Expr::Not(expr) => expr.visit_columns(visit),
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit_columns(visit);
                low.visit_columns(visit);
                high.visit_columns(visit);
            }
        }
    }

    fn is_atom(&self) -> bool {
        matches!(self, Expr::Column(_) | Expr::Literal(_) | Expr::Value(_))
    }
}

impl std::ops::Not for Expr {
    type Output = Expr;

    /// `NOT self`.
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl fmt::Display for CompareOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl fmt::Display for Expr {
    /// Readable SQL that `parse_sql` parses back into an equivalent expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(path) => write_column(f, path),
            Expr::Literal(value) => write!(f, "{value}"),
            Expr::Value(value) => write!(f, "{value}"),
            Expr::Compare { op, left, right } => {
                write_operand(f, left)?;
                write!(f, " {op} ")?;
                write_operand(f, right)
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                write_operand(f, expr)?;
                f.write_str(if *negated { " NOT IN (" } else { " IN (" })?;
                for (index, value) in list.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value}")?;
                }
                f.write_str(")")
            }
            Expr::IsNull { expr, negated } => {
                write_operand(f, expr)?;
                f.write_str(if *negated { " IS NOT NULL" } else { " IS NULL" })
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                write_operand(f, expr)?;
                f.write_str(if *negated {
                    " NOT BETWEEN "
                } else {
                    " BETWEEN "
                })?;
                write_operand(f, low)?;
                f.write_str(" AND ")?;
                write_operand(f, high)
            }
            Expr::Like {
                expr,
                pattern,
                negated,
            } => {
                write_operand(f, expr)?;
                f.write_str(if *negated { " NOT LIKE " } else { " LIKE " })?;
                write_quoted(f, pattern, '\'')
            }
            Expr::And(left, right) => {
                write_conjunct(f, left)?;
                f.write_str(" AND ")?;
                write_conjunct(f, right)
            }
            Expr::Or(left, right) => write!(f, "{left} OR {right}"),
            Expr::Not(inner) if inner.is_atom() => write!(f, "NOT {inner}"),
            Expr::Not(inner) => write!(f, "NOT ({inner})"),
        }
    }
}

pub(super) fn write_column(f: &mut fmt::Formatter<'_>, path: &[String]) -> fmt::Result {
    for (index, part) in path.iter().enumerate() {
        if index > 0 {
            f.write_str(".")?;
        }
        if is_plain_identifier(part) {
            f.write_str(part)?;
        } else {
            write_quoted(f, part, '`')?;
        }
    }
    Ok(())
}

fn write_operand(f: &mut fmt::Formatter<'_>, expr: &Expr) -> fmt::Result {
    if expr.is_atom() {
        write!(f, "{expr}")
    } else {
        write!(f, "({expr})")
    }
}

fn write_conjunct(f: &mut fmt::Formatter<'_>, expr: &Expr) -> fmt::Result {
    if matches!(expr, Expr::Or(..)) {
        write!(f, "({expr})")
    } else {
        write!(f, "{expr}")
    }
}

pub(super) fn write_quoted(f: &mut fmt::Formatter<'_>, text: &str, quote: char) -> fmt::Result {
    use fmt::Write;
    f.write_char(quote)?;
    for c in text.chars() {
        if c == quote {
            f.write_char(quote)?;
        }
        f.write_char(c)?;
    }
    f.write_char(quote)
}

fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !RESERVED
            .iter()
            .chain(VALUE_KEYWORDS)
            .any(|word| word.eq_ignore_ascii_case(name))
}

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A function of the value language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Concat,
    Lower,
    Upper,
    Substring,
    Coalesce,
    CurrentTimestamp,
    /// `year(x)`: the year of a date or timestamp (timestamps in UTC), an int.
    Year,
    /// `month(x)`: 1 to 12.
    Month,
    /// `day(x)`, `dayofmonth(x)`: 1 to 31.
    Day,
    /// `hour(x)`: 0 to 23 (a date is at hour 0).
    Hour,
    /// `to_date(x)`: `CAST(x AS DATE)`.
    ToDate,
    /// `date_format(x, 'pattern')`: the timestamp as text in UTC.
    DateFormat,
    /// `named_struct('name1', v1, 'name2', v2, ...)`: a struct of the values, never NULL
    /// itself (Spark's `CreateNamedStruct`).
    NamedStruct,
    /// `abs(x)`: the absolute value, of `x`'s type (an integer's minimum overflows, as in
    /// Spark's ANSI mode).
    Abs,
    /// `length(x)`, `char_length(x)`, `character_length(x)`: the characters of a string (the
    /// bytes of a binary value), an int.
    Length,
    /// `trim(s)`: `s` without its leading and trailing spaces (Spark's `StringTrim`).
    Trim,
    /// `ltrim(s)`: `s` without its leading spaces.
    Ltrim,
    /// `rtrim(s)`: `s` without its trailing spaces.
    Rtrim,
}

/// A value expression (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub enum ValueExpr {
    Column(Vec<String>),
    Literal(Scalar),
    Negate(Box<ValueExpr>),
    Arith {
        op: ArithOp,
        left: Box<ValueExpr>,
        right: Box<ValueExpr>,
    },
    Call {
        function: Function,
        args: Vec<ValueExpr>,
    },
    /// `CASE WHEN c1 THEN v1 ... ELSE otherwise END` (NULL without `ELSE`).
    Case {
        branches: Vec<(Expr, ValueExpr)>,
        otherwise: Option<Box<ValueExpr>>,
    },
    Cast {
        expr: Box<ValueExpr>,
        to: DataType,
    },
}

impl ValueExpr {
    /// The referenced column paths (conditions of `CASE` included).
    pub fn column_paths(&self) -> Vec<Vec<String>> {
        let mut paths = Vec::new();
        self.visit_columns(&mut |path| {
            if !paths.iter().any(|p: &Vec<String>| p == path) {
                paths.push(path.to_vec());
            }
        });
        paths
    }

    /// `self` with every column reference replaced by `replace(path)`; `None` when `replace`
    /// has no replacement for one, or a `CASE` condition reads a column (conditions are
    /// filters, whose columns are not replaced by values).
    pub(crate) fn with_columns_replaced(
        &self,
        replace: &dyn Fn(&[String]) -> Option<ValueExpr>,
    ) -> Option<ValueExpr> {
        let boxed = |inner: &ValueExpr| inner.with_columns_replaced(replace).map(Box::new);
        Some(match self {
            ValueExpr::Column(path) => replace(path)?,
            ValueExpr::Literal(_) => self.clone(),
            ValueExpr::Negate(inner) => ValueExpr::Negate(boxed(inner)?),
            ValueExpr::Cast { expr, to } => ValueExpr::Cast {
                expr: boxed(expr)?,
                to: to.clone(),
            },
            ValueExpr::Arith { op, left, right } => ValueExpr::Arith {
                op: *op,
                left: boxed(left)?,
                right: boxed(right)?,
            },
            ValueExpr::Call { function, args } => ValueExpr::Call {
                function: *function,
                args: args
                    .iter()
                    .map(|arg| arg.with_columns_replaced(replace))
                    .collect::<Option<Vec<_>>>()?,
            },
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                if branches
                    .iter()
                    .any(|(condition, _)| !condition.column_paths().is_empty())
                {
                    return None;
                }
                ValueExpr::Case {
                    branches: branches
                        .iter()
                        .map(|(condition, value)| {
                            Some((condition.clone(), value.with_columns_replaced(replace)?))
                        })
                        .collect::<Option<Vec<_>>>()?,
                    otherwise: match otherwise {
                        Some(otherwise) => Some(boxed(otherwise)?),
                        None => None,
                    },
                }
            }
        })
    }

    /// `self` with every column path replaced by `rename` of it, `CASE` conditions included
    /// (the first error returned stops the rewrite and is returned).
    pub fn try_map_columns<E, F>(&self, rename: &mut F) -> std::result::Result<ValueExpr, E>
    where
        F: FnMut(&[String]) -> std::result::Result<Vec<String>, E>,
    {
        Ok(match self {
            ValueExpr::Column(path) => ValueExpr::Column(rename(path)?),
            ValueExpr::Literal(_) => self.clone(),
            ValueExpr::Negate(inner) => ValueExpr::Negate(Box::new(inner.try_map_columns(rename)?)),
            ValueExpr::Cast { expr, to } => ValueExpr::Cast {
                expr: Box::new(expr.try_map_columns(rename)?),
                to: to.clone(),
            },
            ValueExpr::Arith { op, left, right } => ValueExpr::Arith {
                op: *op,
                left: Box::new(left.try_map_columns(rename)?),
                right: Box::new(right.try_map_columns(rename)?),
            },
            ValueExpr::Call { function, args } => ValueExpr::Call {
                function: *function,
                args: args
                    .iter()
                    .map(|arg| arg.try_map_columns(rename))
                    .collect::<std::result::Result<_, E>>()?,
            },
            ValueExpr::Case {
                branches,
                otherwise,
            } => ValueExpr::Case {
                branches: branches
                    .iter()
                    .map(|(condition, value)| {
                        Ok((
                            condition.try_map_columns(rename)?,
                            value.try_map_columns(rename)?,
                        ))
                    })
                    .collect::<std::result::Result<_, E>>()?,
                otherwise: match otherwise {
                    Some(otherwise) => Some(Box::new(otherwise.try_map_columns(rename)?)),
                    None => None,
                },
            },
        })
    }

    pub(super) fn visit_columns(&self, visit: &mut dyn FnMut(&[String])) {
        match self {
            ValueExpr::Column(path) => visit(path),
            ValueExpr::Literal(_) => {}
            ValueExpr::Negate(inner) | ValueExpr::Cast { expr: inner, .. } => {
                inner.visit_columns(visit)
            }
            ValueExpr::Arith { left, right, .. } => {
                left.visit_columns(visit);
                right.visit_columns(visit);
            }
            ValueExpr::Call { args, .. } => args.iter().for_each(|a| a.visit_columns(visit)),
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                for (condition, value) in branches {
                    condition.visit_columns(visit);
                    value.visit_columns(visit);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.visit_columns(visit);
                }
            }
        }
    }

    /// Whether the value depends on the clock (`current_timestamp()`, `CASE` conditions
    /// included): such a value is not deterministic.
    pub fn reads_clock(&self) -> bool {
        match self {
            ValueExpr::Column(_) | ValueExpr::Literal(_) => false,
            ValueExpr::Negate(inner) | ValueExpr::Cast { expr: inner, .. } => inner.reads_clock(),
            ValueExpr::Arith { left, right, .. } => left.reads_clock() || right.reads_clock(),
            ValueExpr::Call { function, args } => {
                *function == Function::CurrentTimestamp || args.iter().any(ValueExpr::reads_clock)
            }
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                branches
                    .iter()
                    .any(|(condition, value)| condition.reads_clock() || value.reads_clock())
                    || otherwise.as_deref().is_some_and(ValueExpr::reads_clock)
            }
        }
    }

    /// How tightly the expression binds when written: arithmetic operands of a tighter
    /// operator are parenthesised.
    fn precedence(&self) -> u8 {
        match self {
            ValueExpr::Arith {
                op: ArithOp::Add | ArithOp::Sub,
                ..
            } => 1,
            ValueExpr::Arith { .. } => 2,
            _ => 3,
        }
    }
}

impl ArithOp {
    /// The SQL spelling (`+`, `-`, `*`, `/`, `%`).
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        }
    }
}

impl Function {
    /// The function a SQL name (ASCII-case-insensitive, Spark's aliases included) calls.
    pub fn named(name: &str) -> Option<Function> {
        Some(match name.to_ascii_lowercase().as_str() {
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
            "named_struct" => Function::NamedStruct,
            "abs" => Function::Abs,
            "length" | "char_length" | "character_length" | "len" => Function::Length,
            "trim" => Function::Trim,
            "ltrim" => Function::Ltrim,
            "rtrim" => Function::Rtrim,
            _ => return None,
        })
    }

    /// The SQL name (Spark's).
    pub fn sql_name(self) -> &'static str {
        match self {
            Function::Concat => "concat",
            Function::Lower => "lower",
            Function::Upper => "upper",
            Function::Substring => "substring",
            Function::Coalesce => "coalesce",
            Function::CurrentTimestamp => "current_timestamp",
            Function::Year => "year",
            Function::Month => "month",
            Function::Day => "day",
            Function::Hour => "hour",
            Function::ToDate => "to_date",
            Function::DateFormat => "date_format",
            Function::NamedStruct => "named_struct",
            Function::Abs => "abs",
            Function::Length => "length",
            Function::Trim => "trim",
            Function::Ltrim => "ltrim",
            Function::Rtrim => "rtrim",
        }
    }
}

impl fmt::Display for ValueExpr {
    /// SQL that [`super::parse_value_sql`] (and, as an operand, [`super::parse_sql`]) parses
    /// back into the same expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueExpr::Column(path) => write_column(f, path),
            ValueExpr::Literal(value) => write!(f, "{value}"),
            ValueExpr::Negate(inner) => write!(f, "-({inner})"),
            ValueExpr::Arith { op, left, right } => {
                let own = self.precedence();
                write_arith_operand(f, left, left.precedence() < own)?;
                write!(f, " {} ", op.symbol())?;
                write_arith_operand(f, right, right.precedence() <= own)
            }
            ValueExpr::Call { function, args } => {
                write!(f, "{}(", function.sql_name())?;
                for (index, arg) in args.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{arg}")?;
                }
                f.write_str(")")
            }
            ValueExpr::Case {
                branches,
                otherwise,
            } => {
                f.write_str("CASE")?;
                for (condition, value) in branches {
                    write!(f, " WHEN {condition} THEN {value}")?;
                }
                if let Some(otherwise) = otherwise {
                    write!(f, " ELSE {otherwise}")?;
                }
                f.write_str(" END")
            }
            ValueExpr::Cast { expr, to } => write!(f, "CAST({expr} AS {})", type_sql_name(to)),
        }
    }
}

fn write_arith_operand(
    f: &mut fmt::Formatter<'_>,
    operand: &ValueExpr,
    parenthesise: bool,
) -> fmt::Result {
    if parenthesise {
        write!(f, "({operand})")
    } else {
        write!(f, "{operand}")
    }
}

/// The Spark SQL name of a type [`type_named`] reads.
fn type_sql_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Utf8 => "STRING".into(),
        DataType::Binary => "BINARY".into(),
        DataType::Date32 => "DATE".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        DataType::Decimal128(precision, scale) => format!("DECIMAL({precision},{scale})"),
        other => other.to_string(),
    }
}

/// The Arrow type a `CAST(x AS name)` names (Spark's SQL type names).
pub(crate) fn type_named(name: &str) -> Option<DataType> {
    let lower = name.trim().to_ascii_lowercase();
    Some(match lower.as_str() {
        "boolean" => DataType::Boolean,
        "tinyint" | "byte" => DataType::Int8,
        "smallint" | "short" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "bigint" | "long" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" => DataType::Float64,
        "string" => DataType::Utf8,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        _ => {
            let inner = lower.strip_prefix("decimal")?.trim();
            let inner = inner.strip_prefix('(')?.strip_suffix(')')?;
            let (p, s) = inner.split_once(',')?;
            DataType::Decimal128(p.trim().parse().ok()?, s.trim().parse().ok()?)
        }
    })
}
