"""Overwrites with a predicate (``replaceWhere``) over data and partition columns against Delta
on Spark as the oracle: the same table copied, the same rows written by Spark with
``.option("replaceWhere", ...)`` into one copy and by deltalog into the other (``write_table``
and the ``deltalog`` Spark data source); rows, the change feed and the commit parameters must
agree, and Spark must read our result at every version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

import deltalog
import deltalog.spark

from .test_interop_dml import assert_same_changes, spark_table_and_copy
from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_rows

#: (name, table properties, partitioned); every table has the change data feed on.
SHAPES = [
    ("dv", {"delta.enableDeletionVectors": "true"}, False),
    ("cow", {"delta.enableDeletionVectors": "false"}, False),
    ("cow-partitioned", {"delta.enableDeletionVectors": "false"}, True),
    (
        "cow-row-tracking",
        {"delta.enableDeletionVectors": "false", "delta.enableRowTracking": "true"},
        False,
    ),
]

#: (rows written as (id, p, s), the replaceWhere predicate)
REPLACES: list[tuple[list[tuple[int, int, str | None]], str]] = [
    ([(1, 1, "new1"), (2, 2, None)], "id < 3"),
    ([(41, 1, "x"), (45, 1, "y")], "id > 40 AND p = 1"),
    ([(100, 3, "p3")], "p = 3"),
    ([(7, 3, None)], "s IS NULL"),
]

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("s", pa.string())])


def arrow_rows(values: list[tuple[int, int, str | None]]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, row, strict=True)) for row in values], schema=SCHEMA
    )


def spark_replace(spark: Any, path: Path, values: list[Any], predicate: str, fmt: str) -> None:
    frame = spark.createDataFrame(values, schema="id BIGINT, p INT, s STRING")
    frame.write.format(fmt).mode("overwrite").option("replaceWhere", predicate).save(str(path))


def commit_predicate(path: Path, version: int) -> str:
    text = (path / "_delta_log" / f"{version:020}.json").read_text()
    info = next(json.loads(line) for line in text.splitlines() if '"commitInfo"' in line)
    return str(info["commitInfo"]["operationParameters"]["predicate"])


def test_replace_where_agrees_with_spark(spark: Any, tmp_path: Path) -> None:
    for name, properties, partitioned in SHAPES:
        folder = tmp_path / name
        theirs, mine, start = spark_table_and_copy(spark, folder, properties, partitioned)
        for values, predicate in REPLACES:
            spark_replace(spark, theirs, values, predicate, "delta")
            result = deltalog.write_table(
                mine, arrow_rows(values), mode="overwrite", predicate=predicate
            )
            assert result.committed, (name, predicate)
            assert_same_rows(ours(mine), spark_rows(spark, theirs), f"{name}: {predicate}")
        latest = deltalog.DeltaTable(mine).latest_version()
        assert commit_predicate(mine, latest) == commit_predicate(theirs, latest) == "s IS NULL"
        assert_same_changes(spark, mine, theirs, start, name)
        assert_spark_reads_every_version(spark, mine, ("id > 10",))


def test_spark_data_source_replace_where_on_data_columns(spark: Any, tmp_path: Path) -> None:
    deltalog.spark.register(spark)
    properties = {"delta.enableDeletionVectors": "false"}
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, True)
    for values, predicate in REPLACES[:2]:
        spark_replace(spark, theirs, values, predicate, "delta")
        spark_replace(spark, mine, values, predicate, "deltalog")
        assert_same_rows(ours(mine), spark_rows(spark, theirs), predicate)
    assert_same_changes(spark, mine, theirs, start)
