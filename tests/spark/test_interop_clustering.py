"""Clustered tables (liquid clustering, ``CLUSTER BY``) against Delta on Spark as the oracle.

Spark creates the table; the same appends, DELETE, UPDATE, MERGE and OPTIMIZE run by Spark
on one copy and by deltalog on the other must leave the same rows; Spark reads our copy at
every version, continues it (an insert and its own OPTIMIZE) and reports the clustering
columns we kept; our OPTIMIZE tags files as Spark's does, so Spark's incremental OPTIMIZE
leaves them alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_rows


def rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i % 5}" for i in ids]),
            "v": pa.array([float(i) / 2 for i in ids]),
        }
    )


def frame(spark: Any, table: pa.Table) -> Any:
    """``table`` as a Spark DataFrame."""
    return spark.createDataFrame(table.to_pylist(), schema="id BIGINT, name STRING, v DOUBLE")


def spark_clustered(spark: Any, path: Path, properties: str = "") -> None:
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, v DOUBLE) USING delta "
        f"CLUSTER BY (name, id) {properties}"
    )
    frame(spark, rows(0, 40)).coalesce(2).write.format("delta").mode("append").save(str(path))


def commit_adds(path: Path, version: int) -> list[dict[str, Any]]:
    log = path / "_delta_log" / f"{version:020}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line]
    return [action["add"] for action in actions if "add" in action]


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
def test_changes_to_a_clustered_table_match_spark(spark: Any, tmp_path: Path, dv: bool) -> None:
    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    flag = "true" if dv else "false"
    spark_clustered(spark, theirs, f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{flag}')")
    shutil.copytree(theirs, mine)

    batch = rows(40, 20)
    frame(spark, batch).write.format("delta").mode("append").save(str(theirs))
    deltalog.write_table(str(mine), batch, mode="append")

    spark.sql(f"DELETE FROM delta.`{theirs}` WHERE id % 7 = 0")
    deltalog.DeltaTable(str(mine)).delete("id % 7 = 0")

    spark.sql(f"UPDATE delta.`{theirs}` SET v = v + 100 WHERE name = 'n1'")
    deltalog.DeltaTable(str(mine)).update({"v": "v + 100"}, "name = 'n1'")

    source = rows(50, 20)
    frame(spark, source).createOrReplaceTempView("clustered_source")
    spark.sql(
        f"MERGE INTO delta.`{theirs}` t USING clustered_source s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    (
        deltalog.DeltaTable(str(mine))
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )

    spark.sql(f"OPTIMIZE delta.`{theirs}`")
    done = deltalog.DeltaTable(str(mine)).optimize()
    assert done["clusterBy"] == ["name", "id"]
    version = deltalog.DeltaTable(str(mine)).latest_version()
    adds = commit_adds(mine, version)
    assert adds
    assert all(add["clusteringProvider"] == "liquid" for add in adds)
    assert all(json.loads(add["tags"]["ZCUBE_ZORDER_BY"]) == ["name", "id"] for add in adds)

    assert_same_rows(ours(mine), spark_rows(spark, theirs), "after the same changes")
    assert_spark_reads_every_version(spark, mine, filters=("name = 'n2'", "id > 55"))
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{mine}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["name", "id"]

    # Spark's incremental OPTIMIZE finds our cube complete: nothing to do.
    before = deltalog.DeltaTable(str(mine)).latest_version()
    spark.sql(f"OPTIMIZE delta.`{mine}`")
    assert deltalog.DeltaTable(str(mine)).latest_version() == before

    # Spark continues our table; we read what it wrote.
    frame(spark, rows(100, 5)).write.format("delta").mode("append").save(str(mine))
    spark.sql(f"OPTIMIZE delta.`{mine}` FULL")
    assert_same_rows(ours(mine), spark_rows(spark, mine), "after Spark continued")


def test_optimize_full_and_cluster_by_none_follow_spark(spark: Any, tmp_path: Path) -> None:
    """Spark changes the clustering columns: our OPTIMIZE leaves the files clustered by the
    old ones alone until ``full``; after ``CLUSTER BY NONE`` OPTIMIZE compacts and FULL is
    refused, as in Spark."""
    path = tmp_path / "t"
    spark_clustered(spark, path)
    table = deltalog.DeltaTable(str(path))
    table.optimize()
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (v)")
    assert table.optimize()["version"] is None
    done = table.optimize(full=True)
    assert done["clusterBy"] == ["v"]
    adds = commit_adds(path, table.latest_version())
    assert all(json.loads(add["tags"]["ZCUBE_ZORDER_BY"]) == ["v"] for add in adds)
    assert_same_rows(ours(path), spark_rows(spark, path), "after OPTIMIZE FULL")
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    with pytest.raises(deltalog.InvalidArgumentError, match="FULL"):
        table.optimize(full=True)
    with pytest.raises(deltalog.InvalidArgumentError, match="ZORDER"):
        table.optimize(z_order_by=["id"])


def test_spark_continues_the_clustered_tables_deltalog_creates(spark: Any, tmp_path: Path) -> None:
    """deltalog creates a clustered table (``write_table(cluster_by=...)``) and changes its
    clustering columns (``alter.cluster_by``); Spark's ``DESCRIBE DETAIL`` reports them at
    each step, Spark appends and clusters the table, and the rows agree at every version."""
    path = tmp_path / "t"
    deltalog.write_table(str(path), rows(0, 30), cluster_by=["name", "id"])
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["name", "id"]
    assert "clustering" in detail["tableFeatures"]
    frame(spark, rows(30, 10)).write.format("delta").mode("append").save(str(path))
    spark.sql(f"OPTIMIZE delta.`{path}`")
    adds = commit_adds(path, deltalog.DeltaTable(str(path)).latest_version())
    assert all(json.loads(add["tags"]["ZCUBE_ZORDER_BY"]) == ["name", "id"] for add in adds)

    table = deltalog.DeltaTable(str(path))
    table.alter.cluster_by(["v"])
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["v"]
    deltalog.write_table(str(path), rows(40, 10))
    assert table.optimize(full=True)["clusterBy"] == ["v"]
    table.alter.cluster_by(None)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == []
    frame(spark, rows(50, 5)).write.format("delta").mode("append").save(str(path))
    assert_spark_reads_every_version(spark, path)


def test_deltalog_clusters_a_table_spark_did_not_cluster(spark: Any, tmp_path: Path) -> None:
    """``alter.cluster_by`` on an unpartitioned table Spark created without clustering adds the
    feature; Spark then clusters by those columns. A partitioned table is refused, as Spark
    refuses it."""
    path = tmp_path / "plain"
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, v DOUBLE) USING delta")
    frame(spark, rows(0, 20)).write.format("delta").mode("append").save(str(path))
    deltalog.DeltaTable(str(path)).alter.cluster_by(["id"])
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["id"]
    spark.sql(f"OPTIMIZE delta.`{path}`")
    assert_spark_reads_every_version(spark, path)
    parted = tmp_path / "parted"
    spark.sql(
        f"CREATE TABLE delta.`{parted}` (id BIGINT, name STRING) USING delta PARTITIONED BY (name)"
    )
    with pytest.raises(deltalog.OperationNotAllowedError):
        deltalog.DeltaTable(str(parted)).alter.cluster_by(["id"])


def test_the_pyspark_writer_creates_clustered_tables(spark: Any, tmp_path: Path) -> None:
    """``df.write.format("deltalog").option("clusterBy", ...)`` creates a clustered table
    Delta on Spark reports as clustered by those columns."""
    from deltalog.spark import register

    register(spark)
    path = tmp_path / "t"
    writer = frame(spark, rows(0, 20)).write.format("deltalog").mode("append")
    writer.option("clusterBy", "name,id").save(str(path))
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["name", "id"]
    assert_same_rows(ours(path), spark_rows(spark, path), "written by the PySpark writer")
