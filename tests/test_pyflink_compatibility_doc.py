"""docs/pyflink-compatibility.md is what ``tools/pyflink_names.py`` makes of undertow today.

The PyFlink side (names and modules) is read back from the document itself, so this test needs
no PyFlink: it re-renders the document against the undertow being tested and compares. A name
added to or removed from undertow's public modules, or a status that changed, fails it until
the script is run again.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "pyflink_names", ROOT / "tools" / "pyflink_names.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pyflink_names(doc: str) -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 5 and cells[0].startswith("`"):
            names[cells[0].strip("`")] = re.findall(r"`([\w.]+)`", cells[1])
    return names


def test_the_document_is_up_to_date() -> None:
    doc = (ROOT / "docs" / "pyflink-compatibility.md").read_text()
    names = _pyflink_names(doc)
    assert len(names) > 200, "the table was not found"
    assert _tool().render(names) == doc, "run: python tools/pyflink_names.py"


def test_supported_names_import_from_their_undertow_paths() -> None:
    doc = (ROOT / "docs" / "pyflink-compatibility.md").read_text()
    checked = 0
    for line in doc.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 5 and cells[2] == "supported":
            name = cells[0].strip("`")
            for module in cells[3].strip("`").split(", "):
                assert hasattr(importlib.import_module(module), name), (module, name)
                checked += 1
    assert checked > 100
