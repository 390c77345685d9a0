"""No import cycles among gallery_app's modules at import time.

A cycle works only while its modules happen to be imported in one order and each reads the other's
names late; the next import moved to the top of a file turns it into an ImportError of a half-made
module. Imports inside functions and under ``if TYPE_CHECKING:`` run later or never, so they are not
edges here; imports in a module's top-level ``try``/``if``/``with`` blocks and class bodies are.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import gallery_app

PACKAGE_DIR = Path(gallery_app.__file__).resolve().parent
ROOT = PACKAGE_DIR.parent

#: Cycles through modules another change is restructuring, each as the sorted names of its modules.
#: Remove an entry once that change is in; a cycle not listed here fails the test.
KNOWN_CYCLES: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_time_statements(body: list[ast.stmt]):
    """The import statements that run when the module is imported (not in functions, not TYPE_CHECKING)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from import_time_statements(node.body)
            yield from import_time_statements(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from import_time_statements(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from import_time_statements(node.body)


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(module, line) of each gallery_app module ``name`` imports at import time."""
    is_package = path.name == "__init__.py"
    found = []
    for node in import_time_statements(ast.parse(path.read_text("utf-8")).body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import module`` imports that module; ``from module import name`` the module.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        found += [(target, node.lineno) for target in targets if target in modules and target != name]
    return found


def import_graph() -> dict[str, dict[str, int]]:
    modules = all_modules()
    return {name: dict(imported_modules(name, path, modules)) for name, path in modules.items()}


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's components with more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def one_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """The shortest cycle through the component's first module, as module names (first repeated last)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target in members and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def describe(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    modules = all_modules()
    steps = [f"  {a} ({modules[a].relative_to(ROOT)}:{graph[a][b]}) imports {b}" for a, b in zip(cycle, cycle[1:])]
    return "\n".join([" → ".join(cycle), *steps])


def test_module_level_imports_form_no_cycle():
    graph = import_graph()
    components = [c for c in strongly_connected(graph) if frozenset(c) not in KNOWN_CYCLES]
    assert not components, "import cycles:\n" + "\n".join(describe(graph, one_cycle(graph, c)) for c in components)


def test_known_cycles_are_still_there():
    current = {frozenset(c) for c in strongly_connected(import_graph())}
    assert not KNOWN_CYCLES - current, "a known cycle is gone: remove it from KNOWN_CYCLES"


def test_the_detector_finds_a_cycle_and_ignores_function_and_type_checking_imports(tmp_path, monkeypatch):
    package = tmp_path / "gallery_app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from gallery_app import b\n")
    (package / "b.py").write_text("try:\n    from gallery_app.c import thing\nexcept ImportError:\n    pass\n")
    (package / "c.py").write_text("from . import a\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gallery_app import e\n")
    (package / "e.py").write_text("def later():\n    from gallery_app import d\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_DIR", package)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = import_graph()
    assert strongly_connected(graph) == [["gallery_app.a", "gallery_app.b", "gallery_app.c"]]
    assert one_cycle(graph, ["gallery_app.a", "gallery_app.b", "gallery_app.c"]) == [
        "gallery_app.a", "gallery_app.b", "gallery_app.c", "gallery_app.a"]
