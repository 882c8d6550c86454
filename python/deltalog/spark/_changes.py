"""The change data feed through ``format("deltalog")``: ``option("readChangeFeed", "true")``
on ``spark.read`` (with ``startingVersion``, optionally ``endingVersion``) and on
``spark.readStream`` (pyspark >= 4.2, with ``startingVersion`` or ``startingTimestamp``).

Rows are those of :meth:`deltalog.DeltaTable.changes`: the table's columns plus
``_change_type``, ``_commit_version`` and ``_commit_timestamp``. A read is one Spark task per
range of commits (the change feed of a range is planned and read by the core in one go);
stream offsets are ``{"version": v, "index": -1}`` (before commit ``v``) or
``{"version": v, "index": 0}`` (after it), and ``maxFilesPerTrigger`` counts commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from .. import _core
from .._table import DeltaTable
from ..exceptions import InvalidArgumentError, UnsupportedFeatureError
from ._options import DEFAULT_MAX_FILES_PER_TRIGGER, StreamReadOptions
from ._types import arrow_schema

if TYPE_CHECKING:
    import pyarrow

try:  # pyspark >= 4.2
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 and 4.1
    SupportsTriggerAvailableNow = None  # type: ignore[assignment,misc]

__all__ = [
    "CHANGE_FIELDS",
    "ChangeFeedReader",
    "ChangeRange",
    "change_stream_reader",
]

#: The columns the change data feed adds to the table's.
CHANGE_FIELDS = (
    StructField("_change_type", StringType(), True),
    StructField("_commit_version", LongType(), True),
    StructField("_commit_timestamp", TimestampType(), True),
)


@dataclass(frozen=True)
class ChangeRange:
    """The commits ``start..=end`` of a table, of ``columns``: one task's read."""

    uri: str
    start: int
    end: int
    columns: tuple[str, ...]
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)


class ChangesPartition(InputPartition):
    """One task: a :class:`ChangeRange`."""

    def __init__(self, changes: ChangeRange) -> None:
        super().__init__(changes)
        self.changes = changes


class ChangeFeedReader(DataSourceReader):
    """The batch read of the change data feed from ``startingVersion`` to
    ``endingVersion`` (default: the latest)."""

    def __init__(
        self,
        options: StreamReadOptions,
        ending_version: int | None,
        columns: Sequence[str],
        schema: StructType,
    ) -> None:
        if options.starting_version is None:
            raise InvalidArgumentError("readChangeFeed needs option startingVersion")
        self.options = options
        self.ending_version = ending_version
        self.columns = tuple(columns)
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        """One task reading every commit of the range."""
        options = self.options
        end = self.ending_version
        if end is None:
            end = DeltaTable(options.uri, storage_options=options.storage_options).latest_version()
        start = options.starting_version or 0
        return [ChangesPartition(_range(options, start, end, self.columns))]

    def read(self, partition: InputPartition) -> Iterator[pyarrow.RecordBatch]:
        """The change rows, as batches of exactly Spark's Arrow schema."""
        return read_changes(partition, self.schema)


def change_stream_reader(
    options: StreamReadOptions, columns: Sequence[str], schema: StructType
) -> DataSourceStreamReader:
    """The change feed's stream reader (pyspark >= 4.2)."""
    if SupportsTriggerAvailableNow is None:  # pragma: no cover - pyspark 4.0 and 4.1
        import pyspark

        raise UnsupportedFeatureError(
            "streaming reads of the change data feed (option readChangeFeed) with "
            f"format('deltalog') need pyspark 4.2 or later (this is pyspark {pyspark.__version__})"
        )
    starting = (options.starting_version, options.starting_timestamp_ms)
    if starting == (None, None) and not options.starting_latest:
        raise InvalidArgumentError(
            "a change feed stream needs option startingVersion or startingTimestamp"
        )
    return ChangeFeedStreamReader(options, columns, schema)


def read_changes(partition: InputPartition, schema: StructType) -> Iterator[pyarrow.RecordBatch]:
    """The rows of a :class:`ChangesPartition`, as batches of ``schema``."""
    import pyarrow as pa

    changes: ChangeRange | None = getattr(partition, "changes", None)
    if changes is None:
        return
    table = DeltaTable(changes.uri, storage_options=changes.storage_options or None)
    stream = table.changes(changes.start, changes.end, columns=list(changes.columns))
    target = arrow_schema(schema)
    for batch in pa.RecordBatchReader.from_stream(stream, schema=target):
        if batch.num_rows:
            yield batch


if SupportsTriggerAvailableNow is not None:

    class ChangeFeedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """Reads the change feed commit range by commit range."""

        def __init__(
            self, options: StreamReadOptions, columns: Sequence[str], schema: StructType
        ) -> None:
            self.options = options
            self.columns = tuple(columns)
            self.schema = schema
            self.until_version: int | None = None

        def initialOffset(self) -> dict[str, Any]:
            """Before the starting commit."""
            options = self.options
            if options.starting_latest:
                version = self._latest() + 1
            else:
                version, _, _ = _core.stream_initial_offset(
                    options.uri,
                    options.starting_version,
                    options.starting_timestamp_ms,
                    options.storage_options or None,
                )
            return {"version": version, "index": -1, "snapshot": False}

        def getDefaultReadLimit(self) -> ReadLimit:
            """``maxFilesPerTrigger`` commits per micro-batch (default 1000)."""
            return ReadMaxFiles(self.options.max_files or DEFAULT_MAX_FILES_PER_TRIGGER)

        def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
            """After the last commit of the next micro-batch (``start`` when none)."""
            first = _first_unread(start)
            last = self._latest()
            if self.until_version is not None:
                last = min(last, self.until_version)
            if first > last:
                return start
            if not isinstance(limit, ReadAllAvailable):
                count = self.options.max_files or DEFAULT_MAX_FILES_PER_TRIGGER
                last = min(last, first + count - 1)
            return {"version": last, "index": 0, "snapshot": False}

        def prepareForTriggerAvailableNow(self) -> None:
            """Reads no commit made after this call."""
            self.until_version = self._latest()

        def partitions(
            self, start: dict[str, Any], end: dict[str, Any]
        ) -> Sequence[InputPartition]:
            """One task reading the commits after ``start`` up to ``end``."""
            first, last = _first_unread(start), int(end["version"])
            if first > last or start == end:
                return []
            return [ChangesPartition(_range(self.options, first, last, self.columns))]

        def read(self, partition: InputPartition) -> Iterator[pyarrow.RecordBatch]:
            """The change rows, as batches of exactly Spark's Arrow schema."""
            return read_changes(partition, self.schema)

        def commit(self, end: dict[str, Any]) -> None:
            """Nothing to release: the source keeps no state between micro-batches."""

        def _latest(self) -> int:
            options = self.options
            table = DeltaTable(options.uri, storage_options=options.storage_options or None)
            return table.latest_version()


def _first_unread(offset: dict[str, Any]) -> int:
    try:
        version, index = int(offset["version"]), int(offset["index"])
    except (KeyError, TypeError, ValueError):
        raise InvalidArgumentError(f"not a deltalog change feed offset: {offset!r}") from None
    return version if index < 0 else version + 1


def _range(options: StreamReadOptions, start: int, end: int, columns: Sequence[str]) -> ChangeRange:
    return ChangeRange(options.uri, start, end, tuple(columns), dict(options.storage_options))
