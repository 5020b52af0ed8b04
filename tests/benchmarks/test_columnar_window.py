"""benchmarks/columnar_window.py: undertow's event time makes the same windows as Spark's
(``event_rate`` rows per second of event time over the job), whatever the parallelism and
however a subtask's rows are cut into batches."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import columnar_window

from .smoke import assert_targets, lines_after, run_script


def test_the_subtasks_together_make_the_event_rate_per_second_of_event_time() -> None:
    # two subtasks of 1,500 rows each at 1,000 rows per event second: 3 windows of 1,000 rows
    times = np.concatenate([columnar_window.event_times(0, 1500, 1000, 2) for _ in range(2)])
    windows, counts = np.unique(times // 1000, return_counts=True)
    assert windows.tolist() == [0, 1, 2]
    assert counts.tolist() == [1000, 1000, 1000]


def test_a_subtask_numbers_its_rows_across_batches() -> None:
    columns = columnar_window.EventTimeColumns(event_rate=4, parallelism=2)
    first = columns.map_batches(pa.record_batch({"value": np.arange(10, 13)}))
    second = columns.map_batches(pa.record_batch({"value": np.arange(13, 15)}))
    # 2 rows per second per subtask: row i at i * 500 ms, continued in the second batch
    assert first.column("ts").to_pylist() == [0, 500, 1000]
    assert second.column("ts").to_pylist() == [1500, 2000]
    assert first.column("k").to_pylist() == [10, 11, 12]
    assert second.column("v").to_pylist() == [13, 14]


def test_a_watched_round_passes_its_rate_through_and_reads_cores() -> None:
    """The rate is the measurement's; the CPU is ``process_cpu.cores`` of the round (its
    sampling is tested in tests/benchmarks/test_process_cpu.py)."""
    rate, cores = columnar_window.watched(lambda: 42.0)
    assert rate == 42.0
    # ", beside weighted cgroup(s) ..." follows when a weighted job of someone else runs
    words = cores.split(",", 1)[0].split()
    assert (words[0], words[2], words[4]) == ("ran", "waited", "cores")
    assert float(words[1]) >= 0.0 and float(words[3]) >= 0.0


@pytest.mark.bench_smoke
@pytest.mark.timeout(900)
def test_the_script_still_runs_a_round_at_a_tiny_size() -> None:
    """tests/benchmarks/smoke.py: one round over 100,000 rows, and Spark at one batch size,
    make the three rows and the target."""
    out = run_script("columnar_window.py", "--rows", "100000", "--spark-batches", "50000",
                     "--rounds", "1", timeout=600)  # fmt: skip
    table = lines_after(out, "engine ")[:3]
    assert [row[:20] for row in table] == [
        "undertow columnar, a",
        "undertow columnar, s",
        "Spark native (best: ",
    ], out
    assert_targets(out, "windowed-vs-spark-native")
