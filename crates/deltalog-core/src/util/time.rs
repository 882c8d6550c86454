//! Wall-clock milliseconds, as the log records them (`modificationTime`, `timestamp`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch, now (0 for a clock before the epoch).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, duration_ms)
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
