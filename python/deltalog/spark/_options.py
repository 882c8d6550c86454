"""The options of the ``deltalog`` data source, read once into plain values: batch reads
(:class:`ReadOptions`), streaming reads (:class:`StreamReadOptions`), batch and streaming
writes (:class:`WriteOptions`). Spark hands options over with names in any case; every
option that is not one of these is a storage option for the object store."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import _core
from ..exceptions import InvalidArgumentError

__all__ = [
    "DEFAULT_MAX_FILES_PER_TRIGGER",
    "DEFAULT_OPEN_COST",
    "DEFAULT_TARGET_SIZE",
    "ReadOptions",
    "StreamReadOptions",
    "WriteOptions",
]

#: Input partitions hold about this many bytes of data files (Spark's
#: ``spark.sql.files.maxPartitionBytes`` default).
DEFAULT_TARGET_SIZE: int = _core.DEFAULT_TARGET_SIZE
#: What opening a file costs, in bytes, when files are packed into partitions (Spark's
#: ``spark.sql.files.openCostInBytes`` default).
DEFAULT_OPEN_COST: int = _core.DEFAULT_OPEN_COST
#: Files per micro-batch of a streaming read unless ``maxFilesPerTrigger`` says otherwise
#: (Delta on Spark's default).
DEFAULT_MAX_FILES_PER_TRIGGER = 1000

#: Option names (lower case: Spark hands options over case-insensitively) that are ours or
#: Spark's; every other option goes to the object store.
_OWN_OPTIONS = frozenset(
    {
        "path",
        "paths",
        "versionasof",
        "timestampasof",
        "timezone",
        "columns",
        "filterpushdown",
        "maxpartitionbytes",
        "opencostinbytes",
        "startingversion",
        "startingtimestamp",
        "maxfilespertrigger",
        "maxbytespertrigger",
        "ignoredeletes",
        "skipchangecommits",
        "readchangefeed",
        "endingversion",
        "rowtracking",
        "rowaddress",
        "files",
        "partitionby",
        "__partition_columns",
        "replacewhere",
        "mergeschema",
        "overwriteschema",
        "txnappid",
        "txnversion",
        "usermetadata",
        "maxrecordsperfile",
        "targetfilesize",
        "checkpointlocation",
        "queryname",
    }
)


@dataclass(frozen=True)
class ReadOptions:
    """What a read asks for: the table, which version, which columns, how to split it."""

    uri: str
    version: int | None = None
    timestamp: str | None = None
    timezone: str | None = None
    columns: tuple[str, ...] | None = None
    filter_pushdown: bool | None = None
    """``None``: as the data source class was registered."""
    read_change_feed: bool = False
    """The change data feed (``readChangeFeed``) instead of the table's rows."""
    ending_version: int | None = None
    """The last commit of a change feed read (``endingVersion``)."""
    row_tracking: bool = False
    """Add the ``row_id`` and ``row_commit_version`` columns (``rowTracking``)."""
    row_address: bool = False
    """Add each row's address, ``__deltalog_file`` and ``__deltalog_row_index``
    (``rowAddress``; what :class:`deltalog.spark.DeltaTable`'s row-level changes read)."""
    files: tuple[str, ...] | None = None
    """Read only these data files (``files``: a JSON list of paths as the file list names
    them)."""
    target_size: int = DEFAULT_TARGET_SIZE
    open_cost: int = DEFAULT_OPEN_COST
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Reads Spark's options (names in any case).

        ``path`` (given by ``load(path)``) is the table; ``versionAsOf`` (an int) or
        ``timestampAsOf`` (ISO-8601; naive is UTC) pick the snapshot; ``timezone`` is the time
        zone of partition timestamps; ``columns`` (comma-separated names, or a JSON list)
        projects; ``filterPushdown`` (``true``/``false``) overrides whether the reader takes
        Spark's filters; ``maxPartitionBytes`` and ``openCostInBytes`` size the input
        partitions; ``readChangeFeed`` (with ``startingVersion`` and ``endingVersion``)
        reads the change data feed; ``rowTracking`` and ``rowAddress`` (``true``) add the row
        tracking and row address columns; ``files`` (a JSON list) reads only those data
        files. Any other option is a storage option for the object store.
        """
        lowered = _lowered(options)
        uri = _table_location(lowered, "load")
        version = lowered.get("versionasof")
        timestamp = lowered.get("timestampasof")
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("give versionAsOf or timestampAsOf, not both")
        return cls(
            uri=uri,
            version=_count(version, "versionAsOf", 0),
            timestamp=timestamp,
            timezone=lowered.get("timezone") or None,
            columns=_names(lowered.get("columns"), "columns"),
            filter_pushdown=_flag(lowered.get("filterpushdown"), "filterPushdown"),
            read_change_feed=_flag(lowered.get("readchangefeed"), "readChangeFeed") is True,
            ending_version=_count(lowered.get("endingversion"), "endingVersion", 0),
            row_tracking=_flag(lowered.get("rowtracking"), "rowTracking") is True,
            row_address=_flag(lowered.get("rowaddress"), "rowAddress") is True,
            files=_paths(lowered.get("files")),
            target_size=_size(lowered.get("maxpartitionbytes"), DEFAULT_TARGET_SIZE, 1),
            open_cost=_size(lowered.get("opencostinbytes"), DEFAULT_OPEN_COST, 0),
            storage_options=_storage_options(lowered),
        )


@dataclass(frozen=True)
class StreamReadOptions:
    """The options of a streaming read.

    ``startingVersion`` (a version, or ``latest``: only commits after the latest) or
    ``startingTimestamp`` (the first commit at or after it); without either the stream
    starts with every row of the latest version. ``maxFilesPerTrigger`` and
    ``maxBytesPerTrigger`` bound a micro-batch; ``ignoreDeletes`` skips commits that only
    delete, ``skipChangeCommits`` every commit that removes data.
    """

    uri: str
    starting_version: int | None = None
    starting_latest: bool = False
    starting_timestamp_ms: int | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    ignore_deletes: bool = False
    skip_change_commits: bool = False
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamReadOptions:
        """Reads the options of the class docs, and the table ``path``."""
        lowered = _lowered(options)
        starting = lowered.get("startingversion")
        timestamp = lowered.get("startingtimestamp")
        if starting is not None and timestamp is not None:
            raise InvalidArgumentError("give startingVersion or startingTimestamp, not both")
        latest = starting is not None and starting.strip().lower() == "latest"
        return cls(
            uri=_table_location(lowered, "load"),
            starting_version=None
            if starting is None or latest
            else _count(starting, "startingVersion", 0),
            starting_latest=latest,
            starting_timestamp_ms=None
            if timestamp is None
            else _core.parse_timestamp_ms(timestamp),
            max_files=_count(lowered.get("maxfilespertrigger"), "maxFilesPerTrigger", 1),
            max_bytes=_count(lowered.get("maxbytespertrigger"), "maxBytesPerTrigger", 1),
            ignore_deletes=_flag(lowered.get("ignoredeletes"), "ignoreDeletes") is True,
            skip_change_commits=_flag(lowered.get("skipchangecommits"), "skipChangeCommits")
            is True,
            storage_options=_storage_options(lowered),
        )


@dataclass(frozen=True)
class WriteOptions:
    """What a write asks for."""

    uri: str
    partition_by: tuple[str, ...] | None = None
    cluster_by: tuple[str, ...] | None = None
    replace_where: str | None = None
    schema_mode: str | None = None
    app_id: str | None = None
    app_version: int | None = None
    user_metadata: str | None = None
    max_records_per_file: int | None = None
    target_file_size: int | None = None
    checkpoint_location: str | None = None
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str], streaming: bool = False) -> WriteOptions:
        """Reads ``path`` (the table), ``partitionBy`` and ``clusterBy`` (comma-separated
        names or a JSON list), ``replaceWhere`` (SQL over data and partition columns),
        ``mergeSchema`` / ``overwriteSchema`` (``true``), ``txnAppId`` with ``txnVersion`` (a
        streaming write takes ``txnAppId`` alone: its versions are the micro-batch ids),
        ``userMetadata``, ``maxRecordsPerFile``, ``targetFileSize`` and a streaming write's
        ``checkpointLocation``."""
        lowered = _lowered(options)
        merge = _flag(lowered.get("mergeschema"), "mergeSchema")
        overwrite = _flag(lowered.get("overwriteschema"), "overwriteSchema")
        app_id = lowered.get("txnappid") or None
        app_version = _count(lowered.get("txnversion"), "txnVersion", 0)
        if streaming:
            app_version = None
        elif (app_id is None) != (app_version is None):
            raise InvalidArgumentError("txnAppId and txnVersion go together")
        return cls(
            uri=_table_location(lowered, "save"),
            partition_by=_names(
                lowered.get("partitionby") or lowered.get("__partition_columns"), "partitionBy"
            ),
            cluster_by=_names(lowered.get("clusterby"), "clusterBy"),
            replace_where=lowered.get("replacewhere") or None,
            schema_mode="overwrite" if overwrite else "merge" if merge else None,
            app_id=app_id,
            app_version=app_version,
            user_metadata=lowered.get("usermetadata"),
            max_records_per_file=_count(lowered.get("maxrecordsperfile"), "maxRecordsPerFile", 1),
            target_file_size=_count(lowered.get("targetfilesize"), "targetFileSize", 1),
            checkpoint_location=lowered.get("checkpointlocation") or None,
            storage_options=_storage_options(lowered),
        )

    def plan_options(self, mode: str) -> str:
        """The JSON of the core's ``DistributedWriteOptions`` for a write in ``mode``."""
        commit_info = {} if self.user_metadata is None else {"userMetadata": self.user_metadata}
        with_app = self.app_id is not None and self.app_version is not None
        app = [self.app_id, self.app_version] if with_app else None
        return json.dumps(
            {
                "mode": mode,
                "partitionBy": None if self.partition_by is None else list(self.partition_by),
                "clusterBy": None if self.cluster_by is None else list(self.cluster_by),
                "predicate": self.replace_where,
                "schemaMode": self.schema_mode,
                "configuration": {},
                "targetFileSize": self.target_file_size,
                "maxRecordsPerFile": self.max_records_per_file,
                "appVersion": app,
                "commitInfo": commit_info,
            }
        )


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in options.items()}


def _table_location(lowered: Mapping[str, str], call: str) -> str:
    uri = lowered.get("path")
    if not uri:
        raise InvalidArgumentError(
            f'the deltalog data source needs the table location: {call}("path/or/uri")'
        )
    return uri


def _storage_options(lowered: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in lowered.items() if key not in _OWN_OPTIONS}


def _paths(text: str | None) -> tuple[str, ...] | None:
    """The JSON list of paths of the ``files`` option."""
    if text is None:
        return None
    try:
        paths = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidArgumentError(f"files must be a JSON list of paths: {error}") from None
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        raise InvalidArgumentError("files must be a JSON list of paths")
    return tuple(paths)


def _names(text: str | None, name: str) -> tuple[str, ...] | None:
    """Comma-separated names, or a JSON list of strings; ``None`` when empty."""
    if text is None or not text.strip():
        return None
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            names = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise InvalidArgumentError(f"{name} {text!r} is not a JSON list: {error}") from None
        if not isinstance(names, list) or not all(isinstance(item, str) for item in names):
            raise InvalidArgumentError(f"{name} {text!r} must be a JSON list of strings")
        return tuple(names)
    return tuple(item.strip() for item in stripped.split(",") if item.strip())


def _count(text: str | None, name: str, minimum: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be an integer, got {text!r}") from None
    if value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    return value


def _flag(text: str | None, name: str) -> bool | None:
    if text is None:
        return None
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise InvalidArgumentError(f"{name} must be true or false, got {text!r}")


def _size(text: str | None, default: int, minimum: int) -> int:
    value = _count(text, "a partition size option", minimum)
    return default if value is None else value
