//! Row filters: an expression tree ([`Expr`], in `ast`), a SQL-like parser ([`parse_sql`], in
//! `parse`), pyarrow's disjunctive normal form ([`from_dnf`], in `dnf`), exact row evaluation
//! over Arrow batches (`evaluate`, in `eval`, with the conversion of literals to a column's
//! type in `convert`) and conservative file skipping over a batch of per-file statistics
//! (`files_may_match`, in `skipping`; spec "Per-file Statistics", catalogue H-ST and G-25).
//!
//! Semantics are SQL's three-valued logic: a comparison with a NULL operand is NULL, NULL is
//! not true, `NOT NULL` is NULL, `x IN (1, NULL)` is NULL unless `x = 1`. Floating point values
//! compare by the IEEE total order after folding `-0.0` into `0.0` and every NaN into the one
//! positive NaN (`-x` of a NaN has its sign bit set), so NaN equals NaN and is greater than
//! every other number (Spark's ordering). A literal is converted to the type of
//! the column it is compared with; a literal between two representable values (`int_col > 1.5`,
//! `date_col < TIMESTAMP '2021-01-01 12:00:00'`) or outside the type's range is compared
//! exactly, not rounded.

mod ast;
mod convert;
mod dnf;
mod eval;
mod parse;
mod skipping;
mod value_parse;

#[cfg(test)]
mod tests;

pub use ast::{ArithOp, Function, ValueExpr};
pub use ast::{CompareOp, Expr};
pub use dnf::{from_dnf, DnfLiteral};
pub(crate) use eval::{assign_to, cast_to, evaluate_value, find_field};
pub(crate) use eval::{evaluate, evaluate_at};
pub use parse::parse_sql;
pub(crate) use skipping::{files_may_match, partition_only};
pub use value_parse::parse_value_sql;

use crate::error::Error;

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}
