"""Values the table API returns, and the types the verb modules share with ``_table.py``:
:class:`Protocol`, :class:`Metadata`, the commit tuple every committing verb returns (which
``_table.py`` wraps into a :class:`CommitResult`), ``ArrowData`` and ``SchemaLike``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TypeAlias

from . import _core
from ._maintenance_log import _PostCommitTuple
from ._time import from_epoch_ms

__all__ = ["ArrowData", "Metadata", "Protocol", "SchemaLike"]

#: Arrow data to write: any object with ``__arrow_c_stream__`` or ``__arrow_c_array__``
#: (a pyarrow ``Table``, ``RecordBatch`` or ``RecordBatchReader``, a polars ``DataFrame``).
ArrowData: TypeAlias = object
#: A table schema: an object with ``__arrow_c_schema__`` or Delta schema JSON text.
SchemaLike: TypeAlias = object
#: A commit as the extension returns it: version, committed, retries, snapshot, metrics,
#: post-commit.
_CommitTuple: TypeAlias = tuple[
    int, bool, int, "_core.RawSnapshot | None", dict[str, int], _PostCommitTuple
]

#: ``RawSnapshot.protocol()``: min reader and writer versions, reader and writer features.
_ProtocolTuple: TypeAlias = tuple[int, int, list[str] | None, list[str] | None]
#: ``RawSnapshot.metadata()``: id, name, description, partition columns, configuration,
#: created time (ms), format provider, format options, schema string.
_MetadataTuple: TypeAlias = tuple[
    str,
    str | None,
    str | None,
    list[str],
    dict[str, str],
    int | None,
    str,
    dict[str, str],
    str | None,
]


@dataclass(frozen=True)
class Protocol:
    """The ``protocol`` action: what a reader and a writer must support."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    """The reader features (reader version 3), or ``None`` for older protocols."""
    writer_features: tuple[str, ...] | None = None
    """The writer features (writer version 7), or ``None`` for older protocols."""

    @classmethod
    def _from_raw(cls, raw: _ProtocolTuple) -> Protocol:
        min_reader_version, min_writer_version, reader_features, writer_features = raw
        return cls(
            min_reader_version=min_reader_version,
            min_writer_version=min_writer_version,
            reader_features=_optional_tuple(reader_features),
            writer_features=_optional_tuple(writer_features),
        )


@dataclass(frozen=True)
class Metadata:
    """The ``metaData`` action: the table's identity, partitioning and configuration."""

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
    def _from_raw(cls, raw: _MetadataTuple) -> Metadata:
        (
            id,
            name,
            description,
            partitioning,
            configuration,
            created_ms,
            provider,
            options,
            schema,
        ) = raw
        return cls(
            id=id,
            name=name,
            description=description,
            partition_columns=tuple(partitioning),
            configuration=MappingProxyType(configuration),
            created_time=None if created_ms is None else from_epoch_ms(created_ms),
            format_provider=provider,
            format_options=MappingProxyType(options),
            schema_string=schema,
        )


def _optional_tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)
