"""Synthetic Delta logs for the benchmarks: only ``_delta_log`` and deletion vector files.

A :class:`LogSpec` describes a table; :func:`write_table` writes it and returns a
:class:`TableInfo` (what the benchmarks need to know about it); :func:`cached_table` reuses a
complete earlier write. Everything written follows the Delta protocol
(/work/shared/spec/003_28ddc017242cebe6.txt) and mirrors what Delta on Spark writes:

- Version 0 is either a checkpoint holding ``checkpoint_files`` live files (the JSON commit of
  version 0 is absent, as in a log whose older entries were cleaned up) or a JSON commit with
  ``protocol`` and ``metaData``. Versions 1.. are JSON commits ("Delta Log Entries") with a
  ``commitInfo`` whose timestamp grows by a minute per version (the commit files' modification
  times match), ``adds_per_commit`` adds and ``removes_per_commit`` removes of live files.
- Checkpoints ("Checkpoints", "Checkpoint Specs", "Checkpoint Naming Scheme"): classic (V1
  spec, stats as JSON), classic with ``stats_parsed`` / ``partitionValues_parsed``, multi-part
  (clustered by Spark's hash partitioning of the path), and UUID-named V2 (JSON or parquet top
  file with ``checkpointMetadata`` and ``sidecar`` actions, file actions in ``_sidecars``).
  Parquet column layout, types and nesting copy Spark's; snappy compression, row groups of
  about 100k rows. ``_last_checkpoint`` carries the schema and the checksum ("Last Checkpoint
  File Schema", "JSON checksum").
- Per-file statistics ("Per-file Statistics"): ``numRecords``, ``minValues``, ``maxValues``,
  ``nullCount`` and ``tightBounds`` (false for files with a deletion vector), over columns of
  the types ``long``, ``double``, ``string``, ``date`` and ``timestamp`` (as Spark writes them:
  ``2023-11-14``, ``2023-11-14T22:13:20.000Z``).
- Streaming commits (``streaming``): what a Structured Streaming query writing to Delta on Spark
  commits: a ``commitInfo`` of operation ``STREAMING UPDATE`` with its metrics, then the
  query's ``txn`` action (the epoch as its version), then the removes and the adds.
- Deletion vectors ("Deletion Vectors"): inline (``i``) or in DV files under a random prefix
  (``u``), many vectors per file, see :mod:`deltabench.dv`.
- Log compaction files ("Log Compaction Files") over blocks of ``compaction_span`` commits.

Everything is a pure function of the spec (``seed`` included): file ``f`` (numbered in the
order files are added) always gets the same path, statistics and deletion vector.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import struct
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import dv

__all__ = [
    "CheckpointKind",
    "DvKind",
    "LogSpec",
    "TableInfo",
    "cached_table",
    "expected_live_files",
    "last_checkpoint_checksum",
    "write_blind_appends",
    "write_table",
]

CheckpointKind = Literal["none", "classic", "classic_parsed", "multipart", "v2"]
DvKind = Literal["none", "inline", "file"]
ColumnType = Literal["long", "double", "string", "date", "timestamp"]
COLUMN_TYPES: tuple[ColumnType, ...] = ("long", "double", "string", "date", "timestamp")

#: Bump when the bytes written for a spec change, so caches are rewritten.
GENERATOR_VERSION = 2
#: Rows per parquet row group of checkpoints and sidecars (readers parallelise over them).
ROW_GROUP_ROWS = 100_000
#: Files whose actions are built at once (bounds memory for multi-million-file tables).
CHUNK_FILES = 100_000
#: The ``commitInfo`` timestamp of version 0; each later version is one minute later.
BASE_TIMESTAMP_MS = 1_700_000_000_000
COMMIT_INTERVAL_MS = 60_000
#: Written last by :func:`cached_table`: the table is complete when it exists.
MARKER_NAME = ".deltabench-complete.json"
#: At most this many distinct deleted-row patterns (the vectors differ by where they start).
MAX_DV_PATTERNS = 64
DV_PREFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
ENGINE_INFO = "deltabench-generator/1"
RETENTION = "interval 36500 days"


@dataclass(frozen=True)
class LogSpec:
    """A synthetic table: only its _delta_log (and deletion vector files); no data files."""

    checkpoint_files: int = 0
    """Live files written into a checkpoint at version 0 (0: no checkpoint; then version 0 is
    a JSON commit with protocol+metaData only)."""
    commits: int = 10
    """JSON commits after version 0."""
    adds_per_commit: int = 100
    removes_per_commit: int = 0
    """Each commit also removes this many earlier live files (chosen at random)."""
    partitions: int = 0
    """0: unpartitioned; else one string partition column ``part`` with this many distinct
    values (files spread round-robin)."""
    stats_columns: int = 5
    """Data columns with min/max/nullCount stats: ``id`` (long; files get disjoint increasing
    ranges so ``id < X`` keeps a known fraction), then c1..c{n-1} (the types of
    ``column_types`` in turn). 0: the schema is ``id`` alone and the stats hold only
    numRecords (and tightBounds)."""
    checkpoint: CheckpointKind = "classic"
    """Ignored when checkpoint_files == 0; "none" writes those files into the JSON commit of
    version 0 instead."""
    checkpoint_parts: int = 4
    """For "multipart" (1 writes a classic checkpoint)."""
    sidecars: int = 4
    """For "v2": parquet sidecar files holding the file actions (0: in the top file)."""
    deletion_vectors: DvKind = "none"
    """Every file of the checkpoint and commits gets a DV."""
    dv_cardinality: int = 100
    """Deleted rows per vector, spread evenly over the file's rows."""
    rows_per_file: int = 10_000
    """numRecords in the stats."""
    compaction: bool = False
    """Also write log compaction files (x.y.compacted.json) over the commits."""
    seed: int = 0
    v2_top_format: Literal["parquet", "json"] = "parquet"
    """For "v2": the format of the UUID-named top checkpoint file."""
    dvs_per_file: int = 200
    """For file DVs: vectors per DV file (each commit, and the checkpoint, write their own)."""
    compaction_span: int = 10
    """Commits per log compaction file: [1, span], [span+1, 2*span], ... (blocks of one
    commit are not compacted)."""
    # Fields added later: left out of :func:`spec_hash` at their defaults (``_LATER_FIELDS``),
    # so the tables of earlier specs keep their names and bytes.
    column_types: tuple[ColumnType, ...] = ()
    """The types of c1..c{n-1} in turn, of :data:`COLUMN_TYPES`; empty: long, double,
    string."""
    column_names: tuple[str, ...] = ()
    """The names of the ``stats_columns - 1`` columns after ``id`` (empty: c1, c2, ...)."""
    streaming: bool = False
    """Commits 1.. as a Structured Streaming query writes them (operation ``STREAMING
    UPDATE``, one query's ``txn`` action), not as batch appends (``WRITE``)."""


#: LogSpec fields added after the first tables were cached, with their defaults.
_LATER_FIELDS: dict[str, Any] = {"column_types": (), "column_names": (), "streaming": False}


@dataclass(frozen=True)
class TableInfo:
    path: Path
    """The table root."""
    version: int
    """Latest version."""
    num_files: int
    """Live files at the latest version."""
    num_deletion_vectors: int
    """Live files with a DV."""
    older_version: int
    """A version for the time-travel operation (about half-way through the commits)."""
    one_percent_filter: str
    """SQL filter keeping ~1% of files by stats, e.g. ``"id < 123456"``."""
    one_percent_files: int
    """How many live files that filter keeps."""
    checkpoint_paths: list[Path]
    """The checkpoint files (parts, or the V2 top file + sidecars)."""
    commit_paths: list[Path]
    """JSON commits after the checkpoint (all of them when there is none)."""
    older_num_files: int = 0
    """Live files at ``older_version``."""
    compaction_paths: list[Path] = field(default_factory=list)
    """The log compaction files."""
    num_dv_files: int = 0
    """Deletion vector files written (storage type ``u``)."""


def write_table(root: Path, spec: LogSpec) -> TableInfo:
    """Writes the table ``spec`` describes at ``root`` (which must hold no ``_delta_log``)."""
    _validate(spec)
    root = Path(root)
    log = root / "_delta_log"
    if log.exists():
        raise FileExistsError(f"{log} already exists; write_table writes new tables only")
    log.mkdir(parents=True)
    plan = _Plan(spec)
    num_dv_files = _write_dv_files(root, plan)
    checkpoint_paths: list[Path] = []
    if plan.checkpoint_kind != "none":
        checkpoint_paths = _write_checkpoint(log, plan)
    commit_paths = _write_commits(log, plan)
    compaction_paths = _write_compactions(log, plan)
    live = np.flatnonzero(plan.removed_at < 0)
    one_percent_filter, one_percent_files = _one_percent_filter(plan, live)
    older_version = spec.commits // 2
    return TableInfo(
        path=root,
        version=spec.commits,
        num_files=len(live),
        num_deletion_vectors=len(live) if plan.dv is not None else 0,
        older_version=older_version,
        one_percent_filter=one_percent_filter,
        one_percent_files=one_percent_files,
        checkpoint_paths=checkpoint_paths,
        commit_paths=commit_paths,
        older_num_files=plan.live_counts[older_version],
        compaction_paths=compaction_paths,
        num_dv_files=num_dv_files,
    )


def cached_table(cache_dir: Path, name: str, spec: LogSpec) -> TableInfo:
    """write_table into cache_dir/<name>-<hash of spec>, reusing a complete earlier write
    (a marker file written last); returns the same TableInfo either way."""
    root = Path(cache_dir) / f"{name}-{spec_hash(spec)}"
    marker = root / MARKER_NAME
    if marker.is_file():
        try:
            return _info_from_json(root, json.loads(marker.read_text()))
        except (ValueError, KeyError, TypeError):
            pass
    if root.exists():
        shutil.rmtree(root)
    info = write_table(root, spec)
    partial = marker.with_suffix(".tmp")
    partial.write_text(json.dumps(_info_to_json(info), indent=1))
    partial.replace(marker)
    return info


def table_columns(spec: LogSpec) -> list[tuple[str, str]]:
    """The columns of the table ``spec`` describes: (name, Delta primitive type), the partition
    column (``part``) last when there is one."""
    columns: list[tuple[str, str]] = [(column.name, column.kind) for column in _stats_schema(spec)]
    return [*columns, ("part", "string")] if spec.partitions else columns


@dataclass(frozen=True)
class ArrowData:
    """A generated Arrow IPC file: the data the write scenarios append."""

    path: Path
    rows: int
    bytes: int
    """The Arrow buffers' size in memory."""


#: Rows per record batch of the generated Arrow data.
ARROW_DATA_BATCH_ROWS = 1 << 20


def cached_arrow_data(cache_dir: Path, name: str, rows: int, seed: int = 7) -> ArrowData:
    """An Arrow IPC file of ``rows`` generated rows at cache_dir/<name>-<hash>.arrow, reused
    when complete: ``id`` (long, ascending), ``value`` (double), ``name`` (a string of 10
    characters out of 10,000), ``ts`` (timestamp, UTC), ``qty`` (int) and ``flag`` (boolean),
    about 42 bytes a row. A pure function of ``rows`` and ``seed``."""
    text = json.dumps({"generator": GENERATOR_VERSION, "rows": rows, "seed": seed})
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = Path(cache_dir) / f"{name}-{digest}.arrow"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        _write_arrow_data(partial, rows, seed)
        partial.replace(path)
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
        return ArrowData(path, table.num_rows, table.nbytes)


#: The columns of the generated Arrow data (and of the row-level change scenarios' tables).
DATA_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("value", pa.float64()),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("qty", pa.int32()),
        ("flag", pa.bool_()),
    ]
)
_DATA_NAMES = 10_000


def data_batch(random: np.random.Generator, start: int, count: int) -> pa.RecordBatch:
    """``count`` generated rows of :data:`DATA_SCHEMA` with ids ``start..start+count``:
    ``value`` normal(100, 25), ``name`` one of 10,000 strings, ``ts`` a millisecond per id,
    ``qty`` uniform in [0, 1000), ``flag`` a fair coin; drawn from ``random`` in that order."""
    names = pa.array([f"name-{k:05d}" for k in range(_DATA_NAMES)], type=pa.string())
    ids = np.arange(start, start + count, dtype=np.int64)
    columns = [
        pa.array(ids),
        pa.array(random.normal(100.0, 25.0, count)),
        names.take(pa.array(random.integers(0, _DATA_NAMES, count))),
        pa.array(BASE_TIMESTAMP_MS * 1000 + ids * 1_000, type=pa.timestamp("us", tz="UTC")),
        pa.array(random.integers(0, 1_000, count, dtype=np.int32)),
        pa.array(random.random(count) < 0.5),
    ]
    return pa.record_batch(columns, schema=DATA_SCHEMA)


def _write_arrow_data(path: Path, rows: int, seed: int) -> None:
    random = np.random.default_rng(seed)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, DATA_SCHEMA) as writer:
        for start in range(0, rows, ARROW_DATA_BATCH_ROWS):
            count = min(ARROW_DATA_BATCH_ROWS, rows - start)
            writer.write_batch(data_batch(random, start, count))


def spec_hash(spec: LogSpec) -> str:
    """12 hex digits naming ``spec`` (and the generator version) in cache folders; the fields
    added later count only when they differ from their defaults."""
    fields = dataclasses.asdict(spec)
    for name, default in _LATER_FIELDS.items():
        if fields[name] == default:
            del fields[name]
    text = json.dumps({"generator": GENERATOR_VERSION, **fields}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def expected_live_files(spec: LogSpec, version: int | None = None) -> pa.Table:
    """What a reader must find at ``version`` (default: the latest), computed from the spec
    without reading anything: ``path``, ``size``, ``num_records``, ``part`` (null when not
    partitioned) and ``deleted_rows`` (the deleted row indexes, ascending; null without
    deletion vectors), sorted by path."""
    plan = _Plan(spec)
    version = spec.commits if version is None else version
    added = plan.added_version <= version
    not_removed = (plan.removed_at < 0) | (plan.removed_at > version)
    files = np.flatnonzero(added & not_removed)
    columns = _FileColumns(plan, files)
    deleted: pa.Array
    if plan.dv is None:
        deleted = pa.nulls(len(files), pa.list_(pa.int64()))
    else:
        rows = np.stack(plan.dv.pattern_rows)[plan.dv.pattern[files]]
        deleted = pa.array(list(rows), type=pa.list_(pa.int64()))
    table = pa.table(
        {
            "path": columns.paths,
            "size": pa.array(columns.sizes),
            "num_records": pa.array(np.full(len(files), spec.rows_per_file, dtype=np.int64)),
            "part": columns.partition_values
            if columns.partition_values is not None
            else pa.nulls(len(files), pa.string()),
            "deleted_rows": deleted,
        }
    )
    return table.sort_by("path")


def removed_file_paths(spec: LogSpec) -> list[str]:
    """The paths of the files added and then removed by the latest version (the tombstones a
    vacuum may delete), sorted."""
    plan = _Plan(spec)
    removed = (plan.removed_at >= 0) & (plan.removed_at <= spec.commits)
    files = np.flatnonzero((plan.added_version <= spec.commits) & removed)
    return sorted(_FileColumns(plan, files).paths.to_pylist())


#: Rows of each file :func:`write_blind_appends` adds.
BLIND_APPEND_FILE_ROWS = 1_000


def write_blind_appends(
    root: Path,
    first_version: int,
    last_version: int,
    columns: Sequence[Sequence[str]] = (),
    partition_columns: Sequence[str] = (),
) -> list[Path]:
    """Commits ``first_version..last_version`` (none when ``last_version < first_version``) to
    the table at ``root``, each a blind append of one new file of
    :data:`BLIND_APPEND_FILE_ROWS` rows as a batch writer commits it: ``commitInfo``
    (``WRITE``, ``Append``) then one ``add`` whose statistics hold ``numRecords`` and a null
    count of 0 for each of ``columns`` ((name, type) pairs; the ``partition_columns`` among
    them get a null partition value instead). Dated like the generated commits
    (a minute per version after version 0). Used to bring a generated table to a version
    where a checkpoint is due, before a measured append."""
    log = Path(root) / "_delta_log"
    stats = json.dumps(
        {
            "numRecords": BLIND_APPEND_FILE_ROWS,
            "nullCount": {
                str(column[0]): 0 for column in columns if column[0] not in partition_columns
            },
        },
        separators=(",", ":"),
    )
    paths = []
    for version in range(first_version, last_version + 1):
        timestamp = BASE_TIMESTAMP_MS + version * COMMIT_INTERVAL_MS
        name = f"part-00000-{_uuid_of(0, 0xBA, version)}.c000.snappy.parquet"
        commit_info = {
            "timestamp": timestamp,
            "operation": "WRITE",
            "operationParameters": {
                "mode": "Append",
                "partitionBy": json.dumps(list(partition_columns)),
            },
            "readVersion": version - 1,
            "isolationLevel": "Serializable",
            "isBlindAppend": True,
            "operationMetrics": {
                "numFiles": "1",
                "numOutputRows": str(BLIND_APPEND_FILE_ROWS),
                "numOutputBytes": "4096",
            },
            "engineInfo": ENGINE_INFO,
            "txnId": str(_uuid_of(0, 0xBB, version)),
        }
        add = {
            "path": name,
            "partitionValues": dict.fromkeys(partition_columns),
            "size": 4096,
            "modificationTime": timestamp,
            "dataChange": True,
            "stats": stats,
        }
        path = log / f"{version:020d}.json"
        with path.open("xb") as out:
            out.write(_json_line({"commitInfo": commit_info}) + _json_line({"add": add}))
        os.utime(path, ns=(timestamp * 1_000_000, timestamp * 1_000_000))
        paths.append(path)
    return paths


def last_checkpoint_checksum(content: dict[str, Any]) -> str:
    """The ``checksum`` of a ``_last_checkpoint`` object (Delta protocol, "JSON checksum"):
    MD5 of its canonical form, the top-level ``checksum`` key left out."""
    pairs: list[tuple[bytes, str]] = []
    for key, value in content.items():
        if key != "checksum":
            _canonical_pairs(value, [_canonical_string(key)], pairs)
    pairs.sort(key=lambda pair: pair[0])
    text = ",".join(f"{path.decode()}={value}" for path, value in pairs)
    return hashlib.md5(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# The plan: which files exist, when they are added and removed, their deletion vectors.
# ---------------------------------------------------------------------------------------------


@dataclass
class _DvLayout:
    """Deletion vectors of every file: one of a few row patterns, and where it is stored."""

    inline: bool
    pattern: npt.NDArray[np.int64]  # per file
    pattern_rows: list[npt.NDArray[np.int64]]
    pattern_data: list[bytes]  # bitmap data (magic + portable bitmap)
    cardinality: int
    group: npt.NDArray[np.int64]  # per file: its DV file (file DVs)
    offset: npt.NDArray[np.int64]  # per file: its offset in that DV file (file DVs)
    group_first_file: npt.NDArray[np.int64]  # per DV file: the first file it holds
    group_path_or_inline_dv: list[str]  # per DV file: <prefix><Z85 UUID>


class _Plan:
    """The table's timeline, derived from the spec alone."""

    def __init__(self, spec: LogSpec) -> None:
        self.spec = spec
        self.checkpoint_kind: CheckpointKind = (
            spec.checkpoint if spec.checkpoint_files > 0 else "none"
        )
        self.total = spec.checkpoint_files + spec.commits * spec.adds_per_commit
        files = np.arange(self.total, dtype=np.int64)
        self.added_version = np.where(
            files < spec.checkpoint_files,
            0,
            1 + (files - spec.checkpoint_files) // max(spec.adds_per_commit, 1),
        )
        self.removed_at = np.full(self.total, -1, dtype=np.int64)
        self.removed: list[npt.NDArray[np.int64]] = [np.empty(0, dtype=np.int64)]
        self.live_counts = [spec.checkpoint_files]
        self._choose_removes()
        self.partition_names = (
            [str(value) for value in range(spec.partitions)] if spec.partitions else []
        )
        self.dv = _dv_layout(spec, self) if spec.deletion_vectors != "none" else None
        self.columns = _stats_schema(spec)
        self.table_id = str(_uuid_of(spec.seed, 0x1D, 0))

    def files_added_by(self, version: int) -> npt.NDArray[np.int64]:
        spec = self.spec
        if version == 0:
            return np.arange(spec.checkpoint_files, dtype=np.int64)
        first = spec.checkpoint_files + (version - 1) * spec.adds_per_commit
        return np.arange(first, first + spec.adds_per_commit, dtype=np.int64)

    def _choose_removes(self) -> None:
        spec = self.spec
        rng = np.random.default_rng(spec.seed)
        live = np.zeros(self.total, dtype=bool)
        live[: spec.checkpoint_files] = True
        for version in range(1, spec.commits + 1):
            removed = np.empty(0, dtype=np.int64)
            if spec.removes_per_commit > 0:
                candidates = np.flatnonzero(live)
                count = min(spec.removes_per_commit, len(candidates))
                removed = np.sort(rng.choice(candidates, size=count, replace=False))
                live[removed] = False
                self.removed_at[removed] = version
            live[self.files_added_by(version)] = True
            self.removed.append(removed.astype(np.int64))
            self.live_counts.append(self.live_counts[-1] + spec.adds_per_commit - len(removed))


def _dv_layout(spec: LogSpec, plan: _Plan) -> _DvLayout:
    rows = spec.rows_per_file
    cardinality = min(max(spec.dv_cardinality, 1), rows)
    stride = rows // cardinality
    patterns = min(stride, MAX_DV_PATTERNS)
    pattern_rows = [
        start + np.arange(cardinality, dtype=np.int64) * stride for start in range(patterns)
    ]
    pattern_data = [dv.bitmap_data(values) for values in pattern_rows]
    files = np.arange(plan.total, dtype=np.int64)
    pattern = (_mix(files, spec.seed, 0xD5) % np.uint64(patterns)).astype(np.int64)

    per_file = max(spec.dvs_per_file, 1)
    in_checkpoint = files < spec.checkpoint_files
    position = np.where(
        in_checkpoint, files, (files - spec.checkpoint_files) % max(spec.adds_per_commit, 1)
    )
    checkpoint_groups = -(-spec.checkpoint_files // per_file)
    groups_per_commit = -(-spec.adds_per_commit // per_file)
    group = np.where(
        in_checkpoint,
        position // per_file,
        checkpoint_groups + (plan.added_version - 1) * groups_per_commit + position // per_file,
    )
    framed_sizes = np.array([len(data) + 8 for data in pattern_data], dtype=np.int64)
    if spec.deletion_vectors == "file" and 1 + per_file * int(framed_sizes.max()) >= 1 << 31:
        raise ValueError(
            f"LogSpec.dvs_per_file={per_file} makes DV files over 2 GiB (offsets are 32-bit)"
        )
    entry = framed_sizes[pattern]
    before = np.cumsum(entry) - entry
    group_ids, group_first_file = np.unique(group, return_index=True)
    # Groups are numbered densely in file order, so group g's first file is group_first_file[g].
    offset = 1 + before - before[group_first_file[group]] if len(group_ids) else before
    group_path_or_inline_dv = [
        _dv_prefix(spec.seed, int(g)) + dv.uuid_to_z85(_uuid_of(spec.seed, 0xDF, int(g)))
        for g in group_ids
    ]
    return _DvLayout(
        inline=spec.deletion_vectors == "inline",
        pattern=pattern,
        pattern_rows=pattern_rows,
        pattern_data=pattern_data,
        cardinality=cardinality,
        group=group,
        offset=offset,
        group_first_file=group_first_file.astype(np.int64),
        group_path_or_inline_dv=group_path_or_inline_dv,
    )


def _write_dv_files(root: Path, plan: _Plan) -> int:
    """Writes every DV file (storage type ``u``); returns how many."""
    layout = plan.dv
    if layout is None or layout.inline or plan.total == 0:
        return 0
    framed = [dv.frame(data) for data in layout.pattern_data]
    header = bytes([dv.DV_FILE_FORMAT_VERSION])
    ends = [*layout.group_first_file[1:].tolist(), plan.total]
    for g, (first, end) in enumerate(zip(layout.group_first_file.tolist(), ends, strict=True)):
        relative = dv.relative_dv_path(layout.group_path_or_inline_dv[g])
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        patterns = layout.pattern[first:end].tolist()
        target.write_bytes(header + b"".join([framed[p] for p in patterns]))
    return len(ends)


# ---------------------------------------------------------------------------------------------
# Column values of a batch of files, vectorised.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StatsColumn:
    name: str
    kind: ColumnType
    index: int


#: Statistics of these types are JSON strings.
_QUOTED_KINDS = ("string", "date", "timestamp")
#: The day of ``BASE_TIMESTAMP_MS`` (2023-11-14), days since the epoch.
BASE_DAY = BASE_TIMESTAMP_MS // 86_400_000


def _stats_schema(spec: LogSpec) -> list[_StatsColumn]:
    kinds: tuple[ColumnType, ...] = spec.column_types or ("long", "double", "string")
    columns = [_StatsColumn("id", "long", 0)]
    names = spec.column_names or [f"c{i}" for i in range(1, spec.stats_columns)]
    columns += [
        _StatsColumn(names[i - 1], kinds[(i - 1) % len(kinds)], i)
        for i in range(1, spec.stats_columns)
    ]
    return columns


def _file_sizes(spec: LogSpec, files: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The ``size`` of each file."""
    sizes: npt.NDArray[np.int64] = spec.rows_per_file * 8 + (files % 997) * 13 + 1024
    return sizes


class _FileColumns:
    """Every value of the files ``files`` (indexes in add order), as Arrow arrays."""

    def __init__(self, plan: _Plan, files: npt.NDArray[np.int64]) -> None:
        spec = plan.spec
        self.plan = plan
        self.files = files
        self.count = len(files)
        self.partition_values: pa.Array | None = None
        if spec.partitions:
            names = pa.array(plan.partition_names, type=pa.string())
            self.partition_values = names.take(pa.array(files % spec.partitions))
        self.paths = self._paths()
        self.sizes = _file_sizes(spec, files)
        self.modification_times = BASE_TIMESTAMP_MS + plan.added_version[files] * COMMIT_INTERVAL_MS

    def _paths(self) -> pa.Array:
        spec = self.plan.spec
        uuids = _uuid_strings(self.files, spec.seed, 0xF1)
        task = pc.utf8_lpad(_to_string(self.files % 1000), width=5, padding="0")
        parts: list[Any] = ["part-", task, "-", uuids, ".c000.snappy.parquet"]
        if self.partition_values is not None:
            parts = ["part=", self.partition_values, "/", *parts]
        return _join(parts)

    def stats_json(self, quote_mark: str) -> pa.Array:
        """The stats JSON text; ``quote_mark`` is ``"`` or ``\\"`` (inside a JSON string)."""
        q = quote_mark
        spec = self.plan.spec
        tight = "false" if self.plan.dv is not None else "true"
        parts: list[Any] = [f"{{{q}numRecords{q}:{spec.rows_per_file}"]
        if spec.stats_columns > 0:
            minimum, maximum, nulls = self._stats_values()
            for label, values in (("minValues", minimum), ("maxValues", maximum)):
                parts.append(f",{q}{label}{q}:{{")
                for i, column in enumerate(self.plan.columns):
                    parts.append(f"{',' if i else ''}{q}{column.name}{q}:")
                    if column.kind in _QUOTED_KINDS:
                        parts += [q, values[i], q]
                    else:
                        parts.append(values[i])
                parts.append("}")
            parts.append(f",{q}nullCount{q}:{{")
            for i, column in enumerate(self.plan.columns):
                parts += [f"{',' if i else ''}{q}{column.name}{q}:", nulls[i]]
            parts.append("}")
        parts.append(f",{q}tightBounds{q}:{tight}}}")
        return _join(parts, self.count)

    def _stats_values(self) -> tuple[list[pa.Array], list[pa.Array], list[pa.Array]]:
        minimum, maximum, nulls = [], [], []
        for column in self.plan.columns:
            low, high, null_count = self.typed_stats(column)
            minimum.append(_stats_text(low))
            maximum.append(_stats_text(high))
            nulls.append(_to_string(null_count))
        return minimum, maximum, nulls

    def typed_stats(self, column: _StatsColumn) -> tuple[pa.Array, pa.Array, pa.Array]:
        """min, max and null count of ``column`` for each file, typed per the schema."""
        rows = self.plan.spec.rows_per_file
        f = self.files
        if column.name == "id":
            low = f * rows
            return pa.array(low), pa.array(low + rows - 1), pa.array(np.zeros(len(f), np.int64))
        null_count = pa.array(np.minimum((f + column.index) % 3, rows))
        if column.kind == "long":
            low = f * 10 + column.index
            return pa.array(low), pa.array(low + rows), null_count
        if column.kind == "double":
            low_d = f * 0.25 + column.index + 0.125
            return pa.array(low_d), pa.array(low_d + rows * 0.5), null_count
        if column.kind == "date":
            day = BASE_DAY + f // 100 + column.index
            return (
                pa.array(day.astype(np.int32), pa.date32()),
                pa.array((day + 1 + column.index % 3).astype(np.int32), pa.date32()),
                null_count,
            )
        if column.kind == "timestamp":
            # Milliseconds (Spark's statistics keep no finer unit), as microseconds.
            start = BASE_TIMESTAMP_MS + f * 6_000 + column.index * 1_001
            end = start + rows * 37 + column.index
            return (
                pa.array(start * 1000, pa.timestamp("us", tz="UTC")),
                pa.array(end * 1000, pa.timestamp("us", tz="UTC")),
                null_count,
            )
        digits = pc.utf8_lpad(_to_string(f), width=10, padding="0")
        return _join(["a", digits]), _join(["z", digits]), null_count

    def partition_values_json(self) -> list[Any]:
        """``"part":"<value>"`` pieces for a partitionValues JSON object (empty if none)."""
        if self.partition_values is None:
            return []
        return ['"part":"', self.partition_values, '"']

    def deletion_vector_json(self) -> list[Any]:
        """``,"deletionVector":{...}`` pieces, or none."""
        layout = self.plan.dv
        if layout is None:
            return []
        size = _to_string(_dv_sizes(layout, self.files))
        head = ',"deletionVector":{"storageType":'
        if layout.inline:
            return [
                head + '"i","pathOrInlineDv":"',
                _inline_texts(layout, self.files),
                '","sizeInBytes":',
                size,
                f',"cardinality":{layout.cardinality}}}',
            ]
        return [
            head + '"u","pathOrInlineDv":"',
            _group_texts(layout, self.files),
            '","offset":',
            _to_string(layout.offset[self.files]),
            ',"sizeInBytes":',
            size,
            f',"cardinality":{layout.cardinality}}}',
        ]

    def deletion_vector_struct(self) -> pa.Array:
        layout = self.plan.dv
        if layout is None:
            return pa.nulls(self.count, _DV)
        if layout.inline:
            storage = "i"
            text = _inline_texts(layout, self.files)
            offset = pa.nulls(self.count, pa.int32())
        else:
            storage = "u"
            text = _group_texts(layout, self.files)
            offset = pa.array(layout.offset[self.files].astype(np.int32))
        return pa.StructArray.from_arrays(
            [
                pa.array([storage] * self.count, type=pa.string()),
                text,
                offset,
                pa.array(_dv_sizes(layout, self.files).astype(np.int32)),
                pa.array(np.full(self.count, layout.cardinality, dtype=np.int64)),
                pa.nulls(self.count, pa.int64()),
            ],
            fields=list(_DV),
        )

    def partition_values_map(self) -> pa.Array:
        if self.partition_values is None:
            offsets = pa.array(np.zeros(self.count + 1, dtype=np.int32))
            return pa.MapArray.from_arrays(
                offsets, pa.array([], pa.string()), pa.array([], pa.string()), type=_MAP
            )
        offsets = pa.array(np.arange(self.count + 1, dtype=np.int32))
        keys = pa.array(["part"] * self.count, type=pa.string())
        return pa.MapArray.from_arrays(offsets, keys, self.partition_values, type=_MAP)


def _dv_sizes(layout: _DvLayout, files: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    sizes = np.array([len(data) for data in layout.pattern_data], dtype=np.int64)
    return sizes[layout.pattern[files]]


def _inline_texts(layout: _DvLayout, files: npt.NDArray[np.int64]) -> pa.Array:
    texts = pa.array([dv.z85_encode(data) for data in layout.pattern_data], type=pa.string())
    return texts.take(pa.array(layout.pattern[files]))


def _group_texts(layout: _DvLayout, files: npt.NDArray[np.int64]) -> pa.Array:
    texts = pa.array(layout.group_path_or_inline_dv, type=pa.string())
    return texts.take(pa.array(layout.group[files]))


# ---------------------------------------------------------------------------------------------
# JSON commits and log compaction files.
# ---------------------------------------------------------------------------------------------


def _add_lines(columns: _FileColumns) -> pa.Array:
    """One ``{"add":...}`` line per file, each ending in a newline."""
    return _join(
        [
            '{"add":{"path":"',
            columns.paths,
            '","partitionValues":{',
            *columns.partition_values_json(),
            '},"size":',
            _to_string(columns.sizes),
            ',"modificationTime":',
            _to_string(columns.modification_times),
            ',"dataChange":true,"stats":"',
            columns.stats_json('\\"'),
            '"',
            *columns.deletion_vector_json(),
            "}}\n",
        ]
    )


def _remove_lines(columns: _FileColumns, versions: npt.NDArray[np.int64]) -> pa.Array:
    """One ``{"remove":...}`` line per file, removed by commit ``versions[i]``."""
    timestamps = BASE_TIMESTAMP_MS + versions * COMMIT_INTERVAL_MS
    return _join(
        [
            '{"remove":{"path":"',
            columns.paths,
            '","deletionTimestamp":',
            _to_string(timestamps),
            ',"dataChange":true,"extendedFileMetadata":true,"partitionValues":{',
            *columns.partition_values_json(),
            '},"size":',
            _to_string(columns.sizes),
            *columns.deletion_vector_json(),
            "}}\n",
        ]
    )


def _write_commits(log: Path, plan: _Plan) -> list[Path]:
    """Writes the JSON commits: version 0 when there is no checkpoint, then 1..commits.

    The lines of many small commits are built together (Arrow calls cost per call, not per
    row), then cut per commit."""
    first_version = 0 if plan.checkpoint_kind == "none" else 1
    first_file = 0 if first_version == 0 else plan.spec.checkpoint_files
    json_files = np.arange(first_file, plan.total, dtype=np.int64)
    removed = np.concatenate(plan.removed)
    removed_versions = np.repeat(
        np.arange(len(plan.removed), dtype=np.int64), [len(r) for r in plan.removed]
    )
    adds = _LineCursor(lambda lo, hi: _add_lines(_FileColumns(plan, json_files[lo:hi])))
    removes = _LineCursor(
        lambda lo, hi: _remove_lines(_FileColumns(plan, removed[lo:hi]), removed_versions[lo:hi])
    )
    paths = []
    add_position = remove_position = 0
    for version in range(first_version, plan.spec.commits + 1):
        added = len(plan.files_added_by(version))
        removed_count = len(plan.removed[version])
        path = log / f"{version:020d}.json"
        with path.open("wb") as out:
            out.write(_json_line({"commitInfo": _commit_info(plan, version, removed_count)}))
            if version == 0:
                out.write(_json_line({"protocol": _protocol(plan.spec)}))
                out.write(_json_line({"metaData": _metadata(plan)}))
            elif plan.spec.streaming:
                out.write(_json_line({"txn": _streaming_txn(plan, version)}))
            out.writelines(removes.take(remove_position, remove_position + removed_count))
            out.writelines(adds.take(add_position, add_position + added))
        add_position += added
        remove_position += removed_count
        timestamp_ns = (BASE_TIMESTAMP_MS + version * COMMIT_INTERVAL_MS) * 1_000_000
        os.utime(path, ns=(timestamp_ns, timestamp_ns))
        paths.append(path)
    return paths


class _LineCursor:
    """Lines 0, 1, 2, ... of a sequence built ``CHUNK_FILES`` at a time by ``build(lo, hi)``,
    handed out in order by :meth:`take`."""

    def __init__(self, build: Callable[[int, int], pa.Array]) -> None:
        self.build = build
        self.start = 0
        self.end = 0
        self.data: memoryview = memoryview(b"")
        self.offsets: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)

    def take(self, low: int, high: int) -> list[memoryview]:
        """The text of lines ``low`` to ``high`` (``low`` at or after the previous ``high``)."""
        pieces = []
        while low < high:
            if low >= self.end:
                self._load(low, low + CHUNK_FILES)
            upto = min(high, self.end)
            first = int(self.offsets[low - self.start])
            last = int(self.offsets[upto - self.start])
            pieces.append(self.data[first:last])
            low = upto
        return pieces

    def _load(self, low: int, high: int) -> None:
        lines = self.build(low, high)
        if isinstance(lines, pa.ChunkedArray):
            lines = lines.combine_chunks()
        if lines.null_count:
            raise ValueError("a generated line is null")
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
        self.offsets = offsets[lines.offset : lines.offset + len(lines) + 1].astype(np.int64)
        self.data = memoryview(lines.buffers()[2])
        self.start, self.end = low, low + len(lines)


def _write_compactions(log: Path, plan: _Plan) -> list[Path]:
    """Log compaction files over blocks of ``compaction_span`` commits: the adds still live at
    the end of the block, then the removes made in it (Delta protocol, "Log Compaction
    Files", action reconciliation)."""
    spec = plan.spec
    if not spec.compaction or spec.commits < 2:
        return []
    span = max(spec.compaction_span, 2)
    paths = []
    for start in range(1, spec.commits + 1, span):
        end = min(start + span - 1, spec.commits)
        if end == start:
            continue
        path = log / f"{start:020d}.{end:020d}.compacted.json"
        in_block = (plan.added_version >= start) & (plan.added_version <= end)
        survives = (plan.removed_at < 0) | (plan.removed_at > end)
        adds = np.flatnonzero(in_block & survives)
        removes = np.flatnonzero((plan.removed_at >= start) & (plan.removed_at <= end))
        with path.open("wb") as out:
            for chunk in _chunks(adds):
                out.write(_line_bytes(_add_lines(_FileColumns(plan, chunk))))
            for chunk in _chunks(removes):
                lines = _remove_lines(_FileColumns(plan, chunk), plan.removed_at[chunk])
                out.write(_line_bytes(lines))
        paths.append(path)
    return paths


def _commit_info(plan: _Plan, version: int, removes: int) -> dict[str, Any]:
    spec = plan.spec
    if spec.streaming and version > 0:
        return _streaming_commit_info(plan, version, removes)
    adds = spec.checkpoint_files if version == 0 else spec.adds_per_commit
    partition_by = json.dumps(["part"] if spec.partitions else [])
    info: dict[str, Any] = {
        "timestamp": BASE_TIMESTAMP_MS + version * COMMIT_INTERVAL_MS,
        "operation": "CREATE TABLE" if version == 0 else "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": partition_by},
    }
    if version > 0:
        info["readVersion"] = version - 1
    info.update(
        {
            "isolationLevel": "Serializable",
            "isBlindAppend": removes == 0,
            "operationMetrics": {
                "numFiles": str(adds),
                "numRemovedFiles": str(removes),
                "numOutputRows": str(adds * spec.rows_per_file),
            },
            "engineInfo": ENGINE_INFO,
            "txnId": str(_uuid_of(spec.seed, 0xC0, version)),
        }
    )
    return info


def _streaming_query_id(spec: LogSpec) -> str:
    """The id of the one streaming query writing the table (its ``txn`` application id)."""
    return str(_uuid_of(spec.seed, 0x5E, 0))


def _streaming_commit_info(plan: _Plan, version: int, removes: int) -> dict[str, Any]:
    """The ``commitInfo`` of epoch ``version - 1`` of a streaming query, as Delta on Spark's
    streaming sink writes it (operation ``STREAMING UPDATE``, keys in Spark's order)."""
    spec = plan.spec
    added = plan.files_added_by(version)
    return {
        "timestamp": BASE_TIMESTAMP_MS + version * COMMIT_INTERVAL_MS,
        "operation": "STREAMING UPDATE",
        "operationParameters": {
            "outputMode": "Append",
            "queryId": _streaming_query_id(spec),
            "epochId": str(version - 1),
        },
        "readVersion": version - 1,
        "isolationLevel": "Serializable",
        "isBlindAppend": removes == 0,
        "operationMetrics": {
            "numRemovedFiles": str(removes),
            "numOutputRows": str(len(added) * spec.rows_per_file),
            "numOutputBytes": str(int(_file_sizes(spec, added).sum())),
            "numAddedFiles": str(len(added)),
        },
        "engineInfo": ENGINE_INFO,
        "txnId": str(_uuid_of(spec.seed, 0xC0, version)),
    }


def _streaming_txn(plan: _Plan, version: int) -> dict[str, Any]:
    """The streaming query's ``txn`` action of commit ``version`` (epoch ``version - 1``)."""
    return {
        "appId": _streaming_query_id(plan.spec),
        "version": version - 1,
        "lastUpdated": BASE_TIMESTAMP_MS + version * COMMIT_INTERVAL_MS,
    }


# ---------------------------------------------------------------------------------------------
# Protocol and metadata.
# ---------------------------------------------------------------------------------------------


def _protocol(spec: LogSpec) -> dict[str, Any]:
    """reader 3 / writer 7 with the features used (deletionVectors, v2Checkpoint), else 1 / 2."""
    features = []
    if spec.deletion_vectors != "none":
        features.append("deletionVectors")
    if spec.checkpoint_files > 0 and spec.checkpoint == "v2":
        features.append("v2Checkpoint")
    if not features:
        return {"minReaderVersion": 1, "minWriterVersion": 2}
    return {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": features,
        "writerFeatures": features,
    }


def _metadata(plan: _Plan) -> dict[str, Any]:
    spec = plan.spec
    # The synthetic commits are dated late 2023; Delta on Spark refuses time travel to versions
    # older than the deleted-file retention, so the retention spans a century.
    configuration = {"delta.deletedFileRetentionDuration": RETENTION}
    if spec.deletion_vectors != "none":
        configuration["delta.enableDeletionVectors"] = "true"
    if plan.checkpoint_kind == "classic_parsed":
        configuration["delta.checkpoint.writeStatsAsStruct"] = "true"
    if plan.checkpoint_kind == "v2":
        configuration["delta.checkpointPolicy"] = "v2"
    return {
        "id": plan.table_id,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(_table_schema(plan), separators=(",", ":")),
        "partitionColumns": ["part"] if spec.partitions else [],
        "configuration": configuration,
        "createdTime": BASE_TIMESTAMP_MS,
    }


def _table_schema(plan: _Plan) -> dict[str, Any]:
    fields = [
        {"name": column.name, "type": column.kind, "nullable": True, "metadata": {}}
        for column in plan.columns
    ]
    if plan.spec.partitions:
        fields.append({"name": "part", "type": "string", "nullable": True, "metadata": {}})
    return {"type": "struct", "fields": fields}


# ---------------------------------------------------------------------------------------------
# Checkpoints.
# ---------------------------------------------------------------------------------------------

_MAP = pa.map_(pa.string(), pa.string())
_LIST = pa.list_(pa.field("element", pa.string()))
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
_TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
_REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", _MAP),
        ("size", pa.int64()),
        ("deletionVector", _DV),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)
_METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", _LIST),
        ("configuration", _MAP),
        ("createdTime", pa.int64()),
    ]
)
_PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", _LIST),
        ("writerFeatures", _LIST),
    ]
)
_DOMAIN_METADATA = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)
_CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", _MAP)])
_SIDECAR = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", _MAP),
    ]
)
#: The Arrow type of each column type (statistics, ``stats_parsed``).
_ARROW_TYPES: dict[str, pa.DataType] = {
    "long": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}
_SPARK_TYPE_NAMES = {
    pa.string(): "string",
    pa.int64(): "long",
    pa.int32(): "integer",
    pa.bool_(): "boolean",
    pa.float64(): "double",
    pa.date32(): "date",
    pa.timestamp("us", tz="UTC"): "timestamp",
}


def _add_type(plan: _Plan) -> pa.StructType:
    """The ``add`` column as Spark writes it; ``classic_parsed`` adds the parsed columns."""
    fields = [
        ("path", pa.string()),
        ("partitionValues", _MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("tags", _MAP),
        ("deletionVector", _DV),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("stats", pa.string()),
    ]
    if plan.checkpoint_kind == "classic_parsed":
        if plan.spec.partitions:
            fields.append(("partitionValues_parsed", pa.struct([("part", pa.string())])))
        fields.append(("stats_parsed", _stats_parsed_type(plan)))
    return pa.struct(fields)


def _stats_parsed_type(plan: _Plan) -> pa.StructType:
    values = pa.struct([(c.name, _ARROW_TYPES[c.kind]) for c in plan.columns])
    fields: list[tuple[str, pa.DataType]] = [("numRecords", pa.int64())]
    if plan.spec.stats_columns > 0:
        counts = pa.struct([(c.name, pa.int64()) for c in plan.columns])
        fields += [("minValues", values), ("maxValues", values), ("nullCount", counts)]
    if plan.dv is not None:
        fields.append(("tightBounds", pa.bool_()))
    return pa.struct(fields)


def _checkpoint_schema(plan: _Plan, v2: bool) -> pa.Schema:
    fields = [
        ("txn", _TXN),
        ("add", _add_type(plan)),
        ("remove", _REMOVE),
        ("metaData", _METADATA),
        ("protocol", _PROTOCOL),
        ("domainMetadata", _DOMAIN_METADATA),
    ]
    if v2:
        fields += [("checkpointMetadata", _CHECKPOINT_METADATA), ("sidecar", _SIDECAR)]
    return _with_spark_metadata(pa.schema(fields))


def _sidecar_schema(plan: _Plan) -> pa.Schema:
    return _with_spark_metadata(pa.schema([("add", _add_type(plan)), ("remove", _REMOVE)]))


def _add_struct(plan: _Plan, columns: _FileColumns) -> pa.StructArray:
    add_type = _add_type(plan)
    n = columns.count
    arrays: dict[str, pa.Array] = {
        "path": columns.paths,
        "partitionValues": columns.partition_values_map(),
        "size": pa.array(columns.sizes),
        "modificationTime": pa.array(columns.modification_times),
        "dataChange": pa.array(np.ones(n, dtype=bool)),
        "tags": pa.nulls(n, _MAP),
        "deletionVector": columns.deletion_vector_struct(),
        "baseRowId": pa.nulls(n, pa.int64()),
        "defaultRowCommitVersion": pa.nulls(n, pa.int64()),
        "stats": columns.stats_json('"'),
    }
    if add_type.get_field_index("partitionValues_parsed") >= 0:
        arrays["partitionValues_parsed"] = pa.StructArray.from_arrays(
            [columns.partition_values], names=["part"]
        )
    if add_type.get_field_index("stats_parsed") >= 0:
        arrays["stats_parsed"] = _stats_parsed(plan, columns)
    return pa.StructArray.from_arrays([arrays[f.name] for f in add_type], fields=list(add_type))


def _stats_parsed(plan: _Plan, columns: _FileColumns) -> pa.StructArray:
    stats_type = _stats_parsed_type(plan)
    n = columns.count
    arrays: dict[str, pa.Array] = {
        "numRecords": pa.array(np.full(n, plan.spec.rows_per_file, dtype=np.int64))
    }
    if plan.spec.stats_columns > 0:
        typed = [columns.typed_stats(column) for column in plan.columns]
        for slot, name in enumerate(("minValues", "maxValues", "nullCount")):
            struct_type = stats_type.field(name).type
            arrays[name] = pa.StructArray.from_arrays(
                [values[slot].cast(struct_type.field(i).type) for i, values in enumerate(typed)],
                fields=list(struct_type),
            )
    if plan.dv is not None:
        arrays["tightBounds"] = pa.array(np.zeros(n, dtype=bool))
    return pa.StructArray.from_arrays([arrays[f.name] for f in stats_type], fields=list(stats_type))


def _action_table(schema: pa.Schema, rows: int, **columns: pa.Array) -> pa.Table:
    """A checkpoint table of ``rows`` rows: the given action columns, the others null."""
    arrays = [columns.get(f.name, pa.nulls(rows, f.type)) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _non_file_actions(plan: _Plan) -> list[dict[str, Any]]:
    return [{"protocol": _protocol(plan.spec)}, {"metaData": _metadata(plan)}]


def _non_file_table(plan: _Plan, schema: pa.Schema, actions: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows for non-file actions (one action per row) in a checkpoint of ``schema``."""
    columns: dict[str, pa.Array] = {}
    for f in schema:
        values = [_arrow_value(action.get(f.name), f.type) for action in actions]
        if any(value is not None for value in values):
            columns[f.name] = pa.array(values, type=f.type)
    return _action_table(schema, len(actions), **columns)


def _arrow_value(value: Any, arrow_type: pa.DataType) -> Any:
    """A JSON action value as pyarrow's ``pa.array`` takes it for ``arrow_type``."""
    if value is None:
        return None
    if isinstance(arrow_type, pa.StructType):
        return {f.name: _arrow_value(value.get(f.name), f.type) for f in arrow_type}
    if isinstance(arrow_type, pa.MapType):
        return list(value.items())
    return value


def _file_tables(
    plan: _Plan, schema: pa.Schema, files: npt.NDArray[np.int64]
) -> Iterator[pa.Table]:
    for chunk in _chunks(files, ROW_GROUP_ROWS):
        add = _add_struct(plan, _FileColumns(plan, chunk))
        yield _action_table(schema, len(chunk), add=add)


class _ParquetOut:
    """A checkpoint (or sidecar) parquet file being written, Spark's way: snappy compression,
    one row group per :meth:`write` (callers pass ``ROW_GROUP_ROWS`` files at a time). The
    ``head`` rows (non-file actions) go into the first row group."""

    def __init__(self, path: Path, schema: pa.Schema, head: pa.Table | None = None) -> None:
        self.path = path
        self.rows = 0
        self.head = head
        self.schema = schema
        self.writer = pq.ParquetWriter(path, schema, compression="snappy")

    def write(self, table: pa.Table) -> None:
        if self.head is not None:
            table = pa.concat_tables([self.head, table]).combine_chunks()
            self.head = None
        if table.num_rows:
            self.writer.write_table(table, row_group_size=table.num_rows)
        self.rows += table.num_rows

    def write_files(self, plan: _Plan, files: npt.NDArray[np.int64]) -> None:
        for table in _file_tables(plan, self.schema, files):
            self.write(table)

    def close(self) -> int:
        if self.head is not None:
            self.write(self.head.slice(0, 0))
        self.writer.close()
        return self.path.stat().st_size


def _write_checkpoint(log: Path, plan: _Plan) -> list[Path]:
    kind = plan.checkpoint_kind
    if kind == "v2":
        return _write_v2_checkpoint(log, plan)
    if kind == "multipart" and plan.spec.checkpoint_parts > 1:
        return _write_multipart_checkpoint(log, plan)
    schema = _checkpoint_schema(plan, v2=False)
    head = _non_file_table(plan, schema, _non_file_actions(plan))
    out = _ParquetOut(log / f"{0:020d}.checkpoint.parquet", schema, head)
    files = plan.files_added_by(0)
    out.write_files(plan, files)
    size = out.close()
    _write_last_checkpoint(log, out.rows, size, len(files), schema)
    return [out.path]


def _write_multipart_checkpoint(log: Path, plan: _Plan) -> list[Path]:
    """Parts hold the rows Spark's ``repartition(parts, coalesce(add.path, remove.path))``
    sends them: Murmur3 (seed 42) of the path, pmod the part count; null paths (the
    protocol and metaData rows) hash to the seed."""
    parts = plan.spec.checkpoint_parts
    schema = _checkpoint_schema(plan, v2=False)
    head = _non_file_table(plan, schema, _non_file_actions(plan))
    outs = [
        _ParquetOut(
            log / f"{0:020d}.checkpoint.{i + 1:010d}.{parts:010d}.parquet",
            schema,
            head if i == _SPARK_HASH_SEED % parts else None,
        )
        for i in range(parts)
    ]
    files = plan.files_added_by(0)
    target = np.concatenate(
        [np.empty(0, dtype=np.int32)]
        + [
            np.mod(_spark_string_hash(_FileColumns(plan, chunk).paths).view(np.int32), parts)
            for chunk in _chunks(files)
        ]
    )
    for part, out in enumerate(outs):
        out.write_files(plan, files[target == part])
    size = sum(out.close() for out in outs)
    rows = sum(out.rows for out in outs)
    _write_last_checkpoint(log, rows, size, len(files), schema, parts=parts)
    return [out.path for out in outs]


def _write_v2_checkpoint(log: Path, plan: _Plan) -> list[Path]:
    """A UUID-named V2 checkpoint: the file actions in ``spec.sidecars`` parquet sidecars (or
    in the top file when 0), then the top file with checkpointMetadata, the sidecar actions,
    protocol and metaData."""
    spec = plan.spec
    files = plan.files_added_by(0)
    sidecar_dir = log / "_sidecars"
    sidecars: list[dict[str, Any]] = []
    paths: list[Path] = []
    if spec.sidecars > 0:
        sidecar_dir.mkdir()
        schema = _sidecar_schema(plan)
        for i, part in enumerate(np.array_split(files, spec.sidecars)):
            name = (
                f"{0:020d}.checkpoint.{i + 1:010d}.{spec.sidecars:010d}."
                f"{_uuid_of(spec.seed, 0x5C, i)}.parquet"
            )
            out = _ParquetOut(sidecar_dir / name, schema)
            out.write_files(plan, part)
            size = out.close()
            paths.append(out.path)
            sidecars.append(
                {"path": name, "sizeInBytes": size, "modificationTime": _mtime_ms(out.path)}
            )
    checkpoint_metadata = {"checkpointMetadata": {"version": 0}}
    non_file = _non_file_actions(plan)
    top_actions = [checkpoint_metadata, *({"sidecar": s} for s in sidecars), *non_file]
    top_name = f"{0:020d}.checkpoint.{_uuid_of(spec.seed, 0x70, 0)}.{spec.v2_top_format}"
    top = log / top_name
    embedded = files if spec.sidecars == 0 else np.empty(0, dtype=np.int64)
    schema = _checkpoint_schema(plan, v2=True)
    if spec.v2_top_format == "json":
        with top.open("wb") as out_json:
            out_json.write(b"".join(_json_line(action) for action in top_actions))
            for chunk in _chunks(embedded):
                out_json.write(_line_bytes(_add_lines(_FileColumns(plan, chunk))))
        top_size = top.stat().st_size
        checkpoint_schema = None
    else:
        out = _ParquetOut(top, schema, _non_file_table(plan, schema, top_actions))
        out.write_files(plan, embedded)
        top_size = out.close()
        checkpoint_schema = schema
    v2_info = {
        "path": top_name,
        "sizeInBytes": top_size,
        "modificationTime": _mtime_ms(top),
        "nonFileActions": [*non_file, checkpoint_metadata],
        "sidecarFiles": sidecars,
    }
    _write_last_checkpoint(
        log,
        rows=len(top_actions) + len(files),
        size=top_size + sum(s["sizeInBytes"] for s in sidecars),
        adds=len(files),
        schema=checkpoint_schema,
        v2=v2_info,
    )
    return [top, *paths]


def _write_last_checkpoint(
    log: Path,
    rows: int,
    size: int,
    adds: int,
    schema: pa.Schema | None,
    parts: int | None = None,
    v2: dict[str, Any] | None = None,
) -> None:
    content: dict[str, Any] = {"version": 0, "size": rows}
    if parts is not None:
        content["parts"] = parts
    content["sizeInBytes"] = size
    content["numOfAddFiles"] = adds
    if schema is not None:
        content["checkpointSchema"] = _spark_schema(schema)
    if v2 is not None:
        content["v2Checkpoint"] = v2
    content["checksum"] = last_checkpoint_checksum(content)
    (log / "_last_checkpoint").write_text(json.dumps(content, separators=(",", ":")))


def _with_spark_metadata(schema: pa.Schema) -> pa.Schema:
    """The schema with Spark's row metadata (Spark readers take types from it)."""
    text = json.dumps(_spark_schema(schema), separators=(",", ":"))
    return schema.with_metadata({"org.apache.spark.sql.parquet.row.metadata": text})


def _spark_schema(schema: pa.Schema) -> dict[str, Any]:
    return {"type": "struct", "fields": [_spark_field(f) for f in schema]}


def _spark_field(arrow_field: pa.Field) -> dict[str, Any]:
    return {
        "name": arrow_field.name,
        "type": _spark_type(arrow_field.type),
        "nullable": True,
        "metadata": {},
    }


def _spark_type(arrow_type: pa.DataType) -> Any:
    if isinstance(arrow_type, pa.StructType):
        return {"type": "struct", "fields": [_spark_field(f) for f in arrow_type]}
    if isinstance(arrow_type, pa.MapType):
        return {
            "type": "map",
            "keyType": _spark_type(arrow_type.key_type),
            "valueType": _spark_type(arrow_type.item_type),
            "valueContainsNull": True,
        }
    if isinstance(arrow_type, pa.ListType):
        return {
            "type": "array",
            "elementType": _spark_type(arrow_type.value_type),
            "containsNull": True,
        }
    return _SPARK_TYPE_NAMES[arrow_type]


# ---------------------------------------------------------------------------------------------
# Spark's Murmur3 hash of strings (for multi-part checkpoint clustering).
# ---------------------------------------------------------------------------------------------

_SPARK_HASH_SEED = 42
_U32 = np.uint32


def _spark_string_hash(strings: pa.Array) -> npt.NDArray[np.uint32]:
    """Spark's ``Murmur3Hash(string, seed 42)`` of each string (``hashUnsafeBytes``: 4-byte
    little-endian words, then each remaining byte sign-extended and mixed on its own)."""
    if strings.type != pa.large_string():
        strings = strings.cast(pa.large_string())
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[
        strings.offset : strings.offset + len(strings) + 1
    ]
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)
    lengths = np.diff(offsets)
    result = np.empty(len(strings), dtype=np.uint32)
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        result[rows] = _murmur3(data, offsets[rows], length)
    return result


def _murmur3(
    data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], length: int
) -> npt.NDArray[np.uint32]:
    """Murmur3 of the ``length`` bytes at each of ``starts`` in ``data``."""
    aligned = length - length % 4
    h = np.full(len(starts), _SPARK_HASH_SEED, dtype=np.uint32)
    for position in range(0, aligned, 4):
        word = data[starts + position].astype(np.uint32)
        for byte in range(1, 4):
            word |= data[starts + position + byte].astype(np.uint32) << _U32(8 * byte)
        h = _mix_h1(h, _mix_k1(word))
    for position in range(aligned, length):
        signed = data[starts + position].view(np.int8).astype(np.int32).view(np.uint32)
        h = _mix_h1(h, _mix_k1(signed))
    h ^= _U32(length)
    h ^= h >> _U32(16)
    h *= _U32(0x85EBCA6B)
    h ^= h >> _U32(13)
    h *= _U32(0xC2B2AE35)
    h ^= h >> _U32(16)
    return h


def _rotl(x: npt.NDArray[np.uint32], r: int) -> npt.NDArray[np.uint32]:
    rotated: npt.NDArray[np.uint32] = (x << _U32(r)) | (x >> _U32(32 - r))
    return rotated


def _mix_k1(k: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    k = k * _U32(0xCC9E2D51)
    k = _rotl(k, 15)
    mixed: npt.NDArray[np.uint32] = k * _U32(0x1B873593)
    return mixed


def _mix_h1(h: npt.NDArray[np.uint32], k: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    h = h ^ k
    h = _rotl(h, 13)
    mixed: npt.NDArray[np.uint32] = h * _U32(5) + _U32(0xE6546B64)
    return mixed


# ---------------------------------------------------------------------------------------------
# Small helpers.
# ---------------------------------------------------------------------------------------------


def _validate(spec: LogSpec) -> None:
    counts = {
        "checkpoint_files": spec.checkpoint_files,
        "commits": spec.commits,
        "adds_per_commit": spec.adds_per_commit,
        "removes_per_commit": spec.removes_per_commit,
        "partitions": spec.partitions,
        "stats_columns": spec.stats_columns,
        "sidecars": spec.sidecars,
    }
    for name, value in counts.items():
        if value < 0:
            raise ValueError(f"LogSpec.{name} must not be negative, got {value}")
    if spec.rows_per_file < 1:
        raise ValueError(f"LogSpec.rows_per_file must be at least 1, got {spec.rows_per_file}")
    if spec.checkpoint not in ("none", "classic", "classic_parsed", "multipart", "v2"):
        raise ValueError(f"LogSpec.checkpoint {spec.checkpoint!r} is not a checkpoint kind")
    if spec.deletion_vectors not in ("none", "inline", "file"):
        raise ValueError(f"LogSpec.deletion_vectors {spec.deletion_vectors!r} is not a DV kind")
    if spec.v2_top_format not in ("parquet", "json"):
        raise ValueError(f"LogSpec.v2_top_format {spec.v2_top_format!r} is not parquet or json")
    unknown = [kind for kind in spec.column_types if kind not in COLUMN_TYPES]
    if unknown or not isinstance(spec.column_types, tuple):
        raise ValueError(
            f"LogSpec.column_types must be a tuple of {', '.join(COLUMN_TYPES)}, "
            f"got {spec.column_types!r}"
        )
    names = spec.column_names
    if names and (
        not isinstance(names, tuple)
        or len(names) != max(spec.stats_columns - 1, 0)
        or len(set(names) | {"id", "part"}) != len(names) + 2
    ):
        raise ValueError(
            "LogSpec.column_names must be a tuple of stats_columns - 1 distinct names other "
            f"than id and part, got {names!r}"
        )


def _one_percent_filter(plan: _Plan, live: npt.NDArray[np.int64]) -> tuple[str, int]:
    """``id < X`` keeping the 1% of live files with the smallest ids (files' id ranges are
    disjoint and grow with the file number)."""
    if len(live) == 0:
        return "id < 0", 0
    keep = max(1, round(len(live) * 0.01))
    bound = int(live[keep - 1]) * plan.spec.rows_per_file + 1
    if plan.spec.stats_columns == 0:
        return f"id < {bound}", len(live)
    return f"id < {bound}", keep


def _chunks(
    files: npt.NDArray[np.int64], size: int = CHUNK_FILES
) -> Iterator[npt.NDArray[np.int64]]:
    for start in range(0, len(files), size):
        yield files[start : start + size]


def _join(parts: Sequence[Any], count: int | None = None) -> pa.Array:
    """Concatenates strings element-wise; ``parts`` are arrays or literal strings (then
    ``count`` gives the length)."""
    merged: list[Any] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    if len(merged) == 1 and isinstance(merged[0], str):
        if count is None:
            raise ValueError("_join of literals alone needs a count")
        return pa.repeat(pa.scalar(merged[0], pa.string()), count)
    return pc.binary_join_element_wise(*merged, "")


def _to_string(values: npt.ArrayLike | pa.Array) -> pa.Array:
    array = values if isinstance(values, pa.Array) else pa.array(np.asarray(values))
    return pc.cast(array, pa.string())


def _stats_text(values: pa.Array) -> pa.Array:
    """Statistics values as Delta on Spark writes them in the ``stats`` JSON (unquoted): dates
    ``2023-11-14``, timestamps in UTC to the millisecond ``2023-11-14T22:13:20.000Z``."""
    if pa.types.is_timestamp(values.type):
        millis = pc.cast(values, pa.timestamp("ms", tz="UTC"), safe=False)
        return pc.strftime(millis, format="%Y-%m-%dT%H:%M:%SZ")
    return _to_string(values)


def _line_bytes(lines: pa.Array) -> memoryview | bytes:
    """The concatenated text of ``lines`` (a string array), without copying when possible."""
    if isinstance(lines, pa.ChunkedArray):
        return b"".join(bytes(_line_bytes(chunk)) for chunk in lines.chunks)
    if len(lines) == 0:
        return b""
    if lines.null_count:
        raise ValueError("a generated line is null")
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[
        lines.offset : lines.offset + len(lines) + 1
    ]
    data = lines.buffers()[2]
    return memoryview(data)[int(offsets[0]) : int(offsets[-1])]


def _json_line(action: dict[str, Any]) -> bytes:
    return (json.dumps(action, separators=(",", ":")) + "\n").encode()


def _mtime_ms(path: Path) -> int:
    return path.stat().st_mtime_ns // 1_000_000


def _mix(values: npt.NDArray[np.int64], seed: int, salt: int) -> npt.NDArray[np.uint64]:
    """SplitMix64 of (seed, salt, value): deterministic pseudo-random 64-bit numbers."""
    key = np.uint64(_mix_scalar(seed, salt) & 0xFFFFFFFFFFFFFFFF)
    x = values.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + key
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: npt.NDArray[np.uint64] = x ^ (x >> np.uint64(31))
    return mixed


def _mix_scalar(seed: int, salt: int) -> int:
    digest = hashlib.sha256(struct.pack("<qq", seed, salt)).digest()
    return int.from_bytes(digest[:16], "little")


def _uuid_of(seed: int, salt: int, index: int) -> uuid.UUID:
    digest = hashlib.sha256(struct.pack("<qqq", seed, salt, index)).digest()
    return uuid.UUID(bytes=digest[:16], version=4)


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _uuid_strings(files: npt.NDArray[np.int64], seed: int, salt: int) -> pa.Array:
    """A random-looking version-4 UUID text per file, vectorised."""
    high = _mix(files, seed, salt)
    low = _mix(files, seed, salt + 1)
    high = (high & ~np.uint64(0xF000)) | np.uint64(0x4000)
    low = (low & np.uint64(0x3FFFFFFFFFFFFFFF)) | np.uint64(0x8000000000000000)
    shifts = np.arange(60, -4, -4, dtype=np.uint64)
    high_hex = _HEX[((high[:, None] >> shifts) & np.uint64(0xF)).astype(np.intp)]
    low_hex = _HEX[((low[:, None] >> shifts) & np.uint64(0xF)).astype(np.intp)]
    text = np.full((len(files), 36), ord("-"), dtype=np.uint8)
    text[:, 0:8] = high_hex[:, 0:8]
    text[:, 9:13] = high_hex[:, 8:12]
    text[:, 14:18] = high_hex[:, 12:16]
    text[:, 19:23] = low_hex[:, 0:4]
    text[:, 24:36] = low_hex[:, 4:16]
    offsets = np.arange(0, 36 * (len(files) + 1), 36, dtype=np.int32)
    return pa.StringArray.from_buffers(
        len(files), pa.py_buffer(offsets), pa.py_buffer(text.tobytes())
    )


def _dv_prefix(seed: int, group: int) -> str:
    value = _mix_scalar(seed, 0xAB00000 + group)
    alphabet = DV_PREFIX_ALPHABET
    return alphabet[value % len(alphabet)] + alphabet[(value // len(alphabet)) % len(alphabet)]


def _canonical_string(text: str) -> str:
    return '"' + quote(text, safe="") + '"'


def _canonical_pairs(value: Any, path: list[str], out: list[tuple[bytes, str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _canonical_pairs(item, [*path, _canonical_string(key)], out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _canonical_pairs(item, [*path, str(index)], out)
    else:
        text = _canonical_string(value) if isinstance(value, str) else json.dumps(value)
        out.append(("+".join(path).encode(), text))


def _info_to_json(info: TableInfo) -> dict[str, Any]:
    def rel(path: Path) -> str:
        return path.relative_to(info.path).as_posix()

    return {
        "version": info.version,
        "num_files": info.num_files,
        "num_deletion_vectors": info.num_deletion_vectors,
        "older_version": info.older_version,
        "one_percent_filter": info.one_percent_filter,
        "one_percent_files": info.one_percent_files,
        "checkpoint_paths": [rel(p) for p in info.checkpoint_paths],
        "commit_paths": [rel(p) for p in info.commit_paths],
        "older_num_files": info.older_num_files,
        "compaction_paths": [rel(p) for p in info.compaction_paths],
        "num_dv_files": info.num_dv_files,
    }


def _info_from_json(root: Path, data: dict[str, Any]) -> TableInfo:
    return TableInfo(
        path=root,
        version=int(data["version"]),
        num_files=int(data["num_files"]),
        num_deletion_vectors=int(data["num_deletion_vectors"]),
        older_version=int(data["older_version"]),
        one_percent_filter=str(data["one_percent_filter"]),
        one_percent_files=int(data["one_percent_files"]),
        checkpoint_paths=[root / p for p in data["checkpoint_paths"]],
        commit_paths=[root / p for p in data["commit_paths"]],
        older_num_files=int(data["older_num_files"]),
        compaction_paths=[root / p for p in data["compaction_paths"]],
        num_dv_files=int(data["num_dv_files"]),
    )
