"""Deleting rows from Python: deletion vectors and copy-on-write, partitions, column
mapping, row tracking, the change data feed, a golden Spark table with deletion vectors,
and refused input that commits nothing."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from functools import partial
from pathlib import Path

import _dml_helpers
import pyarrow as pa
import pytest
from _dml_helpers import commit_actions, ids

import deltalog
from deltalog.exceptions import InvalidArgumentError, OperationNotAllowedError

#: The shared table of 20 rows, ``s`` NULL for every seventh.
make = partial(_dml_helpers.make, null_every=7)


@pytest.mark.parametrize("dv", [True, False])
def test_delete_by_data_predicate(tmp_path: Path, dv: bool) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv)
    result = table.delete("id >= 15 OR s IS NULL")
    assert result.committed
    assert result.version == 1
    gone = {i for i in range(20) if i >= 15 or i % 7 == 0}
    assert ids(uri) == sorted(set(range(20)) - gone)
    assert ids(uri, 0) == list(range(20))
    assert result.metrics["numDeletedRows"] == len(gone)
    actions = commit_actions(uri, 1)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "DELETE"
    assert info["operationParameters"]["predicate"] == json.dumps(["id >= 15 OR s IS NULL"])
    assert info["operationMetrics"]["numDeletedRows"] == str(len(gone))
    adds = [a["add"] for a in actions if "add" in a]
    if dv:
        assert result.metrics["numDeletionVectorsAdded"] == 3
        assert result.metrics["numCopiedRows"] == 0
        assert all(a["deletionVector"]["storageType"] == "u" for a in adds)
        assert all(json.loads(a["stats"])["tightBounds"] is False for a in adds)
        dv_files = list(uri.glob("deletion_vector_*.bin"))
        assert len(dv_files) == 1
        deleted = sum(a["deletionVector"]["cardinality"] for a in adds)
        assert deleted == len(gone)
    else:
        assert result.metrics["numDeletionVectorsAdded"] == 0
        assert result.metrics["numCopiedRows"] == 20 - len(gone)
        assert all("deletionVector" not in a for a in adds)
        assert not list(uri.glob("deletion_vector_*.bin"))


def test_deletion_vectors_merge_with_existing_ones(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv=True, partitioned=False)
    first = table.delete("id < 5")
    assert first.metrics["numDeletionVectorsAdded"] == 1
    second = table.delete("id < 8")
    assert second.metrics["numDeletedRows"] == 3
    assert second.metrics["numDeletionVectorsUpdated"] == 1
    assert ids(uri) == list(range(8, 20))
    third = table.delete("id >= 8")
    assert third.metrics["numRemovedFiles"] == 1
    assert third.metrics["numDeletionVectorsRemoved"] == 1
    assert [a for a in commit_actions(uri, 3) if "add" in a] == []
    assert ids(uri) == []


@pytest.mark.parametrize("dv", [True, False])
def test_partition_predicate_removes_whole_files(tmp_path: Path, dv: bool) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv)
    result = table.delete("p = 1")
    assert result.metrics["numRemovedFiles"] == 1
    assert result.metrics["numAddedFiles"] == 0
    assert result.metrics["numDeletedRows"] == 7
    assert ids(uri) == [i for i in range(20) if i % 3 != 1]
    assert [a for a in commit_actions(uri, 1) if "add" in a] == []


def test_delete_everything_and_nothing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv=False)
    nothing = table.delete("id > 100")
    assert (nothing.committed, nothing.version) == (False, 0)
    assert table.latest_version() == 0
    everything = table.delete()
    assert everything.committed
    assert everything.metrics["numDeletedRows"] == 20
    assert everything.metrics["numRemovedFiles"] == 3
    assert ids(uri) == []


@pytest.mark.parametrize("dv", [True, False])
def test_change_data_feed_of_deletes(tmp_path: Path, dv: bool) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv, cdf=True)
    table.delete("id > 16")
    table.delete("p = 0")
    changes = pa.table(table.changes(1)).to_pylist()
    seen = sorted((c["id"], c["_change_type"], c["_commit_version"]) for c in changes)
    first = {(i, "delete", 1) for i in range(17, 20)}
    second = {(i, "delete", 2) for i in range(17) if i % 3 == 0}
    assert seen == sorted(first | second)
    cdc_files = list((uri / "_change_data").rglob("*.parquet")) if not dv else []
    if not dv:
        assert cdc_files, "copy-on-write deletes write change data files"
        assert any("cdc" in a for a in commit_actions(uri, 1))
    assert not any("cdc" in a for a in commit_actions(uri, 2))


def test_column_mapping_table(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for dv in (True, False):
        path = uri / str(dv)
        table = make(path, dv, cdf=True, extra={"delta.columnMapping.mode": "name"})
        table.delete("s = 's5' OR id = 11")
        assert ids(path) == [i for i in range(20) if i not in (5, 11)]
        changes = pa.table(table.changes(1)).to_pylist()
        assert sorted(c["id"] for c in changes) == [5, 11]


def tracked_rows(table: deltalog.DeltaTable) -> list[dict[str, object]]:
    scan = table.snapshot().scan(row_tracking=True)
    return scan.to_pyarrow().to_pylist()


def test_row_tracking_keeps_row_ids(tmp_path: Path) -> None:
    for dv in (True, False):
        uri = tmp_path / str(dv)
        table = make(uri, dv, partitioned=False, extra={"delta.enableRowTracking": "true"})
        before = tracked_rows(table)
        row_ids = {r["id"]: r["row_id"] for r in before}
        table.delete("id IN (0, 2, 4, 6)")
        after = tracked_rows(table)
        assert sorted(r["id"] for r in after) == [i for i in range(20) if i not in (0, 2, 4, 6)]
        assert all(r["row_id"] == row_ids[r["id"]] for r in after)
        assert all(r["row_commit_version"] == 0 for r in after)


def test_golden_spark_table_with_deletion_vectors_takes_our_deletes(
    tmp_path: Path, golden_tables: object
) -> None:
    root = golden_tables.root("dv-partitioned-with-checkpoint")  # type: ignore[attr-defined]
    uri = tmp_path / "dv"
    shutil.copytree(root / "delta", uri)
    before = deltalog.read_table(str(uri)).to_pylist()
    column = next(name for name in before[0] if isinstance(before[0][name], int))
    values = sorted(r[column] for r in before)
    cut = values[len(values) // 2]
    table = deltalog.DeltaTable(uri)
    result = table.delete(f"{column} < {cut}")
    assert result.committed
    after = deltalog.read_table(str(uri)).to_pylist()
    assert sorted(r[column] for r in after) == [v for v in values if v >= cut]
    assert result.metrics["numDeletedRows"] == len(values) - len(after)


def test_refused_input_commits_nothing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv=True)
    with pytest.raises(InvalidArgumentError, match="nope"):
        table.delete("nope = 1")
    with pytest.raises(InvalidArgumentError):
        table.delete("id = 'abc' AND")
    with pytest.raises(InvalidArgumentError):
        table.delete("s > 5 AND id = DATE '2020-01-01'")
    assert table.latest_version() == 0
    append_only = tmp_path / "a"
    make(append_only, dv=False, extra={"delta.appendOnly": "true"})
    with pytest.raises(OperationNotAllowedError):
        deltalog.DeltaTable(append_only).delete("id = 1")
    assert deltalog.DeltaTable(append_only).latest_version() == 0
    assert not list(uri.glob("deletion_vector_*.bin"))


@pytest.mark.parametrize("dv", [True, False])
def test_update_sets_values_from_expressions(tmp_path: Path, dv: bool) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv, cdf=True)
    result = table.update(
        {
            "s": "CASE WHEN id > 17 THEN upper(concat(s, '-', CAST(id AS STRING))) "
            "ELSE coalesce(s, 'none') END",
            "id": "id * 10 + 1",
        },
        predicate="id >= 14",
    )
    assert result.committed
    assert result.metrics["numUpdatedRows"] == 6
    rows = {r["id"]: r["s"] for r in deltalog.read_table(str(uri)).to_pylist()}
    assert rows[141] == "none"
    assert rows[151] == "s15"
    assert rows[181] == "S18-18"
    assert rows[191] == "S19-19"
    assert rows[13] == "s13"
    assert len(rows) == 20
    info = commit_actions(uri, 1)[0]["commitInfo"]
    assert info["operation"] == "UPDATE"
    assert info["operationMetrics"]["numUpdatedRows"] == "6"
    changes = pa.table(table.changes(1)).to_pylist()
    kinds = sorted((c["id"], c["_change_type"]) for c in changes)
    pre = [(i, "update_preimage") for i in range(14, 20)]
    post = [(i * 10 + 1, "update_postimage") for i in range(14, 20)]
    assert kinds == sorted(pre + post)
    if dv:
        assert result.metrics["numCopiedRows"] == 0
    else:
        assert result.metrics["numCopiedRows"] == 14  # every partition was touched


def test_update_functions_and_null_semantics(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv=True, partitioned=False)
    table.update({"s": "substring(lower(concat('AB', s)), 2, 3)"}, predicate="id < 3")
    rows = {r["id"]: r["s"] for r in deltalog.read_table(str(uri)).to_pylist()}
    assert rows[0] is None  # concat with NULL is NULL
    assert rows[1] == "bs1"
    table.update({"id": "-id % 4"}, predicate="id = 7")
    assert -3 in ids(uri)  # SQL's remainder keeps the dividend's sign
    table.update({"s": "CAST(current_timestamp() AS STRING)"}, predicate="id = 8")
    stamped = [r["s"] for r in deltalog.read_table(str(uri)).to_pylist() if r["id"] == 8]
    assert stamped[0].startswith("20")


def test_update_keeps_row_ids_with_a_new_commit_version(tmp_path: Path) -> None:
    for dv in (True, False):
        uri = tmp_path / str(dv)
        table = make(uri, dv, partitioned=False, extra={"delta.enableRowTracking": "true"})
        before = {r["id"]: r["row_id"] for r in tracked_rows(table)}
        result = table.update({"s": "'changed'"}, predicate="id IN (1, 2)")
        after = tracked_rows(table)
        assert {r["id"]: r["row_id"] for r in after} == before
        for row in after:
            expected = result.version if row["id"] in (1, 2) else 0
            assert row["row_commit_version"] == expected, row


def test_bad_updates_commit_nothing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table = make(uri, dv=True)
    with pytest.raises(InvalidArgumentError):
        table.update({"missing": "1"})
    with pytest.raises(InvalidArgumentError):
        table.update({"id": "nope + 1"})
    with pytest.raises(InvalidArgumentError):
        table.update({"id": "id +"})
    with pytest.raises(InvalidArgumentError):
        table.update({"id": "id / 0"}, predicate="id = 1")
    with pytest.raises(InvalidArgumentError):
        table.update({"id": "CAST(s AS BIGINT)"}, predicate="id = 1")
    with pytest.raises(InvalidArgumentError):
        table.update({"id": "unknown_function(id)"})
    assert table.latest_version() == 0
    assert table.update({"s": "'x'"}, predicate="id > 100").committed is False
    assert not list(uri.glob("deletion_vector_*.bin"))


@pytest.mark.parametrize("operation", ["delete", "update", "merge"])
def test_partitioned_deletion_vector_table_after_a_checkpoint(
    tmp_path: Path, operation: str
) -> None:
    """Issue 23: the most common table shape (partitioned, deletion vectors on, the default
    checkpoint interval) took row-level changes until its first checkpoint, then refused
    them with an internal layout error."""
    uri = str(tmp_path / "t")
    data = pa.table(
        {
            "id": pa.array(range(100), pa.int64()),
            "p": pa.array([f"p{i % 2}" for i in range(100)]),
            "v": pa.array(range(100), pa.int32()),
        }
    )
    deltalog.write_table(
        uri, data, partition_by=["p"], configuration={"delta.enableDeletionVectors": "true"}
    )
    expected = Counter(range(100))
    for k in range(12):
        deltalog.write_table(uri, data)
        expected.update(range(100))
        table = deltalog.DeltaTable(uri)
        if operation == "delete":
            table.delete(f"id = {k}")
        elif operation == "update":
            table.update({"id": "id + 1000"}, f"id = {k}")
            expected[k + 1000] += expected[k]
        else:
            source = pa.table({"id": pa.array([k], pa.int64())})
            merger = table.merge(source, "target.id = source.id")
            merger.when_matched_delete().execute()
        del expected[k]
    assert deltalog.DeltaTable(uri).snapshot().version == 24
    assert Counter(ids(uri)) == expected


def test_tables_with_row_tracking_name_their_materialised_columns_at_creation(
    tmp_path: Path,
) -> None:
    """Delta on Spark's UPDATE and ``_metadata.row_id`` need the materialised column names
    from the creation on (it names them whenever it writes metadata); deltalog named them
    only at its own first row-level change (found by the differential test)."""
    uri = str(tmp_path / "t")
    deltalog.write_table(
        uri, pa.table({"id": [1, 2, 3]}), configuration={"delta.enableRowTracking": "true"}
    )
    configuration = deltalog.DeltaTable(uri).snapshot().metadata.configuration
    assert configuration["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    assert configuration["delta.rowTracking.materializedRowCommitVersionColumnName"].startswith(
        "_row-commit-version-col-"
    )


@pytest.mark.parametrize(
    "configuration",
    [{"delta.enableRowTracking": "true"}, {"delta.enableChangeDataFeed": "true"}],
    ids=["row-tracking", "change-data-feed"],
)
def test_columns_added_after_an_update_under_id_mapping_read_null(
    tmp_path: Path, configuration: dict[str, str]
) -> None:
    """Under column mapping by id, the materialised row tracking columns and
    ``_change_type`` took Parquet field ids the next added column reused, so it read row ids
    or change types (found by the cross-engine twins). They carry no field id now, as Delta
    on Spark writes them."""
    uri = str(tmp_path / "t")
    deltalog.write_table(
        uri,
        pa.table({"id": pa.array([1, 2], pa.int64())}),
        configuration={"delta.columnMapping.mode": "id", **configuration},
    )
    table = deltalog.DeltaTable(uri)
    table.update({"id": "id + 10"}, "id = 1")
    table.alter.add_columns(pa.schema([("extra", pa.string())]))
    rows = deltalog.read_table(uri).to_pylist()
    assert sorted(rows, key=lambda row: row["id"]) == [
        {"id": 2, "extra": None},
        {"id": 11, "extra": None},
    ]
