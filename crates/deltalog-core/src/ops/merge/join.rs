//! The hash join of a merge: the source, built in memory as a table from the values of the
//! equality keys of the merge condition (`t.a = s.b`) to its rows, probed with the rows of
//! each target file. Keys are hashed in one common type per key (so an `int` source column
//! finds a `long` target column); a row with a NULL key never matches. Candidate pairs are
//! then checked with the whole merge condition, so hashing only narrows the search.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::compute::{cast, sort_to_indices, SortOptions};
use arrow::row::{RowConverter, SortField};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch};
use arrow_schema::DataType;

use super::clauses::Resolved;
use crate::error::{Error, Result};
use crate::expr::{evaluate_value, CompareOp, Expr, ValueExpr};
use crate::scalar::Scalar;
use crate::schema::{DataType as DeltaType, StructType};

/// An equality key of the merge condition: a target column path and a source column path
/// (both qualified with their alias).
#[derive(Debug, Clone)]
pub(super) struct Key {
    pub target: Vec<String>,
    pub source: Vec<String>,
}

/// The source rows by the values of their keys.
pub(super) struct SourceIndex {
    keys: Vec<Key>,
    /// The type each key is hashed in.
    hash_types: Vec<DataType>,
    converter: RowConverter,
    rows: HashMap<Box<[u8]>, Vec<u32>>,
    /// Every source row, when the condition has no equality key (each target row is paired
    /// with every source row).
    every_row: Option<Vec<u32>>,
}

impl SourceIndex {
    /// Indexes `source` (the whole source, one batch) by the equality keys of `resolved`'s
    /// merge condition.
    pub(super) fn build(resolved: &Resolved, source: &RecordBatch) -> Result<SourceIndex> {
        let keys = equality_keys(resolved);
        let joined = resolved.sides.join(None, Some(source), source.num_rows())?;
        let mut source_keys = Vec::with_capacity(keys.len());
        let mut hash_types = Vec::with_capacity(keys.len());
        for key in &keys {
            let values = evaluate_value(&ValueExpr::Column(key.source.clone()), &joined, 0)?;
            let target_type = target_key_type(resolved, key)?;
            hash_types.push(hash_type(&target_type, values.data_type()));
            source_keys.push(values);
        }
        let fields = hash_types
            .iter()
            .map(|t| SortField::new(t.clone()))
            .collect();
        let converter = RowConverter::new(fields)
            .map_err(|error| Error::arrow("hashing the merge keys", error))?;
        let mut index = SourceIndex {
            keys,
            hash_types,
            converter,
            rows: HashMap::new(),
            every_row: None,
        };
        if index.keys.is_empty() {
            index.every_row = Some((0..row_count(source)?).collect());
            return Ok(index);
        }
        let (encoded, valid) = index.encode(&source_keys)?;
        for (row, usable) in valid.iter().enumerate() {
            if *usable {
                let key: Box<[u8]> = encoded.row(row).as_ref().into();
                index.rows.entry(key).or_default().push(row as u32);
            }
        }
        Ok(index)
    }

    /// True when no source row can match any target row (every key of every source row is
    /// NULL, or there is no source row).
    pub(super) fn is_empty(&self) -> bool {
        match &self.every_row {
            Some(rows) => rows.is_empty(),
            None => self.rows.is_empty(),
        }
    }

    /// The candidate pairs of the target rows (as `joined`, a batch holding the target
    /// side): for each target row in `live`, the source rows with the same keys, as
    /// (target row, source row) in target order.
    pub(super) fn probe(&self, joined: &RecordBatch, live: &[bool]) -> Result<Vec<(u32, u32)>> {
        let mut pairs = Vec::new();
        if let Some(every) = &self.every_row {
            for (row, _) in live.iter().enumerate().filter(|(_, l)| **l) {
                pairs.extend(every.iter().map(|s| (row as u32, *s)));
            }
            return Ok(pairs);
        }
        let mut target_keys = Vec::with_capacity(self.keys.len());
        for key in &self.keys {
            target_keys.push(evaluate_value(
                &ValueExpr::Column(key.target.clone()),
                joined,
                0,
            )?);
        }
        let (encoded, valid) = self.encode(&target_keys)?;
        for (row, usable) in valid.iter().enumerate() {
            if !*usable || !live.get(row).copied().unwrap_or(false) {
                continue;
            }
            if let Some(sources) = self.rows.get(encoded.row(row).as_ref()) {
                pairs.extend(sources.iter().map(|s| (row as u32, *s)));
            }
        }
        Ok(pairs)
    }

    /// The keys cast to their hash types and encoded, and for each row whether no key is
    /// NULL.
    fn encode(&self, values: &[ArrayRef]) -> Result<(arrow::row::Rows, Vec<bool>)> {
        let rows = values.first().map_or(0, |v| v.len());
        let mut valid = vec![true; rows];
        let mut columns = Vec::with_capacity(values.len());
        for (value, ty) in values.iter().zip(&self.hash_types) {
            let column = normalized(value, ty)?;
            for (row, usable) in valid.iter_mut().enumerate() {
                *usable &= column.is_valid(row);
            }
            columns.push(column);
        }
        let encoded = self
            .converter
            .convert_columns(&columns)
            .map_err(|error| Error::arrow("hashing the merge keys", error))?;
        Ok((encoded, valid))
    }
}

/// The equality keys of the merge condition: its conjuncts `t.a = s.b` (either order).
pub(super) fn equality_keys(resolved: &Resolved) -> Vec<Key> {
    let sides = &resolved.sides;
    let side_of = |expr: &Expr| match expr {
        Expr::Column(path) if path.len() > 1 && path[0] == sides.target_alias => {
            Some((true, path.clone()))
        }
        Expr::Column(path) if path.len() > 1 && path[0] == sides.source_alias => {
            Some((false, path.clone()))
        }
        _ => None,
    };
    let mut keys = Vec::new();
    for conjunct in resolved.on_conjuncts() {
        let Expr::Compare {
            op: CompareOp::Eq,
            left,
            right,
        } = conjunct
        else {
            continue;
        };
        match (side_of(left), side_of(right)) {
            (Some((true, target)), Some((false, source)))
            | (Some((false, source)), Some((true, target))) => keys.push(Key { target, source }),
            _ => {}
        }
    }
    keys
}

/// The predicate on target columns (alias removed) that every target row that may match
/// a source row satisfies: the conjuncts of the merge condition naming only the target, and
/// for each equality key on a top-level primitive column, the range of the source's keys.
/// `None` when nothing narrows the target.
pub(super) fn target_filter(
    resolved: &Resolved,
    index: &SourceIndex,
    source: &RecordBatch,
    schema: &StructType,
) -> Result<Option<Expr>> {
    let sides = &resolved.sides;
    let mut parts = Vec::new();
    for conjunct in resolved.on_conjuncts() {
        let paths = conjunct.column_paths();
        if !paths.is_empty() && paths.iter().all(|p| p[0] == sides.target_alias) {
            parts.push(strip_alias(conjunct));
        }
    }
    let joined = sides.join(None, Some(source), source.num_rows())?;
    for key in &index.keys {
        if let Some(range) = key_range(key, &joined, schema)? {
            parts.push(range);
        }
    }
    Ok(Expr::conjunction(parts))
}

/// `low <= column <= high` over the source's key values, for a key on a top-level
/// primitive target column of the same Arrow type as the source key.
fn key_range(key: &Key, joined: &RecordBatch, schema: &StructType) -> Result<Option<Expr>> {
    let [_, column] = key.target.as_slice() else {
        return Ok(None);
    };
    let Some(field) = schema.fields.iter().find(|f| &f.name == column) else {
        return Ok(None);
    };
    let DeltaType::Primitive(primitive) = &field.data_type else {
        return Ok(None);
    };
    let values = evaluate_value(&ValueExpr::Column(key.source.clone()), joined, 0)?;
    let wanted = crate::schema::to_arrow_data_type(&field.data_type)?;
    if values.data_type() != &wanted || matches!(wanted, DataType::Float32 | DataType::Float64) {
        return Ok(None);
    }
    let valid = values.len() - values.null_count();
    if valid == 0 {
        return Ok(None);
    }
    let options = SortOptions {
        descending: false,
        nulls_first: false,
    };
    let order = sort_to_indices(&values, Some(options), None)
        .map_err(|error| Error::arrow("ordering the merge keys", error))?;
    let low = crate::write::scalar_at(values.as_ref(), order.value(0) as usize, *primitive)?;
    let high =
        crate::write::scalar_at(values.as_ref(), order.value(valid - 1) as usize, *primitive)?;
    if matches!(low, Scalar::Null) || matches!(high, Scalar::Null) {
        return Ok(None);
    }
    let column = Expr::column_path([column.clone()]);
    Ok(Some(Expr::Between {
        expr: Box::new(column),
        low: Box::new(Expr::Literal(low)),
        high: Box::new(Expr::Literal(high)),
        negated: false,
    }))
}

/// `expr` with the alias (the first part) removed from every column path.
fn strip_alias(expr: &Expr) -> Expr {
    let stripped = expr.try_map_columns(&mut |path| {
        Ok::<_, std::convert::Infallible>(path.get(1..).unwrap_or_default().to_vec())
    });
    match stripped {
        Ok(expr) => expr,
        Err(never) => match never {},
    }
}

/// The Arrow type of the target column a key names.
fn target_key_type(resolved: &Resolved, key: &Key) -> Result<DataType> {
    let target = RecordBatch::new_empty(resolved.sides.target.clone());
    let joined = resolved.sides.join(Some(&target), None, 0)?;
    Ok(
        evaluate_value(&ValueExpr::Column(key.target.clone()), &joined, 0)?
            .data_type()
            .clone(),
    )
}

/// The type a key is hashed in: the common type of its two sides (equal values of the two
/// sides hash the same; the merge condition then decides exactly).
fn hash_type(target: &DataType, source: &DataType) -> DataType {
    let plain = |ty: &DataType| match ty {
        DataType::Dictionary(_, value) => value.as_ref().clone(),
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::LargeBinary | DataType::BinaryView => DataType::Binary,
        DataType::Float16 | DataType::Float32 => DataType::Float64,
        other => other.clone(),
    };
    let (target, source) = (plain(target), plain(source));
    let numeric = |ty: &DataType| ty.is_numeric();
    match (target, source) {
        (t, s) if t == s => t,
        (t, s) if t.is_integer() && s.is_integer() => DataType::Int64,
        (t, s) if numeric(&t) && numeric(&s) => DataType::Float64,
        (t, _) => t,
    }
}

/// `value` cast to `ty` (a value that does not convert is NULL, so it matches nothing),
/// floats with `-0.0` folded into `0.0` and every NaN made one NaN (Spark's equality).
fn normalized(value: &ArrayRef, ty: &DataType) -> Result<ArrayRef> {
    let cast_value = cast(value, ty).map_err(|error| Error::arrow("casting a merge key", error))?;
    if ty != &DataType::Float64 {
        return Ok(cast_value);
    }
    let floats: Float64Array = cast_value.as_primitive::<Float64Type>().unary(|v| {
        if v == 0.0 {
            0.0
        } else if v.is_nan() {
            f64::NAN
        } else {
            v
        }
    });
    Ok(Arc::new(floats))
}

fn row_count(batch: &RecordBatch) -> Result<u32> {
    u32::try_from(batch.num_rows()).map_err(|_| {
        Error::InvalidArgument(format!(
            "a merge source holds at most {} rows, this one {}",
            u32::MAX,
            batch.num_rows()
        ))
    })
}
