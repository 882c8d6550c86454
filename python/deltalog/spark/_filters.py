"""Spark's pushed filters (``pyspark.sql.datasource.Filter``, pyspark >= 4.1) as deltalog
filter text.

:func:`filter_text` turns one filter into the SQL-like text ``Snapshot.scan(filter=...)``
reads, or gives ``None`` when it cannot say exactly the same thing: then Spark keeps the
filter and evaluates it itself. Accepted: comparisons, ``IN``, ``IS [NOT] NULL`` (not of a whole
struct), null-safe equality, ``NOT`` of those, and ``LIKE`` prefixes, suffixes and infixes, on
columns (nested fields too) of number, string, boolean, date, timestamp and binary types, with
a value of the column's kind. The filter classes are recognised by name, so this module
imports on pyspark 4.0, which has none.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence
from typing import Any

from pyspark.sql.types import (
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
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

__all__ = ["conjunction", "filter_text"]

_COMPARISONS = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}
_LIKE_PATTERNS = {
    "StringStartsWith": "{}%",
    "StringEndsWith": "%{}",
    "StringContains": "%{}%",
}
_NUMBERS = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType)


def filter_text(spark_filter: Any, schema: StructType) -> str | None:
    """The deltalog filter text equivalent to ``spark_filter`` over rows of ``schema``, or
    ``None`` when there is none."""
    kind = type(spark_filter).__name__
    if kind == "Not":
        return _negation(spark_filter.child, schema)
    column = _column(getattr(spark_filter, "attribute", None), schema)
    if column is None:
        return None
    name, data_type = column
    if kind in ("IsNull", "IsNotNull"):
        if isinstance(data_type, StructType):
            # deltalog's statistics skipping cannot yet test a whole struct for null.
            return None
        return f"{name} IS NULL" if kind == "IsNull" else f"{name} IS NOT NULL"
    value = getattr(spark_filter, "value", None)
    if kind in _COMPARISONS:
        literal = _literal(value, data_type)
        return None if literal is None else f"{name} {_COMPARISONS[kind]} {literal}"
    if kind == "EqualNullSafe":
        if value is None:
            return f"{name} IS NULL"
        literal = _literal(value, data_type)
        return None if literal is None else f"{name} = {literal}"
    if kind == "In":
        return _in_list(name, value, data_type)
    if kind in _LIKE_PATTERNS and isinstance(data_type, StringType) and isinstance(value, str):
        pattern = _LIKE_PATTERNS[kind].format(_escape_like(value))
        return f"{name} LIKE {_quote(pattern)}"
    return None


def conjunction(texts: Sequence[str]) -> str | None:
    """The texts joined by ``AND`` (each parenthesised), or ``None`` for none."""
    return " AND ".join(f"({text})" for text in texts) if texts else None


def _negation(child: Any, schema: StructType) -> str | None:
    """``NOT child``; null-safe equality is negated by hand, as ``NOT`` of a NULL
    comparison is NULL where Spark's ``NOT (a <=> v)`` is true."""
    if type(child).__name__ == "EqualNullSafe":
        column = _column(child.attribute, schema)
        if column is None:
            return None
        name, data_type = column
        if child.value is None:
            return f"{name} IS NOT NULL"
        literal = _literal(child.value, data_type)
        return None if literal is None else f"({name} != {literal} OR {name} IS NULL)"
    text = filter_text(child, schema)
    return None if text is None else f"NOT ({text})"


def _in_list(name: str, values: Any, data_type: DataType) -> str | None:
    if not isinstance(values, (tuple, list)) or not values:
        return None
    literals = [_literal(value, data_type) for value in values]
    if any(literal is None for literal in literals):
        return None
    return f"{name} IN ({', '.join(str(literal) for literal in literals)})"


def _column(attribute: Any, schema: StructType) -> tuple[str, DataType] | None:
    """The quoted column path and its Spark type, following struct fields; ``None`` when the
    path names no column of ``schema``."""
    if not isinstance(attribute, (tuple, list)) or not attribute:
        return None
    current: DataType = schema
    for part in attribute:
        if not isinstance(current, StructType) or not isinstance(part, str):
            return None
        field = _field(current, part)
        if field is None:
            return None
        current = field
    return ".".join(_quote_name(part) for part in attribute), current


def _field(struct: StructType, name: str) -> DataType | None:
    exact = [field.dataType for field in struct.fields if field.name == name]
    if exact:
        return exact[0]
    folded = [field.dataType for field in struct.fields if field.name.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def _literal(value: Any, data_type: DataType) -> str | None:
    """``value`` as a literal for a column of ``data_type``, when its kind fits the type."""
    if value is None:
        return None
    if isinstance(data_type, _NUMBERS):
        return _number(value)
    if isinstance(data_type, StringType):
        return _quote(value) if isinstance(value, str) else None
    if isinstance(data_type, BooleanType):
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else None
    if isinstance(data_type, DateType):
        is_date = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
        return f"DATE '{_date(value)}'" if is_date else None
    if isinstance(data_type, TimestampType):
        if not isinstance(value, dt.datetime) or value.tzinfo is None:
            return None
        return f"TIMESTAMP '{_wall_clock(value.astimezone(dt.timezone.utc))}+00:00'"
    if isinstance(data_type, TimestampNTZType):
        if not isinstance(value, dt.datetime) or value.tzinfo is not None:
            return None
        return f"TIMESTAMP_NTZ '{_wall_clock(value)}'"
    if isinstance(data_type, BinaryType) and isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex()}'"
    return None


def _number(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "'NaN'"
        if math.isinf(value):
            return "'Infinity'" if value > 0 else "'-Infinity'"
        text = repr(value)
        return text if "e" in text else f"{text}e0"
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return format(value, "f")
    return None


def _date(value: dt.date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _wall_clock(value: dt.datetime) -> str:
    return (
        f"{_date(value)} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"
        f".{value.microsecond:06d}"
    )


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
