"""Iceberg compatibility (`delta.enableIcebergCompatV1/V2/V3`), the `materializePartitionColumns`
feature and `delta.writePartitionColumnsToParquet`: partition values written into the data
files after the data columns, nested field ids, the `ICEBERG_COMPAT_VERSION` tag, and every
rule refused as Delta on Spark refuses it, with nothing committed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog


def log_actions(uri: Path, version: int) -> list[dict[str, Any]]:
    text = (uri / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def last_version(uri: Path) -> int:
    return max(int(p.name[:20]) for p in (uri / "_delta_log").glob("*.json"))


def protocol_and_metadata(uri: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    protocol: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for version in range(last_version(uri) + 1):
        for action in log_actions(uri, version):
            protocol = action.get("protocol", protocol)
            metadata = action.get("metaData", metadata)
    return protocol, metadata


def data_files(uri: Path) -> list[Path]:
    return sorted(p for p in uri.rglob("*.parquet") if "_delta_log" not in p.parts)


def sorted_rows(uri: Path) -> list[dict[str, Any]]:
    return sorted(deltalog.read_table(str(uri)).to_pylist(), key=lambda row: str(row["id"]))


NESTED = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "a": pa.array([[1], [2, 3], None], pa.list_(pa.int32())),
        "m": pa.array([[("k", [1])], [], None], pa.map_(pa.string(), pa.list_(pa.int32()))),
        "s": pa.array(
            [{"x": 1, "y": ["z"]}, {"x": 2, "y": []}, None],
            pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))]),
        ),
        "p": ["a", "", None],
    }
)


def test_materialized_partition_columns_follow_the_data_columns(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["a", "", None]})
    deltalog.write_table(
        uri,
        data,
        partition_by=["p"],
        configuration={"delta.enableMaterializePartitionColumnsFeature": "true"},
    )
    protocol, _ = protocol_and_metadata(uri)
    assert "materializePartitionColumns" in protocol["writerFeatures"]
    values = []
    for file in data_files(uri):
        table = pq.read_table(file)
        assert table.column_names == ["id", "p"]
        values.extend(table.column("p").to_pylist())
    # An empty string is a NULL partition value, in the log and in the file.
    assert sorted(values, key=lambda value: (value is None, str(value))) == ["a", None, None]
    assert sorted_rows(uri) == [
        {"id": 1, "p": "a"},
        {"id": 2, "p": None},
        {"id": 3, "p": None},
    ]
    # Every rewrite keeps materialising them.
    table = deltalog.DeltaTable(uri)
    table.update({"id": "id + 10"}, "id = 1")
    table.optimize()
    for file in data_files(uri):
        assert pq.read_schema(file).names == ["id", "p"]

    deltalog.DeltaTable(uri).alter.drop_feature("materializePartitionColumns")
    protocol, metadata = protocol_and_metadata(uri)
    assert "materializePartitionColumns" not in protocol.get("writerFeatures", [])
    assert "delta.enableMaterializePartitionColumnsFeature" not in metadata["configuration"]
    deltalog.write_table(uri, pa.table({"id": pa.array([9], pa.int64()), "p": ["b"]}))
    newest = [f for f in data_files(uri) if "p=b" in str(f)]
    assert [pq.read_schema(f).names for f in newest] == [["id"]]
    assert [row["id"] for row in sorted_rows(uri)] == [11, 2, 3, 9]


@pytest.mark.parametrize(("value", "columns"), [("true", ["id", "p"]), ("false", ["id"])])
def test_write_partition_columns_to_parquet_is_honoured(
    tmp_path: Path, value: str, columns: list[str]
) -> None:
    uri = tmp_path / "t"
    data = pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]})
    configuration = {"delta.writePartitionColumnsToParquet": value}
    deltalog.write_table(uri, data, partition_by=["p"], configuration=configuration)
    assert [pq.read_schema(f).names for f in data_files(uri)] == [columns]
    protocol, _ = protocol_and_metadata(uri)
    assert "materializePartitionColumns" not in (protocol.get("writerFeatures") or [])


def test_iceberg_compat_v2_tables_are_written_as_spark_writes_them(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(
        uri, NESTED, partition_by=["p"], configuration={"delta.enableIcebergCompatV2": "true"}
    )
    protocol, metadata = protocol_and_metadata(uri)
    assert {"columnMapping", "icebergCompatV2"} <= set(protocol["writerFeatures"])
    configuration = metadata["configuration"]
    assert configuration["delta.columnMapping.mode"] == "name"
    assert configuration["delta.universalFormat.iceberg.atomicConversion.supported"] == "true"
    # Seven columns at any depth, then five nested ids in Spark's pre-order.
    assert configuration["delta.columnMapping.maxColumnId"] == "12"
    fields = {f["name"]: f for f in json.loads(metadata["schemaString"])["fields"]}
    physical = {
        name: field["metadata"]["delta.columnMapping.physicalName"]
        for name, field in fields.items()
    }
    assert fields["id"]["metadata"]["delta.columnMapping.nested.ids"] == {}
    assert fields["a"]["metadata"]["delta.columnMapping.nested.ids"] == {
        f"{physical['a']}.element": 8
    }
    assert fields["m"]["metadata"]["delta.columnMapping.nested.ids"] == {
        f"{physical['m']}.key": 9,
        f"{physical['m']}.value": 10,
        f"{physical['m']}.value.element": 11,
    }
    y = fields["s"]["type"]["fields"][1]
    assert y["metadata"]["delta.columnMapping.nested.ids"] == {
        f"{y['metadata']['delta.columnMapping.physicalName']}.element": 12
    }
    adds = [a["add"] for a in log_actions(uri, 0) if "add" in a]
    assert adds
    assert all(add["tags"] == {"ICEBERG_COMPAT_VERSION": "2"} for add in adds)
    for file in data_files(uri):
        schema = pq.ParquetFile(file).schema_arrow
        assert schema.names[-1] == physical["p"]
        element = schema.field(physical["a"]).type.value_field
        assert element.metadata == {b"PARQUET:field_id": b"8"}
        map_type = schema.field(physical["m"]).type
        assert map_type.key_field.metadata == {b"PARQUET:field_id": b"9"}
        assert map_type.item_field.metadata == {b"PARQUET:field_id": b"10"}
    read = sorted_rows(uri)
    assert [(row["id"], row["a"], row["p"]) for row in read] == [
        (1, [1], "a"),
        (2, [2, 3], None),
        (3, None, None),
    ]
    assert read[0]["m"] == [("k", [1])]
    assert read[0]["s"] == {"x": 1, "y": ["z"]}

    table = deltalog.DeltaTable(uri)
    table.delete("id = 2")
    table.update({"id": "id * 10"}, "id = 3")
    deltalog.write_table(uri, NESTED.slice(0, 1))
    table = deltalog.DeltaTable(uri)
    table.optimize()
    assert [row["id"] for row in sorted_rows(uri)] == [1, 1, 30]
    for file in data_files(uri):
        assert pq.read_schema(file).names[-1] == physical["p"]


def test_iceberg_compat_v3_turns_row_tracking_on_and_stays_on(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]})
    deltalog.write_table(
        uri, data, partition_by=["p"], configuration={"delta.enableIcebergCompatV3": "true"}
    )
    protocol, metadata = protocol_and_metadata(uri)
    assert {"icebergCompatV3", "rowTracking", "domainMetadata", "columnMapping"} <= set(
        protocol["writerFeatures"]
    )
    assert metadata["configuration"]["delta.enableRowTracking"] == "true"
    table = deltalog.DeltaTable(uri)
    before = table.latest_version()
    with pytest.raises(deltalog.OperationNotAllowedError, match="cannot be turned off"):
        table.alter.set_properties({"delta.enableIcebergCompatV3": "false"})
    with pytest.raises(deltalog.OperationNotAllowedError, match="enableRowTracking"):
        table.alter.set_properties({"delta.enableRowTracking": "false"})
    assert deltalog.DeltaTable(uri).latest_version() == before


def test_iceberg_compat_rules_are_refused_with_nothing_committed(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]})
    with pytest.raises(deltalog.OperationNotAllowedError, match="deletion vectors"):
        deltalog.write_table(
            tmp_path / "dv",
            data,
            configuration={
                "delta.enableIcebergCompatV2": "true",
                "delta.enableDeletionVectors": "true",
            },
        )
    assert not (tmp_path / "dv" / "_delta_log").exists() or not list(
        (tmp_path / "dv" / "_delta_log").glob("*.json")
    )
    with pytest.raises(deltalog.OperationNotAllowedError, match="has type array"):
        deltalog.write_table(
            tmp_path / "v1", NESTED, configuration={"delta.enableIcebergCompatV1": "true"}
        )
    with pytest.raises(deltalog.OperationNotAllowedError, match="only one of"):
        deltalog.write_table(
            tmp_path / "both",
            data,
            configuration={
                "delta.enableIcebergCompatV1": "true",
                "delta.enableIcebergCompatV2": "true",
            },
        )

    uri = tmp_path / "plain"
    deltalog.write_table(uri, data, partition_by=["p"])
    table = deltalog.DeltaTable(uri)
    with pytest.raises(deltalog.OperationNotAllowedError, match=r"columnMapping\.mode"):
        table.alter.set_properties({"delta.enableIcebergCompatV2": "true"})
    assert deltalog.DeltaTable(uri).latest_version() == 0
    table.alter.set_properties(
        {"delta.columnMapping.mode": "name", "delta.enableIcebergCompatV2": "true"}
    )
    _, metadata = protocol_and_metadata(uri)
    fields = json.loads(metadata["schemaString"])["fields"]
    assert all(f["metadata"]["delta.columnMapping.nested.ids"] == {} for f in fields)
    with pytest.raises(deltalog.OperationNotAllowedError, match="deletion vectors"):
        deltalog.DeltaTable(uri).alter.set_properties({"delta.enableDeletionVectors": "true"})
    with pytest.raises(deltalog.OperationNotAllowedError, match="partition columns"):
        deltalog.write_table(
            uri, data, mode="overwrite", partition_by=["id"], schema_mode="overwrite"
        )
    assert deltalog.DeltaTable(uri).latest_version() == 1
    deltalog.write_table(uri, data)
    newest = max(data_files(uri), key=lambda file: file.stat().st_mtime_ns)
    assert pq.read_schema(newest).names == ["id", "p"]
