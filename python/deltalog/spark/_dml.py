"""DELETE and UPDATE run by Spark's executors (``deltalog.spark.DeltaTable.delete`` and
``update``).

Where each piece runs:

- The driver plans the change with deltalog (:func:`plan_change`): the version read, the
  candidate files (pruned by the condition when deltalog's SQL reads it as Spark does), and
  how rows leave the table (deletion vectors, or files rewritten whole).
- Spark reads the candidate files through the ``deltalog`` data source with each row's
  address (its data file and position) and, under row tracking, its row id; Spark evaluates
  the condition and the new values (any Spark SQL, UDFs included) and gives every row an
  action (``delete``, ``update``, ``keep``, ...). Each data file is read by one input
  partition and nothing reshuffles the rows, so each task holds whole files.
- Each task hands its rows to deltalog's Rust code (``mapInArrow``), which writes the
  deletion vectors, data files and change data files and returns what it did as JSON bytes.
- The driver collects those (small) outcomes and commits them as ONE Delta version.

A failed job commits nothing: the files its finished tasks wrote are referenced by no
commit, and VACUUM removes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from .. import _core
from .._table import CommitResult, DeltaTable
from ..exceptions import DeltaError, InvalidArgumentError, MergeMultipleMatchError
from ._native import _prunable
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
        )


def delete_rows(
    spark: SparkSession, table: TableRef, condition: str | Column | None
) -> CommitResult:
    """Deletes the rows matching ``condition`` (every row when ``None``) in one commit."""
    from pyspark.sql import functions as F

    plan = plan_change(spark, table, "DELETE", condition)
    if plan.whole_files or not plan.files:
        return commit_change(table, plan, [])
    matches = _condition(condition)
    target = read_target(spark, table, plan, plan.files)
    if plan.deletion_vectors:
        # A deletion vector needs addresses only: the change data feed reads deleted rows
        # from the vectors, so no values are shipped to the tasks.
        rows = target.where(matches).withColumn(ACTION, F.lit("delete"))
        rows = _without_values(rows, target.schema, plan)
    else:
        touched = touched_files(target, matches)
        if not touched:
            return commit_change(table, plan, [])
        target = read_target(spark, table, plan, touched)
        action = F.when(matches, F.lit("delete")).otherwise(F.lit("keep"))
        rows = target.withColumn(ACTION, action)
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
    plan = plan_change(spark, table, "UPDATE", condition)
    if not plan.files:
        return commit_change(table, plan, [])
    matches = _condition(condition)
    target = read_target(spark, table, plan, plan.files)
    update_actions = ["update_preimage", "update_postimage"] if plan.changes else ["update"]
    if plan.deletion_vectors:
        target = target.where(matches)
        actions = F.array(*[F.lit(a) for a in update_actions])
    else:
        touched = touched_files(target, matches)
        if not touched:
            return commit_change(table, plan, [])
        target = read_target(spark, table, plan, touched)
        actions = F.when(matches, F.array(*[F.lit(a) for a in update_actions])).otherwise(
            F.array(F.lit("keep"))
        )
    rows = target.withColumn(ACTION, F.explode(actions))
    rows = _with_new_values(rows, target.schema, plan, assignments, generated)
    return commit_change(table, plan, run_tasks(rows, table, plan))


def plan_change(
    spark: SparkSession,
    table: TableRef,
    operation: str,
    condition: str | Column | None,
    prune: bool = True,
    **extra: Any,
) -> ChangePlan:
    """Plans ``operation``; with ``prune``, the candidate files are pruned by ``condition``
    when it is text that deltalog's SQL reads as Spark does. ``extra`` are more of the
    core's ``ChangeOptions`` (camelCase)."""
    zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    options: dict[str, Any] = {
        "operation": operation,
        "condition": _condition_text(condition),
        **extra,
    }
    if prune and isinstance(condition, str) and _prunable(condition, zone):
        pruned = {**options, "prune": condition, "pruneIsCondition": True}
        try:
            return ChangePlan.of(
                _core.plan_distributed_change(table.uri, json.dumps(pruned), table.options())
            )
        except DeltaError:
            pass  # deltalog does not read it (a Spark function, say): every file is a candidate
    text = _core.plan_distributed_change(table.uri, json.dumps(options), table.options())
    return ChangePlan.of(text)


def read_target(
    spark: SparkSession, table: TableRef, plan: ChangePlan, files: tuple[str, ...] | list[str]
) -> DataFrame:
    """The rows of ``files`` at the plan's version, with their addresses (and row ids)."""
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


def touched_files(target: DataFrame, matches: Column) -> list[str]:
    """The data files holding rows that ``matches`` (a Spark job; only paths come back)."""
    return [str(row[0]) for row in target.where(matches).select(FILE).distinct().collect()]


def run_tasks(rows: DataFrame, table: TableRef, plan: ChangePlan) -> list[bytes]:
    """Hands every partition of ``rows`` to deltalog's task writer; returns the outcomes."""
    uri, text, storage = table.uri, plan.text, table.options()

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
    """The condition as the commit's ``predicate`` parameter records it."""
    if condition is None or isinstance(condition, str):
        return condition
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
    ``b`` of the struct ``a``, its other fields kept), cast to the column's type; ``old``
    gives a column's current value (default: the column of that name)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStruct

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
        data_type: DataType = types[name]
        for part in parts[1:]:
            if not isinstance(data_type, SparkStruct):
                raise InvalidArgumentError(f"{target!r} is not a field of a struct column")
            field = next((f for f in data_type.fields if f.name.lower() == part.lower()), None)
            if field is None:
                raise InvalidArgumentError(f"{target!r} names no field of the table")
            data_type = field.dataType
        base = resolved.get(name, current(name))
        path = ".".join(parts[1:])
        resolved[name] = base.withField(path, _value(value).cast(data_type))
    return resolved


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
    source_rows = merge.source.count()
    plan = plan_change(
        spark,
        table,
        "MERGE",
        merge.condition,
        prune=False,
        insertOnly=kinds <= {"not_matched"},
        inserts="not_matched" in kinds,
        allowsMultipleMatches=allows_repeats,
        parameters=parameters,
        metrics={"numSourceRows": source_rows},
    )
    target = read_target(spark, table, plan, plan.files)
    if merge.target_alias:
        target = target.alias(merge.target_alias)
    names = _table_columns(target.schema, plan)
    source = merge.source.withColumn(SOURCE_MARK, F.lit(True))
    joined = source.join(target, _condition(merge.condition), _join_type(kinds))
    rows = _merge_actions(joined, target, plan, clauses, allows_repeats)
    changed = _merged_values(rows, target, merge, plan, names).persist()
    try:
        rows = changed
        if not plan.deletion_vectors:
            rows = _with_kept_rows(spark, table, plan, changed, names)
        keyed = rows.withColumn(
            TASK_KEY,
            F.coalesce(
                F.col(FILE), F.concat(F.lit("task "), F.spark_partition_id().cast("string"))
            ),
        )
        shuffled = keyed.repartition(TASK_KEY).drop(TASK_KEY)
        outcomes = run_tasks(shuffled, table, plan)
    finally:
        changed.unpersist()
    return commit_change(table, plan, outcomes)


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
    rows: DataFrame, target: DataFrame, merge: MergeSpec, plan: ChangePlan, names: list[str]
) -> DataFrame:
    """The rows in the tasks' layout: the table's columns holding each row's values (new
    ones for updates and inserts, generated columns recomputed), then row tracking, the
    address, the action and the clause kind."""
    from pyspark.sql import functions as F

    types = {field.name: field.dataType for field in target.schema.fields}
    source_columns = set(merge.source.columns)

    def old(name: str) -> Column:
        return target[name]

    updated: dict[str, list[tuple[str, Column]]] = {name: [] for name in names}
    inserted: dict[str, list[tuple[str, Column]]] = {name: [] for name in names}
    for number, clause in enumerate(merge.clauses):
        tag = f"{clause.action}#{number}"
        if clause.action == "delete":
            continue
        assignments = clause.assignments or {}
        if clause.every_column:
            assignments = _every_column(names, source_columns, merge.source, clause)
        values = _resolve_targets(names, types, assignments, old)
        into = updated if clause.action == "update" else inserted
        for name in names:
            if name in values:
                into[name].append((tag, values[name]))
            elif clause.action == "update":
                into[name].append((tag, old(name)))
    action = F.col(ACTION)
    columns = []
    for name in names:
        value = old(name)
        if updated[name]:
            value = F.when(
                action.isin("update", "update_postimage"), _by_tag(updated[name])
            ).otherwise(value)
        insert_value = _by_tag(inserted[name]) if inserted[name] else F.lit(None).cast(types[name])
        value = F.when(action == "insert", insert_value).otherwise(value)
        columns.append(value.alias(name))
    tracking = [target[name].alias(name) for name in (ROW_TRACKING if plan.row_ids else ())]
    address = [target[FILE].alias(FILE), target[ROW_INDEX].alias(ROW_INDEX)]
    projected = rows.select(*columns, *tracking, *address, F.col(ACTION), F.col(CLAUSE))
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
    return projected.select(*regenerated, *[F.col(n) for n in _extra_columns(plan)], F.col(CLAUSE))


def _every_column(
    names: list[str], source_columns: set[str], source: DataFrame, clause: MergeClause
) -> dict[str, str | Column]:
    """``UPDATE SET *`` / ``INSERT *``: each target column from the source column of the
    same name (in any case); a target column the source lacks is an error."""
    by_lower = {column.lower(): column for column in source_columns}
    assignments: dict[str, str | Column] = {}
    for name in names:
        column = by_lower.get(name.lower())
        if column is None:
            kind = "UPDATE SET *" if clause.action == "update" else "INSERT *"
            raise InvalidArgumentError(
                f"{kind} needs a source column for every target column; the source has no "
                f"column {name!r}"
            )
        assignments[name] = source[column]
    return assignments


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


def _with_kept_rows(
    spark: SparkSession, table: TableRef, plan: ChangePlan, rows: DataFrame, names: list[str]
) -> DataFrame:
    """Copy-on-write: ``rows`` and, as ``keep`` rows, the other live rows of every file
    they delete or update rows of (read again and rewritten whole)."""
    from pyspark.sql import functions as F

    removing = rows.where(F.col(ACTION).isin("delete", "update", "update_preimage"))
    touched = [str(row[0]) for row in removing.select(FILE).distinct().collect()]
    if not touched:
        return rows
    gone = removing.select(FILE, ROW_INDEX).distinct()
    kept = (
        read_target(spark, table, plan, touched)
        .join(gone, [FILE, ROW_INDEX], "left_anti")
        .withColumn(ACTION, F.lit("keep"))
        .withColumn(CLAUSE, F.lit(None).cast("string"))
    )
    layout = [*names, *_extra_columns(plan), CLAUSE]
    return rows.select(*layout).unionByName(kept.select(*layout))
