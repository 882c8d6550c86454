"""Tables altered by deltalog, read and extended by Delta Lake on Spark; tables altered by
Spark, appended to by deltalog. Spark must read our altered tables with exactly our rows at
every version, describe them (history, properties), and enforce the constraints we add; we
must enforce the constraints Spark adds, and write under the names Spark gave."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, ours, spark_rows


def test_table_altered_by_us(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "altered"
    data = pa.table({"id": [1, 2, 3], "name": ["a", None, "c"], "p": ["x", "y", "x"]})
    deltalog.write_table(path, data, partition_by=["p"])
    alter = deltalog.DeltaTable(path).alter
    alter.set_properties(
        {
            "delta.columnMapping.mode": "name",
            "delta.enableChangeDataFeed": "true",
            "owner.team": "data",
        }
    )
    alter.add_columns(
        pa.schema([("score", pa.float64()), ("info", pa.struct([("a", pa.int32())]))])
    )
    alter.add_columns(pa.schema([("b", pa.string())]), parent="info")
    deltalog.write_table(
        path,
        pa.table(
            {
                "id": [4],
                "name": ["d"],
                "p": ["y"],
                "score": [1.5],
                "info": pa.array(
                    [{"a": 7, "b": "z"}], pa.struct([("a", pa.int32()), ("b", pa.string())])
                ),
            }
        ),
    )
    alter.rename_column("name", "label")
    alter.rename_column("info.a", "alpha")
    alter.drop_columns(["score"])
    alter.add_constraint("positive", "id > 0")
    alter.set_description("altered by deltalog")
    assert_spark_reads_every_version(spark, path, ("label = 'd'", "p = 'x'", "info.alpha = 7"))

    table = f"delta.`{path}`"
    detail = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]
    properties = detail["properties"]
    assert properties["delta.columnMapping.mode"] == "name"
    assert properties["delta.enableChangeDataFeed"] == "true"
    assert properties["owner.team"] == "data"
    assert properties["delta.constraints.positive"] == "id > 0"
    assert detail["description"] == "altered by deltalog"
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (2, 5)
    history = spark.sql(f"DESCRIBE HISTORY {table}").collect()
    operations = [row["operation"] for row in sorted(history, key=lambda row: row["version"])]
    assert operations == [
        "WRITE",
        "SET TBLPROPERTIES",
        "ADD COLUMNS",
        "ADD COLUMNS",
        "WRITE",
        "RENAME COLUMN",
        "RENAME COLUMN",
        "DROP COLUMNS",
        "ADD CONSTRAINT",
        "SET TBLPROPERTIES",
    ]

    with pytest.raises(Exception, match=r"(?i)check constraint"):
        spark.sql(
            f"INSERT INTO {table} VALUES (-1, 'bad', 'x', named_struct('alpha', 1, 'b', 'q'))"
        )
    spark.sql(f"INSERT INTO {table} VALUES (5, 'e', 'x', named_struct('alpha', 2, 'b', 'w'))")
    spark.sql(f"UPDATE {table} SET label = 'updated' WHERE id = 1")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    assert_same_rows(ours(path), spark_rows(spark, path), "after Spark's changes")


def test_spark_altered_table_takes_our_appends(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "spark_altered"
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING, p STRING) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    spark.sql(f"ALTER TABLE {table} ADD CONSTRAINT positive CHECK (id > 0)")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (extra INT)")

    deltalog.write_table(
        path,
        pa.table(
            {
                "id": [3],
                "label": ["c"],
                "p": ["x"],
                "extra": pa.array([9], pa.int32()),
            }
        ),
    )
    with pytest.raises(deltalog.ConstraintViolationError, match="positive"):
        deltalog.write_table(path, pa.table({"id": [-3], "label": ["z"], "p": ["x"]}))
    assert_same_rows(ours(path), spark_rows(spark, path), "after our append")

    alter = deltalog.DeltaTable(path).alter
    alter.drop_constraint("positive")
    alter.drop_columns(["extra"])
    spark.sql(f"INSERT INTO {table} VALUES (-4, 'd', 'y')")
    assert_same_rows(ours(path), spark_rows(spark, path), "after our alterations")


@pytest.mark.parametrize(
    ("expression", "values"),
    [
        ("id > 0", "(1), (NULL)"),
        ("id > 0", "(1), (-1)"),
        ("id IS NULL OR id > 0", "(1), (NULL)"),
        ("id BETWEEN 1 AND 10", "(1), (10)"),
    ],
)
def test_constraints_on_existing_rows_as_spark_checks_them(
    spark: Any, tmp_path: Path, expression: str, values: str
) -> None:
    """A new constraint is refused on the same existing rows by Spark and by us."""
    theirs = f"delta.`{tmp_path / 'theirs'}`"
    spark.sql(f"CREATE TABLE {theirs} (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO {theirs} VALUES {values}")
    mine = tmp_path / "mine"
    deltalog.write_table(mine, spark_rows(spark, tmp_path / "theirs"))
    try:
        spark.sql(f"ALTER TABLE {theirs} ADD CONSTRAINT c CHECK ({expression})")
        spark_accepts = True
    except Exception:
        spark_accepts = False
    try:
        deltalog.DeltaTable(mine).alter.add_constraint("c", expression)
        we_accept = True
    except deltalog.ConstraintViolationError:
        we_accept = False
    assert we_accept == spark_accepts


def test_type_widening_and_column_changes_both_ways(spark: Any, tmp_path: Path) -> None:
    """deltalog widens ``int`` to ``long`` and ``decimal(5,2)`` to ``decimal(10,2)``, comments,
    relaxes and moves a column; Spark reads every version, reports the same schema and
    appends values only the wider types hold. Then Spark widens a column of a twin with
    ``ALTER COLUMN ... TYPE`` and deltalog reads and appends to it."""
    path = tmp_path / "ours"
    schema = pa.schema(
        [
            pa.field("i", pa.int32(), nullable=False),
            ("d", pa.decimal128(5, 2)),
            ("s", pa.string()),
        ]
    )
    table = deltalog.DeltaTable.create(
        path, schema, configuration={"delta.enableTypeWidening": "true"}
    )
    rows = pa.table(
        {
            "i": pa.array([1, 2], pa.int32()),
            "d": pa.array([Decimal("1.25"), Decimal("-2.50")], pa.decimal128(5, 2)),
            "s": ["a", "b"],
        },
        schema=schema,
    )
    deltalog.write_table(path, rows)
    table.alter.change_column("i", type="long")
    table.alter.change_column("d", type="decimal(10,2)")
    table.alter.change_column("i", comment="the id", nullable=True, after="s")
    spark_schema = spark.read.format("delta").load(str(path)).schema
    assert [f.name for f in spark_schema.fields] == ["d", "s", "i"]
    assert spark_schema["i"].dataType.simpleString() == "bigint"
    assert spark_schema["i"].nullable
    assert spark_schema["i"].metadata.get("comment") == "the id"
    assert spark_schema["d"].dataType.simpleString() == "decimal(10,2)"
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (12345678.5, 'big', {2**40})")
    assert_spark_reads_every_version(spark, path)

    theirs = tmp_path / "theirs"
    spark.sql(
        f"CREATE TABLE delta.`{theirs}` (i INT, s STRING) USING delta "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    spark.sql(f"INSERT INTO delta.`{theirs}` VALUES (1, 'a')")
    spark.sql(f"ALTER TABLE delta.`{theirs}` ALTER COLUMN i TYPE BIGINT")
    assert ours(theirs).schema.field("i").type == pa.int64()
    deltalog.write_table(theirs, pa.table({"i": pa.array([2**40], pa.int64()), "s": ["b"]}))
    assert_same_rows(ours(theirs), spark_rows(spark, theirs), "after Spark's widening")


def test_schema_merge_widens_and_nests_as_spark_does(spark: Any, tmp_path: Path) -> None:
    """On twins with type widening enabled, deltalog's ``schema_mode="merge"`` append and
    Spark's ``mergeSchema`` append of the same wider, deeper rows leave the same schema:
    ``int`` to ``long``, ``float`` to ``double``, ``int`` to ``double`` and a nested ``int`` to
    ``long`` widened and recorded in ``delta.typeChanges``, a new struct field and a new
    column added. Each engine then reads and appends to the other's table. Text into a
    number is no widening: both refuse it."""
    ddl = "i INT, f FLOAT, w INT, s STRUCT<x: INT>"
    wider = "i BIGINT, f DOUBLE, w DOUBLE, s STRUCT<x: BIGINT, y: STRING>, n STRING"
    values = [(2**40, 1.5, 2.5, (2**33, "why"), "new")]
    ours_path, theirs_path = tmp_path / "ours", tmp_path / "theirs"
    for path in (ours_path, theirs_path):
        spark.sql(
            f"CREATE TABLE delta.`{path}` ({ddl}) USING delta "
            "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
        )
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 0.5, 3, named_struct('x', 4))")
    rows = spark.createDataFrame(values, wider)
    rows.write.format("delta").mode("append").option("mergeSchema", "true").save(str(theirs_path))
    deltalog.write_table(ours_path, rows.toArrow(), schema_mode="merge")

    def logged_schema(path: Path) -> Any:
        return json.loads(deltalog.DeltaTable(path).snapshot().schema.json())

    assert logged_schema(ours_path) == logged_schema(theirs_path)
    fields = {f["name"]: f for f in logged_schema(ours_path)["fields"]}
    assert fields["i"]["metadata"]["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long"}
    ]
    assert fields["s"]["type"]["fields"][0]["metadata"]["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long"}
    ]
    assert_same_rows(ours(ours_path), spark_rows(spark, theirs_path), "after the merges")
    assert_spark_reads_every_version(spark, ours_path)

    spark.sql(
        f"INSERT INTO delta.`{ours_path}` "
        f"VALUES ({2**50}, 2.5, 5.5, named_struct('x', {2**41}, 'y', 'z'), 'spark')"
    )
    deltalog.write_table(
        theirs_path,
        spark.createDataFrame([(2**50, 2.5, 5.5, (2**41, "z"), "spark")], wider).toArrow(),
    )
    assert_same_rows(ours(ours_path), spark_rows(spark, theirs_path), "after both appended")

    text = spark.createDataFrame([("x",)], "f STRING")
    with pytest.raises(Exception, match="DELTA_FAILED_TO_MERGE_FIELDS"):
        text.write.format("delta").mode("append").option("mergeSchema", "true").save(
            str(theirs_path)
        )
    with pytest.raises(deltalog.SchemaMismatchError):
        deltalog.write_table(ours_path, text.toArrow(), schema_mode="merge")


def test_row_tracking_backfill_as_spark_does(spark: Any, tmp_path: Path) -> None:
    """Enabling row tracking on twins that hold files: Spark backfills one, deltalog the
    other, both in the same commits (``UPGRADE PROTOCOL``, ``ROW TRACKING BACKFILL``,
    ``SET TBLPROPERTIES``); every row then has a distinct row id and the backfill's commit
    version, Spark reads ours at every version, and each engine's later update keeps the
    row ids of the rows it rewrites."""
    from .test_interop_dml import spark_row_tracking

    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    for path in (theirs, mine):
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c')")
    spark.sql(
        f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')"
    )
    deltalog.DeltaTable(mine).alter.set_properties({"delta.enableRowTracking": "true"})

    def operations(path: Path) -> list[str]:
        history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
        return [row["operation"] for row in sorted(history, key=lambda r: r["version"])]

    assert operations(mine) == operations(theirs)
    for path in (mine, theirs):
        tracked = spark_row_tracking(spark, path)
        assert len({row_id for _, row_id, _ in tracked}) == 3
        assert {version for _, _, version in tracked} == {4}
    assert_spark_reads_every_version(spark, mine)
    before = {i: r for i, r, _ in spark_row_tracking(spark, mine)}
    spark.sql(f"UPDATE delta.`{mine}` SET v = 'spark' WHERE id = 1")
    deltalog.DeltaTable(theirs).update(set={"v": "'ours'"}, predicate="id = 3")
    after = {i: r for i, r, _ in spark_row_tracking(spark, mine)}
    assert after == before
    assert len({r for _, r, _ in spark_row_tracking(spark, theirs)}) == 3


#: The features both engines drop, in order, from twins that use them all; ``domainMetadata``
#: only goes once ``rowTracking``, which needs it, is gone.
DROPPED = (
    "deletionVectors",
    "typeWidening",
    "inCommitTimestamp",
    "rowTracking",
    "domainMetadata",
    "v2Checkpoint",
    "columnMapping",
)


def test_features_drop_as_spark_drops_them(spark: Any, tmp_path: Path) -> None:
    """Twins created by Spark with deletion vectors (in use), a widened column, in-commit
    timestamps, row tracking, V2 checkpoints and column mapping (a renamed column). Spark
    drops each feature from one, deltalog from the other: the same commits (history
    operations), the same protocol and properties after each drop, the same rows. Then each
    engine extends the table the other dropped from, and reads it back."""
    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    for path in (theirs, mine):
        table = f"delta.`{path}`"
        spark.sql(
            f"CREATE TABLE {table} (id INT, v STRING) USING delta TBLPROPERTIES ("
            "'delta.enableDeletionVectors' = 'true', 'delta.enableTypeWidening' = 'true', "
            "'delta.enableInCommitTimestamps' = 'true', 'delta.enableRowTracking' = 'true', "
            "'delta.checkpointPolicy' = 'v2', 'delta.columnMapping.mode' = 'name')"
        )
        spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        spark.sql(f"DELETE FROM {table} WHERE id = 2")
        spark.sql(f"ALTER TABLE {table} CHANGE COLUMN id TYPE BIGINT")
        spark.sql(f"INSERT INTO {table} VALUES (4, 'd')")
        spark.sql(f"ALTER TABLE {table} RENAME COLUMN v TO label")

    def operations(path: Path) -> list[str]:
        history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
        return [row["operation"] for row in sorted(history, key=lambda r: r["version"])]

    def described(path: Path) -> tuple[Any, ...]:
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
        properties = dict(detail["properties"])
        properties.pop("delta.requireCheckpointProtectionBeforeVersion", None)
        return (
            detail["minReaderVersion"],
            detail["minWriterVersion"],
            sorted(detail["tableFeatures"]),
            sorted(properties),
        )

    for feature in DROPPED:
        spark.sql(f"ALTER TABLE delta.`{theirs}` DROP FEATURE {feature}")
        deltalog.DeltaTable(mine).alter.drop_feature(feature)
        assert operations(mine) == operations(theirs), feature
        assert described(mine) == described(theirs), feature
    snapshot = deltalog.DeltaTable(mine).snapshot()
    assert snapshot.protocol.reader_features is None
    assert "checkpointProtection" in (snapshot.protocol.writer_features or ())
    for path in (mine, theirs):
        with pytest.raises(Exception, match=r"(?i)truncate"):
            spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE checkpointProtection")
        with pytest.raises(deltalog.OperationNotAllowedError, match="truncate_history"):
            deltalog.DeltaTable(path).alter.drop_feature("checkpointProtection")
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "after the drops")

    spark.sql(f"INSERT INTO delta.`{mine}` VALUES (5, 'spark')")
    spark.sql(f"DELETE FROM delta.`{mine}` WHERE id = 1")
    deltalog.write_table(theirs, pa.table({"id": pa.array([5], pa.int64()), "label": ["ours"]}))
    deltalog.DeltaTable(theirs).delete("id = 1")
    for path in (mine, theirs):
        expected = spark_rows(spark, path)
        assert sorted(expected.column("id").to_pylist()) == [3, 4, 5]
        assert_same_rows(ours(path), expected, str(path))
