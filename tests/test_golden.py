"""Conformance on the golden tables (tests/data/golden, see its README.md).

One case per table, named for the behaviour the table pins down. Tables with ``expected/``
rows must load at their newest version, list their files with the documented columns, and
(when every file has a record count) hold as many live rows as ``expected/`` does; the tables
a reader must refuse raise the matching ``DeltaError``; the tables without ``expected/`` have
the documented number of active files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import deltalog
from conftest import GOLDEN_DIR, GoldenTables

ALL_TABLES = sorted(path.name[: -len(".tar.zst")] for path in GOLDEN_DIR.glob("*.tar.zst"))

#: Tables a reader must refuse, and the error that says why.
REFUSED: dict[str, type[deltalog.DeltaError]] = {
    "deltalog-invalid-protocol-version": deltalog.UnsupportedProtocolVersionError,
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata": deltalog.InvalidTableError,
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": deltalog.InvalidTableError,
    "deltalog-state-reconstruction-without-metadata": deltalog.InvalidTableError,
    "deltalog-state-reconstruction-without-protocol": deltalog.InvalidTableError,
    "data-reader-absolute-paths-escaped-chars": deltalog.InvalidTableError,
    "no-delta-log-folder": deltalog.TableNotFoundError,
    "versions-not-contiguous": deltalog.NonContiguousLogError,
    "hive": deltalog.TableNotFoundError,
}

#: Tables without expected rows, and their number of active files at the latest version.
ACTIVE_FILES: dict[str, int] = {
    "canonicalized-paths-normal-a": 0,
    "canonicalized-paths-normal-b": 0,
    "canonicalized-paths-special-a": 0,
    "canonicalized-paths-special-b": 0,
    "checkpoint": 1,
    "delete-re-add-same-file-different-transactions": 2,
    "deltalog-commit-info": 1,
    "log-replay-special-characters-b": 1,
    "update-deleted-directory": 10,
}

WITH_EXPECTED_ROWS = [
    name for name in ALL_TABLES if name not in REFUSED and name not in ACTIVE_FILES
]

FILE_COLUMNS = [
    "path",
    "size",
    "modification_time",
    "partition_values",
    "deletion_vector",
    "num_records",
    "base_row_id",
    "default_row_commit_version",
    "tags",
]

LOG_FILE = re.compile(r"^(\d{20})\.(json|checkpoint(\.\d+\.\d+|\.[^.]+)?\.(parquet|json))$")


def test_every_golden_table_has_a_case() -> None:
    assert len(ALL_TABLES) == 89
    assert set(REFUSED) <= set(ALL_TABLES)
    assert set(ACTIVE_FILES) <= set(ALL_TABLES)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_table_is_refused_with_a_clear_error(golden_tables: GoldenTables, name: str) -> None:
    location = golden_tables.root(name) / "delta"
    with pytest.raises(REFUSED[name]) as caught:
        deltalog.DeltaTable(location).snapshot()
    assert str(caught.value)


@pytest.mark.parametrize("name", sorted(ACTIVE_FILES))
def test_replay_leaves_the_documented_active_files(golden_tables: GoldenTables, name: str) -> None:
    snapshot = deltalog.DeltaTable(golden_tables.root(name) / "delta").snapshot()
    assert snapshot.num_files == ACTIVE_FILES[name]
    assert snapshot.files().num_rows == ACTIVE_FILES[name]


@pytest.mark.parametrize("name", WITH_EXPECTED_ROWS)
def test_latest_snapshot_matches_the_expected_rows(golden_tables: GoldenTables, name: str) -> None:
    root = golden_tables.root(name)
    table = deltalog.DeltaTable(root / "delta")
    snapshot = table.snapshot()
    assert snapshot.version == newest_version_in_log(root / "delta" / "_delta_log")
    assert table.latest_version() == snapshot.version

    files = snapshot.files().to_pyarrow()
    assert files.column_names == FILE_COLUMNS
    assert files.num_rows == snapshot.num_files
    paths = files["path"].to_pylist()
    assert len(set(paths)) == len(paths), "a data file is active twice"
    assert sum(files["size"].to_pylist()) == snapshot.total_size

    records = files["num_records"].to_pylist()
    if None in records:
        return
    deleted = sum(
        vector["cardinality"]
        for vector in files["deletion_vector"].to_pylist()
        if vector is not None
    )
    assert sum(records) - deleted == pq.read_table(root / "expected").num_rows


def test_each_table_in_a_hive_folder_opens(golden_tables: GoldenTables) -> None:
    folder = golden_tables.root("hive") / "delta"
    tables = sorted(path for path in folder.iterdir() if (path / "_delta_log").is_dir())
    assert tables
    for location in tables:
        snapshot = deltalog.DeltaTable(location).snapshot()
        assert snapshot.version >= 0, location.name


def newest_version_in_log(log: Path) -> int:
    versions = [
        int(match.group(1)) for path in log.iterdir() if (match := LOG_FILE.match(path.name))
    ]
    return max(versions)
