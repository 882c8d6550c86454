"""Shared fixtures: the sample table, hand-made tables, the golden tables."""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_TABLE = REPO_ROOT / "tests" / "data" / "sample-table"
GOLDEN_DIR = REPO_ROOT / "tests" / "data" / "golden"

#: The schema of the hand-made tables: an int partition column and two data columns.
DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}},
        {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
    ],
}


#: The test modules that start the S3-compatible server (`tests/s3.py`) on loopback.
S3_SERVER_MODULES = ("tests/test_concurrency.py", "tests/test_hostile_input.py")

#: What `-m "not slow"` leaves out, measured (`pytest --durations=0`, 2 processes, 2026-11-28):
#: the modules that together take most of the suite's time outside Spark and S3 (the feature
#: combinations, 250 s; the benchmark harness's runs, 110 s; the other engines' readers, 90 s;
#: writers killed at random moments, 24 s), and the single tests over a second.
SLOW_MODULES = (
    "tests/test_combinations.py",
    "tests/test_bench.py",
    "tests/test_cross_engine.py",
    "tests/test_faults.py",
)
SLOW_TESTS = (
    "tests/test_scan.py::test_scan_returns_the_expected_rows[parquet-decimal-dictionaries-v2]",
    "tests/test_scan.py::test_scan_returns_the_expected_rows[parquet-decimal-dictionaries]",
    "tests/test_scan.py::test_scan_returns_the_expected_rows[parquet-decimal-type]",
    "tests/test_write.py::test_two_processes_racing_appends_both_land",
    "tests/test_maintenance.py::test_vacuum_racing_appends_loses_none",
    "tests/test_maintenance.py::test_appends_racing_optimize_are_never_lost",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs Delta on Spark (tests/spark)")
    config.addinivalue_line("markers", "s3: starts the S3-compatible server on loopback")
    config.addinivalue_line("markers", "slow: takes seconds or minutes (SLOW_MODULES, SLOW_TESTS)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the Spark suite `spark`, the S3 modules `s3` and the slow tests `slow`, so that
    `pytest -m "not spark and not s3 and not slow"` runs the fast rest."""
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module.startswith("tests/spark/"):
            item.add_marker(pytest.mark.spark)
        if module in S3_SERVER_MODULES:
            item.add_marker(pytest.mark.s3)
        if module in SLOW_MODULES or item.nodeid in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


#: The Spark suite's second half: deltalog.spark's own API, the random differential and the
#: feature combinations, kept in one process apart from the rest (the readers, the other
#: `test_interop_*`). Each half starts one Spark session, so that two processes run the suite
#: side by side (the whole run took 2,164 s instead of 2,865 s on 2 cores, 2026-12-02: the
#: cores are then both busy). Each half has more tests than the S3 modules, so that xdist,
#: handing the largest groups out first (`--loadscope-reorder`, its default), starts both
#: halves at once.
SPARK_SECOND_HALF = (
    "tests/spark/test_spark_",
    "tests/spark/test_differential.py",
    "tests/spark/test_interop_combinations.py",
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Spreads the tests over pytest-xdist's processes (`-n auto`) one by one, except what
    must share one process: each half of the Spark suite (`tests/spark`: one Spark session per
    half, `SPARK_SECOND_HALF` and the rest) and the modules that start the S3-compatible
    server."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedProcessScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/spark/test_spark_versions.py"):
                return nodeid  # its own Spark processes, not the shared session
            if nodeid.startswith(SPARK_SECOND_HALF):
                return "spark-2"
            if nodeid.startswith("tests/spark/"):
                return "spark-1"
            if nodeid.split("::", 1)[0] in S3_SERVER_MODULES:
                return "s3"
            return nodeid

    return SharedProcessScheduling(config, log)


@pytest.fixture(scope="session")
def sample_table() -> Path:
    """The small real table shipped in tests/data: 16 commits (0 to 15), a checkpoint at 10,
    partitioned by `part`, deletion vectors, removes."""
    return SAMPLE_TABLE


class TableWriter:
    """Writes a Delta log by hand, one JSON commit file per call of :meth:`commit`.

    Commit file modification times are set to ``timestamps`` (so time travel is testable);
    the helpers build the usual actions.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)

    def commit(
        self,
        version: int,
        actions: Sequence[Mapping[str, Any]],
        *,
        timestamp: datetime | None = None,
    ) -> Path:
        path = self.commit_path(version)
        path.write_text("".join(json.dumps(action) + "\n" for action in actions))
        if timestamp is not None:
            seconds = timestamp.timestamp()
            os.utime(path, (seconds, seconds))
        return path

    def commit_path(self, version: int) -> Path:
        return self.log / f"{version:020d}.json"

    def create(
        self,
        *,
        partition_columns: Sequence[str] = ("part",),
        protocol: Mapping[str, Any] | None = None,
        configuration: Mapping[str, str] | None = None,
        timestamp: datetime | None = None,
        extra: Sequence[Mapping[str, Any]] = (),
    ) -> Path:
        """Version 0: protocol, metadata and ``extra`` actions."""
        return self.commit(
            0,
            [
                commit_info("CREATE TABLE"),
                {"protocol": dict(protocol or {"minReaderVersion": 1, "minWriterVersion": 2})},
                metadata_action(partition_columns=partition_columns, configuration=configuration),
                *extra,
            ],
            timestamp=timestamp,
        )


def commit_info(operation: str, **fields: Any) -> dict[str, Any]:
    return {
        "commitInfo": {
            "timestamp": 1_700_000_000_000,
            "operation": operation,
            "operationParameters": {},
            **fields,
        }
    }


def metadata_action(
    *,
    partition_columns: Sequence[str] = ("part",),
    configuration: Mapping[str, str] | None = None,
    schema: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    action: dict[str, Any] = {
        "id": "5fba94ed-9794-4965-ba6e-6ee3c0d22af9",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema or DEFAULT_SCHEMA),
        "partitionColumns": list(partition_columns),
        "configuration": dict(configuration or {}),
        "createdTime": 1_700_000_000_000,
    }
    if name is not None:
        action["name"] = name
    return {"metaData": action}


def add_action(
    path: str,
    *,
    size: int = 100,
    partition_values: Mapping[str, str | None] | None = None,
    num_records: int | None = 10,
) -> dict[str, Any]:
    action: dict[str, Any] = {
        "path": path,
        "partitionValues": dict(
            partition_values if partition_values is not None else {"part": "1"}
        ),
        "size": size,
        "modificationTime": 1_700_000_000_000,
        "dataChange": True,
    }
    if num_records is not None:
        stats = {"numRecords": num_records, "minValues": {"id": 0}, "maxValues": {"id": 9}}
        stats["nullCount"] = {"id": 0}
        action["stats"] = json.dumps(stats)
    return {"add": action}


def remove_action(path: str) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": 1_700_000_000_000, "dataChange": True}}


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=timezone.utc)  # type: ignore[misc]


@pytest.fixture
def table_writer(tmp_path: Path) -> TableWriter:
    """A writer for a fresh table directory under tmp_path."""
    return TableWriter(tmp_path / "table")


@pytest.fixture
def simple_table(table_writer: TableWriter) -> TableWriter:
    """A table with three versions, committed on 2024-01-01, -02 and -03 at 00:00 UTC:
    0 creates it with a.parquet, 1 adds b.parquet, 2 removes a.parquet and adds c.parquet."""
    table_writer.create(extra=[add_action("part=1/a.parquet")], timestamp=utc(2024, 1, 1))
    table_writer.commit(
        1,
        [commit_info("WRITE"), add_action("part=2/b.parquet", partition_values={"part": "2"})],
        timestamp=utc(2024, 1, 2),
    )
    table_writer.commit(
        2,
        [
            commit_info("DELETE"),
            remove_action("part=1/a.parquet"),
            add_action("part=1/c.parquet", size=300, num_records=5),
        ],
        timestamp=utc(2024, 1, 3),
    )
    return table_writer


# --- golden tables -------------------------------------------------------------------------


class GoldenTables:
    """Unpacks golden tables (NAME.tar.zst) into one session directory, each on first use."""

    def __init__(self, archive_dir: Path, target: Path) -> None:
        self.archive_dir = archive_dir
        self.target = target

    def names(self) -> list[str]:
        return sorted(path.name[: -len(".tar.zst")] for path in self.archive_dir.glob("*.tar.zst"))

    def root(self, name: str) -> Path:
        """The unpacked NAME/ folder (holding delta/ and, for most, expected/)."""
        unpacked = self.target / name
        if not unpacked.exists():
            import zstandard

            archive = self.archive_dir / f"{name}.tar.zst"
            data = zstandard.ZstdDecompressor().decompressobj().decompress(archive.read_bytes())
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(self.target, filter="data")
        return unpacked


@pytest.fixture(scope="session")
def golden_tables(tmp_path_factory: pytest.TempPathFactory) -> GoldenTables:
    assert GOLDEN_DIR.is_dir(), f"the golden tables are not at {GOLDEN_DIR}"
    return GoldenTables(GOLDEN_DIR, tmp_path_factory.mktemp("golden"))
