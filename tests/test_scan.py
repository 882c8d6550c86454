"""Reading rows: scans with projections, filters, deletion vectors and time zones, through
the Arrow PyCapsule stream (what pyarrow and polars consume)."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_golden import WITH_EXPECTED_ROWS

import deltalog
from conftest import GoldenTables, TableWriter, add_action, commit_info, remove_action

#: The session time zone each golden table's expected rows were written in (default UTC).
TIMEZONES = {"data-reader-partition-values": "America/Los_Angeles"}


def canonical(value: Any) -> Any:
    """A value comparable across Arrow types: instants as naive UTC, maps as sorted pairs."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return ("ts", value.isoformat())
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, Decimal):
        return ("dec", value.normalize())
    if isinstance(value, dict):
        return tuple(sorted((key, canonical(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(item) for item in value)
    return value


def rows(table: pa.Table) -> list[Any]:
    return sorted((canonical(row) for row in table.to_pylist()), key=repr)


def same_rows(actual: pa.Table, expected: pa.Table) -> bool:
    """True when `actual` holds the rows of `expected`, in any order. Large tables of plain
    columns of the same types are compared sorted in Arrow (a million rows in well under a
    second); every other table row by row through `canonical`."""
    actual = actual.select(expected.column_names)
    plain = all(
        pa.types.is_integer(field.type) or pa.types.is_decimal(field.type)
        for field in expected.schema
    )
    if expected.num_rows > 10_000 and plain and actual.schema == expected.schema:
        keys = [(name, "ascending") for name in expected.column_names]
        return bool(actual.sort_by(keys).equals(expected.sort_by(keys)))
    return rows(actual) == rows(expected)


@pytest.mark.parametrize("name", WITH_EXPECTED_ROWS)
def test_scan_returns_the_expected_rows(golden_tables: GoldenTables, name: str) -> None:
    root = golden_tables.root(name)
    snapshot = deltalog.DeltaTable(root / "delta").snapshot()
    actual = pa.table(snapshot.scan(timezone=TIMEZONES.get(name)))
    expected = pq.read_table(root / "expected")
    assert sorted(actual.column_names) == sorted(expected.column_names)
    assert actual.num_rows == expected.num_rows
    assert same_rows(actual, expected)


def test_deletion_vectors_are_applied(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    files = snapshot.files().to_pyarrow()
    deleted = sum(dv["cardinality"] for dv in files["deletion_vector"].to_pylist() if dv)
    assert deleted > 0
    table = snapshot.scan().to_pyarrow()
    assert table.num_rows == sum(files["num_records"].to_pylist()) - deleted
    vectors = snapshot.deletion_vectors().to_pyarrow()
    assert sum(len(rows) for rows in vectors["deleted_rows"].to_pylist()) == deleted
    for indexes in vectors["deleted_rows"].to_pylist():
        assert indexes == sorted(indexes)


def test_columns_are_projected_in_the_order_asked(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    names = snapshot.schema.names
    scan = snapshot.scan(columns=[names[-1], names[0]])
    assert pa.table(scan).column_names == [names[-1], names[0]]


def test_unknown_column_is_refused(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    with pytest.raises(deltalog.InvalidArgumentError, match="no_such_column"):
        snapshot.scan(columns=["no_such_column"])
    with pytest.raises(deltalog.InvalidArgumentError, match="no_such_column"):
        snapshot.scan(filter="no_such_column > 1")


def test_sql_and_dnf_filters_prune_files_and_filter_rows(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    partition = snapshot.partition_columns[0]
    everything = snapshot.scan().to_pyarrow()
    values = sorted(set(everything[partition].to_pylist()), key=repr)
    chosen = values[0]
    literal = f"'{chosen}'" if isinstance(chosen, str) else str(chosen)
    by_sql = snapshot.scan(filter=f"{partition} = {literal}")
    by_dnf = snapshot.scan(filter=[(partition, "=", chosen)])
    expected = [row for row in everything.to_pylist() if row[partition] == chosen]
    for scan in (by_sql, by_dnf):
        assert scan.files().num_rows < snapshot.num_files
        assert rows(scan.to_pyarrow()) == sorted((canonical(r) for r in expected), key=repr)


def test_or_of_ands_in_dnf(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    partition = snapshot.partition_columns[0]
    everything = snapshot.scan().to_pyarrow()
    values = sorted(set(everything[partition].to_pylist()), key=repr)[:2]
    scan = snapshot.scan(filter=[[(partition, "=", values[0])], [(partition, "=", values[1])]])
    expected = [row for row in everything.to_pylist() if row[partition] in values]
    assert scan.to_pyarrow().num_rows == len(expected)


def test_bad_filter_text_says_where(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    with pytest.raises(deltalog.InvalidArgumentError, match="position"):
        snapshot.scan(filter="x >")


def test_the_stream_is_read_lazily_by_a_record_batch_reader(sample_table: Path) -> None:
    scan = deltalog.DeltaTable(sample_table).snapshot().scan()
    reader = pa.RecordBatchReader.from_stream(scan)
    total = sum(batch.num_rows for batch in reader)
    assert total == scan.to_pyarrow().num_rows


def test_polars_and_pandas_take_the_rows(sample_table: Path) -> None:
    polars = pytest.importorskip("polars")
    scan = deltalog.DeltaTable(sample_table).snapshot().scan()
    frame = polars.DataFrame(scan)
    assert frame.height == scan.to_pandas().shape[0]


def test_read_table_in_one_call(sample_table: Path) -> None:
    table = deltalog.read_table(str(sample_table), version=12)
    snapshot = deltalog.DeltaTable(sample_table).snapshot(12)
    assert table.num_rows == snapshot.scan().to_pyarrow().num_rows


def write_data(writer: TableWriter, name: str, ids: list[int], part: str) -> dict[str, Any]:
    folder = writer.root / f"part={part}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), folder / name)
    path = f"part={part}/{name}"
    return add_action(path, size=(folder / name).stat().st_size, partition_values={"part": part})


def test_change_feed_from_added_and_removed_files(table_writer: TableWriter) -> None:
    table_writer.create(configuration={"delta.enableChangeDataFeed": "true"})
    first = write_data(table_writer, "a.parquet", [1, 2], "1")
    table_writer.commit(1, [commit_info("WRITE"), first])
    table_writer.commit(2, [commit_info("DELETE"), remove_action(first["add"]["path"])])
    table = deltalog.DeltaTable(table_writer.root)
    changes = table.changes(1).to_pyarrow()
    got = sorted(
        zip(
            changes["id"].to_pylist(),
            changes["_change_type"].to_pylist(),
            changes["_commit_version"].to_pylist(),
            strict=True,
        )
    )
    assert got == [(1, "delete", 2), (1, "insert", 1), (2, "delete", 2), (2, "insert", 1)]
    only_deletes = table.changes(1, filter="_change_type = 'delete'", columns=["id"])
    assert sorted(only_deletes.to_pyarrow()["id"].to_pylist()) == [1, 2]


def test_change_feed_refuses_a_range_where_it_was_off(table_writer: TableWriter) -> None:
    table_writer.create()
    table_writer.commit(1, [commit_info("WRITE"), write_data(table_writer, "a.parquet", [1], "1")])
    with pytest.raises(deltalog.OperationNotAllowedError, match="enableChangeDataFeed"):
        deltalog.DeltaTable(table_writer.root).changes(0)


def test_scan_tasks_pickle_and_read_the_scans_rows(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    partition = snapshot.partition_columns[0]
    scan = snapshot.scan(filter=f"{partition} IS NOT NULL", columns=snapshot.schema.names[:2])
    tasks = [pickle.loads(pickle.dumps(task)) for task in scan.tasks(target_size=1)]
    assert len(tasks) == scan.files().num_rows
    assert all(task.num_files == 1 and task.version == snapshot.version for task in tasks)
    read = pa.concat_tables(pa.table(task) for task in tasks)
    assert read.schema == pa.schema(scan)
    assert rows(read) == rows(scan.to_pyarrow())
    assert sum(task.size for task in tasks) == sum(scan.files().to_pyarrow()["size"].to_pylist())


def test_scan_tasks_pack_files_to_the_target_size(sample_table: Path) -> None:
    scan = deltalog.DeltaTable(sample_table).snapshot().scan()
    sizes = scan.files().to_pyarrow()["size"].to_pylist()
    (whole,) = scan.tasks()
    assert (whole.num_files, whole.size) == (len(sizes), sum(sizes))
    paired = scan.tasks(target_size=2 * max(sizes), open_cost=0)
    assert [task.num_files for task in paired] == [2] * (len(sizes) // 2) + [1] * (len(sizes) % 2)
    listed = [path for task in paired for path in task.files().to_pyarrow()["path"].to_pylist()]
    assert listed == scan.files().to_pyarrow()["path"].to_pylist()
    assert scan.tasks(target_size=1) != []
    with pytest.raises(deltalog.InvalidArgumentError, match="target_size"):
        scan.tasks(target_size=0)


def test_a_task_with_damaged_files_says_so(sample_table: Path) -> None:
    (task,) = deltalog.DeltaTable(sample_table).snapshot().scan().tasks()
    # The wire format: magic line, header length (u32 LE), JSON header, then the file list as
    # Arrow IPC; keep the header and damage the file list.
    header_end = 12 + int.from_bytes(task._task[8:12], "little")
    damaged = dataclasses.replace(task, _task=task._task[:header_end] + b"not arrow")
    with pytest.raises(deltalog.InvalidArgumentError, match="Arrow IPC"):
        damaged.to_batches()


def test_logs_escaping_characters_above_u1ffff_read_right(tmp_path: Path) -> None:
    """A writer that escapes every non-ASCII character (Python's ``json.dumps``) spells
    U+20000 and above as surrogate pairs, in paths, partition values and the statistics
    inside ``stats``; arrow-json 60 alone decodes those pairs to the wrong characters."""
    wide = "\U00020000\U0002f804"
    data = pa.table({"id": [1, 2], "p": [wide, "x"], "s": [wide + "a", "b"]})
    deltalog.write_table(tmp_path, data, partition_by=["p"])
    for commit in (tmp_path / "_delta_log").glob("*.json"):
        actions = [json.loads(line) for line in commit.read_text(encoding="utf-8").splitlines()]
        for action in actions:
            if "add" in action and action["add"].get("stats"):
                action["add"]["stats"] = json.dumps(json.loads(action["add"]["stats"]))
        escaped = "".join(json.dumps(action) + "\n" for action in actions)
        assert "\\ud840\\udc00" in escaped
        assert "\\\\ud840\\\\udc00" in escaped
        commit.write_text(escaped, encoding="utf-8")
    table = deltalog.DeltaTable(tmp_path)
    files = pa.table(table.snapshot().files()).to_pylist()
    assert sorted(file["partition_values"]["p"] for file in files) == sorted([wide, "x"])
    rows = pa.table(deltalog.read_table(tmp_path)).sort_by("id").to_pylist()
    assert rows == [{"id": 1, "s": wide + "a", "p": wide}, {"id": 2, "s": "b", "p": "x"}]
    matching = pa.table(table.snapshot(filter=f"s = '{wide}a'").files())
    assert matching.num_rows == 1
