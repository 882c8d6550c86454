//! The targets of `SET` in an update and in a merge's update clauses: a top-level column, or
//! a field nested in struct columns (`address.city`, `` `a.b`.c ``), as Delta on Spark's
//! `UpdateExpressionsSupport` resolves them. Assignments to fields of one struct column
//! become one value for the column: a struct of the new values and of the fields left as
//! they were (`named_struct`), so the updated struct is never NULL, as in Spark; the caller
//! casts it to the column's type by field name ([`crate::expr::assign_to`]).

use arrow_schema::{DataType, Fields};

use crate::error::{Error, Result};
use crate::expr::{find_field as find, parse_sql, Expr, Function, ValueExpr};
use crate::scalar::Scalar;

/// What is assigned to one column or field: its whole value, or values for some of its
/// fields (by index).
#[derive(Debug)]
enum Target {
    Whole(ValueExpr),
    Fields(Vec<(usize, Target)>),
}

/// Resolves `set` (target name, value) against the top-level `columns`: returns, per column
/// set, its index and its new value. A name is a top-level column's name, else a column path
/// (parts matched exactly, else without case; a run of parts joined by `.` may name one
/// field); a first part naming `alias` (a merge's target alias) is skipped. The fields of a
/// struct column that a path leaves alone are read back from the row: `reference` is how a
/// value names the target's columns (the alias first in a merge).
///
/// Errors: [`Error::InvalidArgument`] for an unknown column or field, a path through a column
/// that is not a struct, a column set twice, or a column set together with one of its fields
/// (Spark's `DELTA_UPDATE_SET_CONFLICT`).
pub(crate) fn resolve_assignments(
    columns: &Fields,
    set: Vec<(String, ValueExpr)>,
    alias: Option<&str>,
) -> Result<Vec<(usize, ValueExpr)>> {
    let mut targets: Vec<(usize, Target)> = Vec::new();
    for (name, value) in set {
        let path = target_path(columns, &name, alias)?;
        place(&mut targets, columns, &path, value, &name)?;
    }
    let prefix: Vec<String> = alias.map(str::to_string).into_iter().collect();
    targets
        .into_iter()
        .map(|(index, target)| {
            let field = &columns[index];
            let mut path = prefix.clone();
            path.push(field.name().clone());
            Ok((index, build(target, field.data_type(), &path)))
        })
        .collect()
}

/// The path `name` names: the whole name when a top-level column has it, else its parts.
fn target_path(columns: &Fields, name: &str, alias: Option<&str>) -> Result<Vec<String>> {
    if find(columns, &[name.to_string()]).is_some_and(|(_, used)| used == 1) {
        return Ok(vec![name.to_string()]);
    }
    let mut path = match parse_sql(name) {
        Ok(Expr::Column(path)) => path,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{name} is not a column of the table (quote names with backticks: `my col`)"
            )))
        }
    };
    let names_alias = |first: &String| alias.is_some_and(|a| first.eq_ignore_ascii_case(a));
    if path.len() > 1 && names_alias(&path[0]) && find(columns, &path).is_none() {
        path.remove(0);
    }
    Ok(path)
}

/// Records `value` for `path` in `targets` (the assignments among `fields`).
fn place(
    targets: &mut Vec<(usize, Target)>,
    fields: &Fields,
    path: &[String],
    value: ValueExpr,
    shown: &str,
) -> Result<()> {
    let (index, used) = find(fields, path)
        .ok_or_else(|| Error::InvalidArgument(format!("{shown} is not a column of the table")))?;
    let rest = &path[used..];
    let existing = targets.iter().position(|(i, _)| *i == index);
    if rest.is_empty() {
        if existing.is_some() {
            return Err(conflict(shown));
        }
        targets.push((index, Target::Whole(value)));
        return Ok(());
    }
    let DataType::Struct(children) = fields[index].data_type() else {
        return Err(Error::InvalidArgument(format!(
            "{shown} sets a field of {}, which is not a struct",
            fields[index].name()
        )));
    };
    let slot = match existing {
        Some(at) => at,
        None => {
            targets.push((index, Target::Fields(Vec::new())));
            targets.len() - 1
        }
    };
    match &mut targets[slot].1 {
        Target::Fields(nested) => place(nested, children, rest, value, shown),
        Target::Whole(_) => Err(conflict(shown)),
    }
}

fn conflict(shown: &str) -> Error {
    Error::InvalidArgument(format!(
        "{shown} is set twice, or together with a field or parent of it"
    ))
}

/// The value of a column or field of type `data_type` at `path` (as values name it) for
/// `target`.
fn build(target: Target, data_type: &DataType, path: &[String]) -> ValueExpr {
    let mut nested = match (target, data_type) {
        (Target::Whole(value), _) => return value,
        (Target::Fields(nested), DataType::Struct(children)) => (nested, children),
        // `place` only nests below struct columns.
        (Target::Fields(_), _) => return ValueExpr::Column(path.to_vec()),
    };
    let mut args = Vec::with_capacity(nested.1.len() * 2);
    for (index, child) in nested.1.iter().enumerate() {
        let mut child_path = path.to_vec();
        child_path.push(child.name().clone());
        let value = match nested.0.iter().position(|(i, _)| *i == index) {
            Some(at) => {
                let (_, target) = nested.0.swap_remove(at);
                build(target, child.data_type(), &child_path)
            }
            None => ValueExpr::Column(child_path),
        };
        args.push(ValueExpr::Literal(Scalar::Utf8(child.name().clone())));
        args.push(value);
    }
    ValueExpr::Call {
        function: Function::NamedStruct,
        args,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    fn columns() -> Fields {
        let inner = Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("y", DataType::Utf8, true),
        ]);
        let outer = Fields::from(vec![
            Field::new("in", DataType::Struct(inner), true),
            Field::new("z", DataType::Int64, true),
        ]);
        Fields::from(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Struct(outer), true),
            Field::new("a.b", DataType::Int32, true),
        ])
    }

    fn literal(value: i64) -> ValueExpr {
        ValueExpr::Literal(Scalar::Int64(value))
    }

    #[test]
    fn top_level_columns_keep_their_values() {
        let set = vec![("ID".to_string(), literal(1)), ("a.b".into(), literal(2))];
        let resolved = resolve_assignments(&columns(), set, None).unwrap();
        assert_eq!(resolved, vec![(0, literal(1)), (2, literal(2))]);
    }

    #[test]
    fn nested_fields_rebuild_their_struct_from_the_row() {
        let set = vec![
            (
                "t.s.in.y".to_string(),
                ValueExpr::Literal(Scalar::Utf8("n".into())),
            ),
            ("s.z".to_string(), literal(7)),
        ];
        let resolved = resolve_assignments(&columns(), set, Some("t")).unwrap();
        let [(1, value)] = resolved.as_slice() else {
            panic!("one assignment to s, got {resolved:?}");
        };
        assert_eq!(
            value.to_string(),
            "named_struct('in', named_struct('x', t.s.`in`.x, 'y', 'n'), 'z', 7)"
        );
    }

    #[test]
    fn conflicting_and_unknown_targets_are_refused() {
        for set in [
            vec![
                ("s".to_string(), literal(1)),
                ("s.z".to_string(), literal(2)),
            ],
            vec![
                ("s.z".to_string(), literal(1)),
                ("S.Z".to_string(), literal(2)),
            ],
            vec![("s.nope".to_string(), literal(1))],
            vec![("id.x".to_string(), literal(1))],
        ] {
            let error = resolve_assignments(&columns(), set.clone(), None).unwrap_err();
            assert!(
                matches!(error, Error::InvalidArgument(_)),
                "{set:?}: {error}"
            );
        }
    }
}
