"""Checkpoints, version checksums, log cleanup and log compaction.

:meth:`DeltaTable.checkpoint`, :meth:`DeltaTable.cleanup_metadata`,
:meth:`DeltaTable.compact_logs`, :meth:`Snapshot.version_checksum` and the post-commit report
of every :class:`CommitResult` (:class:`PostCommitResult`) are built here on ``deltalog._core``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from . import _core

__all__ = [
    "CheckpointInfo",
    "CleanupResult",
    "FileSizeHistogram",
    "PostCommitError",
    "PostCommitResult",
    "VersionChecksum",
]


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint written, or with ``dry_run`` planned."""

    _wraps: ClassVar[type] = _core.RawCheckpoint

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
    incremental_from: int | None = None
    """The version of the previous checkpoint whose rows this one carried over (written
    incrementally); ``None`` when written from the commits alone or the whole state."""

    @classmethod
    def _from_raw(cls, raw: _core.RawCheckpoint) -> CheckpointInfo:
        return cls(
            version=raw.version,
            kind=raw.kind,
            files=tuple(raw.files),
            sidecars=tuple(raw.sidecars),
            num_actions=raw.num_actions,
            num_add_files=raw.num_add_files,
            size_in_bytes=raw.size_in_bytes,
            dry_run=raw.dry_run,
            incremental_from=raw.incremental_from,
        )


@dataclass(frozen=True)
class CleanupResult:
    """What a metadata cleanup deleted."""

    _wraps: ClassVar[type] = _core.RawCleanup

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
    def _from_raw(cls, raw: _core.RawCleanup) -> CleanupResult:
        return cls(
            oldest_kept_version=raw.oldest_kept_version,
            deleted=tuple(raw.deleted),
            deleted_sidecars=tuple(raw.deleted_sidecars),
            compat_checkpoint=raw.compat_checkpoint,
        )


@dataclass(frozen=True)
class PostCommitError:
    """A post-commit step that failed; the commit stands."""

    step: str
    """``"snapshot"``, ``"checksum"``, ``"checkpoint"``, ``"log cleanup"`` or
    ``"symlink manifest"``."""
    message: str
    """The error, naming the file and the problem."""


@dataclass(frozen=True)
class PostCommitResult:
    """What ran after a commit landed."""

    _wraps: ClassVar[type] = _core.RawPostCommit

    checksum: str | None = None
    """The ``.crc`` file written (URL), if any."""
    checkpoint: CheckpointInfo | None = None
    """The checkpoint written, when one was due (every ``delta.checkpointInterval``)."""
    checkpoint_deferred: str | None = None
    """Why the checkpoint that was due was not written: it could not be written
    incrementally, and a write never waits for a checkpoint of the whole table
    (``DeltaTable.checkpoint()`` writes it)."""
    cleanup: CleanupResult | None = None
    """What log cleanup deleted, when it ran (after a checkpoint)."""
    errors: tuple[PostCommitError, ...] = ()
    """The steps that failed."""

    @classmethod
    def _from_raw(cls, raw: _core.RawPostCommit) -> PostCommitResult:
        checkpoint, cleanup = raw.checkpoint, raw.cleanup
        return cls(
            checksum=raw.checksum,
            checkpoint=None if checkpoint is None else CheckpointInfo._from_raw(checkpoint),
            checkpoint_deferred=raw.checkpoint_deferred,
            cleanup=None if cleanup is None else CleanupResult._from_raw(cleanup),
            errors=tuple(PostCommitError(step, message) for step, message in raw.errors),
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

    _wraps: ClassVar[type] = _core.RawVersionChecksum

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
    return CheckpointInfo._from_raw(raw)


def cleanup_metadata(table: _core.RawDeltaTable, dry_run: bool = False) -> CleanupResult:
    return CleanupResult._from_raw(_core.cleanup_metadata(table, dry_run))


def compact_logs(table: _core.RawDeltaTable, start_version: int, end_version: int) -> str:
    return _core.compact_logs(table, start_version, end_version)


def version_checksum(snapshot: _core.RawSnapshot) -> VersionChecksum:
    raw = _core.version_checksum(snapshot)
    txns, domains, histogram = raw.set_transactions, raw.domain_metadata, raw.histogram
    return VersionChecksum(
        txn_id=raw.txn_id,
        table_size_bytes=raw.table_size_bytes,
        num_files=raw.num_files,
        num_metadata=raw.num_metadata,
        num_protocol=raw.num_protocol,
        in_commit_timestamp=raw.in_commit_timestamp,
        set_transactions=None if txns is None else {app: v for app, v, _ in txns},
        domain_metadata=None if domains is None else dict(domains),
        histogram=None
        if histogram is None
        else FileSizeHistogram(*(tuple(values) for values in histogram)),
        num_deleted_records=raw.num_deleted_records,
        num_deletion_vectors=raw.num_deletion_vectors,
        json=raw.json,
        stored=raw.stored,
    )


def validate_checksum(snapshot: _core.RawSnapshot) -> bool:
    return _core.validate_checksum(snapshot)
