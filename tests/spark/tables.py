"""Delta tables written by Delta Lake on Spark, one per feature, small and with a few versions.

Each builder takes a SparkSession and an empty folder, writes the table there with Spark SQL,
checks that the log really has the feature's shape (a deletion vector, a multi-part
checkpoint, ...) and returns the versions to compare at. :data:`CASES` lists them with the
filters (valid both as Spark SQL and as a deltalog filter) and the change-feed ranges to check.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Builder = Callable[[Any, str], list[int]]


@dataclass(frozen=True)
class TableCase:
    """A table to write with Delta on Spark and read back with deltalog."""

    name: str
    build: Builder
    filters: tuple[str, ...] = ()
    """Predicates (Spark SQL and deltalog filter text alike) checked at the latest version."""
    change_feed: tuple[tuple[int, int | None], ...] = ()
    """(start, end) version ranges of the change feed to compare; ``None`` is the latest."""
    row_tracking: bool = False
    """Whether to compare row ids and row commit versions with Spark's ``_metadata``."""


# --- builders -----------------------------------------------------------------------------


def partitioned(spark: Any, path: str) -> list[int]:
    """String, int and date partition columns, with nulls, an empty string and characters
    that need escaping in paths; a partition-wide DELETE and an UPDATE."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id INT, s STRING, p_str STRING, p_int INT, p_date DATE)
           USING delta PARTITIONED BY (p_str, p_int, p_date)""",
        """INSERT INTO {t} VALUES
           (1, 'a', 'x', 1, DATE'2024-01-01'), (2, 'b', 'x', 2, DATE'2024-01-02'),
           (3, 'c', NULL, 1, NULL), (4, 'd', 'a b', NULL, DATE'2024-01-01'),
           (5, 'e', 'a=b/c%d', 3, DATE'1969-12-31'), (6, NULL, 'é', 2, DATE'2024-01-02'),
           (7, 'g', '', 1, DATE'2024-01-01')""",
        "INSERT INTO {t} VALUES (8, 'h', 'x', 1, DATE'2024-01-01'), (9, 'i', NULL, NULL, NULL)",
        "DELETE FROM {t} WHERE p_int = 2",
        "UPDATE {t} SET s = 'updated' WHERE p_str IS NULL",
    )
    return all_versions(path)


def deletion_vectors(spark: Any, path: str) -> list[int]:
    """Deletion vectors written by DELETE, UPDATE and MERGE, and a DELETE on a file that
    already has one; with the change feed on."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id BIGINT, v STRING, n DOUBLE) USING delta
           TBLPROPERTIES ('delta.enableDeletionVectors' = 'true',
                          'delta.enableChangeDataFeed' = 'true')""",
        "INSERT INTO {t} SELECT id, CAST(id AS STRING), id / 4.0 FROM range(0, 40, 1, 2)",
        "DELETE FROM {t} WHERE id % 5 = 0",
        "UPDATE {t} SET v = concat(v, '!') WHERE id % 7 = 1",
        """MERGE INTO {t} AS t
           USING (SELECT * FROM VALUES (2, 'del', 0.0), (3, 'm3', 3.5), (100, 'new', 1.0)
                  AS s(id, v, n)) AS s
           ON t.id = s.id
           WHEN MATCHED AND s.v = 'del' THEN DELETE
           WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n
           WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, s.n)""",
        "DELETE FROM {t} WHERE id BETWEEN 10 AND 14",
    )
    expect_action(path, lambda action: bool(action.get("add", {}).get("deletionVector")))
    return all_versions(path)


def column_mapping_name(spark: Any, path: str) -> list[int]:
    """Name mode: renamed top-level, nested and partition columns, a dropped column, and a new
    column that takes the old name of a renamed one."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id INT, name STRING, info STRUCT<a: INT, b: STRING>,
                             tags ARRAY<STRING>, part STRING)
           USING delta PARTITIONED BY (part)
           TBLPROPERTIES ('delta.columnMapping.mode' = 'name')""",
        """INSERT INTO {t} VALUES
           (1, 'one', named_struct('a', 1, 'b', 'x'), array('t1', 't2'), 'p1'),
           (2, 'two', named_struct('a', 2, 'b', NULL), NULL, 'p2'),
           (3, NULL, NULL, array(), NULL)""",
        "ALTER TABLE {t} RENAME COLUMN name TO full_name",
        "ALTER TABLE {t} RENAME COLUMN info.a TO alpha",
        "ALTER TABLE {t} DROP COLUMN tags",
        "ALTER TABLE {t} RENAME COLUMN part TO region",
        "INSERT INTO {t} VALUES (4, 'four', named_struct('alpha', 4, 'b', 'y'), 'p1')",
        "ALTER TABLE {t} ADD COLUMNS (name STRING, tags DOUBLE)",
        "INSERT INTO {t} VALUES (5, 'five', NULL, 'p3', 'new name', 5.5)",
    )
    return all_versions(path)


def column_mapping_id(spark: Any, path: str) -> list[int]:
    """Id mode with map, struct and array columns; a rename and a drop."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id BIGINT, m MAP<STRING, INT>,
                             s STRUCT<x: DOUBLE, y: ARRAY<INT>>, v STRING)
           USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'id')""",
        """INSERT INTO {t} VALUES
           (1, map('a', 1, 'b', 2), named_struct('x', 1.5, 'y', array(1, 2)), 'one'),
           (2, map(), named_struct('x', NULL, 'y', NULL), NULL),
           (3, NULL, NULL, 'three')""",
        "ALTER TABLE {t} RENAME COLUMN v TO value",
        "ALTER TABLE {t} DROP COLUMN m",
        "INSERT INTO {t} VALUES (4, named_struct('x', 4.0, 'y', array(4)), 'four')",
    )
    return all_versions(path)


def type_widening(spark: Any, path: str) -> list[int]:
    """byte→int, int→bigint, float→double, decimal(5,2)→decimal(10,4) and
    date→timestamp_ntz, with rows written before and after."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (b TINYINT, i INT, f FLOAT, d DECIMAL(5, 2), dt DATE)
           USING delta TBLPROPERTIES ('delta.enableTypeWidening' = 'true',
                          'delta.feature.timestampNtz' = 'supported')""",
        """INSERT INTO {t} VALUES (1, 100, 1.5, 123.45, DATE'2024-01-01'),
                                 (-128, -2147483648, -0.25, -999.99, DATE'1900-02-28'),
                                 (NULL, NULL, NULL, NULL, NULL)""",
        "ALTER TABLE {t} ALTER COLUMN i TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN b TYPE INT",
        "INSERT INTO {t} VALUES (300, 10000000000, 2.5, 1.5, DATE'2024-01-02')",
        "ALTER TABLE {t} ALTER COLUMN f TYPE DOUBLE",
        "ALTER TABLE {t} ALTER COLUMN d TYPE DECIMAL(10, 4)",
        "ALTER TABLE {t} ALTER COLUMN dt TYPE TIMESTAMP_NTZ",
        """INSERT INTO {t} VALUES (100000, -10000000000, 1e300, 123456.7891,
                                  TIMESTAMP_NTZ'2024-01-02 03:04:05.678901')""",
    )
    return all_versions(path)


def timestamps(spark: Any, path: str) -> list[int]:
    """TIMESTAMP and TIMESTAMP_NTZ data and partition columns: microseconds, before 1970,
    year 9999, nulls."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id INT, ts TIMESTAMP, ntz TIMESTAMP_NTZ, d DATE,
                             p_ts TIMESTAMP, p_ntz TIMESTAMP_NTZ)
           USING delta PARTITIONED BY (p_ts, p_ntz)""",
        """INSERT INTO {t} VALUES
           (1, TIMESTAMP'2024-03-10 02:30:00.123456', TIMESTAMP_NTZ'2024-03-10 02:30:00.123456',
            DATE'2024-03-10', TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP_NTZ'2024-01-01 12:00:00'),
           (2, TIMESTAMP'1969-12-31 23:59:59.999999', TIMESTAMP_NTZ'1900-01-01 00:00:00.000001',
            DATE'1600-06-15', TIMESTAMP'1969-07-20 20:17:40.5', NULL),
           (3, NULL, NULL, NULL, NULL, TIMESTAMP_NTZ'2024-01-01 12:00:00')""",
        """INSERT INTO {t} VALUES
           (4, TIMESTAMP'9999-12-31 23:59:59.999999', TIMESTAMP_NTZ'9999-12-31 23:59:59.999999',
            DATE'9999-12-31', TIMESTAMP'2024-01-01 00:00:00',
            TIMESTAMP_NTZ'2000-02-29 23:59:59')""",
    )
    return all_versions(path)


def change_data_feed(spark: Any, path: str) -> list[int]:
    """The change feed of a partitioned table: insert, update, delete, merge, a whole-partition
    delete; in-commit timestamps are switched on half-way, so ``_commit_timestamp`` comes from
    the commit files' times first and from ``inCommitTimestamp`` after."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id INT, v STRING, p STRING) USING delta PARTITIONED BY (p)
           TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')""",
        """INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y'), (4, 'd', 'y'),
                                 (5, 'e', NULL), (6, 'f', 'z')""",
        "UPDATE {t} SET v = 'B' WHERE id = 2",
        "DELETE FROM {t} WHERE id = 3",
        """MERGE INTO {t} AS t
           USING (SELECT * FROM VALUES (1, 'A', 'x'), (7, 'g', 'y') AS s(id, v, p)) AS s
           ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v
           WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, s.p)""",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
        "DELETE FROM {t} WHERE p = 'z'",
        "INSERT INTO {t} VALUES (8, 'h', 'x')",
    )
    expect_action(path, lambda action: "cdc" in action)
    expect_action(path, lambda action: "inCommitTimestamp" in action.get("commitInfo", {}))
    return all_versions(path)


def row_tracking_clustering(spark: Any, path: str) -> list[int]:
    """Row tracking on a liquid-clustered table (CLUSTER BY): UPDATE and MERGE rewrite files
    with materialised row-id columns that a scan must not show; OPTIMIZE clusters them."""
    run(
        spark,
        path,
        """CREATE TABLE {t} (id INT, v STRING, d DATE) USING delta CLUSTER BY (id, d)
           TBLPROPERTIES ('delta.enableRowTracking' = 'true')""",
        """INSERT INTO {t} SELECT CAST(id AS INT), CAST(id * 10 AS STRING),
                                  date_add(DATE'2024-01-01', CAST(id % 3 AS INT))
           FROM range(0, 20, 1, 2)""",
        "INSERT INTO {t} VALUES (25, 'x', NULL), (21, NULL, DATE'2024-02-01')",
        "UPDATE {t} SET v = 'u' WHERE id < 5",
        "OPTIMIZE {t}",
        """MERGE INTO {t} AS t
           USING (SELECT * FROM VALUES (1, 'm'), (50, 'n') AS s(id, v)) AS s
           ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v
           WHEN NOT MATCHED THEN INSERT (id, v, d) VALUES (s.id, s.v, DATE'2024-03-01')""",
    )
    expect_action(
        path, lambda action: action.get("domainMetadata", {}).get("domain") == "delta.clustering"
    )
    expect_action(
        path, lambda action: action.get("domainMetadata", {}).get("domain") == "delta.rowTracking"
    )
    return all_versions(path)


def v2_checkpoint_json(spark: Any, path: str) -> list[int]:
    """V2 checkpoints every 2 commits with a JSON top-level file."""
    return _v2_checkpoint(spark, path, "json")


def v2_checkpoint_parquet(spark: Any, path: str) -> list[int]:
    """V2 checkpoints every 2 commits with a parquet top-level file and one sidecar per action."""
    return _v2_checkpoint(spark, path, "parquet", part_size=1)


def multi_part_checkpoint(spark: Any, path: str) -> list[int]:
    """Classic checkpoints every 2 commits, split into parts of 2 actions, with JSON ``stats``
    only (no ``stats_parsed``)."""
    with spark_conf(spark, {"spark.databricks.delta.checkpoint.partSize": "2"}):
        _checkpointed_inserts(
            spark,
            path,
            {
                "delta.checkpointInterval": "2",
                "delta.checkpoint.writeStatsAsStruct": "false",
                "delta.checkpoint.writeStatsAsJson": "true",
            },
        )
    log = Path(path) / "_delta_log"
    parts = sorted(log.glob("*.checkpoint.0000000001.*.parquet"))
    if not parts:
        raise AssertionError(f"Spark wrote no multi-part checkpoint in {log}")
    expect_parquet_add_fields(parts, present={"stats"}, absent={"stats_parsed"})
    return all_versions(path)


def checkpoint_stats_parsed(spark: Any, path: str) -> list[int]:
    """Checkpoints with ``stats_parsed`` (and ``partitionValues_parsed``) but no JSON stats."""
    _checkpointed_inserts(
        spark,
        path,
        {
            "delta.checkpointInterval": "2",
            "delta.checkpoint.writeStatsAsStruct": "true",
            "delta.checkpoint.writeStatsAsJson": "false",
        },
    )
    checkpoints = sorted((Path(path) / "_delta_log").glob("*.checkpoint.parquet"))
    if not checkpoints:
        raise AssertionError(f"Spark wrote no checkpoint in {path}")
    expect_parquet_add_fields(checkpoints, present={"stats_parsed"}, absent={"stats"})
    return all_versions(path)


def _v2_checkpoint(
    spark: Any, path: str, top_level: str, part_size: int | None = None
) -> list[int]:
    conf = {"spark.databricks.delta.checkpointV2.topLevelFileFormat": top_level}
    if part_size is not None:
        conf["spark.databricks.delta.checkpoint.partSize"] = str(part_size)
    with spark_conf(spark, conf):
        _checkpointed_inserts(
            spark, path, {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"}
        )
    log = Path(path) / "_delta_log"
    uuid_checkpoints = [
        name for name in (p.name for p in log.glob(f"*.checkpoint.*.{top_level}")) if "-" in name
    ]
    if not uuid_checkpoints:
        raise AssertionError(f"Spark wrote no V2 {top_level} checkpoint in {log}")
    if part_size is not None and not any((log / "_sidecars").glob("*.parquet")):
        raise AssertionError(f"Spark wrote no sidecar files in {log / '_sidecars'}")
    return all_versions(path)


def _checkpointed_inserts(spark: Any, path: str, properties: Mapping[str, str]) -> None:
    """A partitioned table under ``properties``: two inserts of a file per partition (a
    checkpoint at 2), a DELETE that leaves removes behind, a property change (a checkpoint at
    4) and an insert after it."""
    props = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    run(
        spark,
        path,
        f"""CREATE TABLE {{t}} (id INT, s STRING, x DOUBLE, p INT) USING delta
            PARTITIONED BY (p) TBLPROPERTIES ({props})""",
        "INSERT INTO {t} VALUES (1, 'a', 0.5, 1), (2, 'b', 1.5, 2), (3, 'c', 2.5, 3)",
        "INSERT INTO {t} VALUES (4, NULL, NULL, NULL), (5, 'e', 4.5, 2), (6, 'f', -1.0, 1)",
        "DELETE FROM {t} WHERE id = 2 OR id = 5",
        "ALTER TABLE {t} SET TBLPROPERTIES ('user.note' = 'changed')",
        "INSERT INTO {t} VALUES (7, 'g', 7.5, 1), (10, 'k', 10.5, 4)",
    )


# --- the cases ----------------------------------------------------------------------------

_CHECKPOINT_FILTERS = ("id > 5", "x < 2.5 AND p = 1", "s = 'k' OR p IS NULL", "x >= 7.5")

CASES: tuple[TableCase, ...] = (
    TableCase(
        "partitioned",
        partitioned,
        filters=(
            "p_int = 1",
            "p_str IS NULL",
            "p_date >= DATE'2024-01-02' OR id > 7",
            "s LIKE 'u%' AND p_str IS NULL",
        ),
    ),
    TableCase(
        "deletion_vectors",
        deletion_vectors,
        filters=("id < 20", "v LIKE '%!'", "n >= 5.0"),
        change_feed=((0, None), (2, 3), (4, 5)),
    ),
    TableCase(
        "column_mapping_name",
        column_mapping_name,
        filters=("id > 1", "full_name = 'one'", "region = 'p1'", "info.alpha = 4"),
    ),
    TableCase("column_mapping_id", column_mapping_id, filters=("value IS NOT NULL", "s.x > 1")),
    TableCase("type_widening", type_widening, filters=("i > 1000", "d < 2", "b = 300")),
    TableCase(
        "timestamps",
        timestamps,
        filters=(
            "ts < TIMESTAMP'2000-01-01 00:00:00'",
            "ntz >= TIMESTAMP_NTZ'2024-01-01 00:00:00'",
            "p_ts = TIMESTAMP'2024-01-01 00:00:00'",
            "p_ntz IS NULL",
        ),
    ),
    TableCase(
        "change_data_feed",
        change_data_feed,
        filters=("p = 'x'",),
        change_feed=((0, None), (1, 1), (2, 4), (4, 7), (6, 7)),
    ),
    TableCase(
        "row_tracking_clustering",
        row_tracking_clustering,
        filters=("id >= 20", "d IS NULL", "v = 'u'"),
        row_tracking=True,
    ),
    TableCase("v2_checkpoint_json", v2_checkpoint_json, filters=_CHECKPOINT_FILTERS),
    TableCase("v2_checkpoint_parquet", v2_checkpoint_parquet, filters=_CHECKPOINT_FILTERS),
    TableCase("multi_part_checkpoint", multi_part_checkpoint, filters=_CHECKPOINT_FILTERS),
    TableCase("checkpoint_stats_parsed", checkpoint_stats_parsed, filters=_CHECKPOINT_FILTERS),
)


# --- helpers ------------------------------------------------------------------------------


def run(spark: Any, path: str, *statements: str) -> None:
    """Runs each statement with ``{t}`` standing for the path-based table ``delta.`path```."""
    table = "delta.`" + path.replace("`", "``") + "`"
    for statement in statements:
        spark.sql(statement.replace("{t}", table))


@contextmanager
def spark_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Sets session configuration for the block, restoring the previous values after it."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def all_versions(path: str) -> list[int]:
    """Every version of the table, 0 to the latest commit."""
    commits = [
        int(p.name[:20])
        for p in (Path(path) / "_delta_log").glob("*.json")
        if p.name[:20].isdigit()
    ]
    return list(range(max(commits) + 1))


def log_actions(path: str) -> Iterator[dict[str, Any]]:
    """The actions of every JSON commit of the table."""
    for commit in sorted((Path(path) / "_delta_log").glob("[0-9]*.json")):
        for line in commit.read_text().splitlines():
            if line.strip():
                yield json.loads(line)


def expect_action(path: str, predicate: Callable[[dict[str, Any]], bool]) -> None:
    """Fails unless some commit of the table holds an action matching ``predicate``."""
    if not any(predicate(action) for action in log_actions(path)):
        raise AssertionError(f"no commit in {path} has the action the test table needs")


def expect_parquet_add_fields(
    checkpoints: list[Path], *, present: set[str], absent: set[str]
) -> None:
    """Fails unless the ``add`` struct of each checkpoint file has the ``present`` fields and
    none of the ``absent`` ones."""
    import pyarrow.parquet as pq

    for checkpoint in checkpoints:
        add_type = pq.read_schema(checkpoint).field("add").type
        names = {add_type.field(i).name for i in range(add_type.num_fields)}
        if not present <= names or absent & names:
            raise AssertionError(f"{checkpoint.name}: add has fields {sorted(names)}")
