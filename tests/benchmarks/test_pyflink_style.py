"""benchmarks/pyflink_style.py: each job builds the plan its docstring describes, and a child's
output is read per job."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import pyflink_style

from undertow.datastream import StreamExecutionEnvironment


@pytest.mark.parametrize(
    ("job", "operator"),
    [
        ("reduce", "Keyed Reduce"),
        ("window", "Window"),
        ("window-process", "Window"),
        ("timers", "KeyedProcess"),
    ],
)
def test_each_job_builds_its_keyed_operator(job: str, operator: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.rows = 100  # type: ignore[attr-defined]
    pyflink_style.build(job, env)
    plan = env.get_execution_plan()
    assert operator in plan and "DiscardingSink" in plan


def test_a_sides_rates_are_read_per_job(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        stdout = "[undertow] checkpoint 1 completed\nreduce 10.5\nwindow 2.0\ntimers 3.25\n"

    monkeypatch.setattr(pyflink_style.subprocess, "run", lambda *a, **k: Done())
    assert pyflink_style.side("python", 80) == {"reduce": 10.5, "window": 2.0, "timers": 3.25}
