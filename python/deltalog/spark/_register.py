"""Putting the ``deltalog`` data source in a Spark session: :func:`register`, and
:func:`write`, which registers it and writes a DataFrame through it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..exceptions import InvalidArgumentError
from ._source import SOURCE_NAME, DeltalogDataSource, DeltalogPushdownDataSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PUSHDOWN_CONF", "filter_pushdown_enabled", "register", "write"]

#: The session configuration that lets Python data sources take filters (pyspark >= 4.1).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Registers the ``deltalog`` data source in ``spark``'s session.

    Its readers take Spark's filters when the session allows it
    (``spark.sql.python.filterPushdown.enabled=true``, pyspark >= 4.1) at the time of the
    call: register again after changing that setting, or set the ``filterPushdown`` option
    per read.
    """
    data_source = (
        DeltalogPushdownDataSource if filter_pushdown_enabled(spark) else DeltalogDataSource
    )
    spark.dataSource.register(data_source)


def filter_pushdown_enabled(spark: SparkSession) -> bool:
    """Whether Python data sources of ``spark``'s session may take filters: pyspark >= 4.1
    and ``spark.sql.python.filterPushdown.enabled`` true."""
    try:
        from pyspark.sql.datasource import EqualTo  # noqa: F401 (present from pyspark 4.1)
    except ImportError:
        return False
    return str(spark.conf.get(PUSHDOWN_CONF, "false")).strip().lower() == "true"


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
    cluster_by: Sequence[str] | None = None,
) -> None:
    """Writes ``df`` to the Delta table at ``uri`` in one commit, creating the table (with
    the DataFrame's schema and ``partition_by``, or clustered by ``cluster_by``) when there
    is none.

    ``mode``: ``"append"`` or ``"overwrite"`` (with ``replace_where``, only the partitions
    matching it, and every row written must match it). ``schema_mode``: ``"merge"`` adds new
    columns, ``"overwrite"`` (mode ``"overwrite"``) replaces schema and partitioning.
    ``app_id`` with ``app_version``: nothing is written when the table already holds that
    application at that version or later. Same as
    ``df.write.format("deltalog").mode(mode).options(...).save(uri)``.
    """
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if schema_mode not in (None, "merge", "overwrite"):
        raise InvalidArgumentError(
            f"schema_mode must be 'merge' or 'overwrite', not {schema_mode!r}"
        )
    options: dict[str, str] = dict(storage_options or {})
    named: dict[str, object | None] = {
        "partitionBy": None if partition_by is None else json.dumps(list(partition_by)),
        "clusterBy": None if cluster_by is None else json.dumps(list(cluster_by)),
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
