"""deltalog's PySpark data source (``format("deltalog")``) and fast path (``deltalog.spark.read``).

Through one local Spark session: every golden table reads its ``expected/`` rows, and the
fast path returns the data source's rows and schema; tables Delta on Spark writes read the
same through ``format("deltalog")`` as through ``format("delta")``, at several versions, with
filters (which must prune partitions when pushed), projections and time travel. The type
mapping, filter translation and options are also checked on their own, without Spark jobs.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import json
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark.sql.datasource")

import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from test_golden import WITH_EXPECTED_ROWS  # noqa: E402
from test_scan import TIMEZONES, rows  # noqa: E402

import deltalog  # noqa: E402
import deltalog.spark as dlspark  # noqa: E402
from conftest import GoldenTables  # noqa: E402
from deltalog.spark._filters import filter_text  # noqa: E402
from deltalog.spark._options import ReadOptions  # noqa: E402

from .conftest import SparkTables  # noqa: E402
from .tables import CASES, TableCase, run, spark_conf  # noqa: E402
from .test_interop_read import assert_same_rows, spark_read  # noqa: E402

#: Golden tables the fast path must refuse (mode="native"), and a word of the reason.
NOT_NATIVE = {
    "data-reader-timestamp_ntz-id-mode": "column mapping mode 'id'",
    "data-skipping-basic-stats-all-types-columnmapping-id": "column mapping mode 'id'",
    "table-with-columnmapping-mode-id": "column mapping mode 'id'",
    "dv-partitioned-with-checkpoint": "deletion vectors",
    "dv-with-columnmapping": "deletion vectors",
    "log-replay-dv-key-cases": "deletion vectors",
}


@pytest.fixture(scope="module")
def session(spark: Any) -> Any:
    """The shared session, with the ``deltalog`` data source registered."""
    dlspark.register(spark)
    return spark


# --- golden tables ------------------------------------------------------------------------


@pytest.mark.parametrize("name", WITH_EXPECTED_ROWS)
def test_golden_table_reads_its_expected_rows(
    session: Any, golden_tables: GoldenTables, name: str
) -> None:
    """``format("deltalog")`` returns the expected rows; ``deltalog.spark.read`` returns the
    same rows and the same schema, natively unless the table needs the Rust scan."""
    root = golden_tables.root(name)
    location = str(root / "delta")
    zone = TIMEZONES.get(name, "UTC")
    frame = session.read.format("deltalog").option("timezone", zone).load(location)
    expected = pq.read_table(root / "expected")
    if name in NOT_NATIVE:
        with pytest.raises(deltalog.UnsupportedFeatureError, match=NOT_NATIVE[name]):
            dlspark.read(session, location, timezone=zone, mode="native")
    fast = dlspark.read(session, location, timezone=zone)
    assert fast.schema == frame.schema
    for rows_of_one_path in read_tagged(frame, fast):
        assert_expected_rows(rows_of_one_path, expected)


# --- tables written by Delta on Spark -----------------------------------------------------


def test_reads_as_delta_does_at_several_versions(
    case: TableCase, spark_tables: SparkTables, session: Any
) -> None:
    """At a middle and the latest version, ``format("deltalog")`` returns
    ``format("delta")``'s rows; at the latest, ``deltalog.spark.read`` too, with the data
    source's schema."""
    path = spark_tables.path(case)
    versions = spark_tables.versions(case)
    middle, latest = versions[len(versions) // 2], versions[-1]
    if middle != latest:
        expected = spark_read(session, case, path, middle)
        frame = session.read.format("deltalog").option("versionAsOf", middle).load(str(path))
        assert_same_rows(frame.toArrow(), expected, f"{case.name} at version {middle}")
    expected = spark_read(session, case, path, latest)
    frame = session.read.format("deltalog").option("versionAsOf", latest).load(str(path))
    fast = dlspark.read(session, str(path))
    assert fast.schema == frame.schema
    ours, fast_rows = read_tagged(frame, fast)
    assert_same_rows(ours, expected, f"{case.name} at version {latest}")
    assert_same_rows(fast_rows, expected, f"{case.name} latest (fast path)")


def test_filters_read_as_delta_does(
    case: TableCase, spark_tables: SparkTables, session: Any
) -> None:
    """At the latest version, each filter returns ``format("delta")``'s rows, through the
    data source (Spark pushes what it can) and through the fast path."""
    if not case.filters:
        pytest.skip(f"{case.name} has no filters to check")
    path = spark_tables.path(case)
    version = spark_tables.versions(case)[-1]
    for predicate in case.filters:
        expected = spark_read(session, case, path, version, predicate=predicate)
        frame = session.read.format("deltalog").load(str(path)).where(predicate)
        fast = dlspark.read(session, str(path), filter=predicate)
        ours, fast_rows = read_tagged(frame, fast)
        assert_same_rows(ours, expected, f"{case.name} where {predicate}")
        assert_same_rows(fast_rows, expected, f"{case.name} where {predicate} (fast)")


def test_pushed_filters_prune_partitions(spark_tables: SparkTables, session: Any) -> None:
    """A pushed partition filter leaves only the matching files' input partitions (one file
    per partition here), as many as deltalog's own scan plans."""
    path = str(spark_tables.path(_case("partitioned")))
    snapshot = deltalog.DeltaTable(path).snapshot()
    reader = session.read.format("deltalog").option("maxPartitionBytes", "1")
    everything = reader.load(path)
    assert everything.rdd.getNumPartitions() == snapshot.num_files
    pruned = reader.load(path).where("p_int = 1 AND id > 0")
    matching = snapshot.scan(filter="p_int = 1 AND id > 0").files().num_rows
    assert 0 < matching < snapshot.num_files
    assert pruned.rdd.getNumPartitions() == matching
    not_pushed = reader.option("filterPushdown", "false").load(path).where("p_int = 1")
    assert not_pushed.rdd.getNumPartitions() == snapshot.num_files
    assert sorted(not_pushed.toArrow().column("id").to_pylist()) == sorted(
        reader.load(path).where("p_int = 1").toArrow().column("id").to_pylist()
    )


def test_projection_by_schema_and_by_columns_option(
    spark_tables: SparkTables, session: Any
) -> None:
    """A user schema (names in any case) and the ``columns`` option both project; rows are
    those of Spark's ``select``."""
    case = _case("column_mapping_name")
    path = str(spark_tables.path(case))
    version = spark_tables.versions(case)[-1]
    expected = spark_read(session, case, path, version, columns=["region", "info", "id"])
    by_schema = (
        session.read.format("deltalog")
        .schema("REGION string, info struct<alpha: int, b: string>, id int")
        .load(path)
    )
    assert by_schema.columns == ["REGION", "info", "id"]
    assert_same_rows(
        by_schema.withColumnRenamed("REGION", "region").toArrow(), expected, "user schema"
    )
    by_option = session.read.format("deltalog").option("columns", "region, info,id").load(path)
    assert by_option.columns == ["region", "info", "id"]
    assert_same_rows(by_option.toArrow(), expected, "columns option")
    fast = dlspark.read(session, path, columns=["region", "info", "id"])
    assert fast.schema == by_option.schema
    assert_same_rows(fast.toArrow(), expected, "fast path columns")


def test_time_travel_by_version_and_by_timestamp(spark_tables: SparkTables, session: Any) -> None:
    """``versionAsOf`` and ``timestampAsOf`` (the commit time of a version) read that
    version, as ``format("delta")`` does."""
    case = _case("deletion_vectors")
    path = str(spark_tables.path(case))
    table = deltalog.DeltaTable(path)
    version = 2
    committed = table.snapshot(version).timestamp.isoformat()
    expected = spark_read(session, case, path, version)
    for option, value in (("versionAsOf", str(version)), ("timestampAsOf", committed)):
        frame = session.read.format("deltalog").option(option, value).load(path)
        assert_same_rows(frame.toArrow(), expected, f"{option}={value}")
    fast = dlspark.read(session, path, timestamp=committed)
    assert_same_rows(fast.toArrow(), expected, "fast path by timestamp")


def test_timezone_option_reads_partition_timestamps_in_that_zone(
    session: Any, golden_tables: GoldenTables
) -> None:
    """Partition timestamps are wall-clock strings: ``timezone`` says where; the default is
    UTC for the data source, the session time zone for the fast path."""
    location = str(golden_tables.root("data-reader-partition-values") / "delta")

    def instants(frame: Any) -> set[Any]:
        return {value for value in frame.toArrow().column("as_timestamp").to_pylist() if value}

    in_utc = instants(session.read.format("deltalog").load(location))
    zone = "America/Los_Angeles"
    in_zone = instants(session.read.format("deltalog").option("timezone", zone).load(location))
    assert {instant - dt.timedelta(hours=7) for instant in in_zone} == in_utc
    assert instants(dlspark.read(session, location)) == in_utc
    with spark_conf(session, {"spark.sql.session.timeZone": zone}):
        assert instants(dlspark.read(session, location)) == in_zone


def test_filter_translation_reads_as_delta_does(session: Any, tmp_path: Path) -> None:
    """Filters of every kind Spark pushes (comparisons of each type, IN, null tests, null-safe
    equality, NOT, LIKE prefixes with wildcard characters) return ``format("delta")``'s
    rows."""
    path = str(tmp_path / "values")
    run(
        session,
        path,
        """CREATE TABLE {t} (i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 3), s STRING,
                             b BOOLEAN, day DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, bin BINARY,
                             st STRUCT<x: INT, y: STRING>, p STRING)
           USING delta PARTITIONED BY (p)""",
        """INSERT INTO {t} VALUES
           (1, 10000000000, 1.5, 0.1, 1.250, 'a_b', true, DATE'2024-01-01',
            TIMESTAMP'2024-01-01 10:00:00', TIMESTAMP_NTZ'2024-01-01 10:00:00', X'00ff',
            named_struct('x', 1, 'y', 'q'), 'p1'),
           (2, -5, -0.25, double('NaN'), -3.000, 'a%b', false, DATE'1600-06-15',
            TIMESTAMP'1969-12-31 23:59:59.999999', TIMESTAMP_NTZ'1900-01-01 00:00:00', X'',
            named_struct('x', 2, 'y', NULL), 'p2'),
           (3, NULL, NULL, double('Infinity'), NULL, 'axb', NULL, NULL, NULL, NULL, NULL,
            NULL, NULL),
           (4, 7, 0.1, -0.0, 99999.999, 'it''s \\\\ ok', true, DATE'9999-12-31',
            TIMESTAMP'9999-12-31 23:59:59.999999', TIMESTAMP_NTZ'9999-12-31 23:59:59',
            X'41', named_struct('x', NULL, 'y', 'r'), 'p1')""",
    )
    predicates = [
        "i = 2",
        "l > 0",
        "l <= 7",
        "f = 0.1",
        "f >= 1.5",
        "d = 0.1",
        "d > 1e300",
        "isnan(d)",
        "d < 'NaN'",
        "dec = 1.25",
        "dec < 0",
        "s = 'a_b'",
        "s LIKE 'a\\_%'",
        "s LIKE 'a\\%%'",
        "s LIKE '%b'",
        "s LIKE '%x%'",
        "s = 'it''s \\\\ ok'",
        "s IN ('a%b', 'axb')",
        "s NOT IN ('a%b', 'axb')",
        "b",
        "NOT b",
        "b <=> NULL",
        "NOT (b <=> true)",
        "day < DATE'2000-01-01'",
        "day = DATE'9999-12-31'",
        "ts > TIMESTAMP'2000-01-01 00:00:00'",
        "ts = TIMESTAMP'1969-12-31 23:59:59.999999'",
        "ntz <= TIMESTAMP_NTZ'1900-01-01 00:00:00'",
        "bin = X'00ff'",
        "st.x = 2",
        "st.y IS NULL",
        "st IS NOT NULL",
        "p = 'p1' AND i > 1",
        "p IS NULL",
        "i > 1 OR s = 'a_b'",
    ]
    # Two Spark jobs: Delta's rows with one match column per predicate, and one deltalog read
    # per predicate (each scan takes its own pushed filters) read together.
    matches = [f"coalesce({p}, false) AS _match_{k}" for k, p in enumerate(predicates)]
    delta = session.read.format("delta").load(path).selectExpr("*", *matches).toArrow()
    reads = [session.read.format("deltalog").load(path).where(p) for p in predicates]
    columns = reads[0].columns
    for k, actual in enumerate(read_tagged(*reads)):
        expected = delta.filter(delta.column(f"_match_{k}")).select(columns)
        assert_same_rows(actual, expected, f"where {predicates[k]}")


def test_not_null_columns_keep_their_nullability(session: Any, tmp_path: Path) -> None:
    """NOT NULL columns and struct fields are non-nullable through both paths, as in
    ``format("delta")``, though Spark's Parquet reader reads every field as nullable."""
    path = str(tmp_path / "not_null")
    run(
        session,
        path,
        """CREATE TABLE {t} (id BIGINT NOT NULL, s STRUCT<a: INT NOT NULL, b: STRING>,
                             t STRUCT<u: STRUCT<c: DATE NOT NULL> NOT NULL>, p INT NOT NULL)
           USING delta PARTITIONED BY (p)""",
        """INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x'),
                                   named_struct('u', named_struct('c', DATE'2024-01-01')), 1),
                                  (2, named_struct('a', 2, 'b', NULL),
                                   named_struct('u', named_struct('c', DATE'1970-01-02')), 2)""",
    )
    delta = session.read.format("delta").load(path)
    frame = session.read.format("deltalog").load(path)
    fast = dlspark.read(session, path, mode="native")
    assert frame.schema == delta.schema
    assert fast.schema == delta.schema
    expected, ours, fast_rows = read_tagged(delta, frame, fast)
    assert_same_rows(ours, expected, "data source")
    assert_same_rows(fast_rows, expected, "fast path")


def test_many_partitions_join_their_values(session: Any, tmp_path: Path) -> None:
    """More partition tuples than the fast path unions: their values are joined on the file
    path, spelled as Spark spells it, special characters included."""
    path = str(tmp_path / "many")
    groups = dlspark._native.MAX_UNION_GROUPS + 6
    run(
        session,
        path,
        "CREATE TABLE {t} (id BIGINT, p STRING, q DATE) USING delta PARTITIONED BY (p, q)",
        f"""INSERT INTO {{t}} SELECT id, concat('v %2F é+=', CAST(id % {groups} AS STRING)),
                                     date_add(DATE'2024-01-01', CAST(id % 3 AS INT))
           FROM range(0, {groups * 2}, 1, 1)""",
    )
    delta = session.read.format("delta").load(path)
    fast = dlspark.read(session, path, mode="native")
    assert fast.schema == session.read.format("deltalog").load(path).schema
    filtered = dlspark.read(session, path, filter="q = DATE'2024-01-02'", mode="native")
    expected, fast_rows, filtered_rows = read_tagged(delta.select(*fast.columns), fast, filtered)
    assert_same_rows(fast_rows, expected, "joined partition values")
    day = pc.equal(expected.column("q"), pa.scalar(dt.date(2024, 1, 2)))
    assert_same_rows(filtered_rows, expected.filter(day), "joined, filtered")


def test_variant_columns_read_as_delta_does(session: Any, tmp_path: Path) -> None:
    """Variant columns (top level and nested) reach Spark as variants; the fast path leaves
    them to the data source."""
    path = str(tmp_path / "variant")
    run(
        session,
        path,
        "CREATE TABLE {t} (id INT, v VARIANT, s STRUCT<w: VARIANT>) USING delta",
        """INSERT INTO {t} VALUES (1, parse_json('{"a": [1, 2.5, "x"]}'),
                                   named_struct('w', parse_json('3'))),
                                  (2, NULL, NULL)""",
    )

    def as_json(frame: Any) -> Any:
        return frame.selectExpr("id", "to_json(v) AS v", "to_json(s.w) AS w")

    delta = session.read.format("delta").load(path)
    frame = session.read.format("deltalog").load(path)
    assert frame.schema == delta.schema
    with pytest.raises(deltalog.UnsupportedFeatureError, match="variant"):
        dlspark.read(session, path, mode="native")
    fast = dlspark.read(session, path)
    expected, ours, fast_rows = read_tagged(as_json(delta), as_json(frame), as_json(fast))
    assert sorted(ours.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)
    assert sorted(fast_rows.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)


def test_table_without_files_reads_no_rows(session: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "empty")
    run(session, path, "CREATE TABLE {t} (id INT, p STRING) USING delta PARTITIONED BY (p)")
    frame = session.read.format("deltalog").load(path)
    assert frame.count() == 0
    assert frame.columns == ["id", "p"]
    fast = dlspark.read(session, path)
    assert fast.schema == frame.schema
    assert fast.count() == 0


def test_session_without_filter_pushdown(session: Any, spark_tables: SparkTables) -> None:
    """With pushdown off, ``register`` gives readers without ``pushFilters`` (which Spark
    would refuse), and Spark filters the rows itself."""
    case = _case("partitioned")
    path = str(spark_tables.path(case))
    expected = spark_read(
        session, case, path, spark_tables.versions(case)[-1], predicate="p_int = 1"
    )
    try:
        with spark_conf(session, {dlspark.PUSHDOWN_CONF: "false"}):
            assert not dlspark.filter_pushdown_enabled(session)
            dlspark.register(session)
            frame = session.read.format("deltalog").load(path).where("p_int = 1")
            assert_same_rows(frame.toArrow(), expected, "without pushdown")
            fast = dlspark.read(session, path, filter="p_int = 1", mode="deltalog")
            assert_same_rows(fast.toArrow(), expected, "without pushdown, through read()")
    finally:
        dlspark.register(session)


def test_read_errors_name_the_problem(session: Any, spark_tables: SparkTables) -> None:
    path = str(spark_tables.path(_case("partitioned")))
    with pytest.raises(Exception, match="no column 'nope'"):
        session.read.format("deltalog").schema("nope int").load(path).collect()
    with pytest.raises(Exception, match="not both"):
        session.read.format("deltalog").option("versionAsOf", 1).option(
            "timestampAsOf", "2024-01-01"
        ).load(path).collect()
    with pytest.raises(deltalog.InvalidArgumentError, match="no column 'nope'"):
        dlspark.read(session, path, columns=["nope"])
    with pytest.raises(deltalog.InvalidArgumentError, match="mode"):
        dlspark.read(session, path, mode="fast")


# --- pieces, without Spark jobs -----------------------------------------------------------


ALL_TYPES = T.StructType(
    [
        T.StructField("b", T.BooleanType()),
        T.StructField("i8", T.ByteType(), False),
        T.StructField("i16", T.ShortType()),
        T.StructField("i32", T.IntegerType()),
        T.StructField("i64", T.LongType()),
        T.StructField("f32", T.FloatType()),
        T.StructField("f64", T.DoubleType()),
        T.StructField("dec", T.DecimalType(38, 9)),
        T.StructField("s", T.StringType()),
        T.StructField("bin", T.BinaryType()),
        T.StructField("day", T.DateType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("ntz", T.TimestampNTZType(), False),
        T.StructField("arr", T.ArrayType(T.ArrayType(T.IntegerType(), False))),
        T.StructField(
            "m", T.MapType(T.StringType(), T.StructType([T.StructField("x", T.DateType())]), False)
        ),
        T.StructField(
            "st",
            T.StructType(
                [T.StructField("a", T.IntegerType(), False), T.StructField("v", T.VariantType())]
            ),
        ),
        T.StructField("v", T.VariantType()),
    ]
)


def test_arrow_schema_is_the_one_pyspark_checks() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    expected = to_arrow_schema(ALL_TYPES, timezone="UTC")
    actual = dlspark.arrow_schema(ALL_TYPES)
    assert actual.equals(expected)
    assert str(actual) == str(expected)


def test_spark_schema_of_a_delta_schema() -> None:
    """Field metadata is dropped, ``void`` fields are dropped at every level, and every
    Delta type has its Spark type."""
    delta = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {"comment": "x"}},
            {"name": "gone", "type": "void", "nullable": True, "metadata": {}},
            {
                "name": "s",
                "type": {
                    "type": "struct",
                    "fields": [
                        {"name": "n", "type": "null", "nullable": True, "metadata": {}},
                        {"name": "d", "type": "decimal(5,2)", "nullable": True, "metadata": {}},
                    ],
                },
                "nullable": True,
                "metadata": {"delta.columnMapping.physicalName": "col-1"},
            },
            {
                "name": "m",
                "type": {
                    "type": "map",
                    "keyType": "timestamp_ntz",
                    "valueType": {"type": "array", "elementType": "variant", "containsNull": False},
                    "valueContainsNull": True,
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    schema = dlspark.spark_schema(json.dumps(delta))
    assert schema == T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("s", T.StructType([T.StructField("d", T.DecimalType(5, 2))])),
            T.StructField(
                "m",
                T.MapType(T.TimestampNTZType(), T.ArrayType(T.VariantType(), False), True),
            ),
        ]
    )
    assert all(not field.metadata for field in schema.fields)
    with pytest.raises(deltalog.InvalidTableError, match="column `x`: unknown type `interval`"):
        dlspark.spark_schema(
            json.dumps(
                {"type": "struct", "fields": [{"name": "x", "type": "interval", "nullable": True}]}
            )
        )


def test_scans_deliver_batches_in_the_arrow_schema_spark_asks_for(tmp_path: Path) -> None:
    """The readers ask a scan for Spark's Arrow schema (``requested_schema``): columns are
    renamed by position, struct fields found by name (in another order and case), map
    entries and list items get Spark's names, integers are widened and nulls stay."""
    path = tmp_path / "t"
    inner = pa.struct([pa.field("A", pa.int32()), pa.field("b", pa.string())])
    data = pa.table(
        {
            "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
            "l": pa.array([["a", None], None], pa.list_(pa.string())),
            "s": pa.array([{"A": 1, "b": "x"}, None], inner),
            "ts": pa.array([1_500, None], pa.timestamp("us", tz="UTC")),
        }
    )
    deltalog.write_table(path, data)
    target = dlspark.arrow_schema(
        T.StructType(
            [
                T.StructField("M", T.MapType(T.StringType(), T.LongType())),
                T.StructField("l", T.ArrayType(T.StringType())),
                T.StructField(
                    "s",
                    T.StructType(
                        [T.StructField("b", T.StringType()), T.StructField("a", T.LongType())]
                    ),
                ),
                T.StructField("ts", T.TimestampType()),
            ]
        )
    )
    scan = deltalog.DeltaTable(path).snapshot().scan()
    (task,) = scan.tasks()
    table = pa.RecordBatchReader.from_stream(task, schema=target).read_all()
    assert table.schema.equals(target)
    assert table.column("M").to_pylist() == [[("k", 1)], None]
    assert table.column("l").to_pylist() == [["a", None], None]
    assert table.column("s").to_pylist() == [{"b": "x", "a": 1}, None]
    assert table.column("ts").cast(pa.int64()).to_pylist() == [1_500, None]

    not_null = pa.schema([pa.field(name, target.field(name).type, False) for name in target.names])
    with pytest.raises(pa.ArrowInvalid, match="`M` is declared NOT NULL"):
        pa.RecordBatchReader.from_stream(task, schema=not_null).read_all()
    missing = pa.schema(
        [*list(target)[:2], pa.field("s", pa.struct([("c", pa.int64())])), target.field("ts")]
    )
    with pytest.raises(deltalog.InvalidArgumentError, match=r"`s\.c` is not in the data"):
        pa.RecordBatchReader.from_stream(task, schema=missing)


def test_filter_text_of_each_filter_kind() -> None:
    from pyspark.sql import datasource as ds

    schema = T.StructType(
        [
            T.StructField("i", T.IntegerType()),
            T.StructField("d", T.DoubleType()),
            T.StructField("s", T.StringType()),
            T.StructField("day", T.DateType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("ntz", T.TimestampNTZType()),
            T.StructField("bin", T.BinaryType()),
            T.StructField("dec", T.DecimalType(10, 2)),
            T.StructField("st", T.StructType([T.StructField("we`ird", T.BooleanType())])),
            T.StructField("arr", T.ArrayType(T.IntegerType())),
        ]
    )
    utc = dt.timezone.utc
    cases = [
        (ds.EqualTo(("i",), 5), "`i` = 5"),
        (ds.GreaterThan(("d",), 0.5), "`d` > 0.5e0"),
        (ds.LessThanOrEqual(("d",), float("nan")), "`d` <= 'NaN'"),
        (ds.LessThan(("d",), float("-inf")), "`d` < '-Infinity'"),
        (ds.GreaterThanOrEqual(("d",), 1e300), "`d` >= 1e+300"),
        (ds.EqualTo(("s",), "it's"), "`s` = 'it''s'"),
        (ds.In(("s",), ("a", "b")), "`s` IN ('a', 'b')"),
        (ds.In(("s",), ("a", None)), None),
        (ds.IsNull(("arr",)), "`arr` IS NULL"),
        (ds.IsNotNull(("st",)), None),
        (ds.IsNotNull(("st", "we`ird")), "`st`.`we``ird` IS NOT NULL"),
        (ds.EqualTo(("st", "we`ird"), True), "`st`.`we``ird` = TRUE"),
        (ds.EqualTo(("day",), dt.date(1600, 6, 15)), "`day` = DATE '1600-06-15'"),
        (
            ds.EqualTo(
                ("ts",), dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
            ),
            "`ts` = TIMESTAMP '2024-01-01 10:00:00.000000+00:00'",
        ),
        (ds.EqualTo(("ts",), dt.datetime(2024, 1, 1)), None),
        (
            ds.EqualTo(("ntz",), dt.datetime(1, 1, 1, 0, 0, 0, 1)),
            "`ntz` = TIMESTAMP_NTZ '0001-01-01 00:00:00.000001'",
        ),
        (ds.EqualTo(("ntz",), dt.datetime(2024, 1, 1, tzinfo=utc)), None),
        (ds.EqualTo(("bin",), b"\x00\xff"), "`bin` = X'00ff'"),
        (ds.EqualTo(("dec",), decimal.Decimal("1E+2")), "`dec` = 100"),
        (ds.EqualTo(("i",), "5"), None),
        (ds.EqualTo(("i",), True), None),
        (ds.EqualTo(("arr",), [1, 2]), None),
        (ds.EqualTo(("missing",), 1), None),
        (ds.EqualNullSafe(("i",), None), "`i` IS NULL"),
        (ds.EqualNullSafe(("i",), 3), "`i` = 3"),
        (ds.Not(ds.EqualNullSafe(("i",), 3)), "(`i` != 3 OR `i` IS NULL)"),
        (ds.Not(ds.EqualNullSafe(("i",), None)), "`i` IS NOT NULL"),
        (ds.Not(ds.In(("i",), (1, 2))), "NOT (`i` IN (1, 2))"),
        (ds.StringStartsWith(("s",), "a_%\\"), "`s` LIKE 'a\\_\\%\\\\%'"),
        (ds.StringEndsWith(("s",), "x'"), "`s` LIKE '%x'''"),
        (ds.StringContains(("s",), "mid"), "`s` LIKE '%mid%'"),
        (ds.StringContains(("i",), "1"), None),
    ]
    for spark_filter, expected in cases:
        assert filter_text(spark_filter, schema) == expected, spark_filter


def test_options_are_parsed_in_any_case() -> None:
    options = ReadOptions.parse(
        {
            "path": "/t",
            "VERSIONASOF": "3",
            "timeZone": "Europe/Paris",
            "columns": '["a,b", "c"]',
            "filterPushdown": "FALSE",
            "maxPartitionBytes": "1024",
            "aws_region": "eu-west-1",
        }
    )
    assert options == ReadOptions(
        uri="/t",
        version=3,
        timezone="Europe/Paris",
        columns=("a,b", "c"),
        filter_pushdown=False,
        target_size=1024,
        storage_options={"aws_region": "eu-west-1"},
    )
    assert ReadOptions.parse({"path": "/t", "columns": " a , b "}).columns == ("a", "b")
    for bad, message in (
        ({}, "needs the table location"),
        ({"path": "/t", "versionAsOf": "-1"}, "must be at least 0"),
        ({"path": "/t", "versionAsOf": "x"}, "must be an integer"),
        ({"path": "/t", "filterPushdown": "yes"}, "true or false"),
        ({"path": "/t", "columns": "[1]"}, "JSON list of strings"),
    ):
        with pytest.raises(deltalog.InvalidArgumentError, match=message):
            ReadOptions.parse(bad)


# --- helpers ------------------------------------------------------------------------------


def read_tagged(*frames: Any) -> list[Any]:
    """The rows of each of ``frames`` (of one schema), read in ONE Spark job (a union of the
    frames, each tagged), as Arrow tables in order."""
    tagged = [frame.selectExpr("*", f"{k} AS `__frame`") for k, frame in enumerate(frames)]
    union = functools.reduce(lambda a, b: a.unionByName(b), tagged).toArrow()
    tags = union.column("__frame")
    keep = [name for name in union.column_names if name != "__frame"]
    return [union.filter(pc.equal(tags, k)).select(keep) for k in range(len(frames))]


def assert_expected_rows(actual: Any, expected: Any) -> None:
    """``actual`` (Spark's) holds ``expected``'s columns and rows, in any order. Flat tables
    are compared in Arrow, sorted (fast on the million-row tables); anything else, or a
    difference, row by row in Python, which shows what differs."""
    assert sorted(actual.column_names) == sorted(expected.column_names)
    actual = actual.select(expected.column_names)
    assert actual.num_rows == expected.num_rows
    sorted_actual = _sorted_flat(actual, expected.schema)
    if sorted_actual is not None and sorted_actual.equals(_sorted_flat(expected, expected.schema)):
        return
    assert rows(actual) == rows(expected)


def _sorted_flat(table: Any, schema: Any) -> Any:
    """``table`` cast to ``schema``'s types (nullable) and sorted by every column, or
    ``None`` when it has nested columns or cannot be cast."""
    if any(pa.types.is_nested(field.type) for field in schema):
        return None
    target = pa.schema([pa.field(field.name, field.type) for field in schema])
    try:
        cast = table.cast(target, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return cast.sort_by([(name, "ascending") for name in cast.column_names])


def _case(name: str) -> TableCase:
    return next(case for case in CASES if case.name == name)
