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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from .. import _core
from .._table import CommitResult, DeltaTable
from ..exceptions import DeltaError, InvalidArgumentError
from ._native import _prunable
from ._source import SOURCE_NAME

if TYPE_CHECKING:
    import pyarrow
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["ChangePlan", "TableRef", "delete_rows", "update_rows"]

ACTION = "__deltalog_action"
FILE = "__deltalog_file"
ROW_INDEX = "__deltalog_row_index"
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
    spark: SparkSession, table: TableRef, operation: str, condition: str | Column | None
) -> ChangePlan:
    """Plans ``operation``; the candidate files are pruned by ``condition`` when it is text
    that deltalog's SQL reads as Spark does."""
    zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    options: dict[str, Any] = {"operation": operation, "condition": _condition_text(condition)}
    if isinstance(condition, str) and _prunable(condition, zone):
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

    collected = rows.mapInArrow(task, "outcome binary").collect()
    return [bytes(row[0]) for row in collected]


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
    names: list[str], types: Mapping[str, DataType], assignments: Mapping[str, str | Column]
) -> dict[str, Column]:
    """The new value of every top-level column set (a nested ``a.b`` target sets the field
    ``b`` of the struct ``a``, its other fields kept), cast to the column's type."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStruct

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
        base = resolved.get(name, F.col(_quoted(name)))
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
