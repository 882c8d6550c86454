"""Checkpoints, version checksums and log cleanup against Delta Lake on Spark: Spark opens our
tables through our checkpoints of every kind (the commits before them deleted, so it must use
them), validates our ``.crc`` files with its checksum-mismatch check made fatal, and reads
the same rows at every version kept; we read Spark's checkpoints of every kind and validate
Spark's ``.crc`` files against our own replay."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

from .test_interop_read import assert_same_rows

MISMATCH_FATAL = "spark.databricks.delta.checksum.mismatch.fatal"
PART_SIZE = "spark.databricks.delta.checkpoint.partSize"


@pytest.fixture
def strict_spark(spark: Any) -> Iterator[Any]:
    """The shared session with checksum mismatches fatal, and Delta's log cache cleared so
    that every table is read from its files."""
    spark.conf.set(MISMATCH_FATAL, "true")
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    try:
        yield spark
    finally:
        spark.conf.unset(MISMATCH_FATAL)
        spark.conf.unset(PART_SIZE)


def spark_rows(spark: Any, path: Path, version: int | None = None) -> Any:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(str(path)).toArrow()


def ours(path: Path, version: int | None = None) -> Any:
    return deltalog.read_table(str(path), version=version)


def spark_validates_checksum(spark: Any, path: Path) -> int:
    """Spark's snapshot of the latest version, checked against its ``.crc`` (which Spark
    must have read); a mismatch raises (the check is fatal). Returns the version."""
    jvm = spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(path))
    snapshot = log.unsafeVolatileSnapshot()
    assert snapshot.checksumOpt().isDefined(), "Spark did not read our .crc"
    empty = getattr(jvm, "scala.collection.immutable.Map$").__getattr__("MODULE$").empty()
    assert snapshot.validateChecksum(empty)
    return int(snapshot.version())


def history(path: Path, configuration: dict[str, str] | None = None) -> int:
    """Nine versions written by us: appends, a partition overwrite, an application id; the
    post-commit hook writes every ``.crc`` (and nothing else: interval above 9)."""
    config = {"delta.checkpointInterval": "100", **(configuration or {})}
    deltalog.write_table(
        path, pa.table({"id": [0], "part": [0]}), partition_by=["part"], configuration=config
    )
    for version in range(1, 9):
        data = pa.table({"id": [version, version * 10], "part": [version % 3] * 2})
        if version == 4:
            deltalog.write_table(path, data, mode="overwrite", predicate="part = 1")
        elif version == 6:
            deltalog.write_table(path, data, mode="append", app_id="job", app_version=6)
        else:
            deltalog.write_table(path, data, mode="append")
    return 8


V2 = {"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"}


@pytest.mark.parametrize(
    ("configuration", "options"),
    [
        (None, {}),
        (None, {"part_size": 3}),
        (V2, {}),
        (V2, {"v2_format": "json"}),
        (V2, {"v2_sidecars": False}),
        ({"delta.checkpoint.writeStatsAsJson": "false"}, {}),
    ],
    ids=["classic", "multi-part", "v2-parquet-sidecars", "v2-json", "v2-inline", "struct-stats"],
)
def test_spark_reads_our_checkpoints(
    strict_spark: Any,
    tmp_path: Path,
    configuration: dict[str, str] | None,
    options: dict[str, Any],
) -> None:
    path = tmp_path / "t"
    latest = history(path, configuration)
    table = deltalog.DeltaTable(str(path))
    expected = {version: ours(path, version) for version in range(3, latest + 1)}
    table.checkpoint(3, **options)
    table.checkpoint(**options)
    for version in range(3):
        (path / "_delta_log" / f"{version:020}.json").unlink()
    for version in range(3, latest + 1):
        assert_same_rows(spark_rows(strict_spark, path, version), expected[version], f"v{version}")
    assert spark_validates_checksum(strict_spark, path) == latest
    details = strict_spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert details["numFiles"] == table.snapshot().num_files
    strict_spark.sql(f"INSERT INTO delta.`{path}` VALUES (99, 2)")
    assert_same_rows(ours(path), spark_rows(strict_spark, path), "after Spark's insert")
    assert deltalog.DeltaTable(str(path)).snapshot().validate_checksum()


def test_spark_validates_our_checksums_at_every_commit(strict_spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": [0], "s": ["a"]}))
    assert spark_validates_checksum(strict_spark, path) == 0
    for version in range(1, 12):
        data = pa.table({"id": [version], "s": [str(version)]})
        mode = "overwrite" if version == 5 else "append"
        result = deltalog.write_table(path, data, mode=mode, app_id="app", app_version=version)
        assert result.post_commit.errors == ()
        assert spark_validates_checksum(strict_spark, path) == version
    assert (path / "_delta_log" / f"{10:020}.checkpoint.parquet").exists()
    for version in range(12):
        assert_same_rows(
            spark_rows(strict_spark, path, version), ours(path, version), f"v{version}"
        )


def spark_table(spark: Any, path: Path, properties: str = "") -> None:
    """Twelve versions written by Spark: a checkpoint at 10 and a ``.crc`` for each."""
    tblproperties = f"TBLPROPERTIES ({properties})" if properties else ""
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, part INT) USING delta "
        f"PARTITIONED BY (part) {tblproperties}"
    )
    for version in range(1, 12):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES ({version}, {version % 3})")
        if version == 7:
            spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")


@pytest.mark.parametrize(
    ("properties", "part_size"),
    [
        ("", None),
        ("", "2"),
        ("'delta.checkpointPolicy' = 'v2'", None),
    ],
    ids=["classic", "multi-part", "v2"],
)
def test_we_read_sparks_checkpoints_and_validate_its_checksums(
    strict_spark: Any, tmp_path: Path, properties: str, part_size: str | None
) -> None:
    if part_size is not None:
        strict_spark.conf.set(PART_SIZE, part_size)
    path = tmp_path / "t"
    spark_table(strict_spark, path, properties)
    log = path / "_delta_log"
    assert any(name.name.startswith(f"{10:020}.checkpoint") for name in log.iterdir())
    table = deltalog.DeltaTable(str(path))
    for version in range(12):
        assert_same_rows(
            ours(path, version), spark_rows(strict_spark, path, version), f"v{version}"
        )
        snapshot = table.snapshot(version)
        assert snapshot.validate_checksum(), f"no .crc at {version}"
        assert snapshot.version_checksum().stored
    for version in range(10):
        (log / f"{version:020}.json").unlink()
    assert_same_rows(ours(path), spark_rows(strict_spark, path), "through Spark's checkpoint")


def test_spark_reads_every_version_kept_after_our_cleanup(
    strict_spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    # Spark refuses to time travel to commits older than the file retention: keep it long.
    retention = {
        "delta.logRetentionDuration": "interval 2 days",
        "delta.deletedFileRetentionDuration": "interval 30 days",
    }
    latest = history(path, retention)
    table = deltalog.DeltaTable(str(path))
    table.checkpoint(5)
    old = time.time() - 10 * 24 * 60 * 60
    for version in range(7):
        os.utime(path / "_delta_log" / f"{version:020}.json", (old, old))
    result = table.cleanup_metadata()
    assert result.oldest_kept_version == 5
    for version in range(5, latest + 1):
        assert_same_rows(
            spark_rows(strict_spark, path, version), ours(path, version), f"v{version}"
        )
    assert spark_validates_checksum(strict_spark, path) == latest


def log_name(url: str) -> str:
    return url.rsplit("/", 1)[-1]


@pytest.mark.parametrize("written_by", ["checkpoint", "cleanup"])
def test_spark_reads_our_classic_named_copy_of_a_v2_checkpoint(
    strict_spark: Any, tmp_path: Path, written_by: str
) -> None:
    path = tmp_path / "t"
    retention = {
        "delta.checkpointPolicy": "v2",
        "delta.logRetentionDuration": "interval 2 days",
        "delta.deletedFileRetentionDuration": "interval 30 days",
    }
    latest = history(path, retention)
    table = deltalog.DeltaTable(str(path))
    expected = {version: ours(path, version) for version in range(5, latest + 1)}
    table.checkpoint(5)
    newest = table.checkpoint(classic_compat=written_by == "checkpoint")
    classic = f"{latest:020}.checkpoint.parquet"
    if written_by == "cleanup":
        old = time.time() - 10 * 24 * 60 * 60
        for version in range(7):
            os.utime(path / "_delta_log" / f"{version:020}.json", (old, old))
        result = table.cleanup_metadata()
        assert result.oldest_kept_version == 5
        assert result.compat_checkpoint is not None
        assert log_name(result.compat_checkpoint) == classic
    else:
        assert log_name(newest.files[1]) == classic
    # Both checkpoints of the newest version present, then only the classic-named copy: Spark
    # reads the same rows either way, and through the copy it must use the shared sidecars.
    assert_same_rows(spark_rows(strict_spark, path), expected[latest], "both")
    (path / "_delta_log" / log_name(newest.files[0])).unlink()
    for version in range(latest):
        (path / "_delta_log" / f"{version:020}.json").unlink(missing_ok=True)
    strict_spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    assert_same_rows(spark_rows(strict_spark, path), expected[latest], "through the copy")
    assert_same_rows(ours(path), expected[latest], "ours through the copy")


def test_we_read_sparks_classic_named_copy_of_a_v2_checkpoint(
    strict_spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    properties = "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '5'"
    strict_spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, part INT) USING delta "
        f"PARTITIONED BY (part) TBLPROPERTIES ({properties})"
    )
    for version in range(1, 7):
        strict_spark.sql(f"INSERT INTO delta.`{path}` VALUES ({version}, {version % 3})")
    log = path / "_delta_log"
    uuid_named = [p.name for p in log.iterdir() if p.name.startswith(f"{5:020}.checkpoint.")]
    # Spark's default V2 checkpoint: a UUID-named JSON manifest.
    assert len(uuid_named) == 1, uuid_named
    assert uuid_named[0].endswith(".json"), uuid_named
    # The classic-named copy, written by the code Spark's metadata cleanup runs before it
    # deletes anything (the checkpoint provider's createCompatibilityCheckpoint).
    jvm = strict_spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        strict_spark._jsparkSession, str(path)
    )
    snapshot = delta_log.unsafeVolatileSnapshot()
    provider = snapshot.checkpointProvider()
    assert provider.version() == 5
    provider.createCompatibilityCheckpoint(
        strict_spark._jsparkSession, delta_log, snapshot.logPath(), delta_log.newDeltaHadoopConf()
    )
    classic = log / f"{5:020}.checkpoint.parquet"
    assert classic.exists()
    expected = spark_rows(strict_spark, path)
    assert_same_rows(ours(path), expected, "both")
    (log / uuid_named[0]).unlink()
    for version in range(5):
        (log / f"{version:020}.json").unlink()
    assert_same_rows(ours(path), expected, "through Spark's copy")
    table = deltalog.DeltaTable(str(path))
    assert table.snapshot(5).num_files == 5
    assert_same_rows(ours(path, 5), spark_rows(strict_spark, path, 5), "v5 through the copy")
