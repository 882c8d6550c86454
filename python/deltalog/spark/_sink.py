"""The streaming sink: ``df.writeStream.format("deltalog").option("checkpointLocation",
...).start(uri)``.

Every micro-batch is ONE Delta commit carrying a ``txn`` action ``{appId, version: batchId}``
(spec "Set Transaction Identifiers"); a micro-batch whose ``txn`` version the table already
holds is not committed again, so a query restarted from its checkpoint writes every row
exactly once. ``appId`` is the ``txnAppId`` option when given, else the streaming query's
id (read from the checkpoint's ``metadata`` file, as Delta on Spark uses it), else the
checkpoint location itself. The commits are recorded as Delta on Spark's sink records them:
operation ``STREAMING UPDATE`` with ``outputMode`` (``Append``, or ``Complete`` when Spark
asks the sink to overwrite), ``queryId`` and ``epochId`` (the batch id).

The writer's tasks and commits run as in ``_write.py``: the plan made when the query starts
travels in every task's message, and each micro-batch's commit follows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import Row, StructType

from .. import _core
from ._options import WriteOptions
from ._types import arrow_schema
from ._write import (
    DeltalogCommitMessage,
    commit_messages,
    discard,
    log_unreferenced,
    write_task,
)

try:  # pyspark >= 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamArrowBase
except ImportError:  # pragma: no cover - pyspark 4.0
    _StreamArrowBase = None  # type: ignore[assignment,misc]
from pyspark.sql.datasource import DataSourceStreamWriter

__all__ = [
    "ROWS_PER_BATCH",
    "DeltalogStreamWriter",
    "rows_to_batches",
    "stream_query",
    "stream_writer",
]

#: Rows per Arrow batch when pyspark hands a writer rows (pyspark 4.0's streaming sink).
ROWS_PER_BATCH = 65536


class DeltalogStreamWriter(DataSourceStreamWriter):
    """Commits each micro-batch as one Delta version with its ``txn`` (row-based form, for
    pyspark 4.0; :func:`stream_writer` picks the Arrow form where pyspark has it)."""

    def __init__(
        self, options: WriteOptions, plan: str, query: tuple[str, str], schema: StructType
    ) -> None:
        self.options = options
        self.plan = plan
        self.app_id, self.query_id = query
        self.schema = schema

    def write(self, iterator: Iterator[Any]) -> DeltalogCommitMessage:
        """Writes this task's rows of the micro-batch to data files."""
        batches = rows_to_batches(iterator, self.schema)
        return write_task(self.options, self.plan, batches, streaming=True)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commits the micro-batch ``batchId`` once: skipped when the table holds it."""
        micro_batch = (self.app_id, self.query_id, batchId)
        commit_messages(self.options, self.plan, messages, micro_batch)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commits nothing; names the data files the successful tasks left unreferenced."""
        discard(self.options, self.plan, batchId)
        log_unreferenced(self.options, messages)


if _StreamArrowBase is not None:

    class DeltalogStreamArrowWriter(DeltalogStreamWriter, _StreamArrowBase):
        """:class:`DeltalogStreamWriter` taking Arrow batches (pyspark >= 4.1)."""

        def write(self, iterator: Iterator[Any]) -> DeltalogCommitMessage:
            """Writes this task's batches of the micro-batch to data files."""
            return write_task(self.options, self.plan, iterator, streaming=True)


def stream_writer(options: WriteOptions, plan: str, schema: StructType) -> DeltalogStreamWriter:
    """The sink's writer: Arrow-based where pyspark has ``DataSourceStreamArrowWriter``."""
    query = stream_query(options)
    if _StreamArrowBase is not None:
        return DeltalogStreamArrowWriter(options, plan, query, schema)
    return DeltalogStreamWriter(options, plan, query, schema)  # pragma: no cover


def stream_query(options: WriteOptions) -> tuple[str, str]:
    """The ``txn`` application id of a streaming query and the query's id (see the module
    docs; the core chooses them)."""
    return _core.streaming_query(options.app_id, options.checkpoint_location)


def rows_to_batches(rows: Iterator[Row], schema: StructType) -> Iterator[Any]:
    """``rows`` as Arrow batches of ``schema`` of at most :data:`ROWS_PER_BATCH` rows."""
    import pyarrow as pa

    target = arrow_schema(schema)
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row.asDict(recursive=True))
        if len(chunk) == ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(chunk, schema=target)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=target)
