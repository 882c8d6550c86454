"""Writing tables from Python: create, append, overwrite, replaceWhere, schema merge,
partitions, every type, idempotent application versions, refused input, racing processes,
transactions and their conflicts."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog


def rows(uri: Path | str, version: int | None = None) -> list[dict[str, object]]:
    return canon(deltalog.read_table(str(uri), version=version).to_pylist())


def canon(values: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(values, key=lambda row: json.dumps(row, default=str, sort_keys=True))


def commit_actions(uri: Path, version: int) -> list[dict[str, object]]:
    text = (uri / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def test_write_creates_then_appends(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    first = deltalog.write_table(uri, pa.table({"id": [1, 2], "s": ["a", None]}))
    assert (first.version, first.committed) == (0, True)
    assert first.metrics["numOutputRows"] == 2
    second = deltalog.write_table(str(uri), pa.table({"id": [3], "s": ["c"]}))
    assert second.version == 1
    assert second.snapshot.version == 1
    assert rows(uri) == [{"id": 1, "s": "a"}, {"id": 2, "s": None}, {"id": 3, "s": "c"}]
    info = commit_actions(uri, 1)[0]["commitInfo"]
    assert info["operation"] == "WRITE"
    assert info["isBlindAppend"] is True
    assert info["operationParameters"]["mode"] == "Append"
    assert info["operationMetrics"]["numOutputRows"] == "1"


def test_create_with_arrow_or_json_schema(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    table = deltalog.DeltaTable.create(
        tmp_path / "a", schema, partition_by=["p"], name="n", description="d"
    )
    snapshot = table.snapshot()
    assert snapshot.version == 0
    assert snapshot.num_files == 0
    assert snapshot.partition_columns == ("p",)
    assert (snapshot.metadata.name, snapshot.metadata.description) == ("n", "d")
    text = snapshot.schema.json()
    again = deltalog.DeltaTable.create(tmp_path / "b", text)
    assert again.snapshot().schema.json() == text
    with pytest.raises(deltalog.OperationNotAllowedError):
        deltalog.DeltaTable.create(tmp_path / "a", schema)
    assert deltalog.DeltaTable.create(tmp_path / "a", schema, mode="ignore").latest_version() == 0
    replaced = deltalog.DeltaTable.create(
        tmp_path / "a", pa.schema([("x", pa.int32())]), mode="overwrite"
    )
    assert replaced.snapshot().schema.names == ["x"]
    assert replaced.snapshot().partition_columns == ()


def test_modes_on_an_existing_table(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1]}))
    with pytest.raises(deltalog.OperationNotAllowedError):
        deltalog.write_table(uri, pa.table({"id": [2]}), mode="error")
    ignored = deltalog.write_table(uri, pa.table({"id": [2]}), mode="ignore")
    assert (ignored.committed, ignored.version) == (False, 0)
    overwritten = deltalog.write_table(uri, pa.table({"id": [5, 6]}), mode="overwrite")
    assert overwritten.metrics["numRemovedFiles"] == 1
    assert rows(uri) == [{"id": 5}, {"id": 6}]
    assert rows(uri, version=0) == [{"id": 1}]
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.write_table(uri, pa.table({"id": [2]}), mode="sideways")


def test_replace_where_overwrites_matching_partitions_only(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    data = pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]})
    deltalog.write_table(uri, data, partition_by=["p"])
    deltalog.write_table(
        uri, pa.table({"id": [10], "p": ["a"]}), mode="overwrite", predicate="p = 'a'"
    )
    assert rows(uri) == canon([{"id": 2, "p": "b"}, {"id": 10, "p": "a"}])
    info = commit_actions(uri, 1)[0]["commitInfo"]
    assert info["operationParameters"]["predicate"] == "p = 'a'"
    with pytest.raises(deltalog.ConstraintViolationError) as refused:
        deltalog.write_table(
            uri, pa.table({"id": [11], "p": ["b"]}), mode="overwrite", predicate="p = 'a'"
        )
    assert refused.value.unreferenced_files == []
    assert deltalog.DeltaTable(uri).latest_version() == 1
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.write_table(uri, pa.table({"id": [1], "p": ["a"]}), predicate="p = 'a'")


def test_schema_merge_adds_nullable_columns(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1]}))
    with pytest.raises(deltalog.SchemaMismatchError) as mismatch:
        deltalog.write_table(uri, pa.table({"id": [2], "extra": ["x"]}))
    assert mismatch.value.column == "extra"
    deltalog.write_table(uri, pa.table({"id": [2], "extra": ["x"]}), schema_mode="merge")
    assert rows(uri) == canon([{"id": 1, "extra": None}, {"id": 2, "extra": "x"}])
    deltalog.write_table(uri, pa.table({"other": [1.5]}), mode="overwrite", schema_mode="overwrite")
    assert rows(uri) == [{"other": 1.5}]


def test_schema_merge_adds_nested_fields_and_widens_under_type_widening(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    first = pa.table(
        {
            "i": pa.array([1], pa.int32()),
            "s": pa.array([{"x": 1}], pa.struct([("x", pa.int32())])),
        }
    )
    deltalog.write_table(uri, first, configuration={"delta.enableTypeWidening": "true"})
    wider = pa.table(
        {
            "i": pa.array([2**40], pa.int64()),
            "s": pa.array(
                [{"x": 2**35, "y": "n"}], pa.struct([("x", pa.int64()), ("y", pa.string())])
            ),
        }
    )
    deltalog.write_table(uri, wider, schema_mode="merge")
    schema = json.loads(deltalog.DeltaTable(uri).snapshot().schema.json())
    i, s = schema["fields"]
    assert i["type"] == "long"
    assert i["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert [(f["name"], f["type"]) for f in s["type"]["fields"]] == [("x", "long"), ("y", "string")]
    assert rows(uri) == canon(
        [{"i": 1, "s": {"x": 1, "y": None}}, {"i": 2**40, "s": {"x": 2**35, "y": "n"}}]
    )


def test_schema_merge_without_type_widening_refuses_a_wider_type(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"i": pa.array([1], pa.int32())}))
    with pytest.raises(deltalog.SchemaMismatchError):
        deltalog.write_table(uri, pa.table({"i": pa.array([2], pa.int64())}), schema_mode="merge")
    assert pa.schema(deltalog.DeltaTable(uri).schema()).field("i").type == pa.int32()
    assert deltalog.DeltaTable(uri).latest_version() == 0


def test_partitioned_write_with_nulls_and_special_characters(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    values = ["a b", "a=b/c%d", None, "é", ""]
    data = pa.table({"id": list(range(5)), "p": values, "n": [1, None, 1, 2, 2]})
    deltalog.write_table(uri, data, partition_by=["p", "n"])
    back = rows(uri)
    assert sorted((r["id"], r["p"], r["n"]) for r in back) == sorted(
        zip(range(5), [v if v != "" else None for v in values], [1, None, 1, 2, 2], strict=True)
    )
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.write_table(uri, data, partition_by=["n"])


def test_every_type_round_trips(tmp_path: Path) -> None:
    struct = pa.struct([("x", pa.int32()), ("y", pa.string())])
    data = pa.table(
        {
            "b": pa.array([True, None], pa.bool_()),
            "i8": pa.array([1, -2], pa.int8()),
            "i16": pa.array([300, None], pa.int16()),
            "i32": pa.array([70000, 1], pa.int32()),
            "i64": pa.array([2**40, None], pa.int64()),
            "f32": pa.array([1.5, None], pa.float32()),
            "f64": pa.array([2.25, -0.0], pa.float64()),
            "s": pa.array(["x", None], pa.string()),
            "bin": pa.array([b"\x00\x01", None], pa.binary()),
            "d": pa.array([dt.date(2024, 1, 2), None], pa.date32()),
            "ts": pa.array(
                [dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc), None],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5), None], pa.timestamp("us")),
            "dec": pa.array([Decimal("12.34"), None], pa.decimal128(10, 2)),
            "arr": pa.array([[1, 2], None], pa.list_(pa.int64())),
            "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
            "st": pa.array([{"x": 1, "y": "z"}, None], struct),
        }
    )
    uri = tmp_path / "t"
    deltalog.write_table(uri, data)
    back = deltalog.read_table(str(uri))
    assert back.schema.names == data.schema.names
    assert back.to_pylist() == data.to_pylist()


def test_polars_and_record_batch_readers_are_written(tmp_path: Path) -> None:
    polars = pytest.importorskip("polars")
    uri = tmp_path / "t"
    deltalog.write_table(uri, polars.DataFrame({"id": [1, 2]}))
    batches = [pa.record_batch({"id": [i]}) for i in range(3, 6)]
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches))
    deltalog.write_table(uri, reader)
    deltalog.write_table(uri, pa.record_batch({"id": [6]}))
    assert [r["id"] for r in rows(uri)] == [1, 2, 3, 4, 5, 6]


def test_app_version_makes_a_retried_write_idempotent(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    data = pa.table({"id": [1]})
    deltalog.write_table(uri, data, app_id="job", app_version=1)
    again = deltalog.write_table(uri, data, app_id="job", app_version=1)
    assert again.committed is False
    deltalog.write_table(uri, data, app_id="job", app_version=2)
    table = deltalog.DeltaTable(uri)
    assert table.latest_version() == 1
    assert table.snapshot().transaction_version("job") == 2
    assert len(rows(uri)) == 2


def test_refused_rows_leave_the_table_unchanged_and_name_written_files(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "id", "type": "long", "nullable": False, "metadata": {}},
                {"name": "v", "type": "long", "nullable": True, "metadata": {}},
            ],
        }
    )
    deltalog.DeltaTable.create(uri, schema, configuration={"delta.constraints.positive": "v > 0"})
    good = pa.record_batch({"id": [1], "v": [1]})
    bad = pa.record_batch({"id": [2], "v": [-1]})
    reader = pa.RecordBatchReader.from_batches(good.schema, iter([good, bad]))
    with pytest.raises(deltalog.ConstraintViolationError) as violation:
        deltalog.write_table(uri, reader, target_file_size=1)
    assert violation.value.constraint is not None
    assert len(violation.value.unreferenced_files or []) == 1
    assert (uri / (violation.value.unreferenced_files or [""])[0]).exists()
    with pytest.raises(deltalog.ConstraintViolationError):
        deltalog.write_table(uri, pa.table({"id": pa.array([None], pa.int64()), "v": [1]}))
    with pytest.raises(deltalog.SchemaMismatchError):
        deltalog.write_table(uri, pa.table({"id": ["text"]}))
    assert deltalog.DeltaTable(uri).latest_version() == 0


def test_append_only_table_refuses_overwrite_before_writing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1]}), configuration={"delta.appendOnly": "true"})
    with pytest.raises(deltalog.OperationNotAllowedError) as refused:
        deltalog.write_table(uri, pa.table({"id": [2]}), mode="overwrite")
    assert not refused.value.unreferenced_files
    assert deltalog.DeltaTable(uri).latest_version() == 0


def test_column_mapping_at_create(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    config = {"delta.columnMapping.mode": "name"}
    deltalog.write_table(uri, pa.table({"id": [1], "s": ["a"]}), configuration=config)
    deltalog.write_table(uri, pa.table({"id": [2], "x": [1.0]}), schema_mode="merge")
    snapshot = deltalog.DeltaTable(uri).snapshot()
    assert snapshot.metadata.configuration["delta.columnMapping.maxColumnId"] == "3"
    assert rows(uri) == [{"id": 1, "s": "a", "x": None}, {"id": 2, "s": None, "x": 1.0}]


RACER = """
import sys, pyarrow as pa, deltalog
uri, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    deltalog.write_table(uri, pa.table({"worker": [worker], "i": [i]}))
"""


def test_two_processes_racing_appends_both_land(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.DeltaTable.create(uri, pa.schema([("worker", pa.int64()), ("i", pa.int64())]))
    count = 15
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(uri), str(w), str(count)])
        for w in (1, 2)
    ]
    assert [racer.wait(timeout=120) for racer in racers] == [0, 0]
    assert deltalog.DeltaTable(uri).latest_version() == 2 * count
    seen = sorted((r["worker"], r["i"]) for r in rows(uri))
    assert seen == sorted((w, i) for w in (1, 2) for i in range(count))
    versions = sorted(int(p.stem) for p in (uri / "_delta_log").glob("*.json"))
    assert versions == list(range(2 * count + 1))


def test_transaction_writes_removes_and_stages_actions(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(
        uri,
        pa.table({"id": [1, 2], "p": ["a", "b"]}),
        partition_by=["p"],
        configuration={"delta.feature.domainMetadata": "supported"},
    )
    table = deltalog.DeltaTable(uri)
    tx = table.transaction(operation="DELETE")
    assert tx.read_version == 0
    assert tx.remove_files("p = 'a'") == 1
    assert tx.write(pa.table({"id": [3], "p": ["c"]})) == 1
    assert len(tx.written_files) == 1
    tx.set_app_version("app", 7)
    tx.set_domain_metadata("my.domain", '{"k":1}')
    tx.update_metadata(configuration={"user.key": "v"}, description="changed")
    result = tx.commit()
    assert result.version == 1
    snapshot = result.snapshot
    assert snapshot.domain_metadata("my.domain") == '{"k":1}'
    assert snapshot.transaction_version("app") == 7
    assert snapshot.metadata.configuration["user.key"] == "v"
    assert rows(uri) == [{"id": 2, "p": "b"}, {"id": 3, "p": "c"}]
    with pytest.raises(deltalog.OperationNotAllowedError):
        tx.commit()


def test_add_files_takes_the_file_list_shape(tmp_path: Path) -> None:
    source = tmp_path / "source"
    deltalog.write_table(source, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    files = pa.table(deltalog.DeltaTable(source).snapshot().files())
    target = tmp_path / "target"
    deltalog.DeltaTable.create(target, pa.schema([("id", pa.int64()), ("p", pa.string())]), ["p"])
    for path in files.column("path").to_pylist():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_bytes((source / path).read_bytes())
    tx = deltalog.DeltaTable(target).transaction()
    assert tx.add_files(files.select(["path", "size", "partition_values", "num_records"])) == 2
    tx.commit()
    assert rows(target) == rows(source)


def test_conflicting_transactions_raise_the_named_subclass(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    deltalog.write_table(uri, pa.table({"id": [1], "p": ["a"]}), partition_by=["p"])
    snapshot = deltalog.DeltaTable(uri).snapshot()
    first = snapshot.transaction()
    second = snapshot.transaction()
    first.remove_files("p = 'a'")
    second.remove_files("p = 'a'")
    first.commit()
    with pytest.raises(deltalog.ConcurrentDeleteReadError) as conflict:
        second.commit()
    assert isinstance(conflict.value, deltalog.CommitConflictError)
    assert conflict.value.version == 1

    reader = snapshot.refresh().transaction(isolation_level="Serializable")
    reader.remove_files("p = 'b'")
    reader.write(pa.table({"id": [5], "p": ["c"]}))
    deltalog.write_table(uri, pa.table({"id": [2], "p": ["b"]}))
    with pytest.raises(deltalog.ConcurrentAppendError) as lost:
        reader.commit()
    assert len(lost.value.unreferenced_files or []) == 1
