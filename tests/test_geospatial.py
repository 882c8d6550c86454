"""Geospatial columns (the ``geospatial`` and ``geospatial-dev`` table features) without Spark.

A table is written by hand as Delta on Spark 4.4 writes one (its schema types, protocol and
null-count-only statistics; the Parquet file by pyarrow, WKB in a binary column): deltalog
reads it as ``binary`` marked ``geoarrow.wkb``, keeps the type names exactly, and refuses to
write it, naming the feature. ``tests/spark/test_interop_geospatial.py`` checks the same
against Spark itself.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from conftest import TableWriter, add_action, commit_info, metadata_action

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "g", "type": "geometry(OGC:CRS84)", "nullable": True, "metadata": {}},
        {
            "name": "h",
            "type": "geography(OGC:CRS84, SPHERICAL)",
            "nullable": True,
            "metadata": {},
        },
        {"name": "z", "type": "geometry(SRID:0)", "nullable": True, "metadata": {}},
    ],
}
POINT = struct.pack("<BIdd", 1, 1, 1.0, 2.0)


def geospatial_table(writer: TableWriter, feature: str = "geospatial") -> Path:
    """Version 0 creates the table, version 1 adds one file of two rows (the second null)."""
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": [feature],
        "writerFeatures": [feature, "invariants", "appendOnly"],
    }
    writer.commit(
        0,
        [
            commit_info("CREATE TABLE"),
            {"protocol": protocol},
            metadata_action(partition_columns=(), schema=SCHEMA),
        ],
    )
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "g": pa.array([POINT, None], pa.binary()),
            "h": pa.array([POINT, None], pa.binary()),
            "z": pa.array([POINT, None], pa.binary()),
        }
    )
    pq.write_table(data, writer.root / "part-0.parquet")
    add = add_action("part-0.parquet", partition_values={}, num_records=None)
    stats = {
        "numRecords": 2,
        "minValues": {"id": 1},
        "maxValues": {"id": 2},
        "nullCount": {"id": 0, "g": 1, "h": 1, "z": 1},
    }
    add["add"]["stats"] = json.dumps(stats)
    add["add"]["size"] = (writer.root / "part-0.parquet").stat().st_size
    writer.commit(1, [commit_info("WRITE"), add])
    return writer.root


@pytest.mark.parametrize("feature", ["geospatial", "geospatial-dev"])
def test_geospatial_columns_read_as_geoarrow_wkb(table_writer: TableWriter, feature: str) -> None:
    root = geospatial_table(table_writer, feature)
    table = deltalog.read_table(str(root))
    assert table.column("g").to_pylist() == [POINT, None]
    assert table.column("h").to_pylist() == [POINT, None]
    extensions = {}
    for name in ("g", "h", "z"):
        field = table.schema.field(name)
        assert field.type == pa.binary()
        metadata = field.metadata or {}
        assert metadata[b"ARROW:extension:name"] == b"geoarrow.wkb"
        extensions[name] = json.loads(metadata[b"ARROW:extension:metadata"])
    assert extensions == {
        "g": {"crs": "OGC:CRS84", "crs_type": "authority_code"},
        "h": {"crs": "OGC:CRS84", "crs_type": "authority_code", "edges": "spherical"},
        "z": {},
    }
    schema = json.loads(deltalog.DeltaTable(str(root)).snapshot().schema.json())
    assert [field["type"] for field in schema["fields"]] == [f["type"] for f in SCHEMA["fields"]]


def test_null_counts_skip_files(table_writer: TableWriter) -> None:
    """A second file without nulls is skipped for ``g IS NULL``; the first is kept for
    ``g IS NOT NULL`` (it has a value)."""
    root = geospatial_table(table_writer)
    data = pa.table(
        {
            "id": pa.array([3], pa.int32()),
            "g": pa.array([POINT], pa.binary()),
            "h": pa.array([POINT], pa.binary()),
            "z": pa.array([POINT], pa.binary()),
        }
    )
    pq.write_table(data, root / "part-1.parquet")
    add = add_action("part-1.parquet", partition_values={}, num_records=None)
    stats = {
        "numRecords": 1,
        "minValues": {"id": 3},
        "maxValues": {"id": 3},
        "nullCount": {"id": 0, "g": 0, "h": 0, "z": 0},
    }
    add["add"]["stats"] = json.dumps(stats)
    add["add"]["size"] = (root / "part-1.parquet").stat().st_size
    table_writer.commit(2, [commit_info("WRITE"), add])
    snapshot = deltalog.DeltaTable(str(root)).snapshot()
    assert snapshot.scan(filter="g IS NULL").files().num_rows == 1
    assert snapshot.scan(filter="g IS NOT NULL").files().num_rows == 2
    assert snapshot.scan(filter="id > 2").files().num_rows == 1
    nulls = snapshot.scan(filter="g IS NULL").to_pyarrow()
    assert nulls.column("id").to_pylist() == [2]


def test_writes_are_refused_naming_the_feature(table_writer: TableWriter) -> None:
    root = geospatial_table(table_writer)
    rows = pa.table(
        {
            "id": pa.array([3], pa.int32()),
            "g": pa.array([POINT], pa.binary()),
            "h": pa.array([None], pa.binary()),
            "z": pa.array([None], pa.binary()),
        }
    )
    with pytest.raises(deltalog.UnsupportedFeatureError, match="geospatial"):
        deltalog.write_table(str(root), rows)
    with pytest.raises(deltalog.UnsupportedFeatureError, match="geospatial"):
        deltalog.DeltaTable(str(root)).alter.set_properties({"delta.appendOnly": "false"})
    assert deltalog.DeltaTable(str(root)).latest_version() == 1


def test_bad_geospatial_type_names_are_invalid_tables(table_writer: TableWriter) -> None:
    schema = json.loads(json.dumps(SCHEMA))
    schema["fields"][1]["type"] = "geometry(4326)"
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["geospatial"],
        "writerFeatures": ["geospatial"],
    }
    table_writer.commit(
        0,
        [
            commit_info("CREATE TABLE"),
            {"protocol": protocol},
            metadata_action(partition_columns=(), schema=schema),
        ],
    )
    with pytest.raises(deltalog.DeltaError, match=r"column `g`: unknown type `geometry\(4326\)`"):
        deltalog.read_table(str(table_writer.root))
