"""Table maintenance from Python: vacuum (retention, dry run, hidden and outside files),
optimize (compaction, Z-order, deletion vectors purged, appends racing it), restore and
convert_to_delta, on real tables in temporary directories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.exceptions import (
    InvalidArgumentError,
    MissingDataFilesError,
    OperationNotAllowedError,
)

DAY = 24 * 3600


def rows(uri: Path | str, version: int | None = None) -> list[dict[str, object]]:
    values = deltalog.read_table(str(uri), version=version).to_pylist()
    return sorted(values, key=lambda row: json.dumps(row, default=str, sort_keys=True))


def data_files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.parquet")
        if "_delta_log" not in p.parts and not p.name.startswith(".")
    )


def age(path: Path, days: float) -> None:
    when = time.time() - days * DAY
    os.utime(path, (when, when))


def commit_info(root: Path, version: int) -> dict[str, object]:
    first = (root / "_delta_log" / f"{version:020}.json").read_text().splitlines()[0]
    info: dict[str, object] = json.loads(first)["commitInfo"]
    return info


def small_appends(uri: Path, count: int, partitioned: bool = True) -> None:
    for i in range(count):
        part = ["a", "b"][i % 2]
        table = pa.table({"id": [i * 10 + j for j in range(10)], "part": [part] * 10})
        deltalog.write_table(uri, table, partition_by=["part"] if partitioned else None)


def test_vacuum_keeps_every_version_within_retention(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    small_appends(uri, 2)
    old_files = data_files(uri)
    deltalog.write_table(uri, pa.table({"id": [100], "part": ["a"]}), mode="overwrite")
    (uri / "stray.parquet").write_bytes(b"not referenced")
    (uri / "_tmp").mkdir()
    (uri / "_tmp" / "hidden.parquet").write_bytes(b"hidden")
    for name in [*old_files, "stray.parquet", "_tmp/hidden.parquet"]:
        age(uri / name, 30)
    table = deltalog.DeltaTable(uri)
    versions = {v: rows(uri, v) for v in range(3)}

    assert table.vacuum() == ["stray.parquet"]
    assert (uri / "stray.parquet").exists(), "a dry run deletes nothing"
    assert table.vacuum(dry_run=False) == ["stray.parquet"]
    assert not (uri / "stray.parquet").exists()
    for version, expected in versions.items():
        assert rows(uri, version) == expected
    history = pa.table(table.history()).to_pylist()
    assert [h["operation"] for h in history[:2]] == ["VACUUM END", "VACUUM START"]
    start = commit_info(uri, history[1]["version"])
    assert start["operationParameters"] == {
        "retentionCheckEnabled": True,
        "defaultRetentionMillis": 7 * DAY * 1000,
    }
    assert start["operationMetrics"]["numFilesToDelete"] == "1"  # type: ignore[index]
    end = commit_info(uri, history[0]["version"])
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert end["operationMetrics"]["numDeletedFiles"] == "1"  # type: ignore[index]
    assert (uri / "_tmp" / "hidden.parquet").exists()


def test_vacuum_refuses_a_short_retention_unless_told(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    small_appends(uri, 2)
    old_files = data_files(uri)
    deltalog.write_table(uri, pa.table({"id": [1], "part": ["a"]}), mode="overwrite")
    table = deltalog.DeltaTable(uri)
    with pytest.raises(OperationNotAllowedError, match="168 hours"):
        table.vacuum(retention_hours=1)
    with pytest.raises(InvalidArgumentError):
        table.vacuum(retention_hours=-1, enforce_retention_duration=False)
    deleted = table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert deleted == old_files
    assert data_files(uri) == [f for f in data_files(uri) if f not in old_files]
    assert rows(uri) == [{"id": 1, "part": "a"}]


def test_vacuum_never_leaves_the_table_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    pq.write_table(pa.table({"id": [7], "part": ["z"]}), outside / "far.parquet")
    neighbour = tmp_path / "t-neighbour.parquet"
    neighbour.write_bytes(b"x")
    age(outside / "far.parquet", 30)
    age(neighbour, 30)
    uri = tmp_path / "t"
    small_appends(uri, 1, partitioned=False)
    table = deltalog.DeltaTable(uri)
    tx = table.transaction("WRITE")
    far = (outside / "far.parquet").as_uri()
    size = (outside / "far.parquet").stat().st_size
    tx.add_files(pa.table({"path": [far], "size": [size], "num_records": [1]}))
    tx.commit()
    tx = table.transaction("DELETE")
    tx.remove_files(paths=[far])
    tx.commit()
    deleted = table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert deleted == []
    assert (outside / "far.parquet").exists()
    assert neighbour.exists()


def test_vacuum_racing_appends_loses_none(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.DeltaTable.create(uri, pa.schema([("worker", pa.int64()), ("i", pa.int64())]))
    count = 12
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(uri), "1", str(count)])
    table = deltalog.DeltaTable(uri)
    while racer.poll() is None:
        table.vacuum(retention_hours=1, dry_run=False, enforce_retention_duration=False)
        time.sleep(0.2)
    assert racer.wait(timeout=120) == 0
    seen = sorted((r["worker"], r["i"]) for r in rows(uri))
    assert seen == [(1, i) for i in range(count)]


def test_optimize_compacts_and_keeps_rows(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    small_appends(uri, 6)
    table = deltalog.DeltaTable(uri)
    before = rows(uri)
    assert table.snapshot().num_files == 6
    metrics = table.optimize()
    assert (metrics["numFilesRemoved"], metrics["numFilesAdded"]) == (6, 2)
    assert metrics["partitionsOptimized"] == 2
    assert metrics["filesAdded"]["totalFiles"] == 2
    assert table.snapshot().num_files == 2
    assert rows(uri) == before
    version = metrics["version"]
    info = commit_info(uri, version)
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"]["zOrderBy"] == "[]"  # type: ignore[index]
    assert info["operationMetrics"]["numRemovedFiles"] == "6"  # type: ignore[index]
    actions = (uri / "_delta_log" / f"{version:020}.json").read_text().splitlines()[1:]
    changes = [next(iter(json.loads(a).values()))["dataChange"] for a in actions]
    assert changes
    assert not any(changes)
    assert table.optimize()["version"] is None


def test_optimize_with_filter_and_z_order(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for i in range(4):
        x = [(i * 7 + j * 13) % 50 for j in range(25)]
        y = [(i * 11 + j * 3) % 50 for j in range(25)]
        part = ["a", "b"][i % 2]
        deltalog.write_table(
            uri, pa.table({"x": x, "y": y, "part": [part] * 25}), partition_by=["part"]
        )
    before = rows(uri)
    table = deltalog.DeltaTable(uri)
    metrics = table.optimize(filter="part = 'a'", z_order_by=["x", "y"])
    assert metrics["numFilesRemoved"] == 2
    assert metrics["zOrderBy"] == ["x", "y"]
    assert rows(uri) == before
    params = commit_info(uri, metrics["version"])["operationParameters"]
    assert params["zOrderBy"] == '["x","y"]'  # type: ignore[index]
    with pytest.raises(InvalidArgumentError):
        table.optimize(filter="x = 1")
    with pytest.raises(InvalidArgumentError):
        table.optimize(z_order_by=["nope"])


def test_optimize_clusters_a_clustered_table(tmp_path: Path) -> None:
    """A table Delta on Spark created with ``CLUSTER BY (id)`` (its first commit, as Spark
    writes it) takes appends, and OPTIMIZE clusters them; ``full`` needs clustering columns."""
    uri = tmp_path / "t"
    log = uri / "_delta_log"
    log.mkdir(parents=True)
    schema = {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
    domain = {"clusteringColumns": [["id"]], "domainName": "delta.clustering"}
    actions = [
        {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE"}},
        {
            "metaData": {
                "id": "c",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
            }
        },
        {
            "protocol": {
                "minReaderVersion": 1,
                "minWriterVersion": 7,
                "writerFeatures": ["domainMetadata", "clustering"],
            }
        },
        {
            "domainMetadata": {
                "domain": "delta.clustering",
                "configuration": json.dumps(domain),
                "removed": False,
            }
        },
    ]
    (log / f"{0:020}.json").write_text("\n".join(json.dumps(a) for a in actions))
    for start in (10, 0, 5):
        deltalog.write_table(uri, pa.table({"id": pa.array(range(start, start + 5), pa.int64())}))
    table = deltalog.DeltaTable(uri)
    metrics = table.optimize()
    assert metrics["clusterBy"] == ["id"]
    assert metrics["numFilesRemoved"] == 3
    assert sorted(int(str(row["id"])) for row in rows(uri)) == list(range(15))
    params = commit_info(uri, metrics["version"])["operationParameters"]
    assert params["clusterBy"] == '["id"]'  # type: ignore[index]
    assert table.optimize()["version"] is None
    with pytest.raises(InvalidArgumentError, match="ZORDER"):
        table.optimize(z_order_by=["id"])
    full = table.optimize(full=True)
    assert full["version"] is None
    plain = tmp_path / "plain"
    deltalog.write_table(plain, pa.table({"id": [1]}))
    with pytest.raises(InvalidArgumentError, match="FULL"):
        deltalog.DeltaTable(plain).optimize(full=True)


def test_optimize_purges_deletion_vectors(tmp_path: Path, golden_tables: object) -> None:
    source = golden_tables.root("dv-partitioned-with-checkpoint") / "delta"  # type: ignore[attr-defined]
    uri = tmp_path / "t"
    shutil.copytree(source, uri)
    table = deltalog.DeltaTable(uri)
    before = rows(uri)
    assert pa.table(table.snapshot().deletion_vectors()).num_rows > 0
    metrics = table.optimize()
    assert metrics["numDeletionVectorsRemoved"] > 0
    assert pa.table(table.snapshot().deletion_vectors()).num_rows == 0
    assert rows(uri) == before


RACER = """
import sys, pyarrow as pa, deltalog
uri, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    deltalog.write_table(uri, pa.table({"worker": [worker], "i": [i]}))
"""


@pytest.mark.parametrize("z_order_by", [None, ["id"]])
def test_optimize_keeps_row_ids_and_commit_versions(
    tmp_path: Path, z_order_by: list[str] | None
) -> None:
    uri = tmp_path / "t"
    config = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}
    for i in range(4):
        data = pa.table({"id": list(range(i * 10, i * 10 + 10)), "part": ["a", "b"] * 5})
        deltalog.write_table(uri, data, partition_by=["part"], configuration=config)
    table = deltalog.DeltaTable(uri)
    table.delete("id IN (3, 14, 25, 36, 7)")
    table.update({"id": "id + 1000"}, predicate="id = 11")

    def tracked() -> list[tuple[object, ...]]:
        scan = table.snapshot().scan(row_tracking=True)
        return sorted(
            (r["id"], r["row_id"], r["row_commit_version"]) for r in scan.to_pyarrow().to_pylist()
        )

    before = tracked()
    metrics = table.optimize(z_order_by=z_order_by)
    assert metrics["numFilesRemoved"] > 2
    assert table.snapshot().num_files == 2
    assert tracked() == before
    deltalog.write_table(uri, pa.table({"id": [99], "part": ["a"]}))
    after = tracked()
    new_id = next(r[1] for r in after if r[0] == 99)
    assert new_id not in {r[1] for r in before}
    assert len({r[1] for r in after}) == len(after)


def test_appends_racing_optimize_are_never_lost(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.DeltaTable.create(uri, pa.schema([("worker", pa.int64()), ("i", pa.int64())]))
    count = 15
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(uri), "1", str(count)])
    table = deltalog.DeltaTable(uri)
    while racer.poll() is None:
        table.optimize()
        time.sleep(0.05)
    assert racer.wait(timeout=120) == 0
    table.optimize()
    seen = sorted((r["worker"], r["i"]) for r in rows(uri))
    assert seen == [(1, i) for i in range(count)]
    assert table.snapshot().num_files == 1


def test_restore_equals_the_old_version(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1, 2]}))
    deltalog.write_table(uri, pa.table({"id": [3]}))
    deltalog.write_table(
        uri, pa.table({"id": [9], "extra": ["x"]}), mode="overwrite", schema_mode="overwrite"
    )
    table = deltalog.DeltaTable(uri)
    metrics = table.restore(1)
    assert (metrics["numRestoredFiles"], metrics["numRemovedFiles"]) == (2, 1)
    assert metrics["numOfFilesAfterRestore"] == 2
    assert rows(uri) == rows(uri, 1)
    assert table.snapshot().schema.names == ["id"]
    info = commit_info(uri, metrics["version"])
    assert info["operation"] == "RESTORE"
    assert info["operationParameters"] == {"version": 1, "timestamp": None}
    stamp = table.snapshot(0).timestamp
    again = table.restore(timestamp=stamp)
    assert again["restored_version"] == 0
    assert rows(uri) == [{"id": 1}, {"id": 2}]
    with pytest.raises(InvalidArgumentError):
        table.restore()
    with pytest.raises(InvalidArgumentError, match="newer than the latest"):
        table.restore(table.latest_version() + 1)


def test_restore_of_the_latest_version_commits_nothing(tmp_path: Path) -> None:
    """As Delta on Spark 4.4: no new version, no files moved (finding F4)."""
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1, 2]}))
    table = deltalog.DeltaTable(uri)
    metrics = table.restore(0)
    assert metrics["version"] is None
    assert (metrics["numRestoredFiles"], metrics["numRemovedFiles"]) == (0, 0)
    assert metrics["numOfFilesAfterRestore"] == 1
    assert table.latest_version() == 0
    assert rows(uri) == [{"id": 1}, {"id": 2}]


def test_restore_refuses_vacuumed_files(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1]}))
    deltalog.write_table(uri, pa.table({"id": [2]}), mode="overwrite")
    table = deltalog.DeltaTable(uri)
    table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    with pytest.raises(MissingDataFilesError) as raised:
        table.restore(0)
    assert raised.value.version == 0
    assert raised.value.paths is not None
    assert len(raised.value.paths) == 1
    assert rows(uri) == [{"id": 2}]


def test_convert_to_delta_refuses_partition_types_that_are_not_names(tmp_path: Path) -> None:
    folder = tmp_path / "t" / "year=2023"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1]}), folder / "part-0.parquet")
    with pytest.raises(InvalidArgumentError, match="partition_by must map"):
        deltalog.convert_to_delta(tmp_path / "t", partition_by={"year": 5})
    with pytest.raises(InvalidArgumentError, match="column `year`: unknown type `int`"):
        deltalog.convert_to_delta(tmp_path / "t", partition_by={"year": "int"})
    assert not (tmp_path / "t" / "_delta_log").exists()


def test_convert_to_delta(tmp_path: Path) -> None:
    uri = tmp_path / "parquet"
    for year, ids in [(2023, [1, 2]), (2024, [3])]:
        folder = uri / f"year={year}"
        folder.mkdir(parents=True)
        pq.write_table(
            pa.table({"id": ids, "name": [f"n{i}" for i in ids]}), folder / "part-0.parquet"
        )
    (uri / "_SUCCESS").write_bytes(b"")
    table = deltalog.convert_to_delta(uri, partition_by={"year": "integer"})
    snapshot = table.snapshot()
    assert snapshot.version == 0
    assert snapshot.partition_columns == ("year",)
    assert rows(uri) == [
        {"id": 1, "name": "n1", "year": 2023},
        {"id": 2, "name": "n2", "year": 2023},
        {"id": 3, "name": "n3", "year": 2024},
    ]
    info = commit_info(uri, 0)
    assert info["operation"] == "CONVERT"
    assert info["operationMetrics"]["numConvertedFiles"] == "2"  # type: ignore[index]
    files = pa.table(snapshot.files(with_stats=True)).to_pylist()
    assert sorted(f["num_records"] for f in files) == [1, 2]
    assert deltalog.convert_to_delta(uri).snapshot().version == 0
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.table({"a": [1]}), plain / "x.parquet")
    pq.write_table(pa.table({"b": ["z"]}), plain / "y.parquet")
    assert rows(deltalog.convert_to_delta(plain).uri) == [
        {"a": 1, "b": None},
        {"a": None, "b": "z"},
    ]


def test_cli_vacuum_optimize_restore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltalog.cli import main

    uri = tmp_path / "t"
    small_appends(uri, 3, partitioned=False)
    assert main(["optimize", str(uri), "--json"]) == 0
    optimized = json.loads(capsys.readouterr().out)
    assert optimized["numFilesRemoved"] == 3
    assert optimized["clusterBy"] == []
    # OPTIMIZE FULL needs a clustered table: a usage error.
    assert main(["optimize", str(uri), "--full"]) == 2
    assert "FULL" in capsys.readouterr().err
    assert main(["restore", str(uri), "--version", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["restored_version"] == 1
    assert rows(uri) == rows(uri, 1)
    assert main(["vacuum", str(uri), "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"dry_run": True, "files": []}
    assert main(["vacuum", str(uri), "--retention-hours", "0", "--no-retention-check"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split()) == 2
    assert "2 files deleted" in captured.err
    assert main(["vacuum", str(uri), "--retention-hours", "0"]) == 2
    assert "168 hours" in capsys.readouterr().err
    assert main(["restore", str(uri)]) == 2


def test_vacuum_on_a_table_with_the_vacuum_protocol_check(
    tmp_path: Path, golden_tables: object
) -> None:
    name = "basic-with-vacuum-protocol-check-feature"
    source = golden_tables.root(name) / "delta"  # type: ignore[attr-defined]
    uri = tmp_path / "t"
    shutil.copytree(source, uri)
    table = deltalog.DeltaTable(uri)
    features = table.snapshot().protocol.writer_features or ()
    assert "vacuumProtocolCheck" in features
    before = rows(uri)
    table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert rows(uri) == before


def every_file(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (log and data) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_optimize_dry_run_lists_the_files_and_changes_nothing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    small_appends(uri, 6)
    table = deltalog.DeltaTable(uri)
    before = every_file(uri)
    planned = table.optimize(dry_run=True)
    assert every_file(uri) == before
    assert planned["dry_run"] is True
    assert planned["version"] is None
    assert sorted(planned["filesToRewrite"]) == data_files(uri)
    assert (planned["numFilesAdded"], planned["filesAdded"]["totalFiles"]) == (0, 0)
    done = table.optimize()
    assert done["dry_run"] is False
    assert done["filesToRewrite"] == []
    removal_side = [
        "numFilesRemoved",
        "filesRemoved",
        "partitionsOptimized",
        "numBatches",
        "totalConsideredFiles",
        "totalFilesSkipped",
        "numDeletionVectorsRemoved",
        "numDeletionVectorRowsRemoved",
    ]
    assert {k: planned[k] for k in removal_side} == {k: done[k] for k in removal_side}
    assert table.optimize(dry_run=True)["filesToRewrite"] == []


def test_restore_dry_run_checks_and_commits_nothing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1, 2]}))
    deltalog.write_table(uri, pa.table({"id": [3]}))
    deltalog.write_table(uri, pa.table({"id": [9]}), mode="overwrite")
    table = deltalog.DeltaTable(uri)
    before = every_file(uri)
    planned = table.restore(0, dry_run=True)
    assert every_file(uri) == before
    assert planned["version"] is None
    assert planned["dry_run"] is True
    done = table.restore(0)
    assert done["version"] == 3
    assert done["dry_run"] is False
    assert {**planned, "version": 3, "dry_run": False} == done
    table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    with pytest.raises(MissingDataFilesError):
        table.restore(1, dry_run=True)


def test_cli_optimize_and_restore_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalog.cli import main

    uri = tmp_path / "t"
    small_appends(uri, 3, partitioned=False)
    before = every_file(uri)
    assert main(["optimize", str(uri), "--dry-run", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["dry_run"] is True
    assert printed["version"] is None
    assert sorted(printed["filesToRewrite"]) == data_files(uri)
    assert main(["optimize", str(uri), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert sorted(captured.out.split()) == data_files(uri)
    assert "3 files" in captured.err
    assert "would be rewritten" in captured.err
    assert main(["restore", str(uri), "--version", "1", "--dry-run", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["dry_run"] is True
    assert printed["version"] is None
    assert printed["restored_version"] == 1
    assert main(["restore", str(uri), "--version", "1", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "numRemovedFiles" in captured.out
    assert "would restore version 1" in captured.err
    assert every_file(uri) == before
