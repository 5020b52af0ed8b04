"""``failure-rate``'s limit (``undertow.runtime.master.failure_rate``), as pure logic.

The failure at ``t_i`` exceeds the rate when more than ``max_failures`` failures, itself
included, lie in ``[t_i - interval, t_i]``: checked against that definition over every
failure so far, though the window keeps only the last ``max_failures + 1`` times.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.errors import ConfigurationError
from undertow.runtime.master.failure_rate import FailureRate, FailureWindow


def exceeds_by_definition(times: list[int], i: int, rate: FailureRate) -> bool:
    within = [t for t in times[: i + 1] if times[i] - t <= rate.interval_ms]
    return len(within) > rate.max_failures


@given(
    max_failures=st.integers(1, 6),
    interval=st.integers(1, 5_000),
    gaps=st.lists(st.integers(0, 3_000), max_size=40),
)
def test_the_window_agrees_with_the_definition_over_all_failures(
    max_failures: int, interval: int, gaps: list[int]
) -> None:
    rate = FailureRate(max_failures, interval)
    window = FailureWindow(rate)
    times = list(itertools.accumulate(gaps))

    decided = [window.exceeded(t) for t in times]

    assert decided == [exceeds_by_definition(times, i, rate) for i in range(len(times))]


def test_one_failure_per_interval_restarts_once_then_gives_up() -> None:
    window = FailureWindow(FailureRate(max_failures=1, interval_ms=60_000))
    assert window.exceeded(0) is False
    assert window.exceeded(60_001) is False, "the first failure left the interval"
    assert window.exceeded(120_001) is True, "60 s after the previous: still inside"


def test_three_per_five_minutes_like_flinks_example() -> None:
    window = FailureWindow(FailureRate(max_failures=3, interval_ms=300_000))
    assert [window.exceeded(t) for t in (0, 10_000, 20_000)] == [False, False, False]
    assert window.exceeded(300_001) is False, "only 3 failures (10 s, 20 s, now) within 5 min"
    assert window.exceeded(310_000) is True, "10 s, 20 s, 300.001 s and 310 s: 4 in 5 min"
    assert "4 failures within 300000 ms" in window.describe()
    assert "restart-strategy.failure-rate.max-failures-per-interval (3)" in window.describe()


@pytest.mark.parametrize(
    ("max_failures", "interval", "named"),
    [
        (0, 1000, "max-failures-per-interval = 0"),
        (-2, 1000, "max-failures-per-interval = -2"),
        (1, 0, "failure-rate-interval = 0 ms"),
    ],
)
def test_a_rate_that_allows_nothing_is_refused_naming_the_option(
    max_failures: int, interval: int, named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named):
        FailureRate(max_failures, interval)
