"""The house rules of ARCHITECTURE.md, checked on the source: no import circle, in the Rust
core or the Python package."""

from __future__ import annotations

from _imports import cycles, python_edges, rust_edges


def test_the_core_has_no_import_circle() -> None:
    assert cycles(rust_edges()) == []


def test_the_python_package_has_no_import_circle() -> None:
    assert cycles(python_edges()) == []
