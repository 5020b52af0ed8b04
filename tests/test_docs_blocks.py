"""Every ```python block in README.md and docs/*.md runs, and every option key they write exists.

Each block runs as a script through ``undertow run --target local-threads`` (the fastest target;
a block that calls ``execute`` runs its job there), in a fresh process and an empty working
directory, and must exit 0; blocks assert what they print. A block preceded by
``<!-- not-run: reason -->`` is only compiled: the reason must say why (a call on a running job's
client shown on its own, a Spark session). The not-run blocks are counted and printed, so they
stay few. Option keys written in the docs (``-D key=value``, ``"key": value`` and ``key: value``
or ``key`` in backticks, under Flink's and undertow's namespaces) must be keys that undertow reads:
a ``ConfigOption`` (or a deprecated key of one) or a key constant of an undertow module.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import undertow
from undertow.core.config import ConfigOption

ROOT = Path(__file__).resolve().parents[1]
#: docs/design.md holds design notes (other engineers' sections), not user documentation.
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "design.md"),
]
BLOCK = re.compile(r"(?:<!-- not-run: (?P<reason>[^>]+?) -->\n)?```python\n(?P<code>.*?)```", re.S)
#: Each block's own limit; the whole set stays within the docs' 60 s budget on a quiet machine.
BLOCK_TIMEOUT_S = 120


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    not_run: str | None

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            found.append(Block(str(page.relative_to(ROOT)), line, match["code"], match["reason"]))
    return found


RUN = [b for b in blocks() if b.not_run is None]
NOT_RUN = [b for b in blocks() if b.not_run is not None]


@pytest.mark.parametrize("block", RUN, ids=[b.name for b in RUN])
def test_block_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block.code)
    command = [sys.executable, "-m", "undertow.cli.main", "run", "--target", "local-threads",
               "--no-status", str(script)]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, (
        f"{block.name} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr[-4000:]}"
    )


def test_not_run_blocks_compile_and_say_why() -> None:
    for block in NOT_RUN:
        assert block.not_run and len(block.not_run.split()) >= 4, f"{block.name}: give a reason"
        compile(block.code, block.name, "exec")
    print(f"\n{len(RUN)} python blocks run, {len(NOT_RUN)} not run:")
    for block in NOT_RUN:
        print(f"  {block.name}: {block.not_run}")
    assert len(RUN) >= 5 and len(NOT_RUN) <= len(RUN) // 2, "most blocks must run"


NAMESPACES = (
    "execution", "state", "taskmanager", "restart-strategy", "pipeline", "parallelism",
    "undertow", "rest", "metrics", "python", "spark", "jobmanager",
)  # fmt: skip
_KEY = r"(?:" + "|".join(re.escape(n) for n in NAMESPACES) + r")(?:\.[a-z0-9-]+)+"
KEYS = re.compile(rf"`({_KEY})(?::[^`]*)?`|-D ?({_KEY})=|\"({_KEY})\":")


def known_keys() -> set[str]:
    """Keys undertow reads: every ConfigOption (and its deprecated keys) in its modules and
    classes, and module-level string constants that are keys (``PORT_KEY = "..."``)."""
    keys: set[str] = set()
    for info in pkgutil.walk_packages(undertow.__path__, "undertow."):
        module = importlib.import_module(info.name)
        for value in list(vars(module).values()):
            for item in vars(value).values() if isinstance(value, type) else [value]:
                if isinstance(item, ConfigOption):
                    keys.update((item.key, *item.deprecated_keys))
                elif isinstance(item, str) and re.fullmatch(_KEY, item):
                    keys.add(item)
    return keys


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_option_keys_in_the_docs_exist() -> None:
    known = known_keys()
    unknown: dict[str, list[str]] = {}
    written = 0
    for page in PAGES:
        for match in KEYS.finditer(page.read_text()):
            key = next(g for g in match.groups() if g)
            written += 1
            if key not in known and not _is_module(key):
                unknown.setdefault(key, []).append(page.name)
    assert written > 50, "no option keys found: the pattern is broken"
    assert not unknown, f"option keys that undertow does not read: {unknown}"
