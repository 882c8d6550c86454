//! From the columns of a data file to the columns of the table: which file column holds a
//! table column (spec "Column Mapping"; catalogue E1-10..E1-12), and how its values become
//! values of the table type (type widening, timestamp encodings; catalogue G-17, G-22, E5-03).

use std::sync::Arc;

use arrow::compute::{cast_with_options, CastOptions};
use arrow_array::cast::AsArray;
use arrow_array::{make_array, new_null_array, Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_schema::{DataType as ArrowType, Field, FieldRef, Fields, Schema, TimeUnit};
use parquet::basic::Type as PhysicalType;
use parquet::schema::types::SchemaDescriptor;

use super::variant_shredding;
use crate::error::Result;
use crate::schema::{
    ColumnMappingMode, DataType as DeltaType, PrimitiveType, StructField, PARQUET_FIELD_ID_META_KEY,
};

/// The position in `file_fields` of the field that holds the table column `logical`
/// (catalogue E1-10..E1-12).
///
/// - `id` mode: the field whose Parquet field id is the column's `delta.columnMapping.id`,
///   else the field named by its physical name (files written without field ids);
/// - `name` mode: the field named by the physical name;
/// - `none` mode: the field with the logical name, else the only one whose name differs from it
///   in case alone (Spark resolves names case-insensitively).
///
/// `None` when the file does not hold the column. A column without the physical name its mode
/// needs is an [`crate::Error::InvalidTable`].
pub(super) fn find_file_field(
    file_fields: &Fields,
    logical: &StructField,
    mode: ColumnMappingMode,
) -> Result<Option<usize>> {
    if mode == ColumnMappingMode::Id {
        if let Some(id) = logical.field_id() {
            let by_id = file_fields
                .iter()
                .position(|f| parquet_field_id(f) == Some(id));
            if by_id.is_some() {
                return Ok(by_id);
            }
        }
    }
    let name = logical.physical_name(mode)?;
    if let Some(exact) = file_fields.iter().position(|f| f.name() == name) {
        return Ok(Some(exact));
    }
    if mode != ColumnMappingMode::None {
        return Ok(None);
    }
    let mut folded = file_fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name().eq_ignore_ascii_case(name))
        .map(|(position, _)| position);
    let first = folded.next();
    Ok(first.filter(|_| folded.next().is_none()))
}

/// `array`, read from a data file, as a column of the table type `target` (the Arrow form of
/// `logical`).
///
/// Struct fields are matched with [`find_file_field`] at every depth, inside arrays and maps
/// too; fields the file lacks become nulls and fields the table lacks are dropped. Leaves are
/// cast to the table type: the widenings of Delta's type widening (byte→short→int→long,
/// float→double, integers→double and decimal, decimal precision and scale increases,
/// date→timestamp_ntz), strings stored as binary, and every timestamp encoding (INT96,
/// milliseconds, microseconds, nanoseconds) to microseconds, relabelled with the table's zone:
/// Parquet timestamps are instants already (`timestamp`) or wall-clock times
/// (`timestamp_ntz`), so the values are never shifted.
///
/// The error is a sentence naming the column (`path`) and the mismatch.
pub(super) fn to_table_column(
    array: &ArrayRef,
    logical: &DeltaType,
    target: &ArrowType,
    mode: ColumnMappingMode,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    if array.data_type() == &ArrowType::Null {
        return Ok(new_null_array(target, array.len()));
    }
    match (logical, target) {
        (DeltaType::Struct(st), ArrowType::Struct(fields)) => {
            struct_column(array, &st.fields, fields, mode, path)
        }
        (DeltaType::Primitive(PrimitiveType::Variant), ArrowType::Struct(fields)) => {
            variant_column(array, fields, path)
        }
        (DeltaType::Array(list), ArrowType::List(element)) => {
            list_column(array, &list.element_type, element, mode, path)
        }
        (DeltaType::Map(map), ArrowType::Map(entries, sorted)) => map_column(
            array,
            (&map.key_type, &map.value_type),
            entries,
            *sorted,
            mode,
            path,
        ),
        _ => leaf_column(array, target, path),
    }
}

/// The file's Arrow schema with INT96 timestamps read as microseconds instead of nanoseconds,
/// so that every date Spark can write (years 1 to 9999) fits; `None` when the file has no
/// INT96 column (or its Arrow and Parquet leaves cannot be paired up).
pub(super) fn int96_as_micros(schema: &Schema, parquet: &SchemaDescriptor) -> Option<Schema> {
    let int96: Vec<bool> = parquet
        .columns()
        .iter()
        .map(|column| column.physical_type() == PhysicalType::INT96)
        .collect();
    if !int96.contains(&true) {
        return None;
    }
    let mut leaf = 0;
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|field| hint_field(field, &int96, &mut leaf))
        .collect();
    (leaf == int96.len()).then(|| Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// The Parquet field id arrow-rs put on a field read from a file.
fn parquet_field_id(field: &Field) -> Option<i32> {
    field
        .metadata()
        .get(PARQUET_FIELD_ID_META_KEY)?
        .parse()
        .ok()
}

fn struct_column(
    array: &ArrayRef,
    logical_fields: &[StructField],
    target_fields: &Fields,
    mode: ColumnMappingMode,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    let source = array
        .as_struct_opt()
        .ok_or_else(|| mismatch(path, array.data_type(), "a struct"))?;
    let file_fields = source.fields();
    let mut children = Vec::with_capacity(target_fields.len());
    for (logical, target) in logical_fields.iter().zip(target_fields.iter()) {
        let child_path = format!("{path}.{}", logical.name);
        let position = find_file_field(file_fields, logical, mode).map_err(|e| e.to_string())?;
        let child = match position.and_then(|p| source.columns().get(p)) {
            Some(column) => to_table_column(
                column,
                &logical.data_type,
                target.data_type(),
                mode,
                &child_path,
            )?,
            None => new_null_array(target.data_type(), source.len()),
        };
        children.push(child);
    }
    build_struct(target_fields, children, source, path)
}

/// A variant column: the `metadata` and `value` binaries of the file's variant group, a
/// shredded group reassembled first ([`super::variant_shredding`]).
fn variant_column(
    array: &ArrayRef,
    target_fields: &Fields,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    let source = array
        .as_struct_opt()
        .ok_or_else(|| mismatch(path, array.data_type(), "a variant group"))?;
    let unshredded;
    let source = if variant_shredding::is_shredded(source) {
        unshredded = variant_shredding::unshred(source, path)?;
        unshredded.as_struct()
    } else {
        source
    };
    let mut children = Vec::with_capacity(target_fields.len());
    for target in target_fields.iter() {
        let column = source.column_by_name(target.name()).ok_or_else(|| {
            format!(
                "column `{path}`: the variant group has no `{}` field",
                target.name()
            )
        })?;
        children.push(leaf_column(
            column,
            target.data_type(),
            &format!("{path}.{}", target.name()),
        )?);
    }
    build_struct(target_fields, children, source, path)
}

fn build_struct(
    target_fields: &Fields,
    children: Vec<ArrayRef>,
    source: &StructArray,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    let nulls = source.nulls().cloned();
    let built =
        StructArray::try_new_with_length(target_fields.clone(), children, nulls, source.len())
            .map_err(|error| format!("column `{path}`: {error}"))?;
    Ok(Arc::new(built))
}

fn list_column(
    array: &ArrayRef,
    element_type: &DeltaType,
    target_element: &FieldRef,
    mode: ColumnMappingMode,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    let as_list = match array.data_type() {
        ArrowType::List(_) => array.clone(),
        ArrowType::LargeList(element)
        | ArrowType::FixedSizeList(element, _)
        | ArrowType::ListView(element)
        | ArrowType::LargeListView(element) => {
            cast_with_options(array, &ArrowType::List(element.clone()), &strict())
                .map_err(|error| format!("column `{path}`: {error}"))?
        }
        other => return Err(mismatch(path, other, "a list")),
    };
    let source = as_list
        .as_list_opt::<i32>()
        .ok_or_else(|| mismatch(path, array.data_type(), "a list"))?;
    let values = to_table_column(
        source.values(),
        element_type,
        target_element.data_type(),
        mode,
        &format!("{path}.element"),
    )?;
    let built = ListArray::try_new(
        target_element.clone(),
        source.offsets().clone(),
        values,
        source.nulls().cloned(),
    )
    .map_err(|error| format!("column `{path}`: {error}"))?;
    Ok(Arc::new(built))
}

fn map_column(
    array: &ArrayRef,
    (key_type, value_type): (&DeltaType, &DeltaType),
    target_entries: &FieldRef,
    sorted: bool,
    mode: ColumnMappingMode,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    let source = array
        .as_map_opt()
        .ok_or_else(|| mismatch(path, array.data_type(), "a map"))?;
    let ArrowType::Struct(entry_fields) = target_entries.data_type() else {
        return Err(format!(
            "column `{path}`: the table's map type has no entries struct"
        ));
    };
    let (Some(key_field), Some(value_field)) = (entry_fields.first(), entry_fields.get(1)) else {
        return Err(format!(
            "column `{path}`: the table's map entries are not key and value"
        ));
    };
    let keys = to_table_column(
        source.keys(),
        key_type,
        key_field.data_type(),
        mode,
        &format!("{path}.key"),
    )?;
    let values = to_table_column(
        source.values(),
        value_type,
        value_field.data_type(),
        mode,
        &format!("{path}.value"),
    )?;
    let entries = StructArray::try_new_with_length(
        entry_fields.clone(),
        vec![keys, values],
        None,
        source.entries().len(),
    )
    .map_err(|error| format!("column `{path}`: {error}"))?;
    let built = MapArray::try_new(
        target_entries.clone(),
        source.offsets().clone(),
        entries,
        source.nulls().cloned(),
        sorted,
    )
    .map_err(|error| format!("column `{path}`: {error}"))?;
    Ok(Arc::new(built))
}

/// A non-nested column cast to `target`; timestamps change unit but never their values' zone.
fn leaf_column(
    array: &ArrayRef,
    target: &ArrowType,
    path: &str,
) -> std::result::Result<ArrayRef, String> {
    let source_type = array.data_type();
    if source_type == target {
        return Ok(array.clone());
    }
    if source_type.is_nested() || target.is_nested() {
        return Err(mismatch(path, source_type, &target.to_string()));
    }
    let cast_error = |error: arrow_schema::ArrowError| {
        format!("column `{path}`: cannot read {source_type} as {target}: {error}")
    };
    match (source_type, target) {
        (ArrowType::Timestamp(_, source_zone), ArrowType::Timestamp(unit, _)) => {
            let same_zone = ArrowType::Timestamp(*unit, source_zone.clone());
            let rescaled = cast_with_options(array, &same_zone, &strict()).map_err(cast_error)?;
            relabel(&rescaled, target).map_err(cast_error)
        }
        _ => cast_with_options(array, target, &strict()).map_err(cast_error),
    }
}

/// The same values under another (layout-compatible) type.
fn relabel(
    array: &ArrayRef,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    let data = array
        .to_data()
        .into_builder()
        .data_type(target.clone())
        .build()?;
    Ok(make_array(data))
}

/// Casts that fail on overflow and invalid values instead of turning them into nulls.
fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..CastOptions::default()
    }
}

fn mismatch(path: &str, found: &ArrowType, expected: &str) -> String {
    format!("column `{path}`: expected {expected} in the data file, found {found}")
}

fn hint_field(field: &FieldRef, int96: &[bool], leaf: &mut usize) -> FieldRef {
    let data_type = hint_type(field.data_type(), int96, leaf);
    if &data_type == field.data_type() {
        return field.clone();
    }
    Arc::new(field.as_ref().clone().with_data_type(data_type))
}

/// `data_type` with its INT96 leaves (numbered depth-first from `leaf`, as Parquet numbers its
/// columns) read as microseconds.
fn hint_type(data_type: &ArrowType, int96: &[bool], leaf: &mut usize) -> ArrowType {
    match data_type {
        ArrowType::Struct(fields) => {
            ArrowType::Struct(fields.iter().map(|f| hint_field(f, int96, leaf)).collect())
        }
        ArrowType::List(element) => ArrowType::List(hint_field(element, int96, leaf)),
        ArrowType::LargeList(element) => ArrowType::LargeList(hint_field(element, int96, leaf)),
        ArrowType::FixedSizeList(element, size) => {
            ArrowType::FixedSizeList(hint_field(element, int96, leaf), *size)
        }
        ArrowType::Map(entries, sorted) => {
            ArrowType::Map(hint_field(entries, int96, leaf), *sorted)
        }
        ArrowType::Timestamp(TimeUnit::Nanosecond, None) if int96.get(*leaf) == Some(&true) => {
            *leaf += 1;
            ArrowType::Timestamp(TimeUnit::Microsecond, None)
        }
        other => {
            *leaf += 1;
            other.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{
        ArrayType, MapType, StructType, COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    };
    use arrow_array::types::{Int64Type, TimestampMicrosecondType};
    use arrow_array::{
        Date32Array, Decimal128Array, Float32Array, Int32Array, Int64Array, StringArray,
        TimestampMillisecondArray, TimestampNanosecondArray,
    };
    use std::collections::HashMap;

    fn mapped(name: &str, id: i32, physical: &str, data_type: impl Into<DeltaType>) -> StructField {
        StructField::new(name, data_type, true).with_metadata([
            (COLUMN_MAPPING_ID_KEY, serde_json::json!(id)),
            (
                COLUMN_MAPPING_PHYSICAL_NAME_KEY,
                serde_json::json!(physical),
            ),
        ])
    }

    fn with_id(field: Field, id: i32) -> Field {
        field.with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    }

    #[test]
    fn id_mode_matches_field_ids_before_names() {
        let file = Fields::from(vec![
            with_id(Field::new("col-b", ArrowType::Int32, true), 7),
            with_id(Field::new("col-a", ArrowType::Int32, true), 3),
        ]);
        let column = mapped("a", 7, "col-a", PrimitiveType::Integer);
        assert_eq!(
            find_file_field(&file, &column, ColumnMappingMode::Id).unwrap(),
            Some(0)
        );
        assert_eq!(
            find_file_field(&file, &column, ColumnMappingMode::Name).unwrap(),
            Some(1)
        );
        let unknown_id = mapped("c", 99, "col-b", PrimitiveType::Integer);
        assert_eq!(
            find_file_field(&file, &unknown_id, ColumnMappingMode::Id).unwrap(),
            Some(0),
            "falls back to the physical name"
        );
        let absent = mapped("d", 98, "col-d", PrimitiveType::Integer);
        assert_eq!(
            find_file_field(&file, &absent, ColumnMappingMode::Id).unwrap(),
            None
        );
    }

    #[test]
    fn none_mode_matches_names_then_case_insensitively() {
        let file = Fields::from(vec![
            Field::new("ID", ArrowType::Int32, true),
            Field::new("Value", ArrowType::Int32, true),
            Field::new("value", ArrowType::Int32, true),
        ]);
        let find = |name: &str| {
            let field = StructField::new(name, PrimitiveType::Integer, true);
            find_file_field(&file, &field, ColumnMappingMode::None).unwrap()
        };
        assert_eq!(find("id"), Some(0));
        assert_eq!(find("value"), Some(2));
        assert_eq!(find("VALUE"), None, "ambiguous");
        let unmapped = StructField::new("x", PrimitiveType::Integer, true);
        assert!(find_file_field(&file, &unmapped, ColumnMappingMode::Name).is_err());
    }

    #[test]
    fn nested_fields_are_renamed_and_missing_ones_are_null() {
        let logical = mapped(
            "s",
            1,
            "col-s",
            StructType::new(vec![
                mapped("x", 2, "col-x", PrimitiveType::Long),
                mapped("new", 3, "col-new", PrimitiveType::String),
            ]),
        );
        let target = crate::schema::to_arrow_data_type(&logical.data_type).unwrap();
        let file = StructArray::try_new(
            Fields::from(vec![
                Field::new("col-x", ArrowType::Int32, true),
                Field::new("col-dropped", ArrowType::Int32, true),
            ]),
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(Int32Array::from(vec![5, 6])),
            ],
            None,
        )
        .unwrap();
        let file: ArrayRef = Arc::new(file);
        let out = to_table_column(
            &file,
            &logical.data_type,
            &target,
            ColumnMappingMode::Name,
            "s",
        )
        .unwrap();
        assert_eq!(out.data_type(), &target);
        let out = out.as_struct();
        assert_eq!(out.column_names(), ["x", "new"]);
        let x = out.column(0).as_primitive::<Int64Type>();
        assert_eq!(x.iter().collect::<Vec<_>>(), [Some(1), None]);
        assert_eq!(out.column(1).null_count(), 2);
    }

    #[test]
    fn arrays_and_maps_of_structs_are_mapped() {
        let element = StructType::new(vec![mapped("y", 5, "col-y", PrimitiveType::Long)]);
        let logical: DeltaType = ArrayType {
            element_type: element.clone().into(),
            contains_null: true,
        }
        .into();
        let target = crate::schema::to_arrow_data_type(&logical).unwrap();
        let values = StructArray::try_new(
            Fields::from(vec![Field::new("col-y", ArrowType::Int32, true)]),
            vec![Arc::new(Int32Array::from(vec![1, 2, 3]))],
            None,
        )
        .unwrap();
        let file_element = Arc::new(Field::new("element", values.data_type().clone(), true));
        let list = ListArray::try_new(
            file_element,
            arrow::buffer::OffsetBuffer::from_lengths([2, 1]),
            Arc::new(values.clone()),
            None,
        )
        .unwrap();
        let list: ArrayRef = Arc::new(list);
        let out = to_table_column(&list, &logical, &target, ColumnMappingMode::Name, "a").unwrap();
        assert_eq!(out.data_type(), &target);
        let first = out.as_list::<i32>().value(0);
        let y = first.as_struct().column(0).as_primitive::<Int64Type>();
        assert_eq!(y.values().as_ref(), [1, 2]);

        let logical: DeltaType = MapType {
            key_type: PrimitiveType::String.into(),
            value_type: element.into(),
            value_contains_null: true,
        }
        .into();
        let target = crate::schema::to_arrow_data_type(&logical).unwrap();
        let entries = StructArray::try_new(
            Fields::from(vec![
                Field::new("key", ArrowType::Utf8, false),
                Field::new("value", values.data_type().clone(), true),
            ]),
            vec![
                Arc::new(StringArray::from(vec!["a", "b", "c"])),
                Arc::new(values),
            ],
            None,
        )
        .unwrap();
        let map = MapArray::try_new(
            Arc::new(Field::new("key_value", entries.data_type().clone(), false)),
            arrow::buffer::OffsetBuffer::from_lengths([1, 2]),
            entries,
            None,
            false,
        )
        .unwrap();
        let map: ArrayRef = Arc::new(map);
        let out = to_table_column(&map, &logical, &target, ColumnMappingMode::Name, "m").unwrap();
        assert_eq!(out.data_type(), &target);
        let y = out
            .as_map()
            .values()
            .as_struct()
            .column(0)
            .as_primitive::<Int64Type>()
            .clone();
        assert_eq!(y.values().as_ref(), [1, 2, 3]);
    }

    #[test]
    fn widened_types_are_cast_to_the_table_type() {
        let cases: Vec<(ArrayRef, PrimitiveType)> = vec![
            (Arc::new(Int32Array::from(vec![7])), PrimitiveType::Long),
            (Arc::new(Int32Array::from(vec![7])), PrimitiveType::Double),
            (
                Arc::new(Float32Array::from(vec![1.5])),
                PrimitiveType::Double,
            ),
            (
                Arc::new(
                    Decimal128Array::from(vec![123])
                        .with_precision_and_scale(5, 2)
                        .unwrap(),
                ),
                PrimitiveType::Decimal {
                    precision: 10,
                    scale: 4,
                },
            ),
            (
                Arc::new(Int32Array::from(vec![7])),
                PrimitiveType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            ),
            (
                Arc::new(Date32Array::from(vec![1])),
                PrimitiveType::TimestampNtz,
            ),
        ];
        let expected = ["7", "7.0", "1.5", "1.2300", "7.00", "1970-01-02T00:00:00"];
        for ((array, table_type), expected) in cases.into_iter().zip(expected) {
            let target = crate::schema::to_arrow_data_type(&table_type.into()).unwrap();
            let out = to_table_column(
                &array,
                &table_type.into(),
                &target,
                ColumnMappingMode::None,
                "c",
            )
            .unwrap();
            assert_eq!(out.data_type(), &target);
            let shown = arrow::util::display::array_value_to_string(&out, 0).unwrap();
            assert_eq!(shown, expected, "{table_type}");
        }
        let too_big: ArrayRef = Arc::new(Int64Array::from(vec![i64::MAX]));
        let target = ArrowType::Int32;
        let error = to_table_column(
            &too_big,
            &PrimitiveType::Integer.into(),
            &target,
            ColumnMappingMode::None,
            "n",
        )
        .unwrap_err();
        assert!(error.contains("column `n`"), "{error}");
    }

    #[test]
    fn timestamps_become_microseconds_without_shifting() {
        let utc = crate::schema::to_arrow_data_type(&PrimitiveType::Timestamp.into()).unwrap();
        let ntz = crate::schema::to_arrow_data_type(&PrimitiveType::TimestampNtz.into()).unwrap();
        let millis: ArrayRef =
            Arc::new(TimestampMillisecondArray::from(vec![1_000]).with_timezone("UTC"));
        let int96: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![2_000_000]));
        let micros_ntz: ArrayRef = Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![3]));
        for (array, target, expected) in [
            (&millis, &utc, 1_000_000),
            (&int96, &utc, 2_000),
            (&micros_ntz, &ntz, 3),
        ] {
            let logical = if target == &utc {
                PrimitiveType::Timestamp
            } else {
                PrimitiveType::TimestampNtz
            };
            let out = to_table_column(array, &logical.into(), target, ColumnMappingMode::None, "t")
                .unwrap();
            assert_eq!(out.data_type(), target);
            assert_eq!(
                out.as_primitive::<TimestampMicrosecondType>().value(0),
                expected
            );
        }
    }

    #[test]
    fn variant_groups_become_the_variant_struct() {
        let logical: DeltaType = PrimitiveType::Variant.into();
        let target = crate::schema::to_arrow_data_type(&logical).unwrap();
        let binaries = |v: &[u8]| Arc::new(arrow_array::BinaryArray::from(vec![v])) as ArrayRef;
        let file = StructArray::try_new(
            Fields::from(vec![
                Field::new("value", ArrowType::Binary, false),
                Field::new("metadata", ArrowType::Binary, false),
            ]),
            vec![binaries(b"v"), binaries(b"m")],
            None,
        )
        .unwrap();
        let file: ArrayRef = Arc::new(file);
        let out = to_table_column(&file, &logical, &target, ColumnMappingMode::None, "v").unwrap();
        assert_eq!(out.data_type(), &target);
        let metadata = out.as_struct().column_by_name("metadata").unwrap();
        assert_eq!(metadata.as_binary::<i32>().value(0), b"m");
    }

    #[test]
    fn int96_leaves_are_hinted_as_microseconds() {
        let message = "message spark_schema {
            optional int32 id;
            optional int96 ts;
            optional group s { optional int96 inner; optional int64 n (TIMESTAMP(NANOS,false)); }
        }";
        let parquet_type = parquet::schema::parser::parse_message_type(message).unwrap();
        let descriptor = SchemaDescriptor::new(Arc::new(parquet_type));
        let arrow = parquet::arrow::parquet_to_arrow_schema(&descriptor, None).unwrap();
        let hinted = int96_as_micros(&arrow, &descriptor).unwrap();
        let micros = ArrowType::Timestamp(TimeUnit::Microsecond, None);
        assert_eq!(hinted.field(1).data_type(), &micros);
        let ArrowType::Struct(inner) = hinted.field(2).data_type() else {
            panic!("struct")
        };
        assert_eq!(inner[0].data_type(), &micros);
        assert_eq!(
            inner[1].data_type(),
            &ArrowType::Timestamp(TimeUnit::Nanosecond, None)
        );

        let plain = parquet::schema::parser::parse_message_type("message m { optional int32 id; }")
            .unwrap();
        let descriptor = SchemaDescriptor::new(Arc::new(plain));
        let arrow = parquet::arrow::parquet_to_arrow_schema(&descriptor, None).unwrap();
        assert!(int96_as_micros(&arrow, &descriptor).is_none());
    }
}
