//! `deltalog._core`: the extension module behind the `deltalog` Python package.
//!
//! This crate only registers things and moves values across. Every decision about Delta tables lives in
//! `deltalog-core`; here core values are wrapped in frozen Python classes, futures are run on
//! one shared runtime (`runtime`), core errors become the `deltalog.exceptions` hierarchy
//! (`errors`), arguments become core values in `convert` and Arrow data leaves through
//! the PyCapsule interface (`arrow_export`). The modules depend in one direction:
//! `table` -> `alter` -> `transaction` -> `snapshot` -> `scan` -> {`convert`, `arrow_export`,
//! `arrow_import`, `errors`, `runtime`}; `checkpoint` (module functions) -> `table`, and
//! `transaction` -> `post_commit`.

mod alter;
mod arrow_export;
mod arrow_import;
mod checkpoint;
mod clone;
mod convert;
mod dml;
mod errors;
mod maintenance;
mod merge;
mod results;
mod runtime;
mod scan;
mod snapshot;
mod spark_change;
mod spark_optimize;
mod spark_stream;
mod spark_write;
mod table;
mod transaction;

use pyo3::prelude::*;

/// The module `deltalog._core`. Importing it starts no threads: the runtime is created on the
/// first call that needs it.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add(
        "DEFAULT_TARGET_SIZE",
        deltalog_core::scan::DEFAULT_TARGET_SIZE,
    )?;
    module.add("DEFAULT_OPEN_COST", deltalog_core::scan::DEFAULT_OPEN_COST)?;
    module.add_function(wrap_pyfunction!(parse_timestamp_ms, module)?)?;
    module.add_function(wrap_pyfunction!(arrow_export::read_schema_json, module)?)?;
    module.add_class::<table::RawDeltaTable>()?;
    module.add_class::<snapshot::RawSnapshot>()?;
    module.add_class::<arrow_export::RawSchema>()?;
    module.add_class::<arrow_export::RawArrowStream>()?;
    module.add_class::<scan::RawScan>()?;
    module.add_class::<transaction::RawTransaction>()?;
    results::register(module)?;
    spark_write::register(module)?;
    spark_change::register(module)?;
    spark_optimize::register(module)?;
    spark_stream::register(module)?;
    module.add_function(wrap_pyfunction!(maintenance::vacuum, module)?)?;
    module.add_function(wrap_pyfunction!(maintenance::optimize, module)?)?;
    module.add_function(wrap_pyfunction!(maintenance::restore, module)?)?;
    module.add_function(wrap_pyfunction!(clone::shallow_clone, module)?)?;
    module.add_function(wrap_pyfunction!(maintenance::convert_to_delta, module)?)?;
    module.add_function(wrap_pyfunction!(
        maintenance::generate_symlink_manifest,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(checkpoint::write_checkpoint, module)?)?;
    module.add_function(wrap_pyfunction!(checkpoint::cleanup_metadata, module)?)?;
    module.add_function(wrap_pyfunction!(checkpoint::compact_logs, module)?)?;
    module.add_function(wrap_pyfunction!(checkpoint::version_checksum, module)?)?;
    module.add_function(wrap_pyfunction!(checkpoint::validate_checksum, module)?)?;
    module.add_class::<alter::RawAlter>()?;
    module.add_function(wrap_pyfunction!(dml::delete_rows, module)?)?;
    module.add_function(wrap_pyfunction!(dml::update_rows, module)?)?;
    module.add_function(wrap_pyfunction!(merge::merge_rows, module)?)?;
    Ok(())
}

/// Milliseconds since the epoch of a user-given time text (an ISO-8601 date or timestamp; UTC
/// without a zone), read by the core's one timestamp grammar.
#[pyfunction]
fn parse_timestamp_ms(py: Python<'_>, text: &str) -> PyResult<i64> {
    deltalog_core::scalar::parse_user_timestamp_ms(text)
        .map_err(|error| errors::to_py_err(py, error))
}
