"""Reading Delta tables from PySpark (pyspark >= 4.0) through deltalog.

>>> import deltalog.spark
>>> deltalog.spark.register(spark)
>>> spark.read.format("deltalog").option("versionAsOf", 3).load("path/to/table")
>>> deltalog.spark.read(spark, "path/to/table", columns=["id", "p"], filter="p = 'a'")

:func:`register` adds the ``deltalog`` Python data source to a session (``delta`` is
delta-spark's name). Its reads are planned on the driver by deltalog and read in Spark's tasks
by deltalog's Rust scan, so deletion vectors, column mapping, partition values, type widening
and timestamps are applied exactly as in :meth:`deltalog.Snapshot.scan`.

:func:`read` plans with deltalog and, where the plan can be expressed that way (no deletion
vector on the files read, column mapping at most a rename, no type change), hands the file
list to Spark's native Parquet reader, which is faster; otherwise it reads through the data
source.
"""

from __future__ import annotations

from ._native import read
from ._source import (
    PUSHDOWN_CONF,
    SOURCE_NAME,
    DeltalogDataSource,
    DeltalogPartition,
    DeltalogPushdownDataSource,
    DeltalogPushdownReader,
    DeltalogReader,
    filter_pushdown_enabled,
    register,
)
from ._types import arrow_schema, spark_schema

__all__ = [
    "PUSHDOWN_CONF",
    "SOURCE_NAME",
    "DeltalogDataSource",
    "DeltalogPartition",
    "DeltalogPushdownDataSource",
    "DeltalogPushdownReader",
    "DeltalogReader",
    "arrow_schema",
    "filter_pushdown_enabled",
    "read",
    "register",
    "spark_schema",
]
