"""``DeltaTable.merge(...)``'s builder: delta-spark's ``DeltaMergeBuilder``, run on Spark's
executors by ``_dml.merge_rows``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..exceptions import InvalidArgumentError
from ._dml import MergeClause, MergeSpec, TableRef, merge_rows

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["DeltaMergeBuilder"]

Assignments = Mapping[str, "str | Column"]


class DeltaMergeBuilder:
    """The WHEN clauses of a merge, in the order given; :meth:`execute` runs it. Each method
    returns a new builder."""

    def __init__(
        self,
        spark: SparkSession,
        table: TableRef,
        target_alias: str | None,
        source: DataFrame,
        condition: str | Column,
        generated: Mapping[str, str],
        clauses: tuple[MergeClause, ...] = (),
        schema_evolution: bool = False,
    ) -> None:
        self._spark = spark
        self._table = table
        self._target_alias = target_alias
        self._source = source
        self._condition = condition
        self._generated = generated
        self._clauses = clauses
        self._schema_evolution = schema_evolution

    def whenMatchedUpdate(
        self, condition: str | Column | None = None, set: Assignments | None = None
    ) -> DeltaMergeBuilder:
        """Updates the matched target row: each column of ``set`` to its value."""
        return self._with("matched", "update", condition, _required(set, "set"))

    def whenMatchedUpdateAll(self, condition: str | Column | None = None) -> DeltaMergeBuilder:
        """Updates every column of the matched target row from the source column of the same
        name (``UPDATE SET *``)."""
        return self._with("matched", "update", condition, None, every_column=True)

    def whenMatchedDelete(self, condition: str | Column | None = None) -> DeltaMergeBuilder:
        """Deletes the matched target row."""
        return self._with("matched", "delete", condition, None)

    def whenNotMatchedInsert(
        self, condition: str | Column | None = None, values: Assignments | None = None
    ) -> DeltaMergeBuilder:
        """Inserts a row of ``values`` for a source row no target row matched (columns not
        given are NULL, generated columns computed)."""
        return self._with("not_matched", "insert", condition, _required(values, "values"))

    def whenNotMatchedInsertAll(self, condition: str | Column | None = None) -> DeltaMergeBuilder:
        """Inserts the unmatched source row, column by column of the same name
        (``INSERT *``)."""
        return self._with("not_matched", "insert", condition, None, every_column=True)

    def whenNotMatchedBySourceUpdate(
        self, condition: str | Column | None = None, set: Assignments | None = None
    ) -> DeltaMergeBuilder:
        """Updates a target row no source row matched."""
        return self._with("not_matched_by_source", "update", condition, _required(set, "set"))

    def whenNotMatchedBySourceDelete(
        self, condition: str | Column | None = None
    ) -> DeltaMergeBuilder:
        """Deletes a target row no source row matched."""
        return self._with("not_matched_by_source", "delete", condition, None)

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Lets the merge add to the target's schema the source columns (and struct fields)
        its clauses assign, every one for ``UPDATE SET *`` / ``INSERT *``, in its own commit
        (with ``delta.enableTypeWidening``, also the wider types of source columns)."""
        return self._next(self._clauses, schema_evolution=True)

    def execute(self) -> DataFrame:
        """Runs the merge as ONE commit; returns delta-spark's one-row DataFrame of
        ``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows`` and
        ``num_inserted_rows``."""
        if not self._clauses:
            raise InvalidArgumentError("a merge needs at least one WHEN clause")
        spec = MergeSpec(
            self._target_alias,
            self._source,
            self._condition,
            self._clauses,
            self._generated,
            self._schema_evolution,
        )
        metrics = merge_rows(self._spark, self._table, spec).metrics
        updated = int(metrics.get("numTargetRowsUpdated", 0))
        deleted = int(metrics.get("numTargetRowsDeleted", 0))
        inserted = int(metrics.get("numTargetRowsInserted", 0))
        row = (updated + deleted + inserted, updated, deleted, inserted)
        schema = (
            "num_affected_rows long, num_updated_rows long, num_deleted_rows long, "
            "num_inserted_rows long"
        )
        return self._spark.createDataFrame([row], schema)

    def _with(
        self,
        kind: str,
        action: str,
        condition: str | Column | None,
        assignments: Assignments | None,
        every_column: bool = False,
    ) -> DeltaMergeBuilder:
        clause = MergeClause(kind, action, condition, assignments, every_column)
        return self._next((*self._clauses, clause), self._schema_evolution)

    def _next(self, clauses: tuple[MergeClause, ...], schema_evolution: bool) -> DeltaMergeBuilder:
        """This merge with ``clauses`` and ``schema_evolution``."""
        return DeltaMergeBuilder(
            self._spark,
            self._table,
            self._target_alias,
            self._source,
            self._condition,
            self._generated,
            clauses,
            schema_evolution,
        )


def _required(assignments: Assignments | None, name: str) -> Assignments:
    if not assignments:
        raise InvalidArgumentError(f"this clause needs {name}={{column: value}}")
    return assignments
