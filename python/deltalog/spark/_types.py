"""Delta types as Spark sees them, and Spark types as Arrow batches must carry them.

- :func:`spark_schema` gives the ``StructType`` a Spark read of a Delta schema returns. The
  core reads the Delta schema and leaves out what a read does not show (field metadata such
  as column mapping ids, type changes and comments; ``void`` columns at every depth); the
  result is Spark's own ``StructType`` JSON, which pyspark parses.
- :func:`arrow_schema` gives the Arrow schema pyspark checks every batch of a Python data
  source against (pyspark >= 4.2 compares them with ``pyarrow.Schema.equals``): ``string`` and
  ``binary`` (not the large kinds), ``timestamp[us, tz=UTC]`` for ``timestamp``,
  ``timestamp[us]`` for ``timestamp_ntz``, ``decimal128``, lists of ``element``, maps of
  ``entries: struct<key not null, value>``, nullability as declared, and for ``geometry`` and
  ``geography`` pyspark's ``struct<srid: int32 not null, wkb: binary not null>`` (the ``wkb``
  field marked ``geometry`` or ``geography`` and carrying the SRID, which the core puts in
  every row of the WKB column). Readers ask deltalog's
  streams for their batches in it (``pyarrow.RecordBatchReader.from_stream(task,
  schema=...)``, the Arrow PyCapsule ``requested_schema``); the core converts them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from .. import _core
from ..exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "arrow_schema",
    "arrow_type",
    "spark_schema",
]


def spark_schema(schema_json: str) -> StructType:
    """The Spark schema of a Delta schema (``Snapshot.schema.json()``), without field metadata
    and without ``void`` columns (top-level or nested)."""
    return StructType.fromJson(json.loads(_core.read_schema_json(schema_json)))


def arrow_schema(schema: StructType) -> pyarrow.Schema:
    """The Arrow schema pyspark expects batches of ``schema`` in (``timestamp`` in UTC)."""
    import pyarrow as pa

    return pa.schema([_arrow_field(field) for field in schema.fields])


def arrow_type(data_type: DataType) -> pyarrow.DataType:
    """The Arrow type pyspark uses for one Spark type."""
    import pyarrow as pa

    simple = _simple_arrow_type(data_type)
    if simple is not None:
        return simple
    if isinstance(data_type, DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, ArrayType):
        return pa.list_(
            pa.field("element", arrow_type(data_type.elementType), data_type.containsNull)
        )
    if isinstance(data_type, MapType):
        return pa.map_(
            pa.field("key", arrow_type(data_type.keyType), False),
            pa.field("value", arrow_type(data_type.valueType), data_type.valueContainsNull),
        )
    if isinstance(data_type, StructType):
        return pa.struct([_arrow_field(field) for field in data_type.fields])
    if isinstance(data_type, VariantType):
        return pa.struct(
            [
                pa.field("value", pa.binary(), False),
                pa.field("metadata", pa.binary(), False, metadata={b"variant": b"true"}),
            ]
        )
    if isinstance(data_type, (GeometryType, GeographyType)):
        kind = b"geometry" if isinstance(data_type, GeometryType) else b"geography"
        marker = {kind: b"true", b"srid": str(data_type.srid).encode()}
        return pa.struct(
            [
                pa.field("srid", pa.int32(), False),
                pa.field("wkb", pa.binary(), False, metadata=marker),
            ]
        )
    raise UnsupportedFeatureError(f"Spark type {data_type.simpleString()} has no Arrow form")


def _arrow_field(field: StructField) -> pyarrow.Field:
    import pyarrow as pa

    return pa.field(field.name, arrow_type(field.dataType), field.nullable)


def _simple_arrow_type(data_type: DataType) -> pyarrow.DataType | None:
    import pyarrow as pa

    simple: dict[type[DataType], Any] = {
        BooleanType: pa.bool_(),
        ByteType: pa.int8(),
        ShortType: pa.int16(),
        IntegerType: pa.int32(),
        LongType: pa.int64(),
        FloatType: pa.float32(),
        DoubleType: pa.float64(),
        StringType: pa.string(),
        BinaryType: pa.binary(),
        DateType: pa.date32(),
        TimestampType: pa.timestamp("us", tz="UTC"),
        TimestampNTZType: pa.timestamp("us"),
        NullType: pa.null(),
    }
    result: pyarrow.DataType | None = simple.get(type(data_type))
    return result
