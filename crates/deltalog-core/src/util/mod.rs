//! Small helpers every layer uses: running CPU work off the async runtime (`cpu`), the clock
//! (`time`), JSON text mended before arrow-json decodes it (`json_text`) and a cursor for the
//! decoders that read JSON straight into Arrow builders (`json_cursor`), a Parquet file
//! encoded with its columns in parallel (`parquet_encoder`); for the unit tests,
//! the tables they share (`test_tables`).

#[cfg(feature = "internal-api")]
pub mod cpu;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod cpu;
pub(crate) mod json_cursor;
#[cfg(feature = "internal-api")]
pub mod json_text;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod json_text;
pub(crate) mod parquet_encoder;
#[cfg(feature = "internal-api")]
pub mod time;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod time;

#[cfg(test)]
pub(crate) mod test_tables;
