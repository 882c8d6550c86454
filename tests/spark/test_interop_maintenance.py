"""Table maintenance checked against Delta Lake on Spark: after our optimize, restore and
vacuum Spark reads the same rows as we do at every version whose files are retained and shows
our operations in ``DESCRIBE HISTORY``; Spark's own ``VACUUM ... DRY RUN`` finds the files
ours finds; tables Spark wrote, with deletion vectors, take our optimize and vacuum."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

import deltalog

from .test_interop_read import assert_same_rows


def spark_rows(spark: Any, path: Path, version: int | None = None) -> Any:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(str(path)).toArrow()


def ours(path: Path, version: int | None = None) -> Any:
    return deltalog.read_table(str(path), version=version)


def readable_versions(path: Path) -> list[int]:
    """The versions all of whose data files are still there."""
    table = deltalog.DeltaTable(path)
    kept = []
    for version in range(table.latest_version() + 1):
        files = pa.table(table.snapshot(version).files()).column("path").to_pylist()
        if all((path / name).exists() for name in files):
            kept.append(version)
    return kept


def spark_history(spark: Any, path: Path) -> dict[int, str]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return {row["version"]: row["operation"] for row in rows}


def spark_vacuum_dry_run(spark: Any, path: Path) -> list[str]:
    rows = spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN").collect()
    root = os.path.realpath(path)
    found = []
    for row in rows:
        local = urlparse(row["path"]).path
        found.append(os.path.relpath(os.path.realpath(local), root))
    return sorted(found)


def test_spark_reads_our_optimized_restored_vacuumed_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "maintained"
    for i, part in enumerate(["x", "a b", "a=b/c%d", None, "é", "x"]):
        data = pa.table({"id": [i, i + 100], "p": pa.array([part, part], pa.string())})
        deltalog.write_table(path, data, partition_by=["p"])
    table = deltalog.DeltaTable(path)
    optimized = table.optimize(z_order_by=["id"])["version"]
    restored = table.restore(3)["version"]
    deltalog.write_table(path, pa.table({"id": [7], "p": ["x"]}), partition_by=["p"])
    ours_dry_run = table.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert ours_dry_run == spark_vacuum_dry_run(spark, path)
    assert ours_dry_run, "the optimized files removed by the restore can go"
    deleted = table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert deleted == ours_dry_run
    versions = readable_versions(path)
    assert optimized not in versions
    assert table.latest_version() in versions
    assert restored in versions
    for version in versions:
        assert_same_rows(spark_rows(spark, path, version), ours(path, version), f"v{version}")
    operations = spark_history(spark, path)
    assert operations[optimized] == "OPTIMIZE"
    assert operations[restored] == "RESTORE"
    latest = table.latest_version()
    assert (operations[latest - 1], operations[latest]) == ("VACUUM START", "VACUUM END")


def test_spark_table_with_deletion_vectors_takes_our_optimize_and_vacuum(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "spark-dv"
    name = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {name} (id INT, p STRING) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    for chunk in range(3):
        values = ", ".join(f"({chunk * 10 + i}, '{'ab'[i % 2]}')" for i in range(10))
        spark.sql(f"INSERT INTO {name} VALUES {values}")
    spark.sql(f"DELETE FROM {name} WHERE id % 3 = 0")
    table = deltalog.DeltaTable(path)
    assert pa.table(table.snapshot().deletion_vectors()).num_rows > 0
    before = spark_rows(spark, path)
    metrics = table.optimize()
    assert metrics["numDeletionVectorsRemoved"] > 0
    assert pa.table(table.snapshot().deletion_vectors()).num_rows == 0
    assert_same_rows(spark_rows(spark, path), before, "after our optimize")
    assert_same_rows(ours(path), before, "ours after our optimize")
    assert spark_history(spark, path)[metrics["version"]] == "OPTIMIZE"
    spark.sql(f"DELETE FROM {name} WHERE id = 1")
    ours_dry_run = table.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert ours_dry_run == spark_vacuum_dry_run(spark, path)
    table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert_same_rows(ours(path), spark_rows(spark, path), "after our vacuum")
    assert spark_rows(spark, path).num_rows == before.num_rows - 1
    spark.sql(f"INSERT INTO {name} VALUES (1000, 'a')")
    assert_same_rows(ours(path), spark_rows(spark, path), "Spark writes after our vacuum")
    shutil.rmtree(path)


def test_spark_sees_row_ids_kept_by_our_optimize(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "spark-row-tracking"
    name = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {name} (id INT, p STRING) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
        "'delta.enableDeletionVectors' = 'true')"
    )
    for chunk in range(3):
        values = ", ".join(f"({chunk * 10 + i}, '{'ab'[i % 2]}')" for i in range(10))
        spark.sql(f"INSERT INTO {name} VALUES {values}")
    spark.sql(f"DELETE FROM {name} WHERE id % 4 = 0")
    spark.sql(f"UPDATE {name} SET id = id + 100 WHERE id = 5")
    query = (
        f"SELECT id, _metadata.row_id AS row_id, "
        f"_metadata.row_commit_version AS row_commit_version FROM {name}"
    )

    def tracked() -> list[tuple[int, int, int]]:
        return sorted(tuple(row) for row in spark.sql(query).collect())

    before = tracked()
    metrics = deltalog.DeltaTable(path).optimize()
    assert metrics["numFilesRemoved"] > 2
    assert tracked() == before
    assert spark_history(spark, path)[metrics["version"]] == "OPTIMIZE"
    spark.sql(f"INSERT INTO {name} VALUES (1000, 'a')")
    after = tracked()
    assert len({row[1] for row in after}) == len(after)
    shutil.rmtree(path)


def test_spark_reads_our_converted_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "parquet"
    frame = spark.createDataFrame(
        [(i, f"s{i}", i % 2) for i in range(10)], "id INT, s STRING, k INT"
    )
    frame.write.partitionBy("k").parquet(str(path))
    table = deltalog.convert_to_delta(path, partition_by={"k": "integer"})
    assert table.snapshot().version == 0
    assert_same_rows(spark_rows(spark, path), ours(path), "converted")
    assert spark_history(spark, path)[0] == "CONVERT"
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (99, 'x', 1)")
    assert_same_rows(ours(path), spark_rows(spark, path), "Spark writes to the converted table")


PARTITION_VALUES = ["é", "日本語", "emoji 🚀", "x\u00a0y", "a b", "a%b", "c\u0085d", "plain"]


def partition_dirs(path: Path) -> list[str]:
    """The partition directories of the live files, as the log's `add.path` spells them."""
    commits = pa.table(deltalog.DeltaTable(path).commits(0)).to_pylist()
    adds = [json.loads(row["json"])["path"] for row in commits if row["action"] == "add"]
    return sorted(name.rsplit("/", 1)[0] for name in adds)


def test_spark_vacuum_keeps_our_files_under_non_ascii_partition_values(
    spark: Any, tmp_path: Path
) -> None:
    """Differential seed 344: Delta on Spark's VACUUM matches `add.path` against its listing
    in `Path.toUri` form, where non-ASCII stays as it is. Paths written as `%C3%A9` were files
    it did not know, and it deleted them while they were live."""
    ours_path, spark_path = tmp_path / "ours", tmp_path / "spark"
    data = pa.table(
        {
            "id": pa.array(range(len(PARTITION_VALUES)), pa.int64()),
            "p": pa.array(PARTITION_VALUES, pa.string()),
        }
    )
    deltalog.write_table(ours_path, data, partition_by=["p"])
    spark.createDataFrame(data.to_pylist(), "id long, p string").write.format("delta").partitionBy(
        "p"
    ).save(str(spark_path))
    assert partition_dirs(ours_path) == partition_dirs(spark_path)
    assert spark_vacuum_dry_run(spark, ours_path) == []
    spark.sql(f"VACUUM delta.`{ours_path}` RETAIN 0 HOURS")
    assert_same_rows(spark_rows(spark, ours_path), data, "Spark's read after its vacuum")
    assert_same_rows(ours(ours_path), data, "our read after Spark's vacuum")
