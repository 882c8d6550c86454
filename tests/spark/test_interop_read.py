"""deltalog reads what Delta Lake on Spark wrote exactly as Spark reads it back.

Each table of :mod:`tables` is compared at every version: the columns (logical names, in
order, and their types up to representation) and the rows as a multiset. At the latest version
also filtered and projected scans; ``read_table``; row ids against Spark's ``_metadata``; and
the change feed against Spark's ``readChangeFeed``. Tests of deltalog API that is not built yet
are skipped, saying so.
"""

from __future__ import annotations

import datetime as dt
import decimal
import inspect
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

import deltalog

from .conftest import SparkTables
from .tables import CASES, TableCase

pa = pytest.importorskip("pyarrow")

HAS_SCAN = hasattr(deltalog.Snapshot, "scan")
HAS_READ_TABLE = hasattr(deltalog, "read_table")
HAS_CHANGES = hasattr(deltalog.DeltaTable, "changes")

HAS_ROW_TRACKING = (
    HAS_SCAN and "row_tracking" in inspect.signature(deltalog.Snapshot.scan).parameters
)

needs_scan = pytest.mark.skipif(not HAS_SCAN, reason="deltalog scan API not built yet")
CHANGE_FEED_CASES = [case for case in CASES if case.change_feed]
ROW_TRACKING_CASES = [case for case in CASES if case.row_tracking]

#: Spark results by (table, version, filter, columns); each is read once per run.
_spark_results: dict[tuple[str, int, str | None, tuple[str, ...] | None], Any] = {}


def test_snapshot_matches_spark(case: TableCase, spark_tables: SparkTables, spark: Any) -> None:
    """At every version, the snapshot's schema names and live row count (records less the
    rows deletion vectors remove) are Spark's."""
    path = spark_tables.path(case)
    table = deltalog.DeltaTable(str(path))
    for version in spark_tables.versions(case):
        expected = spark_read(spark, case, path, version)
        snapshot = table.snapshot(version)
        assert snapshot.schema.names == expected.column_names, f"version {version}"
        files = pa.table(snapshot.files())
        records = files.column("num_records").to_pylist()
        if None in records:
            continue
        deleted = [
            dv["cardinality"] if dv else 0 for dv in files.column("deletion_vector").to_pylist()
        ]
        assert sum(records) - sum(deleted) == expected.num_rows, f"version {version}"


@needs_scan
def test_scan_matches_spark(case: TableCase, spark_tables: SparkTables, spark: Any) -> None:
    """At every version, a full scan returns Spark's columns and rows."""
    path = spark_tables.path(case)
    table = deltalog.DeltaTable(str(path))
    for version in spark_tables.versions(case):
        expected = spark_read(spark, case, path, version)
        actual = to_arrow(table.snapshot(version=version).scan())
        assert_same_rows(actual, expected, f"{case.name} at version {version}")


@needs_scan
def test_filtered_scan_matches_spark(
    case: TableCase, spark_tables: SparkTables, spark: Any
) -> None:
    """At the latest version, a scan with each filter returns the rows of Spark's ``where``."""
    if not case.filters:
        pytest.skip(f"{case.name} has no filters to check")
    path = spark_tables.path(case)
    version = spark_tables.versions(case)[-1]
    snapshot = deltalog.DeltaTable(str(path)).snapshot(version=version)
    for predicate in case.filters:
        expected = spark_read(spark, case, path, version, predicate=predicate)
        actual = to_arrow(snapshot.scan(filter=predicate))
        assert_same_rows(actual, expected, f"{case.name} at version {version} where {predicate}")


@needs_scan
def test_projected_scan_matches_spark(
    case: TableCase, spark_tables: SparkTables, spark: Any
) -> None:
    """At the latest version, a scan of the first and last columns returns Spark's ``select``
    of them."""
    path = spark_tables.path(case)
    version = spark_tables.versions(case)[-1]
    snapshot = deltalog.DeltaTable(str(path)).snapshot(version=version)
    full = spark_read(spark, case, path, version)
    columns = [full.column_names[0], full.column_names[-1]]
    expected = spark_read(spark, case, path, version, columns=columns)
    actual = to_arrow(snapshot.scan(columns=columns))
    assert_same_rows(actual, expected, f"{case.name} at version {version} columns {columns}")


@pytest.mark.skipif(not HAS_READ_TABLE, reason="deltalog.read_table not built yet")
def test_read_table_matches_spark(case: TableCase, spark_tables: SparkTables, spark: Any) -> None:
    """``read_table`` at the latest version and at version 1 (time travel) is Spark's read."""
    path = spark_tables.path(case)
    versions = spark_tables.versions(case)
    latest = to_arrow(deltalog.read_table(str(path)))
    assert_same_rows(latest, spark_read(spark, case, path, versions[-1]), f"{case.name} latest")
    if len(versions) > 1:
        old = to_arrow(deltalog.read_table(str(path), version=1))
        assert_same_rows(old, spark_read(spark, case, path, 1), f"{case.name} at version 1")


@pytest.mark.skipif(not HAS_CHANGES, reason="DeltaTable.changes not built yet")
@pytest.mark.parametrize("case", CHANGE_FEED_CASES, ids=[c.name for c in CHANGE_FEED_CASES])
def test_change_feed_matches_spark(case: TableCase, spark_tables: SparkTables, spark: Any) -> None:
    """Each range of the change feed holds Spark's ``readChangeFeed`` rows, with their
    ``_change_type``, ``_commit_version`` and ``_commit_timestamp``."""
    path = spark_tables.path(case)
    latest = spark_tables.versions(case)[-1]
    table = deltalog.DeltaTable(str(path))
    for start, end in case.change_feed:
        expected = spark_change_feed(spark, path, start, latest if end is None else end)
        actual = to_arrow(table.changes(start, end))
        assert_same_rows(actual, expected, f"{case.name} changes {start} to {end}")


@pytest.mark.skipif(not HAS_ROW_TRACKING, reason="Snapshot.scan(row_tracking=) not built yet")
@pytest.mark.parametrize("case", ROW_TRACKING_CASES, ids=[c.name for c in ROW_TRACKING_CASES])
def test_row_tracking_matches_spark(case: TableCase, spark_tables: SparkTables, spark: Any) -> None:
    """At every version, each row's ``row_id`` and ``row_commit_version`` are those of Spark's
    ``_metadata.row_id`` and ``_metadata.row_commit_version``."""
    path = spark_tables.path(case)
    table = deltalog.DeltaTable(str(path))
    for version in spark_tables.versions(case):
        expected = (
            spark.read.format("delta")
            .option("versionAsOf", version)
            .load(str(path))
            .select("*", "_metadata.row_id", "_metadata.row_commit_version")
            .toArrow()
        )
        actual = to_arrow(table.snapshot(version=version).scan(row_tracking=True))
        assert_same_rows(actual, expected, f"{case.name} row tracking at version {version}")


# --- Spark's side -------------------------------------------------------------------------


def spark_read(
    spark: Any,
    case: TableCase,
    path: Any,
    version: int,
    *,
    predicate: str | None = None,
    columns: Sequence[str] | None = None,
) -> Any:
    """Spark's read of the table at ``version`` (filtered, projected) as a pyarrow Table."""
    key = (case.name, version, predicate, None if columns is None else tuple(columns))
    if key not in _spark_results:
        frame = spark.read.format("delta").option("versionAsOf", version).load(str(path))
        if predicate is not None:
            frame = frame.where(predicate)
        if columns is not None:
            frame = frame.select(*[f"`{name}`" for name in columns])
        _spark_results[key] = frame.toArrow()
    return _spark_results[key]


def spark_change_feed(spark: Any, path: Any, start: int, end: int) -> Any:
    """Spark's change feed of versions ``start`` to ``end`` as a pyarrow Table."""
    frame = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", start)
        .option("endingVersion", end)
        .load(str(path))
    )
    return frame.toArrow()


# --- comparison ---------------------------------------------------------------------------


def to_arrow(result: Any) -> Any:
    """A pyarrow Table from a deltalog result (anything with ``__arrow_c_stream__``)."""
    return result if isinstance(result, pa.Table) else pa.table(result)


def assert_same_rows(actual: Any, expected: Any, what: str) -> None:
    """``actual`` has ``expected``'s column names (in order) and types up to representation,
    and the same rows as a multiset."""
    assert actual.column_names == expected.column_names, f"{what}: column names"
    actual_types = [comparable_type(field.type) for field in actual.schema]
    expected_types = [comparable_type(field.type) for field in expected.schema]
    assert [str(t) for t in actual_types] == [str(t) for t in expected_types], f"{what}: types"
    actual_rows = Counter(canonical_rows(actual, actual_types))
    expected_rows = Counter(canonical_rows(expected, expected_types))
    if actual_rows != expected_rows:
        missing = list((expected_rows - actual_rows).elements())[:10]
        extra = list((actual_rows - expected_rows).elements())[:10]
        pytest.fail(
            f"{what}: {actual.num_rows} rows, Spark has {expected.num_rows}\n"
            f"missing (Spark has them, first 10): {missing}\n"
            f"extra (Spark lacks them, first 10): {extra}"
        )


def comparable_type(arrow_type: Any) -> Any:
    """The type with representation choices folded: dictionary → values, large/view strings
    and binaries → plain, any timestamp unit → µs with zone ``UTC`` (zoned) or none,
    list and map child names → defaults, every field nullable."""
    types = pa.types
    if types.is_dictionary(arrow_type):
        return comparable_type(arrow_type.value_type)
    if types.is_large_string(arrow_type) or types.is_string_view(arrow_type):
        return pa.string()
    if types.is_large_binary(arrow_type) or types.is_binary_view(arrow_type):
        return pa.binary()
    if types.is_timestamp(arrow_type):
        return pa.timestamp("us", tz="UTC" if arrow_type.tz is not None else None)
    if types.is_map(arrow_type):
        return pa.map_(comparable_type(arrow_type.key_type), comparable_type(arrow_type.item_type))
    if (
        types.is_list(arrow_type)
        or types.is_large_list(arrow_type)
        or types.is_list_view(arrow_type)
    ):
        return pa.list_(comparable_type(arrow_type.value_type))
    if types.is_struct(arrow_type):
        return pa.struct(
            [
                pa.field(arrow_type.field(i).name, comparable_type(arrow_type.field(i).type))
                for i in range(arrow_type.num_fields)
            ]
        )
    return arrow_type


def canonical_rows(table: Any, types: Sequence[Any]) -> list[str]:
    """Each row as one string: values cast to ``types``, instants in UTC, map entries sorted."""
    schema = pa.schema(
        [pa.field(name, t) for name, t in zip(table.column_names, types, strict=True)]
    )
    rows = table.cast(schema, safe=False).to_pylist()
    return [repr(tuple(canonical_value(value) for value in row.values())) for row in rows]


def canonical_value(value: Any) -> Any:
    """A value that compares and sorts by its contents, whatever its Python type."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return ("instant", value.astimezone(dt.timezone.utc).isoformat())
        return ("local", value.isoformat())
    if isinstance(value, decimal.Decimal):
        return ("decimal", str(value))
    if isinstance(value, dict):
        return tuple((key, canonical_value(item)) for key, item in value.items())
    if isinstance(value, list):
        items = [canonical_value(item) for item in value]
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return ("map", tuple(sorted(items, key=repr)))
        return ("list", tuple(items))
    if isinstance(value, tuple):
        return tuple(canonical_value(item) for item in value)
    return value
