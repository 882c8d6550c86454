"""DeltaTable.merge: every clause kind, null keys, duplicate matches, deletion vectors and
copy-on-write, partitions, column mapping, row tracking and the change data feed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from _dml_helpers import commit_info, make

import deltalog
from deltalog.exceptions import (
    InvalidArgumentError,
    MergeMultipleMatchError,
    OperationNotAllowedError,
    SchemaMismatchError,
)


def source(rows: list[tuple[int | None, int, str]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "p": pa.array([r[1] for r in rows], pa.int64()),
            "s": [r[2] for r in rows],
        }
    )


def rows(uri: Path) -> dict[int, tuple[int, str]]:
    table = deltalog.read_table(str(uri)).to_pylist()
    return {r["id"]: (r["p"], r["s"]) for r in table}


UPSERT = source([(1, 1, "u1"), (4, 1, "u4"), (100, 1, "new"), (None, 0, "null key")])


@pytest.mark.parametrize("dv", [True, False])
@pytest.mark.parametrize("partitioned", [True, False])
def test_upsert(tmp_path: Path, dv: bool, partitioned: bool) -> None:
    table = make(tmp_path, dv, partitioned=partitioned)
    result = (
        table.merge(UPSERT, on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert result.committed
    assert result.version == 1
    after = rows(tmp_path)
    assert after[1] == (1, "u1")
    assert after[4] == (1, "u4")
    assert after[100] == (1, "new")
    assert after[None] == (0, "null key")  # type: ignore[index]
    assert len(after) == 22
    metrics = result.metrics
    assert metrics["numSourceRows"] == 4
    assert metrics["numTargetRowsUpdated"] == 2
    assert metrics["numTargetRowsInserted"] == 2
    assert metrics["numTargetRowsDeleted"] == 0
    assert metrics["numOutputRows"] == 4 + metrics["numTargetRowsCopied"]
    if dv:
        assert metrics["numTargetRowsCopied"] == 0
        assert metrics["numTargetDeletionVectorsAdded"] >= 1
    else:
        assert metrics["numTargetRowsCopied"] > 0
        assert metrics["numTargetDeletionVectorsAdded"] == 0
    info = commit_info(tmp_path, 1)
    assert info["operation"] == "MERGE"
    parameters = info["operationParameters"]
    assert isinstance(parameters, dict)
    assert json.loads(parameters["predicate"]) == ["t.id = s.id"]
    assert json.loads(parameters["matchedPredicates"]) == [{"actionType": "update"}]
    assert json.loads(parameters["notMatchedPredicates"]) == [{"actionType": "insert"}]
    assert json.loads(parameters["notMatchedBySourcePredicates"]) == []


def test_every_clause_kind_in_order(tmp_path: Path) -> None:
    table = make(tmp_path, dv=True)
    data = source([(1, 1, "del"), (2, 2, "upd"), (3, 0, "keep"), (50, 2, "ins"), (51, 0, "skip")])
    result = (
        table.merge(data, on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.s = 'del'")
        .when_matched_update({"s": "concat(t.s, '-', s.s)"}, predicate="s.s = 'upd'")
        .when_not_matched_insert({"id": "s.id", "p": "s.p", "s": "upper(s.s)"}, "s.id = 50")
        .when_not_matched_by_source_delete(predicate="t.id >= 18")
        .when_not_matched_by_source_update({"s": "'untouched'"}, predicate="t.id = 0")
        .execute()
    )
    after = rows(tmp_path)
    assert 1 not in after
    assert 18 not in after
    assert 19 not in after
    assert after[2] == (2, "s2-upd")
    assert after[3] == (0, "s3")  # matched, no clause applies: unchanged
    assert after[50] == (2, "INS")
    assert 51 not in after
    assert after[0] == (0, "untouched")
    m = result.metrics
    assert m["numTargetRowsMatchedDeleted"] == 1
    assert m["numTargetRowsMatchedUpdated"] == 1
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == 2
    assert m["numTargetRowsNotMatchedBySourceUpdated"] == 1
    assert m["numTargetRowsDeleted"] == 3
    assert m["numTargetRowsUpdated"] == 2
    matched = json.loads(str(commit_info(tmp_path, 1)["operationParameters"]["matchedPredicates"]))  # type: ignore[index]
    assert matched == [
        {"predicate": "s.s = 'del'", "actionType": "delete"},
        {"predicate": "s.s = 'upd'", "actionType": "update"},
    ]


def test_duplicate_source_matches(tmp_path: Path) -> None:
    table = make(tmp_path, dv=True)
    twice = source([(5, 2, "a"), (5, 2, "b")])
    with pytest.raises(MergeMultipleMatchError, match="DELTA_MULTIPLE_SOURCE_ROW"):
        table.merge(twice, "target.id = source.id").when_matched_update_all().execute()
    assert table.latest_version() == 0
    # only an unconditional delete may match a row more than once
    result = table.merge(twice, "target.id = source.id").when_matched_delete().execute()
    assert result.metrics["numTargetRowsDeleted"] == 1
    assert 5 not in rows(tmp_path)
    # insert-only merges never check
    inserted = (
        table.merge(source([(6, 0, "x"), (6, 0, "y"), (99, 0, "z")]), "target.id = source.id")
        .when_not_matched_insert_all()
        .execute()
    )
    assert inserted.metrics["numTargetRowsInserted"] == 1
    # with a NOT MATCHED BY SOURCE clause the merge is no longer insert-only: Delta on Spark
    # 4.4 refuses the duplicate even without a matched clause (differential seeds 181, 183)
    by_source = (
        table.merge(source([(6, 0, "x"), (6, 0, "y")]), "target.id = source.id")
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("target.id > 1000")
    )
    with pytest.raises(MergeMultipleMatchError, match="DELTA_MULTIPLE_SOURCE_ROW"):
        by_source.execute()


def test_refused_merges_commit_nothing(tmp_path: Path) -> None:
    table = make(tmp_path, dv=False)
    missing = UPSERT.drop_columns(["s"])
    with pytest.raises(SchemaMismatchError, match="s"):
        table.merge(missing, "target.id = source.id").when_matched_update_all().execute()
    with pytest.raises(InvalidArgumentError, match="ambiguous"):
        table.merge(UPSERT, "id = source.id").when_matched_delete().execute()
    with pytest.raises(InvalidArgumentError, match="only the target"):
        table.merge(UPSERT, "target.id = source.id").when_not_matched_by_source_delete(
            "source.s = 'x'"
        ).execute()
    with pytest.raises(InvalidArgumentError, match="at least one WHEN"):
        table.merge(UPSERT, "target.id = source.id").execute()
    appendonly = make(tmp_path / "ao", dv=False, extra={"delta.appendOnly": "true"})
    with pytest.raises(OperationNotAllowedError):
        appendonly.merge(UPSERT, "target.id = source.id").when_matched_delete().execute()
    assert table.latest_version() == 0
    assert appendonly.latest_version() == 0


def test_nothing_to_change_commits_nothing(tmp_path: Path) -> None:
    table = make(tmp_path, dv=True)
    result = (
        table.merge(source([(1, 1, "x")]), "target.id = source.id")
        .when_matched_update({"s": "'y'"}, predicate="source.s = 'nope'")
        .execute()
    )
    assert not result.committed
    assert table.latest_version() == 0


def test_key_ranges_skip_files(tmp_path: Path) -> None:
    table = make(tmp_path, dv=True)  # three files, one per partition
    result = (
        table.merge(source([(3, 0, "x")]), "target.id = source.id AND target.p = 0")
        .when_matched_update_all()
        .execute()
    )
    assert result.metrics["numTargetRowsUpdated"] == 1
    assert rows(tmp_path)[3] == (0, "x")


@pytest.mark.parametrize("dv", [True, False])
def test_change_data_feed(tmp_path: Path, dv: bool) -> None:
    table = make(tmp_path, dv, cdf=True)
    data = source([(1, 1, "gone"), (2, 2, "new value"), (77, 2, "inserted")])
    (
        table.merge(data, "target.id = source.id")
        .when_matched_delete("source.s = 'gone'")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    changes = pa.table(table.changes(1)).to_pylist()
    seen = sorted((c["_change_type"], c["id"], c["s"]) for c in changes)
    assert seen == [
        ("delete", 1, "s1"),
        ("insert", 77, "inserted"),
        ("update_postimage", 2, "new value"),
        ("update_preimage", 2, "s2"),
    ]


def test_column_mapping(tmp_path: Path) -> None:
    for dv in (True, False):
        uri = tmp_path / str(dv)
        table = make(uri, dv, cdf=True, extra={"delta.columnMapping.mode": "name"})
        table.merge(UPSERT, "target.id = source.id").when_matched_update_all().execute()
        assert rows(uri)[4] == (1, "u4")
        assert len(rows(uri)) == 20


def tracked(table: deltalog.DeltaTable) -> dict[int, dict[str, object]]:
    return {r["id"]: r for r in table.snapshot().scan(row_tracking=True).to_pyarrow().to_pylist()}


def test_row_tracking(tmp_path: Path) -> None:
    for dv in (True, False):
        uri = tmp_path / str(dv)
        table = make(uri, dv, partitioned=False, extra={"delta.enableRowTracking": "true"})
        before = tracked(table)
        result = (
            table.merge(UPSERT, "target.id = source.id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        after = tracked(table)
        for key, row in before.items():
            assert after[key]["row_id"] == row["row_id"]
            version = result.version if key in (1, 4) else 0
            assert after[key]["row_commit_version"] == version
        fresh = [after[100]["row_id"]]
        assert all(isinstance(i, int) and i >= 20 for i in fresh)


NESTED = pa.struct([("city", pa.string()), ("zip", pa.int32())])


def test_nested_set_targets_in_update_and_merge(tmp_path: Path) -> None:
    """``set={"address.city": ...}`` changes one field of a struct and keeps the others; a
    NULL struct becomes a struct holding only the new value, as in Spark."""
    uri = tmp_path / "t"
    addresses = pa.array([{"city": "a", "zip": 1}, None, {"city": "c", "zip": 3}], NESTED)
    deltalog.write_table(uri, pa.table({"id": [1, 2, 3], "address": addresses}))
    table = deltalog.DeltaTable(uri)
    table.update(set={"address.city": "upper(address.city)"}, predicate="id = 1")
    table.update(set={"address.zip": "20"}, predicate="id = 2")
    updates = pa.table({"id": [3], "city": ["merged"]})
    table.merge(updates, "t.id = s.id", source_alias="s", target_alias="t").when_matched_update(
        {"t.address.city": "s.city"}
    ).execute()
    rows = {r["id"]: r["address"] for r in deltalog.read_table(str(uri)).to_pylist()}
    assert rows == {
        1: {"city": "A", "zip": 1},
        2: {"city": None, "zip": 20},
        3: {"city": "merged", "zip": 3},
    }
    for conflicting in ({"address": "address", "address.zip": "1"}, {"id.x": "1"}):
        with pytest.raises(InvalidArgumentError):
            table.update(set=conflicting)


def test_schema_evolution_in_merge(tmp_path: Path) -> None:
    """``merge_schema=True``: ``*`` clauses add the source's new columns and struct fields,
    an update keeps target-only fields, an insert gives them NULL; without it the extra
    source columns are ignored, as Delta on Spark ignores them."""
    uri = tmp_path / "t"
    target_struct = pa.struct([("a", pa.int32()), ("c", pa.int32())])
    deltalog.write_table(
        uri,
        pa.table(
            {
                "id": [1, 2, 3],
                "s": pa.array([{"a": 1, "c": 10}, {"a": 2, "c": 20}, None], target_struct),
            }
        ),
    )
    source_struct = pa.struct([("a", pa.int32()), ("b", pa.string())])
    updates = pa.table(
        {
            "id": [1, 2, 3, 4],
            "s": pa.array(
                [{"a": 5, "b": "x"}, None, {"a": 7, "b": "z"}, {"a": 8, "b": "w"}], source_struct
            ),
            "n": ["n1", "n2", "n3", "n4"],
        }
    )
    table = deltalog.DeltaTable(uri)
    same_shape = pa.table({"id": [3], "s": pa.array([None], target_struct), "n": ["ignored"]})
    table.merge(same_shape, "t.id = s.id", "s", "t").when_matched_update_all().execute()
    assert pa.schema(table.schema()).names == ["id", "s"]
    merger = table.merge(updates, "t.id = s.id", "s", "t", merge_schema=True)
    merger.when_matched_update_all().when_not_matched_insert_all().execute()
    schema = json.loads(table.schema().json())
    assert [f["name"] for f in schema["fields"]] == ["id", "s", "n"]
    assert [f["name"] for f in schema["fields"][1]["type"]["fields"]] == ["a", "c", "b"]
    rows = {r["id"]: (r["s"], r["n"]) for r in deltalog.read_table(str(uri)).to_pylist()}
    assert rows == {
        1: ({"a": 5, "c": 10, "b": "x"}, "n1"),
        2: ({"a": None, "c": 20, "b": None}, "n2"),
        3: ({"a": 7, "c": None, "b": "z"}, "n3"),
        4: ({"a": 8, "c": None, "b": "w"}, "n4"),
    }
    explicit = pa.table({"id": [1, 9], "m": ["m1", "m9"], "other": [0, 0]})
    table.merge(explicit, "t.id = s.id", "s", "t").with_schema_evolution().when_matched_update(
        {"m": "s.m"}
    ).when_not_matched_insert({"id": "s.id"}).execute()
    assert pa.schema(table.schema()).names == ["id", "s", "n", "m"]
    rows = {r["id"]: r["m"] for r in deltalog.read_table(str(uri)).to_pylist()}
    assert (rows[1], rows[9], rows[2]) == ("m1", None, None)
