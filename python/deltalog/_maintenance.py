"""Table maintenance: :func:`vacuum`, :func:`optimize`, :func:`restore`, :func:`clone`
(behind the methods of :class:`DeltaTable`) and :func:`convert` (behind
:func:`convert_to_delta`), as Delta on Spark's ``VACUUM``, ``OPTIMIZE``, ``RESTORE``,
``SHALLOW CLONE`` and ``CONVERT TO DELTA``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from . import _core
from ._results import SchemaLike
from ._scan import Filter
from ._time import to_epoch_ms
from .exceptions import InvalidArgumentError

__all__ = ["clone", "convert", "optimize", "restore", "vacuum"]


def vacuum(
    table: _core.RawDeltaTable,
    retention_hours: float | None = None,
    dry_run: bool = True,
    enforce_retention_duration: bool = True,
) -> list[str]:
    """Deletes the files of ``table`` that no version within the retention still needs, and
    returns their paths (relative to the table root, sorted); with ``dry_run`` (the default)
    only lists them.

    Kept: the files of the latest version and their deletion vectors, files removed less
    than ``retention_hours`` ago (default: the table's ``delta.deletedFileRetentionDuration``,
    7 days), files modified less than that ago (writes in flight), ``_delta_log`` and every
    hidden path (a segment starting with ``_`` or ``.``, other than partition directories).
    A retention below the table's raises :class:`OperationNotAllowedError` unless
    ``enforce_retention_duration`` is false. A run that deletes commits ``VACUUM START``
    and ``VACUUM END``, as Delta on Spark does.
    """
    if retention_hours is not None and not isinstance(retention_hours, (int, float)):
        raise InvalidArgumentError("retention_hours must be a number of hours")
    hours = None if retention_hours is None else float(retention_hours)
    done = _core.vacuum(table, hours, bool(dry_run), bool(enforce_retention_duration))
    return list(done["files"])


def optimize(
    table: _core.RawDeltaTable,
    filter: Filter = None,
    target_size: int | None = None,
    z_order_by: Sequence[str] | None = None,
    *,
    dry_run: bool = False,
    full: bool = False,
) -> dict[str, Any]:
    """Compacts the small files of each partition of ``table`` and rewrites the files that
    have deletion vectors without their deleted rows, in one ``OPTIMIZE`` commit of
    ``dataChange=false`` actions; returns Spark's optimize metrics (``numFilesAdded``,
    ``numFilesRemoved``, ``filesAdded`` and ``filesRemoved`` with ``min``, ``max``,
    ``avg``, ``totalFiles``, ``totalSize``, ``partitionsOptimized``, ...) and ``version``
    (``None`` when nothing needed rewriting).

    ``filter``: only the partitions matching it (partition columns only). ``target_size``:
    the size of the files written and below which files are compacted (default the table's
    ``delta.targetFileSize``, else 1 GiB). ``z_order_by``: sort the rows of each rewritten
    bin by the Z-order of these columns. Appends committed concurrently are kept.

    On a clustered table (liquid clustering, Spark's ``CLUSTER BY``) it clusters instead, as
    Delta on Spark's ``OPTIMIZE`` does: the files not yet clustered (and small clusters of
    its own) are rewritten with their rows along the Hilbert curve of the clustering
    columns, tagged as Spark tags them; ``clusterBy`` in the result names the columns.
    ``filter`` and ``z_order_by`` are refused there, as Spark refuses them. ``full``
    (``OPTIMIZE FULL``, clustered tables only) reclusters also the files clustered by other
    columns.

    ``dry_run``: plan exactly as the real run (the same files, the same bins) but write and
    commit nothing; ``version`` is ``None``, the removal metrics are those the run would
    record, the added ones empty, and ``filesToRewrite`` lists the files it would rewrite
    (relative to the table root, as the log names them; empty unless ``dry_run``). The dict
    also holds ``dry_run``.
    """
    if target_size is not None and (not isinstance(target_size, int) or target_size <= 0):
        raise InvalidArgumentError("target_size must be a positive number of bytes")
    if isinstance(z_order_by, str):
        z_order_by = [z_order_by]
    columns = None if z_order_by is None else list(z_order_by)
    return dict(_core.optimize(table, filter, target_size, columns, bool(dry_run), bool(full)))


def restore(
    table: _core.RawDeltaTable,
    version: int | None = None,
    timestamp: datetime | date | str | None = None,
    *,
    dry_run: bool = False,
) -> dict[str, int | None]:
    """Commits a new version of ``table`` whose state equals that of ``version`` (or of the
    newest version committed at or before ``timestamp``): the files, schema, partitioning
    and properties of then; the protocol is never downgraded. Returns Spark's RESTORE
    metrics (``numRestoredFiles``, ``numRemovedFiles``, ``tableSizeAfterRestore``, ...)
    with ``version`` (the commit) and ``restored_version``.

    Restoring the latest version commits nothing and returns ``version`` ``None`` with no
    files restored or removed, as Delta on Spark 4.4 does. Raises
    :class:`MissingDataFilesError` when files of that version were vacuumed.

    ``dry_run``: make every check (the versions, the files to bring back exist, the table is
    writable) and return the metrics with ``version`` ``None``, committing nothing. The dict
    also holds ``dry_run``.
    """
    if (version is None) == (timestamp is None):
        raise InvalidArgumentError("give a version or a timestamp to restore")
    if version is not None and (not isinstance(version, int) or version < 0):
        raise InvalidArgumentError("version must be a non-negative integer")
    timestamp_ms = None if timestamp is None else to_epoch_ms(timestamp)
    return dict(_core.restore(table, version, timestamp_ms, bool(dry_run)))


def clone(
    table: _core.RawDeltaTable,
    target: str | os.PathLike[str],
    version: int | None = None,
    timestamp: datetime | date | str | None = None,
    *,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
    target_storage_options: dict[str, str] | None = None,
) -> _core.RawDeltaTable:
    """Shallow-clones ``table`` at ``version`` (or at the newest version committed at or
    before ``timestamp``; else the latest) to ``target`` in one ``CLONE`` commit, as Delta on
    Spark's ``SHALLOW CLONE``, and returns the target: its files are the source's, referenced
    by absolute paths; its metadata is the source's with ``properties`` on top and a new
    table id. ``replace`` clones over an existing Delta table that holds no live file."""
    if version is not None and timestamp is not None:
        raise InvalidArgumentError("give a version or a timestamp to clone at, not both")
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 0
    ):
        raise InvalidArgumentError("version must be a non-negative integer")
    if properties is not None and not (
        isinstance(properties, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items())
    ):
        raise InvalidArgumentError("properties must map strings to strings")
    timestamp_ms = None if timestamp is None else to_epoch_ms(timestamp)
    return _core.shallow_clone(
        table,
        os.fspath(target),
        version,
        timestamp_ms,
        bool(replace),
        None if properties is None else dict(properties),
        target_storage_options,
    )


def convert(
    uri: str | os.PathLike[str],
    partition_by: SchemaLike | Mapping[str, str] | None,
    storage_options: dict[str, str] | None,
) -> _core.RawDeltaTable:
    """Turns the directory of Parquet files at ``uri`` into a Delta table in place (see
    :func:`convert_to_delta`) and returns it."""
    return _core.convert_to_delta(os.fspath(uri), partition_by, storage_options)
