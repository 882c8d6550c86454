"""The streaming source: ``spark.readStream.format("deltalog").load(uri)`` (pyspark >= 4.2).

Offsets are ``{"version", "index", "snapshot"}``: a position in the sequence of data files
the table's commits add (the core's ``streaming`` module says which, and which commits are
refused). The planning (``latestOffset``, ``partitions``) runs in the driver's streaming
worker; each micro-batch's files are read in Spark's tasks as :class:`deltalog.ScanTask`
values, exactly as a batch read reads them.

Options: ``startingVersion`` (a version, or ``latest``: only commits after the latest) or
``startingTimestamp`` (the first commit at or after it); without either the stream starts
with every row of the latest version. ``maxFilesPerTrigger`` (default 1000) and
``maxBytesPerTrigger`` bound a micro-batch (at least one file is read);
``Trigger.AvailableNow`` reads what was committed when the query started, within those
limits. ``ignoreDeletes`` skips commits that only delete, ``skipChangeCommits`` every commit
that removes data; otherwise such commits stop the query.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from .. import _core
from .._scan import ScanTask
from ..exceptions import InvalidArgumentError, UnsupportedFeatureError
from ._types import arrow_schema, conform_batch

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "DEFAULT_MAX_FILES_PER_TRIGGER",
    "StreamReadOptions",
    "stream_reader",
]

#: Files per micro-batch unless ``maxFilesPerTrigger`` says otherwise (Delta on Spark's
#: default).
DEFAULT_MAX_FILES_PER_TRIGGER = 1000

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


@dataclass(frozen=True)
class StreamReadOptions:
    """The streaming options of a read (names in any case)."""

    uri: str
    starting_version: int | None = None
    starting_latest: bool = False
    starting_timestamp_ms: int | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    ignore_deletes: bool = False
    skip_change_commits: bool = False
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(
        cls, options: Mapping[str, str], storage_options: dict[str, str]
    ) -> StreamReadOptions:
        """Reads the options of the module docs; ``storage_options`` are the read's."""
        lowered = {str(key).lower(): str(value) for key, value in options.items()}
        starting = lowered.get("startingversion")
        timestamp = lowered.get("startingtimestamp")
        if starting is not None and timestamp is not None:
            raise InvalidArgumentError("give startingVersion or startingTimestamp, not both")
        latest = starting is not None and starting.strip().lower() == "latest"
        return cls(
            uri=lowered.get("path", ""),
            starting_version=None
            if starting is None or latest
            else _count(starting, "startingVersion", 0),
            starting_latest=latest,
            starting_timestamp_ms=None
            if timestamp is None
            else _core.parse_timestamp_ms(timestamp),
            max_files=_count(lowered.get("maxfilespertrigger"), "maxFilesPerTrigger", 1),
            max_bytes=_count(lowered.get("maxbytespertrigger"), "maxBytesPerTrigger", 1),
            ignore_deletes=_flag(lowered.get("ignoredeletes"), "ignoreDeletes"),
            skip_change_commits=_flag(lowered.get("skipchangecommits"), "skipChangeCommits"),
            storage_options=storage_options,
        )


class StreamPartition(InputPartition):
    """One task of a micro-batch: a :class:`deltalog.ScanTask`."""

    def __init__(self, task: ScanTask) -> None:
        super().__init__(task)
        self.task = task


def stream_reader(
    options: StreamReadOptions, columns: Sequence[str], schema: StructType
) -> DataSourceStreamReader:
    """The source's reader; pyspark 4.0 and 4.1 lack what it needs (read limits and
    ``Trigger.AvailableNow`` for Python sources): an :class:`UnsupportedFeatureError`."""
    if SupportsTriggerAvailableNow is None:  # pragma: no cover - pyspark 4.0 and 4.1
        raise UnsupportedFeatureError(
            "streaming reads with format('deltalog') need pyspark 4.2 or later"
        )
    return DeltalogStreamReader(options, columns, schema)


if SupportsTriggerAvailableNow is not None:

    class DeltalogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """Reads the files the table's commits add, micro-batch by micro-batch."""

        def __init__(
            self, options: StreamReadOptions, columns: Sequence[str], schema: StructType
        ) -> None:
            self.options = options
            self.columns = list(columns)
            self.schema = schema
            self.until_version: int | None = None

        def initialOffset(self) -> dict[str, Any]:
            """Before the first file: of the latest snapshot, or of the starting commit."""
            options = self.options
            if options.starting_latest:
                latest = _core.RawDeltaTable.open(options.uri, self._storage()).latest_version()
                return _offset_dict((latest + 1, -1, False))
            offset = _core.stream_initial_offset(
                options.uri,
                options.starting_version,
                options.starting_timestamp_ms,
                self._storage(),
            )
            return _offset_dict(offset)

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
            table = _core.RawDeltaTable.open(self.options.uri, self._storage())
            self.until_version = table.latest_version()

        def partitions(
            self, start: dict[str, Any], end: dict[str, Any]
        ) -> Sequence[InputPartition]:
            """The scan tasks of the files after ``start`` up to ``end``."""
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
            for batch in pa.RecordBatchReader.from_stream(task):
                if batch.num_rows:
                    yield conform_batch(batch, target)

        def commit(self, end: dict[str, Any]) -> None:
            """Nothing to release: the source keeps no state between micro-batches."""

        def _limits(self, limit: ReadLimit) -> tuple[int | None, int | None]:
            if isinstance(limit, ReadAllAvailable):
                return None, None
            max_files = self.options.max_files
            if max_files is None and self.options.max_bytes is None:
                max_files = DEFAULT_MAX_FILES_PER_TRIGGER
            return max_files, self.options.max_bytes

        def _storage(self) -> dict[str, str] | None:
            return self.options.storage_options or None


def _offset_dict(offset: tuple[int, int, bool]) -> dict[str, Any]:
    version, index, snapshot = offset
    return {"version": version, "index": index, "snapshot": snapshot}


def _offset_tuple(offset: Mapping[str, Any]) -> tuple[int, int, bool]:
    try:
        return (int(offset["version"]), int(offset["index"]), bool(offset["snapshot"]))
    except (KeyError, TypeError, ValueError):
        raise InvalidArgumentError(f"not a deltalog stream offset: {offset!r}") from None


def _count(text: str | None, name: str, minimum: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be an integer, got {text!r}") from None
    if value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    return value


def _flag(text: str | None, name: str) -> bool:
    if text is None:
        return False
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise InvalidArgumentError(f"{name} must be true or false, got {text!r}")
