"""The benchmark's outputs: ``latest.md`` (tables of times, ratios, memory and targets),
``latest.json`` (every raw run) and ``latest.png`` (a chart), from one results document.

The results document (what ``bench.py`` builds and ``latest.json`` holds)::

    {"meta": {...}, "skipped": {engine: reason},
     "scenarios": [{"name", "title", "spec", "table", "expected", "operations"}],
     "measurements": [engines.Measurement.to_json(), ...]}
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deltabench.engines import (
    DESCRIPTIONS,
    ENGINES,
    OPERATIONS,
    SPARK_ROW_OPERATIONS,
    UNCOUNTED_ENGINES,
    Measurement,
    unsupported_reason,
)
from deltabench.scenarios import TARGETS, Target

OPERATION_TITLES = {
    "open": "open snapshot",
    "list": "open + list files",
    "filtered": "open + 1% filtered list",
    "time_travel": "time travel + list",
    "dvs": "open + all DVs to row masks",
    "append": "append to a new table",
    "blind_append": "blind append (1,000 rows)",
    "blind_append_checkpoint": "blind append (1,000 rows) + post-commit checkpoint",
    "checkpoint": "checkpoint at the latest version",
    "vacuum": "vacuum (dry run, retention 0)",
    "delete": "delete 0.1% of rows (copy-on-write)",
    "delete_dv": "delete 0.1% of rows (deletion vectors)",
    "merge": "merge 1% (upsert, copy-on-write)",
    "merge_dv": "merge 1% (upsert, deletion vectors)",
    "concurrent_append": "concurrent blind appends (writer processes)",
    "spark_write": "Spark DataFrame write to a new table",
    "spark_delete": "Spark: delete 0.1% of rows (copy-on-write)",
    "spark_delete_dv": "Spark: delete 0.1% of rows (deletion vectors)",
    "spark_merge": "Spark: merge 1% (upsert, copy-on-write)",
    "spark_merge_dv": "Spark: merge 1% (upsert, deletion vectors)",
    "spark_merge_large": "Spark: merge a large generated source (upsert, copy-on-write)",
}
ENGINE_TITLES = {
    "deltalog": "deltalog",
    "deltalake": "deltalake",
    "floor": "raw-read floor",
    "cat": "cat floor",
    "duckdb": "duckdb (kernel-rs)",
    "spark": "Delta on Spark",
}
ENGINE_COLORS = {
    "deltalog": "#1b6ac9",
    "deltalake": "#e07b24",
    "floor": "#7f7f7f",
    "cat": "#b8b8b8",
    "duckdb": "#d4b000",
    "spark": "#c73b3b",
}
KIB_PER_MIB = 1024
KIB_PER_GIB = 1024 * 1024


@dataclass(frozen=True)
class Summary:
    """The runs of one engine, operation and scenario, summarized."""

    runs: int
    failures: list[str]
    median: float | None
    low: float | None
    high: float | None
    operation_rss_kib: float | None  # median
    peak_rss_kib: float | None  # median
    checks: list[dict[str, int]]
    timeout: float | None = None  # when no run finished and one timed out: its time limit
    bytes_written: float | None = None  # median, of write operations

    def time_bound(self) -> tuple[float | None, bool]:
        """The median time, or else the time limit a run hit (then ``True``: a lower bound)."""
        if self.median is not None:
            return self.median, False
        return self.timeout, self.timeout is not None


@dataclass(frozen=True)
class Evaluation:
    """A target, its measured value (``None``: not measured) and whether it is met."""

    target: Target
    value: float | None
    met: bool | None
    lower_bound: bool = False  # the value is at least this (an engine hit its time limit)


def write_report(results: dict[str, Any], out_dir: Path) -> list[Path]:
    """Write latest.md, latest.json and latest.png into ``out_dir``; their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = out_dir / "latest.md"
    raw = out_dir / "latest.json"
    chart = out_dir / "latest.png"
    raw.write_text(json.dumps(results, indent=1) + "\n")
    markdown.write_text(render_markdown(results, chart_name=chart.name))
    render_chart(results, chart)
    return [markdown, raw, chart]


def summarize(results: dict[str, Any]) -> dict[tuple[str, str, str], Summary]:
    """Per (scenario, operation, engine): median, min and max time, memory, checks."""
    grouped: dict[tuple[str, str, str], list[Measurement]] = {}
    for data in results["measurements"]:
        measurement = Measurement.from_json(data)
        key = (measurement.scenario, measurement.operation, measurement.engine)
        grouped.setdefault(key, []).append(measurement)
    return {key: _summary(runs) for key, runs in grouped.items()}


def evaluate_targets(
    results: dict[str, Any], summaries: dict[tuple[str, str, str], Summary]
) -> list[Evaluation]:
    """Each target of a measured scenario: the measured value and whether it is met.

    When the slower engine of a time ratio never finished, the ratio is a lower bound (its
    time limit over the other's time): a speedup target is met if the bound meets it.
    """
    names = {scenario["name"] for scenario in results["scenarios"]}
    evaluated = []
    for target in TARGETS:
        if target.scenario not in names:
            continue
        value, lower_bound = _target_value(target, summaries)
        met = None if value is None else _met(target, value)
        if lower_bound and target.kind != "speedup" and met:
            met = None  # a "<=" target cannot be judged from a lower bound that meets it
        evaluated.append(Evaluation(target, value, met, lower_bound))
    return evaluated


def render_markdown(results: dict[str, Any], chart_name: str = "latest.png") -> str:
    """The report: targets, times and ratios, memory, checks, what each engine does."""
    summaries = summarize(results)
    meta = results["meta"]
    engines = [engine for engine in ENGINES if engine in meta["engines"]]
    notes = _Notes()
    lines = [
        "# deltalog benchmark",
        "",
        f"`{meta['command']}` — {meta['finished']}; sizes: **{meta['size']}**; "
        f"{meta['runs']} paired run(s) per measurement (median [min .. max]); {meta['machine']}.",
        "",
        "Versions: " + ", ".join(f"{name} {version}" for name, version in meta["versions"].items()),
        "",
    ]
    if meta.get("partial"):
        lines += [f"**Partial results**: {meta['partial']}.", ""]
    lines += _targets_section(results, summaries, meta)
    lines += _times_section(results, summaries, engines, notes)
    lines += _memory_section(results, summaries, engines, notes)
    lines += _written_section(results, summaries, engines)
    lines += _writers_section(results, engines, notes)
    lines += _spark_changes_section(results, summaries)
    lines += [f"![benchmark chart]({chart_name})", ""]
    lines += _checks_section(results, summaries, engines)
    lines += _tables_section(results)
    lines += _engines_section(results, engines)
    lines += notes.render()
    return "\n".join(lines).rstrip() + "\n"


def render_chart(results: dict[str, Any], path: Path) -> None:
    """Grouped bars, log scale: median time per scenario for each operation (one panel per
    operation), and the operation memory of the file listing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    summaries = summarize(results)
    engines = [engine for engine in ENGINES if engine in results["meta"]["engines"]]
    operations = [op for op in OPERATIONS if any(key[1] == op for key in summaries)]
    panels = [(op, "time") for op in operations] + [("list", "memory")]
    widest = max(len(results["scenarios"]), 1)
    figure, axes = plt.subplots(
        len(panels),
        1,
        figsize=(max(8.0, 1.5 * widest + 3), 2.9 * len(panels) + 0.6),
        layout="constrained",
    )
    axes_list = list(axes) if len(panels) > 1 else [axes]
    width = 0.8 / max(len(engines), 1)
    for axis, (operation, quantity) in zip(axes_list, panels, strict=True):
        names = [
            scenario["name"]
            for scenario in results["scenarios"]
            if operation in scenario["operations"]
        ]
        for index, engine in enumerate(engines):
            heights, positions = [], []
            for position, scenario in enumerate(names):
                value = _chart_value(summaries.get((scenario, operation, engine)), quantity)
                if value is not None and value > 0:
                    heights.append(value)
                    positions.append(position + (index - (len(engines) - 1) / 2) * width)
            axis.bar(
                positions, heights, width, label=ENGINE_TITLES[engine], color=ENGINE_COLORS[engine]
            )
        axis.set_yscale("log")
        ticks = _tick_seconds if quantity == "time" else _tick_mib
        axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.yaxis.set_major_formatter(FuncFormatter(ticks))
        axis.yaxis.set_minor_formatter(NullFormatter())
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(names, fontsize=8)
        axis.set_xlim(-0.5, max(len(names), 1) - 0.5)
        if quantity == "time":
            title = f"{OPERATION_TITLES[operation]}: wall time"
        else:
            title = "open + list files: memory (peak RSS - RSS after imports)"
        axis.set_title(f"{title} (median, log scale; lower is better)", fontsize=10)
        axis.grid(axis="y", which="both", alpha=0.3)
    figure.suptitle(f"deltalog benchmark: {results['meta']['size']} sizes, {_now_line(results)}")
    handles, labels = axes_list[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=len(engines), fontsize=9)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _tick_seconds(value: float, _position: int) -> str:
    return _seconds(value)


def _tick_mib(value: float, _position: int) -> str:
    return f"{value:,.3g} MiB"


def _now_line(results: dict[str, Any]) -> str:
    meta = results["meta"]
    return f"{meta['runs']} run(s), {meta.get('finished') or meta.get('started')}"


# --------------------------------------------------------------------------------------------
# Sections


def _targets_section(
    results: dict[str, Any], summaries: dict[tuple[str, str, str], Summary], meta: dict[str, Any]
) -> list[str]:
    evaluated = evaluate_targets(results, summaries)
    if not evaluated:
        return []
    lines = ["## Targets", ""]
    if meta["size"] != "full":
        lines += [
            f"Measured at **{meta['size']}** sizes: the targets are set for the full sizes.",
            "",
        ]
    lines += ["| scenario | target | measured | target | met? |", "| --- | --- | --: | --: | :-: |"]
    for evaluation in evaluated:
        target, value, met = evaluation.target, evaluation.value, evaluation.met
        shown = "—" if value is None else _target_text(target, value)
        if evaluation.lower_bound:
            shown = f"> {shown} (time limit hit)"
        verdict = "n/a" if met is None else ("yes" if met else "**no**")
        lines.append(
            f"| {target.scenario} | {target.label} | {shown} | {_threshold_text(target)} "
            f"| {verdict} |"
        )
    return [*lines, ""]


def _times_section(
    results: dict[str, Any],
    summaries: dict[tuple[str, str, str], Summary],
    engines: list[str],
    notes: _Notes,
) -> list[str]:
    lines = [
        "## Wall time",
        "",
        "Median [min .. max] of the timed operation in a fresh process (imports excluded). "
        "Ratios use medians: `deltalake ÷ deltalog` > 1 means deltalog is faster; "
        "`deltalog ÷ floor` is deltalog's cost over the least any reader must read (and "
        "parse); `deltalog ÷ cat` its cost over reading the bytes of those log files alone.",
        "",
    ]
    header = ["scenario", "operation", *[ENGINE_TITLES[e] for e in engines]]
    ratio_columns = [
        ("deltalake", "deltalog"),
        ("deltalog", "floor"),
        ("deltalog", "cat"),
        ("spark", "deltalog"),
    ]
    ratio_columns = [pair for pair in ratio_columns if set(pair) <= set(engines)]
    header += [f"{a} ÷ {b}" for a, b in ratio_columns]
    lines += _table_header(header, ["---", "---", *["--:"] * (len(header) - 2)])
    for scenario in results["scenarios"]:
        for operation in scenario["operations"]:
            row = [scenario["name"], OPERATION_TITLES[operation]]
            for engine in engines:
                row.append(
                    _time_cell(results, summaries, scenario["name"], operation, engine, notes)
                )
            for numerator, denominator in ratio_columns:
                row.append(
                    _ratio_cell(summaries, scenario["name"], operation, numerator, denominator)
                )
            lines.append(_row(row))
    return [*lines, ""]


def _memory_section(
    results: dict[str, Any],
    summaries: dict[tuple[str, str, str], Summary],
    engines: list[str],
    notes: _Notes,
) -> list[str]:
    measured = [engine for engine in engines if engine != "spark"]
    lines = [
        "## Memory",
        "",
        "Median operation memory in MiB: peak RSS (`VmHWM`) minus the RSS after imports; "
        "in parentheses the process's whole peak RSS. Delta on Spark's memory is not measured "
        "(the JVM heap is sized up front).",
        "",
    ]
    header = ["scenario", "operation", *[ENGINE_TITLES[e] for e in measured]]
    with_ratio = {"deltalog", "deltalake"} <= set(measured)
    if with_ratio:
        header.append("deltalog ÷ deltalake")
    lines += _table_header(header, ["---", "---", *["--:"] * (len(header) - 2)])
    for scenario in results["scenarios"]:
        for operation in scenario["operations"]:
            row = [scenario["name"], OPERATION_TITLES[operation]]
            for engine in measured:
                summary = summaries.get((scenario["name"], operation, engine))
                row.append(_memory_cell(summary))
            if with_ratio:
                ours = summaries.get((scenario["name"], operation, "deltalog"))
                theirs = summaries.get((scenario["name"], operation, "deltalake"))
                ours_kib = ours.operation_rss_kib if ours else None
                theirs_kib = theirs.operation_rss_kib if theirs else None
                row.append(_ratio_text(ours_kib, theirs_kib))
            lines.append(_row(row))
    return [*lines, ""]


def _written_section(
    results: dict[str, Any], summaries: dict[tuple[str, str, str], Summary], engines: list[str]
) -> list[str]:
    """Median MiB of the files each write added to the table directory, where measured."""
    rows = [
        (scenario["name"], operation)
        for scenario in results["scenarios"]
        for operation in scenario["operations"]
        if any(
            (summary := summaries.get((scenario["name"], operation, engine))) is not None
            and summary.bytes_written is not None
            for engine in engines
        )
    ]
    if not rows:
        return []
    measured = [engine for engine in engines if engine != "spark"]
    lines = [
        "## Bytes written",
        "",
        "Median MiB of the files a write added to the table directory (data, deletion vector, "
        "log and checkpoint files), measured on disk after the operation, before the table is "
        "put back.",
        "",
    ]
    header = ["scenario", "operation", *[ENGINE_TITLES[e] for e in measured]]
    with_ratio = {"deltalog", "deltalake"} <= set(measured)
    if with_ratio:
        header.append("deltalake ÷ deltalog")
    lines += _table_header(header, ["---", "---", *["--:"] * (len(header) - 2)])
    for scenario, operation in rows:
        row = [scenario, OPERATION_TITLES[operation]]
        values = {}
        for engine in measured:
            summary = summaries.get((scenario, operation, engine))
            values[engine] = summary.bytes_written if summary else None
            value = values[engine]
            row.append("—" if value is None else f"{value / 2**20:,.3g}")
        if with_ratio:
            row.append(_ratio_text(values["deltalake"], values["deltalog"]))
        lines.append(_row(row))
    return [*lines, ""]


def _writers_section(results: dict[str, Any], engines: list[str], notes: _Notes) -> list[str]:
    """Commits per second of the concurrent writers (``figures`` of ``concurrent_append``):
    commits that landed over the wall time from the start signal to the last writer done."""
    runs: dict[tuple[str, str], list[Measurement]] = {}
    for data in results["measurements"]:
        measurement = Measurement.from_json(data)
        if measurement.operation == "concurrent_append" and measurement.ok:
            runs.setdefault((measurement.scenario, measurement.engine), []).append(measurement)
    if not runs:
        return []
    lines = [
        "## Concurrent writers",
        "",
        "Commits per second: the commits that landed (all writers) over the wall time from "
        "the start signal to the last writer done, median [min .. max] of the runs; retries "
        "(commits that lost the race for a version, were checked against the winners and "
        "tried again) and failed commits, summed over the writers, median of the runs.",
        "",
    ]
    lines += _table_header(
        ["scenario", "engine", "commits/s", "retries", "failed commits"],
        ["---", "---", "--:", "--:", "--:"],
    )
    specs = {scenario["name"]: scenario.get("spec") or {} for scenario in results["scenarios"]}
    for (scenario, engine), measured in sorted(
        runs.items(), key=lambda item: (item[0][0], engines.index(item[0][1]))
    ):
        rates = [
            m.figures.get("commits", 0) / m.seconds for m in measured if m.seconds and m.seconds > 0
        ]
        spec = specs.get(scenario, {})
        shape = f"{spec.get('writers', '?')} x {spec.get('commits', '?')}"
        rate = "—"
        if rates:
            rate = f"{statistics.median(rates):,.1f}"
            if len(rates) > 1:
                rate += f" [{min(rates):,.1f} .. {max(rates):,.1f}]"
        retries = [m.figures["retries"] for m in measured if "retries" in m.figures]
        failed = [m.figures.get("failed", 0) for m in measured]
        failed_cell = f"{statistics.median(failed):g}"
        failure = next((m.notes["failure"] for m in measured if m.notes.get("failure")), None)
        if failure:
            failed_cell += " " + notes.mark(f"{ENGINE_TITLES[engine]}, {scenario}: {failure}")
        lines.append(
            _row(
                [
                    f"{scenario} ({shape} commits)",
                    ENGINE_TITLES[engine],
                    rate,
                    f"{statistics.median(retries):g}" if retries else "—",
                    failed_cell,
                ]
            )
        )
    return [*lines, ""]


def _spark_changes_section(
    results: dict[str, Any], summaries: dict[tuple[str, str, str], Summary]
) -> list[str]:
    """deltalog.spark's DeltaTable against delta-spark's, in one Spark session: time, the
    driver JVM's peak RSS, bytes written, and where each engine's time went (medians)."""
    runs = [
        Measurement.from_json(data)
        for data in results["measurements"]
        if data["operation"] in SPARK_ROW_OPERATIONS and data.get("ok")
    ]
    if not runs:
        return []
    lines = [
        "## Row-level changes in Spark",
        "",
        "`deltalog.spark.DeltaTable` (deltalog) against delta-spark's `DeltaTable` (Delta on "
        "Spark) in one local Spark session, on the same table (put back after every run). "
        "Time; the driver JVM's peak RSS during the operation (local mode: the executors run "
        "in it; the Python workers are not counted); MiB the change added to the table; then "
        "the seconds of deltalog's steps (its planning, Spark jobs and commit, timed around "
        "`deltalog.spark._dml`'s functions) and Delta on Spark's `*TimeMs` commit metrics.",
        "",
    ]
    header = [
        "scenario",
        "operation",
        "driver heap",
        "deltalog",
        "Delta on Spark",
        "spark ÷ deltalog",
        "JVM peak RSS deltalog / Delta (MiB)",
        "written deltalog / Delta (MiB)",
    ]
    lines += _table_header(header, ["---", "---", "--:", *["--:"] * (len(header) - 3)])
    steps_lines: list[str] = []
    for scenario in results["scenarios"]:
        for operation in scenario["operations"]:
            if operation not in SPARK_ROW_OPERATIONS:
                continue
            mine = [r for r in runs if (r.scenario, r.operation) == (scenario["name"], operation)]
            if not mine:
                continue
            by_engine = {e: [r for r in mine if r.engine == e] for e in ("deltalog", "spark")}
            heap = next((r.notes.get("driver_memory") for r in mine), None) or "—"
            cells = [scenario["name"], OPERATION_TITLES[operation], heap]
            for engine in ("deltalog", "spark"):
                summary = summaries.get((scenario["name"], operation, engine))
                cells.append(_seconds(summary.median) if summary and summary.median else "—")
            cells.append(_ratio_cell(summaries, scenario["name"], operation, "spark", "deltalog"))
            for key in ("jvm_peak_rss_mib", None):
                values = []
                for engine in ("deltalog", "spark"):
                    if key is None:
                        found = [
                            r.bytes_written / 2**20
                            for r in by_engine[engine]
                            if r.bytes_written is not None
                        ]
                    else:
                        found = [r.figures[key] for r in by_engine[engine] if key in r.figures]
                    value = statistics.median(found) if found else None
                    values.append(
                        "—"
                        if value is None
                        else f"{value:,.3g}"
                        if value < 100
                        else f"{value:,.0f}"
                    )
                cells.append(" / ".join(values))
            lines.append(_row(cells))
            for engine in ("deltalog", "spark"):
                names = dict.fromkeys(name for r in by_engine[engine] for name in r.phases)
                if not names:
                    continue
                parts = []
                for name in names:
                    found = [r.phases[name] for r in by_engine[engine] if name in r.phases]
                    parts.append(f"{name} {_seconds(statistics.median(found))}")
                steps_lines.append(
                    f"- {scenario['name']} / {operation} / {ENGINE_TITLES[engine]}: "
                    + ", ".join(parts)
                )
    return [*lines, "", *steps_lines, ""]


def _checks_section(
    results: dict[str, Any], summaries: dict[tuple[str, str, str], Summary], engines: list[str]
) -> list[str]:
    """Whether the engines did the same work: their counts against the generator's."""
    lines = [
        "## Result checks",
        "",
        "Counts each engine reported (files listed, files kept by the filter, files with a DV, "
        "deleted rows; rows after a delete or merge, rows it deleted, updated, inserted), "
        "against what the generator wrote (or deltalog's, where the generator "
        "does not know). The floor's counts are naive (adds minus removes; it does no replay).",
        "",
    ]
    mismatches = []
    unchecked = []
    for scenario in results["scenarios"]:
        for operation in scenario["operations"]:
            reference = _reference(scenario, operation, summaries)
            for engine in engines:
                summary = summaries.get((scenario["name"], operation, engine))
                if summary is None or not summary.checks:
                    continue
                where = f"{scenario['name']} / {operation} / {engine}"
                if not any(summary.checks):
                    if engine not in UNCOUNTED_ENGINES:
                        unchecked.append(where)
                    continue
                for check in summary.checks:
                    wrong = {
                        key: (value, reference[key])
                        for key, value in check.items()
                        if key in reference and value != reference[key]
                    }
                    if wrong:
                        detail = ", ".join(
                            f"{key} {got} (expected {want})" for key, (got, want) in wrong.items()
                        )
                        mismatches.append(f"- **MISMATCH** {where}: {detail}")
                        break
    lines += mismatches or ["All reported counts match."]
    if unchecked:
        lines += ["", "Not checkable (the engine reports no count): " + "; ".join(unchecked) + "."]
    return [*lines, ""]


def _tables_section(results: dict[str, Any]) -> list[str]:
    lines = [
        "## Scenarios",
        "",
        "| scenario | table | version | files | DVs | 1% filter (files) | time travel to | "
        "log size |",
        "| --- | --- | --: | --: | --: | --- | --: | --: |",
    ]
    for scenario in results["scenarios"]:
        table = scenario.get("table") or {}
        if not table:
            lines.append(f"| {scenario['name']} | {scenario['title']} | | | | | | |")
            continue
        if "data_bytes" in table:
            parquet = f"{table['data_bytes'] / 2**20:,.1f} MiB of zstd Parquet"
            lines.append(
                f"| {scenario['name']} | {scenario['title']}; {parquet} (each of the two "
                f"tables) | 0 | {table['num_files']:,} | 0 | | | |"
            )
            continue
        lines.append(
            f"| {scenario['name']} | {scenario['title']} | {table['version']} | "
            f"{table['num_files']:,} | {table['num_deletion_vectors']:,} | "
            f"`{table['one_percent_filter']}` ({table['one_percent_files']:,}) | "
            f"{table['older_version']} | {table['log_bytes'] / 2**20:,.1f} MiB |"
        )
    return [*lines, ""]


def _engines_section(results: dict[str, Any], engines: list[str]) -> list[str]:
    lines = [
        "## What each engine does",
        "",
        "Every measurement is a fresh Python process doing one operation on one table; imports "
        "and engine setup come first and are not timed. The timed part starts from the table "
        "path (`F`: the 1% filter, `V`: the older version). Runs are paired: in run *i* every "
        "engine does the same operation back to back, in an order rotated between runs. Every "
        "table's files are read once before its runs (warm page cache). Delta on Spark runs "
        "after the others, in one SparkSession, after one untimed warm-up load.",
        "",
        "| engine | " + " | ".join(OPERATION_TITLES[op] for op in OPERATIONS) + " |",
        "| --- |" + " --- |" * len(OPERATIONS),
    ]
    methods = _methods_used(results)
    for engine in engines:
        cells = []
        for op in OPERATIONS:
            reason = unsupported_reason(engine, op)
            cell = f"cannot: {reason}" if reason else DESCRIPTIONS[engine][op]
            if (engine, op) in methods:
                cell += "; this run: " + ", ".join(f"`{m}`" for m in methods[(engine, op)])
            cells.append(cell)
        lines.append(_row([ENGINE_TITLES[engine], *cells]))
    skipped = results.get("skipped") or {}
    if skipped:
        lines += ["", "Skipped engines:", ""]
        lines += [f"- {ENGINE_TITLES.get(e, e)}: {reason}" for e, reason in skipped.items()]
    return [*lines, ""]


def _methods_used(results: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """The ``notes.method`` the measurements recorded, per (engine, operation)."""
    methods: dict[tuple[str, str], list[str]] = {}
    for data in results["measurements"]:
        method = (data.get("notes") or {}).get("method")
        if method:
            seen = methods.setdefault((data["engine"], data["operation"]), [])
            if method not in seen:
                seen.append(method)
    return methods


# --------------------------------------------------------------------------------------------
# Cells and numbers


class _Notes:
    """Numbered footnotes for errors and reasons, each text once."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"

    def render(self) -> list[str]:
        if not self.texts:
            return []
        lines = ["## Notes", ""]
        lines += [f"{index}. {text}" for index, text in enumerate(self.texts, start=1)]
        return [*lines, ""]


def _summary(runs: list[Measurement]) -> Summary:
    good = [run for run in runs if run.ok and run.seconds is not None]
    seconds = [run.seconds for run in good if run.seconds is not None]
    operation_rss = [run.operation_rss_kib for run in good if run.operation_rss_kib is not None]
    peak_rss = [run.peak_rss_kib for run in good if run.peak_rss_kib is not None]
    written = [run.bytes_written for run in good if run.bytes_written is not None]
    limits = [_time_limit(run.error) for run in runs if not run.ok]
    return Summary(
        runs=len(runs),
        failures=[run.error or "failed" for run in runs if not run.ok],
        median=statistics.median(seconds) if seconds else None,
        low=min(seconds) if seconds else None,
        high=max(seconds) if seconds else None,
        operation_rss_kib=statistics.median(operation_rss) if operation_rss else None,
        peak_rss_kib=statistics.median(peak_rss) if peak_rss else None,
        checks=[run.check or {} for run in good],
        timeout=max((limit for limit in limits if limit is not None), default=None),
        bytes_written=statistics.median(written) if written else None,
    )


def _time_limit(error: str | None) -> float | None:
    """The time limit in an error ``timed out after N s`` (or ``not run: timed out ...``)."""
    match = re.search(r"timed out after ([0-9.]+) s", error or "")
    return float(match.group(1)) if match else None


def _time_cell(
    results: dict[str, Any],
    summaries: dict[tuple[str, str, str], Summary],
    scenario: str,
    operation: str,
    engine: str,
    notes: _Notes,
) -> str:
    skipped = (results.get("skipped") or {}).get(engine)
    if skipped:
        return "skipped " + notes.mark(f"{ENGINE_TITLES[engine]} skipped: {skipped}")
    reason = unsupported_reason(engine, operation)
    if reason:
        return "cannot " + notes.mark(f"{ENGINE_TITLES[engine]}, {operation}: {reason}")
    summary = summaries.get((scenario, operation, engine))
    if summary is None:
        return "—"
    failure = ""
    if summary.failures:
        text = f"{ENGINE_TITLES[engine]} failed on {scenario} / {operation}: {summary.failures[0]}"
        failure = f" {len(summary.failures)}/{summary.runs} failed {notes.mark(text)}"
    if summary.median is None:
        return "error" + failure
    spread = ""
    if summary.low is not None and summary.high is not None and summary.runs > 1:
        spread = f" [{_seconds(summary.low)} .. {_seconds(summary.high)}]"
    return f"{_seconds(summary.median)}{spread}{failure}"


def _ratio_cell(
    summaries: dict[tuple[str, str, str], Summary],
    scenario: str,
    operation: str,
    numerator: str,
    denominator: str,
) -> str:
    ratio, lower_bound = _bounded_ratio(
        summaries.get((scenario, operation, numerator)),
        summaries.get((scenario, operation, denominator)),
    )
    if ratio is None:
        return "—"
    return f"> {_times(ratio)}" if lower_bound else _times(ratio)


def _memory_cell(summary: Summary | None) -> str:
    if summary is None or summary.operation_rss_kib is None:
        return "—"
    peak = "" if summary.peak_rss_kib is None else f" ({summary.peak_rss_kib / KIB_PER_MIB:,.0f})"
    return f"{summary.operation_rss_kib / KIB_PER_MIB:,.1f}{peak}"


def _ratio_text(top: float | None, bottom: float | None) -> str:
    if top is None or bottom is None or bottom <= 0:
        return "—"
    return _times(top / bottom)


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def _seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if value < 1:
        return f"{value * 1000:.3g} ms"
    return f"{value:.3g} s"


def _target_value(
    target: Target, summaries: dict[tuple[str, str, str], Summary]
) -> tuple[float | None, bool]:
    """The target's measured value, and whether it is only a lower bound."""

    def summary(engine: str, operation: str = target.operation) -> Summary | None:
        return summaries.get((target.scenario, operation, engine))

    if target.kind == "vs_floor":
        return _bounded_ratio(summary("deltalog"), summary("floor"))
    if target.kind == "vs_cat":
        return _bounded_ratio(summary("deltalog"), summary("cat"))
    if target.kind == "speedup":
        return _bounded_ratio(summary("deltalake"), summary("deltalog"))
    if target.kind == "filtered_share":
        return _bounded_ratio(summary("deltalog", "filtered"), summary("deltalog", "list"))
    if target.kind == "filtered_memory":
        filtered, full = summary("deltalog", "filtered"), summary("deltalog", "list")
        return (
            _ratio(
                filtered.operation_rss_kib if filtered else None,
                full.operation_rss_kib if full else None,
            ),
            False,
        )
    if target.kind == "memory_share":
        ours, theirs = summary("deltalog"), summary("deltalake")
        return (
            _ratio(
                ours.operation_rss_kib if ours else None,
                theirs.operation_rss_kib if theirs else None,
            ),
            False,
        )
    ours = summary("deltalog")
    if target.kind == "max_seconds":
        return (ours.median if ours else None), False
    peak = ours.peak_rss_kib if ours else None
    return (peak / KIB_PER_GIB if peak else None), False


def _bounded_ratio(top: Summary | None, bottom: Summary | None) -> tuple[float | None, bool]:
    """Median time of ``top`` over ``bottom``; when ``top`` never finished, its time limit
    over ``bottom`` (a lower bound: then ``True``)."""
    if top is None or bottom is None:
        return None, False
    numerator, lower_bound = top.time_bound()
    return _ratio(numerator, bottom.median), lower_bound and bottom.median is not None


def _ratio(top: float | None, bottom: float | None) -> float | None:
    if top is None or bottom is None or bottom <= 0:
        return None
    return top / bottom


def _met(target: Target, value: float) -> bool:
    if target.kind == "speedup":
        return value >= target.threshold
    if target.kind == "peak_memory":
        return value < target.threshold
    return value <= target.threshold


#: Targets shown as percentages.
_SHARE_KINDS = ("memory_share", "filtered_share", "filtered_memory")


def _target_text(target: Target, value: float) -> str:
    if target.kind == "peak_memory":
        return f"{value:.2f} GiB"
    if target.kind == "max_seconds":
        return _seconds(value)
    if target.kind in _SHARE_KINDS:
        return f"{value:.0%}"
    return _times(value)


def _threshold_text(target: Target) -> str:
    if target.kind == "peak_memory":
        return f"< {target.threshold:g} GiB"
    if target.kind == "max_seconds":
        return f"≤ {_seconds(target.threshold)}"
    if target.kind in _SHARE_KINDS:
        return f"≤ {target.threshold:.0%}"
    sign = "≥" if target.kind == "speedup" else "≤"
    return f"{sign} {target.threshold:g}x"


def _reference(
    scenario: dict[str, Any], operation: str, summaries: dict[tuple[str, str, str], Summary]
) -> dict[str, int]:
    reference = dict((scenario.get("expected") or {}).get(operation, {}))
    ours = summaries.get((scenario["name"], operation, "deltalog"))
    if ours and ours.checks:
        for key, value in ours.checks[0].items():
            reference.setdefault(key, value)
    return reference


def _chart_value(summary: Summary | None, quantity: str) -> float | None:
    if summary is None:
        return None
    if quantity == "time":
        return summary.median
    return None if summary.operation_rss_kib is None else summary.operation_rss_kib / KIB_PER_MIB


def _table_header(names: list[str], alignments: list[str]) -> list[str]:
    return [_row(names), _row(alignments)]


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
