//! Tables the tests of the row-level operations start from and read back: real Parquet
//! files in a local folder, written and scanned by this crate.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};

use crate::ops::{write_table, WriteTableOptions};
use crate::scan::{Scan, ScanOptions};
use crate::snapshot::SnapshotAt;
use crate::storage::Storage;
use crate::table::Table;

/// One `id` column (Int64, nullable) holding `ids`.
pub(crate) fn ids_batch(ids: impl IntoIterator<Item = i64>) -> RecordBatch {
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(ids));
    RecordBatch::try_from_iter([("id", ids)]).unwrap()
}

/// A new table in `dir` holding `batch` in one commit, with the table properties
/// `configuration`.
pub(crate) async fn table_of(
    dir: &std::path::Path,
    batch: RecordBatch,
    configuration: &[(&str, &str)],
) -> Table {
    let storage = Storage::open(dir.to_str().unwrap(), &HashMap::new()).unwrap();
    let table = Table::from_storage(storage);
    let options = WriteTableOptions {
        configuration: configuration
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..WriteTableOptions::default()
    };
    let stream = futures::stream::iter([Ok(batch.clone())]);
    write_table(table.storage(), batch.schema(), stream, options)
        .await
        .unwrap();
    table
}

/// The values of the first column (Int64) of the latest version of `table`, sorted.
pub(crate) async fn ids(table: &Table) -> Vec<i64> {
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let scan = Scan::new(&snapshot, ScanOptions::default()).await.unwrap();
    let mut ids: Vec<i64> = Vec::new();
    for batch in scan.to_batches().await.unwrap() {
        ids.extend(batch.column(0).as_primitive::<Int64Type>().values());
    }
    ids.sort_unstable();
    ids
}
