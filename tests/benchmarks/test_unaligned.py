"""benchmarks/unaligned.py still runs (tests/benchmarks/smoke.py): short runs of two modes at
one sleep level, and the fan-out table's modes, each make a row
and issue 5's two target lines end the output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import unaligned

from .smoke import assert_targets, lines_after, run_script


@pytest.mark.bench_smoke
def test_short_runs_of_both_tables_make_their_rows() -> None:
    out = run_script("unaligned.py", "--seconds", "0.5", "--sleeps-ms", "0.1",
                     "--modes", "off;unaligned")  # fmt: skip
    backpressure, fan_out = out.split("\nfan-out: ", 1)
    rows = [line.split() for line in backpressure.splitlines() if line.startswith("    0.1 ")]
    assert [row[1] for row in rows] == ["off", "unaligned"], out
    table = lines_after(fan_out, "mode ")[: len(unaligned.FAN_OUT_MODES)]
    assert [line[:26].strip() for line in table] == list(unaligned.FAN_OUT_MODES), out
    assert_targets(out, "unaligned-p50", "unaligned-throughput")
