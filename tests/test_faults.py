"""Writer processes killed with SIGKILL at seeded random moments (reliability notes §6.3).

Each writer makes blind appends tagged in ``commitInfo`` and records an acknowledgement in
its own file after each commit returned. The test kills every writer at a random delay, then
checks the table: it opens, its versions are contiguous, every commit file is whole JSON,
every acknowledged append is in the log exactly once, an append killed before its
acknowledgement is there at most once, and every data file the table references exists
(files written by a killed writer and never committed may lie around unreferenced).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog

TRIALS = 6
WRITERS = 4

WRITER = """
import sys
import pyarrow as pa
import deltalog

uri, writer, acks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(acks, "a") as out:
    for seq in range(10_000):
        rows = pa.table({"writer": [writer], "seq": [seq]})
        result = deltalog.write_table(uri, rows, commit_info={"killTag": f"{writer}-{seq}"})
        out.write(f"{writer}-{seq} {result.version}\\n")
        out.flush()
"""


def spawn_writer(uri: str, writer: int, acks: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, uri, str(writer), str(acks)],
        env=os.environ.copy(),
        stderr=subprocess.DEVNULL,
    )


def acknowledged(acks: Path) -> dict[str, int]:
    """The tags and versions a writer recorded; a line cut off by the kill is no ack."""
    if not acks.exists():
        return {}
    lines = acks.read_text().split("\n")
    return {tag: int(version) for tag, version in (line.split() for line in lines[:-1])}


def log_tags(table_dir: Path) -> tuple[list[int], Counter[str], dict[str, int]]:
    """The commit versions in the log (every file must be whole JSON lines), how often each
    kill tag appears and the version holding it."""
    versions = []
    tags: Counter[str] = Counter()
    where: dict[str, int] = {}
    for path in sorted((table_dir / "_delta_log").glob("*.json")):
        versions.append(int(path.name.removesuffix(".json")))
        for line in path.read_text().splitlines():
            action = json.loads(line)
            tag = action.get("commitInfo", {}).get("killTag")
            if tag is not None:
                tags[tag] += 1
                where[tag] = versions[-1]
    return versions, tags, where


def wait_for_a_commit(table_dir: Path) -> None:
    """Waits until the writers are past their start-up: a commit after version 0 exists."""
    deadline = time.monotonic() + 120
    while not (table_dir / "_delta_log" / f"{1:020}.json").exists():
        assert time.monotonic() < deadline, "no writer committed within two minutes"
        time.sleep(0.05)


@pytest.mark.parametrize("seed", range(TRIALS))
def test_writers_killed_at_random_moments_leave_a_whole_table(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    table_dir = tmp_path / "t"
    uri = str(table_dir)
    first = deltalog.write_table(uri, pa.table({"writer": [-1], "seq": [0]}))
    assert first.version == 0
    acks = [tmp_path / f"acks-{w}" for w in range(WRITERS)]
    writers = [spawn_writer(uri, w, acks[w]) for w in range(WRITERS)]
    wait_for_a_commit(table_dir)
    kill_at = sorted((rng.uniform(0.0, 2.0), w) for w in range(WRITERS))
    started = time.monotonic()
    for delay, w in kill_at:
        time.sleep(max(0.0, delay - (time.monotonic() - started)))
        writers[w].send_signal(signal.SIGKILL)
    for process in writers:
        process.wait(timeout=60)
        assert process.returncode == -signal.SIGKILL

    versions, tags, where = log_tags(table_dir)
    assert versions == list(range(len(versions))), "versions are not contiguous"
    table = deltalog.DeltaTable(uri)
    assert table.latest_version() == versions[-1]
    acked = {tag: v for path in acks for tag, v in acknowledged(path).items()}
    for tag, version in acked.items():
        assert tags[tag] == 1, f"acknowledged {tag} is in the log {tags[tag]} times"
        assert where[tag] == version, f"{tag} was acknowledged at {version}, not {where[tag]}"
    assert acked, "no writer committed before it was killed"
    assert all(count == 1 for count in tags.values()), "an append committed twice"

    snapshot = table.snapshot()
    for file in snapshot.files().to_pylist():
        assert (table_dir / file["path"]).is_file(), f"{file['path']} is referenced but absent"
    rows = deltalog.read_table(uri).to_pylist()
    written = Counter(f"{row['writer']}-{row['seq']}" for row in rows if row["writer"] >= 0)
    assert written == tags, "the rows and the committed appends differ"
