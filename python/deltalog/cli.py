"""The ``deltalog`` command: look at a Delta table from a shell.

    deltalog info URI      version, protocol and features, schema, partitioning, files
    deltalog files URI     the active data files
    deltalog history URI   the commits, newest first
    deltalog vacuum URI    delete the files no retained version needs (--dry-run: list them)
    deltalog optimize URI  compact small files, purge deletion vectors (--dry-run: list them)
    deltalog restore URI   commit the state of --version N (or --timestamp TIME) again
                           (--dry-run: check and show the metrics, commit nothing)
    deltalog checkpoint URI   write a checkpoint (of the latest version, or --version N;
                              --dry-run: show what would be written)
    deltalog cleanup URI      delete the log files older than the log retention allows
    deltalog create URI --schema JSON, deltalog write URI FILE..., deltalog alter URI ACTION
                           (see ``deltalog._cli_write``)

``--version N`` or ``--timestamp ISO-8601`` pick the snapshot, ``--json`` prints JSON instead of
a table, ``--storage-option KEY=VALUE`` (repeatable) configures the object store. An error
about the table prints one line on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from typing import IO, Any

from . import __version__
from ._arrow import type_name
from ._cli_write import add_commands as _add_write_commands
from ._table import DeltaTable, Snapshot
from .exceptions import DeltaError

__all__ = ["main", "render_table"]

EXIT_OK = 0
EXIT_DELTA_ERROR = 2
EXIT_INTERRUPTED = 130

#: How long a load runs before a progress line appears on a terminal's stderr.
PROGRESS_DELAY_SECONDS = 0.5


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line ``argv`` (default ``sys.argv[1:]``) and returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except DeltaError as error:
        message = " ".join(str(error).split())
        print(f"deltalog: error: {message}", file=sys.stderr)
        return EXIT_DELTA_ERROR
    except KeyboardInterrupt:
        print("deltalog: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of our output went away (`deltalog files ... | head`): not an error.
        sys.stderr.close()
        return EXIT_OK


# --- subcommands ---------------------------------------------------------------------------


def _info(args: argparse.Namespace) -> int:
    snapshot = _load_snapshot(args)
    protocol = snapshot.protocol
    metadata = snapshot.metadata
    if args.json:
        _print_json(
            {
                "uri": snapshot.table.uri,
                "version": snapshot.version,
                "timestamp": snapshot.timestamp.isoformat(timespec="milliseconds"),
                "protocol": {
                    "min_reader_version": protocol.min_reader_version,
                    "min_writer_version": protocol.min_writer_version,
                    "reader_features": _list_or_none(protocol.reader_features),
                    "writer_features": _list_or_none(protocol.writer_features),
                },
                "metadata": {
                    "id": metadata.id,
                    "name": metadata.name,
                    "description": metadata.description,
                    "created_time": _iso_or_none(metadata.created_time),
                    "configuration": dict(metadata.configuration),
                },
                "partition_columns": list(snapshot.partition_columns),
                "num_files": snapshot.num_files,
                "total_size": snapshot.total_size,
                "schema": {"type": "struct", "fields": snapshot.schema.fields()},
            }
        )
        return EXIT_OK
    properties = [f"{key}={value}" for key, value in sorted(metadata.configuration.items())]
    pairs = [
        ("table", snapshot.table.uri),
        ("version", f"{snapshot.version} (committed {_display_time(snapshot.timestamp)})"),
        ("protocol", f"reader {protocol.min_reader_version}, writer {protocol.min_writer_version}"),
        ("reader features", _joined(protocol.reader_features)),
        ("writer features", _joined(protocol.writer_features)),
        ("partitioned by", ", ".join(snapshot.partition_columns) or "(not partitioned)"),
        ("files", f"{snapshot.num_files} ({human_size(snapshot.total_size)})"),
        ("id", metadata.id),
        ("name", metadata.name or "-"),
        ("description", metadata.description or "-"),
        ("created", _display_time(metadata.created_time) if metadata.created_time else "-"),
        ("properties", "\n".join(properties) or "-"),
    ]
    _print(_render_pairs(pairs))
    _print("")
    _print("schema:")
    rows = [
        [field["name"], type_name(field["type"]), "yes" if field.get("nullable", True) else "no"]
        for field in snapshot.schema.fields()
    ]
    _print(_indent(render_table(["column", "type", "nullable"], rows, max_width=_width())))
    return EXIT_OK


def _files(args: argparse.Namespace) -> int:
    snapshot = _load_snapshot(args)
    with _progress("reading the file list"):
        rows = snapshot.files(with_stats=args.stats).to_json_rows()
    shown = rows if args.limit is None else rows[: args.limit]
    if args.json:
        _print_json(shown)
        return EXIT_OK
    headers = ["path", "size", "records", "deleted", "modified"]
    partitioned = bool(snapshot.partition_columns)
    if partitioned:
        headers.insert(1, "partition")
    if args.stats:
        headers += ["min", "max", "nulls"]
    table_rows = [_file_row(row, partitioned=partitioned, stats=args.stats) for row in shown]
    align = ["<", ">", ">", ">", "<"]
    if partitioned:
        align.insert(1, "<")
    _print(render_table(headers, table_rows, align=align, max_width=_width()))
    _print(_summary(len(shown), len(rows), "file", sum(int(row.get("size") or 0) for row in rows)))
    return EXIT_OK


def _history(args: argparse.Namespace) -> int:
    table = _open(args)
    with _progress("reading the history"):
        rows = table.history(limit=args.limit).to_json_rows()
    if args.json:
        _print_json([_decoded_history_row(row) for row in rows])
        return EXIT_OK
    headers = ["version", "timestamp", "operation", "user", "engine", "parameters"]
    table_rows = [
        [
            str(row.get("version")),
            _display_time_text(row.get("timestamp")),
            row.get("operation") or "",
            row.get("user_name") or "",
            row.get("engine_info") or "",
            _compact_json_text(row.get("operation_parameters")),
        ]
        for row in rows
    ]
    align = [">", "<", "<", "<", "<", "<"]
    headers, table_rows, align = _without_empty_columns(headers, table_rows, align)
    _print(render_table(headers, table_rows, align=align, max_width=_width()))
    return EXIT_OK


def _vacuum(args: argparse.Namespace) -> int:
    table = _open(args)
    with _progress("vacuuming" if not args.dry_run else "finding unreferenced files"):
        paths = table.vacuum(
            retention_hours=args.retention_hours,
            dry_run=args.dry_run,
            enforce_retention_duration=not args.no_retention_check,
        )
    if args.json:
        _print_json({"dry_run": args.dry_run, "files": paths})
        return EXIT_OK
    for path in paths:
        _print(path)
    verb = "would be deleted" if args.dry_run else "deleted"
    print(f"{len(paths)} file{'' if len(paths) == 1 else 's'} {verb}", file=sys.stderr)
    return EXIT_OK


def _optimize(args: argparse.Namespace) -> int:
    table = _open(args)
    with _progress("planning the optimize" if args.dry_run else "optimizing"):
        metrics = table.optimize(
            filter=args.filter,
            target_size=args.target_size,
            z_order_by=args.z_order_by,
            dry_run=args.dry_run,
            full=args.full,
        )
    if args.json:
        _print_json(metrics)
        return EXIT_OK
    added, removed = metrics["filesAdded"], metrics["filesRemoved"]
    if args.dry_run:
        for path in metrics["filesToRewrite"]:
            _print(path)
        count = removed["totalFiles"]
        size = human_size(removed["totalSize"])
        noun = "file" if count == 1 else "files"
        partitions = metrics["partitionsOptimized"]
        print(
            f"{count} {noun} ({size}) in {partitions} partition"
            f"{'' if partitions == 1 else 's'} would be rewritten",
            file=sys.stderr,
        )
        return EXIT_OK
    pairs = [
        ("version", "-" if metrics["version"] is None else str(metrics["version"])),
        ("files removed", f"{removed['totalFiles']} ({human_size(removed['totalSize'])})"),
        ("files added", f"{added['totalFiles']} ({human_size(added['totalSize'])})"),
        ("partitions", str(metrics["partitionsOptimized"])),
        ("deletion vectors removed", str(metrics["numDeletionVectorsRemoved"])),
    ]
    _print(_render_pairs(pairs))
    return EXIT_OK


def _restore(args: argparse.Namespace) -> int:
    if args.version is None and args.timestamp is None:
        print("deltalog: error: restore needs --version N or --timestamp TIME", file=sys.stderr)
        return EXIT_DELTA_ERROR
    table = _open(args)
    with _progress("checking the restore" if args.dry_run else "restoring"):
        metrics = table.restore(args.version, timestamp=args.timestamp, dry_run=args.dry_run)
    if args.json:
        _print_json(metrics)
        return EXIT_OK
    pairs = [
        (key, "-" if value is None else str(value))
        for key, value in metrics.items()
        if key != "dry_run"
    ]
    _print(_render_pairs(pairs))
    if args.dry_run:
        print(f"would restore version {metrics['restored_version']}", file=sys.stderr)
    return EXIT_OK


def _add_maintenance_commands(commands: Any) -> None:
    vacuum = commands.add_parser(
        "vacuum",
        help="delete the files no version within the retention needs",
        description="Delete the files of the table that no version within the retention "
        "period references (VACUUM). The paths are printed, relative to the table root.",
    )
    _add_table_arguments(vacuum, snapshot=False)
    vacuum.add_argument("--dry-run", action="store_true", help="only list what would go")
    vacuum.add_argument(
        "--retention-hours",
        type=float,
        metavar="H",
        help="keep files removed less than H hours ago (default: the table's retention)",
    )
    vacuum.add_argument(
        "--no-retention-check",
        action="store_true",
        help="allow a retention below the table's delta.deletedFileRetentionDuration",
    )
    vacuum.set_defaults(handler=_vacuum)

    optimize = commands.add_parser(
        "optimize",
        help="compact small files and purge deletion vectors, or cluster a clustered table",
        description="Compact the small files of each partition and rewrite files with "
        "deletion vectors (OPTIMIZE, dataChange=false); on a clustered table, cluster the "
        "files not yet clustered by the clustering columns.",
    )
    _add_table_arguments(optimize, snapshot=False)
    optimize.add_argument("--filter", metavar="PREDICATE", help="only matching partitions")
    optimize.add_argument(
        "--target-size", type=_non_negative, metavar="BYTES", help="the size of the new files"
    )
    optimize.add_argument(
        "--z-order-by", action="append", metavar="COLUMN", help="Z-order by COLUMN (repeatable)"
    )
    optimize.add_argument(
        "--full",
        action="store_true",
        help="clustered tables: recluster every file, also those clustered by other columns",
    )
    optimize.add_argument(
        "--dry-run", action="store_true", help="only list the files that would be rewritten"
    )
    optimize.set_defaults(handler=_optimize)

    restore = commands.add_parser(
        "restore",
        help="commit the state of an earlier version again",
        description="Restore the table to --version N or --timestamp TIME (RESTORE).",
    )
    _add_table_arguments(restore, snapshot=True)
    restore.add_argument(
        "--dry-run", action="store_true", help="check and show the metrics, commit nothing"
    )
    restore.set_defaults(handler=_restore)


def _checkpoint(args: argparse.Namespace) -> int:
    table = _open(args)
    version = args.version
    if args.timestamp is not None:
        version = table.snapshot(timestamp=args.timestamp).version
    with _progress("planning the checkpoint" if args.dry_run else "writing the checkpoint"):
        written = table.checkpoint(
            version,
            part_size=args.part_size,
            classic_compat=args.classic_compat,
            dry_run=args.dry_run,
        )
    if args.json:
        _print_json(
            {
                "dry_run": written.dry_run,
                "version": written.version,
                "kind": written.kind,
                "files": list(written.files),
                "sidecars": list(written.sidecars),
                "num_actions": written.num_actions,
                "num_add_files": written.num_add_files,
                "size_in_bytes": written.size_in_bytes,
            }
        )
        return EXIT_OK
    would = "would be written" if written.dry_run else "written"
    pairs = [
        ("version", str(written.version)),
        ("kind", written.kind),
        (f"files {would}" if written.dry_run else "files", "\n".join(written.files)),
        ("sidecars", "\n".join(written.sidecars) or "-"),
        ("actions", f"{written.num_actions} ({written.num_add_files} files)"),
        ("size", "-" if written.dry_run else human_size(written.size_in_bytes)),
    ]
    _print(_render_pairs(pairs))
    if written.dry_run:
        print(f"a {written.kind} checkpoint of version {written.version} {would}", file=sys.stderr)
    return EXIT_OK


def _cleanup(args: argparse.Namespace) -> int:
    table = _open(args)
    with _progress("finding expired log files" if args.dry_run else "cleaning up the log"):
        result = table.cleanup_metadata(dry_run=args.dry_run)
    if args.json:
        _print_json(
            {
                "dry_run": args.dry_run,
                "oldest_kept_version": result.oldest_kept_version,
                "deleted": list(result.deleted),
                "deleted_sidecars": list(result.deleted_sidecars),
                "compat_checkpoint": result.compat_checkpoint,
            }
        )
        return EXIT_OK
    oldest = result.oldest_kept_version
    verb = "would be deleted" if args.dry_run else "deleted"
    pairs = [
        ("oldest kept version", "-" if oldest is None else str(oldest)),
        (f"log files {verb}", str(len(result.deleted))),
        (f"sidecars {verb}", str(len(result.deleted_sidecars))),
        ("classic-named copy", result.compat_checkpoint or "-"),
    ]
    _print(_render_pairs(pairs))
    return EXIT_OK


# --- argument parsing ----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deltalog",
        description="Look at a Delta Lake table: its state, its files, its history.",
    )
    parser.add_argument("--version", action="version", version=f"deltalog {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser(
        "info",
        help="version, protocol and features, schema, partitioning, file count and size",
        description="Show a snapshot of the table: version, protocol, schema, partitioning, "
        "file count and size.",
    )
    _add_table_arguments(info, snapshot=True)
    info.set_defaults(handler=_info)

    files = commands.add_parser(
        "files", help="the active data files", description="List the active data files."
    )
    _add_table_arguments(files, snapshot=True)
    files.add_argument("--stats", action="store_true", help="add the min, max and null counts")
    files.add_argument("--limit", type=_non_negative, metavar="N", help="show at most N files")
    files.set_defaults(handler=_files)

    history = commands.add_parser(
        "history",
        help="the commits, newest first",
        description="List the commits of the table, newest first.",
    )
    _add_table_arguments(history, snapshot=False)
    history.add_argument("--limit", type=_non_negative, metavar="N", help="show at most N commits")
    history.set_defaults(handler=_history)
    _add_maintenance_commands(commands)

    checkpoint = commands.add_parser(
        "checkpoint",
        help="write a checkpoint",
        description="Write a checkpoint of the latest version (or the one picked), of the kind "
        "the table's properties ask for, and update _last_checkpoint.",
    )
    _add_table_arguments(checkpoint, snapshot=True)
    checkpoint.add_argument(
        "--part-size",
        type=_non_negative,
        metavar="N",
        help="write a multi-part checkpoint of at most N actions per part",
    )
    checkpoint.add_argument(
        "--classic-compat",
        action="store_true",
        help="with a V2 checkpoint, also write its classic-named copy for older readers",
    )
    checkpoint.add_argument(
        "--dry-run", action="store_true", help="only show what would be written"
    )
    checkpoint.set_defaults(handler=_checkpoint)

    cleanup = commands.add_parser(
        "cleanup",
        help="delete expired log files",
        description="Delete the log files older than delta.logRetentionDuration allows, "
        "keeping a checkpoint at the oldest version kept.",
    )
    _add_table_arguments(cleanup, snapshot=False)
    cleanup.add_argument("--dry-run", action="store_true", help="only list what would go")
    cleanup.set_defaults(handler=_cleanup)
    _add_write_commands(
        commands, lambda command: _add_table_arguments(command, snapshot=False), _print_json
    )
    return parser


def _add_table_arguments(parser: argparse.ArgumentParser, *, snapshot: bool) -> None:
    parser.add_argument("uri", metavar="URI", help="the table: a path or a URI (s3://, gs://, ...)")
    if snapshot:
        at = parser.add_mutually_exclusive_group()
        at.add_argument("--version", type=_non_negative, metavar="N", help="read version N")
        at.add_argument(
            "--timestamp",
            metavar="TIME",
            help="read the newest version committed at or before TIME (ISO-8601; UTC if no zone)",
        )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--storage-option",
        dest="storage_options",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="an object store option such as aws_region=eu-west-1 (repeatable)",
    )


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


# --- loading -------------------------------------------------------------------------------


def _open(args: argparse.Namespace) -> DeltaTable:
    with _progress(f"opening {args.uri}"):
        return DeltaTable(args.uri, storage_options=dict(args.storage_options) or None)


def _load_snapshot(args: argparse.Namespace) -> Snapshot:
    table = _open(args)
    with _progress("loading the snapshot"):
        return table.snapshot(args.version, timestamp=args.timestamp)


@contextmanager
def _progress(message: str, stream: IO[str] | None = None) -> Iterator[None]:
    """Shows ``message`` and the time spent on ``stream`` (stderr) while the block runs, once
    it has run for :data:`PROGRESS_DELAY_SECONDS`, when the stream is a terminal."""
    out = sys.stderr if stream is None else stream
    if not out.isatty():
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def report() -> None:
        if done.wait(PROGRESS_DELAY_SECONDS):
            return
        while not done.wait(0.1):
            out.write(f"\r{message} … {time.monotonic() - started:.1f}s")
            out.flush()
        out.write("\r\x1b[K")
        out.flush()

    reporter = threading.Thread(target=report, name="deltalog-progress", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()


# --- rendering -----------------------------------------------------------------------------


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    align: Sequence[str] | None = None,
    max_width: int | None = None,
) -> str:
    """Plain-text columns: a header line, a rule, one line per row.

    ``align`` gives ``"<"`` (left) or ``">"`` (right) per column. When the lines would be wider
    than ``max_width``, the widest column is cut down, its cells keeping their ends (the file
    name of a path) behind a ``…``.
    """
    alignment = list(align or ())
    alignment += ["<"] * (len(headers) - len(alignment))
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    if max_width is not None:
        overflow = sum(widths) + 2 * (len(widths) - 1) - max_width
        if overflow > 0:
            widest = max(range(len(widths)), key=lambda index: widths[index])
            widths[widest] = max(len(headers[widest]), 12, widths[widest] - overflow)
            cells = [
                [
                    _shorten(cell, widths[widest]) if i == widest else cell
                    for i, cell in enumerate(row)
                ]
                for row in cells
            ]

    def line(values: Sequence[str]) -> str:
        parts = [f"{value:{alignment[i]}{widths[i]}}" for i, value in enumerate(values)]
        return "  ".join(parts).rstrip()

    lines = [line([header.upper() for header in headers])]
    lines += [line(row) for row in cells]
    return "\n".join(lines)


def human_size(size: int) -> str:
    """``size`` bytes in binary units: ``512 B``, ``1.5 KiB``, ``3.0 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _render_pairs(pairs: Sequence[tuple[str, str]]) -> str:
    width = max(len(key) for key, _ in pairs)
    lines = []
    for key, value in pairs:
        first, *rest = value.split("\n")
        lines.append(f"{key + ':':<{width + 1}}  {first}")
        lines += [f"{'':<{width + 1}}  {more}" for more in rest]
    return "\n".join(lines)


def _file_row(row: dict[str, Any], *, partitioned: bool, stats: bool) -> list[str]:
    deletion_vector = row.get("deletion_vector") or {}
    cells = [
        str(row.get("path", "")),
        human_size(int(row.get("size") or 0)),
        _or_dash(row.get("num_records")),
        _or_dash(deletion_vector.get("cardinality")),
        _display_time_text(row.get("modification_time")),
    ]
    if partitioned:
        values = row.get("partition_values") or {}
        cells.insert(1, ", ".join(f"{key}={_or_null(value)}" for key, value in values.items()))
    if stats:
        cells += [_compact(row.get(name)) for name in ("min_values", "max_values", "null_count")]
    return cells


def _without_empty_columns(
    headers: list[str], rows: list[list[str]], align: list[str]
) -> tuple[list[str], list[list[str]], list[str]]:
    """The columns that have a value in some row (all of them when there are no rows)."""
    keep = [index for index in range(len(headers)) if not rows or any(row[index] for row in rows)]
    return (
        [headers[index] for index in keep],
        [[row[index] for index in keep] for row in rows],
        [align[index] for index in keep],
    )


def _decoded_history_row(row: dict[str, Any]) -> dict[str, Any]:
    decoded = dict(row)
    for name in ("operation_parameters", "commit_info"):
        text = decoded.get(name)
        if isinstance(text, str):
            with suppress(ValueError):
                decoded[name] = json.loads(text)
    return decoded


def _summary(shown: int, total: int, noun: str, size: int) -> str:
    if shown == total:
        plural = "" if total == 1 else "s"
        return f"{total} {noun}{plural}, {human_size(size)}"
    return f"{shown} of {total} {noun}s shown; {human_size(size)} in all"


def _display_time(moment: datetime) -> str:
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%d %H:%M:%S.") + f"{utc.microsecond // 1000:03d} UTC"


def _display_time_text(text: object) -> str:
    if not isinstance(text, str):
        return "" if text is None else str(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return _display_time(moment)


def _compact_json_text(text: object) -> str:
    if not isinstance(text, str):
        return ""
    try:
        return _compact(json.loads(text))
    except ValueError:
        return text


def _compact(value: object) -> str:
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else line for line in text.split("\n"))


def _joined(values: Sequence[str] | None) -> str:
    return ", ".join(values) if values else "-"


def _list_or_none(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _iso_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="milliseconds")


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def _or_null(value: object) -> str:
    return "null" if value is None else str(value)


def _width() -> int | None:
    """The terminal's width when stdout is a terminal; output to a pipe is never cut."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _print(text: str) -> None:
    print(text)


def _print_json(document: object) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False))
