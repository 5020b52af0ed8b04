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
