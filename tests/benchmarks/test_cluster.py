"""benchmarks/cluster.py still runs (tests/benchmarks/smoke.py): on test hosts in network
namespaces (root and iproute2, as ``make cluster-test``), one small run per layout, the kill
of a host and a healed partition make every row and line. The issue sets no target, so no
target line is printed."""

from __future__ import annotations

import pytest
from tests.cluster import netns

from .smoke import lines_after, run_script, target_lines


@pytest.mark.bench_smoke
@pytest.mark.timeout(1200)
def test_one_run_per_layout_and_both_faults_make_every_figure() -> None:
    problem = netns.unavailable()
    if problem is not None:
        pytest.skip(f"benchmarks/cluster.py needs test hosts: {problem}")
    out = run_script("cluster.py", "--records", "20000", "--repeats", "1", "--storage",
                     "shared", timeout=1100)  # fmt: skip
    rows = [row.split() for row in lines_after(out, "layout ")[:2]]
    assert [row[:2] for row in rows] == [["one", "host"], ["two", "hosts"]], out
    assert "\ntwo hosts / one host: throughput " in out, out
    assert "\nhost killed -> records flowing again: " in out, out
    assert "\npartition past the heartbeat timeout healed -> next checkpoint: " in out, out
    assert target_lines(out) == {}
