"""Structured Streaming with ``format("deltalog")``: the sink commits each micro-batch once
(a query restarted from its checkpoint, even one replaying a batch it had committed, writes
every row exactly once), read back by Delta Lake on Spark."""

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


def delta_ids(spark: Any, path: Path) -> list[int]:
    frame = spark.read.format("delta").load(str(path)).orderBy("id")
    return [row["id"] for row in frame.collect()]


def txn_versions(path: Path) -> list[tuple[str, int]]:
    found = []
    for log in sorted((path / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action:
                found.append((action["txn"]["appId"], action["txn"]["version"]))
    return found


def run_sink_once(spark: Any, source: Path, table: Path, checkpoint: Path) -> None:
    stream = spark.readStream.schema("id long, p string").json(str(source))
    query = (
        stream.writeStream.format("deltalog")
        .option("checkpointLocation", str(checkpoint))
        .option("partitionBy", "p")
        .trigger(availableNow=True)
        .start(str(table))
    )
    query.awaitTermination()
    assert query.exception() is None


def add_source_file(source: Path, name: str, ids: range) -> None:
    source.mkdir(exist_ok=True)
    rows = (json.dumps({"id": i, "p": "even" if i % 2 == 0 else "odd"}) for i in ids)
    (source / name).write_text("\n".join(rows) + "\n")


def test_sink_writes_every_row_exactly_once_across_restarts(
    registered: Any, tmp_path: Path
) -> None:
    spark = registered
    source, table, checkpoint = tmp_path / "in", tmp_path / "t", tmp_path / "ckpt"
    add_source_file(source, "a.json", range(10))
    run_sink_once(spark, source, table, checkpoint)
    assert delta_ids(spark, table) == list(range(10))

    add_source_file(source, "b.json", range(10, 25))
    run_sink_once(spark, source, table, checkpoint)
    assert delta_ids(spark, table) == list(range(25))
    query_id = json.loads((checkpoint / "metadata").read_text())["id"]
    assert txn_versions(table) == [(query_id, 0), (query_id, 1)]

    # The query stopped after committing batch 1 to the table but before recording it in its
    # checkpoint: on restart Spark runs batch 1 again, and the sink must not commit it twice.
    (checkpoint / "commits" / "1").unlink()
    (checkpoint / "commits" / ".1.crc").unlink(missing_ok=True)
    run_sink_once(spark, source, table, checkpoint)
    assert delta_ids(spark, table) == list(range(25))
    assert deltalog.DeltaTable(table).latest_version() == 1
    assert (checkpoint / "commits" / "1").exists()
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").collect()[0]
    assert list(detail["partitionColumns"]) == ["p"]


def test_sink_txn_app_id_option(registered: Any, tmp_path: Path) -> None:
    spark = registered
    source, table = tmp_path / "in", tmp_path / "t"
    add_source_file(source, "a.json", range(3))
    stream = spark.readStream.schema("id long, p string").json(str(source))
    query = (
        stream.writeStream.format("deltalog")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .option("txnAppId", "my-app")
        .trigger(availableNow=True)
        .start(str(table))
    )
    query.awaitTermination()
    assert txn_versions(table) == [("my-app", 0)]
    assert delta_ids(spark, table) == [0, 1, 2]


def test_rows_become_arrow_batches_of_the_schema() -> None:
    """pyspark 4.0's streaming sink hands rows; they are written as Arrow batches."""
    from pyspark.sql import Row
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    from deltalog.spark._sink import rows_to_batches

    schema = StructType(
        [
            StructField("id", LongType()),
            StructField("tags", ArrayType(StringType())),
            StructField("kv", MapType(StringType(), IntegerType())),
            StructField("s", StructType([StructField("a", IntegerType())])),
        ]
    )
    rows = [Row(id=i, tags=["x"], kv={"k": i}, s=Row(a=i)) for i in range(3)]
    batches = list(rows_to_batches(iter(rows), schema))
    assert [b.num_rows for b in batches] == [3]
    assert batches[0].column("id").to_pylist() == [0, 1, 2]
    assert batches[0].column("kv").to_pylist()[1] == [("k", 1)]
    assert batches[0].column("s").to_pylist()[2] == {"a": 2}


def collect_stream(spark: Any, source: Any, tmp_path: Path, name: str) -> list[int]:
    """Runs ``source`` to the end (Trigger.AvailableNow) into a memory sink; its ids."""
    query = (
        source.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / f"ckpt-{name}"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    return sorted(row["id"] for row in spark.sql(f"SELECT id FROM {name}").collect())


def test_stream_read_sees_every_appended_row_once(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    deltalog.spark.write(spark.range(0, 5).repartition(2), path)
    stream = spark.readStream.format("deltalog").option("maxFilesPerTrigger", "1").load(str(path))
    query = (
        stream.writeStream.format("memory")
        .queryName("appended")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    try:
        query.processAllAvailable()
        assert sorted(r["id"] for r in spark.sql("SELECT id FROM appended").collect()) == list(
            range(5)
        )
        for first in (5, 8):
            spark.range(first, first + 3).write.format("delta").mode("append").save(str(path))
            query.processAllAvailable()
        spark.sql(f"OPTIMIZE delta.`{path}`")  # rearranges files: adds no rows to the stream
        deltalog.spark.write(spark.range(11, 13), path)
        query.processAllAvailable()
        ids = sorted(r["id"] for r in spark.sql("SELECT id FROM appended").collect())
        assert ids == list(range(13))
        assert query.lastProgress["numInputRows"] >= 1
    finally:
        query.stop()


def test_stream_read_options_and_refused_deletes(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    for first in (0, 10, 20):
        spark.range(first, first + 2).write.format("delta").mode("append").save(str(path))
    from_v1 = spark.readStream.format("deltalog").option("startingVersion", "1").load(str(path))
    assert collect_stream(spark, from_v1, tmp_path, "from_v1") == [10, 11, 20, 21]
    history = deltalog.DeltaTable(path).history().to_pyarrow().to_pylist()
    at_v2 = next(row["timestamp"] for row in history if row["version"] == 2)
    from_time = (
        spark.readStream.format("deltalog")
        .option("startingTimestamp", at_v2.isoformat())
        .load(str(path))
    )
    assert collect_stream(spark, from_time, tmp_path, "from_time") == [20, 21]

    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 20")
    spark.range(30, 31).write.format("delta").mode("append").save(str(path))
    refused = spark.readStream.format("deltalog").option("startingVersion", "2").load(str(path))
    with pytest.raises(Exception, match="removes data"):
        collect_stream(spark, refused, tmp_path, "refused")
    skipping = (
        spark.readStream.format("deltalog")
        .option("startingVersion", "2")
        .option("skipChangeCommits", "true")
        .load(str(path))
    )
    assert collect_stream(spark, skipping, tmp_path, "skipping") == [20, 21, 30]
    latest = spark.readStream.format("deltalog").option("startingVersion", "latest").load(str(path))
    assert collect_stream(spark, latest, tmp_path, "latest") == []


def test_change_feed_batch_and_stream(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, tmp_path / "t"
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id long, s string) USING delta "
        "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"UPDATE {table} SET s = 'B' WHERE id = 2")
    spark.sql(f"DELETE FROM {table} WHERE id = 1")

    def rows(frame: Any) -> list[tuple[Any, ...]]:
        picked = frame.select("id", "s", "_change_type", "_commit_version")
        return sorted(tuple(row) for row in picked.collect())

    expected = rows(
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(str(path))
    )
    assert len(expected) == 5
    batch = (
        spark.read.format("deltalog")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(str(path))
    )
    assert rows(batch) == expected

    stream = (
        spark.readStream.format("deltalog")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .option("maxFilesPerTrigger", 1)
        .load(str(path))
    )
    query = (
        stream.writeStream.format("memory")
        .queryName("changes")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    assert rows(spark.table("changes")) == expected
