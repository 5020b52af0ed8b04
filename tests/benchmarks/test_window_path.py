"""benchmarks/window_path.py: the target lines compare each job with the plain loop and the
other build, and a child measures both window jobs and the loop on the rows it is given."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import window_path


def test_targets_are_met_or_missed_by_their_goals() -> None:
    medians = {
        "before": {"window": 3000.0, "window-process": 3000.0, window_path.FLOOR: 400.0},
        "after": {"window": 1500.0, "window-process": 2700.0, window_path.FLOOR: 400.0},
    }
    assert window_path.targets(medians) == [
        "target window per record vs plain loop: 3.75x (goal <= 4.0x): met",
        "target window per record vs before: 0.50x (goal <= 0.80x): met",
        "target window-process per record vs plain loop: 6.75x (goal <= 4.0x): missed",
        "target window-process per record vs before: 0.90x (goal <= 0.80x): missed",
    ]
    del medians["before"]
    assert len(window_path.targets(medians)) == 2


def test_the_batches_carry_the_rows_timestamps_and_every_job_is_measured() -> None:
    batches = window_path.rows_and_batches(3000)
    assert [len(values) for values, _ in batches] == [1024, 1024, 952]
    values, timestamps = batches[1]
    assert timestamps == [row.ts for row in values] and values[0].user == 1025 % 1000
    for job in window_path.JOBS:
        assert window_path.operator_ns(job, batches) > 0
    assert window_path.loop_ns(batches) > 0
