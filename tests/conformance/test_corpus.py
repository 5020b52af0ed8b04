"""PyFlink programs as users write them, run on undertow with only their imports changed.

Each program in ``corpus/`` is ours, written the way tutorials, pattern collections and course
code write PyFlink (classes of the script as record types, named rows, ``print()`` inside user
functions, typed outputs, keyed state with TTL, timers, every window kind, side outputs,
connect, broadcast state, BATCH mode, a file source, ``execute_and_collect``). What PyFlink
2.3 printed for each unchanged program is recorded in ``corpus_expected/<name>.out`` by
``benchmarks/peers/record_corpus.py`` (its first line names the version and the date); undertow
never depends on PyFlink.

The test ports each program as a user would: ``pyflink`` becomes ``undertow`` in its import
lines, nothing else changes (checked). The programs of one target run in one subprocess, each
exactly as ``undertow run -t TARGET --no-status program.py`` runs it (``corpus_runner.py``), so
Spark starts once per target. A program passes when it exits 0 and its standard output equals
PyFlink's as a **multiset of lines**: every program prints from a sink at parallelism 1 or
from the script, and lines from different operators interleave in no defined order.

Targets: ``spark`` (the default, local Spark) runs every program; ``local`` (worker processes)
runs the programs whose records are objects of classes defined in the script, which must be
pickled into another process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conformance.corpus_runner import split_runs

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
EXPECTED = HERE / "corpus_expected"
SRC = HERE.parents[1] / "src"
RUNNER = HERE / "corpus_runner.py"
#: The whole run of one target (Spark's start and every program); generous for a loaded machine.
RUN_TIMEOUT_S = 900

Runs = dict[str, tuple[int | None, list[str]]]

HEADER = re.compile(r"^# recorded with apache-flink \S+ on \d{4}-\d{2}-\d{2}$")
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)pyflink\b", re.M)
_SCRIPT_CLASS = re.compile(r"^class \w+(\(\s*\))?:", re.M)

PROGRAMS = sorted(p.stem for p in CORPUS.glob("*.py"))
#: Programs whose records are plain classes of the script (``class WaterSensor:``).
WITH_SCRIPT_CLASSES = [
    n for n in PROGRAMS if _SCRIPT_CLASS.search((CORPUS / f"{n}.py").read_text())
]

#: Programs that do not print what PyFlink prints, with the cause, per target.
XFAIL: dict[tuple[str, str], str] = {
    (target, "session_merging_aggregate"): (
        "PyFlink 2.3 loses an accumulator when an event bridges two sessions of a key: its "
        "window aggregate never calls AggregateFunction.merge there and keeps one session's "
        "accumulator (kim: '9 points in 2 plays'); undertow merges them as Java Flink does "
        "('16 points in 4 plays'). Kept: it is PyFlink's bug, not a behaviour to copy"
    )
    for target in ("spark", "local")
}
XFAIL[("spark", "session_custom_trigger")] = (
    "the same PyFlink 2.3 bug in a trigger's state: when an event bridges two sessions, "
    "ctx.merge_partitioned_state keeps one session's ReducingState value (2 clicks of 4), so "
    "its count reaches 3 at the bridging event and fires '[1000, 14000) 5 clicks'; undertow "
    "merges the counts as Java Flink does (5 there, 6 at the next click: '[1000, 15000) 6 "
    "clicks' fires early and at the end)"
)


def undertow_source(name: str) -> str:
    """The program with its imports changed from ``pyflink`` to ``undertow``, as a user ports it."""
    text = (CORPUS / f"{name}.py").read_text()
    return _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}undertow", text)


def expected_lines(name: str) -> list[str]:
    """PyFlink's recorded output of the program, without the recording's header line."""
    first, *lines = (EXPECTED / f"{name}.out").read_text().splitlines()
    assert HEADER.match(first), f"{name}.out: no recording header, got {first!r}"
    return lines


def run_corpus(target: str, names: list[str], directory: Path) -> Runs:
    """The programs ``names``, ported into ``directory`` and run on ``target`` in one subprocess."""
    scripts = []
    for name in names:
        script = directory / f"{name}.py"
        script.write_text(undertow_source(name))
        scripts.append(str(script))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(RUNNER), target, *scripts], cwd=directory, env=env,
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    (directory / "stderr.txt").write_text(done.stderr)
    return split_runs(done.stdout)


def _stderr_of(directory: Path, name: str) -> str:
    text = (directory / "stderr.txt").read_text()
    start = text.find(f"--- {name} ---")
    end = text.find("\n--- ", start + 1)
    return text[start : end if end >= 0 else None][-4000:]


def test_every_program_is_ported_by_its_imports_only_and_has_a_recording() -> None:
    assert len(PROGRAMS) >= 20
    assert WITH_SCRIPT_CLASSES, "no program uses a class of its own as a record type"
    for name in PROGRAMS:
        original = (CORPUS / f"{name}.py").read_text()
        rewritten = undertow_source(name)
        changed = [(a, b) for a, b in zip(original.splitlines(), rewritten.splitlines()) if a != b]
        assert changed, f"{name}: imports nothing from pyflink"
        assert all(a.replace("pyflink", "undertow", 1) == b for a, b in changed), changed
        assert "pyflink" not in rewritten, f"{name}: names pyflink outside an import line"
        assert expected_lines(name), f"{name}: PyFlink printed nothing"


def _cases() -> list[object]:
    cases = []
    for target, names in (("spark", PROGRAMS), ("local", WITH_SCRIPT_CLASSES)):
        for name in names:
            reason = XFAIL.get((target, name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(target, name, marks=marks, id=f"{target}-{name}"))
    return cases


@pytest.fixture(scope="module")
def corpus_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], tuple[Path, Runs]]:
    """Per target, one run of the programs selected in this session (all of them in CI)."""
    selected: dict[str, list[str]] = {}
    for item in request.session.items:
        params = getattr(item, "callspec", None)
        if item.name.startswith("test_program_prints_what_pyflink_prints") and params:
            selected.setdefault(params.params["target"], []).append(params.params["name"])
    done: dict[str, tuple[Path, Runs]] = {}

    def runs_of(target: str) -> tuple[Path, Runs]:
        if target not in done:
            directory = tmp_path_factory.mktemp(f"corpus-{target}")
            done[target] = directory, run_corpus(target, selected[target], directory)
        return done[target]

    return runs_of


@pytest.mark.parametrize(("target", "name"), _cases())
def test_program_prints_what_pyflink_prints(
    target: str, name: str, corpus_runs: Callable[[str], tuple[Path, Runs]]
) -> None:
    directory, runs = corpus_runs(target)
    assert name in runs, f"{name} never started on {target}:\n{_stderr_of(directory, name)}"
    code, lines = runs[name]
    assert code == 0, f"{name} on {target} exited with {code}:\n{_stderr_of(directory, name)}"
    expected, actual = Counter(expected_lines(name)), Counter(lines)
    missing, extra = expected - actual, actual - expected
    assert not missing and not extra, (
        f"{name} on {target}: lines PyFlink printed and undertow did not: {dict(missing)}; "
        f"lines undertow printed and PyFlink did not: {dict(extra)}"
    )
