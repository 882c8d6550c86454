"""The writing subcommands of the ``deltalog`` command (registered by :mod:`deltalog.cli`):

    deltalog create URI --schema JSON   a table with no rows
    deltalog write URI FILE...          Parquet, CSV or JSON-lines files appended (or ...)
    deltalog alter URI ACTION ...       one ALTER TABLE change

Each prints the commit (``--json``: the :class:`CommitResult` as JSON). Files are read with
pyarrow, one batch at a time; on a terminal, ``write`` reports the rows read on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from . import _core
from ._table import CommitResult, DeltaTable
from ._write import write_table
from .exceptions import InvalidArgumentError

__all__ = ["add_commands"]

#: The ``--format`` of a file by its name's ending.
FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}
FORMATS[".ndjson"] = "json"

#: Seconds between two progress lines of ``write`` on a terminal.
PROGRESS_INTERVAL_SECONDS = 0.5

Printer = Callable[[object], None]
TableArguments = Callable[[argparse.ArgumentParser], None]


def add_commands(commands: Any, table_arguments: TableArguments, print_json: Printer) -> None:
    """Adds ``create``, ``write`` and ``alter`` to the subcommands ``commands`` (an argparse
    subparsers action); ``table_arguments`` adds ``URI``, ``--json`` and
    ``--storage-option``; ``print_json`` prints a JSON document."""
    create = commands.add_parser(
        "create",
        help="create a table with no rows",
        description="Create a Delta table with no rows.",
    )
    table_arguments(create)
    create.add_argument(
        "--schema",
        required=True,
        metavar="JSON",
        help="the Delta schema as JSON text, or @FILE to read it from FILE",
    )
    _partition_argument(create)
    create.add_argument(
        "--property",
        dest="properties",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="a table property such as delta.enableDeletionVectors=true (repeatable)",
    )
    create.add_argument("--name", help="the table name")
    create.add_argument("--description", help="the table description")
    create.add_argument(
        "--mode",
        choices=["error", "ignore", "overwrite"],
        default="error",
        help="when a table exists: refuse (default), do nothing, or replace it",
    )
    create.set_defaults(handler=lambda args: _create(args, print_json))

    write = commands.add_parser(
        "write",
        help="write Parquet, CSV or JSON-lines files to a table",
        description="Write the rows of files to a table (created when absent), as one commit.",
    )
    table_arguments(write)
    write.add_argument("files", nargs="+", metavar="FILE", help="the files to read")
    write.add_argument(
        "--mode",
        choices=["append", "overwrite", "error", "ignore"],
        default="append",
        help="for an existing table: add the rows (default), replace them, refuse, or skip",
    )
    _partition_argument(write)
    write.add_argument(
        "--format",
        choices=sorted(set(FORMATS.values())),
        help="the files' format (default: from their names)",
    )
    write.add_argument(
        "--schema-mode",
        choices=["merge", "overwrite"],
        help="merge: add the files' new columns; overwrite (with --mode overwrite): replace "
        "the schema",
    )
    write.set_defaults(handler=lambda args: _write(args, print_json))

    alter = commands.add_parser(
        "alter",
        help="change properties, columns, constraints or features",
        description="Alter a table (as ALTER TABLE), as one commit.",
    )
    table_arguments(alter)
    actions = alter.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_alter_actions(actions)
    alter.set_defaults(handler=lambda args: _alter(args, print_json))


# --- create --------------------------------------------------------------------------------


def _create(args: argparse.Namespace, print_json: Printer) -> int:
    schema = args.schema
    if schema.startswith("@"):
        schema = _read_text(schema[1:])
    options = dict(args.storage_options) or None
    raw, commit = _core.RawDeltaTable.create(
        args.uri,
        schema,
        list(args.partition_by) or None,
        dict(args.properties) or None,
        args.name,
        args.description,
        args.mode,
        options,
    )
    table = DeltaTable._from_raw(raw, options)
    return _report(table._commit_result(commit), "create", args.json, print_json)


# --- write ---------------------------------------------------------------------------------


def _write(args: argparse.Namespace, print_json: Printer) -> int:
    reader = _reader(args.files, args.format)
    batches = _with_progress(reader, sys.stderr)
    result = write_table(
        args.uri,
        _record_batch_reader(reader.schema, batches),
        mode=args.mode,
        partition_by=list(args.partition_by) or None,
        schema_mode=args.schema_mode,
        storage_options=dict(args.storage_options) or None,
    )
    return _report(result, "write", args.json, print_json)


def _reader(files: Sequence[str], format_name: str | None) -> Any:
    """A pyarrow ``RecordBatchReader`` over ``files`` (read lazily, batch by batch)."""
    try:
        import pyarrow.dataset as ds
    except ImportError:
        raise InvalidArgumentError("deltalog write reads files with pyarrow: install it") from None
    names = {format_name or _format_of(path) for path in files}
    if len(names) != 1:
        raise InvalidArgumentError(f"the files mix formats ({', '.join(sorted(names))})")
    for path in files:
        if not Path(path).is_file():
            raise InvalidArgumentError(f"{path} is not a file")
    try:
        dataset = ds.dataset(list(files), format=names.pop())
        return dataset.scanner().to_reader()
    except (OSError, ValueError) as error:
        raise InvalidArgumentError(f"cannot read {', '.join(files)}: {error}") from None


def _format_of(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InvalidArgumentError(f"cannot tell the format of {path} from its name; give --format")
    return FORMATS[suffix]


def _record_batch_reader(schema: Any, batches: Iterator[Any]) -> Any:
    import pyarrow as pa

    return pa.RecordBatchReader.from_batches(schema, batches)


def _with_progress(reader: Any, stream: IO[str]) -> Iterator[Any]:
    """The batches of ``reader``; on a terminal ``stream``, the rows read so far are shown
    every :data:`PROGRESS_INTERVAL_SECONDS` and once at the end."""
    showing = stream.isatty()
    rows = 0
    last = time.monotonic()
    for batch in reader:
        rows += batch.num_rows
        now = time.monotonic()
        if showing and now - last >= PROGRESS_INTERVAL_SECONDS:
            stream.write(f"\rread {rows:,} rows …")
            stream.flush()
            last = now
        yield batch
    if showing:
        stream.write(f"\rread {rows:,} rows\x1b[K\n")
        stream.flush()


# --- alter ---------------------------------------------------------------------------------


def _add_alter_actions(actions: Any) -> None:
    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=help_text, description=help_text[0].upper() + help_text[1:] + "."
        )
        parser.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print the commit as JSON",
        )
        return parser

    properties = action("set-properties", "set table properties (comment=TEXT: description)")
    properties.add_argument("pairs", nargs="+", type=_key_value, metavar="KEY=VALUE")
    unset = action("unset-properties", "remove table properties")
    unset.add_argument("keys", nargs="+", metavar="KEY")
    unset.add_argument("--if-exists", action="store_true", help="ignore missing keys")
    columns = action("add-columns", "add nullable columns")
    columns.add_argument(
        "fields", metavar="JSON", help="the columns as a Delta struct schema (JSON, or @FILE)"
    )
    columns.add_argument("--parent", metavar="COLUMN", help="add them inside this struct")
    rename = action("rename-column", "rename a column (needs column mapping)")
    rename.add_argument("column", metavar="COLUMN")
    rename.add_argument("new_name", metavar="NEW_NAME")
    drop = action("drop-columns", "drop columns (needs column mapping)")
    drop.add_argument("columns", nargs="+", metavar="COLUMN")
    drop.add_argument("--if-exists", action="store_true", help="ignore missing columns")
    constraint = action("add-constraint", "add a CHECK constraint, checked on the existing rows")
    constraint.add_argument("name", metavar="NAME")
    constraint.add_argument("expression", metavar="EXPR")
    drop_constraint = action("drop-constraint", "drop a CHECK constraint")
    drop_constraint.add_argument("name", metavar="NAME")
    drop_constraint.add_argument("--if-exists", action="store_true", help="ignore a missing one")
    feature = action("add-feature", "add a table feature to the protocol")
    feature.add_argument("feature", metavar="NAME")
    drop_feature = action("drop-feature", "drop a table feature from the protocol")
    drop_feature.add_argument("feature", metavar="NAME")
    drop_feature.add_argument(
        "--truncate-history",
        action="store_true",
        help="truncate the history instead of protecting it (TRUNCATE HISTORY)",
    )
    description = action("set-description", "set the table description")
    description.add_argument("text", metavar="TEXT")


def _alter(args: argparse.Namespace, print_json: Printer) -> int:
    table = DeltaTable(args.uri, storage_options=dict(args.storage_options) or None)
    alter = table.alter
    action = args.action
    if action == "set-properties":
        result = alter.set_properties(dict(args.pairs))
    elif action == "unset-properties":
        result = alter.unset_properties(args.keys, if_exists=args.if_exists)
    elif action == "add-columns":
        fields = args.fields
        fields = _read_text(fields[1:]) if fields.startswith("@") else fields
        result = alter.add_columns(fields, parent=args.parent)
    elif action == "rename-column":
        result = alter.rename_column(args.column, args.new_name)
    elif action == "drop-columns":
        result = alter.drop_columns(args.columns, if_exists=args.if_exists)
    elif action == "add-constraint":
        result = alter.add_constraint(args.name, args.expression)
    elif action == "drop-constraint":
        result = alter.drop_constraint(args.name, if_exists=args.if_exists)
    elif action == "add-feature":
        result = alter.add_feature(args.feature)
    elif action == "drop-feature":
        result = alter.drop_feature(args.feature, truncate_history=args.truncate_history)
    else:
        result = alter.set_description(args.text)
    return _report(result, action, args.json, print_json)


# --- shared --------------------------------------------------------------------------------


def _report(result: CommitResult, command: str, as_json: bool, print_json: Printer) -> int:
    if as_json:
        print_json(
            {
                "version": result.version,
                "committed": result.committed,
                "retries": result.retries,
                "metrics": dict(result.metrics),
            }
        )
    elif result.committed:
        print(f"{command}: committed version {result.version}")
    else:
        print(f"{command}: nothing committed; the table is at version {result.version}")
    return 0


def _partition_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--partition-by",
        action="append",
        default=[],
        metavar="COLUMN",
        help="a partition column (repeatable)",
    )


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def _read_text(path: str) -> str:
    try:
        return Path(path).expanduser().read_text()
    except OSError as error:
        raise InvalidArgumentError(f"cannot read {path}: {error.strerror}") from None
