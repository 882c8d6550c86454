"""The import graphs of the Rust core and the Python package, for `test_layout.py`.

Rust: every `crate::` and `super::` path in a module's non-test code (in `use` lines and
inline) is an edge from that module to the module the path names. A module is a file;
`#[cfg(test)]` items and `tests.rs` files are left out, as tests may reach anywhere.
Python: every `import` and `from ... import` of the package's own modules, at any depth.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "crates" / "deltalog-core" / "src"
PACKAGE = ROOT / "python" / "deltalog"

# The core's layers, top (imported by every layer below) to bottom, as ARCHITECTURE.md
# lists them. A module may import only from its own layer and the layers above it.
LAYERS = (
    "error",
    "util",
    "storage",
    "scalar",
    "schema",
    "actions",
    "table_config",
    "expr",
    "log",
    "replay",
    "snapshot",
    "scan",
    "write",
    "maintenance",
    "transaction",
    "ops",
    "table",
    "lib",
)

_TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
_PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
_BRACED = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^{}]*)\}")


def rust_modules() -> dict[str, Path]:
    """Every module file of the core by its path (`log::decode::commit`, `lib` for the root),
    without the modules declared under `#[cfg(test)]`."""
    files = sorted(CORE.rglob("*.rs"))
    test_only = {
        (file.parent if file.name in ("mod.rs", "lib.rs") else file.with_suffix("")) / name
        for file in files
        for name in _TEST_MODULE.findall(file.read_text())
    }
    modules = {}
    for file in files:
        if file.with_suffix("") in test_only or file.parent in test_only:
            continue
        parts = list(file.relative_to(CORE).with_suffix("").parts)
        if parts[-1] == "mod":
            parts.pop()
        modules["::".join(parts)] = file
    return modules


def without_tests_and_comments(text: str) -> str:
    """The source with `#[cfg(test)]` items, comments and string literals removed."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out: list[str] = []
    position = 0
    for match in re.finditer(r"#\[cfg\(test\)\]", text):
        if match.start() < position:
            continue
        out.append(text[position : match.start()])
        position = _end_of_item(text, match.end())
    out.append(text[position:])
    return "".join(out)


def _end_of_item(text: str, start: int) -> int:
    """The end of the item that starts at `start`: its first `;` or its balanced braces."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == ";" and depth == 0:
            return index + 1
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def _absolute(module: str, path: str) -> list[str]:
    """`path` (`crate::a::b`, `super::c`, `self::d`) in `module` as segments from the crate
    root (module `a::b` is file `a/b.rs` or `a/b/mod.rs`; its `super` is `a`)."""
    segments = path.split("::")
    base = [] if module == "lib" else module.split("::")
    if segments[0] == "crate":
        return segments[1:]
    if segments[0] == "self":
        return base + segments[1:]
    rest = segments
    while rest and rest[0] == "super":
        base, rest = base[:-1], rest[1:]
    return base + rest


def _resolve(segments: list[str], modules: Iterable[str]) -> str | None:
    """The longest module that `segments` starts with."""
    known = set(modules)
    for length in range(len(segments), 0, -1):
        name = "::".join(segments[:length])
        if name in known:
            return name
    return None


def rust_edges() -> dict[str, set[str]]:
    """For each module, the other modules its non-test code names."""
    modules = rust_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        code = without_tests_and_comments(file.read_text())
        paths: list[str] = []
        for prefix, inner in _BRACED.findall(code):
            for item in re.split(r",", inner):
                item = item.strip().split(" as ")[0].strip()
                if item and item != "self" and re.fullmatch(r"[A-Za-z_][\w:]*", item):
                    paths.append(f"{prefix}::{item}")
                elif item == "self":
                    paths.append(prefix)
        paths.extend(_PATH.findall(code))
        for path in paths:
            target = _resolve(_absolute(name, path), modules)
            if target is not None and target != name and not _is_ancestor(name, target):
                edges[name].add(target)
    return edges


def _is_ancestor(module: str, other: str) -> bool:
    """True when `module` is inside `other` (a child naming its parent's items is not a
    dependency between layers; the parent declares it)."""
    return other == "lib" or module.startswith(other + "::")


def layer_of(module: str) -> str:
    return module.split("::")[0]


def python_edges() -> dict[str, set[str]]:
    """For each module of the Python package, the package's modules it imports."""
    files = {_python_name(file): file for file in sorted(PACKAGE.rglob("*.py"))}
    edges: dict[str, set[str]] = {name: set() for name in files}
    for name, file in files.items():
        package = name if file.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(file.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _relative(package, node.module, node.level)
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                resolved = target if target in files else None
                if resolved and resolved != name and not name.startswith(resolved + "."):
                    edges[name].add(resolved)
    return edges


def _python_name(file: Path) -> str:
    parts = list(file.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _relative(package: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def upward_imports(edges: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """The (module, target) pairs where a module imports from a layer below its own."""
    rank = {layer: position for position, layer in enumerate(LAYERS)}
    found = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            mine, theirs = rank.get(layer_of(module)), rank.get(layer_of(target))
            if mine is not None and theirs is not None and theirs > mine:
                found.append((module, target))
    return found
