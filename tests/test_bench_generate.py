"""The synthetic Delta log generator of the benchmarks (benches/deltabench): what it writes is
spec-valid and exactly what it says it wrote, checked with deltalog, deltalake (when installed),
the golden tables written by Delta on Spark and the raw files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))

from deltabench import dv
from deltabench.generate import (
    MARKER_NAME,
    LogSpec,
    TableInfo,
    cached_table,
    expected_live_files,
    last_checkpoint_checksum,
    spec_hash,
    write_blind_appends,
    write_table,
)
from deltabench.rows import cached_rows_table

SMALL = {"commits": 6, "adds_per_commit": 15, "rows_per_file": 1000, "dv_cardinality": 10}
#: Columns of every type, as commits_10k_wide has them.
WIDE = {
    "stats_columns": 11,
    "column_types": ("long", "double", "string", "date", "timestamp"),
    "column_names": tuple(f"col_{i}" for i in range(1, 11)),
}

#: One small table per checkpoint kind, with and without partitions, DVs inline and in files,
#: removes and log compaction files.
CASES: dict[str, LogSpec] = {
    "json-only": LogSpec(**SMALL, partitions=3),
    "json-only-inline-dvs-compaction": LogSpec(
        **{**SMALL, "commits": 9},
        removes_per_commit=4,
        deletion_vectors="inline",
        compaction=True,
        compaction_span=4,
    ),
    "none-checkpoint-files-in-commit-0": LogSpec(**SMALL, checkpoint_files=40, checkpoint="none"),
    "classic": LogSpec(**SMALL, checkpoint_files=250, removes_per_commit=3),
    "classic-partitioned-file-dvs": LogSpec(
        **SMALL,
        checkpoint_files=250,
        removes_per_commit=3,
        partitions=4,
        deletion_vectors="file",
        dvs_per_file=32,
    ),
    "classic-parsed": LogSpec(**SMALL, checkpoint_files=250, checkpoint="classic_parsed"),
    "classic-parsed-partitioned-inline-dvs": LogSpec(
        **{**SMALL, "dv_cardinality": 7},
        checkpoint_files=250,
        checkpoint="classic_parsed",
        partitions=5,
        removes_per_commit=2,
        deletion_vectors="inline",
    ),
    "multipart": LogSpec(**SMALL, checkpoint_files=300, checkpoint="multipart", checkpoint_parts=3),
    "multipart-partitioned-file-dvs-compaction": LogSpec(
        **SMALL,
        checkpoint_files=300,
        checkpoint="multipart",
        checkpoint_parts=4,
        partitions=7,
        removes_per_commit=5,
        deletion_vectors="file",
        compaction=True,
        compaction_span=3,
    ),
    "v2-parquet-sidecars": LogSpec(
        **SMALL, checkpoint_files=300, checkpoint="v2", sidecars=3, removes_per_commit=2
    ),
    "v2-json-sidecars-partitioned-file-dvs": LogSpec(
        **SMALL,
        checkpoint_files=300,
        checkpoint="v2",
        v2_top_format="json",
        sidecars=2,
        partitions=3,
        deletion_vectors="file",
        dvs_per_file=50,
    ),
    "v2-json-no-sidecars-inline-dvs": LogSpec(
        **SMALL,
        checkpoint_files=120,
        checkpoint="v2",
        v2_top_format="json",
        sidecars=0,
        deletion_vectors="inline",
        removes_per_commit=1,
    ),
    "v2-parquet-no-sidecars-no-column-stats": LogSpec(
        **SMALL, checkpoint_files=120, checkpoint="v2", sidecars=0, stats_columns=0
    ),
    "streaming-wide-stats": LogSpec(**{**SMALL, **WIDE}, removes_per_commit=1, streaming=True),
    "classic-parsed-wide-stats-partitioned": LogSpec(
        **{**SMALL, **WIDE},
        checkpoint_files=150,
        checkpoint="classic_parsed",
        removes_per_commit=2,
        partitions=3,
    ),
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TableInfo]:
    root = tmp_path_factory.mktemp("generated")
    return {name: write_table(root / name, spec) for name, spec in CASES.items()}


@pytest.mark.parametrize("name", CASES)
def test_deltalog_reads_what_was_generated(name: str, tables: dict[str, TableInfo]) -> None:
    spec, info = CASES[name], tables[name]
    snapshot = deltalog.DeltaTable(str(info.path)).snapshot()
    assert snapshot.version == info.version == spec.commits
    assert snapshot.num_files == info.num_files
    expected = expected_live_files(spec)
    files = pa.table(snapshot.files()).sort_by("path")
    assert files["path"].to_pylist() == expected["path"].to_pylist()
    assert files["size"].to_pylist() == expected["size"].to_pylist()
    assert files["num_records"].to_pylist() == expected["num_records"].to_pylist()
    if spec.partitions:
        parts = [value["part"] for value in files["partition_values"].to_pylist()]
        assert parts == expected["part"].to_pylist()

    vectors = pa.table(snapshot.deletion_vectors()).sort_by("path")
    assert vectors.num_rows == info.num_deletion_vectors
    if spec.deletion_vectors != "none":
        assert vectors["path"].to_pylist() == expected["path"].to_pylist()
        assert vectors["deleted_rows"].to_pylist() == expected["deleted_rows"].to_pylist()
        assert all(
            len(rows) == min(spec.dv_cardinality, spec.rows_per_file)
            for rows in vectors["deleted_rows"].to_pylist()
        )

    kept = pa.table(snapshot.scan(filter=info.one_percent_filter).files())
    assert kept.num_rows == info.one_percent_files

    older = deltalog.DeltaTable(str(info.path)).snapshot(info.older_version)
    assert older.version == info.older_version
    assert older.num_files == info.older_num_files
    older_paths = sorted(pa.table(older.files())["path"].to_pylist())
    assert older_paths == expected_live_files(spec, info.older_version)["path"].to_pylist()


@pytest.mark.parametrize("name", CASES)
def test_deltalake_reads_what_was_generated(name: str, tables: dict[str, TableInfo]) -> None:
    deltalake = pytest.importorskip("deltalake")
    info = tables[name]
    table = deltalake.DeltaTable(str(info.path))
    assert table.version() == info.version
    assert len(table.file_uris()) == info.num_files
    older = deltalake.DeltaTable(str(info.path), version=info.older_version)
    assert len(older.file_uris()) == info.older_num_files
    if CASES[name].deletion_vectors != "none":
        masks = pa.table(table.deletion_vectors()).to_pylist()
        root = info.path.resolve().as_uri() + "/"
        deleted = {
            row["filepath"].removeprefix(root): [
                index for index, keep in enumerate(row["selection_vector"]) if not keep
            ]
            for row in masks
        }
        expected = expected_live_files(CASES[name])
        assert deleted == dict(
            zip(expected["path"].to_pylist(), expected["deleted_rows"].to_pylist(), strict=True)
        )


def test_one_percent_filter_keeps_about_one_percent(tmp_path: Path) -> None:
    spec = LogSpec(checkpoint_files=2000, commits=4, adds_per_commit=50, removes_per_commit=30)
    info = write_table(tmp_path / "t", spec)
    assert info.one_percent_files == round(info.num_files * 0.01)
    snapshot = deltalog.DeltaTable(str(info.path)).snapshot()
    kept = pa.table(snapshot.scan(filter=info.one_percent_filter).files())
    assert kept.num_rows == info.one_percent_files


@pytest.mark.parametrize("name", CASES)
def test_commits_are_valid_json_lines(name: str, tables: dict[str, TableInfo]) -> None:
    """commitInfo first with growing timestamps; unique relative paths; removes name live
    files with their DV; stats carry numRecords, min/max/nullCount and tightBounds."""
    spec, info = CASES[name], tables[name]
    live: dict[str, Any] = {}
    if info.checkpoint_paths:
        live = {add["path"]: _present(add["deletionVector"]) for add in _checkpoint_adds(info)}
    seen = set(live)
    last_timestamp = -1
    for commit in info.commit_paths:
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        assert next(iter(actions[0])) == "commitInfo"
        timestamp = actions[0]["commitInfo"]["timestamp"]
        assert timestamp > last_timestamp
        last_timestamp = timestamp
        assert abs(commit.stat().st_mtime * 1000 - timestamp) < 1000
        for action in actions[1:]:
            if "remove" in action:
                remove = action["remove"]
                assert live.pop(remove["path"]) == remove.get("deletionVector")
            elif "add" in action:
                add = action["add"]
                _check_add(spec, add)
                assert add["path"] not in seen
                seen.add(add["path"])
                live[add["path"]] = add.get("deletionVector")
    assert len(live) == info.num_files


def test_protocol_and_metadata(tables: dict[str, TableInfo]) -> None:
    expectations = {
        "classic": (1, 2, None, {}),
        "classic-partitioned-file-dvs": (
            3,
            7,
            ["deletionVectors"],
            {"delta.enableDeletionVectors": "true"},
        ),
        "classic-parsed": (1, 2, None, {"delta.checkpoint.writeStatsAsStruct": "true"}),
        "v2-parquet-sidecars": (3, 7, ["v2Checkpoint"], {"delta.checkpointPolicy": "v2"}),
    }
    for name, (reader, writer, features, configuration) in expectations.items():
        snapshot = deltalog.DeltaTable(str(tables[name].path)).snapshot()
        assert snapshot.protocol.min_reader_version == reader
        assert snapshot.protocol.min_writer_version == writer
        expected_features = None if features is None else tuple(features)
        assert snapshot.protocol.reader_features == expected_features
        assert snapshot.protocol.writer_features == expected_features
        retention = {"delta.deletedFileRetentionDuration": "interval 36500 days"}
        assert dict(snapshot.metadata.configuration) == {**retention, **configuration}


def test_dv_files_hold_many_vectors_at_the_stated_offsets(tables: dict[str, TableInfo]) -> None:
    info = tables["multipart-partitioned-file-dvs-compaction"]
    per_file: dict[str, int] = {}
    for add in _checkpoint_adds(info):
        descriptor = add["deletionVector"]
        assert descriptor["storageType"] == "u"
        assert len(descriptor["pathOrInlineDv"]) == 22  # a 2-character random prefix
        relative = dv.relative_dv_path(descriptor["pathOrInlineDv"])
        assert relative.count("/") == 1
        content = (info.path / relative).read_bytes()
        rows = dv.read_from_dv_file(content, descriptor["offset"], descriptor["sizeInBytes"])
        assert len(rows) == descriptor["cardinality"] == 10
        assert rows.max() < 1000
        per_file[relative] = per_file.get(relative, 0) + 1
    assert info.num_dv_files == len(list(info.path.glob("*/deletion_vector_*.bin")))
    assert max(per_file.values()) == 200  # dvs_per_file


def test_inline_dvs_are_z85_of_the_bitmap_data(tables: dict[str, TableInfo]) -> None:
    info = tables["classic-parsed-partitioned-inline-dvs"]
    for add in _checkpoint_adds(info):
        descriptor = add["deletionVector"]
        assert descriptor["storageType"] == "i"
        assert descriptor["offset"] is None
        data = dv.z85_decode(descriptor["pathOrInlineDv"], descriptor["sizeInBytes"])
        assert descriptor["sizeInBytes"] % 4 == 2  # odd cardinality: the Z85 text is padded
        assert len(dv.parse_bitmap_data(data)) == descriptor["cardinality"] == 7


def test_checkpoint_schema_is_sparks(tables: dict[str, TableInfo], golden_tables: Any) -> None:
    spark_v1 = pq.read_schema(
        golden_tables.root("checkpoint")
        / "delta/_delta_log/00000000000000000010.checkpoint.parquet"
    )
    ours = pq.read_schema(tables["classic"].checkpoint_paths[0])
    assert ours.names == spark_v1.names
    for name in spark_v1.names:
        assert ours.field(name).type == spark_v1.field(name).type, name

    spark_v2 = pq.read_schema(
        next(
            (golden_tables.root("v2-checkpoint-parquet") / "delta/_delta_log").glob(
                "*.checkpoint.*-*.parquet"
            )
        )
    )
    top = pq.read_schema(tables["v2-parquet-sidecars"].checkpoint_paths[0])
    for name in ("checkpointMetadata", "sidecar", "metaData", "protocol", "txn"):
        assert top.field(name).type == spark_v2.field(name).type, name
    sidecar = pq.read_schema(tables["v2-parquet-sidecars"].checkpoint_paths[1])
    assert sidecar.names == ["add", "remove"]


def test_parsed_stats_match_the_json_stats(tables: dict[str, TableInfo]) -> None:
    info = tables["classic-parsed-partitioned-inline-dvs"]
    add = pq.read_table(info.checkpoint_paths[0], columns=["add"])["add"]
    add_type = add.type
    stats_type = add_type.field("stats_parsed").type
    assert [f.name for f in stats_type] == [
        "numRecords",
        "minValues",
        "maxValues",
        "nullCount",
        "tightBounds",
    ]
    assert stats_type.field("minValues").type == pa.struct(
        [
            ("id", pa.int64()),
            ("c1", pa.int64()),
            ("c2", pa.float64()),
            ("c3", pa.string()),
            ("c4", pa.int64()),
        ]
    )
    assert add_type.field("partitionValues_parsed").type == pa.struct([("part", pa.string())])
    for row in add.to_pylist():
        if row is None:
            continue
        stats = json.loads(row["stats"])
        parsed = row["stats_parsed"]
        assert parsed["numRecords"] == stats["numRecords"]
        assert parsed["minValues"] == stats["minValues"]
        assert parsed["maxValues"] == stats["maxValues"]
        assert parsed["nullCount"] == stats["nullCount"]
        assert parsed["tightBounds"] is stats["tightBounds"] is False
        assert row["partitionValues_parsed"] == dict(row["partitionValues"])


def test_checkpoint_layouts_and_last_checkpoint(tables: dict[str, TableInfo]) -> None:
    classic = tables["classic"]
    assert [p.name for p in classic.checkpoint_paths] == ["00000000000000000000.checkpoint.parquet"]
    last = _last_checkpoint(classic)
    assert (last["version"], last["size"], last["numOfAddFiles"]) == (0, 252, 250)
    assert last["sizeInBytes"] == classic.checkpoint_paths[0].stat().st_size
    assert "checkpointSchema" in last

    multipart = tables["multipart"]
    assert [p.name for p in multipart.checkpoint_paths] == [
        f"00000000000000000000.checkpoint.{i:010d}.0000000003.parquet" for i in (1, 2, 3)
    ]
    assert _last_checkpoint(multipart)["parts"] == 3
    rows = [pq.ParquetFile(p).metadata.num_rows for p in multipart.checkpoint_paths]
    assert sum(rows) == 302
    assert min(rows) > 50
    protocol_part = [
        pq.read_table(p, columns=["protocol"])["protocol"].null_count < n
        for p, n in zip(multipart.checkpoint_paths, rows, strict=True)
    ]
    assert protocol_part == [True, False, False]  # pmod(42, 3) = 0: the first part

    v2 = tables["v2-json-sidecars-partitioned-file-dvs"]
    top, *sidecars = v2.checkpoint_paths
    lines = [json.loads(line) for line in top.read_text().splitlines()]
    assert lines[0] == {"checkpointMetadata": {"version": 0}}
    assert [line["sidecar"]["path"] for line in lines if "sidecar" in line] == [
        p.name for p in sidecars
    ]
    assert all(p.parent.name == "_sidecars" for p in sidecars)
    last = _last_checkpoint(v2)
    assert last["v2Checkpoint"]["path"] == top.name
    assert last["size"] == 1 + 2 + 2 + 300
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in sidecars) == 300


def test_checkpoint_row_groups_are_about_100k_rows(tmp_path: Path) -> None:
    info = write_table(
        tmp_path / "t",
        LogSpec(checkpoint_files=250_001, commits=1, adds_per_commit=1, stats_columns=1),
    )
    metadata = pq.ParquetFile(info.checkpoint_paths[0]).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sizes == [100_002, 100_000, 50_001]
    assert metadata.row_group(0).column(0).compression == "SNAPPY"
    assert deltalog.DeltaTable(str(info.path)).snapshot().num_files == 250_002


def test_compaction_files_reconcile_their_commits(tables: dict[str, TableInfo]) -> None:
    info = tables["json-only-inline-dvs-compaction"]
    assert [p.name for p in info.compaction_paths] == [
        "00000000000000000001.00000000000000000004.compacted.json",
        "00000000000000000005.00000000000000000008.compacted.json",
    ]
    for compaction in info.compaction_paths:
        start, end = (int(part) for part in compaction.name.split(".")[:2])
        added: dict[str, Any] = {}
        removed: dict[str, Any] = {}
        for version in range(start, end + 1):
            for line in info.commit_paths[version].read_text().splitlines():
                action = json.loads(line)
                if "add" in action:
                    added[action["add"]["path"]] = action
                elif "remove" in action:
                    added.pop(action["remove"]["path"], None)
                    removed[action["remove"]["path"]] = action
        actions = [json.loads(line) for line in compaction.read_text().splitlines()]
        assert {a["add"]["path"]: a for a in actions if "add" in a} == added
        assert sorted(a["remove"]["path"] for a in actions if "remove" in a) == sorted(removed)
        assert not [a for a in actions if "commitInfo" in a]


def test_cached_table_reuses_a_complete_write(tmp_path: Path) -> None:
    spec = LogSpec(commits=3, adds_per_commit=5)
    first = cached_table(tmp_path, "small", spec)
    assert first.path.parent == tmp_path
    assert first.path.name.startswith("small-")
    assert (first.path / MARKER_NAME).is_file()
    sentinel = first.path / "_delta_log" / "sentinel"
    sentinel.touch()
    assert cached_table(tmp_path, "small", spec) == first
    assert sentinel.exists()  # not rewritten

    (first.path / MARKER_NAME).unlink()  # an interrupted write: no marker
    assert cached_table(tmp_path, "small", spec) == first
    assert not sentinel.exists()  # rewritten from scratch

    other = cached_table(tmp_path, "small", LogSpec(commits=4, adds_per_commit=5))
    assert other.path != first.path
    assert other.version == 4


def test_write_table_refuses_an_existing_log(tmp_path: Path) -> None:
    write_table(tmp_path / "t", LogSpec(commits=1))
    with pytest.raises(FileExistsError):
        write_table(tmp_path / "t", LogSpec(commits=1))


def test_generation_is_deterministic(tmp_path: Path) -> None:
    spec = CASES["classic-partitioned-file-dvs"]
    a = write_table(tmp_path / "a", spec)
    b = write_table(tmp_path / "b", spec)
    for left, right in zip(a.commit_paths, b.commit_paths, strict=True):
        assert left.read_bytes() == right.read_bytes()
    assert pq.read_table(a.checkpoint_paths[0]).equals(pq.read_table(b.checkpoint_paths[0]))
    changed = write_table(tmp_path / "c", LogSpec(**{**spec.__dict__, "seed": 1}))
    assert changed.commit_paths[0].read_bytes() != a.commit_paths[0].read_bytes()


def test_streaming_commits_are_what_sparks_streaming_sink_writes(
    tables: dict[str, TableInfo],
) -> None:
    """commitInfo (STREAMING UPDATE, its parameters and metrics as strings), the query's txn
    with the epoch as its version, the remove, then the adds; one query id throughout."""
    spec, info = CASES["streaming-wide-stats"], tables["streaming-wide-stats"]
    query_ids = set()
    for version, commit in enumerate(info.commit_paths):
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        kinds = [next(iter(action)) for action in actions]
        info_action = actions[0]["commitInfo"]
        if version == 0:
            assert kinds == ["commitInfo", "protocol", "metaData"]
            continue
        removes = 0 if version == 1 else 1  # nothing to remove before the first adds
        adds = spec.adds_per_commit
        assert kinds == ["commitInfo", "txn", *["remove"] * removes, *["add"] * adds]
        assert list(info_action) == [
            "timestamp",
            "operation",
            "operationParameters",
            "readVersion",
            "isolationLevel",
            "isBlindAppend",
            "operationMetrics",
            "engineInfo",
            "txnId",
        ]
        assert info_action["operation"] == "STREAMING UPDATE"
        parameters = info_action["operationParameters"]
        assert parameters["outputMode"] == "Append"
        assert parameters["epochId"] == str(version - 1)
        sizes = sum(action["add"]["size"] for action in actions if "add" in action)
        assert info_action["operationMetrics"] == {
            "numRemovedFiles": str(removes),
            "numOutputRows": str(adds * spec.rows_per_file),
            "numOutputBytes": str(sizes),
            "numAddedFiles": str(adds),
        }
        assert info_action["isBlindAppend"] is (removes == 0)
        txn = actions[1]["txn"]
        assert list(txn) == ["appId", "version", "lastUpdated"]
        assert txn["version"] == version - 1
        assert txn["lastUpdated"] == info_action["timestamp"]
        query_ids |= {txn["appId"], parameters["queryId"]}
        for remove in (action["remove"] for action in actions if "remove" in action):
            assert list(remove) == [
                "path",
                "deletionTimestamp",
                "dataChange",
                "extendedFileMetadata",
                "partitionValues",
                "size",
            ]
    assert len(query_ids) == 1
    snapshot = deltalog.DeltaTable(str(info.path)).snapshot()
    assert snapshot.transaction_version(query_ids.pop()) == spec.commits - 1


def test_statistics_of_every_column_type(tables: dict[str, TableInfo]) -> None:
    """The schema declares the column types; the statistics write dates and timestamps as
    Spark does, and deltalog reads them back as the typed values."""
    info = tables["streaming-wide-stats"]
    metadata = json.loads(info.commit_paths[0].read_text().splitlines()[2])["metaData"]
    fields = json.loads(metadata["schemaString"])["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [
        ("id", "long"),
        *[(f"col_{i}", WIDE["column_types"][(i - 1) % 5]) for i in range(1, 11)],
    ]
    add = next(
        json.loads(line)["add"]
        for line in info.commit_paths[1].read_text().splitlines()
        if '"add"' in line
    )
    stats = json.loads(add["stats"])
    assert len(stats["minValues"]) == len(stats["maxValues"]) == len(stats["nullCount"]) == 11
    assert stats["minValues"]["col_4"] == "2023-11-18"  # a date
    assert stats["minValues"]["col_5"] == "2023-11-14T22:13:25.005Z"  # a timestamp (UTC, ms)
    for name in ("col_4", "col_5", "col_9", "col_10"):
        assert stats["minValues"][name] < stats["maxValues"][name]
    files = pa.table(deltalog.DeltaTable(str(info.path)).snapshot().files(with_stats=True))
    minimum = files.sort_by("path").column("min_values").combine_chunks()
    assert minimum.type.field("col_4").type == pa.date32()
    assert pa.types.is_timestamp(minimum.type.field("col_5").type)


def test_parsed_stats_of_every_column_type_match_the_json_stats(
    tables: dict[str, TableInfo],
) -> None:
    info = tables["classic-parsed-wide-stats-partitioned"]
    add = pq.read_table(info.checkpoint_paths[0], columns=["add"])["add"]
    values_type = add.type.field("stats_parsed").type.field("minValues").type
    assert [values_type.field(i).type for i in (4, 5)] == [
        pa.date32(),
        pa.timestamp("us", tz="UTC"),
    ]
    for row in add.to_pylist():
        if row is None:
            continue
        stats, parsed = json.loads(row["stats"]), row["stats_parsed"]
        for label in ("minValues", "maxValues"):
            for name, value in parsed[label].items():
                text = stats[label][name]
                if hasattr(value, "tzinfo"):  # a timestamp
                    assert value.isoformat(timespec="milliseconds").replace("+00:00", "Z") == text
                elif hasattr(value, "isoformat"):  # a date
                    assert value.isoformat() == text
                else:
                    assert value == text
        assert parsed["nullCount"] == stats["nullCount"]


def test_specs_from_before_the_later_fields_keep_their_hash() -> None:
    """The fields added later (column types and names, streaming) count in the cache name
    only when set, so the tables cached for earlier specs stay valid."""
    assert spec_hash(LogSpec()) == "9ae4c889ab9c"
    assert spec_hash(LogSpec(commits=5, adds_per_commit=20, partitions=4)) == "85c712cc695e"
    changed = {spec_hash(LogSpec(**WIDE)), spec_hash(LogSpec(streaming=True))}
    assert len(changed) == 2
    assert not changed & {spec_hash(LogSpec()), spec_hash(LogSpec(stats_columns=11))}


def test_bad_column_types_and_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="column_types"):
        write_table(tmp_path / "a", LogSpec(column_types=("long", "uuid")))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="column_names"):
        write_table(tmp_path / "b", LogSpec(stats_columns=3, column_names=("x",)))
    with pytest.raises(ValueError, match="column_names"):
        write_table(tmp_path / "c", LogSpec(stats_columns=3, column_names=("x", "id")))


def test_blind_appends_bring_a_table_to_a_later_version(tmp_path: Path) -> None:
    spec = LogSpec(checkpoint_files=50, commits=3, adds_per_commit=5)
    info = write_table(tmp_path / "t", spec)
    written = write_blind_appends(info.path, 4, 9, [("id", "long"), ("c1", "long")])
    assert [path.name for path in written] == [f"{v:020d}.json" for v in range(4, 10)]
    snapshot = deltalog.DeltaTable(str(info.path)).snapshot()
    assert snapshot.version == 9
    assert snapshot.num_files == info.num_files + 6
    assert write_blind_appends(info.path, 10, 9) == []
    with pytest.raises(FileExistsError):  # never over an existing commit
        write_blind_appends(info.path, 9, 9)


# --- the byte formats --------------------------------------------------------------------------


def test_dv_serialization_round_trips() -> None:
    values = np.concatenate(
        [np.arange(0, 70_000, 3), np.arange(200_000, 210_000), [2**32 + 7, 2**40]]
    ).astype(np.uint64)
    data = dv.bitmap_data(values)
    assert data[:4] == (1681511377).to_bytes(4, "little")
    assert int.from_bytes(data[4:12], "little") == 3  # buckets: 0, 1, 256
    assert np.array_equal(dv.parse_bitmap_data(data), np.unique(values))
    content, offsets = dv.dv_file([data, dv.bitmap_data([5])])
    assert content[0] == 1
    assert offsets == [1, 1 + 4 + len(data) + 4]
    assert dv.read_from_dv_file(content, offsets[1], len(dv.bitmap_data([5]))).tolist() == [5]
    with pytest.raises(ValueError, match="CRC"):
        dv.read_from_dv_file(content[:10] + b"\xff" + content[11:], 1, len(data))


def test_z85_matches_the_spec_examples() -> None:
    # Delta protocol, "Deletion Vector Descriptor Schema", JSON example 1.
    assert dv.relative_dv_path("ab^-aqEH.-t@S}K{vb[*k^") == (
        "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    )
    inline = "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
    assert dv.z85_encode(dv.bitmap_data([3, 4, 7, 11, 18, 29])) == inline
    assert dv.parse_bitmap_data(dv.z85_decode(inline, 44)).tolist() == [3, 4, 7, 11, 18, 29]


def test_dv_bytes_match_spark_written_files(golden_tables: Any) -> None:
    """Re-serializing each vector Delta on Spark wrote gives the same bytes."""
    root = golden_tables.root("dv-partitioned-with-checkpoint") / "delta"
    checked = 0
    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            descriptor = action.get("add", {}).get("deletionVector")
            if descriptor is None:
                continue
            content = (root / dv.relative_dv_path(descriptor["pathOrInlineDv"])).read_bytes()
            offset, size = descriptor["offset"], descriptor["sizeInBytes"]
            rows = dv.read_from_dv_file(content, offset, size)
            assert dv.frame(dv.bitmap_data(rows)) == content[offset : offset + size + 8]
            checked += 1
    assert checked >= 5


def test_last_checkpoint_checksum(golden_tables: Any) -> None:
    # Delta protocol, "JSON checksum": the test vector.
    sample = {
        "k0": "'v 0'",
        "checksum": "adsaskfljadfkjadfkj",
        "k1": {"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]},
    }
    assert last_checkpoint_checksum(sample) == "6a92d155a59bf2eecbd4b4ec7fd1f875"
    for name in ("multi-part-checkpoint", "v2-checkpoint-json", "dv-partitioned-with-checkpoint"):
        content = json.loads(
            (golden_tables.root(name) / "delta/_delta_log/_last_checkpoint").read_text()
        )
        assert last_checkpoint_checksum(content) == content["checksum"], name


def test_multipart_parts_follow_sparks_hash_partitioning(golden_tables: Any) -> None:
    from deltabench.generate import _spark_string_hash

    log = golden_tables.root("multi-part-checkpoint") / "delta/_delta_log"
    for part in sorted(log.glob("*.checkpoint.*.parquet")):
        index, count = int(part.name.split(".")[2]), int(part.name.split(".")[3])
        paths = [a["path"] for a in pq.read_table(part)["add"].to_pylist() if a is not None]
        hashes = _spark_string_hash(pa.array(paths)).view(np.int32)
        assert (np.mod(hashes, count) + 1 == index).all()


# --- helpers -----------------------------------------------------------------------------------


def _check_add(spec: LogSpec, add: dict[str, Any]) -> None:
    path = add["path"]
    assert not path.startswith("/")
    assert path.endswith(".c000.snappy.parquet")
    if spec.partitions:
        assert path.startswith(f"part={add['partitionValues']['part']}/part-")
    stats = json.loads(add["stats"])
    assert stats["numRecords"] == spec.rows_per_file
    assert stats["tightBounds"] is (spec.deletion_vectors == "none")
    if spec.stats_columns:
        assert set(stats) == {"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"}
        assert len(stats["minValues"]) == spec.stats_columns
        assert stats["minValues"]["id"] <= stats["maxValues"]["id"]
    assert ("deletionVector" in add) is (spec.deletion_vectors != "none")


def _checkpoint_adds(info: TableInfo) -> list[dict[str, Any]]:
    adds = []
    for path in info.checkpoint_paths:
        if path.suffix == ".json":
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            adds += [line["add"] for line in lines if "add" in line]
        elif "add" in pq.read_schema(path).names:
            adds += [a for a in pq.read_table(path, columns=["add"])["add"].to_pylist() if a]
    return adds


def _present(descriptor: dict[str, Any] | None) -> dict[str, Any] | None:
    """A DV descriptor read from parquet, without the fields JSON leaves out."""
    if descriptor is None:
        return None
    return {key: value for key, value in descriptor.items() if value is not None}


def _last_checkpoint(info: TableInfo) -> dict[str, Any]:
    content: dict[str, Any] = json.loads((info.path / "_delta_log/_last_checkpoint").read_text())
    assert content["checksum"] == last_checkpoint_checksum(content)
    return content


def test_rows_table_is_real_data_with_its_stated_counts(tmp_path: Path) -> None:
    table = cached_rows_table(tmp_path, "rows", rows=8_000, files=4)
    assert (table.rows, table.files) == (8_000, 4)
    for path in (table.cow_path, table.dv_path):
        rows = deltalog.DeltaTable(str(path)).snapshot().scan().to_pyarrow()
        assert rows.schema.names == ["id", "value", "name", "ts", "qty", "flag"]
        assert sorted(rows.column("id").to_pylist()) == list(range(8_000))
        matching = pa.compute.sum(pa.compute.equal(rows.column("qty"), 7)).as_py()
        assert matching == table.deleted_rows > 0
    files = pa.table(deltalog.DeltaTable(str(table.cow_path)).snapshot().files(with_stats=True))
    assert files.num_rows == 4
    assert files.column("num_records").to_pylist() == [2_000] * 4
    assert sorted(m["id"] for m in files.column("min_values").to_pylist()) == [
        0,
        2_000,
        4_000,
        6_000,
    ]
    cow = deltalog.DeltaTable(str(table.cow_path)).snapshot()
    dv = deltalog.DeltaTable(str(table.dv_path)).snapshot()
    assert cow.protocol.writer_features is None
    assert "deletionVectors" in (dv.protocol.writer_features or [])
    assert dv.metadata.configuration == {"delta.enableDeletionVectors": "true"}

    with pa.memory_map(str(table.source_path)) as source:
        merge_source = pa.ipc.open_file(source).read_all()
    ids = merge_source.column("id").to_numpy()
    assert len(ids) == 80 == table.updated_rows + table.inserted_rows
    assert int((ids < 8_000).sum()) == table.updated_rows == 40
    assert len(set(ids.tolist())) == len(ids)
    # The updated ids reach every file.
    assert {int(i) // 2_000 for i in ids if i < 8_000} == {0, 1, 2, 3}

    again = cached_rows_table(tmp_path, "rows", rows=8_000, files=4)
    assert again == table


@pytest.mark.skipif(
    importlib.util.find_spec("deltalake") is None, reason="deltalake is not installed"
)
def test_deltalake_reads_the_rows_tables(tmp_path: Path) -> None:
    import deltalake

    table = cached_rows_table(tmp_path, "rows", rows=4_000, files=2)
    rows = deltalake.DeltaTable(str(table.cow_path)).to_pyarrow_table()
    assert rows.num_rows == 4_000
    assert pa.compute.sum(pa.compute.equal(rows.column("qty"), 7)).as_py() == table.deleted_rows
    # deltalake's Arrow reader refuses the deletionVectors reader feature; its log reader and
    # its writers (delete, merge) accept the table.
    twin = deltalake.DeltaTable(str(table.dv_path))
    assert "deletionVectors" in (twin.protocol().writer_features or [])
    assert pa.compute.sum(pa.table(twin.get_add_actions()).column("num_records")).as_py() == 4_000
