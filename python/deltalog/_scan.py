"""Reading a snapshot's rows: :class:`Scan` and :func:`read_table`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, final

from . import _core
from ._arrow import ArrowStream, _import_pyarrow
from ._frozen import Frozen
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from ._table import Snapshot

__all__ = ["Filter", "Scan", "ScanTask", "read_table"]

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

    __slots__ = ("_raw", "_source")
    _wraps: ClassVar[type] = _core.RawScan

    _raw: _core.RawScan
    _source: TaskSource

    def __init__(self, raw: _core.RawScan, source: TaskSource) -> None:
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_source", source)

    def files(self) -> ArrowStream:
        """The data files this scan reads (the snapshot's file list, after skipping)."""
        return ArrowStream(self._raw.files())

    @property
    def column_names(self) -> list[str]:
        """The names of the output columns."""
        return self._raw.column_names

    def tasks(self, target_size: int = 128 * 2**20, open_cost: int = 4 * 2**20) -> list[ScanTask]:
        """This scan split into tasks that other processes can read, for a distributed read.

        The files are bin-packed, in file-list order, into tasks of about ``target_size``
        bytes, each file counting its size plus ``open_cost`` (as Spark counts them); a file
        larger than ``target_size`` is a task alone. Every file is in exactly one task; a scan
        with no files has no tasks. Tasks are plain, picklable values: reading one reads its
        files exactly as this scan would, without reading the table's log again.
        """
        if target_size < 1 or open_cost < 0:
            raise InvalidArgumentError("target_size must be positive and open_cost not negative")
        source = self._source
        return [
            ScanTask(
                table_uri=source.table_uri,
                version=source.version,
                num_files=num_files,
                size=size,
                _source=source,
                _files=files,
            )
            for files, num_files, size in self._raw.tasks(target_size, open_cost)
        ]

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


@dataclass(frozen=True)
class TaskSource:
    """What a :class:`ScanTask` needs to plan its scan again elsewhere: the table, the version
    (its protocol and metadata actions as JSON) and the scan's options."""

    table_uri: str
    storage_options: dict[str, str] | None = field(repr=False)
    version: int
    protocol_json: str = field(repr=False)
    metadata_json: str = field(repr=False)
    columns: tuple[str, ...] | None
    filter: Filter
    timezone: str | None
    row_tracking: bool


@final
@dataclass(frozen=True, eq=False)
class ScanTask:
    """A share of a :class:`Scan`'s files, from :meth:`Scan.tasks`: a plain, picklable value
    (no native object inside) that any process can read.

    Reading it gives the rows of its files exactly as the scan would (deletion vectors,
    column mapping, partition values, the filter), with the scan's schema.
    """

    table_uri: str
    """The table root as a URL."""
    version: int
    """The table version the scan was planned at."""
    num_files: int
    """How many data files the task reads."""
    size: int
    """The total size of those files, in bytes."""
    _source: TaskSource = field(repr=False)
    _files: bytes = field(repr=False)

    def files(self) -> ArrowStream:
        """The file-list rows of the task's files (the columns of :meth:`Scan.files`)."""
        return ArrowStream(self._scan().files())

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The rows as an ``ArrowArrayStream`` PyCapsule, read lazily as it is consumed."""
        return self._scan().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """The schema of the rows as an ``ArrowSchema`` PyCapsule."""
        return self._scan().__arrow_c_schema__()

    def to_batches(self) -> ArrowStream:
        """Every row, read now and held in memory; errors keep their deltalog class."""
        return ArrowStream(self._scan().to_batches())

    def to_pyarrow(self) -> pyarrow.Table:
        """Every row as a ``pyarrow.Table`` (needs pyarrow)."""
        return self.to_batches().to_pyarrow()

    def _scan(self) -> _core.RawScan:
        source = self._source
        return _core.RawScan.from_task(
            source.table_uri,
            source.storage_options,
            source.protocol_json,
            source.metadata_json,
            self._files,
            None if source.columns is None else list(source.columns),
            source.filter,
            source.timezone,
            source.row_tracking,
        )


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
