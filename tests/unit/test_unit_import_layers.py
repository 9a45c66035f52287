"""The package's modules import each other without a circle, and none is over 400 lines.

The graph is read from the source (``ast``), not by importing: every ``import`` and
``from ... import`` of a ``pytest_exportcheck`` module, at module level or deferred into
a function (imports for type checkers only are left out), plus the package ``__init__``
each import runs on the way. A circle there is one an import can trip over depending on
which module is imported first, and a deferred import is one that hides it: each
concept has one home, and a folder's files import one way.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_exportcheck"
ROOT = "pytest_exportcheck"
MAX_LINES = 400  # a module past it is split, not stretched


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import a module can run: at module level and deferred into its functions
    alike (a deferred import only hides a circle until the function runs), but not the
    ones for type checkers only."""
    found: list[ast.Import | ast.ImportFrom] = []

    class Imports(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for statement in node.orelse:
                    self.visit(statement)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            found.append(node)

    Imports().visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                if not target.startswith(ROOT):
                    continue
                # Importing a.b.c runs a/__init__ and a/b/__init__ first (the root's is empty).
                parts = target.split(".")
                for end in range(2, len(parts) + 1):
                    step = ".".join(parts[:end])
                    # A module's own packages are initialized before it: not an edge.
                    if step in modules and step != name and not name.startswith(f"{step}."):
                        graph[name].add(step)
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_module_imports_itself_around_a_circle() -> None:
    circle = _circle(_graph())
    assert circle is None, " -> ".join(circle or [])


def test_the_finder_sees_a_circle_made_on_purpose() -> None:
    graph = _graph()
    graph["pytest_exportcheck.spec.case"].add("pytest_exportcheck.items.session")
    assert _circle(graph) is not None


def test_only_entry_points_sit_at_the_top_of_the_package() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    # unrewritten.py is part of the entry point: what pytest's loading of it leaves undone.
    assert top == ["__init__.py", "__main__.py", "plugin.py", "unrewritten.py"]


def test_no_module_is_over_four_hundred_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long
