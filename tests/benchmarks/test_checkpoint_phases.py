"""benchmarks/checkpoint_phases.py still runs (tests/benchmarks/smoke.py): a 4 s run of the
anchor-spin shape prints, per completed checkpoint, each vertex's phases read from the REST
API's subtask details, then their medians. The script sets no target."""

from __future__ import annotations

import pytest

from .smoke import lines_after, run_script


@pytest.mark.bench_smoke
def test_a_short_run_prints_each_checkpoints_phases_and_the_medians() -> None:
    out = run_script("checkpoint_phases.py", "--seconds", "4")
    assert "\nanchor-spin, unaligned, local: per vertex" in "\n" + out, out
    assert "\nmedian e2e " in out, out
    medians = lines_after(out, "median e2e ")
    assert len(medians) == 2, out  # the anchor job's two vertices
    for row in medians:
        words = row.split()
        assert words[-10::2] == ["start_delay", "alignment", "sync", "async", "ack"], out
