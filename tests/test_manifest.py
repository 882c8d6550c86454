"""``DeltaTable.generate("symlink_format_manifest")`` and the post-commit manifests of
``delta.compatibility.symlinkFormatManifest.enabled``, on real tables in a temporary folder
(Delta on Spark as the oracle: ``tests/spark/test_spark_delta_table.py``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import deltalog


def manifests(root: Path) -> dict[str, list[str]]:
    """Each manifest (relative path) with its lines, sorted, the table root written ROOT."""
    found = {}
    for manifest in sorted((root / "_symlink_format_manifest").rglob("manifest")):
        lines = manifest.read_text().splitlines()
        found[str(manifest.relative_to(root))] = sorted(
            line.replace(f"file:{root.resolve()}", "ROOT", 1) for line in lines
        )
    return found


def live_files(root: Path) -> list[str]:
    table = deltalog.DeltaTable(str(root))
    paths = pa.table(table.snapshot().files()).column("path").to_pylist()
    return sorted(f"ROOT/{path}" for path in paths)


def test_one_manifest_per_partition_lists_the_live_files(tmp_path: Path) -> None:
    rows = pa.table({"id": [1, 2, 3, 4], "p": ["a", "b", None, "a"]})
    deltalog.write_table(tmp_path, rows, partition_by=["p"])
    done = deltalog.DeltaTable(str(tmp_path)).generate()
    assert sorted(done["written"]) == [
        "_symlink_format_manifest/p=__HIVE_DEFAULT_PARTITION__/manifest",
        "_symlink_format_manifest/p=a/manifest",
        "_symlink_format_manifest/p=b/manifest",
    ]
    found = manifests(tmp_path)
    assert sorted(line for lines in found.values() for line in lines) == live_files(tmp_path)
    for name, lines in found.items():
        partition = name.split("/")[1]
        assert all(line.startswith(f"ROOT/{partition}/") for line in lines), found

    deltalog.write_table(tmp_path, pa.table({"id": [5], "p": ["a"]}), mode="overwrite")
    done = deltalog.DeltaTable(str(tmp_path)).generate("SYMLINK_FORMAT_MANIFEST")
    assert done["written"] == ["_symlink_format_manifest/p=a/manifest"]
    assert len(done["deleted"]) == 2
    assert list(manifests(tmp_path)) == ["_symlink_format_manifest/p=a/manifest"]


def test_an_unpartitioned_table_has_one_manifest_even_when_empty(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"id": [1, 2]}))
    deltalog.DeltaTable(str(tmp_path)).generate()
    assert list(manifests(tmp_path)) == ["_symlink_format_manifest/manifest"]
    assert manifests(tmp_path)["_symlink_format_manifest/manifest"] == live_files(tmp_path)
    deltalog.DeltaTable(str(tmp_path)).delete()
    deltalog.DeltaTable(str(tmp_path)).generate()
    assert (tmp_path / "_symlink_format_manifest" / "manifest").read_text() == ""


def test_the_table_property_regenerates_the_manifests_after_every_commit(tmp_path: Path) -> None:
    properties = {"delta.compatibility.symlinkFormatManifest.enabled": "true"}
    rows = pa.table({"id": [1, 2], "p": [1, 2]})
    deltalog.write_table(tmp_path, rows, partition_by=["p"], configuration=properties)
    assert set(manifests(tmp_path)) == {
        "_symlink_format_manifest/p=1/manifest",
        "_symlink_format_manifest/p=2/manifest",
    }
    deltalog.write_table(tmp_path, pa.table({"id": [3], "p": [3]}), mode="append")
    table = deltalog.DeltaTable(str(tmp_path))
    result = table.delete("p = 1")
    assert result.post_commit.errors == ()
    assert set(manifests(tmp_path)) == {
        "_symlink_format_manifest/p=2/manifest",
        "_symlink_format_manifest/p=3/manifest",
    }
    assert sorted(line for lines in manifests(tmp_path).values() for line in lines) == (
        live_files(tmp_path)
    )


def test_tables_spark_refuses_are_refused(tmp_path: Path) -> None:
    vectors = tmp_path / "vectors"
    properties = {"delta.enableDeletionVectors": "true"}
    deltalog.write_table(vectors, pa.table({"id": [1, 2, 3]}), configuration=properties)
    deltalog.DeltaTable(str(vectors)).delete("id = 2")
    with pytest.raises(deltalog.OperationNotAllowedError, match="deletion vectors"):
        deltalog.DeltaTable(str(vectors)).generate()
    mapped = tmp_path / "mapped"
    properties = {"delta.columnMapping.mode": "name"}
    deltalog.write_table(mapped, pa.table({"id": [1]}), configuration=properties)
    with pytest.raises(deltalog.OperationNotAllowedError, match="column mapping"):
        deltalog.DeltaTable(str(mapped)).generate()
    with pytest.raises(deltalog.InvalidArgumentError, match="not supported"):
        deltalog.DeltaTable(str(mapped)).generate("hive")
    assert not (vectors / "_symlink_format_manifest").exists()
    assert not (mapped / "_symlink_format_manifest").exists()
