"""Snapshots open from the version's ``.crc`` file without replaying the log, fall back to
the log when the file is unusable, and checkpoints of a version that already has one."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import cli
from deltalog.exceptions import ChecksumMismatchError, CorruptLogError


def three_versions(uri: Path) -> None:
    """Versions 0..2, each with the ``.crc`` file our post-commit step writes."""
    for n in range(3):
        deltalog.write_table(uri, pa.table({"id": [n]}), mode="append")


def log_file(uri: Path, name: str) -> Path:
    return uri / "_delta_log" / name


def test_protocol_and_metadata_come_from_the_crc_without_replaying(tmp_path: Path) -> None:
    three_versions(tmp_path)
    expected = deltalog.DeltaTable(tmp_path).snapshot()
    schema, metadata = expected.schema, expected.metadata
    assert expected.num_files == 3
    for version in (0, 1):
        log_file(tmp_path, f"{version:020}.json").write_text("not a commit\n")
    table = deltalog.DeltaTable(tmp_path)
    assert table.schema() == schema
    assert table.metadata() == metadata
    assert table.protocol() == expected.protocol
    snapshot = table.snapshot()
    assert snapshot.version == 2
    assert snapshot.head_checksum is not None
    assert snapshot.head_checksum.endswith("00000000000000000002.crc")
    assert not snapshot.files_loaded
    # the file count and size come from the .crc too
    assert (snapshot.num_files, snapshot.total_size) == (3, expected.total_size)
    assert not snapshot.files_loaded
    with pytest.raises(CorruptLogError):
        snapshot.files()
    # a blind append reads no commit before the newest either
    deltalog.write_table(tmp_path, pa.table({"id": [3]}), mode="append")
    assert deltalog.DeltaTable(tmp_path).snapshot().head_checksum is not None
    with pytest.raises(CorruptLogError):
        deltalog.write_table(tmp_path, pa.table({"id": [9]}), mode="overwrite")


def test_the_file_list_is_replayed_when_first_needed(tmp_path: Path) -> None:
    three_versions(tmp_path)
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert not snapshot.files_loaded
    assert snapshot.num_files == 3
    assert not snapshot.files_loaded
    assert snapshot.files().to_pyarrow().num_rows == 3
    assert snapshot.files_loaded
    assert sorted(snapshot.scan().to_pyarrow()["id"].to_pylist()) == [0, 1, 2]
    assert snapshot.validate_checksum()


def test_a_crc_that_does_not_parse_falls_back_to_the_log(tmp_path: Path) -> None:
    three_versions(tmp_path)
    log_file(tmp_path, "00000000000000000002.crc").write_text('{"numFiles":')
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert snapshot.head_checksum is None
    assert snapshot.num_files == 3
    deltalog.write_table(tmp_path, pa.table({"id": [3]}), mode="append")
    assert deltalog.DeltaTable(tmp_path).snapshot().num_files == 4


def test_a_crc_the_replay_contradicts_is_a_mismatch(tmp_path: Path) -> None:
    three_versions(tmp_path)
    crc = log_file(tmp_path, "00000000000000000002.crc")
    checksum = json.loads(crc.read_text())
    checksum["metadata"]["description"] = "only in the crc"
    crc.write_text(json.dumps(checksum) + "\n")
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert snapshot.metadata.description == "only in the crc"
    with pytest.raises(ChecksumMismatchError, match=r"00000000000000000002\.crc"):
        snapshot.files()


def test_a_crc_the_newest_commit_contradicts_is_not_used(tmp_path: Path) -> None:
    three_versions(tmp_path)
    deltalog.DeltaTable(tmp_path).alter.set_properties({"comment": "from the log"})
    crc = log_file(tmp_path, "00000000000000000003.crc")
    crc.write_text(crc.read_text().replace("from the log", "from the crc"))
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert snapshot.head_checksum is None
    assert snapshot.metadata.description == "from the log"


def test_a_checkpoint_twice_at_one_version_is_rewritten(tmp_path: Path) -> None:
    three_versions(tmp_path)
    table = deltalog.DeltaTable(tmp_path)
    first = table.checkpoint()
    again = table.checkpoint()
    assert first.files == again.files
    assert first.num_actions == again.num_actions
    assert table.snapshot().num_files == 3


def test_the_file_count_and_size_are_counted_without_a_crc(tmp_path: Path) -> None:
    three_versions(tmp_path)
    with_crc = deltalog.DeltaTable(tmp_path).snapshot()
    sizes = (with_crc.num_files, with_crc.total_size)
    assert not with_crc.files_loaded
    log_file(tmp_path, "00000000000000000002.crc").unlink()
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert snapshot.head_checksum is None
    assert (snapshot.num_files, snapshot.total_size) == sizes
    assert snapshot.files_loaded
    assert sizes[1] == sum(snapshot.files().to_pyarrow()["size"].to_pylist())


def test_a_wrong_crc_file_count_is_served_until_the_file_list_is_loaded(tmp_path: Path) -> None:
    three_versions(tmp_path)
    crc = log_file(tmp_path, "00000000000000000002.crc")
    checksum = json.loads(crc.read_text())
    checksum["numFiles"] = 7
    crc.write_text(json.dumps(checksum) + "\n")
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert snapshot.num_files == 7
    assert snapshot.files().to_pyarrow().num_rows == 3
    assert snapshot.num_files == 3
    with pytest.raises(ChecksumMismatchError, match="numFiles"):
        snapshot.validate_checksum()


def test_cli_info_shows_the_file_count_and_size_from_the_crc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    three_versions(tmp_path)
    expected = deltalog.DeltaTable(tmp_path).snapshot()
    sizes = (expected.num_files, expected.total_size)
    # a replay would fail: info must not load the file list
    for version in (0, 1):
        log_file(tmp_path, f"{version:020}.json").write_text("not a commit\n")
    assert cli.main(["info", str(tmp_path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["num_files"], info["total_size"]) == sizes
    assert cli.main(["info", str(tmp_path)]) == 0
    assert f"{sizes[0]} (" in capsys.readouterr().out


def test_a_crc_listing_the_features_in_another_order_agrees(tmp_path: Path) -> None:
    """Feature lists are sets: Delta on Spark's ``.crc`` lists them in hash-set order, which
    made deltalog call its own checksum a mismatch (found by the differential test)."""
    configuration = {
        "delta.enableChangeDataFeed": "true",
        "delta.columnMapping.mode": "name",
        "delta.enableDeletionVectors": "true",
        "delta.appendOnly": "false",
    }
    deltalog.write_table(tmp_path, pa.table({"id": [1]}), configuration=configuration)
    deltalog.write_table(tmp_path, pa.table({"id": [2]}))
    crc = log_file(tmp_path, "00000000000000000001.crc")
    checksum = json.loads(crc.read_text())
    for key in ("readerFeatures", "writerFeatures"):
        assert len(checksum["protocol"][key]) >= 2
        checksum["protocol"][key].reverse()
    crc.write_text(json.dumps(checksum) + "\n")
    snapshot = deltalog.DeltaTable(tmp_path).snapshot()
    assert pa.table(snapshot.files()).num_rows == 2
    assert sorted(deltalog.read_table(str(tmp_path)).column("id").to_pylist()) == [1, 2]
