//! The steps of an OPTIMIZE run by Spark's executors (`deltalog.spark.DeltaTable.optimize()`):
//! a plan made on the driver, one task per bin, one commit on the driver (see the core's
//! [`DistributedOptimize`]). Plans and outcomes travel as JSON text.

use deltalog_core::distributed::{BinOutcome, DistributedOptimize, OptimizeSpec};
use deltalog_core::{Error, Table};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::PyStorageOptions;
use crate::errors::{failure_to_py_err, to_py_err};
use crate::maintenance::OptimizeDict;
use crate::runtime::wait_for_future;

/// Adds this file's functions to the module `deltalog._core`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(plan_distributed_optimize, module)?)?;
    module.add_function(wrap_pyfunction!(rewrite_optimize_bin, module)?)?;
    module.add_function(wrap_pyfunction!(commit_distributed_optimize, module)?)?;
    Ok(())
}

/// Plans OPTIMIZE of the table at `uri` with `spec` (the JSON of the core's
/// `OptimizeSpec`); returns the plan's JSON and its number of bins.
#[pyfunction]
#[pyo3(signature = (uri, spec, storage_options=None))]
pub fn plan_distributed_optimize(
    py: Python<'_>,
    uri: String,
    spec: &str,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<(String, usize)> {
    let spec: OptimizeSpec = serde_json::from_str(spec).map_err(|error| {
        to_py_err(
            py,
            Error::InvalidArgument(format!("OPTIMIZE options: {error}")),
        )
    })?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    wait_for_future(py, move || async move {
        let plan = DistributedOptimize::plan(table.storage(), spec).await?;
        Ok((plan.to_json()?, plan.bin_count()))
    })
}

/// Rewrites bin `bin` of `plan` (one task's share); returns its outcome as JSON bytes.
/// Errors name the files left behind.
#[pyfunction]
#[pyo3(signature = (uri, plan, bin, storage_options=None))]
pub fn rewrite_optimize_bin<'py>(
    py: Python<'py>,
    uri: String,
    plan: &str,
    bin: usize,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<Bound<'py, PyBytes>> {
    let plan = DistributedOptimize::from_json(plan).map_err(|error| to_py_err(py, error))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let outcome = wait_for_future(py, move || async move {
        Ok(plan.rewrite_bin(table.storage(), bin).await)
    })?;
    let outcome = outcome.map_err(|failure| failure_to_py_err(py, failure))?;
    let bytes = serde_json::to_vec(&outcome).map_err(|error| {
        to_py_err(
            py,
            Error::internal_invariant(format!("encoding a bin's outcome: {error}")),
        )
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// Commits the outcomes of every bin (the bytes [`rewrite_optimize_bin`] returned) in one
/// `OPTIMIZE` commit following `plan`; returns the metrics `optimize` returns.
#[pyfunction]
#[pyo3(signature = (uri, plan, outcomes, storage_options=None))]
pub fn commit_distributed_optimize(
    py: Python<'_>,
    uri: String,
    plan: &str,
    outcomes: Vec<Bound<'_, PyBytes>>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<OptimizeDict> {
    let plan = DistributedOptimize::from_json(plan).map_err(|error| to_py_err(py, error))?;
    let outcomes = outcomes
        .iter()
        .map(|bytes| {
            serde_json::from_slice::<BinOutcome>(bytes.as_bytes()).map_err(|error| {
                Error::InvalidArgument(format!("not an OPTIMIZE bin's outcome: {error}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| to_py_err(py, error))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let done = wait_for_future(py, move || async move {
        Ok(plan.commit(table.storage(), outcomes).await)
    })?;
    let done = done.map_err(|failure| failure_to_py_err(py, failure))?;
    Ok(OptimizeDict::new(done, false))
}
