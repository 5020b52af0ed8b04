"""Flink's ``failure-rate`` restart limit, as a pure decision: too many failures in an interval.

A job may fail and restart at most ``max_failures`` times within any ``interval_ms``; the
failure that would be the ``max_failures + 1``-th inside one interval ends it. Only the times
of the last ``max_failures + 1`` failures are kept, so memory is bounded whatever the number
of failures. Times are the failures' own (the restart delay counts inside the interval, as in
Flink's ``FailureRateRestartBackoffTimeStrategy``).

Threading: plain state, one owner (the JobMaster's loop). :class:`.restart.FailureRateRestart`
wraps it into a restart strategy with its delay.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from undertow.core.config import Options
from undertow.core.errors import ConfigurationError

MAX_FAILURES_KEY = Options.RESTART_RATE_MAX_FAILURES.key
INTERVAL_KEY = Options.RESTART_RATE_INTERVAL.key


@dataclass(frozen=True, slots=True)
class FailureRate:
    """At most ``max_failures`` restarts within any ``interval_ms``. Raises
    :class:`ConfigurationError` naming the option and the value unless both are positive."""

    max_failures: int
    interval_ms: int

    def __post_init__(self) -> None:
        if self.max_failures < 1:
            raise ConfigurationError(f"{MAX_FAILURES_KEY} = {self.max_failures}: must be >= 1")
        if self.interval_ms < 1:
            raise ConfigurationError(f"{INTERVAL_KEY} = {self.interval_ms} ms: must be > 0")


class FailureWindow:
    """The times of the most recent failures, and whether the latest exceeds the rate.

    Invariant: at most ``rate.max_failures + 1`` times are kept, oldest first, in the order
    :meth:`exceeded` saw them; ``now_ms`` must not go back in time.
    """

    def __init__(self, rate: FailureRate) -> None:
        self.rate = rate
        self._times: deque[int] = deque(maxlen=rate.max_failures + 1)

    def exceeded(self, now_ms: int) -> bool:
        """Record a failure at ``now_ms``; True when it and the ``max_failures`` before it
        all fall within ``interval_ms`` (the job must not restart), else False."""
        self._times.append(now_ms)
        full = len(self._times) > self.rate.max_failures
        return full and now_ms - self._times[0] <= self.rate.interval_ms

    def describe(self) -> str:
        """Why :meth:`exceeded` said True, naming the options and their values."""
        return (
            f"{len(self._times)} failures within {self.rate.interval_ms} ms: more than "
            f"{MAX_FAILURES_KEY} ({self.rate.max_failures}) in {INTERVAL_KEY} "
            f"({self.rate.interval_ms} ms)"
        )
