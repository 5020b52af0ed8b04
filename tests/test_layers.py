"""Layers import only downward (docs/design.md, "Layers, checked by a test")."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

LAYERS = [
    "core", "web", "common", "table", "storage", "state", "api", "connectors", "graph",
    "runtime.network", "runtime.checkpoint", "runtime.task", "runtime.control",
    "runtime.worker", "runtime.master",
    "datastream", "deploy", "cli", "testing",
]  # fmt: skip
RANK = {name: i for i, name in enumerate(LAYERS)}
#: (importing module, imported module) pairs allowed to go upward, with the reason.
EXCEPTIONS = {
    # execute_async finds the executor for execution.target at call time (Flink's
    # PipelineExecutorServiceLoader): the API cannot know the deployments above it.
    ("undertow.datastream.stream_execution_environment", "undertow.deploy.executor"),
}
SRC = Path(__file__).resolve().parents[1] / "src" / "undertow"


def _layer(module: str) -> str | None:
    parts = module.split(".")[1:]
    if not parts:
        return None
    if parts[0] == "runtime" and len(parts) > 1:
        return f"runtime.{parts[1]}"
    return parts[0] if parts[0] in RANK or parts[0] == "runtime" else None


@functools.cache
def _imports() -> list[tuple[str, str]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = "undertow." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("undertow."):
                    found.append((module, node.module))
            elif isinstance(node, ast.Import):
                found += [(module, a.name) for a in node.names if a.name.startswith("undertow.")]
    return found


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("_")}
    runtime = {f"runtime.{p.name}" for p in (SRC / "runtime").iterdir() if p.is_dir()}
    unknown = (packages - {"runtime"} | runtime) - set(RANK) - {"runtime.__pycache__"}
    assert not unknown, f"place these packages in LAYERS: {sorted(unknown)}"


def test_imports_only_go_down() -> None:
    upward = []
    for importer, imported in _imports():
        a, b = _layer(importer), _layer(imported)
        if a is None or b is None or a == b:
            continue
        if RANK[b] > RANK[a] and (importer, imported) not in EXCEPTIONS:
            upward.append(f"{importer} ({a}) imports {imported} ({b})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_driver_side_and_the_worker_side_do_not_import_each_other() -> None:
    """``runtime.master`` runs on the driver and ``runtime.worker`` on the workers; what both
    use (messages, the control connection, placement) is ``runtime.control``."""
    crossing = [
        f"{importer} imports {imported}"
        for importer, imported in _imports()
        if {_layer(importer), _layer(imported)} == {"runtime.master", "runtime.worker"}
    ]
    assert not crossing, "\n".join(crossing)
