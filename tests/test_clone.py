"""Shallow clone from Python (``DeltaTable.clone``), as Delta on Spark's ``SHALLOW CLONE``:
a new table, or an empty one replaced, whose one ``CLONE`` commit references the source's
files by absolute paths, on real tables in temporary directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.exceptions import (
    InvalidArgumentError,
    OperationNotAllowedError,
    VersionNotFoundError,
)


def rows(uri: Path | str, version: int | None = None) -> list[dict[str, object]]:
    values = deltalog.read_table(str(uri), version=version).to_pylist()
    return sorted(values, key=lambda row: json.dumps(row, default=str, sort_keys=True))


def actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def of_kind(commit: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [action[kind] for action in commit if kind in action]


def log_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").iterdir())


def dv_source(uri: Path, configuration: dict[str, str] | None = None) -> None:
    """Version 0: ids 0..9 partitioned by ``p`` with deletion vectors; 1: id 3 deleted (a
    deletion vector); 2: ids 10 and 11 appended."""
    ids = list(range(10))
    conf = {"delta.enableDeletionVectors": "true", **(configuration or {})}
    data = pa.table({"id": ids, "p": [i % 2 for i in ids], "s": [f"v{i}" for i in ids]})
    deltalog.write_table(uri, data, partition_by=["p"], configuration=conf)
    deltalog.DeltaTable(uri).delete("id = 3")
    deltalog.write_table(uri, pa.table({"id": [10, 11], "p": [0, 1], "s": ["v10", "v11"]}))


def test_a_clone_reads_as_the_source_and_references_its_files(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dv_source(src)
    source = deltalog.DeltaTable(src)
    clone = source.clone(dst, properties={"foo": "bar"})
    assert isinstance(clone, deltalog.DeltaTable)
    assert clone.latest_version() == 0
    assert rows(dst) == rows(src)
    assert not list(dst.rglob("*.parquet"))  # nothing copied

    commit = actions(dst, 0)
    info = of_kind(commit, "commitInfo")[0]
    assert info["operation"] == "CLONE"
    assert info["operationParameters"] == {
        "source": f"delta.`file:{src}`",
        "sourceVersion": 2,
    }
    size = sum(f.stat().st_size for f in src.rglob("*.parquet"))
    live = source.snapshot().files().to_pyarrow()
    # Spark's six CLONE metrics, beside the numFiles/numOutputBytes/numOutputRows every
    # deltalog commit records.
    assert info["operationMetrics"] == {
        "numFiles": str(live.num_rows),
        "numOutputBytes": str(sum(live.column("size").to_pylist())),
        "numOutputRows": "12",  # the rows of the files, deleted ones included
        "sourceTableSize": str(sum(live.column("size").to_pylist())),
        "sourceNumOfFiles": str(live.num_rows),
        "numRemovedFiles": "0",
        "numCopiedFiles": "0",
        "removedFilesSize": "0",
        "copiedFilesSize": "0",
    }
    assert int(info["operationMetrics"]["sourceTableSize"]) <= size

    metadata = of_kind(commit, "metaData")[0]
    source_metadata = source.snapshot().metadata
    assert metadata["id"] != source_metadata.id
    assert metadata["partitionColumns"] == ["p"]
    source_created = of_kind(actions(src, 0), "metaData")[0]["createdTime"]
    assert metadata["createdTime"] == source_created
    assert metadata["configuration"] == {"delta.enableDeletionVectors": "true", "foo": "bar"}
    assert clone.protocol() == source.protocol()

    adds = of_kind(commit, "add")
    assert len(adds) == live.num_rows
    src_uri = source.uri
    for add in adds:
        assert add["path"].startswith(src_uri)
        assert add["dataChange"] is True
        assert "baseRowId" not in add
    vectors = [add["deletionVector"] for add in adds if "deletionVector" in add]
    assert len(vectors) == 1
    assert vectors[0]["storageType"] == "p"
    assert vectors[0]["pathOrInlineDv"].startswith(src_uri)
    assert (dst / "_delta_log").is_dir()


def test_a_clone_at_a_version_or_timestamp_has_that_version(tmp_path: Path) -> None:
    src = tmp_path / "src"
    dv_source(src)
    source = deltalog.DeltaTable(src)
    at_zero = source.clone(tmp_path / "v0", version=0)
    assert rows(at_zero.uri) == rows(src, 0)
    assert len(rows(at_zero.uri)) == 10
    info = of_kind(actions(tmp_path / "v0", 0), "commitInfo")[0]
    assert info["operationParameters"]["sourceVersion"] == 0

    stamp = source.snapshot(1).timestamp
    at_one = source.clone(tmp_path / "v1", timestamp=stamp)
    assert rows(at_one.uri) == rows(src, 1)
    info = of_kind(actions(tmp_path / "v1", 0), "commitInfo")[0]
    assert info["operationParameters"]["sourceVersion"] == 1


def test_a_clone_keeps_column_mapping_and_partitions(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dv_source(src, {"delta.columnMapping.mode": "name"})
    source = deltalog.DeltaTable(src)
    source.alter.rename_column("s", "renamed")
    clone = source.clone(dst)
    assert rows(dst) == rows(src)
    assert "renamed" in rows(dst)[0]
    metadata = clone.snapshot().metadata
    assert metadata.configuration["delta.columnMapping.mode"] == "name"
    assert metadata.schema_string == source.snapshot().metadata.schema_string
    assert metadata.partition_columns == ("p",)
    assert rows(dst, 0) == rows(src)
    with pytest.raises(OperationNotAllowedError, match="column mapping mode"):
        source.clone(tmp_path / "other", properties={"delta.columnMapping.mode": "none"})


def test_writes_to_the_clone_leave_the_source_alone(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dv_source(src)
    before, logs = rows(src), log_files(src)
    clone = deltalog.DeltaTable(src).clone(dst)
    deltalog.write_table(dst, pa.table({"id": [100], "p": [0], "s": ["new"]}))
    clone.delete("id = 0 OR id = 5")
    clone.update({"s": "'changed'"}, "id = 1")
    assert rows(src) == before
    assert log_files(src) == logs
    ids = sorted(int(str(row["id"])) for row in rows(dst))
    assert ids == sorted({r["id"] for r in before} - {0, 5} | {100})  # type: ignore[operator]
    assert [row["s"] for row in rows(dst) if row["id"] == 1] == ["changed"]


def test_vacuum_of_the_clone_keeps_the_source_files(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dv_source(src)
    before = sorted(str(p) for p in src.rglob("*") if p.is_file())
    clone = deltalog.DeltaTable(src).clone(dst)
    clone.delete()
    deltalog.write_table(dst, pa.table({"id": [7], "p": [1], "s": ["own"]}), mode="overwrite")
    deleted = clone.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert all(not name.startswith("file:") and ".." not in name for name in deleted)
    assert sorted(str(p) for p in src.rglob("*") if p.is_file()) == before
    assert len(rows(src)) == 11
    assert rows(dst) == [{"id": 7, "p": 1, "s": "own"}]


def test_an_existing_target_is_refused_unless_replaced_empty(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dv_source(src)
    source = deltalog.DeltaTable(src)
    deltalog.write_table(dst, pa.table({"x": [1]}), configuration={"keep": "no"})
    with pytest.raises(OperationNotAllowedError, match="already exists"):
        source.clone(dst)
    with pytest.raises(OperationNotAllowedError, match="NON_EMPTY_CLONE"):
        source.clone(dst, replace=True)
    target = deltalog.DeltaTable(dst)
    old_id = target.snapshot().metadata.id
    target.delete()
    replaced = source.clone(dst, replace=True, version=0)
    assert replaced.latest_version() == 2
    assert replaced.snapshot().metadata.id == old_id
    assert "keep" not in replaced.snapshot().metadata.configuration
    assert rows(dst) == rows(src, 0)
    assert of_kind(actions(dst, 2), "commitInfo")[0]["operation"] == "CLONE"

    other = tmp_path / "plain"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    with pytest.raises(OperationNotAllowedError, match="NON_EMPTY_LOCATION"):
        source.clone(other)


def test_row_tracking_and_clustering_are_the_target_s_own(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    data = pa.table({"id": list(range(6)), "k": [i % 3 for i in range(6)]})
    deltalog.write_table(
        src, data, cluster_by=["k"], configuration={"delta.enableRowTracking": "true"}
    )
    deltalog.write_table(src, pa.table({"id": [6], "k": [0]}))
    source = deltalog.DeltaTable(src)
    source.clone(dst)
    commit = actions(dst, 0)
    adds = of_kind(commit, "add")
    assert sorted(add["baseRowId"] for add in adds)[0] == 0
    assert {add["defaultRowCommitVersion"] for add in adds} == {0}
    domains = {d["domain"]: d for d in of_kind(commit, "domainMetadata")}
    source_clustering = source.snapshot().domain_metadata("delta.clustering")
    assert json.loads(domains["delta.clustering"]["configuration"]) == json.loads(
        str(source_clustering)
    )
    high = json.loads(domains["delta.rowTracking"]["configuration"])["rowIdHighWaterMark"]
    assert high == 6
    # The materialized row tracking columns are named anew, as Delta on Spark's clone does.
    key = "delta.rowTracking.materializedRowIdColumnName"
    configuration = of_kind(commit, "metaData")[0]["configuration"]
    assert configuration[key].startswith("_row-id-col-")
    assert configuration[key] != source.snapshot().metadata.configuration[key]
    assert rows(dst) == rows(src)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    deltalog.write_table(src, pa.table({"id": [1]}))
    source = deltalog.DeltaTable(src)
    with pytest.raises(InvalidArgumentError, match="onto itself"):
        source.clone(src)
    for nested in (src / "inner", tmp_path):
        with pytest.raises(InvalidArgumentError, match="inside the other"):
            source.clone(nested)
    with pytest.raises(InvalidArgumentError, match="not both"):
        source.clone(tmp_path / "a", version=0, timestamp="2020-01-01")
    with pytest.raises(InvalidArgumentError):
        source.clone(tmp_path / "a", version=-1)
    with pytest.raises(VersionNotFoundError):
        source.clone(tmp_path / "a", version=5)
    with pytest.raises(InvalidArgumentError, match="unknown Delta table property"):
        source.clone(tmp_path / "a", properties={"delta.noSuchThing": "1"})
    with pytest.raises(InvalidArgumentError, match="properties"):
        source.clone(tmp_path / "a", properties={"x": 1})  # type: ignore[dict-item]
    assert not (tmp_path / "a").exists()
