"""The operations of ``tests/test_combinations.py`` on tables whose newest state Delta on
Spark wrote: its ``.crc`` files, its classic checkpoints (with ``stats_parsed`` and
``partitionValues_parsed``, without either, multi-part) and its V2 checkpoints (Parquet and
JSON manifests, sidecars), alone or followed by commits. Spark writes each table once (with
``INSERT``, and ``DELETE`` making deletion vectors the checkpoint holds); each case runs one
of our operations on a copy, checks every version against the plain-Python model, and Spark
must read every version we wrote with the rows we read.

The matrix (Spark's time is dear): every operation on Spark's classic checkpoint of the
issue-23 shape (partitioned, deletion vectors); ``delete``, ``merge`` and one more operation
(:data:`EXTRAS`) on every other Spark state source; two feature shapes (column mapping with
``partitionValues_parsed`` of int and date columns with NULLs, change data feed, row tracking,
in-commit timestamps) with ``delete``, ``update``, ``merge`` and ``optimize`` on one source
each.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pytest
from test_combinations import (
    BASE_PROPERTIES,
    CDF,
    COW,
    DATES,
    DV,
    ICT,
    ISSUE,
    OPS,
    ROW_TRACKING,
    V2_POLICY,
    Model,
    Shape,
    Source,
    exercise,
)

from .tables import run, spark_conf
from .test_interop_read import assert_same_rows
from .test_interop_write import ours, spark_rows

PART_SIZE = "spark.databricks.delta.checkpoint.partSize"
TOP_LEVEL = "spark.databricks.delta.checkpointV2.topLevelFileFormat"
EVERY_3 = {"delta.checkpointInterval": "3"}


@dataclass(frozen=True)
class SparkSource:
    """How Spark leaves the newest state: ``source`` is our equivalent (its table properties
    go to Spark's ``CREATE TABLE``; its checkpoint options to our follow-up checkpoint),
    ``conf`` the session configuration Spark writes under, ``tail`` whether commits follow
    Spark's checkpoint (at version 3, ``delta.checkpointInterval`` 3)."""

    source: Source
    conf: Mapping[str, str] = field(default_factory=dict)
    tail: bool = False

    @property
    def name(self) -> str:
        """The test id part."""
        return "spark-" + self.source.name


CLASSIC = SparkSource(Source("classic", {}, EVERY_3))
SPARK_SOURCES = [
    CLASSIC,
    SparkSource(Source("crc")),
    SparkSource(
        Source(
            "classic-json-stats", {}, {**EVERY_3, "delta.checkpoint.writeStatsAsStruct": "false"}
        )
    ),
    SparkSource(
        Source(
            "classic-struct-stats", {}, {**EVERY_3, "delta.checkpoint.writeStatsAsJson": "false"}
        )
    ),
    SparkSource(Source("multi-part", {"part_size": 2}, EVERY_3), {PART_SIZE: "2"}),
    SparkSource(
        Source("v2-parquet-sidecars", {"part_size": 2}, {**EVERY_3, **V2_POLICY}),
        {TOP_LEVEL: "parquet", PART_SIZE: "2"},
    ),
    SparkSource(Source("v2-json", {}, {**EVERY_3, **V2_POLICY}), {TOP_LEVEL: "json"}),
    SparkSource(Source("classic+commits", {}, EVERY_3), tail=True),
]
CM_NAME = {"delta.columnMapping.mode": "name"}
CM_ID = {"delta.columnMapping.mode": "id"}
#: The feature shapes: partitionValues_parsed of int and date columns with NULLs under column
#: mapping (physical names), with the change data feed, row tracking, in-commit timestamps.
SPARK_SHAPES = [
    Shape(
        "int-part-null-cm-name-cdf-dv",
        pa.int32(),
        (1, 2, None),
        properties={**DV, **CDF, **CM_NAME},
    ),
    Shape(
        "date-part-null-cm-id-rt-ict-cow",
        pa.date32(),
        DATES,
        properties={**COW, **ROW_TRACKING, **ICT, **CM_ID},
    ),
]
SPARK_TYPES = {"string": "STRING", "int32": "INT", "date32[day]": "DATE"}


# --- Spark's tables -----------------------------------------------------------------------


def spark_insert(spark: Any, model: Model, ids: range) -> None:
    """Spark appends fresh rows with ``ids``."""
    rows = model.shape.rows(ids)
    part_type = SPARK_TYPES[str(model.shape.part_type)]
    frame = spark.createDataFrame(
        [(r["id"], r["p"], r["v"]) for r in rows], f"id BIGINT, p {part_type}, v INT"
    )
    frame.write.format("delta").mode("append").save(str(model.path))
    model.rows += rows
    model.record()


def spark_delete(spark: Any, model: Model, ids: tuple[int, ...]) -> None:
    """Spark deletes the rows with ``ids``."""
    run(spark, str(model.path), f"DELETE FROM {{t}} WHERE id IN {ids}")
    model.rows = [r for r in model.rows if r["id"] not in ids]
    model.record()


def spark_build(spark: Any, path: Path, shape: Shape, source: SparkSource) -> Model:
    """Spark's table of ``shape``: created empty (version 0), two inserts, a delete (the
    checkpoint, when the source has one, at version 3), then two more commits with ``tail``."""
    model = Model(path, shape, source.source)
    properties = {**BASE_PROPERTIES, **shape.properties, **source.source.properties}
    props = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    part_type = SPARK_TYPES[str(shape.part_type)]
    partition = "PARTITIONED BY (p)" if shape.partitioned else ""
    with spark_conf(spark, source.conf):
        run(
            spark,
            str(path),
            f"CREATE TABLE {{t}} (id BIGINT, p {part_type}, v INT) USING delta {partition} "
            f"TBLPROPERTIES ({props})",
        )
        model.record()
        spark_insert(spark, model, range(30))
        spark_insert(spark, model, range(30, 40))
        spark_delete(spark, model, (3, 33))
        if source.tail:
            spark_insert(spark, model, range(40, 44))
            spark_delete(spark, model, (41, 5))
    expect_checkpoint(path, source)
    return model


def expect_checkpoint(path: Path, source: SparkSource) -> None:
    """Fails unless Spark left the checkpoint the source stands for (or none for ``crc``)."""
    names = [p.name for p in (path / "_delta_log").iterdir()]
    checkpoints = [name for name in names if ".checkpoint." in name]
    if source.source.checkpoint is None:
        assert not checkpoints, checkpoints
        return
    assert any(name.startswith(f"{3:020}.") for name in checkpoints), names
    if PART_SIZE in source.conf and TOP_LEVEL not in source.conf:
        assert any(".checkpoint.0000000001." in name for name in checkpoints), checkpoints
    if TOP_LEVEL in source.conf:
        assert any(
            name.endswith("." + source.conf[TOP_LEVEL]) and "-" in name for name in checkpoints
        )


class SparkTables:
    """Spark's tables, each written once per run and copied for every case."""

    def __init__(self, spark: Any, root: Path) -> None:
        self.spark = spark
        self.root = root
        self.built: dict[tuple[str, str], Model] = {}

    def copy(self, shape: Shape, source: SparkSource, path: Path) -> Model:
        """A copy at ``path`` of Spark's table of ``shape`` in ``source``, with its model."""
        name = (shape.name, source.name)
        if name not in self.built:
            folder = self.root / f"{shape.name}@{source.name}"
            self.built[name] = spark_build(self.spark, folder, shape, source)
        template = self.built[name]
        shutil.copytree(template.path, path)
        return replace(copy.deepcopy(template), path=path)


@pytest.fixture(scope="module")
def spark_states(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkTables:
    """The tables Spark wrote, by shape and source."""
    return SparkTables(spark, tmp_path_factory.mktemp("spark-combinations"))


# --- the cases ----------------------------------------------------------------------------


class Case(NamedTuple):
    """One combination to run."""

    shape: Shape
    operation: str
    source: SparkSource

    @property
    def id(self) -> str:
        """The readable test id."""
        return f"{self.shape.name}:{self.operation}@{self.source.name}"


#: Besides ``delete`` and ``merge``: the operation each other source also meets.
EXTRAS = {
    "spark-crc": "optimize",
    "spark-classic-json-stats": "restore",
    "spark-classic-struct-stats": "update",
    "spark-multi-part": "checkpoint",
    "spark-v2-parquet-sidecars": "cleanup",
    "spark-v2-json": "checkpoint",
    "spark-classic+commits": "vacuum",
}
#: Each feature shape and the Spark source it meets.
SHAPE_SOURCES = {SPARK_SHAPES[0].name: CLASSIC, SPARK_SHAPES[1].name: SPARK_SOURCES[6]}


def matrix() -> list[Case]:
    """The covering design of the module docstring."""
    cases = [Case(ISSUE, op, CLASSIC) for op in OPS]
    for source in SPARK_SOURCES[1:]:
        for op in ("delete", "merge", EXTRAS[source.name]):
            cases.append(Case(ISSUE, op, source))
    for shape in SPARK_SHAPES:
        for op in ("delete", "update", "merge", "optimize"):
            cases.append(Case(shape, op, SHAPE_SOURCES[shape.name]))
    return cases


CASES = matrix()


def spark_reads_ours(spark: Any, model: Model, first: int) -> None:
    """Spark reads every version from ``first`` on (those kept and not vacuumed) as we read
    them."""
    latest = max(model.history)
    for version in range(max(first, model.readable_from, model.rows_from), latest + 1):
        assert_same_rows(
            spark_rows(spark, model.path, version), ours(model.path, version), f"v{version}"
        )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_combination_on_spark_state(
    spark: Any, spark_states: SparkTables, tmp_path: Path, case: Case
) -> None:
    """Our operation on a copy of Spark's table leaves the model's rows at every version,
    survives our checkpoint after it, and Spark reads what we wrote."""
    model = spark_states.copy(case.shape, case.source, tmp_path / "t")
    first = max(model.history) + 1
    exercise(model, case.operation, delete_after=False)
    spark_reads_ours(spark, model, first)
