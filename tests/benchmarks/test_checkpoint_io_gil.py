"""benchmarks/checkpoint_io_gil.py still runs: one short round of every write strategy
prints a row per strategy and the summary table against ``off``, in a few seconds, so it
runs in ``make test`` (tests/benchmarks/smoke.py). The script sets no target."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import checkpoint_io_gil

from .smoke import lines_after, run_script


def test_one_round_of_every_strategy_makes_the_summary() -> None:
    out = run_script("checkpoint_io_gil.py", "--rounds", "1", "--seconds", "0.3",
                     "--size", "4096")  # fmt: skip
    names = list(checkpoint_io_gil.STRATEGIES)
    for name in names:
        assert f"round 1 {name} " in out, out
    table = lines_after(out, "strategy ")
    assert [line.split()[0] for line in table] == names, out
    assert table[names.index("off")].split()[-1] == "1.000x"
