"""The benchmark harness (benches/bench.py) end to end, on its tiny ``--smoke`` tables."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHES = REPO_ROOT / "benches"
BENCH = BENCHES / "bench.py"


@pytest.fixture
def deltabench(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The ``deltabench`` package of benches/ (importable the way bench.py imports it)."""
    monkeypatch.syspath_prepend(str(BENCHES))
    import deltabench.engines
    import deltabench.report
    import deltabench.scenarios

    return deltabench


def smoke_engines() -> list[str]:
    engines = ["deltalog", "floor", "cat"]
    if importlib.util.find_spec("deltalake") is not None:
        engines.append("deltalake")
    return engines


def run_bench(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), *arguments],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_smoke_run_writes_markdown_json_and_chart(tmp_path: Path, deltabench: Any) -> None:
    engines = smoke_engines()
    out = tmp_path / "out"
    completed = run_bench(
        "--smoke",
        "--runs",
        "1",
        "--engines",
        ",".join(engines),
        "--data-dir",
        str(tmp_path / "data"),
        "--out",
        str(out),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]

    markdown = (out / "latest.md").read_text()
    assert (out / "latest.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    results = json.loads((out / "latest.json").read_text())

    smoke = deltabench.scenarios.scenarios("smoke")
    assert [s["name"] for s in results["scenarios"]] == [s.name for s in smoke]
    assert results["skipped"] == {}
    by_key = {(m["scenario"], m["operation"], m["engine"]): m for m in results["measurements"]}
    assert len(by_key) == len(results["measurements"])  # one run: one measurement each
    for scenario in smoke:
        assert scenario.name in markdown
        expected = next(s["expected"] for s in results["scenarios"] if s["name"] == scenario.name)
        for operation in scenario.operations:
            checks = {}
            for engine in engines:
                session_only = operation in deltabench.engines.SPARK_SESSION_OPERATIONS
                if deltabench.engines.unsupported_reason(engine, operation) or session_only:
                    assert (scenario.name, operation, engine) not in by_key
                    continue
                measurement = by_key[(scenario.name, operation, engine)]
                assert measurement["ok"], (scenario.name, operation, engine, measurement["error"])
                assert measurement["seconds"] > 0
                assert measurement["peak_rss_kib"] >= measurement["baseline_rss_kib"] > 0
                checks[engine] = measurement["check"]
            # Every engine that reports a count reports the generator's.
            for engine, check in checks.items():
                for key, value in check.items():
                    want = expected.get(operation, {}).get(key, checks["deltalog"].get(key))
                    assert value == want, (scenario.name, operation, engine, key, checks)
        if "list" in scenario.operations:
            listed = by_key[(scenario.name, "list", "deltalog")]["check"]["files"]
            assert listed == expected["list"]["files"] > 0
    # The write scenarios ran, and every run appended to the same table.
    appended = by_key[("append_1g", "append", "deltalog")]["check"]
    assert appended == {"rows": 20_000}
    blind = by_key[("checkpoint_1m_stats", "blind_append", "deltalog")]["check"]
    assert blind == {"version": 4}
    # The append landing where a checkpoint is due made every engine write one.
    for scenario in ("checkpoint_1m_stats", "checkpoint_1m_json"):
        for engine in engines:
            if engine in ("deltalog", "deltalake"):
                key = (scenario, "blind_append_checkpoint", engine)
                assert by_key[key]["check"] == {"checkpointed": 1}, key
    # The cat floor read the log files a listing needs, and the report divides by it.
    cat = by_key[("commits_10k_wide", "list", "cat")]
    assert cat["check"] == {}
    assert cat["figures"]["files_read"] == 7  # version 0 and the 6 streaming commits
    assert cat["figures"]["bytes_read"] > 0
    assert "deltalog ÷ cat" in markdown
    assert "cat floor" in markdown
    assert "/ cat" not in markdown  # no count to check, and not listed as unchecked
    # The concurrent writers all landed their commits on the one table.
    writers = by_key[("writers_8", "concurrent_append", "deltalog")]
    assert writers["check"] == {"version": 6, "rows": 600}
    assert writers["figures"]["commits"] == 6
    assert writers["figures"]["failed"] == 0
    assert writers["figures"]["retries"] >= 0
    assert "## Concurrent writers" in markdown
    assert "MISMATCH" not in markdown
    assert "| deltalog |" in markdown  # the engines table names what deltalog does
    if "deltalake" in engines:
        assert "deltalake ÷ deltalog" in markdown
    assert_row_level_changes_agree(by_key, results, engines)
    assert "## Bytes written" in markdown


def assert_row_level_changes_agree(
    by_key: dict[tuple[str, str, str], Any], results: dict[str, Any], engines: list[str]
) -> None:
    """deltalog (with and without deletion vectors) and deltalake leave the same number of
    rows after the delete and after the merge; only deltalog's ``_dv`` variants write
    deletion vectors, and they write fewer bytes than rewriting the files."""
    expected = {s["name"]: s["expected"] for s in results["scenarios"]}
    for scenario, operation in (("delete_1g", "delete"), ("merge_1g", "merge")):
        want = expected[scenario][operation]["rows"]
        variants = (operation, f"{operation}_dv")
        writers = [e for e in engines if e in ("deltalog", "deltalake")]
        runs = [by_key[(scenario, op, e)] for op in variants for e in writers]
        assert len(runs) == 2 * len(writers)
        assert {run["check"]["rows"] for run in runs} == {want}
        assert all(run["bytes_written"] > 0 for run in runs)
        cow, dv = (by_key[(scenario, op, "deltalog")] for op in variants)
        assert cow["check"]["dvs_added"] == 0 < dv["check"]["dvs_added"]
        assert dv["bytes_written"] < cow["bytes_written"]
    assert expected["delete_1g"]["delete"]["rows"] < 20_000 < expected["merge_1g"]["merge"]["rows"]


def test_row_level_change_runs_each_change_the_same_table(tmp_path: Path) -> None:
    """Every run deletes and merges into the table as generated: the harness puts the table
    back after each one."""
    completed = run_bench(
        "--smoke",
        "--runs",
        "2",
        "--engines",
        "deltalog",
        "--scenarios",
        "delete_1g,merge_1g",
        "--data-dir",
        str(tmp_path / "data"),
        "--out",
        str(tmp_path / "out"),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "latest.json").read_text())
    measurements = results["measurements"]
    assert len(measurements) == 8  # 2 runs of delete, delete_dv, merge, merge_dv
    for measurement in measurements:
        assert measurement["ok"], measurement["error"]
        other_run = next(
            m
            for m in measurements
            if m["operation"] == measurement["operation"] and m["run"] != measurement["run"]
        )
        assert measurement["check"] == other_run["check"]
    commits = sorted((tmp_path / "data").glob("rows-*/*/_delta_log/*.json"))
    assert [commit.name for commit in commits] == ["00000000000000000000.json"] * 2


def test_an_engine_failure_is_recorded_and_reported(tmp_path: Path, deltabench: Any) -> None:
    engines, report = deltabench.engines, deltabench.report
    request = {
        "path": str(tmp_path),  # no _delta_log here
        "version": 0,
        "older_version": 0,
        "one_percent_filter": "id < 1",
        "checkpoint_paths": [],
        "commit_paths": [],
    }
    failed = engines.measure(
        "deltalog", "list", request, scenario="empty", run=0, position=0, timeout=300
    )
    assert not failed.ok
    assert "TableNotFoundError" in (failed.error or "")

    results = {
        "meta": {
            "command": "bench.py",
            "started": "now",
            "finished": "now",
            "size": "smoke",
            "runs": 1,
            "engines": ["deltalog"],
            "machine": "test",
            "versions": {},
        },
        "skipped": {},
        "scenarios": [{"name": "empty", "title": "no table", "spec": {}, "operations": ["list"]}],
        "measurements": [failed.to_json()],
    }
    markdown = report.render_markdown(results)
    assert "1/1 failed" in markdown
    assert "TableNotFoundError" in markdown


def test_targets_cover_every_filtered_log_scenario(deltabench: Any) -> None:
    scenarios = deltabench.scenarios
    filtered = {
        s.name
        for s in scenarios.scenarios("full")
        if s.kind == "log" and "filtered" in s.operations
    }
    assert {"commits_10k_wide", "checkpoint_1m_json", "json_1m_adds"} <= filtered
    for kind in ("filtered_share", "filtered_memory"):
        assert {t.scenario for t in scenarios.TARGETS if t.kind == kind} == filtered
    names = {s.name for s in scenarios.scenarios("full")}
    assert {t.scenario for t in scenarios.TARGETS} <= names
    keys = [(t.scenario, t.kind, t.operation) for t in scenarios.TARGETS]
    assert len(keys) == len(set(keys))


def test_checkpoint_landing_follows_each_engines_rule(deltabench: Any) -> None:
    landing = deltabench.scenarios.checkpoint_landing_version
    assert [landing(v, "deltalog") for v in (0, 3, 9, 10, 19)] == [10, 10, 10, 20, 20]
    assert [landing(v, "deltalake") for v in (3, 10, 98, 99, 100)] == [99, 99, 99, 199, 199]


def test_a_write_that_deletes_log_files_is_undone(tmp_path: Path, deltabench: Any) -> None:
    """Log files a write's post-commit cleanup deletes come back (hard links kept aside), the
    blind appends made to reach a checkpoint go, and the table is as generated."""
    from deltabench.generate import LogSpec, write_table

    scenarios = deltabench.scenarios
    info = write_table(tmp_path / "t", LogSpec(checkpoint_files=20, commits=3, adds_per_commit=2))
    log = info.path / "_delta_log"
    before = {path: path.read_bytes() for path in log.iterdir()}
    request = {"path": str(info.path), "version": 3, "columns": [["id", "long"]]}
    undo = scenarios.before_write(request, "blind_append_checkpoint", "deltalog")
    assert (log / f"{9:020d}.json").is_file()  # the version before the next multiple of 10
    for path in [*info.checkpoint_paths, info.commit_paths[0]]:
        path.unlink()  # what an engine's metadata cleanup could do
    (log / f"{10:020d}.json").write_text("{}\n")
    (log / "_last_checkpoint").write_text('{"version":10}')
    written = scenarios.undo_write(request, "blind_append_checkpoint", undo)
    assert written == 3
    assert {path: path.read_bytes() for path in log.iterdir()} == before
    assert not list(tmp_path.glob(".*"))  # the links kept aside are gone


def test_new_target_kinds_are_evaluated(deltabench: Any) -> None:
    engines, report, scenarios = deltabench.engines, deltabench.report, deltabench.scenarios

    def run(operation: str, engine: str, seconds: float, memory_kib: int) -> dict[str, Any]:
        measurement = engines.Measurement(
            "commits_10k_wide",
            operation,
            engine,
            0,
            ok=True,
            seconds=seconds,
            peak_rss_kib=100_000 + memory_kib,
            baseline_rss_kib=100_000,
        )
        return measurement.to_json()

    results = {
        "scenarios": [{"name": "commits_10k_wide", "operations": ["list", "filtered"]}],
        "measurements": [
            run("list", "deltalog", 2.0, 4_000),
            run("filtered", "deltalog", 0.5, 5_000),
            run("list", "cat", 0.5, 100),
        ],
    }
    evaluated = {
        (e.target.kind, e.target.operation): e
        for e in report.evaluate_targets(results, report.summarize(results))
    }
    assert evaluated[("vs_cat", "list")].value == 4.0
    assert evaluated[("vs_cat", "list")].met is False
    assert evaluated[("filtered_share", "filtered")].value == 0.25
    assert evaluated[("filtered_share", "filtered")].met is True
    assert evaluated[("filtered_memory", "filtered")].value == 1.25
    assert evaluated[("filtered_memory", "filtered")].met is False
    assert evaluated[("speedup", "list")].value is None  # deltalake not measured
    kinds = {t.kind for t in scenarios.TARGETS if t.scenario == "commits_10k_wide"}
    assert kinds == {"speedup", "vs_cat", "filtered_share", "filtered_memory"}


def test_unknown_scenario_is_a_usage_error() -> None:
    completed = run_bench("--smoke", "--scenarios", "no_such_scenario")
    assert completed.returncode == 2
    assert "unknown scenario(s) no_such_scenario" in completed.stderr
