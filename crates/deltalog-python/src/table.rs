//! `RawDeltaTable`: a handle on a table location, wrapped by `deltalog.DeltaTable`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use deltalog_core::{Error, SnapshotAt, Table};
use pyo3::prelude::*;

use crate::arrow_export::RawArrowStream;
use crate::errors::to_py_err;
use crate::filter::filter_from_py;
use crate::runtime::wait_for_future;
use crate::snapshot::RawSnapshot;
use deltalog_core::changes::{ChangeScan, ChangesOptions};
use deltalog_core::partition::SessionTimeZone;

/// An opened Delta table (core [`Table`]); cheap to clone, shared between snapshots.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawDeltaTable {
    inner: Table,
}

impl RawDeltaTable {
    fn new(inner: Table) -> Self {
        RawDeltaTable { inner }
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
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        wait_for_future(py, move || async move { Table::open(&uri, &options).await }).map(Self::new)
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
        filter: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RawSnapshot> {
        let at = snapshot_at(version, timestamp_ms).map_err(|error| to_py_err(py, error))?;
        let filter = filter_from_py(filter)?;
        let table = self.inner.clone();
        let snapshot = wait_for_future(py, move || async move {
            match filter {
                Some(filter) => table.snapshot_matching(at, &filter).await,
                None => table.snapshot(at).await,
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
    /// `_commit_version` and `_commit_timestamp` (see [`ChangeScan`]).
    #[pyo3(signature = (start, end=None, columns=None, filter=None, timezone=None))]
    fn changes(
        &self,
        py: Python<'_>,
        start: u64,
        end: Option<u64>,
        columns: Option<Vec<String>>,
        filter: Option<&Bound<'_, PyAny>>,
        timezone: Option<&str>,
    ) -> PyResult<RawArrowStream> {
        let options = ChangesOptions {
            columns,
            filter: filter_from_py(filter)?,
            timezone: session_time_zone(py, timezone)?,
        };
        let table = self.inner.clone();
        let (schema, batches) = wait_for_future(py, move || async move {
            let changes = ChangeScan::new(&table, start, end, options).await?;
            Ok((changes.schema(), changes.to_batches().await?))
        })?;
        Ok(RawArrowStream::new(schema, batches))
    }
}

/// The session time zone named `name` (UTC when `None`).
pub fn session_time_zone(py: Python<'_>, name: Option<&str>) -> PyResult<SessionTimeZone> {
    match name {
        Some(name) => SessionTimeZone::parse(name).map_err(|error| to_py_err(py, error)),
        None => Ok(SessionTimeZone::utc()),
    }
}

/// Which snapshot the arguments name; both at once is the caller's mistake.
fn snapshot_at(version: Option<u64>, timestamp_ms: Option<i64>) -> Result<SnapshotAt, Error> {
    match (version, timestamp_ms) {
        (None, None) => Ok(SnapshotAt::Latest),
        (Some(version), None) => Ok(SnapshotAt::Version(version)),
        (None, Some(timestamp_ms)) => Ok(SnapshotAt::Timestamp(timestamp_ms)),
        (Some(_), Some(_)) => Err(Error::InvalidArgument(
            "give a version or a timestamp, not both".to_string(),
        )),
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
    fn snapshot_at_picks_latest_version_or_timestamp() {
        assert!(matches!(snapshot_at(None, None), Ok(SnapshotAt::Latest)));
        assert!(matches!(
            snapshot_at(Some(3), None),
            Ok(SnapshotAt::Version(3))
        ));
        assert!(matches!(
            snapshot_at(None, Some(-5)),
            Ok(SnapshotAt::Timestamp(-5))
        ));
    }

    #[test]
    fn snapshot_at_refuses_version_and_timestamp_together() {
        let error = snapshot_at(Some(1), Some(2)).err().unwrap();
        assert!(matches!(error, Error::InvalidArgument(message) if message.contains("not both")));
    }

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
