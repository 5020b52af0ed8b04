"""benchmarks/throughput.py still runs (tests/benchmarks/smoke.py): a tiny cold run prints
the plain loop's row and undertow's at p=1 and p=2 on the ``local`` target. The script sets
no target line."""

from __future__ import annotations

from .smoke import run_script


def test_a_cold_run_prints_the_loop_and_both_parallelisms() -> None:
    out = run_script("throughput.py", "--records", "5000", "--cold")
    rows = out.splitlines()
    assert rows[0].split() == ["run", "records/s", "vs", "plain", "loop"], out
    assert [row.rsplit(None, 2)[0] for row in rows[1:]] == [
        "plain Python loop, 1 process",
        "undertow local p=1",
        "undertow local p=2",
    ], out
