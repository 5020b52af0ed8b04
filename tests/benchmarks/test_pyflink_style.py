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


def test_each_job_is_no_worse_than_before_within_the_goal() -> None:
    before = dict.fromkeys(pyflink_style.JOBS, 100.0)
    after = {**before, "reduce": 97.0, "window": 150.0, "timers": 90.0}
    lines = pyflink_style.targets({"before": before, "after": after})
    assert lines[0] == "target reduce no worse: 0.97x (goal >= 0.95x): met"
    assert lines[1] == "target window no worse: 1.50x (goal >= 0.95x): met"
    assert lines[3] == "target timers no worse: 0.90x (goal >= 0.95x): missed"
    assert pyflink_style.targets({"after": after}) == []
