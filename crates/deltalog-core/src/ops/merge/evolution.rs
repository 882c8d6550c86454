//! Schema evolution in a merge (Delta on Spark's `MERGE WITH SCHEMA EVOLUTION`,
//! `DeltaMergeBuilder.withSchemaEvolution()`): the target gains the source columns and struct
//! fields the clauses assign (every one when a clause is `UPDATE SET *` or `INSERT *`), and,
//! with `delta.enableTypeWidening`, the wider types of source columns, in the merge's own
//! commit (`ResolveDeltaMergeInto.computePostEvolutionTargetSchema`). The schema change is
//! staged before the clauses are resolved, so they see the evolved target. Structs inside
//! arrays and maps evolve as top-level ones do ([`evolve_schema`]: new fields appended,
//! nullable); the values assigned are then aligned to the evolved types by field name at any
//! depth ([`crate::expr::assign_to`]), a nested field the source lacks NULL, as Spark's
//! `UpdateExpressionsSupport.castIfNeeded` does with schema evolution.

use arrow_schema::SchemaRef;

use super::clauses::{MatchedAction, MergeClauses, NotMatchedAction};
use crate::error::Result;
use crate::expr::{parse_sql, Expr};
use crate::ops::dml::RowChange;
use crate::ops::write::stage_schema;
use crate::schema::from_arrow::struct_type_from_arrow;
use crate::schema::{evolve_schema, DataType, StructField, StructType};

/// Stages on `change` the target schema evolved to hold what `clauses` assign from the
/// source (of Arrow schema `source`), when it differs from the target's.
pub(super) fn evolve_target(
    change: &mut RowChange,
    clauses: &MergeClauses,
    source: &SchemaRef,
    target_alias: &str,
) -> Result<()> {
    let paths = assigned_paths(clauses, target_alias);
    // Only the columns assigned need a Delta type: the others may be of any Arrow type.
    let named = |field: &arrow_schema::FieldRef| match &paths {
        Some(paths) => paths.iter().any(|path| {
            path.first()
                .is_some_and(|n| n.eq_ignore_ascii_case(field.name()))
        }),
        None => true,
    };
    let candidates: Vec<_> = source
        .fields()
        .iter()
        .filter(|f| named(f))
        .cloned()
        .collect();
    let source = struct_type_from_arrow(&arrow_schema::Schema::new(candidates))?;
    stage_evolved_schema(change, &source, paths.as_deref())
}

/// Stages on `change` the target schema evolved to hold the fields of `source` (a merge
/// source's schema) that `assigned` names (column paths, target alias removed; `None`: every
/// field, for `UPDATE SET *` / `INSERT *`), when it differs from the target's.
pub(crate) fn stage_evolved_schema(
    change: &mut RowChange,
    source: &StructType,
    assigned: Option<&[Vec<String>]>,
) -> Result<()> {
    let config = change.transaction.configuration()?;
    let assigned = match assigned {
        Some(paths) => keep_assigned(&source.fields, paths, &[]),
        None => source.fields.clone(),
    };
    let evolution = config.schema_evolution();
    let (evolved, changed) = evolve_schema(config.schema(), &StructType::new(assigned), evolution);
    if changed {
        stage_schema(&mut change.transaction, &config, evolved, None)?;
    }
    Ok(())
}

/// The column paths the matched updates and inserts of `clauses` assign (a leading target
/// alias dropped); `None` when one of them is a `*` action, which assigns every source column.
fn assigned_paths(clauses: &MergeClauses, target_alias: &str) -> Option<Vec<Vec<String>>> {
    let mut names: Vec<&str> = Vec::new();
    for (_, action) in &clauses.matched {
        match action {
            MatchedAction::Update(set) => names.extend(set.iter().map(|(name, _)| name.as_str())),
            MatchedAction::UpdateAll => return None,
            MatchedAction::Delete => {}
        }
    }
    for (_, action) in &clauses.not_matched {
        match action {
            NotMatchedAction::Insert(set) => {
                names.extend(set.iter().map(|(name, _)| name.as_str()))
            }
            NotMatchedAction::InsertAll => return None,
        }
    }
    let paths = names
        .into_iter()
        .map(|name| assigned_path(name, target_alias))
        .collect();
    Some(paths)
}

/// The column path an assignment's target `name` names (`a.b`, `` `a.b` ``, `t.a`), a
/// leading `target_alias` dropped.
pub(crate) fn assigned_path(name: &str, target_alias: &str) -> Vec<String> {
    let mut path = match parse_sql(name) {
        Ok(Expr::Column(path)) => path,
        _ => vec![name.to_string()],
    };
    if path.len() > 1 && path[0].eq_ignore_ascii_case(target_alias) {
        path.remove(0);
    }
    path
}

/// The fields of `fields` (at `prefix`) that an assignment names, with their struct children
/// kept only as far as assignments name them.
fn keep_assigned(
    fields: &[StructField],
    paths: &[Vec<String>],
    prefix: &[String],
) -> Vec<StructField> {
    let mut kept = Vec::new();
    for field in fields {
        let mut path = prefix.to_vec();
        path.push(field.name.clone());
        let same = |assigned: &[String]| {
            assigned.len() >= path.len()
                && assigned
                    .iter()
                    .zip(&path)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
        };
        if paths.iter().any(|p| p.len() == path.len() && same(p)) {
            kept.push(field.clone());
        } else if let (DataType::Struct(inner), true) =
            (&field.data_type, paths.iter().any(|p| same(p)))
        {
            let children = keep_assigned(&inner.fields, paths, &path);
            kept.push(StructField {
                data_type: DataType::Struct(Box::new(StructType::new(children))),
                ..field.clone()
            });
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::ValueExpr;
    use crate::schema::PrimitiveType;

    fn field(name: &str, data_type: impl Into<DataType>) -> StructField {
        StructField::new(name, data_type, true)
    }

    #[test]
    fn only_assigned_columns_and_fields_are_kept() {
        let nested = DataType::Struct(Box::new(StructType::new(vec![
            field("a", PrimitiveType::Integer),
            field("b", PrimitiveType::String),
        ])));
        let source = vec![
            field("id", PrimitiveType::Long),
            field("n", PrimitiveType::String),
            field("s", nested),
            field("other", PrimitiveType::Integer),
        ];
        let value = ValueExpr::Column(vec!["s".into(), "n".into()]);
        let clauses = MergeClauses {
            matched: vec![(
                None,
                MatchedAction::Update(vec![("t.n".into(), value.clone())]),
            )],
            not_matched: vec![(None, NotMatchedAction::Insert(vec![("s.b".into(), value)]))],
            not_matched_by_source: Vec::new(),
        };
        let paths = assigned_paths(&clauses, "t").unwrap();
        let kept = keep_assigned(&source, &paths, &[]);
        let names: Vec<&str> = kept.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["n", "s"]);
        let inner = kept[1].data_type.as_struct().unwrap();
        assert_eq!(inner.fields, vec![field("b", PrimitiveType::String)]);
        let star = MergeClauses {
            not_matched: vec![(None, NotMatchedAction::InsertAll)],
            ..clauses
        };
        assert!(assigned_paths(&star, "t").is_none());
    }
}
