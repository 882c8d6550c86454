"""Tables written by deltalog, read and extended by Delta Lake on Spark; and tables written by
Spark, extended by deltalog. Spark must read exactly our rows at every version (its data
skipping trusts our statistics, so filtered reads check them too), describe the history and
details, and append, update and delete on top; we must read Spark's result."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_read import assert_same_rows


def spark_rows(spark: Any, path: Path, version: int | None = None, where: str | None = None) -> Any:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    frame = reader.load(str(path))
    if where is not None:
        frame = frame.where(where)
    return frame.toArrow()


def ours(path: Path, version: int | None = None, where: str | None = None) -> Any:
    return deltalog.read_table(str(path), version=version, filter=where)


def assert_spark_reads_every_version(spark: Any, path: Path, filters: tuple[str, ...] = ()) -> None:
    latest = deltalog.DeltaTable(path).latest_version()
    for version in range(latest + 1):
        assert_same_rows(spark_rows(spark, path, version), ours(path, version), f"v{version}")
    for where in filters:
        assert_same_rows(spark_rows(spark, path, where=where), ours(path, where=where), where)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert sorted(row["version"] for row in history) == list(range(latest + 1))
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert detail["format"] == "delta"
    assert detail["numFiles"] == deltalog.DeltaTable(path).snapshot().num_files


def spark_extends(spark: Any, path: Path, insert: str, update: str, delete: str) -> None:
    """Spark appends, updates and deletes on our table; we read what Spark reads."""
    table = f"delta.`{path}`"
    spark.sql(f"INSERT INTO {table} {insert}")
    spark.sql(f"UPDATE {table} SET {update}")
    spark.sql(f"DELETE FROM {table} WHERE {delete}")
    assert_same_rows(ours(path), spark_rows(spark, path), "after Spark's changes")


def test_plain_table_written_by_us(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "plain"
    deltalog.write_table(path, pa.table({"id": [1, 2, 3], "s": ["a", None, "c"]}))
    deltalog.write_table(path, pa.table({"id": [4], "s": ["d"]}))
    deltalog.write_table(path, pa.table({"id": [5, 6], "s": ["e", "f"]}), mode="overwrite")
    deltalog.write_table(path, pa.table({"id": [7], "s": ["g"]}), app_id="job", app_version=1)
    assert_spark_reads_every_version(spark, path, ("id > 5", "s = 'e'", "s IS NULL"))
    spark_extends(spark, path, "VALUES (8, 'h')", "s = 'updated' WHERE id = 5", "id = 6")


def test_partitioned_table_with_nulls_and_special_characters(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "partitioned"
    data = pa.table(
        {
            "id": list(range(7)),
            "p_str": ["x", "a b", "a=b/c%d", None, "é", "", "x"],
            "p_int": pa.array([1, 2, None, 1, 3, 2, 1], pa.int32()),
            "p_date": pa.array(
                [dt.date(2024, 1, 1), None, dt.date(1969, 12, 31)] + [dt.date(2024, 1, 2)] * 4,
                pa.date32(),
            ),
        }
    )
    deltalog.write_table(path, data, partition_by=["p_str", "p_int", "p_date"])
    deltalog.write_table(
        path,
        data.take([0, 6]),
        mode="overwrite",
        predicate="p_str = 'x'",
    )
    assert_spark_reads_every_version(
        spark, path, ("p_str = 'a b'", "p_str IS NULL", "p_int = 1", "p_date < DATE'2024-01-01'")
    )
    spark_extends(
        spark,
        path,
        "VALUES (9, 'new', 5, DATE'2020-02-02')",
        "id = 100 WHERE p_str IS NULL",
        "p_int = 3",
    )


def every_type() -> pa.Table:
    return pa.table(
        {
            "b": pa.array([True, None, False], pa.bool_()),
            "i8": pa.array([1, -128, None], pa.int8()),
            "i16": pa.array([300, None, -3], pa.int16()),
            "i32": pa.array([70000, 1, None], pa.int32()),
            "i64": pa.array([2**40, None, -(2**62)], pa.int64()),
            "f32": pa.array([1.5, None, float("nan")], pa.float32()),
            "f64": pa.array([2.25, -0.0, None], pa.float64()),
            "s": pa.array(["x" * 40, None, "ünïcode"], pa.string()),
            "bin": pa.array([b"\x00\x01", None, b""], pa.binary()),
            "d": pa.array([dt.date(2024, 1, 2), None, dt.date(1, 1, 1)], pa.date32()),
            "ts": pa.array(
                [dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc), None, None],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5), None, None], pa.timestamp("us")),
            "dec": pa.array([Decimal("12.34"), None, Decimal("-0.01")], pa.decimal128(10, 2)),
            "big": pa.array([Decimal("1" * 30), None, None], pa.decimal128(38, 0)),
            "arr": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
            "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
            "st": pa.array(
                [{"x": 1, "y": ["a"]}, None, {"x": None, "y": None}],
                pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))]),
            ),
        }
    )


def test_every_type_written_by_us(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "types"
    deltalog.write_table(path, every_type())
    deltalog.write_table(path, every_type().slice(0, 1))
    assert_spark_reads_every_version(
        spark, path, ("i64 > 0", "s >= 'x'", "d < DATE'2000-01-01'", "dec > 0", "ts IS NULL")
    )
    spark.sql(f"INSERT INTO delta.`{path}` SELECT * FROM delta.`{path}` LIMIT 1")
    assert_same_rows(ours(path), spark_rows(spark, path), "after Spark's append")


def test_column_mapping_table_written_by_us(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "mapped"
    config = {"delta.columnMapping.mode": "name"}
    deltalog.write_table(path, pa.table({"id": [1, 2], "my col": ["a", "b"]}), configuration=config)
    deltalog.write_table(path, pa.table({"id": [3], "extra": [1.5]}), schema_mode="merge")
    assert_spark_reads_every_version(spark, path, ("id > 1",))
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN extra TO renamed")
    spark_extends(spark, path, "VALUES (4, 'd', 2.5)", "renamed = 0 WHERE id = 1", "id = 2")


def test_spark_table_takes_our_appends_and_overwrites(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "spark-made"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, s STRING, p INT) USING delta PARTITIONED BY (p)"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1), (2, 'b', 2)")
    data = pa.table({"id": [3, 4], "s": ["c", None], "p": pa.array([1, None], pa.int32())})
    deltalog.write_table(path, data)
    assert_same_rows(ours(path), spark_rows(spark, path), "after our append")
    deltalog.write_table(
        path,
        pa.table({"id": [5], "s": ["e"], "p": pa.array([2], pa.int32())}),
        mode="overwrite",
        predicate="p = 2",
    )
    assert_spark_reads_every_version(spark, path, ("p = 1", "id > 2"))
    deltalog.write_table(
        path, pa.table({"id": [6], "s": ["f"], "p": pa.array([3], pa.int32())}), mode="overwrite"
    )
    assert_same_rows(ours(path), spark_rows(spark, path), "after our overwrite")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (7, 'g', 3)")
    assert_same_rows(ours(path), spark_rows(spark, path), "after Spark's append")


@pytest.mark.parametrize(
    "configuration",
    [
        {"delta.enableDeletionVectors": "true"},
        {"delta.enableChangeDataFeed": "true"},
        {"delta.appendOnly": "true"},
    ],
    ids=lambda c: next(iter(c)),
)
def test_table_features_set_at_create(
    spark: Any, tmp_path: Path, configuration: dict[str, str]
) -> None:
    path = tmp_path / "features"
    deltalog.write_table(path, pa.table({"id": [1, 2, 3]}), configuration=configuration)
    deltalog.write_table(path, pa.table({"id": [4]}))
    assert_spark_reads_every_version(spark, path, ("id > 2",))
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (5)")
    if "delta.appendOnly" not in configuration:
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    assert_same_rows(ours(path), spark_rows(spark, path), "after Spark's changes")
