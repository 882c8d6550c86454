//! Parquet files read through the table's store: [`ParquetReader`], the parquet crate's
//! `AsyncFileReader` over a [`super::Storage`], for checkpoint parts, sidecars and data files.
//!
//! The reader only fetches bytes; the footer is parsed and the pages decoded by whoever drives
//! it (`ParquetRecordBatchStreamBuilder`), and CPU-heavy decoding is handed to
//! [`crate::util::cpu::run`] by the callers.

use std::ops::Range;
use std::sync::Arc;

use ::parquet::arrow::arrow_reader::ArrowReaderOptions;
use ::parquet::arrow::async_reader::{AsyncFileReader, MetadataSuffixFetch};
use ::parquet::errors::{ParquetError, Result as ParquetResult};
use ::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

/// One Parquet object of a table's store, read by byte ranges. Made by
/// [`super::Storage::parquet_reader`]; cheap to clone (one per concurrent decoder).
///
/// Store failures come out as `ParquetError::External` holding the `object_store::Error`.
#[derive(Clone, Debug)]
pub struct ParquetReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    file_size: Option<u64>,
}

impl ParquetReader {
    /// A reader of `path` in `store`, of `file_size` bytes when known.
    pub(super) fn new(store: Arc<dyn ObjectStore>, path: Path, file_size: Option<u64>) -> Self {
        ParquetReader {
            store,
            path,
            file_size,
        }
    }

    /// The store path read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The size of the object when it was given.
    pub fn file_size(&self) -> Option<u64> {
        self.file_size
    }
}

impl AsyncFileReader for ParquetReader {
    /// The bytes of `range`, with one ranged request.
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        async move {
            let bytes = self.store.get_range(&self.path, range).await?;
            Ok(bytes)
        }
        .boxed()
    }

    /// The bytes of each of `ranges`, in order; ranges close to each other are fetched with
    /// one request (object_store's `get_ranges` coalesces them).
    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        async move {
            let bytes = self.store.get_ranges(&self.path, &ranges).await?;
            Ok(bytes)
        }
        .boxed()
    }

    /// The footer, read with bounded ranges when the file size is known, else with a suffix
    /// request. Page indexes are read only when `options` ask for them (their
    /// `column_index_policy` / `offset_index_policy`, and masks), as are the metadata options.
    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        async move {
            let reader = ParquetMetaDataReader::new()
                .with_column_index_policy(PageIndexPolicy::Skip)
                .with_offset_index_policy(PageIndexPolicy::Skip)
                .with_arrow_reader_options(options);
            let file_size = self.file_size;
            let metadata = match file_size {
                Some(size) => reader.load_and_finish(self, size).await?,
                None => reader.load_via_suffix_and_finish(self).await?,
            };
            check_column_chunks(&metadata, file_size)?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// Refuses a footer whose column chunks have a negative offset or size, or (when the file size
/// is known) end past the file: the parquet crate panics on a negative range when it reads the
/// chunk (`ColumnChunkMetaData::byte_range`), and a corrupt file must be an error instead.
fn check_column_chunks(metadata: &ParquetMetaData, file_size: Option<u64>) -> ParquetResult<()> {
    for (group, row_group) in metadata.row_groups().iter().enumerate() {
        for (index, column) in row_group.columns().iter().enumerate() {
            let start = column
                .dictionary_page_offset()
                .unwrap_or(column.data_page_offset());
            let length = column.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(length).ok())
                .and_then(|(start, length)| start.checked_add(length));
            let fits = match (end, file_size) {
                (Some(end), Some(size)) => end <= size,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !fits {
                return Err(ParquetError::General(format!(
                    "column chunk {index} of row group {group} claims {length} bytes at offset \
                     {start}, outside the file"
                )));
            }
        }
    }
    Ok(())
}

impl MetadataSuffixFetch for &mut ParquetReader {
    /// The last `suffix` bytes of the object.
    fn fetch_suffix(&mut self, suffix: usize) -> BoxFuture<'_, ParquetResult<Bytes>> {
        let options = GetOptions {
            range: Some(GetRange::Suffix(suffix as u64)),
            ..GetOptions::default()
        };
        async move {
            let result = self.store.get_opts(&self.path, options).await?;
            result.bytes().await.map_err(ParquetError::from)
        }
        .boxed()
    }
}

/// The store's "this object does not exist" inside a Parquet read error of `path`, as the
/// [`crate::error::Error::Storage`] it is (so a missing file is reported as missing, not as a
/// corrupt one); `None` for every other error.
pub(crate) fn not_found_in(error: &ParquetError, path: &str) -> Option<crate::error::Error> {
    let ParquetError::External(source) = error else {
        return None;
    };
    match source.downcast_ref::<object_store::Error>()? {
        object_store::Error::NotFound { path: _, source } => Some(crate::error::Error::storage(
            path,
            object_store::Error::NotFound {
                path: path.to_string(),
                source: source.to_string().into(),
            },
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use futures::TryStreamExt;
    use object_store::memory::InMemory;
    use object_store::PutPayload;
    use parquet::arrow::arrow_reader::ArrowReaderMetadata;
    use parquet::arrow::{ArrowWriter, ParquetRecordBatchStreamBuilder};
    use parquet::file::properties::WriterProperties;
    use url::Url;

    use super::*;
    use crate::storage::Storage;

    /// A Parquet file of `rows` rows (`id`, `name`) in row groups of 100 rows, with page
    /// indexes.
    fn parquet_file(rows: i64) -> Bytes {
        let ids = Int64Array::from_iter_values(0..rows);
        let names = StringArray::from_iter_values((0..rows).map(|i| format!("row {i}")));
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(ids) as _),
            ("name", Arc::new(names) as _),
        ])
        .unwrap();
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build();
        let mut bytes = Vec::new();
        let mut writer =
            ArrowWriter::try_new(&mut bytes, batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        Bytes::from(bytes)
    }

    async fn storage_with(path: &Path, bytes: Bytes) -> Storage {
        let store = Arc::new(InMemory::new());
        store.put(path, PutPayload::from(bytes)).await.unwrap();
        let url = Url::parse("memory:///t/").unwrap();
        Storage::with_store(store, url, Path::from("t"))
    }

    #[tokio::test]
    async fn ranges_come_back_in_order_and_exact() {
        let path = Path::from("t/data.parquet");
        let bytes = Bytes::from((0..=255u8).cycle().take(10_000).collect::<Vec<u8>>());
        let storage = storage_with(&path, bytes.clone()).await;
        let mut reader = storage.parquet_reader(&path, Some(bytes.len() as u64));
        assert_eq!(reader.get_bytes(10..20).await.unwrap(), bytes.slice(10..20));
        let ranges = vec![5000..5010, 0..3, 3..9, 9_990..10_000];
        let got = reader.get_byte_ranges(ranges.clone()).await.unwrap();
        let expected: Vec<Bytes> = ranges
            .iter()
            .map(|r| bytes.slice(r.start as usize..r.end as usize))
            .collect();
        assert_eq!(got, expected);
        let read = storage.read_ranges(&path, &ranges).await.unwrap();
        assert_eq!(read, expected);
    }

    #[tokio::test]
    async fn metadata_is_read_with_or_without_a_known_size() {
        let path = Path::from("t/data.parquet");
        let file = parquet_file(250);
        let storage = storage_with(&path, file.clone()).await;
        for size in [Some(file.len() as u64), None] {
            let mut reader = storage.parquet_reader(&path, size);
            assert_eq!(reader.file_size(), size);
            let metadata = reader.get_metadata(None).await.unwrap();
            assert_eq!(metadata.num_row_groups(), 3);
            assert_eq!(metadata.file_metadata().num_rows(), 250);
            assert!(metadata.page_index().is_none());
        }
    }

    #[tokio::test]
    async fn page_indexes_are_read_when_the_options_ask() {
        let path = Path::from("t/data.parquet");
        let file = parquet_file(250);
        let storage = storage_with(&path, file.clone()).await;
        let mut reader = storage.parquet_reader(&path, Some(file.len() as u64));
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let metadata = reader.get_metadata(Some(&options)).await.unwrap();
        assert!(metadata.page_index().is_some());
    }

    #[tokio::test]
    async fn a_file_decodes_through_the_reader() {
        let path = Path::from("t/data.parquet");
        let file = parquet_file(250);
        let storage = storage_with(&path, file.clone()).await;
        let mut reader = storage.parquet_reader(&path, Some(file.len() as u64));
        let metadata = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
            .await
            .unwrap();
        let batches: Vec<RecordBatch> =
            ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
                .with_row_groups(vec![1, 2])
                .build()
                .unwrap()
                .try_collect()
                .await
                .unwrap();
        let ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                ids.values().to_vec()
            })
            .collect();
        assert_eq!(ids, (100..250).collect::<Vec<i64>>());
    }

    #[tokio::test]
    async fn a_missing_file_is_a_store_error() {
        let storage = Storage::open("memory:///t/", &HashMap::new()).unwrap();
        let path = Path::from("t/missing.parquet");
        let mut reader = storage.parquet_reader(&path, Some(1000));
        let error = reader.get_metadata(None).await.unwrap_err();
        let ParquetError::External(source) = error else {
            panic!("{error}");
        };
        assert!(source.downcast_ref::<object_store::Error>().is_some());
    }
}
