"""docs/pyflink-compatibility.md is what ``tools/pyflink_names.py`` makes of undertow today.

PyFlink's side (names and the modules exporting them) comes from ``docs/pyflink-2.3-names.json``,
facts listed from an installed apache-flink 2.3.0 by ``--write-facts``, so this test needs no
PyFlink and never reads PyFlink's names back from the document. It re-renders the document
against the undertow being tested and compares: a name added to or removed from undertow's
public modules, or a status that changed, fails it until the script is run again. Every name
marked supported must name a behaviour test; every test named must exist and not be skipped.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "pyflink-compatibility.md"
FACTS = ROOT / "docs" / "pyflink-2.3-names.json"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "pyflink_names", ROOT / "tools" / "pyflink_names.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_facts_come_from_pyflink_2_3() -> None:
    facts = json.loads(FACTS.read_text())
    assert facts["apache-flink"] == "2.3.0" and "installed apache-flink 2.3.0" in facts["source"]
    names = facts["names"]
    assert len(names) > 200, "the facts file lost its names"
    assert all(m.startswith(("pyflink.common", "pyflink.datastream")) for ms in names.values()
               for m in ms)  # fmt: skip


def test_the_document_is_up_to_date() -> None:
    tool = _tool()
    assert tool.render(tool.read_facts()) == DOC.read_text(), "run: python tools/pyflink_names.py"


def _test_functions(path: Path) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """``function`` and ``Class::function`` -> the test functions defined in ``path``."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}::{sub.name}"] = sub
    return found


def test_every_supported_name_names_a_behaviour_test_that_exists() -> None:
    tool = _tool()
    statuses = {name: tool._status(name, modules)[0] for name, modules in tool.read_facts().items()}
    supported = [name for name, status in statuses.items() if status == "supported"]
    assert len(supported) > 100
    assert all(name in tool.BEHAVIOUR_TESTS for name in supported)
    parsed: dict[str, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for name in tool.BEHAVIOUR_TESTS:
        node_id = tool.BEHAVIOUR_TESTS[name]
        path, _, function = node_id.partition("::")
        assert (ROOT / path).is_file(), f"{name}: {path} does not exist"
        functions = parsed.setdefault(path, _test_functions(ROOT / path))
        assert function in functions, f"{name}: no test {function} in {path}"
        definition = functions[function]
        assert definition.name.startswith("test"), f"{name}: {node_id} is not a test"
        skips = [ast.unparse(d) for d in definition.decorator_list if "skip" in ast.unparse(d)]
        assert not skips, f"{name}: {node_id} is skipped ({skips})"
    stale = {n for n in tool.BEHAVIOUR_TESTS if statuses.get(n) not in ("supported", "different")}
    assert not stale, f"behaviour tests listed for names not supported here: {sorted(stale)}"


def test_supported_names_import_from_their_undertow_paths() -> None:
    tool = _tool()
    checked = 0
    for name, modules in tool.read_facts().items():
        status, have, _ = tool._status(name, modules)
        if status in ("supported", "untested"):
            for module in have.split(", "):
                assert hasattr(importlib.import_module(module), name), (module, name)
                checked += 1
    assert checked > 100
