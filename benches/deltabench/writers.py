"""The table of the concurrent writers scenario (``writers_8``): one empty table on the local
file system that writer processes append to (``engines.py``'s ``concurrent_append``).

:func:`fresh_writers_table` writes ``writers_8/table/_delta_log/00000000000000000000.json``
under the data folder, anew on every call: ``protocol`` (1, 2), ``metaData`` of
:data:`WRITER_SCHEMA` (no partitions, no properties) and no files. Version 0 is dated now,
so that no writer's metadata cleanup finds it expired.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WRITER_SCHEMA", "WritersTable", "fresh_writers_table"]

#: The columns each writer appends (name, Delta type); ``engines._writer_rows`` builds them.
WRITER_SCHEMA = (("id", "long"), ("value", "double"), ("name", "string"))


@dataclass(frozen=True)
class WritersTable:
    """The empty table ``writers`` processes each append ``commits`` times ``rows`` rows to."""

    path: Path
    writers: int
    commits: int
    rows: int

    @property
    def total_commits(self) -> int:
        return self.writers * self.commits


def fresh_writers_table(data_dir: Path, writers: int, commits: int, rows: int) -> WritersTable:
    """The table at version 0 (see the module doc), whatever an earlier run left there."""
    path = Path(data_dir) / "writers_8" / "table"
    shutil.rmtree(path, ignore_errors=True)
    now_ms = int(time.time() * 1000)
    schema = {
        "type": "struct",
        "fields": [
            {"name": name, "type": kind, "nullable": True, "metadata": {}}
            for name, kind in WRITER_SCHEMA
        ],
    }
    actions = [
        {
            "commitInfo": {
                "timestamp": now_ms,
                "operation": "CREATE TABLE",
                "operationParameters": {"partitionBy": "[]"},
                "isBlindAppend": True,
                "engineInfo": "deltabench-generator/1",
            }
        },
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema, separators=(",", ":")),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": now_ms,
            }
        },
    ]
    commit = path / "_delta_log" / f"{0:020d}.json"
    commit.parent.mkdir(parents=True)
    commit.write_text("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions))
    return WritersTable(path, writers, commits, rows)
