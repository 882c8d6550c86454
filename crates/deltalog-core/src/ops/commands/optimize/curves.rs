//! Space-filling curves that order the rows OPTIMIZE rewrites, as Delta on Spark's
//! `MultiDimClustering` picks them: Z-order (the interleaved bits of the columns) for
//! `ZORDER BY` and for clustering by one column, Hilbert for clustering by two or more
//! (spec "Clustered Table" leaves the curve to the implementation).
//!
//! Each column's values are first replaced by their rank among the rows (nulls first),
//! scaled to 32 bits, which treats every orderable type alike; Spark buckets values into
//! range ids over a sample instead, to the same effect on the files' statistics. The rows are
//! sorted in memory.

use arrow::compute::{sort_to_indices, take_record_batch, SortOptions};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};

use crate::error::{Error, Result};

/// The curve rows are ordered along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Curve {
    /// Interleaved bits, most significant first.
    ZOrder,
    /// The Hilbert curve: neighbours along it are neighbours in every column.
    Hilbert,
}

impl Curve {
    /// The curve Delta on Spark clusters `columns` columns by: Hilbert from two columns on.
    pub(crate) fn for_clustering(columns: usize) -> Curve {
        match columns {
            0 | 1 => Curve::ZOrder,
            _ => Curve::Hilbert,
        }
    }
}

/// `batch` sorted along `curve` over the columns at `paths` (each a column name, then the
/// names of nested struct fields; names compared ignoring case).
///
/// Errors: [`Error::Internal`] for a path that names no column of `batch` (callers check the
/// columns against the table first, so this is our own broken invariant).
pub(crate) fn curve_sort(
    batch: &RecordBatch,
    paths: &[Vec<String>],
    curve: Curve,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    if rows < 2 {
        return Ok(batch.clone());
    }
    let ranks: Vec<Vec<u32>> = paths
        .iter()
        .map(|path| scaled_ranks(batch, path))
        .collect::<Result<_>>()?;
    let keys: Vec<Vec<u64>> = (0..rows)
        .map(|row| {
            let mut point: Vec<u32> = ranks.iter().map(|column| column[row]).collect();
            if curve == Curve::Hilbert {
                hilbert_transpose(&mut point);
            }
            interleave(&point)
        })
        .collect();
    let mut order: Vec<u32> = (0..rows as u32).collect();
    order.sort_by(|a, b| keys[*a as usize].cmp(&keys[*b as usize]));
    take_record_batch(batch, &UInt32Array::from(order))
        .map_err(|error| Error::arrow("reordering rows along the curve", error))
}

/// The rank of every row's value of the column at `path` (nulls first), scaled to 32 bits.
fn scaled_ranks(batch: &RecordBatch, path: &[String]) -> Result<Vec<u32>> {
    let name = path.join(".");
    let column = column_at(batch, path)
        .ok_or_else(|| Error::internal_invariant(format!("no column {name} to order rows by")))?;
    let order = sort_to_indices(
        &column,
        Some(SortOptions {
            descending: false,
            nulls_first: true,
        }),
        None,
    )
    .map_err(|error| Error::arrow(format!("ordering column {name}"), error))?;
    let rows = batch.num_rows();
    let last = (rows.max(2) - 1) as u64;
    let mut scaled = vec![0u32; rows];
    for (rank, row) in order.values().iter().enumerate() {
        scaled[*row as usize] = ((rank as u64 * u64::from(u32::MAX)) / last) as u32;
    }
    Ok(scaled)
}

/// The column at `path` of `batch`: a top-level column, then struct fields (a null struct
/// makes its fields null).
fn column_at(batch: &RecordBatch, path: &[String]) -> Option<ArrayRef> {
    let (first, rest) = path.split_first()?;
    let schema = batch.schema();
    let index = schema
        .fields()
        .iter()
        .position(|f| f.name().eq_ignore_ascii_case(first))?;
    let mut column = batch.column(index).clone();
    for part in rest {
        let parent = column.as_struct_opt()?;
        let (child, _) = parent.fields().find(part).or_else(|| {
            let lower = part.to_lowercase();
            parent
                .fields()
                .iter()
                .enumerate()
                .find(|(_, f)| f.name().to_lowercase() == lower)
        })?;
        let values = parent.column(child).clone();
        column = match parent.nulls() {
            None => values,
            Some(nulls) => {
                let combined = arrow::buffer::NullBuffer::union(Some(nulls), values.nulls());
                arrow_array::make_array(
                    values
                        .into_data()
                        .into_builder()
                        .nulls(combined)
                        .build()
                        .ok()?,
                )
            }
        };
    }
    Some(column)
}

/// Turns `point` (32 bits per coordinate) into the transposed form of its Hilbert index
/// (John Skilling, "Programming the Hilbert curve", 2004): interleaving the result's bits,
/// most significant first, gives the index.
fn hilbert_transpose(point: &mut [u32]) {
    let n = point.len();
    if n < 2 {
        return;
    }
    // Inverse undo of the curve's rotations and reflections.
    let mut q: u32 = 1 << 31;
    while q > 1 {
        let p = q - 1;
        for i in 0..n {
            if point[i] & q != 0 {
                point[0] ^= p;
            } else {
                let t = (point[0] ^ point[i]) & p;
                point[0] ^= t;
                point[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode.
    for i in 1..n {
        point[i] ^= point[i - 1];
    }
    let mut t = 0;
    let mut q: u32 = 1 << 31;
    while q > 1 {
        if point[n - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for value in point.iter_mut() {
        *value ^= t;
    }
}

/// The bits of `values` interleaved, most significant first, packed into 64-bit words.
fn interleave(values: &[u32]) -> Vec<u64> {
    let mut words = vec![0u64; (values.len() * 32).div_ceil(64)];
    let mut position = 0usize;
    for bit in (0..32).rev() {
        for value in values {
            if (value >> bit) & 1 == 1 {
                words[position / 64] |= 1 << (63 - position % 64);
            }
            position += 1;
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn xy(x: Vec<i64>, y: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Int64, true),
        ]));
        let columns: Vec<ArrayRef> =
            vec![Arc::new(Int64Array::from(x)), Arc::new(Int64Array::from(y))];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    fn paths(names: &[&str]) -> Vec<Vec<String>> {
        names.iter().map(|n| vec![n.to_string()]).collect()
    }

    #[test]
    fn interleaving_alternates_bits_of_each_value() {
        assert_eq!(interleave(&[u32::MAX, 0]), vec![0xAAAA_AAAA_AAAA_AAAA]);
        assert_eq!(interleave(&[0, u32::MAX]), vec![0x5555_5555_5555_5555]);
        assert_eq!(interleave(&[1u32]), vec![1 << 32]);
    }

    #[test]
    fn z_order_clusters_nearby_points() {
        let batch = xy(vec![3, 0, 2, 1, 0, 3], vec![3, 0, 2, 1, 3, 0]);
        let sorted = curve_sort(&batch, &paths(&["x", "y"]), Curve::ZOrder).unwrap();
        assert_eq!(sorted.num_rows(), 6);
        let x = sorted.column(0).as_primitive::<Int64Type>();
        let y = sorted.column(1).as_primitive::<Int64Type>();
        assert_eq!((x.value(0), y.value(0)), (0, 0));
        assert_eq!((x.value(5), y.value(5)), (3, 3));
    }

    /// Every step along the Hilbert curve over a grid moves to a neighbouring cell.
    #[test]
    fn hilbert_steps_between_neighbours() {
        let side = 8u32;
        let mut cells: Vec<(u32, u32)> = (0..side)
            .flat_map(|x| (0..side).map(move |y| (x, y)))
            .collect();
        cells.sort_by_key(|(x, y)| {
            let mut point = [*x, *y];
            hilbert_transpose(&mut point);
            interleave(&point)
        });
        assert_eq!(cells[0], (0, 0));
        for pair in cells.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            assert_eq!(x0.abs_diff(x1) + y0.abs_diff(y1), 1, "{pair:?}");
        }
    }

    #[test]
    fn hilbert_sort_keeps_every_row_and_starts_at_the_origin() {
        let x: Vec<i64> = (0..16).map(|i| i % 4).collect();
        let y: Vec<i64> = (0..16).map(|i| i / 4).collect();
        let sorted = curve_sort(&xy(x, y), &paths(&["X", "y"]), Curve::Hilbert).unwrap();
        assert_eq!(sorted.num_rows(), 16);
        let x = sorted.column(0).as_primitive::<Int64Type>();
        let y = sorted.column(1).as_primitive::<Int64Type>();
        assert_eq!((x.value(0), y.value(0)), (0, 0));
        let mut seen: Vec<(i64, i64)> = (0..16).map(|i| (x.value(i), y.value(i))).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 16);
    }

    #[test]
    fn an_unknown_column_is_named() {
        let error =
            curve_sort(&xy(vec![1, 2], vec![1, 2]), &paths(&["z"]), Curve::ZOrder).unwrap_err();
        assert!(error.to_string().contains("no column z"), "{error}");
    }

    #[test]
    fn curves_follow_sparks_choice() {
        assert_eq!(Curve::for_clustering(1), Curve::ZOrder);
        assert_eq!(Curve::for_clustering(3), Curve::Hilbert);
    }
}
