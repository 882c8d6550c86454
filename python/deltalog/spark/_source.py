"""The ``deltalog`` Python data source: ``spark.read.format("deltalog").load(uri)``.

Where each piece runs (pyspark's Python data source protocol):

- :meth:`DeltalogDataSource.schema` and :meth:`~DeltalogDataSource.reader` run in Python
  workers the driver starts. ``schema()`` pins the snapshot version on the data source, and
  that state is pickled along, so every later step reads the same version.
- :meth:`DeltalogReader.pushFilters` (pushdown reader only) and
  :meth:`~DeltalogReader.partitions` run in one planning worker: the snapshot is opened, the
  scan planned with the filters Spark gave, and its files bin-packed into
  :class:`deltalog.ScanTask` values, each a plain picklable descriptor.
- :meth:`~DeltalogReader.read` runs in the tasks: it reads one ``ScanTask`` through the Rust
  scan and casts every batch to the Arrow schema pyspark checks them against.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import LongType, StringType, StructField, StructType

from .._scan import ScanTask
from .._table import DeltaTable, Snapshot
from ..exceptions import InvalidArgumentError
from ._changes import CHANGE_FIELDS, ChangeFeedReader, change_stream_reader
from ._filters import conjunction, filter_text
from ._options import ReadOptions, StreamReadOptions, WriteOptions
from ._sink import stream_writer
from ._stream import stream_reader
from ._types import arrow_schema, spark_schema
from ._write import DeltalogWriter, plan_write

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "SOURCE_NAME",
    "DeltalogDataSource",
    "DeltalogPartition",
    "DeltalogPushdownDataSource",
    "DeltalogPushdownReader",
    "DeltalogReader",
    "PinnedTable",
]

#: The name the data source is registered under (``delta`` belongs to delta-spark).
SOURCE_NAME = "deltalog"

#: The columns the ``rowTracking`` option adds, after the table's.
ROW_TRACKING_FIELDS = (
    StructField("row_id", LongType(), False),
    StructField("row_commit_version", LongType(), False),
)
#: The columns the ``rowAddress`` option adds, after those.
ROW_ADDRESS_FIELDS = (
    StructField("__deltalog_file", StringType(), False),
    StructField("__deltalog_row_index", LongType(), False),
)


@dataclass(frozen=True)
class PinnedTable:
    """The table version a read is planned at, and its Spark schema (all columns)."""

    version: int
    schema: StructType


class DeltalogDataSource(DataSource):
    """Reads a Delta table through deltalog: ``spark.read.format("deltalog").load(uri)``.

    The reader does not take Spark's filters (see :class:`DeltalogPushdownDataSource`);
    :func:`deltalog.spark.register` picks the class that fits the session.
    """

    #: Whether readers take Spark's filters when the ``filterPushdown`` option is not given.
    filter_pushdown: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        """The table's Spark schema at the pinned version, projected to the ``columns``
        option when given."""
        options = ReadOptions.parse(self.options)
        full = self._full_schema(options)
        if options.columns is None:
            return full
        return StructType([_table_field(full, name) for name in options.columns])

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of ``schema``'s columns (the user's schema, or that of :meth:`schema`):
        each must name a column of the table, in any case."""
        options = ReadOptions.parse(self.options)
        if options.read_change_feed:
            columns = self._columns(options, schema)
            stream_options = StreamReadOptions.parse(self.options)
            return ChangeFeedReader(stream_options, options.ending_version, columns, schema)
        pinned = self._pinned(options)
        extra = {field.name for field in _extra_fields(options)}
        names = tuple(
            _table_field(pinned.schema, field.name).name
            for field in schema.fields
            if field.name not in extra
        )
        pushdown = options.filter_pushdown
        if pushdown is None:
            pushdown = self.filter_pushdown
        reader_class = DeltalogPushdownReader if pushdown else DeltalogReader
        return reader_class(options, pinned, names, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The source of ``spark.readStream.format("deltalog")`` (pyspark >= 4.2): the rows
        of the files the table's commits add, micro-batch by micro-batch (see
        ``_stream.py``)."""
        options = ReadOptions.parse(self.options)
        columns = self._columns(options, schema)
        stream_options = StreamReadOptions.parse(self.options)
        if options.read_change_feed:
            return change_stream_reader(stream_options, columns, schema)
        return stream_reader(stream_options, columns, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The writer of ``df.write.format("deltalog").mode(...).save(uri)``: the write is
        planned here, once, and committed as one Delta version (see ``_write.py``)."""
        options = WriteOptions.parse(self.options)
        return DeltalogWriter(options, plan_write(options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The sink of ``df.writeStream.format("deltalog")``: each micro-batch is one Delta
        commit with a ``txn`` of the query, committed once (see ``_sink.py``)."""
        options = WriteOptions.parse(self.options, streaming=True)
        plan = plan_write(options, schema, overwrite)
        return stream_writer(options, plan, schema)

    def _full_schema(self, options: ReadOptions) -> StructType:
        """Every column a read may return: the table's, and with ``readChangeFeed`` the
        change feed's."""
        pinned = self._pinned(options)
        if not options.read_change_feed:
            return StructType([*pinned.schema.fields, *_extra_fields(options)])
        return StructType([*pinned.schema.fields, *CHANGE_FIELDS])

    def _columns(self, options: ReadOptions, schema: StructType) -> list[str]:
        full = self._full_schema(options)
        return [_table_field(full, field.name).name for field in schema.fields]

    def _pinned(self, options: ReadOptions) -> PinnedTable:
        """The version this read uses: the one ``schema()`` pinned, else resolved now."""
        pinned: PinnedTable | None = getattr(self, "_pinned_table", None)
        if pinned is None:
            snapshot = _open(options, options.version, options.timestamp)
            pinned = PinnedTable(snapshot.version, spark_schema(snapshot.schema.json()))
            self._pinned_table = pinned
        return pinned


class DeltalogPushdownDataSource(DeltalogDataSource):
    """:class:`DeltalogDataSource` whose readers take Spark's filters (pyspark >= 4.1 with
    ``spark.sql.python.filterPushdown.enabled=true``)."""

    filter_pushdown: ClassVar[bool] = True


class DeltalogPartition(InputPartition):
    """One input partition: a :class:`deltalog.ScanTask` (``None`` for the single empty
    partition of a scan without files)."""

    def __init__(self, task: ScanTask | None) -> None:
        super().__init__(task)
        self.task = task


class DeltalogReader(DataSourceReader):
    """Plans the scan on the driver and reads its tasks in Spark's tasks."""

    def __init__(
        self,
        options: ReadOptions,
        pinned: PinnedTable,
        columns: Sequence[str],
        schema: StructType,
    ) -> None:
        self.options = options
        self.pinned = pinned
        self.columns = tuple(columns)
        self.schema = schema
        self.filters: list[str] = []

    def partitions(self) -> Sequence[InputPartition]:
        """The scan's files, pruned by the taken filters and bin-packed into partitions of
        about ``maxPartitionBytes``; a scan without files gives one empty partition (pyspark
        reads a default partition for an empty list)."""
        pushed = conjunction(self.filters)
        snapshot = _open(self.options, self.pinned.version, None, pushed)
        scan = snapshot.scan(
            columns=list(self.columns),
            filter=pushed,
            timezone=self.options.timezone,
            row_tracking=self.options.row_tracking,
            row_address=self.options.row_address,
            files=self.options.files,
        )
        tasks = scan.tasks(self.options.target_size, self.options.open_cost)
        partitions: list[InputPartition] = [DeltalogPartition(task) for task in tasks]
        return partitions or [DeltalogPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pyarrow.RecordBatch]:
        """The rows of one partition, as batches of exactly Spark's Arrow schema."""
        import pyarrow as pa

        task = getattr(partition, "task", None)
        if task is None:
            return
        target = arrow_schema(self.schema)
        for batch in pa.RecordBatchReader.from_stream(task, schema=target):
            if batch.num_rows:
                yield batch


class DeltalogPushdownReader(DeltalogReader):
    """:class:`DeltalogReader` that takes the filters of Spark it can apply exactly: they
    prune partitions, skip files by statistics and filter rows in the scan."""

    def pushFilters(self, filters: list[Any]) -> list[Any]:
        """Takes the filters with an exact deltalog equivalent; returns the others, which
        Spark keeps. Only columns whose declared type is the table's are filtered here."""
        extra = {field.name for field in _extra_fields(self.options)}
        comparable = StructType(
            [
                field
                for field in self.schema.fields
                if field.name not in extra and self._same_type_as_table(field)
            ]
        )
        rejected = []
        for spark_filter in filters:
            text = filter_text(spark_filter, comparable)
            if text is None:
                rejected.append(spark_filter)
            else:
                self.filters.append(text)
        return rejected

    def _same_type_as_table(self, field: StructField) -> bool:
        return bool(_table_field(self.pinned.schema, field.name).dataType == field.dataType)


def _extra_fields(options: ReadOptions) -> tuple[StructField, ...]:
    """The columns the read adds after the table's: row tracking, then row addresses."""
    tracking = ROW_TRACKING_FIELDS if options.row_tracking else ()
    return tracking + (ROW_ADDRESS_FIELDS if options.row_address else ())


def _open(
    options: ReadOptions, version: int | None, timestamp: str | None, filter: str | None = None
) -> Snapshot:
    """The table's snapshot; with ``filter``, holding only the files that may match (read
    from the log without the others)."""
    table = DeltaTable(options.uri, storage_options=options.storage_options or None)
    return table.snapshot(version, timestamp=timestamp, filter=filter)


def _table_field(schema: StructType, name: str) -> StructField:
    """The table's field called ``name``: exactly, else the one equal ignoring case."""
    for field in schema.fields:
        if field.name == name:
            return field
    folded = [field for field in schema.fields if field.name.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    available = ", ".join(schema.fieldNames())
    raise InvalidArgumentError(f"the table has no column {name!r} (it has: {available})")
