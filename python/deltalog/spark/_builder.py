"""delta-spark's table builders, run by deltalog: :class:`DeltaTableBuilder` (behind
``DeltaTable.create``, ``createIfNotExists``, ``replace`` and ``createOrReplace``),
:class:`DeltaColumnBuilder` (``DeltaTable.columnBuilder``), :class:`IdentityGenerator`, and
:func:`convert_to_delta` (``DeltaTable.convertToDelta``).

Everything runs on the driver: a table is created by :meth:`deltalog.DeltaTable.create`
(version 0, or a ``CREATE OR REPLACE TABLE`` commit on an existing table) and a Parquet
directory converted by :func:`deltalog.convert_to_delta`. A table named with
``tableName`` is also registered in Spark's session catalog as a ``deltalog`` table
(``CREATE TABLE <name> (...) USING deltalog [LOCATION ...]``), whose location
``DeltaTable.forName`` reads back.

The builders hand back the table through an ``opener`` (``DeltaTable.forPath``), so this
module does not import ``_delta_table.py``, which imports it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, NoReturn, TypeVar

from pyspark.sql.types import (
    ArrayType,
    CharType,
    DataType,
    LongType,
    MapType,
    StructField,
    StructType,
    VarcharType,
)

from .._table import DeltaTable as CoreTable
from .._table import convert_to_delta as core_convert_to_delta
from ..exceptions import (
    InvalidArgumentError,
    OperationNotAllowedError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from ._register import register
from ._source import SOURCE_NAME

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CreateMode",
    "DeltaColumnBuilder",
    "DeltaTableBuilder",
    "IdentityGenerator",
    "convert_to_delta",
    "session",
]

#: What the builder does with an existing table: ``create`` refuses it, ``createIfNotExists``
#: leaves it, ``replace`` needs it, ``createOrReplace`` replaces it or creates one.
CreateMode = Literal["create", "createIfNotExists", "replace", "createOrReplace"]

T = TypeVar("T")

#: Column metadata keys Delta on Spark writes (spec "Generated Columns", "Identity Columns").
_GENERATION_KEY = "delta.generationExpression"
_IDENTITY_START = "delta.identity.start"
_IDENTITY_STEP = "delta.identity.step"
_IDENTITY_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
#: Session settings naming defaults of new tables' properties (Delta on Spark's
#: ``spark.databricks.delta.properties.defaults.<key>`` for ``delta.<key>``).
_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
#: ``<provider>.`<path>``` (a path-based identifier; a backtick in the path doubled).
_PATH_IDENTIFIER = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\.`((?:[^`]|``)+)`\s*")
_CATALOG_HINT = (
    "use .location(path) without tableName, and DeltaTable.forPath(spark, path) to open it"
)


def session(spark: SparkSession | None) -> SparkSession:
    """``spark``, or the active session when ``None`` (as delta-spark's entry points take
    it); raises :class:`InvalidArgumentError` when there is none."""
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None:
        raise InvalidArgumentError("no active SparkSession: pass the session")
    return active


@dataclass
class IdentityGenerator:
    """delta-spark's ``IdentityGenerator``: how an identity column's values are drawn,
    ``start``, ``start + step``, ... (``step`` must not be 0). Give it as ``addColumn``'s
    ``generatedAlwaysAs`` or ``generatedByDefaultAs``."""

    start: int = 1
    step: int = 1


class DeltaColumnBuilder:
    """delta-spark's ``DeltaColumnBuilder`` (``DeltaTable.columnBuilder(spark, name)``): a
    column's type, nullability, generation expression or identity, and comment, built into
    the ``StructField`` Delta on Spark writes (the generation expression in
    ``delta.generationExpression``, the identity in ``delta.identity.*``, the comment in
    ``comment`` metadata)."""

    def __init__(self, spark: SparkSession | None, colName: str) -> None:
        if type(colName) is not str:
            _type_error("Column name must be str.", [colName])
        self._spark = spark
        self._name = colName
        self._data_type: DataType | None = None
        self._nullable = True
        self._generation: str | None = None
        self._identity: tuple[int, int, bool] | None = None
        self._comment: str | None = None

    def dataType(self, dataType: str | DataType) -> DeltaColumnBuilder:
        """The column's type: a Spark ``DataType`` or DDL text (``"BIGINT"``,
        ``"DECIMAL(10,2)"``, ``"STRUCT<a: INT>"``)."""
        self._data_type = _data_type(dataType)
        return self

    def nullable(self, nullable: bool) -> DeltaColumnBuilder:
        """Whether the column may hold NULL (default true)."""
        if type(nullable) is not bool:
            _type_error("Column nullable must be bool.", [nullable])
        self._nullable = nullable
        return self

    def generatedAlwaysAs(self, expr: str) -> DeltaColumnBuilder:
        """A generated column: its value is always the Spark SQL expression ``expr`` over
        the row's other columns."""
        if type(expr) is not str:
            _type_error("Column generation expression must be str.", [expr])
        self._generation = expr
        return self

    def generatedAlwaysAsIdentity(self, start: int = 1, step: int = 1) -> DeltaColumnBuilder:
        """An identity column (``BIGINT``) whose values the table always draws: ``start``,
        ``start + step``, ...; explicit values are refused."""
        self._identity = (_identity_value(start, "start"), _identity_value(step, "step"), False)
        return self

    def generatedByDefaultAsIdentity(self, start: int = 1, step: int = 1) -> DeltaColumnBuilder:
        """An identity column (``BIGINT``) whose values the table draws when a write gives
        none: ``start``, ``start + step``, ...."""
        self._identity = (_identity_value(start, "start"), _identity_value(step, "step"), True)
        return self

    def comment(self, comment: str) -> DeltaColumnBuilder:
        """The column's comment."""
        if type(comment) is not str:
            _type_error("Column comment must be str.", [comment])
        self._comment = comment
        return self

    def build(self) -> StructField:
        """The column as a ``StructField``. Raises :class:`InvalidArgumentError`, as Delta
        on Spark does, when no type was given, when an identity column also has a
        generation expression, is not ``BIGINT`` or has step 0."""
        metadata: dict[str, Any] = {}
        if self._generation is not None:
            metadata[_GENERATION_KEY] = self._generation
        if self._identity is not None:
            start, step, explicit_insert = self._identity
            if self._generation is not None:
                raise InvalidArgumentError(
                    f"IDENTITY column {self._name} cannot be specified with a generated "
                    "column expression"
                )
            if self._data_type is not None and self._data_type != LongType():
                raise InvalidArgumentError(
                    f"IDENTITY column {self._name}: data type "
                    f"{self._data_type.simpleString()} is not supported (only BIGINT)"
                )
            if step == 0:
                raise InvalidArgumentError("IDENTITY column step cannot be 0")
            metadata[_IDENTITY_EXPLICIT_INSERT] = explicit_insert
            metadata[_IDENTITY_START] = start
            metadata[_IDENTITY_STEP] = step
        if self._comment is not None:
            metadata["comment"] = self._comment
        if self._data_type is None:
            raise InvalidArgumentError(f"column {self._name}: its data type is not given")
        return StructField(self._name, self._data_type, self._nullable, metadata)


class DeltaTableBuilder(Generic[T]):
    """delta-spark's ``DeltaTableBuilder``: the name or location, columns, partitioning or
    clustering, comment and properties of a table to create or replace; :meth:`execute`
    does it (see :class:`CreateMode` for an existing table) and returns the table.

    >>> (DeltaTable.createIfNotExists(spark).location(path)
    ...     .addColumn("id", "BIGINT").addColumn("day", "DATE").partitionedBy("day")
    ...     .property("delta.enableDeletionVectors", "true").execute())
    """

    def __init__(
        self,
        sparkSession: SparkSession | None,
        mode: CreateMode,
        opener: Callable[[SparkSession, str], T],
    ) -> None:
        self._spark = session(sparkSession)
        self._mode = mode
        self._opener = opener
        self._identifier: str | None = None
        self._location: str | None = None
        self._comment: str | None = None
        self._columns: list[StructField] = []
        self._partitioning: list[str] = []
        self._clustering: list[str] | None = None
        self._properties: dict[str, str] = {}

    def tableName(self, identifier: str) -> DeltaTableBuilder[T]:
        """The table's name in Spark's session catalog (``[database.]table``), or
        ``delta.`<path>``` for a table known by its path only."""
        if type(identifier) is not str:
            _type_error("Identifier must be str.", [identifier])
        self._identifier = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder[T]:
        """Where the table lives: a path or URI (``s3://...``)."""
        if type(location) is not str:
            _type_error("Location must be str.", [location])
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder[T]:
        """The table's comment (the metadata's ``description``)."""
        if type(comment) is not str:
            _type_error("Table comment must be str.", [comment])
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: str | DataType,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder[T]:
        """Adds a column: ``dataType`` as DDL text or a Spark ``DataType``;
        ``generatedAlwaysAs`` a Spark SQL expression (a generated column) or an
        :class:`IdentityGenerator` (an identity column that refuses explicit values);
        ``generatedByDefaultAs`` an :class:`IdentityGenerator` (an identity column that
        takes explicit values); not both."""
        if type(dataType) is not str and not isinstance(dataType, DataType):
            _type_error("Column data type must be str or DataType.", [dataType])
        column = DeltaColumnBuilder(self._spark, colName).dataType(dataType).nullable(nullable)
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise ValueError("generatedByDefaultAs and generatedAlwaysAs cannot both be set.")
        if isinstance(generatedAlwaysAs, IdentityGenerator):
            column.generatedAlwaysAsIdentity(generatedAlwaysAs.start, generatedAlwaysAs.step)
        elif type(generatedAlwaysAs) is str:
            column.generatedAlwaysAs(generatedAlwaysAs)
        elif generatedAlwaysAs is not None:
            _type_error(
                "Generated always as expression must be str or IdentityGenerator.",
                [generatedAlwaysAs],
            )
        if generatedByDefaultAs is not None:
            if not isinstance(generatedByDefaultAs, IdentityGenerator):
                _type_error(
                    "Generated by default expression must be IdentityGenerator.",
                    [generatedByDefaultAs],
                )
            column.generatedByDefaultAsIdentity(
                generatedByDefaultAs.start, generatedByDefaultAs.step
            )
        if comment is not None:
            column.comment(comment)
        self._columns.append(column.build())
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> DeltaTableBuilder[T]:
        """Adds the columns of a schema (``df.schema``) or a list of ``StructField``s,
        their metadata (generation expressions, identity, comments) included."""
        if isinstance(cols, list):
            for col in cols:
                if type(col) is not StructField:
                    _type_error("Column in existing schema must be StructField.", [col])
            cols = StructType(cols)
        if type(cols) is not StructType:
            _type_error("Schema must be StructType or a list of StructField.", [cols])
        self._columns.extend(cols.fields)
        return self

    def partitionedBy(self, *cols: str | list[str] | tuple[str, ...]) -> DeltaTableBuilder[T]:
        """The partition columns (names of added columns), as arguments or one list."""
        self._partitioning = _names(cols, "Partitioning")
        return self

    def clusterBy(self, *cols: str | list[str] | tuple[str, ...]) -> DeltaTableBuilder[T]:
        """The clustering columns (liquid clustering; column paths such as ``s.x``), as
        arguments or one list; a table cannot be both partitioned and clustered."""
        self._clustering = _names(cols, "Clustering")
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder[T]:
        """A table property (``delta.*`` keys are checked as Delta on Spark checks them;
        ``delta.feature.<name>: supported`` adds a table feature)."""
        if type(key) is not str or type(value) is not str:
            _type_error("Key and value of property must be string.", [key, value])
        self._properties[key] = value
        return self

    def execute(self) -> T:
        """Creates or replaces the table, as the builder's mode says, and returns it.

        A location (``location`` or ``tableName("delta.`<path>`")``) is created by
        deltalog's ``create``: ``create`` raises :class:`OperationNotAllowedError` when a
        Delta table is there, ``replace`` raises :class:`TableNotFoundError` when none is,
        ``createIfNotExists`` leaves an existing one untouched, and ``replace`` /
        ``createOrReplace`` commit ``CREATE OR REPLACE TABLE`` (new schema, partitioning,
        properties, no rows; the history stays). Properties the session sets as
        ``spark.databricks.delta.properties.defaults.<key>`` apply as ``delta.<key>``
        unless given. A catalog name is registered in Spark's session catalog (see
        :meth:`tableName`); raises :class:`UnsupportedFeatureError` when that catalog
        cannot hold it. Raises :class:`InvalidArgumentError` without a name or location.
        """
        if self._identifier is None and self._location is None:
            raise InvalidArgumentError("Table name or location has to be specified")
        path = None if self._identifier is None else _path_of(self._identifier, "delta")
        if self._identifier is not None and path is None:
            return self._opener(self._spark, self._create_named(self._identifier))
        if path is not None and self._location is not None and path != self._location:
            raise InvalidArgumentError(
                "Creating path-based Delta table with a different location isn't supported. "
                f"Identifier: {self._identifier}, Location: {self._location}"
            )
        location = path if path is not None else str(self._location)
        self._create_at(location, _holds_table(location))
        return self._opener(self._spark, location)

    def _create_at(self, location: str, exists: bool) -> None:
        """Creates or replaces the table at ``location`` as the mode says (``exists``: a
        Delta table is there now)."""
        if exists and self._mode == "create":
            raise OperationNotAllowedError(
                f"a Delta table already exists at {location}: DeltaTable.create refuses it "
                "(createIfNotExists leaves it; replace and createOrReplace replace it)"
            )
        if not exists and self._mode == "replace":
            raise TableNotFoundError(
                f"no Delta table at {location} to replace: DeltaTable.replace needs one "
                "(createOrReplace also creates it)"
            )
        if exists and self._mode == "createIfNotExists":
            return
        core_mode = {"create": "error", "createIfNotExists": "ignore"}.get(self._mode, "overwrite")
        CoreTable.create(
            location,
            StructType(self._checked_columns()).json(),
            partition_by=self._partition_columns() or None,
            configuration=self._configuration(),
            description=self._comment,
            mode=core_mode,
            cluster_by=self._clustering,
        )

    def _create_named(self, name: str) -> str:
        """Creates or replaces the table ``name`` of Spark's session catalog, registering
        it there when it is new; returns its location."""
        entry = _catalog_entry(self._spark, name)
        if entry is not None:
            return self._replace_named(name, entry)
        if self._mode == "replace":
            raise TableNotFoundError(
                f"Table {name} cannot be replaced as it does not exist in Spark's catalog: "
                "use DeltaTable.createOrReplace to create it"
            )
        columns = self._checked_columns()
        if not columns:
            if self._location is None:
                raise InvalidArgumentError(
                    f"table {name} has no columns: add columns, or give a location that "
                    "holds a Delta table"
                )
            self._create_at(self._location, _holds_table(self._location))
            _register(self._spark, name, None, self._location)
            return self._location
        exists = self._location is not None and _holds_table(self._location)
        if exists and self._mode != "createOrReplace":
            # As Delta on Spark: an existing table at the location is registered as it is
            # when the given columns are its columns.
            assert self._location is not None
            _check_same_columns(name, self._location, columns)
            _register(self._spark, name, StructType(columns), self._location)
            return self._location
        _register(self._spark, name, StructType(columns), self._location)
        entry = _catalog_entry(self._spark, name)
        location = None if entry is None else entry.get("Location")
        try:
            if location is None:
                raise InvalidArgumentError(f"Spark's catalog gave {name} no location")
            self._create_at(location, exists)
        except Exception:
            self._spark.sql(f"DROP TABLE IF EXISTS {name}")
            raise
        return location

    def _replace_named(self, name: str, entry: dict[str, str]) -> str:
        """The mode applied to ``name``, which Spark's catalog holds as ``entry``."""
        if self._mode == "create":
            raise OperationNotAllowedError(
                f"Cannot create table {name} because it already exists in Spark's catalog "
                "(createIfNotExists leaves it; replace and createOrReplace replace it)"
            )
        location = entry.get("Location")
        provider = entry.get("Provider", "").lower()
        if location is None or provider not in (SOURCE_NAME, "delta"):
            raise InvalidArgumentError(
                f"{name} in Spark's catalog is not a Delta table with a location "
                f"(type {entry.get('Type')}, provider {provider or 'none'})"
            )
        if self._location is not None and not _same_location(self._location, location):
            raise InvalidArgumentError(
                f"{name} is at {location} in Spark's catalog, not at {self._location}"
            )
        if self._mode != "createIfNotExists":
            self._create_at(location, _holds_table(location))
        return location

    def _checked_columns(self) -> list[StructField]:
        for column in self._columns:
            _refuse_char_varchar(column.name, column.dataType)
        return list(self._columns)

    def _partition_columns(self) -> list[str]:
        """The partition columns spelled as the schema spells them (Spark resolves names
        case-insensitively)."""
        by_lower = {column.name.lower(): column.name for column in self._columns}
        return [by_lower.get(name.lower(), name) for name in self._partitioning]

    def _configuration(self) -> dict[str, str] | None:
        configuration = {
            "delta." + key[len(_DEFAULTS_PREFIX) :]: value
            for key, value in self._spark.conf.getAll.items()
            if key.startswith(_DEFAULTS_PREFIX) and value is not None
        }
        given = {key.lower() for key in self._properties}
        configuration = {k: v for k, v in configuration.items() if k.lower() not in given}
        configuration.update(self._properties)
        return configuration or None


def convert_to_delta(
    spark: SparkSession,
    identifier: str,
    partitionSchema: str | StructType | None,
    opener: Callable[[SparkSession, str], T],
) -> T:
    """delta-spark's ``DeltaTable.convertToDelta``: the Parquet directory ``identifier``
    names (``parquet.`<path>```) turned into a Delta table in place by
    :func:`deltalog.convert_to_delta` (version 0, operation ``CONVERT``, statistics
    collected), then opened. ``partitionSchema``: its partition columns and types, DDL text
    (``"day DATE, region STRING"``) or a ``StructType``. ``delta.`<path>``` opens the Delta
    table there. A catalog table name raises :class:`UnsupportedFeatureError`: Spark's
    catalog would keep calling it a Parquet table."""
    if type(identifier) is not str:
        _type_error("Identifier must be str.", [identifier])
    match = _PATH_IDENTIFIER.fullmatch(identifier)
    if match is None:
        raise UnsupportedFeatureError(
            f"convertToDelta takes a path identifier, parquet.`<path>`; {identifier!r} is "
            "not one (a Parquet table of Spark's catalog: convert its location, "
            "parquet.`<location>`, and register it anew)"
        )
    provider, path = match.group(1).lower(), match.group(2).replace("``", "`")
    if provider == "delta":
        return opener(spark, path)
    if provider != "parquet":
        raise UnsupportedFeatureError(
            f"convertToDelta converts Parquet tables (parquet.`<path>`), not {provider}"
        )
    partition_by = None
    if partitionSchema is not None:
        schema = _data_type(partitionSchema)
        if not isinstance(schema, StructType):
            _type_error("partitionSchema must be DDL text of columns or a StructType.", [schema])
        partition_by = schema.json()
    core_convert_to_delta(path, partition_by)
    return opener(spark, path)


def _data_type(value: str | DataType) -> DataType:
    """A Spark type from DDL text (Spark's parser) or as given."""
    if isinstance(value, DataType):
        return value
    if type(value) is not str:
        _type_error("Data type must be str or DataType.", [value])
    try:
        return DataType.fromDDL(value)
    except Exception as error:  # pyspark's parse errors differ by version and mode
        raise InvalidArgumentError(f"cannot parse data type {value!r}: {error}") from error


def _refuse_char_varchar(name: str, data_type: DataType) -> None:
    """Raises :class:`UnsupportedFeatureError` for CHAR/VARCHAR anywhere in ``data_type``:
    Delta on Spark stores them as strings whose length its writers check, which deltalog's
    writers do not."""
    if isinstance(data_type, (CharType, VarcharType)):
        raise UnsupportedFeatureError(
            f"column {name}: {data_type.simpleString()} is not supported (deltalog's writers "
            "do not check CHAR/VARCHAR lengths); use STRING"
        )
    if isinstance(data_type, StructType):
        for field in data_type.fields:
            _refuse_char_varchar(f"{name}.{field.name}", field.dataType)
    elif isinstance(data_type, ArrayType):
        _refuse_char_varchar(name, data_type.elementType)
    elif isinstance(data_type, MapType):
        _refuse_char_varchar(name, data_type.keyType)
        _refuse_char_varchar(name, data_type.valueType)


def _identity_value(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _type_error(f"Identity column {what} must be int.", [value])
    return value


def _names(cols: Sequence[str | list[str] | tuple[str, ...]], what: str) -> list[str]:
    """Column names given as arguments or as one list or tuple."""
    names: Sequence[object] = cols
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        names = cols[0]
    for name in names:
        if type(name) is not str:
            _type_error(f"{what} column must be str.", [name])
    return [str(name) for name in names]


def _type_error(message: str, values: Iterable[object]) -> NoReturn:
    """delta-spark's ``TypeError`` for an argument of the wrong type."""
    found = "".join(f" Found {value} with type {type(value)}" for value in values)
    raise TypeError(message + found)


def _path_of(identifier: str, provider: str) -> str | None:
    """The path of ``<provider>.`<path>```, or ``None`` when ``identifier`` is not one."""
    match = _PATH_IDENTIFIER.fullmatch(identifier)
    if match is None or match.group(1).lower() != provider:
        return None
    return match.group(2).replace("``", "`")


def _holds_table(location: str) -> bool:
    """Whether ``location`` holds a Delta table (a ``_delta_log`` with commits)."""
    try:
        CoreTable(location)
    except TableNotFoundError:
        return False
    return True


def _same_location(given: str, catalog: str) -> bool:
    """Whether a location given to the builder is the one Spark's catalog holds (which
    writes local paths as ``file:/...``)."""
    return _normal(given) == _normal(catalog)


def _normal(location: str) -> str:
    """``location`` as an absolute local path, or as given when it is a URI."""
    text = location
    for prefix in ("file://", "file:"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    if "://" not in text:
        text = str(Path(text).absolute())
    return text.rstrip("/")


def _catalog_entry(spark: SparkSession, name: str) -> dict[str, str] | None:
    """The rows of ``DESCRIBE TABLE EXTENDED name`` below ``# Detailed Table Information``
    (``Location``, ``Provider``, ``Type``, ...), or ``None`` when Spark's catalog does not
    hold ``name``; :class:`UnsupportedFeatureError` when it cannot look the name up."""
    try:
        exists = spark.catalog.tableExists(name)
    except Exception as error:  # Spark's analysis errors differ by version
        raise UnsupportedFeatureError(
            f"Spark's catalog cannot look up {name} ({error}): {_CATALOG_HINT}"
        ) from error
    if not exists:
        return None
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    entry: dict[str, str] = {}
    detailed = False
    for row in rows:
        key = str(row[0]).strip()
        if key.startswith("# Detailed"):
            detailed = True
        elif detailed and key:
            entry[key] = str(row[1]).strip()
    return entry


def _register(
    spark: SparkSession, name: str, schema: StructType | None, location: str | None
) -> None:
    """Registers ``name`` in Spark's session catalog as a ``deltalog`` table: with
    ``schema``'s columns (else those of the table at ``location``), external at
    ``location``, or managed (Spark picks the location, and ``DROP TABLE`` deletes it)
    without one. Raises :class:`UnsupportedFeatureError` when the catalog refuses it."""
    register(spark)
    columns = "" if schema is None else f" ({schema.toDDL()})"
    where = "" if location is None else f" LOCATION {_sql_string(_normal(location))}"
    try:
        spark.sql(f"CREATE TABLE {name}{columns} USING {SOURCE_NAME}{where}")
    except Exception as error:  # Spark's analysis errors differ by version
        raise UnsupportedFeatureError(
            f"Spark's session catalog cannot hold {name} as a {SOURCE_NAME} table "
            f"({str(error).splitlines()[0]}): {_CATALOG_HINT}"
        ) from error


def _check_same_columns(name: str, location: str, columns: list[StructField]) -> None:
    """Raises :class:`InvalidArgumentError` unless ``columns`` are the names and types of
    the table at ``location``."""
    existing = StructType.fromJson(json.loads(CoreTable(location).snapshot().schema.json()))
    ours = [(c.name.lower(), c.dataType.simpleString()) for c in columns]
    theirs = [(c.name.lower(), c.dataType.simpleString()) for c in existing.fields]
    if ours != theirs:
        raise InvalidArgumentError(
            f"{location} holds a Delta table whose columns differ from those given for "
            f"{name}: give its columns, none, or use createOrReplace"
        )


def _sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
