"""benchmarks/incremental_channel_state.py still runs (tests/benchmarks/smoke.py): two short
runs, incremental channel state on and off, print a row each and the summary line (the issue
sets no target, so the line says ``result``, not ``target``)."""

from __future__ import annotations

import pytest

from .smoke import lines_after, run_script, target_lines


@pytest.mark.bench_smoke
def test_two_short_runs_print_both_rows_and_the_summary() -> None:
    out = run_script("incremental_channel_state.py", "--seconds", "2")
    rows = lines_after(out, "incremental ")[:2]
    assert [row.split()[0] for row in rows] == ["on", "off"], out
    assert "\nresult incremental-channel-state: bytes written per checkpoint" in out
    assert target_lines(out) == {}
