"""The writing subcommands of ``deltalog``: create, write and alter."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog import _cli_write, cli

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def rows(uri: Path) -> list[dict[str, object]]:
    values = deltalog.read_table(str(uri)).to_pylist()
    return sorted(values, key=lambda row: json.dumps(row, default=str, sort_keys=True))


def test_create_with_properties_and_json_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    uri = tmp_path / "t"
    argv = ["create", uri, "--schema", SCHEMA, "--partition-by", "p", "--json"]
    status, out, err = run(capsys, *argv, "--property", "delta.appendOnly=true")
    assert (status, err) == (0, "")
    assert json.loads(out) == {
        "version": 0,
        "committed": True,
        "retries": 0,
        "metrics": {"numFiles": 0, "numRemovedFiles": 0},
    }
    snapshot = deltalog.DeltaTable(uri).snapshot()
    assert snapshot.partition_columns == ("p",)
    assert snapshot.metadata.configuration == {"delta.appendOnly": "true"}

    status, _, err = run(capsys, *argv)
    assert status == 2
    assert "already exists" in err
    status, out, _ = run(capsys, "create", uri, "--schema", SCHEMA, "--mode", "ignore")
    assert (status, out) == (0, "create: nothing committed; the table is at version 0\n")


def test_create_reads_the_schema_from_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "schema.json").write_text(SCHEMA)
    status, out, _ = run(capsys, "create", tmp_path / "t", "--schema", f"@{tmp_path}/schema.json")
    assert (status, out) == (0, "create: committed version 0\n")


def test_write_parquet_csv_and_json_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    uri = tmp_path / "t"
    pq.write_table(pa.table({"id": [1, 2], "p": ["a", "b"]}), tmp_path / "one.parquet")
    pq.write_table(pa.table({"id": [3], "p": ["a"]}), tmp_path / "two.parquet")
    status, out, err = run(
        capsys,
        "write",
        uri,
        tmp_path / "one.parquet",
        tmp_path / "two.parquet",
        "--partition-by",
        "p",
        "--json",
    )
    assert (status, err) == (0, "")
    result = json.loads(out)
    assert (result["version"], result["metrics"]["numOutputRows"]) == (0, 3)
    assert deltalog.DeltaTable(uri).snapshot().partition_columns == ("p",)

    pacsv.write_csv(pa.table({"id": [4], "p": ["c"]}), tmp_path / "more.csv")
    status, out, _ = run(capsys, "write", uri, tmp_path / "more.csv")
    assert (status, out) == (0, "write: committed version 1\n")
    (tmp_path / "rows.data").write_text('{"id": 5, "p": "d"}\n{"id": 6, "p": null}\n')
    status, _, _ = run(capsys, "write", uri, tmp_path / "rows.data", "--format", "json")
    assert status == 0
    assert [row["id"] for row in rows(uri)] == [1, 2, 3, 4, 5, 6]

    status, _, _ = run(capsys, "write", uri, tmp_path / "one.parquet", "--mode", "overwrite")
    assert status == 0
    assert [row["id"] for row in rows(uri)] == [1, 2]


def test_write_errors_name_the_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    uri = tmp_path / "t"
    status, _, err = run(capsys, "write", uri, tmp_path / "missing.parquet")
    assert status == 2
    assert "missing.parquet is not a file" in err
    (tmp_path / "rows.data").write_text("x")
    status, _, err = run(capsys, "write", uri, tmp_path / "rows.data")
    assert status == 2
    assert "--format" in err
    pq.write_table(pa.table({"id": ["not a number"], "p": ["a"]}), tmp_path / "bad.parquet")
    run(capsys, "create", uri, "--schema", SCHEMA)
    status, _, err = run(capsys, "write", uri, tmp_path / "bad.parquet")
    assert status == 2
    assert "schema mismatch" in err
    assert deltalog.DeltaTable(uri).latest_version() == 0


def test_progress_is_shown_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    reader = pa.table({"id": list(range(10))}).to_reader(max_chunksize=3)
    stream = Terminal()
    batches = list(_cli_write._with_progress(reader, stream))
    assert sum(batch.num_rows for batch in batches) == 10
    assert "read 10 rows" in stream.getvalue()
    quiet = io.StringIO()
    list(_cli_write._with_progress(pa.table({"id": [1]}).to_reader(), quiet))
    assert quiet.getvalue() == ""


def test_alter_actions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    uri = tmp_path / "t"
    pq.write_table(pa.table({"id": [1, 2], "p": ["a", "b"]}), tmp_path / "one.parquet")
    run(capsys, "write", uri, tmp_path / "one.parquet")

    def alter(*argv: str) -> tuple[int, str, str]:
        return run(capsys, "alter", uri, *argv)

    status, out, err = alter("set-properties", "delta.columnMapping.mode=name", "team=x", "--json")
    assert (status, err) == (0, "")
    assert json.loads(out)["version"] == 1
    assert alter("unset-properties", "team")[:2] == (0, "unset-properties: committed version 2\n")
    new_fields = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "n", "type": "integer", "nullable": True, "metadata": {}}],
        }
    )
    assert alter("add-columns", new_fields)[0] == 0
    assert alter("rename-column", "n", "m")[0] == 0
    assert alter("drop-columns", "m")[0] == 0
    status, _, err = alter("add-constraint", "big", "id > 1")
    assert status == 2
    assert "1 existing row" in err
    assert alter("add-constraint", "positive", "id > 0")[0] == 0
    assert alter("drop-constraint", "positive")[0] == 0
    assert alter("drop-constraint", "positive", "--if-exists")[0] == 0
    assert alter("add-feature", "deletionVectors")[0] == 0
    status, _, err = alter("add-feature", "nonsense")
    assert status == 2
    assert "nonsense" in err
    assert alter("set-description", "hello")[0] == 0
    snapshot = deltalog.DeltaTable(uri).snapshot()
    assert snapshot.metadata.description == "hello"
    assert snapshot.schema.names == ["id", "p"]
    assert snapshot.protocol.reader_features is not None
    assert "deletionVectors" in snapshot.protocol.reader_features
    history = deltalog.DeltaTable(uri).history().to_pylist()
    operations = [row["operation"] for row in history]
    assert operations[:4] == [
        "SET TBLPROPERTIES",
        "SET TBLPROPERTIES",
        "DROP CONSTRAINT",
        "DROP CONSTRAINT",
    ]
