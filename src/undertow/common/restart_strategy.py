"""``RestartStrategies`` (PyFlink's ``pyflink.common.restart_strategy``): restart strategies as
values that write Flink's ``restart-strategy.*`` keys.

``env.set_restart_strategy(RestartStrategies.failure_rate_restart(3, timedelta(minutes=5),
timedelta(seconds=10)))`` is the same as setting ``restart-strategy.type: failure-rate`` and its
three keys; the JobMaster reads the keys (``undertow.runtime.master.restart``), so both ways
configure one thing. Intervals are ``datetime.timedelta`` or whole milliseconds, as PyFlink's;
anything else is a ``TypeError`` naming the parameter. :func:`from_configuration` reads a
configuration back (``get_restart_strategy``).

Plain immutable values; no threading concerns.
"""

from __future__ import annotations

from datetime import timedelta

from undertow.core.config import Configuration, Options

__all__ = ["RestartStrategies", "RestartStrategyConfiguration"]

#: The type key; the others are :class:`~undertow.core.config.Options`' ``RESTART_*``, which
#: the JobMaster's strategies read (``undertow.runtime.master.restart``).
TYPE_KEY = Options.RESTART_STRATEGY.key


def _millis(value: object, parameter: str) -> int:
    """``value`` (a ``timedelta`` or whole milliseconds) in milliseconds."""
    if isinstance(value, timedelta):
        return int(value / timedelta(milliseconds=1))
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(
        f"the parameter {parameter!r} only supports integer (milliseconds) and "
        f"datetime.timedelta, got {type(value).__name__}: {value!r}"
    )


class RestartStrategyConfiguration:
    """A restart strategy as the options it sets (``settings``); equal when they are equal."""

    def __init__(self, settings: dict[str, str], description: str) -> None:
        self._settings = dict(settings)
        self._description = description

    def get_description(self) -> str:
        """A description of the strategy (Flink shows it in its web interface)."""
        return self._description

    def _configure(self, config: Configuration) -> None:
        """Write this strategy's keys into ``config``, and drop the type for the fallback."""
        if TYPE_KEY not in self._settings:
            config.remove_config(TYPE_KEY)
        for key, value in self._settings.items():
            config.set_string(key, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RestartStrategyConfiguration) or type(other) is not type(self):
            return False
        return other._settings == self._settings

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self._settings.items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._description!r})"


class _DelayedRestart(RestartStrategyConfiguration):
    """A strategy of ``kind`` that waits a delay (``delay_key``) before each restart: its
    ``settings`` with the type and the delay, and its ``description`` (a format of ``self``
    and ``delay``, in milliseconds)."""

    def __init__(
        self, kind: str, settings: dict[str, str], delay_key: str, delay: object,
        description: str,
    ) -> None:  # fmt: skip
        self._delay_ms = _millis(delay, "delay_between_attempts_interval")
        super().__init__(
            {TYPE_KEY: kind, **settings, delay_key: f"{self._delay_ms} ms"},
            description.format(self=self, delay=self._delay_ms),
        )

    def get_delay_between_attempts_interval(self) -> timedelta:
        return timedelta(milliseconds=self._delay_ms)


class RestartStrategies:
    """The restart strategies PyFlink offers, as :class:`RestartStrategyConfiguration` values."""

    class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
        """``restart-strategy.type: none``: a failure fails the job."""

        def __init__(self) -> None:
            super().__init__({TYPE_KEY: "none"}, "Restart deactivated.")

    class FixedDelayRestartStrategyConfiguration(_DelayedRestart):
        """``fixed-delay``: up to ``restart_attempts`` restarts, each after the delay."""

        def __init__(self, restart_attempts: int, delay_between_attempts_interval: object) -> None:
            self._attempts = int(restart_attempts)
            super().__init__(
                "fixed-delay", {Options.RESTART_FIXED_ATTEMPTS.key: str(self._attempts)},
                Options.RESTART_FIXED_DELAY.key, delay_between_attempts_interval,
                "Restart with fixed delay ({delay} ms). #{self._attempts} restart attempts.",
            )  # fmt: skip

        def get_restart_attempts(self) -> int:
            return self._attempts

    class FailureRateRestartStrategyConfiguration(_DelayedRestart):
        """``failure-rate``: restart after the delay unless more than ``max_failure_rate``
        failures fall within ``failure_interval``."""

        def __init__(
            self, max_failure_rate: int, failure_interval: object,
            delay_between_attempts_interval: object,
        ) -> None:  # fmt: skip
            self._rate = int(max_failure_rate)
            self._interval_ms = _millis(failure_interval, "failure_interval")
            super().__init__(
                "failure-rate",
                {Options.RESTART_RATE_MAX_FAILURES.key: str(self._rate),
                 Options.RESTART_RATE_INTERVAL.key: f"{self._interval_ms} ms"},
                Options.RESTART_RATE_DELAY.key, delay_between_attempts_interval,
                "Failure rate restart with maximum of {self._rate} failures within interval "
                "{self._interval_ms} ms and fixed delay {delay} ms.",
            )  # fmt: skip

        def get_max_failure_rate(self) -> int:
            return self._rate

        def get_failure_interval(self) -> timedelta:
            return timedelta(milliseconds=self._interval_ms)

    class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
        """No strategy of the job's own: ``restart-strategy.type`` unset, so the default
        applies (``exponential-delay`` with checkpointing, else ``none``)."""

        def __init__(self) -> None:
            super().__init__({}, "Cluster level default restart strategy")

    @staticmethod
    def no_restart() -> RestartStrategies.NoRestartStrategyConfiguration:
        return RestartStrategies.NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> RestartStrategies.FallbackRestartStrategyConfiguration:
        return RestartStrategies.FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: object
    ) -> RestartStrategies.FixedDelayRestartStrategyConfiguration:
        """Up to ``restart_attempts`` restarts, each ``delay_between_attempts`` (milliseconds
        or a ``timedelta``) after its failure."""
        return RestartStrategies.FixedDelayRestartStrategyConfiguration(
            restart_attempts, delay_between_attempts
        )

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: object, delay_interval: object
    ) -> RestartStrategies.FailureRateRestartStrategyConfiguration:
        """At most ``failure_rate`` restarts within any ``failure_interval``, each
        ``delay_interval`` after its failure (intervals in milliseconds or ``timedelta``)."""
        return RestartStrategies.FailureRateRestartStrategyConfiguration(
            failure_rate, failure_interval, delay_interval
        )


def from_configuration(config: Configuration) -> RestartStrategyConfiguration:
    """The strategy ``config`` sets; the fallback when ``restart-strategy.type`` is unset, and
    a plain :class:`RestartStrategyConfiguration` naming any other type (``exponential-delay``
    has no PyFlink class). Raises ``ConfigurationError`` for a value that does not parse."""
    kind = config.get_string(TYPE_KEY, "").strip().lower()
    if not kind:
        return RestartStrategies.fall_back_restart()
    if kind in ("none", "off", "disable"):
        return RestartStrategies.no_restart()
    if kind in ("fixed-delay", "fixeddelay"):
        return RestartStrategies.fixed_delay_restart(
            config.get(Options.RESTART_FIXED_ATTEMPTS), config.get(Options.RESTART_FIXED_DELAY)
        )
    if kind in ("failure-rate", "failurerate"):
        return RestartStrategies.failure_rate_restart(
            config.get(Options.RESTART_RATE_MAX_FAILURES),
            config.get(Options.RESTART_RATE_INTERVAL),
            config.get(Options.RESTART_RATE_DELAY),
        )
    return RestartStrategyConfiguration({TYPE_KEY: kind}, f"restart-strategy.type: {kind}")
