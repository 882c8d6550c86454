"""Shallow clone through ``deltalog.spark.DeltaTable`` against delta-spark's
``delta.tables.DeltaTable.clone`` as the oracle: the same source cloned by both, the rows,
the ``CLONE`` commit (operation, parameters, metrics) and ``DESCRIBE DETAIL`` must agree,
each engine must read the other's clone, and Delta on Spark must append to ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.exceptions import OperationNotAllowedError, UnsupportedFeatureError
from deltalog.spark import DeltaTable

from .test_interop_dml import spark_table
from .test_interop_read import assert_same_rows
from .test_interop_write import spark_rows

#: Source shapes: partitioned with deletion vectors, column mapping, row tracking.
CLONE_SHAPES = [
    ("dv-partitioned", {"delta.enableDeletionVectors": "true"}, True),
    (
        "column-mapping",
        {"delta.enableDeletionVectors": "true", "delta.columnMapping.mode": "name"},
        True,
    ),
    (
        "row-tracking",
        {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"},
        False,
    ),
]

#: The ``DESCRIBE DETAIL`` columns two clones of one source share.
DETAIL_COLUMNS = (
    "format",
    "partitionColumns",
    "numFiles",
    "sizeInBytes",
    "properties",
    "minReaderVersion",
    "minWriterVersion",
    "tableFeatures",
)


#: The properties naming the materialized row tracking columns.
MATERIALIZED_NAMES = (
    "delta.rowTracking.materializedRowIdColumnName",
    "delta.rowTracking.materializedRowCommitVersionColumnName",
)


def source_table(spark: Any, path: Path, properties: dict[str, str], partitioned: bool) -> None:
    """Spark's table with a deletion vector and a later append: versions 0 to 3."""
    spark_table(spark, path, properties, partitioned)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (3, 17, 30)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (100, 1, 'late'), (101, 2, NULL)")


def commit(path: Path, version: int) -> dict[str, Any]:
    text = (path / "_delta_log" / f"{version:020}.json").read_text()
    info: dict[str, Any] = json.loads(text.splitlines()[0])["commitInfo"]
    return info


def detail(spark: Any, path: Path) -> dict[str, Any]:
    """``DESCRIBE DETAIL``'s shared columns; the materialized row tracking column names,
    which each clone draws anew, cut to their prefix."""
    row = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].asDict()
    shared = {column: row[column] for column in DETAIL_COLUMNS}
    shared["properties"] = {
        key: value.rsplit("-col-", 1)[0] if key in MATERIALIZED_NAMES else value
        for key, value in shared["properties"].items()
    }
    return shared


def assert_same_metrics(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Spark's CLONE metrics, equal; ours add only the ones every deltalog commit records."""
    mine = dict(ours["operationMetrics"])
    assert {key: mine.pop(key) for key in theirs["operationMetrics"]} == (
        theirs["operationMetrics"]
    )
    assert set(mine) <= {"numFiles", "numOutputBytes", "numOutputRows"}


def assert_same_clone(spark: Any, mine: Path, theirs: Path, version: int = 0) -> None:
    """Our clone at ``mine`` equals delta-spark's at ``theirs``: rows (read by both engines),
    the ``CLONE`` commit and ``DESCRIBE DETAIL``."""
    expected = spark_rows(spark, theirs)
    assert_same_rows(spark_rows(spark, mine), expected, "Spark reads our clone")
    assert_same_rows(deltalog.read_table(str(mine)), expected, "we read our clone")
    assert_same_rows(deltalog.read_table(str(theirs)), expected, "we read Spark's clone")
    ours, spark_commit = commit(mine, version), commit(theirs, version)
    assert ours["operation"] == spark_commit["operation"] == "CLONE"
    assert ours["operationParameters"] == spark_commit["operationParameters"]
    assert_same_metrics(ours, spark_commit)
    assert detail(spark, mine) == detail(spark, theirs)


@pytest.mark.parametrize(
    ("name", "properties", "partitioned"),
    CLONE_SHAPES,
    ids=[shape[0] for shape in CLONE_SHAPES],
)
def test_clone_matches_delta_spark(
    spark: Any, tmp_path: Path, name: str, properties: dict[str, str], partitioned: bool
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    source = tmp_path / "source"
    source_table(spark, source, properties, partitioned)
    overrides = {"foo": "bar", "delta.logRetentionDuration": "interval 60 days"}
    SparkDeltaTable.forPath(spark, str(source)).clone(
        str(tmp_path / "spark"), isShallow=True, properties=overrides
    )
    ours = DeltaTable.forPath(spark, str(source)).clone(
        str(tmp_path / "ours"), isShallow=True, properties=overrides
    )
    assert isinstance(ours, DeltaTable)
    assert_same_clone(spark, tmp_path / "ours", tmp_path / "spark")
    if "delta.enableRowTracking" in properties:
        # Named anew, as Delta on Spark names them: not the source's.
        names = [
            {key: deltalog.DeltaTable(path).snapshot().metadata.configuration[key]}
            for path in (source, tmp_path / "ours")
            for key in MATERIALIZED_NAMES
        ]
        assert names[0] != names[2]
        assert names[1] != names[3]

    # Delta on Spark appends to our clone and reads it back; the source is untouched.
    before = spark_rows(spark, source)
    spark.sql(f"INSERT INTO delta.`{tmp_path / 'ours'}` VALUES (500, 1, 'spark')")
    assert spark.read.format("delta").load(str(tmp_path / "ours")).count() == (before.num_rows + 1)
    assert_same_rows(spark_rows(spark, source), before, f"{name}: the source after")
    latest = ours.toDF().count()
    assert latest == before.num_rows + 1


def test_clone_at_a_version_and_a_timestamp_match_delta_spark(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    source = tmp_path / "source"
    source_table(spark, source, {"delta.enableDeletionVectors": "true"}, True)
    theirs = SparkDeltaTable.forPath(spark, str(source))
    mine = DeltaTable.forPath(spark, str(source))
    theirs.cloneAtVersion(1, str(tmp_path / "spark-v1"), isShallow=True)
    mine.cloneAtVersion(1, str(tmp_path / "ours-v1"), isShallow=True)
    assert_same_clone(spark, tmp_path / "ours-v1", tmp_path / "spark-v1")

    stamp = deltalog.DeltaTable(source).snapshot(2).timestamp
    text = stamp.strftime("%Y-%m-%d %H:%M:%S.%f")
    theirs.cloneAtTimestamp(text, str(tmp_path / "spark-t2"), isShallow=True)
    mine.cloneAtTimestamp(text, str(tmp_path / "ours-t2"), isShallow=True)
    assert_same_clone(spark, tmp_path / "ours-t2", tmp_path / "spark-t2")
    assert commit(tmp_path / "ours-t2", 0)["operationParameters"]["sourceVersion"] == 2


def test_replace_and_errors_match_delta_spark(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    source = tmp_path / "source"
    source_table(spark, source, {"delta.enableDeletionVectors": "true"}, True)
    mine = DeltaTable.forPath(spark, str(source))
    theirs = SparkDeltaTable.forPath(spark, str(source))
    with pytest.raises(UnsupportedFeatureError, match="Deep clone is not supported"):
        mine.clone(str(tmp_path / "deep"))
    with pytest.raises(Exception, match="DELTA_UNSUPPORTED_DEEP_CLONE"):
        theirs.clone(str(tmp_path / "deep"))

    # An existing non-empty target: refused without replace, and with it (Delta on Spark's
    # DELTA_UNSUPPORTED_NON_EMPTY_CLONE).
    for folder in ("spark", "ours"):
        spark.range(0, 3).write.format("delta").save(str(tmp_path / folder))
    with pytest.raises(Exception, match="NON_EMPTY_LOCATION"):
        theirs.clone(str(tmp_path / "spark"), isShallow=True)
    with pytest.raises(OperationNotAllowedError, match="NON_EMPTY_LOCATION"):
        mine.clone(str(tmp_path / "ours"), isShallow=True)
    with pytest.raises(Exception, match="DELTA_UNSUPPORTED_NON_EMPTY_CLONE"):
        theirs.clone(str(tmp_path / "spark"), isShallow=True, replace=True)
    with pytest.raises(OperationNotAllowedError, match="DELTA_UNSUPPORTED_NON_EMPTY_CLONE"):
        mine.clone(str(tmp_path / "ours"), isShallow=True, replace=True)

    # Emptied, it is replaced: same table id, the source's schema and files.
    for folder in ("spark", "ours"):
        spark.sql(f"DELETE FROM delta.`{tmp_path / folder}`")
    theirs.clone(str(tmp_path / "spark"), isShallow=True, replace=True)
    mine.clone(str(tmp_path / "ours"), isShallow=True, replace=True)
    expected = spark_rows(spark, tmp_path / "spark")
    assert_same_rows(spark_rows(spark, tmp_path / "ours"), expected, "replaced clone")
    assert_same_metrics(commit(tmp_path / "ours", 2), commit(tmp_path / "spark", 2))
    ours_detail, spark_detail = detail(spark, tmp_path / "ours"), detail(spark, tmp_path / "spark")
    assert ours_detail == spark_detail

    with pytest.raises(Exception, match="COLUMN_MAPPING_MODE_CHANGE"):
        theirs.clone(
            str(tmp_path / "cm-spark"),
            isShallow=True,
            properties={"delta.columnMapping.mode": "name"},
        )
    with pytest.raises(OperationNotAllowedError, match="COLUMN_MAPPING_MODE_CHANGE"):
        mine.clone(
            str(tmp_path / "cm-ours"),
            isShallow=True,
            properties={"delta.columnMapping.mode": "name"},
        )
