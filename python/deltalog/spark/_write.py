"""Writing Delta tables from PySpark: ``df.write.format("deltalog")`` and the streaming sink.

Where each piece runs (pyspark's Python data source protocol):

- :meth:`DeltalogDataSource.writer` / ``streamWriter`` run in a Python worker of the driver:
  the write is planned there once (:func:`plan_write`: table created or not, mode, partition
  columns, schema merged or replaced), and the plan, plain JSON text, is pickled along with
  the writer.
- ``write`` runs in each task: the task's Arrow batches go to Parquet data files through the
  Rust writer, following the plan; the task returns a :class:`DeltalogCommitMessage` holding
  the plan and its files as Arrow IPC bytes.
- ``commit`` runs in another driver-side worker: every task's files are committed in ONE
  Delta transaction (removes of an overwrite or ``replaceWhere``, the metadata changes, the
  ``txn`` action, conflict checks and retries), or nothing is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from .. import _core
from .._table import CommitResult, DeltaTable
from ..exceptions import DeltaError, InvalidArgumentError
from ._options import WriteOptions
from ._types import arrow_schema

if TYPE_CHECKING:
    import pyarrow

__all__ = ["DeltalogCommitMessage", "DeltalogWriter", "discard", "plan_write"]

_log = logging.getLogger("deltalog.spark")


@dataclass
class DeltalogCommitMessage(WriterCommitMessage):
    """What a task wrote: the plan it followed and its data files as Arrow IPC stream bytes
    of the file-list shape (``None`` when it wrote none)."""

    plan: str
    files: bytes | None


def plan_write(options: WriteOptions, schema: StructType, overwrite: bool) -> str:
    """Plans a write of rows of ``schema`` (as a table's columns: nullable) in mode
    ``overwrite`` or ``append``; returns the plan's JSON."""
    import pyarrow as pa

    data_schema = arrow_schema(_nullable(schema))
    empty = pa.RecordBatchReader.from_batches(data_schema, [])
    mode = "overwrite" if overwrite else "append"
    return _core.plan_distributed_write(
        options.uri, empty, options.plan_options(mode), options.storage_options or None
    )


class DeltalogWriter(DataSourceArrowWriter):
    """The batch writer: one Delta commit for the whole job."""

    def __init__(self, options: WriteOptions, plan: str) -> None:
        self.options = options
        self.plan = plan

    def write(self, iterator: Iterator[pyarrow.RecordBatch]) -> DeltalogCommitMessage:
        """Writes this task's batches to data files (none when it has no rows)."""
        return write_task(self.options, self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Commits the files of every task in one transaction."""
        commit_messages(self.options, self.plan, messages, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Commits nothing; names the data files the successful tasks left unreferenced."""
        discard(self.options, self.plan, None)
        log_unreferenced(self.options, messages)


def write_task(
    options: WriteOptions,
    plan: str,
    batches: Iterator[pyarrow.RecordBatch],
    streaming: bool = False,
) -> DeltalogCommitMessage:
    """Writes one task's batches following ``plan`` (as a task of the running streaming
    micro-batch when ``streaming``: identity values are claimed per micro-batch)."""
    import pyarrow as pa

    first = next(batches, None)
    if first is None:
        return DeltalogCommitMessage(plan, None)
    reader = pa.RecordBatchReader.from_batches(first.schema, chain([first], batches))
    epoch = _micro_batch_id(plan) if streaming else None
    files = _core.write_distributed_files(
        options.uri, plan, reader, options.storage_options or None, epoch
    )
    return DeltalogCommitMessage(plan, files)


def discard(options: WriteOptions, plan: str, micro_batch_id: int | None) -> None:
    """Deletes what the tasks of a write given up left besides data files (the claims they
    numbered identity values from). Failing to is only logged: the write's own error is
    the one that matters, and claims left behind are ignored by every reader."""
    try:
        _core.discard_distributed_write(
            options.uri, plan, options.storage_options or None, micro_batch_id
        )
    except DeltaError as error:
        _log.warning("the identity claims of an aborted write to %s stay: %s", options.uri, error)


#: The task property holding the id of the micro-batch a streaming query runs.
_BATCH_ID_PROPERTY = "streaming.sql.batchId"


def _micro_batch_id(plan: str) -> int | None:
    """The id of the streaming micro-batch the running task belongs to, as Spark's
    micro-batch execution sets it, when the plan's tasks number identity values (each
    micro-batch claims apart); ``None`` when they do not."""
    if "identityClaims" not in json.loads(plan):
        return None
    from pyspark import TaskContext

    context = TaskContext.get()
    text = None if context is None else context.getLocalProperty(_BATCH_ID_PROPERTY)
    if text is None:
        raise InvalidArgumentError(
            "the streaming write numbers identity values per micro-batch, but its task does "
            f"not know its micro-batch (no task property {_BATCH_ID_PROPERTY}); give the "
            "identity columns' values, or write with deltalog.write_table"
        )
    return int(text)


def commit_messages(
    options: WriteOptions,
    plan: str,
    messages: Sequence[WriterCommitMessage | None],
    micro_batch: tuple[str, str, int] | None,
) -> CommitResult:
    """Commits the files of ``messages`` in one transaction, following the plan the tasks
    followed (``plan`` when no task wrote); ``micro_batch``, ``(app_id, query_id,
    batch_id)``, makes it a streaming sink's commit of that micro-batch."""
    ours = [m for m in messages if isinstance(m, DeltalogCommitMessage)]
    plans = {m.plan for m in ours if m.files is not None}
    if len(plans) > 1:
        raise InvalidArgumentError("the tasks of one write followed different plans")
    files = [m.files for m in ours if m.files is not None]
    storage = options.storage_options or None
    table, commit = _core.commit_distributed_write(
        options.uri, plans.pop() if plans else plan, files, micro_batch, storage
    )
    return CommitResult._from_raw(commit, DeltaTable._from_raw(table, storage))


def log_unreferenced(options: WriteOptions, messages: Sequence[WriterCommitMessage | None]) -> None:
    """Logs the data files of ``messages``, which no commit references (VACUUM removes
    them)."""
    paths = [
        path
        for message in messages
        if isinstance(message, DeltalogCommitMessage) and message.files is not None
        for path in _core.distributed_file_paths(message.files)
    ]
    if paths:
        _log.warning(
            "the write to %s was aborted; these data files are not referenced by any commit: %s",
            options.uri,
            ", ".join(paths),
        )


def _nullable(schema: StructType) -> StructType:
    """``schema`` with every field, element and value nullable (Delta on Spark creates and
    writes tables that way)."""
    return StructType.fromJson(_nullable_json(schema.jsonValue()))


def _nullable_json(value: Any) -> Any:
    if isinstance(value, dict):
        result = {key: _nullable_json(item) for key, item in value.items()}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in result:
                result[key] = True
        return result
    if isinstance(value, list):
        return [_nullable_json(item) for item in value]
    return value
