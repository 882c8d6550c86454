"""Runs seeds of the differential test of deltalog against Delta Lake on Spark.

    .venv/bin/python -m tests.spark.run_differential --seeds 200 --ops 15
    .venv/bin/python -m tests.spark.run_differential --seed 17 --mode spark-first -v

Prints each seed's outcome and a summary; exits with 1 when any seed failed, printing the
failing seed, step and exact operation. Without ``--mode`` the modes take turns by seed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ._twin import MODES, Failure, FeatureMix, SeedResult, build_spark_session, run_seed


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds (from --start)")
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--seed", type=int, help="run only this seed")
    parser.add_argument("--ops", type=int, default=15, help="random operations per seed")
    parser.add_argument("--mode", choices=MODES, help="the mode (default: by seed)")
    parser.add_argument("--root", type=Path, help="where the tables go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the tables of passing seeds")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every step")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=sorted(FeatureMix.__dataclass_fields__),
        help="turn a feature of every mix off (around a known bug); repeatable",
    )
    parser.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure")
    return parser.parse_args(argv)


def plan(args: argparse.Namespace) -> list[tuple[int, str]]:
    """The (seed, mode) pairs to run."""
    seeds = [args.seed] if args.seed is not None else range(args.start, args.start + args.seeds)
    return [(seed, args.mode or MODES[seed % len(MODES)]) for seed in seeds]


def echo(text: str) -> None:
    print(text, flush=True)


def echo_refusals(text: str) -> None:
    """Without ``-v``: only the steps both engines refused or that were skipped, to review
    that they refused for the same reason."""
    if " -- refused: " in text or " -- skipped: " in text:
        echo(text[:400])


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the plan; returns the exit status."""
    args = parse(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="deltalog-differential-"))
    spark = build_spark_session(root / "spark")
    failures: list[Failure] = []
    passed = 0
    started = time.monotonic()
    for seed, mode in plan(args):
        outcome = run_seed(
            spark,
            seed,
            mode,
            args.ops,
            root,
            echo if args.verbose else echo_refusals,
            args.keep,
            frozenset(args.without),
        )
        if isinstance(outcome, Failure):
            failures.append(outcome)
            echo(outcome.report())
            if not args.verbose:
                echo("  last steps:\n" + "\n".join(outcome.log[-6:]))
            if args.exitfirst:
                break
        else:
            passed += 1
            echo(describe(outcome))
    minutes = (time.monotonic() - started) / 60
    echo(f"\n{passed} passed, {len(failures)} failed in {minutes:.1f} min (tables under {root})")
    for failure in failures:
        echo(
            f"  FAILED seed {failure.seed} mode {failure.mode} step {failure.step}: "
            f"{failure.summary[:100]}"
        )
    spark.stop()
    return 1 if failures else 0


def describe(result: SeedResult) -> str:
    return (
        f"seed {result.seed} mode {result.mode} ok: {result.steps} steps, {result.refused} "
        f"refused by both, {result.skipped} skipped, {result.seconds:.0f}s [{result.mix.short()}]"
    )


if __name__ == "__main__":
    sys.exit(main())
