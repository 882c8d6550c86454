//! `RawTransaction`: a pending write to a table, wrapped by `deltalog.Transaction`.

use std::sync::{Mutex, MutexGuard, PoisonError};

use deltalog_core::distributed::adds_from_file_list;
use deltalog_core::ops::parse_isolation_level;
use deltalog_core::transaction::{MetadataUpdate, TableTransaction};
use deltalog_core::write::WriteFailure;
use deltalog_core::{Error, WriterOptions};
use pyo3::prelude::*;

use crate::arrow_import::PyArrowInput;
use crate::convert::{PyFilter, PySchemaInput};
use crate::errors::{failure_to_py_err, to_py_err};
use crate::results::RawCommit;
use crate::runtime::wait_for_future;
use crate::snapshot::RawSnapshot;

/// A core [`TableTransaction`]; gone once committed.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawTransaction {
    inner: Mutex<Option<TableTransaction>>,
}

#[pymethods]
impl RawTransaction {
    /// A transaction reading `snapshot`, for `operation`, under `isolation_level` (the
    /// table's when `None`).
    #[staticmethod]
    #[pyo3(signature = (snapshot, operation="WRITE", isolation_level=None))]
    fn start(
        py: Python<'_>,
        snapshot: &RawSnapshot,
        operation: &str,
        isolation_level: Option<&str>,
    ) -> PyResult<Self> {
        let mut transaction = snapshot.snapshot().transaction(operation);
        if let Some(level) = isolation_level {
            let level = parse_isolation_level(level).map_err(|e| to_py_err(py, e))?;
            transaction = transaction.with_isolation_level(level);
        }
        let inner = TableTransaction::new(transaction, WriterOptions::default());
        Ok(RawTransaction {
            inner: Mutex::new(Some(inner)),
        })
    }

    /// The version read.
    #[getter]
    fn read_version(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.with(py, |tx| Ok(tx.transaction().read_version()))
    }

    /// Writes `data` to new data files and stages their adds; returns how many files.
    fn write(&self, py: Python<'_>, data: PyArrowInput) -> PyResult<usize> {
        let (mut tx, stream) = (self.take(py)?, data.into_stream());
        let (tx, outcome) = wait_for_future(py, move || async move {
            let outcome = tx.write(stream).await;
            Ok((tx, outcome))
        })?;
        *lock(&self.inner) = Some(tx);
        outcome.map_err(|failure| failure_to_py_err(py, failure))
    }

    /// Stages adds of files written elsewhere, given as Arrow rows of the file-list shape.
    fn add_files(&self, py: Python<'_>, files: PyArrowInput) -> PyResult<usize> {
        let batches = files.collect().map_err(|e| to_py_err(py, e))?;
        self.with(py, |tx| {
            let adds = batches
                .iter()
                .map(adds_from_file_list)
                .collect::<Result<Vec<_>, _>>()?;
            let adds: Vec<_> = adds.into_iter().flatten().collect();
            tx.transaction_mut().add(&adds).map(|()| adds.len())
        })
    }

    /// Stages removes of the files matching `filter` (partition columns; every file when
    /// `None`), or of the files at `paths`; returns how many.
    #[pyo3(signature = (filter=None, paths=None))]
    fn remove_files(
        &self,
        py: Python<'_>,
        filter: Option<PyFilter>,
        paths: Option<Vec<String>>,
    ) -> PyResult<usize> {
        let (mut tx, filter) = (self.take(py)?, PyFilter::expr(filter));
        let (tx, outcome) = wait_for_future(py, move || async move {
            let staging = tx.transaction_mut();
            let outcome = match &paths {
                Some(paths) => {
                    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
                    staging.remove_paths(&paths, true).await
                }
                None => staging.remove_where(filter.as_ref(), true).await,
            };
            Ok((tx, outcome))
        })?;
        *lock(&self.inner) = Some(tx);
        outcome.map_err(|error| to_py_err(py, error))
    }

    /// Records a read of the rows matching `filter` (every row when `None`) for conflict
    /// checks; returns how many files were read.
    #[pyo3(signature = (filter=None))]
    fn record_read(&self, py: Python<'_>, filter: Option<PyFilter>) -> PyResult<usize> {
        let (mut tx, filter) = (self.take(py)?, PyFilter::expr(filter));
        let (tx, outcome) = wait_for_future(py, move || async move {
            let outcome = tx.transaction_mut().record_read(filter.as_ref()).await;
            Ok((tx, outcome))
        })?;
        *lock(&self.inner) = Some(tx);
        outcome.map_err(|error| to_py_err(py, error))
    }

    /// Stages the `txn` of `app_id` at `version`.
    fn set_app_version(&self, py: Python<'_>, app_id: &str, version: i64) -> PyResult<()> {
        self.with(py, |tx| {
            tx.transaction_mut().set_app_version(app_id, version)
        })
    }

    /// The version of `app_id` in the version read, recorded as read.
    fn app_version(&self, py: Python<'_>, app_id: &str) -> PyResult<Option<i64>> {
        self.with(py, |tx| Ok(tx.transaction_mut().app_version(app_id)))
    }

    /// Stages `domain` set to `configuration`, or removed (`None`).
    #[pyo3(signature = (domain, configuration))]
    fn set_domain_metadata(
        &self,
        py: Python<'_>,
        domain: &str,
        configuration: Option<String>,
    ) -> PyResult<()> {
        self.with(py, |tx| {
            tx.transaction_mut()
                .set_domain_metadata(domain, configuration)
        })
    }

    /// Stages a metadata change (`None` values of `configuration` remove keys).
    #[pyo3(signature = (schema=None, configuration=None, name=None, description=None))]
    fn update_metadata(
        &self,
        py: Python<'_>,
        schema: Option<PySchemaInput>,
        configuration: Option<Vec<(String, Option<String>)>>,
        name: Option<String>,
        description: Option<String>,
    ) -> PyResult<()> {
        let update = MetadataUpdate {
            schema: schema.map(|schema| schema.0),
            configuration: configuration.unwrap_or_default(),
            name,
            description,
        };
        self.with(py, |tx| tx.transaction_mut().update_metadata(update))
    }

    /// Commits; the transaction cannot be used afterwards.
    fn commit(&self, py: Python<'_>) -> PyResult<RawCommit> {
        let tx = self.take(py)?;
        let outcome = wait_for_future(py, move || async move { Ok(tx.commit().await) })?;
        outcome
            .map(RawCommit::from)
            .map_err(|failure: WriteFailure| failure_to_py_err(py, failure))
    }

    /// The data files written so far and not yet committed.
    fn written_files(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |tx| Ok(tx.written_files().to_vec()))
    }
}

impl RawTransaction {
    /// The transaction, taken out while a call works on it without the lock.
    fn take(&self, py: Python<'_>) -> PyResult<TableTransaction> {
        let taken = lock(&self.inner).take();
        taken.ok_or_else(|| to_py_err(py, committed_already()))
    }

    /// Runs `action` on the transaction, unless it was committed.
    fn with<T>(
        &self,
        py: Python<'_>,
        action: impl FnOnce(&mut TableTransaction) -> Result<T, Error>,
    ) -> PyResult<T> {
        let mut guard = lock(&self.inner);
        let tx = guard.as_mut().ok_or_else(committed_already);
        tx.and_then(action).map_err(|error| to_py_err(py, error))
    }
}

fn lock(inner: &Mutex<Option<TableTransaction>>) -> MutexGuard<'_, Option<TableTransaction>> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

fn committed_already() -> Error {
    Error::NotAllowed("the transaction was committed already, or is busy in another thread".into())
}
