"""Checkpoints of every kind read back through our reader, the post-commit checkpoint and
version checksum, checksum validation, metadata cleanup and log compaction, from Python and
from the command line."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog import cli

DAY_SECONDS = 24 * 60 * 60


def rows(uri: Path, version: int | None = None) -> list[dict[str, object]]:
    table = deltalog.read_table(str(uri), version=version).to_pylist()
    return sorted(table, key=lambda row: json.dumps(row, default=str, sort_keys=True))


def log_files(uri: Path) -> list[str]:
    return sorted(p.name for p in (uri / "_delta_log").iterdir() if p.is_file())


def history_table(
    uri: Path, commits: int, configuration: dict[str, str] | None = None
) -> dict[int, list[dict[str, object]]]:
    """A partitioned table of ``commits`` + 1 versions (appends, one overwrite of a
    partition); returns the rows of every version."""
    deltalog.write_table(
        uri,
        pa.table({"id": [0], "part": [0]}),
        partition_by=["part"],
        configuration=configuration,
    )
    for version in range(1, commits + 1):
        data = pa.table({"id": [version, version + 100], "part": [version % 3, version % 3]})
        if version == 4:
            deltalog.write_table(uri, data, mode="overwrite", predicate="part = 1")
        else:
            deltalog.write_table(uri, data, mode="append")
    return {version: rows(uri, version) for version in range(commits + 1)}


@pytest.mark.parametrize(
    ("kind", "configuration", "options"),
    [
        ("classic", None, {}),
        ("multi-part", None, {"part_size": 3}),
        ("v2", {"delta.checkpointPolicy": "v2"}, {}),
        ("v2", {"delta.checkpointPolicy": "v2"}, {"v2_format": "parquet"}),
        ("v2", {"delta.checkpointPolicy": "v2"}, {"v2_sidecars": False}),
        ("v2", {"delta.checkpointPolicy": "v2"}, {"classic_compat": True}),
        ("classic", {"delta.feature.v2Checkpoint": "supported"}, {"part_size": 3}),
        (
            "classic",
            {
                "delta.checkpoint.writeStatsAsJson": "false",
                "delta.checkpoint.writeStatsAsStruct": "true",
            },
            {},
        ),
    ],
)
def test_every_kind_of_checkpoint_reads_back(
    tmp_path: Path, kind: str, configuration: dict[str, str] | None, options: dict[str, object]
) -> None:
    uri = tmp_path / "t"
    expected = history_table(uri, 6, configuration)
    table = deltalog.DeltaTable(str(uri))
    written = table.checkpoint(**options)  # type: ignore[arg-type]
    assert written.kind == kind
    assert written.version == 6
    assert written.num_add_files == table.snapshot().num_files
    hint = json.loads((uri / "_delta_log" / "_last_checkpoint").read_text())
    assert hint["version"] == 6
    assert hint["numOfAddFiles"] == written.num_add_files
    assert hint["size"] == written.num_actions
    assert "checksum" in hint
    assert "checkpointSchema" in hint
    # The checkpoint is used: the commits before it are no longer needed to read it.
    for version in range(6):
        (uri / "_delta_log" / f"{version:020}.json").unlink()
    assert rows(uri) == expected[6]
    snapshot = deltalog.DeltaTable(str(uri)).snapshot()
    assert snapshot.version == 6
    assert snapshot.num_files == written.num_add_files


def test_a_v2_checkpoint_is_a_json_manifest_with_sidecars_by_default(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    history_table(uri, 3, {"delta.checkpointPolicy": "v2"})
    written = deltalog.DeltaTable(str(uri)).checkpoint(part_size=2)
    assert written.files[0].endswith(".json")
    assert ".checkpoint." in written.files[0]
    assert written.num_add_files == 4
    assert len(written.sidecars) == 2  # 4 adds, 2 per sidecar
    assert not (uri / "_delta_log" / f"{3:020}.checkpoint.parquet").exists()


def test_the_classic_named_copy_is_read_when_the_uuid_named_one_is_gone(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    expected = history_table(uri, 4, {"delta.checkpointPolicy": "v2"})
    table = deltalog.DeltaTable(str(uri))
    written = table.checkpoint(classic_compat=True)
    manifest, copy = (Path(f.removeprefix("file://")).name for f in written.files)
    assert copy == f"{4:020}.checkpoint.parquet"
    names = pq.read_schema(str(uri / "_delta_log" / copy)).names
    assert {"checkpointMetadata", "sidecar"} <= set(names)
    sidecars = pq.read_table(str(uri / "_delta_log" / copy), columns=["sidecar"])
    assert sidecars["sidecar"].drop_null().length() == len(written.sidecars)
    for version in range(4):
        (uri / "_delta_log" / f"{version:020}.json").unlink()
    assert rows(uri) == expected[4]
    (uri / "_delta_log" / manifest).unlink()
    assert rows(uri) == expected[4]


def test_cleanup_writes_the_classic_copy_of_a_v2_checkpoint_first(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    configuration = {
        "delta.checkpointPolicy": "v2",
        "delta.logRetentionDuration": "interval 2 days",
        "delta.checkpointInterval": "100",
    }
    expected = history_table(uri, 5, configuration)
    table = deltalog.DeltaTable(str(uri))
    table.checkpoint(3)
    newest = table.checkpoint()
    for version in range(5):
        age(uri / "_delta_log" / f"{version:020}.json", 10)
    result = table.cleanup_metadata()
    assert result.oldest_kept_version == 3
    assert result.compat_checkpoint is not None
    assert result.compat_checkpoint.endswith(f"{5:020}.checkpoint.parquet")
    manifest = Path(newest.files[0].removeprefix("file://")).name
    (uri / "_delta_log" / manifest).unlink()
    assert rows(uri) == expected[5]
    assert table.cleanup_metadata().compat_checkpoint is None


def test_a_checkpoint_of_an_older_version_time_travels(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    expected = history_table(uri, 5)
    table = deltalog.DeltaTable(str(uri))
    table.checkpoint(3)
    for version in range(3):
        (uri / "_delta_log" / f"{version:020}.json").unlink()
    for version in (3, 4, 5):
        assert rows(uri, version) == expected[version]


def test_checkpoint_files_are_sparks_layout(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    history_table(uri, 2)
    written = deltalog.DeltaTable(str(uri)).checkpoint()
    schema = pq.read_schema(str(uri / "_delta_log" / f"{written.version:020}.checkpoint.parquet"))
    assert schema.names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    add = schema.field("add").type
    names = [add.field(i).name for i in range(add.num_fields)]
    assert {"stats", "stats_parsed", "partitionValues_parsed"} <= set(names)
    remove = schema.field("remove").type
    assert "stats" not in [remove.field(i).name for i in range(remove.num_fields)]
    assert all(schema.field(name).nullable for name in schema.names)


def test_commits_checkpoint_every_interval_and_write_a_checksum_each(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    first = deltalog.write_table(uri, pa.table({"id": [0]}))
    assert first.post_commit.checksum is not None
    for version in range(1, 12):
        result = deltalog.write_table(uri, pa.table({"id": [version]}), mode="append")
        assert result.post_commit.errors == ()
        assert result.post_commit.checksum is not None
        assert (result.post_commit.checkpoint is not None) == (version == 10)
    names = log_files(uri)
    assert [n for n in names if "checkpoint." in n] == [f"{10:020}.checkpoint.parquet"]
    assert [n for n in names if n.endswith(".crc")] == [f"{v:020}.crc" for v in range(12)]
    table = deltalog.DeltaTable(str(uri))
    for version in range(12):
        snapshot = table.snapshot(version)
        assert snapshot.validate_checksum()
        checksum = snapshot.version_checksum()
        assert checksum.stored
        assert checksum.num_files == snapshot.num_files
        assert checksum.table_size_bytes == snapshot.total_size
        assert checksum.histogram is not None
        assert sum(checksum.histogram.file_counts) == snapshot.num_files


def test_checkpoint_interval_follows_the_table_property(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(
        uri, pa.table({"id": [0]}), configuration={"delta.checkpointInterval": "3"}
    )
    checkpoints = []
    for version in range(1, 7):
        result = deltalog.write_table(uri, pa.table({"id": [version]}), mode="append")
        if result.post_commit.checkpoint is not None:
            checkpoints.append(result.post_commit.checkpoint.version)
    assert checkpoints == [3, 6]


def test_post_commit_checkpoints_build_on_the_previous_one(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    configuration = {"delta.checkpointInterval": "3", "delta.enableDeletionVectors": "true"}
    data = pa.table({"id": [0, 1, 2], "part": ["a", "a", "b"]})
    results = [deltalog.write_table(uri, data, partition_by=["part"], configuration=configuration)]
    table = deltalog.DeltaTable(str(uri))
    for step in [3, 4, 5, "id = 1", 6, "id = 3"]:
        if isinstance(step, str):
            results.append(table.delete(step))  # a deletion vector, then a whole file
        else:
            data = pa.table({"id": [step], "part": ["b"]})
            results.append(deltalog.write_table(uri, data, mode="append"))
    written = {
        r.post_commit.checkpoint.version: r.post_commit.checkpoint.incremental_from
        for r in results
        if r.post_commit.checkpoint is not None
    }
    assert written == {3: None, 6: 3}
    names = [n for n in log_files(uri) if "checkpoint." in n]
    assert names == [f"{3:020}.checkpoint.parquet", f"{6:020}.checkpoint.parquet"]
    assert [row["id"] for row in rows(uri)] == [0, 2, 4, 5, 6]
    # Without the checkpoints, the log replayed from its commits gives the same rows.
    for name in names:
        (uri / "_delta_log" / name).unlink()
    (uri / "_delta_log" / "_last_checkpoint").unlink()
    assert [row["id"] for row in rows(uri)] == [0, 2, 4, 5, 6]


def test_a_write_can_leave_its_checkpoint_for_later(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [0]}))
    for version in range(1, 11):
        result = deltalog.write_table(
            uri, pa.table({"id": [version]}), mode="append", post_commit_checkpoint=False
        )
        assert result.post_commit.checkpoint is None
        assert result.post_commit.checkpoint_deferred is None
        assert result.post_commit.checksum is not None
    assert not [n for n in log_files(uri) if "checkpoint." in n]
    written = deltalog.DeltaTable(str(uri)).checkpoint()
    assert (written.version, written.incremental_from) == (10, None)


def test_a_wrong_checksum_file_is_reported(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1, 2]}))
    crc = uri / "_delta_log" / f"{0:020}.crc"
    content = json.loads(crc.read_text())
    content["tableSizeBytes"] += 1
    crc.write_text(json.dumps(content) + "\n")
    snapshot = deltalog.DeltaTable(str(uri)).snapshot()
    with pytest.raises(deltalog.ChecksumMismatchError) as raised:
        snapshot.validate_checksum()
    assert raised.value.path is not None
    assert raised.value.path.endswith(".crc")
    assert "tableSizeBytes" in str(raised.value)


def test_a_computed_checksum_when_there_is_no_file(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1, 2]}))
    (uri / "_delta_log" / f"{0:020}.crc").unlink()
    snapshot = deltalog.DeltaTable(str(uri)).snapshot()
    assert not snapshot.validate_checksum()
    checksum = snapshot.version_checksum()
    assert not checksum.stored
    assert checksum.num_files == 1
    assert json.loads(checksum.json)["numFiles"] == 1


def age(path: Path, days: float) -> None:
    then = time.time() - days * DAY_SECONDS
    os.utime(path, (then, then))


def test_cleanup_keeps_every_version_within_retention_readable(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    expected = history_table(uri, 8, {"delta.logRetentionDuration": "interval 2 days"})
    table = deltalog.DeltaTable(str(uri))
    table.checkpoint(4)
    for version in range(7):
        age(uri / "_delta_log" / f"{version:020}.json", 10)
    result = table.cleanup_metadata()
    assert result.oldest_kept_version == 4
    assert {Path(p).name for p in result.deleted} >= {f"{v:020}.json" for v in range(4)}
    for version in range(4, 9):
        assert rows(uri, version) == expected[version]
    with pytest.raises(deltalog.VersionNotFoundError):
        deltalog.read_table(str(uri), version=3)


def test_cleanup_deletes_nothing_without_an_old_checkpoint(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    history_table(uri, 3)
    before = log_files(uri)
    result = deltalog.DeltaTable(str(uri)).cleanup_metadata()
    assert result.oldest_kept_version is None
    assert result.deleted == ()
    assert log_files(uri) == before


def test_log_compaction_is_read_instead_of_its_commits(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    expected = history_table(uri, 6)
    written = deltalog.DeltaTable(str(uri)).compact_logs(2, 5)
    assert written.endswith(f"{2:020}.{5:020}.compacted.json")
    for version in range(2, 6):
        (uri / "_delta_log" / f"{version:020}.json").unlink()
    assert rows(uri) == expected[6]


def test_cli_checkpoint_and_cleanup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = tmp_path / "t"
    history_table(uri, 3)
    assert cli.main(["checkpoint", str(uri), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["version"] == 3
    assert written["kind"] == "classic"
    assert cli.main(["checkpoint", str(uri), "--version", "2", "--part-size", "2"]) == 0
    assert "multi-part" in capsys.readouterr().out
    assert cli.main(["cleanup", str(uri), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == []
    assert cli.main(["cleanup", str(uri)]) == 0
    assert "oldest kept version" in capsys.readouterr().out


def test_cleanup_dry_run_lists_without_deleting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = tmp_path / "t"
    history_table(uri, 6, {"delta.logRetentionDuration": "interval 2 days"})
    table = deltalog.DeltaTable(str(uri))
    table.checkpoint(4)
    for version in range(6):
        age(uri / "_delta_log" / f"{version:020}.json", 10)
    before = log_files(uri)
    planned = table.cleanup_metadata(dry_run=True)
    assert planned.oldest_kept_version == 4
    assert {Path(p).name for p in planned.deleted} >= {f"{v:020}.json" for v in range(4)}
    assert log_files(uri) == before
    assert cli.main(["cleanup", str(uri), "--dry-run", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["dry_run"] is True
    assert printed["deleted"] == list(planned.deleted)
    assert log_files(uri) == before
    assert table.cleanup_metadata().deleted == planned.deleted


def test_cli_checkpoint_writes_the_classic_named_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = tmp_path / "t"
    history_table(uri, 2, {"delta.checkpointPolicy": "v2"})
    assert cli.main(["checkpoint", str(uri), "--classic-compat", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["kind"] == "v2"
    assert written["files"][1].endswith(f"{2:020}.checkpoint.parquet")


def every_file(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (log and data) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("configuration", "options"),
    [
        (None, {}),
        (None, {"part_size": 3}),
        ({"delta.checkpointPolicy": "v2"}, {"part_size": 2}),
        ({"delta.checkpointPolicy": "v2"}, {"v2_sidecars": False, "classic_compat": True}),
    ],
)
def test_a_checkpoint_dry_run_writes_nothing_and_reports_the_write(
    tmp_path: Path, configuration: dict[str, str] | None, options: dict[str, object]
) -> None:
    uri = tmp_path / "t"
    history_table(uri, 6, configuration)
    table = deltalog.DeltaTable(str(uri))
    before = every_file(uri)
    planned = table.checkpoint(dry_run=True, **options)  # type: ignore[arg-type]
    assert every_file(uri) == before
    assert planned.dry_run
    assert planned.size_in_bytes == 0
    written = table.checkpoint(**options)  # type: ignore[arg-type]
    assert not written.dry_run
    assert (planned.kind, planned.version, planned.num_actions, planned.num_add_files) == (
        written.kind,
        written.version,
        written.num_actions,
        written.num_add_files,
    )
    assert len(planned.files) == len(written.files)
    assert len(planned.sidecars) == len(written.sidecars)
    if written.kind != "v2":
        assert planned.files == written.files
    else:
        assert Path(planned.files[0]).suffix == Path(written.files[0]).suffix


def test_cli_checkpoint_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = tmp_path / "t"
    history_table(uri, 3)
    before = every_file(uri)
    assert cli.main(["checkpoint", str(uri), "--dry-run", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["dry_run"] is True
    assert printed["kind"] == "classic"
    assert printed["files"][0].endswith(f"{3:020}.checkpoint.parquet")
    assert printed["size_in_bytes"] == 0
    assert cli.main(["checkpoint", str(uri), "--dry-run", "--part-size", "2"]) == 0
    captured = capsys.readouterr()
    assert "multi-part" in captured.out
    assert "files would be written" in captured.out
    assert "would be written" in captured.err
    assert every_file(uri) == before
    assert cli.main(["checkpoint", str(uri), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dry_run"] is False
