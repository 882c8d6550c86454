"""Delta on Spark as the oracle of our writer's duties, one table feature at a time.

For each feature, Spark SQL creates two identical tables; Spark appends rows to one and
deltalog appends the same rows to the other, and the two must read the same in Spark (and in
deltalog). Rows that break a rule are refused by both, each table left as it was. Tables we
create with the feature read in Spark, and Spark's appends on top keep the rules.

Features: CHECK constraints, invariants, generated columns, identity columns (start, step,
high-water mark), default values, row tracking (``_metadata.row_id`` and
``_metadata.row_commit_version``), in-commit timestamps.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_read import assert_same_rows
from .test_interop_write import ours, spark_rows


def twins(spark: Any, tmp_path: Path, columns: str, properties: str = "") -> tuple[Path, Path]:
    """Two tables created by Spark SQL with the same ``columns`` and ``properties``: the
    first for Spark's appends, the second for ours."""
    paths = (tmp_path / "by-spark", tmp_path / "by-us")
    tblproperties = f"TBLPROPERTIES ({properties})" if properties else ""
    for path in paths:
        spark.sql(f"CREATE TABLE delta.`{path}` ({columns}) USING delta {tblproperties}")
    return paths


def spark_append(spark: Any, path: Path, data: pa.Table) -> None:
    """Appends ``data`` as Spark's DataFrame writer does (typed as the table's columns of
    the same names; one task, so one file)."""
    from pyspark.sql.types import StructType

    table_schema = spark.read.format("delta").load(str(path)).schema
    fields = {field.name: field for field in table_schema.fields}
    schema = StructType([fields[name] for name in data.column_names])
    rows = [tuple(row.values()) for row in data.to_pylist()]
    frame = spark.createDataFrame(rows, schema).coalesce(1)
    frame.write.format("delta").mode("append").save(str(path))


def versions(path: Path) -> int:
    return deltalog.DeltaTable(path).latest_version()


def assert_both_refuse(
    spark: Any, paths: tuple[Path, Path], data: pa.Table, spark_error: str
) -> deltalog.DeltaError:
    """Spark refuses ``data`` with the error class ``spark_error``, deltalog with a
    :class:`DeltaError` (returned); neither table gets a new version."""
    by_spark, by_us = paths
    before = (versions(by_spark), versions(by_us))
    with pytest.raises(Exception, match=spark_error):
        spark_append(spark, by_spark, data)
    with pytest.raises(deltalog.DeltaError) as refused:
        deltalog.write_table(by_us, data)
    assert (versions(by_spark), versions(by_us)) == before
    return refused.value


def assert_twins_agree(
    spark: Any, paths: tuple[Path, Path], columns: tuple[str, ...] = ("*",)
) -> None:
    by_spark, by_us = paths
    theirs = spark.read.format("delta").load(str(by_spark)).selectExpr(*columns).toArrow()
    mine = spark.read.format("delta").load(str(by_us)).selectExpr(*columns).toArrow()
    assert_same_rows(mine, theirs, "Spark reading our append vs Spark's")


def field_metadata(path: Path, column: str) -> dict[str, Any]:
    schema = json.loads(deltalog.DeltaTable(path).snapshot().schema.json())
    field = next(f for f in schema["fields"] if f["name"] == column)
    metadata: dict[str, Any] = field["metadata"]
    return metadata


def test_check_constraints(spark: Any, tmp_path: Path) -> None:
    paths = twins(spark, tmp_path, "id BIGINT, v INT, s STRING")
    for path in paths:
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (v > 0)")
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT known CHECK (s IN ('a', 'b'))")
    good = pa.table(
        {"id": [1, 2], "v": pa.array([5, 7], pa.int32()), "s": ["a", "b"]},
    )
    spark_append(spark, paths[0], good)
    deltalog.write_table(paths[1], good)
    assert_twins_agree(spark, paths)
    bad_v = pa.table({"id": [3], "v": pa.array([0], pa.int32()), "s": ["a"]})
    error = assert_both_refuse(spark, paths, bad_v, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
    assert isinstance(error, deltalog.ConstraintViolationError)
    assert "positive" in (error.constraint or "")
    null_s = pa.table(
        {"id": [4], "v": pa.array([1], pa.int32()), "s": pa.array([None], pa.string())}
    )
    error = assert_both_refuse(spark, paths, null_s, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
    assert isinstance(error, deltalog.ConstraintViolationError)
    assert_twins_agree(spark, paths)


def test_invariants(spark: Any, tmp_path: Path) -> None:
    """Column invariants (``delta.invariants``, writer version 2): Spark creates them from
    a DataFrame schema's column metadata."""
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    invariant = json.dumps({"expression": {"expression": "v > 0"}})
    schema = StructType(
        [
            StructField("id", LongType()),
            StructField("v", IntegerType(), metadata={"delta.invariants": invariant}),
        ]
    )
    paths = (tmp_path / "by-spark", tmp_path / "by-us")
    for path in paths:
        spark.createDataFrame([], schema).write.format("delta").save(str(path))
    good = pa.table({"id": [1, 2], "v": pa.array([1, 2], pa.int32())})
    spark_append(spark, paths[0], good)
    deltalog.write_table(paths[1], good)
    assert_twins_agree(spark, paths)
    bad = pa.table({"id": [3], "v": pa.array([-1], pa.int32())})
    error = assert_both_refuse(spark, paths, bad, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
    assert isinstance(error, deltalog.ConstraintViolationError)


def test_generated_columns(spark: Any, tmp_path: Path) -> None:
    paths = twins(
        spark,
        tmp_path,
        "id BIGINT, copy BIGINT GENERATED ALWAYS AS (id), tag STRING GENERATED ALWAYS AS ('t')",
    )
    without = pa.table({"id": [1, 2, None]})
    spark.sql(f"INSERT INTO delta.`{paths[0]}` (id) VALUES (1), (2), (NULL)")
    deltalog.write_table(paths[1], without)
    assert_twins_agree(spark, paths)
    given = pa.table({"id": [3], "copy": [3], "tag": ["t"]})
    spark_append(spark, paths[0], given)
    deltalog.write_table(paths[1], given)
    assert_twins_agree(spark, paths)
    wrong = pa.table({"id": [4], "copy": [5], "tag": ["t"]})
    error = assert_both_refuse(spark, paths, wrong, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
    assert isinstance(error, deltalog.ConstraintViolationError)
    assert_same_rows(ours(paths[1]), spark_rows(spark, paths[1]), "we read what Spark reads")


GENERATED = (
    "a INT, s STRING, ts TIMESTAMP, "
    "next INT GENERATED ALWAYS AS (a + 1), "
    "key STRING GENERATED ALWAYS AS (concat(lower(s), '-', CAST(a AS STRING))), "
    "pre STRING GENERATED ALWAYS AS (substring(s, 1, 3)), "
    "day DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), "
    "y INT GENERATED ALWAYS AS (year(ts)), "
    "m INT GENERATED ALWAYS AS (month(ts)), "
    "d INT GENERATED ALWAYS AS (dayofmonth(ts)), "
    "h INT GENERATED ALWAYS AS (hour(ts)), "
    "ym STRING GENERATED ALWAYS AS (date_format(ts, 'yyyy-MM'))"
)


def test_generation_expressions_computed_as_spark_computes_them(spark: Any, tmp_path: Path) -> None:
    """Arithmetic, string and date functions: our appends without the generated columns get
    Spark's values (timestamps in the UTC session zone, one before the epoch); given values
    that differ from the expression are refused by both."""
    paths = twins(spark, tmp_path, GENERATED)
    moments = [
        dt.datetime(2024, 3, 5, 23, 30, 1, tzinfo=dt.timezone.utc),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
        None,
    ]
    data = pa.table(
        {
            "a": pa.array([1, None, 3], pa.int32()),
            "s": ["AbCdE", "x", None],
            "ts": pa.array(moments, pa.timestamp("us", tz="UTC")),
        }
    )
    spark_append(spark, paths[0], data)
    deltalog.write_table(paths[1], data)
    assert_twins_agree(spark, paths)
    given = data.slice(0, 1).append_column("next", pa.array([2], pa.int32()))
    spark_append(spark, paths[0], given)
    deltalog.write_table(paths[1], given)
    assert_twins_agree(spark, paths)
    wrong = data.slice(0, 1).append_column("next", pa.array([7], pa.int32()))
    error = assert_both_refuse(spark, paths, wrong, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
    assert isinstance(error, deltalog.ConstraintViolationError)
    assert "next" in (error.constraint or "")
    assert_same_rows(ours(paths[1]), spark_rows(spark, paths[1]), "we read what Spark reads")


def test_generation_expressions_we_cannot_evaluate_are_refused(spark: Any, tmp_path: Path) -> None:
    """Spark computes ``sqrt(id)``; our value language has no ``sqrt``, so our writer refuses
    the table up front (a typed error naming the column and the expression, no data file, no
    commit) instead of writing rows Spark would reject."""
    path = tmp_path / "sqrt"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, size DOUBLE GENERATED ALWAYS AS (sqrt(id))) "
        "USING delta"
    )
    with pytest.raises(deltalog.UnsupportedFeatureError) as refused:
        deltalog.write_table(path, pa.table({"id": [1]}))
    assert "size" in str(refused.value)
    assert "sqrt(id)" in str(refused.value)
    assert not refused.value.unreferenced_files
    assert versions(path) == 0
    spark.sql(f"INSERT INTO delta.`{path}` (id) VALUES (4)")
    assert ours(path).to_pylist() == [{"id": 4, "size": 2.0}]


def test_constraints_with_abs_length_and_trim_hold_as_in_spark(spark: Any, tmp_path: Path) -> None:
    """A CHECK constraint using ``abs``, ``length`` and ``trim``: the rows Delta on Spark
    accepts, deltalog accepts; the row Spark refuses, deltalog refuses too."""
    path = tmp_path / "functions"
    rule = "length(trim(code)) <= 3 AND abs(delta) < 100"
    spark.sql(f"CREATE TABLE delta.`{path}` (code STRING, delta INT) USING delta")
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT fits CHECK ({rule})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ('  ab ', -99)")
    schema = pa.schema([("code", pa.string()), ("delta", pa.int32())])
    deltalog.write_table(
        path, pa.table({"code": [" xyz  ", "q"], "delta": [99, -5]}, schema=schema)
    )
    for code, delta in (("abcd", 1), ("ab", -100)):
        with pytest.raises(Exception, match="fits"):
            spark.sql(f"INSERT INTO delta.`{path}` VALUES ('{code}', {delta})")
        with pytest.raises(deltalog.ConstraintViolationError, match="fits"):
            deltalog.write_table(path, pa.table({"code": [code], "delta": [delta]}, schema=schema))
    expected = [("  ab ", -99), (" xyz  ", 99), ("q", -5)]
    frame = spark.read.format("delta").load(str(path))
    assert sorted(map(tuple, frame.collect())) == sorted(expected)


@pytest.mark.parametrize(("start", "step"), [(10, 5), (-1, -3)])
def test_identity_columns(spark: Any, tmp_path: Path, start: int, step: int) -> None:
    """Values start + k·step above the high-water mark, the mark kept in the schema; Spark
    appending after us (and we after Spark) never reuses a value."""
    identity = f"GENERATED ALWAYS AS IDENTITY (START WITH {start} INCREMENT BY {step})"
    paths = twins(spark, tmp_path, f"id BIGINT {identity}, v STRING")
    values = pa.table({"v": ["a", "b", "c"]})
    spark.sql(f"INSERT INTO delta.`{paths[0]}` (v) VALUES ('a'), ('b'), ('c')")
    deltalog.write_table(paths[1], values)
    assert_twins_agree(spark, paths, ("v",))
    for path in paths:
        ids = [row["id"] for row in ours(path).to_pylist()]
        assert len(set(ids)) == 3
        assert all((value - start) % step == 0 and (value - start) // step >= 0 for value in ids)
        mark = int(field_metadata(path, "id")["delta.identity.highWaterMark"])
        assert mark == (max(ids) if step > 0 else min(ids))
    by_us = paths[1]
    spark.sql(f"INSERT INTO delta.`{by_us}` (v) VALUES ('d')")
    deltalog.write_table(by_us, pa.table({"v": ["e"]}))
    spark.sql(f"INSERT INTO delta.`{by_us}` (v) VALUES ('f')")
    ids = [row["id"] for row in ours(by_us).to_pylist()]
    assert len(set(ids)) == len(ids) == 6
    explicit = pa.table({"id": [1000], "v": ["x"]})
    error = assert_both_refuse(
        spark, paths, explicit, "DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED"
    )
    assert isinstance(error, deltalog.ConstraintViolationError)


def test_identity_columns_in_a_table_we_create(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "identity"
    schema = {
        "type": "struct",
        "fields": [
            {
                "name": "id",
                "type": "long",
                "nullable": False,
                "metadata": {
                    "delta.identity.start": 100,
                    "delta.identity.step": 2,
                    "delta.identity.allowExplicitInsert": False,
                },
            },
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    deltalog.DeltaTable.create(path, json.dumps(schema))
    deltalog.write_table(path, pa.table({"v": ["a", "b"]}))
    spark.sql(f"INSERT INTO delta.`{path}` (v) VALUES ('c')")
    deltalog.write_table(path, pa.table({"v": ["d"]}))
    rows = sorted((row["id"], row["v"]) for row in spark_rows(spark, path).to_pylist())
    assert [v for _, v in rows] == ["a", "b", "c", "d"]
    assert rows[:2] == [(100, "a"), (102, "b")]
    assert len({i for i, _ in rows}) == 4
    assert all(i >= 100 and i % 2 == 0 for i, _ in rows)


def test_default_values(spark: Any, tmp_path: Path) -> None:
    paths = twins(
        spark,
        tmp_path,
        "id BIGINT, s STRING DEFAULT 'none', n INT DEFAULT 42",
        "'delta.feature.allowColumnDefaults' = 'supported'",
    )
    spark.sql(f"INSERT INTO delta.`{paths[0]}` (id) VALUES (1), (2)")
    deltalog.write_table(paths[1], pa.table({"id": [1, 2]}))
    given = pa.table({"id": [3], "s": ["given"], "n": pa.array([None], pa.int32())})
    spark_append(spark, paths[0], given)
    deltalog.write_table(paths[1], given)
    assert_twins_agree(spark, paths)
    assert_same_rows(ours(paths[1]), spark_rows(spark, paths[1]), "we read what Spark reads")


ROW_TRACKING = (
    "id",
    "_metadata.row_id AS row_id",
    "_metadata.row_commit_version AS row_commit_version",
)


def test_row_tracking(spark: Any, tmp_path: Path) -> None:
    """Fresh row ids above the high-water mark and the commit version of each row, as Spark
    reads them through ``_metadata``; Spark's appends after ours continue the sequence."""
    paths = twins(spark, tmp_path, "id BIGINT", "'delta.enableRowTracking' = 'true'")
    first, second = pa.table({"id": [1, 2, 3]}), pa.table({"id": [4, 5]})
    for data in (first, second):
        spark_append(spark, paths[0], data)
        deltalog.write_table(paths[1], data)
    assert_twins_agree(spark, paths, ROW_TRACKING)
    by_us = paths[1]
    spark.sql(f"INSERT INTO delta.`{by_us}` VALUES (6)")
    deltalog.write_table(by_us, pa.table({"id": [7]}))
    seen = spark.read.format("delta").load(str(by_us)).selectExpr(*ROW_TRACKING).toArrow()
    rows = {row["id"]: row for row in seen.to_pylist()}
    assert sorted(row["row_id"] for row in rows.values()) == list(range(7))
    assert rows[6]["row_commit_version"] == 3
    assert rows[7]["row_commit_version"] == 4
    scan = deltalog.DeltaTable(by_us).snapshot().scan(row_tracking=True).to_pyarrow()
    mine = scan.select(["id", "row_id", "row_commit_version"])
    assert_same_rows(mine, seen, "our row tracking columns vs Spark's _metadata")


def test_in_commit_timestamps(spark: Any, tmp_path: Path) -> None:
    """Our commits carry in-commit timestamps that Spark's history shows and its time travel
    by timestamp finds, in order with Spark's own commits."""
    paths = twins(spark, tmp_path, "id BIGINT", "'delta.enableInCommitTimestamps' = 'true'")
    by_us = paths[1]
    deltalog.write_table(by_us, pa.table({"id": [1]}))
    spark.sql(f"INSERT INTO delta.`{by_us}` VALUES (2)")
    deltalog.write_table(by_us, pa.table({"id": [3]}))
    history = spark.sql(f"DESCRIBE HISTORY delta.`{by_us}`").toArrow().to_pylist()
    times = {row["version"]: utc(row["timestamp"]) for row in history}
    for row in deltalog.DeltaTable(by_us).history().to_pylist():
        info = json.loads(row["commit_info"])
        assert info["inCommitTimestamp"] == round(times[row["version"]].timestamp() * 1000)
    ordered = [times[v] for v in sorted(times)]
    assert ordered == sorted(ordered)
    assert len(set(ordered)) == len(ordered)
    for version, moment in times.items():
        text = moment.strftime("%Y-%m-%d %H:%M:%S.%f")
        frame = spark.read.format("delta").option("timestampAsOf", text).load(str(by_us))
        assert frame.count() == ours(by_us, version).num_rows, f"as of {text}"


def utc(moment: dt.datetime) -> dt.datetime:
    """A timestamp of the Spark session (time zone UTC) as an aware UTC datetime."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def test_enabling_in_commit_timestamps_on_our_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "ict"
    deltalog.write_table(path, pa.table({"id": [1]}))
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')"
    )
    deltalog.write_table(path, pa.table({"id": [2]}))
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert detail["properties"]["delta.enableInCommitTimestamps"] == "true"
    assert_same_rows(ours(path), spark_rows(spark, path), "after enabling")
