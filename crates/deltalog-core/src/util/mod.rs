//! Small helpers every layer uses: running CPU work off the async runtime (`cpu`) and the
//! clock (`time`).

#[cfg(feature = "internal-api")]
pub mod cpu;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod cpu;
#[cfg(feature = "internal-api")]
pub mod time;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod time;
