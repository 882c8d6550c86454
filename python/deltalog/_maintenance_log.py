"""Checkpoints, version checksums, log cleanup and log compaction.

:meth:`DeltaTable.checkpoint`, :meth:`DeltaTable.cleanup_metadata`,
:meth:`DeltaTable.compact_logs`, :meth:`Snapshot.version_checksum` and the post-commit report
of every :class:`CommitResult` (:class:`PostCommitResult`) are built here on ``deltalog._core``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from . import _core

__all__ = [
    "CheckpointInfo",
    "CleanupResult",
    "FileSizeHistogram",
    "PostCommitError",
    "PostCommitResult",
    "VersionChecksum",
]

_CheckpointTuple: TypeAlias = tuple[int, str, list[str], list[str], int, int, int, bool]
_CleanupTuple: TypeAlias = tuple[int | None, list[str], list[str], str | None]
_PostCommitTuple: TypeAlias = tuple[
    str | None, _CheckpointTuple | None, _CleanupTuple | None, list[tuple[str, str]]
]


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint written, or with ``dry_run`` planned."""

    version: int
    """The version checkpointed."""
    kind: str
    """``"classic"``, ``"multi-part"`` or ``"v2"``."""
    files: tuple[str, ...]
    """The checkpoint files (URLs): one, every part, or the V2 manifest (followed by its
    classic-named copy when ``classic_compat`` asked for one)."""
    sidecars: tuple[str, ...]
    """The sidecar files of a V2 checkpoint (URLs)."""
    num_actions: int
    """Actions in the checkpoint, sidecars included."""
    num_add_files: int
    """``add`` actions in the checkpoint."""
    size_in_bytes: int
    """Bytes of every file written; 0 for a dry run (unknown before writing)."""
    dry_run: bool = False
    """True when nothing was written: ``files`` and ``sidecars`` name what the write would
    produce (a V2 checkpoint's with UUIDs drawn for the plan; the write draws fresh ones)."""

    @classmethod
    def _from_tuple(cls, raw: _CheckpointTuple) -> CheckpointInfo:
        version, kind, files, sidecars, actions, adds, size, dry_run = raw
        return cls(version, kind, tuple(files), tuple(sidecars), actions, adds, size, dry_run)


@dataclass(frozen=True)
class CleanupResult:
    """What a metadata cleanup deleted."""

    oldest_kept_version: int | None
    """The oldest version still readable (``None``: nothing was old enough to delete)."""
    deleted: tuple[str, ...]
    """The log files deleted (URLs)."""
    deleted_sidecars: tuple[str, ...]
    """The sidecar files deleted (URLs)."""
    compat_checkpoint: str | None = None
    """The classic-named copy of the newest V2 checkpoint, written before anything was
    deleted so that readers knowing only classic names still find a checkpoint (URL)."""

    @classmethod
    def _from_tuple(cls, raw: _CleanupTuple) -> CleanupResult:
        oldest, deleted, sidecars, compat = raw
        return cls(oldest, tuple(deleted), tuple(sidecars), compat)


@dataclass(frozen=True)
class PostCommitError:
    """A post-commit step that failed; the commit stands."""

    step: str
    """``"checksum"``, ``"checkpoint"`` or ``"log cleanup"``."""
    message: str
    """The error, naming the file and the problem."""


@dataclass(frozen=True)
class PostCommitResult:
    """What ran after a commit landed."""

    checksum: str | None = None
    """The ``.crc`` file written (URL), if any."""
    checkpoint: CheckpointInfo | None = None
    """The checkpoint written, when one was due (every ``delta.checkpointInterval``)."""
    cleanup: CleanupResult | None = None
    """What log cleanup deleted, when it ran (after a checkpoint)."""
    errors: tuple[PostCommitError, ...] = ()
    """The steps that failed."""

    @classmethod
    def _from_tuple(cls, raw: _PostCommitTuple) -> PostCommitResult:
        checksum, checkpoint, cleanup, errors = raw
        return cls(
            checksum=checksum,
            checkpoint=None if checkpoint is None else CheckpointInfo._from_tuple(checkpoint),
            cleanup=None if cleanup is None else CleanupResult._from_tuple(cleanup),
            errors=tuple(PostCommitError(step, message) for step, message in errors),
        )


@dataclass(frozen=True)
class FileSizeHistogram:
    """File counts and bytes per size bin (bin ``i``: from boundary ``i`` to the next)."""

    sorted_bin_boundaries: tuple[int, ...]
    file_counts: tuple[int, ...]
    total_bytes: tuple[int, ...]


@dataclass(frozen=True)
class VersionChecksum:
    """The ``.crc`` content of a version (Delta on Spark's ``VersionChecksum``)."""

    txn_id: str | None
    table_size_bytes: int
    num_files: int
    num_metadata: int
    num_protocol: int
    in_commit_timestamp: int | None
    set_transactions: dict[str, int] | None
    """App id to version, when the checksum lists them."""
    domain_metadata: dict[str, str] | None
    """Domain to configuration, when the checksum lists them."""
    histogram: FileSizeHistogram | None
    num_deleted_records: int | None
    num_deletion_vectors: int | None
    json: str
    """The JSON line as the ``.crc`` file holds it (metadata and protocol included)."""
    stored: bool
    """True when read from the version's ``.crc`` file, false when computed from its state."""


def checkpoint(
    table: _core.RawDeltaTable,
    version: int | None,
    part_size: int | None,
    v2_format: Literal["parquet", "json"] | None,
    v2_sidecars: bool,
    classic_compat: bool,
    dry_run: bool = False,
) -> CheckpointInfo:
    raw = _core.write_checkpoint(
        table, version, part_size, v2_format, v2_sidecars, classic_compat, bool(dry_run)
    )
    return CheckpointInfo._from_tuple(raw)


def cleanup_metadata(table: _core.RawDeltaTable, dry_run: bool = False) -> CleanupResult:
    return CleanupResult._from_tuple(_core.cleanup_metadata(table, dry_run))


def compact_logs(table: _core.RawDeltaTable, start_version: int, end_version: int) -> str:
    return _core.compact_logs(table, start_version, end_version)


def version_checksum(snapshot: _core.RawSnapshot) -> VersionChecksum:
    counts, state, text, stored = _core.version_checksum(snapshot)
    txn_id, size, files, metadata, protocol, ict = counts
    txns, domains, histogram, deleted, vectors = state
    return VersionChecksum(
        txn_id=txn_id,
        table_size_bytes=size,
        num_files=files,
        num_metadata=metadata,
        num_protocol=protocol,
        in_commit_timestamp=ict,
        set_transactions=None if txns is None else {app: v for app, v, _ in txns},
        domain_metadata=None if domains is None else dict(domains),
        histogram=None
        if histogram is None
        else FileSizeHistogram(*(tuple(values) for values in histogram)),
        num_deleted_records=deleted,
        num_deletion_vectors=vectors,
        json=text,
        stored=stored,
    )


def validate_checksum(snapshot: _core.RawSnapshot) -> bool:
    return _core.validate_checksum(snapshot)
