"""Tables deltalog writes read the same in the other readers Python users have.

A seed picks a feature mix (partitioning with NULL partition values, deletion vectors, column
mapping, row tracking, the change data feed, in-commit timestamps, V2 checkpoints, statistics
only as structs in checkpoints, a small checkpoint interval, constraints, generated columns)
and a short history that deltalog writes (appends, overwrites, replaceWhere, deletes, updates,
merges, optimize, checkpoints, columns added, renamed and dropped). Alongside, the rows the
table must hold are tracked in Python: that model, not deltalog's own read, is the reference.

Each reader then reads the table whole, through two filters (which let it skip files by our
statistics and partition values) and at an older version: `deltalake` (delta-rs:
`to_pyarrow_table` and its DataFusion `QueryBuilder`), `polars.read_delta` (which goes through
`deltalake`), DuckDB's `delta` extension and `polars-deltalake` (both delta-kernel-rs). On
tables with the change data feed, deltalog's, `deltalake`'s and `polars-deltalake`'s change
feeds are held to the changes the model's history implies. A reader either returns the model's
rows or does what its entry in `KNOWN_DIFFERENCES` / `CHANGE_FEED_DIFFERENCES` says (refuses,
or returns other rows), with the upstream cause; when an upstream fix makes a reader read
right, the test fails so that the entry (and the README's table) is updated. Tables deltalog
itself gets wrong are in `OUR_BUGS`.

Spark is not needed: every difference listed was checked against Delta on Spark 4.4, which
reads the same tables right.

`DELTALOG_CROSS_ENGINE_SEEDS=n` (or `first:n`) adds n random mixes and histories, seeds 1000
on (or `first` on), to the fixed CI cases;
`DELTALOG_CROSS_ENGINE_REPORT=path` writes every outcome there as a markdown table.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pytest

import deltalog

Row = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Feature mixes


@dataclass(frozen=True)
class Mix:
    """The table features one table uses."""

    partition_by: tuple[str, ...] = ()
    deletion_vectors: bool = False
    column_mapping: Literal["none", "name", "id"] = "none"
    row_tracking: bool = False
    change_data_feed: bool = False
    in_commit_timestamps: bool = False
    v2_checkpoints: bool = False
    stats_struct_only: bool = False
    checkpoint_interval: int | None = None
    constraint: bool = False
    generated: bool = False

    def configuration(self) -> dict[str, str]:
        """The table properties that turn the mix's features on."""
        flags = {
            "delta.enableDeletionVectors": self.deletion_vectors,
            "delta.enableRowTracking": self.row_tracking,
            "delta.enableChangeDataFeed": self.change_data_feed,
            "delta.enableInCommitTimestamps": self.in_commit_timestamps,
        }
        config = {key: "true" for key, on in flags.items() if on}
        if self.column_mapping != "none":
            config["delta.columnMapping.mode"] = self.column_mapping
        if self.v2_checkpoints:
            config["delta.checkpointPolicy"] = "v2"
        if self.stats_struct_only:
            config["delta.checkpoint.writeStatsAsJson"] = "false"
            config["delta.checkpoint.writeStatsAsStruct"] = "true"
        if self.checkpoint_interval is not None:
            config["delta.checkpointInterval"] = str(self.checkpoint_interval)
        if self.constraint:
            config["delta.constraints.id_not_negative"] = "id >= 0"
        return config


#: The fixed mixes CI runs, one group of the compatibility table each.
MIXES: dict[str, Mix] = {
    "plain": Mix(),
    "partitioned": Mix(partition_by=("ps", "pi", "pd")),
    "deletion vectors": Mix(partition_by=("ps",), deletion_vectors=True),
    "column mapping name": Mix(partition_by=("pi",), column_mapping="name"),
    "column mapping id": Mix(partition_by=("pd",), column_mapping="id"),
    "row tracking": Mix(row_tracking=True, checkpoint_interval=3),
    "change data feed": Mix(partition_by=("pi",), change_data_feed=True),
    "change data feed, deletion vectors": Mix(
        partition_by=("pi",), change_data_feed=True, deletion_vectors=True
    ),
    "in-commit timestamps": Mix(in_commit_timestamps=True, checkpoint_interval=3),
    "V2 checkpoints": Mix(partition_by=("pi",), v2_checkpoints=True, checkpoint_interval=2),
    "stats as struct only": Mix(stats_struct_only=True, checkpoint_interval=2),
    "constraints, generated columns": Mix(partition_by=("ps",), constraint=True, generated=True),
    "multi-feature": Mix(
        partition_by=("ps", "pd"),
        deletion_vectors=True,
        column_mapping="name",
        row_tracking=True,
        change_data_feed=True,
        in_commit_timestamps=True,
        v2_checkpoints=True,
        checkpoint_interval=3,
        constraint=True,
        generated=True,
    ),
    "multi-feature, column mapping id": Mix(
        partition_by=("pi",),
        deletion_vectors=True,
        column_mapping="id",
        row_tracking=True,
        change_data_feed=True,
        in_commit_timestamps=True,
        stats_struct_only=True,
        checkpoint_interval=2,
        constraint=True,
        generated=True,
    ),
}

#: The history seeds each fixed mix runs with in CI (4: the deletion vectors mix leaves a
#: deletion vector on a file under an escaped partition directory, and the change feed one
#: overwrites a file with a deletion vector; 5: the column mapping id mix adds a column after
#: rows were rewritten with their row ids, bug X1 of OUR_BUGS).
CI_SEEDS = (4, 5)


def random_mix(rng: random.Random) -> Mix:
    """Any mix: each feature on by a coin toss, up to two partition columns."""
    return Mix(
        partition_by=tuple(rng.sample(["ps", "pi", "pd"], rng.choice([0, 0, 1, 2]))),
        deletion_vectors=rng.random() < 0.5,
        column_mapping=rng.choice(["none", "none", "name", "id"]),
        row_tracking=rng.random() < 0.3,
        change_data_feed=rng.random() < 0.3,
        in_commit_timestamps=rng.random() < 0.3,
        v2_checkpoints=rng.random() < 0.3,
        stats_struct_only=rng.random() < 0.3,
        checkpoint_interval=rng.choice([None, 2, 3]),
        constraint=rng.random() < 0.3,
        generated=rng.random() < 0.3,
    )


@dataclass(frozen=True)
class Case:
    """One table: its group in the compatibility table, its mix and its history's seed."""

    group: str
    mix: Mix
    seed: int

    @property
    def id(self) -> str:
        return f"{self.group}-{self.seed}".replace(" ", "_").replace(",", "")


def cases() -> list[Case]:
    """The fixed CI cases, plus `DELTALOG_CROSS_ENGINE_SEEDS` random ones."""
    fixed = [Case(group, mix, seed) for group, mix in MIXES.items() for seed in CI_SEEDS]
    start, _, count = os.environ.get("DELTALOG_CROSS_ENGINE_SEEDS", "0").rpartition(":")
    seeds = range(int(start or 1000), int(start or 1000) + int(count))
    return fixed + [Case("random", random_mix(random.Random(seed)), seed) for seed in seeds]


# --------------------------------------------------------------------------------------------
# The schema and the rows


@dataclass(frozen=True)
class Column:
    """A column of the tables: its Delta type and the Arrow type our input data has."""

    name: str
    delta_type: str | dict[str, Any]
    arrow_type: pa.DataType


STRUCT_TYPE = {
    "type": "struct",
    "fields": [
        {"name": "a", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "b", "type": "string", "nullable": True, "metadata": {}},
    ],
}
COLUMNS = (
    Column("id", "long", pa.int64()),
    Column("s", "string", pa.string()),
    Column("x", "double", pa.float64()),
    Column("ts", "timestamp", pa.timestamp("us", tz="UTC")),
    Column("ps", "string", pa.string()),
    Column("pi", "integer", pa.int32()),
    Column("pd", "date", pa.date32()),
    Column("dec", "decimal(9,2)", pa.decimal128(9, 2)),
    Column("st", STRUCT_TYPE, pa.struct([("a", pa.int32()), ("b", pa.string())])),
    Column(
        "arr",
        {"type": "array", "elementType": "integer", "containsNull": True},
        pa.list_(pa.int32()),
    ),
)
ARROW_TYPES = {column.name: column.arrow_type for column in COLUMNS} | {"extra": pa.string()}
#: The generated column of mixes with `generated`, and its expression.
GENERATED = ("g", "id * 2")

# Values with NULLs everywhere; strings longer than the 32 characters statistics keep, with
# non-ASCII text and characters partition directories must escape.
STRINGS = (None, "apple", "Zebra", "é-accent", "m" * 40 + "z", "m" * 40 + "a", "m" * 32 + "😀", "")
PARTITION_STRINGS = (None, "eu", "us", "a b", "x=1/y", "ü%")
PARTITION_INTS = (None, 1, 2, -3)
PARTITION_DATES = (None, date(2024, 2, 29), date(1999, 12, 31))
EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


def random_row(rng: random.Random, row_id: int) -> Row:
    """A row of every base column, NULLs included."""
    micros = rng.randrange(-(10**12), 10**12)
    return {
        "id": row_id,
        "s": rng.choice(STRINGS),
        "x": rng.choice([None, round(rng.uniform(-1, 1), 3)]),
        "ts": rng.choice([None, EPOCH + timedelta(microseconds=micros)]),
        "ps": rng.choice(PARTITION_STRINGS),
        "pi": rng.choice(PARTITION_INTS),
        "pd": rng.choice(PARTITION_DATES),
        "dec": rng.choice([None, Decimal(rng.randrange(-99999, 99999)) / 100]),
        "st": rng.choice([None, {"a": rng.choice([None, row_id]), "b": rng.choice(STRINGS)}]),
        "arr": rng.choice([None, [], [row_id, None, 7]]),
    }


def schema_json(mix: Mix) -> str:
    """The Delta schema the table is created with (a generated column with `generated`)."""
    fields = [
        {"name": c.name, "type": c.delta_type, "nullable": True, "metadata": {}} for c in COLUMNS
    ]
    if mix.generated:
        name, expression = GENERATED
        metadata = {"delta.generationExpression": expression}
        fields.append({"name": name, "type": "long", "nullable": True, "metadata": metadata})
    return json.dumps({"type": "struct", "fields": fields})


# --------------------------------------------------------------------------------------------
# The twin: a deltalog table and the rows it must hold


@dataclass
class Twin:
    """A table deltalog writes and, beside it, the rows it must hold (keyed by `id`).

    `names` maps each live column (by its original name) to its current name: columns are
    renamed, dropped and added under column mapping.
    """

    path: Path
    mix: Mix
    rng: random.Random
    rows: dict[int, Row] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    next_id: int = 0
    history: list[str] = field(default_factory=list)
    #: The live columns' names and the rows after each version, for time travel.
    states: dict[int, tuple[dict[str, str], dict[int, Row]]] = field(default_factory=dict)
    #: The ids an update or merge set values of, by version (the change feed has them as
    #: updates even when the values stay the same).
    touched: dict[int, set[int]] = field(default_factory=dict)
    #: The last version that renamed or dropped a column (a change feed cannot span it).
    schema_break: int = -1
    #: The last version that changed the columns in any way (added ones too).
    schema_change: int = -1

    @property
    def table(self) -> deltalog.DeltaTable:
        return deltalog.DeltaTable(str(self.path))

    def new_rows(self, count: int, **fixed: Any) -> list[Row]:
        """`count` fresh rows of the live columns (generated ones computed), with `fixed`."""
        made = []
        for _ in range(count):
            row = random_row(self.rng, self.next_id) | fixed
            self.next_id += 1
            row["extra"] = self.rng.choice(STRINGS)
            made.append(self.complete({k: v for k, v in row.items() if k in self.names}))
        return made

    def complete(self, row: Row) -> Row:
        """The row with its generated column computed, as the writer must compute it."""
        if GENERATED[0] in self.names:
            row[GENERATED[0]] = None if row["id"] is None else row["id"] * 2
        return row

    def arrow(self, rows: list[Row]) -> pa.Table:
        """The rows as Arrow input data, under the current names, without generated columns."""
        columns = [c for c in self.names if c != GENERATED[0]]
        arrays = [pa.array([r[c] for r in rows], ARROW_TYPES[c]) for c in columns]
        return pa.table(arrays, names=[self.names[c] for c in columns])

    def record(self, touched: set[int] | None = None) -> None:
        """Notes the columns and rows of the table's latest version, and the ids an update or
        merge made it touch."""
        version = self.table.latest_version()
        if version in self.states:  # the operation committed nothing
            return
        if version - 1 in self.states:
            before = self.states[version - 1][0]
            if any(self.names.get(key) != name for key, name in before.items()):
                self.schema_break = version
            if before != self.names:
                self.schema_change = version
        self.states[version] = (dict(self.names), copy.deepcopy(self.rows))
        self.touched[version] = touched or set()

    def expected(self, version: int | None = None) -> list[Row]:
        """The rows the table holds at `version` (the latest when None), under the names its
        columns had then."""
        names, rows = self.states[version] if version is not None else (self.names, self.rows)
        renamed = [{names[k]: v for k, v in row.items()} for row in rows.values()]
        return sorted(renamed, key=lambda row: row["id"])


def create(path: Path, mix: Mix, seed: int) -> Twin:
    """A new table of the mix's schema and properties, and its first rows."""
    twin = Twin(path, mix, random.Random(seed))
    twin.names = {c.name: c.name for c in COLUMNS}
    if mix.generated:
        twin.names[GENERATED[0]] = GENERATED[0]
    deltalog.DeltaTable.create(
        str(path),
        schema_json(mix),
        partition_by=list(mix.partition_by),
        configuration=mix.configuration(),
    )
    twin.record()
    append(twin)
    twin.record()
    return twin


# --------------------------------------------------------------------------------------------
# Operations, each applied to the table and to the model


@dataclass(frozen=True)
class Predicate:
    """A row predicate in deltalog's filter language and the same in Python, NULL is not
    true."""

    sql: str
    holds: Callable[[Row], bool]


def _cmp(column: str, test: Callable[[Any], bool]) -> Callable[[Row], bool]:
    return lambda row: row[column] is not None and test(row[column])


PREDICATES = (
    Predicate("id % 3 = 0", _cmp("id", lambda v: v % 3 == 0)),
    Predicate("id < 4", _cmp("id", lambda v: v < 4)),
    Predicate("x > 0.25", _cmp("x", lambda v: v > 0.25)),
    Predicate("s IS NULL", lambda row: row["s"] is None),
    Predicate("ps = 'eu'", _cmp("ps", lambda v: v == "eu")),
    Predicate("pi IS NULL", lambda row: row["pi"] is None),
    Predicate("pd = DATE '2024-02-29'", _cmp("pd", lambda v: v == date(2024, 2, 29))),
)


def append(twin: Twin) -> None:
    rows = twin.new_rows(twin.rng.randint(2, 8))
    deltalog.write_table(str(twin.path), twin.arrow(rows))
    twin.rows.update((row["id"], row) for row in rows)


def overwrite(twin: Twin) -> None:
    rows = twin.new_rows(twin.rng.randint(2, 8))
    deltalog.write_table(str(twin.path), twin.arrow(rows), mode="overwrite")
    twin.rows = {row["id"]: row for row in rows}


def replace_where(twin: Twin) -> None:
    """`replaceWhere` of the rows with `pi = 1` by new ones."""
    rows = twin.new_rows(twin.rng.randint(1, 4), pi=1)
    deltalog.write_table(str(twin.path), twin.arrow(rows), mode="overwrite", predicate="pi = 1")
    twin.rows = {k: row for k, row in twin.rows.items() if row["pi"] != 1}
    twin.rows.update((row["id"], row) for row in rows)


def delete(twin: Twin) -> None:
    predicate = twin.rng.choice(PREDICATES)
    twin.table.delete(predicate.sql)
    twin.rows = {k: row for k, row in twin.rows.items() if not predicate.holds(row)}
    twin.history[-1] += f" {predicate.sql}"


def update(twin: Twin) -> set[int]:
    predicate = twin.rng.choice(PREDICATES)
    twin.table.update({"x": "x + 1", "s": "upper(s)"}, predicate=predicate.sql)
    touched = {k for k, row in twin.rows.items() if predicate.holds(row)}
    for k in touched:
        row = twin.rows[k]
        row["x"] = None if row["x"] is None else row["x"] + 1
        row["s"] = None if row["s"] is None else row["s"].upper()
    twin.history[-1] += f" {predicate.sql}"
    return touched


def merge(twin: Twin) -> set[int]:
    """An upsert: some existing ids get a new `x` and `s`, new ids are inserted whole."""
    existing = twin.rng.sample(sorted(twin.rows), min(len(twin.rows), twin.rng.randint(0, 3)))
    matched = [twin.rows[i] | twin.new_rows(1)[0] | {"id": i} for i in existing]
    source = [twin.complete(row) for row in matched] + twin.new_rows(twin.rng.randint(0, 3))
    (
        twin.table.merge(twin.arrow(source), on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"x": "s.x", "s": "s.s"})
        .when_not_matched_insert_all()
        .execute()
    )
    for row in source:
        if row["id"] in twin.rows:
            twin.rows[row["id"]].update(x=row["x"], s=row["s"])
        else:
            twin.rows[row["id"]] = row
    return set(existing)


def optimize(twin: Twin) -> None:
    z_order = twin.rng.random() < 0.3
    twin.table.optimize(z_order_by=["id"] if z_order else None)


def checkpoint(twin: Twin) -> None:
    """A checkpoint; of a V2 table in any of the layouts (JSON or Parquet manifest, sidecars
    or inline, with or without the classic-named copy)."""
    if not twin.mix.v2_checkpoints:
        twin.table.checkpoint()
        return
    twin.table.checkpoint(
        v2_format=twin.rng.choice(["json", "parquet"]),
        v2_sidecars=twin.rng.random() < 0.7,
        classic_compat=twin.rng.random() < 0.5,
    )


def add_column(twin: Twin) -> None:
    twin.table.alter.add_columns(pa.schema([("extra", pa.string())]))
    twin.names["extra"] = "extra"
    for row in twin.rows.values():
        row["extra"] = None


def rename_column(twin: Twin) -> None:
    twin.table.alter.rename_column("dec", "amount")
    twin.names["dec"] = "amount"


def drop_column(twin: Twin) -> None:
    twin.table.alter.drop_columns(["arr"])
    del twin.names["arr"]
    for row in twin.rows.values():
        del row["arr"]


#: An operation; update and merge return the ids whose values they set.
Operation = Callable[[Twin], "set[int] | None"]
OPERATIONS: dict[str, Operation] = {
    "append": append,
    "overwrite": overwrite,
    "replace_where": replace_where,
    "delete": delete,
    "update": update,
    "merge": merge,
    "optimize": optimize,
    "checkpoint": checkpoint,
    "add_column": add_column,
    "rename_column": rename_column,
    "drop_column": drop_column,
}
#: How often each repeatable operation is drawn.
WEIGHTS = {
    "append": 4,
    "overwrite": 1,
    "replace_where": 1,
    "delete": 3,
    "update": 2,
    "merge": 2,
    "optimize": 1,
    "checkpoint": 1,
}


def plan(mix: Mix, rng: random.Random, length: int = 7) -> list[str]:
    """A history: random repeatable operations, then the ones every mix needs once (a delete
    and an append, a column added, renamed and dropped under column mapping) placed at random,
    and a checkpoint before the last two operations, so that readers read a checkpoint and the
    commits after it."""
    names = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=length)
    once = ["delete", "append", "add_column"]
    if mix.column_mapping != "none":
        once += ["rename_column", "drop_column"]
    for name in once:
        names.insert(rng.randrange(len(names) + 1), name)
    names.insert(len(names) - 2, "checkpoint")
    return names


def build(path: Path, case: Case) -> Twin:
    """The case's table, written by deltalog along its planned history."""
    twin = create(path, case.mix, case.seed)
    for name in plan(case.mix, twin.rng):
        twin.history.append(name)
        twin.record(OPERATIONS[name](twin))
    return twin


# --------------------------------------------------------------------------------------------
# Queries: every reader reads the table whole and through one filter


@dataclass(frozen=True)
class Query:
    """A filter `column op value` (None: the whole table)."""

    column: str
    op: Literal["=", "<", ">="]
    value: Any

    def holds(self, row: Row) -> bool:
        value = row[self.column]
        if value is None:
            return False
        if self.op == "=":
            return bool(value == self.value)
        return bool(value < self.value) if self.op == "<" else bool(value >= self.value)

    def sql(self, dialect: Literal["deltalog", "duckdb", "datafusion"]) -> str:
        """The filter as SQL; only timestamp literals are spelled differently."""
        return f'"{self.column}" {self.op} {literal(self.value, dialect)}'


def literal(value: Any, dialect: str) -> str:
    """A value as an SQL literal of the dialect."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime):
        text = value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
        prefix = {"deltalog": "TIMESTAMP", "duckdb": "TIMESTAMPTZ", "datafusion": "TIMESTAMP"}
        suffix = {"deltalog": "", "duckdb": "+00", "datafusion": "Z"}
        return f"{prefix[dialect]} '{text}{suffix[dialect]}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    return repr(value)


def pick_queries(twin: Twin, count: int = 2) -> list[Query]:
    """Filters on data and partition columns that keep some rows and drop others: the
    readers skip files by our statistics and partition values to answer them. The newest
    timestamp is above the file's millisecond-truncated `maxValues` (readers must widen it)."""
    ids = sorted(twin.rows) or [0]
    stamps = sorted(row["ts"] for row in twin.rows.values() if row["ts"] is not None)
    choices = [
        Query("id", ">=", ids[len(ids) // 2]),
        Query("x", "<", 0.0),
        Query("s", ">=", "m" * 40 + "b"),
        Query("s", ">=", "m" * 32 + "😀"),
        Query("ts", ">=", stamps[-1] if stamps else EPOCH),
        Query("ps", "=", "eu"),
        Query("pi", "=", 2),
        Query("pd", "=", date(2024, 2, 29)),
    ]
    return twin.rng.sample(choices, count)


@dataclass(frozen=True)
class Read:
    """One read of a table: the latest version or an older one, whole or through a filter."""

    query: Query | None = None
    version: int | None = None

    def __str__(self) -> str:
        text = "whole" if self.query is None else self.query.sql("deltalog")
        return text if self.version is None else f"{text} at version {self.version}"


def pick_reads(twin: Twin) -> list[Read]:
    """The reads every reader makes: the whole table, two filters, and an older version."""
    filtered = [Read(query) for query in pick_queries(twin)]
    older = twin.rng.choice(sorted(twin.states)[:-1] or [0])
    return [Read(), *filtered, Read(version=older)]


# --------------------------------------------------------------------------------------------
# Readers


@functools.cache
def duckdb_connection() -> Any:
    """A DuckDB connection with the `delta` extension loaded from its PyPI package (offline),
    in UTC; one for the run."""
    import duckdb
    import duckdb_extension_delta

    package = Path(duckdb_extension_delta.__file__).parent
    extension = package / "extensions" / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    connection = duckdb.connect()
    connection.execute(f"LOAD '{extension}'")
    connection.execute("SET TimeZone = 'UTC'")
    return connection


def read_duckdb(path: Path, read: Read) -> pa.Table:
    version = "" if read.version is None else f", version={read.version}"
    where = "" if read.query is None else f" WHERE {read.query.sql('duckdb')}"
    sql = f"SELECT * FROM delta_scan('{path}'{version}){where}"
    return pa.table(duckdb_connection().sql(sql).to_arrow_table())


def read_deltalake(path: Path, read: Read) -> pa.Table:
    from deltalake import DeltaTable

    query = read.query
    filters = None if query is None else [(query.column, query.op, query.value)]
    table = DeltaTable(str(path), version=read.version)
    return pa.table(table.to_pyarrow_table(filters=filters))


def read_datafusion(path: Path, read: Read) -> pa.Table:
    from deltalake import DeltaTable, QueryBuilder

    where = "" if read.query is None else f" WHERE {read.query.sql('datafusion')}"
    builder = QueryBuilder().register("t", DeltaTable(str(path), version=read.version))
    return pa.table(builder.execute(f"SELECT * FROM t{where}").read_all())


def polars_collect(frame: Any, query: Query | None) -> pa.Table:
    """The rows of a polars LazyFrame, through the filter as a polars expression."""
    import polars as pl

    if query is not None:
        column, value = pl.col(query.column), pl.lit(query.value)
        if query.op == "=":
            frame = frame.filter(column == value)
        else:
            frame = frame.filter(column < value if query.op == "<" else column >= value)
    table: pa.Table = frame.collect().to_arrow()
    return table


def read_polars_deltalake(path: Path, read: Read) -> pa.Table:
    import polars_deltalake

    frame = polars_deltalake.scan_delta(str(path), version=read.version)
    return polars_collect(frame, read.query)


def read_polars(path: Path, read: Read) -> pa.Table:
    import polars as pl

    return polars_collect(pl.scan_delta(str(path), version=read.version), read.query)


Reader = Callable[[Path, Read], pa.Table]
#: The readers, by the name the compatibility table gives them.
READERS: dict[str, Reader] = {
    "deltalake": read_deltalake,
    "deltalake-datafusion": read_datafusion,
    "polars.read_delta": read_polars,
    "duckdb": read_duckdb,
    "polars-deltalake": read_polars_deltalake,
}


# --------------------------------------------------------------------------------------------
# The change data feed: what the model says it holds, and its readers


def expected_changes(twin: Twin, start: int) -> list[Row]:
    """The change rows of versions `start` on, from the model's states: rows gone are
    deletes, new ids inserts, rows an update or merge touched (or whose values differ) an
    update pre- and postimage; columns as the latest version names them."""
    changes = []
    for version in range(max(start, 1), max(twin.states) + 1):
        old, new = twin.states[version - 1][1], twin.states[version][1]
        for key in sorted(old.keys() - new.keys()):
            changes.append(change_row(twin, old[key], "delete", version))
        for key in sorted(new.keys() - old.keys()):
            changes.append(change_row(twin, new[key], "insert", version))
        for key in sorted(old.keys() & new.keys()):
            shared = old[key].keys() & new[key].keys()
            if key in twin.touched[version] or any(old[key][c] != new[key][c] for c in shared):
                changes.append(change_row(twin, old[key], "update_preimage", version))
                changes.append(change_row(twin, new[key], "update_postimage", version))
    return changes


def change_row(twin: Twin, row: Row, kind: str, version: int) -> Row:
    values = {name: row.get(column) for column, name in twin.names.items()}
    return values | {"_change_type": kind, "_commit_version": version}


def without_timestamps(table: pa.Table) -> pa.Table:
    """The change rows without `_commit_timestamp` (file times: not modelled)."""
    names = [name for name in table.column_names if name != "_commit_timestamp"]
    return table.select(names)


def changes_deltalog(path: Path, start: int) -> pa.Table:
    return without_timestamps(deltalog.DeltaTable(str(path)).changes(start).to_pyarrow())


def changes_deltalake(path: Path, start: int) -> pa.Table:
    from deltalake import DeltaTable

    stream = DeltaTable(str(path)).load_cdf(starting_version=start)
    return without_timestamps(pa.RecordBatchReader.from_stream(stream).read_all())


def changes_polars_deltalake(path: Path, start: int) -> pa.Table:
    import polars_deltalake

    frame = polars_deltalake.read_cdf(str(path), start_version=start)
    return without_timestamps(frame.to_arrow())


#: The change data feed readers (deltalog's own is held to the model like the others).
CHANGE_READERS: dict[str, Callable[[Path, int], pa.Table]] = {
    "deltalog": changes_deltalog,
    "deltalake": changes_deltalake,
    "polars-deltalake": changes_polars_deltalake,
}


# --------------------------------------------------------------------------------------------
# Comparing what a reader returns with the model


def plain(value: Any) -> Any:
    """A value as the model holds it: timestamps in UTC, containers compared by content."""
    if isinstance(value, datetime):
        return (
            value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
        )
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def by_id(row: Row) -> tuple[Any, ...]:
    """Table rows sort by `id` (unique, never NULL)."""
    return (row.get("id") is None, row.get("id") or 0)


def by_change(row: Row) -> tuple[Any, ...]:
    """Change rows sort by version, change type and `id`."""
    return (row.get("_commit_version"), row.get("_change_type"), *by_id(row))


def difference(got: pa.Table, expected: list[Row], key: Callable[[Row], Any] = by_id) -> str | None:
    """What differs between a reader's rows and the expected ones (None: nothing)."""
    want = set(expected[0]) if expected else None
    if want is not None and set(got.column_names) != want:
        missing, extra = sorted(want - set(got.column_names)), sorted(set(got.column_names) - want)
        return f"columns: missing {missing}, extra {extra}"
    rows = sorted(({k: plain(v) for k, v in row.items()} for row in got.to_pylist()), key=key)
    if len(rows) != len(expected):
        return f"{len(rows)} rows, {len(expected)} expected"
    for row, model in zip(rows, sorted(expected, key=key), strict=True):
        if row != model:
            columns = sorted(k for k in model if row.get(k) != model[k])
            sample = {k: (row.get(k), model[k]) for k in columns}
            return f"{key(model)}: {columns} differ (got, expected): {sample}"
    return None


Kind = Literal["reads", "refuses", "wrong"]


@dataclass(frozen=True)
class Outcome:
    """What a reader did with a table: read it right, refused it (the error), or returned
    other rows (the difference)."""

    kind: Kind
    detail: str = ""


def outcome(
    reading: Callable[[], pa.Table], expected: list[Row], key: Callable[[Row], Any] = by_id
) -> Outcome:
    """What a reader does: the rows `reading` returns compared with `expected`, or its
    error."""
    try:
        got = reading()
    except BaseException as error:  # Rust panics surface as BaseException
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        message = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        return Outcome("refuses", f"{type(error).__name__}: {message}")
    found = difference(got, expected, key)
    return Outcome("wrong", found) if found else Outcome("reads")


# --------------------------------------------------------------------------------------------
# Known differences: what each reader does with which tables, and why


@dataclass(frozen=True)
class Facts:
    """What a table holds that a reader's support depends on."""

    mix: Mix
    reader_version: int
    reader_features: frozenset[str]
    #: Some file with a deletion vector has a path the log percent-encodes.
    escaped_dv_path: bool
    #: Some row has a partition value that is not NULL.
    partition_values: bool
    #: For a change feed read: a file it reads (added, removed, change data) has a path the
    #: log percent-encodes.
    escaped_change_path: bool = False
    #: For a change feed read: a column was added within its versions.
    schema_changed: bool = False
    #: For a change feed read: its commits change files (`add`, `remove`, `cdc` actions with
    #: `dataChange`).
    changes_files: bool = False
    #: For a change feed read: a commit without change data files removes a file that has a
    #: deletion vector for good (not re-added with another vector).
    drops_dv_file: bool = False


#: The characters a data file path holds that the log's URI form keeps as they are.
PLAIN_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/=._-")


def facts(twin: Twin, version: int | None) -> Facts:
    """The facts of the table at `version` (the latest when None)."""
    snapshot = twin.table.snapshot(version)
    files = pa.table(snapshot.files()).to_pylist()
    escaped = any(f["deletion_vector"] and set(f["path"]) - PLAIN_PATH for f in files)
    protocol = snapshot.protocol
    features = frozenset(protocol.reader_features or ())
    rows = twin.states[snapshot.version][1].values()
    values = any(row[c] is not None for row in rows for c in twin.mix.partition_by)
    return Facts(twin.mix, protocol.min_reader_version, features, escaped, values)


def change_facts(twin: Twin, start: int) -> Facts:
    """The facts of the latest version, and of the commits from `start` on."""
    commits = twin.table.commits(start).to_pyarrow().to_pylist()
    files = [(c["version"], c["action"], json.loads(c["json"])) for c in commits]
    files = [(v, action, f) for v, action, f in files if action in ("add", "remove", "cdc")]
    added = {(v, f["path"]) for v, action, f in files if action == "add"}
    with_cdc = {v for v, action, _ in files if action == "cdc"}
    return replace(
        facts(twin, None),
        escaped_change_path=any("%" in f["path"] for _, _, f in files),
        schema_changed=twin.states[start][0] != twin.names,
        changes_files=any(a == "cdc" or f["dataChange"] for _, a, f in files),
        drops_dv_file=any(
            a == "remove"
            and f["dataChange"]
            and f.get("deletionVector")
            and (v, f["path"]) not in added
            and v not in with_cdc
            for v, a, f in files
        ),
    )


@dataclass(frozen=True)
class KnownDifference:
    """A reader that does not read some of our tables right, though they follow the protocol
    (Delta on Spark reads them right): `kind` is what it does with the whole table instead,
    `cause` why (the upstream bug or limit). A filtered read may then also come out right,
    when the filter happens to avoid the difference."""

    reader: str
    kind: Kind
    applies: Callable[[Facts], bool]
    cause: str


def _uses(*features: str) -> Callable[[Facts], bool]:
    return lambda table: bool(table.reader_features & set(features))


#: The reader features `polars.scan_delta` accepts.
POLARS_FEATURES = frozenset(
    {"deletionVectors", "timestampNtz", "variantType", "variantType-preview"}
)
KNOWN_DIFFERENCES = (
    KnownDifference(
        "deltalake",
        "refuses",
        _uses("deletionVectors", "columnMapping", "v2Checkpoint"),
        "deltalake 1.6.6: `DeltaTable.to_pyarrow_table` (a pyarrow dataset) supports none of "
        "these reader features and says so (DeltaProtocolError); its DataFusion reader does",
    ),
    KnownDifference(
        "deltalake",
        "wrong",
        lambda table: table.reader_version == 2,
        "deltalake 1.6.6: `to_pyarrow_table` reads the Parquet columns by their logical names, "
        "ignoring column mapping on a legacy (2, 5) protocol (under table features it refuses): "
        "every non-partition column comes back NULL",
    ),
    KnownDifference(
        "polars.read_delta",
        "refuses",
        lambda table: table.reader_version == 2 or bool(table.reader_features - POLARS_FEATURES),
        "polars 2.1.0 `scan_delta` supports no column mapping and no V2 checkpoints and says so",
    ),
    KnownDifference(
        "polars.read_delta",
        "wrong",
        lambda table: table.escaped_dv_path,
        "polars 2.1.0 `scan_delta` matches deltalake's `deletion_vectors()` (URL paths, "
        "percent-encoded) to `file_uris()` (decoded) as strings: a file whose path has a "
        "character the log percent-encodes (a partition value with a space, `%`, `=`, `/`, "
        "non-ASCII) keeps its deleted rows",
    ),
    KnownDifference(
        "duckdb",
        "wrong",
        lambda table: table.mix.column_mapping != "none" and table.partition_values,
        "duckdb-extension-delta 1.5.5: with column mapping, partition values are looked up by "
        "logical name while the log keys them by physical name (as the protocol says): every "
        "partition column reads NULL (duckdb/duckdb-delta#343)",
    ),
)
CHANGE_FEED_DIFFERENCES = (
    KnownDifference(
        "deltalake (change feed)",
        "refuses",
        lambda table: table.mix.column_mapping != "none",
        "deltalake 1.6.6 `load_cdf`: column mapping is not supported for change data feed "
        "scans (DeltaError)",
    ),
    KnownDifference(
        "deltalake (change feed)",
        "refuses",
        lambda table: table.escaped_change_path,
        "deltalake 1.6.6 `load_cdf` opens the `path` of `add`, `remove` and `cdc` actions "
        "without URI-decoding it (the protocol makes it a URI; a table Spark partitions by a "
        "value with `=`, `/`, `%` or a space fails the same way): `Object at location "
        ".../ps=x%253D1%252Fy/... not found`",
    ),
    KnownDifference(
        "deltalake (change feed)",
        "wrong",
        lambda table: table.drops_dv_file and table.mix.column_mapping == "none",
        "deltalake 1.6.6 `load_cdf`: a file with a deletion vector removed for good by a "
        "commit without change data files (an overwrite, a delete of its last rows) yields "
        "the rows the vector marks as `delete`, where its other rows are the ones deleted (a "
        "Spark table with a DV delete then an INSERT OVERWRITE gives the same wrong rows)",
    ),
    KnownDifference(
        "polars-deltalake (change feed)",
        "refuses",
        lambda table: table.mix.column_mapping != "none" and table.changes_files,
        "polars-deltalake 1.3.2 `read_cdf` under column mapping: nested struct fields keep "
        "their physical names (`SchemaError: data type mismatch for column st`; the same on "
        "Spark's tables)",
    ),
    KnownDifference(
        "polars-deltalake (change feed)",
        "refuses",
        lambda table: table.schema_changed,
        "polars-deltalake 1.3.2 (delta-kernel-rs) `read_cdf` refuses a range in which the "
        "schema changed, even by an added column (Delta on Spark reads it, the added column "
        "NULL before): `Start and end version schemas are different`",
    ),
)


def expected_kinds(reader: str, table: Facts, certain: bool) -> tuple[set[Kind], str]:
    """What the reader may do with the table, and why, as the known differences say. A read
    the difference may miss (a filter or an older version that avoids it, nothing to read:
    not `certain`) may also come out right."""
    for known in KNOWN_DIFFERENCES + CHANGE_FEED_DIFFERENCES:
        if known.reader == reader and known.applies(table):
            kinds: set[Kind] = {known.kind}
            if known.kind == "wrong" and not certain:
                kinds.add("reads")
            return kinds, known.cause
    return {"reads"}, "no known difference"


# --------------------------------------------------------------------------------------------
# The tests


@dataclass
class Built:
    """A case's table (with the model of its rows), the reads made of it and its facts."""

    twin: Twin
    reads: list[Read]
    facts: dict[int | None, Facts]

    def expected(self, read: Read) -> list[Row]:
        """The rows the read must return."""
        rows = self.twin.expected(read.version)
        query = read.query
        return rows if query is None else [row for row in rows if query.holds(row)]


#: Every reader's outcome on every table, for the compatibility table.
OUTCOMES: list[tuple[Case, str, Read, Outcome]] = []


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Case], Built]]:
    """Builds each case's table once per module run (the readers' tests share it); writes
    the outcomes to `DELTALOG_CROSS_ENGINE_REPORT` at the end when that is set."""
    built: dict[Case, Built] = {}

    def get(case: Case) -> Built:
        if case not in built:
            twin = build(tmp_path_factory.mktemp("cross") / "t", case)
            reads = pick_reads(twin)
            known = {read.version: facts(twin, read.version) for read in reads}
            built[case] = Built(twin, reads, known)
        return built[case]

    yield get
    report = os.environ.get("DELTALOG_CROSS_ENGINE_REPORT")
    if report:
        Path(report).write_text(render_outcomes(OUTCOMES))


def render_outcomes(outcomes: list[tuple[Case, str, Read, Outcome]]) -> str:
    lines = [
        "| group | seed | mix | reader | read | outcome | detail |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, reader, read, result in outcomes:
        cells = [case.group, str(case.seed), str(case.mix), reader, str(read), result.kind]
        cells.append(result.detail)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


#: Cases on which deltalog itself is wrong (our bugs), by case id to the reason; they are
#: expected to fail (strictly for deltalog's own read, so a fix shows). Empty now: the one
#: this test found (X1: in id mode, the materialized row tracking columns and `_change_type`
#: took Parquet field ids a column added later reused) is fixed, and
#: `multi-feature_column_mapping_id-5` keeps it fixed.
OUR_BUGS: dict[str, str] = {}


def params(strict: bool, change_data_feed: bool = False) -> list[Any]:
    """The cases (those with the change data feed only, when asked) as pytest parameters,
    those of OUR_BUGS expected to fail."""
    marked = []
    for case in CASES:
        if change_data_feed and not case.mix.change_data_feed:
            continue
        reason = OUR_BUGS.get(case.id)
        marks = [pytest.mark.xfail(reason=reason, strict=strict)] if reason else []
        marked.append(pytest.param(case, id=case.id, marks=marks))
    return marked


CASES = cases()


@pytest.mark.parametrize("case", params(strict=True))
def test_deltalog_reads_the_model_rows(case: Case, tables: Callable[[Case], Built]) -> None:
    """deltalog's own reads of the table (whole, filtered, an older version) equal the rows
    tracked in Python along the history: the reference the other readers are held to is not
    deltalog agreeing with itself."""
    built = tables(case)
    for read in built.reads:
        sql = None if read.query is None else read.query.sql("deltalog")
        got = deltalog.read_table(str(built.twin.path), version=read.version, filter=sql)
        assert difference(got, built.expected(read)) is None, (str(read), built.twin.history)


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", params(strict=False))
def test_reader_reads_our_table(case: Case, reader: str, tables: Callable[[Case], Built]) -> None:
    """The reader returns the model's rows for every read (whole, filtered, an older
    version), or does what its entry in KNOWN_DIFFERENCES says it does (refuses, or returns
    other rows, for the reason given)."""
    built = tables(case)
    failures = []
    for read in built.reads:
        reading = functools.partial(READERS[reader], built.twin.path, read)
        result = outcome(reading, built.expected(read))
        OUTCOMES.append((case, reader, read, result))
        certain = read == Read() and bool(built.expected(read))
        kinds, cause = expected_kinds(reader, built.facts[read.version], certain)
        if result.kind not in kinds:
            failures.append(f"{read}: {result.kind}, expected {kinds} ({cause}); {result.detail}")
    assert not failures, f"{reader} on {built.twin.history}: {failures}"


@pytest.mark.parametrize("reader", list(CHANGE_READERS))
@pytest.mark.parametrize("case", params(strict=False, change_data_feed=True))
def test_change_data_feed(case: Case, reader: str, tables: Callable[[Case], Built]) -> None:
    """On tables with the change data feed, the reader's changes are the ones the model's
    history implies, or it does what its entry in CHANGE_FEED_DIFFERENCES says: from after
    the last column rename or drop (a range with an added column), and from after the last
    change of the columns, each to the latest version."""
    twin = tables(case).twin
    latest = max(twin.states)
    failures = []
    for start in sorted(
        {min(change + 1, latest) for change in (twin.schema_break, twin.schema_change)}
    ):
        reading = functools.partial(CHANGE_READERS[reader], twin.path, start)
        expected = expected_changes(twin, start)
        result = outcome(reading, expected, by_change)
        name = f"{reader} (change feed)"
        OUTCOMES.append((case, name, Read(version=start), result))
        kinds, cause = expected_kinds(name, change_facts(twin, start), bool(expected))
        if result.kind not in kinds:
            failures.append(
                f"from {start}: {result.kind}, expected {kinds} ({cause}): {result.detail}"
            )
    assert not failures, f"{reader} on {twin.history}: {failures}"
