"""``deltalog.spark.DeltaTable``'s table builders and ``convertToDelta`` against delta-spark's
``delta.tables.DeltaTable`` as the oracle: the same table built both ways at twin paths must
have the same protocol, schema (types, nullability, comments, generation expressions,
identity), partitioning, clustering and properties; Spark must read and extend ours and we
must read theirs; the four create modes must refuse and accept the same cases; and a Parquet
directory converted both ways must hold the same rows, partitioning and files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.exceptions import (
    InvalidArgumentError,
    OperationNotAllowedError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.spark import DeltaTable, DeltaTableBuilder, IdentityGenerator

from .test_interop_read import assert_same_rows
from .test_interop_write import spark_rows

#: Column metadata that differs between two creations of the same table by design.
_RANDOM_METADATA = ("delta.columnMapping.physicalName",)
#: The writer features each legacy writer version implies (spec "Table Features").
_LEGACY_WRITER = {
    2: {"appendOnly", "invariants"},
    3: {"checkConstraints"},
    4: {"changeDataFeed", "generatedColumns"},
    5: {"columnMapping"},
    6: {"identityColumns"},
}


def supported_features(protocol: Any) -> tuple[set[str], set[str]]:
    """The (reader, writer) features a protocol supports, legacy versions expanded."""
    if protocol.min_writer_version >= 7:
        writer = set(protocol.writer_features or ())
    else:
        writer = set().union(
            *(v for k, v in _LEGACY_WRITER.items() if k <= protocol.min_writer_version)
        )
    if protocol.min_reader_version >= 3:
        reader = set(protocol.reader_features or ())
    else:
        reader = {"columnMapping"} if protocol.min_reader_version == 2 else set()
    return reader, writer


def assert_protocol_covers(mine: Path, theirs: Path) -> None:
    """Our table's protocol supports every reader feature theirs does and no other, and
    every writer feature theirs does beyond (1, 2)'s. Delta on Spark 4.x writes writer
    version 7 as soon as a table needs more than (1, 2), listing (1, 2)'s features too;
    deltalog writes the least protocol that covers the table (legacy versions when they
    do, such as (1, 4) for generated columns)."""
    our_reader, our_writer = supported_features(deltalog.DeltaTable(mine).snapshot().protocol)
    reader, writer = supported_features(deltalog.DeltaTable(theirs).snapshot().protocol)
    assert our_reader == reader
    assert writer - _LEGACY_WRITER[2] <= our_writer


def head(path: Path) -> dict[str, Any]:
    """What a table's newest version says about its shape, comparable across writers (the
    protocol: :func:`assert_protocol_covers`)."""
    snapshot = deltalog.DeltaTable(path).snapshot()
    metadata = snapshot.metadata
    return {
        "schema": comparable_schema(json.loads(snapshot.schema.json())),
        "partition_columns": list(metadata.partition_columns),
        "configuration": dict(metadata.configuration),
        "description": metadata.description,
        "clustering": logical_clustering(snapshot),
    }


def logical_clustering(snapshot: Any) -> list[list[str]] | None:
    """The clustering columns, physical names (column mapping) turned into logical ones."""
    configuration = snapshot.domain_metadata("delta.clustering")
    if configuration is None:
        return None
    names: dict[str, str] = {}
    pending = list(json.loads(snapshot.schema.json())["fields"])
    while pending:
        field = pending.pop()
        physical = field.get("metadata", {}).get("delta.columnMapping.physicalName")
        names[physical or field["name"]] = field["name"]
        if isinstance(field["type"], dict) and field["type"].get("type") == "struct":
            pending.extend(field["type"]["fields"])
    columns = json.loads(configuration)["clusteringColumns"]
    return [[names.get(part, part) for part in column] for column in columns]


def comparable_schema(schema: Any) -> Any:
    """``schema`` without the metadata two creations of one table draw differently."""
    if isinstance(schema, dict):
        return {
            key: (
                {k: v for k, v in value.items() if k not in _RANDOM_METADATA}
                if key == "metadata"
                else comparable_schema(value)
            )
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [comparable_schema(item) for item in schema]
    return schema


def twins(spark: Any, tmp_path: Path, build: Callable[[Any, str], Any]) -> tuple[Path, Path]:
    """The table ``build(DeltaTable class, location)`` makes, made by delta-spark at
    ``theirs`` and by deltalog at ``mine``; returns (theirs, mine)."""
    from delta.tables import DeltaTable as SparkDeltaTable

    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    build(SparkDeltaTable, str(theirs))
    table = build(DeltaTable, str(mine))
    assert isinstance(table, DeltaTable)
    return theirs, mine


def partitioned(cls: Any, location: str) -> Any:
    return (
        cls.create()
        .location(location)
        .addColumn("id", "BIGINT", nullable=False, comment="the key")
        .addColumn("day", "DATE")
        .addColumn("s", "STRING")
        .partitionedBy("day")
        .property("delta.enableDeletionVectors", "true")
        .property("team", "core")
        .comment("events by day")
        .execute()
    )


def generated(cls: Any, location: str) -> Any:
    from pyspark.sql.types import IntegerType, TimestampType

    return (
        cls.createIfNotExists()
        .location(location)
        .addColumn("ts", TimestampType())
        .addColumn("d", "DATE", generatedAlwaysAs="CAST(ts AS DATE)")
        .addColumn("x", IntegerType(), nullable=False)
        .addColumn("y", "INT", generatedAlwaysAs="x + 1", comment="x plus one")
        .partitionedBy(["d"])
        .execute()
    )


def identity(cls: Any, location: str) -> Any:
    from delta.tables import IdentityGenerator as SparkIdentityGenerator

    generator = IdentityGenerator if cls is DeltaTable else SparkIdentityGenerator
    return (
        cls.createOrReplace()
        .location(location)
        .addColumn("id", "BIGINT", generatedAlwaysAs=generator(start=10, step=5))
        .addColumn("n", "BIGINT", generatedByDefaultAs=generator())
        .addColumn("s", "STRING")
        .execute()
    )


def clustered(cls: Any, location: str) -> Any:
    from pyspark.sql.types import (
        ArrayType,
        DecimalType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    nested = StructType(
        [
            StructField("a", LongType(), False),
            StructField("b", StringType(), True, {"comment": "inner"}),
        ]
    )
    return (
        cls.create()
        .tableName(f"delta.`{location}`")
        .location(location)  # delta-spark's execute() needs it to open the table
        .addColumns(
            StructType(
                [
                    StructField("id", LongType(), False),
                    StructField("amount", DecimalType(12, 2)),
                    StructField("st", nested),
                ]
            )
        )
        .addColumns(
            [
                StructField("tags", ArrayType(StringType(), False)),
                StructField("attrs", MapType(StringType(), LongType(), True)),
            ]
        )
        .clusterBy("id", "amount")
        .property("delta.columnMapping.mode", "name")
        .property("delta.enableChangeDataFeed", "true")
        .execute()
    )


#: (name, build, rows appended by Spark: the columns a write gives)
SHAPES: list[tuple[str, Callable[[Any, str], Any], str]] = [
    (
        "partitioned",
        partitioned,
        "SELECT * FROM VALUES (1L, DATE'2024-01-01', 'a'), (2L, DATE'2024-01-02', NULL) "
        "AS t(id, day, s)",
    ),
    (
        "generated",
        generated,
        "SELECT * FROM VALUES (TIMESTAMP'2024-05-01 10:00:00', 1), "
        "(TIMESTAMP'2024-05-02 23:59:59', 2) AS t(ts, x)",
    ),
    ("identity", identity, "SELECT * FROM VALUES ('a'), ('b'), ('c') AS t(s)"),
    (
        "clustered",
        clustered,
        "SELECT 1L AS id, 2.50BD AS amount, named_struct('a', 3L, 'b', 'x') AS st, "
        "array('t') AS tags, map('k', 4L) AS attrs",
    ),
]


@pytest.mark.parametrize(("name", "build", "rows"), SHAPES, ids=[s[0] for s in SHAPES])
def test_builders_make_the_table_delta_spark_makes(
    spark: Any,
    tmp_path: Path,
    name: str,
    build: Callable[[Any, str], Any],
    rows: str,
) -> None:
    theirs, mine = twins(spark, tmp_path, build)
    assert head(mine) == head(theirs), name
    assert_protocol_covers(mine, theirs)
    # Spark (format "delta") appends to ours and reads it; we read theirs after the same
    # append.
    for path in (mine, theirs):
        columns = spark.sql(rows).columns
        spark.sql(f"INSERT INTO delta.`{path}` ({', '.join(f'`{c}`' for c in columns)}) {rows}")
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), name)
    theirs_by_us = DeltaTable.forPath(spark, str(theirs)).toDF().toArrow()
    assert_same_rows(theirs_by_us, spark_rows(spark, theirs), f"{name}: theirs read by deltalog")


def test_the_four_modes_refuse_and_accept_as_delta_spark_does(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable
    from pyspark.errors import AnalysisException

    def builder(cls: Any, mode: str, location: Path, column: str) -> Any:
        return getattr(cls, mode)(spark).location(str(location)).addColumn(column, "INT")

    for cls, path, error in (
        (SparkDeltaTable, tmp_path / "theirs", AnalysisException),
        (DeltaTable, tmp_path / "mine", TableNotFoundError),
    ):
        with pytest.raises(error):
            builder(cls, "replace", path, "a").execute()
        builder(cls, "createOrReplace", path, "a").execute()  # creates: version 0
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1), (2)")  # version 1
        with pytest.raises(OperationNotAllowedError if cls is DeltaTable else AnalysisException):
            builder(cls, "create", path, "b").execute()
        builder(cls, "createIfNotExists", path, "b").execute()  # leaves it
        assert spark.read.format("delta").load(str(path)).columns == ["a"]
        builder(cls, "replace", path, "b").execute()  # version 2: no rows, column b
        assert spark.read.format("delta").load(str(path)).columns == ["b"]
        assert spark.read.format("delta").load(str(path)).count() == 0
    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    assert head(mine) == head(theirs)
    assert_protocol_covers(mine, theirs)
    assert deltalog.DeltaTable(theirs).latest_version() == 2
    # delta-spark's createOrReplace().location(...) of an existing path-based table only
    # checks that the schema is the same (DELTA_CREATE_TABLE_SCHEME_MISMATCH otherwise) and
    # commits nothing; deltalog's replaces it, as CREATE OR REPLACE TABLE does.
    DeltaTable.createOrReplace(spark).location(str(mine)).addColumn("c", "INT").execute()
    assert spark.read.format("delta").load(str(mine)).columns == ["c"]
    versions = [row["version"] for row in DeltaTable.forPath(spark, str(mine)).history().collect()]
    assert versions == [3, 2, 1, 0]


def test_session_property_defaults_apply_as_in_delta_spark(spark: Any, tmp_path: Path) -> None:
    key = "spark.databricks.delta.properties.defaults.enableChangeDataFeed"
    spark.conf.set(key, "true")
    try:
        theirs, mine = twins(
            spark,
            tmp_path,
            lambda cls, location: (
                cls.create(spark).location(location).addColumn("id", "BIGINT").execute()
            ),
        )
    finally:
        spark.conf.unset(key)
    assert head(mine) == head(theirs)
    assert_protocol_covers(mine, theirs)
    assert head(mine)["configuration"]["delta.enableChangeDataFeed"] == "true"


def test_table_names_are_registered_in_spark_s_catalog(spark: Any, tmp_path: Path) -> None:
    external = tmp_path / "external"
    table = (
        DeltaTable.create(spark)
        .tableName("builder_external")
        .location(str(external))
        .addColumn("id", "BIGINT")
        .addColumn("s", "STRING")
        .execute()
    )
    managed = DeltaTable.createIfNotExists(spark).tableName("builder_managed")
    managed.addColumn("id", "BIGINT", comment="key").partitionedBy("id").execute()
    try:
        spark.sql(f"INSERT INTO delta.`{external}` VALUES (1, 'a')")
        assert DeltaTable.forName(spark, "builder_external").toDF().count() == 1
        assert table.toDF().count() == 1
        with pytest.raises(OperationNotAllowedError, match="already exists"):
            DeltaTable.create(spark).tableName("builder_external").addColumn("x", "INT").execute()
        same = DeltaTable.createIfNotExists(spark).tableName("builder_external")
        assert same.addColumn("x", "INT").execute().toDF().count() == 1
        DeltaTable.replace(spark).tableName("builder_external").addColumn("x", "INT").execute()
        assert spark.read.format("delta").load(str(external)).columns == ["x"]
        with pytest.raises(TableNotFoundError, match="createOrReplace"):
            DeltaTable.replace(spark).tableName("builder_missing").addColumn("x", "INT").execute()
        managed_path = spark.sql("DESCRIBE DETAIL builder_managed").collect()
        location = DeltaTable.forName(spark, "builder_managed").detail().collect()[0]["location"]
        assert managed_path  # Spark's catalog gave the table a location in the warehouse
        assert head_of(location)["partition_columns"] == ["id"]
    finally:
        spark.sql("DROP TABLE IF EXISTS builder_external")
        spark.sql("DROP TABLE IF EXISTS builder_managed")
    assert deltalog.DeltaTable(external).latest_version() == 2  # external: the data stays
    with pytest.raises(TableNotFoundError):
        deltalog.DeltaTable(location)  # managed: DROP TABLE deleted it


def head_of(location: str) -> dict[str, Any]:
    return head(Path(location.removeprefix("file:")))


def test_names_spark_s_catalog_cannot_hold_raise_a_clear_error(spark: Any, tmp_path: Path) -> None:
    builder = DeltaTable.create(spark).tableName("no_such_catalog.db.t")
    with pytest.raises(UnsupportedFeatureError, match="forPath"):
        builder.location(str(tmp_path / "t")).addColumn("id", "BIGINT").execute()
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path / "t"))


def test_column_builder_builds_delta_spark_s_fields(spark: Any) -> None:
    from pyspark.sql.types import LongType

    field = (
        DeltaTable.columnBuilder(spark, "id")
        .dataType(LongType())
        .nullable(False)
        .generatedByDefaultAsIdentity(start=5, step=-1)
        .comment("key")
        .build()
    )
    assert (field.name, field.dataType, field.nullable) == ("id", LongType(), False)
    assert field.metadata == {
        "delta.identity.allowExplicitInsert": True,
        "delta.identity.start": 5,
        "delta.identity.step": -1,
        "comment": "key",
    }
    generated_field = DeltaTable.columnBuilder(spark, "d").dataType("DATE")
    assert generated_field.generatedAlwaysAs("CAST(ts AS DATE)").build().metadata == {
        "delta.generationExpression": "CAST(ts AS DATE)"
    }
    for column, message in (
        (DeltaTable.columnBuilder(spark, "x"), "data type"),
        (
            DeltaTable.columnBuilder(spark, "x").dataType("INT").generatedAlwaysAsIdentity(),
            "BIGINT",
        ),
        (
            DeltaTable.columnBuilder(spark, "x").dataType("BIGINT").generatedAlwaysAsIdentity(1, 0),
            "step",
        ),
        (
            DeltaTable.columnBuilder(spark, "x")
            .dataType("BIGINT")
            .generatedAlwaysAs("1")
            .generatedAlwaysAsIdentity(),
            "generated column",
        ),
    ):
        with pytest.raises(InvalidArgumentError, match=message):
            column.build()


def test_builder_arguments_are_checked(spark: Any, tmp_path: Path) -> None:
    builder: DeltaTableBuilder[DeltaTable] = DeltaTable.create(spark)
    with pytest.raises(TypeError, match="Column name must be str"):
        builder.addColumn(1, "INT")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Partitioning column must be str"):
        builder.partitionedBy("a", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot both be set"):
        builder.addColumn(
            "id",
            "BIGINT",
            generatedAlwaysAs=IdentityGenerator(),
            generatedByDefaultAs=IdentityGenerator(),
        )
    with pytest.raises(InvalidArgumentError, match="Table name or location"):
        DeltaTable.create(spark).addColumn("id", "BIGINT").execute()
    with pytest.raises(InvalidArgumentError, match="different location"):
        DeltaTable.create(spark).tableName(f"delta.`{tmp_path / 'a'}`").location(
            str(tmp_path / "b")
        ).addColumn("id", "BIGINT").execute()
    with pytest.raises(UnsupportedFeatureError, match="CHAR/VARCHAR"):
        DeltaTable.create(spark).location(str(tmp_path / "c")).addColumn(
            "s", "ARRAY<VARCHAR(3)>"
        ).execute()
    with pytest.raises(InvalidArgumentError, match="partitioned"):
        DeltaTable.create(spark).location(str(tmp_path / "d")).addColumn(
            "id", "BIGINT"
        ).partitionedBy("id").clusterBy("id").execute()
    assert not any(DeltaTable.isDeltaTable(spark, str(tmp_path / n)) for n in "abcd")


@pytest.fixture(scope="module")
def parquet_twins(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A Parquet directory partitioned by ``p`` (int) and ``q`` (string), written by
    Spark in several files, copied: (theirs, mine)."""
    root = tmp_path_factory.mktemp("convert")
    frame = spark.sql(
        "SELECT id, CAST(id % 3 AS INT) AS p, IF(id % 2 = 0, 'even', 'odd') AS q, "
        "concat('s', id) AS s FROM range(40)"
    ).repartition(2)
    frame.write.partitionBy("p", "q").parquet(str(root / "theirs"))
    shutil.copytree(root / "theirs", root / "mine")
    return root / "theirs", root / "mine"


def test_convert_to_delta_matches_delta_spark(
    spark: Any, tmp_path: Path, parquet_twins: tuple[Path, Path]
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    shutil.copytree(parquet_twins[0], theirs)
    shutil.copytree(parquet_twins[1], mine)
    ddl = "p INT, q STRING"
    struct = StructType([StructField("p", IntegerType()), StructField("q", StringType())])
    SparkDeltaTable.convertToDelta(spark, f"parquet.`{theirs}`", ddl)
    table = DeltaTable.convertToDelta(spark, f"parquet.`{mine}`", struct)
    assert_same_rows(table.toDF().toArrow(), spark_rows(spark, theirs), "deltalog's read")
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "Spark's read")
    assert_same_rows(
        spark_rows(spark, mine, where="p = 1 AND q = 'odd'"),
        spark_rows(spark, theirs, where="p = 1 AND q = 'odd'"),
        "a partition",
    )
    ours_head, their_head = head(mine), head(theirs)
    assert ours_head["partition_columns"] == their_head["partition_columns"] == ["p", "q"]
    assert ours_head["schema"] == their_head["schema"]
    snapshot, spark_snapshot = (
        deltalog.DeltaTable(mine).snapshot(),
        deltalog.DeltaTable(theirs).snapshot(),
    )
    assert snapshot.num_files == spark_snapshot.num_files > 1
    operation = table.history().collect()[0]["operation"]
    assert (
        operation == SparkDeltaTable.forPath(spark, str(theirs)).history().collect()[0]["operation"]
    )
    # Converting a Delta table opens it as it is.
    again = DeltaTable.convertToDelta(spark, f"delta.`{mine}`")
    assert again.toDF().count() == 40
    assert deltalog.DeltaTable(mine).latest_version() == 0


def test_convert_to_delta_refuses_what_it_cannot_convert(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match="parquet"):
        DeltaTable.convertToDelta(spark, "some_catalog_table")
    with pytest.raises(UnsupportedFeatureError, match="Parquet"):
        DeltaTable.convertToDelta(spark, f"iceberg.`{tmp_path}`")
