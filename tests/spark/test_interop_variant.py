"""deltalog reads the shredded variants Delta on Spark writes (``variantShredding-preview``).

Spark shreds variant columns when ``spark.sql.variant.writeShredding.enabled`` is on and the
table has ``delta.enableVariantShredding``; ``spark.sql.variant.forceShreddingSchemaForTest``
picks the shredding schema. Each test checks that the data files really hold ``typed_value``
columns, then compares every row: deltalog's variant (its ``metadata`` and ``value`` binaries,
handed to Spark as a ``VariantVal``) under Spark's ``to_json`` against Spark's ``to_json`` of
the column it read itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import deltalog

pq = pytest.importorskip("pyarrow.parquet")

SHRED_WRITE = "spark.sql.variant.writeShredding.enabled"
SHRED_SCHEMA = "spark.sql.variant.forceShreddingSchemaForTest"
SHREDDING = "'delta.enableVariantShredding' = 'true'"

#: Values of every shape, as JSON text (``None``: a SQL NULL).
SHAPES: list[str | None] = [
    None,
    "null",
    "42",
    "-7.25",
    "1.5e10",
    '"text"',
    "true",
    "{}",
    "[]",
    '{"a": 1, "b": "x"}',
    '{"a": 2, "b": "y", "z": true}',
    '{"a": "not an int", "b": "w"}',
    '{"b": "only b"}',
    '{"a": null, "b": null}',
    '{"a": 3, "c": {"e": 4, "f": 5}}',
    '{"c": {"e": "four"}, "arr": [1, 2, 3]}',
    '{"arr": [1, "two", null, {"k": [true]}]}',
    '{"arr": "not a list", "deep": {"x": {"y": [1, {"z": null}]}}}',
    '[1, "two", true, null, {"a": 1}]',
    '"' + "long string " * 10 + '"',
]


@contextmanager
def spark_confs(spark: Any, confs: Mapping[str, str]) -> Iterator[None]:
    """Sets Spark session confs for the block, then unsets them."""
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in confs:
            spark.conf.unset(key)


def shredding(schema: str) -> dict[str, str]:
    return {SHRED_WRITE: "true", SHRED_SCHEMA: schema}


def insert_json(spark: Any, path: Path, rows: Sequence[str | None], first_id: int = 0) -> None:
    """One data file of ``(id, v)`` rows, ``v`` parsed from each JSON text."""
    values = ", ".join(
        f"({first_id + i}, {'NULL' if j is None else repr(j)})" for i, j in enumerate(rows)
    )
    spark.sql(
        f"INSERT INTO delta.`{path}` SELECT /*+ COALESCE(1) */ id, parse_json(j) "
        f"FROM VALUES {values} AS t(id, j)"
    )


def create(spark: Any, path: Path, columns: str = "id INT, v VARIANT") -> None:
    spark.sql(f"CREATE TABLE delta.`{path}` ({columns}) USING delta TBLPROPERTIES ({SHREDDING})")


def shredded_files(path: Path, column: str = "v") -> list[str]:
    """The table's data files whose Parquet footer has a ``typed_value`` under ``column``."""
    found = []
    for file in sorted(path.glob("*.parquet")):
        leaves = [leaf.path for leaf in pq.ParquetFile(file).schema]
        if any(
            leaf.startswith(f"{column}.typed_value.") or leaf == f"{column}.typed_value"
            for leaf in leaves
        ):
            found.append(file.name)
    return found


def as_variant(variant: Mapping[str, bytes] | None) -> Any:
    """A variant read by deltalog as pyspark's ``VariantVal`` (``None`` for a SQL NULL)."""
    from pyspark.sql.types import VariantVal

    return None if variant is None else VariantVal(variant["value"], variant["metadata"])


def as_json(spark: Any, variants: Mapping[Any, Any]) -> dict[Any, str | None]:
    """Spark's ``to_json`` of each of ``variants`` (``VariantVal`` values by key): the bytes
    deltalog returned, decoded by Spark itself."""
    from pyspark.sql.types import StringType, StructField, StructType, VariantType

    schema = StructType([StructField("k", StringType()), StructField("v", VariantType())])
    keys = {str(key): key for key in variants}
    frame = spark.createDataFrame([(str(k), v) for k, v in variants.items()], schema)
    rows = frame.selectExpr("k", "to_json(v) AS v").collect()
    return {keys[row["k"]]: row["v"] for row in rows}


def deltalog_rows(spark: Any, path: Path) -> dict[int, str | None]:
    table = deltalog.read_table(str(path))
    return as_json(spark, {row["id"]: as_variant(row["v"]) for row in table.to_pylist()})


def spark_rows(spark: Any, path: Path) -> dict[int, str | None]:
    rows = spark.sql(f"SELECT id, to_json(v) AS v FROM delta.`{path}`").collect()
    return {row["id"]: row["v"] for row in rows}


def assert_reads_as_spark(spark: Any, path: Path) -> None:
    expected = spark_rows(spark, path)
    assert deltalog_rows(spark, path) == expected
    assert len(expected) > 0


def test_protocol_lists_the_feature(spark: Any, tmp_path: Path) -> None:
    """A table Spark creates with ``delta.enableVariantShredding`` needs the reader feature,
    and deltalog opens it."""
    path = tmp_path / "t"
    create(spark, path)
    protocol = deltalog.DeltaTable(str(path)).protocol()
    assert "variantShredding-preview" in (protocol.reader_features or [])


def test_partially_shredded_objects(spark: Any, tmp_path: Path) -> None:
    """Objects shredded as ``a int, b string, c struct<e int>, arr array<int>``: typed fields,
    fields in the residual ``value``, values that are not objects, nested objects and arrays,
    JSON null and SQL NULL."""
    path = tmp_path / "objects"
    create(spark, path)
    with spark_confs(spark, shredding("a int, b string, c struct<e: int>, arr array<int>")):
        insert_json(spark, path, SHAPES)
    assert shredded_files(path)
    assert_reads_as_spark(spark, path)


def test_shredded_arrays(spark: Any, tmp_path: Path) -> None:
    """Top-level arrays shredded as ``array<int>``: typed and untyped elements, nulls, empty
    arrays, arrays of objects, and values that are not arrays."""
    path = tmp_path / "arrays"
    create(spark, path)
    arrays: list[str | None] = [
        "[1, 2, 3]",
        '[1, "x", 3]',
        "[null, 2]",
        '[[1, 2], {"a": [3]}]',
        "[" + ", ".join(str(i) for i in range(300)) + "]",
    ]
    with spark_confs(spark, shredding("array<int>")):
        insert_json(spark, path, [*SHAPES, *arrays])
    assert shredded_files(path)
    assert_reads_as_spark(spark, path)


def test_shredded_scalars(spark: Any, tmp_path: Path) -> None:
    """Top-level values shredded as ``bigint``, ``string`` and ``decimal(18, 4)``, every other
    shape in ``value``."""
    for schema in ("bigint", "string", "decimal(18, 4)"):
        path = tmp_path / schema.replace(" ", "").replace(",", "_")
        create(spark, path)
        with spark_confs(spark, shredding(schema)):
            insert_json(spark, path, [*SHAPES, "5000000000", "12.5"])
        assert shredded_files(path), schema
        assert_reads_as_spark(spark, path)


def test_every_typed_field_type(spark: Any, tmp_path: Path) -> None:
    """One shredded field per type the spec allows Spark to write: integers of every width,
    float, double, decimals of each width, string, binary, boolean, date, timestamp and
    timestamp_ntz; a row whose fields all mismatch their types; an empty object; NULL."""
    path = tmp_path / "typed"
    create(spark, path)
    schema = (
        "i8 tinyint, i16 smallint, i32 int, i64 bigint, f float, d double, dec4 decimal(4, 2), "
        "dec9 decimal(9, 3), dec18 decimal(18, 4), dec38 decimal(38, 10), s string, "
        "bin binary, b boolean, dt date, ts timestamp, tsn timestamp_ntz"
    )
    typed = """to_variant_object(named_struct(
        'i8', CAST(1 AS TINYINT), 'i16', CAST(300 AS SMALLINT), 'i32', 70000,
        'i64', 5000000000L, 'f', CAST(1.5 AS FLOAT), 'd', CAST(2.25 AS DOUBLE),
        'dec4', CAST(12.34 AS DECIMAL(4, 2)), 'dec9', CAST(123456.789 AS DECIMAL(9, 3)),
        'dec18', CAST(12345678901234.5678 AS DECIMAL(18, 4)),
        'dec38', CAST(-1234567890123456789012345.0123456789 AS DECIMAL(38, 10)),
        's', 'str', 'bin', X'CAFE', 'b', true, 'dt', DATE'2024-01-15',
        'ts', TIMESTAMP'2024-01-15 10:30:00', 'tsn', TIMESTAMP_NTZ'2024-01-15 10:30:00'))"""
    mismatched = (
        '{"i8": "x", "i16": 1.5, "i32": [1], "i64": {"a": 1}, "f": "x", "d": "x", '
        '"dec4": 123.456, "dec9": "x", "dec18": "x", "dec38": true, "s": 1, "bin": 1, '
        '"b": 1, "dt": "2024-01-15", "ts": 1, "tsn": 1, "extra": "kept"}'
    )
    with spark_confs(spark, shredding(schema)):
        spark.sql(
            f"""INSERT INTO delta.`{path}` SELECT /*+ COALESCE(1) */ * FROM VALUES
            (1, {typed}), (2, parse_json('{mismatched}')), (3, parse_json('{{}}')),
            (4, NULL), (5, parse_json('[1]')) AS t(id, v)"""
        )
    assert shredded_files(path)
    assert_reads_as_spark(spark, path)


def test_files_with_different_shredding_schemas(spark: Any, tmp_path: Path) -> None:
    """One table, three files: ``a`` shredded as int, as string, and not shredded at all."""
    path = tmp_path / "mixed"
    create(spark, path)
    rows: list[str | None] = ['{"a": 1}', '{"a": "s", "b": [1]}', "3", None]
    with spark_confs(spark, shredding("a int")):
        insert_json(spark, path, rows, first_id=0)
    with spark_confs(spark, shredding("a string")):
        insert_json(spark, path, rows, first_id=10)
    with spark_confs(spark, {SHRED_WRITE: "false"}):
        insert_json(spark, path, rows, first_id=20)
    assert len(shredded_files(path)) == 2
    assert len(list(path.glob("*.parquet"))) == 3
    assert_reads_as_spark(spark, path)


def test_variants_nested_in_structs_and_arrays(spark: Any, tmp_path: Path) -> None:
    """Variant columns inside a struct (shredded) and an array (which Spark leaves unshredded)
    read as Spark reads them."""
    path = tmp_path / "nested"
    create(spark, path, "id INT, v VARIANT, n STRUCT<x: VARIANT, arr: ARRAY<VARIANT>>")
    values = ", ".join(f"({i}, {'NULL' if j is None else repr(j)})" for i, j in enumerate(SHAPES))
    with spark_confs(spark, shredding("a int, b string")):
        spark.sql(
            f"""INSERT INTO delta.`{path}` SELECT /*+ COALESCE(1) */ id, parse_json(j),
            named_struct('x', parse_json(j), 'arr', array(parse_json(j), parse_json('[1]')))
            FROM VALUES {values} AS t(id, j)"""
        )
    assert shredded_files(path)
    assert shredded_files(path, "n.x")  # Spark shreds a struct's variant too
    expected = {
        row["id"]: (row["x"], row["arr"])
        for row in spark.sql(
            f"SELECT id, to_json(n.x) AS x, transform(n.arr, e -> to_json(e)) AS arr "
            f"FROM delta.`{path}`"
        ).collect()
    }
    variants = {}
    for row in deltalog.read_table(str(path)).to_pylist():
        variants[(row["id"], -1)] = as_variant(row["n"]["x"])
        for index, element in enumerate(row["n"]["arr"]):
            variants[(row["id"], index)] = as_variant(element)
    decoded = as_json(spark, variants)
    read = {
        id: (decoded[(id, -1)], [decoded[(id, index)] for index in range(len(arr))])
        for id, (_, arr) in expected.items()
    }
    assert read == expected
    assert_reads_as_spark(spark, path)


def test_the_general_availability_name_reads(spark: Any, tmp_path: Path) -> None:
    """A table whose protocol names the feature ``variantShredding`` (its GA name, which Delta
    on Spark 4.4 writes for ``delta.feature.variantShredding``) opens and reads as Spark
    reads it."""
    path = tmp_path / "ga"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, v VARIANT) USING delta TBLPROPERTIES "
        f"({SHREDDING}, 'delta.feature.variantShredding' = 'supported')"
    )
    with spark_confs(spark, shredding("a int, b string, c struct<e: int>, arr array<int>")):
        insert_json(spark, path, SHAPES)
    protocol = deltalog.DeltaTable(str(path)).protocol()
    assert "variantShredding" in (protocol.reader_features or [])
    assert "variantShredding-preview" not in (protocol.reader_features or [])
    assert shredded_files(path)
    assert_reads_as_spark(spark, path)
