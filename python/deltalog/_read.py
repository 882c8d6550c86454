"""Reading a table in one call: :func:`read_table`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ._arrow import _import_pyarrow
from ._scan import Filter
from ._table import DeltaTable

if TYPE_CHECKING:
    import pyarrow

__all__ = ["read_table"]


def read_table(
    uri: str,
    version: int | None = None,
    columns: Sequence[str] | None = None,
    filter: Filter = None,
    *,
    timestamp: datetime | str | None = None,
    timezone: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> pyarrow.Table:
    """Reads a table's rows into a ``pyarrow.Table`` in one call.

    ``version`` or ``timestamp`` pick the snapshot (default: the latest); ``columns``,
    ``filter`` and ``timezone`` are those of :meth:`Snapshot.scan`.
    """
    _import_pyarrow()
    table = DeltaTable(uri, storage_options=storage_options)
    snapshot = table.snapshot(version, timestamp=timestamp)
    return snapshot.scan(columns=columns, filter=filter, timezone=timezone).to_pyarrow()
