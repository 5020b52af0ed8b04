"""benchmarks/record_vs_loop.py: the loop computes the job's running sums, and the steady state
is the difference of the two runs (the figures of issue 31's record-path target rest on both)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import record_vs_loop
from record_vs_loop import Sample


def test_the_loop_keeps_the_running_sum_per_key() -> None:
    sums = record_vs_loop.loop(1, 2500)
    assert len(sums) == 1000
    assert sums[1] == (1, 3)  # 1, 1001, 2001
    assert sums[0] == (0, 2)  # 1000, 2000
    assert sums[600] == (600, 2)  # 600, 1600


def test_steady_subtracts_the_small_run() -> None:
    runs = {100: Sample(100, 2.0, 1.5), 800: Sample(800, 5.5, 4.0)}
    got = record_vs_loop.steady(runs.__getitem__, 800)
    assert got == Sample(700, 3.5, 2.5)


def test_ratios_are_the_median_of_each_rounds() -> None:
    figures = record_vs_loop.Figures(1.0, 1.0, 1.0, 1.0, 1.0, (0.2, 0.9, 0.3), (0.5, 0.1, 0.4))
    assert figures.cpu_ratio == 0.3 and figures.wall_ratio == 0.4
