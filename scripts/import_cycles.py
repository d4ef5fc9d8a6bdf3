"""List module-level import cycles among the given top-level packages (default: graph retrieval).

Usage: ``python scripts/import_cycles.py [package ...]``; exits 1 when a cycle exists.

Static, by ``ast``: every ``import``/``from ... import`` statement that is not inside a function
or class body counts, including those under ``if TYPE_CHECKING:``, ``try:`` and other
module-level blocks. Relative imports are resolved against the importing module. An edge goes
to the most specific module the statement names: ``from .x import y`` goes to ``pkg.x.y`` when
that is a module (a submodule import), otherwise to ``pkg.x``. Parent packages' ``__init__``
that Python also runs are not counted (else every submodule would sit on a cycle with a package
``__init__`` that re-exports it). Only modules inside the given packages are nodes. Cycles are
the strongly connected components of more than one module.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def collect(packages: list[str]) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[module_name(path)] = path
    return modules


def module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            else:  # if / try / with / match at module level: look inside every branch
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        visit(block)
                for part in [*getattr(node, "handlers", []), *getattr(node, "cases", [])]:
                    visit(part.body)

    visit(tree.body)
    return found


def targets(
    name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]
) -> set[str]:
    out: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            out.add(alias.name)
        return {t for t in out if t in modules}
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    for alias in node.names:
        sub = f"{prefix}.{alias.name}"
        out.add(sub if sub in modules else prefix)
    return {t for t in out if t in modules}


def graph_of(modules: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        edges[name] = set()
        for node in module_level_imports(tree):
            edges[name] |= targets(name, is_package, node, modules)
        edges[name].discard(name)  # `from . import x` in a package naming its own attribute
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with a cycle (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    return sorted(found, key=lambda c: (-len(c), c))


def main(argv: list[str]) -> int:
    packages = argv or ["graph", "retrieval"]
    edges = graph_of(collect(packages))
    found = cycles(edges)
    for component in found:
        inside = {m: sorted(edges[m] & set(component)) for m in component}
        print("cycle:", ", ".join(f"{m} -> {inside[m]}" for m in component))
    if not found:
        print(f"no import cycles among {len(edges)} modules of {', '.join(packages)}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
