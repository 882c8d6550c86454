"""Arrow results: :class:`ArrowStream` (record batches) and :class:`Schema`.

Both speak the Arrow PyCapsule interface, so any Arrow library takes them without a copy
(``pyarrow.table(stream)``, ``polars.DataFrame(stream)``, ``pyarrow.schema(schema)``), and
deltalog itself never needs pyarrow. The ``to_*`` methods import their library when called.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, final

from . import _core
from ._frozen import Frozen

if TYPE_CHECKING:
    import pandas
    import polars
    import pyarrow

__all__ = ["ArrowStream", "Schema"]


@final
class ArrowStream(Frozen):
    """Arrow record batches sharing one schema, as returned by ``files()``, ``history()``, ...

    The batches are held in memory, or (``changes()``) read as they are consumed; every
    export (``__arrow_c_stream__``) starts a new stream over them, so the object can be read
    any number of times.
    """

    __slots__ = ("_raw",)
    _wraps: ClassVar[type] = _core.RawArrowStream

    _raw: _core.RawArrowStream

    def __init__(self, raw: _core.RawArrowStream) -> None:
        object.__setattr__(self, "_raw", raw)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """An ``ArrowArrayStream`` PyCapsule (Arrow PyCapsule interface)."""
        return self._raw.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """The schema of the batches as an ``ArrowSchema`` PyCapsule."""
        return self._raw.__arrow_c_schema__()

    @property
    def num_rows(self) -> int:
        """The number of rows."""
        return self._raw.num_rows

    @property
    def column_names(self) -> list[str]:
        """The names of the top-level columns."""
        return self._raw.column_names

    def to_pyarrow(self) -> pyarrow.Table:
        """The rows as a ``pyarrow.Table`` (needs pyarrow)."""
        return _import_pyarrow().table(self)

    def to_reader(self) -> pyarrow.RecordBatchReader:
        """The batches as a ``pyarrow.RecordBatchReader`` (needs pyarrow)."""
        return _import_pyarrow().RecordBatchReader.from_stream(self)

    def to_polars(self) -> polars.DataFrame:
        """The rows as a ``polars.DataFrame`` (needs polars)."""
        try:
            import polars
        except ImportError:
            raise ImportError(
                "ArrowStream.to_polars() needs polars: pip install 'deltalog[polars]'"
            ) from None
        return polars.DataFrame(self)

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a ``pandas.DataFrame`` (needs pyarrow and pandas)."""
        return self.to_pyarrow().to_pandas()

    def to_pylist(self) -> list[dict[str, Any]]:
        """The rows as dictionaries of Python values (needs pyarrow)."""
        rows: list[dict[str, Any]] = self.to_pyarrow().to_pylist()
        return rows

    def to_json_rows(self) -> list[dict[str, Any]]:
        """The rows as dictionaries of JSON values, without any Arrow library.

        Timestamps are ISO-8601 strings, maps are objects; nulls are ``None``.
        """
        return [json.loads(line) for line in self._raw.to_json_rows().splitlines() if line]

    def __repr__(self) -> str:
        columns = ", ".join(self.column_names)
        return f"ArrowStream({self.num_rows} rows; {columns})"


@final
class Schema(Frozen):
    """A table's logical schema.

    ``__arrow_c_schema__`` gives it to any Arrow library (``pyarrow.schema(s)``);
    :meth:`json` gives the Delta schema (spec "Schema Serialization Format").
    """

    __slots__ = ("_raw",)
    _wraps: ClassVar[type] = _core.RawSchema

    _raw: _core.RawSchema

    def __init__(self, raw: _core.RawSchema) -> None:
        object.__setattr__(self, "_raw", raw)

    def __arrow_c_schema__(self) -> object:
        """The Arrow schema (logical column names) as an ``ArrowSchema`` PyCapsule."""
        return self._raw.__arrow_c_schema__()

    @property
    def names(self) -> list[str]:
        """The names of the top-level columns, in order."""
        return self._raw.names

    def json(self) -> str:
        """The Delta schema as JSON text."""
        return self._raw.json()

    def fields(self) -> list[dict[str, Any]]:
        """The top-level fields of the Delta schema, each with ``name``, ``type``,
        ``nullable`` and ``metadata``."""
        return self._raw.fields()

    def to_pyarrow(self) -> pyarrow.Schema:
        """The Arrow schema as a ``pyarrow.Schema`` (needs pyarrow)."""
        return _import_pyarrow().schema(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(tuple(self.names))

    def __repr__(self) -> str:
        columns = ", ".join(
            f"{field['name']}: {type_name(field['type'])}" for field in self.fields()
        )
        return f"Schema({columns})"


def type_name(delta_type: Any) -> str:
    """A short name for a Delta type: ``long``, ``array<string>``, ``struct<a: int>``, ..."""
    if isinstance(delta_type, str):
        return delta_type
    kind = delta_type.get("type")
    if kind == "array":
        return f"array<{type_name(delta_type.get('elementType'))}>"
    if kind == "map":
        key = type_name(delta_type.get("keyType"))
        value = type_name(delta_type.get("valueType"))
        return f"map<{key}, {value}>"
    if kind == "struct":
        inner = ", ".join(
            f"{field.get('name')}: {type_name(field.get('type'))}"
            for field in delta_type.get("fields", [])
        )
        return f"struct<{inner}>"
    return str(kind)


def _import_pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError(
            "this conversion needs pyarrow: pip install 'deltalog[pyarrow]'"
        ) from None
    return pyarrow
