"""One Delta-on-Spark session for the whole test run, and the tables it writes.

The interop tests need pyspark 4.2 and the Delta jars that ``bash .ci/spark-deps`` installs
(into ``.cache/delta-jars/jars``, or the folder named by ``$DELTALOG_DELTA_JARS``); without
them every test of this package is skipped, saying what is missing (or fails, when
``$DELTALOG_REQUIRE_SPARK`` is set, as CI should).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .tables import CASES, TableCase

REPO_ROOT = Path(__file__).resolve().parents[2]
JAR_DIR = Path(os.environ.get("DELTALOG_DELTA_JARS", REPO_ROOT / ".cache" / "delta-jars" / "jars"))
#: The pyspark minor version the Delta jars are built for (delta-spark_4.2_2.13).
PYSPARK_MINOR = "4.2"


def spark_unavailable() -> str | None:
    """Why Delta on Spark cannot run here, or ``None`` when it can."""
    try:
        import pyspark
    except ImportError:
        return "pyspark is not installed (run `bash .ci/spark-deps`)"
    if not pyspark.__version__.startswith(PYSPARK_MINOR + "."):
        return f"pyspark {pyspark.__version__} is installed; the Delta jars need {PYSPARK_MINOR}.x"
    if not delta_jars():
        return f"no Delta jars in {JAR_DIR} (run `bash .ci/spark-deps`)"
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        return "no Java runtime (java on PATH or JAVA_HOME)"
    return None


def delta_jars() -> list[str]:
    return sorted(str(jar) for jar in JAR_DIR.glob("*.jar")) if JAR_DIR.is_dir() else []


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local[2] SparkSession with Delta Lake, shared by every test of the process (one per
    half of the suite, `tests/conftest.py`)."""
    reason = spark_unavailable()
    if reason is not None:
        if os.environ.get("DELTALOG_REQUIRE_SPARK"):
            pytest.fail(f"DELTALOG_REQUIRE_SPARK is set, but {reason}")
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    scratch = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-interop")
        .config("spark.jars", ",".join(delta_jars()))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        # Lets Python data sources (deltalog's) take Spark's filters.
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.local.dir", str(scratch / "local"))
        # Tiny tables: skip what only pays off on big data. The JIT keeps its optimizing
        # tier (no -XX:TieredStopAtLevel=1): over a suite of minutes the Spark tests run about
        # 40% faster with it.
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.databricks.delta.stateReconstructionValidation.enabled", "false")
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        # VACUUM lists the table with this many tasks (10,000 by default: minutes per VACUUM).
        .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


class SparkTables:
    """Builds each :class:`TableCase` on first use, once per run, under one folder."""

    def __init__(self, spark: Any, root: Path) -> None:
        self.spark = spark
        self.root = root
        self.built: dict[str, list[int]] = {}

    def path(self, case: TableCase) -> Path:
        """The table folder; building it first when needed."""
        if case.name not in self.built:
            self.built[case.name] = case.build(self.spark, str(self.root / case.name))
        return self.root / case.name

    def versions(self, case: TableCase) -> list[int]:
        """The versions to compare at (those the builder returned)."""
        self.path(case)
        return self.built[case.name]


@pytest.fixture(scope="session")
def spark_tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkTables:
    return SparkTables(spark, tmp_path_factory.mktemp("spark-tables"))


@pytest.fixture(params=CASES, ids=[case.name for case in CASES])
def case(request: pytest.FixtureRequest) -> TableCase:
    """Each table case in turn."""
    table_case: TableCase = request.param
    return table_case
