"""benchmarks/columnar.py: its timed undertow runs measure the job, not a wait after it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import columnar

from .smoke import assert_targets, lines_after, run_script


def test_a_bounded_run_ends_without_waiting_for_the_next_checkpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With a final checkpoint (FLIP-147) a bounded run waits for the next periodic trigger:
    here a minute, wall clock that steady_rate's difference of two runs would not cancel."""
    slow = {**columnar.CHECKPOINTS, "execution.checkpointing.interval": "60 s"}
    monkeypatch.setattr(columnar, "CHECKPOINTS", slow)
    start = time.monotonic()
    reported = columnar.undertow_columnar(20_000, 4096, str(tmp_path))
    took = time.monotonic() - start
    assert reported <= took < 45, f"the run took {took:.1f} s (reported {reported:.1f} s)"


@pytest.mark.bench_smoke
@pytest.mark.timeout(1200)
def test_the_script_still_runs_at_a_tiny_size() -> None:
    """tests/benchmarks/smoke.py: every row of the table, Spark's pandas UDF included (a
    failure there is printed as ``not measured`` and the script goes on), and the three
    targets, at a tiny size with one round of each."""
    out = run_script(
        "columnar.py", "--rows", "100000", "--columnar-rows", "200000", "--record-rows",
        "40000", "--spark-batches", "50000", "--pandas-rows", "20000", "--rounds", "1",
        "--latency-seconds", "2", "--latency-rounds", "1", "--latency-warmup-ms", "200",
        "--spark-rounds", "1", timeout=900,
    )  # fmt: skip
    assert "Spark pandas UDF not measured" not in out, out
    table = lines_after(out, "engine ")
    assert [row[:46].strip() for row in table[:8]] == [
        "undertow columnar",
        "undertow columnar, debloating off",
        "undertow per record, p=2",
        "undertow per record, p=2, start included",
        "bare Python loop, 1 process",
        "bare Python loop, 2 processes",
        "Spark native (best: 50,000 rows/batch)",
        "Spark pandas UDF (applyInPandasWithState)",
    ], out
    assert_targets(
        out,
        "columnar-vs-spark-native",
        "record-path-vs-bare-loop",
        "columnar-latency-p99-at-spark-rate",
    )
