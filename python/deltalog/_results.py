"""Values the table API returns, and the types the verb modules share with ``_table.py``:
:class:`Protocol`, :class:`Metadata`, ``ArrowData`` and ``SchemaLike``. Every committing verb
of the extension returns a ``_core.RawCommit``, which ``_table.py`` wraps into a
:class:`CommitResult`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import ClassVar, TypeAlias

from . import _core
from ._time import from_epoch_ms

__all__ = ["ArrowData", "Metadata", "Protocol", "SchemaLike"]

#: Arrow data to write: any object with ``__arrow_c_stream__`` or ``__arrow_c_array__``
#: (a pyarrow ``Table``, ``RecordBatch`` or ``RecordBatchReader``, a polars ``DataFrame``).
ArrowData: TypeAlias = object
#: A table schema: an object with ``__arrow_c_schema__`` or Delta schema JSON text.
SchemaLike: TypeAlias = object


@dataclass(frozen=True)
class Protocol:
    """The ``protocol`` action: what a reader and a writer must support."""

    _wraps: ClassVar[type] = _core.RawProtocol

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    """The reader features (reader version 3), or ``None`` for older protocols."""
    writer_features: tuple[str, ...] | None = None
    """The writer features (writer version 7), or ``None`` for older protocols."""

    @classmethod
    def _from_raw(cls, raw: _core.RawProtocol) -> Protocol:
        return cls(
            min_reader_version=raw.min_reader_version,
            min_writer_version=raw.min_writer_version,
            reader_features=_optional_tuple(raw.reader_features),
            writer_features=_optional_tuple(raw.writer_features),
        )


@dataclass(frozen=True)
class Metadata:
    """The ``metaData`` action: the table's identity, partitioning and configuration."""

    _wraps: ClassVar[type] = _core.RawMetadata

    id: str
    name: str | None
    description: str | None
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str] = field(hash=False)
    """The table properties (``delta.*`` and user keys); read-only."""
    created_time: datetime | None
    """When the table was created (UTC), if the writer recorded it."""
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict, hash=False)
    schema_string: str | None = None
    """The Delta schema as written in the log (see :attr:`Snapshot.schema`)."""

    @classmethod
    def _from_raw(cls, raw: _core.RawMetadata) -> Metadata:
        created_ms = raw.created_time
        return cls(
            id=raw.id,
            name=raw.name,
            description=raw.description,
            partition_columns=tuple(raw.partition_columns),
            configuration=MappingProxyType(raw.configuration),
            created_time=None if created_ms is None else from_epoch_ms(created_ms),
            format_provider=raw.format_provider,
            format_options=MappingProxyType(raw.format_options),
            schema_string=raw.schema_string,
        )


def _optional_tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)
