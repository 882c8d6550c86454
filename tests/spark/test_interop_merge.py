"""MERGE against Delta on Spark as the oracle: the same table copied, the same MERGE run by
Spark SQL on one copy and by deltalog on the other; the rows, the row counts of the commit
metrics, the change feed and the row ids must agree, and Spark must read our result at every
version. Several merges run per table, so each shape costs one Spark table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_dml import (
    SHAPES,
    assert_same_changes,
    spark_row_tracking,
    spark_table_and_copy,
)
from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_rows

MERGE_SHAPES = [
    shape
    for shape in SHAPES
    if shape[0] in ("dv", "cow-partitioned", "column-mapping", "row-tracking", "cow-row-tracking")
]

#: The row counts Spark reports that must agree exactly.
COUNTS = [
    "numSourceRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsMatchedUpdated",
    "numTargetRowsNotMatchedBySourceUpdated",
    "numTargetRowsDeleted",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted",
]


def merge_source(rows: list[tuple[int, int, str | None]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "p": pa.array([r[1] for r in rows], pa.int32()),
            "s": pa.array([r[2] for r in rows], pa.string()),
        }
    )


UPSERT = merge_source([(1, 1, "u1"), (6, 2, "u6"), (7, 3, None), (60, 0, "n60"), (61, 1, "n61")])
MIXED = merge_source(
    [(2, 2, "del"), (3, 3, "x"), (4, 0, "del"), (62, 2, "ins"), (63, 3, "skip"), (9, 1, "y")]
)
DUPLICATES = merge_source([(10, 2, "a"), (10, 2, "b"), (11, 3, "c"), (99, 0, "none")])

#: (Spark's WHEN clauses, our clauses on a TableMerger, the source)
MERGES: list[tuple[str, Any, pa.Table]] = [
    (
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
        UPSERT,
    ),
    (
        "WHEN MATCHED AND src.s = 'del' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET s = concat(tgt.s, '+', src.s) "
        "WHEN NOT MATCHED AND src.s != 'skip' THEN INSERT (id, p, s) "
        "VALUES (src.id, src.p, upper(src.s)) "
        "WHEN NOT MATCHED BY SOURCE AND tgt.id > 45 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE AND tgt.id < 1 THEN UPDATE SET s = 'orphan'",
        lambda m: (
            m.when_matched_delete("src.s = 'del'")
            .when_matched_update({"s": "concat(tgt.s, '+', src.s)"})
            .when_not_matched_insert(
                {"id": "src.id", "p": "src.p", "s": "upper(src.s)"}, "src.s != 'skip'"
            )
            .when_not_matched_by_source_delete("tgt.id > 45")
            .when_not_matched_by_source_update({"s": "'orphan'"}, "tgt.id < 1")
        ),
        MIXED,
    ),
    (
        "WHEN MATCHED THEN DELETE",
        lambda m: m.when_matched_delete(),
        DUPLICATES,
    ),
]


def spark_source(spark: Any, data: pa.Table) -> None:
    rows = [tuple(r.values()) for r in data.to_pylist()]
    frame = spark.createDataFrame(rows, schema="id BIGINT, p INT, s STRING")
    frame.createOrReplaceTempView("merge_source")


def commit_metrics(path: Path, version: int) -> dict[str, str]:
    text = (path / "_delta_log" / f"{version:020}.json").read_text()
    for line in text.splitlines():
        action = json.loads(line) if line else {}
        if "commitInfo" in action:
            metrics: dict[str, str] = action["commitInfo"]["operationMetrics"]
            return metrics
    return {}


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"), MERGE_SHAPES, ids=[s[0] for s in MERGE_SHAPES]
)
def test_merges_agree_with_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    table = deltalog.DeltaTable(mine)
    for clauses, ours_clauses, data in MERGES:
        spark_source(spark, data)
        spark.sql(
            f"MERGE INTO delta.`{theirs}` tgt USING merge_source src ON tgt.id = src.id {clauses}"
        )
        merger = table.merge(data, on="tgt.id = src.id", source_alias="src", target_alias="tgt")
        result = ours_clauses(merger).execute()
        assert result.committed, clauses
        assert_same_rows(ours(mine), spark_rows(spark, theirs), f"{name}: after {clauses}")
        expected = commit_metrics(theirs, result.version)
        for count in COUNTS:
            assert result.metrics[count] == int(expected[count]), (count, clauses)
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    if "delta.enableRowTracking" in properties:
        assert_same_row_tracking(spark_row_tracking(spark, mine), spark_row_tracking(spark, theirs))


def assert_same_row_tracking(
    mine: list[tuple[int, int, int]], theirs: list[tuple[int, int, int]]
) -> None:
    """Rows of the original table keep the same row ids; every row has the same row commit
    version. Inserted rows get fresh ids whose values follow the layout of the files written
    (a row id is its file's base id plus its position), so only their uniqueness is compared.
    """
    assert [(i, v) for i, _, v in mine] == [(i, v) for i, _, v in theirs]
    original = {i for i, _, v in theirs if i < 50}
    assert [r for r in mine if r[0] in original] == [r for r in theirs if r[0] in original]
    assert len({r for _, r, _ in mine}) == len(mine)


EVOLUTION_SHAPES = [
    ("dv", {"delta.enableDeletionVectors": "true"}),
    ("column-mapping", {"delta.columnMapping.mode": "name"}),
    ("type-widening", {"delta.enableTypeWidening": "true"}),
]


@pytest.mark.parametrize(
    ("name", "properties"), EVOLUTION_SHAPES, ids=[s[0] for s in EVOLUTION_SHAPES]
)
def test_schema_evolution_and_nested_sets_agree_with_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str]
) -> None:
    """Twins take the same merges with schema evolution (``*`` clauses adding a column and a
    struct field from a source whose ``s.a`` is wider, an explicit ``SET`` adding a column)
    and the same nested ``SET`` targets (``UPDATE SET s.c = ...``, a merge setting
    ``t.s.b``), Spark's through delta-spark's ``DeltaTable`` and SQL, ours through deltalog;
    rows and schema agree after each, Spark reads every version of ours and appends to it,
    and we append to Spark's."""
    from delta.tables import DeltaTable as SparkDeltaTable

    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    tblproperties = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    for path in (theirs, mine):
        spark.sql(
            f"CREATE TABLE delta.`{path}` (id BIGINT, s STRUCT<a: INT, c: INT>) USING delta"
            + (f" TBLPROPERTIES ({tblproperties})" if properties else "")
        )
        spark.sql(
            f"INSERT INTO delta.`{path}` VALUES (1, named_struct('a', 1, 'c', 10)), "
            "(2, named_struct('a', 2, 'c', 20)), (3, NULL), (4, named_struct('a', 4, 'c', 40))"
        )
    table = deltalog.DeltaTable(mine)

    def agree(step: str) -> None:
        assert_same_rows(ours(mine), spark_rows(spark, theirs), f"{name}: after {step}")
        spark_schema = spark.read.format("delta").load(str(theirs)).schema.simpleString()
        our_schema = spark.read.format("delta").load(str(mine)).schema.simpleString()
        assert our_schema == spark_schema, step

    wider = spark.createDataFrame(
        [(1, (5, "x"), "n1"), (2, None, "n2"), (3, (7, "z"), "n3"), (9, (2**31 - 1, "w"), "n9")],
        "id BIGINT, s STRUCT<a: BIGINT, b: STRING>, n STRING",
    )
    spark_merge = SparkDeltaTable.forPath(spark, str(theirs)).alias("t")
    spark_merge.merge(
        wider.alias("src"), "t.id = src.id"
    ).withSchemaEvolution().whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    table.merge(
        wider.toArrow(), "t.id = src.id", "src", "t", merge_schema=True
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    agree("UPDATE SET * / INSERT * with schema evolution")

    spark.sql(f"UPDATE delta.`{theirs}` SET s.c = s.a * 2 WHERE id <= 2")
    table.update(set={"s.c": "s.a * 2"}, predicate="id <= 2")
    agree("UPDATE SET s.c")

    names = spark.createDataFrame([(1, "up"), (3, "three"), (50, "none")], "id BIGINT, m STRING")
    SparkDeltaTable.forPath(spark, str(theirs)).alias("t").merge(
        names.alias("src"), "t.id = src.id"
    ).whenMatchedUpdate(set={"t.s.b": "upper(src.m)"}).execute()
    table.merge(names.toArrow(), "t.id = src.id", "src", "t").when_matched_update(
        {"t.s.b": "upper(src.m)"}
    ).execute()
    agree("a merge setting t.s.b")

    SparkDeltaTable.forPath(spark, str(theirs)).alias("t").merge(
        names.alias("src"), "t.id = src.id"
    ).withSchemaEvolution().whenMatchedUpdate(set={"m": "src.m"}).execute()
    table.merge(
        names.toArrow(), "t.id = src.id", "src", "t"
    ).with_schema_evolution().when_matched_update({"m": "src.m"}).execute()
    agree("SET m = src.m with schema evolution")

    assert_spark_reads_every_version(spark, mine, ("id > 2",))
    spark.sql(
        f"INSERT INTO delta.`{mine}` (id, s, n, m) "
        "VALUES (70, named_struct('a', 7, 'c', 70, 'b', 'b70'), 'n70', 'm70')"
    )
    deltalog.write_table(
        theirs,
        spark.read.format("delta").load(str(mine)).where("id = 70").toArrow(),
    )
    agree("each engine appended to the other's table")
