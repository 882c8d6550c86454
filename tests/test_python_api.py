"""The Python API end to end: on the sample table and on tables written by hand."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from conftest import (
    REPO_ROOT,
    TableWriter,
    add_action,
    commit_info,
    metadata_action,
    remove_action,
    utc,
)
from deltalog import _core

FILE_COLUMNS = [
    "path",
    "size",
    "modification_time",
    "partition_values",
    "deletion_vector",
    "num_records",
    "base_row_id",
    "default_row_commit_version",
    "tags",
]
STATS_COLUMNS = ["min_values", "max_values", "null_count", "tight_bounds"]
HISTORY_COLUMNS = [
    "version",
    "timestamp",
    "in_commit_timestamp",
    "operation",
    "operation_parameters",
    "user_name",
    "engine_info",
    "commit_info",
]
COMMIT_COLUMNS = ["version", "action", "json"]

#: Facts about tests/data/sample-table, worked out from its log by hand.
SAMPLE_LATEST_VERSION = 15
SAMPLE_ACTIVE_FILES = 15
SAMPLE_TOTAL_SIZE = 11007
SAMPLE_LIVE_ROWS = 35
SAMPLE_FILES_WITH_DV = 2
SAMPLE_FILES_AT_VERSION_0 = 20


# --- the package -----------------------------------------------------------------------------


def test_import_needs_no_arrow_library() -> None:
    code = (
        "import sys, deltalog; "
        "loaded = [m for m in ('pyarrow', 'polars', 'pandas') if m in sys.modules]; "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_runtime_threads_start_on_first_use_not_at_import(sample_table: Path) -> None:
    code = f"""
import os, deltalog
threads = lambda: len(os.listdir("/proc/self/task"))
assert threads() == 1, threads()
deltalog.DeltaTable({str(sample_table)!r}).latest_version()
assert threads() > 1, threads()
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_version_is_the_crate_version() -> None:
    cargo = (REPO_ROOT / "Cargo.toml").read_text()
    match = re.search(r'^version\s*=\s*"([^"]+)"', cargo, re.MULTILINE)
    assert match is not None
    assert deltalog.__version__ == match.group(1) == _core.__version__


def test_every_extension_class_has_a_public_wrapper() -> None:
    extension_classes = {
        value
        for name, value in vars(_core).items()
        if isinstance(value, type) and not name.startswith("_")
    }
    wrapped = {
        getattr(value, "_wraps", None)
        for name in deltalog.__all__
        if isinstance(value := getattr(deltalog, name), type)
    }
    assert extension_classes, "the extension registers no class"
    assert extension_classes <= wrapped, extension_classes - wrapped


def test_every_extension_class_is_declared_frozen() -> None:
    sources = (REPO_ROOT / "crates" / "deltalog-python" / "src").rglob("*.rs")
    declarations = [
        match.group(0)
        for path in sources
        for match in re.finditer(r"#\[pyclass[^\]]*\]", path.read_text())
    ]
    assert declarations
    assert all("frozen" in declaration for declaration in declarations), declarations


def test_extension_classes_cannot_be_built_from_python() -> None:
    with pytest.raises(TypeError):
        _core.RawSnapshot()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        deltalog.Snapshot()


def test_public_objects_are_immutable(sample_table: Path) -> None:
    table = deltalog.DeltaTable(sample_table)
    snapshot = table.snapshot()
    for value, attribute in [
        (table, "uri"),
        (snapshot, "version"),
        (snapshot, "_raw"),
        (snapshot.schema, "names"),
        (snapshot.files(), "num_rows"),
    ]:
        with pytest.raises(AttributeError):
            setattr(value, attribute, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.protocol.min_reader_version = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.metadata.id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.metadata.configuration["k"] = "v"  # type: ignore[index]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_a_working_runtime(sample_table: Path) -> None:
    table = deltalog.DeltaTable(sample_table)
    assert table.latest_version() == SAMPLE_LATEST_VERSION
    code = f"""
import os, deltalog
table = deltalog.DeltaTable({str(sample_table)!r})
table.latest_version()
child = os.fork()
if child == 0:
    os._exit(0 if deltalog.DeltaTable({str(sample_table)!r}).snapshot().version == 15 else 1)
_, status = os.waitpid(child, 0)
raise SystemExit(os.waitstatus_to_exitcode(status))
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- the sample table ------------------------------------------------------------------------


def test_latest_version_of_sample_table(sample_table: Path) -> None:
    table = deltalog.DeltaTable(str(sample_table))
    assert table.latest_version() == SAMPLE_LATEST_VERSION
    assert table.uri.startswith("file://")
    assert table.uri.endswith("/")


def test_table_accepts_path_objects_and_file_uris(sample_table: Path) -> None:
    by_path = deltalog.DeltaTable(sample_table)
    by_uri = deltalog.DeltaTable(sample_table.as_uri())
    assert by_path.uri == by_uri.uri


def test_snapshot_of_sample_table(sample_table: Path) -> None:
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    assert snapshot.version == SAMPLE_LATEST_VERSION
    assert snapshot.timestamp.tzinfo is not None
    assert snapshot.timestamp.utcoffset() == timedelta(0)
    assert snapshot.partition_columns == ("part",)
    assert snapshot.num_files == SAMPLE_ACTIVE_FILES
    assert snapshot.total_size == SAMPLE_TOTAL_SIZE
    assert "version=15" in repr(snapshot)


def test_schema_has_logical_names_and_both_forms(sample_table: Path) -> None:
    schema = deltalog.DeltaTable(sample_table).snapshot().schema
    assert schema.names == ["part", "col1", "col2"]
    delta = json.loads(schema.json())
    assert [field["type"] for field in delta["fields"]] == ["integer", "integer", "string"]
    arrow = schema.to_pyarrow()
    assert arrow.names == ["part", "col1", "col2"]
    assert arrow.field("col1").type == pa.int32()
    assert arrow.field("col2").type in (pa.string(), pa.large_string(), pa.string_view())
    assert pa.schema(schema) == arrow
    assert schema == deltalog.DeltaTable(sample_table).snapshot(version=0).schema
    assert repr(schema) == "Schema(part: integer, col1: integer, col2: string)"


def test_protocol_fields(sample_table: Path) -> None:
    protocol = deltalog.DeltaTable(sample_table).snapshot().protocol
    assert protocol == deltalog.Protocol(
        min_reader_version=3,
        min_writer_version=7,
        reader_features=("deletionVectors",),
        writer_features=("deletionVectors",),
    )
    assert hash(protocol) == hash(dataclasses.replace(protocol))


def test_metadata_fields(sample_table: Path) -> None:
    metadata = deltalog.DeltaTable(sample_table).snapshot().metadata
    assert metadata.id == "testId"
    assert metadata.name is None
    assert metadata.description is None
    assert metadata.partition_columns == ("part",)
    assert dict(metadata.configuration) == {"delta.enableDeletionVectors": "true"}
    assert metadata.created_time == datetime(2023, 7, 7, 1, 1, 55, 853000, tzinfo=timezone.utc)
    assert metadata.format_provider == "parquet"
    assert metadata.schema_string is not None
    assert json.loads(metadata.schema_string)["type"] == "struct"
    hash(metadata)


def test_files_of_sample_table(sample_table: Path) -> None:
    files = deltalog.DeltaTable(sample_table).snapshot().files()
    assert files.column_names == FILE_COLUMNS
    assert files.num_rows == SAMPLE_ACTIVE_FILES
    table = pa.table(files)
    assert table.num_rows == SAMPLE_ACTIVE_FILES
    assert sum(table["size"].to_pylist()) == SAMPLE_TOTAL_SIZE
    paths = table["path"].to_pylist()
    assert len(set(paths)) == len(paths)
    assert all(re.fullmatch(r"part=\d/part-.*\.snappy\.parquet", path) for path in paths)
    partition_type = table.schema.field("partition_values").type
    assert partition_type == pa.struct([pa.field("part", pa.int32())])
    parts = [row["part"] for row in table["partition_values"].to_pylist()]
    assert [int(path[5]) for path in paths] == parts
    assert table.schema.field("modification_time").type == pa.timestamp("ms", tz="UTC")


def test_files_count_live_rows_through_deletion_vectors(sample_table: Path) -> None:
    rows = deltalog.DeltaTable(sample_table).snapshot().files().to_pylist()
    vectors = [row["deletion_vector"] for row in rows if row["deletion_vector"] is not None]
    assert len(vectors) == SAMPLE_FILES_WITH_DV
    assert {vector["storage_type"] for vector in vectors} == {"u"}
    deleted = sum(vector["cardinality"] for vector in vectors)
    assert sum(row["num_records"] for row in rows) - deleted == SAMPLE_LIVE_ROWS


def test_files_with_stats_add_typed_statistics(sample_table: Path) -> None:
    table = deltalog.DeltaTable(sample_table).snapshot().files(with_stats=True).to_pyarrow()
    assert table.column_names == FILE_COLUMNS + STATS_COLUMNS
    assert table.schema.field("min_values").type.field("col1").type == pa.int32()
    minimum = min(row["col1"] for row in table["min_values"].to_pylist())
    maximum = max(row["col1"] for row in table["max_values"].to_pylist())
    assert 0 <= minimum <= maximum <= 49


def test_arrow_stream_can_be_read_many_times(sample_table: Path) -> None:
    files = deltalog.DeltaTable(sample_table).snapshot().files()
    assert pa.table(files).equals(pa.table(files))
    assert files.to_reader().read_all().num_rows == SAMPLE_ACTIVE_FILES
    assert pa.schema(files) == pa.table(files).schema


def test_polars_and_pandas_take_arrow_results(sample_table: Path) -> None:
    polars = pytest.importorskip("polars")
    snapshot = deltalog.DeltaTable(sample_table).snapshot()
    frame = polars.DataFrame(snapshot.files())
    assert frame.shape == (SAMPLE_ACTIVE_FILES, len(FILE_COLUMNS))
    assert snapshot.files().to_polars().shape == frame.shape
    assert len(snapshot.files().to_pandas()) == SAMPLE_ACTIVE_FILES


def test_json_rows_need_no_arrow_library(sample_table: Path) -> None:
    rows = deltalog.DeltaTable(sample_table).snapshot().files().to_json_rows()
    assert len(rows) == SAMPLE_ACTIVE_FILES
    assert set(rows[0]) == set(FILE_COLUMNS)
    assert isinstance(rows[0]["partition_values"]["part"], int)


def test_stream_honours_a_requested_schema(sample_table: Path) -> None:
    commits = deltalog.DeltaTable(sample_table).commits(0, 0)
    requested = pa.schema(
        [("version", pa.int32()), ("action", pa.large_string()), ("json", pa.large_string())]
    )
    capsule = commits.__arrow_c_stream__(requested.__arrow_c_schema__())
    table = pa.RecordBatchReader._import_from_c_capsule(capsule).read_all()
    assert table.schema == requested


def test_history_is_newest_first(sample_table: Path) -> None:
    history = deltalog.DeltaTable(sample_table).history()
    assert history.column_names == HISTORY_COLUMNS
    table = history.to_pyarrow()
    assert table["version"].to_pylist() == list(range(SAMPLE_LATEST_VERSION, -1, -1))
    operations = table["operation"].to_pylist()
    assert operations[-1] == "WRITE"
    assert set(operations[:-1]) == {"DELETE"}
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    first = json.loads(table["commit_info"][-1].as_py())
    assert first["txnId"] == "bc4bfee2-8faf-4995-bfa1-a3c4930cbf22"
    assert table["engine_info"][0].as_py().startswith("Apache-Spark/3.4.0")


def test_history_limit_keeps_the_newest(sample_table: Path) -> None:
    table = deltalog.DeltaTable(sample_table).history(limit=3).to_pyarrow()
    assert table["version"].to_pylist() == [15, 14, 13]


def test_commits_list_actions_with_their_version(sample_table: Path) -> None:
    commits = deltalog.DeltaTable(sample_table).commits(14)
    assert commits.column_names == COMMIT_COLUMNS
    table = commits.to_pyarrow()
    assert set(table["version"].to_pylist()) == {14, 15}
    assert {"commitInfo", "add", "remove"} <= set(table["action"].to_pylist())
    for action, text in zip(table["action"].to_pylist(), table["json"].to_pylist(), strict=True):
        assert isinstance(json.loads(text), dict), action


def test_first_commit_holds_protocol_and_metadata(sample_table: Path) -> None:
    table = deltalog.DeltaTable(sample_table).commits(0, 0).to_pyarrow()
    assert set(table["version"].to_pylist()) == {0}
    actions = table["action"].to_pylist()
    assert actions.count("protocol") == 1
    assert actions.count("metaData") == 1
    assert actions.count("add") == SAMPLE_FILES_AT_VERSION_0


def test_time_travel_by_version(sample_table: Path) -> None:
    table = deltalog.DeltaTable(sample_table)
    first = table.snapshot(version=0)
    assert first.version == 0
    assert first.num_files == SAMPLE_FILES_AT_VERSION_0
    at_checkpoint = table.snapshot(10)
    assert at_checkpoint.version == 10
    assert table.snapshot(version=SAMPLE_LATEST_VERSION).num_files == SAMPLE_ACTIVE_FILES


# --- hand-made tables ------------------------------------------------------------------------


def test_active_files_follow_adds_and_removes(simple_table: TableWriter) -> None:
    table = deltalog.DeltaTable(simple_table.root)
    paths = {version: table.snapshot(version).files().to_pyarrow()["path"] for version in (0, 1, 2)}
    assert sorted(paths[0].to_pylist()) == ["part=1/a.parquet"]
    assert sorted(paths[1].to_pylist()) == ["part=1/a.parquet", "part=2/b.parquet"]
    assert sorted(paths[2].to_pylist()) == ["part=1/c.parquet", "part=2/b.parquet"]
    assert table.snapshot().total_size == 400


def test_time_travel_by_timestamp(simple_table: TableWriter) -> None:
    table = deltalog.DeltaTable(simple_table.root)
    assert table.snapshot(timestamp=utc(2024, 1, 1)).version == 0
    assert table.snapshot(timestamp=utc(2024, 1, 2, 12)).version == 1
    assert table.snapshot(timestamp=utc(2030, 1, 1)).version == 2
    assert table.snapshot(timestamp=utc(2024, 1, 2, 12)).timestamp == utc(2024, 1, 2)


def test_naive_datetimes_and_iso_strings_are_utc(simple_table: TableWriter) -> None:
    table = deltalog.DeltaTable(simple_table.root)
    assert table.snapshot(timestamp=datetime(2024, 1, 2, 0, 0)).version == 1
    assert table.snapshot(timestamp=datetime(2024, 1, 1, 23, 59)).version == 0
    assert table.snapshot(timestamp="2024-01-02T00:00:00Z").version == 1
    assert table.snapshot(timestamp="2024-01-02T00:30:00+01:00").version == 0
    assert table.snapshot(timestamp="2024-01-03").version == 2


def test_timestamp_before_first_commit_is_refused(simple_table: TableWriter) -> None:
    table = deltalog.DeltaTable(simple_table.root)
    with pytest.raises(deltalog.TimestampNotFoundError) as caught:
        table.snapshot(timestamp=utc(2023, 12, 31))
    assert isinstance(caught.value, deltalog.VersionNotFoundError)
    assert caught.value.timestamp_ms == int(utc(2023, 12, 31).timestamp() * 1000)


def test_refresh_returns_a_new_snapshot(simple_table: TableWriter) -> None:
    snapshot = deltalog.DeltaTable(simple_table.root).snapshot(version=2)
    simple_table.commit(3, [commit_info("WRITE"), add_action("part=3/d.parquet")])
    refreshed = snapshot.refresh()
    assert refreshed.version == 3
    assert refreshed.num_files == 3
    assert snapshot.version == 2
    assert snapshot.num_files == 2
    assert refreshed.table is snapshot.table


def test_unpartitioned_table_has_empty_partition_values(table_writer: TableWriter) -> None:
    table_writer.create(partition_columns=(), extra=[add_action("a.parquet", partition_values={})])
    snapshot = deltalog.DeltaTable(table_writer.root).snapshot()
    assert snapshot.partition_columns == ()
    table = snapshot.files().to_pyarrow()
    assert table.schema.field("partition_values").type == pa.struct([])


def test_transaction_versions_come_from_txn_actions(table_writer: TableWriter) -> None:
    table_writer.create(extra=[{"txn": {"appId": "ingest", "version": 3}}])
    table_writer.commit(1, [commit_info("WRITE"), {"txn": {"appId": "ingest", "version": 7}}])
    snapshot = deltalog.DeltaTable(table_writer.root).snapshot()
    assert snapshot.transaction_version("ingest") == 7
    assert snapshot.transaction_version("other") is None
    assert deltalog.DeltaTable(table_writer.root).snapshot(0).transaction_version("ingest") == 3


def test_domain_metadata_until_removed(table_writer: TableWriter) -> None:
    table_writer.create(
        protocol={
            "minReaderVersion": 1,
            "minWriterVersion": 7,
            "writerFeatures": ["domainMetadata"],
        },
        extra=[
            {"domainMetadata": {"domain": "app.a", "configuration": '{"k":1}', "removed": False}},
            {"domainMetadata": {"domain": "app.b", "configuration": "{}", "removed": False}},
        ],
    )
    table_writer.commit(
        1,
        [
            commit_info("WRITE"),
            {"domainMetadata": {"domain": "app.b", "configuration": "{}", "removed": True}},
        ],
    )
    table = deltalog.DeltaTable(table_writer.root)
    assert table.snapshot().domain_metadata("app.a") == '{"k":1}'
    assert table.snapshot().domain_metadata("app.b") is None
    assert table.snapshot(0).domain_metadata("app.b") == "{}"
    assert table.snapshot().domain_metadata("app.c") is None


def test_newest_metadata_wins(table_writer: TableWriter) -> None:
    table_writer.create()
    table_writer.commit(
        1,
        [
            commit_info("SET TBLPROPERTIES"),
            metadata_action(configuration={"delta.appendOnly": "true"}, name="events"),
        ],
    )
    metadata = deltalog.DeltaTable(table_writer.root).snapshot().metadata
    assert metadata.name == "events"
    assert dict(metadata.configuration) == {"delta.appendOnly": "true"}


def test_legacy_protocol_has_no_feature_lists(table_writer: TableWriter) -> None:
    table_writer.create()
    protocol = deltalog.DeltaTable(table_writer.root).snapshot().protocol
    assert protocol == deltalog.Protocol(1, 2, None, None)


# --- errors ----------------------------------------------------------------------------------


def test_missing_directory_is_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(deltalog.TableNotFoundError) as caught:
        deltalog.DeltaTable(tmp_path / "nowhere")
    assert isinstance(caught.value, deltalog.DeltaError)
    assert "nowhere" in str(caught.value)


def test_directory_without_log_is_not_a_table(tmp_path: Path) -> None:
    (tmp_path / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(deltalog.TableNotFoundError):
        deltalog.DeltaTable(tmp_path)


def test_empty_log_is_not_a_table(tmp_path: Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(deltalog.TableNotFoundError):
        deltalog.DeltaTable(tmp_path)


def test_missing_version_is_refused(simple_table: TableWriter) -> None:
    with pytest.raises(deltalog.VersionNotFoundError) as caught:
        deltalog.DeltaTable(simple_table.root).snapshot(version=99)
    assert caught.value.version == 99
    assert "99" in str(caught.value)


def test_corrupt_commit_names_the_file(simple_table: TableWriter) -> None:
    broken = simple_table.commit_path(1)
    broken.write_text('{"add": {"path": "x.parquet", "size": \n')
    with pytest.raises(deltalog.CorruptLogError) as caught:
        deltalog.DeltaTable(simple_table.root).snapshot()
    assert broken.name in str(caught.value)
    assert caught.value.path is not None
    assert caught.value.path.endswith(broken.name)


def test_unknown_reader_feature_is_refused_by_name(table_writer: TableWriter) -> None:
    table_writer.create(
        protocol={
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["futureReaderFeature"],
            "writerFeatures": ["futureReaderFeature"],
        }
    )
    with pytest.raises(deltalog.UnsupportedFeatureError) as caught:
        deltalog.DeltaTable(table_writer.root).snapshot()
    assert isinstance(caught.value, deltalog.ProtocolError)
    assert caught.value.feature == "futureReaderFeature"
    assert caught.value.kind == "reader"
    assert "futureReaderFeature" in str(caught.value)


def test_unsupported_reader_version_is_refused(table_writer: TableWriter) -> None:
    table_writer.create(protocol={"minReaderVersion": 99, "minWriterVersion": 7})
    with pytest.raises(deltalog.UnsupportedProtocolVersionError) as caught:
        deltalog.DeltaTable(table_writer.root).snapshot()
    assert caught.value.version == 99
    assert isinstance(caught.value, deltalog.ProtocolError)


def test_gap_in_versions_is_refused(simple_table: TableWriter) -> None:
    simple_table.commit(4, [commit_info("WRITE"), add_action("part=4/e.parquet")])
    with pytest.raises(deltalog.NonContiguousLogError):
        deltalog.DeltaTable(simple_table.root).snapshot()


def test_table_without_metadata_is_invalid(table_writer: TableWriter) -> None:
    table_writer.commit(0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}])
    with pytest.raises(deltalog.InvalidTableError):
        deltalog.DeltaTable(table_writer.root).snapshot()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"version": 1, "timestamp": "2024-01-01"}, "not both"),
        ({"version": -1}, "negative"),
        ({"version": "1"}, "int"),
        ({"version": True}, "int"),
        ({"timestamp": "yesterday"}, "ISO-8601"),
        ({"timestamp": 1704067200}, "datetime"),
    ],
)
def test_bad_snapshot_arguments_are_value_errors(
    simple_table: TableWriter, arguments: dict[str, object], message: str
) -> None:
    table = deltalog.DeltaTable(simple_table.root)
    with pytest.raises(deltalog.InvalidArgumentError, match=message) as caught:
        table.snapshot(**arguments)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError)


def test_storage_options_must_be_strings(sample_table: Path) -> None:
    with pytest.raises(deltalog.InvalidArgumentError):
        deltalog.DeltaTable(sample_table, storage_options={"timeout": 5})  # type: ignore[dict-item]


def test_commits_past_the_end_are_refused(simple_table: TableWriter) -> None:
    with pytest.raises(deltalog.DeltaError):
        deltalog.DeltaTable(simple_table.root).commits(7)


def test_remove_of_unknown_file_is_harmless(table_writer: TableWriter) -> None:
    table_writer.create(extra=[add_action("part=1/a.parquet")])
    table_writer.commit(1, [commit_info("DELETE"), remove_action("part=1/never-added.parquet")])
    assert deltalog.DeltaTable(table_writer.root).snapshot().num_files == 1
