"""Running a benchmark script as its user does, at a tiny size, for the smoke tests.

Every figure in the docs comes from a script in ``benchmarks/``; a script that no longer runs
makes its figures unverifiable (benchmarks/recovery.py's own ``/proc`` scan found no worker once
workers were forked by a fork server, and nothing noticed). Each ``test_<script>.py`` of this
folder runs its script through :func:`run_script`, in a fresh interpreter from the repository's
root exactly as ``python benchmarks/<script>.py ARGS`` runs, and checks what it printed: its
table's shape and its ``target`` lines (:func:`target_lines`). The figures themselves mean
nothing at these sizes, and nothing here judges them.

Most runs start jobs, brokers or Spark and take tens of seconds, so their tests carry
``@pytest.mark.bench_smoke``: ``make bench-smoke`` and ``make soak`` run them, ``make test``
does not (docs/testing.md, "Benchmarks still run").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: The house format of a benchmark's last lines: ``target NAME: FIGURE (goal GOAL): met`` or
#: ``...: missed``, one per target, or ``...: not measured`` where a run could not judge it
#: (benchmarks/kafka_rounds.py's ``target``). FIGURE and GOAL may hold parentheses of their
#: own (the duplicate benchmark's ``(goal <= 2(times))``); NAME holds no colon.
TARGET_LINE = re.compile(
    r"target (?P<name>[^:]+): (?P<figure>.+) \(goal (?P<goal>.+)\): "
    r"(?P<verdict>met|missed|not measured)"
)


def run_script(
    script: str, *args: str, timeout: float = 240, env: dict[str, str] | None = None
) -> str:
    """What ``python benchmarks/SCRIPT ARGS`` printed on its standard output, run from the
    repository's root with this interpreter; fails the calling test, with that output, if the
    script exits with anything but 0 or runs past ``timeout`` seconds (a hang, not slowness:
    the runs here take a few seconds to a minute)."""
    path = BENCHMARKS / script
    assert path.exists(), f"{path} is gone"
    run_env = {**os.environ, **(env or {})}
    run_env.pop("PYTHONDONTWRITEBYTECODE", None)  # as make test: the jobs' workers reuse it
    try:
        done = subprocess.run(
            [sys.executable, str(path), *args],
            cwd=ROOT,
            env=run_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as err:
        raise AssertionError(
            f"{script} {' '.join(args)} ran past {timeout} s; it printed:\n{_text(err.stdout)}"
            f"\n{_text(err.stderr)}"
        ) from err
    assert done.returncode == 0, (
        f"{script} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def target_lines(output: str) -> dict[str, str]:
    """NAME -> the verdict (``met``, ``missed``, ``not measured``) of every ``target`` line
    of the output; a line that starts with ``target`` and holds a colon but is not in the
    house format fails the calling test (a table's header whose first column is a deployment
    target is no target line)."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        if not line.startswith("target") or ":" not in line:
            continue
        match = TARGET_LINE.fullmatch(line.rstrip())
        assert match is not None, f"a target line not in the house format: {line!r}"
        found[match["name"]] = match["verdict"]
    return found


def lines_after(output: str, start: str) -> list[str]:
    """The lines that follow the first line starting with ``start`` (a table under its
    header); fails the calling test if no line starts so."""
    lines = output.splitlines()
    found = next((i for i, line in enumerate(lines) if line.startswith(start)), None)
    assert found is not None, f"no line starts with {start!r}:\n{output}"
    return lines[found + 1 :]


def assert_targets(output: str, *names: str) -> None:
    """The output's target lines are exactly ``names`` (each met or missed), and they come
    last: nothing but blank lines and target lines after the first of them."""
    assert sorted(target_lines(output)) == sorted(names), output
    lines = [line for line in output.splitlines() if line.strip()]
    first = next(i for i, line in enumerate(lines) if TARGET_LINE.fullmatch(line.rstrip()))
    assert all(TARGET_LINE.fullmatch(line.rstrip()) for line in lines[first:]), output
