"""What the tests of the row-level operations (delete, update, merge, replaceWhere) share:
the table they start from and readers of the rows and commits they leave."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

import deltalog


def make(
    uri: Path,
    dv: bool,
    cdf: bool = False,
    partitioned: bool = True,
    extra: dict[str, str] | None = None,
    null_every: int | None = None,
) -> deltalog.DeltaTable:
    """A table at ``uri`` of 20 rows: ``id`` 0..19, ``p`` = ``id % 3`` (the partition column
    when ``partitioned``), ``s`` = ``"s<id>"`` (NULL where ``id`` is a multiple of
    ``null_every``), with deletion vectors (``dv``) and the change data feed (``cdf``) on or
    off and the table properties ``extra``."""
    data = pa.table(
        {
            "id": pa.array(range(20), pa.int64()),
            "p": pa.array([i % 3 for i in range(20)], pa.int64()),
            "s": [None if null_every and i % null_every == 0 else f"s{i}" for i in range(20)],
        }
    )
    configuration = {
        "delta.enableDeletionVectors": str(dv).lower(),
        "delta.enableChangeDataFeed": str(cdf).lower(),
        **(extra or {}),
    }
    deltalog.write_table(
        uri,
        data,
        partition_by=["p"] if partitioned else None,
        configuration=configuration,
    )
    return deltalog.DeltaTable(uri)


def ids(uri: Path | str, version: int | None = None) -> list[int]:
    """The ``id`` values of the table at ``uri`` (its latest version by default), sorted."""
    table = deltalog.read_table(str(uri), version=version)
    return sorted(table.column("id").to_pylist())


def commit_actions(uri: Path, version: int) -> list[dict[str, object]]:
    """The actions of commit ``version`` of the table at ``uri``, in file order."""
    text = (uri / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def commit_info(uri: Path, version: int) -> dict[str, object]:
    """The ``commitInfo`` of commit ``version`` of the table at ``uri``."""
    actions = commit_actions(uri, version)
    return next(a["commitInfo"] for a in actions if "commitInfo" in a)
