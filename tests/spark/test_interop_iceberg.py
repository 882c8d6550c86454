"""Iceberg compatibility and materialised partition columns against Delta on Spark 4.4, both
ways: Spark creates the table and deltalog continues it (appends, deletes, updates, OPTIMIZE),
writing data files of the same shape as Spark's (partition values after the data columns,
field ids on array elements and map keys and values); deltalog creates it and Spark reads and
continues it. Rows are compared at every version, and `DESCRIBE DETAIL` and the schema
metadata after each side's writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import deltalog

from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_extends, spark_rows

COLUMNS = (
    "id BIGINT, a ARRAY<INT>, m MAP<STRING, ARRAY<INT>>, s STRUCT<x: INT, y: ARRAY<STRING>>, "
    "p STRING"
)
ROWS = "(1, array(1), map('k', array(1)), named_struct('x', 1, 'y', array('z')), 'a'), " + (
    "(2, array(2, 3), map(), named_struct('x', 2, 'y', array()), 'b')"
)


def nested_rows() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([3, 4], pa.int64()),
            "a": pa.array([[4], None], pa.list_(pa.int32())),
            "m": pa.array([[("k", [5])], None], pa.map_(pa.string(), pa.list_(pa.int32()))),
            "s": pa.array(
                [{"x": 3, "y": ["w"]}, None],
                pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))]),
            ),
            "p": ["a", "c"],
        }
    )


def data_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)


def field_ids(field: Any) -> Any:
    """The Parquet field ids of ``field`` and everything nested in it, names left out."""
    own = int((field.metadata or {}).get(b"PARQUET:field_id", b"-1"))
    kind = field.type
    if pa.types.is_struct(kind):
        return (own, [field_ids(kind.field(i)) for i in range(kind.num_fields)])
    if pa.types.is_map(kind):
        return (own, field_ids(kind.key_field), field_ids(kind.item_field))
    if pa.types.is_list(kind):
        return (own, field_ids(kind.value_field))
    return own


def file_shape(path: Path) -> list[Any]:
    """The field ids of the data file columns, in file order (the same for each file)."""
    shapes = {json.dumps([field_ids(f) for f in pq.read_schema(file)]) for file in data_files(path)}
    assert len(shapes) == 1, shapes
    return list(json.loads(shapes.pop()))


# Spark lists these two in every table it creates (its writer version 2 defaults); ours list
# them only where the table uses them.
SPARK_DEFAULT_FEATURES = {"appendOnly", "invariants"}


def detail(spark: Any, path: Path) -> dict[str, Any]:
    row = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    return {
        "features": sorted(set(row["tableFeatures"]) - SPARK_DEFAULT_FEATURES),
        "properties": sorted(row["properties"]),
        "partitions": list(row["partitionColumns"]),
    }


def test_spark_iceberg_v2_table_continued_by_us(spark: Any, tmp_path: Path) -> None:
    by_spark, by_us = tmp_path / "by-spark", tmp_path / "by-us"
    for path in (by_spark, by_us):
        spark.sql(
            f"CREATE TABLE delta.`{path}` ({COLUMNS}) USING delta PARTITIONED BY (p) "
            "TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')"
        )
    spark.sql(f"INSERT INTO delta.`{by_spark}` VALUES {ROWS}")
    spark.sql(f"INSERT INTO delta.`{by_us}` VALUES {ROWS}")
    spark.sql(
        f"INSERT INTO delta.`{by_spark}` VALUES (3, array(4), map('k', array(5)), "
        "named_struct('x', 3, 'y', array('w')), 'a'), (4, NULL, NULL, NULL, 'c')"
    )
    deltalog.write_table(by_us, nested_rows())
    spark.sql(f"DELETE FROM delta.`{by_spark}` WHERE id = 2")
    deltalog.DeltaTable(by_us).delete("id = 2")
    spark.sql(f"UPDATE delta.`{by_spark}` SET id = id * 10 WHERE p = 'a'")
    deltalog.DeltaTable(by_us).update({"id": "id * 10"}, "p = 'a'")
    assert_same_rows(spark_rows(spark, by_us), spark_rows(spark, by_spark), "Spark reads ours")
    assert_same_rows(ours(by_us), spark_rows(spark, by_spark), "we read ours")
    assert_spark_reads_every_version(spark, by_us)
    # Our files have the shape of Spark's: the same field ids, the partition column last.
    assert file_shape(by_us) == file_shape(by_spark)
    adds = [
        json.loads(line)["add"]
        for log in sorted((by_us / "_delta_log").glob("*.json"))
        for line in log.read_text().splitlines()
        if '"add"' in line
    ]
    assert all(add.get("tags") == {"ICEBERG_COMPAT_VERSION": "2"} for add in adds)
    deltalog.DeltaTable(by_us).optimize()
    assert file_shape(by_us) == file_shape(by_spark)
    spark_extends(spark, by_us, f"VALUES {ROWS}", "id = id + 1 WHERE p = 'b'", "id = 4")
    assert detail(spark, by_us) == detail(spark, by_spark)


def test_our_iceberg_tables_read_and_continued_by_spark(spark: Any, tmp_path: Path) -> None:
    for version in (2, 3):
        by_spark, by_us = tmp_path / f"v{version}-spark", tmp_path / f"v{version}-us"
        key = f"delta.enableIcebergCompatV{version}"
        spark.sql(
            f"CREATE TABLE delta.`{by_spark}` ({COLUMNS}) USING delta PARTITIONED BY (p) "
            f"TBLPROPERTIES ('{key}' = 'true')"
        )
        spark.sql(f"INSERT INTO delta.`{by_spark}` VALUES {ROWS}")
        rows = spark_rows(spark, by_spark)
        deltalog.write_table(by_us, rows, partition_by=["p"], configuration={key: "true"})
        assert_same_rows(spark_rows(spark, by_us), rows, f"V{version}: Spark reads ours")
        assert detail(spark, by_us) == detail(spark, by_spark)
        assert file_shape(by_us) == file_shape(by_spark)
        spark_extends(spark, by_us, f"VALUES {ROWS}", "id = id + 1 WHERE p = 'b'", "id = 1")
        assert_spark_reads_every_version(spark, by_us)


def test_materialized_partition_columns_both_ways(spark: Any, tmp_path: Path) -> None:
    by_spark, by_us = tmp_path / "by-spark", tmp_path / "by-us"
    prop = "'delta.enableMaterializePartitionColumnsFeature' = 'true'"
    spark.sql(
        f"CREATE TABLE delta.`{by_spark}` (id BIGINT, p STRING) USING delta PARTITIONED BY (p) "
        f"TBLPROPERTIES ({prop})"
    )
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["a", "b", None]})
    deltalog.write_table(by_spark, data)
    deltalog.write_table(
        by_us,
        data,
        partition_by=["p"],
        configuration={"delta.enableMaterializePartitionColumnsFeature": "true"},
    )
    for path in (by_spark, by_us):
        assert {tuple(pq.read_schema(f).names) for f in data_files(path)} == {("id", "p")}
        assert_same_rows(spark_rows(spark, path), ours(path), "materialised")
    assert detail(spark, by_us) == detail(spark, by_spark)
    spark.sql(f"ALTER TABLE delta.`{by_spark}` DROP FEATURE materializePartitionColumns")
    deltalog.DeltaTable(by_us).alter.drop_feature("materializePartitionColumns")
    assert detail(spark, by_us)["properties"] == detail(spark, by_spark)["properties"]
    assert "materializePartitionColumns" not in detail(spark, by_us)["features"]
    spark_extends(spark, by_us, "VALUES (4, 'c')", "id = id + 1 WHERE p = 'b'", "id = 1")
    assert_spark_reads_every_version(spark, by_us)
