"""Merging a source into a table (:meth:`DeltaTable.merge`): the :class:`TableMerger`
builder, as Delta on Spark's ``MERGE INTO`` / ``DeltaMergeBuilder``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import _core
from ._dml import _file_size
from .exceptions import InvalidArgumentError

__all__ = ["TableMerger"]

if TYPE_CHECKING:
    from ._core import _MergeClauseKind

_Clause = tuple["_MergeClauseKind", "str | None", "list[tuple[str, str]]"]
_Result = TypeVar("_Result")


class TableMerger(Generic[_Result]):
    """A merge being described: add ``when_*`` clauses (each kind applies in the order
    added; the first clause of a kind whose ``predicate`` holds wins), then
    :meth:`execute`. Every method returns the merger, so calls chain.

    Conditions and values are SQL text; columns are qualified with the aliases
    (``t.id``, ``s.value``) or bare when only one side has them. :meth:`execute` returns what
    ``done`` makes of the commit (a :class:`CommitResult` from :meth:`DeltaTable.merge`).
    """

    __slots__ = (
        "_clauses",
        "_commit_info",
        "_done",
        "_merge_schema",
        "_on",
        "_source",
        "_source_alias",
        "_storage_options",
        "_target_alias",
        "_target_file_size",
        "_uri",
    )

    def __init__(
        self,
        uri: str,
        storage_options: dict[str, str] | None,
        source: object,
        on: str,
        source_alias: str,
        target_alias: str,
        target_file_size: int | None,
        commit_info: Mapping[str, Any] | None,
        done: Callable[[_core.RawCommit], _Result],
        merge_schema: bool = False,
    ) -> None:
        if not isinstance(on, str):
            raise InvalidArgumentError("on must be SQL text such as 't.id = s.id'")
        for name, alias in (("source_alias", source_alias), ("target_alias", target_alias)):
            if not isinstance(alias, str) or not alias:
                raise InvalidArgumentError(f"{name} must be a non-empty str")
        self._uri = uri
        self._storage_options = storage_options
        self._source = source
        self._on = on
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._target_file_size = target_file_size
        self._commit_info = None if commit_info is None else dict(commit_info)
        self._clauses: list[_Clause] = []
        self._done = done
        self._merge_schema = bool(merge_schema)

    def with_schema_evolution(self) -> TableMerger[_Result]:
        """Schema evolution, as Delta on Spark's ``withSchemaEvolution()`` (``MERGE WITH
        SCHEMA EVOLUTION``): the table gains the source columns and struct fields the clauses
        assign (every one with ``*`` clauses) and, with ``delta.enableTypeWidening``, their
        wider types; ``*`` clauses then name the source's columns, an update keeping the
        target's others and an insert giving them NULL."""
        self._merge_schema = True
        return self

    def when_matched_update(
        self, set: Mapping[str, str], predicate: str | None = None
    ) -> TableMerger[_Result]:
        """``WHEN MATCHED [AND predicate] THEN UPDATE SET column = value, ...``."""
        return self._add("matched_update", predicate, _assignments(set, "set"))

    def when_matched_update_all(self, predicate: str | None = None) -> TableMerger[_Result]:
        """``WHEN MATCHED [AND predicate] THEN UPDATE SET *``: every target column from the
        source column of the same name."""
        return self._add("matched_update_all", predicate, [])

    def when_matched_delete(self, predicate: str | None = None) -> TableMerger[_Result]:
        """``WHEN MATCHED [AND predicate] THEN DELETE``."""
        return self._add("matched_delete", predicate, [])

    def when_not_matched_insert(
        self, values: Mapping[str, str], predicate: str | None = None
    ) -> TableMerger[_Result]:
        """``WHEN NOT MATCHED [AND predicate] THEN INSERT (columns) VALUES (values)``;
        columns not named are NULL. Only source columns may be referenced."""
        return self._add("not_matched_insert", predicate, _assignments(values, "values"))

    def when_not_matched_insert_all(self, predicate: str | None = None) -> TableMerger[_Result]:
        """``WHEN NOT MATCHED [AND predicate] THEN INSERT *``."""
        return self._add("not_matched_insert_all", predicate, [])

    def when_not_matched_by_source_update(
        self, set: Mapping[str, str], predicate: str | None = None
    ) -> TableMerger[_Result]:
        """``WHEN NOT MATCHED BY SOURCE [AND predicate] THEN UPDATE SET ...`` (the target
        only may be referenced)."""
        return self._add("not_matched_by_source_update", predicate, _assignments(set, "set"))

    def when_not_matched_by_source_delete(
        self, predicate: str | None = None
    ) -> TableMerger[_Result]:
        """``WHEN NOT MATCHED BY SOURCE [AND predicate] THEN DELETE``."""
        return self._add("not_matched_by_source_delete", predicate, [])

    def execute(self) -> _Result:
        """Runs the merge and commits a ``MERGE``; ``metrics`` holds Spark's
        (``numSourceRows``, ``numTargetRowsInserted``, ``numTargetRowsUpdated``,
        ``numTargetRowsDeleted``, ``numTargetRowsCopied``, ``numOutputRows``,
        ``numTargetFilesAdded``, ``numTargetFilesRemoved``,
        ``numTargetDeletionVectorsAdded``, ...). Nothing is committed when no row changes.
        """
        raw = _core.merge_rows(
            self._uri,
            self._source,
            self._on,
            list(self._clauses),
            self._source_alias,
            self._target_alias,
            _file_size(self._target_file_size),
            self._commit_info,
            self._storage_options,
            self._merge_schema,
        )
        return self._done(raw)

    def _add(
        self, kind: _MergeClauseKind, predicate: str | None, assignments: list[tuple[str, str]]
    ) -> TableMerger[_Result]:
        if predicate is not None and not isinstance(predicate, str):
            raise InvalidArgumentError("predicate must be SQL text or None")
        self._clauses.append((kind, predicate, assignments))
        return self

    def __repr__(self) -> str:
        return f"TableMerger({self._uri!r}, on={self._on!r}, clauses={len(self._clauses)})"


def _assignments(mapping: Mapping[str, str], name: str) -> list[tuple[str, str]]:
    if not isinstance(mapping, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise InvalidArgumentError(f"{name} must map column names to SQL expression text")
    return list(mapping.items())
