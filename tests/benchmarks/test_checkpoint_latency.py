"""benchmarks/checkpoint_latency.py still runs (tests/benchmarks/smoke.py): one shape, off and
unaligned, for 2 s each through benchmarks/peers/run_shape.py, makes the shape's row and the
issue's verdict lines (``PASS``/``FAIL``, not yet the house's ``target`` lines)."""

from __future__ import annotations

import pytest

from .smoke import lines_after, run_script, target_lines


@pytest.mark.bench_smoke
def test_one_shape_makes_its_row_and_verdicts() -> None:
    out = run_script("checkpoint_latency.py", "--shapes", "anchor-sleep", "--modes",
                     "unaligned", "--targets", "local", "--seconds", "2")  # fmt: skip
    assert "\nanchor-sleep: source -> map -> key_by -> map sleeping 1 ms, p=1\n" in out, out
    rows = [line.split() for line in out.splitlines() if line.startswith("unaligned ")]
    assert [row[:2] for row in rows] == [["unaligned", "undertow/local"]], out
    verdicts = lines_after(out, "issue 14 targets:")
    assert all(line.split()[0] in ("PASS", "FAIL") for line in verdicts), out
    # p50 and throughput against off, or one FAIL when no checkpoint completed in the window
    assert 1 <= len(verdicts) <= 2, out
    assert target_lines(out) == {}
