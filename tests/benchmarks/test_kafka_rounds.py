"""benchmarks/kafka_rounds.py: a job's row is the medians over its burst/paced rounds, and its
latency is the whole latency record of the round with the median p50 (not a mix of rounds)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kafka_load as load
import kafka_rounds as bench


def _round(saturation: float | None, rate: float, p50: float | None) -> object:
    latency = None if p50 is None else load.Latency(p50, p50 * 2, p50, 100, 0)
    return bench.Round(saturation, None, rate, latency, p50 and p50 / 10, "1 1 1")


def test_the_row_takes_medians_and_the_median_rounds_latency() -> None:
    rounds = [
        _round(10_000, 5_000, 900.0),
        _round(40_000, 20_000, 12.0),
        _round(30_000, 15_000, 30.0),
    ]
    row = bench.job_figures("undertow AT_LEAST_ONCE", rounds, 0, "")
    assert (row.saturation, row.rate) == (30_000, 15_000)
    assert row.latency.p50_ms == 30.0 and row.latency.p99_ms == 60.0
    assert row.consumer_ms == 3.0
    assert row.rounds == tuple(rounds)


def test_rounds_without_figures_are_left_out_of_the_medians() -> None:
    rounds = [_round(None, 5_000, None), _round(20_000, 10_000, 8.0)]
    row = bench.job_figures("x", rounds, 0, "round 2: ...")
    assert row.saturation == 20_000 and row.latency.p50_ms == 8.0
    assert bench.job_figures("x", [], 0, "could not run").latency is None


def _searched(saturation: float, sustainable: float, p50: float, half_burst_p50: float) -> object:
    verdict = bench.sustain.Verdict(saturation / 2, False, 20.0, 900.0)
    probe = bench.Probe(verdict, load.Latency(half_burst_p50, half_burst_p50, 1, 100, 0))
    # the search's later phases: only the first is at half of the burst's rate
    later = bench.Probe(bench.sustain.Verdict(sustainable, True, 20.0, 20.0),
                        load.Latency(5.0, 5.0, 5.0, 100, 0))  # fmt: skip
    latency = load.Latency(p50, p50 * 2, p50, 100, 0)
    return bench.Round(saturation, None, sustainable / 2, latency, 1.0, "1 1 1", None, None,
                       sustainable, (probe, later))  # fmt: skip


def test_the_row_takes_the_median_sustainable_rate_and_half_burst_p50() -> None:
    rounds = [_searched(30_000, 6_000, 9.0, 900.0), _searched(34_000, 8_000, 12.0, 1_700.0),
              _searched(20_000, 4_000, 30.0, 400.0)]  # fmt: skip
    row = bench.job_figures("undertow AT_LEAST_ONCE", rounds, 0, "")
    assert (row.sustainable, row.half_burst_p50, row.rate) == (6_000, 900.0, 3_000)
    assert row.latency.p50_ms == 12.0


def test_the_target_line_says_which_saturation_it_is_judged_at() -> None:
    row = bench.job_figures("undertow AT_LEAST_ONCE", [_searched(30_000, 6_000, 9.0, 900.0)],
                            0, "")  # fmt: skip
    line = bench.latency_target(row, "<= 20 ms at half of saturation", 20)
    assert line.startswith("target undertow AT_LEAST_ONCE end-to-end p50: 9.0 ms at 3,000 ")
    assert "half of the maximum sustainable throughput 6,000 records/s" in line
    assert "the burst's draining rate: 30,000 records/s; p50 at half of it: 900.0 ms" in line
    assert line.endswith(": met")
    # paced at --rate: not judged
    assert bench.latency_target(row, "<= 20 ms", 20, rate=500).endswith(": not measured")
    failed = bench.job_figures("x", [_searched(30_000, 6_000, 25.0, 900.0)], 0, "")
    assert bench.latency_target(failed, "<= 20 ms", 20).endswith(": missed")


def _judged(sustainable: float, paced_kept_up: bool) -> object:
    """A round that found ``sustainable`` and whose paced phase at half of it kept up or not."""
    paced = bench.sustain.Verdict(sustainable / 2, paced_kept_up, 30.0,
                                  30.0 if paced_kept_up else 400.0)  # fmt: skip
    latency = load.Latency(10.0, 20.0, 10.0, 100, 0)
    return bench.Round(30_000, None, sustainable / 2, latency, 1.0, "1 1 1", None, None,
                       sustainable, (), None, paced)  # fmt: skip


def test_a_noisy_search_is_said_in_the_rows_problems_and_target_line() -> None:
    steady = bench.job_figures("x", [_judged(10_000, True), _judged(12_000, True)], 0, "")
    assert bench.search_problems(steady) == []
    assert "noisy" not in bench.latency_target(steady, "<= 20 ms", 20)
    behind = bench.job_figures("x", [_judged(10_000, True),
                                     replace(_judged(12_000, False), number=2)], 0, "")  # fmt: skip
    (problem,) = bench.search_problems(behind)
    assert problem.startswith("round 2: the paced phase fell behind (6,000/s fell behind")
    assert "the rate search was noisy" in bench.latency_target(behind, "<= 20 ms", 20)
    spread = bench.job_figures("x", [_judged(10_000, True), _judged(16_000, True)], 0, "")
    (problem,) = bench.search_problems(spread)
    assert "spread from 10,000 to 16,000 records/s" in problem


def test_the_target_line_names_the_rate_of_the_round_whose_p50_it_is() -> None:
    # the median p50 (30 ms) is round 3's, paced at 7,000 of 14,000; the median rate is 1,500
    rounds = [_searched(30_000, 2_000, 9.0, 900.0), _searched(30_000, 3_000, 200.0, 900.0),
              _searched(30_000, 14_000, 30.0, 900.0)]  # fmt: skip
    rounds = [replace(r, number=i) for i, r in enumerate(rounds, 1)]
    row = bench.job_figures("undertow AT_LEAST_ONCE", rounds, 0, "")
    assert row.rate == 1_500
    line = bench.latency_target(row, "<= 20 ms", 20)
    assert (
        ": 30.0 ms at 7,000 records/s (round 3), half of the maximum sustainable throughput "
        "14,000 records/s found in that round (median of the rounds: 3,000;" in line
    )


def test_an_attempt_measured_again_is_printed_but_left_out_of_the_row(capsys) -> None:
    # round 2's first attempt: its rate (20,000) fell behind after the paced phase, whose p50
    # (900 ms) was at more than half of what the job sustained then; its second attempt counts
    closing = bench.sustain.Verdict(20_000, False, 30.0, 700.0)
    replaced = replace(_searched(40_000, 20_000, 900.0, 900.0), number=2, last=False,
                       closing=closing, problem="its sustainable rate fell behind")  # fmt: skip
    again = replace(_searched(40_000, 8_000, 12.0, 900.0), number=2, attempt=2,
                    closing=bench.sustain.Verdict(8_000, True, 12.0, 12.0))  # fmt: skip
    first = replace(_searched(30_000, 6_000, 9.0, 900.0), number=1)
    third = replace(_searched(30_000, 7_000, 500.0, 900.0), number=3)
    row = bench.job_figures("undertow AT_LEAST_ONCE", [first, replaced, again, third], 0, "")
    assert row.rounds == (first, replaced, again, third)
    # medians over rounds 1, 2 (its second attempt) and 3: not over the replaced attempt
    assert row.latency.p50_ms == 12.0 and row.sustainable == 7_000 and row.rate == 3_500
    line = bench.latency_target(row, "<= 20 ms", 20)
    assert ": 12.0 ms at 4,000 records/s (round 2), half of the maximum sustainable " in line
    assert line.endswith(": met") and "noisy" in line
    assert "1 attempt(s) at a round measured again (not counted)" in bench.search_problems(row)
    bench.print_jobs([row], row)
    out = capsys.readouterr().out
    assert "round 2, attempt 1" in out and "round 2, attempt 2" in out
    assert "not counted, measured again: its sustainable rate fell behind" in out
    assert "closing: 20,000/s fell behind (lag 30 -> 700 ms" in out
