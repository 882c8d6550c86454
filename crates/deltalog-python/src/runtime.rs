//! The one place where Rust work meets the Python interpreter.
//!
//! Every call into the core runs here: the GIL is released while it works, async work runs on
//! one tokio runtime shared by the process, Ctrl-C is noticed within
//! [`SIGNAL_CHECK_INTERVAL`], and a panic (which the core never means to raise) comes back as
//! `deltalog.InternalError` instead of crossing into Python.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::Runtime;

use crate::errors::{internal_error, to_py_err};

/// How long a blocked call waits before it looks at Python's signal handlers again.
const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The shared runtime and the id of the process that created it.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// Runs the future that `make_future` creates to completion on the shared runtime, with the
/// GIL released.
///
/// The future is created and driven on the calling thread (so it need not be `Send`; the
/// tasks it spawns run on the runtime's workers). Every [`SIGNAL_CHECK_INTERVAL`] the thread
/// re-attaches to run Python's signal handlers: when one raises (Ctrl-C gives
/// `KeyboardInterrupt`) the future is dropped, which cancels it, and that exception is
/// returned. Core errors are mapped by [`to_py_err`]; a panic becomes `InternalError`.
pub fn wait_for_future<M, F, T>(py: Python<'_>, make_future: M) -> PyResult<T>
where
    M: FnOnce() -> F + Send,
    F: Future<Output = deltalog_core::Result<T>>,
    T: Send,
{
    let runtime = shared_runtime()?;
    let outcome = py.detach(move || {
        catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(drive_checking_signals(make_future()))
        }))
    });
    match outcome {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(error))) => Err(to_py_err(py, error)),
        Ok(Err(interrupt)) => Err(interrupt),
        Err(payload) => Err(internal_error(py, &panic_message(payload.as_ref()))),
    }
}

/// The process's runtime, created on first use. A child created by `fork` inherits the
/// parent's runtime without its worker threads, so it gets a runtime of its own; the
/// inherited one is leaked, because shutting it down would wait for threads that do not exist.
pub fn shared_runtime() -> PyResult<Arc<Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((owner, runtime)) = slot.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(runtime));
        }
    }
    if let Some((_, inherited)) = slot.take() {
        std::mem::forget(inherited);
    }
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("deltalog-io")
            .enable_all()
            .build()
            .map_err(|error| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "deltalog cannot start its async runtime: {error}"
                ))
            })?,
    );
    *slot = Some((pid, Arc::clone(&runtime)));
    Ok(runtime)
}

/// Polls `future` to completion, running Python's signal handlers between slices of at most
/// [`SIGNAL_CHECK_INTERVAL`]; the outer `Err` is the exception a handler raised.
async fn drive_checking_signals<F: Future>(future: F) -> PyResult<F::Output> {
    let mut future = pin!(future);
    loop {
        if let Ok(output) = tokio::time::timeout(SIGNAL_CHECK_INTERVAL, future.as_mut()).await {
            return Ok(output);
        }
        Python::attach(|py| py.check_signals())?;
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    format!("deltalog hit an internal error (a bug, please report it): {detail}")
}
