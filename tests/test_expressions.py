"""Computed values inside predicates: arithmetic, string functions, casts, CASE and
current_timestamp() on either side of a comparison, in delete, update, merge, scans and
CHECK constraints, with SQL's null semantics and Spark's ANSI errors."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _dml_helpers import ids, make

import deltalog
from deltalog.exceptions import InvalidArgumentError


def prices(uri: Path) -> deltalog.DeltaTable:
    """``id`` 0..5, ``price`` (NULL at 2), ``qty``, ``name`` (NULL at 5)."""
    data = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "price": pa.array([1.5, 20.0, None, 4.0, 50.0, 10.0], pa.float64()),
            "qty": pa.array([10, 3, 7, 30, 1, 20], pa.int32()),
            "name": ["Apple", "pear", "PLUM", "apple", "Kiwi", None],
        }
    )
    deltalog.write_table(uri, data)
    return deltalog.DeltaTable(uri)


def column(uri: Path, name: str) -> dict[int, object]:
    rows = deltalog.read_table(str(uri)).to_pylist()
    return {row["id"]: row[name] for row in rows}


@pytest.mark.parametrize("dv", [True, False])
@pytest.mark.parametrize("partitioned", [True, False])
def test_delete_with_arithmetic(tmp_path: Path, dv: bool, partitioned: bool) -> None:
    table = make(tmp_path, dv, partitioned=partitioned)
    result = table.delete("id % 3 = 0")
    assert result.metrics["numDeletedRows"] == 7
    assert ids(tmp_path) == [i for i in range(20) if i % 3 != 0]
    table.delete("id * 2 > 30 OR p + 1 = 3")
    assert ids(tmp_path) == [1, 4, 7, 10, 13]


def test_delete_and_update_with_null_semantics(tmp_path: Path) -> None:
    table = prices(tmp_path)
    assert not table.delete("price * qty IS NULL AND name IS NULL").committed
    updated = table.update({"name": "upper(name)"}, predicate="price * qty > 100")
    assert updated.metrics["numUpdatedRows"] == 2
    assert column(tmp_path, "name") == {
        0: "Apple",
        1: "pear",
        2: "PLUM",
        3: "APPLE",
        4: "Kiwi",
        5: None,
    }
    table.delete("NOT (lower(name) = 'apple')")
    assert sorted(column(tmp_path, "name")) == [0, 3, 5]
    table.delete("coalesce(name, 'none') = 'none'")
    assert sorted(column(tmp_path, "name")) == [0, 3]


def test_functions_casts_and_case_in_predicates(tmp_path: Path) -> None:
    table = prices(tmp_path)
    table.update(
        {"qty": "qty + 1"},
        predicate="CAST(price AS INT) BETWEEN 4 AND 20 AND substring(name, 1, 1) IN ('p', 'a')",
    )
    assert column(tmp_path, "qty") == {0: 10, 1: 4, 2: 7, 3: 31, 4: 1, 5: 20}
    table.delete("CASE WHEN qty > 10 THEN 'many' ELSE 'few' END = 'many'")
    assert sorted(column(tmp_path, "qty")) == [0, 1, 2, 4]
    assert not table.delete("current_timestamp() < TIMESTAMP '2000-01-01 00:00:00'").committed
    table.delete("-qty + 5 > 0 AND concat(name, '!') LIKE 'K%!'")
    assert sorted(column(tmp_path, "qty")) == [0, 1, 2]


def test_scans_and_snapshots_filter_on_computed_values(tmp_path: Path) -> None:
    table = prices(tmp_path)
    scanned = table.snapshot().scan(filter="price * qty >= 50").to_pyarrow()
    assert sorted(scanned.column("id").to_pylist()) == [1, 3, 4, 5]
    filtered = table.snapshot(filter="lower(name) LIKE 'p%'").scan().to_pyarrow()
    assert filtered.num_rows == 6  # file skipping keeps every file for a computed filter
    exact = table.snapshot(filter="id % 2 = 1").scan(filter="id % 2 = 1").to_pyarrow()
    assert sorted(exact.column("id").to_pylist()) == [1, 3, 5]


def test_partition_pruning_evaluates_computed_partition_filters(tmp_path: Path) -> None:
    table = make(tmp_path, dv=False)
    everything = table.snapshot().num_files
    pruned = table.snapshot(filter="p * 10 + 1 = 21")
    assert 0 < pruned.num_files < everything
    assert sorted(pruned.scan().to_pyarrow().column("id").to_pylist()) == list(range(2, 20, 3))


def test_merge_conditions_compute_on_either_side(tmp_path: Path) -> None:
    table = make(tmp_path, dv=True, partitioned=False)
    source = pa.table(
        {
            "id": pa.array([0, 4, 9, 40], pa.int64()),
            "v": pa.array([5, 1, 30, 2], pa.int64()),
        }
    )
    result = (
        table.merge(source, on="t.id = s.id + 1", source_alias="s", target_alias="t")
        .when_matched_update({"s": "concat('m', CAST(s.v AS STRING))"}, predicate="s.v > t.p + 2")
        .when_matched_delete(predicate="s.v * 2 = t.id - 3")
        .when_not_matched_insert({"id": "s.id * 100", "p": "s.v % 3", "s": "'new'"})
        .execute()
    )
    metrics = result.metrics
    assert metrics["numTargetRowsUpdated"] == 2
    assert metrics["numTargetRowsDeleted"] == 1
    assert metrics["numTargetRowsInserted"] == 1
    rows = {r["id"]: (r["p"], r["s"]) for r in deltalog.read_table(str(tmp_path)).to_pylist()}
    assert rows[1] == (1, "m5")
    assert 5 not in rows
    assert rows[10] == (1, "m30")
    assert rows[4000] == (2, "new")
    assert len(rows) == 20


def test_merge_keys_mixed_with_computed_conjuncts(tmp_path: Path) -> None:
    table = make(tmp_path, dv=False)
    source = pa.table({"id": pa.array([3, 4, 5, 6], pa.int64()), "v": pa.array([0, 9, 4, 0])})
    result = (
        table.merge(
            source,
            on="t.id = s.id AND t.p * 2 = s.v AND t.id % 2 = 1 - t.id % 2",
            source_alias="s",
            target_alias="t",
        )
        .when_matched_delete()
        .execute()
    )
    # id 3: p 0, v 0, 3 % 2 = 1 != 0; id 4: p 1, v 9; id 5: p 2, v 4, 1 != 0; id 6: p 0, v 0
    assert not result.committed
    on = "t.id = s.id AND t.p * 2 = s.v"
    table.merge(source, on, source_alias="s", target_alias="t").when_matched_delete().execute()
    assert ids(tmp_path) == [i for i in range(20) if i not in (3, 5, 6)]


def test_check_constraints_may_compute(tmp_path: Path) -> None:
    table = prices(tmp_path)
    with pytest.raises(deltalog.ConstraintViolationError, match="existing row"):
        table.alter.add_constraint("cheap", "price * qty < 100")
    with pytest.raises(deltalog.ConstraintViolationError, match="price = NULL"):
        table.alter.add_constraint("priced", "qty * price >= 0")  # NULL breaks it, as in Delta
    with pytest.raises(InvalidArgumentError, match="not deterministic"):
        table.alter.add_constraint("fresh", "current_timestamp() > TIMESTAMP '2020-01-01'")
    expression = "coalesce(price, 0) * qty >= 0"
    added = table.alter.add_constraint("positive", expression)
    assert added.snapshot.metadata.configuration["delta.constraints.positive"] == expression

    def row(price: float | None, qty: int | None) -> pa.Table:
        return pa.table(
            {
                "id": pa.array([9], pa.int64()),
                "price": pa.array([price], pa.float64()),
                "qty": pa.array([qty], pa.int32()),
                "name": ["x"],
            }
        )

    for broken in (row(-1.0, 2), row(1.0, None)):
        with pytest.raises(deltalog.ConstraintViolationError, match="positive"):
            deltalog.write_table(table, broken)
    deltalog.write_table(table, row(None, 2))
    assert column(tmp_path, "qty")[9] == 2


@pytest.mark.parametrize(
    ("predicate", "message"),
    [
        ("id / 0 > 1", "division by zero"),
        ("id % (qty - qty) = 0", "division by zero"),
        ("id * 9223372036854775807 > 1", "verflow"),
        ("CAST(name AS BIGINT) = 1", "cannot cast"),
        ("name + 1 = 2", "arithmetic needs numbers"),
        ("lower(name)", "not boolean"),
        ("missing + 1 = 2", "missing"),
    ],
)
def test_errors_commit_nothing(tmp_path: Path, predicate: str, message: str) -> None:
    table = prices(tmp_path)
    with pytest.raises(InvalidArgumentError, match=message):
        table.delete(predicate)
    with pytest.raises(InvalidArgumentError, match=message):
        table.update({"qty": "qty + 1"}, predicate=predicate)
    assert table.latest_version() == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id % = 0", "position 6"),
        ("nope(id) = 1", "a known function"),
        ("(id = 1) + 1 = 2", "a value, not a condition"),
        ("CAST(id AS wat) = 1", "a type name"),
    ],
)
def test_parse_errors_name_the_position(tmp_path: Path, text: str, message: str) -> None:
    table = prices(tmp_path)
    with pytest.raises(InvalidArgumentError, match=message):
        table.delete(text)


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
def test_a_nan_with_its_sign_bit_is_spark_s_one_nan(tmp_path: Path, dv: bool) -> None:
    """``-x`` of a NaN sets its sign bit; Spark has one NaN, greater than every number, so
    filters, statistics and constraints treat that NaN as NaN (finding F6, differential seeds
    52 and 54)."""
    negative_nan = -float("nan")
    uri = str(tmp_path / "t")
    data = pa.table({"id": [1, 2, 3], "x": pa.array([negative_nan, -5.0, 0.5])})
    deltalog.write_table(uri, data, configuration={"delta.enableDeletionVectors": str(dv).lower()})
    table = deltalog.DeltaTable(uri)
    table.alter.add_constraint("floor", "x IS NULL OR x > -1000000")
    assert deltalog.read_table(uri, filter="x > 1.5").column("id").to_pylist() == [1]
    assert deltalog.read_table(uri, filter="x = 'NaN'").column("id").to_pylist() == [1]
    table.update({"x": "-x"}, predicate="id = 3")
    table.delete("x > 1.5")
    assert sorted(deltalog.read_table(uri).column("id").to_pylist()) == [2, 3]
