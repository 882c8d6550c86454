"""Seeded random differential tests of deltalog against Delta Lake on Spark (issue 23): a few
fixed seeds per mode (each a random feature mix and a random sequence of operations applied to
twin tables, one written by deltalog, one by Spark, compared after every operation; see
``_twin.py``), and the seeds that once found a bug.

More seeds: ``.venv/bin/python -m tests.spark.run_differential --seeds 200 --ops 15``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._twin import Failure, run_seed

#: Operations per seed in CI (the command-line runner defaults to 15).
CI_OPS = 6

#: (seed, mode) run in CI, with their feature mixes: between them every feature of the mix.
CI_SEEDS = [
    (36, "twin"),  # partitioned by a date, column mapping (name), CDF, V2 checkpoints, a
    # CHECK constraint, a generated partition-free date column, copy-on-write
    (16, "spark-first"),  # partitioned, deletion vectors, column mapping (id), row tracking, CDF
    (32, "deltalog-first"),  # partitioned, deletion vectors, column mapping (name), CDF, in-commit
    # timestamps, V2 checkpoints, two generated columns
]

#: (seed, mode, operations) that once failed; each must pass now (the README's table of the
#: bugs these suites found says what each found).
REGRESSION_SEEDS: list[tuple[int, str, int]] = [
    (0, "twin", 1),  # row tracking tables created without the materialized column names
    (52, "spark-first", 14),  # a NaN with its sign bit set sorted below every number
    (344, "deltalog-first", 15),  # Spark's VACUUM deleted our files under non-ASCII partitions
    (1002, "twin", 12),  # RESTORE committed a version whose deletion vector file was vacuumed
    (1243, "spark-first", 15),  # RESTORE re-added deletion-vector files without numRecords
]


def run(spark: Any, tmp_path: Path, seed: int, mode: str, ops: int) -> None:
    """Runs the seed; a failure reports the step, the exact operation and the difference."""
    outcome = run_seed(spark, seed, mode, ops, tmp_path)
    if isinstance(outcome, Failure):
        log = "\n".join(outcome.log[-20:])
        pytest.fail(f"{outcome.report()}\n--- log ---\n{log}", pytrace=False)


@pytest.mark.parametrize(("seed", "mode"), CI_SEEDS, ids=[f"{m}-{s}" for s, m in CI_SEEDS])
def test_random_history_agrees_with_spark(spark: Any, tmp_path: Path, seed: int, mode: str) -> None:
    """After every operation the twins read alike in both engines, with the same change feed
    and row tracking; at the end Spark reads every version of A and extends it."""
    run(spark, tmp_path, seed, mode, CI_OPS)


@pytest.mark.parametrize(
    ("seed", "mode", "ops"),
    REGRESSION_SEEDS,
    ids=[f"{m}-{s}-{o}" for s, m, o in REGRESSION_SEEDS],
)
def test_regression_seed(spark: Any, tmp_path: Path, seed: int, mode: str, ops: int) -> None:
    """A seed that once found a bug in deltalog passes."""
    run(spark, tmp_path, seed, mode, ops)
