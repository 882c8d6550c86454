"""The house rules of ARCHITECTURE.md, checked on the source: no import circle in the Rust
core or the Python package, and the core's layers imported only from below."""

from __future__ import annotations

import re

from _imports import CORE, LAYERS, cycles, python_edges, rust_edges, upward_imports


def test_the_core_has_no_import_circle() -> None:
    assert cycles(rust_edges()) == []


def test_the_python_package_has_no_import_circle() -> None:
    assert cycles(python_edges()) == []


def test_no_core_module_imports_from_a_lower_layer() -> None:
    assert upward_imports(rust_edges()) == []


def test_the_core_top_level_has_at_most_twenty_entries() -> None:
    entries = sorted(entry.name for entry in CORE.iterdir())
    assert len(entries) <= 20, entries
    layers = {entry.removesuffix(".rs") for entry in entries} - {"lib"}
    assert layers == set(LAYERS) - {"lib"}, "every top-level module is a layer of LAYERS"


def test_the_core_root_re_exports_about_twenty_five_names() -> None:
    """The crate root keeps the names a user starts with; every other public name lives in the
    namespace of its layer (ARCHITECTURE.md, "Public API")."""
    lib = (CORE / "lib.rs").read_text()
    uses = re.findall(r"^pub use [a-z_]+(?:::[a-z_]+)*::(\{[^}]*\}|\w+);", lib, re.MULTILINE)
    names = [name.strip() for group in uses for name in group.strip("{}").split(",")]
    names = [name for name in names if name]
    assert 20 <= len(names) <= 30, names
