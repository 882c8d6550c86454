"""The base of deltalog's immutable wrapper classes."""

from __future__ import annotations

from typing import Any, NoReturn


class Frozen:
    """An object whose attributes cannot be set or deleted once it is built.

    Subclasses declare ``__slots__`` and set their attributes in ``__init__`` with
    ``object.__setattr__``.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} objects are immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} objects are immutable; cannot delete {name!r}")
