"""benchmarks/kafka_sustainable.py: how the Kafka benchmark decides that a job kept up with a
rate, and how it bisects the maximum sustainable throughput, without a broker."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kafka_sustainable as sustain


def _phase(rate: float, capacity: float, seconds: float = 4.0, base_ms: float = 10.0) -> list:
    """Lag samples every 20 ms of a job with ``capacity`` records/s offered ``rate``: the
    latency ``base_ms`` in records, plus the backlog that grows while the rate exceeds it."""
    samples = []
    for step in range(int(seconds / 0.02)):
        at = step * 0.02
        backlog = max(0.0, rate - capacity) * at
        samples.append(sustain.LagSample(at, int(rate * base_ms / 1000 + backlog)))
    return samples


def test_a_job_whose_lag_stays_level_kept_up() -> None:
    verdict = sustain.judge(_phase(5_000, 8_000), 5_000)
    assert verdict.kept_up
    assert verdict.early_ms == pytest.approx(10, abs=1)
    assert verdict.late_ms == pytest.approx(10, abs=1)


def test_a_job_whose_lag_grows_fell_behind() -> None:
    # 10% over capacity: 0.1 s further behind per second, about 0.2 s between the thirds
    verdict = sustain.judge(_phase(8_800, 8_000), 8_800)
    assert not verdict.kept_up
    assert verdict.late_ms - verdict.early_ms > 150


def test_a_noisy_but_bounded_lag_kept_up() -> None:
    # a shared machine: every fifth sample 80 ms behind, in both thirds alike
    samples = [sustain.LagSample(s.at_s, s.lag * (8 if i % 5 == 0 else 1))
               for i, s in enumerate(_phase(2_000, 8_000))]  # fmt: skip
    assert sustain.judge(samples, 2_000).kept_up


def test_the_warm_up_second_is_not_judged() -> None:
    # a backlog from the phase before, drained in the first second
    samples = [sustain.LagSample(s.at_s, s.lag + (5_000 if s.at_s < 1.0 else 0))
               for s in _phase(2_000, 8_000)]  # fmt: skip
    assert sustain.judge(samples, 2_000).kept_up


def test_too_few_samples_or_no_rate_are_refused() -> None:
    with pytest.raises(ValueError, match="too few to judge"):
        sustain.judge([sustain.LagSample(1.5, 3)], 1_000)
    with pytest.raises(ValueError, match="positive rate"):
        sustain.judge(_phase(1_000, 2_000), 0)


def test_the_search_bisects_to_the_capacity_and_confirms_it() -> None:
    search = sustain.Search.start(16_000, steps=4)
    rates = []
    while (rate := search.next_rate()) is not None:
        rates.append(rate)
        search = search.after(sustain.judge(_phase(rate, 6_100), rate))
    assert rates == [8_000, 4_000, 6_000, 7_000, 6_000]  # the last: 6,000 again, confirmed
    assert search.sustainable == 6_000


def test_a_rate_kept_up_once_by_luck_is_not_the_sustainable_rate() -> None:
    # a job of 5,000 records/s capacity whose phase at 6,000 kept up once (a quiet moment of a
    # shared machine): the confirmation at 6,000 falls behind, the search steps down by the
    # ratio and 4,500 holds
    search = sustain.Search.start(16_000, steps=4)
    lucky = {6_000}
    rates = []
    while (rate := search.next_rate()) is not None:
        rates.append(rate)
        capacity = 10_000 if rate in lucky else 5_000
        lucky.discard(rate)
        search = search.after(sustain.judge(_phase(rate, capacity), rate))
    assert rates == [8_000, 4_000, 6_000, 7_000, 6_000, 4_500]
    assert search.sustainable == 4_500 == 6_000 * sustain.CONFIRM_RATIO


def test_a_search_whose_candidates_never_hold_has_no_sustainable_rate() -> None:
    search = sustain.Search.start(16_000, steps=1, confirms=2)
    search = search.after(sustain.Verdict(8_000, True, 10, 12))
    assert search.sustainable is None  # kept up once only
    for expected in (8_000, 6_000):
        assert search.next_rate() == expected
        search = search.after(sustain.Verdict(expected, False, 10, 900))
    assert search.next_rate() is None
    assert search.sustainable is None and search.high == 6_000
    # without confirmation the bisection's result stands
    once = sustain.Search.start(16_000, steps=1, confirms=0)
    once = once.after(sustain.Verdict(8_000, True, 10, 12))
    assert once.next_rate() is None and once.sustainable == 8_000


def test_a_search_where_nothing_kept_up_has_no_sustainable_rate() -> None:
    search = _nothing_kept_up(1_000)
    assert search.next_rate() is None
    assert search.sustainable is None and search.high == 250
    with pytest.raises(ValueError, match="positive burst rate"):
        sustain.Search.start(0, 3)


def _offered(samples: list, share: float) -> list:
    """``samples`` with the producer's count of a producer that sent ``share`` of the rate."""
    return [sustain.LagSample(s.at_s, s.lag, int(share * 10_000 * s.at_s)) for s in samples]


def test_a_phase_whose_producer_fell_short_of_the_rate_did_not_keep_up() -> None:
    # the lag stays level, but the producer sent 8,000 records/s of the 10,000 asked: the
    # phase shows nothing about 10,000 records/s
    short = sustain.judge(_offered(_phase(10_000, 20_000), 0.8), 10_000)
    assert not short.kept_up
    assert short.offered == pytest.approx(8_000, rel=0.01)
    assert "the producer sent only 8,000/s" in short.describe()
    full = sustain.judge(_offered(_phase(10_000, 20_000), 0.99), 10_000)
    assert full.kept_up and not full.under_offered


def test_a_level_lag_far_behind_is_a_standing_queue_not_keeping_up() -> None:
    # 2026-11-30: a phase 555 -> 583 ms behind was judged kept up; a job that keeps up with
    # capacity to spare drains such a queue, one at its capacity keeps it
    level = _phase(5_000, 8_000, base_ms=600.0)
    verdict = sustain.judge(level, 5_000)
    assert not verdict.kept_up
    assert verdict.late_ms - verdict.early_ms < sustain.SLACK_MS
    assert "a standing queue" in verdict.describe()
    # the same lag draining to a few ms by the last third kept up
    draining = [sustain.LagSample(s.at_s, s.lag if s.at_s < 2.0 else s.lag // 60)
                for s in level]  # fmt: skip
    assert sustain.judge(draining, 5_000).kept_up
    # and just under the bound still kept up
    assert sustain.judge(_phase(5_000, 8_000, base_ms=90.0), 5_000).kept_up


def test_an_output_that_waits_by_design_is_allowed_its_wait() -> None:
    # an exactly-once sink's records wait for the commit after the checkpoint (1 s here): a
    # level lag of 600 ms is its latency, not a standing queue; 1,300 ms is one
    level = _phase(5_000, 8_000, base_ms=600.0)
    assert sustain.judge(level, 5_000, wait_ms=1_000).kept_up
    verdict = sustain.judge(_phase(5_000, 8_000, base_ms=1_300.0), 5_000, wait_ms=1_000)
    assert not verdict.kept_up
    assert "more than 1,100 ms behind" in verdict.describe()


def _searched_at(capacity: float, burst_rate: float = 16_000) -> sustain.Search:
    """A search done against a job of steady ``capacity`` records/s."""
    search = sustain.Search.start(burst_rate, steps=4)
    while (rate := search.next_rate()) is not None:
        search = search.after(sustain.judge(_phase(rate, capacity), rate))
    return search


def test_an_attempt_counts_only_if_its_rate_held_after_the_paced_phase() -> None:
    search = _searched_at(6_100)
    assert search.sustainable == 6_000
    held = sustain.Attempt(search, sustain.judge(_phase(6_000, 6_100), 6_000))
    assert held.bracketed and held.problem() is None
    # the job's capacity fell to 4,000 during the paced phase: the closing phase at 6,000
    # falls behind, so the paced phase (3,000) was not at half of what the job sustained then
    fell = sustain.Attempt(search, sustain.judge(_phase(6_000, 4_000), 6_000))
    assert not fell.bracketed
    assert "fell behind after the paced phase" in (fell.problem() or "")
    # the next attempt searches below the rate that no longer held
    assert fell.retry_bound() == 6_000


def test_an_attempt_whose_search_found_no_rate_is_measured_again_from_lower() -> None:
    search = _nothing_kept_up(16_000)
    nothing = sustain.Attempt(search, None)
    assert not nothing.bracketed
    assert "no rate kept up twice" in (nothing.problem() or "")
    assert nothing.retry_bound() == 4_000 == search.high
    # a rate found but never run again after the paced phase does not count either
    unclosed = sustain.Attempt(_searched_at(6_100), None)
    assert not unclosed.bracketed and "not run again" in (unclosed.problem() or "")


def test_an_attempt_is_judged_on_a_finished_search_and_its_own_rate() -> None:
    with pytest.raises(ValueError, match="after its search is done"):
        sustain.Attempt(sustain.Search.start(16_000, steps=4), None)
    with pytest.raises(ValueError, match=r"runs the sustainable rate 6000\.0 again, not 5000"):
        sustain.Attempt(_searched_at(6_100), sustain.Verdict(5_000, True, 10, 10))


def _run(plan: sustain.RoundPlan, capacity: Callable[[sustain.Phase], float]
         ) -> tuple[Any, list[sustain.Phase]]:  # fmt: skip
    """Each phase the plan names, run against a job of ``capacity(phase)`` records/s until
    the attempt is over; returns the plan and the phases run."""
    phases = []
    while (phase := plan.next_phase()) is not None:
        phases.append(phase)
        plan = plan.after(sustain.judge(_phase(phase.rate, capacity(phase)), phase.rate))
    return plan, phases


def test_rounds_on_a_falling_machine_pace_at_half_of_a_rate_held_on_both_sides() -> None:
    # a job whose capacity is 8,100 records/s until the first attempt's paced phase ends and
    # 5,000 from then on: the harness's plan of a round (kafka_harness runs RoundPlan)
    fell = False

    def capacity(phase: sustain.Phase) -> float:
        nonlocal fell
        fell = fell or phase.kind is sustain.PhaseKind.CLOSING
        return 5_000.0 if fell else 8_100.0

    first, phases = _run(sustain.RoundPlan.start(16_000, steps=4), capacity)
    kinds = [p.kind for p in phases]
    assert kinds == [sustain.PhaseKind.SEARCH] * 5 + [sustain.PhaseKind.PACED,
                                                       sustain.PhaseKind.CLOSING]  # fmt: skip
    assert first.sustainable == 8_000 and first.paced_rate == 4_000
    assert first.paced.kept_up and not first.closing.kept_up
    assert "fell behind after the paced phase" in first.problem() and not first.last
    second, phases = _run(first.retry(), capacity)
    # searched below 8,000 and paced at half of a rate the job held at 5,000 of capacity
    assert second.number == 2 and phases[0].rate == 4_000
    assert second.problem() is None and second.last
    assert second.paced_rate * 2 == second.sustainable <= 5_000
    assert second.closing.rate == second.sustainable
    with pytest.raises(ValueError, match="ends its round"):
        second.retry()
    with pytest.raises(ValueError, match="is over"):
        second.after(second.closing)


def test_a_round_at_a_fixed_rate_is_one_paced_phase_that_counts() -> None:
    plan, phases = _run(sustain.RoundPlan.start(16_000, steps=4, fixed=3_000), lambda p: 8_000)
    assert phases == [sustain.Phase(sustain.PhaseKind.PACED, 3_000)]
    assert plan.problem() is None and plan.last and plan.sustainable is None


def test_a_round_whose_search_found_nothing_paces_at_half_of_the_lowest_failure() -> None:
    plan, phases = _run(sustain.RoundPlan.start(16_000, steps=2), lambda p: 1_000)
    assert [p.kind for p in phases] == [sustain.PhaseKind.SEARCH] * 2 + [sustain.PhaseKind.PACED]
    assert plan.paced_rate == 2_000 == plan.search.high / 2  # no closing: nothing to rerun
    assert "no rate kept up twice" in plan.problem() and not plan.last
    retry = plan.retry()
    assert retry.number == 2 and retry.next_phase() == sustain.Phase(
        sustain.PhaseKind.SEARCH, 2_000)  # fmt: skip
    final, _ = _run(retry, lambda p: 500)
    assert final.last and final.problem() is not None  # the second attempt is the last


def _nothing_kept_up(burst_rate: float) -> sustain.Search:
    """A two-step search whose every phase fell behind."""
    search = sustain.Search.start(burst_rate, steps=2)
    for _ in range(2):
        rate = search.next_rate()
        assert rate is not None
        search = search.after(sustain.Verdict(rate, False, 10, 900))
    return search
