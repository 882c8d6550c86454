"""Real tables for the row-level change scenarios (``delete_1g``, ``merge_1g``): Parquet data
files and a one-commit log, twice (with and without deletion vectors), and a merge source.

:func:`cached_rows_table` writes, under ``cache_dir/<name>-<hash>/``:

- ``cow/``: ``files`` zstd Parquet files of :data:`generate.DATA_SCHEMA` rows (file ``i`` holds
  the ids ``i * rows_per_file ..``, one row group), and ``_delta_log/00000000000000000000.json``
  with ``protocol`` (1, 2), ``metaData`` and one ``add`` per file carrying the statistics Delta
  on Spark writes ("Per-file Statistics": ``numRecords``, ``minValues`` and ``maxValues`` of
  every column but the boolean, ``nullCount`` of every column);
- ``dv/``: the same data files (hard links, or copies where links are refused) and the same
  log, with ``delta.enableDeletionVectors=true`` and the protocol (3, 7) with the
  ``deletionVectors`` reader and writer feature ("Deletion Vectors");
- ``source.arrow``: the merge source, an Arrow IPC file of 1% of the rows: new values for the
  ids ``k * 200 + 100`` (half of it, spread over every file) and as many new ids after the
  table's last one.

The delete predicate ``qty = 7`` selects about 0.1% of the rows, in every file. A marker file
written last holds the counts; a complete folder is reused. A pure function of the arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .generate import BASE_TIMESTAMP_MS, DATA_SCHEMA, GENERATOR_VERSION, data_batch

__all__ = [
    "DELETE_PREDICATE",
    "MERGE_ON",
    "RowsTable",
    "cached_rows_table",
    "large_merge_counts",
    "source_parquet",
]

#: Deletes about 0.1% of the rows (``qty`` is uniform in [0, 1000)), spread over every file.
DELETE_PREDICATE = "qty = 7"
#: The merge condition, with the aliases ``t`` (the table) and ``s`` (the source).
MERGE_ON = "t.id = s.id"
#: Every ``UPDATE_STRIDE``-th id is updated by the merge; as many new ids are inserted.
UPDATE_STRIDE = 200
_MARKER_NAME = ".deltabench-rows-complete.json"
_DELTA_TYPES = {
    "id": "long",
    "value": "double",
    "name": "string",
    "ts": "timestamp",
    "qty": "integer",
    "flag": "boolean",
}


@dataclass(frozen=True)
class RowsTable:
    """A generated row-level change table pair and what the operations should do to it."""

    path: Path  # the folder holding both tables and the source
    rows: int
    files: int
    data_bytes: int  # the Parquet data files' bytes (one table's)
    deleted_rows: int  # rows DELETE_PREDICATE matches
    updated_rows: int  # source rows whose id is in the table
    inserted_rows: int  # source rows whose id is not

    @property
    def cow_path(self) -> Path:
        """The table without deletion vectors (deletes and merges rewrite files)."""
        return self.path / "cow"

    @property
    def dv_path(self) -> Path:
        """The same table with ``delta.enableDeletionVectors=true``."""
        return self.path / "dv"

    @property
    def source_path(self) -> Path:
        """The merge source (Arrow IPC)."""
        return self.path / "source.arrow"

    @property
    def source_parquet_path(self) -> Path:
        """The merge source as one zstd Parquet file, for Spark (see :func:`source_parquet`)."""
        return self.path / "source.parquet"


def cached_rows_table(
    cache_dir: Path, name: str, rows: int, files: int, seed: int = 11
) -> RowsTable:
    """The tables of ``rows`` rows in ``files`` files at ``cache_dir/<name>-<hash>``, written
    unless a complete earlier write is there; ``rows`` must be a multiple of ``files`` and of
    ``2 * UPDATE_STRIDE``."""
    if rows % files or rows % (2 * UPDATE_STRIDE):
        raise ValueError(f"{rows} rows must split evenly into {files} files and source strides")
    text = json.dumps({"generator": GENERATOR_VERSION, "rows": rows, "files": files, "seed": seed})
    root = Path(cache_dir) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    marker = root / _MARKER_NAME
    if not marker.is_file():
        shutil.rmtree(root, ignore_errors=True)
        counts = _write(root, rows, files, seed)
        marker.write_text(json.dumps(counts))
    counts = json.loads(marker.read_text())
    return RowsTable(root.resolve(), rows, files, **counts)


def _write(root: Path, rows: int, files: int, seed: int) -> dict[str, int]:
    cow = root / "cow"
    (cow / "_delta_log").mkdir(parents=True)
    random = np.random.default_rng(seed)
    per_file = rows // files
    adds, deleted, data_bytes = [], 0, 0
    for index in range(files):
        batch = data_batch(random, index * per_file, per_file)
        relative = f"part-{index:05d}-{_uuid(seed, index)}-c000.zstd.parquet"
        pq.write_table(
            pa.Table.from_batches([batch]), cow / relative, compression="zstd", row_group_size=None
        )
        size = (cow / relative).stat().st_size
        data_bytes += size
        deleted += int(pc.sum(pc.equal(batch.column("qty"), 7)).as_py() or 0)
        adds.append(_add(relative, size, batch))
    _write_log(cow, adds, seed, deletion_vectors=False)
    _link_table(cow, root / "dv", adds)
    _write_log(root / "dv", adds, seed, deletion_vectors=True)
    updated = _write_source(root / "source.arrow", rows, random)
    return {
        "data_bytes": data_bytes,
        "deleted_rows": deleted,
        "updated_rows": updated,
        "inserted_rows": updated,
    }


def _uuid(seed: int, index: int) -> uuid.UUID:
    digest = hashlib.sha256(f"deltabench-rows/{seed}/{index}".encode()).digest()
    return uuid.UUID(bytes=digest[:16], version=4)


def _add(relative: str, size: int, batch: pa.RecordBatch) -> dict[str, Any]:
    minimum, maximum, nulls = {}, {}, {}
    for name in DATA_SCHEMA.names:
        column = batch.column(name)
        nulls[name] = column.null_count
        if name == "flag":
            continue
        bounds = pc.min_max(column)
        minimum[name] = _stat_value(bounds["min"])
        maximum[name] = _stat_value(bounds["max"])
    stats = {
        "numRecords": batch.num_rows,
        "minValues": minimum,
        "maxValues": maximum,
        "nullCount": nulls,
    }
    return {
        "path": relative,
        "partitionValues": {},
        "size": size,
        "modificationTime": BASE_TIMESTAMP_MS,
        "dataChange": True,
        "stats": json.dumps(stats, separators=(",", ":")),
    }


def _stat_value(scalar: pa.Scalar) -> Any:
    """A statistic as Delta on Spark writes it: timestamps as UTC text in milliseconds."""
    if pa.types.is_timestamp(scalar.type):
        micros = scalar.cast(pa.int64()).as_py()
        text = np.datetime64(micros // 1000, "ms").astype(str)
        return f"{text}Z"
    return scalar.as_py()


def _write_log(table: Path, adds: list[dict[str, Any]], seed: int, deletion_vectors: bool) -> None:
    if deletion_vectors:
        protocol: dict[str, Any] = {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
        configuration = {"delta.enableDeletionVectors": "true"}
    else:
        protocol = {"minReaderVersion": 1, "minWriterVersion": 2}
        configuration = {}
    schema = {
        "type": "struct",
        "fields": [
            {"name": name, "type": kind, "nullable": True, "metadata": {}}
            for name, kind in _DELTA_TYPES.items()
        ],
    }
    metadata = {
        "id": str(_uuid(seed, -1)),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema, separators=(",", ":")),
        "partitionColumns": [],
        "configuration": configuration,
        "createdTime": BASE_TIMESTAMP_MS,
    }
    commit_info = {
        "timestamp": BASE_TIMESTAMP_MS,
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": "[]"},
        "isBlindAppend": True,
        "engineInfo": "deltabench-generator/1",
    }
    actions = [
        {"commitInfo": commit_info},
        {"protocol": protocol},
        {"metaData": metadata},
        *({"add": add} for add in adds),
    ]
    commit = table / "_delta_log" / f"{0:020d}.json"
    commit.parent.mkdir(parents=True, exist_ok=True)
    commit.write_text("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions))
    os.utime(commit, (BASE_TIMESTAMP_MS / 1000, BASE_TIMESTAMP_MS / 1000))


def _link_table(source: Path, target: Path, adds: list[dict[str, Any]]) -> None:
    """The data files of ``source`` in ``target``: hard links where the filesystem allows."""
    target.mkdir(parents=True)
    for add in adds:
        try:
            os.link(source / add["path"], target / add["path"])
        except OSError:
            shutil.copy2(source / add["path"], target / add["path"])


def _write_source(path: Path, rows: int, random: np.random.Generator) -> int:
    """The merge source (see the module doc); the number of rows updating existing ids."""
    updates = rows // UPDATE_STRIDE
    fresh = data_batch(random, rows, 2 * updates)
    updated_ids = np.arange(updates, dtype=np.int64) * UPDATE_STRIDE + UPDATE_STRIDE // 2
    ids = pa.array(np.concatenate([updated_ids, np.arange(rows, rows + updates, dtype=np.int64)]))
    source = pa.Table.from_batches([fresh]).set_column(0, "id", ids)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, DATA_SCHEMA) as writer:
        writer.write_table(source)
    return updates


def source_parquet(table: RowsTable) -> Path:
    """The merge source as a Parquet file Spark reads (the rows of ``source.arrow``), written
    next to it once (through a temporary name, so a complete file is reused)."""
    path = table.source_parquet_path
    if not path.is_file():
        with pa.OSFile(str(table.source_path)) as source:
            rows = pa.ipc.open_file(source).read_all()
        partial = path.with_suffix(".parquet.partial")
        pq.write_table(rows, partial, compression="zstd")
        partial.replace(path)
    return path


def large_merge_counts(table_rows: int, source_rows: int) -> dict[str, int]:
    """What the large merge (``spark_merge_large``) does to a table of ``table_rows`` rows
    (ids ``0..table_rows``) with a source of ``source_rows`` rows generated in Spark: the first
    half of the source updates the ids ``k * table_rows // half`` (spread over every file),
    the second half inserts the new ids ``table_rows + k``."""
    half = source_rows // 2
    if half > table_rows or source_rows % 2:
        raise ValueError(f"a source of {source_rows} rows does not fit a {table_rows}-row table")
    return {"rows": table_rows + half, "updated": half, "inserted": half}
