//! The one way CPU-heavy work (decoding commits and checkpoint row groups, replaying file
//! actions) runs from async code: [`run`] hands a closure to the rayon pool and awaits its result
//! through a oneshot channel, so the thread polling the future (a tokio worker, or whatever
//! executor the caller drives) is never blocked by it.
//!
//! Why the rayon pool rather than `tokio::task::spawn_blocking`:
//! - it needs no tokio runtime: the futures and streams of this crate also run under
//!   `futures::executor::block_on`, where `spawn_blocking` would panic;
//! - it holds one thread per core, the right number for CPU work, where tokio's blocking pool
//!   grows to hundreds of threads that would oversubscribe the cores;
//! - a job that uses rayon itself (`par_iter` over commits or checkpoint batches) runs its
//!   parallel parts on the same pool without handing work between two pools.
//!
//! Async code never calls rayon (or any long computation) directly; it calls [`run`].

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Result};

/// Runs `job` on the rayon pool and returns its result once it is done, without blocking the
/// calling thread while it runs.
///
/// A job that panics, or that the pool drops without running, becomes the error `on_failure`
/// makes of a message saying so (the panic's message when it has one); the panic never reaches
/// the caller. Dropping the returned future does not stop a job that has started: it runs to its
/// end and its result is dropped.
pub(crate) async fn run<T, F, E>(job: F, on_failure: E) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
    E: FnOnce(String) -> Error + Send,
{
    let (sender, receiver) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(job));
        let _ = sender.send(outcome);
    });
    match receiver.await {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => Err(on_failure(format!(
            "a CPU job panicked: {}",
            panic_message(panic.as_ref())
        ))),
        Err(_) => Err(on_failure(
            "a CPU job was dropped before it finished".into(),
        )),
    }
}

/// The message of a panic payload (`panic!` with a literal or a formatted string).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "no message"
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    fn failed(reason: String) -> Error {
        Error::corrupt("job", reason)
    }

    #[tokio::test]
    async fn the_result_comes_back() {
        let sum = run(|| Ok((1..=1000u64).into_par_iter().sum::<u64>()), failed).await;
        assert_eq!(sum.unwrap(), 500_500);
    }

    #[tokio::test]
    async fn errors_of_the_job_come_back_unchanged() {
        let result: Result<()> = run(|| Err(Error::InvalidArgument("bad".into())), failed).await;
        assert!(matches!(result, Err(Error::InvalidArgument(message)) if message == "bad"));
    }

    #[tokio::test]
    async fn a_panic_becomes_the_failure_error() {
        let result: Result<()> = run(|| panic!("boom {}", 7), failed).await;
        let Err(Error::CorruptLogFile { path, reason }) = result else {
            panic!("{result:?}");
        };
        assert_eq!(path, "job");
        assert!(reason.contains("boom 7"), "{reason}");
    }

    #[test]
    fn runs_without_a_tokio_runtime() {
        let result = futures::executor::block_on(run(|| Ok(42), failed));
        assert_eq!(result.unwrap(), 42);
    }

    #[test]
    fn run_futures_can_be_spawned() {
        fn assert_send<T: Send>(_: &T) {}
        let future = run(|| Ok(1), failed);
        assert_send(&future);
    }
}
