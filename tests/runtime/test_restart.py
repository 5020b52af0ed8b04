"""The restart strategies' decisions (``undertow.runtime.master.restart``), as pure logic.

``exponential-delay`` (the default when checkpointing is on): the i-th restart in a row waits
``b_i`` moved by at most ``jitter * b_i`` either way (never past ``max``), where ``b_0`` is
``initial`` and ``b_{i+1} = min(max, int(b_i * multiplier))``; ``reset-backoff-threshold`` ms of
healthy running (from the restart, not from the failure) bring it back to ``initial``.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError
from undertow.runtime.master.restart import (
    ExponentialDelayRestart,
    FailureRateRestart,
    FixedDelayRestart,
    GiveUp,
    NoRestart,
    Restart,
    restart_strategy,
)

UNLIMITED = 2**31 - 1


def within_jitter(delay: int, backoff: int, jitter: float, max_ms: int) -> bool:
    """``delay`` is ``backoff`` moved by at most ``jitter * backoff`` (1 ms of truncation
    allowed below), and never past ``max_ms``."""
    return backoff * (1 - jitter) - 1 <= delay <= min(max_ms, backoff * (1 + jitter))


def delay_of(decision: Restart | GiveUp) -> int:
    assert isinstance(decision, Restart), decision
    return decision.delay_ms


@given(
    initial=st.integers(0, 10_000),
    extra=st.integers(0, 100_000),
    multiplier=st.floats(1.0, 4.0),
    jitter=st.floats(0.0, 1.0),
    reset=st.integers(1, 1_000_000),
    runs=st.lists(st.integers(0, 2_000_000), max_size=25),
    seed=st.integers(0, 2**32),
)
def test_delays_grow_within_jitter_and_reset_after_healthy_running(
    initial: int, extra: int, multiplier: float, jitter: float, reset: int, runs: list[int],
    seed: int,
) -> None:  # fmt: skip
    """``runs[i]``: how long the job ran healthily after the i-th restart before it failed."""
    max_ms = initial + extra
    strategy = ExponentialDelayRestart(
        initial, max_ms, multiplier, reset, jitter, UNLIMITED, random.Random(seed)
    )
    now, backoff = 0, initial
    delay = delay_of(strategy.decide(now))
    assert within_jitter(delay, backoff, jitter, max_ms), (delay, backoff)
    for run in runs:
        now += delay + run  # the restart waited ``delay``, then the job ran ``run`` ms
        backoff = initial if run >= reset else min(max_ms, int(backoff * multiplier))
        delay = delay_of(strategy.decide(now))
        assert within_jitter(delay, backoff, jitter, max_ms), (delay, backoff, run)


def test_without_jitter_the_delays_are_the_backoff_series_up_to_max() -> None:
    strategy = ExponentialDelayRestart(100, 1000, 2.0, 10_000, 0.0, UNLIMITED)
    delays, now = [], 0
    for _ in range(7):
        delays.append(delay_of(strategy.decide(now)))
        now += delays[-1] + 10  # 10 ms of running: far below the reset threshold
    assert delays == [100, 200, 400, 800, 1000, 1000, 1000]


def test_flinks_defaults_start_at_one_second_and_grow_by_one_and_a_half() -> None:
    strategy = restart_strategy(Configuration({"execution.checkpointing.interval": "1 s"}))
    assert isinstance(strategy, ExponentialDelayRestart)
    assert (strategy.initial_ms, strategy.max_ms, strategy.multiplier) == (1000, 60_000, 1.5)
    assert (strategy.reset_ms, strategy.jitter, strategy.attempts) == (3_600_000, 0.1, UNLIMITED)
    strategy.jitter = 0.0
    assert [delay_of(strategy.decide(t)) for t in (0, 1000, 2500, 4750)] == [1000, 1500, 2250,
                                                                            3375]  # fmt: skip


def test_jitter_moves_delays_both_ways_within_its_bounds() -> None:
    delays = []
    for seed in range(200):
        strategy = ExponentialDelayRestart(1000, 5000, 1.5, 60_000, 0.2, UNLIMITED,
                                           random.Random(seed))  # fmt: skip
        delays.append(delay_of(strategy.decide(0)))
    assert all(800 <= d <= 1200 for d in delays), (min(delays), max(delays))
    assert min(delays) < 850 and max(delays) > 1150, (min(delays), max(delays))


def test_a_long_delay_does_not_count_as_healthy_running() -> None:
    """Flink resets after ``threshold`` of running since the restart; a job that fails 600 ms
    after a 1 s delay ran 600 ms, not 1.6 s, and keeps its grown backoff."""
    strategy = ExponentialDelayRestart(1000, 60_000, 2.0, 1500, 0.0, UNLIMITED)
    assert delay_of(strategy.decide(0)) == 1000
    assert delay_of(strategy.decide(1600)) == 2000  # ran 600 ms: no reset
    assert delay_of(strategy.decide(1600 + 2000 + 1499)) == 4000  # ran 1499 ms: no reset
    assert delay_of(strategy.decide(5099 + 4000 + 1500)) == 1000  # ran 1500 ms: reset


def test_attempts_before_reset_give_up_and_a_reset_gives_them_back() -> None:
    strategy = ExponentialDelayRestart(10, 100, 2.0, 1000, 0.0, 2)
    assert [delay_of(strategy.decide(t)) for t in (0, 20)] == [10, 20]
    decision = strategy.decide(50)
    assert isinstance(decision, GiveUp)
    assert "attempts-before-reset-backoff (2) are used up" in decision.reason
    again = ExponentialDelayRestart(10, 100, 2.0, 1000, 0.0, 2)
    assert [delay_of(again.decide(t)) for t in (0, 20)] == [10, 20]
    assert delay_of(again.decide(40 + 1000)) == 10  # ran 1 s since the restart: reset


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"restart-strategy.exponential-delay.backoff-multiplier": "0.5"}, "backoff-multiplier"),
        ({"restart-strategy.exponential-delay.jitter-factor": "1.5"}, "jitter-factor"),
        ({"restart-strategy.exponential-delay.initial-backoff": "2 min"}, "max-backoff"),
        (
            {"restart-strategy.exponential-delay.jitter-factor": "lots"},
            "option 'restart-strategy.exponential-delay.jitter-factor'",
        ),
    ],
)
def test_bad_exponential_delay_options_are_refused(settings: dict[str, str], problem: str) -> None:
    config = Configuration({"restart-strategy.type": "exponential-delay", **settings})
    with pytest.raises(ConfigurationError, match=problem):
        restart_strategy(config)


def test_the_default_follows_checkpointing_and_the_type_is_read() -> None:
    assert isinstance(restart_strategy(Configuration({})), NoRestart)
    checkpointing = {"execution.checkpointing.interval": "10 s"}
    assert isinstance(restart_strategy(Configuration(checkpointing)), ExponentialDelayRestart)
    fixed = restart_strategy(Configuration({
        **checkpointing,
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2",
    }))  # fmt: skip
    assert isinstance(fixed, FixedDelayRestart)
    used_up = GiveUp("restart-strategy.fixed-delay.attempts (2) are used up")
    assert [fixed.decide(0), fixed.decide(1), fixed.decide(2)] == [
        Restart(1000), Restart(1000), used_up
    ]  # fmt: skip
    with pytest.raises(ConfigurationError, match="'sometimes'"):
        restart_strategy(Configuration({"restart-strategy.type": "sometimes"}))


def test_failure_rate_is_read_with_flinks_keys_and_defaults() -> None:
    default = restart_strategy(Configuration({"restart-strategy.type": "failure-rate"}))
    assert isinstance(default, FailureRateRestart)
    assert (default.window.rate.max_failures, default.window.rate.interval_ms) == (1, 60_000)
    assert default.delay_ms == 1000
    strategy = restart_strategy(Configuration({
        "restart-strategy.type": "failure-rate",
        "restart-strategy.failure-rate.max-failures-per-interval": "2",
        "restart-strategy.failure-rate.failure-rate-interval": "10 s",
        "restart-strategy.failure-rate.delay": "50 ms",
    }))  # fmt: skip
    decisions = [strategy.decide(t) for t in (0, 4_000, 20_000, 25_000, 29_000)]
    assert decisions[:4] == [Restart(50)] * 4
    assert isinstance(decisions[4], GiveUp), decisions
    assert "more than restart-strategy.failure-rate.max-failures-per-interval (2)" in (
        decisions[4].reason
    )


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("max-failures-per-interval", "0", "max-failures-per-interval = 0"),
        ("failure-rate-interval", "0 ms", "failure-rate-interval = 0 ms"),
        ("delay", "-1 ms", "restart-strategy.failure-rate.delay"),
    ],
)
def test_bad_failure_rate_options_are_refused(key: str, value: str, named: str) -> None:
    config = Configuration({"restart-strategy.type": "failure-rate",
                            f"restart-strategy.failure-rate.{key}": value})  # fmt: skip
    with pytest.raises(ConfigurationError, match=named):
        restart_strategy(config)
