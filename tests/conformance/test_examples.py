"""PyFlink 2.3's own DataStream example programs, run on undertow with only their imports changed.

Each fixture in ``pyflink_examples/`` is an example from the apache-flink 2.3.0 wheel
(``pyflink/examples/datastream/``, Apache-2.0), committed unchanged but for a header. The test
rewrites its imports (``pyflink`` -> ``undertow``), runs it as ``python example.py`` on the
default target (local Spark) and compares its standard output with what PyFlink printed for
the unchanged program (``expected/``, recorded by ``record_expected.py``).

How outputs are compared, as far as PyFlink defines them:

* lines PyFlink's Python worker prints about itself (Beam and Cython diagnostics) are not
  output of the program and are dropped from the recording;
* a sink at parallelism 1 prints in a defined order: compared line by line;
* lines of a parallel sink (``N> `` prefixed) come in no defined order, and which subtask
  ``N`` prints a key depends on the engine's hash partitioning: compared as a multiset, with
  ``N`` replaced by ``*`` (the prefix itself must be there).

Examples not run: ``streaming_word_count.py`` and ``asyncio/remote_model_inference.py`` read
an unbounded random ``datagen`` table through ``pyflink.table`` (no Table API in undertow,
and their output is random); ``connectors/*`` need Kafka, Elasticsearch or Pulsar.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
RUN_TIMEOUT_S = 300

#: Lines PyFlink's Python worker (Beam) prints about its environment, not the program's output.
PYFLINK_NOISE = (
    re.compile(r"^Using Any for unsupported type: "),
    re.compile(r"^No module named google\.cloud\.bigquery_storage_v1\. "),
    re.compile(r"^PYFLINK_CYTHON_ENABLED: "),
)
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)pyflink\b", re.M)
_SUBTASK = re.compile(r"^\d+> ")

#: Examples that do not print what PyFlink prints yet, with the cause (issue 11).
XFAIL: dict[str, str] = {}

EXAMPLES = sorted(p.stem for p in (HERE / "pyflink_examples").glob("*.py"))


def undertow_source(name: str) -> str:
    """The fixture with its imports changed from ``pyflink`` to ``undertow``."""
    text = (HERE / "pyflink_examples" / f"{name}.py").read_text()
    return _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}undertow", text)


def program_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not any(p.match(line) for p in PYFLINK_NOISE)]


def comparable(lines: list[str]) -> tuple[list[str], Counter[str]]:
    """(lines in order, multiset of ``N> `` lines with ``N`` as ``*``)."""
    ordered = [line for line in lines if not _SUBTASK.match(line)]
    parallel = Counter(_SUBTASK.sub("*> ", line) for line in lines if _SUBTASK.match(line))
    return ordered, parallel


def test_fixtures_are_pyflink_examples_and_imports_are_the_only_change() -> None:
    assert len(EXAMPLES) == 10
    for name in EXAMPLES:
        original = (HERE / "pyflink_examples" / f"{name}.py").read_text()
        assert "Licensed under the Apache License, Version 2.0" in original
        assert "pyflink/examples/datastream/" in original.splitlines()[1]
        rewritten = undertow_source(name)
        changed = [(a, b) for a, b in zip(original.splitlines(), rewritten.splitlines()) if a != b]
        assert changed and all(
            re.match(r"^\s*(from|import)\s+undertow\b", b)
            and a.replace("pyflink", "undertow", 1) == b
            for a, b in changed
        ), changed
        assert (HERE / "expected" / f"{name}.out").exists(), name


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=XFAIL[n])) if n in XFAIL else n
        for n in EXAMPLES
    ],
)
def test_example_prints_what_pyflink_prints(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(undertow_source(name))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, f"{name} exited with {done.returncode}:\n{done.stderr[-4000:]}"

    expected = comparable(program_lines((HERE / "expected" / f"{name}.out").read_text()))
    actual = comparable(done.stdout.splitlines())
    assert actual[0] == expected[0], f"{name}: ordered lines differ\n{done.stdout}"
    assert actual[1] == expected[1], f"{name}: parallel sink lines differ\n{done.stdout}"
