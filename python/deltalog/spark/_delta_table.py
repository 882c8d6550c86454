"""``deltalog.spark.DeltaTable``: delta-spark's ``delta.tables.DeltaTable`` API, run by
deltalog on any pyspark 4.x without Delta's jars.

Row-level changes (:meth:`DeltaTable.delete`, :meth:`DeltaTable.update`) run on Spark's
executors (see ``_dml.py``); maintenance, history and protocol changes are deltalog's own
operations, run from the driver; every result is a Spark DataFrame with the columns
delta-spark gives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

from .._table import DeltaTable as CoreTable
from ..exceptions import DeltaError, InvalidArgumentError, UnsupportedFeatureError
from ._builder import DeltaColumnBuilder, DeltaTableBuilder, convert_to_delta
from ._dml import TableRef, delete_rows, update_rows
from ._merge import DeltaMergeBuilder
from ._optimize import optimize_files
from ._register import register
from ._source import SOURCE_NAME

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["DeltaOptimizeBuilder", "DeltaTable"]

#: The generation expression of a generated column, in the column's metadata.
_GENERATION_KEY = "delta.generationExpression"
#: The session setting that lets VACUUM use a retention below the table's (Delta on Spark's).
_RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
#: Present in the metadata of an identity column.
_IDENTITY_KEY = "delta.identity.start"


class DeltaTable:
    """A Delta table, addressed by path, with delta-spark's ``DeltaTable`` methods.

    >>> from deltalog.spark import DeltaTable
    >>> t = DeltaTable.forPath(spark, "s3://bucket/events")
    >>> t.delete("day < '2024-01-01'")
    >>> t.update(condition="region = 'eu'", set={"amount": "amount * 2"})
    """

    def __init__(
        self,
        spark: SparkSession,
        path: str,
        storage_options: Mapping[str, str] | None = None,
        alias: str | None = None,
    ) -> None:
        self._spark = spark
        self._ref = TableRef(path, dict(storage_options or {}))
        self._alias = alias
        register(spark)

    @classmethod
    def forPath(
        cls,
        sparkSession: SparkSession,
        path: str,
        hadoopConf: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """The Delta table at ``path``; ``hadoopConf`` entries are the object store's
        options (``aws_region``, ...). Raises :class:`deltalog.exceptions.TableNotFoundError`
        when there is no Delta table there."""
        table = cls(sparkSession, str(path), hadoopConf)
        table._core().latest_version()
        return table

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        """The Delta table a catalog name points at: its location, read from Spark's
        catalog (``DESCRIBE TABLE EXTENDED``). A name without a location (a view, a
        table Spark's catalog cannot hold) raises :class:`InvalidArgumentError`."""
        location = _catalog_location(sparkSession, tableOrViewName)
        if location is None:
            raise InvalidArgumentError(
                f"{tableOrViewName} has no location in Spark's catalog: use "
                "DeltaTable.forPath with the table's path"
            )
        return cls.forPath(sparkSession, location)

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        """True when ``identifier`` (a path) holds a Delta table."""
        try:
            CoreTable(identifier).latest_version()
        except DeltaError:
            return False
        return True

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder[DeltaTable]:
        """A builder of a new table (``CREATE TABLE``): ``execute()`` fails when the table
        exists. ``sparkSession``: the active session when ``None``."""
        return DeltaTableBuilder(sparkSession, "create", cls.forPath)

    @classmethod
    def createIfNotExists(
        cls, sparkSession: SparkSession | None = None
    ) -> DeltaTableBuilder[DeltaTable]:
        """A builder of a table created unless it exists (``CREATE TABLE IF NOT EXISTS``):
        an existing table is left as it is."""
        return DeltaTableBuilder(sparkSession, "createIfNotExists", cls.forPath)

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder[DeltaTable]:
        """A builder replacing an existing table (``REPLACE TABLE``): ``execute()`` fails
        when there is none."""
        return DeltaTableBuilder(sparkSession, "replace", cls.forPath)

    @classmethod
    def createOrReplace(
        cls, sparkSession: SparkSession | None = None
    ) -> DeltaTableBuilder[DeltaTable]:
        """A builder replacing the table, or creating it when there is none (``CREATE OR
        REPLACE TABLE``)."""
        return DeltaTableBuilder(sparkSession, "createOrReplace", cls.forPath)

    @classmethod
    def columnBuilder(cls, sparkSession: SparkSession | None, colName: str) -> DeltaColumnBuilder:
        """A builder of one column (type, nullability, generation, identity, comment) for
        :meth:`DeltaTableBuilder.addColumns`."""
        return DeltaColumnBuilder(sparkSession, colName)

    @classmethod
    def convertToDelta(
        cls,
        sparkSession: SparkSession,
        identifier: str,
        partitionSchema: str | StructType | None = None,
    ) -> DeltaTable:
        """Turns the Parquet directory ``identifier`` names (``parquet.`<path>```) into a
        Delta table in place and opens it; ``partitionSchema`` (DDL text or a
        ``StructType``) names its partition columns and their types."""
        return convert_to_delta(sparkSession, identifier, partitionSchema, cls.forPath)

    def alias(self, aliasName: str) -> DeltaTable:
        """This table under the name ``aliasName`` (for :meth:`toDF`'s columns)."""
        return DeltaTable(self._spark, self._ref.uri, self._ref.storage_options, aliasName)

    def toDF(self) -> DataFrame:
        """The table's latest rows as a DataFrame (``spark.read.format("deltalog")``)."""
        reader = self._spark.read.format(SOURCE_NAME)
        for key, value in self._ref.storage_options.items():
            reader = reader.option(key, value)
        frame = reader.load(self._ref.uri)
        return frame.alias(self._alias) if self._alias else frame

    def delete(self, condition: str | Column | None = None) -> None:
        """Deletes the rows where ``condition`` (Spark SQL text or a ``Column``) is true;
        every row without one. Runs on Spark's executors; one commit (``DELETE``)."""
        delete_rows(self._spark, self._ref, condition)

    def update(
        self,
        condition: str | Column | None = None,
        set: Mapping[str, str | Column] | None = None,
    ) -> None:
        """Sets, in the rows where ``condition`` is true (every row without one), each
        column of ``set`` (a name, or ``a.b`` for a struct field) to its value (Spark SQL
        text or a ``Column``) evaluated on the row as it was. Runs on Spark's executors;
        one commit (``UPDATE``)."""
        if set is None:
            raise InvalidArgumentError("update needs set={column: value}")
        fields = self._fields()
        for name in set:
            field = _field_named(fields, name.split(".")[0])
            if field is not None and _IDENTITY_KEY in (field.get("metadata") or {}):
                raise InvalidArgumentError(
                    f"the identity column {name!r} cannot be updated: its values are "
                    "generated by the table"
                )
        update_rows(self._spark, self._ref, condition, set, self._generated(fields))

    def merge(self, source: DataFrame, condition: str | Column) -> DeltaMergeBuilder:
        """A merge of ``source`` into this table on ``condition`` (refer to the two sides by
        the aliases given with :meth:`alias` and ``source.alias``); add WHEN clauses, then
        ``execute()``. Runs on Spark's executors; one commit (``MERGE``)."""
        return DeltaMergeBuilder(
            self._spark, self._ref, self._alias, source, condition, self._generated()
        )

    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        """Deletes the files no version within the retention (``retentionHours``, default
        ``delta.deletedFileRetentionDuration``, 7 days) needs; returns an empty DataFrame,
        as delta-spark does. A retention below the table's is refused unless the session
        sets ``spark.databricks.delta.retentionDurationCheck.enabled=false``, as Delta on
        Spark does."""
        from pyspark.sql.types import StructType

        check = self._spark.conf.get(_RETENTION_CHECK_CONF, "true")
        enforce = str(check).strip().lower() != "false"
        self._core().vacuum(retentionHours, dry_run=False, enforce_retention_duration=enforce)
        return self._spark.createDataFrame([], StructType([]))

    def history(self, limit: int | None = None) -> DataFrame:
        """The commits, newest first (at most ``limit``), with the columns of ``DESCRIBE
        HISTORY``."""
        import pyarrow as pa

        history = pa.table(self._core().history(limit))
        infos = history.column("commit_info").to_pylist()
        versions = history.column("version").to_pylist()
        rows = [
            {**_history_row(json.loads(info)), "version": version}
            for info, version in zip(infos, versions, strict=True)
        ]
        return self._spark.createDataFrame(rows, _HISTORY_SCHEMA).select(*_HISTORY_COLUMNS)

    def detail(self) -> DataFrame:
        """One row describing the table, with the columns of ``DESCRIBE DETAIL``."""
        snapshot = self._core().snapshot()
        metadata, protocol = snapshot.metadata, snapshot.protocol
        features = sorted({*(protocol.reader_features or ()), *(protocol.writer_features or ())})
        clustering = snapshot.domain_metadata("delta.clustering")
        row = {
            "format": "delta",
            "id": metadata.id,
            "name": metadata.name,
            "description": metadata.description,
            "location": self._ref.uri,
            "createdAt": metadata.created_time,
            "lastModified": snapshot.timestamp,
            "partitionColumns": list(metadata.partition_columns),
            "clusteringColumns": _clustering_columns(clustering),
            "numFiles": snapshot.num_files,
            "sizeInBytes": snapshot.total_size,
            "properties": dict(metadata.configuration),
            "minReaderVersion": protocol.min_reader_version,
            "minWriterVersion": protocol.min_writer_version,
            "tableFeatures": features,
        }
        return self._spark.createDataFrame([row], _DETAIL_SCHEMA)

    def generate(self, mode: str) -> None:
        """Writes the manifests of ``mode`` (``"symlink_format_manifest"``, in any case) for
        the latest version, as delta-spark does: ``_symlink_format_manifest/`` with one
        ``manifest`` per partition listing the absolute paths of its live files (see
        :meth:`deltalog.DeltaTable.generate`)."""
        self._core().generate(mode)

    def restoreToVersion(self, version: int) -> DataFrame:
        """Commits a version whose state equals version ``version``'s; returns RESTORE's
        metrics as delta-spark does."""
        return self._restored(self._core().restore(version))

    def restoreToTimestamp(self, timestamp: str | datetime | date) -> DataFrame:
        """Commits a version whose state equals that of the newest version committed at or
        before ``timestamp`` (text without a zone is in the session time zone, as in
        delta-spark); returns RESTORE's metrics."""
        moment = _in_session_zone(self._spark, timestamp)
        return self._restored(self._core().restore(timestamp=moment))

    def clone(
        self,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: dict[str, str] | None = None,
    ) -> DeltaTable:
        """Shallow-clones the latest version of this table to the path ``target`` and
        returns the target, as delta-spark's ``clone`` (see :meth:`deltalog.DeltaTable.clone`):
        one ``CLONE`` commit referencing this table's files where they are, with its
        metadata plus ``properties``. ``replace`` clones over an existing Delta table that
        holds no live file. ``isShallow=False`` (a deep clone) raises
        :class:`UnsupportedFeatureError`, as Delta on Spark's ``DELTA_UNSUPPORTED_DEEP_CLONE``.
        """
        return self._clone(target, isShallow, replace, properties)

    def cloneAtVersion(
        self,
        version: int,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: dict[str, str] | None = None,
    ) -> DeltaTable:
        """:meth:`clone` of version ``version`` (its data and metadata)."""
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"version needs to be an int but got '{type(version)}'.")
        return self._clone(target, isShallow, replace, properties, version=version)

    def cloneAtTimestamp(
        self,
        timestamp: str,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: dict[str, str] | None = None,
    ) -> DeltaTable:
        """:meth:`clone` of the newest version committed at or before ``timestamp``
        (``yyyy-MM-dd`` or ``yyyy-MM-dd HH:mm:ss``; without a zone, in the session time
        zone, as in delta-spark)."""
        if not isinstance(timestamp, str):
            raise InvalidArgumentError(
                f"timestamp needs to be a string but got '{type(timestamp)}'."
            )
        moment = _in_session_zone(self._spark, timestamp)
        return self._clone(target, isShallow, replace, properties, timestamp=moment)

    def optimize(self) -> DeltaOptimizeBuilder:
        """A builder of OPTIMIZE: ``.where(partition filter)``, then
        ``.executeCompaction()`` or ``.executeZOrderBy(columns)``."""
        return DeltaOptimizeBuilder(self)

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raises the table's protocol versions (never lowers them), as Delta on Spark's
        ``delta.minReaderVersion`` / ``delta.minWriterVersion`` properties do."""
        versions = {
            "delta.minReaderVersion": str(readerVersion),
            "delta.minWriterVersion": str(writerVersion),
        }
        self._core().alter.set_properties(versions)

    def addFeatureSupport(self, featureName: str) -> None:
        """Adds the table feature ``featureName`` to the protocol."""
        self._core().alter.add_feature(featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Removes the table feature ``featureName`` (see :meth:`deltalog.Alter.drop_feature`)."""
        self._core().alter.drop_feature(featureName, truncate_history=bool(truncateHistory))

    def _core(self) -> CoreTable:
        return CoreTable(self._ref.uri, storage_options=self._ref.options())

    def _clone(
        self,
        target: str,
        is_shallow: bool,
        replace: bool,
        properties: dict[str, str] | None,
        version: int | None = None,
        timestamp: str | datetime | date | None = None,
    ) -> DeltaTable:
        """The checks of delta-spark's ``_verify_clone_types`` and the clone itself; the
        target shares this table's storage options."""
        if not isinstance(target, str):
            raise InvalidArgumentError(f"target needs to be a string but got '{type(target)}'.")
        for name, flag in (("isShallow", is_shallow), ("replace", replace)):
            if not isinstance(flag, bool):
                raise InvalidArgumentError(f"{name} needs to be a boolean but got '{type(flag)}'.")
        if properties is not None and not isinstance(properties, dict):
            raise InvalidArgumentError(
                f"properties needs to be a dict but got '{type(properties)}'."
            )
        if not is_shallow:
            raise UnsupportedFeatureError(
                "Deep clone is not supported by this Delta version (Delta on Spark's "
                "DELTA_UNSUPPORTED_DEEP_CLONE): clone with isShallow=True"
            )
        options = self._ref.options()
        self._core().clone(
            target,
            version=version,
            timestamp=timestamp,
            replace=replace,
            properties=properties,
            target_storage_options=options,
        )
        return DeltaTable(self._spark, target, options)

    def _generated(self, fields: list[dict[str, Any]] | None = None) -> dict[str, str]:
        """The generated columns: name to generation expression."""
        return {
            str(field["name"]): str(field["metadata"][_GENERATION_KEY])
            for field in (self._fields() if fields is None else fields)
            if _GENERATION_KEY in (field.get("metadata") or {})
        }

    def _fields(self) -> list[dict[str, Any]]:
        schema = json.loads(self._core().snapshot().schema.json())
        return list(schema.get("fields", []))

    def _restored(self, metrics: Mapping[str, int | None]) -> DataFrame:
        values = {column: metrics.get(name) for column, name in _RESTORE_COLUMNS.items()}
        schema = ", ".join(f"{column} long" for column in _RESTORE_COLUMNS)
        return self._spark.createDataFrame([values], schema)


class DeltaOptimizeBuilder:
    """delta-spark's ``DeltaOptimizeBuilder``: OPTIMIZE of the whole table or of the
    partitions ``where`` selects."""

    def __init__(self, table: DeltaTable, partition_filter: str | None = None) -> None:
        self._table = table
        self._filter = partition_filter

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Only the partitions matching ``partitionFilter`` (partition columns only)."""
        combined = partitionFilter
        if self._filter is not None:
            combined = f"({self._filter}) AND ({partitionFilter})"
        return DeltaOptimizeBuilder(self._table, combined)

    def executeCompaction(self) -> DataFrame:
        """Compacts small files (bin-packing); returns ``path`` and ``metrics`` as
        delta-spark does."""
        return self._run(None)

    def executeZOrderBy(self, *cols: str) -> DataFrame:
        """Rewrites the files ordered by the Z-order curve of ``cols``."""
        columns = [c for group in cols for c in ([group] if isinstance(group, str) else group)]
        return self._run(columns)

    def _run(self, z_order_by: list[str] | None) -> DataFrame:
        table = self._table
        metrics = optimize_files(table._spark, table._ref, self._filter, z_order_by)
        row = {"path": self._table._ref.uri, "metrics": _optimize_metrics(metrics)}
        return self._table._spark.createDataFrame([row], _OPTIMIZE_SCHEMA)


def _in_session_zone(
    spark: SparkSession, timestamp: str | datetime | date
) -> str | datetime | date:
    """``timestamp`` as delta-spark reads it: ISO text without a zone (``2024-05-01``,
    ``2024-05-01 10:00:00``) is a moment in the session time zone
    (``spark.sql.session.timeZone``); anything else is passed on as it is."""
    if not isinstance(timestamp, str):
        return timestamp
    try:
        parsed = datetime.fromisoformat(timestamp.strip())
    except ValueError:
        return timestamp
    if parsed.tzinfo is not None:
        return timestamp
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    try:
        return parsed.replace(tzinfo=ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        return timestamp  # an offset such as "+02:00" or an unknown name: deltalog reads it


def _optimize_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """OPTIMIZE's metrics in the shape of delta-spark's ``metrics`` struct."""
    values = {name: metrics.get(name) for name in _OPTIMIZE_COUNTS}
    for name in ("filesAdded", "filesRemoved"):
        sizes = metrics.get(name) or {}
        values[name] = {key: sizes.get(key) for key in _FILE_SIZE_FIELDS}
    # delta-spark leaves the struct NULL when no deletion vector was purged.
    removed = metrics.get("numDeletionVectorsRemoved")
    values["deletionVectorStats"] = (
        {
            "numDeletionVectorsRemoved": removed,
            "numDeletionVectorRowsRemoved": metrics.get("numDeletionVectorRowsRemoved"),
        }
        if removed
        else None
    )
    return values


def _catalog_location(spark: SparkSession, name: str) -> str | None:
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception:  # Spark's analysis errors differ by version
        return None
    for row in rows:
        if str(row[0]).strip() == "Location":
            return str(row[1]).strip()
    return None


def _field_named(fields: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for field in fields:
        if str(field["name"]).lower() == name.lower():
            return field
    return None


def _clustering_columns(configuration: str | None) -> list[str]:
    if configuration is None:
        return []
    columns = json.loads(configuration).get("clusteringColumns", [])
    return [".".join(column) if isinstance(column, list) else str(column) for column in columns]


def _strings(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _struct(value: Any, fields: tuple[str, ...]) -> dict[str, str | None] | None:
    if not isinstance(value, dict):
        return None
    return {name: None if value.get(name) is None else str(value[name]) for name in fields}


_JOB_FIELDS = ("jobId", "jobName", "jobRunId", "runId", "jobOwnerId", "triggerType")


def _history_row(info: Mapping[str, Any]) -> dict[str, Any]:
    """One row of ``DESCRIBE HISTORY`` from a ``commitInfo`` action."""
    stamp = info.get("inCommitTimestamp", info.get("timestamp"))
    when = None if stamp is None else datetime.fromtimestamp(int(stamp) / 1000, tz=timezone.utc)
    return {
        "timestamp": when,
        "userId": info.get("userId"),
        "userName": info.get("userName"),
        "operation": info.get("operation"),
        "operationParameters": _strings(info.get("operationParameters")),
        "job": _struct(info.get("job"), _JOB_FIELDS),
        "notebook": _struct(info.get("notebook"), ("notebookId",)),
        "clusterId": info.get("clusterId"),
        "readVersion": info.get("readVersion"),
        "isolationLevel": info.get("isolationLevel"),
        "isBlindAppend": info.get("isBlindAppend"),
        "operationMetrics": _strings(info.get("operationMetrics")),
        "userMetadata": info.get("userMetadata"),
        "engineInfo": info.get("engineInfo"),
    }


_HISTORY_COLUMNS = (
    "version",
    "timestamp",
    "userId",
    "userName",
    "operation",
    "operationParameters",
    "job",
    "notebook",
    "clusterId",
    "readVersion",
    "isolationLevel",
    "isBlindAppend",
    "operationMetrics",
    "userMetadata",
    "engineInfo",
)
_HISTORY_SCHEMA = (
    "version long, timestamp timestamp, userId string, userName string, operation string, "
    "operationParameters map<string,string>, job struct<jobId:string,jobName:string,"
    "jobRunId:string,runId:string,jobOwnerId:string,triggerType:string>, "
    "notebook struct<notebookId:string>, clusterId string, readVersion long, "
    "isolationLevel string, isBlindAppend boolean, operationMetrics map<string,string>, "
    "userMetadata string, engineInfo string"
)
_DETAIL_SCHEMA = (
    "format string, id string, name string, description string, location string, "
    "createdAt timestamp, lastModified timestamp, partitionColumns array<string>, "
    "clusteringColumns array<string>, numFiles long, sizeInBytes long, "
    "properties map<string,string>, minReaderVersion int, minWriterVersion int, "
    "tableFeatures array<string>"
)
_OPTIMIZE_COUNTS = (
    "numFilesAdded",
    "numFilesRemoved",
    "partitionsOptimized",
    "numBatches",
    "totalConsideredFiles",
    "totalFilesSkipped",
)
_FILE_SIZE_FIELDS = ("min", "max", "avg", "totalFiles", "totalSize")
_FILE_SIZES = "struct<min:bigint,max:bigint,avg:double,totalFiles:bigint,totalSize:bigint>"
_FILES = "struct<num:bigint,size:bigint>"
_CUBE_FILES = "struct<numFiles:bigint,size:bigint>"
#: delta-spark's OPTIMIZE result: the table's path and the metrics it reports (those
#: deltalog's OPTIMIZE has no counterpart of are NULL).
_OPTIMIZE_SCHEMA = (
    "path:string,metrics:struct<numFilesAdded:bigint,numFilesRemoved:bigint,"
    f"filesAdded:{_FILE_SIZES},filesRemoved:{_FILE_SIZES},partitionsOptimized:bigint,"
    f"zOrderStats:struct<strategyName:string,inputCubeFiles:{_FILES},"
    f"inputOtherFiles:{_FILES},inputNumCubes:bigint,mergedFiles:{_FILES},"
    "numOutputCubes:bigint,mergedNumCubes:bigint>,"
    f"clusteringStats:struct<inputZCubeFiles:{_CUBE_FILES},inputOtherFiles:{_CUBE_FILES},"
    f"inputNumZCubes:bigint,mergedFiles:{_CUBE_FILES},numOutputZCubes:bigint>,"
    "numBins:bigint,numBatches:bigint,totalConsideredFiles:bigint,totalFilesSkipped:bigint,"
    "preserveInsertionOrder:boolean,numFilesSkippedToReduceWriteAmplification:bigint,"
    "numBytesSkippedToReduceWriteAmplification:bigint,startTimeMs:bigint,endTimeMs:bigint,"
    "totalClusterParallelism:bigint,totalScheduledTasks:bigint,"
    "autoCompactParallelismStats:struct<maxClusterActiveParallelism:bigint,"
    "minClusterActiveParallelism:bigint,maxSessionActiveParallelism:bigint,"
    "minSessionActiveParallelism:bigint>,deletionVectorStats:struct<"
    "numDeletionVectorsRemoved:bigint,numDeletionVectorRowsRemoved:bigint>,"
    "numTableColumns:bigint,numTableColumnsWithStats:bigint>"
)
#: The columns of delta-spark's RESTORE result, and the metric each holds.
_RESTORE_COLUMNS = {
    "table_size_after_restore": "tableSizeAfterRestore",
    "num_of_files_after_restore": "numOfFilesAfterRestore",
    "num_removed_files": "numRemovedFiles",
    "num_restored_files": "numRestoredFiles",
    "removed_files_size": "removedFilesSize",
    "restored_files_size": "restoredFilesSize",
}
