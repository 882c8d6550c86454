"""Writing a table in one call: :func:`write_table`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from . import _core
from ._alter import _names
from ._results import ArrowData
from ._scan import Filter
from ._table import CommitResult, DeltaTable, _string_mapping
from .exceptions import InvalidArgumentError

__all__ = ["write_table"]


def write_table(
    table_or_uri: DeltaTable | str | os.PathLike[str],
    data: ArrowData,
    mode: str = "append",
    partition_by: Sequence[str] | None = None,
    predicate: Filter = None,
    schema_mode: str | None = None,
    configuration: Mapping[str, str] | None = None,
    target_file_size: int | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
    predicate_check: bool = True,
    cluster_by: Sequence[str] | None = None,
    post_commit_checkpoint: bool = True,
) -> CommitResult:
    """Writes ``data`` to a table and commits it as one new version, creating the table
    (with the data's schema, ``partition_by`` and ``configuration``) when there is none.

    ``data``: anything speaking the Arrow PyCapsule stream or array protocol (a pyarrow
    ``Table``, ``RecordBatch`` or ``RecordBatchReader``, a polars ``DataFrame``), read one
    batch at a time. ``mode`` for an existing table, as Delta on Spark's save modes:
    ``"append"`` adds the rows (a blind append), ``"overwrite"`` replaces them, or with
    ``predicate`` (``replaceWhere``, over data and partition columns) deletes the rows
    matching it and adds the new ones in one commit (every row written must match it, else
    :class:`ReplaceWhereMismatchError`, unless ``predicate_check`` is false, as Spark's
    ``spark.databricks.delta.replaceWhere.constraintCheck.enabled``), ``"error"`` refuses,
    ``"ignore"`` writes nothing. ``schema_mode``: ``"merge"`` adds the data's new columns to
    the table, ``"overwrite"`` (with mode ``"overwrite"``) replaces the schema and
    partitioning.
    ``app_id`` and ``app_version`` make the write idempotent: when the table already holds
    that application at that version or later, nothing is written. ``commit_info``: extra
    fields for the commit's ``commitInfo`` (JSON values). ``cluster_by``: the clustering
    columns (liquid clustering, Spark's ``CLUSTER BY``) of a table the write creates; for an
    existing table they must be its own. ``post_commit_checkpoint=False`` skips the
    checkpoint that would follow this commit when its version is a multiple of
    ``delta.checkpointInterval`` (the ``.crc`` is still written).

    Errors: :class:`SchemaMismatchError`, :class:`ConstraintViolationError`,
    :class:`UnsupportedFeatureError`, :class:`OperationNotAllowedError`,
    :class:`CommitConflictError` subclasses; when data files were written before the error,
    its ``unreferenced_files`` names them.
    """
    if isinstance(table_or_uri, DeltaTable):
        uri = table_or_uri.uri
        options = storage_options if storage_options is not None else table_or_uri._storage_options
    else:
        uri = os.fspath(table_or_uri)
        options = storage_options
    checked = _string_mapping(options, "storage_options")
    if target_file_size is not None and (
        isinstance(target_file_size, bool)
        or not isinstance(target_file_size, int)
        or target_file_size <= 0
    ):
        raise InvalidArgumentError(
            f"target_file_size must be a positive int, got {target_file_size!r}"
        )
    raw_table, raw = _core.RawDeltaTable.write_table(
        uri,
        data,
        mode,
        None if partition_by is None else list(partition_by),
        predicate,
        schema_mode,
        _string_mapping(configuration, "configuration"),
        target_file_size,
        app_id,
        app_version,
        commit_info,
        checked,
        predicate_check,
        None if cluster_by is None else _names(cluster_by, "cluster_by"),
        post_commit_checkpoint,
    )
    table = DeltaTable._from_raw(raw_table, checked)
    return CommitResult._from_raw(raw, table)
