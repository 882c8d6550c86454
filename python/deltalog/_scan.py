"""Reading a snapshot's rows: :class:`Scan` and :func:`read_table`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, final

from . import _core
from ._arrow import ArrowStream, _import_pyarrow
from ._frozen import Frozen

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from ._table import Snapshot

__all__ = ["Filter", "Scan", "read_table"]

#: A filter: SQL-like text (``"x > 5 AND p IN ('a', 'b')"``), or pyarrow's DNF form: a list of
#: ``(column, op, value)`` tuples (AND), or a list of such lists (OR of ANDs).
Filter: TypeAlias = str | Sequence[Any] | None


@final
class Scan(Frozen):
    """A planned read of a snapshot's rows, from :meth:`Snapshot.scan`.

    Partition pruning and statistics skipping happened when it was planned; :meth:`files`
    shows the files left. The rows are read when asked for: ``pyarrow.table(scan)`` (or any
    consumer of ``__arrow_c_stream__``) streams them lazily in bounded memory, several files
    at once; :meth:`to_pyarrow` and :meth:`to_pandas` read them all.
    """

    __slots__ = ("_raw",)
    _wraps: ClassVar[type] = _core.RawScan

    _raw: _core.RawScan

    def __init__(self, raw: _core.RawScan) -> None:
        object.__setattr__(self, "_raw", raw)

    def files(self) -> ArrowStream:
        """The data files this scan reads (the snapshot's file list, after skipping)."""
        return ArrowStream(self._raw.files())

    @property
    def column_names(self) -> list[str]:
        """The names of the output columns."""
        return self._raw.column_names

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The rows as an ``ArrowArrayStream`` PyCapsule, read lazily as it is consumed."""
        return self._raw.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """The schema of the rows as an ``ArrowSchema`` PyCapsule."""
        return self._raw.__arrow_c_schema__()

    def to_batches(self) -> ArrowStream:
        """Every row, read now and held in memory; errors keep their deltalog class."""
        return ArrowStream(self._raw.to_batches())

    def to_pyarrow(self) -> pyarrow.Table:
        """Every row as a ``pyarrow.Table`` (needs pyarrow)."""
        return self.to_batches().to_pyarrow()

    def to_pandas(self) -> pandas.DataFrame:
        """Every row as a ``pandas.DataFrame`` (needs pandas and pyarrow)."""
        return self.to_pyarrow().to_pandas()


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
    from ._table import DeltaTable

    _import_pyarrow()
    table = DeltaTable(uri, storage_options=storage_options)
    snapshot: Snapshot = table.snapshot(version, timestamp=timestamp)
    return snapshot.scan(columns=columns, filter=filter, timezone=timezone).to_pyarrow()
