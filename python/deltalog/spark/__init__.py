"""Reading Delta tables from PySpark (pyspark >= 4.0) through deltalog.

>>> import deltalog.spark
>>> deltalog.spark.register(spark)
>>> spark.read.format("deltalog").option("versionAsOf", 3).load("path/to/table")
>>> deltalog.spark.read(spark, "path/to/table", columns=["id", "p"], filter="p = 'a'")
>>> df.write.format("deltalog").mode("append").option("partitionBy", "p").save("path/to/table")
>>> deltalog.spark.write(df, "path/to/table", mode="overwrite", replace_where="p = 'a'")

:func:`register` adds the ``deltalog`` Python data source to a session (``delta`` is
delta-spark's name). Its reads are planned on the driver by deltalog and read in Spark's tasks
by deltalog's Rust scan, so deletion vectors, column mapping, partition values, type widening
and timestamps are applied exactly as in :meth:`deltalog.Snapshot.scan`.

:func:`read` plans with deltalog and, where the plan can be expressed that way (no deletion
vector on the files read, column mapping at most a rename, no type change), hands the file
list to Spark's native Parquet reader, which is faster; otherwise it reads through the data
source.

Writes (:func:`write`, ``df.write.format("deltalog")``) are planned on the driver, written to
Parquet data files by deltalog's Rust writer in Spark's tasks, and committed by the driver as
ONE Delta version (see ``_write.py``).

:class:`DeltaTable` is delta-spark's ``delta.tables.DeltaTable`` API: its ``delete`` and
``update`` run on Spark's executors and commit once (see ``_dml.py``).
"""

from __future__ import annotations

from ._builder import DeltaColumnBuilder, DeltaTableBuilder, IdentityGenerator
from ._delta_table import DeltaOptimizeBuilder, DeltaTable
from ._merge import DeltaMergeBuilder
from ._native import read
from ._register import PUSHDOWN_CONF, filter_pushdown_enabled, register, write
from ._source import (
    SOURCE_NAME,
    DeltalogDataSource,
    DeltalogPartition,
    DeltalogPushdownDataSource,
    DeltalogPushdownReader,
    DeltalogReader,
)
from ._types import arrow_schema, spark_schema
from ._write import DeltalogWriter

__all__ = [
    "PUSHDOWN_CONF",
    "SOURCE_NAME",
    "DeltaColumnBuilder",
    "DeltaMergeBuilder",
    "DeltaOptimizeBuilder",
    "DeltaTable",
    "DeltaTableBuilder",
    "DeltalogDataSource",
    "DeltalogPartition",
    "DeltalogPushdownDataSource",
    "DeltalogPushdownReader",
    "DeltalogReader",
    "DeltalogWriter",
    "IdentityGenerator",
    "arrow_schema",
    "filter_pushdown_enabled",
    "read",
    "register",
    "spark_schema",
    "write",
]
