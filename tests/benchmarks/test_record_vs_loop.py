"""benchmarks/record_vs_loop.py: the loop computes the job's running sums, and the steady state
is the difference of the two runs (the figures of issue 31's record-path target rest on both)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import record_vs_loop
from record_vs_loop import Sample

from .smoke import assert_targets, run_script


def test_the_loop_keeps_the_running_sum_per_key() -> None:
    sums = record_vs_loop.loop(1, 2500)
    assert len(sums) == 1000
    assert sums[1] == (1, 3)  # 1, 1001, 2001
    assert sums[0] == (0, 2)  # 1000, 2000
    assert sums[600] == (600, 2)  # 600, 1600


def test_steady_subtracts_the_small_run() -> None:
    runs = {100: Sample(100, 2.0, 1.5, 0.25), 800: Sample(800, 5.5, 4.0, 0.75)}
    got = record_vs_loop.steady(runs.__getitem__, 800)
    assert got == Sample(700, 3.5, 2.5, 0.5)
    assert record_vs_loop.steady_runs(runs.__getitem__, 800) == (got, runs[800])


def test_rounds_whose_steady_figures_imply_more_cores_than_the_machine_has_are_named() -> None:
    """4.49 M rows/s at 0.57 us CPU per row is 2.56 cores on a 2-core machine (the run of
    5b45320): such a round's wall difference is noise, and the benchmark says so."""
    assert Sample(3_500_000, 0.78, 1.995).cores == pytest.approx(2.56, abs=0.01)
    figures = record_vs_loop.Figures(
        1.0, 1.0, 1.0, 1.0, 1.0, (0.5, 0.5, 0.5), (0.7, 0.7, 0.7), job_cores=(1.2, 2.56, 1.1)
    )
    assert figures.impossible_rounds(2) == [1]
    assert figures.impossible_rounds(4) == []
    assert "round(s) 1 above this machine's 2 cores" in record_vs_loop.arithmetic(figures, 2)
    assert "above" not in record_vs_loop.arithmetic(figures, 4)


def test_ratios_are_the_median_of_each_rounds() -> None:
    figures = record_vs_loop.Figures(1.0, 1.0, 1.0, 1.0, 1.0, (0.2, 0.9, 0.3), (0.5, 0.1, 0.4))
    assert figures.cpu_ratio == 0.3 and figures.wall_ratio == 0.4


def test_a_round_divides_by_the_loops_just_before_and_after_its_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop's CPU per record in a round is the mean of its runs around the job: the
    machine's phase moves both sides (docs/performance.md), a loop before the job alone does
    not see the phase the job ran in."""
    loops = iter([Sample(800, 1.0, 0.8), Sample(800, 1.0, 1.6)])  # 1 then 2 ms per record
    monkeypatch.setattr(record_vs_loop, "loop_sample", lambda rows: next(loops))
    monkeypatch.setattr(record_vs_loop, "two_loops_wall", lambda rows: 1.0)
    monkeypatch.setattr(record_vs_loop.throughput, "run_job", lambda *args: 0.0)
    jobs = {100: Sample(100, 1.0, 1.0), 800: Sample(800, 2.0, 3.1)}  # steady: 3 ms per record
    monkeypatch.setattr(record_vs_loop, "job_sample", lambda rows, settings: jobs[rows])
    figures = record_vs_loop.measure(800, 1, {}, verbose=False)
    assert figures.cpu_ratios == pytest.approx((1.5 / 3.0,))
    assert figures.loop_cpu_us == pytest.approx(1500.0)  # 2.4 s over 1,600 rows
    assert figures.job_cores == pytest.approx((2.1,))  # 2.1 s of CPU in 1 s of wall
    assert figures.run_rate == pytest.approx(400.0)  # the long run: 800 rows in 2 s


def test_a_bracket_sums_the_two_loops() -> None:
    got = record_vs_loop.bracket(Sample(100, 1.0, 0.3), Sample(300, 2.0, 0.5))
    assert got == Sample(400, 3.0, 0.8)


def test_a_job_run_ends_without_waiting_for_a_final_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bounded run would wait for a final checkpoint at the next periodic trigger: idle
    wall clock, up to an interval, that the steady state's difference does not cancel."""
    seen: list[dict[str, str]] = []
    monkeypatch.setattr(record_vs_loop.throughput, "run_job",
                        lambda rows, p, target, settings: seen.append(settings) or 1.0)  # fmt: skip
    settings = {"execution.checkpointing.interval": "1 s"}
    assert record_vs_loop.job_sample(1000, settings).wall_s == 1.0
    assert seen == [{**settings, "execution.checkpointing.checkpoints-after-tasks-finish": "false"}]


@pytest.mark.bench_smoke
def test_the_script_still_runs_a_round_at_a_tiny_size() -> None:
    """tests/benchmarks/smoke.py: one round over 40,000 rows prints both sides and the
    target line."""
    out = run_script("record_vs_loop.py", "--rows", "40000", "--rounds", "1")
    assert "  round 0: job " in out, out
    for side in ("undertow per record, p=2 (steady)", "bare loop, 1 process",
                 "bare loop, 2 processes"):  # fmt: skip
        assert f"\n{side} " in out, out
    assert_targets(out, "record-path-vs-bare-loop")
