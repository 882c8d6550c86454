"""Altering a table: :class:`Alter`, reached as ``DeltaTable.alter``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, final

from . import _core
from ._frozen import Frozen
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from ._table import CommitResult, DeltaTable, SchemaLike, _CommitTuple

__all__ = ["Alter"]


@final
class Alter(Frozen):
    """The alterations of a table, as Delta on Spark's ``ALTER TABLE``: each method commits
    one new version on top of the latest one (with the operation name and parameters Delta on
    Spark writes) and returns its :class:`CommitResult`. A failed alteration commits nothing.

    Renaming and dropping columns need column mapping (``delta.columnMapping.mode`` =
    ``name``): the data files keep their physical column names and are not rewritten.
    """

    __slots__ = ("_table",)
    _wraps: ClassVar[type] = _core.RawAlter

    _table: DeltaTable

    def __init__(self, table: DeltaTable) -> None:
        object.__setattr__(self, "_table", table)

    def set_properties(self, properties: Mapping[str, str]) -> CommitResult:
        """Sets table properties (``SET TBLPROPERTIES``). ``delta.*`` keys must be ones Delta
        knows, with valid values (any case; stored in Delta's spelling); properties that turn
        a feature on upgrade the protocol (``delta.enableDeletionVectors``,
        ``delta.enableChangeDataFeed``, ``delta.columnMapping.mode`` from ``none`` to ``name``,
        ``delta.enableInCommitTimestamps``, ``delta.feature.<name>: supported``, ...);
        ``comment`` sets the description. Errors: :class:`InvalidArgumentError`,
        :class:`OperationNotAllowedError`, :class:`UnsupportedFeatureError`."""
        return self._done(self._raw().set_properties(_strings(properties, "properties")))

    def unset_properties(self, keys: Sequence[str], if_exists: bool = False) -> CommitResult:
        """Removes table properties (``UNSET TBLPROPERTIES``); a key the table does not have
        is an :class:`InvalidArgumentError` unless ``if_exists``."""
        return self._done(self._raw().unset_properties(_names(keys, "keys"), if_exists))

    def add_columns(self, fields: SchemaLike, parent: str | None = None) -> CommitResult:
        """Adds the columns of ``fields`` (an Arrow schema, ``__arrow_c_schema__``, or Delta
        schema JSON text) at the end of the table, or of the struct column ``parent``
        (``"s"``, ``"s.inner"``). New columns must be nullable; existing rows read NULL."""
        return self._done(self._raw().add_columns(fields, parent))

    def rename_column(self, column: str, new_name: str) -> CommitResult:
        """Renames ``column`` (a path such as ``"a"``, ``"s.x"`` or ``"`a.b`"``) to
        ``new_name`` (taken as written). Needs column mapping; a column a CHECK constraint
        uses is refused."""
        return self._done(self._raw().rename_column(column, new_name))

    def drop_columns(self, columns: Sequence[str], if_exists: bool = False) -> CommitResult:
        """Drops columns (paths as for :meth:`rename_column`). Needs column mapping; partition
        columns, the last column and columns a CHECK constraint uses are refused."""
        return self._done(self._raw().drop_columns(_names(columns, "columns"), if_exists))

    def add_constraint(self, name: str, expression: str) -> CommitResult:
        """Adds the CHECK constraint ``name`` (``delta.constraints.<name>``): a filter
        expression every row must make true. Existing rows are checked first: when any makes
        it false or NULL, :class:`ConstraintViolationError` and nothing is committed."""
        return self._done(self._raw().add_constraint(name, expression))

    def drop_constraint(self, name: str, if_exists: bool = False) -> CommitResult:
        """Drops the CHECK constraint ``name``; a missing one is an
        :class:`InvalidArgumentError` unless ``if_exists``."""
        return self._done(self._raw().drop_constraint(name, if_exists))

    def add_feature(self, name: str) -> CommitResult:
        """Adds the table feature ``name`` (``"deletionVectors"``, ``"changeDataFeed"``, ...)
        to the protocol; an unknown feature, or one deltalog cannot honour when writing, is an
        :class:`UnsupportedFeatureError`."""
        return self._done(self._raw().add_feature(name))

    def set_description(self, text: str) -> CommitResult:
        """Sets the table description (``metaData.description``)."""
        return self._done(self._raw().set_description(text))

    def _raw(self) -> _core.RawAlter:
        return _core.RawAlter(self._table.snapshot()._raw)

    def _done(self, raw: _CommitTuple) -> CommitResult:
        return self._table._commit_result(raw)

    def __repr__(self) -> str:
        return f"Alter({self._table.uri!r})"


def _strings(values: Mapping[str, str], name: str) -> dict[str, str]:
    if not isinstance(values, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in values.items()
    ):
        raise InvalidArgumentError(f"{name} must map str to str")
    return dict(values)


def _names(values: Sequence[str], name: str) -> list[str]:
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise InvalidArgumentError(f"{name} must be a sequence of str")
    return list(values)
