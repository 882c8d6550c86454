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
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from .. import _core
from .._table import CommitResult, DeltaTable
from ..exceptions import InvalidArgumentError
from ._options import WriteOptions
from ._types import arrow_schema

if TYPE_CHECKING:
    import pyarrow
    from pyspark.sql import DataFrame

__all__ = [
    "DeltalogCommitMessage",
    "DeltalogWriter",
    "plan_write",
    "write",
]

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
        log_unreferenced(self.options, messages)


def write(
    df: DataFrame,
    uri: str | os.PathLike[str],
    mode: str = "append",
    partition_by: Sequence[str] | None = None,
    replace_where: str | None = None,
    schema_mode: str | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    user_metadata: str | None = None,
    max_records_per_file: int | None = None,
    target_file_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> None:
    """Writes ``df`` to the Delta table at ``uri`` in one commit, creating the table (with
    the DataFrame's schema and ``partition_by``) when there is none.

    ``mode``: ``"append"`` or ``"overwrite"`` (with ``replace_where``, only the partitions
    matching it, and every row written must match it). ``schema_mode``: ``"merge"`` adds new
    columns, ``"overwrite"`` (mode ``"overwrite"``) replaces schema and partitioning.
    ``app_id`` with ``app_version``: nothing is written when the table already holds that
    application at that version or later. Same as
    ``df.write.format("deltalog").mode(mode).options(...).save(uri)``.
    """
    from ._source import SOURCE_NAME, register

    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if schema_mode not in (None, "merge", "overwrite"):
        raise InvalidArgumentError(
            f"schema_mode must be 'merge' or 'overwrite', not {schema_mode!r}"
        )
    options: dict[str, str] = dict(storage_options or {})
    named: dict[str, object | None] = {
        "partitionBy": None if partition_by is None else json.dumps(list(partition_by)),
        "replaceWhere": replace_where,
        "mergeSchema": "true" if schema_mode == "merge" else None,
        "overwriteSchema": "true" if schema_mode == "overwrite" else None,
        "txnAppId": app_id,
        "txnVersion": app_version,
        "userMetadata": user_metadata,
        "maxRecordsPerFile": max_records_per_file,
        "targetFileSize": target_file_size,
    }
    options.update({key: str(value) for key, value in named.items() if value is not None})
    register(df.sparkSession)
    df.write.format(SOURCE_NAME).mode(mode).options(**options).save(os.fspath(uri))


def write_task(
    options: WriteOptions, plan: str, batches: Iterator[pyarrow.RecordBatch]
) -> DeltalogCommitMessage:
    """Writes one task's batches following ``plan``."""
    import pyarrow as pa

    first = next(batches, None)
    if first is None:
        return DeltalogCommitMessage(plan, None)
    reader = pa.RecordBatchReader.from_batches(first.schema, chain([first], batches))
    files = _core.write_distributed_files(
        options.uri, plan, reader, options.storage_options or None
    )
    return DeltalogCommitMessage(plan, files)


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
    raw = _core.commit_distributed_write(
        options.uri, plans.pop() if plans else plan, files, micro_batch, storage
    )
    return CommitResult._from_tuple(raw, DeltaTable(options.uri, storage_options=storage))


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
