//! The per-row duties of a writer: values the table computes (defaults, identity, generated
//! columns) and rules every row must keep (NOT NULL, CHECK constraints, invariants, generated
//! columns given by the writer).
//!
//! What our expression language ([`crate::expr`]: comparisons, `IN`, `IS NULL`, `BETWEEN`,
//! `LIKE`, `AND`/`OR`/`NOT` over columns and literals) can evaluate is honoured:
//! - CHECK constraints (`delta.constraints.<name>`, spec "CHECK Constraints") and column
//!   invariants (`delta.invariants`, spec "Invariants"): a row passes when the expression is
//!   true; false or NULL is an [`Error::ConstraintViolation`] naming the rule and the row;
//! - generated columns (`delta.generationExpression`, spec "Generated Columns") whose
//!   expression the value language ([`crate::expr::parse_value_sql`]: columns, literals,
//!   arithmetic, `CAST`, `CASE`, string functions, `year`/`month`/`day`/`hour`, `to_date`,
//!   `date_format`; timestamps in UTC) evaluates: computed and cast to the column's type when
//!   the data lacks the column, else checked with `value <=> expression` (Delta on Spark's
//!   rule, null-safe equality); a row whose expression fails to evaluate (overflow, a bad
//!   cast) is an [`Error::ConstraintViolation`], as Spark's ANSI mode fails the write;
//! - default values (`CURRENT_DEFAULT`, spec "Default Columns") that are literals: used for
//!   columns the data lacks;
//! - identity columns (`delta.identity.*`, spec "Identity Columns") of type `long`: values
//!   `start + k·step` beyond the high-water mark for columns the data lacks; values given for a
//!   column that does not allow explicit inserts are a violation; given values (when allowed)
//!   do not move the high-water mark.
//!
//! Anything else (a function the languages lack, a non-deterministic generation expression, a
//! non-literal default) cannot be evaluated and is listed by [`unsupported_writer_duties`];
//! the writer refuses such tables.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use arrow::compute::kernels::cmp::not_distinct;
use arrow::compute::{cast_with_options, CastOptions};
use arrow::util::display::array_value_to_string;
use arrow_array::{new_null_array, Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::SchemaRef;
use serde_json::Value;

use super::conform::{match_name, not_null_violation};
use super::RowOrigin;
use crate::error::{Error, ProtocolKind, Result};
use crate::expr::{evaluate, evaluate_value, parse_sql, parse_value_sql, Expr, ValueExpr};
use crate::scalar::Scalar;
use crate::schema::{
    to_arrow_data_type, to_arrow_schema, DataType, PrimitiveType, StructField, StructType,
};
use crate::table_config::{TableConfiguration, TableFeature};

/// Column metadata key of a generated column's expression.
pub(crate) const GENERATION_EXPRESSION_KEY: &str = "delta.generationExpression";
/// Column metadata key of a default value expression.
pub(crate) const CURRENT_DEFAULT_KEY: &str = "CURRENT_DEFAULT";
/// Column metadata key of column invariants.
pub(crate) const INVARIANTS_KEY: &str = "delta.invariants";
/// Column metadata key of an identity column's first value.
pub(crate) const IDENTITY_START_KEY: &str = "delta.identity.start";
/// Column metadata key of an identity column's step.
pub(crate) const IDENTITY_STEP_KEY: &str = "delta.identity.step";
/// Column metadata key of an identity column's high-water mark.
pub(crate) const IDENTITY_HIGH_WATER_MARK_KEY: &str = "delta.identity.highWaterMark";
/// Column metadata key saying whether users may give identity values.
pub(crate) const IDENTITY_ALLOW_EXPLICIT_INSERT_KEY: &str = "delta.identity.allowExplicitInsert";
/// Prefix of the table properties holding CHECK constraints.
pub(crate) const CONSTRAINT_PREFIX: &str = "delta.constraints.";

/// A rule of a table that this writer cannot honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedDuty {
    /// The table feature the rule belongs to (`checkConstraints`, `generatedColumns`, ...).
    pub feature: TableFeature,
    /// The rule and why it cannot be honoured.
    pub detail: String,
}

impl UnsupportedDuty {
    /// The [`Error::UnsupportedFeature`] refusing a write to `table` because of this rule.
    pub fn into_error(self, table: &str) -> Error {
        Error::UnsupportedFeature {
            table: table.to_string(),
            kind: ProtocolKind::Writer,
            feature: format!("{} ({})", self.feature.name(), self.detail),
        }
    }
}

/// Every per-row rule of the table `config` that [`super::DataFileWriter`] cannot honour; empty
/// when it can write the table. A transaction refuses to write data to a table for which this
/// is not empty.
pub fn unsupported_writer_duties(config: &TableConfiguration) -> Vec<UnsupportedDuty> {
    all_unsupported(config)
}

/// The generated columns of `schema` that read a top-level column at one of the indices
/// `changed` and are not among them, as (index, expression): what an `UPDATE` setting the
/// columns `changed` recomputes from the new values (spec "Generated Columns"; Delta on
/// Spark's `UpdateCommand` does the same). Expressions that do not parse are left out (the
/// writer refuses such tables).
pub(crate) fn generated_columns_reading(
    schema: &StructType,
    changed: &[usize],
) -> Vec<(usize, ValueExpr)> {
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    let mut found = Vec::new();
    for (index, field) in schema.fields.iter().enumerate() {
        if changed.contains(&index) {
            continue;
        }
        let Some(Value::String(text)) = field.metadata.get(GENERATION_EXPRESSION_KEY) else {
            continue;
        };
        let Ok(expr) = parse_value_sql(text) else {
            continue;
        };
        let reads_changed = expr.column_paths().iter().any(|path| {
            path.first()
                .and_then(|first| match_name(&names, first))
                .is_some_and(|read| changed.contains(&read))
        });
        if reads_changed {
            found.push((index, expr));
        }
    }
    found
}

/// The duties of one table, parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Duties {
    /// What to do for each top-level column, in schema order.
    columns: Vec<ColumnDuty>,
    /// Rules every row must keep.
    checks: Vec<Check>,
}

#[derive(Debug, Clone)]
enum ColumnDuty {
    None,
    Default(Scalar),
    Identity(Identity),
    Generated(ValueExpr),
}

#[derive(Debug, Clone)]
struct Identity {
    path: String,
    start: i64,
    step: i64,
    high_water_mark: Option<i64>,
    allow_explicit_insert: bool,
}

#[derive(Debug, Clone)]
struct Check {
    /// `CHECK constraint c (a > 0)`, `invariant on a (a > 0)`.
    name: String,
    expr: Expr,
}

/// Refuses an UPDATE or a MERGE update clause that sets `field`, an identity column (spec
/// "Identity Columns"): its values are the table's to give, as Delta on Spark refuses it
/// (`DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED`).
pub(crate) fn refuse_identity_update(field: &arrow_schema::Field) -> Result<()> {
    if !is_identity_column(field) {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "the identity column `{}` cannot be updated: its values are generated by the table",
        field.name()
    )))
}

/// Refuses values given for `field` when it is an identity column `GENERATED ALWAYS` (spec
/// "Identity Columns": without `delta.identity.allowExplicitInsert` only the table gives
/// its values), as Delta on Spark refuses an insert naming it
/// (`DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED`): an
/// [`Error::ConstraintViolation`] naming the column, the error the writer raises for such
/// values.
pub(crate) fn refuse_identity_insert(field: &arrow_schema::Field, table: &str) -> Result<()> {
    let explicit = field
        .metadata()
        .get(IDENTITY_ALLOW_EXPLICIT_INSERT_KEY)
        .is_some_and(|value| value.eq_ignore_ascii_case("true"));
    if !is_identity_column(field) || explicit {
        return Ok(());
    }
    Err(Error::ConstraintViolation {
        table: table.to_string(),
        constraint: format!("identity column `{}`", field.name()),
        reason: "values cannot be given for an identity column that is GENERATED ALWAYS \
                 (DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED); leave it out of the \
                 insert and the table numbers the rows"
            .to_string(),
    })
}

/// Whether the Arrow `field` (with the table's field metadata) is an identity column.
pub(crate) fn is_identity_column(field: &arrow_schema::Field) -> bool {
    let metadata = field.metadata();
    metadata.contains_key(IDENTITY_START_KEY) || metadata.contains_key(IDENTITY_STEP_KEY)
}

/// The next values of each identity column, carried from batch to batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdentityState {
    /// Per top-level column: the last value generated, when one was.
    last: Vec<Option<i64>>,
    /// The positions this writer claimed, when it is one task of a distributed write
    /// ([`super::claims`]); `None`: values follow the column's high-water mark one by one.
    claimed: Option<ClaimedPositions>,
}

/// Positions of the identity sequence a task claimed: position `p` of a column is its value
/// `base + p·step`, `base` the first value after the high-water mark the claims recorded.
#[derive(Debug, Clone, Default)]
struct ClaimedPositions {
    /// The high-water marks the positions count from.
    marks: HighWaterMarks,
    /// The positions not used yet, in order.
    free: VecDeque<Range<u64>>,
}

/// The new high-water marks of the identity columns `generated` after claims counting from
/// `marks` that end at position `end` (the values of the last position claimed; spec
/// "Identity Columns"). A mark past a long's range is an [`Error::ConstraintViolation`]
/// naming `table`.
pub(crate) fn claimed_high_water_marks(
    table: &str,
    schema: &StructType,
    marks: &HighWaterMarks,
    end: u64,
    generated: &[String],
) -> Result<Vec<(String, i64)>> {
    let Some(last) = end.checked_sub(1) else {
        return Ok(Vec::new());
    };
    let mut new_marks = Vec::new();
    for field in &schema.fields {
        let Ok(ColumnDuty::Identity(id)) = column_duty(field, None) else {
            continue;
        };
        if !generated.contains(&id.path) {
            continue;
        }
        let base = match marks.get(&id.path).copied().flatten() {
            Some(mark) => mark.checked_add(id.step),
            None => Some(id.start),
        };
        let value = i64::try_from(last)
            .ok()
            .and_then(|last| last.checked_mul(id.step))
            .and_then(|offset| base?.checked_add(offset))
            .ok_or_else(|| Error::ConstraintViolation {
                table: table.to_string(),
                constraint: format!("identity column `{}`", id.path),
                reason: "the values claimed overflow a long".to_string(),
            })?;
        new_marks.push((id.path, value));
    }
    Ok(new_marks)
}

/// The identity high-water marks of a table: top-level column name to the column's
/// `delta.identity.highWaterMark` (`None`: no value generated yet).
pub(crate) type HighWaterMarks = std::collections::BTreeMap<String, Option<i64>>;

/// The `delta.identity.highWaterMark` of every top-level identity column of `schema`
/// (`None` for one that has not generated values yet).
pub(crate) fn identity_high_water_marks(schema: &StructType) -> HighWaterMarks {
    schema
        .fields
        .iter()
        .filter_map(|field| match column_duty(field, None) {
            Ok(ColumnDuty::Identity(id)) => Some((id.path, id.high_water_mark)),
            _ => None,
        })
        .collect()
}

impl Duties {
    /// How many identity columns of the table the columns `names` (a batch's) lack: the
    /// columns whose values a writer of new rows generates.
    pub(crate) fn generated_identity_columns(&self, names: &[&str]) -> usize {
        self.columns
            .iter()
            .filter(|duty| match duty {
                ColumnDuty::Identity(id) => match_name(names, &id.path).is_none(),
                _ => false,
            })
            .count()
    }

    /// The next `rows` values of the identity column named `name` (matched as the writer
    /// matches input columns), from `identity` (spec "Identity Columns": `start + k·step`
    /// beyond the high-water mark, or from claimed positions); the column's new high-water
    /// mark is carried in `identity`. A name that is not an identity column of the table is
    /// an [`Error::InvalidArgument`].
    pub(crate) fn generate_identity(
        &self,
        name: &str,
        rows: usize,
        identity: &mut IdentityState,
        table: &str,
    ) -> Result<ArrayRef> {
        let found = self
            .columns
            .iter()
            .enumerate()
            .find_map(|(index, duty)| match duty {
                ColumnDuty::Identity(id) if match_name(&[id.path.as_str()], name).is_some() => {
                    Some((index, id))
                }
                _ => None,
            });
        let Some((index, id)) = found else {
            return Err(Error::InvalidArgument(format!(
                "{table}: `{name}` is not an identity column of the table"
            )));
        };
        identity.generate(index, id, rows, table)
    }

    /// The duties of `config`, or the first one that cannot be honoured.
    pub(crate) fn try_new(
        config: &TableConfiguration,
    ) -> std::result::Result<Duties, UnsupportedDuty> {
        let schema = config.schema();
        let arrow = to_arrow_schema(schema).ok().map(Arc::new);
        let mut columns = Vec::with_capacity(schema.fields.len());
        for field in &schema.fields {
            columns.push(column_duty(field, arrow.as_ref())?);
        }
        let mut checks = Vec::new();
        let mut constraints: Vec<(&String, &String)> = config
            .metadata()
            .configuration
            .iter()
            .filter(|(key, _)| key.starts_with(CONSTRAINT_PREFIX))
            .collect();
        constraints.sort();
        for (key, text) in constraints {
            let name = &key[CONSTRAINT_PREFIX.len()..];
            let expr = parse_sql(text).map_err(|error| UnsupportedDuty {
                feature: TableFeature::CheckConstraints,
                detail: format!(
                    "CHECK constraint {name} ({text}) cannot be evaluated by deltalog: {error}"
                ),
            })?;
            check_columns_exist(&expr, schema).map_err(|missing| UnsupportedDuty {
                feature: TableFeature::CheckConstraints,
                detail: format!(
                    "CHECK constraint {name} ({text}) names unknown column `{missing}`"
                ),
            })?;
            checks.push(Check {
                name: format!("CHECK constraint {name} ({text})"),
                expr,
            });
        }
        collect_invariants(schema, &mut Vec::new(), &mut checks)?;
        Ok(Duties { columns, checks })
    }

    /// Completes the columns of a batch of `rows` rows: given columns as they are (for
    /// [`RowOrigin::New`] rows, identity columns that refuse explicit values are a
    /// violation), missing ones from their default, identity or generation expression, else
    /// NULL; then checks generated columns given by the data and the NOT NULL top-level
    /// columns.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn complete(
        &self,
        schema: &StructType,
        arrow: &SchemaRef,
        given: Vec<Option<ArrayRef>>,
        rows: usize,
        origin: RowOrigin,
        identity: &mut IdentityState,
        table: &str,
    ) -> Result<Vec<ArrayRef>> {
        let mut columns: Vec<Option<ArrayRef>> = Vec::with_capacity(given.len());
        let mut provided = Vec::with_capacity(given.len());
        for (index, column) in given.into_iter().enumerate() {
            provided.push(column.is_some());
            let target = arrow.field(index).data_type();
            let filled = match (column, self.columns.get(index)) {
                (Some(_), Some(ColumnDuty::Identity(id)))
                    if !id.allow_explicit_insert && origin == RowOrigin::New =>
                {
                    return Err(Error::ConstraintViolation {
                        table: table.to_string(),
                        constraint: format!("identity column `{}`", id.path),
                        reason: "values cannot be given for an identity column that is \
                                 GENERATED ALWAYS"
                            .to_string(),
                    });
                }
                (Some(column), _) => Some(column),
                (None, Some(ColumnDuty::Default(value))) => {
                    Some(literal_array(value, target, rows)?)
                }
                (None, Some(ColumnDuty::Identity(id))) => {
                    Some(identity.generate(index, id, rows, table)?)
                }
                (None, _) => None,
            };
            columns.push(filled);
        }
        for (index, duty) in self.columns.iter().enumerate() {
            let ColumnDuty::Generated(expr) = duty else {
                continue;
            };
            let field = &schema.fields[index];
            let violation = |reason: String| Error::ConstraintViolation {
                table: table.to_string(),
                constraint: format!(
                    "generated column `{}` ({})",
                    field.name,
                    generation_text(field)
                ),
                reason,
            };
            let computed = generated_values(expr, arrow, &columns, rows, index)
                .map_err(|e| violation(format!("it cannot be evaluated on the data: {e}")))?;
            match (&columns[index], provided[index]) {
                (Some(given), true) => {
                    let same = not_distinct(given, &computed)
                        .map_err(|e| Error::arrow("checking a generated column", e))?;
                    if let Some(row) = (0..rows).find(|&row| !same.value(row)) {
                        return Err(violation(format!(
                            "row {row} has `{}` = {}, the expression gives {}{}",
                            field.name,
                            shown(given, row),
                            shown(&computed, row),
                            operand_values(expr, arrow, &columns, row)
                        )));
                    }
                }
                _ => columns[index] = Some(computed),
            }
        }
        let mut complete = Vec::with_capacity(columns.len());
        for (index, column) in columns.into_iter().enumerate() {
            let field = arrow.field(index);
            let column = column.unwrap_or_else(|| new_null_array(field.data_type(), rows));
            if !field.is_nullable() {
                if let Some(nulls) = column.logical_nulls() {
                    if let Some(row) = (0..rows).find(|&row| nulls.is_null(row)) {
                        return Err(not_null_violation(table, field.name(), row));
                    }
                }
            }
            complete.push(column);
        }
        Ok(complete)
    }

    /// Checks every CHECK constraint and invariant on every row of `batch` (the table's
    /// logical columns).
    pub(crate) fn check_rows(&self, batch: &RecordBatch, table: &str) -> Result<()> {
        for check in &self.checks {
            let passed =
                evaluate(&check.expr, batch).map_err(|error| Error::ConstraintViolation {
                    table: table.to_string(),
                    constraint: check.name.clone(),
                    reason: format!("it cannot be evaluated on the data: {error}"),
                })?;
            if let Some(row) = (0..batch.num_rows()).find(|&row| !passed.value(row)) {
                let schema = batch.schema();
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                let mut values = Vec::new();
                let mut seen = Vec::new();
                for path in check.expr.column_paths() {
                    let Some(first) = path.first() else { continue };
                    let Some(index) = match_name(&names, first) else {
                        continue;
                    };
                    if seen.contains(&index) {
                        continue;
                    }
                    seen.push(index);
                    values.push(format!(
                        "{} = {}",
                        names[index],
                        shown(batch.column(index), row)
                    ));
                }
                return Err(Error::ConstraintViolation {
                    table: table.to_string(),
                    constraint: check.name.clone(),
                    reason: format!("row {row} with values {}", values.join(", ")),
                });
            }
        }
        Ok(())
    }
}

impl IdentityState {
    /// The state before the first batch.
    pub(crate) fn new(duties: &Duties) -> IdentityState {
        IdentityState {
            last: vec![None; duties.columns.len()],
            claimed: None,
        }
    }

    /// The claimed positions not used yet.
    pub(crate) fn free_positions(&self) -> u64 {
        self.claimed.as_ref().map_or(0, |claimed| {
            claimed
                .free
                .iter()
                .map(|range| range.end - range.start)
                .sum()
        })
    }

    /// Adds the positions of a claim; from then on values come from claimed positions only.
    pub(crate) fn add_claim(&mut self, positions: Range<u64>, marks: HighWaterMarks) {
        let claimed = self.claimed.get_or_insert_with(ClaimedPositions::default);
        claimed.marks = marks;
        claimed.free.push_back(positions);
    }

    /// Takes the next `count` claimed positions.
    fn take_positions(&mut self, count: usize) -> Option<Vec<u64>> {
        let claimed = self.claimed.as_mut()?;
        let mut taken = Vec::with_capacity(count);
        while taken.len() < count {
            let range = claimed.free.front_mut()?;
            let wanted = (count - taken.len()) as u64;
            let end = range.start + wanted.min(range.end - range.start);
            taken.extend(range.start..end);
            range.start = end;
            if range.start == range.end {
                claimed.free.pop_front();
            }
        }
        Some(taken)
    }

    /// The new high-water mark of every identity column that generated values.
    pub(crate) fn high_water_marks(&self, duties: &Duties) -> Vec<(String, i64)> {
        duties
            .columns
            .iter()
            .zip(&self.last)
            .filter_map(|(duty, last)| match (duty, last) {
                (ColumnDuty::Identity(id), Some(last)) => Some((id.path.clone(), *last)),
                _ => None,
            })
            .collect()
    }

    fn generate(
        &mut self,
        index: usize,
        id: &Identity,
        rows: usize,
        table: &str,
    ) -> Result<ArrayRef> {
        let overflow = || Error::ConstraintViolation {
            table: table.to_string(),
            constraint: format!("identity column `{}`", id.path),
            reason: "the next values overflow a long".to_string(),
        };
        if let Some(claimed) = &self.claimed {
            let mark = claimed.marks.get(&id.path).copied().flatten();
            let base = match mark {
                Some(mark) => mark.checked_add(id.step).ok_or_else(overflow)?,
                None => id.start,
            };
            let positions = self.take_positions(rows).ok_or_else(|| {
                Error::internal_invariant(format!(
                    "identity column `{}`: fewer positions claimed than rows to number",
                    id.path
                ))
            })?;
            let values = positions
                .into_iter()
                .map(|position| {
                    let offset = i64::try_from(position).ok()?.checked_mul(id.step)?;
                    base.checked_add(offset)
                })
                .collect::<Option<Vec<i64>>>()
                .ok_or_else(overflow)?;
            if let (Some(last), Some(slot)) = (values.last(), self.last.get_mut(index)) {
                *slot = Some(*last);
            }
            return Ok(Arc::new(Int64Array::from(values)));
        }
        let previous = self
            .last
            .get(index)
            .copied()
            .flatten()
            .or(id.high_water_mark);
        let first = match previous {
            Some(mark) => mark.checked_add(id.step).ok_or_else(overflow)?,
            None => id.start,
        };
        let mut values = Vec::with_capacity(rows);
        let mut next = first;
        for row in 0..rows {
            values.push(next);
            if row + 1 < rows {
                next = next.checked_add(id.step).ok_or_else(overflow)?;
            }
        }
        if rows > 0 {
            if let Some(slot) = self.last.get_mut(index) {
                *slot = Some(next);
            }
        }
        Ok(Arc::new(Int64Array::from(values)))
    }
}

/// What the writer does for `field`; `table` is the table's logical Arrow schema (`None` when
/// it has none, so no generation expression can be checked).
fn column_duty(
    field: &StructField,
    table: Option<&SchemaRef>,
) -> std::result::Result<ColumnDuty, UnsupportedDuty> {
    let text = |key: &str| match field.metadata.get(key) {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    if field.metadata.contains_key(IDENTITY_START_KEY)
        || field.metadata.contains_key(IDENTITY_STEP_KEY)
    {
        let unsupported = |detail: String| UnsupportedDuty {
            feature: TableFeature::IdentityColumns,
            detail: format!("identity column `{}`: {detail}", field.name),
        };
        if field.data_type != DataType::Primitive(PrimitiveType::Long) {
            return Err(unsupported(format!(
                "its type is {}, not long",
                field.data_type
            )));
        }
        let number = |key: &str| -> std::result::Result<Option<i64>, UnsupportedDuty> {
            match field.metadata.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => n
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| unsupported(format!("{key} is not a long"))),
                Some(Value::String(s)) => s
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| unsupported(format!("{key} is not a long"))),
                Some(_) => Err(unsupported(format!("{key} is not a long"))),
            }
        };
        let start =
            number(IDENTITY_START_KEY)?.ok_or_else(|| unsupported("it has no start".into()))?;
        let step =
            number(IDENTITY_STEP_KEY)?.ok_or_else(|| unsupported("it has no step".into()))?;
        if step == 0 {
            return Err(unsupported("its step is 0".into()));
        }
        let allow_explicit_insert = matches!(
            field.metadata.get(IDENTITY_ALLOW_EXPLICIT_INSERT_KEY),
            Some(Value::Bool(true))
        ) || text(IDENTITY_ALLOW_EXPLICIT_INSERT_KEY)
            .is_some_and(|t| t.eq_ignore_ascii_case("true"));
        return Ok(ColumnDuty::Identity(Identity {
            path: field.name.clone(),
            start,
            step,
            high_water_mark: number(IDENTITY_HIGH_WATER_MARK_KEY)?,
            allow_explicit_insert,
        }));
    }
    if let Some(expression) = text(GENERATION_EXPRESSION_KEY) {
        let unsupported = |detail: String| UnsupportedDuty {
            feature: TableFeature::GeneratedColumns,
            detail: format!(
                "generated column `{}` ({expression}) cannot be evaluated by deltalog: {detail}",
                field.name
            ),
        };
        let expr = parse_value_sql(&expression).map_err(|e| unsupported(e.to_string()))?;
        let table =
            table.ok_or_else(|| unsupported("the table schema has no Arrow form".into()))?;
        check_generation(&expr, field, table).map_err(unsupported)?;
        return Ok(ColumnDuty::Generated(expr));
    }
    if let Some(expression) = text(CURRENT_DEFAULT_KEY) {
        let unsupported = |detail: String| {
            UnsupportedDuty {
            feature: TableFeature::AllowColumnDefaults,
            detail: format!(
                "the default value of `{}` ({expression}) cannot be evaluated by deltalog: {detail}",
                field.name
            ),
        }
        };
        let expr = parse_sql(&expression).map_err(|e| unsupported(e.to_string()))?;
        let Expr::Literal(value) = expr else {
            return Err(unsupported("only literal defaults are supported".into()));
        };
        let target =
            to_arrow_data_type(&field.data_type).map_err(|e| unsupported(e.to_string()))?;
        literal_array(&value, &target, 1).map_err(|e| unsupported(e.to_string()))?;
        return Ok(ColumnDuty::Default(value));
    }
    Ok(ColumnDuty::None)
}

/// The invariants of `schema` (and its nested structs), as checks.
fn collect_invariants(
    schema: &StructType,
    prefix: &mut Vec<String>,
    checks: &mut Vec<Check>,
) -> std::result::Result<(), UnsupportedDuty> {
    for field in &schema.fields {
        prefix.push(field.name.clone());
        if let Some(value) = field.metadata.get(INVARIANTS_KEY) {
            let path = prefix.join(".");
            let unsupported = |detail: String| UnsupportedDuty {
                feature: TableFeature::Invariants,
                detail: format!(
                    "the invariant on `{path}` cannot be evaluated by deltalog: {detail}"
                ),
            };
            let parsed: Value = match value {
                Value::String(text) => {
                    serde_json::from_str(text).map_err(|e| unsupported(e.to_string()))?
                }
                other => other.clone(),
            };
            let text = parsed
                .pointer("/expression/expression")
                .and_then(Value::as_str)
                .ok_or_else(|| unsupported("it has no expression.expression".into()))?
                .to_string();
            let expr = parse_sql(&text).map_err(|e| unsupported(e.to_string()))?;
            checks.push(Check {
                name: format!("invariant on `{path}` ({text})"),
                expr,
            });
        }
        if let DataType::Struct(nested) = &field.data_type {
            collect_invariants(nested, prefix, checks)?;
        }
        prefix.pop();
    }
    Ok(())
}

/// Every unsupported duty of `config`, not only the first.
fn all_unsupported(config: &TableConfiguration) -> Vec<UnsupportedDuty> {
    let mut found = Vec::new();
    let schema = config.schema();
    let arrow = to_arrow_schema(schema).ok().map(Arc::new);
    for field in &schema.fields {
        if let Err(duty) = column_duty(field, arrow.as_ref()) {
            found.push(duty);
        }
    }
    let mut constraints: Vec<(&String, &String)> = config
        .metadata()
        .configuration
        .iter()
        .filter(|(key, _)| key.starts_with(CONSTRAINT_PREFIX))
        .collect();
    constraints.sort();
    for (key, text) in constraints {
        let name = &key[CONSTRAINT_PREFIX.len()..];
        let detail = match parse_sql(text) {
            Err(error) => Some(format!(
                "CHECK constraint {name} ({text}) cannot be evaluated by deltalog: {error}"
            )),
            Ok(expr) => check_columns_exist(&expr, schema).err().map(|missing| {
                format!("CHECK constraint {name} ({text}) names unknown column `{missing}`")
            }),
        };
        if let Some(detail) = detail {
            found.push(UnsupportedDuty {
                feature: TableFeature::CheckConstraints,
                detail,
            });
        }
    }
    if let Err(duty) = collect_invariants(schema, &mut Vec::new(), &mut Vec::new()) {
        found.push(duty);
    }
    found
}

/// `Err(name)` for the first column `expr` names whose first part is not a top-level column.
fn check_columns_exist(expr: &Expr, schema: &StructType) -> std::result::Result<(), String> {
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    for path in expr.column_paths() {
        let joined = path.join(".");
        let known = path
            .first()
            .is_some_and(|first| match_name(&names, first).is_some())
            || match_name(&names, &joined).is_some();
        if !known {
            return Err(joined);
        }
    }
    Ok(())
}

/// `Err(why)` when `expr` cannot be the generation expression of `field` for this writer:
/// it is not deterministic, names an unknown column, or its result does not evaluate or cast
/// to the column's type (tried on no rows of the table's schema).
fn check_generation(
    expr: &ValueExpr,
    field: &StructField,
    table: &SchemaRef,
) -> std::result::Result<(), String> {
    if expr.reads_clock() {
        return Err("current_timestamp() is not deterministic".into());
    }
    let empty = RecordBatch::new_empty(table.clone());
    let result = evaluate_value(expr, &empty, 0).map_err(|e| e.to_string())?;
    let target = to_arrow_data_type(&field.data_type).map_err(|e| e.to_string())?;
    if !arrow::compute::can_cast_types(result.data_type(), &target) {
        return Err(format!(
            "its {} result cannot be a {}",
            result.data_type(),
            field.data_type
        ));
    }
    Ok(())
}

/// The rows so far as a batch of the table's logical schema (columns not known yet are NULL).
fn rows_so_far(
    arrow: &SchemaRef,
    columns: &[Option<ArrayRef>],
    rows: usize,
) -> Result<RecordBatch> {
    let arrays = columns
        .iter()
        .zip(arrow.fields())
        .map(|(column, field)| match column {
            Some(array) => array.clone(),
            None => new_null_array(field.data_type(), rows),
        })
        .collect();
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(arrow.clone(), arrays, &options)
        .map_err(|e| Error::arrow("assembling rows for a generated column", e))
}

/// The values of the generated column at `index`: its expression over the other columns, cast
/// (failing, not NULL, on a value that does not fit) to the column's type.
fn generated_values(
    expr: &ValueExpr,
    arrow: &SchemaRef,
    columns: &[Option<ArrayRef>],
    rows: usize,
    index: usize,
) -> Result<ArrayRef> {
    let batch = rows_so_far(arrow, columns, rows)?;
    let values = evaluate_value(expr, &batch, 0)?;
    cast_strict(&values, arrow.field(index).data_type())
}

/// `, from a = 1, b = 'x'`: the values at `row` of the columns `expr` reads, for messages.
fn operand_values(
    expr: &ValueExpr,
    arrow: &SchemaRef,
    columns: &[Option<ArrayRef>],
    row: usize,
) -> String {
    let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
    let shown_values: Vec<String> = expr
        .column_paths()
        .iter()
        .filter_map(|path| {
            let index = match_name(&names, path.first()?)?;
            let value = columns
                .get(index)?
                .as_ref()
                .map_or("NULL".to_string(), |c| shown(c, row));
            Some(format!("{} = {value}", names[index]))
        })
        .collect();
    match shown_values.is_empty() {
        true => String::new(),
        false => format!(", from {}", shown_values.join(", ")),
    }
}

/// `value` repeated `rows` times as the Arrow type `target`; a value that does not fit is an
/// [`Error::InvalidArgument`].
fn literal_array(value: &Scalar, target: &arrow_schema::DataType, rows: usize) -> Result<ArrayRef> {
    let array = value.to_array(rows)?;
    cast_strict(&array, target)
}

fn cast_strict(array: &ArrayRef, target: &arrow_schema::DataType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(array, target, &options).map_err(|e| {
        Error::InvalidArgument(format!(
            "a {} value cannot be a {target}: {e}",
            array.data_type()
        ))
    })
}

fn generation_text(field: &StructField) -> String {
    match field.metadata.get(GENERATION_EXPRESSION_KEY) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The value at `row` as text for messages (`NULL` for nulls, strings quoted).
fn shown(array: &ArrayRef, row: usize) -> String {
    if array.is_null(row) {
        return "NULL".to_string();
    }
    let text = array_value_to_string(array, row).unwrap_or_else(|_| "?".to_string());
    match array.data_type() {
        arrow_schema::DataType::Utf8 | arrow_schema::DataType::LargeUtf8 => format!("'{text}'"),
        _ => text,
    }
}
