"""The ``deltalog`` command."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import deltalog
from conftest import TableWriter
from deltalog import cli


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_info_shows_version_protocol_partitioning_and_schema(
    capsys: pytest.CaptureFixture[str], sample_table: Path
) -> None:
    status, out, err = run(capsys, "info", sample_table)
    assert (status, err) == (0, "")
    assert "version:" in out
    assert " 15 (committed " in out
    assert "reader 3, writer 7" in out
    assert "reader features:  deletionVectors" in out
    assert "partitioned by:   part" in out
    assert "files:            15 (10.7 KiB)" in out
    assert "delta.enableDeletionVectors=true" in out
    schema_lines = [line.split() for line in out.split("schema:")[1].strip().splitlines()]
    assert schema_lines == [
        ["COLUMN", "TYPE", "NULLABLE"],
        ["part", "integer", "yes"],
        ["col1", "integer", "yes"],
        ["col2", "string", "yes"],
    ]


def test_info_json_is_one_document(capsys: pytest.CaptureFixture[str], sample_table: Path) -> None:
    status, out, _ = run(capsys, "info", sample_table, "--json")
    assert status == 0
    info = json.loads(out)
    assert info["version"] == 15
    assert info["num_files"] == 15
    assert info["total_size"] == 11007
    assert info["partition_columns"] == ["part"]
    assert info["protocol"] == {
        "min_reader_version": 3,
        "min_writer_version": 7,
        "reader_features": ["deletionVectors"],
        "writer_features": ["deletionVectors"],
    }
    assert [field["name"] for field in info["schema"]["fields"]] == ["part", "col1", "col2"]
    assert info["metadata"]["id"] == "testId"
    assert info["timestamp"].endswith("+00:00")


def test_info_at_a_version(capsys: pytest.CaptureFixture[str], sample_table: Path) -> None:
    status, out, _ = run(capsys, "info", sample_table, "--version", "0", "--json")
    assert status == 0
    assert json.loads(out)["version"] == 0
    assert json.loads(out)["num_files"] == 20


def test_info_at_a_timestamp(capsys: pytest.CaptureFixture[str], simple_table: TableWriter) -> None:
    status, out, _ = run(
        capsys, "info", simple_table.root, "--timestamp", "2024-01-02T12:00:00Z", "--json"
    )
    assert status == 0
    assert json.loads(out)["version"] == 1


def test_version_and_timestamp_exclude_each_other(
    capsys: pytest.CaptureFixture[str], sample_table: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        run(capsys, "info", sample_table, "--version", "1", "--timestamp", "2024-01-01")
    assert exited.value.code == 2


def test_files_lists_one_row_per_file(
    capsys: pytest.CaptureFixture[str], sample_table: Path
) -> None:
    status, out, _ = run(capsys, "files", sample_table)
    assert status == 0
    lines = out.strip().splitlines()
    assert lines[0].split() == ["PATH", "PARTITION", "SIZE", "RECORDS", "DELETED", "MODIFIED"]
    assert len(lines) == 1 + 15 + 1
    assert lines[-1] == "15 files, 10.7 KiB"
    assert all(" part=" in line for line in lines[1:-1])


def test_files_limit_and_json(capsys: pytest.CaptureFixture[str], sample_table: Path) -> None:
    status, out, _ = run(capsys, "files", sample_table, "--limit", "3")
    assert status == 0
    assert out.strip().splitlines()[-1].startswith("3 of 15 files")
    status, out, _ = run(capsys, "files", sample_table, "--json")
    rows = json.loads(out)
    assert len(rows) == 15
    assert rows[0]["path"].startswith("part=")
    assert sum(row["size"] for row in rows) == 11007


def test_files_with_stats(capsys: pytest.CaptureFixture[str], sample_table: Path) -> None:
    status, out, _ = run(capsys, "files", sample_table, "--stats", "--limit", "1")
    assert status == 0
    assert out.splitlines()[0].split()[-3:] == ["MIN", "MAX", "NULLS"]
    assert '"col1":' in out.splitlines()[1]


def test_history_is_newest_first(capsys: pytest.CaptureFixture[str], sample_table: Path) -> None:
    status, out, _ = run(capsys, "history", sample_table)
    assert status == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[:3] == ["VERSION", "TIMESTAMP", "OPERATION"]
    assert [line.split()[0] for line in lines[1:]] == [str(v) for v in range(15, -1, -1)]
    assert "WRITE" in lines[-1]


def test_history_json_decodes_parameters(
    capsys: pytest.CaptureFixture[str], sample_table: Path
) -> None:
    status, out, _ = run(capsys, "history", sample_table, "--limit", "2", "--json")
    assert status == 0
    rows = json.loads(out)
    assert [row["version"] for row in rows] == [15, 14]
    assert rows[0]["operation"] == "DELETE"
    assert isinstance(rows[0]["operation_parameters"], dict)
    assert isinstance(rows[0]["commit_info"], dict)


def test_table_error_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run(capsys, "info", tmp_path / "missing")
    assert status == 2
    assert out == ""
    assert err.startswith("deltalog: error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_missing_version_is_an_error(
    capsys: pytest.CaptureFixture[str], sample_table: Path
) -> None:
    status, _, err = run(capsys, "files", sample_table, "--version", "99")
    assert status == 2
    assert "99" in err


def test_bad_timestamp_is_an_error(capsys: pytest.CaptureFixture[str], sample_table: Path) -> None:
    status, _, err = run(capsys, "info", sample_table, "--timestamp", "soon")
    assert status == 2
    assert "ISO-8601" in err


@pytest.mark.parametrize("option", ["novalue", "=value"])
def test_storage_option_must_be_key_value(
    capsys: pytest.CaptureFixture[str], sample_table: Path, option: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        run(capsys, "info", sample_table, "--storage-option", option)
    assert exited.value.code == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def test_program_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"deltalog {deltalog.__version__}"


def test_installed_command_runs(sample_table: Path) -> None:
    command = Path(sys.executable).parent / "deltalog"
    if not command.exists():
        pytest.skip(f"no deltalog script beside {sys.executable}")
    done = subprocess.run(
        [str(command), "info", str(sample_table), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["version"] == 15


def test_module_runs_as_command(sample_table: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deltalog", "history", str(sample_table), "--limit", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[1].split()[0] == "15"


def test_command_reports_errors_without_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deltalog", "info", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("deltalog: error: ")
    assert "Traceback" not in done.stderr


# --- rendering -----------------------------------------------------------------------------


def test_render_table_aligns_columns() -> None:
    text = cli.render_table(["name", "size"], [["a", "1"], ["bbb", "100"]], align=["<", ">"])
    assert text.splitlines() == ["NAME  SIZE", "a        1", "bbb    100"]


def test_render_table_cuts_the_widest_column_keeping_its_end() -> None:
    path = "part=1/" + "x" * 60 + "-end.parquet"
    text = cli.render_table(["path", "size"], [[path, "10"]], max_width=40)
    row = text.splitlines()[1]
    assert len(row) <= 40
    assert row.split()[0].startswith("…")
    assert "-end.parquet" in row


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 * 1024**3, "3.0 GiB")],
)
def test_human_size(size: int, text: str) -> None:
    assert cli.human_size(size) == text


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_appears_on_a_terminal_when_a_load_is_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "PROGRESS_DELAY_SECONDS", 0.05)
    terminal = FakeTerminal()
    with cli._progress("loading the snapshot", terminal):
        time.sleep(0.4)
    assert "loading the snapshot" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r\x1b[K")


def test_progress_stays_silent_for_fast_loads_and_pipes() -> None:
    terminal = FakeTerminal()
    with cli._progress("loading", terminal):
        pass
    assert terminal.getvalue() == ""
    pipe = io.StringIO()
    with cli._progress("loading", pipe):
        time.sleep(0.01)
    assert pipe.getvalue() == ""
