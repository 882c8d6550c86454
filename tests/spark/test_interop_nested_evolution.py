"""Evolution inside arrays and maps against Delta on Spark as the oracle: type widening of an
array element, a map key or value and a struct field inside them (``ALTER TABLE CHANGE COLUMN
arr.element TYPE ...``), and a MERGE with schema evolution whose source holds structs in arrays
and maps with more or fewer fields than the target's. Twins take the same change, one through
Spark and one through deltalog: the logged schemas (``delta.typeChanges`` with ``fieldPath``
included) and rows agree, Spark reads every version of ours, describes it and appends to it,
and we read and append to Spark's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_rows

OPERATION_NOT_ALLOWED = deltalog.OperationNotAllowedError
INVALID_ARGUMENT = deltalog.InvalidArgumentError

#: Column mapping metadata differs between twins (physical names are random).
MAPPING_KEYS = ("delta.columnMapping.id", "delta.columnMapping.physicalName")


def logged_schema(path: Path) -> Any:
    """The table's schema as logged, without column mapping's names and ids."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: strip(value)
                for key, value in node.items()
                if key not in MAPPING_KEYS and key != "delta.columnMapping.nested.ids"
            }
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    return strip(json.loads(deltalog.DeltaTable(path).snapshot().schema.json()))


def fields_of(path: Path) -> dict[str, Any]:
    return {field["name"]: field for field in logged_schema(path)["fields"]}


#: Spark's ALTER TABLE changes, ours as (column, type).
WIDENINGS = [
    ("arr.element", "BIGINT", "long"),
    ("m.key", "BIGINT", "long"),
    ("m.value", "INT", "integer"),
    ("sa.element.x", "BIGINT", "long"),
    ("ms.value.x", "DOUBLE", "double"),
    ("aa.element.element", "INT", "integer"),
    ("s.inner.element", "DECIMAL(20,0)", "decimal(20,0)"),
]

NESTED_DDL = (
    "id INT, arr ARRAY<INT>, m MAP<INT, SHORT>, sa ARRAY<STRUCT<x: INT, y: STRING>>, "
    "ms MAP<STRING, STRUCT<x: INT>>, aa ARRAY<ARRAY<SHORT>>, s STRUCT<inner: ARRAY<BIGINT>>"
)
NESTED_ROW = (
    "(1, array(1, 2), map(3, 4S), array(named_struct('x', 5, 'y', 'five')), "
    "map('k', named_struct('x', 6)), array(array(7S), NULL), named_struct('inner', array(8)))"
)
#: A row only the widened types hold.
WIDE_ROW = (
    f"(2, array({2**40}), map({2**41}, {2**20}), array(named_struct('x', {2**42}, 'y', 'big')), "
    f"map('w', named_struct('x', 0.5)), array(array({2**20})), "
    "named_struct('inner', array(12345678901234567890)))"
)


def nested_twins(spark: Any, tmp_path: Path, properties: str = "") -> tuple[Path, Path]:
    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    for path in (theirs, mine):
        spark.sql(
            f"CREATE TABLE delta.`{path}` ({NESTED_DDL}) USING delta "
            f"TBLPROPERTIES ('delta.enableTypeWidening' = 'true'{properties})"
        )
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {NESTED_ROW}")
    return theirs, mine


@pytest.mark.parametrize("mapping", [False, True], ids=["plain", "column-mapping"])
def test_widening_inside_arrays_and_maps_agrees_with_spark(
    spark: Any, tmp_path: Path, mapping: bool
) -> None:
    """Spark widens the array element, map key and value and struct fields inside them of
    one twin with ``ALTER TABLE CHANGE COLUMN``, deltalog the other with
    ``alter.change_column(..., type=...)``: both log the same schema, each widening in the
    ``delta.typeChanges`` of the nearest struct field with Spark's ``fieldPath``. Spark reads
    every version of ours (the old file's values cast), describes it and appends values only
    the wider types hold; we read Spark's twin, append the same, and each reads the other."""
    properties = ", 'delta.columnMapping.mode' = 'name'" if mapping else ""
    theirs, mine = nested_twins(spark, tmp_path, properties)
    table = deltalog.DeltaTable(mine)
    for column, spark_type, our_type in WIDENINGS:
        spark.sql(f"ALTER TABLE delta.`{theirs}` CHANGE COLUMN {column} TYPE {spark_type}")
        table.alter.change_column(column, type=our_type)
    assert logged_schema(mine) == logged_schema(theirs)
    fields = fields_of(mine)
    assert fields["arr"]["metadata"]["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long", "fieldPath": "element"}
    ]
    assert fields["m"]["metadata"]["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long", "fieldPath": "key"},
        {"fromType": "short", "toType": "integer", "fieldPath": "value"},
    ]
    x = fields["sa"]["type"]["elementType"]["fields"][0]
    assert x["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert fields["aa"]["metadata"]["delta.typeChanges"] == [
        {"fromType": "short", "toType": "integer", "fieldPath": "element.element"}
    ]
    inner = fields["s"]["type"]["fields"][0]
    assert inner["metadata"]["delta.typeChanges"] == [
        {"fromType": "long", "toType": "decimal(20,0)", "fieldPath": "element"}
    ]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{mine}`").collect()
    changes = [row for row in history if row["operation"] == "CHANGE COLUMN"]
    logged = sorted(json.loads(row["operationParameters"]["column"])["name"] for row in changes)
    assert logged == sorted(column for column, _, _ in WIDENINGS)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{mine}`").collect()[0]
    assert "typeWidening" in detail["tableFeatures"]
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (3, 7)
    assert detail["properties"]["delta.enableTypeWidening"] == "true"
    assert_spark_reads_every_version(spark, mine)
    assert_same_rows(ours(mine), spark_rows(spark, theirs), "after the widenings")

    spark.sql(f"INSERT INTO delta.`{mine}` VALUES {WIDE_ROW}")
    assert_same_rows(ours(mine), spark_rows(spark, mine), "after Spark appended to ours")
    wide = spark_rows(spark, mine).filter(pa.compute.equal(pa.compute.field("id"), 2))
    deltalog.write_table(theirs, wide)
    assert_same_rows(ours(theirs), spark_rows(spark, theirs), "after we appended to Spark's")
    assert_same_rows(ours(theirs), ours(mine), "twins after both appended")

    # Spark's refusals are ours: comments and moves of elements, narrowing, no widening.
    refusals: list[tuple[Any, type[Exception]]] = [
        (lambda: table.alter.change_column("arr.element", comment="c"), OPERATION_NOT_ALLOWED),
        (lambda: table.alter.change_column("arr.element", first=True), INVALID_ARGUMENT),
        (lambda: table.alter.change_column("m.value", type="short"), INVALID_ARGUMENT),
        (lambda: table.alter.change_column("sa.element", type="long"), INVALID_ARGUMENT),
        (lambda: table.alter.change_column("arr.ELEMENT", type="long"), INVALID_ARGUMENT),
    ]
    for bad, error in refusals:
        with pytest.raises(error):
            bad()


#: Target: structs in an array and a map; sources with more (reordered) and fewer fields.
MERGE_DDL = (
    "id BIGINT, arr ARRAY<STRUCT<a: INT, b: STRING>>, m MAP<STRING, STRUCT<a: INT, b: STRING>>"
)
MERGE_ROWS = (
    "(1, array(named_struct('a', 1, 'b', 'x')), map('k', named_struct('a', 1, 'b', 'x'))), "
    "(2, array(named_struct('a', 2, 'b', 'y'), NULL), map('k', named_struct('a', 2, 'b', 'y'))), "
    "(3, NULL, NULL), "
    "(4, array(named_struct('a', 4, 'b', 'w')), map('k', named_struct('a', 4, 'b', 'w')))"
)
MORE = (
    "SELECT * FROM VALUES "
    "(1, array(named_struct('c', 100, 'b', 'u', 'a', 10)), "
    "map('k', named_struct('c', 100, 'b', 'u', 'a', 10))), "
    "(3, array(named_struct('c', 300, 'b', 'w', 'a', 30)), "
    "map('k', named_struct('c', 300, 'b', 'w', 'a', 30))), "
    "(5, array(named_struct('c', 500, 'b', 'v', 'a', 50)), NULL) AS v(id, arr, m)"
)
FEWER = (
    "SELECT * FROM VALUES "
    "(2, array(named_struct('a', 20)), map('k', named_struct('a', 20))), "
    "(4, NULL, map('n', named_struct('a', 40))), "
    "(6, array(named_struct('a', 60)), map('k', named_struct('a', 60))) AS v(id, arr, m)"
)

MERGE_SHAPES = [
    ("dv", "'delta.enableDeletionVectors' = 'true'"),
    ("cow", "'delta.enableDeletionVectors' = 'false'"),
    (
        "column-mapping",
        "'delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name'",
    ),
]


@pytest.mark.parametrize(("name", "properties"), MERGE_SHAPES, ids=[s[0] for s in MERGE_SHAPES])
def test_merge_evolves_structs_inside_arrays_and_maps_as_spark(
    spark: Any, tmp_path: Path, name: str, properties: str
) -> None:
    """Twins take the same MERGE WITH SCHEMA EVOLUTION, Spark's by SQL, ours by
    ``merge(..., merge_schema=True)``: a source whose array and map structs hold a new field
    (``UPDATE SET *`` / ``INSERT *``, fields in another order) appends it, nullable, to the
    target's structs; a source with fewer nested fields (explicit ``SET arr = s.arr``,
    ``INSERT (...) VALUES``) writes NULL for the fields it lacks. Rows and logged schemas
    agree after each; Spark reads every version of ours and appends to it, we append to
    Spark's."""
    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    for path in (theirs, mine):
        spark.sql(
            f"CREATE TABLE delta.`{path}` ({MERGE_DDL}) USING delta TBLPROPERTIES ({properties})"
        )
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {MERGE_ROWS}")
    table = deltalog.DeltaTable(mine)

    def agree(step: str) -> None:
        assert_same_rows(ours(mine), spark_rows(spark, theirs), f"{name}: after {step}")
        assert logged_schema(mine) == logged_schema(theirs), step

    more = spark.sql(MORE)
    more.createOrReplaceTempView("nested_more")
    spark.sql(
        f"MERGE WITH SCHEMA EVOLUTION INTO delta.`{theirs}` t USING nested_more s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    table.merge(
        more.toArrow(), "t.id = s.id", "s", "t", merge_schema=True
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    agree("a merge with more nested fields")
    element = fields_of(mine)["arr"]["type"]["elementType"]["fields"]
    assert [(f["name"], f["nullable"]) for f in element] == [
        ("a", True),
        ("b", True),
        ("c", True),
    ]

    fewer = spark.sql(FEWER)
    fewer.createOrReplaceTempView("nested_fewer")
    spark.sql(
        f"MERGE WITH SCHEMA EVOLUTION INTO delta.`{theirs}` t USING nested_fewer s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET arr = s.arr, m = s.m "
        "WHEN NOT MATCHED THEN INSERT (id, arr, m) VALUES (s.id, s.arr, s.m)"
    )
    table.merge(fewer.toArrow(), "t.id = s.id", "s", "t", merge_schema=True).when_matched_update(
        {"arr": "s.arr", "m": "s.m"}
    ).when_not_matched_insert({"id": "s.id", "arr": "s.arr", "m": "s.m"}).execute()
    agree("a merge with fewer nested fields")

    assert_spark_reads_every_version(spark, mine, ("id > 3",))
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{mine}`").collect()[0]
    assert detail["numFiles"] == table.snapshot().num_files
    spark.sql(
        f"INSERT INTO delta.`{mine}` VALUES (70, array(named_struct('a', 7, 'b', 's', 'c', 70)), "
        "map('z', named_struct('a', 7, 'b', 's', 'c', 70)))"
    )
    deltalog.write_table(theirs, spark_rows(spark, mine, where="id = 70"))
    agree("each engine appended to the other's table")
