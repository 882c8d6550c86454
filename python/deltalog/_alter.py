"""Altering a table (``ALTER TABLE``): the alterations of :class:`Alter`, reached as
``DeltaTable.alter``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

from . import _core
from ._frozen import Frozen
from ._results import SchemaLike
from .exceptions import InvalidArgumentError

__all__ = ["Alterations"]

_Result = TypeVar("_Result")


class Alterations(Frozen, Generic[_Result]):
    """The methods of :class:`Alter`, which binds them to :class:`CommitResult`: each alters
    the table ``table`` opens in one new version on top of the latest one and returns what
    ``done`` makes of the ``RawCommit``."""

    __slots__ = ("_done", "_table")

    _table: _core.RawDeltaTable
    _done: Callable[[_core.RawCommit], _Result]

    def __init__(
        self, table: _core.RawDeltaTable, done: Callable[[_core.RawCommit], _Result]
    ) -> None:
        object.__setattr__(self, "_table", table)
        object.__setattr__(self, "_done", done)

    def set_properties(self, properties: Mapping[str, str]) -> _Result:
        """Sets table properties (``SET TBLPROPERTIES``). ``delta.*`` keys must be ones Delta
        knows, with valid values (any case; stored in Delta's spelling); properties that turn
        a feature on upgrade the protocol (``delta.enableDeletionVectors``,
        ``delta.enableChangeDataFeed``, ``delta.columnMapping.mode`` from ``none`` to ``name``,
        ``delta.enableInCommitTimestamps``, ``delta.feature.<name>: supported``, ...);
        ``comment`` sets the description. Errors: :class:`InvalidArgumentError`,
        :class:`OperationNotAllowedError`, :class:`UnsupportedFeatureError`."""
        return self._done(self._raw().set_properties(_strings(properties, "properties")))

    def unset_properties(self, keys: Sequence[str], if_exists: bool = False) -> _Result:
        """Removes table properties (``UNSET TBLPROPERTIES``); a key the table does not have
        is an :class:`InvalidArgumentError` unless ``if_exists``."""
        return self._done(self._raw().unset_properties(_names(keys, "keys"), if_exists))

    def add_columns(self, fields: SchemaLike, parent: str | None = None) -> _Result:
        """Adds the columns of ``fields`` (an Arrow schema, ``__arrow_c_schema__``, or Delta
        schema JSON text) at the end of the table, or of the struct column ``parent``
        (``"s"``, ``"s.inner"``). New columns must be nullable; existing rows read NULL."""
        return self._done(self._raw().add_columns(fields, parent))

    def rename_column(self, column: str, new_name: str) -> _Result:
        """Renames ``column`` (a path such as ``"a"``, ``"s.x"`` or ``"`a.b`"``) to
        ``new_name`` (taken as written). Needs column mapping; a column a CHECK constraint
        uses is refused."""
        return self._done(self._raw().rename_column(column, new_name))

    def drop_columns(self, columns: Sequence[str], if_exists: bool = False) -> _Result:
        """Drops columns (paths as for :meth:`rename_column`). Needs column mapping; partition
        columns, the last column and columns a CHECK constraint uses are refused."""
        return self._done(self._raw().drop_columns(_names(columns, "columns"), if_exists))

    def add_constraint(self, name: str, expression: str) -> _Result:
        """Adds the CHECK constraint ``name`` (``delta.constraints.<name>``): a filter
        expression every row must make true. Existing rows are checked first: when any makes
        it false or NULL, :class:`ConstraintViolationError` and nothing is committed."""
        return self._done(self._raw().add_constraint(name, expression))

    def drop_constraint(self, name: str, if_exists: bool = False) -> _Result:
        """Drops the CHECK constraint ``name``; a missing one is an
        :class:`InvalidArgumentError` unless ``if_exists``."""
        return self._done(self._raw().drop_constraint(name, if_exists))

    def add_feature(self, name: str) -> _Result:
        """Adds the table feature ``name`` (``"deletionVectors"``, ``"changeDataFeed"``, ...)
        to the protocol; an unknown feature, or one deltalog cannot honour when writing, is an
        :class:`UnsupportedFeatureError`."""
        return self._done(self._raw().add_feature(name))

    def set_description(self, text: str) -> _Result:
        """Sets the table description (``metaData.description``)."""
        return self._done(self._raw().set_description(text))

    def change_column(
        self,
        column: str,
        *,
        type: str | None = None,
        comment: str | None = None,
        nullable: bool | None = None,
        first: bool = False,
        after: str | None = None,
    ) -> _Result:
        """Changes one column, as Spark's ``ALTER TABLE CHANGE COLUMN`` (``column``: a path as
        for :meth:`rename_column`); data files are not rewritten.

        ``type``: a wider Delta type (``"long"``, ``"double"``, ``"decimal(12,2)"``,
        ``"timestamp_ntz"``, ...) for every widening Delta's type widening allows; the table
        needs ``delta.enableTypeWidening`` (else :class:`OperationNotAllowedError`), the change
        is recorded in the field's ``delta.typeChanges`` and files written before read cast to
        it. Partition columns and columns a CHECK constraint or generated column uses keep
        their type. Inside arrays and maps, ``column`` names the element, key or value as
        Spark does (``"arr.element"``, ``"m.key"``, ``"m.value"``, ``"arr.element.x"`` for a
        field of the structs in ``arr``); the change is recorded on the nearest struct field
        with a ``fieldPath``. An element, key or value takes no comment, keeps its
        nullability and does not move (refused as Spark refuses). ``comment``: the column's
        comment. ``nullable=True``: ``DROP NOT NULL``
        (making a column NOT NULL is refused, as Spark refuses it). ``first`` / ``after``:
        moves the column before its siblings, or after the sibling named."""
        if nullable is False:
            raise InvalidArgumentError(
                "CHANGE COLUMN cannot make a column NOT NULL (Delta on Spark refuses it too); "
                "add a CHECK constraint instead"
            )
        if type is not None and not isinstance(type, str):
            raise InvalidArgumentError("type must be a Delta type name (str)")
        return self._done(
            self._raw().change_column(column, type, comment, nullable is True, bool(first), after)
        )

    def cluster_by(self, columns: Sequence[str] | None) -> _Result:
        """Sets the clustering columns a later :meth:`DeltaTable.optimize` clusters by, as
        Spark's ``ALTER TABLE CLUSTER BY`` (column paths as for :meth:`rename_column`);
        ``None`` or ``[]`` is ``CLUSTER BY NONE``. A table that is not clustered yet gets the
        ``clustering`` feature; a partitioned table is refused
        (:class:`OperationNotAllowedError`)."""
        names = [] if columns is None else _names(columns, "columns")
        return self._done(self._raw().cluster_by(names))

    def drop_feature(self, name: str, truncate_history: bool = False) -> _Result:
        """Drops the table feature ``name`` from the protocol, as Spark's ``ALTER TABLE DROP
        FEATURE``: what the feature left in the table goes first, each step its own commit
        (deletion vectors purged by a ``REORG`` and their files tombstoned, files of an old
        type or under physical column names rewritten, row ids unbackfilled, properties
        unset), then the ``DROP FEATURE`` commit removes it from the protocol. A reader-writer
        feature (``deletionVectors``, ``v2Checkpoint``, ``typeWidening``,
        ``vacuumProtocolCheck``, ``columnMapping``) also protects the history readers without
        it cannot read: three checkpoints on empty commits and the ``checkpointProtection``
        feature, as Spark's default; with ``truncate_history`` the history older than
        ``delta.dropFeatureTruncateHistory.retentionDuration`` (24 hours) is deleted instead,
        and a drop right after the traces were removed is refused until that time has passed
        (run it again then). ``checkpointProtection`` itself drops only with
        ``truncate_history``.

        Refused as Spark refuses (:class:`OperationNotAllowedError`): a feature the table
        lacks or that cannot be dropped, one another feature needs, CHECK constraints left,
        ``truncate_history`` for a writer feature; an unknown feature is an
        :class:`UnsupportedFeatureError`. Returns the downgrade commit."""
        if not isinstance(name, str):
            raise InvalidArgumentError("name must be a table feature name (str)")
        return self._done(self._raw().drop_feature(name, bool(truncate_history)))

    def _raw(self) -> _core.RawAlter:
        return _core.RawAlter(self._table.snapshot())

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
