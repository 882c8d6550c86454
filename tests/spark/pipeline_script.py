"""One realistic deltalog.spark pipeline, run by ``test_spark_versions.py`` in a subprocess
under another pyspark than the suite's (``.venv-spark43``: pyspark 4.3.0, no Delta jars):

    python tests/spark/pipeline_script.py classic WORKDIR   # local[2] Spark in this process
    python tests/spark/pipeline_script.py connect WORKDIR   # a Spark Connect client; the
                                                            # server: local[2] in its own JVM

It writes a partitioned table with ``df.write.format("deltalog")``, appends, overwrites
with ``replaceWhere``, streams it into a second table, reads it back in three ways, then runs
``deltalog.spark.DeltaTable``'s delete, update, merge, history, detail, toDF, optimize,
restoreToVersion and vacuum. After every step the rows Spark reads and the rows deltalog's
core reads (``deltalog.read_table``) must equal the rows computed here in plain Python. It
prints one line per step and exits non-zero on the first difference.
"""

from __future__ import annotations

import copy
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import deltalog
import deltalog.spark
from deltalog.spark import DeltaTable

#: The session settings of both modes (the Connect server takes them at start).
CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.adaptive.enabled": "false",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
}
#: The columns of the table, as Spark DDL.
SCHEMA = "id long, p string, s string, amount double"

Row = dict[str, Any]
Rows = dict[int, Row]


def make_row(i: int, amount: float | None = None) -> Row:
    return {
        "id": i,
        "p": "abc"[i % 3],
        "s": f"s{i}",
        "amount": i * 1.5 if amount is None else amount,
    }


# --- sessions ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def classic_session(workdir: Path) -> Iterator[Any]:
    builder = SparkSession.builder.master("local[2]").appName("deltalog-pipeline")
    for key, value in {**CONF, **scratch_conf(workdir)}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()


@contextmanager
def connect_session(workdir: Path) -> Iterator[Any]:
    """A Spark Connect client of a Connect server started here on a free loopback port
    (``spark-submit --class ...SparkConnectServer``, as ``sbin/start-connect-server.sh``
    does): this process runs no JVM."""
    port = free_port()
    spark_home = Path(pyspark.__file__).parent
    settings = {
        **CONF,
        **scratch_conf(workdir),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    }
    command = [
        str(spark_home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name",
        "deltalog-pipeline-connect",
        "--master",
        "local[2]",
    ]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    log_path = workdir / "connect-server.log"
    env = {**os.environ, "SPARK_HOME": str(spark_home)}
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_for_port(port, server, log_path)
        print(f"connect server (pid {server.pid}) listening on 127.0.0.1:{port}", flush=True)
        spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        try:
            yield spark
        finally:
            spark.stop()
    except BaseException:
        print(f"--- the Connect server's log ({log_path}), last lines:", flush=True)
        print("\n".join(log_path.read_text(errors="replace").splitlines()[-60:]), flush=True)
        raise
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def wait_for_port(port: int, server: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the Connect server exited with {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the Connect server did not listen on port {port} within 180 s")


def scratch_conf(workdir: Path) -> dict[str, str]:
    return {
        "spark.sql.warehouse.dir": str(workdir / "warehouse"),
        "spark.local.dir": str(workdir / "spark-local"),
    }


# --- checks ----------------------------------------------------------------------------------


def by_id(rows: Any) -> list[Row]:
    return sorted((dict(row) for row in rows), key=lambda row: row["id"])


def spark_rows(frame: Any) -> list[Row]:
    return by_id(row.asDict() for row in frame.collect())


def check_rows(step: str, actual: list[Row], expected: Rows | list[Row]) -> None:
    wanted = by_id(expected.values() if isinstance(expected, dict) else expected)
    if actual != wanted:
        missing = [row for row in wanted if row not in actual]
        extra = [row for row in actual if row not in wanted]
        raise AssertionError(
            f"{step}: {len(actual)} rows, expected {len(wanted)}\n"
            f"  missing: {missing}\n  unexpected: {extra}"
        )


def data_files(path: str) -> set[str]:
    """The Parquet data files under the table's folder."""
    root = Path(path)
    return {
        file.relative_to(root).as_posix()
        for file in root.rglob("*.parquet")
        if "_delta_log" not in file.parts
    }


def live_files(path: str) -> set[str]:
    """The data files of the table's latest version (relative paths, unescaped)."""
    files = pa.table(deltalog.DeltaTable(path).snapshot().files())
    return {unquote(str(name)) for name in files.column("path").to_pylist()}


def check(step: str, condition: bool, detail: Any = "") -> None:
    if not condition:
        raise AssertionError(f"{step}: {detail}")


class Pipeline:
    """The table the pipeline changes, and its checks."""

    def __init__(self, spark: Any, workdir: Path) -> None:
        self.spark = spark
        self.path = str(workdir / "events")
        self.started = time.monotonic()
        deltalog.spark.register(spark)

    def step(self, name: str, expected: Rows | None = None) -> None:
        """Checks the table's rows as Spark and deltalog's core read them (when
        ``expected``), then prints the step."""
        if expected is not None:
            check_rows(f"{name} (core read)", by_id(self.core_rows()), expected)
            check_rows(f"{name} (spark read)", spark_rows(self.read()), expected)
        took = time.monotonic() - self.started
        print(f"ok {name} (version {self.version()}, {took:.1f} s)", flush=True)

    def core_rows(self) -> list[Row]:
        rows: list[Row] = deltalog.read_table(self.path).to_pylist()
        return rows

    def read(self, **options: Any) -> Any:
        reader = self.spark.read.format("deltalog")
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(self.path)

    def frame(self, rows: list[Row]) -> Any:
        return self.spark.createDataFrame(
            [(r["id"], r["p"], r["s"], r["amount"]) for r in rows], SCHEMA
        )

    def version(self) -> int:
        version: int = deltalog.DeltaTable(self.path).latest_version()
        return version


def run(spark: Any, workdir: Path) -> None:
    pipe = Pipeline(spark, workdir)
    path = pipe.path
    expected: Rows = {}

    # -- the data source: create, append, overwrite a partition, stream, read ---------------
    first = [make_row(i) for i in range(12)]
    writer = pipe.frame(first).repartition(2).write.format("deltalog").mode("append")
    writer.option("partitionBy", "p").save(path)  # Spark refuses .partitionBy() for Python sources
    expected.update({r["id"]: r for r in first})
    pipe.step("write (creates the table, partitioned by p)", expected)

    second = [make_row(i) for i in range(12, 24)]
    deltalog.spark.write(pipe.frame(second), path, mode="append", user_metadata="second batch")
    expected.update({r["id"]: r for r in second})
    pipe.step("append", expected)
    appended = copy.deepcopy(expected)

    stream_out = str(workdir / "stream-copy")
    query = (
        spark.readStream.format("deltalog")
        .load(path)
        .writeStream.format("deltalog")
        .option("checkpointLocation", str(workdir / "stream-checkpoint"))
        .trigger(availableNow=True)
        .start(stream_out)
    )
    check("stream finished", query.awaitTermination(300), "still running after 300 s")
    check("stream", query.exception() is None, query.exception())
    check_rows(
        "stream (core read of the copy)",
        by_id(deltalog.read_table(stream_out).to_pylist()),
        appended,
    )
    pipe.step("stream the table into a copy (readStream, writeStream, availableNow)")

    replacement = [make_row(i, amount=i * 10.0) for i in (2, 5, 8, 32)]  # p = 'c' only
    pipe.frame(replacement).write.format("deltalog").mode("overwrite").option(
        "replaceWhere", "p = 'c'"
    ).save(path)
    expected = {i: r for i, r in expected.items() if r["p"] != "c"}
    expected.update({r["id"]: r for r in replacement})
    pipe.step("overwrite with replaceWhere", expected)
    overwritten_version, overwritten = pipe.version(), copy.deepcopy(expected)

    pushed = pipe.read().where(F.col("p") == "a").where("id > 5")
    check_rows(
        "filtered read",
        spark_rows(pushed),
        [r for r in expected.values() if r["p"] == "a" and r["id"] > 5],
    )
    old = pipe.read(versionAsOf=1)
    check_rows("time travel (versionAsOf)", spark_rows(old), appended)
    native = deltalog.spark.read(spark, path, columns=["id", "s", "p"], filter="p = 'b'")
    check_rows(
        "deltalog.spark.read",
        spark_rows(native),
        [{"id": r["id"], "s": r["s"], "p": r["p"]} for r in expected.values() if r["p"] == "b"],
    )
    pipe.step("reads: filters, versionAsOf, deltalog.spark.read")

    # -- DeltaTable: delete and update (copy-on-write, then deletion vectors) ---------------
    table = DeltaTable.forPath(spark, path)
    table.delete("id < 2")
    expected = {i: r for i, r in expected.items() if not i < 2}
    pipe.step("delete (SQL condition)", expected)

    table.delete(F.col("s").endswith("7"))
    expected = {i: r for i, r in expected.items() if not r["s"].endswith("7")}
    pipe.step("delete (Column condition)", expected)

    table.update(condition="p = 'a'", set={"amount": "amount * 2"})
    for row in expected.values():
        if row["p"] == "a":
            row["amount"] *= 2
    pipe.step("update (SQL condition and value)", expected)

    deltalog.DeltaTable(path).alter.set_properties({"delta.enableDeletionVectors": "true"})
    pipe.step("enable deletion vectors (deltalog's ALTER)", expected)

    table.update(F.col("id") > 20, {"s": F.upper(F.col("s")), "amount": F.col("amount") + 1})
    for i, row in expected.items():
        if i > 20:
            row["s"], row["amount"] = row["s"].upper(), row["amount"] + 1
    pipe.step("update (Column condition and values, deletion vectors)", expected)

    table.delete("s = 's4'")
    expected.pop(4)
    pipe.step("delete (deletion vectors)", expected)

    # -- DeltaTable: merge ------------------------------------------------------------------
    source = spark.createDataFrame(
        [
            (3, "a", "s3-new", 33.0, False),  # matched: updated
            (6, "a", "s6", 0.0, True),  # matched: deleted
            (40, "b", "s40", 4.0, False),  # not matched: inserted
            (41, "c", "s41", 4.5, False),  # not matched: inserted
        ],
        "id long, p string, s string, amount double, deleted boolean",
    )
    result = (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete(condition="s.deleted")
        .whenMatchedUpdate(set={"s": "s.s", "amount": F.col("s.amount")})
        .whenNotMatchedInsert(values={"id": "s.id", "p": "s.p", "s": "s.s", "amount": "s.amount"})
        .whenNotMatchedBySourceDelete(condition=F.col("t.id") >= 22)
        .execute()
        .collect()
    )
    by_source = {i for i in expected if i >= 22 and i not in (3, 6, 40, 41)}
    expected[3] = {**expected[3], "s": "s3-new", "amount": 33.0}
    expected.pop(6)
    expected[40] = {"id": 40, "p": "b", "s": "s40", "amount": 4.0}
    expected[41] = {"id": 41, "p": "c", "s": "s41", "amount": 4.5}
    for i in by_source:
        expected.pop(i)
    metrics = result[0].asDict()
    wanted_metrics = {
        "num_affected_rows": 1 + 1 + 2 + len(by_source),
        "num_updated_rows": 1,
        "num_deleted_rows": 1 + len(by_source),
        "num_inserted_rows": 2,
    }
    check("merge metrics", metrics == wanted_metrics, f"{metrics} != {wanted_metrics}")
    pipe.step("merge (matched update/delete, insert, not matched by source delete)", expected)

    # -- DeltaTable: history, detail, toDF ------------------------------------------------
    history = table.history().collect()
    operations = [row["operation"] for row in history]
    check("history", len(history) == pipe.version() + 1, operations)
    check(
        "history",
        operations[:4] == ["MERGE", "DELETE", "UPDATE", "SET TBLPROPERTIES"]
        and operations[-1] == "WRITE",
        operations,
    )
    check(
        "history versions",
        [row["version"] for row in history] == list(range(pipe.version(), -1, -1)),
    )
    check("history limit", len(table.history(2).collect()) == 2)
    detail = table.detail().collect()[0]
    snapshot = deltalog.DeltaTable(path).snapshot()
    check(
        "detail", detail["format"] == "delta" and list(detail["partitionColumns"]) == ["p"], detail
    )
    check(
        "detail numFiles",
        detail["numFiles"] == snapshot.num_files,
        (detail["numFiles"], snapshot.num_files),
    )
    check("detail features", "deletionVectors" in detail["tableFeatures"], detail["tableFeatures"])
    check_rows("toDF", spark_rows(table.toDF()), expected)
    aliased = table.alias("t").toDF().where("t.p = 'b'").select("t.id", "t.s")
    check_rows(
        "alias(...).toDF()",
        spark_rows(aliased),
        [{"id": r["id"], "s": r["s"]} for r in expected.values() if r["p"] == "b"],
    )
    check(
        "isDeltaTable",
        DeltaTable.isDeltaTable(spark, path) and not DeltaTable.isDeltaTable(spark, str(workdir)),
    )
    pipe.step("history, detail, toDF, alias, isDeltaTable")

    # -- DeltaTable: optimize, restore, vacuum -------------------------------------------------
    files_before = deltalog.DeltaTable(path).snapshot().num_files
    optimized = table.optimize().executeCompaction().collect()[0]
    optimize_metrics = optimized["metrics"]
    files_after = deltalog.DeltaTable(path).snapshot().num_files
    check("optimize path", optimized["path"] == path, optimized["path"])
    check(
        "optimize metrics",
        optimize_metrics["numFilesRemoved"] > 0
        and files_after
        == files_before - optimize_metrics["numFilesRemoved"] + optimize_metrics["numFilesAdded"]
        and files_after < files_before,
        (files_before, files_after, optimize_metrics),
    )
    pipe.step("optimize().executeCompaction()", expected)

    restored = table.restoreToVersion(overwritten_version).collect()[0]
    check("restore metrics", restored["num_of_files_after_restore"] > 0, restored)
    expected = overwritten
    pipe.step(f"restoreToVersion({overwritten_version})", expected)

    before_vacuum = data_files(path)
    vacuumed = table.vacuum(0)
    check("vacuum result", vacuumed.collect() == [], vacuumed.collect())
    after_vacuum = data_files(path)
    live = live_files(path)
    check("vacuum keeps the live files", live <= after_vacuum, sorted(live - after_vacuum))
    check("vacuum removes the others", after_vacuum == live, sorted(after_vacuum - live))
    check("vacuum removed files", len(after_vacuum) < len(before_vacuum))
    pipe.step("vacuum(0)", expected)
    print(f"pipeline passed in {time.monotonic() - pipe.started:.1f} s", flush=True)


def main() -> None:
    mode, workdir = sys.argv[1], Path(sys.argv[2])
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers: this Python, with deltalog
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    print(
        f"pyspark {pyspark.__version__}, deltalog {deltalog.__version__} from {deltalog.__file__}"
    )
    print(f"mode: {mode}", flush=True)
    sessions: dict[str, Callable[[Path], Any]] = {
        "classic": classic_session,
        "connect": connect_session,
    }
    if mode not in sessions:
        raise SystemExit(f"mode must be classic or connect, not {mode!r}")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    with sessions[mode](workdir) as spark:
        print(f"session: {type(spark).__module__}.{type(spark).__name__}", flush=True)
        run(spark, workdir)


if __name__ == "__main__":
    main()
