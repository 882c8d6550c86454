"""Row-level changes: deleting and updating the rows of a table
(:meth:`DeltaTable.delete`, :meth:`DeltaTable.update`). Each returns the extension's
``RawCommit``, which ``_table.py`` wraps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _core
from ._scan import Filter
from .exceptions import InvalidArgumentError

__all__ = ["delete_rows", "update_rows"]


def delete_rows(
    uri: str,
    storage_options: dict[str, str] | None,
    predicate: Filter = None,
    target_file_size: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> _core.RawCommit:
    """Deletes the rows of the table at ``uri`` matching ``predicate`` (see
    :meth:`DeltaTable.delete`)."""
    return _core.delete_rows(
        uri,
        predicate,
        _file_size(target_file_size),
        commit_info,
        storage_options,
    )


def update_rows(
    uri: str,
    storage_options: dict[str, str] | None,
    set: Mapping[str, str],
    predicate: Filter = None,
    target_file_size: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> _core.RawCommit:
    """Updates the rows of the table at ``uri`` matching ``predicate`` (see
    :meth:`DeltaTable.update`)."""
    if not isinstance(set, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in set.items()
    ):
        raise InvalidArgumentError("set must map column names to SQL expression text")
    return _core.update_rows(
        uri,
        list(set.items()),
        predicate,
        _file_size(target_file_size),
        commit_info,
        storage_options,
    )


def _file_size(target_file_size: int | None) -> int | None:
    if target_file_size is not None and (
        isinstance(target_file_size, bool)
        or not isinstance(target_file_size, int)
        or target_file_size <= 0
    ):
        raise InvalidArgumentError(
            f"target_file_size must be a positive int, got {target_file_size!r}"
        )
    return target_file_size
