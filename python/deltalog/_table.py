"""The table API: :class:`DeltaTable`, whose verbs delegate to the verb modules (``_alter``,
``_dml``, ``_merge``, ``_maintenance``, ``_maintenance_log``), :class:`Snapshot`,
:class:`Transaction`, :class:`CommitResult`, :class:`Alter` and :func:`convert_to_delta`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from types import MappingProxyType
from typing import Any, ClassVar, Literal, final

from . import _core, _dml, _maintenance, _maintenance_log
from ._alter import Alterations, _names
from ._arrow import ArrowStream, Schema
from ._frozen import Frozen
from ._maintenance_log import CheckpointInfo, CleanupResult, PostCommitResult, VersionChecksum
from ._merge import TableMerger
from ._results import ArrowData, Metadata, Protocol, SchemaLike
from ._scan import Filter, Scan
from ._time import from_epoch_ms, to_epoch_ms
from .exceptions import InvalidArgumentError

__all__ = [
    "Alter",
    "CommitResult",
    "DeltaTable",
    "Metadata",
    "Protocol",
    "Snapshot",
    "Transaction",
    "convert_to_delta",
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

    @classmethod
    def create(
        cls,
        table_uri: str | os.PathLike[str],
        schema: SchemaLike,
        partition_by: Sequence[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        mode: str = "error",
        storage_options: Mapping[str, str] | None = None,
        cluster_by: Sequence[str] | None = None,
    ) -> DeltaTable:
        """Creates a table with no rows at ``table_uri`` and opens it.

        ``schema``: any Arrow schema (``__arrow_c_schema__``: pyarrow, polars, ...) or Delta
        schema JSON text. ``configuration``: table properties (``delta.*``;
        ``delta.feature.<name>: supported`` and ``delta.minReaderVersion`` /
        ``delta.minWriterVersion`` steer the protocol, which is otherwise the least that
        covers the features used). Under ``delta.columnMapping.mode`` every column gets an id
        and a physical name. ``mode`` says what happens when a table exists: ``"error"``
        (:class:`OperationNotAllowedError`), ``"ignore"`` (nothing), ``"overwrite"`` (as
        ``CREATE OR REPLACE TABLE``: new schema, partitioning and properties, no rows).
        ``cluster_by``: clustering columns (liquid clustering, Spark's ``CLUSTER BY``; column
        paths such as ``"id"`` or ``"s.x"``): the table gets the ``clustering`` feature, its
        :meth:`optimize` clusters, and it cannot also have ``partition_by``.
        """
        options = _string_mapping(storage_options, "storage_options")
        raw, _ = _core.RawDeltaTable.create(
            os.fspath(table_uri),
            schema,
            None if partition_by is None else list(partition_by),
            _string_mapping(configuration, "configuration"),
            name,
            description,
            mode,
            options,
            None if cluster_by is None else _names(cluster_by, "cluster_by"),
        )
        return cls._from_raw(raw, options)

    @classmethod
    def _from_raw(
        cls, raw: _core.RawDeltaTable, storage_options: dict[str, str] | None
    ) -> DeltaTable:
        table = cls.__new__(cls)
        object.__setattr__(table, "_raw", raw)
        object.__setattr__(table, "_storage_options", storage_options)
        return table

    @property
    def uri(self) -> str:
        """The table root as a URL ending in ``/``."""
        return self._raw.uri

    @property
    def alter(self) -> Alter:
        """The table's alterations (``ALTER TABLE``): ``table.alter.set_properties({...})``,
        ``add_columns``, ``rename_column``, ``drop_columns``, ``add_constraint``, ... (see
        :class:`Alter`)."""
        return Alter(self)

    def _commit_result(self, raw: _core.RawCommit) -> CommitResult:
        return CommitResult._from_raw(raw, self)

    def transaction(
        self, operation: str = "WRITE", isolation_level: str | None = None
    ) -> Transaction:
        """A transaction reading the latest snapshot (see :meth:`Snapshot.transaction`)."""
        return self.snapshot().transaction(operation, isolation_level)

    def latest_version(self) -> int:
        """The newest version in the log (listing the log, without reading the commits)."""
        return self._raw.latest_version()

    def checkpoint(
        self,
        version: int | None = None,
        *,
        part_size: int | None = None,
        v2_format: Literal["parquet", "json"] | None = None,
        v2_sidecars: bool = True,
        classic_compat: bool = False,
        dry_run: bool = False,
    ) -> CheckpointInfo:
        """Writes a checkpoint of ``version`` (the latest by default) and ``_last_checkpoint``.

        The kind follows the table, as Delta on Spark decides it: a UUID-named V2 checkpoint
        when ``delta.checkpointPolicy`` is ``v2`` (its manifest JSON by default, as Spark's
        ``checkpointV2.topLevelFileFormat``, or ``v2_format``; file actions in sidecars of at
        most ``part_size`` actions (default 50,000) unless ``v2_sidecars`` is false, which
        makes the manifest Parquet by default), else a classic one, in parts of at most
        ``part_size`` actions when given (Spark's ``checkpoint.partSize``; never with
        ``v2Checkpoint`` supported). ``classic_compat`` also writes a V2 checkpoint's
        classic-named copy ``<version>.checkpoint.parquet`` for readers that know only classic
        names (:meth:`cleanup_metadata` writes it before deleting, as Spark does).

        With ``dry_run`` nothing is written (no checkpoint, sidecar, copy nor
        ``_last_checkpoint``): the result (``dry_run`` true) has the kind, files and action
        counts the write would report, ``size_in_bytes`` 0; a V2 checkpoint's names carry UUIDs
        drawn for the plan, the write draws fresh ones.
        """
        version = None if version is None else _version(version, "version")
        return _maintenance_log.checkpoint(
            self._raw, version, part_size, v2_format, v2_sidecars, classic_compat, dry_run
        )

    def cleanup_metadata(self, *, dry_run: bool = False) -> CleanupResult:
        """Deletes the log files older than ``delta.logRetentionDuration`` allows, keeping a
        checkpoint at the oldest version kept (the spec's metadata cleanup). With ``dry_run``
        nothing is written or deleted; the result lists what would be deleted."""
        return _maintenance_log.cleanup_metadata(self._raw, dry_run)

    def compact_logs(self, start_version: int, end_version: int) -> str:
        """Writes the log compaction file of commits ``start_version..end_version``
        (inclusive); returns its URL."""
        start = _version(start_version, "start_version")
        end = _version(end_version, "end_version")
        return _maintenance_log.compact_logs(self._raw, start, end)

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

    def vacuum(
        self,
        retention_hours: float | None = None,
        dry_run: bool = True,
        enforce_retention_duration: bool = True,
    ) -> list[str]:
        """Deletes (with ``dry_run``, the default: lists) the files no version within the
        retention needs; see :func:`deltalog._maintenance.vacuum`."""
        return _maintenance.vacuum(self._raw, retention_hours, dry_run, enforce_retention_duration)

    def optimize(
        self,
        filter: Filter = None,
        target_size: int | None = None,
        z_order_by: Sequence[str] | None = None,
        *,
        dry_run: bool = False,
        full: bool = False,
    ) -> dict[str, Any]:
        """Compacts small files and purges deletion vectors (``dataChange=false``), or
        clusters a clustered table (``full``: ``OPTIMIZE FULL``); with ``dry_run`` only plans
        it (``filesToRewrite``); see :func:`deltalog._maintenance.optimize`."""
        return _maintenance.optimize(
            self._raw, filter, target_size, z_order_by, dry_run=dry_run, full=full
        )

    def restore(
        self,
        version: int | None = None,
        timestamp: datetime | date | str | None = None,
        *,
        dry_run: bool = False,
    ) -> dict[str, int | None]:
        """Commits a version whose state equals that of ``version`` (or of ``timestamp``);
        with ``dry_run`` only checks it and returns the metrics (``version`` ``None``); see
        :func:`deltalog._maintenance.restore`."""
        return _maintenance.restore(self._raw, version, timestamp, dry_run=dry_run)

    def clone(
        self,
        target: str | os.PathLike[str],
        *,
        version: int | None = None,
        timestamp: datetime | date | str | None = None,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
        target_storage_options: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """Shallow-clones this table at ``version`` (or ``timestamp``; else the latest) to
        ``target`` and returns the target, as Delta on Spark's ``SHALLOW CLONE``: one
        ``CLONE`` commit referencing the source's data files by absolute paths (nothing is
        copied; the target's VACUUM never deletes them), with the source's schema,
        partitioning and properties plus ``properties``, a new table id. An existing Delta
        table at ``target`` is refused unless ``replace``, and then must hold no live file;
        the column mapping mode cannot change. See :func:`deltalog._maintenance.clone`."""
        options = _string_mapping(target_storage_options, "target_storage_options")
        raw = _maintenance.clone(
            self._raw,
            target,
            version,
            timestamp,
            replace=replace,
            properties=properties,
            target_storage_options=options,
        )
        return DeltaTable._from_raw(raw, options)

    def generate(self, mode: str = "symlink_format_manifest") -> dict[str, list[str]]:
        """Writes the manifests of ``mode`` (``"symlink_format_manifest"``, in any case: the
        only one, as in Delta on Spark's ``GENERATE``) for the latest version: under
        ``_symlink_format_manifest/``, one ``manifest`` per partition directory listing the
        absolute paths of its live files, for engines that read Hive-style directories
        (Presto, Trino, Athena); manifests of partitions left without files are deleted.
        Returns the manifests ``written`` and ``deleted`` (paths relative to the table).
        Raises :class:`OperationNotAllowedError` for a table with column mapping or live
        deletion vectors, as Spark does."""
        if mode.lower() != "symlink_format_manifest":
            raise InvalidArgumentError(
                f"Specified mode '{mode}' is not supported. Supported modes are: "
                "symlink_format_manifest"
            )
        written, deleted = _core.generate_symlink_manifest(self._raw)
        return {"written": written, "deleted": deleted}

    def delete(
        self,
        predicate: Filter = None,
        target_file_size: int | None = None,
        commit_info: Mapping[str, object] | None = None,
    ) -> CommitResult:
        """Deletes the rows matching ``predicate`` (SQL text or a DNF filter; every row when
        ``None``; a row where it is NULL stays) and commits a ``DELETE``, as Delta on Spark's
        ``DELETE FROM``. With ``delta.enableDeletionVectors`` the rows are marked in deletion
        vectors, else the files holding them are rewritten; a predicate over partition
        columns only removes whole files. Nothing is committed when no row matches
        (``committed`` false). ``metrics`` holds Spark's: ``numDeletedRows``,
        ``numRemovedFiles``, ``numAddedFiles``, ``numCopiedRows``,
        ``numDeletionVectorsAdded``, ``numDeletionVectorsRemoved``,
        ``numDeletionVectorsUpdated``, ``numAddedChangeFiles``, bytes and times.
        """
        raw = _dml.delete_rows(
            self.uri, self._storage_options, predicate, target_file_size, commit_info
        )
        return self._commit_result(raw)

    def update(
        self,
        set: Mapping[str, str],
        predicate: Filter = None,
        target_file_size: int | None = None,
        commit_info: Mapping[str, object] | None = None,
    ) -> CommitResult:
        """Sets, in the rows matching ``predicate`` (every row when ``None``), each column of
        ``set`` to its SQL expression (``{"v": "v + 1", "s": "'x'"}``: arithmetic,
        ``concat``, ``lower``, ``upper``, ``substring``, ``coalesce``, ``CASE WHEN``,
        ``CAST``, ``current_timestamp()``) evaluated on the row as it was, and commits an
        ``UPDATE``, as Delta on Spark does: updated rows go to new files, the old ones are
        marked in deletion vectors or their files rewritten; ``update_preimage`` and
        ``update_postimage`` change rows with the change data feed; row ids are kept.
        ``metrics``: ``numUpdatedRows``, ``numCopiedRows``, ``numRemovedFiles``,
        ``numAddedFiles``, ``numDeletionVectorsAdded``, ... (Spark's).
        """
        raw = _dml.update_rows(
            self.uri, self._storage_options, set, predicate, target_file_size, commit_info
        )
        return self._commit_result(raw)

    def schema(self) -> Schema:
        """The logical schema of the latest version, read without replaying the log when the
        version has a ``.crc`` file (see :attr:`Snapshot.head_checksum`)."""
        return self.snapshot().schema

    def protocol(self) -> Protocol:
        """The protocol of the latest version, read as :meth:`schema` is."""
        return self.snapshot().protocol

    def metadata(self) -> Metadata:
        """The metadata of the latest version, read as :meth:`schema` is."""
        return self.snapshot().metadata

    def merge(
        self,
        source: object,
        on: str,
        source_alias: str = "source",
        target_alias: str = "target",
        target_file_size: int | None = None,
        commit_info: Mapping[str, object] | None = None,
        merge_schema: bool = False,
    ) -> TableMerger[CommitResult]:
        """A merge of ``source`` (any Arrow data: a pyarrow Table, a polars DataFrame, ...)
        into this table on the SQL condition ``on`` (``"t.id = s.id"``, with the aliases
        given), as Delta on Spark's ``MERGE INTO``: add ``when_*`` clauses to the returned
        :class:`TableMerger`, then call ``execute()``. ``merge_schema=True`` evolves the
        schema (:meth:`TableMerger.with_schema_evolution`)."""
        return TableMerger(
            self.uri,
            self._storage_options,
            source,
            on,
            source_alias,
            target_alias,
            target_file_size,
            commit_info,
            self._commit_result,
            merge_schema,
        )

    def __repr__(self) -> str:
        return f"DeltaTable({self.uri!r})"


@final
class Snapshot(Frozen):
    """The immutable state of a table at one version.

    :meth:`refresh` gives a new snapshot at the newest version; this one never changes.

    A snapshot opens with its protocol, metadata, application versions and domains only:
    from the version's ``.crc`` file when it has a usable one (no other log file but the
    newest commit is read), else from the log without its file actions. The file list is
    replayed the first time something needs it (:attr:`num_files`, :meth:`files`,
    :meth:`scan`, a transaction, ...); a replay that contradicts the ``.crc`` file the
    snapshot opened from raises :class:`ChecksumMismatchError`.
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
    def head_checksum(self) -> str | None:
        """The ``.crc`` file the protocol, metadata, application versions and domains were
        read from, or ``None`` when they were read from the log."""
        return self._raw.head_checksum

    @property
    def files_loaded(self) -> bool:
        """True once the file list has been replayed."""
        return self._raw.files_loaded

    @property
    def num_files(self) -> int:
        """The number of active data files. Read from the version's ``.crc`` file
        (``numFiles``, as Delta on Spark reports it) when the snapshot opened from one and the
        file list is not loaded yet (:attr:`files_loaded` stays false), else counted from the
        file list; :meth:`validate_checksum` checks the two agree."""
        return self._raw.num_files

    @property
    def total_size(self) -> int:
        """The total size of the active data files, in bytes: the ``.crc`` file's
        ``tableSizeBytes`` under the same conditions as :attr:`num_files`."""
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
        row_address: bool = False,
        files: Sequence[str] | None = None,
    ) -> Scan:
        """Plans a read of the rows.

        ``columns``: logical column names (default: all). ``filter``: SQL-like text such as
        ``"x > 5 AND p IN ('a', 'b') AND y IS NOT NULL"``, or pyarrow's DNF form
        ``[("x", ">", 5), ("p", "in", ["a", "b"])]`` (a list of such lists means OR); it prunes
        partitions, skips files by their statistics, then filters rows exactly.
        ``timezone``: the session time zone partition timestamps are read in (default UTC).
        ``row_tracking``: add ``row_id`` and ``row_commit_version`` columns.
        ``row_address``: add ``__deltalog_file`` (the row's data file, as :meth:`files`
        names it) and ``__deltalog_row_index`` (its position in the file, deleted rows
        counted). ``files``: read only these data files (paths as :meth:`files` names them).
        """
        selected = None if columns is None else list(columns)
        only = None if files is None else list(files)
        raw = self._raw.scan(selected, filter, timezone, row_tracking, row_address, only)
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

    def version_checksum(self) -> VersionChecksum:
        """The version checksum (``.crc`` content) of this version: read from its ``.crc``
        file when there is one, else computed from the state."""
        return _maintenance_log.version_checksum(self._raw)

    def validate_checksum(self) -> bool:
        """Checks this version's ``.crc`` file against the state replayed from the log:
        ``False`` when there is no file, :class:`ChecksumMismatchError` when it differs."""
        return _maintenance_log.validate_checksum(self._raw)

    def refresh(self) -> Snapshot:
        """A new snapshot at the table's newest version (reading only the commits added
        since this one)."""
        return Snapshot._from_raw(self._raw.refresh(), self._table)

    def transaction(
        self, operation: str = "WRITE", isolation_level: str | None = None
    ) -> Transaction:
        """A transaction reading this snapshot, recorded as ``operation`` in the commit.

        ``isolation_level``: ``"Serializable"``, ``"WriteSerializable"`` (the default, or
        the table's ``delta.isolationLevel``) or ``"SnapshotIsolation"``; it decides which
        concurrent commits conflict with this one.
        """
        raw = _core.RawTransaction.start(self._raw, operation, isolation_level)
        return Transaction._from_raw(raw, self._table)

    def __repr__(self) -> str:
        return f"Snapshot({self._table.uri!r}, version={self.version})"


@final
class Transaction(Frozen):
    """A pending write to a table: data files written and actions staged now, all committed
    at once by :meth:`commit` (atomically, as the next version; after losing a race to
    another writer it is checked against the winners and retried, or fails with a
    :class:`CommitConflictError` subclass).

    Data files written by :meth:`write` are unreferenced until the commit; every error from
    then on names them in ``unreferenced_files``.
    """

    __slots__ = ("_raw", "_table")
    _wraps: ClassVar[type] = _core.RawTransaction

    _raw: _core.RawTransaction
    _table: DeltaTable

    def __init__(self) -> None:
        raise TypeError("transactions come from Snapshot.transaction() or DeltaTable.transaction()")

    @classmethod
    def _from_raw(cls, raw: _core.RawTransaction, table: DeltaTable) -> Transaction:
        transaction = cls.__new__(cls)
        object.__setattr__(transaction, "_raw", raw)
        object.__setattr__(transaction, "_table", table)
        return transaction

    @property
    def read_version(self) -> int | None:
        """The version this transaction read."""
        return self._raw.read_version

    @property
    def written_files(self) -> list[str]:
        """The data files written so far (relative paths), not yet committed."""
        return self._raw.written_files()

    def write(self, data: ArrowData) -> int:
        """Writes ``data`` (anything speaking the Arrow PyCapsule stream or array protocol,
        read one batch at a time) to new data files of the table and stages their adds;
        returns how many files were written."""
        return self._raw.write(data)

    def add_files(self, files: ArrowData) -> int:
        """Stages adds of data files written elsewhere, as Arrow rows in the shape of
        :meth:`Snapshot.files`: ``path`` (relative, not URL-encoded) and ``size`` required;
        ``modification_time``, ``partition_values`` (struct or map of string), ``stats``
        (JSON), ``num_records`` and ``data_change`` optional. Returns how many."""
        return self._raw.add_files(files)

    def remove_files(self, filter: Filter = None, paths: Sequence[str] | None = None) -> int:
        """Stages removes of the live files matching ``filter`` (over partition columns;
        every file when both are ``None``) or at ``paths`` (as :meth:`Snapshot.files` lists
        them), recording what was read for conflict checks. Returns how many."""
        selected = None if paths is None else list(paths)
        return self._raw.remove_files(filter, selected)

    def record_read(self, filter: Filter = None) -> int:
        """Records that what this transaction writes depends on the rows matching ``filter``
        (every row when ``None``), as a query reading them would: a concurrent commit that
        adds rows which may match (``Serializable``: any commit; ``WriteSerializable``: one
        that is not a blind append) or removes a file read then makes :meth:`commit` raise
        a :class:`CommitConflictError` subclass. Returns how many files were read."""
        return self._raw.record_read(filter)

    def app_version(self, app_id: str) -> int | None:
        """The version of application ``app_id`` in the version read (recorded as read)."""
        return self._raw.app_version(app_id)

    def set_app_version(self, app_id: str, version: int) -> None:
        """Stages the ``txn`` action of ``app_id`` at ``version``, which must be above the
        one read: a retried job finds its version committed and can skip its write."""
        self._raw.set_app_version(app_id, version)

    def set_domain_metadata(self, domain: str, configuration: str | None) -> None:
        """Stages metadata domain ``domain`` set to ``configuration``, or removed (``None``)."""
        self._raw.set_domain_metadata(domain, configuration)

    def update_metadata(
        self,
        schema: SchemaLike | None = None,
        configuration: Mapping[str, str | None] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        """Stages a metadata change: a new schema, properties set (``None`` removes one),
        name and description; the protocol is upgraded as the new properties need."""
        entries = None if configuration is None else list(configuration.items())
        self._raw.update_metadata(schema, entries, name, description)

    def commit(self) -> CommitResult:
        """Commits every staged action as the next version; the transaction is spent."""
        return CommitResult._from_raw(self._raw.commit(), self._table)

    def __repr__(self) -> str:
        return f"Transaction({self._table.uri!r}, read_version={self.read_version})"


@dataclass(frozen=True)
class CommitResult:
    """What a write or a transaction committed."""

    _wraps: ClassVar[type] = _core.RawCommit

    version: int
    """The version committed (the table's current version when nothing was)."""
    committed: bool
    """False when nothing was committed (mode ``"ignore"`` on an existing table, or an
    ``app_version`` already committed)."""
    retries: int
    """How often the commit was retried after losing a race to another writer."""
    metrics: Mapping[str, int] = field(hash=False)
    """``numFiles``, ``numOutputRows``, ``numOutputBytes``, ``numRemovedFiles``."""
    table: DeltaTable = field(repr=False, compare=False, hash=False)
    _snapshot: _core.RawSnapshot | None = field(default=None, repr=False, compare=False)
    post_commit: PostCommitResult = field(default=PostCommitResult(), compare=False)
    """What ran after the commit: the ``.crc`` file, a checkpoint, log cleanup, and the
    steps that failed (a failed step never undoes the commit)."""

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot of :attr:`version` (loaded on first use after a blind append, which
        never loads the file list)."""
        if self._snapshot is not None:
            return Snapshot._from_raw(self._snapshot, self.table)
        return self.table.snapshot(self.version)

    @classmethod
    def _from_raw(cls, raw: _core.RawCommit, table: DeltaTable) -> CommitResult:
        return cls(
            version=raw.version,
            committed=raw.committed,
            retries=raw.retries,
            metrics=MappingProxyType(raw.metrics),
            table=table,
            _snapshot=raw.snapshot,
            post_commit=PostCommitResult._from_raw(raw.post_commit),
        )


@final
class Alter(Alterations[CommitResult]):
    """The alterations of a table, as Delta on Spark's ``ALTER TABLE``: each method commits
    one new version on top of the latest one (with the operation name and parameters Delta on
    Spark writes) and returns its :class:`CommitResult`. A failed alteration commits nothing.

    Renaming and dropping columns need column mapping (``delta.columnMapping.mode`` =
    ``name``): the data files keep their physical column names and are not rewritten.
    """

    __slots__ = ()
    _wraps: ClassVar[type] = _core.RawAlter

    def __init__(self, table: DeltaTable) -> None:
        super().__init__(table._raw, table._commit_result)


def convert_to_delta(
    uri: str | os.PathLike[str],
    partition_by: SchemaLike | Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> DeltaTable:
    """Turns the directory of Parquet files at ``uri`` into a Delta table in place (version
    0, operation ``CONVERT``) and opens it; a location that already holds a Delta table is
    opened as it is.

    ``partition_by``: the partition columns and their types, as an Arrow schema, Delta
    schema JSON, or a mapping of column name to Delta type name (``{"year": "integer"}``);
    every file must then sit in ``col=value`` directories for those columns, in order. The
    schema is the union of the files' schemas; statistics are computed from the files.
    """
    options = _string_mapping(storage_options, "storage_options")
    raw = _maintenance.convert(uri, partition_by, options)
    return DeltaTable._from_raw(raw, options)


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
