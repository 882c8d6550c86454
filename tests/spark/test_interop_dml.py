"""Row-level deletes against Delta on Spark as the oracle: the same table copied, the same
DELETE run by Spark SQL on one copy and by deltalog on the other; the rows, the change feed
and the row ids must agree, and Spark must read our result at every version. A golden table
Spark wrote with deletion vectors takes our deletes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import deltalog

from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_rows

#: (name, table properties, partitioned)
SHAPES = [
    ("dv", {"delta.enableDeletionVectors": "true"}, False),
    ("dv-partitioned", {"delta.enableDeletionVectors": "true"}, True),
    ("cow", {"delta.enableDeletionVectors": "false"}, False),
    ("cow-partitioned", {"delta.enableDeletionVectors": "false"}, True),
    (
        "column-mapping",
        {"delta.enableDeletionVectors": "true", "delta.columnMapping.mode": "name"},
        True,
    ),
    (
        "cow-column-mapping",
        {"delta.enableDeletionVectors": "false", "delta.columnMapping.mode": "name"},
        False,
    ),
    (
        "row-tracking",
        {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"},
        False,
    ),
    (
        "cow-row-tracking",
        {"delta.enableDeletionVectors": "false", "delta.enableRowTracking": "true"},
        False,
    ),
]

DELETES = ["id IN (0, 5, 10, 15, 20, 25, 30)", "p = 2", "s IS NULL OR id > 40", "id < 3"]


def spark_table(spark: Any, path: Path, properties: dict[str, str], partitioned: bool) -> None:
    props = {**properties, "delta.enableChangeDataFeed": "true"}
    text = ", ".join(f"'{key}' = '{value}'" for key, value in props.items())
    partition = "PARTITIONED BY (p)" if partitioned else ""
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, p INT, s STRING) USING delta {partition} "
        f"TBLPROPERTIES ({text})"
    )
    spark.sql(
        f"INSERT INTO delta.`{path}` SELECT id, CAST(id % 4 AS INT), "
        "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('s', id) END FROM range(0, 50, 1, 3)"
    )


def spark_table_and_copy(
    spark: Any, folder: Path, properties: dict[str, str], partitioned: bool
) -> tuple[Path, Path, int]:
    """Spark's table (``spark_table``) at ``folder/spark`` and a copy of it at
    ``folder/ours``; returns both paths and the version their next commit gets."""
    theirs, mine = folder / "spark", folder / "ours"
    spark_table(spark, theirs, properties, partitioned)
    shutil.copytree(theirs, mine)
    return theirs, mine, deltalog.DeltaTable(mine).latest_version() + 1


def assert_same_changes(
    spark: Any, mine: Path, theirs: Path, start: int, context: str = ""
) -> None:
    """The change feed of ``mine`` from version ``start``, as we read it and as Spark reads
    it, equals Spark's of ``theirs``."""
    assert our_changes(mine, start) == spark_changes(spark, theirs, start), context
    assert spark_changes(spark, mine, start) == spark_changes(spark, theirs, start), context


def spark_changes(spark: Any, path: Path, start: int) -> list[tuple[Any, ...]]:
    frame = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", start)
        .load(str(path))
    )
    rows = frame.select("id", "p", "s", "_change_type", "_commit_version").collect()
    return sorted((tuple(row) for row in rows), key=repr)


def our_changes(path: Path, start: int) -> list[tuple[Any, ...]]:
    table = deltalog.DeltaTable(path).changes(start).to_pyarrow()
    columns = ["id", "p", "s", "_change_type", "_commit_version"]
    return sorted((tuple(row[c] for c in columns) for row in table.to_pylist()), key=repr)


def spark_row_ids(spark: Any, path: Path) -> list[tuple[int, int]]:
    frame = spark.read.format("delta").load(str(path)).select("id", "_metadata.row_id")
    return sorted((row[0], row[1]) for row in frame.collect())


@pytest.mark.parametrize(("name", "properties", "partitioned"), SHAPES, ids=[s[0] for s in SHAPES])
def test_deletes_agree_with_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    table = deltalog.DeltaTable(mine)
    for predicate in DELETES:
        spark.sql(f"DELETE FROM delta.`{theirs}` WHERE {predicate}")
        result = table.delete(predicate)
        assert result.committed, predicate
        assert_same_rows(ours(mine), spark_rows(spark, theirs), f"{name}: after {predicate}")
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    if "delta.enableRowTracking" in properties:
        assert spark_row_ids(spark, mine) == spark_row_ids(spark, theirs)


def test_golden_spark_dv_table_takes_our_deletes(
    spark: Any, tmp_path: Path, golden_tables: Any
) -> None:
    root = golden_tables.root("dv-with-columnmapping")
    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    shutil.copytree(root / "delta", theirs)
    shutil.copytree(root / "delta", mine)
    first = spark_rows(spark, theirs)
    column = next(field.name for field in first.schema if str(field.type) in ("int64", "int32"))
    values = sorted(first.column(column).to_pylist())
    predicate = f"{column} < {values[len(values) // 3]}"
    spark.sql(f"DELETE FROM delta.`{theirs}` WHERE {predicate}")
    deltalog.DeltaTable(mine).delete(predicate)
    assert_same_rows(ours(mine), spark_rows(spark, theirs), "golden after delete")
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "Spark reads ours")


#: (Spark's SET clause, our set mapping, the WHERE predicate)
UPDATES = [
    ("s = concat(s, '!'), id = id + 100", {"s": "concat(s, '!')", "id": "id + 100"}, "id > 40"),
    ("s = upper(s)", {"s": "upper(s)"}, "p = 1"),
    (
        "s = CASE WHEN id > 20 THEN 'big' ELSE coalesce(lower(s), 'none') END",
        {"s": "CASE WHEN id > 20 THEN 'big' ELSE coalesce(lower(s), 'none') END"},
        "id < 30",
    ),
    ("p = 7, s = substring(s, 2, 2)", {"p": "7", "s": "substring(s, 2, 2)"}, "s IS NULL OR id = 3"),
]

UPDATE_SHAPES = [shape for shape in SHAPES if shape[0] != "dv-partitioned"]


def spark_row_tracking(spark: Any, path: Path) -> list[tuple[int, int, int]]:
    frame = spark.read.format("delta").load(str(path))
    rows = frame.select("id", "_metadata.row_id", "_metadata.row_commit_version").collect()
    return sorted((row[0], row[1], row[2]) for row in rows)


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"), UPDATE_SHAPES, ids=[s[0] for s in UPDATE_SHAPES]
)
def test_updates_agree_with_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    table = deltalog.DeltaTable(mine)
    for spark_set, our_set, predicate in UPDATES:
        spark.sql(f"UPDATE delta.`{theirs}` SET {spark_set} WHERE {predicate}")
        result = table.update(our_set, predicate=predicate)
        assert result.committed, predicate
        assert_same_rows(ours(mine), spark_rows(spark, theirs), f"{name}: after {spark_set}")
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    if "delta.enableRowTracking" in properties:
        assert spark_row_tracking(spark, mine) == spark_row_tracking(spark, theirs)


#: (Spark's statement, our call) pairs with computed predicates, run in order.
COMPUTED = [
    ("DELETE FROM {table} WHERE id % 3 = 0", ("delete", None, "id % 3 = 0")),
    (
        "UPDATE {table} SET s = concat(s, '!') WHERE id * 2 > 60 AND p + 1 = 2",
        ("update", {"s": "concat(s, '!')"}, "id * 2 > 60 AND p + 1 = 2"),
    ),
    (
        "DELETE FROM {table} WHERE lower(s) LIKE 's1%' OR CAST(p AS BIGINT) * 10 = id",
        ("delete", None, "lower(s) LIKE 's1%' OR CAST(p AS BIGINT) * 10 = id"),
    ),
    (
        "UPDATE {table} SET s = upper(s) WHERE CASE WHEN p > 1 THEN id ELSE -id END < 20",
        ("update", {"s": "upper(s)"}, "CASE WHEN p > 1 THEN id ELSE -id END < 20"),
    ),
]


def test_computed_predicates_agree_with_spark(spark: Any, tmp_path: Path) -> None:
    properties = {"delta.enableDeletionVectors": "true"}
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, True)
    table = deltalog.DeltaTable(mine)
    for statement, (kind, assignments, predicate) in COMPUTED:
        spark.sql(statement.format(table=f"delta.`{theirs}`"))
        if kind == "delete":
            result = table.delete(predicate)
        else:
            assert assignments is not None
            result = table.update(assignments, predicate=predicate)
        assert result.committed, statement
        assert_same_rows(ours(mine), spark_rows(spark, theirs), f"after {statement}")
    assert_same_changes(spark, mine, theirs, start)
