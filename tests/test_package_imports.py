"""The package's import graph: no import circle between tracecore modules, and no module using
another module's private names (issue 20). Read from the sources with ``ast``, so that imports
inside functions count too; imports under ``if TYPE_CHECKING:`` (annotations only) do not."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import tracecore

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tracecore"


def package_dir() -> Path:
    """The sources in this checkout, else those of the installed package."""
    source = ROOT / "python" / PACKAGE
    return source if (source / "__init__.py").exists() else Path(tracecore.__file__).parent


@dataclass
class Graph:
    edges: dict[str, set[str]] = field(default_factory=dict)
    private_uses: list[str] = field(default_factory=list)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Visitor(ast.NodeVisitor):
    """Collects the imports of one module and its uses of other modules' private names."""

    def __init__(
        self, package: str, module: str, modules: set[str], graph: Graph, where: str
    ) -> None:
        self.package = package
        self.module = module
        self.modules = modules
        self.graph = graph
        self.where = where
        self.bound: dict[str, str] = {}  # local name -> tracecore module it is bound to
        graph.edges.setdefault(module, set())

    def _edge(self, target: str) -> None:
        if target != self.module:
            self.graph.edges[self.module].add(target)

    def _private(self, node: ast.AST, what: str) -> None:
        self.graph.private_uses.append(f"{self.where}:{getattr(node, 'lineno', 0)}: {what}")

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == self.package or alias.name.startswith(self.package + "."):
                self._edge(alias.name)
                if alias.asname:
                    self.bound[alias.asname] = alias.name
                for part in alias.name.split(".")[1:]:
                    if _is_private(part) and alias.name not in self.modules:
                        self._private(node, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:  # a flat package: relative imports are from the package itself
            assert node.level == 1, f"{self.where}: unexpected relative import level"
            base = self.package + (f".{node.module}" if node.module else "")
        else:
            base = node.module or ""
        if base != self.package and not base.startswith(self.package + "."):
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in self.modules:  # from . import x: the module x
                self._edge(submodule)
                self.bound[alias.asname or alias.name] = submodule
                continue
            self._edge(base)
            if _is_private(alias.name):
                self._private(node, f"from {base} import {alias.name}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if isinstance(value, ast.Name) and value.id in self.bound and _is_private(node.attr):
            target = self.bound[value.id]
            if f"{target}.{node.attr}" not in self.modules and target != self.module:
                self._private(node, f"{value.id}.{node.attr} ({target})")
        self.generic_visit(node)


def import_graph(directory: Path, package: str = PACKAGE) -> Graph:
    """The import edges between the modules of ``directory`` (a flat package) and the uses of
    private names across them."""
    files = sorted(directory.glob("*.py"))
    names = {f: package if f.stem == "__init__" else f"{package}.{f.stem}" for f in files}
    # Extension modules (tracecore._core) are modules too.
    modules = set(names.values()) | {
        f"{package}.{p.name.split('.')[0]}"
        for p in directory.iterdir()
        if p.suffix in (".so", ".pyi")
    }
    graph = Graph()
    for path, module in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        _Visitor(package, module, modules, graph, path.name).visit(tree)
    return graph


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_circle_between_tracecore_modules() -> None:
    graph = import_graph(package_dir())
    assert len(graph.edges) > 15  # the walk found the package
    assert "tracecore.trace" in graph.edges["tracecore.opening"]
    assert cycles(graph.edges) == []


def test_no_module_uses_another_modules_private_names() -> None:
    assert import_graph(package_dir()).private_uses == []


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    sources = {
        "__init__.py": "from .a import run\n",
        "a.py": """
            from typing import TYPE_CHECKING

            from . import b
            from .c import _hidden

            if TYPE_CHECKING:
                from .d import Thing

            def run():
                return b._helper()
        """,
        "b.py": """
            def _helper():
                from .a import run  # a lazy import still closes the circle a -> b -> a
                return run
        """,
        "c.py": "_hidden = 1\n",
        "d.py": "from .a import run\nclass Thing: ...\n",
    }
    for name, text in sources.items():
        (pkg / name).write_text(textwrap.dedent(text))
    graph = import_graph(pkg, "pkg")
    assert graph.edges["pkg.a"] == {"pkg.b", "pkg.c"}  # not d: annotations only
    assert cycles(graph.edges) == [["pkg.a", "pkg.b"]]
    assert graph.private_uses == [
        "a.py:5: from pkg.c import _hidden",
        "a.py:11: b._helper (pkg.b)",
    ]
