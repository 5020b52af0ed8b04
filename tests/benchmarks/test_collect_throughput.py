"""benchmarks/collect_throughput.py still runs (tests/benchmarks/smoke.py): at a few thousand
records each window makes its row and the target line ends the output."""

from __future__ import annotations

import pytest

from .smoke import assert_targets, run_script


@pytest.mark.bench_smoke
def test_each_window_makes_its_row_and_the_target_ends_the_output() -> None:
    out = run_script("collect_throughput.py", "--records", "3000", "--rounds", "1")
    rows = [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ")]
    assert rows == [
        "side",
        "unbounded (1 PiB)",
        "bound 32 MiB (default)",
        "bound 1 MiB",
    ], out
    assert_targets(out, "collect throughput with bound")
