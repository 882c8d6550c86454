//! Per-file statistics as Delta on Spark writes them (spec "Per-file Statistics", catalogue
//! H-ST; Delta's `StatisticsCollection`).
//!
//! - The columns: those [`crate::table_config::stats::select_stats_columns`] picks from the data columns
//!   (`delta.dataSkippingStatsColumns`, else the first `delta.dataSkippingNumIndexedCols`
//!   leaves, 32 by default), keyed by physical name under column mapping, structs nested.
//! - `numRecords`: the rows of the file.
//! - `minValues` / `maxValues`: for numbers, decimals, dates, timestamps (truncated to
//!   milliseconds by the scalar codec: readers widen the max by a millisecond) and strings;
//!   not for booleans, binary, arrays or maps. A column whose values are all NULL has no entry
//!   (Spark's JSON leaves out NULL fields); a struct with selected leaves always has its object.
//!   NaN is larger than every number (a NaN makes the max `"NaN"`, the min is NaN only when
//!   every value is). Strings are cut to [`STRING_PREFIX_LENGTH`] characters: the min to its
//!   prefix, the max to its prefix followed by the characters from there on that are at least
//!   U+FFFD and then U+FFFD, so it stays an upper bound (Spark's `truncateMaxStringAgg`; Spark
//!   counts UTF-16 units where this counts characters, which differs only for characters
//!   outside the Basic Multilingual Plane, where this bound is the safe one).
//! - `nullCount`: for every selected leaf (arrays, maps and booleans included), the rows where
//!   it is NULL, a NULL enclosing struct included.
//! - `tightBounds`: `true` when the protocol supports deletion vectors, else absent, as Spark
//!   writes it for new files.

use std::cmp::Ordering;
use std::collections::HashMap;

use arrow::buffer::NullBuffer;
use arrow::compute::kernels::aggregate::{max, max_string, min, min_string};
use arrow::compute::nullif;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, BooleanArray, PrimitiveArray, RecordBatch};

use crate::error::{Error, Result};
use crate::scalar::{to_stats_value, Scalar};
use crate::schema::{ColumnMappingMode, DataType, PrimitiveType, StructType};
use crate::table_config::stats::{
    select_stats_columns, MAX_VALUES, MIN_VALUES, NULL_COUNT, NUM_RECORDS, TIGHT_BOUNDS,
};

/// Characters kept of string min/max values (Spark's `dataSkippingStringPrefixLength`).
pub(crate) const STRING_PREFIX_LENGTH: usize = 32;

/// The tie-breaker appended to a truncated string max.
const TIE_BREAKER: char = '\u{fffd}';

/// Which columns of a data file get statistics, and where they are in its batches.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct StatsPlan {
    roots: Vec<Node>,
    leaves: usize,
    tight_bounds: bool,
}

#[derive(Debug, Clone)]
enum Node {
    Struct {
        key: String,
        index: usize,
        children: Vec<Node>,
        has_min_max: bool,
    },
    Leaf {
        key: String,
        index: usize,
        slot: usize,
        min_max: Option<PrimitiveType>,
    },
}

/// The statistics of one file so far.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FileStats {
    records: u64,
    leaves: Vec<LeafStats>,
}

#[derive(Debug, Clone, Default)]
struct LeafStats {
    nulls: u64,
    min: Option<Scalar>,
    max: Option<Scalar>,
}

impl StatsPlan {
    /// The statistics of files holding the data columns `data_schema` (logical names, with
    /// their metadata) of a table with `configuration` and column mapping `mode`.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn try_new(
        data_schema: &StructType,
        configuration: &HashMap<String, String>,
        mode: ColumnMappingMode,
        tight_bounds: bool,
    ) -> Result<StatsPlan> {
        let selected = select_stats_columns(data_schema, configuration)?;
        let mut leaves = 0;
        let roots = nodes(&selected, data_schema, mode, &mut leaves)?;
        Ok(StatsPlan {
            roots,
            leaves,
            tight_bounds,
        })
    }

    /// Empty statistics for a new file.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn start(&self) -> FileStats {
        FileStats {
            records: 0,
            leaves: vec![LeafStats::default(); self.leaves],
        }
    }
}

impl FileStats {
    /// Adds the rows of `batch` (the data columns of a file, in data schema order).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn update(&mut self, plan: &StatsPlan, batch: &RecordBatch) -> Result<()> {
        self.records += batch.num_rows() as u64;
        for node in &plan.roots {
            self.update_node(node, batch.columns(), None)?;
        }
        Ok(())
    }

    /// The statistics JSON of the file.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn to_json(&self, plan: &StatsPlan) -> Result<String> {
        let mut out = format!("{{\"{NUM_RECORDS}\":{}", self.records);
        if plan.roots.iter().any(Node::has_min_max) {
            out.push_str(&format!(",\"{MIN_VALUES}\":"));
            self.write_values(&plan.roots, true, &mut out)?;
            out.push_str(&format!(",\"{MAX_VALUES}\":"));
            self.write_values(&plan.roots, false, &mut out)?;
        }
        if !plan.roots.is_empty() {
            out.push_str(&format!(",\"{NULL_COUNT}\":"));
            self.write_nulls(&plan.roots, &mut out);
        }
        if plan.tight_bounds {
            out.push_str(&format!(",\"{TIGHT_BOUNDS}\":true"));
        }
        out.push('}');
        Ok(out)
    }

    fn update_node(
        &mut self,
        node: &Node,
        columns: &[ArrayRef],
        parent: Option<&NullBuffer>,
    ) -> Result<()> {
        match node {
            Node::Struct {
                index, children, ..
            } => {
                let array = column(columns, *index)?;
                let st = array.as_struct_opt().ok_or_else(|| {
                    Error::internal_invariant(
                        "statistics: a struct column of the stats schema is a struct",
                    )
                })?;
                let nulls = NullBuffer::union(parent, st.nulls());
                for child in children {
                    self.update_node(child, st.columns(), nulls.as_ref())?;
                }
            }
            Node::Leaf {
                index,
                slot,
                min_max,
                ..
            } => {
                let array = column(columns, *index)?;
                let nulls = NullBuffer::union(parent, array.logical_nulls().as_ref());
                let leaf = &mut self.leaves[*slot];
                leaf.nulls += nulls.as_ref().map_or(0, |n| n.null_count()) as u64;
                if let Some(ty) = min_max {
                    let values = match parent {
                        Some(parent) if parent.null_count() > 0 => {
                            let hidden = BooleanArray::new(!parent.inner(), None);
                            nullif(array, &hidden)
                                .map_err(|e| Error::arrow("computing statistics", e))?
                        }
                        _ => array.clone(),
                    };
                    let (low, high) = min_max_of(&values, *ty)?;
                    merge(&mut leaf.min, low, Ordering::Less);
                    merge(&mut leaf.max, high, Ordering::Greater);
                }
            }
        }
        Ok(())
    }

    fn write_values(&self, nodes: &[Node], lower: bool, out: &mut String) -> Result<()> {
        out.push('{');
        let mut first = true;
        for node in nodes.iter().filter(|node| node.has_min_max()) {
            match node {
                Node::Struct { key, children, .. } => {
                    separator(&mut first, out);
                    push_key(key, out);
                    self.write_values(children, lower, out)?;
                }
                Node::Leaf { key, slot, .. } => {
                    let leaf = &self.leaves[*slot];
                    let value = if lower { &leaf.min } else { &leaf.max };
                    let Some(value) = value else { continue };
                    let value = match value {
                        Scalar::Utf8(text) if lower => Scalar::Utf8(truncate_min(text)),
                        Scalar::Utf8(text) => Scalar::Utf8(truncate_max(text)),
                        other => other.clone(),
                    };
                    separator(&mut first, out);
                    push_key(key, out);
                    out.push_str(&to_stats_value(&value)?);
                }
            }
        }
        out.push('}');
        Ok(())
    }

    fn write_nulls(&self, nodes: &[Node], out: &mut String) {
        out.push('{');
        let mut first = true;
        for node in nodes {
            separator(&mut first, out);
            match node {
                Node::Struct { key, children, .. } => {
                    push_key(key, out);
                    self.write_nulls(children, out);
                }
                Node::Leaf { key, slot, .. } => {
                    push_key(key, out);
                    out.push_str(&self.leaves[*slot].nulls.to_string());
                }
            }
        }
        out.push('}');
    }
}

impl Node {
    fn has_min_max(&self) -> bool {
        match self {
            Node::Struct { has_min_max, .. } => *has_min_max,
            Node::Leaf { min_max, .. } => min_max.is_some(),
        }
    }
}

/// The first [`STRING_PREFIX_LENGTH`] characters of `text`.
pub(crate) fn truncate_min(text: &str) -> String {
    text.chars().take(STRING_PREFIX_LENGTH).collect()
}

/// An upper bound of `text` of about [`STRING_PREFIX_LENGTH`] characters, as the module docs
/// describe; `text` itself when it is short enough.
pub(crate) fn truncate_max(text: &str) -> String {
    if text.chars().count() <= STRING_PREFIX_LENGTH {
        return text.to_string();
    }
    let mut chars = text.chars();
    let mut bound: String = chars.by_ref().take(STRING_PREFIX_LENGTH).collect();
    bound.extend(chars.take_while(|c| *c >= TIE_BREAKER));
    bound.push(TIE_BREAKER);
    bound
}

/// The statistics nodes of the `selected` fields, found by name in `data` (whose field
/// positions are the column positions of the batches).
fn nodes(
    selected: &StructType,
    data: &StructType,
    mode: ColumnMappingMode,
    leaves: &mut usize,
) -> Result<Vec<Node>> {
    let mut found = Vec::new();
    for field in &selected.fields {
        let index = data
            .fields
            .iter()
            .position(|f| f.name == field.name)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("statistics: unknown column `{}`", field.name))
            })?;
        let key = field.physical_name(mode)?.to_string();
        match (&field.data_type, &data.fields[index].data_type) {
            (DataType::Struct(selected_nested), DataType::Struct(data_nested)) => {
                let children = nodes(selected_nested, data_nested, mode, leaves)?;
                let has_min_max = children.iter().any(Node::has_min_max);
                found.push(Node::Struct {
                    key,
                    index,
                    children,
                    has_min_max,
                });
            }
            (data_type, _) => {
                let min_max = match data_type {
                    DataType::Primitive(primitive) if primitive.has_min_max_stats() => {
                        Some(*primitive)
                    }
                    _ => None,
                };
                found.push(Node::Leaf {
                    key,
                    index,
                    slot: *leaves,
                    min_max,
                });
                *leaves += 1;
            }
        }
    }
    Ok(found)
}

fn column(columns: &[ArrayRef], index: usize) -> Result<&ArrayRef> {
    columns.get(index).ok_or_else(|| {
        Error::internal_invariant(format!("statistics: the batch has a column {index}"))
    })
}

/// The smallest and largest non-NULL values of `array`, a column of type `ty`.
fn min_max_of(array: &ArrayRef, ty: PrimitiveType) -> Result<(Option<Scalar>, Option<Scalar>)> {
    let wrong = || {
        Error::internal_invariant(format!(
            "statistics: a {} array cannot hold values of type {ty}",
            array.data_type()
        ))
    };
    macro_rules! primitive {
        ($arrow:ty, $variant:expr) => {{
            let values = array.as_primitive_opt::<$arrow>().ok_or_else(wrong)?;
            (min(values).map($variant), max(values).map($variant))
        }};
    }
    // Arrow orders floats by the IEEE total order, where a NaN with its sign bit set (what
    // `-x` gives for a NaN `x`) sorts below every number. Spark has one NaN, above every
    // number. Only when the minimum is such a NaN are the values copied with every NaN made
    // the positive one; otherwise the total order already is Spark's.
    macro_rules! float {
        ($arrow:ty, $variant:expr, $nan:expr) => {{
            let values = array.as_primitive_opt::<$arrow>().ok_or_else(wrong)?;
            let low = min(values);
            if low.is_some_and(|v| v.is_nan()) {
                let values: PrimitiveArray<$arrow> =
                    values.unary(|v| if v.is_nan() { $nan } else { v });
                (min(&values).map($variant), max(&values).map($variant))
            } else {
                (low.map($variant), max(values).map($variant))
            }
        }};
    }
    Ok(match ty {
        PrimitiveType::Byte => primitive!(Int8Type, Scalar::Int8),
        PrimitiveType::Short => primitive!(Int16Type, Scalar::Int16),
        PrimitiveType::Integer => primitive!(Int32Type, Scalar::Int32),
        PrimitiveType::Long => primitive!(Int64Type, Scalar::Int64),
        PrimitiveType::Float => float!(Float32Type, Scalar::Float32, f32::NAN),
        PrimitiveType::Double => float!(Float64Type, Scalar::Float64, f64::NAN),
        PrimitiveType::Date => primitive!(Date32Type, Scalar::Date),
        PrimitiveType::Timestamp => primitive!(TimestampMicrosecondType, Scalar::Timestamp),
        PrimitiveType::TimestampNtz => primitive!(TimestampMicrosecondType, Scalar::TimestampNtz),
        PrimitiveType::Decimal { scale, .. } => {
            let scale = u8::try_from(scale).map_err(|_| wrong())?;
            let decimal = |value| Scalar::Decimal { value, scale };
            primitive!(Decimal128Type, decimal)
        }
        PrimitiveType::String => {
            let values = array.as_string_opt::<i32>().ok_or_else(wrong)?;
            (
                min_string(values).map(|s| Scalar::Utf8(s.to_string())),
                max_string(values).map(|s| Scalar::Utf8(s.to_string())),
            )
        }
        _ => (None, None),
    })
}

/// Keeps in `current` whichever of it and `candidate` is `wanted` (less for a min, greater for
/// a max).
fn merge(current: &mut Option<Scalar>, candidate: Option<Scalar>, wanted: Ordering) {
    let Some(candidate) = candidate else { return };
    let replace = match current {
        None => true,
        Some(existing) => compare(&candidate, existing) == Some(wanted),
    };
    if replace {
        *current = Some(candidate);
    }
}

/// The order of two values of one type: NaN is greater than every other float.
fn compare(a: &Scalar, b: &Scalar) -> Option<Ordering> {
    fn float(a: f64, b: f64) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        }
    }
    Some(match (a, b) {
        (Scalar::Int8(a), Scalar::Int8(b)) => a.cmp(b),
        (Scalar::Int16(a), Scalar::Int16(b)) => a.cmp(b),
        (Scalar::Int32(a), Scalar::Int32(b)) => a.cmp(b),
        (Scalar::Int64(a), Scalar::Int64(b)) => a.cmp(b),
        (Scalar::Float32(a), Scalar::Float32(b)) => float(f64::from(*a), f64::from(*b)),
        (Scalar::Float64(a), Scalar::Float64(b)) => float(*a, *b),
        (Scalar::Decimal { value: a, .. }, Scalar::Decimal { value: b, .. }) => a.cmp(b),
        (Scalar::Utf8(a), Scalar::Utf8(b)) => a.cmp(b),
        (Scalar::Date(a), Scalar::Date(b)) => a.cmp(b),
        (Scalar::Timestamp(a), Scalar::Timestamp(b)) => a.cmp(b),
        (Scalar::TimestampNtz(a), Scalar::TimestampNtz(b)) => a.cmp(b),
        _ => return None,
    })
}

fn separator(first: &mut bool, out: &mut String) {
    if !*first {
        out.push(',');
    }
    *first = false;
}

fn push_key(key: &str, out: &mut String) {
    out.push_str(&serde_json::Value::from(key).to_string());
    out.push(':');
}
