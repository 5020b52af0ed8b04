"""benchmarks/debloat.py still runs (tests/benchmarks/smoke.py): its default cases at a tiny
size make every mode's row of the anchor job's table (a stop that takes past 30 s shows as
``>30``: aligned and unaligned with debloating off under backpressure) and the throughput
ratio. The script sets no target line; its throughput line names its bar."""

from __future__ import annotations

import pytest

from .smoke import lines_after, run_script

MODES = [
    "aligned, off",
    "aligned, on (1 s)",
    "aligned, on (300 ms)",
    "aligned, on, Flink's aim",
    "aligned, on, aim 100 ms",
    "unaligned, off",
    "unaligned, on (1 s)",
    "unaligned, on, aim 100 ms",
]


@pytest.mark.bench_smoke
@pytest.mark.timeout(600)
def test_the_default_cases_make_every_row_and_the_ratio() -> None:
    out = run_script("debloat.py", "--seconds", "1", "--records", "5000", "--repeats", "1",
                     timeout=400)  # fmt: skip
    table = lines_after(out, "mode ")[: len(MODES)]
    assert [row[:28].strip() for row in table] == MODES, out
    assert "\ndebloating off  best " in out and "\ndebloating on   best " in out, out
    assert "\nratio on/off: best " in out, out


@pytest.mark.bench_smoke
@pytest.mark.timeout(900)
def test_the_pyflink_case_runs_the_anchor_job_on_the_peer_venv() -> None:
    """The ``pyflink`` case's three modes each report a p50 (``failed: ...`` else): its
    interpreter is benchmarks/peers/pyflink_venv.py's, as the other peer tables' (it named a
    venv path that no longer exists, and the script died of FileNotFoundError)."""
    out = run_script("debloat.py", "--cases", "pyflink", "--seconds", "2", timeout=600)
    rows = lines_after(out, "PyFlink (process mode), anchor job")
    assert [row[:22].strip() for row in rows] == [
        "aligned, off", "aligned, on (1 s)", "aligned, on (300 ms)"
    ], out  # fmt: skip
    assert all(" p50 " in row for row in rows), out
