"""Reading a snapshot's rows: :class:`Scan` and its :class:`ScanTask` shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, final

from . import _core
from ._arrow import ArrowStream
from ._frozen import Frozen
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = ["Filter", "Scan", "ScanTask"]

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

    __slots__ = ("_raw", "_storage_options")
    _wraps: ClassVar[type] = _core.RawScan

    _raw: _core.RawScan
    _storage_options: dict[str, str] | None

    def __init__(self, raw: _core.RawScan, storage_options: dict[str, str] | None) -> None:
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_storage_options", storage_options)

    def files(self) -> ArrowStream:
        """The data files this scan reads (the snapshot's file list, after skipping)."""
        return ArrowStream(self._raw.files())

    @property
    def column_names(self) -> list[str]:
        """The names of the output columns."""
        return self._raw.column_names

    def tasks(
        self,
        target_size: int = _core.DEFAULT_TARGET_SIZE,
        open_cost: int = _core.DEFAULT_OPEN_COST,
    ) -> list[ScanTask]:
        """This scan split into tasks that other processes can read, for a distributed read.

        The files are bin-packed, in file-list order, into tasks of about ``target_size``
        bytes, each file counting its size plus ``open_cost`` (as Spark counts them); a file
        larger than ``target_size`` is a task alone. Every file is in exactly one task; a scan
        with no files has no tasks. Tasks are plain, picklable values: reading one reads its
        files exactly as this scan would, without reading the table's log again.
        """
        if target_size < 1 or open_cost < 0:
            raise InvalidArgumentError("target_size must be positive and open_cost not negative")
        raw = self._raw
        return [
            ScanTask(
                table_uri=raw.table_uri,
                version=raw.version,
                num_files=num_files,
                size=size,
                _storage_options=self._storage_options,
                _task=task,
            )
            for task, num_files, size in raw.tasks(target_size, open_cost)
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
    _storage_options: dict[str, str] | None = field(repr=False)
    _task: bytes = field(repr=False)
    """The task in deltalog's scan task wire format (table, version, protocol, metadata,
    scan options and file list rows); storage options are kept apart."""

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
        return _core.RawScan.from_task(self._task, self._storage_options)
