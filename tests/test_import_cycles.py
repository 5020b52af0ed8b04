"""No import cycles among undertow's modules (issue 13, step 6).

Three graphs, each of direct imports between undertow's own modules: the imports that run when
a module is loaded (module level, ``try``/``if`` included, ``if TYPE_CHECKING:`` excluded);
those plus imports inside functions, which run later and used to hide cycles
(``data_stream`` <-> ``windowed_stream``); and all imports including ``if TYPE_CHECKING:``,
where only the type-only back references in ``TYPE_ONLY`` may close a cycle.
``from package import submodule`` is an edge to the submodule, not to the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "undertow"
#: (importing module, imported module) edges that exist only for type hints, with the reason.
TYPE_ONLY = {
    # A stream knows its environment (get_execution_environment); the environment builds streams.
    ("undertow.datastream.data_stream", "undertow.datastream.stream_execution_environment"),
    # Connected streams take DataStreams and hand out DataStreams through the stream's own
    # _derive; DataStream.connect() builds them.
    ("undertow.datastream.connected_streams", "undertow.datastream.data_stream"),
    # A stream's last operator settings keep its environment (get_execution_environment).
    ("undertow.datastream.operator_settings", "undertow.datastream.stream_execution_environment"),
    # Windowed streams take a DataStream/KeyedStream; DataStream.window() builds them.
    ("undertow.datastream.windowed_stream", "undertow.datastream.data_stream"),
    # A batch stream hands out record streams (to_records) through the DataStream class it is
    # given; DataStream.to_batches() builds batch streams.
    ("undertow.datastream.batch_stream", "undertow.datastream.data_stream"),
    ("undertow.datastream.batch_stream", "undertow.datastream.stream_execution_environment"),
    # Windowed batch streams take a KeyedBatchStream; KeyedBatchStream.window() builds them.
    ("undertow.datastream.windowed_batch_stream", "undertow.datastream.batch_stream"),
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        name = "undertow." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _statements(body: list[ast.stmt], functions: bool, typing: bool) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run, recursing into blocks as the flags allow."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            if typing or not _is_type_checking(node.test):
                yield from _statements(node.body, functions, typing)
            yield from _statements(node.orelse, functions, typing)
        elif isinstance(node, (ast.Try, ast.With, ast.For, ast.While)):
            for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                yield from _statements(block, functions, typing)
            for handler in getattr(node, "handlers", []):
                yield from _statements(handler.body, functions, typing)
        elif isinstance(node, ast.ClassDef) or (
            functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            yield from _statements(node.body, functions, typing)


def _graph(functions: bool, typing: bool) -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _statements(ast.parse(path.read_text()).body, functions, typing):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    target = f"{base}.{target}" if target else base
                submodules = {f"{target}.{a.name}" for a in node.names} & modules.keys()
                edges |= submodules
                if target in modules and len(submodules) < len(node.names):
                    edges.add(target)
        graph[name] = edges - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that returns to its start) per strongly connected component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan; the graph is small enough for recursion
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while stack[-1] != node:
                component.append(stack.pop())
            component.append(stack.pop())
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path(graph, set(component), component[0]) for component in components]


def _path(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest import path from ``start`` back to itself within ``component``."""
    paths = {target: [start, target] for target in graph[start] & component}
    while start not in paths:
        paths = {
            target: [*path, target]
            for path in paths.values()
            for target in sorted(graph[path[-1]] & component)
        } | paths
    return paths[start]


@pytest.mark.parametrize(
    ("functions", "typing"),
    [(False, False), (True, False), (True, True)],
    ids=["module-level", "with-function-imports", "with-type-checking-imports"],
)
def test_no_import_cycles(functions: bool, typing: bool) -> None:
    graph = _graph(functions, typing)
    if typing:
        for importer, imported in TYPE_ONLY:
            graph[importer].discard(imported)
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_type_only_edges_still_exist() -> None:
    """An entry of TYPE_ONLY that no longer matches an import must be deleted, not kept."""
    graph = _graph(functions=True, typing=True)
    stale = [edge for edge in TYPE_ONLY if edge[1] not in graph[edge[0]]]
    assert not stale, f"remove from TYPE_ONLY: {stale}"
