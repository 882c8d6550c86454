"""The options of ``spark.read.format("deltalog")``, read once into a plain value."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import _core
from ..exceptions import InvalidArgumentError

__all__ = ["DEFAULT_OPEN_COST", "DEFAULT_TARGET_SIZE", "ReadOptions"]

#: Input partitions hold about this many bytes of data files (Spark's
#: ``spark.sql.files.maxPartitionBytes`` default).
DEFAULT_TARGET_SIZE: int = _core.DEFAULT_TARGET_SIZE
#: What opening a file costs, in bytes, when files are packed into partitions (Spark's
#: ``spark.sql.files.openCostInBytes`` default).
DEFAULT_OPEN_COST: int = _core.DEFAULT_OPEN_COST

#: Option names (lower case: Spark hands options over case-insensitively) that are ours; every
#: other option goes to the object store.
_OWN_OPTIONS = frozenset(
    {
        "path",
        "paths",
        "versionasof",
        "timestampasof",
        "timezone",
        "columns",
        "filterpushdown",
        "maxpartitionbytes",
        "opencostinbytes",
        "startingversion",
        "startingtimestamp",
        "maxfilespertrigger",
        "maxbytespertrigger",
        "ignoredeletes",
        "skipchangecommits",
        "readchangefeed",
        "endingversion",
    }
)


@dataclass(frozen=True)
class ReadOptions:
    """What a read asks for: the table, which version, which columns, how to split it."""

    uri: str
    version: int | None = None
    timestamp: str | None = None
    timezone: str | None = None
    columns: tuple[str, ...] | None = None
    filter_pushdown: bool | None = None
    """``None``: as the data source class was registered."""
    read_change_feed: bool = False
    """The change data feed (``readChangeFeed``) instead of the table's rows."""
    ending_version: int | None = None
    """The last commit of a change feed read (``endingVersion``)."""
    target_size: int = DEFAULT_TARGET_SIZE
    open_cost: int = DEFAULT_OPEN_COST
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Reads Spark's options (names in any case).

        ``path`` (given by ``load(path)``) is the table; ``versionAsOf`` (an int) or
        ``timestampAsOf`` (ISO-8601; naive is UTC) pick the snapshot; ``timezone`` is the time
        zone of partition timestamps; ``columns`` (comma-separated names, or a JSON list)
        projects; ``filterPushdown`` (``true``/``false``) overrides whether the reader takes
        Spark's filters; ``maxPartitionBytes`` and ``openCostInBytes`` size the input
        partitions; ``readChangeFeed`` (with ``startingVersion`` and ``endingVersion``)
        reads the change data feed. Any other option is a storage option for the object store.
        """
        lowered = {str(key).lower(): str(value) for key, value in options.items()}
        uri = lowered.get("path")
        if not uri:
            raise InvalidArgumentError(
                'the deltalog data source needs the table location: load("path/or/uri")'
            )
        version = lowered.get("versionasof")
        timestamp = lowered.get("timestampasof")
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("give versionAsOf or timestampAsOf, not both")
        return cls(
            uri=uri,
            version=None if version is None else _non_negative(version, "versionAsOf"),
            timestamp=timestamp,
            timezone=lowered.get("timezone") or None,
            columns=_columns(lowered.get("columns")),
            filter_pushdown=_flag(lowered.get("filterpushdown"), "filterPushdown"),
            read_change_feed=bool(_flag(lowered.get("readchangefeed"), "readChangeFeed")),
            ending_version=(
                None
                if lowered.get("endingversion") is None
                else _non_negative(lowered["endingversion"], "endingVersion")
            ),
            target_size=_size(lowered.get("maxpartitionbytes"), DEFAULT_TARGET_SIZE, 1),
            open_cost=_size(lowered.get("opencostinbytes"), DEFAULT_OPEN_COST, 0),
            storage_options={
                key: value for key, value in lowered.items() if key not in _OWN_OPTIONS
            },
        )


def _columns(text: str | None) -> tuple[str, ...] | None:
    if text is None or not text.strip():
        return None
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            names = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise InvalidArgumentError(f"columns {text!r} is not a JSON list: {error}") from None
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise InvalidArgumentError(f"columns {text!r} must be a JSON list of strings")
        return tuple(names)
    return tuple(name.strip() for name in stripped.split(",") if name.strip())


def _flag(text: str | None, name: str) -> bool | None:
    if text is None:
        return None
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise InvalidArgumentError(f"{name} must be true or false, got {text!r}")


def _non_negative(text: str, name: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be an integer, got {text!r}") from None
    if value < 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {value}")
    return value


def _size(text: str | None, default: int, minimum: int) -> int:
    if text is None:
        return default
    value = _non_negative(text, "a partition size option")
    if value < minimum:
        raise InvalidArgumentError(f"a partition size option must be at least {minimum}")
    return value
