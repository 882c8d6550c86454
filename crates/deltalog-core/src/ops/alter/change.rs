//! `ALTER TABLE ... CHANGE COLUMN` (and `ALTER COLUMN`): a column's comment, its type (a
//! widening, under `delta.enableTypeWidening`; spec "Type Widening" as Delta on Spark writes
//! it: the change recorded in the field's `delta.typeChanges`), `DROP NOT NULL`, and its
//! position among its siblings (`FIRST`, `AFTER`). The type of an array element or a map key
//! or value widens too (`arr.element`, `m.key`, `m.value`, as Spark names them), recorded with
//! a `fieldPath`. Only the schema changes: data files are not rewritten, and readers cast old
//! files to the wider type.

use serde_json::{json, Value};

use super::{
    is_partition_column, parse_path, path_names, quote_path, refuse_constraint_columns, resolve,
};
use crate::error::{Error, Result};
use crate::schema::{DataType, PrimitiveType, StructField, StructType, TYPE_CHANGES_KEY};
use crate::snapshot::Snapshot;
use crate::transaction::{MetadataUpdate, Transaction};

/// Where `CHANGE COLUMN` moves a column among the fields of its struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnPosition {
    /// `FIRST`.
    First,
    /// `AFTER sibling`.
    After(String),
}

/// What one `CHANGE COLUMN` does to the column at `column` (a path: `a`, `s.x`, `` `a.b` ``).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnChange {
    pub column: String,
    /// A wider type (see [`PrimitiveType::widens_to`]); the table needs
    /// `delta.enableTypeWidening`.
    pub data_type: Option<PrimitiveType>,
    /// The new comment (field metadata `comment`).
    pub comment: Option<String>,
    /// `DROP NOT NULL`: the column becomes nullable.
    pub drop_not_null: bool,
    pub position: Option<ColumnPosition>,
}

/// The `CHANGE COLUMN` transaction of `change` on `snapshot`'s table, with Spark's parameters
/// (`column`: the new field as JSON, `position` when it moves).
///
/// `change.column` names a struct field at any depth, or, as Spark's `ALTER TABLE CHANGE
/// COLUMN arr.element` / `m.key` / `m.value` names them, the element of an array or the key
/// or value of a map (`element`, `key` and `value` spelled in lower case; `arr.element.x` is
/// a field of the structs in `arr`). A widening below an array or map is recorded in the
/// `delta.typeChanges` of the nearest enclosing struct field, with the steps below it as
/// `fieldPath` (spec "Type Widening"); an element, key or value takes no comment, keeps its
/// nullability and does not move, as Delta on Spark refuses those.
///
/// Errors: [`Error::InvalidArgument`] for an unknown column or sibling, a change that asks for
/// nothing, a type that is not a widening of the column's (or a nested column's type), a move
/// of an element, key or value; [`Error::NotAllowed`] for a type change without
/// `delta.enableTypeWidening`, of a partition column, or of a column a CHECK constraint or
/// generated column uses, a comment on or a nullability change of an element, key or value.
pub(super) fn change_column(snapshot: &Snapshot, change: &ColumnChange) -> Result<Transaction> {
    let asks_nothing = change.data_type.is_none()
        && change.comment.is_none()
        && !change.drop_not_null
        && change.position.is_none();
    if asks_nothing {
        return Err(Error::InvalidArgument(format!(
            "CHANGE COLUMN {} asks for no change",
            change.column
        )));
    }
    let mut schema = snapshot.schema().clone();
    let parts = parse_path(&change.column)?;
    let (steps, path) = match resolve(&schema, &parts) {
        Ok(indices) => {
            let path = path_names(&schema, &indices);
            (indices.into_iter().map(Step::Field).collect(), path)
        }
        Err(error) => resolve_nested(&schema, &parts).ok_or(error)?,
    };
    let last_field = steps
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, step)| match step {
            Step::Field(index) => Some((at, *index)),
            _ => None,
        });
    let Some((anchor, position)) = last_field else {
        return Err(Error::internal(
            snapshot.storage().uri(),
            "a resolved column path starts with a field",
        ));
    };
    let (parent_steps, below) = (&steps[..anchor], &steps[anchor + 1..]);
    if !below.is_empty() {
        refuse_element_change(&schema, &steps, change, &path)?;
    }
    if let Some(to) = change.data_type {
        let outer: Vec<usize> = steps
            .iter()
            .map_while(|step| match step {
                Step::Field(index) => Some(*index),
                _ => None,
            })
            .collect();
        check_type_change(snapshot, &outer, &path)?;
        let parent = struct_at_mut(&mut schema, parent_steps)?;
        widen(&mut parent.fields[position], below, to, &path)?;
    }
    let mut position_text = None;
    let column = if below.is_empty() {
        let parent = struct_at_mut(&mut schema, parent_steps)?;
        let field = &mut parent.fields[position];
        if let Some(comment) = &change.comment {
            field
                .metadata
                .insert("comment".into(), Value::from(comment.clone()));
        }
        if change.drop_not_null {
            field.nullable = true;
        }
        let column = json!({
            "name": quote_path(&path),
            "type": field.data_type.to_string(),
            "nullable": field.nullable,
            "metadata": field.metadata,
        });
        if let Some(to) = &change.position {
            position_text = Some(move_field(&mut parent.fields, position, to, &path)?);
        }
        column
    } else {
        let (data_type, nullable) = at(&schema, &steps)?;
        json!({
            "name": quote_path(&path),
            "type": data_type.to_string(),
            "nullable": nullable,
            "metadata": {},
        })
    };
    let mut transaction = snapshot
        .transaction("CHANGE COLUMN")
        .with_operation_parameter("column", column.to_string());
    if let Some(text) = position_text {
        transaction = transaction.with_operation_parameter("position", text);
    }
    transaction.update_metadata(MetadataUpdate {
        schema: Some(schema),
        ..MetadataUpdate::default()
    })?;
    Ok(transaction)
}

/// One step of a column path: a field of a struct (its index), or the element of an array,
/// the key or the value of a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Field(usize),
    Element,
    Key,
    Value,
}

impl Step {
    /// The name Delta on Spark gives the step below an array or map (`fieldPath`).
    fn nested_name(self) -> Option<&'static str> {
        match self {
            Step::Field(_) => None,
            Step::Element => Some("element"),
            Step::Key => Some("key"),
            Step::Value => Some("value"),
        }
    }
}

/// The steps and field names of `path` in `schema` when it passes through an array or a map
/// (`arr.element`, `m.key`, `m.value.x`); `None` when it names nothing there. Fields match
/// as [`resolve`] matches them (exactly, else without case; a run of parts joined by `.` may
/// name one field); `element`, `key` and `value` match exactly, as Spark's resolver does.
fn resolve_nested(schema: &StructType, path: &[String]) -> Option<(Vec<Step>, Vec<String>)> {
    let mut steps = Vec::new();
    let mut names = Vec::new();
    let mut current = Some(schema);
    let mut below: Option<&DataType> = None;
    let mut rest = path;
    while let Some(first) = rest.first() {
        if let Some(fields) = current {
            let (index, used) = (1..=rest.len()).rev().find_map(|take| {
                let name = rest[..take].join(".");
                let exact = fields.fields.iter().position(|f| f.name == name);
                let loose = || {
                    fields
                        .fields
                        .iter()
                        .position(|f| f.name.eq_ignore_ascii_case(&name))
                };
                exact.or_else(loose).map(|index| (index, take))
            })?;
            let field = &fields.fields[index];
            steps.push(Step::Field(index));
            names.push(field.name.clone());
            below = Some(&field.data_type);
            rest = &rest[used..];
        } else {
            let (step, data_type) = match (below?, first.as_str()) {
                (DataType::Array(array), "element") => (Step::Element, &array.element_type),
                (DataType::Map(map), "key") => (Step::Key, &map.key_type),
                (DataType::Map(map), "value") => (Step::Value, &map.value_type),
                _ => return None,
            };
            steps.push(step);
            names.push(first.clone());
            below = Some(data_type);
            rest = &rest[1..];
        }
        current = below.and_then(DataType::as_struct);
    }
    let nested = steps.iter().any(|step| !matches!(step, Step::Field(_)));
    nested.then_some((steps, names))
}

/// Refuses what Delta on Spark refuses for an array element or a map key or value (the
/// column at `steps` ends with one): a comment (`DELTA_UNSUPPORTED_COMMENT_MAP_ARRAY`), a
/// nullability change, a move.
fn refuse_element_change(
    schema: &StructType,
    steps: &[Step],
    change: &ColumnChange,
    path: &[String],
) -> Result<()> {
    let name = quote_path(path);
    if change.comment.is_some() {
        return Err(Error::NotAllowed(format!(
            "cannot add a comment to {name}: a map key or value or an array element has no \
             comment (Delta on Spark's DELTA_UNSUPPORTED_COMMENT_MAP_ARRAY)"
        )));
    }
    if change.position.is_some() {
        return Err(Error::InvalidArgument(format!(
            "cannot move {name}: only struct fields have a position"
        )));
    }
    if change.drop_not_null && !at(schema, steps)?.1 {
        return Err(Error::NotAllowed(format!(
            "cannot change the nullability of {name}: a map key or value or an array element \
             keeps it (Delta on Spark's DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP)"
        )));
    }
    Ok(())
}

/// The type and nullability of the column `steps` lead to in `schema`.
fn at<'a>(schema: &'a StructType, steps: &[Step]) -> Result<(&'a DataType, bool)> {
    let broken = || Error::internal_invariant("a resolved column path lies inside the schema");
    let Some((Step::Field(index), below)) = steps.split_first() else {
        return Err(broken());
    };
    let field = schema.fields.get(*index).ok_or_else(broken)?;
    let mut current = (&field.data_type, field.nullable);
    for step in below {
        current = match (step, current.0) {
            (Step::Field(index), DataType::Struct(inner)) => {
                let field = inner.fields.get(*index).ok_or_else(broken)?;
                (&field.data_type, field.nullable)
            }
            (Step::Element, DataType::Array(array)) => (&array.element_type, array.contains_null),
            (Step::Key, DataType::Map(map)) => (&map.key_type, false),
            (Step::Value, DataType::Map(map)) => (&map.value_type, map.value_contains_null),
            _ => return Err(broken()),
        };
    }
    Ok(current)
}

/// The type `steps` lead to below `data_type`, to change.
fn type_at_mut<'a>(data_type: &'a mut DataType, steps: &[Step]) -> Result<&'a mut DataType> {
    let broken = || Error::internal_invariant("a resolved column path lies inside the schema");
    let mut current = data_type;
    for step in steps {
        current = match (step, current) {
            (Step::Field(index), DataType::Struct(inner)) => {
                &mut inner.fields.get_mut(*index).ok_or_else(broken)?.data_type
            }
            (Step::Element, DataType::Array(array)) => &mut array.element_type,
            (Step::Key, DataType::Map(map)) => &mut map.key_type,
            (Step::Value, DataType::Map(map)) => &mut map.value_type,
            _ => return Err(broken()),
        };
    }
    Ok(current)
}

/// The struct `steps` lead to in `schema` (`schema` itself when there are none).
fn struct_at_mut<'a>(schema: &'a mut StructType, steps: &[Step]) -> Result<&'a mut StructType> {
    let broken = || Error::internal_invariant("a resolved column path leads to a struct");
    let Some((first, below)) = steps.split_first() else {
        return Ok(schema);
    };
    let Step::Field(index) = first else {
        return Err(broken());
    };
    let field = schema.fields.get_mut(*index).ok_or_else(broken)?;
    match type_at_mut(&mut field.data_type, below)? {
        DataType::Struct(inner) => Ok(inner.as_mut()),
        _ => Err(broken()),
    }
}

/// Refuses a type change where Delta on Spark refuses it: without type widening enabled, on a
/// partition column, or on a column a CHECK constraint or generated column uses (`indices`:
/// the struct fields leading to the column, or to the array or map holding it).
fn check_type_change(snapshot: &Snapshot, indices: &[usize], path: &[String]) -> Result<()> {
    let config = snapshot.table_configuration();
    if !config.properties().enable_type_widening {
        return Err(Error::NotAllowed(format!(
            "changing the type of {} needs type widening: set delta.enableTypeWidening = true \
             first (Delta on Spark's DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP)",
            quote_path(path)
        )));
    }
    if is_partition_column(config, path) {
        return Err(Error::NotAllowed(format!(
            "{} is a partition column: its type cannot change",
            quote_path(path)
        )));
    }
    refuse_constraint_columns(snapshot, indices, "change the type of")
}

/// Sets the type at `below` (element, key and value steps; none: the field's own type) of
/// `field` to `to`, recording the change in the field's `delta.typeChanges` as Delta on Spark
/// does (`fromType`, `toType` by their schema names, `fieldPath` the steps joined by `.` when
/// there are some).
fn widen(
    field: &mut StructField,
    below: &[Step],
    to: PrimitiveType,
    path: &[String],
) -> Result<()> {
    let slot = type_at_mut(&mut field.data_type, below)?;
    let DataType::Primitive(from) = *slot else {
        return Err(Error::InvalidArgument(format!(
            "{} is a {}: only the type of a primitive column can change",
            quote_path(path),
            slot
        )));
    };
    if from == to {
        return Ok(());
    }
    if from == PrimitiveType::Void || !from.widens_to(to) {
        return Err(Error::InvalidArgument(format!(
            "{} cannot change from {from} to {to}: only widenings are allowed (Delta on Spark's \
             type widening)",
            quote_path(path)
        )));
    }
    *slot = DataType::Primitive(to);
    let mut change = json!({"fromType": from.type_name(), "toType": to.type_name()});
    let steps: Vec<&str> = below.iter().filter_map(|step| step.nested_name()).collect();
    if !steps.is_empty() {
        change["fieldPath"] = Value::from(steps.join("."));
    }
    let mut changes = match field.metadata.get(TYPE_CHANGES_KEY) {
        Some(Value::Array(changes)) => changes.clone(),
        _ => Vec::new(),
    };
    changes.push(change);
    field
        .metadata
        .insert(TYPE_CHANGES_KEY.into(), Value::Array(changes));
    Ok(())
}

/// Moves the field at `from` of `fields` to `to`; the position as Spark's parameter names it.
fn move_field(
    fields: &mut Vec<StructField>,
    from: usize,
    to: &ColumnPosition,
    path: &[String],
) -> Result<String> {
    let field = fields.remove(from);
    let (index, text) = match to {
        ColumnPosition::First => (0, "FIRST".to_string()),
        ColumnPosition::After(sibling) => {
            let at = fields
                .iter()
                .position(|f| f.name.eq_ignore_ascii_case(sibling))
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "cannot move {} after {sibling}: no such column beside it",
                        quote_path(path)
                    ))
                })?;
            (at + 1, format!("AFTER {}", fields[at].name))
        }
    };
    fields.insert(index, field);
    Ok(text)
}
