"""One measurement per child process: one engine doing one operation on one table.

The parent (:func:`measure`) starts ``python engines.py child ENGINE OPERATION`` with a fresh
interpreter and sends the table on stdin as JSON (a :data:`TableRequest`). The child imports the
engine and prepares it (untimed), notes its resident memory, times the operation alone with
``time.perf_counter``, notes the peak resident memory (``VmHWM``, see :func:`_peak_rss_kib`),
and only then computes a result check (files listed, deleted rows...) so the check costs
neither time nor memory. It prints one line ``DELTABENCH_RESULT {json}`` on stdout.

Delta on Spark is the exception: one child (:func:`measure_spark`) holds one SparkSession for all
of its measurements, after one untimed warm-up load, and does not measure memory. The same
session measures :data:`SPARK_SESSION_OPERATIONS` for deltalog too (its ``format("deltalog")``
data source against Delta on Spark's ``format("delta")``).

This file runs as a script in the child, so it imports nothing from the ``deltabench`` package.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: The operations, in report order.
OPERATIONS = (
    "open",
    "list",
    "filtered",
    "time_travel",
    "dvs",
    "append",
    "blind_append",
    "blind_append_checkpoint",
    "checkpoint",
    "vacuum",
    "delete",
    "delete_dv",
    "merge",
    "merge_dv",
    "concurrent_append",
    "spark_write",
    "spark_delete",
    "spark_delete_dv",
    "spark_merge",
    "spark_merge_dv",
    "spark_merge_large",
)
#: Row-level changes in the Spark session: ``deltalog.spark.DeltaTable`` (engine ``deltalog``)
#: against delta-spark's ``delta.tables.DeltaTable`` (engine ``spark``), on the same table,
#: which the Spark child puts back after every run.
SPARK_ROW_OPERATIONS = (
    "spark_delete",
    "spark_delete_dv",
    "spark_merge",
    "spark_merge_dv",
    "spark_merge_large",
)
#: Operations measured only in the Spark session, for deltalog and Delta on Spark alike.
SPARK_SESSION_OPERATIONS = ("spark_write", *SPARK_ROW_OPERATIONS)
#: Engines measured one child process per measurement, in report order.
PROCESS_ENGINES = ("deltalog", "deltalake", "floor", "cat", "duckdb")
#: Engines that parse nothing, so have no count to check (the report does not list them as
#: unchecked).
UNCOUNTED_ENGINES = ("cat",)
#: Every engine, in report order.
ENGINES = (*PROCESS_ENGINES, "spark")

#: What each engine does for each operation (shown in the report). The timed part always starts
#: from the table path, so every operation includes opening the table.
DESCRIPTIONS: dict[str, dict[str, str]] = {
    "deltalog": {
        "open": "`DeltaTable(p).snapshot()`",
        "list": "`pa.table(DeltaTable(p).snapshot().files())`",
        "filtered": "`pa.table(DeltaTable(p).snapshot(filter=F).files())` (the filter judged "
        "while the log is replayed) where deltalog has it, else "
        "`pa.table(DeltaTable(p).snapshot().scan(filter=F).files())`",
        "time_travel": "`pa.table(DeltaTable(p).snapshot(V).files())`",
        "dvs": "`pa.table(DeltaTable(p).snapshot().deletion_vectors())` (deleted row indexes "
        "per file)",
        "append": "`deltalog.write_table(t, data)` (a new table; zstd, the default)",
        "blind_append": "`deltalog.write_table(p, rows, mode='append')` (1,000 rows)",
        "blind_append_checkpoint": "the same blind append, landing on the next version that "
        "is a multiple of 10 (Delta's default `delta.checkpointInterval`), so the post-commit "
        "work writes a checkpoint; the harness first commits small blind appends (untimed) "
        "up to the version before",
        "checkpoint": "`DeltaTable(p).checkpoint()` (classic, stats as JSON and struct)",
        "vacuum": "`DeltaTable(p).vacuum(retention_hours=0, dry_run=True, "
        "enforce_retention_duration=False)`",
        "delete": "`DeltaTable(p).delete('qty = 7')` (the files holding matches rewritten)",
        "delete_dv": "`DeltaTable(p).delete('qty = 7')` on the deletion vector table (rows "
        "marked in deletion vectors, no data file rewritten)",
        "merge": "`DeltaTable(p).merge(s, on='t.id = s.id', source_alias='s', "
        "target_alias='t').when_matched_update_all().when_not_matched_insert_all()"
        ".execute()` (the files holding matched rows rewritten)",
        "merge_dv": "the same merge on the deletion vector table "
        "(matched rows marked in deletion vectors, updated and inserted rows in new files)",
        "concurrent_append": "W writer processes (multiprocessing, spawn) each calling "
        "`deltalog.write_table(p, rows, mode='append')` C times (100 rows each), timed from "
        "the start signal (every writer imported and its rows built) to the last writer's "
        "report; retries are the sum of `CommitResult.retries`",
        "spark_write": "`df.write.format('deltalog').mode('overwrite').save(t)` of a cached "
        "generated DataFrame, in the Spark session Delta on Spark is measured in",
        "spark_delete": "`deltalog.spark.DeltaTable.forPath(spark, p).delete('qty = 7')` in the "
        "Spark session Delta on Spark is measured in (Spark's executors find the rows; tasks "
        "rewrite the files holding them)",
        "spark_delete_dv": "the same `deltalog.spark` delete on the deletion vector table "
        "(rows marked in deletion vectors)",
        "spark_merge": "`deltalog.spark.DeltaTable.forPath(spark, p).alias('t').merge("
        "spark.read.parquet(source).alias('s'), 't.id = s.id').whenMatchedUpdateAll()"
        ".whenNotMatchedInsertAll().execute()` (copy-on-write)",
        "spark_merge_dv": "the same `deltalog.spark` merge on the deletion vector table",
        "spark_merge_large": "the same `deltalog.spark` merge, of a source generated by "
        "`spark.range` (not cached), on the copy-on-write table",
    },
    "deltalake": {
        "open": "`DeltaTable(p)` (loads the file list eagerly)",
        "list": "`pa.table(DeltaTable(p).get_add_actions())`",
        "filtered": "`pa.array(DeltaTable(p).file_uris(file_pruning_predicate=F))` "
        "(no filtered Arrow listing exists)",
        "time_travel": "`pa.table(DeltaTable(p, version=V).get_add_actions())`",
        "dvs": "`pa.table(DeltaTable(p).deletion_vectors())` (keep masks per file)",
        "append": "`write_deltalake(t, data, writer_properties=WriterProperties(compression="
        "'ZSTD'))`",
        "blind_append": "`write_deltalake(p, rows, mode='append')` (1,000 rows)",
        "blind_append_checkpoint": "the same append, landing on the next version v with "
        "v + 1 a multiple of 100 (delta-rs's default interval and rule), so its post-commit "
        "hook writes a checkpoint; small blind appends committed first, untimed",
        "checkpoint": "`DeltaTable(p).create_checkpoint()`",
        "vacuum": "`DeltaTable(p).vacuum(retention_hours=0, dry_run=True, "
        "enforce_retention_duration=False, full=True)` (the whole directory listed, as ours)",
        "delete": "`DeltaTable(p).delete('qty = 7')` (copy-on-write)",
        "delete_dv": "`DeltaTable(p).delete('qty = 7')` on the deletion vector table: "
        "copy-on-write there too (delta-rs writes no deletion vectors)",
        "merge": "`DeltaTable(p).merge(s, predicate='t.id = s.id', source_alias='s', "
        "target_alias='t').when_matched_update_all().when_not_matched_insert_all()"
        ".execute()` (copy-on-write)",
        "merge_dv": "the same merge on the deletion vector table: copy-on-write there too "
        "(delta-rs writes no deletion vectors)",
        "concurrent_append": "the same W writer processes each calling "
        "`write_deltalake(p, rows, mode='append')` C times (it retries on its own and reports "
        "no retry count; a commit that fails is counted, not retried)",
        "spark_write": "",
        **dict.fromkeys(SPARK_ROW_OPERATIONS, ""),
    },
    "floor": {
        "open": "list `_delta_log`; pyarrow reads the checkpoint's add/remove key columns, "
        "metaData, protocol, txn, domainMetadata, sidecar; `pyarrow.json.read_json` of all "
        "commit bytes at once, converting only those fields (explicit schema); no replay",
        "list": "same as open: the least any reader must read to list files",
        "filtered": "open + the stats (checkpoint `add.stats_parsed` or `add.stats`; the "
        "commits' `add.stats` strings)",
        "time_travel": "open, with the commits up to V only",
        "dvs": "open + the bytes of every deletion vector file the log names",
        "append": "`pyarrow.parquet.write_table` of the data as zstd Parquet, files of 4M rows "
        "(row groups of 1M) written one per CPU at a time: the data files alone, no log",
        "blind_append": "",
        "blind_append_checkpoint": "",
        "checkpoint": "",
        "vacuum": "",
        "delete": "",
        "delete_dv": "",
        "merge": "",
        "merge_dv": "",
        "concurrent_append": "",
        "spark_write": "",
        **dict.fromkeys(SPARK_ROW_OPERATIONS, ""),
    },
    "cat": {
        "open": "list `_delta_log`, then read every file a listing needs (the checkpoint "
        "parts or V2 files, the commits after it) whole into memory, one after the other "
        "(`os.open`, `os.read`), nothing parsed: the cost of the log's bytes alone",
        "list": "same as open",
        "filtered": "same as open (the same files)",
        "time_travel": "the same, with the commits up to V only",
        **dict.fromkeys(
            (
                "dvs",
                "append",
                "blind_append",
                "blind_append_checkpoint",
                "checkpoint",
                "vacuum",
                "delete",
                "delete_dv",
                "merge",
                "merge_dv",
                "concurrent_append",
                "spark_write",
                *SPARK_ROW_OPERATIONS,
            ),
            "",
        ),
    },
    "duckdb": {
        "open": "`DESCRIBE SELECT * FROM delta_scan(p)` (binds: kernel loads protocol, "
        "metadata and schema, not the file list)",
        "list": "`SELECT * FROM delta_list_files(p)` to Arrow (kernel also reads every DV)",
        "filtered": "`EXPLAIN SELECT * FROM delta_scan(p) WHERE F`; files kept read from the "
        "`delta.FilterPushdown` log (logging on)",
        "time_travel": "`SELECT * FROM delta_list_files(p, version=V)` to Arrow",
        "dvs": "`SELECT * FROM delta_list_files(p, delete_count=true)` to Arrow",
        "append": "",
        "blind_append": "",
        "blind_append_checkpoint": "",
        "checkpoint": "",
        "vacuum": "",
        "delete": "",
        "delete_dv": "",
        "merge": "",
        "merge_dv": "",
        "concurrent_append": "",
        "spark_write": "",
        **dict.fromkeys(SPARK_ROW_OPERATIONS, ""),
    },
    "spark": {
        "open": "`DeltaLog.clearCache(); DeltaLog.forTable(spark, p).update()` + metadata",
        "list": "open + `snapshot.allFiles().collectAsList()` (in the JVM)",
        "filtered": "open + `spark.read.format('delta').load(p).where(F).inputFiles()` "
        "(planning prunes and skips by stats)",
        "time_travel": "`DeltaLog.forTable(spark, p).getSnapshotAt(V)` + "
        "`allFiles().collectAsList()`",
        "dvs": "",
        "append": "",
        "blind_append": "",
        "blind_append_checkpoint": "",
        "checkpoint": "",
        "vacuum": "",
        "delete": "",
        "delete_dv": "",
        "merge": "",
        "merge_dv": "",
        "concurrent_append": "",
        "spark_write": "`df.write.format('delta').mode('overwrite').save(t)` of the same cached "
        "DataFrame",
        "spark_delete": "delta-spark's `delta.tables.DeltaTable.forPath(spark, p).delete("
        "'qty = 7')` (copy-on-write)",
        "spark_delete_dv": "the same delta-spark delete on the deletion vector table",
        "spark_merge": "delta-spark's `DeltaTable.forPath(spark, p).alias('t').merge("
        "spark.read.parquet(source).alias('s'), 't.id = s.id').whenMatchedUpdateAll()"
        ".whenNotMatchedInsertAll().execute()` (copy-on-write)",
        "spark_merge_dv": "the same delta-spark merge on the deletion vector table",
        "spark_merge_large": "the same delta-spark merge, of the same generated source",
    },
}

#: Operations an engine cannot do at all, with the reason shown in the report.
_NO_DELTA_WRITES = "it does not write Delta tables"
_SPARK_READS_ONLY = "the Spark engine here measures reads in one warm session"
_SPARK_DATA_SOURCES = "a Spark write compares Spark data sources: deltalog's and Delta on Spark's"
_SPARK_DELTA_TABLES = (
    "compares deltalog.spark's DeltaTable with delta-spark's, in one Spark session"
)
UNSUPPORTED: dict[tuple[str, str], str] = {
    ("spark", "dvs"): "Delta on Spark evaluates deletion vectors only inside its Parquet scan "
    "(the data files are absent here); it has no API that materializes them alone",
    ("spark", "append"): _SPARK_READS_ONLY,
    ("spark", "blind_append"): _SPARK_READS_ONLY,
    ("spark", "blind_append_checkpoint"): _SPARK_READS_ONLY,
    ("duckdb", "append"): _NO_DELTA_WRITES,
    ("duckdb", "blind_append"): _NO_DELTA_WRITES,
    ("duckdb", "blind_append_checkpoint"): _NO_DELTA_WRITES,
    ("floor", "blind_append"): "a commit is one small JSON file: there is no floor to compare",
    ("floor", "blind_append_checkpoint"): "no floor is defined for writing a checkpoint",
    ("floor", "checkpoint"): "no floor is defined for writing a checkpoint",
    ("spark", "checkpoint"): _SPARK_READS_ONLY,
    ("duckdb", "checkpoint"): _NO_DELTA_WRITES,
    ("floor", "vacuum"): "no floor is defined for vacuum",
    ("spark", "vacuum"): _SPARK_READS_ONLY,
    ("duckdb", "vacuum"): _NO_DELTA_WRITES,
    **{
        (engine, operation): reason
        for operation in ("delete", "delete_dv", "merge", "merge_dv")
        for engine, reason in (
            ("floor", "no floor is defined for row-level changes"),
            ("duckdb", _NO_DELTA_WRITES),
            ("spark", _SPARK_READS_ONLY),
        )
    },
    ("floor", "concurrent_append"): "a commit is one small JSON file: there is no floor to compare",
    ("duckdb", "concurrent_append"): _NO_DELTA_WRITES,
    ("spark", "concurrent_append"): _SPARK_READS_ONLY,
    ("deltalake", "spark_write"): _SPARK_DATA_SOURCES,
    ("floor", "spark_write"): _SPARK_DATA_SOURCES,
    ("duckdb", "spark_write"): _SPARK_DATA_SOURCES,
    **{
        (engine, operation): _SPARK_DELTA_TABLES
        for operation in SPARK_ROW_OPERATIONS
        for engine in ("deltalake", "floor", "duckdb")
    },
    **{
        ("cat", operation): "the cat floor reads a listing's log bytes; it measures reads only"
        for operation in OPERATIONS
        if operation not in ("open", "list", "filtered", "time_travel")
    },
}

#: How the error of a measurement that took too long starts.
TIMED_OUT = "timed out"
#: Marks the result line on the child's stdout (engines may print there too).
RESULT_MARKER = "DELTABENCH_RESULT "

#: The table as the child needs it: JSON-able, built by ``scenarios.table_request``.
#: Keys: path, version, older_version, one_percent_filter, checkpoint_paths, commit_paths,
#: columns (name and Delta type, for a blind append's rows), and optionally partition_columns
#: (lets the floor parse JSON with an explicit schema). For generated data instead: source (an
#: Arrow IPC file), target (where an append writes a new table) and rows. For the row-level
#: change tables: path (no deletion vectors), dv_path (its deletion vector twin), source (the
#: merge source, Arrow IPC), rows, delete_predicate and merge_on. For the concurrent writers'
#: table: path, writers, commits (each writer's) and rows (per commit). In the child, the key
#: ``input`` holds the data a write operation writes, loaded before the clock starts, and
#: ``changed`` the table a row-level change works on.
TableRequest = dict[str, Any]


@dataclass
class Measurement:
    """One engine doing one operation on one scenario's table, once."""

    scenario: str
    operation: str
    engine: str
    run: int
    position: int = 0  # where in the run's engine order it ran (0: first)
    ok: bool = False
    seconds: float | None = None
    phases: dict[str, float] = field(default_factory=dict)  # seconds into the timed part
    notes: dict[str, str] = field(default_factory=dict)  # e.g. {"method": ...} where it varies
    peak_rss_kib: int | None = None  # the child's peak RSS (VmHWM)
    baseline_rss_kib: int | None = None  # resident memory after imports and setup
    check: dict[str, int] | None = None
    error: str | None = None
    #: Bytes of the files the operation added to the table directory, measured on disk by the
    #: parent after the child exited (write operations only).
    bytes_written: int | None = None
    #: Counts an operation reports besides its check, which may differ between runs and
    #: engines and are not compared: for ``concurrent_append`` ``commits`` (that landed),
    #: ``failed`` (commits that raised) and, where the engine reports them, ``retries``.
    figures: dict[str, int] = field(default_factory=dict)

    @property
    def operation_rss_kib(self) -> int | None:
        """The operation's own memory: peak RSS minus the RSS after imports."""
        if self.peak_rss_kib is None or self.baseline_rss_kib is None:
            return None
        return max(self.peak_rss_kib - self.baseline_rss_kib, 0)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "operation_rss_kib": self.operation_rss_kib}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Measurement:
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in names})


def unsupported_reason(engine: str, operation: str) -> str | None:
    """Why the engine cannot do the operation at all, or ``None``."""
    return UNSUPPORTED.get((engine, operation))


def probe(engine: str, timeout: float = 120.0) -> str | None:
    """Why the engine cannot run here (its child setup failed), or ``None`` when it can."""
    if engine == "spark":
        return spark_unavailable()
    completed = _run_child(["probe", engine], {}, timeout)
    if isinstance(completed, str):
        return completed
    result = _parse_result(completed)
    if isinstance(result, str):
        return result
    error = result.get("error")
    return str(error) if error else None


def measure(
    engine: str,
    operation: str,
    request: TableRequest,
    *,
    scenario: str,
    run: int,
    position: int,
    timeout: float,
) -> Measurement:
    """Run one measurement in a fresh child process; failures become ``error``, never raise."""
    measurement = Measurement(scenario, operation, engine, run, position)
    completed = _run_child(["child", engine, operation], request, timeout)
    if isinstance(completed, str):
        measurement.error = completed
        return measurement
    result = _parse_result(completed)
    if isinstance(result, str):
        measurement.error = result
        return measurement
    _fill(measurement, result)
    return measurement


@dataclass(frozen=True)
class SparkTask:
    """One Spark measurement to make in the shared session."""

    scenario: str
    operation: str
    run: int
    request: TableRequest
    #: ``deltalog`` for deltalog's data source in the session (a spark_write).
    engine: str = "spark"


def measure_spark(
    tasks: list[SparkTask],
    *,
    driver_memory: str,
    timeout: float,
    progress: Callable[[Measurement], None],
) -> list[Measurement]:
    """Make every Spark measurement in one child process holding one SparkSession.

    Results stream back one line per task; a task the child never reached (crash, timeout) is
    recorded with the reason.
    """
    payload = {
        "driver_memory": driver_memory,
        "tasks": [asdict(task) for task in tasks],
    }
    command = [sys.executable, str(Path(__file__).resolve()), "spark"]
    results: list[Measurement] = []
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_child_env(),
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        assert child.stderr is not None
        child.stdin.write(json.dumps(payload))
        child.stdin.close()
        stderr_lines: list[str] = []
        drain = threading.Thread(target=lambda: stderr_lines.extend(child.stderr), daemon=True)
        drain.start()
        watchdog = _Watchdog(child, timeout)
        for line in child.stdout:
            if not line.startswith(RESULT_MARKER):
                continue
            watchdog.reset()
            task = tasks[len(results)]
            measurement = Measurement(task.scenario, task.operation, task.engine, task.run)
            _fill(measurement, json.loads(line[len(RESULT_MARKER) :]))
            results.append(measurement)
            progress(measurement)
        watchdog.cancel()
        child.wait()
        drain.join(timeout=5)
    stopped = "timed out" if watchdog.fired else f"exit {child.returncode}"
    stderr_tail = _tail("".join(stderr_lines))
    reason = f"the Spark child stopped ({stopped}) before this task: {stderr_tail}"
    for task in tasks[len(results) :]:
        measurement = Measurement(
            task.scenario, task.operation, task.engine, task.run, error=reason
        )
        results.append(measurement)
        progress(measurement)
    return results


class _Watchdog:
    """Kills the child when no result arrives for ``timeout`` seconds."""

    def __init__(self, child: subprocess.Popen[str], timeout: float) -> None:
        self.child = child
        self.timeout = timeout
        self.fired = False
        self.timer: threading.Timer | None = None
        self.reset()

    def reset(self) -> None:
        self.cancel()
        self.timer = threading.Timer(self.timeout, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def _fire(self) -> None:
        self.fired = True
        self.child.kill()


def spark_unavailable() -> str | None:
    """Why Delta on Spark cannot run here, or ``None`` (the checks of tests/spark/conftest.py)."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (run `bash .ci/spark-deps`)"
    from importlib.metadata import version

    pyspark_version = version("pyspark")
    if not pyspark_version.startswith("4.2."):
        return f"pyspark {pyspark_version} is installed; the Delta jars need 4.2.x"
    if not _delta_jars():
        return f"no Delta jars in {_jar_dir()} (run `bash .ci/spark-deps`)"
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        return "no Java runtime (java on PATH or JAVA_HOME)"
    return None


# --------------------------------------------------------------------------------------------
# Parent-side helpers


def _run_child(
    arguments: list[str], request: TableRequest, timeout: float
) -> subprocess.CompletedProcess[str] | str:
    command = [sys.executable, str(Path(__file__).resolve()), *arguments]
    try:
        return subprocess.run(
            command,
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_child_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{TIMED_OUT} after {timeout:g} s"


def _parse_result(completed: subprocess.CompletedProcess[str]) -> dict[str, Any] | str:
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            data: dict[str, Any] = json.loads(line[len(RESULT_MARKER) :])
            return data
    return f"child exited with status {completed.returncode} and no result: " + _tail(
        completed.stderr
    )


def _fill(measurement: Measurement, result: dict[str, Any]) -> None:
    measurement.ok = result.get("error") is None
    measurement.error = result.get("error")
    measurement.seconds = result.get("seconds")
    measurement.phases = result.get("phases") or {}
    measurement.notes = result.get("notes") or {}
    measurement.peak_rss_kib = result.get("peak_rss_kib")
    measurement.baseline_rss_kib = result.get("baseline_rss_kib")
    measurement.check = result.get("check")
    measurement.figures = result.get("figures") or {}
    if result.get("bytes_written") is not None:
        measurement.bytes_written = int(result["bytes_written"])


def _tail(text: str, lines: int = 3, chars: int = 600) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-chars:] or "(no output)"


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _jar_dir() -> Path:
    repo_root = Path(__file__).resolve().parents[2]
    default = repo_root / ".cache" / "delta-jars" / "jars"
    return Path(os.environ.get("DELTALOG_DELTA_JARS", default))


def _delta_jars() -> list[str]:
    jar_dir = _jar_dir()
    return sorted(str(jar) for jar in jar_dir.glob("*.jar")) if jar_dir.is_dir() else []


# --------------------------------------------------------------------------------------------
# Child side: shared machinery


class Clock:
    """Times the operation; ``mark`` records how far into it a phase ended."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.phases: dict[str, float] = {}
        self.notes: dict[str, str] = {}  # how the operation was done, where that varies
        self.figures: dict[str, int] = {}  # see Measurement.figures

    def restart(self) -> None:
        """Starts the timing again: what the operation did so far was untimed setup (the
        writer processes of ``concurrent_append`` starting)."""
        self.start = time.perf_counter()
        self.phases.clear()

    def mark(self, phase: str) -> None:
        self.phases[phase] = time.perf_counter() - self.start

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


#: An operation: (engine context, table request, clock) -> its result, kept alive until the
#: peak memory has been read.
Operation = Callable[[Any, TableRequest, Clock], Any]
#: A check: the operation's result -> counts to compare between engines.
Check = Callable[[Any, Any, TableRequest], dict[str, int]]


def _current_rss_kib() -> int:
    return _proc_status_kib("VmRSS")


def _peak_rss_kib() -> int:
    """The peak RSS of this process image: ``VmHWM``, which ``execve`` resets.

    ``getrusage(RUSAGE_SELF).ru_maxrss`` would be wrong here: Linux carries the parent's RSS
    at fork into the child's ``ru_maxrss`` across ``execve``, so a child started by a large
    parent would report the parent's size. It is the fallback where ``/proc`` is missing.
    """
    try:
        return _proc_status_kib("VmHWM")
    except (OSError, KeyError, ValueError):
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _proc_status_kib(key: str) -> int:
    with Path("/proc/self/status").open() as status:
        for line in status:
            name, _, value = line.partition(":")
            if name == key:
                return int(value.split()[0])
    raise KeyError(f"{key} is not in /proc/self/status")


def _emit(data: dict[str, Any]) -> None:
    sys.stdout.write(RESULT_MARKER + json.dumps(data) + "\n")
    sys.stdout.flush()


def _error_text(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 800 else text[:800] + "..."


def _child_main(engine: str, operation: str) -> None:
    request: TableRequest = json.load(sys.stdin)
    try:
        setup, operations, checks = _ENGINE_TABLE[engine]
        context = setup()
        run = operations[operation]
    except Exception as error:
        _emit({"error": "setup failed: " + _error_text(error)})
        return
    if "dv_path" in request:  # a row-level change: on the deletion vector twin for ``_dv``
        request["changed"] = request["dv_path" if operation.endswith("_dv") else "path"]
    try:
        request["input"] = _write_input(operation, request)
    except Exception as error:
        _emit({"error": "input failed: " + _error_text(error)})
        return
    baseline = _current_rss_kib()
    clock = Clock()
    try:
        result = run(context, request, clock)
    except Exception as error:
        _emit({"error": _error_text(error), "baseline_rss_kib": baseline})
        return
    seconds = clock.elapsed()
    peak = _peak_rss_kib()
    try:
        check = checks[operation](context, result, request)
    except Exception as error:
        check = {}
        print(f"check failed: {_error_text(error)}", file=sys.stderr)
    _emit(
        {
            "seconds": seconds,
            "phases": clock.phases,
            "notes": clock.notes,
            "figures": clock.figures,
            "peak_rss_kib": peak,
            "baseline_rss_kib": baseline,
            "check": check,
        }
    )


def _probe_main(engine: str) -> None:
    try:
        setup, _, _ = _ENGINE_TABLE[engine]
        setup()
    except Exception as error:
        _emit({"error": _error_text(error)})
        return
    _emit({})


class _TinyStream:
    """A tiny Arrow stream, to take pyarrow's one-time lazy work out of the timed part."""

    def __init__(self, pa: Any) -> None:
        self.table = pa.table({"x": [1]})

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.table.__arrow_c_stream__(requested_schema)


def _warm_pyarrow(pa: Any) -> None:
    """Do pyarrow's lazy first-use work now: ``pa.table(x)`` imports pandas to ask whether x is
    a DataFrame (0.3 s) the first time it sees an object it does not know."""
    pa.table(_TinyStream(pa))
    pa.array(["x"])


def _files_check(_context: Any, table: Any, _request: TableRequest) -> dict[str, int]:
    return {"files": int(table.num_rows)}


def _write_input(operation: str, request: TableRequest) -> Any:
    """The Arrow table a write operation writes, in memory before the clock starts (so the
    operation's memory excludes it): the generated data for ``append``, the source of a
    ``merge``, 1,000 rows of the table's columns for ``blind_append``; ``None`` for reads."""
    import pyarrow as pa

    if operation in ("append", "merge", "merge_dv"):
        with pa.OSFile(request["source"]) as source:
            return pa.ipc.open_file(source).read_all()
    if operation not in ("blind_append", "blind_append_checkpoint"):
        return None
    rows = 1_000
    types = {
        "long": pa.int64(),
        "double": pa.float64(),
        "string": pa.string(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    columns = {}
    for name, kind in request["columns"]:
        strings = [f"{name}-{i:04d}" for i in range(rows)]
        columns[name] = pa.array(strings if kind == "string" else range(rows), type=types[kind])
    return pa.table(columns)


def _rows_written(paths: Iterable[Path]) -> dict[str, int]:
    import pyarrow.parquet as pq

    return {"rows": sum(pq.ParquetFile(path).metadata.num_rows for path in paths)}


# --------------------------------------------------------------------------------------------
# deltalog


def _deltalog_setup() -> Any:
    import pyarrow
    import pyarrow.compute

    import deltalog

    _warm_pyarrow(pyarrow)
    return (deltalog, pyarrow)


def _deltalog_open(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    return deltalog.DeltaTable(request["path"]).snapshot()


def _deltalog_list(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, pa = context
    snapshot = deltalog.DeltaTable(request["path"]).snapshot()
    clock.mark("open")
    return pa.table(snapshot.files())


def _deltalog_filtered(context: Any, request: TableRequest, clock: Clock) -> Any:
    """A filtered snapshot when deltalog offers one (the filter judged while the log is
    replayed), else a scan of the full snapshot."""
    deltalog, pa = context
    table = deltalog.DeltaTable(request["path"])
    if "filter" in inspect.signature(table.snapshot).parameters:
        clock.notes["method"] = "snapshot(filter=F).files()"
        snapshot = table.snapshot(filter=request["one_percent_filter"])
        clock.mark("open")
        return pa.table(snapshot.files())
    clock.notes["method"] = "snapshot().scan(filter=F).files()"
    snapshot = table.snapshot()
    clock.mark("open")
    return pa.table(snapshot.scan(filter=request["one_percent_filter"]).files())


def _deltalog_time_travel(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, pa = context
    snapshot = deltalog.DeltaTable(request["path"]).snapshot(request["older_version"])
    clock.mark("open")
    return pa.table(snapshot.files())


def _deltalog_dvs(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, pa = context
    snapshot = deltalog.DeltaTable(request["path"]).snapshot()
    clock.mark("open")
    return pa.table(snapshot.deletion_vectors())


def _deltalog_append(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    return deltalog.write_table(request["target"], request["input"])


def _deltalog_blind_append(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    return deltalog.write_table(request["path"], request["input"], mode="append")


def _deltalog_blind_append_checkpoint(context: Any, request: TableRequest, clock: Clock) -> Any:
    """The blind append whose post-commit work is due to write a checkpoint; the note says
    whether it did (deltalog defers a checkpoint it cannot write incrementally)."""
    result = _deltalog_blind_append(context, request, clock)
    post_commit = result.post_commit
    deferred = getattr(post_commit, "checkpoint_deferred", None)
    if deferred:
        clock.notes["method"] = f"post-commit checkpoint deferred: {deferred}"
    elif post_commit.checkpoint is not None:
        clock.notes["method"] = "post-commit checkpoint written"
    return result


def _deltalog_append_check(context: Any, _result: Any, request: TableRequest) -> dict[str, int]:
    deltalog, pa = context
    files = pa.table(deltalog.DeltaTable(request["target"]).snapshot().files())
    return {"rows": int(pa.compute.sum(files.column("num_records")).as_py() or 0)}


def _deltalog_checkpoint(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    return deltalog.DeltaTable(request["path"]).checkpoint()


def _deltalog_vacuum(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    table = deltalog.DeltaTable(request["path"])
    return table.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False)


def _deltalog_delete(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    table = deltalog.DeltaTable(request["changed"])
    return table.delete(request["delete_predicate"])


def _deltalog_merge(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalog, _ = context
    table = deltalog.DeltaTable(request["changed"])
    merger = table.merge(
        request["input"], on=request["merge_on"], source_alias="s", target_alias="t"
    )
    return merger.when_matched_update_all().when_not_matched_insert_all().execute()


def _deltalog_delete_check(context: Any, result: Any, request: TableRequest) -> dict[str, int]:
    return {
        "rows": _deltalog_live_rows(context, request),
        "deleted": int(result.metrics["numDeletedRows"]),
        "dvs_added": int(result.metrics["numDeletionVectorsAdded"]),
    }


def _deltalog_merge_check(context: Any, result: Any, request: TableRequest) -> dict[str, int]:
    return {
        "rows": _deltalog_live_rows(context, request),
        "updated": int(result.metrics["numTargetRowsUpdated"]),
        "inserted": int(result.metrics["numTargetRowsInserted"]),
        "dvs_added": int(result.metrics["numTargetDeletionVectorsAdded"]),
    }


def _deltalog_live_rows(context: Any, request: TableRequest) -> int:
    """The rows of the changed table's latest version: records minus deleted rows, from the
    file list."""
    deltalog, pa = context
    files = pa.table(deltalog.DeltaTable(request["changed"]).snapshot().files())
    records = pa.compute.sum(files.column("num_records")).as_py() or 0
    deleted = pa.compute.sum(files.column("deletion_vector").combine_chunks().field("cardinality"))
    return int(records - (deleted.as_py() or 0))


def _vacuum_check(_context: Any, paths: Any, _request: TableRequest) -> dict[str, int]:
    return {"files": len(paths)}


def _checkpoint_check(_context: Any, _result: Any, request: TableRequest) -> dict[str, int]:
    """The version ``_last_checkpoint`` names after the checkpoint."""
    last = Path(request["path"]) / "_delta_log" / "_last_checkpoint"
    return {"version": int(json.loads(last.read_text())["version"])}


def _commit_version_check(_context: Any, result: Any, _request: TableRequest) -> dict[str, int]:
    return {"version": int(result.version)}


def _checkpointed(path: str, version: int) -> dict[str, int]:
    """1 when ``_last_checkpoint`` names ``version`` (the append's post-commit checkpoint was
    written), else 0."""
    last = Path(path) / "_delta_log" / "_last_checkpoint"
    named = int(json.loads(last.read_text())["version"]) if last.is_file() else -1
    return {"checkpointed": int(named == version)}


def _deltalog_checkpointed_check(_context: Any, result: Any, request: TableRequest) -> Any:
    errors = list(result.post_commit.errors)
    if errors:
        print(f"post-commit errors: {errors}", file=sys.stderr)
    return _checkpointed(request["path"], int(result.version))


def _deltalog_dvs_check(context: Any, table: Any, _request: TableRequest) -> dict[str, int]:
    import pyarrow.compute as pc

    deleted = pc.sum(pc.list_value_length(table.column("deleted_rows"))).as_py() or 0
    return {"files_with_dv": int(table.num_rows), "deleted_rows": int(deleted)}


# --------------------------------------------------------------------------------------------
# deltalake (delta-rs)


def _deltalake_setup() -> Any:
    import deltalake
    import pyarrow
    import pyarrow.compute

    _warm_pyarrow(pyarrow)
    return (deltalake, pyarrow)


def _deltalake_open(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    return deltalake.DeltaTable(request["path"])


def _deltalake_list(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, pa = context
    table = deltalake.DeltaTable(request["path"])
    clock.mark("open")
    return pa.table(table.get_add_actions())


def _deltalake_filtered(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, pa = context
    table = deltalake.DeltaTable(request["path"])
    clock.mark("open")
    return pa.array(table.file_uris(file_pruning_predicate=request["one_percent_filter"]))


def _deltalake_time_travel(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, pa = context
    table = deltalake.DeltaTable(request["path"], version=request["older_version"])
    clock.mark("open")
    return pa.table(table.get_add_actions())


def _deltalake_dvs(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, pa = context
    table = deltalake.DeltaTable(request["path"])
    clock.mark("open")
    return pa.table(table.deletion_vectors())


def _deltalake_append(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    properties = deltalake.WriterProperties(compression="ZSTD")
    deltalake.write_deltalake(request["target"], request["input"], writer_properties=properties)


def _deltalake_blind_append(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    deltalake.write_deltalake(request["path"], request["input"], mode="append")


def _deltalake_checkpoint(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    deltalake.DeltaTable(request["path"]).create_checkpoint()


def _deltalake_vacuum(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    table = deltalake.DeltaTable(request["path"])
    return table.vacuum(
        retention_hours=0, dry_run=True, enforce_retention_duration=False, full=True
    )


def _deltalake_delete(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    return deltalake.DeltaTable(request["changed"]).delete(request["delete_predicate"])


def _deltalake_merge(context: Any, request: TableRequest, clock: Clock) -> Any:
    deltalake, _ = context
    merger = deltalake.DeltaTable(request["changed"]).merge(
        request["input"], predicate=request["merge_on"], source_alias="s", target_alias="t"
    )
    return merger.when_matched_update_all().when_not_matched_insert_all().execute()


def _deltalake_delete_check(context: Any, metrics: Any, request: TableRequest) -> dict[str, int]:
    return {
        "rows": _deltalake_live_rows(context, request),
        "deleted": int(metrics["num_deleted_rows"]),
    }


def _deltalake_merge_check(context: Any, metrics: Any, request: TableRequest) -> dict[str, int]:
    return {
        "rows": _deltalake_live_rows(context, request),
        "updated": int(metrics["num_target_rows_updated"]),
        "inserted": int(metrics["num_target_rows_inserted"]),
    }


def _deltalake_live_rows(context: Any, request: TableRequest) -> int:
    """The rows of the changed table's latest version, from its file list (delta-rs writes no
    deletion vectors, and the generated table has none)."""
    deltalake, pa = context
    actions = pa.table(deltalake.DeltaTable(request["changed"]).get_add_actions())
    return int(pa.compute.sum(actions.column("num_records")).as_py() or 0)


def _deltalake_append_check(context: Any, _result: Any, request: TableRequest) -> dict[str, int]:
    deltalake, _ = context
    table = deltalake.DeltaTable(request["target"])
    return _rows_written(Path(uri.removeprefix("file://")) for uri in table.file_uris())


def _deltalake_version_check(context: Any, _result: Any, request: TableRequest) -> dict[str, int]:
    deltalake, _ = context
    return {"version": int(deltalake.DeltaTable(request["path"]).version())}


def _deltalake_checkpointed_check(context: Any, _result: Any, request: TableRequest) -> Any:
    deltalake, _ = context
    version = int(deltalake.DeltaTable(request["path"]).version())
    return _checkpointed(request["path"], version)


def _deltalake_dvs_check(context: Any, table: Any, _request: TableRequest) -> dict[str, int]:
    import pyarrow.compute as pc

    keep = pc.list_flatten(table.column("selection_vector"))
    deleted = len(keep) - (pc.sum(keep.cast("int64")).as_py() or 0)
    return {"files_with_dv": int(table.num_rows), "deleted_rows": int(deleted)}


# --------------------------------------------------------------------------------------------
# Concurrent writers: writer processes appending to one table at once (deltalog and deltalake)


#: How long the writer processes may take to start (imports, rows built) before the start
#: signal; and how long, after it, each may take to report.
WRITERS_READY_SECONDS = 300.0
WRITERS_REPORT_SECONDS = 3600.0


@dataclass
class ConcurrentRun:
    """What ``concurrent_append`` left for its check: the writer processes (joined by the
    check, untimed: they exit after reporting) and their reports."""

    processes: list[Any]
    reports: list[dict[str, Any]]


def _concurrent_append(engine: str, request: TableRequest, clock: Clock) -> ConcurrentRun:
    """``writers`` processes (multiprocessing, spawn) each append ``commits`` times ``rows``
    rows to the table at ``path``. The clock restarts when every writer is ready (engine
    imported, rows built) and they are released together; it stops at the last report.
    Commits that raise are counted (``figures["failed"]``), not retried."""
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    writers = int(request["writers"])
    start = spawn.Barrier(writers + 1)
    reports = spawn.Queue()
    arguments = (request["path"], int(request["commits"]), int(request["rows"]))
    processes = [
        spawn.Process(
            target=_concurrent_writer,
            args=(engine, writer, *arguments, start, reports),
            daemon=True,
        )
        for writer in range(writers)
    ]
    for process in processes:
        process.start()
    start.wait(timeout=WRITERS_READY_SECONDS)
    clock.restart()
    run = ConcurrentRun(processes, [reports.get(timeout=WRITERS_REPORT_SECONDS) for _ in processes])
    clock.mark("all_done")
    broken = [report["setup_error"] for report in run.reports if report.get("setup_error")]
    if broken:
        raise RuntimeError(f"{len(broken)} writer(s) could not start: {broken[0]}")
    clock.figures["commits"] = sum(report["commits"] for report in run.reports)
    clock.figures["failed"] = sum(report["failed"] for report in run.reports)
    retries = [report["retries"] for report in run.reports]
    if None not in retries:
        clock.figures["retries"] = sum(retries)
    failures = [report["failure"] for report in run.reports if report.get("failure")]
    if failures:
        clock.notes["failure"] = failures[0]
    return run


def _concurrent_writer(
    engine: str, writer: int, path: str, commits: int, rows: int, start: Any, reports: Any
) -> None:
    """One writer process: builds its rows, waits for the start signal, then appends them in
    ``commits`` commits and reports what landed (``retries`` is ``None`` where the engine
    does not count them)."""
    report: dict[str, Any] = {"commits": 0, "failed": 0, "retries": 0, "failure": None}
    try:
        append = _appender(engine)
        batches = [_writer_rows((writer * commits + n) * rows, rows) for n in range(commits)]
    except Exception as error:
        report["setup_error"] = _error_text(error)
        batches = []
    start.wait(timeout=WRITERS_READY_SECONDS)
    for batch in batches:
        try:
            retries = append(path, batch)
        except Exception as error:
            report["failed"] += 1
            report["failure"] = report["failure"] or _error_text(error)
            continue
        report["commits"] += 1
        report["retries"] = None if retries is None else report["retries"] + retries
    reports.put(report)


def _appender(engine: str) -> Callable[[str, Any], int | None]:
    """A blind append of ``engine``: (table path, rows) -> the retries it took, or ``None``."""
    if engine == "deltalog":
        import deltalog

        return lambda path, batch: deltalog.write_table(path, batch, mode="append").retries
    import deltalake

    def append(path: str, batch: Any) -> None:
        deltalake.write_deltalake(path, batch, mode="append")

    return append


def _writer_rows(first_id: int, rows: int) -> Any:
    """``rows`` rows of ``writers.WRITER_SCHEMA`` with the ids ``first_id..``."""
    import pyarrow as pa

    ids = range(first_id, first_id + rows)
    return pa.table(
        {
            "id": pa.array(ids, type=pa.int64()),
            "value": pa.array([i / 8 for i in ids], type=pa.float64()),
            "name": pa.array([f"writer-row-{i:08d}" for i in ids], type=pa.string()),
        }
    )


def _join_writers(run: ConcurrentRun) -> None:
    for process in run.processes:
        process.join(timeout=60)


def _deltalog_concurrent_check(context: Any, run: ConcurrentRun, request: TableRequest) -> Any:
    """The version and the rows of the table once every writer is done."""
    _join_writers(run)
    deltalog, pa = context
    snapshot = deltalog.DeltaTable(request["path"]).snapshot()
    files = pa.table(snapshot.files())
    rows = pa.compute.sum(files.column("num_records")).as_py() or 0
    return {"version": int(snapshot.version), "rows": int(rows)}


def _deltalake_concurrent_check(context: Any, run: ConcurrentRun, request: TableRequest) -> Any:
    _join_writers(run)
    deltalake, pa = context
    table = deltalake.DeltaTable(request["path"])
    actions = pa.table(table.get_add_actions())
    rows = pa.compute.sum(actions.column("num_records")).as_py() or 0
    return {"version": int(table.version()), "rows": int(rows)}


# --------------------------------------------------------------------------------------------
# The raw-read floor: pyarrow reading what any reader must read, and nothing else


#: The checkpoint columns a snapshot's file list needs (those the checkpoint has are read).
FLOOR_CHECKPOINT_COLUMNS = (
    "add.path",
    "add.size",
    "add.modificationTime",
    "add.partitionValues",
    "add.deletionVector",
    "add.dataChange",
    "remove.path",
    "remove.deletionVector",
    "metaData",
    "protocol",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)


@dataclass
class FloorRead:
    """What the floor read: checkpoint tables and the parsed commits."""

    checkpoint: list[Any]
    commits: Any | None
    versions: list[int]
    dv_bytes: int = 0


def _floor_setup() -> Any:
    import pyarrow
    import pyarrow.compute
    import pyarrow.json
    import pyarrow.parquet

    _warm_pyarrow(pyarrow)
    return pyarrow


def _floor_open(context: Any, request: TableRequest, clock: Clock) -> FloorRead:
    return _floor_read(context, request, clock, stats=False, upto=None)


def _floor_filtered(context: Any, request: TableRequest, clock: Clock) -> FloorRead:
    return _floor_read(context, request, clock, stats=True, upto=None)


def _floor_time_travel(context: Any, request: TableRequest, clock: Clock) -> FloorRead:
    return _floor_read(context, request, clock, stats=False, upto=request["older_version"])


def _floor_dvs(context: Any, request: TableRequest, clock: Clock) -> FloorRead:
    read = _floor_read(context, request, clock, stats=False, upto=None)
    clock.mark("open")
    paths = _floor_dv_files(context, read, Path(request["path"]))
    read.dv_bytes = sum(_read_all(paths, lambda path: len(path.read_bytes())))
    return read


#: The floor's Parquet layout for appends.
FLOOR_APPEND_FILE_ROWS = 4 << 20
FLOOR_APPEND_GROUP_ROWS = 1 << 20


def _floor_append(context: Any, request: TableRequest, clock: Clock) -> None:
    """The data cut into files of ``FLOOR_APPEND_FILE_ROWS`` rows, each written by
    ``pyarrow.parquet.write_table`` (zstd, row groups of ``FLOOR_APPEND_GROUP_ROWS``), one file
    per CPU at a time."""
    import pyarrow.parquet as pq

    data = request["input"]
    target = Path(request["target"])
    target.mkdir(parents=True, exist_ok=True)

    def write(index: int) -> None:
        piece = data.slice(index * FLOOR_APPEND_FILE_ROWS, FLOOR_APPEND_FILE_ROWS)
        path = target / f"part-{index:05d}.zstd.parquet"
        pq.write_table(piece, path, compression="zstd", row_group_size=FLOOR_APPEND_GROUP_ROWS)

    files = -(-data.num_rows // FLOOR_APPEND_FILE_ROWS)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(write, range(files)))


def _floor_append_check(_context: Any, _result: Any, request: TableRequest) -> dict[str, int]:
    return _rows_written(Path(request["target"]).rglob("*.parquet"))


def _floor_read(
    pa: Any, request: TableRequest, clock: Clock, *, stats: bool, upto: int | None
) -> FloorRead:
    log_dir = Path(request["path"]) / "_delta_log"
    listing = [entry.name for entry in os.scandir(log_dir)]
    clock.mark("listing")
    checkpoint_paths, commit_paths = _log_paths(request, log_dir, listing, upto)
    columns = (*FLOOR_CHECKPOINT_COLUMNS, "add.stats_parsed|add.stats") if stats else None
    checkpoint = _read_all(checkpoint_paths, lambda path: _floor_checkpoint(pa, path, columns))
    clock.mark("checkpoint")
    commits = _floor_commits(pa, commit_paths, request.get("partition_columns"), stats=stats)
    versions = [_log_version(path) for path in commit_paths]
    return FloorRead(checkpoint, commits, versions)


def _log_paths(
    request: TableRequest, log_dir: Path, listing: list[str], upto: int | None
) -> tuple[list[Path], list[Path]]:
    """The checkpoint files and the commits a listing of the latest version reads (as the
    generator wrote them), or of version ``upto`` (the commits found in ``listing``)."""
    checkpoint_paths = [Path(path) for path in request["checkpoint_paths"]]
    commit_paths = [Path(path) for path in request["commit_paths"]]
    if upto is not None:
        checkpoint_paths = [p for p in checkpoint_paths if _log_version(p) <= upto]
        first = max((_log_version(p) for p in checkpoint_paths), default=-1)
        commit_paths = sorted(
            log_dir / name
            for name in listing
            if len(name) == 25
            and name.endswith(".json")
            and name[:20].isdigit()
            and first < int(name[:20]) <= upto
        )
    return checkpoint_paths, commit_paths


def _floor_checkpoint(pa: Any, path: Path, columns: tuple[str, ...] | None) -> Any:
    """Read the wanted columns the checkpoint file has (``a|b``: ``a`` if present, else ``b``)."""
    import pyarrow.json
    import pyarrow.parquet as pq

    if path.suffix == ".json":  # a V2 checkpoint's JSON top file: the whole file is needed
        return pyarrow.json.read_json(path)
    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow
    present = []
    for wanted in columns or FLOOR_CHECKPOINT_COLUMNS:
        for option in wanted.split("|"):
            if _has_column(schema, option):
                present.append(option)
                break
    return parquet.read(columns=present)


def _has_column(schema: Any, dotted: str) -> bool:
    top, _, child = dotted.partition(".")
    index = schema.get_field_index(top)
    if index < 0:
        return False
    if not child:
        return True
    field_type = schema.field(index).type
    return hasattr(field_type, "get_field_index") and field_type.get_field_index(child) >= 0


def _floor_commits(
    pa: Any, paths: list[Path], partition_columns: list[str] | None, *, stats: bool
) -> Any | None:
    """Parse every commit's JSON lines with ``pyarrow.json`` in one go, converting only the
    fields a file listing needs (:func:`_floor_json_schema`); the rest is skipped."""
    import pyarrow.json

    if not paths:
        return None
    chunks = _read_all(paths, Path.read_bytes)
    data = b"".join(chunk if chunk.endswith(b"\n") else chunk + b"\n" for chunk in chunks)
    if partition_columns is None:  # unknown partitioning: let pyarrow infer every field
        options = pyarrow.json.ParseOptions()
    else:
        options = pyarrow.json.ParseOptions(
            explicit_schema=_floor_json_schema(pa, partition_columns, stats=stats),
            unexpected_field_behavior="ignore",
        )
    try:
        return pyarrow.json.read_json(pa.BufferReader(data), parse_options=options)
    except pa.ArrowInvalid:  # types inferred per block disagree: parse each commit alone
        return [
            pyarrow.json.read_json(pa.BufferReader(chunk), parse_options=options)
            for chunk in chunks
        ]


def _floor_json_schema(pa: Any, partition_columns: list[str], *, stats: bool) -> Any:
    """The actions and fields of a commit that a file listing needs (Delta protocol, "Actions");
    table properties and commit information are skipped."""
    string, long, integer = pa.string(), pa.int64(), pa.int32()
    deletion_vector = pa.struct(
        [
            ("storageType", string),
            ("pathOrInlineDv", string),
            ("offset", integer),
            ("sizeInBytes", integer),
            ("cardinality", long),
        ]
    )
    add_fields = [
        ("path", string),
        ("partitionValues", pa.struct([(name, string) for name in partition_columns])),
        ("size", long),
        ("modificationTime", long),
        ("dataChange", pa.bool_()),
        ("deletionVector", deletion_vector),
    ]
    if stats:
        add_fields.append(("stats", string))
    return pa.schema(
        [
            ("add", pa.struct(add_fields)),
            ("remove", pa.struct([("path", string), ("deletionVector", deletion_vector)])),
            (
                "metaData",
                pa.struct(
                    [
                        ("id", string),
                        ("schemaString", string),
                        ("partitionColumns", pa.list_(string)),
                    ]
                ),
            ),
            (
                "protocol",
                pa.struct(
                    [
                        ("minReaderVersion", integer),
                        ("minWriterVersion", integer),
                        ("readerFeatures", pa.list_(string)),
                        ("writerFeatures", pa.list_(string)),
                    ]
                ),
            ),
            ("txn", pa.struct([("appId", string), ("version", long)])),
            (
                "domainMetadata",
                pa.struct([("domain", string), ("configuration", string), ("removed", pa.bool_())]),
            ),
        ]
    )


def _read_all(paths: list[Path], read: Callable[[Path], Any]) -> list[Any]:
    if len(paths) <= 1:
        return [read(path) for path in paths]
    with ThreadPoolExecutor(max_workers=min(16, len(paths))) as pool:
        return list(pool.map(read, paths))


def _log_version(path: Path) -> int:
    return int(path.name[:20])


def _tables(read: FloorRead) -> Iterator[tuple[str, Any]]:
    for table in read.checkpoint:
        yield "checkpoint", table
    commits = read.commits
    for table in commits if isinstance(commits, list) else [commits] if commits else []:
        yield "commits", table


def _floor_dv_files(pa: Any, read: FloorRead, root: Path) -> list[Path]:
    """The distinct deletion vector files named by the log's adds (inline ones need no read)."""
    import pyarrow.compute as pc

    descriptors: set[tuple[str, str]] = set()
    for _, table in _tables(read):
        if "add" not in table.column_names:
            continue
        add_type = table.schema.field("add").type
        if add_type.get_field_index("deletionVector") < 0:
            continue
        dv = pc.struct_field(table.column("add"), "deletionVector")
        for name in ("u", "p"):
            kept = pc.filter(dv, pc.equal(pc.struct_field(dv, "storageType"), name))
            paths = pc.unique(pc.struct_field(kept, "pathOrInlineDv")).to_pylist()
            descriptors.update((name, path) for path in paths if path)
    return sorted({_dv_file(root, kind, value) for kind, value in descriptors})


def _dv_file(root: Path, storage_type: str, value: str) -> Path:
    """The file of a deletion vector (Delta protocol, "Deletion Vector Descriptor Schema")."""
    if storage_type == "p":
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(value).path))
    import uuid

    prefix, encoded = value[:-20], value[-20:]
    name = f"deletion_vector_{uuid.UUID(bytes=_z85_decode(encoded))}.bin"
    return root / prefix / name if prefix else root / name


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {char: index for index, char in enumerate(_Z85)}


def _z85_decode(text: str) -> bytes:
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start : start + 5]:
            value = value * 85 + _Z85_VALUE[char]
        out += value.to_bytes(4, "big")
    return bytes(out)


def _floor_open_check(pa: Any, read: FloorRead, request: TableRequest) -> dict[str, int]:
    return {"version": max(read.versions, default=request["version"])}


def _floor_files_check(pa: Any, read: FloorRead, request: TableRequest) -> dict[str, int]:
    """A naive count (checkpoint adds + commit adds - commit removes): no replay is done."""
    files = 0
    for source, table in _tables(read):
        if "add" in table.column_names:
            column = table.column("add")
            files += len(column) - column.null_count
        if source == "commits" and "remove" in table.column_names:
            column = table.column("remove")
            files -= len(column) - column.null_count
    return {"files": files}


def _floor_dvs_check(pa: Any, read: FloorRead, request: TableRequest) -> dict[str, int]:
    """Naive counts of live deletion vectors and their cardinality (no replay is done)."""
    import pyarrow.compute as pc

    files = rows = 0
    for source, table in _tables(read):
        for action, sign in (("add", 1), ("remove", -1)):
            if action not in table.column_names or (action == "remove" and source != "commits"):
                continue
            if table.schema.field(action).type.get_field_index("deletionVector") < 0:
                continue
            dv = pc.struct_field(table.column(action), "deletionVector")
            files += sign * (len(dv) - dv.null_count)
            cardinality = pc.sum(pc.struct_field(dv, "cardinality")).as_py() or 0
            rows += sign * int(cardinality)
    return {"files_with_dv": files, "deleted_rows": rows}


# --------------------------------------------------------------------------------------------
# The cat floor: the bytes of the log files a listing needs, read and nothing else


@dataclass
class CatRead:
    """The files the cat floor read, whole, as bytes (kept until the clock has stopped)."""

    contents: list[bytes]


def _cat_setup() -> Any:
    return None


def _cat_open(_context: Any, request: TableRequest, clock: Clock) -> CatRead:
    return _cat_read(request, clock, upto=None)


def _cat_time_travel(_context: Any, request: TableRequest, clock: Clock) -> CatRead:
    return _cat_read(request, clock, upto=request["older_version"])


def _cat_read(request: TableRequest, clock: Clock, *, upto: int | None) -> CatRead:
    """Lists ``_delta_log`` and reads the checkpoint files and the commits after it (up to
    version ``upto``) whole into memory, one after the other: no thread pool, since what a
    small file costs is its system calls, which Python threads serialize (a pool was slower
    here, as was ``cat`` in a subprocess)."""
    log_dir = Path(request["path"]) / "_delta_log"
    listing = [entry.name for entry in os.scandir(log_dir)]
    clock.mark("listing")
    checkpoint_paths, commit_paths = _log_paths(request, log_dir, listing, upto)
    contents = [_read_whole(path) for path in [*checkpoint_paths, *commit_paths]]
    clock.figures["files_read"] = len(contents)
    clock.figures["bytes_read"] = sum(len(content) for content in contents)
    return CatRead(contents)


def _read_whole(path: Path) -> bytes:
    """The file's bytes: one ``open``, ``fstat``, ``read`` (more on a short read), ``close``."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(descriptor).st_size
        content = os.read(descriptor, size)
        while len(content) < size:
            more = os.read(descriptor, size - len(content))
            if not more:
                break
            content += more
        return content
    finally:
        os.close(descriptor)


# --------------------------------------------------------------------------------------------
# duckdb + duckdb-extension-delta (delta-kernel-rs)


def _duckdb_setup() -> Any:
    import duckdb
    import duckdb_extension_delta
    import pyarrow

    package = Path(duckdb_extension_delta.__file__).parent
    extension = package / "extensions" / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    if not extension.is_file():
        found = sorted(package.glob("extensions/*/delta.duckdb_extension"))
        raise RuntimeError(
            f"duckdb {duckdb.__version__} has no bundled delta extension at {extension} "
            f"(found: {', '.join(str(path) for path in found) or 'none'})"
        )
    _warm_pyarrow(pyarrow)
    connection = duckdb.connect()
    connection.execute(f"LOAD '{extension}'")
    return connection


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _duckdb_open(connection: Any, request: TableRequest, clock: Clock) -> Any:
    path = _sql_string(request["path"])
    return connection.execute(f"DESCRIBE SELECT * FROM delta_scan({path})").fetchall()


def _duckdb_list(connection: Any, request: TableRequest, clock: Clock) -> Any:
    path = _sql_string(request["path"])
    return connection.sql(f"SELECT * FROM delta_list_files({path})").to_arrow_table()


def _duckdb_filtered(connection: Any, request: TableRequest, clock: Clock) -> Any:
    connection.execute("CALL enable_logging()")
    path = _sql_string(request["path"])
    query = f"EXPLAIN SELECT * FROM delta_scan({path}) WHERE {request['one_percent_filter']}"
    return connection.execute(query).fetchall()


def _duckdb_filtered_check(connection: Any, _result: Any, _request: TableRequest) -> dict[str, int]:
    rows = connection.execute(
        "SELECT files_after FROM delta_filter_pushdown_log() WHERE files_after IS NOT NULL"
    ).fetchall()
    if not rows:
        raise RuntimeError("no delta.FilterPushdown log line: the filter was not pushed down")
    return {"files": int(rows[-1][0])}


def _duckdb_time_travel(connection: Any, request: TableRequest, clock: Clock) -> Any:
    path = _sql_string(request["path"])
    version = int(request["older_version"])
    query = f"SELECT * FROM delta_list_files({path}, version={version})"
    return connection.sql(query).to_arrow_table()


def _duckdb_dvs(connection: Any, request: TableRequest, clock: Clock) -> Any:
    path = _sql_string(request["path"])
    query = f"SELECT * FROM delta_list_files({path}, delete_count=true)"
    return connection.sql(query).to_arrow_table()


def _duckdb_dvs_check(connection: Any, table: Any, _request: TableRequest) -> dict[str, int]:
    import pyarrow.compute as pc

    files = pc.sum(table.column("have_deletes").cast("int64")).as_py() or 0
    deleted = pc.sum(table.column("delete_count")).as_py() or 0
    return {"files_with_dv": int(files), "deleted_rows": int(deleted)}


def _no_check(_context: Any, _result: Any, _request: TableRequest) -> dict[str, int]:
    return {}


def _version_check(_context: Any, result: Any, _request: TableRequest) -> dict[str, int]:
    version = result.version
    return {"version": int(version() if callable(version) else version)}


_ENGINE_TABLE: dict[str, tuple[Callable[[], Any], dict[str, Operation], dict[str, Check]]] = {
    "deltalog": (
        _deltalog_setup,
        {
            "open": _deltalog_open,
            "list": _deltalog_list,
            "filtered": _deltalog_filtered,
            "time_travel": _deltalog_time_travel,
            "dvs": _deltalog_dvs,
            "append": _deltalog_append,
            "blind_append": _deltalog_blind_append,
            "blind_append_checkpoint": _deltalog_blind_append_checkpoint,
            "checkpoint": _deltalog_checkpoint,
            "vacuum": _deltalog_vacuum,
            "delete": _deltalog_delete,
            "delete_dv": _deltalog_delete,
            "merge": _deltalog_merge,
            "merge_dv": _deltalog_merge,
            "concurrent_append": lambda _c, request, clock: _concurrent_append(
                "deltalog", request, clock
            ),
        },
        {
            "open": _version_check,
            "list": _files_check,
            "filtered": _files_check,
            "time_travel": _files_check,
            "dvs": _deltalog_dvs_check,
            "append": _deltalog_append_check,
            "blind_append": _commit_version_check,
            "blind_append_checkpoint": _deltalog_checkpointed_check,
            "checkpoint": _checkpoint_check,
            "vacuum": _vacuum_check,
            "delete": _deltalog_delete_check,
            "delete_dv": _deltalog_delete_check,
            "merge": _deltalog_merge_check,
            "merge_dv": _deltalog_merge_check,
            "concurrent_append": _deltalog_concurrent_check,
        },
    ),
    "deltalake": (
        _deltalake_setup,
        {
            "open": _deltalake_open,
            "list": _deltalake_list,
            "filtered": _deltalake_filtered,
            "time_travel": _deltalake_time_travel,
            "dvs": _deltalake_dvs,
            "append": _deltalake_append,
            "blind_append": _deltalake_blind_append,
            "blind_append_checkpoint": _deltalake_blind_append,
            "checkpoint": _deltalake_checkpoint,
            "vacuum": _deltalake_vacuum,
            "delete": _deltalake_delete,
            "delete_dv": _deltalake_delete,
            "merge": _deltalake_merge,
            "merge_dv": _deltalake_merge,
            "concurrent_append": lambda _c, request, clock: _concurrent_append(
                "deltalake", request, clock
            ),
        },
        {
            "open": _version_check,
            "list": _files_check,
            "filtered": lambda _c, array, _r: {"files": len(array)},
            "time_travel": _files_check,
            "dvs": _deltalake_dvs_check,
            "append": _deltalake_append_check,
            "blind_append": _deltalake_version_check,
            "blind_append_checkpoint": _deltalake_checkpointed_check,
            "checkpoint": _checkpoint_check,
            "vacuum": _vacuum_check,
            "delete": _deltalake_delete_check,
            "delete_dv": _deltalake_delete_check,
            "merge": _deltalake_merge_check,
            "merge_dv": _deltalake_merge_check,
            "concurrent_append": _deltalake_concurrent_check,
        },
    ),
    "floor": (
        _floor_setup,
        {
            "open": _floor_open,
            "list": _floor_open,
            "filtered": _floor_filtered,
            "time_travel": _floor_time_travel,
            "dvs": _floor_dvs,
            "append": _floor_append,
        },
        {
            "open": _floor_open_check,
            "list": _floor_files_check,
            "filtered": _no_check,
            "time_travel": _floor_files_check,
            "dvs": _floor_dvs_check,
            "append": _floor_append_check,
        },
    ),
    "cat": (
        _cat_setup,
        {
            "open": _cat_open,
            "list": _cat_open,
            "filtered": _cat_open,
            "time_travel": _cat_time_travel,
        },
        dict.fromkeys(("open", "list", "filtered", "time_travel"), _no_check),
    ),
    "duckdb": (
        _duckdb_setup,
        {
            "open": _duckdb_open,
            "list": _duckdb_list,
            "filtered": _duckdb_filtered,
            "time_travel": _duckdb_time_travel,
            "dvs": _duckdb_dvs,
        },
        {
            "open": _no_check,
            "list": _files_check,
            "filtered": _duckdb_filtered_check,
            "time_travel": _files_check,
            "dvs": _duckdb_dvs_check,
        },
    ),
}


# --------------------------------------------------------------------------------------------
# Delta on Spark: one session, every task, results streamed


def _spark_main() -> None:
    payload = json.load(sys.stdin)
    tasks = payload["tasks"]
    try:
        spark = _spark_session(payload["driver_memory"])
        jvm = spark._jvm
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
        reads = [task for task in tasks if "path" in task["request"]]
        if reads:  # warm the JVM up: one untimed full load
            _spark_list(spark, delta_log, reads[0]["request"], Clock())
            delta_log.clearCache()
        changes = [task for task in tasks if task["operation"] in SPARK_ROW_OPERATIONS]
        _spark_warm_row_changes(spark, {task["engine"] for task in changes})
    except Exception as error:
        for _ in tasks:
            _emit({"error": "Spark session failed: " + _error_text(error)})
        return
    for task in tasks:
        request = task["request"]
        delta_log.clearCache()
        if task["operation"] in SPARK_ROW_OPERATIONS:
            _emit(_spark_row_change(spark, task, payload["driver_memory"]))
            continue
        try:
            if task["operation"] in SPARK_SESSION_OPERATIONS:
                frame, target = _spark_frame(spark, request, task["engine"])
                clock = Clock()
                _spark_write(frame, target, task["engine"])
                seconds = clock.elapsed()
                check = {"rows": int(spark.read.format("delta").load(target).count())}
            else:
                clock = Clock()
                check = _SPARK_OPERATIONS[task["operation"]](spark, delta_log, request, clock)
                seconds = clock.elapsed()
        except Exception as error:
            _emit({"error": _error_text(error)})
            continue
        _emit({"seconds": seconds, "phases": clock.phases, "check": check})
    spark.stop()


def _spark_session(driver_memory: str) -> Any:
    """A local[2] session with Delta: the settings of tests/spark/conftest.py, without those
    that only suit tiny tables (serial GC, C1 only, no codegen, one snapshot partition)."""
    import atexit
    import shutil
    import tempfile

    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    scratch = Path(tempfile.mkdtemp(prefix="deltabench-spark-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-bench")
        .config("spark.jars", ",".join(_delta_jars()))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.databricks.delta.stateReconstructionValidation.enabled", "false")
        # State reconstruction in as many partitions as there are cores (default 50).
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _spark_load(spark: Any, delta_log: Any, request: TableRequest, clock: Clock) -> Any:
    log = delta_log.forTable(spark._jsparkSession, request["path"])
    snapshot = log.update(
        getattr(log, "update$default$1")(),
        getattr(log, "update$default$2")(),
        getattr(log, "update$default$3")(),
    )
    snapshot.metadata()
    clock.mark("open")
    return snapshot


def _spark_open(spark: Any, delta_log: Any, request: TableRequest, clock: Clock) -> dict[str, int]:
    return {"version": int(_spark_load(spark, delta_log, request, clock).version())}


def _spark_list(spark: Any, delta_log: Any, request: TableRequest, clock: Clock) -> dict[str, int]:
    snapshot = _spark_load(spark, delta_log, request, clock)
    return {"files": int(snapshot.allFiles().collectAsList().size())}


def _spark_filtered(
    spark: Any, delta_log: Any, request: TableRequest, clock: Clock
) -> dict[str, int]:
    """The files a filtered read plans: Delta's optimizer rule (PrepareDeltaScan) prunes by
    partition and skips by statistics; ``inputFiles`` lists what is left."""
    _spark_load(spark, delta_log, request, clock)
    frame = spark.read.format("delta").load(request["path"]).where(request["one_percent_filter"])
    return {"files": len(frame.inputFiles())}


def _spark_time_travel(
    spark: Any, delta_log: Any, request: TableRequest, clock: Clock
) -> dict[str, int]:
    log = delta_log.forTable(spark._jsparkSession, request["path"])
    snapshot = log.getSnapshotAt(
        int(request["older_version"]),
        getattr(log, "getSnapshotAt$default$2")(),
        getattr(log, "getSnapshotAt$default$3")(),
        getattr(log, "getSnapshotAt$default$4")(),
    )
    clock.mark("open")
    return {"files": int(snapshot.allFiles().collectAsList().size())}


#: The generated DataFrame of a spark_write, cached, by row count.
_SPARK_FRAMES: dict[int, Any] = {}


def _spark_frame(spark: Any, request: TableRequest, engine: str) -> tuple[Any, str]:
    """What a spark_write needs, untimed: ``rows`` generated rows of the columns of
    ``generate.cached_arrow_data`` (long, double, string, timestamp, int, boolean), cached in
    the session and counted once, and the engine's target folder (emptied); deltalog's data
    source registered."""
    import shutil

    target = f"{request['target']}-{engine}"
    shutil.rmtree(target, ignore_errors=True)
    if engine == "deltalog":
        import deltalog.spark

        deltalog.spark.register(spark)
    rows = int(request["rows"])
    if rows not in _SPARK_FRAMES:
        from pyspark.sql import functions as F

        frame = spark.range(0, rows, numPartitions=max(2, rows // 2_000_000)).select(
            F.col("id"),
            (F.randn(7) * 25.0 + 100.0).alias("value"),
            F.format_string("name-%05d", (F.col("id") * 7919) % 10_000).alias("name"),
            F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1_000).alias("ts"),
            (F.col("id") % 1_000).cast("int").alias("qty"),
            ((F.col("id") % 3) == 0).alias("flag"),
        )
        frame.persist()
        frame.count()
        _SPARK_FRAMES[rows] = frame
    return _SPARK_FRAMES[rows], target


def _spark_write(frame: Any, target: str, engine: str) -> None:
    """Writes ``frame`` to a new table at ``target`` through deltalog's data source (engine
    ``deltalog``) or Delta on Spark's, in one commit."""
    source_format = "deltalog" if engine == "deltalog" else "delta"
    frame.write.format(source_format).mode("overwrite").save(target)


# --------------------------------------------------------------------------------------------
# Row-level changes in the Spark session: deltalog.spark's DeltaTable against delta-spark's

#: The merge sources of the session, by request key: the source Parquet file read by Spark
#: (a lazy DataFrame, not cached), or the generated source of ``spark_merge_large``.
_SPARK_SOURCES: dict[str, Any] = {}
#: Seconds each step of deltalog.spark's delete or merge took in the current task (the
#: wrapped functions of ``deltalog.spark._dml``, see :func:`_time_deltalog_steps`).
_DELTALOG_STEPS: dict[str, float] = {}


def _spark_row_change(spark: Any, task: dict[str, Any], driver_memory: str) -> dict[str, Any]:
    """One delete or merge through ``deltalog.spark.DeltaTable`` (engine ``deltalog``) or
    delta-spark's ``DeltaTable`` (engine ``spark``); then the counts, and the table put back as
    it was (the files the change added deleted, so every run changes the table as generated).

    ``phases`` holds the seconds each step took: for deltalog, its planning, the Spark jobs and
    the commit (``deltalog.spark._dml``'s functions, timed from outside); for Delta on Spark,
    the ``*TimeMs`` metrics of its commit. ``figures`` holds the driver JVM's peak RSS during
    the operation (``VmHWM``, reset just before it) and the files added and removed."""
    operation, engine, request = task["operation"], task["engine"], task["request"]
    root = Path(request["dv_path" if operation.endswith("_dv") else "path"])
    notes = {"driver_memory": driver_memory}
    try:
        table_class = _spark_delta_table_class(spark, engine)
        source = _spark_merge_source(spark, request, operation)
    except Exception as error:
        return {"error": "setup failed: " + _error_text(error)}
    before = _TableFiles(root)
    jvm = _SparkProcesses()
    _DELTALOG_STEPS.clear()
    try:
        jvm.reset_peaks()
        clock = Clock()
        table = table_class.forPath(spark, str(root))
        if source is None:
            table.delete(request["delete_predicate"])
        else:
            (
                table.alias("t")
                .merge(source.alias("s"), request["merge_on"])
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
        seconds = clock.elapsed()
        figures = jvm.peaks()
        check, metrics = _spark_change_counts(spark, root, source is None)
    except Exception as error:
        before.undo()
        return {"error": _error_text(error), "notes": notes}
    written = before.undo()
    if engine == "deltalog":
        phases = dict(_DELTALOG_STEPS)
        phases["other"] = max(seconds - sum(phases.values()), 0.0)
    else:
        phases = {
            key[: -len("TimeMs")]: int(value) / 1000
            for key, value in metrics.items()
            if key.endswith("TimeMs") and str(value).isdigit()
        }
    for key, name in (
        ("numAddedFiles", "files_added"),
        ("numTargetFilesAdded", "files_added"),
        ("numRemovedFiles", "files_removed"),
        ("numTargetFilesRemoved", "files_removed"),
        ("numDeletionVectorsAdded", "deletion_vectors_added"),
    ):
        if str(metrics.get(key, "")).isdigit():
            figures[name] = int(metrics[key])
    return {
        "seconds": seconds,
        "phases": phases,
        "notes": notes,
        "figures": figures,
        "check": check,
        "bytes_written": written,
    }


def _spark_warm_row_changes(spark: Any, engines: set[str]) -> None:
    """Untimed: each engine deletes from and merges into a small table of the benchmark's
    columns (with and without deletion vectors), so that neither engine's first timed run
    pays for the JIT compiling its code paths, Python workers starting or imports."""
    import shutil
    import tempfile

    if not engines:
        return
    scratch = Path(tempfile.mkdtemp(prefix="deltabench-warm-"))
    try:
        rows = _generated_rows(spark.range(0, 20_000, numPartitions=4), "id")
        source = _spark_merge_source(
            spark, {"rows": 20_000, "source_rows": 400}, "spark_merge_large"
        )
        for engine in sorted(engines):
            try:
                _spark_warm_engine(spark, engine, rows, source, scratch)
            except Exception as error:  # the timed runs will report it
                print(f"warm-up of {engine} failed: {_error_text(error)}", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        _DELTALOG_STEPS.clear()


def _spark_warm_engine(spark: Any, engine: str, rows: Any, source: Any, scratch: Path) -> None:
    table_class = _spark_delta_table_class(spark, engine)
    for vectors in ("false", "true"):
        path = str(scratch / f"{engine}-{vectors}")
        rows.write.format("delta").option("delta.enableDeletionVectors", vectors).save(path)
        table = table_class.forPath(spark, path)
        table.delete("qty = 7")
        (
            table.alias("t")
            .merge(source.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )


def _spark_delta_table_class(spark: Any, engine: str) -> Any:
    """deltalog.spark's ``DeltaTable`` (its data source registered) or delta-spark's."""
    if engine == "deltalog":
        import deltalog.spark

        deltalog.spark.register(spark)
        _time_deltalog_steps()
        return deltalog.spark.DeltaTable
    from delta.tables import DeltaTable

    return DeltaTable


def _spark_merge_source(spark: Any, request: TableRequest, operation: str) -> Any:
    """The merge's source DataFrame (``None`` for a delete): the source Parquet file, or for
    ``spark_merge_large`` ``source_rows`` rows generated by ``spark.range``, never cached or
    collected (half of them update the ids ``k * rows // half``, the other half insert the ids
    ``rows + k``: ``rows.large_merge_counts``)."""
    if operation.startswith("spark_delete"):
        return None
    if operation != "spark_merge_large":
        key = request["source_parquet"]
        if key not in _SPARK_SOURCES:
            _SPARK_SOURCES[key] = spark.read.parquet(key)
        return _SPARK_SOURCES[key]
    table_rows, source_rows = int(request["rows"]), int(request["source_rows"])
    half = source_rows // 2
    new_id = (
        f"CASE WHEN id < {half} THEN (id * {table_rows}) div {half} "
        f"ELSE id - {half} + {table_rows} END"
    )
    generated = spark.range(0, source_rows, numPartitions=max(2, source_rows // 1_000_000))
    return _generated_rows(generated, new_id)


def _generated_rows(numbers: Any, new_id: str) -> Any:
    """Rows of the benchmark's columns (long, double, string, timestamp, int, boolean) made
    from the ``id`` column of ``numbers`` (a ``spark.range``): their id ``new_id`` (SQL), the
    other values functions of the number."""
    from pyspark.sql import functions as F

    number = F.col("id")
    return numbers.select(
        F.expr(new_id).alias("id"),
        (F.abs(F.hash(number)) % 10_000 / 100.0 + 50.0).alias("value"),
        F.format_string("name-%05d", (number * 7919) % 10_000).alias("name"),
        F.timestamp_micros(F.lit(1_700_000_000_000_000) + number * 1_000).alias("ts"),
        (F.abs(F.hash(number, F.lit(1))) % 1_000).cast("int").alias("qty"),
        ((number % 3) == 0).alias("flag"),
    )


def _time_deltalog_steps() -> None:
    """Wraps the steps of deltalog.spark's delete and merge (module functions of
    ``deltalog.spark._dml``, which the operations look up at call time) so that each adds its
    seconds to :data:`_DELTALOG_STEPS`; once. Steps missing from the module are left out."""
    import functools

    from deltalog.spark import _dml

    if getattr(_dml, "_deltabench_timed", False):
        return

    def timed(step: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                _DELTALOG_STEPS[step] = _DELTALOG_STEPS.get(step, 0.0) + spent

        return wrapper

    steps = {
        "plan_change": "plan (driver)",
        "read_target": "target read planned (driver)",
        "run_tasks": "tasks: read, join, write (Spark job)",
        "commit_change": "commit (driver)",
    }
    for name, step in steps.items():
        if callable(getattr(_dml, name, None)):
            setattr(_dml, name, timed(step, getattr(_dml, name)))
    pruning = getattr(_dml, "MergePruning", None)
    if pruning is not None and callable(getattr(pruning, "summarize", None)):
        pruning.summarize = timed("source count and key range (Spark job)", pruning.summarize)
    _dml._deltabench_timed = True  # type: ignore[attr-defined]


def _spark_change_counts(
    spark: Any, root: Path, delete: bool
) -> tuple[dict[str, int], dict[str, Any]]:
    """The counts to compare (rows in the table afterwards, as Delta on Spark reads them; rows
    deleted, or updated and inserted, from the new commit's ``operationMetrics``) and those
    metrics."""
    log = root / "_delta_log"
    newest = max(log.glob("*.json"), key=lambda path: path.name)
    metrics: dict[str, Any] = {}
    for line in newest.read_text().splitlines():
        action = json.loads(line) if line.strip() else {}
        if "commitInfo" in action:
            metrics = action["commitInfo"].get("operationMetrics") or {}
    check = {"rows": int(spark.read.format("delta").load(str(root)).count())}
    if delete:
        check["deleted"] = int(metrics.get("numDeletedRows", -1))
    else:
        check["updated"] = int(metrics.get("numTargetRowsUpdated", -1))
        check["inserted"] = int(metrics.get("numTargetRowsInserted", -1))
    return check, metrics


class _TableFiles:
    """The files of a table directory before a change, to put it back afterwards."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = frozenset(root.rglob("*"))
        last_checkpoint = root / "_delta_log" / "_last_checkpoint"
        self.last_checkpoint = last_checkpoint.read_bytes() if last_checkpoint.is_file() else None

    def undo(self) -> int:
        """Deletes what was added since (data, deletion vector, log and checksum files, and
        the folders they made) and restores ``_last_checkpoint``; the bytes deleted."""
        import shutil

        created = sorted(set(self.root.rglob("*")) - self.files, key=lambda p: len(p.parts))
        written = sum(path.stat().st_size for path in created if path.is_file())
        for path in reversed(created):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        if self.last_checkpoint is not None:
            (self.root / "_delta_log" / "_last_checkpoint").write_bytes(self.last_checkpoint)
        return written


class _SparkProcesses:
    """The Spark driver's JVM: this process's descendant running ``java`` (local mode: the
    executors live in it too). Its peak RSS is reset by writing ``5`` to ``clear_refs``."""

    def __init__(self) -> None:
        self.jvm = _descendants_named(os.getpid(), "java")

    def reset_peaks(self) -> None:
        for pid in self.jvm:
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")

    def peaks(self) -> dict[str, int]:
        """``jvm_peak_rss_mib``: the JVM's peak RSS since :meth:`reset_peaks`."""
        peaks = []
        for pid in self.jvm:
            try:
                peaks.append(_status_kib(pid, "VmHWM"))
            except (OSError, KeyError, ValueError):
                continue
        return {"jvm_peak_rss_mib": max(peaks) // 1024} if peaks else {}


def _descendants_named(root: int, name: str) -> list[int]:
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses
        head, _, tail = stat.rpartition(")")
        names[int(entry.name)] = head.partition("(")[2]
        parents[int(entry.name)] = int(tail.split()[1])
    found = []
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor not in (0, root):
            ancestor = parents.get(ancestor)
        if ancestor == root and names.get(pid) == name:
            found.append(pid)
    return found


def _status_kib(pid: int, key: str) -> int:
    with Path(f"/proc/{pid}/status").open() as status:
        for line in status:
            field_name, _, value = line.partition(":")
            if field_name == key:
                return int(value.split()[0])
    raise KeyError(f"{key} is not in /proc/{pid}/status")


_SPARK_OPERATIONS: dict[str, Callable[[Any, Any, TableRequest, Clock], dict[str, int]]] = {
    "open": _spark_open,
    "list": _spark_list,
    "filtered": _spark_filtered,
    "time_travel": _spark_time_travel,
}


def main(argv: list[str]) -> None:
    """``child ENGINE OPERATION`` | ``probe ENGINE`` | ``spark`` (the table or tasks on stdin)."""
    match argv:
        case ["child", engine, operation]:
            _child_main(engine, operation)
        case ["probe", engine]:
            _probe_main(engine)
        case ["spark"]:
            _spark_main()
        case _:
            raise SystemExit(
                f"usage: engines.py child ENGINE OPERATION | probe ENGINE | spark; got {argv}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
