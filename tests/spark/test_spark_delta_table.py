"""``deltalog.spark.DeltaTable`` against delta-spark's ``delta.tables.DeltaTable`` as the
oracle: the same table copied, the same calls (SQL text, ``Column`` conditions and values, a
Python UDF) made through delta-spark on one copy and through deltalog, running on Spark's
executors, on the other; the rows, the row counts of the commit metrics, the change feed and
the row ids must agree, and Spark must read our result at every version."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.spark import DeltaTable

from .test_interop_dml import (
    SHAPES,
    assert_same_changes,
    spark_row_tracking,
    spark_table_and_copy,
)
from .test_interop_read import assert_same_rows
from .test_interop_write import assert_spark_reads_every_version, spark_rows


def calls() -> list[tuple[str, Any, Any]]:
    """(kind, condition, set) in order: text, Columns, a partition delete, every row."""
    from pyspark.sql import functions as F

    return [
        ("delete", "id IN (0, 5, 10, 15, 20, 25, 30)", None),
        ("update", "p = 1", {"s": "upper(s)"}),
        ("delete", F.col("s").endswith("3"), None),
        ("update", F.col("id") > 40, {"s": F.concat(F.col("s"), F.lit("!")), "id": "id + 100"}),
        ("delete", "p = 2", None),
        ("update", None, {"s": "coalesce(s, 'none')"}),
    ]


#: Column mapping in ``id`` mode, copy-on-write and partitioned: the target is read through
#: the data source (Spark's Parquet reader cannot match columns by field id), files rewritten.
COLUMN_MAPPING_ID = (
    "column-mapping-id",
    {"delta.enableDeletionVectors": "false", "delta.columnMapping.mode": "id"},
    True,
)

#: The shapes run through both APIs: partitioned with and without deletion vectors, column
#: mapping (``name`` and ``id``), row tracking with and without deletion vectors (the plain
#: unpartitioned shapes add nothing the DML oracle of ``test_interop_dml.py`` does not
#: cover).
DELTA_TABLE_SHAPES = [
    shape
    for shape in SHAPES
    if shape[0]
    in ("dv-partitioned", "cow-partitioned", "column-mapping", "row-tracking", "cow-row-tracking")
] + [COLUMN_MAPPING_ID]


def last_metrics(spark: Any, path: Path) -> dict[str, str]:
    row = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]
    return dict(row["operationMetrics"])


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"),
    DELTA_TABLE_SHAPES,
    ids=[s[0] for s in DELTA_TABLE_SHAPES],
)
def test_deletes_and_updates_agree_with_delta_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    oracle = SparkDeltaTable.forPath(spark, str(theirs))
    table = DeltaTable.forPath(spark, str(mine))
    for kind, condition, assignments in calls():
        what = f"{name}: {kind} {condition}"
        if kind == "delete":
            oracle.delete(condition)
            table.delete(condition)
            counts = ["numDeletedRows"]
        else:
            oracle.update(condition, assignments)
            table.update(condition, assignments)
            counts = ["numUpdatedRows"]
        assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), what)
        expected, actual = last_metrics(spark, theirs), last_metrics(spark, mine)
        assert [actual.get(c) for c in counts] == [expected.get(c) for c in counts], what
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    if "delta.enableRowTracking" in properties:
        assert spark_row_tracking(spark, mine) == spark_row_tracking(spark, theirs)
    history = table.history().collect()
    assert [row["operation"] for row in history[:6]] == [
        "UPDATE",
        "DELETE",
        "UPDATE",
        "DELETE",
        "UPDATE",
        "DELETE",
    ]


@pytest.mark.parametrize("deletion_vectors", ["true", "false"])
def test_python_udfs_decide_which_rows_change(
    spark: Any, tmp_path: Path, deletion_vectors: str
) -> None:
    from pyspark.sql import functions as F

    properties = {"delta.enableDeletionVectors": deletion_vectors}
    _, mine, _ = spark_table_and_copy(spark, tmp_path, properties, True)
    before = deltalog.read_table(str(mine)).to_pylist()
    ends_in_three = F.udf(lambda s: s is not None and s.endswith("3"), "boolean")
    table = DeltaTable.forPath(spark, str(mine))
    table.delete(ends_in_three(F.col("s")))
    shout = F.udf(lambda s: None if s is None else s.upper() + "!", "string")
    table.update(F.col("p") == 1, {"s": shout(F.col("s"))})
    expected = []
    for row in before:
        if row["s"] is not None and row["s"].endswith("3"):
            continue
        if row["p"] == 1 and row["s"] is not None:
            row = {**row, "s": row["s"].upper() + "!"}
        expected.append(row)
    key = lambda row: row["id"]  # noqa: E731
    assert sorted(spark.read.format("delta").load(str(mine)).toArrow().to_pylist(), key=key) == (
        sorted(expected, key=key)
    )


def test_a_failing_task_commits_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    properties = {"delta.enableDeletionVectors": "true"}
    _, mine, start = spark_table_and_copy(spark, tmp_path, properties, True)

    def explode(value: int) -> bool:
        raise ValueError(f"no: {value}")

    table = DeltaTable.forPath(spark, str(mine))
    with pytest.raises(Exception, match="no: "):
        table.delete(F.udf(explode, "boolean")(F.col("id")))
    assert deltalog.DeltaTable(mine).latest_version() == start - 1


def test_constraints_and_generated_columns_hold_in_updates(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    theirs, mine = tmp_path / "spark", tmp_path / "ours"
    spark.sql(
        f"CREATE TABLE delta.`{theirs}` (id BIGINT, v INT, doubled INT GENERATED ALWAYS AS "
        "(v * 2)) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(f"ALTER TABLE delta.`{theirs}` ADD CONSTRAINT small CHECK (v < 100)")
    spark.sql(f"INSERT INTO delta.`{theirs}` (id, v) SELECT id, CAST(id AS INT) FROM range(10)")
    shutil.copytree(theirs, mine)
    SparkDeltaTable.forPath(spark, str(theirs)).update("id > 5", {"v": "v + 10"})
    table = DeltaTable.forPath(spark, str(mine))
    table.update("id > 5", {"v": "v + 10"})
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "generated column")
    version = deltalog.DeltaTable(mine).latest_version()
    with pytest.raises(Exception, match=r"small|v < 100"):
        table.update("id = 1", {"v": "500"})
    assert deltalog.DeltaTable(mine).latest_version() == version


def test_driver_side_methods_agree_with_delta_spark(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    properties = {"delta.enableDeletionVectors": "false"}
    theirs, mine, _ = spark_table_and_copy(spark, tmp_path, properties, True)
    oracle = SparkDeltaTable.forPath(spark, str(theirs))
    table = DeltaTable.forPath(spark, str(mine))
    assert DeltaTable.isDeltaTable(spark, str(mine))
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path))
    assert_same_rows(table.toDF().toArrow(), oracle.toDF().toArrow(), "toDF")
    assert table.alias("t").toDF().select("t.id").count() == 50

    for handle in (oracle, table):
        handle.delete("id < 10")
    ours_optimized = table.optimize().where("p = 1").executeCompaction().collect()[0]
    spark_optimized = oracle.optimize().where("p = 1").executeCompaction().collect()[0]
    assert ours_optimized["metrics"]["numFilesAdded"] == spark_optimized["metrics"]["numFilesAdded"]
    table.optimize().executeZOrderBy("id")
    oracle.optimize().executeZOrderBy("id")
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "optimized")

    ours_restored = table.restoreToVersion(1).collect()[0].asDict()
    spark_restored = oracle.restoreToVersion(1).collect()[0].asDict()
    assert set(ours_restored) == set(spark_restored)
    assert (
        ours_restored["num_of_files_after_restore"] == spark_restored["num_of_files_after_restore"]
    )
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "restored")

    # Column names and types as delta-spark's (nullability aside).
    for ours_frame, spark_frame in [
        (table.history(), oracle.history()),
        (table.detail(), oracle.detail()),
        (table.optimize().executeCompaction(), oracle.optimize().executeCompaction()),
        (table.vacuum(0), oracle.vacuum(0)),
    ]:
        assert ours_frame.schema.simpleString() == spark_frame.schema.simpleString()
    ours_history = [row["operation"] for row in table.history().collect()]
    spark_history = [row["operation"] for row in oracle.history().collect()]
    assert ours_history == spark_history
    detail = table.detail().collect()[0]
    spark_detail = oracle.detail().collect()[0]
    for column in ("format", "partitionColumns", "numFiles", "minReaderVersion"):
        assert detail[column] == spark_detail[column], column

    table.addFeatureSupport("deletionVectors")
    protocol = deltalog.DeltaTable(mine).snapshot().protocol
    assert "deletionVectors" in (protocol.writer_features or ())


OPTIMIZE_SHAPES = [
    s for s in SHAPES if s[0] in ("dv-partitioned", "column-mapping", "row-tracking")
]


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"), OPTIMIZE_SHAPES, ids=[s[0] for s in OPTIMIZE_SHAPES]
)
def test_optimize_runs_in_tasks_and_agrees_with_delta_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    oracle = SparkDeltaTable.forPath(spark, str(theirs))
    table = DeltaTable.forPath(spark, str(mine))
    for path in (theirs, mine):
        for low in (100, 200):
            extra = spark.range(low, low + 20, 1, 2).selectExpr(
                "id", "CAST(id % 4 AS INT) AS p", "concat('n', id) AS s"
            )
            extra.write.format("delta").mode("append").save(str(path))
    for handle in (oracle, table):
        handle.delete("id % 5 = 0")
    where = "p = 1" if partitioned else "true"
    runs = [
        lambda t: t.optimize().where(where).executeCompaction(),
        lambda t: t.optimize().executeCompaction(),
        lambda t: t.optimize().executeZOrderBy("id", "s"),
    ]
    for number, run in enumerate(runs):
        what = f"{name}: optimize {number}"
        expected = run(oracle).collect()[0]["metrics"]
        actual = run(table).collect()[0]["metrics"]
        for metric in ("numFilesRemoved", "numBatches", "partitionsOptimized"):
            assert actual[metric] == expected[metric], f"{what}: {metric}"
        assert actual["deletionVectorStats"] == expected["deletionVectorStats"], what
        assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), what)
        if expected["numFilesRemoved"]:
            removed = last_metrics(spark, mine)["numRemovedFiles"]
            assert removed == str(expected["numFilesRemoved"]), what
    operations = [[row["operation"] for row in t.history().collect()] for t in (table, oracle)]
    assert operations[0] == operations[1]
    assert operations[0][0] == "OPTIMIZE"
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    if "delta.enableRowTracking" in properties:
        assert spark_row_tracking(spark, mine) == spark_row_tracking(spark, theirs)


def merge_builders(source: Any) -> list[tuple[str, Any]]:
    """(name, builder of the clauses on a merge builder) of delta-spark's and ours: the
    merges of ``test_interop_merge.py`` written with the DeltaTable API, Columns included."""
    from pyspark.sql import functions as F

    return [
        (
            "upsert",
            lambda m: m.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
        ),
        (
            "mixed",
            lambda m: (
                m.whenMatchedDelete("src.s = 'del'")
                .whenMatchedUpdate(set={"s": F.concat(F.col("tgt.s"), F.lit("+"), F.col("src.s"))})
                .whenNotMatchedInsert(
                    "src.s != 'skip'", {"id": "src.id", "p": "src.p", "s": "upper(src.s)"}
                )
                .whenNotMatchedBySourceDelete("tgt.id > 45")
                .whenNotMatchedBySourceUpdate(F.col("tgt.id") < 1, {"s": F.lit("orphan")})
            ),
        ),
        ("delete duplicates", lambda m: m.whenMatchedDelete()),
    ]


#: Deletion vectors, copy-on-write, column mapping (both modes) and row tracking, in four
#: tables (the single-process MERGE oracle of ``test_interop_merge.py`` covers the other
#: shapes).
MERGE_SHAPES = [
    shape
    for shape in SHAPES
    if shape[0] in ("dv-partitioned", "column-mapping", "cow-row-tracking")
] + [COLUMN_MAPPING_ID]


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"), MERGE_SHAPES, ids=[s[0] for s in MERGE_SHAPES]
)
def test_merges_agree_with_delta_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    from .test_interop_merge import COUNTS, DUPLICATES, MIXED, UPSERT, assert_same_row_tracking

    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    oracle = SparkDeltaTable.forPath(spark, str(theirs)).alias("tgt")
    table = DeltaTable.forPath(spark, str(mine)).alias("tgt")
    sources = [UPSERT, MIXED, DUPLICATES]
    for (merge_name, clauses), data in zip(merge_builders(None), sources, strict=True):
        rows = [tuple(r.values()) for r in data.to_pylist()]
        source = spark.createDataFrame(rows, schema="id BIGINT, p INT, s STRING").alias("src")
        expected = clauses(oracle.merge(source, "tgt.id = src.id")).execute().collect()
        actual = clauses(table.merge(source, "tgt.id = src.id")).execute().collect()
        what = f"{name}: {merge_name}"
        assert actual == expected, what
        assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), what)
        spark_metrics, our_metrics = last_metrics(spark, theirs), last_metrics(spark, mine)
        assert [our_metrics.get(c) for c in COUNTS] == [spark_metrics.get(c) for c in COUNTS], what
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    if "delta.enableRowTracking" in properties:
        assert_same_row_tracking(spark_row_tracking(spark, mine), spark_row_tracking(spark, theirs))


def schema_of(spark: Any, path: Path) -> list[tuple[str, str]]:
    frame = spark.read.format("delta").load(str(path))
    return [(field.name, field.dataType.simpleString()) for field in frame.schema.fields]


EVOLUTION_SHAPES = [s for s in SHAPES if s[0] in ("column-mapping", "cow-partitioned")]


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"),
    EVOLUTION_SHAPES,
    ids=[s[0] for s in EVOLUTION_SHAPES],
)
def test_merges_with_schema_evolution_agree_with_delta_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    from .test_interop_merge import COUNTS

    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, partitioned)
    stars = spark.createDataFrame(
        [(1, 1, "one", "x1", (1, "a")), (60, 0, "sixty", None, (2, None))],
        "id BIGINT, p INT, s STRING, extra STRING, info STRUCT<n: INT, tag: STRING>",
    ).alias("s")
    named = spark.createDataFrame(
        [(2, 5, (7, "b", 1.5)), (61, 6, (8, "c", None)), (60, None, None)],
        "id BIGINT, score INT, info STRUCT<n: INT, tag: STRING, w: DOUBLE>",
    ).alias("s")
    merges = [
        ("star", stars, lambda m: m.whenMatchedUpdateAll().whenNotMatchedInsertAll()),
        (
            "named",
            named,
            lambda m: m.whenMatchedUpdate(
                set={"score": "s.score", "info.w": "s.info.w"}
            ).whenNotMatchedInsert(values={"id": "s.id", "score": "s.score"}),
        ),
        ("star again", named, lambda m: m.whenMatchedUpdateAll()),
    ]
    for merge_name, source, clauses in merges:
        what = f"{name}: {merge_name}"
        # delta-spark refuses a DeltaTable made before the schema changed: one per merge.
        oracle = SparkDeltaTable.forPath(spark, str(theirs)).alias("t")
        table = DeltaTable.forPath(spark, str(mine)).alias("t")
        merge = oracle.merge(source, "t.id = s.id").withSchemaEvolution()
        expected = clauses(merge).execute().collect()
        ours = table.merge(source, "t.id = s.id").withSchemaEvolution()
        assert clauses(ours).execute().collect() == expected, what
        assert schema_of(spark, mine) == schema_of(spark, theirs), what
        assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), what)
        spark_metrics, our_metrics = last_metrics(spark, theirs), last_metrics(spark, mine)
        assert [our_metrics.get(c) for c in COUNTS] == [spark_metrics.get(c) for c in COUNTS], what
    assert_spark_reads_every_version(spark, mine, ("id > 10", "p = 1"))
    assert_same_changes(spark, mine, theirs, start)
    spark.read.format("delta").load(str(theirs)).limit(3).write.format("delta").mode("append").save(
        str(mine)
    )
    assert deltalog.read_table(str(mine)).num_rows == len(spark_rows(spark, mine))


def test_a_merge_reads_only_the_target_files_its_condition_can_match(
    spark: Any, tmp_path: Path
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    from deltalog.spark._dml import MergePruning, MergeSpec, TableRef

    properties = {"delta.enableDeletionVectors": "true"}
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, True)
    source = spark.createDataFrame(
        [(5, 1, "five"), (9, 1, "nine"), (13, 1, "new"), (70, 1, "seventy")],
        "id BIGINT, p INT, s STRING",
    ).alias("s")
    condition = "t.id = s.id AND t.p = 1 AND s.s != 'x'"
    spec = MergeSpec("t", source, condition, (), {})
    pruning = MergePruning.of(spark, TableRef(str(mine), {}), spec, {"matched", "not_matched"})
    assert pruning.summarize(source) == (4, "(p = 1) AND (`id` BETWEEN 5 AND 70)")
    for path, api in ((theirs, SparkDeltaTable), (mine, DeltaTable)):
        table = api.forPath(spark, str(path)).alias("t")
        merge = table.merge(source, condition)
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert_same_rows(spark_rows(spark, mine), spark_rows(spark, theirs), "pruned merge")
    assert_same_changes(spark, mine, theirs, start)
    metrics = last_metrics(spark, mine)
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == ("3", "1")


def test_a_target_row_matched_twice_fails_as_in_delta_spark(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    from deltalog.exceptions import MergeMultipleMatchError

    properties = {"delta.enableDeletionVectors": "true"}
    theirs, mine, start = spark_table_and_copy(spark, tmp_path, properties, False)
    source = spark.createDataFrame([(3, 0, "a"), (3, 0, "b")], "id BIGINT, p INT, s STRING")
    with pytest.raises(Exception, match="MULTIPLE_SOURCE_ROW_MATCHING"):
        SparkDeltaTable.forPath(spark, str(theirs)).alias("t").merge(
            source.alias("s"), "t.id = s.id"
        ).whenMatchedUpdateAll().execute()
    with pytest.raises(MergeMultipleMatchError, match="MULTIPLE_SOURCE_ROW_MATCHING"):
        DeltaTable.forPath(spark, str(mine)).alias("t").merge(
            source.alias("s"), "t.id = s.id"
        ).whenMatchedUpdateAll().execute()
    assert deltalog.DeltaTable(mine).latest_version() == start - 1


def test_for_name_finds_the_location_of_a_catalog_table(spark: Any, tmp_path: Path) -> None:
    from deltalog.exceptions import InvalidArgumentError

    path = tmp_path / "named"
    spark.sql(f"CREATE TABLE deltalog_named (id BIGINT) USING delta LOCATION '{path}'")
    try:
        spark.sql("INSERT INTO deltalog_named VALUES (1), (2), (3)")
        table = DeltaTable.forName(spark, "deltalog_named")
        table.delete("id = 2")
        assert sorted(row[0] for row in spark.table("deltalog_named").collect()) == [1, 3]
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW deltalog_view AS SELECT 1 AS id")
        with pytest.raises(InvalidArgumentError, match="forPath"):
            DeltaTable.forName(spark, "deltalog_view")
    finally:
        spark.sql("DROP TABLE IF EXISTS deltalog_named")
        spark.sql("DROP VIEW IF EXISTS deltalog_view")


def manifests(root: Path) -> dict[str, list[str]]:
    """The symlink manifests under ``root`` (relative path to their lines, sorted), with the
    table's location in the lines written ``ROOT``."""
    found = {}
    for manifest in sorted((root / "_symlink_format_manifest").rglob("manifest")):
        lines = manifest.read_text().splitlines()
        for prefix in (f"file:{root.resolve()}", f"file:{root}"):
            lines = [line.replace(prefix, "ROOT", 1) for line in lines]
        found[str(manifest.relative_to(root))] = sorted(lines)
    return found


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_generate_writes_the_manifests_delta_spark_writes(
    spark: Any, tmp_path: Path, partitioned: bool
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    theirs, mine, _ = spark_table_and_copy(spark, tmp_path, {}, partitioned)
    SparkDeltaTable.forPath(spark, str(theirs)).generate("symlink_format_manifest")
    DeltaTable.forPath(spark, str(mine)).generate("SYMLINK_FORMAT_MANIFEST")
    assert manifests(mine) == manifests(theirs)
    assert manifests(mine), "no manifest written"
    # A partition emptied: its manifest goes at the next generation (unpartitioned, the
    # DELETE rewrites files, named apart in the two copies: the manifests list each one's).
    for path in (theirs, mine):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE p = 1")
    SparkDeltaTable.forPath(spark, str(theirs)).generate("symlink_format_manifest")
    DeltaTable.forPath(spark, str(mine)).generate("symlink_format_manifest")
    if partitioned:
        assert manifests(mine) == manifests(theirs)
    assert list(manifests(mine)) == list(manifests(theirs))
    listed = sorted(line for lines in manifests(mine).values() for line in lines)
    paths = deltalog.DeltaTable(str(mine)).snapshot().files().to_pyarrow()
    assert listed == sorted(f"ROOT/{path}" for path in paths.column("path").to_pylist())


def test_generate_is_refused_with_deletion_vectors_as_in_delta_spark(
    spark: Any, tmp_path: Path
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    properties = {"delta.enableDeletionVectors": "true"}
    theirs, mine, _ = spark_table_and_copy(spark, tmp_path, properties, True)
    for path in (theirs, mine):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    with pytest.raises(Exception, match=r"(?i)deletion vector"):
        SparkDeltaTable.forPath(spark, str(theirs)).generate("symlink_format_manifest")
    with pytest.raises(deltalog.OperationNotAllowedError, match="deletion vectors"):
        DeltaTable.forPath(spark, str(mine)).generate("symlink_format_manifest")
    with pytest.raises(deltalog.InvalidArgumentError, match="not supported"):
        DeltaTable.forPath(spark, str(mine)).generate("hive")
    assert not (mine / "_symlink_format_manifest").exists()


def test_a_timestamp_without_a_zone_is_in_the_session_time_zone(spark: Any, tmp_path: Path) -> None:
    """As delta-spark: ``restoreToTimestamp("2024-05-01 10:00:00")`` means 10:00 where the
    session's ``spark.sql.session.timeZone`` is, not UTC."""
    import time
    from datetime import datetime, timezone
    from zoneinfo import ZoneInfo

    import pyarrow as pa

    path = tmp_path / "table"
    deltalog.write_table(path, pa.table({"id": [1]}))
    time.sleep(1.5)
    between = datetime.now(timezone.utc)
    time.sleep(1.5)
    deltalog.write_table(path, pa.table({"id": [2]}), mode="append")
    zone = "America/Los_Angeles"
    text = between.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        table = DeltaTable.forPath(spark, str(path))
        clone = table.cloneAtTimestamp(text, str(tmp_path / "clone"), isShallow=True)
        assert sorted(row["id"] for row in clone.toDF().collect()) == [1]
        table.restoreToTimestamp(text)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert deltalog.read_table(str(path)).to_pydict() == {"id": [1]}
