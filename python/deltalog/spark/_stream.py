"""The streaming source: ``spark.readStream.format("deltalog").load(uri)``.

Offsets are ``{"version", "index", "snapshot"}``: a position in the sequence of data files
the table's commits add (the core's ``streaming`` module says which, and which commits are
refused). The planning (``latestOffset``, ``partitions``) runs in the driver's streaming
worker; each micro-batch's files are read in Spark's tasks as :class:`deltalog.ScanTask`
values, exactly as a batch read reads them.

Options (:class:`~deltalog.spark._options.StreamReadOptions`): ``startingVersion`` (a
version, or ``latest``: only commits after the latest) or ``startingTimestamp`` (the first
commit at or after it); without either the stream starts with every row of the latest
version. ``ignoreDeletes`` skips commits that only delete, ``skipChangeCommits`` every commit
that removes data; otherwise such commits stop the query.

Admission control needs pyspark 4.2 or later, whose Python sources take read limits: there,
``maxFilesPerTrigger`` (default 1000) and ``maxBytesPerTrigger`` bound a micro-batch (at
least one file is read) and ``Trigger.AvailableNow`` reads what was committed when the query
started, within those limits. pyspark 4.0 and 4.1 give a source no start offset and no limit
when they ask for the latest offset: there each micro-batch reads every commit made since the
previous one, and the two limit options are refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from .. import _core
from .._scan import ScanTask
from ..exceptions import InvalidArgumentError, UnsupportedFeatureError
from ._options import DEFAULT_MAX_FILES_PER_TRIGGER, StreamReadOptions
from ._types import arrow_schema

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "AllAvailableStreamReader",
    "StreamPartition",
    "stream_reader",
]

try:  # pyspark >= 4.2
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 and 4.1
    SupportsTriggerAvailableNow = None  # type: ignore[assignment,misc]


class StreamPartition(InputPartition):
    """One task of a micro-batch: a :class:`deltalog.ScanTask`."""

    def __init__(self, task: ScanTask) -> None:
        super().__init__(task)
        self.task = task


def stream_reader(
    options: StreamReadOptions, columns: Sequence[str], schema: StructType
) -> DataSourceStreamReader:
    """The source's reader: with admission control on pyspark 4.2 and later, else an
    :class:`AllAvailableStreamReader` (``maxFilesPerTrigger`` and ``maxBytesPerTrigger``
    are then an :class:`UnsupportedFeatureError`)."""
    if SupportsTriggerAvailableNow is not None:
        return DeltalogStreamReader(options, columns, schema)
    if options.max_files is not None or options.max_bytes is not None:  # pragma: no cover
        raise UnsupportedFeatureError(
            "options maxFilesPerTrigger and maxBytesPerTrigger of format('deltalog') "
            f"streaming reads need pyspark 4.2 or later (this is pyspark {_pyspark_version()}); "
            "without them each micro-batch reads every commit made since the previous one"
        )
    return AllAvailableStreamReader(options, columns, schema)  # pragma: no cover


class FileStreamReader(DataSourceStreamReader):
    """Reads the files the table's commits add between two offsets (the part of the stream
    reader that does not depend on admission control)."""

    def __init__(
        self, options: StreamReadOptions, columns: Sequence[str], schema: StructType
    ) -> None:
        self.options = options
        self.columns = list(columns)
        self.schema = schema

    def initialOffset(self) -> dict[str, Any]:
        """Before the first file: of the latest snapshot, or of the starting commit."""
        options = self.options
        if options.starting_latest:
            return _after_version(self._latest_version())
        offset = _core.stream_initial_offset(
            options.uri,
            options.starting_version,
            options.starting_timestamp_ms,
            self._storage(),
        )
        return _offset_dict(offset)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The scan tasks of the files after ``start`` up to ``end``; a commit the stream
        refuses (see the module docs) in between is an error naming its version."""
        if start == end:
            return []
        tasks = _core.stream_tasks(
            self.options.uri,
            _offset_tuple(start),
            _offset_tuple(end),
            self.columns,
            self.options.ignore_deletes,
            self.options.skip_change_commits,
            storage_options=self._storage(),
        )
        return [
            StreamPartition(
                ScanTask(
                    table_uri=self.options.uri,
                    version=_offset_tuple(end)[0],
                    num_files=num_files,
                    size=size,
                    _storage_options=self._storage(),
                    _task=task,
                )
            )
            for task, num_files, size in tasks
        ]

    def read(self, partition: InputPartition) -> Iterator[pyarrow.RecordBatch]:
        """The rows of one task, as batches of exactly Spark's Arrow schema."""
        import pyarrow as pa

        task = getattr(partition, "task", None)
        if task is None:
            return
        target = arrow_schema(self.schema)
        for batch in pa.RecordBatchReader.from_stream(task, schema=target):
            if batch.num_rows:
                yield batch

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the source keeps no state between micro-batches."""

    def _latest_version(self) -> int:
        return _core.RawDeltaTable.open(self.options.uri, self._storage()).latest_version()

    def _storage(self) -> dict[str, str] | None:
        return self.options.storage_options or None


class AllAvailableStreamReader(FileStreamReader):
    """The stream reader without admission control (pyspark 4.0 and 4.1, whose
    ``latestOffset`` takes no start offset and no read limit): each micro-batch reads every
    file committed since the previous one."""

    def latestOffset(self) -> dict[str, Any]:  # type: ignore[override] # the 4.0/4.1 form
        """After every commit made so far: before the first file of the next version. A
        commit that adds no file to the stream (such as OPTIMIZE) still moves this offset, so
        it gives an empty micro-batch."""
        return _after_version(self._latest_version())


if SupportsTriggerAvailableNow is not None:

    class DeltalogStreamReader(FileStreamReader, SupportsTriggerAvailableNow):
        """The stream reader with admission control (pyspark >= 4.2):
        ``maxFilesPerTrigger``, ``maxBytesPerTrigger`` and ``Trigger.AvailableNow``."""

        def __init__(
            self, options: StreamReadOptions, columns: Sequence[str], schema: StructType
        ) -> None:
            super().__init__(options, columns, schema)
            self.until_version: int | None = None

        def getDefaultReadLimit(self) -> ReadLimit:
            """``maxFilesPerTrigger`` (default 1000), or ``maxBytesPerTrigger`` alone."""
            if self.options.max_bytes is not None and self.options.max_files is None:
                return ReadMaxBytes(self.options.max_bytes)
            return ReadMaxFiles(self.options.max_files or DEFAULT_MAX_FILES_PER_TRIGGER)

        def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
            """The offset after the files of the next micro-batch (``start`` when none)."""
            max_files, max_bytes = self._limits(limit)
            offset = _offset_tuple(start)
            if self.until_version is not None and offset[0] > self.until_version:
                return start
            end = _core.stream_latest_offset(
                self.options.uri,
                offset,
                max_files,
                max_bytes,
                self.options.ignore_deletes,
                self.options.skip_change_commits,
                self.until_version,
                self._storage(),
            )
            return _offset_dict(end)

        def prepareForTriggerAvailableNow(self) -> None:
            """Reads no commit made after this call."""
            self.until_version = self._latest_version()

        def _limits(self, limit: ReadLimit) -> tuple[int | None, int | None]:
            if isinstance(limit, ReadAllAvailable):
                return None, None
            max_files = self.options.max_files
            if max_files is None and self.options.max_bytes is None:
                max_files = DEFAULT_MAX_FILES_PER_TRIGGER
            return max_files, self.options.max_bytes


def _after_version(version: int) -> dict[str, Any]:
    """The offset after every file of ``version`` and the versions before it."""
    return _offset_dict((version + 1, -1, False))


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _offset_dict(offset: tuple[int, int, bool]) -> dict[str, Any]:
    version, index, snapshot = offset
    return {"version": version, "index": index, "snapshot": snapshot}


def _offset_tuple(offset: Mapping[str, Any]) -> tuple[int, int, bool]:
    try:
        return (int(offset["version"]), int(offset["index"]), bool(offset["snapshot"]))
    except (KeyError, TypeError, ValueError):
        raise InvalidArgumentError(f"not a deltalog stream offset: {offset!r}") from None
