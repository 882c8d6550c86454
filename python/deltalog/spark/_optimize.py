"""OPTIMIZE run by Spark's executors (``deltalog.spark.DeltaTable.optimize()``).

The driver plans the run with deltalog (the candidate files packed into bins, as deltalog's
own ``optimize`` packs them); each bin is one Spark task, in which deltalog's Rust code reads
the bin's rows (deletion vectors applied, row ids kept), lays them out (file order, Z-order or
clustering) and writes new files; the driver commits every bin's files in ONE ``OPTIMIZE``
commit (``dataChange=false``). A failed job commits nothing; the files its finished tasks
wrote are referenced by no commit, and VACUUM removes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import _core
from ._dml import TableRef

if TYPE_CHECKING:
    import pyarrow
    from pyspark.sql import SparkSession

__all__ = ["optimize_files"]


def optimize_files(
    spark: SparkSession,
    table: TableRef,
    partition_filter: str | None,
    z_order_by: list[str] | None,
) -> dict[str, Any]:
    """Compacts (or Z-orders by ``z_order_by``) the files of the partitions matching
    ``partition_filter``, one Spark task per bin; returns deltalog's OPTIMIZE metrics."""
    spec = {"filter": partition_filter, "zOrderBy": list(z_order_by or [])}
    uri, storage = table.uri, table.options()
    plan, bins = _core.plan_distributed_optimize(uri, json.dumps(spec), storage)
    outcomes: list[bytes] = []
    if bins:

        def task(batches: Iterator[pyarrow.RecordBatch]) -> Iterator[pyarrow.RecordBatch]:
            import pyarrow as pa

            for batch in batches:
                for bin in batch.column(0).to_pylist():
                    outcome = _core.rewrite_optimize_bin(uri, plan, int(bin), storage)
                    yield pa.record_batch([pa.array([outcome], pa.binary())], names=["outcome"])

        rows = spark.range(0, bins, 1, bins).mapInArrow(task, "outcome binary").collect()
        outcomes = [bytes(row[0]) for row in rows]
    return _core.commit_distributed_optimize(uri, plan, outcomes, storage)
