"""Altering tables from Python (``DeltaTable.alter``): properties and the protocol upgrades
they bring, columns added, renamed and dropped under column mapping, CHECK constraints
checked against existing rows, features, the description; every refusal commits nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog


def commit_info(uri: Path, version: int) -> dict[str, object]:
    text = (uri / "_delta_log" / f"{version:020}.json").read_text()
    first: dict[str, object] = json.loads(text.splitlines()[0])["commitInfo"]
    return first


def parameters(uri: Path, version: int) -> dict[str, object]:
    value = commit_info(uri, version)["operationParameters"]
    assert isinstance(value, dict)
    return value


def rows(uri: Path) -> list[dict[str, object]]:
    values = deltalog.read_table(str(uri)).to_pylist()
    return sorted(values, key=lambda row: json.dumps(row, default=str, sort_keys=True))


@pytest.fixture
def table(tmp_path: Path) -> deltalog.DeltaTable:
    data = pa.table({"id": [1, 2, 3], "name": ["a", "b", None], "p": ["x", "x", "y"]})
    deltalog.write_table(tmp_path / "t", data, partition_by=["p"])
    return deltalog.DeltaTable(tmp_path / "t")


def path(table: deltalog.DeltaTable) -> Path:
    return Path(table.uri.removeprefix("file://"))


def test_set_and_unset_properties(table: deltalog.DeltaTable) -> None:
    result = table.alter.set_properties(
        {"delta.APPENDONLY": "true", "delta.enableChangeDataFeed": "true", "team": "data"}
    )
    assert (result.version, result.committed) == (1, True)
    snapshot = result.snapshot
    assert snapshot.metadata.configuration == {
        "delta.appendOnly": "true",
        "delta.enableChangeDataFeed": "true",
        "team": "data",
    }
    assert (snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version) == (1, 4)
    assert commit_info(path(table), 1)["operation"] == "SET TBLPROPERTIES"
    properties = json.loads(str(parameters(path(table), 1)["properties"]))
    assert properties["delta.appendOnly"] == "true"

    table.alter.unset_properties(["team", "missing"], if_exists=True)
    assert "team" not in table.snapshot().metadata.configuration
    assert commit_info(path(table), 2)["operation"] == "UNSET TBLPROPERTIES"
    with pytest.raises(deltalog.InvalidArgumentError, match="no property missing"):
        table.alter.unset_properties(["missing"])
    assert table.latest_version() == 2


@pytest.mark.parametrize(
    ("properties", "error", "message"),
    [
        ({"delta.noSuchKey": "1"}, deltalog.InvalidArgumentError, "unknown Delta table property"),
        ({"delta.appendOnly": "maybe"}, deltalog.InvalidArgumentError, "`true` or `false`"),
        ({"delta.constraints.c": "id > 0"}, deltalog.OperationNotAllowedError, "add_constraint"),
        ({"delta.columnMapping.mode": "id"}, deltalog.OperationNotAllowedError, "none to name"),
        ({"delta.feature.warpDrive": "supported"}, deltalog.UnsupportedFeatureError, "warpDrive"),
    ],
)
def test_refused_properties_commit_nothing(
    table: deltalog.DeltaTable,
    properties: dict[str, str],
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        table.alter.set_properties(properties)
    assert table.latest_version() == 0


def test_deletion_vectors_and_in_commit_timestamps_upgrade_to_table_features(
    table: deltalog.DeltaTable,
) -> None:
    table.alter.set_properties({"delta.enableDeletionVectors": "true"})
    table.alter.set_properties({"delta.enableInCommitTimestamps": "true"})
    snapshot = table.snapshot()
    protocol = snapshot.protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert protocol.reader_features == ("deletionVectors",)
    assert protocol.writer_features is not None
    assert {"deletionVectors", "inCommitTimestamp"} <= set(protocol.writer_features)
    configuration = snapshot.metadata.configuration
    assert configuration["delta.inCommitTimestampEnablementVersion"] == "2"
    assert "inCommitTimestamp" in commit_info(path(table), 2)
    deltalog.write_table(table, pa.table({"id": [4], "name": ["d"], "p": ["y"]}))
    assert len(rows(path(table))) == 4


def test_columns_under_column_mapping(table: deltalog.DeltaTable) -> None:
    with pytest.raises(deltalog.OperationNotAllowedError, match=r"delta\.columnMapping\.mode"):
        table.alter.rename_column("name", "label")
    table.alter.set_properties({"delta.columnMapping.mode": "name"})
    fields = {field["name"]: field for field in table.snapshot().schema.fields()}
    assert fields["name"]["metadata"]["delta.columnMapping.physicalName"] == "name"

    added = table.alter.add_columns(
        pa.schema([("score", pa.float64()), ("info", pa.struct([("a", pa.int32())]))])
    )
    assert commit_info(path(table), added.version)["operation"] == "ADD COLUMNS"
    table.alter.add_columns(pa.schema([("b", pa.string())]), parent="info")
    with pytest.raises(deltalog.InvalidArgumentError, match="already exists"):
        table.alter.add_columns(pa.schema([("SCORE", pa.int64())]))
    with pytest.raises(deltalog.InvalidArgumentError, match="must be nullable"):
        table.alter.add_columns(pa.schema([pa.field("z", pa.int64(), nullable=False)]))

    renamed = table.alter.rename_column("name", "label")
    assert parameters(path(table), renamed.version) == {
        "oldColumnPath": "name",
        "newColumnPath": "label",
    }
    table.alter.drop_columns(["info.a", "missing"], if_exists=True)
    with pytest.raises(deltalog.OperationNotAllowedError, match="partition column"):
        table.alter.drop_columns(["p"])
    dropped = table.alter.drop_columns(["score"])
    assert parameters(path(table), dropped.version) == {"columns": '["score"]'}

    deltalog.write_table(
        table, pa.table({"id": [4], "label": ["d"], "p": ["y"], "info": [{"b": "z"}]})
    )
    assert rows(path(table)) == [
        {"id": 1, "label": "a", "p": "x", "info": None},
        {"id": 2, "label": "b", "p": "x", "info": None},
        {"id": 3, "label": None, "p": "y", "info": None},
        {"id": 4, "label": "d", "p": "y", "info": {"b": "z"}},
    ]


def test_add_columns_from_delta_json_without_column_mapping(table: deltalog.DeltaTable) -> None:
    fields = {
        "type": "struct",
        "fields": [
            {"name": "when", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
        ],
    }
    result = table.alter.add_columns(json.dumps(fields))
    protocol = result.snapshot.protocol
    assert protocol.writer_features is not None
    assert "timestampNtz" in protocol.writer_features
    assert rows(path(table))[0]["when"] is None


def test_constraints_are_checked_against_existing_rows(table: deltalog.DeltaTable) -> None:
    with pytest.raises(deltalog.ConstraintViolationError, match="1 existing row") as caught:
        table.alter.add_constraint("small", "id < 3")
    assert "id = 3" in str(caught.value)
    with pytest.raises(deltalog.ConstraintViolationError, match="name = NULL"):
        table.alter.add_constraint("named", "name IS NOT NULL AND name <> 'zz'")
    with pytest.raises(deltalog.InvalidArgumentError, match="unknown column"):
        table.alter.add_constraint("bad", "nope > 1")
    assert table.latest_version() == 0

    added = table.alter.add_constraint("Positive", "id > 0")
    assert parameters(path(table), added.version) == {"name": "Positive", "expr": "id > 0"}
    snapshot = added.snapshot
    assert snapshot.metadata.configuration["delta.constraints.positive"] == "id > 0"
    assert snapshot.protocol.min_writer_version == 3
    with pytest.raises(deltalog.ConstraintViolationError, match="positive"):
        deltalog.write_table(table, pa.table({"id": [-1], "name": ["n"], "p": ["x"]}))
    assert table.latest_version() == added.version

    dropped = table.alter.drop_constraint("positive")
    assert parameters(path(table), dropped.version)["existed"] == "true"
    with pytest.raises(deltalog.InvalidArgumentError, match="no constraint"):
        table.alter.drop_constraint("positive")
    again = table.alter.drop_constraint("positive", if_exists=True)
    assert parameters(path(table), again.version)["existed"] == "false"
    deltalog.write_table(table, pa.table({"id": [-1], "name": ["n"], "p": ["x"]}))


def test_features_and_description(table: deltalog.DeltaTable) -> None:
    result = table.alter.add_feature("deletionVectors")
    assert result.snapshot.protocol.reader_features == ("deletionVectors",)
    with pytest.raises(deltalog.UnsupportedFeatureError, match="teleport"):
        table.alter.add_feature("teleport")
    with pytest.raises(deltalog.UnsupportedFeatureError):
        table.alter.add_feature("icebergWriterCompatV1")
    described = table.alter.set_description("the events")
    assert described.snapshot.metadata.description == "the events"
    assert repr(table.alter).startswith("Alter(")


def test_bad_arguments(table: deltalog.DeltaTable) -> None:
    with pytest.raises(deltalog.InvalidArgumentError):
        table.alter.drop_columns("id")
    with pytest.raises(deltalog.InvalidArgumentError):
        table.alter.set_properties({"k": 1})  # type: ignore[dict-item]
    table.alter.set_properties({"delta.columnMapping.mode": "name"})
    with pytest.raises(deltalog.InvalidArgumentError, match="not a column name"):
        table.alter.drop_columns(["id > 1"])


def test_cluster_by_at_creation_in_writes_and_by_alter(tmp_path: Path) -> None:
    """``cluster_by`` creates a clustered table (the ``clustering`` feature, the
    ``delta.clustering`` domain, ``clusterBy`` in the commit), ``alter.cluster_by`` changes and
    clears the columns, and writes naming other columns than the table's are refused."""
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    uri = tmp_path / "t"
    table = deltalog.DeltaTable.create(uri, schema, cluster_by=["id"])
    assert "clustering" in (table.protocol().writer_features or [])
    assert "domainMetadata" in (table.protocol().writer_features or [])
    assert parameters(uri, 0)["clusterBy"] == '["id"]'
    data = pa.table({"id": pa.array([3, 1, 2], pa.int64()), "name": ["c", "a", "b"]})
    deltalog.write_table(uri, data, cluster_by=["id"])
    with pytest.raises(deltalog.InvalidArgumentError, match="MISMATCH"):
        deltalog.write_table(uri, data, cluster_by=["name"])
    table.alter.cluster_by(["name", "id"])
    assert commit_info(uri, 2)["operation"] == "CLUSTER BY"
    assert parameters(uri, 2)["newClusteringColumns"] == "name,id"
    assert table.optimize()["clusterBy"] == ["name", "id"]
    table.alter.cluster_by(None)
    assert parameters(uri, 4)["newClusteringColumns"] == ""
    assert table.optimize()["clusterBy"] == []
    with pytest.raises(deltalog.InvalidArgumentError, match="both clustered and partitioned"):
        deltalog.DeltaTable.create(tmp_path / "u", schema, partition_by=["name"], cluster_by=["id"])
    with pytest.raises(deltalog.InvalidArgumentError, match="no such column"):
        deltalog.write_table(tmp_path / "v", data, cluster_by=["nope"])
    with pytest.raises(deltalog.InvalidArgumentError, match="sequence of str"):
        table.alter.cluster_by("id")


def test_change_column_widens_comments_relaxes_and_moves(tmp_path: Path) -> None:
    """``alter.change_column``: a type widening under ``delta.enableTypeWidening`` (old files
    read as the wider type), a comment, ``DROP NOT NULL`` and a new position, each a
    ``CHANGE COLUMN`` commit."""
    uri = tmp_path / "t"
    schema = pa.schema([pa.field("i", pa.int32(), nullable=False), ("s", pa.string())])
    table = deltalog.DeltaTable.create(uri, schema)
    deltalog.write_table(uri, pa.table({"i": pa.array([1, 2], pa.int32()), "s": ["a", "b"]}))
    with pytest.raises(deltalog.OperationNotAllowedError, match="enableTypeWidening"):
        table.alter.change_column("i", type="long")
    table.alter.set_properties({"delta.enableTypeWidening": "true"})
    table.alter.change_column("i", type="long")
    assert commit_info(uri, 3)["operation"] == "CHANGE COLUMN"
    assert deltalog.read_table(uri).schema.field("i").type == pa.int64()
    assert sorted(deltalog.read_table(uri).column("i").to_pylist()) == [1, 2]
    deltalog.write_table(uri, pa.table({"i": pa.array([2**40], pa.int64()), "s": ["c"]}))
    with pytest.raises(deltalog.InvalidArgumentError, match="only widenings"):
        table.alter.change_column("i", type="integer")
    with pytest.raises(deltalog.InvalidArgumentError, match="NOT NULL"):
        table.alter.change_column("s", nullable=False)
    table.alter.change_column("i", comment="the id", nullable=True, after="s")
    assert parameters(uri, 5)["position"] == "AFTER s"
    field = deltalog.read_table(uri).schema.field("i")
    assert field.nullable
    assert deltalog.read_table(uri).schema.names == ["s", "i"]
    table.alter.change_column("i", first=True)
    assert deltalog.read_table(uri).schema.names == ["i", "s"]
    assert sorted(deltalog.read_table(uri).column("i").to_pylist()) == [1, 2, 2**40]


def test_not_null_columns_put_invariants_in_a_features_protocol(tmp_path: Path) -> None:
    """Delta on Spark counts a NOT NULL column as an invariant and refuses to read a
    table-features protocol that leaves ``invariants`` out; ``add_feature`` repairs a table
    written without it."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    table = deltalog.DeltaTable.create(
        tmp_path / "t", schema, configuration={"delta.enableDeletionVectors": "true"}
    )
    assert "invariants" in (table.protocol().writer_features or [])
    nullable = deltalog.DeltaTable.create(
        tmp_path / "u",
        pa.schema([("id", pa.int64())]),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    assert "invariants" not in (nullable.protocol().writer_features or [])
    nullable.alter.add_feature("invariants")
    assert "invariants" in (deltalog.DeltaTable(tmp_path / "u").protocol().writer_features or [])


def test_drop_feature_purges_deletion_vectors_and_protects_history(
    table: deltalog.DeltaTable,
) -> None:
    """``drop_feature`` removes what the feature left (here deletion vectors, purged by a
    REORG) and then the feature, protecting the history with ``checkpointProtection``; the
    rows stay; refusals commit nothing."""
    table.alter.set_properties({"delta.enableDeletionVectors": "true"})
    table.delete("id = 2")
    version = table.latest_version()
    with pytest.raises(deltalog.OperationNotAllowedError, match="nothing to drop"):
        table.alter.drop_feature("v2Checkpoint")
    with pytest.raises(deltalog.OperationNotAllowedError, match="cannot be dropped"):
        table.alter.drop_feature("invariants")
    with pytest.raises(deltalog.InvalidArgumentError, match="property"):
        table.alter.drop_feature("delta.enableDeletionVectors")
    assert table.latest_version() == version

    result = table.alter.drop_feature("deletionVectors")
    protocol = result.snapshot.protocol
    assert protocol.reader_features is None
    assert "checkpointProtection" in (protocol.writer_features or ())
    assert commit_info(path(table), result.version)["operation"] == "DROP FEATURE"
    assert parameters(path(table), result.version) == {
        "featureName": "deletionVectors",
        "truncateHistory": False,
    }
    assert [row["id"] for row in rows(path(table))] == [1, 3]
    files = result.snapshot.files().to_pyarrow()
    assert all(dv is None for dv in files["deletion_vector"].to_pylist())


def test_drop_feature_from_the_command_line(table: deltalog.DeltaTable) -> None:
    from deltalog.cli import main

    table.alter.set_properties({"delta.enableInCommitTimestamps": "true"})
    assert main(["alter", table.uri, "drop-feature", "inCommitTimestamp"]) == 0
    assert "inCommitTimestamp" not in (table.snapshot().protocol.writer_features or ())
