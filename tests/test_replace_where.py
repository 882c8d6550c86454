"""Overwrites with a predicate over data columns (``replaceWhere``): the matching rows
deleted and the new rows added in one commit, with deletion vectors or copy-on-write, change
data files, the predicate check and its opt-out."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _dml_helpers import commit_actions, ids

import deltalog


def table_of_ten(uri: Path, **configuration: str) -> None:
    data = pa.table({"id": pa.array(range(10), pa.int64()), "p": [i % 2 for i in range(10)]})
    deltalog.write_table(
        uri,
        data,
        partition_by=["p"],
        configuration={"delta.enableChangeDataFeed": "true", **configuration},
    )


@pytest.mark.parametrize("deletion_vectors", ["true", "false"])
def test_data_column_predicate_replaces_matching_rows(
    tmp_path: Path, deletion_vectors: str
) -> None:
    uri = tmp_path / "t"
    table_of_ten(uri, **{"delta.enableDeletionVectors": deletion_vectors})
    new = pa.table({"id": pa.array([4, 50], pa.int64()), "p": [0, 0]})
    result = deltalog.write_table(
        uri, new, mode="overwrite", predicate="id >= 3 AND id < 6 OR id = 50"
    )
    assert (result.version, result.committed) == (1, True)
    assert ids(uri) == [0, 1, 2, 4, 6, 7, 8, 9, 50]
    info = commit_actions(uri, 1)[0]["commitInfo"]
    assert isinstance(info, dict)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"]["mode"] == "Overwrite"
    assert "id" in info["operationParameters"]["predicate"]
    assert info["operationMetrics"]["numDeletedRows"] == "3"
    changes = deltalog.DeltaTable(uri).changes(1).to_pyarrow().to_pylist()
    seen = sorted((row["_change_type"], row["id"]) for row in changes)
    assert seen == [("delete", 3), ("delete", 4), ("delete", 5), ("insert", 4), ("insert", 50)]
    cdc = [line for line in commit_actions(uri, 1) if "cdc" in line]
    assert bool(cdc) == (deletion_vectors == "false")


def test_rows_outside_the_predicate_are_refused_unless_unchecked(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table_of_ten(uri)
    outside = pa.table({"id": pa.array([1, 99], pa.int64()), "p": [1, 1]})
    with pytest.raises(deltalog.ReplaceWhereMismatchError) as refused:
        deltalog.write_table(uri, outside, mode="overwrite", predicate="id < 5")
    assert isinstance(refused.value, deltalog.ConstraintViolationError)
    assert "id" in str(refused.value.constraint)
    assert deltalog.DeltaTable(uri).latest_version() == 0
    deltalog.write_table(uri, outside, mode="overwrite", predicate="id < 5", predicate_check=False)
    assert ids(uri) == [1, 5, 6, 7, 8, 9, 99]


def test_no_matching_row_still_appends_and_unknown_columns_are_refused(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table_of_ten(uri)
    new = pa.table({"id": pa.array([1000], pa.int64()), "p": [0]})
    deltalog.write_table(uri, new, mode="overwrite", predicate="id > 500")
    assert ids(uri) == [*range(10), 1000]
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.write_table(uri, new, mode="overwrite", predicate="missing > 500")
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.write_table(
            uri, new, mode="overwrite", predicate="id > 500", schema_mode="overwrite"
        )
    assert deltalog.DeltaTable(uri).latest_version() == 1


def test_row_tracking_keeps_ids_of_copied_rows(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    table_of_ten(uri, **{"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "false"})
    before = deltalog.DeltaTable(uri).snapshot().scan(row_tracking=True).to_pyarrow().to_pylist()
    kept = {row["id"]: row["row_id"] for row in before if row["id"] != 2}
    new = pa.table({"id": pa.array([2], pa.int64()), "p": [0]})
    deltalog.write_table(uri, new, mode="overwrite", predicate="id = 2")
    after = deltalog.DeltaTable(uri).snapshot().scan(row_tracking=True).to_pyarrow().to_pylist()
    assert {row["id"]: row["row_id"] for row in after if row["id"] != 2} == kept
    fresh = next(row["row_id"] for row in after if row["id"] == 2)
    assert fresh not in kept.values()
    assert fresh >= 10
