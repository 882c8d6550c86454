"""``df.write.format("deltalog")``: batch writes from PySpark committed by deltalog, read
back by Delta Lake on Spark (``format("delta")``) as the oracle: exactly the rows, the
partitioning, one commit per write, a history Spark describes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import deltalog
import deltalog.spark


@pytest.fixture(scope="module")
def registered(spark: Any) -> Any:
    deltalog.spark.register(spark)
    return spark


def delta_rows(spark: Any, path: Path, order: str = "id") -> list[tuple[Any, ...]]:
    frame = spark.read.format("delta").load(str(path)).orderBy(order)
    return [tuple(row) for row in frame.collect()]


def commit_actions(path: Path, version: int) -> list[dict[str, Any]]:
    log = path / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_append_and_overwrite_read_by_delta(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    first = spark.createDataFrame(
        [(1, "a", "x"), (2, "b", "y"), (3, "c", "x")], "id long, s string, p string"
    )
    first.repartition(2).write.format("deltalog").mode("append").option("partitionBy", "p").save(
        str(path)
    )
    assert delta_rows(spark, path) == [(1, "a", "x"), (2, "b", "y"), (3, "c", "x")]
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["partitionColumns"]) == ["p"]
    assert {a["add"]["partitionValues"]["p"] for a in commit_actions(path, 0) if "add" in a} == {
        "x",
        "y",
    }

    more = spark.createDataFrame([(4, "d", "y")], "id long, s string, p string")
    more.write.format("deltalog").mode("append").save(str(path))
    assert [r[0] for r in delta_rows(spark, path)] == [1, 2, 3, 4]

    replacement = spark.createDataFrame([(10, "z", "x")], "id long, s string, p string")
    deltalog.spark.write(replacement, path, mode="overwrite", user_metadata="swap")
    assert delta_rows(spark, path) == [(10, "z", "x")]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    assert [row["version"] for row in history] == [0, 1, 2]
    assert history[2]["operation"] == "WRITE"
    assert history[2]["userMetadata"] == "swap"
    assert history[2]["operationParameters"]["mode"] == "Overwrite"
    assert deltalog.read_table(str(path)).num_rows == 1


def test_replace_where(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    rows = spark.createDataFrame([(1, "x"), (2, "y"), (3, "x")], "id long, p string")
    deltalog.spark.write(rows, path, partition_by=["p"])
    new_x = spark.createDataFrame([(7, "x")], "id long, p string")
    new_x.write.format("deltalog").mode("overwrite").option("replaceWhere", "p = 'x'").save(
        str(path)
    )
    assert delta_rows(spark, path) == [(2, "y"), (7, "x")]

    wrong = spark.createDataFrame([(8, "y")], "id long, p string")
    with pytest.raises(Exception, match="replaceWhere"):
        deltalog.spark.write(wrong, path, mode="overwrite", replace_where="p = 'x'")
    assert delta_rows(spark, path) == [(2, "y"), (7, "x")]
    assert deltalog.DeltaTable(path).latest_version() == 1


def test_merge_and_overwrite_schema(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    deltalog.spark.write(spark.createDataFrame([(1,)], "id long"), path)
    wider = spark.createDataFrame([(2, "b")], "id long, extra string")
    with pytest.raises(Exception, match="extra"):
        wider.write.format("deltalog").mode("append").save(str(path))
    wider.write.format("deltalog").mode("append").option("mergeSchema", "true").save(str(path))
    assert delta_rows(spark, path) == [(1, None), (2, "b")]

    other = spark.createDataFrame([("k", 5)], "key string, n int")
    other.write.format("deltalog").mode("overwrite").option("overwriteSchema", "true").save(
        str(path)
    )
    assert delta_rows(spark, path, "key") == [("k", 5)]
    assert (
        spark.read.format("delta").load(str(path)).schema.simpleString()
        == "struct<key:string,n:int>"
    )


def test_txn_app_id_makes_writes_idempotent(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    rows = spark.createDataFrame([(1,), (2,)], "id long")
    for _ in range(2):
        (
            rows.write.format("deltalog")
            .mode("append")
            .option("txnAppId", "job-1")
            .option("txnVersion", "5")
            .save(str(path))
        )
    assert delta_rows(spark, path) == [(1,), (2,)]
    assert deltalog.DeltaTable(path).latest_version() == 0
    txn = [a["txn"] for a in commit_actions(path, 0) if "txn" in a]
    assert [(t["appId"], t["version"]) for t in txn] == [("job-1", 5)]
    deltalog.spark.write(rows, path, app_id="job-1", app_version=6)
    assert [r[0] for r in delta_rows(spark, path)] == [1, 1, 2, 2]


def test_empty_overwrite_commits(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    deltalog.spark.write(spark.range(5).repartition(3), path)
    empty = spark.createDataFrame([], "id long")
    empty.write.format("deltalog").mode("overwrite").save(str(path))
    assert delta_rows(spark, path) == []
    assert deltalog.DeltaTable(path).latest_version() == 1
    removes = [a for a in commit_actions(path, 1) if "remove" in a]
    assert len(removes) == len([a for a in commit_actions(path, 0) if "add" in a])


def test_file_options_and_many_tasks(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    frame = spark.range(0, 1000).selectExpr("id", "cast(id % 3 as string) as p").repartition(4)
    (
        frame.write.format("deltalog")
        .mode("append")
        .option("partitionBy", "p")
        .option("maxRecordsPerFile", "100")
        .save(str(path))
    )
    adds = [a["add"] for a in commit_actions(path, 0) if "add" in a]
    assert all(json.loads(add["stats"])["numRecords"] <= 100 for add in adds)
    assert sum(json.loads(add["stats"])["numRecords"] for add in adds) == 1000
    assert spark.read.format("delta").load(str(path)).count() == 1000
    assert spark.read.format("delta").load(str(path)).where("p = '1'").count() == 333
    ours = spark.read.format("deltalog").load(str(path))
    assert ours.count() == 1000


def test_a_failed_job_commits_nothing(registered: Any, tmp_path: Path) -> None:
    from pyspark.sql.functions import udf

    spark, path = registered, tmp_path / "t"
    rows = spark.createDataFrame([(1, "x"), (2, "y")], "id long, p string")
    rows.write.format("deltalog").option("partitionBy", "p").mode("append").save(str(path))

    def fail_on_seven(value):  # type: ignore[no-untyped-def] (typed UDFs are Arrow UDFs)
        if value == 7:
            raise ValueError("task failure")
        return value

    failing_udf = udf(fail_on_seven, "long")
    failing = spark.range(10).repartition(2).select(failing_udf("id").alias("id"))
    failing = failing.selectExpr("id", "'x' as p")
    with pytest.raises(Exception, match="task failure"):
        failing.write.format("deltalog").mode("append").save(str(path))
    assert deltalog.DeltaTable(path).latest_version() == 0
    assert delta_rows(spark, path) == [(1, "x"), (2, "y")]


def test_writes_to_a_table_delta_made_with_column_mapping_and_a_constraint(
    registered: Any, tmp_path: Path
) -> None:
    spark, path = registered, tmp_path / "t"
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id long, s string, p string) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN s TO label")
    spark.sql(f"ALTER TABLE {table} ADD CONSTRAINT positive CHECK (id > 0)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'one', 'x')")
    before = deltalog.DeltaTable(path).latest_version()

    rows = spark.createDataFrame(
        [(2, "two", "y"), (3, "three", "x")], "id long, label string, p string"
    )
    rows.write.format("deltalog").mode("append").save(str(path))
    assert delta_rows(spark, path) == [(1, "one", "x"), (2, "two", "y"), (3, "three", "x")]
    spark.sql(f"DELETE FROM {table} WHERE id = 3")
    assert delta_rows(spark, path) == [(1, "one", "x"), (2, "two", "y")]

    negative = spark.createDataFrame([(-1, "bad", "x")], "id long, label string, p string")
    with pytest.raises(Exception, match="positive"):
        negative.write.format("deltalog").mode("append").save(str(path))
    assert deltalog.DeltaTable(path).latest_version() == before + 2


def test_benchmark_spark_write_writes_through_both_data_sources(
    registered: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's ``spark_write`` at a tiny size: the same generated DataFrame written
    through ``format("deltalog")`` and ``format("delta")`` holds every row."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benches"))
    from deltabench import engines, scenarios

    scenario = next(s for s in scenarios.scenarios("smoke") if s.name == "spark_write_1g")
    request = {**scenarios.table_request(scenarios.prepare(scenario, tmp_path), scenario)}
    request["rows"] = 2_000
    for engine in ("deltalog", "spark"):
        frame, target = engines._spark_frame(registered, request, engine)
        engines._spark_write(frame, target, engine)
        assert registered.read.format("delta").load(target).count() == 2_000
    frame.unpersist()
