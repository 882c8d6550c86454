"""Delta types as Spark sees them, and Spark types as Arrow batches must carry them.

Three steps, each a plain function of plain values:

- :func:`spark_schema` reads a Delta schema (its JSON, which is Spark's ``StructType`` JSON;
  spec "Schema Serialization Format") into the ``StructType`` a Spark read returns: field
  metadata dropped (column mapping ids, type changes, comments), ``void`` columns dropped as
  the scan drops them.
- :func:`arrow_schema` gives the Arrow schema pyspark checks every batch of a Python data
  source against (pyspark >= 4.2 compares them with ``pyarrow.Schema.equals``): ``string`` and
  ``binary`` (not the large kinds), ``timestamp[us, tz=UTC]`` for ``timestamp``,
  ``timestamp[us]`` for ``timestamp_ntz``, ``decimal128``, lists of ``element``, maps of
  ``entries: struct<key not null, value>``, nullability as declared.
- :func:`conform_batch` turns a batch of a deltalog scan into exactly that schema: struct
  fields matched by name, lists and maps rebuilt around their converted children, leaves cast.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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

from ..exceptions import InvalidArgumentError, UnsupportedFeatureError

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "arrow_schema",
    "arrow_type",
    "conform_batch",
    "spark_schema",
    "spark_type",
]

_PRIMITIVES: dict[str, DataType] = {
    "string": StringType(),
    "long": LongType(),
    "integer": IntegerType(),
    "short": ShortType(),
    "byte": ByteType(),
    "float": FloatType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "binary": BinaryType(),
    "date": DateType(),
    "timestamp": TimestampType(),
    "timestamp_ntz": TimestampNTZType(),
    "variant": VariantType(),
    "void": NullType(),
    "null": NullType(),
}


def spark_schema(schema_json: str) -> StructType:
    """The Spark schema of a Delta schema (``Snapshot.schema.json()``), without field metadata
    and without ``void`` columns (top-level or nested)."""
    parsed = json.loads(schema_json)
    if not isinstance(parsed, Mapping) or parsed.get("type") != "struct":
        raise InvalidArgumentError(f"a Delta schema is a struct type, got {schema_json[:200]!r}")
    struct = spark_type(parsed, "")
    assert isinstance(struct, StructType)
    return struct


def spark_struct(fields: Sequence[Mapping[str, Any]]) -> StructType:
    """The Spark schema of a Delta schema's top-level fields (``Snapshot.schema.fields()``),
    as :func:`spark_schema`."""
    struct = spark_type({"type": "struct", "fields": list(fields)}, "")
    assert isinstance(struct, StructType)
    return struct


def spark_type(delta_type: Any, path: str) -> DataType:
    """The Spark type of one Delta type (a name such as ``"long"`` or a nested type object);
    ``path`` names the column in errors. Struct fields of type ``void`` are dropped."""
    if isinstance(delta_type, str):
        return _primitive(delta_type, path)
    if not isinstance(delta_type, Mapping):
        raise InvalidArgumentError(f"column `{path}`: {delta_type!r} is not a Delta type")
    kind = delta_type.get("type")
    if kind == "struct":
        fields = []
        for field in delta_type.get("fields") or []:
            name = str(field.get("name"))
            field_path = f"{path}.{name}" if path else name
            field_type = spark_type(field.get("type"), field_path)
            if isinstance(field_type, NullType):
                continue
            fields.append(StructField(name, field_type, bool(field.get("nullable", True))))
        return StructType(fields)
    if kind == "array":
        element = spark_type(delta_type.get("elementType"), f"{path}.element")
        return ArrayType(element, bool(delta_type.get("containsNull", True)))
    if kind == "map":
        key = spark_type(delta_type.get("keyType"), f"{path}.key")
        value = spark_type(delta_type.get("valueType"), f"{path}.value")
        return MapType(key, value, bool(delta_type.get("valueContainsNull", True)))
    raise InvalidArgumentError(f"column `{path}`: unknown Delta type {delta_type!r}")


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
    raise UnsupportedFeatureError(f"Spark type {data_type.simpleString()} has no Arrow form")


def conform_batch(batch: pyarrow.RecordBatch, target: pyarrow.Schema) -> pyarrow.RecordBatch:
    """``batch`` with exactly the schema ``target``: column ``i`` of the batch becomes column
    ``i`` of ``target`` (renamed), converted as :func:`_conform` says.

    A non-nullable target column that holds nulls is an :class:`InvalidArgumentError`.
    """
    import pyarrow as pa

    if batch.schema.equals(target):
        return batch
    if batch.num_columns != len(target):
        raise InvalidArgumentError(
            f"the scan returned {batch.num_columns} columns, Spark asked for {len(target)}: "
            f"{batch.schema.names} against {target.names}"
        )
    columns = []
    for column, field in zip(batch.columns, target, strict=True):
        converted = _conform(column, field.type, field.name)
        if not field.nullable and converted.null_count:
            raise InvalidArgumentError(
                f"column `{field.name}` is declared NOT NULL but holds {converted.null_count} nulls"
            )
        columns.append(converted)
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _conform(array: pyarrow.Array, target: pyarrow.DataType, path: str) -> pyarrow.Array:
    """``array`` as type ``target``: structs rebuilt from their fields found by name (exactly,
    else ignoring ASCII case), lists and maps from their converted children, anything else
    cast (lossy timestamp truncation allowed, as Spark keeps microseconds)."""
    import pyarrow as pa

    if array.type.equals(target):
        return array
    source = array.type
    if pa.types.is_struct(target) and pa.types.is_struct(source):
        return _conform_struct(array, target, path)
    if pa.types.is_list(target) and _is_list_like(source):
        return _conform_list(array, target, path)
    if pa.types.is_map(target) and pa.types.is_map(source):
        return _conform_map(array, target, path)
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(source):
        return array.cast(target, safe=False)
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise InvalidArgumentError(
            f"column `{path}`: cannot convert {source} to {target}: {error}"
        ) from None


def _conform_struct(array: Any, target: Any, path: str) -> Any:
    import pyarrow as pa

    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    children = []
    for i in range(target.num_fields):
        field = target.field(i)
        index = _find_name(names, field.name)
        if index is None:
            raise InvalidArgumentError(
                f"struct `{path}` has no field `{field.name}` (it has {', '.join(names)})"
            )
        children.append(_conform(array.field(index), field.type, f"{path}.{field.name}"))
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _conform_list(array: Any, target: Any, path: str) -> Any:
    import pyarrow as pa

    if pa.types.is_large_list(array.type):
        array = array.cast(pa.list_(array.type.value_field))
    values = _conform(array.values, target.value_type, f"{path}.element")
    mask = array.is_null() if array.null_count else None
    return pa.ListArray.from_arrays(array.offsets, values, type=target, mask=mask)


def _conform_map(array: Any, target: Any, path: str) -> Any:
    import pyarrow as pa

    keys = _conform(array.keys, target.key_type, f"{path}.key")
    items = _conform(array.items, target.item_type, f"{path}.value")
    mask = array.is_null() if array.null_count else None
    return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)


def _is_list_like(data_type: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_list(data_type) or pa.types.is_large_list(data_type))


def _find_name(names: Sequence[str], wanted: str) -> int | None:
    if wanted in names:
        return names.index(wanted)
    folded = [name.lower() for name in names]
    lowered = wanted.lower()
    return folded.index(lowered) if folded.count(lowered) == 1 else None


def _primitive(name: str, path: str) -> DataType:
    known = _PRIMITIVES.get(name)
    if known is not None:
        return known
    if name.startswith("decimal(") and name.endswith(")"):
        precision, _, scale = name[len("decimal(") : -1].partition(",")
        try:
            return DecimalType(int(precision), int(scale))
        except ValueError:
            pass
    raise UnsupportedFeatureError(f"column `{path}` has type {name!r}, which Spark cannot read")


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
