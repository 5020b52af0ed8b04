"""Every module of ``src/undertow`` is imported, by its own name, by at least one test
(issue 27): a module no test names is tested only through others, if at all.

A test imports a module when it writes ``import M``, ``from M import ...``,
``from P import M`` or ``importlib.import_module("M")``; a package counts when a test imports
it or any module inside it (that runs its ``__init__``). :data:`NOT_YET` lists the modules no
test imports yet; it may only shrink: a module that gains a test must leave it, and a new
module must come with its test.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TESTS = ROOT / "tests"

#: Modules no test imports yet (issue 27, step 1): remove a name once a test imports it.
NOT_YET: frozenset[str] = frozenset()


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module and package of ``undertow``."""
    found = {}
    for path in sorted((SRC / "undertow").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_by_tests() -> set[str]:
    """Every dotted name a test imports (see the module docstring for what counts)."""
    names: set[str] = set()
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
                == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


@functools.cache
def untested() -> frozenset[str]:
    """The modules of ``undertow`` that no test imports."""
    imported = imported_by_tests()
    packages = {name.rpartition(".")[0] for name in imported}
    for name in list(packages):  # a package's ancestors run too
        while name:
            packages.add(name)
            name = name.rpartition(".")[0]
    return frozenset(n for n in modules() if n not in imported and n not in packages)


def test_every_module_is_imported_by_a_test() -> None:
    missing = sorted(untested() - NOT_YET)
    assert not missing, "no test imports these modules; add a test:\n" + "\n".join(missing)


def test_the_known_untested_modules_only_shrink() -> None:
    stale = sorted(NOT_YET - untested())
    assert not stale, "these modules are tested (or gone) now; drop them from NOT_YET:\n" + (
        "\n".join(stale)
    )
