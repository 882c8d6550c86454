"""Snapshots loaded with a filter (file skipping pushed into replay): they hold exactly the
files a filtered scan of the full snapshot keeps, for every checkpoint kind, however the
checkpoint's row groups fall."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))

from deltabench import generate
from deltabench.generate import LogSpec, write_table

SMALL = {"checkpoint_files": 300, "commits": 4, "adds_per_commit": 10, "removes_per_commit": 3}

SPECS = {
    "classic": LogSpec(**SMALL, checkpoint="classic"),
    "classic_parsed": LogSpec(**SMALL, checkpoint="classic_parsed", partitions=4),
    "multipart": LogSpec(**SMALL, checkpoint="multipart", checkpoint_parts=3),
    "v2": LogSpec(**SMALL, checkpoint="v2", sidecars=3, deletion_vectors="inline"),
    "json-only": LogSpec(commits=6, adds_per_commit=20, removes_per_commit=2),
}


@pytest.fixture(params=sorted(SPECS))
def table(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A generated table whose checkpoint has row groups of 25 files."""
    monkeypatch.setattr(generate, "ROW_GROUP_ROWS", 25)
    return write_table(tmp_path / "table", SPECS[request.param]).path


def paths(stream: deltalog.ArrowStream) -> list[str]:
    return sorted(pa.table(stream)["path"].to_pylist())


@pytest.mark.parametrize(
    "sql",
    [
        "id < 50000",
        "id >= 1000000 AND id < 1500000",
        "id = 12345 OR id > 2500000",
        "id IS NULL",
        "c1 IS NOT NULL AND id < 100000",
        "part = 'p1' OR id < 10",
        "NOT (id > 10000)",
    ],
)
def test_filtered_snapshot_holds_the_files_a_filtered_scan_keeps(table: Path, sql: str) -> None:
    delta = deltalog.DeltaTable(table)
    full = delta.snapshot()
    if "part" in sql and not full.partition_columns:
        sql = sql.replace("part = 'p1'", "id = 7")
    if "c1" in sql and "c1" not in full.schema.names:
        pytest.skip("the table has no column c1")
    expected = paths(full.scan(filter=sql).files())
    pruned = delta.snapshot(filter=sql)
    assert paths(pruned.files()) == expected
    assert pruned.num_files == len(expected)
    assert pruned.version == full.version
    assert pruned.metadata == full.metadata
    assert paths(pruned.scan(filter=sql).files()) == expected


def test_filtered_snapshot_time_travels_and_refreshes(table: Path) -> None:
    delta = deltalog.DeltaTable(table)
    older = delta.snapshot(1, filter="id < 200000")
    assert older.version == 1
    assert paths(older.files()) == paths(delta.snapshot(1).scan(filter="id < 200000").files())
    refreshed = older.refresh()
    assert refreshed.version == delta.latest_version()
    assert paths(refreshed.files()) == paths(delta.snapshot(filter="id < 200000").files())


def test_filtered_snapshot_refuses_a_bad_filter(table: Path) -> None:
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.DeltaTable(table).snapshot(filter="id <")
