"""benchmarks/columnar_latency.py: percentiles over rows (a batch counts once per row) after
the warm-up, and paced stamps that keep the schedule when the source falls behind it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import columnar_latency

from .smoke import assert_targets, run_script


def test_percentiles_weigh_each_batch_by_its_rows_and_skip_the_warm_up() -> None:
    stamps = np.array([0.0, 10.0, 2000.0, 2001.0, 2002.0])
    latencies = np.array([900.0, 800.0, 5.0, 50.0, 7.0])
    rows = np.array([1.0, 1.0, 98.0, 1.0, 1.0])
    # the first two batches fall in the 1 s warm-up; of the 100 rows left, 98 took 5 ms
    (p50, p99), counted = columnar_latency.row_percentiles(stamps, latencies, rows, 1000.0)
    assert counted == 100
    assert p50 == 5.0
    assert p99 == 7.0  # the 99th row of 100 in latency order
    (_, p100), _ = columnar_latency.row_percentiles(stamps, latencies, rows, 1000.0, (0.5, 1.0))
    assert p100 == 50.0


def test_percentiles_refuse_a_run_with_nothing_after_the_warm_up() -> None:
    with pytest.raises(ValueError, match="warm-up"):
        columnar_latency.row_percentiles(np.array([0.0]), np.array([1.0]), np.array([1.0]), 5.0)


def test_a_run_within_its_warm_up_is_repeated_over_twice_the_rows() -> None:
    asked: list[int] = []

    def run(rows: int) -> str:
        asked.append(rows)
        stamps = np.arange(0.0, rows * 10.0, 10.0)  # a batch every 10 ms
        ones = np.ones(rows)
        columnar_latency.row_percentiles(stamps, ones, ones, 1000.0)
        return f"measured over {rows}"

    assert columnar_latency.past_warmup(run, 30) == ("measured over 120", 120)
    assert asked == [30, 60, 120]
    with pytest.raises(columnar_latency.WithinWarmup):  # tries run out
        columnar_latency.past_warmup(run, 2, tries=3)


def test_paced_stamps_are_due_times_even_when_late() -> None:
    paced = columnar_latency.PacedStamps(rate=1000.0)
    assert paced.due(100.0) == 100.0
    paced.seen = 500
    # 500 rows at 1,000 rows/s are due at 100.5 s; a call at 103 s (late) keeps 100.5
    assert paced.due(103.0) == 100.5
    assert columnar_latency.PacedStamps(rate=None).due(103.0) == 103.0


def test_stamps_are_milliseconds_of_the_creation_time() -> None:
    paced = columnar_latency.PacedStamps(rate=None)
    out = paced.map_batches(pa.record_batch({"value": np.arange(1000, 1003)}))
    created = out.column("created").to_pylist()
    assert len(set(created)) == 1 and created[0] > 1_700_000_000_000
    assert out.column("k").to_pylist() == [0, 1, 2] and paced.seen == 3


def test_the_sink_rate_runs_from_the_first_creation_to_the_last_arrival() -> None:
    # 3,000 rows created from t = 1,000 ms; the last arrives at 2,500 + 500 = 3,000 ms
    stamps, latencies = np.array([1000.0, 2500.0, 2000.0]), np.array([100.0, 500.0, 50.0])
    rate = columnar_latency.sink_rate(stamps, latencies, np.array([1000.0, 1000.0, 1000.0]))
    assert rate == 1500.0


def test_a_batch_that_comes_before_it_is_due_is_stamped_now_not_in_the_future() -> None:
    paced = columnar_latency.PacedStamps(rate=1.0)
    before = time.time() * 1000
    paced.map_batches(pa.record_batch({"value": np.arange(5)}))  # due at once
    out = paced.map_batches(pa.record_batch({"value": np.arange(5)}))  # due in 5 s
    assert before - 1 <= out.column("created")[0].as_py() <= time.time() * 1000


def test_the_timeline_puts_rows_cpu_and_checkpoints_in_the_step_they_came() -> None:
    """Rows by arrival (stamp + latency), the job's cores from the CPU samples' differences
    over a step, and each completed checkpoint in the step its console line came."""
    seen = columnar_latency.Observed(
        stamps=np.array([10_000.0, 10_500.0, 11_200.0]),
        latencies=np.array([100.0, 900.0, 50.0]),  # arrivals 10,100; 11,400; 11,250
        rows=np.array([100_000.0, 3_000_000.0, 2_000_000.0]),
        cpu=[(9.5, 0.0, 0.0), (10.0, 0.5, 0.1), (11.0, 1.5, 3.1), (12.0, 1.6, 3.2)],
        console=[(11_300.0, "[undertow] checkpoint 7 completed in 420 ms, 1 KiB (aligned)"),
                 (10_200.0, "[undertow] job started")],
        seconds=2.0,
    )  # fmt: skip
    lines = columnar_latency.timeline(seen, step_ms=1000.0)
    assert len(lines) == 3  # from a step before the first creation to the last arrival
    first, second, third = lines
    # 9.0-10.0 s: one sample, no span to measure over
    assert "0.00 M rows/s" in first and "cores ran 0.00 waited  0.00" in first
    # 10.0-11.0 s: from the 9.5 s sample to the 10.0 s one
    assert "0.10 M rows/s" in second and "latency     100-    100 ms" in second
    assert "cores ran 1.00 waited  0.20" in second and "completed" not in second
    assert "5.00 M rows/s" in third and "latency      50-    900 ms" in third
    assert "cores ran 1.00 waited  3.00" in third
    assert third.endswith("7 completed in 420 ms, 1 KiB")


def test_the_console_keeps_each_line_with_the_time_its_end_came() -> None:
    console = columnar_latency.TimedConsole()
    before = time.time() * 1000
    console.write("checkpoint 1 compl")
    assert console.lines == []
    console.write("eted\nnext\n")
    assert [line for _, line in console.lines] == ["checkpoint 1 completed", "next"]
    assert all(before <= at <= time.time() * 1000 for at, _ in console.lines)


def test_the_target_judges_the_median_of_the_paced_rounds() -> None:
    # one round short of CPU (seconds) does not decide, nor does one lucky round
    assert columnar_latency.judge([40.8, 5205.0, 52.8]) == (52.8, True)
    assert columnar_latency.judge([40.8, 5205.0, 130.0]) == (130.0, False)
    assert columnar_latency.judge([100.0]) == (100.0, True)
    with pytest.raises(ValueError, match="no paced round"):
        columnar_latency.judge([])


@pytest.mark.bench_smoke
def test_the_script_still_runs_a_short_paced_run() -> None:
    """tests/benchmarks/smoke.py: a 2 s run paced at 100,000 rows/s prints its timeline, the
    sink's line and the target."""
    out = run_script("columnar_latency.py", "--rate", "100000", "--seconds", "2",
                     "--warmup-ms", "200")  # fmt: skip
    assert "\nsink " in out and " rows/s, p50 " in out, out
    assert_targets(out, "columnar-latency-p99")
