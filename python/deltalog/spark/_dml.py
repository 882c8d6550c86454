"""DELETE, UPDATE and MERGE run by Spark's executors (``deltalog.spark.DeltaTable.delete``,
``update`` and ``merge``).

Where each piece runs:

- The driver plans the change with deltalog (:func:`plan_change`): the version read, the
  candidate files (pruned by the condition when deltalog's SQL reads it as Spark does), and
  how rows leave the table (deletion vectors, or files rewritten whole).
- Spark reads the candidate files with each row's address (its data file and position)
  and, under row tracking, its row id: with its own Parquet reader where it can (see
  :func:`read_target`), else through the ``deltalog`` data source. Spark evaluates the
  condition and the new values (any Spark SQL, UDFs included; a merge joins the source
  first) and keeps the rows that change, each with an action (``delete``, ``update``,
  ``insert``, ...).
- The changed rows are repartitioned by data file, so every row of one file meets in one
  task, which hands them to deltalog's Rust code (``mapInArrow``): it writes the deletion
  vectors, data files and change data files and returns what it did as JSON bytes.
  Copy-on-write, the task reads each file it removes rows from itself and writes the
  file's other live rows again.
- The driver collects those (small) outcomes and commits them as ONE Delta version.

A failed job commits nothing: the files its finished tasks wrote are referenced by no
commit, and VACUUM removes them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from .. import _core
from .._table import CommitResult, DeltaTable
from ..exceptions import (
    ConstraintViolationError,
    DeltaError,
    InvalidArgumentError,
    MergeMultipleMatchError,
)
from ._filters import _literal, conjunction
from ._native import _prunable, addressed_rows
from ._source import SOURCE_NAME

if TYPE_CHECKING:
    import pyarrow
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["ChangePlan", "MergeClause", "TableRef", "delete_rows", "merge_rows", "update_rows"]

ACTION = "__deltalog_action"
FILE = "__deltalog_file"
ROW_INDEX = "__deltalog_row_index"
CLAUSE = "__deltalog_clause"
#: For an inserted row, the identity columns the table numbers (a JSON array of names).
IDENTITY = "__deltalog_identity"
#: Column metadata keys of an identity column (spec "Identity Columns").
_IDENTITY_START = "delta.identity.start"
_IDENTITY_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
SOURCE_MARK = "__deltalog_source"
TAG = "__deltalog_tag"
TASK_KEY = "__deltalog_task"
ROW_TRACKING = ("row_id", "row_commit_version")


@dataclass(frozen=True)
class TableRef:
    """A table as a Spark job addresses it: its location and the storage options of the
    object store (credentials: they go to the tasks, never into a plan)."""

    uri: str
    storage_options: Mapping[str, str]

    def options(self) -> dict[str, str] | None:
        return dict(self.storage_options) or None


@dataclass(frozen=True)
class ChangePlan:
    """A planned change (the JSON of the core's ``DistributedChange``) and what Spark needs
    of it."""

    text: str
    version: int
    files: tuple[str, ...]
    deletion_vectors: bool
    whole_files: bool
    row_ids: bool
    changes: bool
    #: The JSON schema of the rows the tasks write (the table's, evolved by a merge's
    #: schema evolution).
    schema: str

    @classmethod
    def of(cls, text: str) -> ChangePlan:
        described = _core.describe_change_plan(text)
        return cls(
            text=text,
            version=int(described["version"]),
            files=tuple(described["files"]),
            deletion_vectors=bool(described["deletion_vectors"]),
            whole_files=bool(described["whole_files"]),
            row_ids=bool(described["row_ids"]),
            changes=bool(described["changes"]),
            schema=str(described["schema"]),
        )

    def spark_schema(self) -> StructType:
        """:attr:`schema` as Spark's type."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(json.loads(self.schema))


def delete_rows(
    spark: SparkSession, table: TableRef, condition: str | Column | None
) -> CommitResult:
    """Deletes the rows matching ``condition`` (every row when ``None``) in one commit."""
    from pyspark.sql import functions as F

    plan = plan_change(spark, table, "DELETE", condition, prune_text(spark, condition), True)
    if plan.whole_files or not plan.files:
        return commit_change(table, plan, [])
    target = read_target(spark, table, plan, plan.files)
    rows = target.where(_condition(condition)).withColumn(ACTION, F.lit("delete"))
    if plan.deletion_vectors or not plan.changes:
        # The task needs addresses only, unless it writes the deleted rows as change data
        # (copy-on-write with the change data feed on: with deletion vectors the change
        # data feed reads deleted rows from the vectors).
        rows = _without_values(rows, target.schema, plan)
    return commit_change(table, plan, run_tasks(rows, table, plan))


def update_rows(
    spark: SparkSession,
    table: TableRef,
    condition: str | Column | None,
    assignments: Mapping[str, str | Column],
    generated: Mapping[str, str],
) -> CommitResult:
    """Sets the columns of ``assignments`` in the rows matching ``condition`` (every row
    when ``None``) in one commit; ``generated`` (column name to generation expression) are
    recomputed from the new values."""
    from pyspark.sql import functions as F

    if not assignments:
        raise InvalidArgumentError("an update needs at least one column to set")
    plan = plan_change(spark, table, "UPDATE", condition, prune_text(spark, condition), True)
    if not plan.files:
        return commit_change(table, plan, [])
    target = read_target(spark, table, plan, plan.files).where(_condition(condition))
    update_actions = ["update_preimage", "update_postimage"] if plan.changes else ["update"]
    actions = F.array(*[F.lit(a) for a in update_actions])
    rows = target.withColumn(ACTION, F.explode(actions))
    rows = _with_new_values(rows, target.schema, plan, assignments, generated)
    return commit_change(table, plan, run_tasks(rows, table, plan))


def plan_change(
    spark: SparkSession,
    table: TableRef,
    operation: str,
    condition: str | Column | None,
    prune: str | None = None,
    prune_is_condition: bool = False,
    **extra: Any,
) -> ChangePlan:
    """Plans ``operation``; the candidate files are pruned by ``prune`` (deltalog's SQL; see
    :func:`prune_text`), unless deltalog cannot use it (then every file is a candidate).
    ``extra`` are more of the core's ``ChangeOptions`` (camelCase)."""
    options: dict[str, Any] = {
        "operation": operation,
        "condition": _condition_text(condition),
        **extra,
    }
    if prune is not None:
        pruned = {**options, "prune": prune, "pruneIsCondition": prune_is_condition}
        try:
            return ChangePlan.of(
                _core.plan_distributed_change(table.uri, json.dumps(pruned), table.options())
            )
        except DeltaError:
            pass  # deltalog does not read it (a Spark function, say): every file is a candidate
    text = _core.plan_distributed_change(table.uri, json.dumps(options), table.options())
    return ChangePlan.of(text)


def prune_text(spark: SparkSession, condition: str | Column | None) -> str | None:
    """``condition`` when it is text that deltalog's SQL reads as Spark does, else ``None``."""
    zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    return condition if isinstance(condition, str) and _prunable(condition, zone) else None


def read_target(
    spark: SparkSession, table: TableRef, plan: ChangePlan, files: tuple[str, ...] | list[str]
) -> DataFrame:
    """The rows of ``files`` at the plan's version, with their addresses (and row ids): read
    by Spark's Parquet reader where it can (only the columns Spark's plan uses are read;
    see :func:`addressed_rows`), the rest by the ``deltalog`` data source."""
    tracking = ROW_TRACKING if plan.row_ids else None
    native, rest = addressed_rows(
        spark, table.uri, plan.version, files, table.storage_options, (FILE, ROW_INDEX), tracking
    )
    if not rest and native is not None:
        return native
    read = _through_data_source(spark, table, plan, rest)
    return read if native is None else native.unionByName(read)


def _through_data_source(
    spark: SparkSession, table: TableRef, plan: ChangePlan, files: list[str]
) -> DataFrame:
    reader = (
        spark.read.format(SOURCE_NAME)
        .option("versionAsOf", plan.version)
        .option("rowAddress", "true")
        .option("rowTracking", str(plan.row_ids).lower())
        .option("files", json.dumps(list(files)))
        .option("filterPushdown", "false")
    )
    for key, value in table.storage_options.items():
        reader = reader.option(key, value)
    return reader.load(table.uri)


def run_tasks(rows: DataFrame, table: TableRef, plan: ChangePlan) -> list[bytes]:
    """Hands ``rows`` to deltalog's task writer, every row addressed to one data file in
    the same task (rows without an address, a merge's inserts, stay spread); returns the
    outcomes.

    With deletion vectors, Spark's adaptive execution packs the (few) changed rows into few
    tasks: each task writes one vector file. Copy-on-write, each task rewrites the files of
    its rows, so the files are spread over as many tasks as there are candidate files (at
    most ``spark.sql.shuffle.partitions``), which adaptive execution leaves as they are."""
    from pyspark.sql import functions as F

    uri, text, storage = table.uri, plan.text, table.options()
    task_key = F.coalesce(
        F.col(FILE), F.concat(F.lit("task "), F.spark_partition_id().cast("string"))
    )
    keyed = rows.withColumn(TASK_KEY, task_key)
    if plan.deletion_vectors:
        keyed = keyed.repartition(TASK_KEY)
    else:
        keyed = keyed.repartition(_rewrite_tasks(rows.sparkSession, plan), TASK_KEY)
    rows = keyed.drop(TASK_KEY)

    def task(batches: Iterator[pyarrow.RecordBatch]) -> Iterator[pyarrow.RecordBatch]:
        import pyarrow as pa

        first = next(batches, None)
        if first is None:
            return
        reader = pa.RecordBatchReader.from_batches(first.schema, chain([first], batches))
        outcome = _core.write_change_task(uri, text, reader, storage)
        yield pa.record_batch([pa.array([outcome], pa.binary())], names=["outcome"])

    try:
        collected = rows.mapInArrow(task, "outcome binary").collect()
    except Exception as error:
        raise _task_error(error, table) from error
    return [bytes(row[0]) for row in collected]


def _rewrite_tasks(spark: SparkSession, plan: ChangePlan) -> int:
    """How many tasks rewrite a copy-on-write change's files (see :func:`run_tasks`)."""
    setting = str(spark.conf.get("spark.sql.shuffle.partitions", "200"))
    most = int(setting) if setting.isdigit() else 200
    return max(1, min(len(plan.files), most))


#: What deltalog's multiple-match error says, whichever way Spark wraps a task's error.
_MULTIPLE_MATCH = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


def _task_error(error: Exception, table: TableRef) -> Exception:
    """The error a failed Spark job of tasks raises: deltalog's multiple-match error when a
    task raised it (Spark wraps it in its own), else Spark's error as it is."""
    text = str(error)
    if _MULTIPLE_MATCH not in text:
        return error
    line = next((line for line in text.splitlines() if _MULTIPLE_MATCH in line), text)
    found = MergeMultipleMatchError(line.strip())
    found.table = table.uri
    return found


def commit_change(table: TableRef, plan: ChangePlan, outcomes: list[bytes]) -> CommitResult:
    """Commits the tasks' outcomes as one version."""
    storage = table.options()
    raw_table, commit = _core.commit_distributed_change(table.uri, plan.text, outcomes, storage)
    return CommitResult._from_raw(commit, DeltaTable._from_raw(raw_table, storage))


def _condition(condition: str | Column | None) -> Column:
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if condition is None:
        return F.lit(True)
    if isinstance(condition, str):
        return F.expr(condition)
    if isinstance(condition, Column):
        return condition
    raise InvalidArgumentError(f"a condition is SQL text or a Column, not {type(condition)!r}")


def _condition_text(condition: str | Column | None) -> str | None:
    """The condition as the commit's ``predicate`` parameter records it: Spark's SQL text of
    a ``Column`` where the session is classic (over Spark Connect the client has none: then
    the Column's printed form)."""
    if condition is None or isinstance(condition, str):
        return condition
    try:
        return str(getattr(condition, "_jc").expr().sql())  # noqa: B009 (classic only)
    except Exception:  # a Spark Connect Column, or a pyspark without the method
        pass
    text = str(condition)
    return text[len("Column<'") : -2] if text.startswith("Column<'") else text


def _value(value: str | Column) -> Column:
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, str):
        return F.expr(value)
    if isinstance(value, Column):
        return value
    raise InvalidArgumentError(f"a value to set is SQL text or a Column, not {type(value)!r}")


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _table_columns(schema: StructType, plan: ChangePlan) -> list[str]:
    extra = {FILE, ROW_INDEX, ACTION, *(ROW_TRACKING if plan.row_ids else ())}
    return [field.name for field in schema.fields if field.name not in extra]


def _extra_columns(plan: ChangePlan) -> list[str]:
    return [*(ROW_TRACKING if plan.row_ids else ()), FILE, ROW_INDEX, ACTION]


def _without_values(rows: DataFrame, schema: StructType, plan: ChangePlan) -> DataFrame:
    """``rows`` with NULL in the table's columns: a deletion vector needs only addresses."""
    from pyspark.sql import functions as F

    values = [
        F.lit(None).cast(field.dataType).alias(field.name)
        for field in schema.fields
        if field.name in _table_columns(schema, plan)
    ]
    return rows.select(*values, *[F.col(name) for name in _extra_columns(plan)])


def _with_new_values(
    rows: DataFrame,
    schema: StructType,
    plan: ChangePlan,
    assignments: Mapping[str, str | Column],
    generated: Mapping[str, str],
) -> DataFrame:
    """``rows`` with the new values in the rows written as updates (``update``,
    ``update_postimage``), then their generated columns recomputed; the other rows as
    they were."""
    from pyspark.sql import functions as F

    names = _table_columns(schema, plan)
    types = {field.name: field.dataType for field in schema.fields}
    updated = F.col(ACTION).isin("update", "update_postimage")
    targets = _resolve_targets(names, types, assignments)
    columns = []
    for name in names:
        column = F.col(_quoted(name))
        if name in targets:
            column = F.when(updated, targets[name]).otherwise(column)
        columns.append(column.alias(name))
    rows = rows.select(*columns, *[F.col(name) for name in _extra_columns(plan)])
    if not generated:
        return rows
    columns = []
    for name in names:
        column = F.col(_quoted(name))
        expression = _lookup(generated, name)
        if expression is not None:
            value = F.expr(expression).cast(types[name])
            column = F.when(updated, value).otherwise(column)
        columns.append(column.alias(name))
    return rows.select(*columns, *[F.col(name) for name in _extra_columns(plan)])


def _resolve_targets(
    names: list[str],
    types: Mapping[str, DataType],
    assignments: Mapping[str, str | Column],
    old: Callable[[str], Column] | None = None,
) -> dict[str, Column]:
    """The new value of every top-level column set (a nested ``a.b`` target sets the field
    ``b`` of the struct ``a``, its other fields kept; a NULL ``a`` becomes a struct of NULL
    fields but ``b``, as in Delta on Spark), cast to the column's type; ``old`` gives a
    column's current value (default: the column of that name)."""
    from pyspark.sql import functions as F

    current = old or (lambda name: F.col(_quoted(name)))

    resolved: dict[str, Column] = {}
    for target, value in assignments.items():
        parts = target.split(".")
        name = _column_named(names, parts[0], target)
        if len(parts) == 1:
            if name in resolved:
                raise InvalidArgumentError(f"column {target!r} is set twice")
            resolved[name] = _value(value).cast(types[name])
            continue
        base = resolved.get(name, current(name))
        resolved[name] = _with_field(base, types[name], parts[1:], _value(value), target)
    return resolved


def _with_field(
    base: Column, data_type: DataType, path: list[str], value: Column, target: str
) -> Column:
    """The struct ``base`` (of ``data_type``) with the field at ``path`` set to ``value``
    (cast to its type), rebuilt field by field so that a NULL struct on the way becomes one
    of NULL fields, as Delta on Spark's nested assignment does (``withField`` keeps NULL)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStruct

    if not isinstance(data_type, SparkStruct):
        raise InvalidArgumentError(f"{target!r} is not a field of a struct column")
    chosen = [f for f in data_type.fields if f.name.lower() == path[0].lower()]
    if not chosen:
        raise InvalidArgumentError(f"{target!r} names no field of the table")
    members = []
    for field in data_type.fields:
        member = base.getField(field.name)
        if field is chosen[0]:
            member = (
                value.cast(field.dataType)
                if len(path) == 1
                else _with_field(member, field.dataType, path[1:], value, target)
            )
        members.append(member.alias(field.name))
    return F.struct(*members)


def _column_named(names: list[str], wanted: str, target: str) -> str:
    for name in names:
        if name == wanted:
            return name
    folded = [name for name in names if name.lower() == wanted.lower()]
    if len(folded) == 1:
        return folded[0]
    raise InvalidArgumentError(f"{target!r} is not a column of the table (it has {names})")


def _lookup(mapping: Mapping[str, str], name: str) -> str | None:
    if name in mapping:
        return mapping[name]
    for key, value in mapping.items():
        if key.lower() == name.lower():
            return value
    return None


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause of a merge: ``kind`` (``matched``, ``not_matched``,
    ``not_matched_by_source``), ``action`` (``update``, ``delete``, ``insert``), its
    condition, and its assignments (``None`` with ``every_column``: ``UPDATE SET *`` /
    ``INSERT *``)."""

    kind: str
    action: str
    condition: str | Column | None = None
    assignments: Mapping[str, str | Column] | None = None
    every_column: bool = False

    def describe(self) -> dict[str, str]:
        """The clause as Delta on Spark records it in the commit's parameters."""
        described = {"actionType": self.action}
        if self.condition is not None:
            described = {"predicate": _condition_text(self.condition) or "", **described}
        return described


@dataclass(frozen=True)
class MergeSpec:
    """What a merge is: the target (``alias``), the source, the condition and the
    clauses, and the table's generated columns (name to expression)."""

    target_alias: str | None
    source: DataFrame
    condition: str | Column
    clauses: Sequence[MergeClause]
    generated: Mapping[str, str]
    schema_evolution: bool = False

    def assigned_columns(self) -> list[str] | None:
        """The target columns the matched updates and the inserts assign, as the clauses
        name them; ``None`` when one is ``UPDATE SET *`` or ``INSERT *``."""
        names: list[str] = []
        for clause in self.clauses:
            if clause.kind == "not_matched_by_source" or clause.action == "delete":
                continue
            if clause.every_column:
                return None
            names.extend(clause.assignments or {})
        return names


def merge_rows(spark: SparkSession, table: TableRef, merge: MergeSpec) -> CommitResult:
    """Merges ``merge.source`` into the table in one commit; see ``MergeSpec``."""
    from pyspark.sql import functions as F

    clauses = list(merge.clauses)
    kinds = {clause.kind for clause in clauses}
    matched = [c for c in clauses if c.kind == "matched"]
    parameters = {
        "matchedPredicates": json.dumps([c.describe() for c in matched]),
        "notMatchedPredicates": json.dumps(
            [c.describe() for c in clauses if c.kind == "not_matched"]
        ),
        "notMatchedBySourcePredicates": json.dumps(
            [c.describe() for c in clauses if c.kind == "not_matched_by_source"]
        ),
    }
    only_delete = len(matched) == 1 and matched[0].action == "delete" and not matched[0].condition
    allows_repeats = (not matched and "not_matched_by_source" not in kinds) or only_delete
    extra: dict[str, Any] = {}
    if merge.schema_evolution:
        extra["schemaEvolution"] = {
            "source": merge.source.schema.json(),
            "assigned": merge.assigned_columns(),
            "targetAlias": merge.target_alias,
        }
    pruning = MergePruning.of(spark, table, merge, kinds)
    source_rows, prune = pruning.summarize(merge.source)
    plan = plan_change(
        spark,
        table,
        "MERGE",
        merge.condition,
        prune,
        insertOnly=kinds <= {"not_matched"},
        inserts="not_matched" in kinds,
        allowsMultipleMatches=allows_repeats,
        parameters=parameters,
        metrics={"numSourceRows": source_rows},
        **extra,
    )
    try:
        target = read_target(spark, table, plan, plan.files)
        if merge.target_alias:
            target = target.alias(merge.target_alias)
        layout = TableLayout.of(plan, target)
        source = merge.source.withColumn(SOURCE_MARK, F.lit(True))
        joined = source.join(target, _condition(merge.condition), _join_type(kinds))
        rows = _merge_actions(joined, target, plan, clauses, allows_repeats)
        changed = _merged_values(rows, target, merge, plan, layout)
        outcomes = run_tasks(changed, table, plan)
    except BaseException:
        # The tasks' identity claims, if any, are the plan's to delete (the commit would);
        # failing to, the first error is still the one raised.
        with contextlib.suppress(DeltaError):
            _core.discard_distributed_change(table.uri, plan.text, table.options())
        raise
    return commit_change(table, plan, outcomes)


#: Spark types whose source key range prunes target files: their order in Spark is the
#: order of Delta's statistics, and their values print exactly as deltalog's literals.
_RANGE_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "StringType", "DateType")


@dataclass(frozen=True)
class MergePruning:
    """What narrows the target files a merge reads (none with ``WHEN NOT MATCHED BY
    SOURCE`` clauses, which act on every target row): the condition's conjuncts naming only
    the target, and the range of the source's values of each equality key
    (``t.id = s.id``) on a top-level target column of the source key's type. As in Delta on
    Spark, a target row outside them matches no source row, so the merge leaves it alone."""

    target_only: str | None = None
    #: (quoted target column, its Spark type, the source key column)
    keys: tuple[tuple[str, DataType, Column], ...] = ()

    @classmethod
    def of(
        cls, spark: SparkSession, table: TableRef, merge: MergeSpec, kinds: set[str]
    ) -> MergePruning:
        from pyspark.sql import functions as F

        condition = prune_text(spark, merge.condition)
        if condition is None or not merge.target_alias or "not_matched_by_source" in kinds:
            return cls()
        try:
            target_only, keys = _core.merge_target_pruning(condition, merge.target_alias)
        except DeltaError:
            return cls()
        target_types = {f.name: f.dataType for f in _table_schema(table).fields}
        source_types = {f.name.lower(): f.dataType for f in merge.source.schema.fields}
        ranges = []
        for column, other in keys:
            target_type = target_types.get(column)
            source_type = source_types.get(other[-1].lower()) if len(other) == 2 else None
            if target_type is None or source_type is None or target_type != source_type:
                continue
            if type(target_type).__name__ not in _RANGE_TYPES:
                continue
            source_key = F.col(".".join(_quoted(part) for part in other))
            ranges.append((_quoted(column), target_type, source_key))
        return cls(target_only, tuple(ranges))

    def summarize(self, source: DataFrame) -> tuple[int, str | None]:
        """The number of source rows and the pruning predicate (deltalog's SQL), from one
        Spark job over the source."""
        from pyspark.sql import functions as F

        bounds = [F.count(F.lit(1))]
        for _, _, key in self.keys:
            bounds.extend([F.min(key), F.max(key)])
        try:
            summary = source.agg(*bounds).collect()[0]
        except Exception:
            if not self.keys:
                raise
            # A key Spark cannot aggregate this way (an ambiguous name, say): no key ranges.
            return MergePruning(self.target_only).summarize(source)
        parts = [self.target_only] if self.target_only else []
        for number, (column, data_type, _) in enumerate(self.keys):
            low = _literal(summary[1 + 2 * number], data_type)
            high = _literal(summary[2 + 2 * number], data_type)
            if low is not None and high is not None:
                parts.append(f"{column} BETWEEN {low} AND {high}")
        return int(summary[0]), conjunction(parts)


def _table_schema(table: TableRef) -> StructType:
    """The table's latest schema, as Spark's type."""
    from pyspark.sql.types import StructType

    core = DeltaTable(table.uri, storage_options=table.options())
    return StructType.fromJson(json.loads(core.snapshot().schema.json()))


@dataclass(frozen=True)
class TableLayout:
    """The table's columns as the tasks take them (the plan's schema, evolved by schema
    evolution) and how the target's rows, read with the version's schema, fit them."""

    names: list[str]
    types: dict[str, DataType]
    #: The columns the target's rows have (not new ones of schema evolution).
    read: dict[str, DataType]
    #: The identity columns: name to whether it takes values given (``BY DEFAULT``).
    identity: dict[str, bool]

    @classmethod
    def of(cls, plan: ChangePlan, target: DataFrame) -> TableLayout:
        schema = plan.spark_schema()
        read = {f.name: f.dataType for f in target.schema.fields}
        names = [f.name for f in schema.fields]
        identity = {
            f.name: str(f.metadata.get(_IDENTITY_EXPLICIT_INSERT, False)).lower() == "true"
            for f in schema.fields
            if _IDENTITY_START in f.metadata
        }
        return cls(names, {f.name: f.dataType for f in schema.fields}, read, identity)

    def value(self, name: str, column: Callable[[str], Column]) -> Column:
        """The column ``name`` of a target row (``column`` gives a read column), NULL for a
        column the schema evolution adds, fitted to the column's (evolved) type."""
        from pyspark.sql import functions as F

        if name not in self.read:
            return F.lit(None).cast(self.types[name])
        return _fitted(column(name), self.read[name], self.types[name])


def _fitted(value: Column, have: DataType, want: DataType) -> Column:
    """``value`` (of type ``have``) as a value of ``want``: struct fields ``want`` adds are
    NULL (at any depth of structs), other types are cast (a widened type)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStruct

    if have == want:
        return value
    if isinstance(have, SparkStruct) and isinstance(want, SparkStruct):
        fields = {field.name.lower(): field for field in have.fields}
        members = []
        for field in want.fields:
            old = fields.get(field.name.lower())
            member = (
                F.lit(None).cast(field.dataType)
                if old is None
                else _fitted(value.getField(old.name), old.dataType, field.dataType)
            )
            members.append(member.alias(field.name))
        return F.when(value.isNull(), F.lit(None).cast(want)).otherwise(F.struct(*members))
    return value.cast(want)


def _join_type(kinds: set[str]) -> str:
    """The join that keeps the rows the clauses need: unmatched source rows for inserts,
    unmatched target rows for ``NOT MATCHED BY SOURCE``."""
    inserts, by_source = "not_matched" in kinds, "not_matched_by_source" in kinds
    if inserts and by_source:
        return "full"
    if inserts:
        return "left"
    return "right" if by_source else "inner"


def _merge_actions(
    joined: DataFrame,
    target: DataFrame,
    plan: ChangePlan,
    clauses: list[MergeClause],
    allows_repeats: bool,
) -> DataFrame:
    """The joined rows a clause acts on (and, for the multiple-match check, every matched
    pair), each with its clause's tag (``update#3``), kind and action(s)."""
    from pyspark.sql import functions as F

    has_source = F.col(SOURCE_MARK).isNotNull()
    has_target = target[FILE].isNotNull()

    def first_clause(kind: str, otherwise: str | None) -> Column:
        chosen = F.lit(otherwise)
        for number in reversed(range(len(clauses))):
            clause = clauses[number]
            if clause.kind == kind:
                tag = F.lit(f"{clause.action}#{number}")
                chosen = F.when(_condition(clause.condition), tag).otherwise(chosen)
        return chosen

    pair_default = None if allows_repeats else "none"
    tag = (
        F.when(has_source & has_target, first_clause("matched", pair_default))
        .when(has_source, first_clause("not_matched", None))
        .when(has_target, first_clause("not_matched_by_source", None))
    )
    kind = (
        F.when(has_source & has_target, F.lit("matched"))
        .when(has_source, F.lit("not_matched"))
        .otherwise(F.lit("not_matched_by_source"))
    )
    updates = ["update_preimage", "update_postimage"] if plan.changes else ["update"]
    verb = F.split(F.col(TAG), "#").getItem(0)
    actions = (
        F.when(verb == "update", F.array(*[F.lit(a) for a in updates]))
        .when(verb == "delete", F.array(F.lit("delete")))
        .when(verb == "insert", F.array(F.lit("insert")))
        .otherwise(F.array(F.lit("none")))
    )
    tagged = joined.withColumn(TAG, tag).where(F.col(TAG).isNotNull())
    return tagged.withColumn(CLAUSE, kind).withColumn(ACTION, F.explode(actions))


def _merged_values(
    rows: DataFrame, target: DataFrame, merge: MergeSpec, plan: ChangePlan, layout: TableLayout
) -> DataFrame:
    """The rows in the tasks' layout: the table's columns holding each row's values (new
    ones for updates and inserts, generated columns recomputed), then row tracking, the
    address, the action and the clause kind."""
    from pyspark.sql import functions as F

    names, types = layout.names, layout.types

    def old(name: str) -> Column:
        return layout.value(name, lambda read: target[read])

    updated: dict[str, list[tuple[str, Column]]] = {name: [] for name in names}
    inserted: dict[str, list[tuple[str, Column]]] = {name: [] for name in names}
    numbered: list[tuple[str, Column]] = []
    for number, clause in enumerate(merge.clauses):
        tag = f"{clause.action}#{number}"
        if clause.action == "delete":
            continue
        assignments = clause.assignments or {}
        if clause.every_column:
            assignments = _every_column(layout, merge, clause, old)
        values = _resolve_targets(names, types, assignments, old)
        if clause.action == "insert":
            generated = _numbered_identity(layout, values)
            numbered.append((tag, F.lit(json.dumps(generated))))
        else:
            _refuse_identity_update(layout, values, clause.every_column)
        into = updated if clause.action == "update" else inserted
        for name in names:
            if name in values:
                into[name].append((tag, values[name]))
            elif clause.action == "update":
                into[name].append((tag, old(name)))
    action = F.col(ACTION)
    columns = []
    for name in names:
        # The other rows' values are written only as change data (deleted rows, preimages):
        # without it they are NULL, so Spark reads only the target columns the clauses use.
        value = old(name) if plan.changes else F.lit(None).cast(types[name])
        if updated[name]:
            value = F.when(
                action.isin("update", "update_postimage"), _by_tag(updated[name])
            ).otherwise(value)
        insert_value = _by_tag(inserted[name]) if inserted[name] else F.lit(None).cast(types[name])
        value = F.when(action == "insert", insert_value).otherwise(value)
        columns.append(value.alias(name))
    tracking = [target[name].alias(name) for name in (ROW_TRACKING if plan.row_ids else ())]
    address = [target[FILE].alias(FILE), target[ROW_INDEX].alias(ROW_INDEX)]
    identity = []
    if layout.identity and numbered:
        identity = [F.when(action == "insert", _by_tag(numbered)).alias(IDENTITY)]
    projected = rows.select(*columns, *tracking, *address, F.col(ACTION), F.col(CLAUSE), *identity)
    if not merge.generated:
        return projected
    written = F.col(ACTION).isin("update", "update_postimage", "insert")
    regenerated = []
    for name in names:
        column = F.col(_quoted(name))
        expression = _lookup(merge.generated, name)
        if expression is not None:
            column = F.when(written, F.expr(expression).cast(types[name])).otherwise(column)
        regenerated.append(column.alias(name))
    kept = [F.col(n) for n in _extra_columns(plan)] + [F.col(CLAUSE)]
    if identity:
        kept.append(F.col(IDENTITY))
    return projected.select(*regenerated, *kept)


def _numbered_identity(layout: TableLayout, values: Mapping[str, Column]) -> list[str]:
    """The identity columns an insert clause assigning ``values`` leaves to the table to
    number (spec "Identity Columns"), as Delta on Spark's MERGE does; assigning a
    ``GENERATED ALWAYS`` one raises ``ConstraintViolationError``, as Delta on Spark raises
    ``DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED`` (a ``BY DEFAULT`` one keeps the
    value given)."""
    for name, explicit in layout.identity.items():
        if name in values and not explicit:
            error = ConstraintViolationError(
                f"identity column `{name}`: values cannot be given for an identity column "
                "that is GENERATED ALWAYS (DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED)"
                "; leave it out of the insert and the table numbers the rows"
            )
            error.constraint = f"identity column `{name}`"
            raise error
    return [name for name in layout.identity if name not in values]


def _refuse_identity_update(
    layout: TableLayout, values: dict[str, Column], every_column: bool
) -> None:
    """An update clause keeps identity values: ``UPDATE SET *`` leaves identity columns out
    of ``values`` (as deltalog's merge does), naming one is refused as Delta on Spark refuses
    it (``DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED``)."""
    for name in layout.identity:
        if name not in values:
            continue
        if every_column:
            del values[name]
            continue
        raise InvalidArgumentError(
            f"the identity column {name!r} cannot be updated: its values are generated by the table"
        )


def _every_column(
    layout: TableLayout, merge: MergeSpec, clause: MergeClause, old: Callable[[str], Column]
) -> dict[str, str | Column]:
    """``UPDATE SET *`` / ``INSERT *``: each target column from the source column of the
    same name (in any case). Without schema evolution a target column the source lacks is an
    error; with it, an update keeps the target's value (and the struct fields only the
    target has), an insert gives NULL, as Delta on Spark 4.4 does."""
    by_lower = {column.lower(): column for column in merge.source.columns}
    source_types = {field.name: field.dataType for field in merge.source.schema.fields}
    assignments: dict[str, str | Column] = {}
    for name in layout.names:
        column = by_lower.get(name.lower())
        if column is None:
            if merge.schema_evolution:
                continue
            kind = "UPDATE SET *" if clause.action == "update" else "INSERT *"
            raise InvalidArgumentError(
                f"{kind} needs a source column for every target column; the source has no "
                f"column {name!r}"
            )
        value = merge.source[column]
        if merge.schema_evolution:
            kept = old(name) if clause.action == "update" else None
            value = _starred(value, source_types[column], layout.types[name], kept)
        assignments[name] = value
    return assignments


def _starred(value: Column, have: DataType, want: DataType, kept: Column | None) -> Column:
    """A source value (of type ``have``) for a target column of type ``want`` under ``*``
    with schema evolution: a struct field the source lacks comes from ``kept`` (the target's
    value, for an update) or is NULL (an insert), at any depth of structs."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStruct

    if not (isinstance(have, SparkStruct) and isinstance(want, SparkStruct)):
        return value
    fields = {field.name.lower(): field for field in have.fields}
    members = []
    for field in want.fields:
        source = fields.get(field.name.lower())
        target = None if kept is None else kept.getField(field.name)
        if source is None:
            member = F.lit(None).cast(field.dataType) if target is None else target
        else:
            member = _starred(value.getField(source.name), source.dataType, field.dataType, target)
        members.append(member.alias(field.name))
    return F.when(value.isNull(), F.lit(None).cast(want)).otherwise(F.struct(*members))


def _by_tag(values: list[tuple[str, Column]]) -> Column:
    from pyspark.sql import functions as F

    chosen: Column | None = None
    for tag, value in values:
        chosen = (
            F.when(F.col(TAG) == tag, value)
            if chosen is None
            else chosen.when(F.col(TAG) == tag, value)
        )
    assert chosen is not None
    return chosen
