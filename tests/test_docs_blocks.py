"""Every ```python block in README.md and docs/*.md runs, and every option key they write exists.

Each block runs as a script through ``undertow run --target local-threads`` (the fastest target;
a block that calls ``execute`` runs its job there), in a fresh process and an empty working
directory, two blocks at a time, and must exit 0; blocks assert what they print. A block preceded by
``<!-- not-run: reason -->`` is only compiled: the reason must say why (a call on a running job's
client shown on its own, a Spark session). The not-run blocks are counted and printed, so they
stay few. Option keys written in the docs (``-D key=value``, ``"key": value`` and ``key: value``
or ``key`` in backticks, under Flink's and undertow's namespaces) must be keys that undertow reads:
a ``ConfigOption`` (or a deprecated key of one) or a key constant of an undertow module.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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


@dataclass(frozen=True)
class Ran:
    """How one block's process ended: its exit code (``None``: killed at
    :data:`BLOCK_TIMEOUT_S`), its output so far, and its wall time."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def _run(block: Block, directory: Path) -> Ran:
    directory.mkdir()
    script = directory / "block.py"
    script.write_text(block.code)
    command = [sys.executable, "-m", "undertow.cli.main", "run", "--target", "local-threads",
               "--no-status", str(script)]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=directory, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired as err:  # this block's test fails, not all of them
        return Ran(None, _text(err.stdout), _text(err.stderr), time.monotonic() - started)
    return Ran(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Every runnable block, two at a time (a block mostly imports and starts a job, one
    process per core); block name -> how its process ended. A block that times out is one
    outcome among the others: the fixture itself fails only on a broken test set-up."""
    root = tmp_path_factory.mktemp("blocks")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {b.name: pool.submit(_run, b, root / str(i)) for i, b in enumerate(RUN)}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("block", RUN, ids=[b.name for b in RUN])
def test_block_runs(block: Block, ran: dict[str, Ran]) -> None:
    done = ran[block.name]
    load = os.getloadavg()[0]
    ended = (f"exit {done.returncode}" if done.returncode is not None
             else f"killed: no exit within {BLOCK_TIMEOUT_S} s, load now {load:.0f}")  # fmt: skip
    assert done.returncode == 0, (
        f"{block.name} failed ({ended}, {done.seconds:.1f} s):\n{done.stdout}\n"
        f"{done.stderr[-4000:]}"
    )


def test_not_run_blocks_compile_and_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    for block in NOT_RUN:
        assert block.not_run and len(block.not_run.split()) >= 4, f"{block.name}: give a reason"
        compile(block.code, block.name, "exec")
    with capsys.disabled():  # the count shows in every run, not only when the test fails
        print(f"\n{len(RUN)} python blocks in the docs run, {len(NOT_RUN)} not run:")
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
    classes, module-level string constants that are keys (``PORT_KEY = "..."``), and the keys
    of module-level dicts of settings undertow applies (``spark.driver.host``)."""
    keys: set[str] = set()
    for info in pkgutil.walk_packages(undertow.__path__, "undertow."):
        module = importlib.import_module(info.name)
        for value in list(vars(module).values()):
            for item in vars(value).values() if isinstance(value, type) else [value]:
                if isinstance(item, ConfigOption):
                    keys.update((item.key, *item.deprecated_keys))
                elif isinstance(item, str) and re.fullmatch(_KEY, item):
                    keys.add(item)
                elif isinstance(item, dict):  # settings undertow applies (spark.driver.host)
                    keys.update(k for k in item if isinstance(k, str) and re.fullmatch(_KEY, k))
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


LINK = re.compile(r"\]\((?!https?://)([^)#\s]*)(?:#([^)\s]+))?\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_relative_links_resolve() -> None:
    broken = []
    for page in PAGES:
        for target, anchor in LINK.findall(page.read_text()):
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert not broken, f"broken links: {broken}"
