"""Every operation on every kind of state source, as regression tests for bugs that live in a
combination (issue 23: partition values + deletion vectors + a snapshot read from a
checkpoint with ``partitionValues_parsed`` + a row-level operation).

A case builds a small table of one :class:`Shape` (partitioning, deletion vectors, column
mapping, row tracking, change data feed, in-commit timestamps), leaves its newest state in
one :class:`Source` (``.crc`` + commits, a log compaction, classic checkpoints with and
without ``stats_parsed`` / ``partitionValues_parsed``, multi-part, V2 with and without
sidecars, the classic-named copy of a V2 checkpoint, the post-commit checkpoint, a
checkpoint followed by commits or by a schema change), runs one operation and checks the
rows of every version against a plain-Python :class:`Model` kept alongside (and the change
feed, row ids, in-commit timestamps and the newest ``.crc`` where the shape has them). A
checkpoint of the source's kind and a delete of one row through it follow, checked the same
way: the operation's commit must survive being read back from a checkpoint by a row-level
operation, which is where issue 23 struck.

The matrix (CI time, not the full cross product): every operation on every source for the
issue's shape; every shape on every source for ``merge`` (deletes, updates and inserts at
once: the row-level paths where issue 23 lived); every shape with every operation, the
source rotating so that each (shape, source) and (operation, source) pair is met too.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pytest

import deltalog
from deltalog.exceptions import ConstraintViolationError, InvalidArgumentError

Row = dict[str, Any]

DAY_SECONDS = 24 * 60 * 60
#: Table properties of every case: checkpoints only where a source writes them, and a log
#: retention that the cleanup operation's aged files fall out of (Spark wants the file
#: retention no longer).
BASE_PROPERTIES = {
    "delta.checkpointInterval": "1000",
    "delta.logRetentionDuration": "interval 2 days",
    "delta.deletedFileRetentionDuration": "interval 1 days",
}
DV = {"delta.enableDeletionVectors": "true"}
COW = {"delta.enableDeletionVectors": "false"}
CDF = {"delta.enableChangeDataFeed": "true"}
ROW_TRACKING = {"delta.enableRowTracking": "true"}
ICT = {"delta.enableInCommitTimestamps": "true"}
V2_POLICY = {"delta.checkpointPolicy": "v2"}


# --- shapes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A table layout: columns ``id`` (long), ``p`` (``part_type``, the partition column
    when ``partitioned``; ``values[id % len(values)]``) and ``v`` (int, ``id * 10``), with
    the table ``properties``."""

    name: str
    part_type: pa.DataType = field(default_factory=pa.string)
    values: tuple[Any, ...] = ("p0", "p1")
    partitioned: bool = True
    properties: Mapping[str, str] = field(default_factory=lambda: DV)

    def has(self, properties: Mapping[str, str]) -> bool:
        """Whether every one of ``properties`` is set as given."""
        return all(self.properties.get(key) == value for key, value in properties.items())

    def part(self, row_id: int) -> Any:
        """The ``p`` value of the row with id ``row_id``."""
        return self.values[row_id % len(self.values)]

    def rows(self, ids: Iterable[int], v_offset: int = 0) -> list[Row]:
        """Fresh rows with the given ids."""
        return [{"id": i, "p": self.part(i), "v": i * 10 + v_offset} for i in ids]


def literal(value: Any) -> str:
    """``value`` as a literal of the filter language."""
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


#: The shape of issue 23: a string partition column and deletion vectors.
ISSUE = Shape("str-part-dv")
DATES = (date(2024, 1, 1), date(1969, 12, 31), None)
SHAPES = [
    Shape("str-part-null-cow", values=("x", "a b%=/", None), properties=COW),
    Shape("int-part-null-dv", pa.int32(), (1, 2, None)),
    Shape("date-part-null-dv", pa.date32(), DATES),
    Shape("unpartitioned-dv", partitioned=False),
    Shape("unpartitioned-cow", partitioned=False, properties=COW),
    Shape("cm-name-dv", properties={**DV, "delta.columnMapping.mode": "name"}),
    Shape(
        "cm-id-cow", pa.int32(), (1, 2, None), properties={**COW, "delta.columnMapping.mode": "id"}
    ),
    Shape("row-tracking-dv", properties={**DV, **ROW_TRACKING}),
    Shape("row-tracking-cow", partitioned=False, properties={**COW, **ROW_TRACKING}),
    Shape("cdf-cow", values=("x", "y", None), properties={**COW, **CDF}),
    Shape("cdf-dv", pa.date32(), DATES, properties={**DV, **CDF}),
    Shape("ict-dv", properties={**DV, **ICT}),
    Shape(
        "everything",
        pa.date32(),
        DATES,
        properties={**DV, **CDF, **ROW_TRACKING, **ICT, "delta.columnMapping.mode": "id"},
    ),
]


# --- state sources ------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where the newest state of the table comes from when the operation runs: table
    ``properties``, the options of the checkpoint written after the history (``None``: no
    checkpoint), and what else is done to the log."""

    name: str
    checkpoint: Mapping[str, Any] | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    tail: str | None = None
    """What follows the checkpoint: ``"commits"`` (an append and a delete) or
    ``"add-column"`` (a schema change)."""
    compact: bool = False
    """A log compaction file of versions 1 and 2."""
    drop_manifest: bool = False
    """Only the classic-named copy of the V2 checkpoint is left."""


SOURCES = [
    Source("crc"),
    Source("compacted", compact=True),
    Source("classic", {}),
    Source("classic-json-stats", {}, {"delta.checkpoint.writeStatsAsStruct": "false"}),
    Source("classic-struct-stats", {}, {"delta.checkpoint.writeStatsAsJson": "false"}),
    Source("multi-part", {"part_size": 2}),
    Source("v2-json-sidecars", {"part_size": 2}, V2_POLICY),
    Source("v2-parquet-sidecars", {"v2_format": "parquet"}, V2_POLICY),
    Source("v2-inline", {"v2_sidecars": False}, V2_POLICY),
    Source("v2-compat-copy", {"classic_compat": True}, V2_POLICY, drop_manifest=True),
    Source("post-commit", None, {"delta.checkpointInterval": "1"}),
    Source("classic+commits", {}, tail="commits"),
    Source("v2+commits", {}, V2_POLICY, tail="commits"),
    Source("classic+add-column", {}, tail="add-column"),
]


# --- the model ----------------------------------------------------------------------------


@dataclass
class Model:
    """The table at ``path`` and what it must hold: ``rows`` (the latest), ``columns`` and
    the rows of every version."""

    path: Path
    shape: Shape
    source: Source
    rows: list[Row] = field(default_factory=list)
    columns: list[str] = field(default_factory=lambda: ["id", "p", "v"])
    history: dict[int, list[Row]] = field(default_factory=dict)
    schemas: dict[int, list[str]] = field(default_factory=dict)
    """The columns of every version."""
    readable_from: int = 0
    """Versions before this one were cleaned up."""
    rows_from: int = 0
    """Versions before this one open, but their rows are not checked (a vacuum may have
    deleted their files)."""
    change_feed: bool = True
    """Whether the change feed from version 0 is still complete."""

    @property
    def table(self) -> deltalog.DeltaTable:
        """The table, opened afresh."""
        return deltalog.DeltaTable(str(self.path))

    def record(self) -> None:
        """Gives every version committed since the last call the current rows."""
        latest = self.table.latest_version()
        newest = max(self.history, default=-1)
        for version in range(newest + 1, latest + 1):
            self.history[version] = [dict(row) for row in self.rows]
            self.schemas[version] = list(self.columns)

    def arrow(self, rows: Sequence[Row]) -> pa.Table:
        """``rows`` as Arrow data of the table's columns."""
        types = {"id": pa.int64(), "p": self.shape.part_type, "v": pa.int32()}
        return pa.table(
            {c: pa.array([r.get(c) for r in rows], types.get(c, pa.string())) for c in self.columns}
        )

    def write(self, rows: Sequence[Row], **options: Any) -> None:
        """Writes ``rows`` with :func:`deltalog.write_table`."""
        deltalog.write_table(str(self.path), self.arrow(rows), **options)


def key(row: Row, columns: Sequence[str]) -> tuple[Any, ...]:
    """The row as a tuple over ``columns`` (missing ones NULL)."""
    return tuple(row.get(c) for c in columns)


def counted(rows: Iterable[Row], columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The rows as a multiset."""
    return Counter(key(row, columns) for row in rows)


# --- building a case ----------------------------------------------------------------------


def build(path: Path, shape: Shape, source: Source) -> Model:
    """The table of ``shape`` with three versions (a create, an append, a delete), its state
    left in ``source``."""
    model = Model(path, shape, source)
    properties = {**BASE_PROPERTIES, **shape.properties, **source.properties}
    model.rows = shape.rows(range(30))
    model.write(
        model.rows, partition_by=["p"] if shape.partitioned else None, configuration=properties
    )
    model.record()
    append(model, range(30, 40))
    delete(model, "id = 3 OR id = 33", lambda r: r["id"] in (3, 33))
    prepare(model)
    return model


def prepare(model: Model) -> None:
    """Leaves the newest state in the model's source."""
    source, table = model.source, model.table
    if source.compact:
        table.compact_logs(1, 2)
    if source.checkpoint is not None:
        info = table.checkpoint(**source.checkpoint)
        if source.drop_manifest:
            Path(info.files[0].removeprefix("file://")).unlink()
    if source.tail == "commits":
        append(model, range(40, 44))
        delete(model, "id = 41 OR id = 5", lambda r: r["id"] in (41, 5))
    elif source.tail == "add-column":
        op_add_column(model)
        model.record()


def append(model: Model, ids: Iterable[int]) -> None:
    """Appends fresh rows with ``ids``."""
    new = model.shape.rows(ids)
    model.write(new)
    model.rows += new
    model.record()


def delete(model: Model, predicate: str, matches: Callable[[Row], bool]) -> None:
    """Deletes the rows ``predicate`` (``matches`` in Python) selects."""
    model.table.delete(predicate)
    model.rows = [r for r in model.rows if not matches(r)]
    model.record()


# --- operations ---------------------------------------------------------------------------


def op_append(model: Model) -> None:
    """A blind append."""
    append(model, range(100, 105))


def op_overwrite(model: Model) -> None:
    """An overwrite of every row."""
    new = model.shape.rows(range(200, 206))
    model.write(new, mode="overwrite")
    model.rows = new


def op_replace_where(model: Model) -> None:
    """``replaceWhere`` with a data predicate: rows deleted inside files."""
    new = model.shape.rows(range(5), v_offset=7)
    model.write(new, mode="overwrite", predicate="id < 10")
    model.rows = [r for r in model.rows if r["id"] >= 10] + new


def op_replace_partition(model: Model) -> None:
    """``replaceWhere`` with a predicate on ``p`` (whole partitions when partitioned)."""
    value = model.shape.values[0]
    new = [{"id": i, "p": value, "v": i} for i in range(300, 303)]
    model.write(new, mode="overwrite", predicate=f"p = {literal(value)}")
    model.rows = [r for r in model.rows if r["p"] != value] + new


def op_schema_merge(model: Model) -> None:
    """An append with a new column ``w`` (``schema_mode="merge"``)."""
    name = new_column(model)
    new = [{**row, name: f"w{row['id']}"} for row in model.shape.rows(range(400, 403))]
    model.write(new, schema_mode="merge")
    model.rows += new


def new_column(model: Model) -> str:
    """Adds a fresh string column (``w``, ``w2``, ...) to the model; returns its name."""
    name = "w" if "w" not in model.columns else f"w{len(model.columns)}"
    model.columns.append(name)
    return name


def op_delete(model: Model) -> None:
    """A delete by a data predicate touching files of every version."""
    delete(model, "id % 10 = 7", lambda r: r["id"] % 10 == 7)


def op_delete_partition(model: Model) -> None:
    """A delete of a whole partition (of NULL ``p`` when the shape has it)."""
    values = model.shape.values
    if None in values:
        delete(model, "p IS NULL", lambda r: r["p"] is None)
    else:
        delete(model, f"p = {literal(values[1])}", lambda r: r["p"] == values[1])


def op_update(model: Model) -> None:
    """An update by a data predicate."""
    model.table.update({"v": "v + 1000"}, predicate="id % 10 = 2")
    for row in model.rows:
        if row["id"] % 10 == 2:
            row["v"] += 1000


def op_merge(model: Model) -> None:
    """A merge: matched delete and update, not matched insert."""
    source = [{"id": 1, "p": model.shape.part(1), "v": -1}]
    source += [{"id": i, "p": model.shape.part(i), "v": i + 7} for i in (2, 12, 500, 501)]
    (
        model.table.merge(model.arrow(source), on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.v < 0")
        .when_matched_update({"v": "s.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    by_id = {row["id"]: row for row in source}
    kept = [r for r in model.rows if by_id.get(r["id"], {"v": 0})["v"] >= 0]
    for row in kept:
        if row["id"] in by_id:
            row["v"] = by_id[row["id"]]["v"]
    present = {r["id"] for r in model.rows}
    model.rows = kept + [row for row in source if row["id"] not in present]


def op_merge_by_source(model: Model) -> None:
    """A merge: matched update, not matched by source delete and update."""
    source = [{"id": i, "p": model.shape.part(i), "v": -i} for i in (4, 14)]
    (
        model.table.merge(model.arrow(source), on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"v": "s.v"})
        .when_not_matched_by_source_delete(predicate="t.id > 35")
        .when_not_matched_by_source_update({"v": "t.v + 1"})
        .execute()
    )
    matched = {row["id"]: row["v"] for row in source}
    model.rows = [r for r in model.rows if r["id"] in matched or r["id"] <= 35]
    for row in model.rows:
        row["v"] = matched.get(row["id"], row["v"] + 1)


def op_optimize(model: Model) -> None:
    """Compaction, purging deletion vectors."""
    model.table.optimize()


def op_zorder(model: Model) -> None:
    """Z-ordering by ``v``."""
    model.table.optimize(z_order_by=["v"])


def op_restore(model: Model) -> None:
    """A restore of version 1."""
    model.table.restore(1)
    model.rows = [dict(row) for row in model.history[1]]
    if model.columns != model.schemas[1]:
        model.columns = list(model.schemas[1])
        model.change_feed = False  # a column dropped: the feed refuses the range


def op_set_property(model: Model) -> None:
    """``SET TBLPROPERTIES``: statistics of one column only from now on."""
    model.table.alter.set_properties({"delta.dataSkippingNumIndexedCols": "1", "owner": "qa"})


def op_add_column(model: Model) -> None:
    """``ADD COLUMNS``."""
    name = new_column(model)
    model.table.alter.add_columns(pa.schema([(name, pa.string())]))


def op_add_constraint(model: Model) -> None:
    """``ADD CONSTRAINT ... CHECK``, evaluated on every row."""
    model.table.alter.add_constraint("v_not_negative", "v >= 0")


def op_vacuum(model: Model) -> None:
    """A vacuum with no retention: earlier versions' rows may be gone."""
    model.table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    model.rows_from = model.table.latest_version()
    model.change_feed = False


def op_checkpoint(model: Model) -> None:
    """A checkpoint of the source's kind (classic without one)."""
    info = model.table.checkpoint(**(model.source.checkpoint or {}))
    assert info.version == model.table.latest_version()


def op_cleanup(model: Model) -> None:
    """Log cleanup of a log aged past its retention: everything before the newest checkpoint
    goes."""
    touch_log(model.path, time.time() - 10 * DAY_SECONDS)
    expected = newest_checkpoint(model.path)
    result = model.table.cleanup_metadata()
    assert result.oldest_kept_version == expected
    touch_log(model.path, time.time())  # no later post-commit cleanup deletes more
    model.readable_from = expected or 0
    model.change_feed = expected is None


def touch_log(path: Path, when: float) -> None:
    """Sets the modification time of every file in the table's log (sidecars too)."""
    for file in (path / "_delta_log").rglob("*"):
        if file.is_file():
            os.utime(file, (when, when))


def newest_checkpoint(path: Path) -> int | None:
    """The version of the newest checkpoint in the log, if any."""
    names = (p.name for p in (path / "_delta_log").iterdir())
    versions = [int(name[:20]) for name in names if name[:20].isdigit() and ".checkpoint." in name]
    return max(versions, default=None)


class Op(NamedTuple):
    """An operation and whether row ids of the rows it leaves in place must stay."""

    run: Callable[[Model], None]
    keeps_row_ids: bool = True


OPS: dict[str, Op] = {
    "append": Op(op_append),
    "overwrite": Op(op_overwrite, keeps_row_ids=False),
    "replace-where": Op(op_replace_where, keeps_row_ids=False),
    "replace-partition": Op(op_replace_partition, keeps_row_ids=False),
    "schema-merge": Op(op_schema_merge),
    "delete": Op(op_delete),
    "delete-partition": Op(op_delete_partition),
    "update": Op(op_update),
    "merge": Op(op_merge),
    "merge-by-source": Op(op_merge_by_source),
    "optimize": Op(op_optimize),
    "zorder": Op(op_zorder),
    "restore": Op(op_restore, keeps_row_ids=False),
    "set-property": Op(op_set_property),
    "add-column": Op(op_add_column),
    "add-constraint": Op(op_add_constraint),
    "vacuum": Op(op_vacuum),
    "checkpoint": Op(op_checkpoint),
    "cleanup": Op(op_cleanup),
}


# --- checks -------------------------------------------------------------------------------


def check_versions(model: Model) -> None:
    """Every version opens; those with known rows read exactly them; cleaned-up versions are
    gone."""
    table = model.table
    latest = table.latest_version()
    assert sorted(model.history) == list(range(latest + 1))
    for version, rows in model.history.items():
        if version < model.readable_from:
            with pytest.raises(deltalog.VersionNotFoundError):
                table.snapshot(version).num_files  # noqa: B018
        elif version < model.rows_from:
            assert table.snapshot(version).num_files >= 0
        else:
            check_rows(model, version, rows)
    check_rows(model, latest, model.rows)
    assert table.snapshot().validate_checksum(), "the newest .crc is missing"


def check_rows(model: Model, version: int, rows: list[Row]) -> None:
    """The table at ``version`` holds exactly ``rows``."""
    read = deltalog.read_table(str(model.path), version=version)
    columns = read.column_names
    expected = counted(rows, columns)
    actual = counted(read.to_pylist(), columns)
    if actual != expected:
        missing = list((expected - actual).elements())[:5]
        extra = list((actual - expected).elements())[:5]
        pytest.fail(f"v{version}: missing {missing}, extra {extra}")
    assert columns == model.schemas[version], f"v{version}: columns"


def check_change_feed(model: Model) -> None:
    """The change feed from version 0, netted, is the latest rows."""
    if not model.shape.has(CDF) or not model.change_feed:
        return
    net: Counter[tuple[Any, ...]] = Counter()
    for change in model.table.changes(0).to_pyarrow().to_pylist():
        sign = 1 if change["_change_type"] in ("insert", "update_postimage") else -1
        net[key(change, model.columns)] += sign
    net = Counter({row: n for row, n in net.items() if n != 0})
    assert net == counted(model.rows, model.columns), "the change feed nets to other rows"


def row_ids(model: Model) -> dict[int, int]:
    """Each row's ``id`` to its row id, at the latest version (row ids must be unique)."""
    rows = model.table.snapshot().scan(row_tracking=True).to_pyarrow().to_pylist()
    row_ids = [row["row_id"] for row in rows]
    assert None not in row_ids, "a row without a row id"
    assert len(set(row_ids)) == len(rows), "row ids are not unique"
    return {row["id"]: row["row_id"] for row in rows}


def check_in_commit_timestamps(model: Model) -> None:
    """Every kept version has an in-commit timestamp, strictly increasing."""
    if not model.shape.has(ICT):
        return
    history = model.table.history().to_pyarrow().to_pylist()
    stamps = sorted((row["version"], row["in_commit_timestamp"]) for row in history)
    assert all(stamp is not None for _, stamp in stamps), stamps
    assert all(a[1] < b[1] for a, b in itertools.pairwise(stamps)), stamps


def check(model: Model) -> None:
    """Every check of the model's table."""
    check_versions(model)
    check_change_feed(model)
    check_in_commit_timestamps(model)


# --- running a case -----------------------------------------------------------------------


def exercise(model: Model, operation: str, delete_after: bool = True) -> None:
    """Runs the operation on the model's table, checks every version, then checkpoints the
    result (the source's kind) and (``delete_after``) deletes a row through that checkpoint,
    checking again."""
    op = OPS[operation]
    tracked = model.shape.has(ROW_TRACKING)
    before = row_ids(model) if tracked else {}
    op.run(model)
    model.record()
    check(model)
    if tracked and op.keeps_row_ids:
        after = row_ids(model)
        kept = [i for i in before if i in after]
        assert [after[i] for i in kept] == [before[i] for i in kept], "row ids changed"
    follow_up(model, delete_after)


def follow_up(model: Model, delete_after: bool) -> None:
    """A checkpoint of the source's kind, then a delete of one row read from it."""
    model.table.checkpoint(**(model.source.checkpoint or {}))
    if model.rows and delete_after:
        last = max(row["id"] for row in model.rows)
        delete(model, f"id = {last}", lambda r: r["id"] == last)
    check(model)
    if model.shape.has(ROW_TRACKING):
        row_ids(model)


class Case(NamedTuple):
    """One combination to run."""

    shape: Shape
    operation: str
    source: Source

    @property
    def id(self) -> str:
        """The readable test id."""
        return f"{self.shape.name}:{self.operation}@{self.source.name}"


def matrix() -> list[Case]:
    """The covering design of the module docstring, without duplicates."""
    cases = [Case(ISSUE, op, source) for op in OPS for source in SOURCES]
    cases += [Case(shape, "merge", source) for shape in SHAPES for source in SOURCES]
    for i, shape in enumerate(SHAPES):
        for j, op in enumerate(OPS):
            cases.append(Case(shape, op, SOURCES[(i + j) % len(SOURCES)]))
    unique = {case.id: case for case in cases}
    return list(unique.values())


CASES = matrix()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_combination(tmp_path: Path, case: Case) -> None:
    """The operation on the shape's table with its state in the source leaves the rows the
    model expects at every version, and survives a checkpoint and a delete after it."""
    exercise(build(tmp_path / "t", case.shape, case.source), case.operation)


def test_issue_23(tmp_path: Path) -> None:
    """The reproduction of issue 23: appends and deletion-vector deletes on a partitioned
    table, through the post-commit checkpoint at version 10."""
    path = tmp_path / "t"
    data = pa.table(
        {
            "id": pa.array(range(100), pa.int64()),
            "p": pa.array([f"p{i % 2}" for i in range(100)]),
            "v": pa.array(range(100), pa.int32()),
        }
    )
    deltalog.write_table(str(path), data, partition_by=["p"], configuration=DV)
    expected = Counter(range(100))
    for k in range(12):
        deltalog.write_table(str(path), data)
        expected.update(range(100))
        deltalog.DeltaTable(str(path)).delete(f"id = {k}")
        expected[k] = 0
    rows = deltalog.read_table(str(path)).column("id").to_pylist()
    assert Counter(rows) == +expected


def empty_and_null(path: Path, how: str) -> None:
    """Writes rows ``id`` 1 (``p`` ``''``) and 2 (``p`` NULL) into the table at ``path``
    ``how``: creating it, appending, overwriting, or inserting with a merge."""
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array(["", None], pa.string())})
    if how == "create":
        deltalog.write_table(str(path), data, partition_by=["p"])
        return
    seed = pa.table({"id": pa.array([0], pa.int64()), "p": pa.array(["x"], pa.string())})
    deltalog.write_table(str(path), seed, partition_by=["p"], configuration=DV)
    if how == "merge":
        merger = deltalog.DeltaTable(str(path)).merge(data, "t.id = s.id", "s", "t")
        merger.when_not_matched_insert_all().execute()
    else:
        deltalog.write_table(str(path), data, mode=how)


@pytest.mark.parametrize("how", ["create", "append", "overwrite", "merge"])
def test_empty_string_and_null_partition_values_in_one_write(tmp_path: Path, how: str) -> None:
    """``''`` and NULL are both the NULL partition (as Spark writes ``''``); one write holding
    both keeps both rows (it once kept one group and dropped the other)."""
    path = tmp_path / "t"
    empty_and_null(path, how)
    rows = sorted((r["id"], r["p"]) for r in deltalog.read_table(str(path)).to_pylist())
    seed = [(0, "x")] if how in ("append", "merge") else []
    assert rows == [*seed, (1, None), (2, None)]
    for version in range(deltalog.DeltaTable(str(path)).latest_version() + 1):
        deltalog.read_table(str(path), version=version)


#: Operations that rewrite existing rows of an identity-column table (the delete and the
#: optimize rewrite whole files without deletion vectors; the updates add 1000 to ``v`` of
#: the ids ending in 2; the delete takes those ending in 7).
IDENTITY_OPS: dict[str, Callable[[deltalog.DeltaTable], object]] = {
    "delete": lambda t: t.delete("id % 10 = 7"),
    "update": lambda t: t.update({"v": "v + 1000"}, predicate="id % 10 = 2"),
    "merge": lambda t: (
        t.merge(pa.table({"id": pa.array([2, 12], pa.int64())}), "t.id = s.id", "s", "t")
        .when_matched_update({"v": "t.v + 1000"})
        .execute()
    ),
    "optimize": lambda t: t.optimize(),
}


def identity_table(path: Path, dv: bool, checkpoint: bool) -> Model:
    """A table with ``k BIGINT GENERATED ALWAYS AS IDENTITY`` before the issue shape's
    columns: 40 rows in two writes, its state checkpointed or not."""
    identity = {
        "delta.identity.start": 1,
        "delta.identity.step": 1,
        "delta.identity.allowExplicitInsert": False,
    }
    fields = [("k", "long", identity), ("id", "long", {}), ("p", "string", {})]
    fields.append(("v", "integer", {}))
    schema = {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": m} for n, t, m in fields],
    }
    configuration = {**BASE_PROPERTIES, **(DV if dv else COW)}
    deltalog.DeltaTable.create(str(path), json.dumps(schema), ["p"], configuration)
    model = Model(path, ISSUE, SOURCES[2] if checkpoint else SOURCES[0])
    model.record()
    append(model, range(30))
    append(model, range(30, 40))
    prepare(model)
    return model


@pytest.mark.parametrize("checkpoint", [False, True], ids=["crc", "classic"])
@pytest.mark.parametrize("dv", [True, False], ids=["dv", "cow"])
@pytest.mark.parametrize("operation", list(IDENTITY_OPS))
def test_identity_always_survives_rewrites(
    tmp_path: Path, operation: str, dv: bool, checkpoint: bool
) -> None:
    """Rows an operation rewrites keep their ``GENERATED ALWAYS`` identity values (they are
    not values given for inserted rows, which the identity column refuses): bug C4."""
    model = identity_table(tmp_path / "t", dv, checkpoint)
    before = {r["id"]: r["k"] for r in deltalog.read_table(str(model.path)).to_pylist()}
    IDENTITY_OPS[operation](model.table)
    for row in model.rows:
        if (operation == "update" and row["id"] % 10 == 2) or (
            operation == "merge" and row["id"] in (2, 12)
        ):
            row["v"] += 1000
    if operation == "delete":
        model.rows = [r for r in model.rows if r["id"] % 10 != 7]
    model.record()
    model.columns = ["k", *model.columns]
    for version, rows in model.history.items():
        model.history[version] = [{**r, "k": before.get(r["id"])} for r in rows]
        model.schemas[version] = model.columns
    model.rows = model.history[max(model.history)]
    check(model)


def test_identity_values_stay_the_tables_to_give(tmp_path: Path) -> None:
    """After rewrites, identity values are still refused from callers (as Delta on Spark
    refuses them) and new rows still get fresh ones."""
    model = identity_table(tmp_path / "t", dv=False, checkpoint=False)
    table = model.table
    with pytest.raises(InvalidArgumentError, match="identity column `k` cannot be updated"):
        table.update({"k": "k + 100"})
    source = pa.table({"id": pa.array([2], pa.int64())})
    merge = table.merge(source, "t.id = s.id", "s", "t").when_matched_update({"k": "s.id"})
    with pytest.raises(InvalidArgumentError, match="identity column `k` cannot be updated"):
        merge.execute()
    given = pa.table(
        {
            "k": pa.array([7], pa.int64()),
            "id": pa.array([99], pa.int64()),
            "p": ["p0"],
            "v": pa.array([0], pa.int32()),
        }
    )
    with pytest.raises(ConstraintViolationError, match="GENERATED ALWAYS"):
        deltalog.write_table(str(model.path), given)
    before = {r["id"]: r["k"] for r in deltalog.read_table(str(model.path)).to_pylist()}
    table.update({"v": "v + 1"})
    table.optimize()
    deltalog.write_table(str(model.path), given.drop_columns(["k"]))
    after = {r["id"]: r["k"] for r in deltalog.read_table(str(model.path)).to_pylist()}
    assert {i: k for i, k in after.items() if i != 99} == before
    assert after[99] > max(before.values())
