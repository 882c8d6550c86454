//! `RawDeltaTable`: a handle on a table location, wrapped by `deltalog.DeltaTable`.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use deltalog_core::{ChangeScan, ChangesOptions, Table};
use pyo3::prelude::*;

use crate::arrow_export::RawArrowStream;
use std::collections::HashMap;

use deltalog_core::ops::{CreateMode, CreateTable};

use crate::arrow_import::PyArrowInput;
use crate::convert::{
    write_options, PyCommitInfo, PyFilter, PySchemaInput, PySnapshotAt, PyStorageOptions,
    PyTimeZone,
};
use crate::errors::{failure_to_py_err, to_py_err};
use crate::results::RawCommit;
use crate::runtime::wait_for_future;
use crate::snapshot::RawSnapshot;

/// An opened Delta table (core [`Table`]); cheap to clone, shared between snapshots.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawDeltaTable {
    inner: Table,
}

impl RawDeltaTable {
    /// Wraps a core table.
    pub fn new(inner: Table) -> Self {
        RawDeltaTable { inner }
    }

    /// The core table.
    pub fn table(&self) -> &Table {
        &self.inner
    }
}

#[pymethods]
impl RawDeltaTable {
    /// Opens the table at `uri` (see [`Table::open`]).
    #[staticmethod]
    #[pyo3(signature = (uri, storage_options=None))]
    fn open(
        py: Python<'_>,
        uri: String,
        storage_options: Option<PyStorageOptions>,
    ) -> PyResult<Self> {
        let options = PyStorageOptions::or_empty(storage_options);
        wait_for_future(py, move || async move { Table::open(&uri, &options).await }).map(Self::new)
    }

    /// Creates the table at `uri` with `schema` (see [`create_table`]; `mode` is `error`,
    /// `ignore` or `overwrite`) and opens it.
    #[staticmethod]
    #[pyo3(signature = (uri, schema, partition_by=None, configuration=None, name=None, description=None, mode="error", storage_options=None, cluster_by=None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        uri: String,
        schema: PySchemaInput,
        partition_by: Option<Vec<String>>,
        configuration: Option<HashMap<String, String>>,
        name: Option<String>,
        description: Option<String>,
        mode: &str,
        storage_options: Option<PyStorageOptions>,
        cluster_by: Option<Vec<String>>,
    ) -> PyResult<(Self, RawCommit)> {
        let mode = CreateMode::parse(mode).map_err(|error| to_py_err(py, error))?;
        let (partition_by, configuration) = (
            partition_by.unwrap_or_default(),
            configuration.unwrap_or_default(),
        );
        let create = CreateTable {
            schema: schema.0,
            partition_by,
            configuration,
            name,
            description,
            cluster_by: cluster_by.unwrap_or_default(),
        };
        let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
        let done = wait_for_future(py, || async { table.create_table(create, mode).await })?;
        Ok((Self::new(table), RawCommit::from(done)))
    }

    /// Writes `data` to the table at `uri`, creating it when absent (see [`write_table`]);
    /// the table written and its commit.
    #[staticmethod]
    #[pyo3(signature = (uri, data, mode="append", partition_by=None, predicate=None, schema_mode=None, configuration=None, target_file_size=None, app_id=None, app_version=None, commit_info=None, storage_options=None, predicate_check=true, cluster_by=None, post_commit_checkpoint=true))]
    #[allow(clippy::too_many_arguments)]
    fn write_table(
        py: Python<'_>,
        uri: String,
        data: PyArrowInput,
        mode: &str,
        partition_by: Option<Vec<String>>,
        predicate: Option<PyFilter>,
        schema_mode: Option<&str>,
        configuration: Option<HashMap<String, String>>,
        target_file_size: Option<u64>,
        app_id: Option<String>,
        app_version: Option<i64>,
        commit_info: Option<PyCommitInfo>,
        storage_options: Option<PyStorageOptions>,
        predicate_check: bool,
        cluster_by: Option<Vec<String>>,
        post_commit_checkpoint: bool,
    ) -> PyResult<(Self, RawCommit)> {
        let (predicate, app) = (PyFilter::expr(predicate), (app_id, app_version));
        let options = write_options(
            mode,
            partition_by,
            predicate,
            schema_mode,
            configuration,
            target_file_size,
            app.0,
            app.1,
            commit_info,
        );
        let mut options = options.map_err(|error| to_py_err(py, error))?;
        options.skip_predicate_check = !predicate_check;
        options.cluster_by = cluster_by;
        options.post_commit.checkpoint = post_commit_checkpoint;
        let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
        let (schema, stream) = (data.schema.clone(), data.into_stream());
        let writer = table.clone();
        let outcome = wait_for_future(py, move || async move {
            Ok(writer.write(schema, stream, options).await)
        })?;
        let commit = outcome.map_err(|failure| failure_to_py_err(py, failure))?;
        Ok((Self::new(table), RawCommit::from(commit)))
    }

    /// The table root as a URL ending in '/'.
    #[getter]
    fn uri(&self) -> &str {
        self.inner.uri()
    }

    /// The newest version in the log.
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        let table = self.inner.clone();
        wait_for_future(py, move || async move { table.latest_version().await })
    }

    /// The snapshot at `version`, or the newest committed at or before `timestamp_ms`, or the
    /// latest when neither is given; with `filter`, holding only the files that may match it
    /// (see [`Table::snapshot_matching`]).
    #[pyo3(signature = (version=None, timestamp_ms=None, filter=None))]
    fn snapshot(
        &self,
        py: Python<'_>,
        version: Option<u64>,
        timestamp_ms: Option<i64>,
        filter: Option<PyFilter>,
    ) -> PyResult<RawSnapshot> {
        let at = PySnapshotAt::new(py, version, timestamp_ms)?.0;
        let filter = PyFilter::expr(filter);
        let table = self.inner.clone();
        let snapshot = wait_for_future(py, move || async move {
            match filter {
                Some(filter) => table.snapshot_matching(at, &filter).await,
                None => table.lazy_snapshot(at).await,
            }
        })?;
        Ok(RawSnapshot::new(snapshot))
    }

    /// Commit information per version, newest first (see [`Table::history`]).
    #[pyo3(signature = (limit=None))]
    fn history(&self, py: Python<'_>, limit: Option<usize>) -> PyResult<RawArrowStream> {
        let table = self.inner.clone();
        let batch = wait_for_future(py, move || async move { table.history(limit).await })?;
        Ok(RawArrowStream::new(batch.schema(), vec![batch]))
    }

    /// The actions of commits `start..=end`, one batch per commit (see [`Table::commits`]).
    #[pyo3(signature = (start, end=None))]
    fn commits(&self, py: Python<'_>, start: u64, end: Option<u64>) -> PyResult<RawArrowStream> {
        let table = self.inner.clone();
        let batches = wait_for_future(py, move || async move { table.commits(start, end).await })?;
        let schema = batches
            .first()
            .map_or_else(commits_schema, |batch| batch.schema());
        Ok(RawArrowStream::new(schema, batches))
    }

    /// The row changes of commits `start..=end` (change data feed), with `_change_type`,
    /// `_commit_version` and `_commit_timestamp` (see [`ChangeScan`]), planned now and read
    /// as the consumer pulls them.
    #[pyo3(signature = (start, end=None, columns=None, filter=None, timezone=None))]
    fn changes(
        &self,
        py: Python<'_>,
        start: u64,
        end: Option<u64>,
        columns: Option<Vec<String>>,
        filter: Option<PyFilter>,
        timezone: Option<PyTimeZone>,
    ) -> PyResult<RawArrowStream> {
        let (filter, timezone) = (PyFilter::expr(filter), PyTimeZone::or_utc(timezone));
        let options = ChangesOptions {
            columns,
            filter,
            timezone,
        };
        let table = self.inner.clone();
        let plan =
            move || async move { ChangeScan::new(table.storage(), start, end, options).await };
        let changes = wait_for_future(py, plan)?;
        Ok(RawArrowStream::lazy(changes.schema(), move || {
            changes.stream()
        }))
    }
}

/// The schema of [`Table::commits`] batches, for a range that holds no commit.
fn commits_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new("action", DataType::Utf8, false),
        Field::new("json", DataType::Utf8, false),
    ]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn empty_commit_range_has_the_documented_columns() {
        let names: Vec<_> = commits_schema()
            .fields()
            .iter()
            .map(|field| field.name().clone())
            .collect();
        assert_eq!(names, ["version", "action", "json"]);
    }
}
