//! `shallow_clone`: delta-spark's `DeltaTable.clone` (shallow), wrapped by
//! `deltalog.DeltaTable.clone` and `deltalog.spark.DeltaTable.clone`.

use std::collections::HashMap;

use deltalog_core::ops::CloneOptions;
use deltalog_core::{SnapshotAt, Table};
use pyo3::prelude::*;

use crate::convert::PyStorageOptions;
use crate::runtime::wait_for_future;
use crate::table::RawDeltaTable;

/// Shallow-clones `table` at `version`, or at the version of `timestamp_ms` (else the latest),
/// to `target` in one `CLONE` commit (see [`deltalog_core::ops::shallow_clone`]); returns the
/// target table.
#[pyfunction]
#[pyo3(signature = (
    table, target, version=None, timestamp_ms=None, replace=false, properties=None,
    target_storage_options=None
))]
#[allow(clippy::too_many_arguments)]
pub fn shallow_clone(
    py: Python<'_>,
    table: &RawDeltaTable,
    target: String,
    version: Option<u64>,
    timestamp_ms: Option<i64>,
    replace: bool,
    properties: Option<HashMap<String, String>>,
    target_storage_options: Option<PyStorageOptions>,
) -> PyResult<RawDeltaTable> {
    let at = match (version, timestamp_ms) {
        (Some(version), _) => SnapshotAt::Version(version),
        (None, Some(ms)) => SnapshotAt::Timestamp(ms),
        (None, None) => SnapshotAt::Latest,
    };
    let target = Table::from_storage(PyStorageOptions::storage(
        py,
        &target,
        target_storage_options,
    )?);
    let options = CloneOptions {
        replace,
        properties: properties.unwrap_or_default(),
    };
    let (source, cloned) = (table.table().clone(), target.clone());
    wait_for_future(py, move || async move {
        source.shallow_clone(at, &cloned, &options).await
    })?;
    Ok(RawDeltaTable::new(target))
}
