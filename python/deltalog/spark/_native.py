"""The fast path: deltalog plans, Spark's native Parquet reader reads.

:func:`read` plans the scan on the driver and, when the plan can be said in Spark's own
terms, returns ``spark.read.schema(physical).parquet(*files)`` with

- the physical column names (column mapping ``name`` mode) renamed to the logical ones, nested
  structs cast positionally to their logical types;
- partition values, which live in the log and not in the files, as literal columns: one read
  per partition tuple, unioned (Spark folds a filter on them and skips whole groups), or for
  many groups one read joined with a small table of (file, values) on ``_metadata.file_path``;
- the nullability of the Delta schema, which Spark's file sources drop (a NOT NULL column is
  restored with ``coalesce``; Delta guarantees it holds no null).

Otherwise (a deletion vector on a file read, column mapping ``id`` mode, a type change, a
variant column, a file name Spark would take as a glob pattern) it reads through the
``deltalog`` data source, which applies all of it in the Rust scan. Which columns and files
those are, their physical names and their paths are the core's answers
(``RawSnapshot.native_columns``, ``RawScan.native_files``); Spark's side is built here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from .._scan import Scan
from .._table import DeltaTable, Snapshot
from ..exceptions import DeltaError, InvalidArgumentError, UnsupportedFeatureError
from ._register import filter_pushdown_enabled, register
from ._source import SOURCE_NAME

if TYPE_CHECKING:
    import pyarrow
    from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession

__all__ = ["MAX_UNION_GROUPS", "addressed_rows", "read"]

#: Up to this many partition tuples, each gets its own read with literal columns; above it,
#: one read is joined with the partition values of each file.
MAX_UNION_GROUPS = 64

_MODES = ("auto", "native", "deltalog")
_FILE_KEY = "__deltalog_file"
#: A row's data file as Spark's reader names it (``_metadata.file_path``).
_SPARK_PATH = "__deltalog_spark_path"


def read(
    spark: SparkSession,
    uri: str | os.PathLike[str],
    version: int | None = None,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    *,
    timestamp: datetime | date | str | None = None,
    timezone: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    mode: str = "auto",
) -> DataFrame:
    """A DataFrame of the table's rows, read by Spark's native Parquet reader where it can.

    ``version`` or ``timestamp`` pick the snapshot (default: the latest), ``columns`` project
    (logical names, in that order). ``filter`` is a Spark SQL condition, applied with
    ``DataFrame.where``; when deltalog's filter syntax reads it the same way (no backslash
    escapes or double-quoted strings; timestamp literals only in a UTC session) it also
    skips files by partition values and statistics before Spark sees them. ``timezone`` is
    the time zone of partition timestamps (default: the session time zone, as Delta on
    Spark). ``storage_options`` go to the object store (Spark's native reader uses its own
    Hadoop configuration).

    ``mode``: ``"auto"`` reads natively when the plan allows it and through the ``deltalog``
    data source otherwise; ``"native"`` raises :class:`UnsupportedFeatureError` saying why it
    cannot; ``"deltalog"`` always uses the data source. Either way the rows and schema are
    those of ``spark.read.format("deltalog")`` at the same version.
    """
    if mode not in _MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if filter is not None and not isinstance(filter, str):
        raise InvalidArgumentError("filter must be a Spark SQL condition (a string)")
    zone = timezone or str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    table = DeltaTable(uri, storage_options=storage_options)
    snapshot = table.snapshot(version, timestamp=timestamp)
    selection = _Selection.of(snapshot, columns)
    fields = selection.fields
    if mode == "deltalog":
        return _through_data_source(spark, uri, snapshot, fields, filter, zone, storage_options)
    scan = _planned_scan(snapshot, fields, filter, zone)
    files = _files_of(scan)
    urls, file_obstacle = scan._raw.native_files()
    obstacle = _native_obstacle(spark, snapshot, selection, files, file_obstacle)
    if obstacle is not None:
        if mode == "native":
            raise UnsupportedFeatureError(
                f"Spark's Parquet reader cannot read {table.uri} as planned: {obstacle}"
            )
        return _through_data_source(spark, uri, snapshot, fields, filter, zone, storage_options)
    frame = _native_frame(spark, selection, files, urls)
    return frame if filter is None else frame.where(filter)


# --- planning -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Selection:
    """The selected columns as the core describes them for a plain Parquet reader."""

    fields: list[dict[str, Any]]
    """The Delta schema's top-level fields of the columns, in order, as a read shows them
    (no field metadata, no ``void`` struct fields)."""
    physical: list[dict[str, Any] | None]
    """Each field as the data files hold it (physical names), ``None`` for partitions."""
    obstacle: str | None
    """Why Spark's Parquet reader cannot read these columns as stored, or ``None``."""

    @classmethod
    def of(cls, snapshot: Snapshot, columns: Sequence[str] | None) -> _Selection:
        """The columns ``columns`` (every non-void one when ``None``), in that order."""
        if isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of names, not a string")
        names = None if columns is None else [str(name) for name in columns]
        pairs, obstacle = snapshot._raw.native_columns(names)
        return cls(
            fields=[logical for logical, _ in pairs],
            physical=[physical for _, physical in pairs],
            obstacle=obstacle,
        )


def _planned_scan(
    snapshot: Snapshot,
    fields: Sequence[dict[str, Any]],
    filter: str | None,
    zone: str,
) -> Scan:
    """The scan; its files pruned by ``filter`` when deltalog reads it as Spark does."""
    names = [str(field["name"]) for field in fields]
    if filter is not None and _prunable(filter, zone):
        try:
            return snapshot.scan(columns=names, filter=filter, timezone=zone)
        except DeltaError:
            pass
    return snapshot.scan(columns=names, timezone=zone)


def _files_of(scan: Scan) -> pyarrow.Table:
    import pyarrow as pa

    return pa.table(scan.files())


def _prunable(filter: str, zone: str) -> bool:
    """Whether deltalog reads ``filter`` as Spark does, as far as the text shows: not with
    backslashes (escapes in Spark's string literals, not in deltalog's), double quotes (a
    string for Spark, a column for deltalog), or a timestamp literal outside UTC (without an
    offset it is UTC for deltalog, the session time zone for Spark)."""
    if "\\" in filter or '"' in filter:
        return False
    return "timestamp" not in filter.lower() or zone.upper() in ("UTC", "Z", "+00:00", "GMT")


def _native_obstacle(
    spark: SparkSession,
    snapshot: Snapshot,
    selection: _Selection,
    files: pyarrow.Table,
    file_obstacle: str | None,
) -> str | None:
    """Why the native reader cannot read this plan, or ``None`` when it can: the core's
    reasons for the columns, then for the files, then Spark's own."""
    if selection.obstacle is not None:
        return selection.obstacle
    if file_obstacle is not None:
        return file_obstacle
    fields = selection.fields
    partitioned = set(snapshot.partition_columns) & {str(field["name"]) for field in fields}
    if partitioned and _group_count(files, partitioned) > MAX_UNION_GROUPS and not _has_jvm(spark):
        return (
            f"more than {MAX_UNION_GROUPS} partition tuples to union, and joining their values "
            "onto the files needs the JVM, which a Spark Connect session does not expose"
        )
    return None


# --- the native DataFrame ---------------------------------------------------------------------


def _native_frame(
    spark: SparkSession,
    selection: _Selection,
    files: pyarrow.Table,
    paths: Sequence[str],
) -> DataFrame:
    """The plan as Spark's Parquet reads: one per partition tuple unioned, or one joined with
    the partition values of each file (``paths``: each file as the path Spark reads)."""
    projection = _Projection.of(selection)
    if files.num_rows == 0:
        return spark.createDataFrame([], projection.logical)
    reader = spark.read.schema(projection.physical)
    values = [row or {} for row in files.column("partition_values").to_pylist()]
    partitions = projection.partition_names
    if not partitions:
        return projection.apply(reader.parquet(*paths), {})
    groups: dict[tuple[Any, ...], list[str]] = {}
    for path, row in zip(paths, values, strict=True):
        groups.setdefault(_partition_key(row, partitions), []).append(path)
    if len(groups) > MAX_UNION_GROUPS:
        return _joined_frame(spark, reader, paths, values, projection)
    frames = [
        projection.apply(reader.parquet(*group_paths), projection.literals(key))
        for key, group_paths in groups.items()
    ]
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionAll(frame)
    return result


@dataclass(frozen=True)
class _Projection:
    """How the physical columns Spark reads become the logical ones."""

    logical: StructType
    """The output schema: the selected columns, Delta's types and nullability."""
    physical: StructType
    """The schema to read the files with: their data columns, physical names."""
    physical_names: tuple[str | None, ...]
    """Each output column's physical name, ``None`` for partition columns."""

    @classmethod
    def of(cls, selection: _Selection) -> _Projection:
        return cls(
            logical=StructType([_spark_field(field) for field in selection.fields]),
            physical=StructType(
                [_spark_field(physical) for physical in selection.physical if physical is not None]
            ),
            physical_names=tuple(
                None if physical is None else str(physical.get("name"))
                for physical in selection.physical
            ),
        )

    @property
    def partition_names(self) -> list[str]:
        return [
            field.name
            for field, physical in zip(self.logical.fields, self.physical_names, strict=True)
            if physical is None
        ]

    def literals(self, key: tuple[Any, ...]) -> dict[str, Column]:
        """The partition columns of one partition tuple, as literal columns."""
        fields = {field.name: field for field in self.logical.fields}
        return {
            name: _literal(value, fields[name].dataType, fields[name].nullable)
            for name, value in zip(self.partition_names, key, strict=True)
        }

    def apply(self, frame: DataFrame, partition_values: Mapping[str, Column]) -> DataFrame:
        """``frame`` (read with :attr:`physical`) as :attr:`logical`, partition columns
        taken from ``partition_values``."""
        return frame.select(*self.columns(partition_values))

    def columns(self, partition_values: Mapping[str, Column]) -> list[Column]:
        """The columns of :attr:`logical`, of rows read with :attr:`physical`, partition
        columns taken from ``partition_values``."""
        columns = []
        for field, physical_name in zip(self.logical.fields, self.physical_names, strict=True):
            if physical_name is None:
                column = partition_values[field.name]
            else:
                physical_type = self.physical[physical_name].dataType
                column = _logical_column(
                    F.col(_quoted(physical_name)), physical_type, field.dataType
                )
            columns.append(_strict(column, field.dataType, field.nullable).alias(field.name))
        return columns


def _joined_frame(
    spark: SparkSession,
    reader: DataFrameReader,
    paths: Sequence[str],
    values: Sequence[Mapping[str, Any]],
    projection: _Projection,
) -> DataFrame:
    """One read of every file, joined on ``_metadata.file_path`` with each file's partition
    values (the key spelled as Spark spells it, asked of Hadoop's file system)."""
    partitions = projection.partition_names
    types = {field.name: field.dataType for field in projection.logical.fields}
    schema = StructType(
        [StructField(_FILE_KEY, StringType(), False)]
        + [StructField(name, types[name], True) for name in partitions]
    )
    rows = [
        (key, *[row.get(name) for name in partitions])
        for key, row in zip(_spark_file_keys(spark, paths), values, strict=True)
    ]
    partition_frame = spark.createDataFrame(rows, schema)
    data = reader.parquet(*paths).select("*", F.col("_metadata.file_path").alias(_FILE_KEY))
    joined = data.join(F.broadcast(partition_frame), on=_FILE_KEY, how="inner")
    return projection.apply(joined, {name: F.col(_quoted(name)) for name in partitions})


def _through_data_source(
    spark: SparkSession,
    uri: str | os.PathLike[str],
    snapshot: Snapshot,
    fields: Sequence[dict[str, Any]],
    filter: str | None,
    zone: str,
    storage_options: Mapping[str, str] | None,
) -> DataFrame:
    register(spark)
    reader = (
        spark.read.format(SOURCE_NAME)
        .option("versionAsOf", snapshot.version)
        .option("timezone", zone)
        .option("columns", _json_list([str(field["name"]) for field in fields]))
        .option("filterPushdown", str(filter_pushdown_enabled(spark)).lower())
    )
    for key, value in (storage_options or {}).items():
        reader = reader.option(key, value)
    frame = reader.load(os.fspath(uri))
    return frame if filter is None else frame.where(filter)


# --- columns ----------------------------------------------------------------------------------


def _spark_field(field: Mapping[str, Any]) -> StructField:
    """A field of the core (a Delta field as a read shows it) as Spark's: Delta's field JSON
    is Spark's."""
    return StructField.fromJson(dict(field))


def _logical_column(column: Column, physical: DataType, logical: DataType) -> Column:
    """The physical column (as read: nullable throughout) as the logical type, nullable
    throughout: nested structs are cast positionally, which renames their fields."""
    target = _as_nullable(logical)
    return column if _as_nullable(physical) == target else column.cast(target)


def _as_nullable(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, _as_nullable(f.dataType), True) for f in data_type.fields]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_as_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_as_nullable(data_type.keyType), _as_nullable(data_type.valueType), True)
    return data_type


def _strict(column: Column, data_type: DataType, nullable: bool) -> Column:
    """``column`` with the nullability of ``data_type`` and ``nullable`` restored: Spark's
    file sources read every field as nullable. Non-null values are untouched."""
    rebuilt = _rebuilt(column, data_type)
    if nullable:
        return rebuilt
    return F.coalesce(rebuilt, _default(data_type))


def _rebuilt(column: Column, data_type: DataType) -> Column:
    if not _has_non_null_inside(data_type):
        return column
    if isinstance(data_type, StructType):
        inner = F.struct(
            *[
                _strict(column.getField(field.name), field.dataType, field.nullable).alias(
                    field.name
                )
                for field in data_type.fields
            ]
        )
        return F.when(column.isNull(), F.lit(None)).otherwise(inner)
    if isinstance(data_type, ArrayType):
        element_type, contains_null = data_type.elementType, data_type.containsNull
        return F.transform(column, lambda element: _strict(element, element_type, contains_null))
    if isinstance(data_type, MapType):
        value_type, value_null = data_type.valueType, data_type.valueContainsNull
        return F.transform_values(
            column, lambda _key, value: _strict(value, value_type, value_null)
        )
    return column


def _has_non_null_inside(data_type: DataType) -> bool:
    if isinstance(data_type, StructType):
        return any(
            not field.nullable or _has_non_null_inside(field.dataType) for field in data_type.fields
        )
    if isinstance(data_type, ArrayType):
        return not data_type.containsNull or _has_non_null_inside(data_type.elementType)
    if isinstance(data_type, MapType):
        return not data_type.valueContainsNull or _has_non_null_inside(data_type.valueType)
    return False


def _default(data_type: DataType) -> Column:
    """A non-null value of ``data_type`` that Spark types as non-nullable."""
    if isinstance(data_type, StructType):
        return F.struct(*[_default(f.dataType).alias(f.name) for f in data_type.fields])
    if isinstance(data_type, (ArrayType, MapType)):
        empty = F.array() if isinstance(data_type, ArrayType) else F.create_map()
        return empty.cast(data_type)
    if isinstance(data_type, DecimalType):
        zeros = "." + "0" * data_type.scale if data_type.scale else ""
        return F.expr(f"0{zeros}BD")
    literals: dict[type[DataType], str] = {
        ByteType: "0Y",
        ShortType: "0S",
        IntegerType: "0",
        LongType: "0L",
        FloatType: "CAST(0 AS FLOAT)",
        DoubleType: "0.0D",
        StringType: "''",
        BinaryType: "X''",
        BooleanType: "false",
        DateType: "DATE'1970-01-01'",
        TimestampType: "TIMESTAMP'1970-01-01 00:00:00Z'",
        TimestampNTZType: "TIMESTAMP_NTZ'1970-01-01 00:00:00'",
    }
    text = literals.get(type(data_type))
    if text is None:
        raise UnsupportedFeatureError(f"no default for Spark type {data_type.simpleString()}")
    return F.expr(text)


def _literal(value: Any, data_type: DataType, nullable: bool) -> Column:
    """A partition value as a Spark column of exactly ``data_type`` (dates and timestamps in
    the proleptic Gregorian calendar, as Delta writes them), typed nullable when the column
    is (a literal alone is not, and a union of reads is nullable only where one of them is).
    """
    column = _value_column(value, data_type)
    if value is None or not nullable:
        return column
    return F.when(F.lit(False), F.lit(None)).otherwise(column)


def _value_column(value: Any, data_type: DataType) -> Column:
    if value is None:
        return F.lit(None).cast(data_type)
    if isinstance(data_type, TimestampType):
        return F.timestamp_micros(F.lit(_epoch_micros(value)))
    if isinstance(data_type, TimestampNTZType):
        return F.lit(value.isoformat(sep=" ")).cast(data_type)
    if isinstance(data_type, DateType):
        return F.lit(f"{value.year:04d}-{value.month:02d}-{value.day:02d}").cast(data_type)
    if isinstance(data_type, DecimalType):
        return F.lit(format(value, "f")).cast(data_type)
    if isinstance(data_type, BinaryType):
        return F.unhex(F.lit(bytes(value).hex()))
    return F.lit(value).cast(data_type)


# --- paths and values -------------------------------------------------------------------------


def _spark_file_keys(spark: SparkSession, paths: Iterable[str]) -> list[str]:
    """Each path as ``_metadata.file_path`` shows it: Hadoop's qualified path as a URI (asked
    of the JVM, which a Spark Connect session does not expose)."""
    if not _has_jvm(spark):
        raise UnsupportedFeatureError(
            "deltalog.spark.read: joining partition values onto files needs a classic Spark "
            "session (Hadoop qualifies their paths in the JVM); over Spark Connect, read "
            "through the data source (mode='deltalog')"
        )
    jvm = spark._jvm
    assert jvm is not None
    configuration = spark._jsc.hadoopConfiguration()
    keys = []
    for path in paths:
        if _PLAIN_URL.fullmatch(path):
            keys.append(path)  # qualified already, and nothing in it Hadoop would escape
            continue
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        file_system = hadoop_path.getFileSystem(configuration)
        keys.append(str(file_system.makeQualified(hadoop_path).toUri().toString()))
    return keys


#: A URL Hadoop qualifies to itself: a scheme, perhaps a host, and an absolute path of
#: non-empty segments (none `.` or `..`, which Hadoop normalizes away) of characters a URI
#: path keeps as they are; for those, asking the JVM (one call per file) is skipped.
_PLAIN_URL = re.compile(r"[a-z][a-z0-9+.-]*:(//[A-Za-z0-9.-]+)?(/[A-Za-z0-9_=-][A-Za-z0-9._=-]*)+")


def _has_jvm(spark: SparkSession) -> bool:
    """Whether ``spark`` is a classic session: a Spark Connect session raises
    ``PySparkAttributeError``, an ``AttributeError``, for ``_jvm``."""
    return getattr(spark, "_jvm", None) is not None


def _group_count(files: pyarrow.Table, names: Iterable[str]) -> int:
    chosen = sorted(names)
    rows = files.column("partition_values").to_pylist()
    return len({_partition_key(row or {}, chosen) for row in rows})


def _partition_key(values: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(_hashable(values.get(name)) for name in names)


def _hashable(value: Any) -> Any:
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


def _epoch_micros(value: datetime) -> int:
    moment = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _json_list(names: Sequence[str]) -> str:
    import json

    return json.dumps(list(names))


# --- rows with their addresses (row-level changes) -------------------------------------------


def addressed_rows(
    spark: SparkSession,
    uri: str,
    version: int,
    files: Sequence[str],
    storage_options: Mapping[str, str] | None,
    address: tuple[str, str],
    row_tracking: tuple[str, str] | None = None,
) -> tuple[DataFrame | None, list[str]]:
    """The live rows of ``files`` (paths as the file list names them) at ``version`` that
    Spark's Parquet reader can read, with each row's address in the columns ``address`` (its
    data file, as the file list names it, and its position in the file from
    ``_metadata.row_index``) and, with ``row_tracking`` (two column names), its row id and
    row commit version: what a row-level change reads, with only the columns Spark's plan
    uses read. Returns that DataFrame (``None`` when it has no file) and the files left for
    the ``deltalog`` data source to read: those with a deletion vector, or every file when
    Spark's reader cannot read the table's columns as stored (see :func:`read`), when a
    file has no base row id for ``row_tracking``, in a Spark Connect session, or when
    Hadoop has no file system for the paths.

    Spark may split one file over several input partitions: a caller needing every row of a
    file in one task repartitions by the file column."""
    everything: tuple[DataFrame | None, list[str]] = (None, list(files))
    if not files or not _has_jvm(spark):
        return everything
    snapshot = DeltaTable(uri, storage_options=storage_options).snapshot(version)
    selection = _Selection.of(snapshot, None)
    if selection.obstacle is not None:
        return everything
    plain, rest = _split_by_deletion_vector(_files_of(snapshot.scan(files=list(files))))
    if not plain:
        return everything
    scan = snapshot.scan(files=plain)
    urls, file_obstacle = scan._raw.native_files()
    listed = _files_of(scan)
    if file_obstacle is not None or (row_tracking and None in _row_id_bases(listed)):
        return everything
    try:
        keys = _spark_file_keys(spark, urls)
    except Exception:  # no Hadoop file system for the scheme: the data source reads them
        return everything
    projection = _Projection.of(selection)
    file_column, index_column = address
    per_file = _per_file_frame(spark, listed, keys, projection, file_column)
    materialized = _materialized_row_tracking(snapshot) if row_tracking else None
    physical = projection.physical
    for name in materialized or ():
        physical = physical.add(StructField(name, LongType(), True))
    data = (
        spark.read.schema(physical)
        .parquet(*urls)
        .select(
            "*",
            F.col("_metadata.file_path").alias(_SPARK_PATH),
            F.col("_metadata.row_index").alias(index_column),
        )
    )
    joined = data.join(F.broadcast(per_file), on=_SPARK_PATH, how="left")
    partitions = projection.partition_names
    columns = projection.columns({name: F.col(_quoted(name)) for name in partitions})
    if row_tracking:
        columns.extend(_row_tracking_columns(row_tracking, materialized, index_column))
    # A file Spark names otherwise than Hadoop qualified it fails the job, never loses rows.
    file = F.col(_quoted(file_column))
    unknown = F.concat(F.lit("deltalog: Spark read a file it was not given: "), F.col(_SPARK_PATH))
    checked = F.when(file.isNull(), F.raise_error(unknown)).otherwise(file)
    frame = joined.select(*columns, checked.alias(file_column), F.col(_quoted(index_column)))
    return frame, rest


#: The per-file columns of a base row id and a default row commit version.
_BASE_ROW_ID = "__deltalog_base_row_id"
_DEFAULT_VERSION = "__deltalog_default_row_commit_version"


def _split_by_deletion_vector(listed: pyarrow.Table) -> tuple[list[str], list[str]]:
    """The paths of the listed files without a deletion vector, and of those with one."""
    paths = listed.column("path").to_pylist()
    vectors = listed.column("deletion_vector").to_pylist()
    plain = [path for path, vector in zip(paths, vectors, strict=True) if vector is None]
    return plain, [path for path, vector in zip(paths, vectors, strict=True) if vector]


def _row_id_bases(listed: pyarrow.Table) -> list[int | None]:
    return list(listed.column("base_row_id").to_pylist())


def _per_file_frame(
    spark: SparkSession,
    listed: pyarrow.Table,
    keys: Sequence[str],
    projection: _Projection,
    file_column: str,
) -> DataFrame:
    """One row per listed file: its path as Spark's reader names it (``keys``) and as the
    file list does (``file_column``), its partition values, base row id and default row
    commit version."""
    partitions = projection.partition_names
    types = {field.name: field.dataType for field in projection.logical.fields}
    schema = StructType(
        [
            StructField(_SPARK_PATH, StringType(), False),
            StructField(file_column, StringType(), False),
            *[StructField(name, types[name], True) for name in partitions],
            StructField(_BASE_ROW_ID, LongType(), True),
            StructField(_DEFAULT_VERSION, LongType(), True),
        ]
    )
    values = [row or {} for row in listed.column("partition_values").to_pylist()]
    rows = [
        (key, path, *[row.get(name) for name in partitions], base, default)
        for key, path, row, base, default in zip(
            keys,
            listed.column("path").to_pylist(),
            values,
            _row_id_bases(listed),
            listed.column("default_row_commit_version").to_pylist(),
            strict=True,
        )
    ]
    return spark.createDataFrame(rows, schema)


def _materialized_row_tracking(snapshot: Snapshot) -> tuple[str, str] | None:
    """The physical names of the materialised row id and row commit version columns, when
    the table has them."""
    configuration = snapshot.metadata.configuration
    row_id = configuration.get("delta.rowTracking.materializedRowIdColumnName")
    version = configuration.get("delta.rowTracking.materializedRowCommitVersionColumnName")
    return (row_id, version) if row_id and version else None


def _row_tracking_columns(
    names: tuple[str, str], materialized: tuple[str, str] | None, index_column: str
) -> list[Column]:
    """A row's row id and row commit version (spec "Row Tracking"): the materialised value
    where a file holds one, else the file's base row id plus the row's position, and its
    default row commit version."""
    fresh_id = F.col(_BASE_ROW_ID) + F.col(_quoted(index_column))
    fresh_version = F.col(_DEFAULT_VERSION)
    if materialized is not None:
        fresh_id = F.coalesce(F.col(_quoted(materialized[0])), fresh_id)
        fresh_version = F.coalesce(F.col(_quoted(materialized[1])), fresh_version)
    return [fresh_id.alias(names[0]), fresh_version.alias(names[1])]
