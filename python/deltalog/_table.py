"""The table API: :class:`DeltaTable`, :class:`Snapshot`, :class:`Protocol`, :class:`Metadata`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from types import MappingProxyType
from typing import ClassVar, TypeAlias, final

from . import _core
from ._arrow import ArrowStream, Schema
from ._frozen import Frozen
from ._scan import Filter, Scan
from ._time import from_epoch_ms, to_epoch_ms
from .exceptions import InvalidArgumentError

__all__ = ["DeltaTable", "Metadata", "Protocol", "Snapshot"]

#: ``RawSnapshot.protocol()``: min reader and writer versions, reader and writer features.
_ProtocolTuple: TypeAlias = tuple[int, int, list[str] | None, list[str] | None]
#: ``RawSnapshot.metadata()``: id, name, description, partition columns, configuration,
#: created time (ms), format provider, format options, schema string.
_MetadataTuple: TypeAlias = tuple[
    str,
    str | None,
    str | None,
    list[str],
    dict[str, str],
    int | None,
    str,
    dict[str, str],
    str | None,
]


@final
class DeltaTable(Frozen):
    """A Delta table at a location: a local path, or a ``file://``, ``s3://``, ``gs://``,
    ``az://``, ``abfss://`` or ``memory://`` URI.

    Opening checks that the location holds a Delta log (else :class:`TableNotFoundError`);
    the table's state is read by :meth:`snapshot`. ``storage_options`` go to the object
    store (for example ``aws_access_key_id``, ``aws_endpoint``, ``aws_allow_http``).
    """

    __slots__ = ("_raw", "_storage_options")
    _wraps: ClassVar[type] = _core.RawDeltaTable

    _raw: _core.RawDeltaTable
    _storage_options: dict[str, str] | None

    def __init__(
        self,
        table_uri: str | os.PathLike[str],
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        options = _string_mapping(storage_options, "storage_options")
        object.__setattr__(self, "_raw", _core.RawDeltaTable.open(os.fspath(table_uri), options))
        object.__setattr__(self, "_storage_options", options)

    @property
    def uri(self) -> str:
        """The table root as a URL ending in ``/``."""
        return self._raw.uri

    def latest_version(self) -> int:
        """The newest version in the log (listing the log, without reading the commits)."""
        return self._raw.latest_version()

    def snapshot(
        self,
        version: int | None = None,
        *,
        timestamp: datetime | date | str | None = None,
        filter: Filter = None,
    ) -> Snapshot:
        """The table's state: at ``version``, or at the newest version committed at or before
        ``timestamp`` (a ``datetime``, naive meaning UTC, or an ISO-8601 string), or else at
        the latest version.

        With ``filter`` (as for :meth:`Snapshot.scan`), the snapshot holds only the files that
        may hold matching rows, judged by their partition values and statistics while the log
        is replayed: checkpoint row groups whose ``stats_parsed`` bounds rule the filter out
        are never decoded, so a selective filter loads a fraction of a large table. Its
        ``num_files``, :meth:`Snapshot.files` and scans see only those files; everything else
        is the version's. Filters on ``timestamp`` partition columns are left to the scan,
        which knows the session time zone.
        """
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("give a version or a timestamp, not both")
        checked_version = None if version is None else _version(version, "version")
        timestamp_ms = None if timestamp is None else to_epoch_ms(timestamp)
        raw = self._raw.snapshot(checked_version, timestamp_ms, filter)
        return Snapshot._from_raw(raw, self)

    def history(self, limit: int | None = None) -> ArrowStream:
        """The commit information of each version, newest first, at most ``limit`` of them.

        Columns: ``version``, ``timestamp``, ``in_commit_timestamp``, ``operation``,
        ``operation_parameters`` (JSON), ``user_name``, ``engine_info``, ``commit_info``
        (the whole ``commitInfo`` action as JSON).
        """
        checked_limit = None if limit is None else _version(limit, "limit")
        return ArrowStream(self._raw.history(checked_limit))

    def commits(self, start_version: int, end_version: int | None = None) -> ArrowStream:
        """The actions of the commits ``start_version`` to ``end_version`` (inclusive; the
        latest when ``None``), one batch per commit.

        Columns: ``version``, ``action`` (``add``, ``remove``, ``metaData``, ...) and ``json``
        (the action as written).
        """
        start = _version(start_version, "start_version")
        end = None if end_version is None else _version(end_version, "end_version")
        return ArrowStream(self._raw.commits(start, end))

    def changes(
        self,
        start_version: int,
        end_version: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        timezone: str | None = None,
    ) -> ArrowStream:
        """The row changes of the commits ``start_version`` to ``end_version`` (inclusive;
        the latest when ``None``) from the change data feed.

        The table's columns (of the end version) plus ``_change_type`` (``insert``,
        ``delete``, ``update_preimage``, ``update_postimage``), ``_commit_version`` and
        ``_commit_timestamp``: from the commit's change data files when it has them, else from
        its added and removed files and deletion-vector changes. ``columns`` and ``filter`` may
        name the three change columns too. A range where ``delta.enableChangeDataFeed`` was
        off raises :class:`OperationNotAllowedError`.
        """
        start = _version(start_version, "start_version")
        end = None if end_version is None else _version(end_version, "end_version")
        selected = None if columns is None else list(columns)
        return ArrowStream(self._raw.changes(start, end, selected, filter, timezone))

    def __repr__(self) -> str:
        return f"DeltaTable({self.uri!r})"


@final
class Snapshot(Frozen):
    """The immutable state of a table at one version.

    :meth:`refresh` gives a new snapshot at the newest version; this one never changes.
    """

    __slots__ = ("_raw", "_table")
    _wraps: ClassVar[type] = _core.RawSnapshot

    _raw: _core.RawSnapshot
    _table: DeltaTable

    def __init__(self) -> None:
        raise TypeError("snapshots come from DeltaTable.snapshot()")

    @classmethod
    def _from_raw(cls, raw: _core.RawSnapshot, table: DeltaTable) -> Snapshot:
        snapshot = cls.__new__(cls)
        object.__setattr__(snapshot, "_raw", raw)
        object.__setattr__(snapshot, "_table", table)
        return snapshot

    @property
    def table(self) -> DeltaTable:
        """The table this snapshot belongs to."""
        return self._table

    @property
    def version(self) -> int:
        """The version of the table this snapshot shows."""
        return self._raw.version

    @property
    def timestamp(self) -> datetime:
        """When this version was committed (UTC): the in-commit timestamp when the table
        records them, else the commit file's modification time."""
        return from_epoch_ms(self._raw.timestamp_ms)

    @property
    def schema(self) -> Schema:
        """The logical schema."""
        return Schema(self._raw.schema())

    @property
    def protocol(self) -> Protocol:
        """The protocol in force: versions and table features."""
        return Protocol._from_raw(self._raw.protocol())

    @property
    def metadata(self) -> Metadata:
        """The table metadata in force: id, name, partitioning, configuration, ..."""
        return Metadata._from_raw(self._raw.metadata())

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """The partition columns, in order."""
        return tuple(self._raw.partition_columns)

    @property
    def num_files(self) -> int:
        """The number of active data files."""
        return self._raw.num_files

    @property
    def total_size(self) -> int:
        """The total size of the active data files, in bytes."""
        return self._raw.total_size

    def files(self, with_stats: bool = False) -> ArrowStream:
        """The active data files, one row each.

        Columns: ``path``, ``size``, ``modification_time``, ``partition_values`` (a struct typed
        per the schema), ``deletion_vector``, ``num_records``, ``base_row_id``,
        ``default_row_commit_version``, ``tags``; with ``with_stats`` also ``min_values``,
        ``max_values``, ``null_count`` and ``tight_bounds``.
        """
        return ArrowStream(self._raw.files(with_stats))

    def scan(
        self,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        timezone: str | None = None,
        row_tracking: bool = False,
    ) -> Scan:
        """Plans a read of the rows.

        ``columns``: logical column names (default: all). ``filter``: SQL-like text such as
        ``"x > 5 AND p IN ('a', 'b') AND y IS NOT NULL"``, or pyarrow's DNF form
        ``[("x", ">", 5), ("p", "in", ["a", "b"])]`` (a list of such lists means OR); it prunes
        partitions, skips files by their statistics, then filters rows exactly.
        ``timezone``: the session time zone partition timestamps are read in (default UTC).
        ``row_tracking``: add ``row_id`` and ``row_commit_version`` columns.
        """
        selected = None if columns is None else list(columns)
        raw = self._raw.scan(selected, filter, timezone, row_tracking)
        return Scan(raw, self._table._storage_options)

    def deletion_vectors(self) -> ArrowStream:
        """Every deletion vector of the snapshot, evaluated: ``path`` and ``deleted_rows``
        (the deleted row indexes, ascending)."""
        return ArrowStream(self._raw.deletion_vectors())

    def transaction_version(self, app_id: str) -> int | None:
        """The version of the last transaction of application ``app_id`` (its ``txn``
        action), or ``None``."""
        return self._raw.transaction_version(app_id)

    def domain_metadata(self, domain: str) -> str | None:
        """The configuration of metadata domain ``domain``, or ``None`` when it has none."""
        return self._raw.domain_metadata(domain)

    def refresh(self) -> Snapshot:
        """A new snapshot at the table's newest version (reading only the commits added
        since this one)."""
        return Snapshot._from_raw(self._raw.refresh(), self._table)

    def __repr__(self) -> str:
        return f"Snapshot({self._table.uri!r}, version={self.version})"


@dataclass(frozen=True)
class Protocol:
    """The ``protocol`` action: what a reader and a writer must support."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    """The reader features (reader version 3), or ``None`` for older protocols."""
    writer_features: tuple[str, ...] | None = None
    """The writer features (writer version 7), or ``None`` for older protocols."""

    @classmethod
    def _from_raw(cls, raw: _ProtocolTuple) -> Protocol:
        min_reader_version, min_writer_version, reader_features, writer_features = raw
        return cls(
            min_reader_version=min_reader_version,
            min_writer_version=min_writer_version,
            reader_features=_optional_tuple(reader_features),
            writer_features=_optional_tuple(writer_features),
        )


@dataclass(frozen=True)
class Metadata:
    """The ``metaData`` action: the table's identity, partitioning and configuration."""

    id: str
    name: str | None
    description: str | None
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str] = field(hash=False)
    """The table properties (``delta.*`` and user keys); read-only."""
    created_time: datetime | None
    """When the table was created (UTC), if the writer recorded it."""
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict, hash=False)
    schema_string: str | None = None
    """The Delta schema as written in the log (see :attr:`Snapshot.schema`)."""

    @classmethod
    def _from_raw(cls, raw: _MetadataTuple) -> Metadata:
        (
            id,
            name,
            description,
            partitioning,
            configuration,
            created_ms,
            provider,
            options,
            schema,
        ) = raw
        return cls(
            id=id,
            name=name,
            description=description,
            partition_columns=tuple(partitioning),
            configuration=MappingProxyType(configuration),
            created_time=None if created_ms is None else from_epoch_ms(created_ms),
            format_provider=provider,
            format_options=MappingProxyType(options),
            schema_string=schema,
        )


def _optional_tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def _version(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {value}")
    return value


def _string_mapping(options: Mapping[str, str] | None, name: str) -> dict[str, str] | None:
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"{name} must be a mapping of str to str")
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgumentError(f"{name} must map str to str; {key!r}: {value!r} does not")
    return dict(options)
