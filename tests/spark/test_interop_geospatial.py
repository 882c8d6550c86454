"""deltalog reads the geospatial tables Delta on Spark writes (the ``geospatial`` table feature).

Delta on Spark 4.4 writes ``GEOMETRY(<srid>)`` and ``GEOGRAPHY(<srid>)`` columns only with
``spark.databricks.delta.geo.preview.enabled`` on (set for each test, then restored): the
schema names them ``geometry(OGC:CRS84)``, ``geography(OGC:CRS84, SPHERICAL)``,
``geometry(EPSG:3857)``, ``geometry(SRID:0)``; the data files hold WKB in ``BINARY`` columns
with Parquet's ``GEOMETRY`` / ``GEOGRAPHY`` logical types; statistics hold only null counts
for them; the protocol lists ``geospatial`` as a reader and writer feature.

deltalog reads them as Arrow ``binary`` marked ``geoarrow.wkb`` (the CRS and, for a
geography, the edges in the extension metadata); every row is compared with Spark's
``ST_AsBinary`` of the same column, at every version. Through the ``deltalog`` data source
they reach Spark as ``GeometryType`` / ``GeographyType`` again. Writes are refused, naming
the feature.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
import deltalog.spark as dlspark

GEO_PREVIEW = "spark.databricks.delta.geo.preview.enabled"
GEO_COLUMNS = ("g", "h", "p", "z")
#: The type Delta on Spark writes for each column, and the GeoArrow metadata deltalog shows.
SCHEMA_TYPES = {
    "g": "geometry(OGC:CRS84)",
    "h": "geography(OGC:CRS84, SPHERICAL)",
    "p": "geometry(EPSG:3857)",
    "z": "geometry(SRID:0)",
}
GEOARROW = {
    "g": {"crs": "OGC:CRS84", "crs_type": "authority_code"},
    "h": {"crs": "OGC:CRS84", "crs_type": "authority_code", "edges": "spherical"},
    "p": {"crs": "EPSG:3857", "crs_type": "authority_code"},
    "z": {},
}


@contextmanager
def geo_preview(spark: Any) -> Iterator[None]:
    """Delta on Spark's geospatial preview switched on for the block, then put back."""
    before = spark.conf.get(GEO_PREVIEW, None)
    spark.conf.set(GEO_PREVIEW, "true")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(GEO_PREVIEW)
        else:
            spark.conf.set(GEO_PREVIEW, before)


@pytest.fixture
def geo(spark: Any) -> Iterator[Any]:
    with geo_preview(spark):
        yield spark


def point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def linestring(*points: tuple[float, float]) -> bytes:
    coordinates = b"".join(struct.pack("<dd", x, y) for x, y in points)
    return struct.pack("<BII", 1, 2, len(points)) + coordinates


def polygon(*ring: tuple[float, float]) -> bytes:
    coordinates = b"".join(struct.pack("<dd", x, y) for x, y in ring)
    return struct.pack("<BIII", 1, 3, 1, len(ring)) + coordinates


def create(spark: Any, path: Path) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, part STRING, g GEOMETRY(4326), "
        "h GEOGRAPHY(4326), p GEOMETRY(3857), z GEOMETRY(0)) USING delta PARTITIONED BY (part)"
    )


def insert(spark: Any, path: Path, rows: list[tuple[int, str, bytes | None]]) -> None:
    """One commit of ``(id, part, wkb)`` rows: the same WKB in every geospatial column (NULL
    for ``None``), ``h`` left NULL on odd ids."""

    def literal(wkb: bytes | None) -> str:
        return "NULL" if wkb is None else f"X'{wkb.hex()}'"

    values = ", ".join(
        f"({i}, '{part}', {literal(wkb)}, {literal(None if i % 2 else wkb)})"
        for i, part, wkb in rows
    )
    spark.sql(
        f"INSERT INTO delta.`{path}` SELECT id, part, ST_GeomFromWKB(w, 4326), "
        "ST_GeogFromWKB(v), ST_GeomFromWKB(w, 3857), ST_GeomFromWKB(w) "
        f"FROM VALUES {values} AS t(id, part, w, v)"
    )


def build(spark: Any, path: Path) -> list[int]:
    """A partitioned geospatial table over several commits (inserts with nulls, a delete);
    returns its versions."""
    create(spark, path)
    insert(
        spark,
        path,
        [(1, "a", point(1, 2)), (2, "a", None), (3, "b", linestring((0, 0), (1, 1), (2, 0)))],
    )
    insert(
        spark,
        path,
        [
            (4, "b", polygon((0, 0), (4, 0), (4, 4), (0, 4), (0, 0))),
            (5, "c", point(-71.06, 42.36)),
            (6, "c", None),
        ],
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    insert(spark, path, [(7, "a", point(0.5, -0.5)), (8, "b", None)])
    return list(range(deltalog.DeltaTable(str(path)).latest_version() + 1))


def spark_rows(spark: Any, path: Path, version: int) -> list[dict[str, Any]]:
    """Spark's rows at ``version``, each geospatial column as its WKB (``ST_AsBinary``)."""
    columns = ", ".join(f"ST_AsBinary({c}) AS {c}" for c in GEO_COLUMNS)
    frame = spark.sql(f"SELECT id, part, {columns} FROM delta.`{path}` VERSION AS OF {version}")
    rows = [row.asDict() for row in frame.collect()]
    for row in rows:
        for column in GEO_COLUMNS:
            row[column] = None if row[column] is None else bytes(row[column])
    return sorted(rows, key=lambda row: row["id"])


def deltalog_rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.select(["id", "part", *GEO_COLUMNS]).to_pylist(), key=lambda r: r["id"])


def test_spark_writes_what_deltalog_reads(geo: Any, tmp_path: Path) -> None:
    """The facts this reader relies on, as Delta on Spark writes them: the schema's type
    names, the reader+writer feature, null counts only in the statistics."""
    path = tmp_path / "t"
    build(geo, path)
    table = deltalog.DeltaTable(str(path))
    protocol = table.protocol()
    assert "geospatial" in (protocol.reader_features or [])
    assert "geospatial" in (protocol.writer_features or [])
    detail = geo.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert "geospatial" in detail["tableFeatures"]
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (3, 7)
    assert list(detail["partitionColumns"]) == ["part"]
    snapshot = table.snapshot()
    assert snapshot.num_files == detail["numFiles"]
    assert snapshot.total_size == detail["sizeInBytes"]
    assert snapshot.partition_columns == ("part",)
    fields = {f["name"]: f["type"] for f in json.loads(snapshot.schema.json())["fields"]}
    assert {c: fields[c] for c in GEO_COLUMNS} == SCHEMA_TYPES
    actions = [
        json.loads(line)
        for commit in sorted((path / "_delta_log").glob("*.json"))
        for line in commit.read_text().splitlines()
    ]
    adds = [action["add"] for action in actions if "add" in action]
    assert adds
    for add in adds:
        stats = json.loads(add["stats"])
        for column in GEO_COLUMNS:
            assert column in stats["nullCount"]
            assert column not in stats.get("minValues", {})
            assert column not in stats.get("maxValues", {})


def test_rows_match_spark_at_every_version(geo: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    versions = build(geo, path)
    assert len(versions) == 5
    for version in versions:
        ours = deltalog.read_table(str(path), version=version)
        assert deltalog_rows(ours) == spark_rows(geo, path, version), f"version {version}"
    latest = deltalog.read_table(str(path))
    for column in GEO_COLUMNS:
        field = latest.schema.field(column)
        assert field.type == pa.binary()
        metadata = field.metadata or {}
        assert metadata[b"ARROW:extension:name"] == b"geoarrow.wkb"
        assert json.loads(metadata[b"ARROW:extension:metadata"]) == GEOARROW[column]
    assert latest.num_rows == 7


def test_filters_use_null_counts_and_partitions(geo: Any, tmp_path: Path) -> None:
    """Filters on partitions and on a geospatial column's nulls read Spark's rows; a file
    without nulls in ``g`` is skipped for ``g IS NULL``."""
    path = tmp_path / "t"
    build(geo, path)
    expected = spark_rows(geo, path, deltalog.DeltaTable(str(path)).latest_version())
    by_part = deltalog.read_table(str(path), filter="part = 'c'")
    assert deltalog_rows(by_part) == [row for row in expected if row["part"] == "c"]
    nulls = deltalog.read_table(str(path), filter="g IS NULL")
    assert deltalog_rows(nulls) == [row for row in expected if row["g"] is None]
    snapshot = deltalog.DeltaTable(str(path)).snapshot()
    assert snapshot.scan(filter="g IS NULL").files().num_rows < snapshot.num_files


def test_deltalog_data_source_gives_spark_its_types(geo: Any, tmp_path: Path) -> None:
    """``format("deltalog")`` returns Spark's schema (``GeometryType``, ``GeographyType``)
    and rows; Spark's own functions work on them."""
    path = tmp_path / "t"
    build(geo, path)
    dlspark.register(geo)
    delta = geo.read.format("delta").load(str(path))
    ours = geo.read.format("deltalog").load(str(path))
    assert ours.schema == delta.schema

    def as_wkb(frame: Any) -> list[tuple[Any, ...]]:
        columns = [f"hex(ST_AsBinary({c}))" for c in GEO_COLUMNS]
        srids = [f"ST_Srid({c})" for c in GEO_COLUMNS]
        rows = frame.selectExpr("id", "part", *columns, *srids).collect()
        return sorted(tuple(row) for row in rows)

    assert as_wkb(ours) == as_wkb(delta)
    fast = dlspark.read(geo, str(path), mode="native")
    assert fast.schema == delta.schema
    assert as_wkb(fast) == as_wkb(delta)
    at_one = geo.read.format("deltalog").option("versionAsOf", 1).load(str(path))
    assert as_wkb(at_one) == as_wkb(
        geo.read.format("delta").option("versionAsOf", 1).load(str(path))
    )


def test_writes_are_refused_naming_the_feature(geo: Any, tmp_path: Path) -> None:
    """deltalog does not write geospatial tables: appends (and any other commit) fail with
    :class:`UnsupportedFeatureError` naming ``geospatial``, leaving the table as it was;
    Spark goes on writing it."""
    path = tmp_path / "t"
    versions = build(geo, path)
    rows = pa.table(
        {
            "id": pa.array([9], pa.int32()),
            "part": ["a"],
            "g": pa.array([point(3, 3)], pa.binary()),
            "h": pa.array([None], pa.binary()),
            "p": pa.array([None], pa.binary()),
            "z": pa.array([None], pa.binary()),
        }
    )
    with pytest.raises(deltalog.UnsupportedFeatureError, match="geospatial"):
        deltalog.write_table(str(path), rows)
    with pytest.raises(deltalog.UnsupportedFeatureError, match="geospatial"):
        deltalog.DeltaTable(str(path)).alter.set_properties({"delta.appendOnly": "false"})
    assert deltalog.DeltaTable(str(path)).latest_version() == versions[-1]
    insert(geo, path, [(10, "c", point(9, 9))])
    ours = deltalog.read_table(str(path))
    assert deltalog_rows(ours) == spark_rows(geo, path, versions[-1] + 1)
