"""Restart strategies (Flink's ``restart-strategy.*`` options), as pure decisions.

``decide(now_ms)`` is called once per failure and answers ``Restart(delay_ms)`` or
``GiveUp(reason)``. Defaults follow Flink: with checkpointing enabled and no strategy
configured, ``exponential-delay``; without checkpointing, ``none``. ``failure-rate``'s limit
is :mod:`.failure_rate`'s.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError
from undertow.runtime.master.failure_rate import FailureRate, FailureWindow


@dataclass(frozen=True, slots=True)
class Restart:
    delay_ms: int


@dataclass(frozen=True, slots=True)
class GiveUp:
    reason: str


class RestartStrategy:
    def decide(self, now_ms: int) -> Restart | GiveUp:
        raise NotImplementedError


class NoRestart(RestartStrategy):
    def decide(self, now_ms: int) -> Restart | GiveUp:
        return GiveUp(f"{Options.RESTART_STRATEGY.key} is none")


class FixedDelayRestart(RestartStrategy):
    def __init__(self, attempts: int, delay_ms: int) -> None:
        self.attempts = attempts
        self.delay_ms = delay_ms
        self.used = 0

    def decide(self, now_ms: int) -> Restart | GiveUp:
        if self.used >= self.attempts:
            return GiveUp(f"{Options.RESTART_FIXED_ATTEMPTS.key} ({self.attempts}) are used up")
        self.used += 1
        return Restart(self.delay_ms)


class FailureRateRestart(RestartStrategy):
    """Restart after ``delay_ms`` unless the failure exceeds ``rate`` (Flink's
    ``failure-rate``: at most ``max-failures-per-interval`` restarts in any
    ``failure-rate-interval``); the decision is :class:`.failure_rate.FailureWindow`'s."""

    def __init__(self, rate: FailureRate, delay_ms: int) -> None:
        if delay_ms < 0:
            raise ConfigurationError(
                f"{Options.RESTART_RATE_DELAY.key} = {delay_ms} ms: must be >= 0"
            )
        self.window = FailureWindow(rate)
        self.delay_ms = delay_ms

    def decide(self, now_ms: int) -> Restart | GiveUp:
        if self.window.exceeded(now_ms):
            return GiveUp(self.window.describe())
        return Restart(self.delay_ms)


class ExponentialDelayRestart(RestartStrategy):
    """Backoff grows by ``multiplier`` up to ``max``; ``reset`` ms of healthy running reset it.

    The i-th restart in a row waits ``b_i`` ms moved by a uniform jitter of at most
    ``jitter * b_i`` either way and capped at ``max``, where ``b_0 = initial`` and
    ``b_{i+1} = min(max, int(b_i * multiplier))``. Healthy running is measured as Flink
    measures it: from the moment the job was restarted (the failure plus its delay) to the
    next failure, so a long delay never counts as running. After ``attempts`` restarts with
    no reset in between, :meth:`decide` gives up. ``now_ms`` must not go back in time.
    """

    def __init__(
        self,
        initial_ms: int,
        max_ms: int,
        multiplier: float,
        reset_ms: int,
        jitter: float,
        attempts: int,
        rng: random.Random | None = None,
    ) -> None:
        if multiplier < 1 or not 0 <= jitter <= 1 or initial_ms < 0 or max_ms < initial_ms:
            raise ConfigurationError(
                "restart-strategy.exponential-delay: need backoff-multiplier >= 1, "
                "0 <= jitter-factor <= 1 and 0 <= initial-backoff <= max-backoff"
            )
        self.initial_ms = initial_ms
        self.max_ms = max_ms
        self.multiplier = multiplier
        self.reset_ms = reset_ms
        self.jitter = jitter
        self.attempts = attempts
        self.rng = rng or random.Random()
        self.backoff = initial_ms
        self.used = 0
        #: When the last restart was due (its failure plus its delay); None before any.
        self.restarted_at: int | None = None

    def decide(self, now_ms: int) -> Restart | GiveUp:
        if self.restarted_at is not None and now_ms - self.restarted_at >= self.reset_ms:
            self.backoff, self.used = self.initial_ms, 0
        if self.used >= self.attempts:
            return GiveUp(f"{Options.RESTART_EXP_ATTEMPTS.key} ({self.attempts}) are used up")
        self.used += 1
        delay = self.backoff
        if self.jitter:
            delay = int(delay * (1 + self.rng.uniform(-self.jitter, self.jitter)))
        self.backoff = min(self.max_ms, int(self.backoff * self.multiplier))
        delay = max(0, min(delay, self.max_ms))
        self.restarted_at = now_ms + delay
        return Restart(delay)


def restart_strategy(config: Configuration) -> RestartStrategy:
    """The configured strategy (``restart-strategy.*``; unset: exponential delay with
    checkpointing, else none). The JobMaster calls it once, when it is made: this is where the
    restart options are read and a bad value fails, naming the option (the strategy keeps
    state across restarts, so it is not a settings value)."""
    kind = config.get_string(Options.RESTART_STRATEGY.key, "")
    if not kind:
        kind = "exponential-delay" if config.get(Options.CHECKPOINT_INTERVAL) > 0 else "none"
    kind = kind.lower()
    if kind in ("none", "off", "disable"):
        return NoRestart()
    if kind in ("fixed-delay", "fixeddelay"):
        return FixedDelayRestart(
            config.get(Options.RESTART_FIXED_ATTEMPTS), config.get(Options.RESTART_FIXED_DELAY)
        )
    if kind in ("failure-rate", "failurerate"):
        rate = FailureRate(
            config.get(Options.RESTART_RATE_MAX_FAILURES), config.get(Options.RESTART_RATE_INTERVAL)
        )
        return FailureRateRestart(rate, config.get(Options.RESTART_RATE_DELAY))
    if kind in ("exponential-delay", "exponentialdelay"):
        return ExponentialDelayRestart(
            config.get(Options.RESTART_EXP_INITIAL), config.get(Options.RESTART_EXP_MAX),
            config.get(Options.RESTART_EXP_MULTIPLIER), config.get(Options.RESTART_EXP_RESET),
            config.get(Options.RESTART_EXP_JITTER), config.get(Options.RESTART_EXP_ATTEMPTS),
        )  # fmt: skip
    raise ConfigurationError(
        f"{Options.RESTART_STRATEGY.key} = {kind!r}: must be none, fixed-delay, failure-rate or "
        "exponential-delay"
    )
