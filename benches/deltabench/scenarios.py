"""The named benchmark scenarios (issue 4), their sizes, and the targets the report checks.

Each scenario is a synthetic table (a ``LogSpec`` of ``deltabench.generate``) and the operations
measured on it, or (``kind="data"``) generated Arrow data that the write operations append to a
new table. Three size sets share the names: ``full`` (the issue's sizes), ``quick`` (about
1/10, for a check of the whole pipeline in minutes) and ``smoke`` (a few tiny tables, for the
test). Tables are written once into the data folder by ``generate.cached_table`` and reused.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Size = Literal["full", "quick", "smoke"]
SIZES: tuple[Size, ...] = ("full", "quick", "smoke")

#: The operations of a table without deletion vectors (``dvs`` would have nothing to do).
BASE_OPERATIONS = ("open", "list", "filtered", "time_travel")
DV_OPERATIONS = (*BASE_OPERATIONS, "dvs")
#: The operations of the large checkpointed tables: reads, a blind append on top (at a version
#: where no checkpoint is due, then at one where the engine's post-commit checkpoint runs),
#: a checkpoint.
APPEND_OPERATIONS = (
    *BASE_OPERATIONS,
    "blind_append",
    "blind_append_checkpoint",
    "checkpoint",
)
#: The same without time travel (the checkpoint without ``stats_parsed``).
JSON_STATS_OPERATIONS = (
    "open",
    "list",
    "filtered",
    "blind_append",
    "blind_append_checkpoint",
    "checkpoint",
)
#: Rows of the data a blind append adds.
BLIND_APPEND_ROWS = 1_000
#: Delta's default ``delta.checkpointInterval`` (Spark and deltalog checkpoint after
#: committing a version that is a multiple of it).
CHECKPOINT_INTERVAL = 10
#: delta-rs's default interval; ``deltalake`` 1.6.6 checkpoints after committing a version
#: ``v`` with ``(v + 1) % interval == 0`` (99, 199, ...), not as Spark does.
DELTALAKE_CHECKPOINT_INTERVAL = 100
#: The columns of ``commits_10k_wide`` after ``id``, as a streaming job's table might name
#: them (each name is written three times in every file's statistics).
WIDE_COLUMN_NAMES = (
    "user_id",
    "amount",
    "country_code",
    "event_date",
    "event_time",
    "session_id",
    "latitude",
    "device_type",
    "ingest_date",
    "ingest_time",
)
WIDE_COLUMN_TYPES = ("long", "double", "string", "date", "timestamp")
#: The row-level change operations: on the table without deletion vectors (copy-on-write) and
#: on its twin with ``delta.enableDeletionVectors=true``.
DELETE_OPERATIONS = ("delete", "delete_dv")
MERGE_OPERATIONS = ("merge", "merge_dv")
#: The same delete and merge in one local Spark session, through ``deltalog.spark.DeltaTable``
#: (engine ``deltalog``) and delta-spark's ``delta.tables.DeltaTable`` (engine ``spark``).
SPARK_DELETE_OPERATIONS = ("spark_delete", "spark_delete_dv")
SPARK_MERGE_OPERATIONS = ("spark_merge", "spark_merge_dv")
#: A merge of a source generated in Spark, far larger than the driver's heap, into the
#: copy-on-write table (``spark_merge_large``, meant for ``--spark-driver-memory 1g``).
SPARK_LARGE_MERGE_OPERATIONS = ("spark_merge_large",)
#: Rows of the ``spark_merge_large`` source at full size (the table is ``delete_1g``'s).
LARGE_MERGE_SOURCE_ROWS = 20_000_000
#: Writer processes appending to one table at once (``writers_8``).
WRITERS_OPERATIONS = ("concurrent_append",)
#: Rows each concurrent writer appends per commit.
WRITER_ROWS = 100
#: Every operation that changes a table's directory, and which table each changes.
TABLE_WRITES = (
    "blind_append",
    "blind_append_checkpoint",
    "checkpoint",
    *DELETE_OPERATIONS,
    *MERGE_OPERATIONS,
    *WRITERS_OPERATIONS,
    *SPARK_DELETE_OPERATIONS,
    *SPARK_MERGE_OPERATIONS,
    *SPARK_LARGE_MERGE_OPERATIONS,
)
#: The row-level change table at full size: about 1 GB of zstd Parquet (the columns of
#: ``append_1g``, about 20 bytes a row on disk) in 100 files.
ROWS_TABLE_ROWS = 52_000_000
ROWS_TABLE_FILES = 100


@dataclass(frozen=True)
class Scenario:
    """One synthetic table and what to measure on it."""

    name: str
    title: str  # what the table is, at this size
    spec: dict[str, Any]  # the LogSpec fields; for ``data`` {"rows": N}; for ``rows``
    #: {"rows": N, "files": F} (and "source_rows": S for ``spark_merge_large``); for
    #: ``writers`` {"writers": W, "commits": C, "rows": R}
    operations: tuple[str, ...] = BASE_OPERATIONS
    kind: Literal["log", "data", "spark_data", "rows", "writers"] = "log"
    #: With ``orphans`` > 0, every file the log names (live, or removed: a tombstone) exists
    #: (empty) in the table directory, next to this many files no version references.
    orphans: int = 0


@dataclass(frozen=True)
class Target:
    """A goal the report shows as met or not, on the named scenario.

    ``kind``:
    - ``vs_floor``: deltalog time / floor time of ``operation`` <= ``threshold``
    - ``vs_cat``: deltalog time / the cat floor's time (engine ``cat``: the log files' bytes
      read, nothing parsed) of ``operation`` <= ``threshold``
    - ``speedup``: deltalake time / deltalog time of ``operation`` >= ``threshold``
    - ``memory_share``: deltalog / deltalake operation memory (peak RSS minus RSS after
      imports) of ``operation`` <= ``threshold``
    - ``filtered_share``: deltalog ``filtered`` time / deltalog ``list`` time <= ``threshold``
    - ``filtered_memory``: deltalog ``filtered`` operation memory / deltalog ``list``
      operation memory (peak RSS minus RSS after imports) <= ``threshold``
    - ``peak_memory``: deltalog's peak RSS (the whole process) of ``operation``, in GiB,
      < ``threshold``
    - ``max_seconds``: deltalog's median time of ``operation``, in seconds, <= ``threshold``
    """

    scenario: str
    kind: Literal[
        "vs_floor",
        "vs_cat",
        "speedup",
        "memory_share",
        "filtered_share",
        "filtered_memory",
        "peak_memory",
        "max_seconds",
    ]
    operation: str
    threshold: float
    label: str


def _filtered_targets(scenario: str) -> tuple[Target, ...]:
    """The targets of a scenario's filtered listing (every log scenario measuring ``filtered``
    gets them: :data:`TARGETS`)."""
    return (
        Target(
            scenario,
            "filtered_share",
            "filtered",
            1 / 3,
            "1% filtered listing <= 1/3 of full listing",
        ),
        Target(
            scenario,
            "filtered_memory",
            "filtered",
            1.0,
            "filtered never more memory than list",
        ),
    )


_TARGETS: tuple[Target, ...] = (
    Target("checkpoint_1m_stats", "vs_floor", "list", 1.25, "open+list within 1.25x of floor"),
    Target("checkpoint_1m_stats", "speedup", "list", 4.0, "open+list >= 4x faster than deltalake"),
    Target(
        "checkpoint_1m_stats", "memory_share", "list", 0.40, "open+list memory <= 40% of deltalake"
    ),
    Target("json_1m_adds", "speedup", "list", 5.0, "open+list >= 5x faster than deltalake"),
    Target("commits_10k_small", "speedup", "list", 5.0, "open+list >= 5x faster than deltalake"),
    Target("commits_10k_wide", "speedup", "list", 5.0, "open+list >= 5x faster than deltalake"),
    Target("commits_10k_wide", "vs_cat", "list", 3.0, "open+list within 3x of the cat floor"),
    Target("dv_10k_files", "speedup", "dvs", 50.0, "all DVs to row masks >= 50x faster"),
    Target(
        "scale_5m_multipart", "peak_memory", "list", 3.0, "open + file list peak memory < 3 GiB"
    ),
    Target("append_1g", "vs_floor", "append", 1.2, "append within 1.2x of pyarrow's write"),
    Target("append_1g", "speedup", "append", 1.0, "append faster than deltalake"),
    *(
        target
        for scenario in ("checkpoint_1m_stats", "checkpoint_1m_json")
        for target in (
            Target(scenario, "speedup", "checkpoint", 5.0, "checkpoint >= 5x faster"),
            Target(
                scenario,
                "memory_share",
                "checkpoint",
                1 / 3,
                "checkpoint memory <= 1/3 of deltalake",
            ),
            Target(
                scenario,
                "max_seconds",
                "blind_append",
                0.1,
                "blind append of one small file under 100 ms",
            ),
            Target(
                scenario,
                "max_seconds",
                "blind_append_checkpoint",
                2.0,
                "blind append + post-commit checkpoint <= 2 s",
            ),
        )
    ),
    Target("vacuum_1m_files", "speedup", "vacuum", 1.0, "vacuum dry run faster than deltalake"),
)


def scenarios(size: Size, large_merge: tuple[int, int] | None = None) -> list[Scenario]:
    """The scenarios of a size set, in report order; ``large_merge`` (source rows, table
    rows) sizes ``spark_merge_large`` other than the size set does."""
    if size == "smoke":
        return _smoke(large_merge)
    scale = 1 if size == "full" else 10
    return [
        Scenario(
            "files_10k_100_commits",
            f"{_count(10_000 // scale)} files over 100 commits, 100 partitions, no checkpoint",
            {"commits": 100, "adds_per_commit": 100 // scale, "partitions": 100},
        ),
        Scenario(
            "checkpoint_100k_100_commits",
            f"{_count(100_000 // scale)} files in a checkpoint + 100 commits "
            "(10 adds, 2 removes each), 100 partitions",
            {
                "checkpoint_files": 100_000 // scale,
                "commits": 100,
                "adds_per_commit": 10,
                "removes_per_commit": 2,
                "partitions": 100,
            },
        ),
        Scenario(
            "checkpoint_1m_stats",
            f"{_count(1_000_000 // scale)} files in a checkpoint with stats (JSON and "
            "stats_parsed, as Spark writes) + 10 commits (100 adds, 10 removes each)",
            {
                "checkpoint_files": 1_000_000 // scale,
                "checkpoint": "classic_parsed",
                "commits": 10,
                "adds_per_commit": 100,
                "removes_per_commit": 10,
                "stats_columns": 5,
            },
            APPEND_OPERATIONS,
        ),
        Scenario(
            "checkpoint_1m_json",
            f"{_count(1_000_000 // scale)} files in a checkpoint with stats as JSON only (no "
            "stats_parsed, writeStatsAsStruct not set) + 10 commits (100 adds, 10 removes each)",
            {
                "checkpoint_files": 1_000_000 // scale,
                "checkpoint": "classic",
                "commits": 10,
                "adds_per_commit": 100,
                "removes_per_commit": 10,
                "stats_columns": 5,
            },
            JSON_STATS_OPERATIONS,
        ),
        Scenario(
            "json_1m_adds",
            f"{_count(1_000_000 // scale)} adds in 100 JSON commits, no checkpoint",
            {"commits": 100, "adds_per_commit": 10_000 // scale},
        ),
        Scenario(
            "commits_10k_small",
            f"{_count(10_000 // scale)} commits of 10 adds each (listing-bound)",
            {"commits": 10_000 // scale, "adds_per_commit": 10},
        ),
        _wide_scenario(10_000 // scale),
        Scenario(
            "dv_10k_files",
            f"{_count(10_000 // scale)} files each with a deletion vector (in DV files): "
            "checkpoint + 10 commits",
            {
                "checkpoint_files": 9_000 // scale,
                "commits": 10,
                "adds_per_commit": 100 // scale,
                "deletion_vectors": "file",
                "dv_cardinality": 100,
            },
            DV_OPERATIONS,
        ),
        Scenario(
            "scale_5m_multipart",
            f"{_count(5_000_000 // scale)} files in a 10-part checkpoint + 10 commits",
            {
                "checkpoint_files": 5_000_000 // scale,
                "checkpoint": "multipart",
                "checkpoint_parts": 10,
                "commits": 10,
                "adds_per_commit": 100,
                "removes_per_commit": 10,
            },
        ),
        Scenario(
            "vacuum_1m_files",
            f"{_count(1_000_000 // scale)} live files on disk (a checkpoint + 10 commits of "
            f"100 adds and 10 removes, the removed files on disk too) and "
            f"{_count(10_000 // scale)} files no version references",
            {
                "checkpoint_files": 1_000_000 // scale,
                "commits": 10,
                "adds_per_commit": 100,
                "removes_per_commit": 10,
                "stats_columns": 0,
            },
            ("vacuum",),
            orphans=10_000 // scale,
        ),
        Scenario(
            "append_1g",
            f"append {_count(25_000_000 // scale)} generated rows (about {1000 // scale:,} MB of "
            "Arrow: long, double, string, timestamp, int, boolean) to a new table",
            {"rows": 25_000_000 // scale},
            ("append",),
            "data",
        ),
        *_rows_scenarios(ROWS_TABLE_ROWS // scale, ROWS_TABLE_FILES, f"{1000 // scale:,} MB"),
        _writers_scenario(8, 50 if size == "full" else 10),
        _spark_write_scenario(25_000_000 // scale, f"about {1000 // scale:,} MB"),
        *_spark_rows_scenarios(
            ROWS_TABLE_ROWS // scale,
            ROWS_TABLE_FILES,
            f"{1000 // scale:,} MB",
            large_merge or (LARGE_MERGE_SOURCE_ROWS // scale, ROWS_TABLE_ROWS // scale),
        ),
    ]


def _wide_scenario(commits: int, smoke: str = "") -> Scenario:
    """A streaming writer's log: ``commits`` JSON commits, each a ``STREAMING UPDATE``
    ``commitInfo`` with its metrics, the query's ``txn``, one remove and ten adds whose
    statistics cover 11 columns (long, double, string, date, timestamp)."""
    return Scenario(
        "commits_10k_wide",
        f"{smoke}{_count(commits)} streaming commits (commitInfo with metrics, txn, 1 remove, "
        "10 adds with stats of 11 columns: long, double, string, date, timestamp), "
        "no checkpoint",
        {
            "commits": commits,
            "adds_per_commit": 10,
            "removes_per_commit": 1,
            "stats_columns": 11,
            "column_types": WIDE_COLUMN_TYPES,
            "column_names": WIDE_COLUMN_NAMES,
            "streaming": True,
        },
    )


def _rows_scenarios(rows: int, files: int, size: str) -> list[Scenario]:
    """Deleting 0.1% and merging 1% of the rows of a table of real Parquet files (one table,
    generated once by ``rows.cached_rows_table``, for both)."""
    table = f"{_count(rows)} generated rows in {files} files (about {size} of zstd Parquet)"
    spec = {"rows": rows, "files": files}
    return [
        Scenario(
            "delete_1g",
            f"delete the ~0.1% of rows where `qty = 7` (in every file) from {table}",
            spec,
            DELETE_OPERATIONS,
            "rows",
        ),
        Scenario(
            "merge_1g",
            f"merge a source of {_count(rows // 100)} rows (half updates of ids spread over "
            f"every file, half inserts) into {table} on `t.id = s.id`",
            spec,
            MERGE_OPERATIONS,
            "rows",
        ),
    ]


def _spark_rows_scenarios(
    rows: int, files: int, size: str, large_merge: tuple[int, int]
) -> list[Scenario]:
    """``delete_1g`` and ``merge_1g`` in one Spark session (the same tables, source and
    operations), and the large merge of a source generated in Spark (measured with
    ``--spark`` only)."""
    table = f"{_count(rows)} generated rows in {files} files (about {size} of zstd Parquet)"
    spec = {"rows": rows, "files": files}
    source_rows, large_rows = large_merge
    if large_rows == rows:
        large_table = f"the same {_count(rows)}-row table"
    else:
        large_table = f"{_count(large_rows)} generated rows in {files} files"
    return [
        Scenario(
            "spark_delete_1g",
            f"Spark: `DeltaTable.forPath(spark, p).delete('qty = 7')` (~0.1%, in every file) on "
            f"{table}",
            spec,
            SPARK_DELETE_OPERATIONS,
            "rows",
        ),
        Scenario(
            "spark_merge_1g",
            f"Spark: merge the Parquet source of {_count(rows // 100)} rows (half updates "
            f"spread over every file, half inserts) into {table} on `t.id = s.id`, "
            "`whenMatchedUpdateAll().whenNotMatchedInsertAll()`",
            spec,
            SPARK_MERGE_OPERATIONS,
            "rows",
        ),
        Scenario(
            "spark_merge_large",
            f"Spark: merge a source of {_count(source_rows)} rows generated in Spark (never "
            f"collected or cached; half updates spread over every file, half inserts) into "
            f"{large_table} on `t.id = s.id` (copy-on-write), driver heap as "
            "`--spark-driver-memory` (1g for the issue's run)",
            {"rows": large_rows, "files": files, "source_rows": source_rows},
            SPARK_LARGE_MERGE_OPERATIONS,
            "rows",
        ),
    ]


def _writers_scenario(writers: int, commits: int, smoke: str = "") -> Scenario:
    """``writers`` processes each doing ``commits`` blind appends of :data:`WRITER_ROWS` rows
    to one table on the local file system, all started at once (``writers.WritersTable``)."""
    return Scenario(
        "writers_8",
        f"{smoke}{writers} writer processes each appending {commits} commits of "
        f"{WRITER_ROWS} rows to one table on the local file system, all at once",
        {"writers": writers, "commits": commits, "rows": WRITER_ROWS},
        WRITERS_OPERATIONS,
        "writers",
    )


def _spark_write_scenario(rows: int, size: str) -> Scenario:
    """A generated DataFrame of ``rows`` rows written by Spark to a new table, through
    deltalog's data source and Delta on Spark's (measured with ``--spark`` only)."""
    return Scenario(
        "spark_write_1g",
        f"Spark writes a cached DataFrame of {_count(rows)} generated rows ({size}: long, "
        "double, string, timestamp, int, boolean) to a new table",
        {"rows": rows},
        ("spark_write",),
        "spark_data",
    )


def log_spec(scenario: Scenario) -> Any:
    """The scenario's ``generate.LogSpec``."""
    from deltabench.generate import LogSpec

    return LogSpec(**scenario.spec)


def prepare(scenario: Scenario, data_dir: Path) -> Any:
    """Write the scenario's table into ``data_dir`` (or reuse it); its ``generate.TableInfo``,
    or for a ``data`` scenario its ``generate.ArrowData``."""
    from deltabench.generate import cached_arrow_data, cached_table

    if scenario.kind == "data":
        return cached_arrow_data(data_dir, scenario.name, int(scenario.spec["rows"]))
    if scenario.kind == "spark_data":
        return SparkData(Path(data_dir) / scenario.name, int(scenario.spec["rows"]))
    if scenario.kind == "writers":
        from deltabench.writers import fresh_writers_table

        spec = scenario.spec
        return fresh_writers_table(
            data_dir, int(spec["writers"]), int(spec["commits"]), int(spec["rows"])
        )
    if scenario.kind == "rows":
        from deltabench.rows import cached_rows_table

        return cached_rows_table(
            data_dir, "rows", int(scenario.spec["rows"]), int(scenario.spec["files"])
        )
    info = cached_table(data_dir, scenario.name, log_spec(scenario))
    if scenario.orphans:
        _materialize_files(info, scenario)
    return info


#: Written last into a table whose data files were created (hidden: vacuum ignores it).
DATA_FILES_MARKER = ".deltabench-data-files.json"


def _materialize_files(info: Any, scenario: Scenario) -> None:
    """Creates an empty file for every file the log names (live or removed) and
    ``scenario.orphans`` files no version references (``orphan-<n>.parquet``), dated a day
    back; once (a marker file)."""
    import json
    import os
    import time

    from deltabench.generate import expected_live_files, removed_file_paths

    root = Path(info.path)
    marker = root / DATA_FILES_MARKER
    if marker.is_file():
        return
    day_ago = time.time() - 86_400
    spec = log_spec(scenario)
    live = expected_live_files(spec).column("path").to_pylist()
    removed = removed_file_paths(spec)
    orphans = [f"orphan-{n:07d}.parquet" for n in range(scenario.orphans)]
    for relative in [*live, *removed, *orphans]:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path, (day_ago, day_ago))
    counts = {"live": len(live), "removed": len(removed), "orphans": len(orphans)}
    marker.write_text(json.dumps(counts))


@dataclass(frozen=True)
class SparkData:
    """A DataFrame the Spark child generates: ``rows`` rows, written to tables under
    ``path``."""

    path: Path
    rows: int


def table_request(info: Any, scenario: Scenario) -> dict[str, Any]:
    """What a measurement child needs to know about the table (``engines.TableRequest``)."""
    if isinstance(info, SparkData):
        return {"target": str(Path(info.path).resolve()), "rows": info.rows}
    if scenario.kind == "writers":
        return {
            "path": str(Path(info.path).resolve()),
            "writers": info.writers,
            "commits": info.commits,
            "rows": info.rows,
        }
    if scenario.kind == "rows":
        from deltabench.rows import DELETE_PREDICATE, MERGE_ON, source_parquet

        request = {
            "path": str(info.cow_path),
            "dv_path": str(info.dv_path),
            "source": str(info.source_path),
            "rows": int(info.rows),
            "delete_predicate": DELETE_PREDICATE,
            "merge_on": MERGE_ON,
        }
        if set(scenario.operations) & {*SPARK_DELETE_OPERATIONS, *SPARK_MERGE_OPERATIONS}:
            request["source_parquet"] = str(source_parquet(info))
        if "source_rows" in scenario.spec:
            request["source_rows"] = int(scenario.spec["source_rows"])
        return request
    if scenario.kind == "data":
        source = Path(info.path).resolve()
        return {
            "source": str(source),
            "target": str(source.with_suffix(".target")),
            "rows": int(info.rows),
        }
    from deltabench.generate import table_columns

    return {
        "columns": table_columns(log_spec(scenario)),
        # The generator's partition column (BENCH_API.md), for the floor's JSON schema.
        "partition_columns": ["part"] if scenario.spec.get("partitions") else [],
        "path": str(Path(info.path).resolve()),
        "version": int(info.version),
        "older_version": int(info.older_version),
        "one_percent_filter": str(info.one_percent_filter),
        "checkpoint_paths": [str(Path(path).resolve()) for path in info.checkpoint_paths],
        "commit_paths": [str(Path(path).resolve()) for path in info.commit_paths],
    }


def expected_checks(info: Any, scenario: Scenario) -> dict[str, dict[str, int]]:
    """The counts each operation should report, as the generator knows them."""
    if isinstance(info, SparkData):
        return {"spark_write": {"rows": info.rows}}
    if scenario.kind == "writers":
        commits = info.total_commits
        return {"concurrent_append": {"version": commits, "rows": commits * info.rows}}
    if scenario.kind == "rows":
        from deltabench.rows import large_merge_counts

        deleted = {"rows": info.rows - info.deleted_rows, "deleted": info.deleted_rows}
        merged = {
            "rows": info.rows + info.inserted_rows,
            "updated": info.updated_rows,
            "inserted": info.inserted_rows,
        }
        expected = {
            **dict.fromkeys((*DELETE_OPERATIONS, *SPARK_DELETE_OPERATIONS), deleted),
            **dict.fromkeys((*MERGE_OPERATIONS, *SPARK_MERGE_OPERATIONS), merged),
        }
        if "source_rows" in scenario.spec:
            large = large_merge_counts(info.rows, int(scenario.spec["source_rows"]))
            expected["spark_merge_large"] = large
        return expected
    if not hasattr(info, "version"):
        return {"append": {"rows": int(info.rows)}}
    expected = {
        "vacuum": {"files": scenario.orphans + _removed_files(scenario)},
        "blind_append": {"version": int(info.version) + 1},
        "blind_append_checkpoint": {"checkpointed": 1},
        "checkpoint": {"version": int(info.version)},
        "open": {"version": int(info.version)},
        "list": {"files": int(info.num_files)},
        "filtered": {"files": int(info.one_percent_files)},
        "dvs": {"files_with_dv": int(info.num_deletion_vectors)},
    }
    older_num_files = getattr(info, "older_num_files", None)
    if older_num_files:
        expected["time_travel"] = {"files": int(older_num_files)}
    return expected


def _removed_files(scenario: Scenario) -> int:
    """How many files of the scenario's table were removed (all of them tombstones a vacuum
    with no retention deletes, once they exist)."""
    if not scenario.orphans:
        return 0
    from deltabench.generate import removed_file_paths

    return len(removed_file_paths(log_spec(scenario)))


def table_summary(info: Any) -> dict[str, Any]:
    """The table facts the report shows (JSON-able); none for generated data; rows, files
    and Parquet bytes for a row-level change table."""
    if hasattr(info, "data_bytes"):  # a row-level change table
        return {
            "path": str(info.path),
            "rows": int(info.rows),
            "num_files": int(info.files),
            "data_bytes": int(info.data_bytes),
        }
    if not hasattr(info, "version"):
        return {}
    return {
        "path": str(info.path),
        "version": int(info.version),
        "num_files": int(info.num_files),
        "num_deletion_vectors": int(info.num_deletion_vectors),
        "older_version": int(info.older_version),
        "one_percent_filter": str(info.one_percent_filter),
        "one_percent_files": int(info.one_percent_files),
        "checkpoint_files": len(info.checkpoint_paths),
        "commit_files": len(info.commit_paths),
        "log_bytes": _tree_bytes(Path(info.path) / "_delta_log"),
    }


def warm_page_cache(info: Any) -> int:
    """Read every file of the table (or the data file) once, so that no engine pays for a cold
    disk; the bytes."""
    total = 0
    root = Path(info.path)
    for path in [root] if root.is_file() else root.rglob("*"):
        if path.is_file():
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 24):
                    total += len(chunk)
    return total


@dataclass(frozen=True)
class WriteUndo:
    """What a write operation may change, recorded before it, to restore afterwards."""

    files: frozenset[Path]
    last_checkpoint: bytes | None
    #: Hard links to every file of ``_delta_log`` as it was, outside the table: a write's
    #: post-commit metadata cleanup may delete log files (the generated logs are dated 2023,
    #: long expired), and they are linked back afterwards.
    log_backup: Path | None = None
    #: Files :func:`before_write` added to prepare the table (deleted, not counted as written).
    prepared: tuple[Path, ...] = ()


def checkpoint_landing_version(version: int, engine: str) -> int:
    """The first version after ``version`` whose commit makes ``engine`` write a checkpoint
    by its defaults: Delta's rule (a multiple of :data:`CHECKPOINT_INTERVAL`) for deltalog,
    delta-rs's for ``deltalake`` (``v + 1`` a multiple of
    :data:`DELTALAKE_CHECKPOINT_INTERVAL`)."""
    if engine == "deltalake":
        interval = DELTALAKE_CHECKPOINT_INTERVAL
        return (version + 1) // interval * interval + interval - 1
    return (version // CHECKPOINT_INTERVAL + 1) * CHECKPOINT_INTERVAL


def before_write(
    request: dict[str, Any], operation: str, engine: str = "deltalog"
) -> WriteUndo | None:
    """Clears the target of an ``append``; records the table a :data:`TABLE_WRITES` operation
    writes to (and hard-links its log aside); ``None`` for other operations. For
    ``blind_append_checkpoint``, then commits small blind appends (untimed, one file each) up
    to the version before :func:`checkpoint_landing_version`, so that the measured append is
    the one that makes ``engine`` checkpoint."""
    if operation == "append":
        shutil.rmtree(request["target"], ignore_errors=True)
        return WriteUndo(frozenset(), None)
    if operation not in TABLE_WRITES:
        return None
    root = written_table(request, operation)
    last_checkpoint = root / "_delta_log" / "_last_checkpoint"
    saved = last_checkpoint.read_bytes() if last_checkpoint.is_file() else None
    backup = _link_log_aside(root)
    prepared: list[Path] = []
    if operation == "blind_append_checkpoint":
        from deltabench.generate import write_blind_appends

        version = int(request["version"])
        landing = checkpoint_landing_version(version, engine)
        prepared = write_blind_appends(
            root,
            version + 1,
            landing - 1,
            request["columns"],
            request.get("partition_columns") or (),
        )
    return WriteUndo(frozenset(root.rglob("*")), saved, backup, tuple(prepared))


def _link_log_aside(root: Path) -> Path:
    """Hard links to every file under ``root/_delta_log`` in a folder next to the table."""
    backup = root.parent / f".{root.name}.log-backup"
    shutil.rmtree(backup, ignore_errors=True)
    log = root / "_delta_log"
    for path in log.rglob("*") if log.is_dir() else []:
        if path.is_file():
            target = backup / path.relative_to(log)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)
    return backup


def written_table(request: dict[str, Any], operation: str) -> Path:
    """The table directory a :data:`TABLE_WRITES` operation changes (the deletion vector twin
    for the ``_dv`` operations)."""
    return Path(request["dv_path"] if operation.endswith("_dv") else request["path"])


def undo_write(request: dict[str, Any], operation: str, undo: WriteUndo | None) -> int | None:
    """Puts back what :func:`before_write` recorded, so every run writes to the same table: the
    appended table is deleted; the files a table write (and its post-commit work, and the
    blind appends :func:`before_write` made) added are deleted, the log files it deleted are
    linked back and ``_last_checkpoint`` is restored. The bytes of the files the operation
    added (measured on disk, before they are deleted; not the blind appends made before it);
    ``None`` for other operations."""
    if undo is None:
        return None
    if operation == "append":
        written = _tree_bytes(Path(request["target"])) if Path(request["target"]).is_dir() else 0
        shutil.rmtree(request["target"], ignore_errors=True)
        return written
    root = written_table(request, operation)
    created = sorted(set(root.rglob("*")) - undo.files, key=lambda path: len(path.parts))
    written = sum(path.stat().st_size for path in created if path.is_file())
    for path in [*reversed(created), *undo.prepared]:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    if undo.log_backup is not None:
        log = root / "_delta_log"
        for kept in undo.log_backup.rglob("*"):
            original = log / kept.relative_to(undo.log_backup)
            if kept.is_file() and not original.exists():
                original.parent.mkdir(parents=True, exist_ok=True)
                os.link(kept, original)
        shutil.rmtree(undo.log_backup, ignore_errors=True)
    if undo.last_checkpoint is not None:
        (root / "_delta_log" / "_last_checkpoint").write_bytes(undo.last_checkpoint)
    return written


def _smoke(large_merge: tuple[int, int] | None = None) -> list[Scenario]:
    """Tiny tables covering a classic checkpoint with stats (JSON and parsed, and JSON only),
    JSON only with partitions, streaming commits with wide statistics, and a multi-part
    checkpoint whose files carry deletion vectors; and the write scenarios, tiny."""
    return [
        Scenario(
            "checkpoint_1m_stats",
            "smoke: 300 files in a checkpoint with stats (JSON and parsed) + 3 commits",
            {
                "checkpoint_files": 300,
                "checkpoint": "classic_parsed",
                "commits": 3,
                "adds_per_commit": 10,
                "removes_per_commit": 2,
            },
            APPEND_OPERATIONS,
        ),
        Scenario(
            "checkpoint_1m_json",
            "smoke: 300 files in a checkpoint with stats as JSON only + 3 commits",
            {
                "checkpoint_files": 300,
                "checkpoint": "classic",
                "commits": 3,
                "adds_per_commit": 10,
                "removes_per_commit": 2,
            },
            JSON_STATS_OPERATIONS,
        ),
        Scenario(
            "json_1m_adds",
            "smoke: 100 adds in 5 JSON commits, 4 partitions",
            {"commits": 5, "adds_per_commit": 20, "partitions": 4},
        ),
        _wide_scenario(6, "smoke: "),
        Scenario(
            "dv_10k_files",
            "smoke: 50 files with deletion vectors (DV files), 3-part checkpoint + 2 commits",
            {
                "checkpoint_files": 40,
                "checkpoint": "multipart",
                "checkpoint_parts": 3,
                "commits": 2,
                "adds_per_commit": 5,
                "deletion_vectors": "file",
                "dv_cardinality": 10,
                "rows_per_file": 100,
            },
            DV_OPERATIONS,
        ),
        Scenario(
            "vacuum_1m_files",
            "smoke: 48 live and 2 removed files on disk, 7 files no version references",
            {"checkpoint_files": 40, "commits": 2, "adds_per_commit": 5, "removes_per_commit": 1},
            ("vacuum",),
            orphans=7,
        ),
        Scenario(
            "append_1g", "smoke: append 20k generated rows", {"rows": 20_000}, ("append",), "data"
        ),
        *_rows_scenarios(20_000, 10, "0.4 MB"),
        _writers_scenario(2, 3, "smoke: "),
        _spark_write_scenario(20_000, "smoke"),
        *_spark_rows_scenarios(20_000, 10, "0.4 MB", large_merge or (8_000, 20_000)),
    ]


def _count(number: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if number >= size and number % (size // 10) == 0:
            text = f"{number / size:g}"
            return f"{text}{unit}"
    return str(number)


def _tree_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


#: The targets the report checks: every scenario's own, then the filtered listing's two of
#: every log scenario that measures ``filtered``.
TARGETS: tuple[Target, ...] = (
    *_TARGETS,
    *(
        target
        for scenario in scenarios("full")
        if scenario.kind == "log" and "filtered" in scenario.operations
        for target in _filtered_targets(scenario.name)
    ),
)
