//! `ALTER TABLE ... CHANGE COLUMN` (and `ALTER COLUMN`): a column's comment, its type (a
//! widening, under `delta.enableTypeWidening`; spec "Type Widening" as Delta on Spark writes
//! it: the change recorded in the field's `delta.typeChanges`), `DROP NOT NULL`, and its
//! position among its siblings (`FIRST`, `AFTER`). Only the schema changes: data files are
//! not rewritten, and readers cast old files to the wider type.

use serde_json::{json, Value};

use super::{
    is_partition_column, parse_path, path_names, quote_path, refuse_constraint_columns, resolve,
    struct_mut,
};
use crate::error::{Error, Result};
use crate::schema::{DataType, PrimitiveType, StructField, TYPE_CHANGES_KEY};
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
/// Errors: [`Error::InvalidArgument`] for an unknown column or sibling, a change that asks for
/// nothing, a type that is not a widening of the column's (or a nested column's type);
/// [`Error::NotAllowed`] for a type change without `delta.enableTypeWidening`, of a partition
/// column, or of a column a CHECK constraint or generated column uses.
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
    let indices = resolve(&schema, &parse_path(&change.column)?)?;
    let path = path_names(&schema, &indices);
    let Some((&position, parent_indices)) = indices.split_last() else {
        return Err(Error::internal(
            snapshot.storage().uri(),
            "a resolved column path is empty",
        ));
    };
    if let Some(to) = change.data_type {
        check_type_change(snapshot, &indices, &path)?;
        let parent = struct_mut(&mut schema, parent_indices)?;
        widen(&mut parent.fields[position], to, &path)?;
    }
    let parent = struct_mut(&mut schema, parent_indices)?;
    let field = &mut parent.fields[position];
    if let Some(comment) = &change.comment {
        field
            .metadata
            .insert("comment".into(), Value::from(comment.clone()));
    }
    if change.drop_not_null {
        field.nullable = true;
    }
    let changed = field.clone();
    let position_text = match &change.position {
        Some(to) => Some(move_field(&mut parent.fields, position, to, &path)?),
        None => None,
    };
    let column = json!({
        "name": quote_path(&path),
        "type": changed.data_type.to_string(),
        "nullable": changed.nullable,
        "metadata": changed.metadata,
    });
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

/// Refuses a type change where Delta on Spark refuses it: without type widening enabled, on a
/// partition column, or on a column a CHECK constraint or generated column uses.
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

/// Sets `field`'s type to `to`, recording the change in `delta.typeChanges` as Delta on Spark
/// does (`fromType`, `toType` by their schema names).
fn widen(field: &mut StructField, to: PrimitiveType, path: &[String]) -> Result<()> {
    let DataType::Primitive(from) = field.data_type else {
        return Err(Error::InvalidArgument(format!(
            "{} is a {}: only the type of a primitive column can change",
            quote_path(path),
            field.data_type
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
    let mut changes = match field.metadata.get(TYPE_CHANGES_KEY) {
        Some(Value::Array(changes)) => changes.clone(),
        _ => Vec::new(),
    };
    changes.push(json!({"fromType": from.type_name(), "toType": to.type_name()}));
    field
        .metadata
        .insert(TYPE_CHANGES_KEY.into(), Value::Array(changes));
    field.data_type = DataType::Primitive(to);
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
