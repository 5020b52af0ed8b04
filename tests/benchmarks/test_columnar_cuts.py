"""benchmarks/columnar_cuts.py still runs (tests/benchmarks/smoke.py): a tiny run with cuts
and without prints both rows, the probe's hops (benchmarks/checkpoint_hops.py, which wraps
runtime methods by name: a renamed method breaks it) and the target line."""

from __future__ import annotations

import pytest

from .smoke import assert_targets, lines_after, run_script


@pytest.mark.bench_smoke
def test_a_tiny_run_with_the_probe_prints_both_rows_and_the_hops() -> None:
    out = run_script("columnar_cuts.py", "--rows", "20000", "--batch-rows", "2000", "--probe")
    rows = lines_after(out, "row cuts ")[:2]
    assert [row.split()[0] for row in rows] == ["on", "off"], out
    hops = lines_after(out, "hop ")
    named = {row.rsplit(None, 3)[0] for row in hops if row.strip() and not row.startswith("target")}
    assert {"trigger decided", "barrier taken by task", "ack received",
            "checkpoint completed"} <= named, out  # fmt: skip
    assert_targets(out, "unaligned-p50-with-row-cuts")
