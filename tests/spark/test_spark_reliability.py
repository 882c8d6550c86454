"""What ``format("deltalog")`` promises when Spark jobs race, crash or run next to other
writers: racing appends both land; a streaming query killed between a micro-batch's data
files and its commit, then restarted from its checkpoint, writes every row exactly once; a
streaming read of a table another process appends to sees every row once, in the same
micro-batches and at the same versions as Delta on Spark's own source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import deltalog
import deltalog.spark
from deltalog.spark import DeltalogDataSource
from deltalog.spark._options import StreamReadOptions
from deltalog.spark._sink import DeltalogStreamArrowWriter
from deltalog.spark._stream import AllAvailableStreamReader

#: The micro-batch whose commit the crashing sink never reaches.
CRASHING_BATCH = 1


class CrashBeforeCommitWriter(DeltalogStreamArrowWriter):
    """The sink's writer whose driver process dies after micro-batch 1's tasks wrote their
    data files and before it commits them."""

    def commit(self, messages: Any, batchId: int) -> None:
        if batchId == CRASHING_BATCH:
            os._exit(1)
        super().commit(messages, batchId)


class CrashingSink(DeltalogDataSource):
    """``format("deltalog_crashing")``: the deltalog sink with :class:`CrashBeforeCommitWriter`."""

    @classmethod
    def name(cls) -> str:
        return "deltalog_crashing"

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        writer = super().streamWriter(schema, overwrite)
        query = (writer.app_id, writer.query_id)
        return CrashBeforeCommitWriter(writer.options, writer.plan, query, writer.schema)


class AllAvailableSource(DeltalogDataSource):
    """``format("deltalog_all_available")``: the stream reader deltalog uses on pyspark 4.0
    and 4.1 (no admission control), run here through pyspark 4.2's support of that API."""

    @classmethod
    def name(cls) -> str:
        return "deltalog_all_available"

    def streamReader(self, schema: Any) -> Any:
        options = StreamReadOptions.parse(self.options)
        return AllAvailableStreamReader(options, schema.fieldNames(), schema)


@pytest.fixture(scope="module")
def registered(spark: Any) -> Any:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    deltalog.spark.register(spark)
    spark.dataSource.register(CrashingSink)
    spark.dataSource.register(AllAvailableSource)
    return spark


def test_racing_appends_from_two_spark_jobs_both_land(registered: Any, tmp_path: Path) -> None:
    spark, path = registered, str(tmp_path / "t")
    spark.range(0, 4).write.format("deltalog").mode("append").save(path)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def append(first: int) -> None:
        # A Python data source is looked up in the thread's active session, which
        # createDataFrame sets (spark.range would not).
        rows = [(i,) for i in range(first, first + 50)]
        frame = spark.createDataFrame(rows, "id long").repartition(2)
        try:
            start.wait()
            frame.write.format("deltalog").mode("append").save(path)
        except BaseException as error:  # the assertion below names it
            errors.append(error)

    jobs = [threading.Thread(target=append, args=(first,)) for first in (100, 200)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    assert [str(error)[-3000:] for error in errors] == []
    ids = [row["id"] for row in spark.read.format("delta").load(path).collect()]
    assert sorted(ids) == [*range(4), *range(100, 150), *range(200, 250)]
    history = deltalog.DeltaTable(path).history().to_pyarrow().to_pylist()
    assert sorted(row["version"] for row in history) == [0, 1, 2]
    assert {row["operation"] for row in history} == {"WRITE"}


def test_a_query_killed_before_its_commit_restarts_exactly_once(
    registered: Any, tmp_path: Path
) -> None:
    spark = registered
    source, table, checkpoint = tmp_path / "in", tmp_path / "t", tmp_path / "ckpt"
    for name, ids in (("a", range(10)), ("b", range(10, 25)), ("c", range(25, 30))):
        write_json(source / f"{name}.json", ids)

    crashed = run_sink(spark, "deltalog_crashing", source, table, checkpoint)
    assert crashed is not None
    assert deltalog.DeltaTable(table).latest_version() == 0
    written_before = data_files(table)
    assert len(written_before) > len(referenced_files(table))  # batch 1's files, uncommitted

    assert run_sink(spark, "deltalog", source, table, checkpoint) is None
    ids = [row["id"] for row in spark.read.format("delta").load(str(table)).collect()]
    assert sorted(ids) == list(range(30))
    orphans = written_before - referenced_files(table)
    assert orphans
    assert orphans <= data_files(table)

    query_id = json.loads((checkpoint / "metadata").read_text())["id"]
    ours = commit_infos(table)
    assert [info["operationParameters"] for info in ours] == [
        {"outputMode": "Append", "queryId": query_id, "epochId": str(epoch)} for epoch in range(3)
    ]
    delta_table, delta_checkpoint = tmp_path / "delta", tmp_path / "delta-ckpt"
    assert run_sink(spark, "delta", source, delta_table, delta_checkpoint) is None
    theirs = commit_infos(delta_table)
    assert [info["operation"] for info in ours] == [info["operation"] for info in theirs]
    assert [sorted(info["operationParameters"]) for info in ours] == [
        sorted(info["operationParameters"]) for info in theirs
    ]
    assert theirs[0]["operationParameters"]["outputMode"] == "Append"


@pytest.mark.parametrize("source_format", ["deltalog", "deltalog_all_available"])
def test_stream_of_a_table_another_process_appends_to_matches_delta(
    registered: Any, tmp_path: Path, source_format: str
) -> None:
    """deltalog's source reads the table from version 0 in rounds (Trigger.AvailableNow)
    after each of which another process commits, and sees every row once. With admission
    control (``maxFilesPerTrigger``), Delta on Spark's source reads it too: the
    micro-batches hold the same rows and end at the same versions."""
    spark, table = registered, tmp_path / "t"
    limited = source_format == "deltalog"
    rounds = [[[0, 1, 2], [3], [4, 5]], [[6, 7, 8, 9], [10]], [[11], [12, 13, 14]]]
    ours: dict[int, list[int]] = {}
    theirs: dict[int, list[int]] = {}
    for commits in rounds:
        append_in_other_process(table, commits)
        run_reader(spark, source_format, table, tmp_path / "ours", ours, limited)
        if limited:
            run_reader(spark, "delta", table, tmp_path / "theirs", theirs, limited)
    every_id = [i for batch in ours.values() for i in batch]
    assert sorted(every_id) == list(range(15))
    if not limited:
        return
    assert ours == theirs
    # Delta on Spark writes "after the last file of version v" as "before version v + 1":
    # both are compared as the number of files of the table's history read so far.
    files_per_version = [len(commit) for commits in rounds for commit in commits]
    ends = [files_read(end, files_per_version) for end in offsets(tmp_path / "ours", "version")]
    delta_ends = offsets(tmp_path / "theirs", "reservoirVersion")
    assert ends == [files_read(end, files_per_version) for end in delta_ends]


# --- helpers ------------------------------------------------------------------------------


def write_json(path: Path, ids: range) -> None:
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))


def run_sink(
    spark: Any, sink: str, source: Path, table: Path, checkpoint: Path
) -> BaseException | None:
    """Streams the JSON files of ``source`` into ``table``, one file per micro-batch, until
    done or failed; the query's exception."""
    stream = spark.readStream.schema("id long").option("maxFilesPerTrigger", 1).json(str(source))
    query = (
        stream.writeStream.format(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(table))
    )
    try:
        query.awaitTermination()
    except Exception as error:
        return error
    exception: BaseException | None = query.exception()
    return exception


def data_files(table: Path) -> set[str]:
    return {str(path.relative_to(table)) for path in table.rglob("*.parquet")}


def referenced_files(table: Path) -> set[str]:
    files = deltalog.DeltaTable(table).snapshot().files().to_pyarrow()
    return set(files.column("path").to_pylist())


def commit_infos(table: Path) -> list[dict[str, Any]]:
    infos = []
    for log in sorted((table / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                infos.append(action["commitInfo"])
    return infos


APPENDER = """
import sys, json
import pyarrow as pa
import deltalog

for ids in json.loads(sys.argv[2]):
    data = pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array(ids, pa.int64())})
    deltalog.write_table(sys.argv[1], data, mode="append", partition_by=["p"])
"""


def append_in_other_process(table: Path, commits: list[list[int]]) -> None:
    """Another process commits each list of ids as one version, one file per id (the table
    is partitioned by a copy of the id)."""
    subprocess.run(
        [sys.executable, "-c", APPENDER, str(table), json.dumps(commits)],
        check=True,
        env=os.environ.copy(),
    )


def run_reader(
    spark: Any,
    source_format: str,
    table: Path,
    checkpoint: Path,
    batches: dict[int, list[int]],
    limited: bool,
) -> None:
    """Runs a stream of ``table`` from version 0 to what is committed now (two files per
    micro-batch when ``limited``), adding each micro-batch's ids to ``batches``."""
    reader = spark.readStream.format(source_format).option("startingVersion", 0)
    if limited:
        reader = reader.option("maxFilesPerTrigger", 2)

    def collect(frame: Any, batch_id: int) -> None:
        ids = sorted(row["id"] for row in frame.collect())
        if ids:
            batches[batch_id] = ids

    query = (
        reader.load(str(table))
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None


def offsets(checkpoint: Path, key: str) -> list[tuple[int, int]]:
    """The (version, index) each micro-batch of the query ends at (its offset log)."""
    ends = []
    for entry in sorted((checkpoint / "offsets").iterdir(), key=lambda p: p.name):
        if not entry.name.isdigit():
            continue
        offset = json.loads(entry.read_text().splitlines()[-1])
        ends.append((int(offset[key]), int(offset["index"])))
    return ends


def files_read(end: tuple[int, int], files_per_version: list[int]) -> int:
    """How many files of the stream lie up to the offset ``end``, ``(version, index)``."""
    version, index = end
    return sum(files_per_version[:version]) + index + 1
