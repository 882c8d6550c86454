//! pyarrow's disjunctive normal form of filters (`[[(column, op, value), ...], ...]`).

use super::ast::{CompareOp, Expr};
use super::invalid;
use crate::error::Result;
use crate::scalar::Scalar;

/// The value of one `(column, op, value)` predicate of pyarrow's DNF filter form.
#[derive(Debug, Clone, PartialEq)]
pub enum DnfLiteral {
    /// One value (`Scalar::Null` stands for Python's `None`).
    Scalar(Scalar),
    /// The collection of an `in` / `not in` predicate.
    List(Vec<Scalar>),
}

/// Builds a filter from pyarrow's disjunctive normal form: the outer list is an OR of inner
/// lists, each inner list an AND of `(column, op, value)` predicates (pyarrow.parquet
/// `filters`). A flat list of predicates is one inner list.
///
/// Operators (case-insensitive): `=`/`==`, `!=`, `<`, `<=`, `>`, `>=` with one value; `in` and
/// `not in` with a collection; `is` and `is not` with `None` (IS NULL / IS NOT NULL). Columns
/// are dotted names as in [`Expr::column`]. `not in` follows SQL: rows where the column is
/// NULL do not match, and nothing matches when the collection holds `None`. Comparing with
/// `None` through `=`/`!=` is rejected (it would match nothing); use `is`/`is not`. An empty
/// outer list is the filter `TRUE`; an empty inner list is an `Error::InvalidArgument`.
pub fn from_dnf(disjuncts: Vec<Vec<(String, String, DnfLiteral)>>) -> Result<Expr> {
    let mut alternatives = Vec::with_capacity(disjuncts.len());
    for (index, conjuncts) in disjuncts.into_iter().enumerate() {
        let predicates = conjuncts
            .into_iter()
            .map(|(column, op, value)| dnf_predicate(&column, &op, value))
            .collect::<Result<Vec<_>>>()?;
        let conjunction = Expr::conjunction(predicates).ok_or_else(|| {
            invalid(format!(
                "filter group {index} is an empty list; each group must hold at least one \
                 (column, op, value) predicate"
            ))
        })?;
        alternatives.push(conjunction);
    }
    Ok(Expr::disjunction(alternatives).unwrap_or(Expr::Literal(Scalar::Boolean(true))))
}

fn dnf_predicate(column: &str, op: &str, value: DnfLiteral) -> Result<Expr> {
    let normalized = op
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let target = Expr::column(column);
    let describe = || format!("({column:?}, {op:?}, {})", dnf_value_text(&value));
    let comparison = match normalized.as_str() {
        "=" | "==" => Some(CompareOp::Eq),
        "!=" => Some(CompareOp::NotEq),
        "<" => Some(CompareOp::Lt),
        "<=" => Some(CompareOp::LtEq),
        ">" => Some(CompareOp::Gt),
        ">=" => Some(CompareOp::GtEq),
        _ => None,
    };
    match (normalized.as_str(), comparison, &value) {
        (_, Some(_), DnfLiteral::Scalar(Scalar::Null)) => Err(invalid(format!(
            "filter {} compares with None, which matches no row; use 'is' or 'is not' to test \
             for null",
            describe()
        ))),
        (_, Some(op), DnfLiteral::Scalar(scalar)) => {
            Ok(target.compare(op, Expr::Literal(scalar.clone())))
        }
        (_, Some(_), DnfLiteral::List(_)) => Err(invalid(format!(
            "filter {} compares with a collection; use 'in' or 'not in'",
            describe()
        ))),
        ("in" | "not in", _, DnfLiteral::List(list)) => {
            Ok(target.in_list(list.clone(), normalized == "not in"))
        }
        ("in" | "not in", _, DnfLiteral::Scalar(_)) => Err(invalid(format!(
            "filter {} needs a collection (list, set or tuple) as its value",
            describe()
        ))),
        ("is", _, DnfLiteral::Scalar(Scalar::Null)) => Ok(target.is_null()),
        ("is not", _, DnfLiteral::Scalar(Scalar::Null)) => Ok(target.is_not_null()),
        ("is" | "is not", _, _) => Err(invalid(format!(
            "filter {} needs None as its value",
            describe()
        ))),
        _ => Err(invalid(format!(
            "filter {} has an unsupported operator; expected one of =, ==, !=, <, <=, >, >=, \
             in, not in, is, is not",
            describe()
        ))),
    }
}

fn dnf_value_text(value: &DnfLiteral) -> String {
    match value {
        DnfLiteral::Scalar(Scalar::Null) => "None".to_string(),
        DnfLiteral::Scalar(scalar) => scalar.to_string(),
        DnfLiteral::List(list) => {
            let items: Vec<String> = list.iter().map(ToString::to_string).collect();
            format!("[{}]", items.join(", "))
        }
    }
}
