//! Schema evolution: a table's schema grown to hold the data written to it, as Delta on Spark
//! grows it for a write with `mergeSchema` (`SchemaMergingUtils.mergeSchemas`): new columns and
//! new struct fields appended, and, on a table with type widening enabled, a column widened to
//! the data's type when Spark widens it automatically (spec "Type Widening").

use serde_json::{json, Value};

use crate::schema::TYPE_CHANGES_KEY;
use crate::schema::{ArrayType, DataType, MapType, PrimitiveType, StructField, StructType};

/// What a schema evolution may change besides adding fields.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Evolution<'a> {
    /// Widen a column whose data has a wider type ([`PrimitiveType::widens_to`], as Delta on
    /// Spark 4.4 widens by default: `allowAutomaticWidening = always`): the table has
    /// `delta.enableTypeWidening`.
    pub widen_types: bool,
    /// Top-level columns whose type never changes (the partition columns: their values live
    /// in the log as text typed by the column).
    pub fixed_columns: &'a [String],
}

/// `table` grown to hold data of schema `data`, and whether it changed. Columns and struct
/// fields (at any depth, inside arrays and maps too) that `data` has and `table` lacks,
/// compared without case, are appended, nullable throughout, as Spark writes them; fields
/// present in both keep the table's name, nullability and metadata. A `void` column takes
/// the data's type. When `evolution.widen_types`, a primitive whose data type is a widening
/// of it becomes that type, the change recorded in the enclosing field's
/// `delta.typeChanges` (with `fieldPath` `element`/`key`/`value` below arrays and maps).
/// Any other type difference keeps the table's type: the write then casts the data to it
/// without loss or refuses it.
pub(crate) fn evolve_schema(
    table: &StructType,
    data: &StructType,
    evolution: Evolution<'_>,
) -> (StructType, bool) {
    let mut changed = false;
    let fields = table
        .fields
        .iter()
        .map(|field| {
            let fixed = evolution
                .fixed_columns
                .iter()
                .any(|name| name.eq_ignore_ascii_case(&field.name));
            let widen_types = evolution.widen_types && !fixed;
            match find(data, &field.name) {
                Some(incoming) => evolve_field(field, incoming, widen_types, &mut changed),
                None => field.clone(),
            }
        })
        .collect();
    let mut evolved = StructType::new(fields);
    append_new_fields(&mut evolved, table, data, &mut changed);
    (evolved, changed)
}

fn find<'a>(schema: &'a StructType, name: &str) -> Option<&'a StructField> {
    schema
        .fields
        .iter()
        .find(|field| field.name.eq_ignore_ascii_case(name))
}

fn append_new_fields(
    evolved: &mut StructType,
    table: &StructType,
    data: &StructType,
    changed: &mut bool,
) {
    for incoming in &data.fields {
        if find(table, &incoming.name).is_none() {
            evolved.fields.push(StructField {
                nullable: true,
                data_type: as_nullable(&incoming.data_type),
                ..incoming.clone()
            });
            *changed = true;
        }
    }
}

fn evolve_field(
    field: &StructField,
    incoming: &StructField,
    widen_types: bool,
    changed: &mut bool,
) -> StructField {
    let mut type_changes = Vec::new();
    let mut walk = TypeWalk {
        widen_types,
        path: Vec::new(),
        type_changes: &mut type_changes,
        changed,
    };
    let data_type = walk.evolve(&field.data_type, &incoming.data_type);
    let mut evolved = StructField {
        data_type,
        ..field.clone()
    };
    if !type_changes.is_empty() {
        let mut recorded = match evolved.metadata.get(TYPE_CHANGES_KEY) {
            Some(Value::Array(changes)) => changes.clone(),
            _ => Vec::new(),
        };
        recorded.append(&mut type_changes);
        evolved
            .metadata
            .insert(TYPE_CHANGES_KEY.into(), Value::Array(recorded));
    }
    evolved
}

/// One field's type evolved: `path` is where the walk is below the field (`element`, `key`,
/// `value`), `type_changes` collects the widenings to record on the field.
struct TypeWalk<'a> {
    widen_types: bool,
    path: Vec<&'static str>,
    type_changes: &'a mut Vec<Value>,
    changed: &'a mut bool,
}

impl TypeWalk<'_> {
    fn evolve(&mut self, current: &DataType, incoming: &DataType) -> DataType {
        match (current, incoming) {
            (DataType::Struct(table), DataType::Struct(data)) => {
                let (evolved, changed) = evolve_schema(
                    table,
                    data,
                    Evolution {
                        widen_types: self.widen_types,
                        fixed_columns: &[],
                    },
                );
                *self.changed |= changed;
                DataType::Struct(Box::new(evolved))
            }
            (DataType::Array(table), DataType::Array(data)) => {
                let element_type = self.below("element", &table.element_type, &data.element_type);
                DataType::Array(Box::new(ArrayType {
                    element_type,
                    contains_null: table.contains_null,
                }))
            }
            (DataType::Map(table), DataType::Map(data)) => {
                let key_type = self.below("key", &table.key_type, &data.key_type);
                let value_type = self.below("value", &table.value_type, &data.value_type);
                DataType::Map(Box::new(MapType {
                    key_type,
                    value_type,
                    value_contains_null: table.value_contains_null,
                }))
            }
            (DataType::Primitive(PrimitiveType::Void), _) if current != incoming => {
                *self.changed = true;
                as_nullable(incoming)
            }
            (DataType::Primitive(from), DataType::Primitive(to))
                if self.widen_types && from != to && from.widens_to(*to) =>
            {
                let mut change = json!({"fromType": from.type_name(), "toType": to.type_name()});
                if !self.path.is_empty() {
                    change["fieldPath"] = Value::from(self.path.join("."));
                }
                self.type_changes.push(change);
                *self.changed = true;
                incoming.clone()
            }
            _ => current.clone(),
        }
    }

    fn below(&mut self, step: &'static str, current: &DataType, incoming: &DataType) -> DataType {
        self.path.push(step);
        let evolved = self.evolve(current, incoming);
        self.path.pop();
        evolved
    }
}

/// `data_type` with every nested field, array element and map value nullable.
fn as_nullable(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Primitive(_) | DataType::Geospatial(_) => data_type.clone(),
        DataType::Struct(inner) => DataType::Struct(Box::new(StructType::new(
            inner
                .fields
                .iter()
                .map(|field| StructField {
                    nullable: true,
                    data_type: as_nullable(&field.data_type),
                    ..field.clone()
                })
                .collect(),
        ))),
        DataType::Array(array) => DataType::Array(Box::new(ArrayType {
            element_type: as_nullable(&array.element_type),
            contains_null: true,
        })),
        DataType::Map(map) => DataType::Map(Box::new(MapType {
            key_type: map.key_type.clone(),
            value_type: as_nullable(&map.value_type),
            value_contains_null: true,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, data_type: impl Into<DataType>) -> StructField {
        StructField::new(name, data_type, true)
    }

    fn widening() -> Evolution<'static> {
        Evolution {
            widen_types: true,
            fixed_columns: &[],
        }
    }

    #[test]
    fn new_columns_are_appended_nullable_and_known_ones_keep_the_table_definition() {
        let table = StructType::new(vec![StructField::new("a", PrimitiveType::Integer, false)]);
        let data = StructType::new(vec![
            StructField::new("A", PrimitiveType::Integer, true),
            StructField::new("d", PrimitiveType::Long, false),
        ]);
        let (evolved, changed) = evolve_schema(&table, &data, Evolution::default());
        assert!(changed);
        assert_eq!(evolved.fields[0], table.fields[0]);
        assert_eq!(evolved.fields[1], field("d", PrimitiveType::Long));
        let (same, changed) = evolve_schema(&evolved, &table, Evolution::default());
        assert!(!changed);
        assert_eq!(same, evolved);
    }

    #[test]
    fn new_struct_fields_are_added_at_every_depth() {
        let inner = |fields: Vec<StructField>| DataType::Struct(Box::new(StructType::new(fields)));
        let list_of = |element: DataType| {
            DataType::Array(Box::new(ArrayType {
                element_type: element,
                contains_null: false,
            }))
        };
        let table = StructType::new(vec![field(
            "s",
            list_of(inner(vec![field("x", PrimitiveType::Integer)])),
        )]);
        let data = StructType::new(vec![field(
            "s",
            list_of(inner(vec![
                field("x", PrimitiveType::Integer),
                StructField::new("y", PrimitiveType::String, false),
            ])),
        )]);
        let (evolved, changed) = evolve_schema(&table, &data, Evolution::default());
        assert!(changed);
        let expected = StructType::new(vec![field(
            "s",
            list_of(inner(vec![
                field("x", PrimitiveType::Integer),
                field("y", PrimitiveType::String),
            ])),
        )]);
        assert_eq!(evolved, expected);
    }

    #[test]
    fn widenings_are_recorded_but_not_on_fixed_columns_or_without_type_widening() {
        let table = StructType::new(vec![
            field("i", PrimitiveType::Integer),
            field("d", PrimitiveType::Integer),
            field("p", PrimitiveType::Short),
        ]);
        let data = StructType::new(vec![
            field("i", PrimitiveType::Long),
            field("d", PrimitiveType::Double),
            field("p", PrimitiveType::Long),
        ]);
        let fixed = ["P".to_string()];
        let evolution = Evolution {
            widen_types: true,
            fixed_columns: &fixed,
        };
        let (evolved, changed) = evolve_schema(&table, &data, evolution);
        assert!(changed);
        assert_eq!(
            evolved.fields[0].data_type,
            DataType::Primitive(PrimitiveType::Long)
        );
        assert_eq!(
            evolved.fields[0].metadata[TYPE_CHANGES_KEY],
            json!([{"fromType": "integer", "toType": "long"}])
        );
        assert_eq!(
            evolved.fields[1].data_type,
            DataType::Primitive(PrimitiveType::Double)
        );
        assert_eq!(evolved.fields[2], table.fields[2]);
        let (unchanged, changed) = evolve_schema(&table, &data, Evolution::default());
        assert!(!changed);
        assert_eq!(unchanged, table);
    }

    #[test]
    fn widenings_below_maps_name_their_field_path() {
        let map = |key: PrimitiveType, value: PrimitiveType| {
            DataType::Map(Box::new(MapType {
                key_type: DataType::Primitive(key),
                value_type: DataType::Primitive(value),
                value_contains_null: true,
            }))
        };
        let mut first = field("m", map(PrimitiveType::String, PrimitiveType::Float));
        first.metadata.insert(
            TYPE_CHANGES_KEY.into(),
            json!([{"fromType": "byte", "toType": "short", "fieldPath": "key"}]),
        );
        let table = StructType::new(vec![first]);
        let data = StructType::new(vec![field(
            "m",
            map(PrimitiveType::String, PrimitiveType::Double),
        )]);
        let (evolved, _) = evolve_schema(&table, &data, widening());
        assert_eq!(
            evolved.fields[0].metadata[TYPE_CHANGES_KEY],
            json!([
                {"fromType": "byte", "toType": "short", "fieldPath": "key"},
                {"fromType": "float", "toType": "double", "fieldPath": "value"}
            ])
        );
    }
}
