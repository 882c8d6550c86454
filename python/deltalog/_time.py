"""Conversions between Python times and the milliseconds since the epoch the log uses."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from . import _core
from .exceptions import InvalidArgumentError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MILLISECOND = timedelta(milliseconds=1)


def to_epoch_ms(value: datetime | date | str) -> int:
    """Milliseconds since the epoch for ``value``.

    A ``datetime`` without a time zone is UTC, a ``date`` is its midnight in UTC, and a string
    is read as ISO-8601 (``2024-05-01``, ``2024-05-01T12:30:00Z``, ``...+02:00``) by the core's
    timestamp grammar. Sub-millisecond parts are dropped, rounding towards the past.
    """
    if isinstance(value, str):
        return _core.parse_timestamp_ms(value)
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    else:
        kind = type(value).__name__
        raise InvalidArgumentError(
            f"a timestamp must be a datetime, a date or an ISO-8601 string, not {kind}"
        )
    return (moment - _EPOCH) // _MILLISECOND


def from_epoch_ms(milliseconds: int) -> datetime:
    """The timezone-aware UTC ``datetime`` of ``milliseconds`` since the epoch."""
    return _EPOCH + timedelta(milliseconds=milliseconds)
