//! The clauses of a merge as the caller gives them ([`MergeClauses`]) and as the merge runs
//! them ([`Resolved`]): every column reference qualified with the alias of its side, `*`
//! actions expanded to the target's columns, values per target column, checked once on no
//! rows.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::expr::{
    assign_to, evaluate, evaluate_value, parse_value_sql, Expr, Function, ValueExpr,
};
use crate::ops::dml::assignments::resolve_assignments;
use crate::scalar::Scalar;
use crate::write::duties::{
    is_identity_column, refuse_identity_insert, refuse_identity_update, GENERATION_EXPRESSION_KEY,
};

/// What a `WHEN MATCHED` clause does with a target row and its source row.
#[derive(Debug, Clone, PartialEq)]
pub enum MatchedAction {
    /// `UPDATE SET column = value, ...` (values may name both sides).
    Update(Vec<(String, ValueExpr)>),
    /// `UPDATE SET *`: every target column from the source column of the same name.
    UpdateAll,
    /// `DELETE`.
    Delete,
}

/// What a `WHEN NOT MATCHED [BY TARGET]` clause does with a source row.
#[derive(Debug, Clone, PartialEq)]
pub enum NotMatchedAction {
    /// `INSERT (columns) VALUES (values)`: columns not named are NULL, generated columns
    /// not named are computed, identity columns not named get new values (naming a
    /// `GENERATED ALWAYS` identity column is refused).
    Insert(Vec<(String, ValueExpr)>),
    /// `INSERT *`: every target column from the source column of the same name (generated
    /// columns the source lacks computed; with schema evolution, identity columns the source
    /// lacks get new values).
    InsertAll,
}

/// What a `WHEN NOT MATCHED BY SOURCE` clause does with a target row.
#[derive(Debug, Clone, PartialEq)]
pub enum NotMatchedBySourceAction {
    /// `UPDATE SET column = value, ...` (values name the target only).
    Update(Vec<(String, ValueExpr)>),
    /// `DELETE`.
    Delete,
}

/// The `WHEN` clauses of a merge, each kind in the order given, each with an optional
/// condition; the first clause of a kind whose condition holds applies to a row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergeClauses {
    pub matched: Vec<(Option<Expr>, MatchedAction)>,
    pub not_matched: Vec<(Option<Expr>, NotMatchedAction)>,
    pub not_matched_by_source: Vec<(Option<Expr>, NotMatchedBySourceAction)>,
}

impl MergeClauses {
    /// True when there is no clause at all.
    pub fn is_empty(&self) -> bool {
        self.matched.is_empty()
            && self.not_matched.is_empty()
            && self.not_matched_by_source.is_empty()
    }
}

/// The action of a resolved clause.
#[derive(Debug, Clone)]
pub(super) enum Action {
    /// For each target column, its new value (`None`: kept).
    Update(Vec<Option<ValueExpr>>),
    Delete,
    /// For each target column, its value; `None` for an identity column the clause does not
    /// assign, whose values the table generates (spec "Identity Columns").
    Insert(Vec<Option<ValueExpr>>),
}

/// A clause with every column reference qualified.
#[derive(Debug, Clone)]
pub(super) struct Clause {
    pub condition: Option<Expr>,
    pub action: Action,
}

impl Clause {
    /// `{"predicate": ..., "actionType": ...}` as Spark's `MergePredicate` is written in
    /// `commitInfo.operationParameters`.
    pub(super) fn describe(&self, action_type: &str) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        if let Some(condition) = &self.condition {
            object.insert("predicate".into(), condition.to_string().into());
        }
        object.insert("actionType".into(), action_type.into());
        serde_json::Value::Object(object)
    }

    pub(super) fn is_delete(&self) -> bool {
        matches!(self.action, Action::Delete)
    }
}

/// The merge condition and clauses, resolved against the target and source schemas.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    pub on: Expr,
    pub matched: Vec<Clause>,
    pub not_matched: Vec<Clause>,
    pub not_matched_by_source: Vec<Clause>,
    pub sides: Sides,
}

/// The two sides of the join: their aliases and their columns.
#[derive(Debug, Clone)]
pub(super) struct Sides {
    pub target_alias: String,
    pub source_alias: String,
    pub target: SchemaRef,
    pub source: SchemaRef,
    /// Schema evolution is on: `*` actions name the source's columns, not the target's.
    pub evolving: bool,
}

/// Which sides an expression may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Both,
    SourceOnly,
    TargetOnly,
}

impl Resolved {
    /// Qualifies every reference of `on` and `clauses`, expands `*` actions and checks
    /// every expression on no rows. Errors: [`Error::InvalidArgument`] for an unknown or
    /// ambiguous column, a clause naming a side it cannot see, a column set twice, an
    /// unconditional clause followed by another of its kind; [`Error::SchemaMismatch`] for a
    /// `*` action whose source lacks a target column or has columns the target lacks.
    pub(super) fn try_new(
        on: &Expr,
        clauses: MergeClauses,
        sides: Sides,
        table: &str,
    ) -> Result<Resolved> {
        if sides.target_alias.eq_ignore_ascii_case(&sides.source_alias) {
            return Err(Error::InvalidArgument(format!(
                "the source and target aliases must differ, both are '{}'",
                sides.source_alias
            )));
        }
        if clauses.is_empty() {
            return Err(Error::InvalidArgument(
                "a merge needs at least one WHEN clause".into(),
            ));
        }
        let on = sides.qualify(on, Scope::Both)?;
        let mut matched = Vec::new();
        for (condition, action) in clauses.matched {
            let condition = sides.qualify_option(condition.as_ref(), Scope::Both)?;
            let action = match action {
                MatchedAction::Update(set) => sides.update(set, Scope::Both)?,
                MatchedAction::UpdateAll => sides.update_all(table)?,
                MatchedAction::Delete => Action::Delete,
            };
            matched.push(Clause { condition, action });
        }
        let mut not_matched = Vec::new();
        for (condition, action) in clauses.not_matched {
            let condition = sides.qualify_option(condition.as_ref(), Scope::SourceOnly)?;
            let action = match action {
                NotMatchedAction::Insert(values) => sides.insert(values, table)?,
                NotMatchedAction::InsertAll => sides.insert_all(table)?,
            };
            not_matched.push(Clause { condition, action });
        }
        let mut not_matched_by_source = Vec::new();
        for (condition, action) in clauses.not_matched_by_source {
            let condition = sides.qualify_option(condition.as_ref(), Scope::TargetOnly)?;
            let action = match action {
                NotMatchedBySourceAction::Update(set) => sides.update(set, Scope::TargetOnly)?,
                NotMatchedBySourceAction::Delete => Action::Delete,
            };
            not_matched_by_source.push(Clause { condition, action });
        }
        for (kind, list) in [
            ("WHEN MATCHED", &matched),
            ("WHEN NOT MATCHED", &not_matched),
            ("WHEN NOT MATCHED BY SOURCE", &not_matched_by_source),
        ] {
            let last = list.len().saturating_sub(1);
            if list[..last.min(list.len())]
                .iter()
                .any(|c| c.condition.is_none())
            {
                return Err(Error::InvalidArgument(format!(
                    "only the last {kind} clause may omit its condition"
                )));
            }
        }
        let resolved = Resolved {
            on,
            matched,
            not_matched,
            not_matched_by_source,
            sides,
        };
        resolved.check_on_no_rows()?;
        Ok(resolved)
    }

    /// True when target rows matched by several source rows are allowed, as Delta on Spark
    /// allows them (its exceptions to `DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE`):
    /// an insert-only merge, or one whose only matched clause is an unconditional delete. A
    /// merge with `WHEN NOT MATCHED BY SOURCE` clauses and no matched clause is refused too.
    pub(super) fn allows_multiple_matches(&self) -> bool {
        match self.matched.as_slice() {
            [] => self.not_matched_by_source.is_empty(),
            [only] => only.is_delete() && only.condition.is_none(),
            _ => false,
        }
    }

    /// The conjuncts of the merge condition.
    pub(super) fn on_conjuncts(&self) -> Vec<&Expr> {
        self.on.conjuncts()
    }

    /// Evaluates every expression on an empty joined batch, so that an unknown column or a
    /// comparison of kinds that do not combine fails before any file is read.
    fn check_on_no_rows(&self) -> Result<()> {
        let target = RecordBatch::new_empty(self.sides.target.clone());
        let source = RecordBatch::new_empty(self.sides.source.clone());
        let joined = self.sides.join(Some(&target), Some(&source), 0)?;
        evaluate(&self.on, &joined)?;
        for clause in self
            .matched
            .iter()
            .chain(&self.not_matched)
            .chain(&self.not_matched_by_source)
        {
            if let Some(condition) = &clause.condition {
                evaluate(condition, &joined)?;
            }
            match &clause.action {
                Action::Update(values) => {
                    for value in values.iter().flatten() {
                        evaluate_value(value, &joined, 0)?;
                    }
                }
                Action::Insert(values) => {
                    for value in values.iter().flatten() {
                        evaluate_value(value, &joined, 0)?;
                    }
                }
                Action::Delete => {}
            }
        }
        Ok(())
    }
}

impl Sides {
    /// The joined rows: one struct column per side, named by its alias, holding that side's
    /// columns; a side given as `None` is a NULL struct (the side without a match).
    pub(super) fn join(
        &self,
        target: Option<&RecordBatch>,
        source: Option<&RecordBatch>,
        rows: usize,
    ) -> Result<RecordBatch> {
        let target = side_struct(target, &self.target, rows)?;
        let source = side_struct(source, &self.source, rows)?;
        let schema = Schema::new(vec![
            Field::new(&self.target_alias, target.data_type().clone(), true),
            Field::new(&self.source_alias, source.data_type().clone(), true),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![target, source])
            .map_err(|error| Error::arrow("joining target and source rows", error))
    }

    /// The target row values after `values` (per target column, `None`: kept) are applied to
    /// the `joined` rows; `target` holds the rows as they were.
    pub(super) fn apply(
        &self,
        values: &[Option<ValueExpr>],
        target: &RecordBatch,
        joined: &RecordBatch,
        now_micros: i64,
    ) -> Result<Vec<ArrayRef>> {
        let mut columns = Vec::with_capacity(values.len());
        for (index, value) in values.iter().enumerate() {
            columns.push(match value {
                Some(value) => self.value_of(index, value, joined, now_micros)?,
                None => target.column(index).clone(),
            });
        }
        Ok(columns)
    }

    /// The value of `expr` on the `joined` rows cast to the type of target column `index`.
    pub(super) fn value_of(
        &self,
        index: usize,
        expr: &ValueExpr,
        joined: &RecordBatch,
        now_micros: i64,
    ) -> Result<ArrayRef> {
        let value = evaluate_value(expr, joined, now_micros)?;
        assign_to(&value, self.target.field(index).data_type())
    }

    fn qualify_option(&self, expr: Option<&Expr>, scope: Scope) -> Result<Option<Expr>> {
        expr.map(|expr| self.qualify(expr, scope)).transpose()
    }

    fn update(&self, set: Vec<(String, ValueExpr)>, scope: Scope) -> Result<Action> {
        if set.is_empty() {
            return Err(Error::InvalidArgument(
                "an update clause needs at least one column to set".into(),
            ));
        }
        let qualified = set
            .into_iter()
            .map(|(name, value)| Ok((name, self.qualify_value(&value, scope)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut values: Vec<Option<ValueExpr>> = vec![None; self.target.fields().len()];
        let target = self.target.fields();
        for (index, value) in resolve_assignments(target, qualified, Some(&self.target_alias))? {
            refuse_identity_update(&target[index])?;
            values[index] = Some(value);
        }
        self.regenerate(&mut values, false);
        Ok(Action::Update(values))
    }

    fn insert(&self, set: Vec<(String, ValueExpr)>, table: &str) -> Result<Action> {
        let mut values: Vec<Option<ValueExpr>> = vec![None; self.target.fields().len()];
        for (name, value) in set {
            let index = self.target_column(&name)?;
            if values[index].is_some() {
                return Err(Error::InvalidArgument(format!("{name} is inserted twice")));
            }
            values[index] = Some(self.qualify_value(&value, Scope::SourceOnly)?);
        }
        self.inserted(values, table)
    }

    fn update_all(&self, table: &str) -> Result<Action> {
        let mut values = self.star_values(table, false)?;
        // Identity columns keep their values: only the table gives them.
        for (value, field) in values.iter_mut().zip(self.target.fields()) {
            if is_identity_column(field) {
                *value = None;
            }
        }
        self.regenerate(&mut values, false);
        Ok(Action::Update(values))
    }

    fn insert_all(&self, table: &str) -> Result<Action> {
        let values = self.star_values(table, true)?;
        self.inserted(values, table)
    }

    /// The insert action of `values` (per target column, `None`: not assigned), as Delta on
    /// Spark's `MERGE` completes it: an identity column assigned must allow explicit
    /// inserts (`GENERATED BY DEFAULT`: the value is kept; `GENERATED ALWAYS` is refused
    /// with [`Error::ConstraintViolation`], `DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED`),
    /// one not assigned gets new values (spec "Identity Columns"); generated columns not
    /// assigned are computed ([`Sides::regenerate`]); other columns not assigned are NULL.
    fn inserted(&self, mut values: Vec<Option<ValueExpr>>, table: &str) -> Result<Action> {
        for (value, field) in values.iter().zip(self.target.fields()) {
            if value.is_some() {
                refuse_identity_insert(field, table)?;
            }
        }
        self.regenerate(&mut values, true);
        let fields = self.target.fields();
        Ok(Action::Insert(
            values
                .into_iter()
                .zip(fields)
                .map(|(value, field)| match (value, is_identity_column(field)) {
                    (None, true) => None,
                    (value, _) => Some(value.unwrap_or(ValueExpr::Literal(Scalar::Null))),
                })
                .collect(),
        ))
    }

    /// Gives each generated column (spec "Generated Columns") that `values` (per target
    /// column) leave out its expression over the new row, as Delta on Spark's `MERGE` does:
    /// on insert always (columns not named are NULL), on update when it reads a column set.
    /// An expression that cannot be rewritten (a column path into a column set, a `CASE`
    /// condition reading columns) is left out: the writer then checks the row.
    fn regenerate(&self, values: &mut [Option<ValueExpr>], inserting: bool) {
        let fields = self.target.fields();
        for (index, field) in fields.iter().enumerate() {
            if values[index].is_some() {
                continue;
            }
            let Some(text) = field.metadata().get(GENERATION_EXPRESSION_KEY) else {
                continue;
            };
            let Ok(expr) = parse_value_sql(text) else {
                continue;
            };
            let column = |path: &[String]| path.first().and_then(|name| position(fields, name));
            let reads_set = expr
                .column_paths()
                .iter()
                .any(|path| column(path).is_some_and(|c| values[c].is_some()));
            if !inserting && !reads_set {
                continue;
            }
            let replace = |path: &[String]| -> Option<ValueExpr> {
                let read = column(path)?;
                match (&values[read], inserting) {
                    (Some(value), _) if path.len() == 1 => Some(value.clone()),
                    (Some(_), _) => None,
                    (None, true) => Some(ValueExpr::Literal(Scalar::Null)),
                    (None, false) => {
                        let mut qualified = vec![self.target_alias.clone()];
                        qualified.push(fields[read].name().clone());
                        qualified.extend(path[1..].iter().cloned());
                        Some(ValueExpr::Column(qualified))
                    }
                }
            };
            values[index] = expr.with_columns_replaced(&replace);
        }
    }

    /// For each target column, the source column of the same name (`*` actions), as Delta on
    /// Spark expands them: `None` for a generated column the source lacks, and with schema
    /// evolution for any column the source lacks (an update keeps it, an insert gives NULL);
    /// other target columns the source lacks are [`Error::SchemaMismatch`]. Source columns the
    /// target lacks are not assigned (with schema evolution the target has them all). With
    /// schema evolution an update keeps the struct fields only the target has
    /// ([`keeping_target_fields`]).
    fn star_values(&self, table: &str, inserting: bool) -> Result<Vec<Option<ValueExpr>>> {
        let mut values = Vec::new();
        for field in self.target.fields() {
            let generated = field.metadata().contains_key(GENERATION_EXPRESSION_KEY);
            let found = position(self.source.fields(), field.name());
            let Some(index) = found else {
                if generated || self.evolving {
                    values.push(None);
                    continue;
                }
                return Err(Error::SchemaMismatch {
                    table: table.to_string(),
                    column: field.name().clone(),
                    reason: "UPDATE SET * and INSERT * need every target column in the source \
                             (or schema evolution)"
                        .into(),
                });
            };
            let source = self.source.field(index);
            let source_path = vec![self.source_alias.clone(), source.name().clone()];
            let value = match self.evolving && !inserting {
                true => {
                    let target_path = vec![self.target_alias.clone(), field.name().clone()];
                    keeping_target_fields(
                        source_path,
                        source.data_type(),
                        target_path,
                        field.data_type(),
                    )
                }
                false => ValueExpr::Column(source_path),
            };
            values.push(Some(value));
        }
        Ok(values)
    }

    fn target_column(&self, name: &str) -> Result<usize> {
        let bare = match name.split_once('.') {
            Some((alias, rest)) if alias.eq_ignore_ascii_case(&self.target_alias) => rest,
            _ => name,
        };
        position(self.target.fields(), bare).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{name} is not a top-level column of the target table"
            ))
        })
    }

    /// `expr` with every column reference qualified with its side's alias.
    fn qualify(&self, expr: &Expr, scope: Scope) -> Result<Expr> {
        expr.try_map_columns(&mut |path| self.qualify_path(path, scope))
    }

    fn qualify_value(&self, expr: &ValueExpr, scope: Scope) -> Result<ValueExpr> {
        expr.try_map_columns(&mut |path| self.qualify_path(path, scope))
    }

    /// The path with its side's alias first: an alias given is kept (spelled as declared),
    /// a bare column is looked up on the sides `scope` allows (both holding it is
    /// ambiguous).
    fn qualify_path(&self, path: &[String], scope: Scope) -> Result<Vec<String>> {
        let shown = path.join(".");
        let sees_target = scope != Scope::SourceOnly;
        let sees_source = scope != Scope::TargetOnly;
        if let [first, rest @ ..] = path {
            if !rest.is_empty() {
                for (alias, visible, side) in [
                    (&self.target_alias, sees_target, "target"),
                    (&self.source_alias, sees_source, "source"),
                ] {
                    if first.eq_ignore_ascii_case(alias) {
                        if !visible {
                            return Err(self.invisible(&shown, side, scope));
                        }
                        let mut qualified = vec![alias.clone()];
                        qualified.extend(rest.iter().cloned());
                        return Ok(qualified);
                    }
                }
            }
            let in_target = position(self.target.fields(), first).is_some();
            let in_source = position(self.source.fields(), first).is_some();
            let alias = match (in_target && sees_target, in_source && sees_source) {
                (true, true) => {
                    return Err(Error::InvalidArgument(format!(
                        "column '{shown}' is ambiguous: both the target and the source have \
                         it; qualify it as {}.{shown} or {}.{shown}",
                        self.target_alias, self.source_alias
                    )))
                }
                (true, false) => &self.target_alias,
                (false, true) => &self.source_alias,
                (false, false) if in_target => return Err(self.invisible(&shown, "target", scope)),
                (false, false) if in_source => return Err(self.invisible(&shown, "source", scope)),
                (false, false) => {
                    return Err(Error::InvalidArgument(format!(
                        "unknown column '{shown}' in the merge: neither the target nor the \
                         source has it"
                    )))
                }
            };
            let mut qualified = vec![alias.clone()];
            qualified.extend(path.iter().cloned());
            return Ok(qualified);
        }
        Err(Error::InvalidArgument("an empty column reference".into()))
    }

    fn invisible(&self, column: &str, side: &str, scope: Scope) -> Error {
        let clause = match scope {
            Scope::SourceOnly => "a WHEN NOT MATCHED clause sees only the source",
            Scope::TargetOnly => "a WHEN NOT MATCHED BY SOURCE clause sees only the target",
            Scope::Both => "the merge condition sees both sides",
        };
        Error::InvalidArgument(format!(
            "column '{column}' of the {side} cannot be used here: {clause}"
        ))
    }
}

/// The value `UPDATE SET *` gives a target column (at `target_path`) from a source column (at
/// `source_path`) under schema evolution, as Delta on Spark 4.4 does
/// (`merge.preserveNullSourceStructs`): where the target's struct has fields the source's
/// lacks, a struct of the source's fields and the target's own, NULL only when both the
/// source and the target struct are NULL; otherwise the source column.
fn keeping_target_fields(
    source_path: Vec<String>,
    source_type: &DataType,
    target_path: Vec<String>,
    target_type: &DataType,
) -> ValueExpr {
    let (DataType::Struct(source_fields), DataType::Struct(target_fields)) =
        (source_type, target_type)
    else {
        return ValueExpr::Column(source_path);
    };
    if !has_target_only_fields(source_fields, target_fields) {
        return ValueExpr::Column(source_path);
    }
    let mut args = Vec::with_capacity(target_fields.len() * 2);
    for field in target_fields {
        let mut target_child = target_path.clone();
        target_child.push(field.name().clone());
        let value = match position(source_fields, field.name()) {
            Some(index) => {
                let mut source_child = source_path.clone();
                source_child.push(source_fields[index].name().clone());
                keeping_target_fields(
                    source_child,
                    source_fields[index].data_type(),
                    target_child,
                    field.data_type(),
                )
            }
            None => ValueExpr::Column(target_child),
        };
        args.push(ValueExpr::Literal(Scalar::Utf8(field.name().clone())));
        args.push(value);
    }
    let is_null = |path: Vec<String>| Expr::IsNull {
        expr: Box::new(Expr::Column(path)),
        negated: false,
    };
    let both_null = Expr::And(
        Box::new(is_null(source_path)),
        Box::new(is_null(target_path)),
    );
    ValueExpr::Case {
        branches: vec![(
            Expr::Not(Box::new(both_null)),
            ValueExpr::Call {
                function: Function::NamedStruct,
                args,
            },
        )],
        otherwise: None,
    }
}

/// True when a struct of `target` fields has a field, at any depth, that the matching struct
/// of `source` fields lacks.
fn has_target_only_fields(source: &Fields, target: &Fields) -> bool {
    target
        .iter()
        .any(|field| match position(source, field.name()) {
            None => true,
            Some(index) => match (source[index].data_type(), field.data_type()) {
                (DataType::Struct(inner_source), DataType::Struct(inner_target)) => {
                    has_target_only_fields(inner_source, inner_target)
                }
                _ => false,
            },
        })
}

/// The index of the field named `name`: exactly, else ASCII-case-insensitively.
pub(super) fn position(fields: &Fields, name: &str) -> Option<usize> {
    fields.iter().position(|f| f.name() == name).or_else(|| {
        fields
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(name))
    })
}

/// One side's rows as a struct column (`None`: a NULL struct of `schema`'s fields).
fn side_struct(rows: Option<&RecordBatch>, schema: &SchemaRef, count: usize) -> Result<ArrayRef> {
    let fields: Fields = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    match rows {
        Some(rows) => {
            let columns: Vec<ArrayRef> = rows.columns()[..fields.len()].to_vec();
            let fields: Fields = fields
                .iter()
                .zip(&columns)
                .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
                .collect();
            StructArray::try_new(fields, columns, None)
                .map(|s| Arc::new(s) as ArrayRef)
                .map_err(|error| Error::arrow("joining target and source rows", error))
        }
        None => Ok(new_null_array(&DataType::Struct(fields), count)),
    }
}
