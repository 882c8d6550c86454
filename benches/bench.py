"""Benchmark deltalog against deltalake, DuckDB's delta extension (delta-kernel-rs), Delta on
Spark, the raw-read floor and the cat floor (the log's bytes read, nothing parsed), on
synthetic Delta logs (issue 4).

    .venv/bin/python benches/bench.py                 # every scenario, full sizes, 5 runs
    .venv/bin/python benches/bench.py --quick --runs 3 --scenarios json_1m_adds,dv_10k_files
    .venv/bin/python benches/bench.py --quick --scenarios commits_10k_wide,checkpoint_1m_json \
        --engines deltalog,deltalake,floor,cat
    .venv/bin/python benches/bench.py --spark         # Delta on Spark too
    .venv/bin/python benches/bench.py --quick --spark --scenarios spark_write_1g  # Spark writes
    .venv/bin/python benches/bench.py --quick --scenarios delete_1g,merge_1g  # row-level changes
    .venv/bin/python benches/bench.py --quick --scenarios writers_8 --engines deltalog,deltalake
    # deltalog.spark.DeltaTable against delta-spark's, in one Spark session:
    .venv/bin/python benches/bench.py --spark --engines deltalog --runs 1 \
        --scenarios spark_delete_1g,spark_merge_1g
    .venv/bin/python benches/bench.py --spark --engines deltalog --runs 1 \
        --scenarios spark_merge_large --spark-driver-memory 1g --timeout 3600

Writes latest.md, latest.json and latest.png into --out (default benches/results). Progress goes
to stderr. The exit status is non-zero only when the harness itself fails (bad arguments, a
table that cannot be generated); an engine failing an operation is recorded in the report.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

BENCHES = Path(__file__).resolve().parent
if str(BENCHES) not in sys.path:
    sys.path.insert(0, str(BENCHES))

from deltabench import engines, report, scenarios  # noqa: E402
from deltabench.engines import Measurement  # noqa: E402

DEFAULT_ENGINES = ("deltalog", "deltalake", "floor", "cat", "duckdb")
#: The packages whose versions the report shows, by the engine that needs them.
VERSIONED_PACKAGES = {
    "deltalog": ("deltalog",),
    "deltalake": ("deltalake",),
    "floor": ("pyarrow",),
    "cat": (),
    "duckdb": ("duckdb", "duckdb_extension_delta"),
    "spark": ("pyspark", "delta-spark"),
}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when the harness completed (engine failures are in the report)."""
    arguments = sys.argv[1:] if argv is None else argv
    options = _parse(arguments)
    size: scenarios.Size = "smoke" if options.smoke else "quick" if options.quick else "full"
    try:
        selected = _select_scenarios(size, options.scenarios, options.large_merge)
        chosen_engines = _select_engines(options.engines, options.spark)
    except ValueError as error:
        print(f"bench.py: error: {error}", file=sys.stderr)
        return 2
    results = _new_results(arguments, size, options.runs, chosen_engines)
    out_dir = Path(options.out)
    _log(f"sizes: {size}; {options.runs} run(s); engines: {', '.join(chosen_engines)}")
    for engine in chosen_engines:
        reason = engines.probe(engine)
        if reason:
            results["skipped"][engine] = reason
            _log(f"skipping {engine}: {reason}")
    process_engines = [
        e for e in chosen_engines if e in engines.PROCESS_ENGINES and e not in results["skipped"]
    ]
    requests: dict[str, dict[str, Any]] = {}
    for index, scenario in enumerate(selected, start=1):
        _log(f"[{index}/{len(selected)}] {scenario.name}: {scenario.title}")
        try:
            entry, request = _prepare(scenario, Path(options.data_dir))
        except Exception as error:
            _log(f"bench.py: error: cannot generate {scenario.name}: {error!r}")
            results["meta"]["partial"] = f"stopped at {scenario.name}: generation failed"
            report.write_report(results, out_dir)
            return 1
        results["scenarios"].append(entry)
        requests[scenario.name] = request
        _measure_scenario(results, scenario, request, process_engines, options)
        results["meta"]["partial"] = f"{index} of {len(selected)} scenarios measured"
        _finish(results, out_dir)
    if "spark" in chosen_engines and "spark" not in results["skipped"]:
        _measure_spark(results, selected, requests, options)
    results["meta"].pop("partial", None)
    paths = _finish(results, out_dir)
    _log("wrote " + ", ".join(str(path) for path in paths))
    return 0


def _parse(arguments: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.py",
        description="Benchmark deltalog against deltalake, duckdb (delta-kernel-rs), Delta on "
        "Spark, the raw-read floor and the cat floor on synthetic Delta logs.",
    )
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="scenarios at about 1/10 size")
    sizes.add_argument("--smoke", action="store_true", help="a few tiny scenarios (the test)")
    parser.add_argument("--runs", type=_positive, default=5, help="paired runs (default 5)")
    parser.add_argument(
        "--scenarios",
        default="",
        help="comma-separated scenario names (default: all of the size set)",
    )
    parser.add_argument(
        "--engines",
        default=",".join(DEFAULT_ENGINES),
        help=f"comma-separated, of {','.join(engines.ENGINES)} (default: "
        f"{','.join(DEFAULT_ENGINES)})",
    )
    parser.add_argument("--spark", action="store_true", help="add Delta on Spark to the engines")
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("DELTALOG_BENCH_DATA", "/tmp/deltalog-bench"),
        help="where generated tables are kept and reused (default /tmp/deltalog-bench, or "
        "$DELTALOG_BENCH_DATA)",
    )
    parser.add_argument(
        "--out", default=str(BENCHES / "results"), help="output folder (default benches/results)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds per measurement (default 900); one that times out is not run again",
    )
    parser.add_argument(
        "--spark-driver-memory", default="6g", help="Spark driver heap (default 6g)"
    )
    parser.add_argument(
        "--large-merge",
        type=_large_merge,
        default=None,
        metavar="SOURCE_ROWS:TABLE_ROWS",
        help="sizes of spark_merge_large (default 20000000:52000000 at full size, 1/10 with "
        "--quick); the table rows a multiple of 40,000",
    )
    return parser.parse_args(arguments)


def _large_merge(text: str) -> tuple[int, int]:
    source, _, table = text.partition(":")
    try:
        sizes = int(source.replace("_", "")), int(table.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SOURCE_ROWS:TABLE_ROWS, got {text!r}") from None
    if sizes[0] < 2 or sizes[0] % 2 or sizes[1] % 40_000 or sizes[0] // 2 > sizes[1]:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the source rows must be even and at most twice the table's, the table "
            "rows a multiple of 40,000"
        )
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _select_scenarios(
    size: scenarios.Size, names: str, large_merge: tuple[int, int] | None = None
) -> list[scenarios.Scenario]:
    available = scenarios.scenarios(size, large_merge)
    if not names:
        return available
    by_name = {scenario.name: scenario for scenario in available}
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise ValueError(
            f"unknown scenario(s) {', '.join(unknown)} for {size} sizes; "
            f"known: {', '.join(by_name)}"
        )
    return [by_name[name] for name in wanted]


def _select_engines(names: str, spark: bool) -> list[str]:
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    if spark and "spark" not in wanted:
        wanted.append("spark")
    unknown = [name for name in wanted if name not in engines.ENGINES]
    if unknown:
        raise ValueError(
            f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(engines.ENGINES)}"
        )
    if not wanted:
        raise ValueError("no engine selected")
    return [engine for engine in engines.ENGINES if engine in wanted]


def _new_results(arguments: list[str], size: str, runs: int, chosen: list[str]) -> dict[str, Any]:
    command = shlex.join([".venv/bin/python", "benches/bench.py", *arguments])
    return {
        "meta": {
            "command": command,
            "started": _now(),
            "finished": None,
            "size": size,
            "runs": runs,
            "engines": chosen,
            "machine": _machine(),
            "versions": _versions(chosen),
        },
        "skipped": {},
        "scenarios": [],
        "measurements": [],
    }


def _prepare(scenario: scenarios.Scenario, data_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    started = time.perf_counter()
    info = scenarios.prepare(scenario, data_dir)
    _log(f"  table ready in {time.perf_counter() - started:.1f} s: {info.path}")
    warmed = scenarios.warm_page_cache(info)
    _log(f"  {warmed / 2**20:,.1f} MiB read to warm the page cache")
    entry = {
        "name": scenario.name,
        "title": scenario.title,
        "spec": scenario.spec,
        "operations": list(scenario.operations),
        "table": scenarios.table_summary(info),
        "expected": scenarios.expected_checks(info, scenario),
    }
    return entry, scenarios.table_request(info, scenario)


def _measure_scenario(
    results: dict[str, Any],
    scenario: scenarios.Scenario,
    request: dict[str, Any],
    process_engines: list[str],
    options: argparse.Namespace,
) -> None:
    timed_out: dict[tuple[str, str], str] = {}  # not retried: a hang would cost every run
    for run in range(options.runs):
        order = _rotated(process_engines, run)
        for operation in scenario.operations:
            if operation in engines.SPARK_SESSION_OPERATIONS:
                continue
            runnable = [e for e in order if engines.unsupported_reason(e, operation) is None]
            for position, engine in enumerate(runnable):
                earlier = timed_out.get((engine, operation))
                if earlier is not None:
                    measurement = Measurement(
                        scenario.name, operation, engine, run, position, error=earlier
                    )
                else:
                    undo = scenarios.before_write(request, operation, engine)
                    measurement = engines.measure(
                        engine,
                        operation,
                        request,
                        scenario=scenario.name,
                        run=run,
                        position=position,
                        timeout=options.timeout,
                    )
                    written = scenarios.undo_write(request, operation, undo)
                    if measurement.ok:
                        measurement.bytes_written = written
                    if measurement.error and measurement.error.startswith(engines.TIMED_OUT):
                        timed_out[(engine, operation)] = (
                            f"not run: {measurement.error} in run {run + 1}"
                        )
                results["measurements"].append(measurement.to_json())
                _log_measurement(measurement, options.runs)


def _measure_spark(
    results: dict[str, Any],
    selected: list[scenarios.Scenario],
    requests: dict[str, dict[str, Any]],
    options: argparse.Namespace,
) -> None:
    session_engines = ["spark"]
    if "deltalog" in results["meta"]["engines"] and "deltalog" not in results["skipped"]:
        session_engines.insert(0, "deltalog")
    tasks = [
        engines.SparkTask(scenario.name, operation, run, requests[scenario.name], engine)
        for scenario in selected
        for operation in scenario.operations
        if engines.unsupported_reason("spark", operation) is None
        for run in range(options.runs)
        for engine in _rotated(
            session_engines if operation in engines.SPARK_SESSION_OPERATIONS else ["spark"], run
        )
    ]
    _log(f"Delta on Spark: {len(tasks)} measurements in one session")

    def record(measurement: Measurement) -> None:
        results["measurements"].append(measurement.to_json())
        _log_measurement(measurement, options.runs)

    engines.measure_spark(
        tasks,
        driver_memory=options.spark_driver_memory,
        timeout=options.timeout,
        progress=record,
    )


def _finish(results: dict[str, Any], out_dir: Path) -> list[Path]:
    results["meta"]["finished"] = _now()
    return report.write_report(results, out_dir)


def _rotated(items: list[str], shift: int) -> list[str]:
    if not items:
        return []
    shift %= len(items)
    return items[shift:] + items[:shift]


def _log_measurement(measurement: Measurement, runs: int) -> None:
    where = (
        f"  run {measurement.run + 1}/{runs} {measurement.operation:<11} {measurement.engine:<9}"
    )
    if not measurement.ok:
        _log(f"{where} ERROR {measurement.error}")
        return
    memory = ""
    if measurement.operation_rss_kib is not None:
        memory = f", {measurement.operation_rss_kib / 1024:,.1f} MiB"
    if measurement.bytes_written is not None:
        memory += f", {measurement.bytes_written / 2**10:,.0f} KiB written"
    check = " ".join(f"{key}={value}" for key, value in (measurement.check or {}).items())
    if measurement.figures:
        check += "  " + " ".join(f"{key}={value}" for key, value in measurement.figures.items())
    _log(f"{where} {measurement.seconds or 0:9.4f} s{memory}  {check}")


def _machine() -> str:
    memory = ""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages / 2**30:.0f} GiB RAM"
    except (ValueError, OSError):
        pass
    return (
        f"{os.cpu_count()} CPUs{memory}, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}"
    )


def _versions(chosen: list[str]) -> dict[str, str]:
    versions = {}
    wanted = ["pyarrow", *(p for e in chosen for p in VERSIONED_PACKAGES.get(e, ()))]
    for package in dict.fromkeys(wanted):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
