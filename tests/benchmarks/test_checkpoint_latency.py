"""benchmarks/checkpoint_latency.py still runs (tests/benchmarks/smoke.py): one shape, off and
unaligned, for 2 s each through benchmarks/peers/run_shape.py, makes the shape's row and the
issue's target lines; ``--stop-savepoint`` stops the anchor job with an aligned and with an
unaligned savepoint and ends with its target line."""

from __future__ import annotations

import pytest

from .smoke import assert_targets, lines_after, run_script


@pytest.mark.bench_smoke
def test_one_shape_makes_its_row_and_targets() -> None:
    out = run_script("checkpoint_latency.py", "--shapes", "anchor-sleep", "--modes",
                     "unaligned", "--targets", "local", "--seconds", "2")  # fmt: skip
    assert "\nanchor-sleep: source -> map -> key_by -> map sleeping 1 ms, p=1\n" in out, out
    rows = [line.split() for line in out.splitlines() if line.startswith("unaligned ")]
    assert [row[:2] for row in rows] == [["unaligned", "undertow/local"]], out
    if "no checkpoint completed" in out:  # none in the 2 s window: the p50's line says so
        assert_targets(out, "anchor-sleep, unaligned, undertow/local p50")
    else:
        assert_targets(
            out,
            "anchor-sleep, unaligned, undertow/local p50",
            "anchor-sleep, unaligned, undertow/local throughput",
        )


@pytest.mark.bench_smoke
@pytest.mark.timeout(600)
def test_stop_with_savepoint_makes_both_rows_and_its_target() -> None:
    out = run_script("checkpoint_latency.py", "--stop-savepoint", "--shapes", "anchor-sleep",
                     "--targets", "local", "--seconds", "2", timeout=500)  # fmt: skip
    rows = [row.split() for row in lines_after(out, "shape ")[:2]]
    assert [row[:3] for row in rows] == [
        ["anchor-sleep", "undertow/local", "aligned"],
        ["anchor-sleep", "undertow/local", "unaligned"],
    ], out
    assert_targets(out, "anchor-sleep, undertow/local unaligned stop")
