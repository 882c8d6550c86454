//! A Parquet file encoded in memory with the leaf columns of its row groups encoded and
//! compressed in parallel on the rayon pool.
//!
//! parquet's `ArrowWriter` encodes one column after another on the calling thread, so a file
//! written from one stream of batches (an unpartitioned append) keeps one core busy. Here every
//! leaf column has its own `ArrowColumnWriter`, and each batch's leaves are written side by
//! side; the row group is closed (its last pages compressed, again in parallel) and spliced
//! into the file in column order. The file is the same as `ArrowWriter` makes: the same Parquet
//! schema, the Arrow schema in the key-value metadata, row groups cut by the same limits of
//! rows and estimated bytes ([`WriterProperties::max_row_group_row_count`] and
//! [`WriterProperties::max_row_group_bytes`]).
//!
//! Callers run [`ParquetEncoder::write`] and [`ParquetEncoder::finish`] on the rayon pool
//! (`crate::util::cpu::run`); they take the bytes produced with [`ParquetEncoder::drain`].

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn,
    ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;

/// One Parquet file being encoded; see the module docs.
pub(crate) struct ParquetEncoder {
    file: SerializedFileWriter<Vec<u8>>,
    row_groups: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    open: Option<OpenRowGroup>,
    max_rows: Option<usize>,
    max_bytes: Option<usize>,
}

/// The row group being encoded: a writer per leaf column and the rows given to them.
struct OpenRowGroup {
    columns: Vec<ArrowColumnWriter>,
    rows: usize,
}

impl OpenRowGroup {
    /// The estimated encoded size of the rows given so far.
    fn estimated_bytes(&self) -> usize {
        self.columns
            .iter()
            .map(ArrowColumnWriter::get_estimated_total_bytes)
            .sum()
    }
}

impl std::fmt::Debug for ParquetEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetEncoder")
            .field(
                "rows_in_progress",
                &self.open.as_ref().map_or(0, |g| g.rows),
            )
            .finish_non_exhaustive()
    }
}

impl ParquetEncoder {
    /// A file of batches with `schema`, written with `properties`.
    pub(crate) fn try_new(schema: SchemaRef, properties: WriterProperties) -> Result<Self> {
        let max_rows = properties.max_row_group_row_count();
        let max_bytes = properties.max_row_group_bytes();
        let writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(properties))?;
        let (file, row_groups) = writer.into_serialized_writer()?;
        Ok(ParquetEncoder {
            file,
            row_groups,
            schema,
            open: None,
            max_rows,
            max_bytes,
        })
    }

    /// The estimated encoded size of the row group in progress (0 when there is none).
    pub(crate) fn in_progress_size(&self) -> usize {
        self.open.as_ref().map_or(0, OpenRowGroup::estimated_bytes)
    }

    /// Encodes the rows of `batch`, closing row groups as they reach the row or byte limit
    /// (the byte limit judged by the average encoded row so far, as `ArrowWriter` judges it).
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut rest = batch.clone();
        while rest.num_rows() > 0 {
            let take = self.rows_that_fit(rest.num_rows());
            if take == 0 {
                if self.open.is_none() {
                    return Err(ParquetError::General(
                        "a row group limit of zero rows".into(),
                    ));
                }
                self.flush()?;
                continue;
            }
            let head = rest.slice(0, take);
            rest = rest.slice(take, rest.num_rows() - take);
            self.write_to_open_group(&head)?;
            if self.open_group_is_full() {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// How many of `rows` more rows the open row group takes (0: it must be closed first).
    fn rows_that_fit(&self, rows: usize) -> usize {
        let Some(open) = &self.open else {
            return self.max_rows.map_or(rows, |max| rows.min(max));
        };
        let mut fit = self
            .max_rows
            .map_or(rows, |max| rows.min(max.saturating_sub(open.rows)));
        if let (Some(max_bytes), true) = (self.max_bytes, open.rows > 0) {
            let bytes = open.estimated_bytes();
            if bytes >= max_bytes {
                return 0;
            }
            let per_row = bytes / open.rows;
            if let Some(room) = (max_bytes - bytes).checked_div(per_row) {
                fit = fit.min(room);
            }
        }
        fit
    }

    fn open_group_is_full(&self) -> bool {
        let Some(open) = &self.open else {
            return false;
        };
        self.max_rows.is_some_and(|max| open.rows >= max)
            || self
                .max_bytes
                .is_some_and(|max| open.estimated_bytes() >= max)
    }

    /// Writes the leaves of `batch` to the open row group (opened if needed), each leaf
    /// column on its own rayon task.
    fn write_to_open_group(&mut self, batch: &RecordBatch) -> Result<()> {
        let leaves = self.leaves_of(batch)?;
        let open = match &mut self.open {
            Some(open) => open,
            slot => slot.insert(OpenRowGroup {
                columns: self
                    .row_groups
                    .create_column_writers(self.file.flushed_row_groups().len())?,
                rows: 0,
            }),
        };
        if open.columns.len() != leaves.len() {
            return Err(ParquetError::General(format!(
                "a batch of {} leaf columns for a file of {}",
                leaves.len(),
                open.columns.len()
            )));
        }
        open.columns
            .par_iter_mut()
            .zip(leaves.par_iter())
            .try_for_each(|(column, leaf)| column.write(leaf))?;
        open.rows += batch.num_rows();
        Ok(())
    }

    /// The leaf columns of `batch`, in the order of the file's column writers.
    fn leaves_of(&self, batch: &RecordBatch) -> Result<Vec<ArrowLeafColumn>> {
        if batch.num_columns() != self.schema.fields().len() {
            return Err(ParquetError::General(format!(
                "a batch of {} columns for a file of {}",
                batch.num_columns(),
                self.schema.fields().len()
            )));
        }
        let mut leaves = Vec::with_capacity(batch.num_columns());
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            leaves.extend(compute_leaves(field, column)?);
        }
        Ok(leaves)
    }

    /// Closes the open row group, if any: its columns closed in parallel, then spliced into
    /// the file in order.
    fn flush(&mut self) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let chunks = open
            .columns
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<Result<Vec<ArrowColumnChunk>>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        Ok(())
    }

    /// Closes the open row group and writes the footer. The encoder takes no more rows.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.flush()?;
        self.file.finish()?;
        Ok(())
    }

    /// The bytes encoded since the last call.
    pub(crate) fn drain(&mut self) -> Result<Bytes> {
        self.file.flush()?;
        Ok(Bytes::from(std::mem::take(self.file.inner_mut())))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray, StructArray};
    use arrow_schema::{DataType, Field, Fields, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;

    fn batch(start: i64, rows: usize) -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(start..start + rows as i64));
        let names: ArrayRef = Arc::new(StringArray::from_iter(
            (start..start + rows as i64).map(|i| (i % 3 != 0).then(|| format!("name-{i}"))),
        ));
        let inner = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
        let nested: ArrayRef = Arc::new(StructArray::new(inner, vec![ids.clone()], None));
        RecordBatch::try_new(schema(), vec![ids, names, nested]).unwrap()
    }

    fn schema() -> SchemaRef {
        let inner = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("nested", DataType::Struct(inner), true),
        ]))
    }

    fn encode(properties: WriterProperties, batches: &[RecordBatch]) -> Bytes {
        let mut encoder = ParquetEncoder::try_new(schema(), properties).unwrap();
        let mut bytes = Vec::new();
        for batch in batches {
            encoder.write(batch).unwrap();
            bytes.extend_from_slice(&encoder.drain().unwrap());
        }
        encoder.finish().unwrap();
        bytes.extend_from_slice(&encoder.drain().unwrap());
        Bytes::from(bytes)
    }

    #[test]
    fn rows_read_back_in_order_with_row_groups_cut_by_the_row_limit() {
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .build();
        let batches = [batch(0, 2500), batch(2500, 700), batch(3200, 300)];
        let file = ParquetRecordBatchReaderBuilder::try_new(encode(properties, &batches)).unwrap();
        let groups: Vec<i64> = file
            .metadata()
            .row_groups()
            .iter()
            .map(|group| group.num_rows())
            .collect();
        let reader = file.build().unwrap();
        assert_eq!(groups, vec![1000, 1000, 1000, 500]);
        let read: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let read = arrow::compute::concat_batches(&schema(), &read).unwrap();
        let written = arrow::compute::concat_batches(&schema(), &batches).unwrap();
        assert_eq!(read, written);
    }

    #[test]
    fn the_byte_limit_cuts_row_groups_like_the_arrow_writer() {
        let properties = || {
            WriterProperties::builder()
                .set_max_row_group_row_count(None)
                .set_max_row_group_bytes(Some(16 * 1024))
                .build()
        };
        let batches: Vec<RecordBatch> = (0..20).map(|i| batch(i * 1000, 1000)).collect();
        let ours = ParquetRecordBatchReaderBuilder::try_new(encode(properties(), &batches))
            .unwrap()
            .metadata()
            .clone();
        let mut reference = ArrowWriter::try_new(Vec::new(), schema(), Some(properties())).unwrap();
        for batch in &batches {
            reference.write(batch).unwrap();
        }
        let reference = Bytes::from(reference.into_inner().unwrap());
        let theirs = ParquetRecordBatchReaderBuilder::try_new(reference)
            .unwrap()
            .metadata()
            .clone();
        let rows = |metadata: &parquet::file::metadata::ParquetMetaData| -> Vec<i64> {
            metadata.row_groups().iter().map(|g| g.num_rows()).collect()
        };
        assert!(rows(&ours).len() > 1);
        assert_eq!(rows(&ours), rows(&theirs));
        assert_eq!(
            ours.file_metadata().key_value_metadata(),
            theirs.file_metadata().key_value_metadata()
        );
    }

    #[test]
    fn a_batch_of_another_shape_is_an_error() {
        let mut encoder =
            ParquetEncoder::try_new(schema(), WriterProperties::builder().build()).unwrap();
        let narrow = batch(0, 10).project(&[0, 1]).unwrap();
        assert!(encoder.write(&narrow).is_err());
    }
}
