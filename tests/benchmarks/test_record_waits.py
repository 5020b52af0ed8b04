"""benchmarks/record_waits.py: the workers are the sampled processes the driver did not fork
itself, the slept share is over all workers' time, the busiest worker is the one that ran
longest, and a variant's added sleep is taken per round (the machine's phase moves both)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from process_cpu import ThreadLife
from record_waits import Run, TaskWait, added_slept, checkpoint_pair, describe, workers_of

from .smoke import assert_targets, lines_after, run_script

DRIVER = 100
FORK_SERVER = ThreadLife(DRIVER, 4.0, 0.1, 0.0)


def _run(*workers: ThreadLife, rows: int = 1000) -> Run:
    return Run(rows, 4.0, workers, ())


def test_the_workers_are_the_fork_servers_children_not_the_fork_server() -> None:
    a, b = ThreadLife(101, 4.0, 3.0, 0.5), ThreadLife(101, 4.0, 2.5, 0.5)
    assert workers_of({101: FORK_SERVER, 102: a, 103: b}, DRIVER) == (a, b)


def test_slept_share_is_over_all_workers_and_the_busiest_ran_longest() -> None:
    busy = ThreadLife(101, 4.0, 3.6, 0.4)  # slept 0
    idle = ThreadLife(101, 4.0, 2.4, 0.4)  # slept 1.2
    run = _run(idle, busy)
    assert run.slept_share == pytest.approx(1.2 / 8.0)
    assert run.busiest is busy
    assert run.ns_per_row == pytest.approx(6.0 / 1000 * 1e9)


def test_added_sleep_is_the_median_of_the_rounds_differences() -> None:
    def slept(share: float) -> Run:
        return _run(ThreadLife(101, 10.0, 10.0 * (1 - share), 0.0))

    # two rounds in which the second variant sleeps 1% more, and one in a quieter phase for it:
    # the median of the differences is 1%; the medians' difference would be 0.06 - 0.20
    base = [slept(0.05), slept(0.30), slept(0.20)]
    other = [slept(0.06), slept(0.31), slept(0.02)]
    assert added_slept({"base": base, "other": other}, "base", "other") == pytest.approx(0.01)


def test_a_run_is_described_by_worker_and_task() -> None:
    run = Run(2_000_000, 2.0, (ThreadLife(101, 2.0, 1.0, 0.5), ThreadLife(101, 2.0, 1.5, 0.5)),
              (TaskWait("v1/0", 500.0, 0.0, 1500.0, 1_032_000),))  # fmt: skip
    line = describe(run)
    assert line.startswith("  1,000,000 rows/s")
    assert "worker 0: ran 75% queued 25% slept 0.0% of 2.00 s" in line
    assert "worker 1: ran 50% queued 25% slept 25.0% of 2.00 s" in line
    assert line.endswith("v1/0 bp 0% idle 75% in 1,032,000")


def test_the_checkpoint_target_compares_only_a_second_variant_that_adds_checkpoints() -> None:
    every = {"execution.checkpointing.interval": "1 s"}
    assert checkpoint_pair({"plain": {}, "every 1 s": every}) == ("plain", "every 1 s")
    assert checkpoint_pair({"plain": {}, "p=1": {"parallelism.default": "1"}}) is None
    assert checkpoint_pair({"every 1 s": every, "every 1 s, final": every}) is None
    assert checkpoint_pair({"plain": {}}) is None


@pytest.mark.bench_smoke
def test_the_script_still_runs_a_round_at_a_tiny_size() -> None:
    """tests/benchmarks/smoke.py: one round of its default variants over 40,000 rows prints
    each variant's row and both targets."""
    out = run_script("record_waits.py", "--rows", "40000", "--rounds", "1")
    table = lines_after(out, "variant (medians)")
    assert [row[:12] for row in table[:2]] == ["p=2, no chec", "p=2, checkpo"], out
    assert_targets(out, "record-job-busiest-worker-slept", "record-job-checkpoints-added-sleep")
