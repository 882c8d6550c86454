"""The corrupt-input corpus (reliability notes 6.4): small tables, each a copy of a real table
written once per session and then damaged in one way. Each case names the operation that
meets the damage (opening, listing the files, scanning the rows, writing), the exception
class deltalog must raise and the file its message must name. A case whose damage the
protocol tells readers to tolerate (a bad ``_last_checkpoint`` hint, an unknown action)
asserts instead that the table reads exactly as before."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.exceptions import (
    ChecksumMismatchError,
    CorruptDataFileError,
    CorruptDeletionVectorError,
    CorruptLogError,
    DeltaError,
    InvalidPathError,
    InvalidTableError,
    NonContiguousLogError,
    ObjectNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UnsupportedProtocolVersionError,
)

LOG = "_delta_log"

#: The rows of every base table once read (ids; row 3 deleted through a deletion vector).
BASE_IDS = [i for i in range(20) if i != 3]


def log_name(version: int, suffix: str = "json") -> str:
    return f"{version:020}.{suffix}"


def build_plain(root: Path) -> None:
    """Versions 0 (create + 10 rows), 1 (10 rows), 2 (a delete of id 3 through a deletion
    vector file); partitioned by the int column ``p``; `.crc` files; no checkpoint."""
    rows = pa.table(
        {
            "id": pa.array(range(10), pa.int64()),
            "p": pa.array([i % 2 for i in range(10)], pa.int32()),
            "s": [f"s{i}" for i in range(10)],
        }
    )
    deltalog.write_table(
        root,
        rows,
        partition_by=["p"],
        configuration={"delta.enableDeletionVectors": "true"},
    )
    more = rows.set_column(0, "id", pa.array(range(10, 20), pa.int64()))
    deltalog.write_table(root, more)
    deltalog.DeltaTable(root).delete("id = 3")


@pytest.fixture(scope="session")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The base tables, written once: ``plain`` (commits 0-2), ``checkpointed`` (a classic
    checkpoint at 2, commits 0-2 cleaned up, commit 3 appends id 20), ``multipart`` (the same
    with a checkpoint of 2 parts)."""
    top = tmp_path_factory.mktemp("bases")
    plain = top / "plain"
    build_plain(plain)
    tables = {"plain": plain}
    for name, part_size in (("checkpointed", None), ("multipart", 2)):
        root = top / name
        shutil.copytree(plain, root)
        deltalog.DeltaTable(root).checkpoint(part_size=part_size)
        for version in range(3):
            (root / LOG / log_name(version)).unlink()
            (root / LOG / log_name(version, "crc")).unlink(missing_ok=True)
        extra = pa.table(
            {
                "id": pa.array([20], pa.int64()),
                "p": pa.array([0], pa.int32()),
                "s": ["s20"],
            }
        )
        deltalog.write_table(root, extra)
        tables[name] = root
    return tables


# --- operations -----------------------------------------------------------------------------


def op_open(root: Path) -> object:
    return deltalog.DeltaTable(root).snapshot().version


def op_files(root: Path) -> object:
    return deltalog.DeltaTable(root).snapshot().files(with_stats=True).to_pyarrow()


def op_scan(root: Path) -> object:
    return deltalog.DeltaTable(root).snapshot().scan().to_pyarrow()


def op_write(root: Path) -> object:
    rows = pa.table(
        {
            "id": pa.array([99], pa.int64()),
            "p": pa.array([1], pa.int32()),
            "s": ["s99"],
        }
    )
    return deltalog.write_table(root, rows)


def op_validate(root: Path) -> object:
    return deltalog.DeltaTable(root).snapshot().validate_checksum()


OPERATIONS: dict[str, Callable[[Path], object]] = {
    "validate": op_validate,
    "open": op_open,
    "files": op_files,
    "scan": op_scan,
    "write": op_write,
}


# --- damage helpers -------------------------------------------------------------------------


def commit_lines(root: Path, version: int) -> list[dict[str, object]]:
    text = (root / LOG / log_name(version)).read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def write_lines(root: Path, version: int, actions: list[dict[str, object]]) -> None:
    text = "".join(json.dumps(action) + "\n" for action in actions)
    (root / LOG / log_name(version)).write_text(text)


def edit_action(
    root: Path, version: int, kind: str, edit: Callable[[dict[str, object]], None]
) -> None:
    actions = commit_lines(root, version)
    for action in actions:
        if kind in action:
            body = action[kind]
            assert isinstance(body, dict)
            edit(body)
    write_lines(root, version, actions)


def duplicate(root: Path, version: int, kind: str) -> None:
    """Repeats the first ``kind`` action of commit ``version`` at its end."""
    actions = commit_lines(root, version)
    first = next(action for action in actions if kind in action)
    write_lines(root, version, [*actions, first])


def append_text(root: Path, version: int, line: str) -> None:
    path = root / LOG / log_name(version)
    path.write_text(path.read_text() + line + "\n")


def drop_crc(root: Path) -> None:
    """Removes the `.crc` files, so that opening must read the commits themselves."""
    for crc in (root / LOG).glob("*.crc"):
        crc.unlink()


def dv_files(root: Path) -> list[Path]:
    return sorted(root.rglob("deletion_vector_*.bin"))


def dv_descriptor(root: Path) -> dict[str, object]:
    for action in commit_lines(root, 2):
        add = action.get("add")
        if isinstance(add, dict) and add.get("deletionVector"):
            descriptor = add["deletionVector"]
            assert isinstance(descriptor, dict)
            return descriptor
    raise AssertionError("the base table has no deletion vector")


def set_dv(root: Path, change: dict[str, object]) -> None:
    def edit(add: dict[str, object]) -> None:
        if add.get("deletionVector"):
            descriptor = add["deletionVector"]
            assert isinstance(descriptor, dict)
            descriptor.update(change)

    edit_action(root, 2, "add", edit)


def checkpoint_parts(root: Path) -> list[Path]:
    return sorted((root / LOG).glob("*.checkpoint*.parquet"))


def rewrite_checkpoint(root: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    part = checkpoint_parts(root)[0]
    pq.write_table(change(pq.read_table(part)), part)


def last_checkpoint(root: Path, content: dict[str, object] | str) -> None:
    text = content if isinstance(content, str) else json.dumps(content)
    (root / LOG / "_last_checkpoint").write_text(text)


def set_protocol(root: Path, version: int, protocol: dict[str, object]) -> None:
    def edit(body: dict[str, object]) -> None:
        body.clear()
        body.update(protocol)

    edit_action(root, version, "protocol", edit)


# --- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One damaged table: ``base`` copied, ``damage`` applied, ``operation`` run; it raises
    ``error`` (exactly that class) with ``names`` in its message, or, when ``error`` is None,
    reads the base table's rows."""

    id: str
    base: str
    damage: Callable[[Path], None]
    operation: str
    error: type[DeltaError] | None
    names: str = ""


def truncate(relative: str, keep: float) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        path = root / relative
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    return damage


def replace_bytes(relative: str, data: bytes) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        (root / relative).write_bytes(data)

    return damage


def then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        for step in steps:
            step(root)

    return damage


def remove(relative: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).unlink()


def commit_edit(
    version: int, kind: str, edit: Callable[[dict[str, object]], None]
) -> Callable[[Path], None]:
    return lambda root: edit_action(root, version, kind, edit)


def dropping(*keys: str) -> Callable[[dict[str, object]], None]:
    def edit(body: dict[str, object]) -> None:
        for key in keys:
            body.pop(key, None)

    return edit


def setting(**values: object) -> Callable[[dict[str, object]], None]:
    return lambda body: body.update(values)


C0 = f"{LOG}/{log_name(0)}"
C1 = f"{LOG}/{log_name(1)}"
C2 = f"{LOG}/{log_name(2)}"
C3 = f"{LOG}/{log_name(3)}"
CP2 = f"{LOG}/{log_name(2, 'checkpoint.parquet')}"
CP2_NAME = log_name(2, "checkpoint.parquet")


def dv_damage(change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        (path,) = dv_files(root)
        path.write_bytes(change(path.read_bytes()))

    return damage


def dv_descriptor_damage(
    change: Callable[[dict[str, object]], dict[str, object]],
) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        set_dv(root, change(dv_descriptor(root)))

    return damage


def flip_byte(at: int) -> Callable[[bytes], bytes]:
    def change(data: bytes) -> bytes:
        index = at if at >= 0 else len(data) + at
        return data[:index] + bytes([data[index] ^ 0xFF]) + data[index + 1 :]

    return change


def inline_dv(encoded: str, cardinality: int) -> Callable[[dict[str, object]], dict[str, object]]:
    return lambda _: {
        "storageType": "i",
        "pathOrInlineDv": encoded,
        "sizeInBytes": len(encoded) * 4 // 5,
        "cardinality": cardinality,
    }


def no_checkpoint_column(column: str) -> Callable[[Path], None]:
    return lambda root: rewrite_checkpoint(root, lambda table: table.drop_columns([column]))


def metadata_edit(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    return then(drop_crc, commit_edit(0, "metaData", change))


def schema_text(text: str) -> Callable[[dict[str, object]], None]:
    return setting(schemaString=text)


def partition_value(value: str) -> Callable[[Path], None]:
    def edit(add: dict[str, object]) -> None:
        add["partitionValues"] = {"p": value}

    return commit_edit(1, "add", edit)


def protocol(**fields: object) -> Callable[[Path], None]:
    return then(drop_crc, lambda root: set_protocol(root, 0, dict(fields)))


def wrong_crc(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        path = root / LOG / log_name(2, "crc")
        document = json.loads(path.read_text())
        change(document)
        path.write_text(json.dumps(document))

    return damage


CASES = [
    # commit JSON
    Case(
        "commit-truncated-mid-line",
        "plain",
        then(drop_crc, truncate(C1, 0.5)),
        "open",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-not-json",
        "plain",
        then(drop_crc, replace_bytes(C1, b"this is not JSON\n")),
        "open",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-invalid-utf8",
        "plain",
        then(drop_crc, replace_bytes(C1, b'{"add": {"path": "\xff\xfe"}}\n')),
        "open",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-json-array",
        "plain",
        then(drop_crc, replace_bytes(C1, b"[1, 2, 3]\n")),
        "open",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-add-path-not-string",
        "plain",
        commit_edit(1, "add", setting(path=17)),
        "files",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-add-size-not-number",
        "plain",
        commit_edit(1, "add", setting(size="big")),
        "files",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-add-without-path",
        "plain",
        commit_edit(1, "add", dropping("path")),
        "files",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-add-without-size",
        "plain",
        commit_edit(1, "add", dropping("size")),
        "files",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-add-without-partition-values",
        "plain",
        commit_edit(1, "add", dropping("partitionValues")),
        "files",
        CorruptLogError,
        log_name(1),
    ),
    Case(
        "commit-add-stats-not-json",
        "plain",
        commit_edit(1, "add", setting(stats="{not json")),
        "scan",
        None,
    ),
    Case(
        "commit-remove-without-path",
        "plain",
        commit_edit(2, "remove", dropping("path")),
        "files",
        CorruptLogError,
        log_name(2),
    ),
    Case(
        "protocol-without-reader-version",
        "plain",
        then(drop_crc, commit_edit(0, "protocol", dropping("minReaderVersion"))),
        "open",
        CorruptLogError,
        log_name(0),
    ),
    Case(
        "protocol-version-not-number",
        "plain",
        then(drop_crc, commit_edit(0, "protocol", setting(minReaderVersion="three"))),
        "open",
        CorruptLogError,
        log_name(0),
    ),
    Case(
        "metadata-without-schema",
        "plain",
        metadata_edit(dropping("schemaString")),
        "files",
        InvalidTableError,
        "schema",
    ),
    Case(
        "metadata-without-id",
        "plain",
        metadata_edit(dropping("id")),
        "open",
        CorruptLogError,
        log_name(0),
    ),
    Case(
        "metadata-partition-columns-not-list",
        "plain",
        metadata_edit(setting(partitionColumns="p")),
        "open",
        CorruptLogError,
        log_name(0),
    ),
    Case(
        "commit-0-without-protocol",
        "plain",
        then(
            drop_crc,
            lambda root: write_lines(
                root, 0, [a for a in commit_lines(root, 0) if "protocol" not in a]
            ),
        ),
        "open",
        InvalidTableError,
        "protocol",
    ),
    Case(
        "commit-0-without-metadata",
        "plain",
        then(
            drop_crc,
            lambda root: write_lines(
                root, 0, [a for a in commit_lines(root, 0) if "metaData" not in a]
            ),
        ),
        "open",
        InvalidTableError,
        "metaData",
    ),
    Case(
        "commit-second-metadata",
        "plain",
        then(drop_crc, lambda root: duplicate(root, 0, "metaData")),
        "open",
        CorruptLogError,
        log_name(0),
    ),
    Case(
        "commit-second-protocol",
        "plain",
        then(drop_crc, lambda root: duplicate(root, 0, "protocol")),
        "open",
        CorruptLogError,
        log_name(0),
    ),
    Case(
        "commit-cdc-not-json",
        "plain",
        then(drop_crc, lambda root: append_text(root, 1, '{"cdc": {"path": "x", ')),
        "open",
        CorruptLogError,
        log_name(1),
    ),
    Case("commit-duplicate-add", "plain", lambda root: duplicate(root, 1, "add"), "scan", None),
    Case(
        "commit-duplicate-remove", "plain", lambda root: duplicate(root, 2, "remove"), "scan", None
    ),
    Case(
        "commit-unknown-action",
        "plain",
        lambda root: append_text(root, 1, '{"someFutureAction": {"x": 1}}'),
        "scan",
        None,
    ),
    Case(
        "commit-add-unknown-field",
        "plain",
        commit_edit(1, "add", setting(futureField={"y": 2})),
        "scan",
        None,
    ),
    Case(
        "write-over-truncated-commit",
        "plain",
        then(drop_crc, truncate(C2, 0.5)),
        "write",
        CorruptLogError,
        log_name(2),
    ),
    Case(
        "write-over-garbage-checkpoint",
        "checkpointed",
        replace_bytes(CP2, b"garbage"),
        "write",
        CorruptLogError,
        log_name(2, "checkpoint.parquet"),
    ),
    Case(
        "write-over-unknown-reader-feature",
        "plain",
        protocol(
            minReaderVersion=3,
            minWriterVersion=7,
            readerFeatures=["noSuchFeature"],
            writerFeatures=["noSuchFeature"],
        ),
        "write",
        UnsupportedFeatureError,
        "noSuchFeature",
    ),
    # the version sequence
    Case(
        "missing-middle-version",
        "plain",
        then(drop_crc, remove(C1)),
        "open",
        NonContiguousLogError,
        "commit 1 is missing",
    ),
    Case(
        "missing-version-0",
        "plain",
        then(drop_crc, remove(C0)),
        "open",
        NonContiguousLogError,
        "the oldest commit is 1",
    ),
    Case(
        "version-gap-after-checkpoint",
        "checkpointed",
        lambda root: (root / C3).rename(root / LOG / log_name(4)),
        "open",
        NonContiguousLogError,
        "commit 3 is missing",
    ),
    Case(
        "commit-misnamed",
        "plain",
        then(drop_crc, lambda root: (root / C1).rename(root / LOG / "1.json")),
        "open",
        NonContiguousLogError,
        "commit 1 is missing",
    ),
    Case(
        "all-commits-gone",
        "plain",
        lambda root: [p.unlink() for p in (root / LOG).iterdir()],
        "open",
        TableNotFoundError,
        "no commit or checkpoint",
    ),
    # checkpoints
    Case(
        "checkpoint-garbage",
        "checkpointed",
        replace_bytes(CP2, b"PAR1 this is no parquet PAR1"),
        "open",
        CorruptLogError,
        log_name(2, "checkpoint.parquet"),
    ),
    Case(
        "checkpoint-truncated",
        "checkpointed",
        truncate(CP2, 0.6),
        "open",
        CorruptLogError,
        log_name(2, "checkpoint.parquet"),
    ),
    Case(
        "checkpoint-empty",
        "checkpointed",
        replace_bytes(CP2, b""),
        "open",
        CorruptLogError,
        log_name(2, "checkpoint.parquet"),
    ),
    Case(
        "checkpoint-without-add-column",
        "checkpointed",
        no_checkpoint_column("add"),
        "files",
        CorruptLogError,
        log_name(2, "checkpoint.parquet"),
    ),
    Case(
        "checkpoint-without-protocol-column",
        "checkpointed",
        no_checkpoint_column("protocol"),
        "open",
        InvalidTableError,
        f"{CP2_NAME} and the commits after it",
    ),
    Case(
        "checkpoint-without-metadata-column",
        "checkpointed",
        no_checkpoint_column("metaData"),
        "open",
        InvalidTableError,
        f"{CP2_NAME} and the commits after it",
    ),
    Case(
        "multipart-checkpoint-missing-part",
        "multipart",
        lambda root: checkpoint_parts(root)[1].unlink(),
        "open",
        NonContiguousLogError,
        "versions 0 to 2 are missing",
    ),
    Case(
        "multipart-checkpoint-garbage-part",
        "multipart",
        lambda root: checkpoint_parts(root)[1].write_bytes(b"garbage"),
        "open",
        CorruptLogError,
        "checkpoint.0000000002.0000000004.parquet",
    ),
    # _last_checkpoint: a hint only; every bad one falls back to listing
    Case(
        "last-checkpoint-empty",
        "checkpointed",
        lambda root: last_checkpoint(root, ""),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-not-json",
        "checkpointed",
        lambda root: last_checkpoint(root, "{version: 2"),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-wrong-checksum",
        "checkpointed",
        lambda root: last_checkpoint(root, {"version": 2, "size": 9, "checksum": "0" * 32}),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-wrong-size",
        "checkpointed",
        lambda root: last_checkpoint(root, {"version": 2, "size": 123456}),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-wrong-parts",
        "checkpointed",
        lambda root: last_checkpoint(root, {"version": 2, "size": 9, "parts": 7}),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-million-parts",
        "checkpointed",
        lambda root: last_checkpoint(root, {"version": 2, "size": 9, "parts": 1_000_000}),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-missing-checkpoint",
        "checkpointed",
        lambda root: last_checkpoint(root, {"version": 1, "size": 9}),
        "scan",
        None,
    ),
    Case(
        "last-checkpoint-future-version",
        "checkpointed",
        lambda root: last_checkpoint(root, {"version": 99, "size": 9}),
        "scan",
        None,
    ),
    # deletion vectors
    Case(
        "dv-bad-magic",
        "plain",
        dv_damage(flip_byte(1)),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-bad-checksum",
        "plain",
        dv_damage(flip_byte(-1)),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-bad-bitmap",
        "plain",
        dv_damage(lambda data: data[:9] + b"\xff" * (len(data) - 9)),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-file-truncated",
        "plain",
        dv_damage(lambda data: data[:5]),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-file-missing",
        "plain",
        lambda root: dv_files(root)[0].unlink(),
        "scan",
        ObjectNotFoundError,
        "deletion_vector_",
    ),
    Case(
        "dv-wrong-size",
        "plain",
        dv_descriptor_damage(lambda d: {"sizeInBytes": int(d["sizeInBytes"]) + 7}),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-size-2-gib",
        "plain",
        dv_descriptor_damage(lambda d: {"sizeInBytes": 2**31 - 1}),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-negative-size",
        "plain",
        dv_descriptor_damage(lambda d: {"sizeInBytes": -4}),
        "scan",
        CorruptDeletionVectorError,
        "deletion vector of data file",
    ),
    Case(
        "dv-offset-beyond-file",
        "plain",
        dv_descriptor_damage(lambda d: {"offset": 1_000_000}),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-negative-offset",
        "plain",
        dv_descriptor_damage(lambda d: {"offset": -1}),
        "scan",
        CorruptDeletionVectorError,
        "deletion vector of data file",
    ),
    Case(
        "dv-cardinality-mismatch",
        "plain",
        dv_descriptor_damage(lambda d: {"cardinality": 2}),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-cardinality-2-pow-40",
        "plain",
        dv_descriptor_damage(lambda d: {"cardinality": 2**40}),
        "scan",
        CorruptDeletionVectorError,
        "deletion_vector_",
    ),
    Case(
        "dv-unknown-storage-type",
        "plain",
        dv_descriptor_damage(lambda d: {"storageType": "x"}),
        "scan",
        CorruptDeletionVectorError,
        "deletion vector of data file",
    ),
    Case(
        "dv-inline-not-z85",
        "plain",
        dv_descriptor_damage(inline_dv("~~~~~~~~~~", 1)),
        "scan",
        CorruptDeletionVectorError,
        "deletion vector of data file",
    ),
    Case(
        "dv-inline-bad-bitmap",
        "plain",
        dv_descriptor_damage(inline_dv("0000000000", 1)),
        "scan",
        CorruptDeletionVectorError,
        "deletion vector of data file",
    ),
    # protocol and features
    Case(
        "unknown-reader-feature",
        "plain",
        protocol(
            minReaderVersion=3,
            minWriterVersion=7,
            readerFeatures=["noSuchFeature"],
            writerFeatures=["noSuchFeature"],
        ),
        "open",
        UnsupportedFeatureError,
        "noSuchFeature",
    ),
    Case(
        "unknown-writer-feature",
        "plain",
        protocol(minReaderVersion=1, minWriterVersion=7, writerFeatures=["noSuchWriterFeature"]),
        "write",
        UnsupportedFeatureError,
        "noSuchWriterFeature",
    ),
    Case(
        "reader-version-too-new",
        "plain",
        protocol(minReaderVersion=9, minWriterVersion=7),
        "open",
        UnsupportedProtocolVersionError,
        "reader protocol version 9",
    ),
    # schema and partition values
    Case(
        "schema-not-json",
        "plain",
        metadata_edit(schema_text("{not json")),
        "open",
        InvalidTableError,
        "metaData.schemaString",
    ),
    Case(
        "schema-not-a-struct",
        "plain",
        metadata_edit(schema_text('"string"')),
        "open",
        InvalidTableError,
        "metaData.schemaString",
    ),
    Case(
        "schema-unknown-type",
        "plain",
        metadata_edit(
            schema_text(
                '{"type":"struct","fields":[{"name":"id","type":"quaternion","nullable":true,"metadata":{}}]}'
            )
        ),
        "open",
        InvalidTableError,
        "quaternion",
    ),
    Case(
        "partition-value-not-int",
        "plain",
        partition_value("seven"),
        "files",
        InvalidTableError,
        "data file p=",
    ),
    Case(
        "partition-value-overflow",
        "plain",
        partition_value("99999999999"),
        "scan",
        InvalidTableError,
        "data file p=",
    ),
    # data files
    Case(
        "data-file-garbage",
        "plain",
        lambda root: next(root.rglob("*.parquet")).write_bytes(b"garbage"),
        "scan",
        CorruptDataFileError,
        ".parquet",
    ),
    Case(
        "data-file-truncated",
        "plain",
        lambda root: truncate(str(next(root.rglob("part-*.parquet")).relative_to(root)), 0.5)(root),
        "scan",
        CorruptDataFileError,
        ".parquet",
    ),
    Case(
        "data-file-missing",
        "plain",
        lambda root: next(root.rglob("part-*.parquet")).unlink(),
        "scan",
        ObjectNotFoundError,
        ".parquet",
    ),
    # version checksums
    Case(
        "crc-not-json",
        "plain",
        replace_bytes(f"{LOG}/{log_name(2, 'crc')}", b"{not json"),
        "files",
        None,
    ),
    Case(
        "crc-wrong-num-files",
        "plain",
        wrong_crc(lambda d: d.update(numFiles=99)),
        "validate",
        ChecksumMismatchError,
        log_name(2, "crc"),
    ),
    Case(
        "crc-wrong-table-size",
        "plain",
        wrong_crc(lambda d: d.update(tableSizeBytes=1)),
        "validate",
        ChecksumMismatchError,
        log_name(2, "crc"),
    ),
    # paths in the log
    Case(
        "add-path-dot-dot",
        "plain",
        commit_edit(1, "add", setting(path="../outside.parquet")),
        "scan",
        InvalidPathError,
        "../outside.parquet",
    ),
    Case(
        "add-path-escaped-dot-dot",
        "plain",
        commit_edit(1, "add", setting(path="%2e%2e/outside.parquet")),
        "scan",
        InvalidPathError,
        "%2e%2e/outside.parquet",
    ),
    Case(
        "add-path-other-scheme",
        "plain",
        commit_edit(1, "add", setting(path="s3://other/x.parquet")),
        "scan",
        InvalidPathError,
        "s3://other/x.parquet",
    ),
    Case(
        "add-path-nul",
        "plain",
        commit_edit(1, "add", setting(path="p=0/a\u0000b.parquet")),
        "scan",
        InvalidPathError,
        "p=0/a\x00b.parquet",
    ),
]


@pytest.fixture
def copy_of(bases: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    def copy(name: str) -> Path:
        root = tmp_path / name
        shutil.copytree(bases[name], root)
        return root

    return copy


def test_the_corpus_is_large_enough() -> None:
    assert len([case for case in CASES if case.error is not None]) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_damaged_table(case: Case, copy_of: Callable[[str], Path]) -> None:
    root = copy_of(case.base)
    case.damage(root)
    operation = OPERATIONS[case.operation]
    if case.error is None:
        assert sorted(deltalog.read_table(str(root)).column("id").to_pylist()) == expected_ids(
            case.base
        )
        return
    log_before = sorted(path.name for path in (root / LOG).iterdir())
    with pytest.raises(DeltaError) as raised:
        operation(root)
    assert sorted(path.name for path in (root / LOG).iterdir()) == log_before
    assert type(raised.value) is case.error, f"{type(raised.value).__name__}: {raised.value}"
    assert case.names in str(raised.value)


def expected_ids(base: str) -> list[int]:
    return BASE_IDS if base == "plain" else sorted([*BASE_IDS, 20])
