"""Generated columns on write (spec "Generated Columns"): computed when the data lacks them,
checked (null-safe equality) when it gives them, refused up front when deltalog cannot
evaluate the expression; and the one check of ``delta.*`` table properties that
``DeltaTable.create``, ``write_table`` and ``alter.set_properties`` share."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

UTC = dt.timezone.utc


def column(name: str, kind: str, expression: str | None = None) -> dict[str, Any]:
    metadata = {} if expression is None else {"delta.generationExpression": expression}
    return {"name": name, "type": kind, "nullable": True, "metadata": metadata}


def create(uri: Path, *fields: dict[str, Any]) -> deltalog.DeltaTable:
    schema = json.dumps({"type": "struct", "fields": list(fields)})
    return deltalog.DeltaTable.create(uri, schema)


def test_expressions_are_computed_for_missing_columns(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    create(
        uri,
        column("a", "integer"),
        column("s", "string"),
        column("ts", "timestamp"),
        column("next", "integer", "a + 1"),
        column("key", "string", "concat(s, '-', CAST(a AS STRING))"),
        column("short", "string", "lower(substring(s, 1, 3))"),
        column("day", "date", "CAST(ts AS DATE)"),
        column("year", "integer", "year(ts)"),
        column("month", "integer", "month(ts)"),
        column("dom", "integer", "dayofmonth(ts)"),
        column("hour", "integer", "hour(ts)"),
        column("ym", "string", "date_format(ts, 'yyyy-MM')"),
    )
    moment = dt.datetime(2024, 3, 5, 23, 30, tzinfo=UTC)
    data = pa.table(
        {
            "a": pa.array([1, None], pa.int32()),
            "s": ["ABCDE", "xy"],
            "ts": pa.array([moment, None], pa.timestamp("us", tz="UTC")),
        }
    )
    deltalog.write_table(uri, data)
    got = sorted(deltalog.read_table(str(uri)).to_pylist(), key=lambda row: row["s"])
    assert got[0] == {
        "a": 1,
        "s": "ABCDE",
        "ts": moment,
        "next": 2,
        "key": "ABCDE-1",
        "short": "abc",
        "day": dt.date(2024, 3, 5),
        "year": 2024,
        "month": 3,
        "dom": 5,
        "hour": 23,
        "ym": "2024-03",
    }
    computed = {name: got[1][name] for name in ("next", "key", "short", "day", "year", "ym")}
    assert computed == {
        "next": None,
        "key": None,
        "short": "xy",
        "day": None,
        "year": None,
        "ym": None,
    }


def test_given_values_must_equal_the_expression(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    create(uri, column("a", "integer"), column("next", "integer", "a + 1"))
    given = pa.table(
        {"a": pa.array([1, None], pa.int32()), "next": pa.array([2, None], pa.int32())}
    )
    deltalog.write_table(uri, given)
    wrong = pa.table({"a": pa.array([5, 6], pa.int32()), "next": pa.array([6, 0], pa.int32())})
    with pytest.raises(deltalog.ConstraintViolationError) as refused:
        deltalog.write_table(uri, wrong)
    message = str(refused.value)
    assert "generated column `next` (a + 1)" in (refused.value.constraint or "")
    assert "row 1" in message
    assert "a = 6" in message
    overflow = pa.table({"a": pa.array([2**31 - 1], pa.int32())})
    with pytest.raises(deltalog.ConstraintViolationError):
        deltalog.write_table(uri, overflow)
    assert deltalog.DeltaTable(uri).latest_version() == 1
    assert sorted(deltalog.read_table(str(uri)).to_pylist(), key=str) == sorted(
        [{"a": 1, "next": 2}, {"a": None, "next": None}], key=str
    )


@pytest.mark.parametrize(
    ("expression", "kind"),
    [
        ("hash(a)", "integer"),
        ("current_timestamp()", "timestamp"),
        ("date_format(a, 'EEE')", "string"),
    ],
)
def test_expressions_out_of_reach_refuse_the_table(
    tmp_path: Path, expression: str, kind: str
) -> None:
    uri = tmp_path / "t"
    create(uri, column("a", "integer"), column("g", kind, expression))
    with pytest.raises(deltalog.UnsupportedFeatureError) as refused:
        deltalog.write_table(uri, pa.table({"a": pa.array([1], pa.int32())}))
    assert "generated column `g`" in str(refused.value)
    assert expression in str(refused.value)
    assert not refused.value.unreferenced_files
    assert deltalog.DeltaTable(uri).latest_version() == 0


BAD_PROPERTIES = [
    ({"delta.noSuchKey": "1"}, deltalog.InvalidArgumentError),
    ({"delta.appendOnly": "maybe"}, deltalog.InvalidArgumentError),
    ({"delta.isolationLevel": "SnapshotIsolation"}, deltalog.InvalidArgumentError),
    ({"delta.columnMapping.maxColumnId": "4"}, deltalog.OperationNotAllowedError),
    ({"delta.feature.noSuchFeature": "supported"}, deltalog.UnsupportedFeatureError),
]


@pytest.mark.parametrize(("properties", "error"), BAD_PROPERTIES)
def test_create_write_and_alter_share_one_property_check(
    tmp_path: Path, properties: dict[str, str], error: type[Exception]
) -> None:
    schema = json.dumps({"type": "struct", "fields": [column("id", "long")]})
    with pytest.raises(error):
        deltalog.DeltaTable.create(tmp_path / "created", schema, configuration=properties)
    with pytest.raises(error):
        deltalog.write_table(tmp_path / "written", pa.table({"id": [1]}), configuration=properties)
    assert not (tmp_path / "created" / "_delta_log").exists()
    assert not (tmp_path / "written" / "_delta_log").exists()
    table = deltalog.DeltaTable.create(tmp_path / "altered", schema)
    with pytest.raises(error):
        table.alter.set_properties(properties)


def test_known_keys_are_stored_as_delta_spells_them(tmp_path: Path) -> None:
    schema = json.dumps({"type": "struct", "fields": [column("id", "long")]})
    configuration = {"delta.appendonly": "true", "owner": "me"}
    table = deltalog.DeltaTable.create(tmp_path / "t", schema, configuration=configuration)
    stored = table.snapshot().metadata.configuration
    assert stored == {"delta.appendOnly": "true", "owner": "me"}


def test_update_recomputes_generated_columns_of_the_columns_it_sets(tmp_path: Path) -> None:
    """As Delta on Spark's UPDATE: a generated column reading a column set is recomputed
    from the new values; one set explicitly is checked like any written value."""
    uri = tmp_path / "t"
    table = create(
        uri,
        column("a", "integer"),
        column("b", "integer"),
        column("next", "integer", "a + 1"),
        column("twice", "integer", "b * 2"),
    )
    deltalog.write_table(
        uri, pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([5, 6], pa.int32())})
    )
    table.update(set={"a": "a * 10"}, predicate="a = 2")
    got = sorted(deltalog.read_table(str(uri)).to_pylist(), key=lambda row: row["b"])
    assert got == [
        {"a": 1, "b": 5, "next": 2, "twice": 10},
        {"a": 20, "b": 6, "next": 21, "twice": 12},
    ]
    with pytest.raises(deltalog.ConstraintViolationError):
        table.update(set={"twice": "0"})
    table.update(set={"b": "b + 1", "twice": "(b + 1) * 2"})
    assert sorted(row["twice"] for row in deltalog.read_table(str(uri)).to_pylist()) == [12, 14]


def test_merge_computes_generated_columns_of_inserted_and_updated_rows(tmp_path: Path) -> None:
    """As Delta on Spark's MERGE: inserted rows get their generated columns computed (also
    with ``INSERT *`` from a source that lacks them), updated rows get those reading a
    column set recomputed."""
    uri = tmp_path / "t"
    table = create(
        uri,
        column("id", "integer"),
        column("ts", "timestamp"),
        column("day", "date", "CAST(ts AS DATE)"),
        column("next", "integer", "id + 1"),
    )
    first = dt.datetime(2024, 1, 1, 12, tzinfo=UTC)
    ts = pa.timestamp("us", tz="UTC")
    deltalog.write_table(
        uri, pa.table({"id": pa.array([1], pa.int32()), "ts": pa.array([first], ts)})
    )
    later = dt.datetime(2024, 2, 3, 4, tzinfo=UTC)
    source = pa.table({"id": pa.array([1, 2], pa.int32()), "ts": pa.array([later, later], ts)})
    merge = table.merge(source, "target.id = source.id")
    merge.when_matched_update({"ts": "source.ts"}).when_not_matched_insert(
        {"id": "source.id", "ts": "source.ts"}
    ).execute()
    expected = [
        {"id": 1, "ts": later, "day": dt.date(2024, 2, 3), "next": 2},
        {"id": 2, "ts": later, "day": dt.date(2024, 2, 3), "next": 3},
    ]
    assert sorted(deltalog.read_table(str(uri)).to_pylist(), key=lambda r: r["id"]) == expected
    source = pa.table({"id": pa.array([2, 3], pa.int32()), "ts": pa.array([first, first], ts)})
    table.merge(
        source, "target.id = source.id"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    got = sorted(deltalog.read_table(str(uri)).to_pylist(), key=lambda r: r["id"])
    assert [(row["id"], row["day"], row["next"]) for row in got] == [
        (1, dt.date(2024, 2, 3), 2),
        (2, dt.date(2024, 1, 1), 3),
        (3, dt.date(2024, 1, 1), 4),
    ]
    wrong = pa.table({"id": pa.array([4], pa.int32()), "ts": pa.array([first], ts)})
    with pytest.raises(deltalog.ConstraintViolationError):
        table.merge(wrong, "target.id = source.id").when_not_matched_insert(
            {"id": "source.id", "ts": "source.ts", "next": "0"}
        ).execute()
