"""``CheckpointingMode`` and ``CheckpointConfig`` (PyFlink's names), backed by Flink's keys.

Checkpoints themselves (coordinator, barriers, storage) come with the checkpointing layer; the
configuration surface is here so that jobs written for PyFlink configure them the same way.
Getters answer what PyFlink 2.3 answers: the interval is -1 and the mode ``AT_LEAST_ONCE``
while checkpointing is off (Flink 2.x reports no exactly-once guarantee without checkpoints),
alignment timeouts are :class:`~undertow.common.time.Duration` values. The getters read
the configuration at each call, on purpose: they answer what is configured
now; the runtime reads these options once, into its settings objects.
"""

from __future__ import annotations

from typing import Any

from undertow.common.time import Duration, to_millis
from undertow.core.config import Configuration, Options, parse_duration_ms
from undertow.core.errors import ConfigurationError
from undertow.core.modes import CheckpointingMode, ExternalizedCheckpointRetention

__all__ = ["CheckpointConfig", "CheckpointingMode", "ExternalizedCheckpointRetention"]

#: Flink's ``MINIMAL_CHECKPOINT_TIME``: the least checkpoint interval and timeout a job may set.
_MINIMAL_CHECKPOINT_TIME_MS = 10

#: ``execution.checkpointing.tolerable-failed-checkpoints`` meaning "never fail the job".
_TOLERATE_ALL = 2147483647


def _ms(value: Any, what: str) -> int:
    """A ``Duration``/``Time``/``timedelta``/int ms (:func:`to_millis`), or a configuration
    value such as ``"10 s"``."""
    if isinstance(value, (str, float)):
        return parse_duration_ms(value)
    return to_millis(value, what)


class CheckpointConfig:
    """A view on the environment's configuration: setters write Flink's option keys."""

    def __init__(self, configuration: Configuration) -> None:
        self._config = configuration

    def is_checkpointing_enabled(self) -> bool:
        return self._config.get(Options.CHECKPOINT_INTERVAL) > 0

    def get_checkpoint_interval(self) -> int:
        """The interval in milliseconds; -1 while periodic checkpoints are off (as Flink)."""
        interval = self._config.get(Options.CHECKPOINT_INTERVAL)
        return interval if interval > 0 else -1

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        """Refuses less than 10 ms, as Flink's ``setCheckpointInterval`` (and so PyFlink's
        ``enable_checkpointing``) does: ``enable_checkpointing(0)`` used to leave checkpoints
        off without a word."""
        interval = _at_least_minimal(
            checkpoint_interval, "the checkpoint interval",
            " (to run without checkpoints, do not enable them)",
        )  # fmt: skip
        self._config.set(Options.CHECKPOINT_INTERVAL, interval)
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """The configured mode once checkpointing is on; ``AT_LEAST_ONCE`` while it is off,
        as Flink 2.x answers (there is no exactly-once guarantee without checkpoints)."""
        if not self.is_checkpointing_enabled():
            return CheckpointingMode.AT_LEAST_ONCE
        return CheckpointingMode[self._config.get(Options.CHECKPOINT_MODE)]

    def set_checkpointing_mode(self, mode: CheckpointingMode) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_MODE, mode.name)
        return self

    def get_checkpoint_timeout(self) -> int:
        return self._config.get(Options.CHECKPOINT_TIMEOUT)

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        """Refuses less than 10 ms, as Flink's ``setCheckpointTimeout`` does: a timeout of 0
        expires every checkpoint, so the job would fail and restart without end."""
        timeout = _at_least_minimal(checkpoint_timeout, "set_checkpoint_timeout: the timeout")
        self._config.set(Options.CHECKPOINT_TIMEOUT, timeout)
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        return self._config.get(Options.MIN_PAUSE)

    def set_min_pause_between_checkpoints(self, min_pause: int) -> CheckpointConfig:
        self._config.set(Options.MIN_PAUSE, _ms(min_pause, "min_pause"))
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        return self._config.get(Options.MAX_CONCURRENT)

    def set_max_concurrent_checkpoints(self, n: int) -> CheckpointConfig:
        self._config.set(Options.MAX_CONCURRENT, n)
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self._config.get(Options.TOLERABLE_FAILURES)

    def set_tolerable_checkpoint_failure_number(self, n: int) -> CheckpointConfig:
        self._config.set(Options.TOLERABLE_FAILURES, n)
        return self

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Deprecated in PyFlink 2.0: whether no checkpoint failure is tolerated."""
        return self.get_tolerable_checkpoint_failure_number() == 0

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        """Deprecated in PyFlink 2.0: tolerate no failed checkpoint (True) or any number."""
        return self.set_tolerable_checkpoint_failure_number(
            0 if fail_on_checkpointing_errors else _TOLERATE_ALL
        )

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        self._config.set(Options.UNALIGNED, enabled)
        return self

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self._config.get(Options.UNALIGNED)

    def set_force_unaligned_checkpoints(self, force: bool = True) -> CheckpointConfig:
        """Unaligned checkpoints also on forward, rescale and broadcast edges."""
        self._config.set(Options.UNALIGNED_FORCED, force)
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        return self._config.get(Options.UNALIGNED_FORCED)

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Any) -> CheckpointConfig:
        """A :class:`Duration` (PyFlink), or milliseconds / a duration text."""
        self._config.set(Options.ALIGNED_TIMEOUT, _ms(alignment_timeout, "alignment_timeout"))
        return self

    def get_aligned_checkpoint_timeout(self) -> Duration:
        return Duration.of_millis(self._config.get(Options.ALIGNED_TIMEOUT))

    def set_alignment_timeout(self, alignment_timeout: Any) -> CheckpointConfig:
        """PyFlink's older name of :meth:`set_aligned_checkpoint_timeout`."""
        return self.set_aligned_checkpoint_timeout(alignment_timeout)

    def get_alignment_timeout(self) -> Duration:
        """PyFlink's older name of :meth:`get_aligned_checkpoint_timeout`."""
        return self.get_aligned_checkpoint_timeout()

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_DIR, checkpoint_path)
        return self

    def get_checkpoint_storage_dir(self) -> str:
        return self._config.get(Options.CHECKPOINT_DIR)

    def set_externalized_checkpoint_retention(
        self, retention: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_RETENTION, retention.name)
        return self

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        return ExternalizedCheckpointRetention[self._config.get(Options.CHECKPOINT_RETENTION)]

    def is_externalized_checkpoints_enabled(self) -> bool:
        """Whether finished jobs keep their checkpoints (any retention but
        ``NO_EXTERNALIZED_CHECKPOINTS``)."""
        retention = self.get_externalized_checkpoint_retention()
        return retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS


def _at_least_minimal(value: Any, what: str, hint: str = "") -> int:
    """``value`` in milliseconds, refused (naming ``what``) below Flink's minimal checkpoint
    time, 10 ms, as its ``setCheckpointInterval`` and ``setCheckpointTimeout`` refuse it."""
    ms = _ms(value, what)
    if ms < _MINIMAL_CHECKPOINT_TIME_MS:
        raise ConfigurationError(
            f"{what} must be at least {_MINIMAL_CHECKPOINT_TIME_MS} ms, got {value!r}{hint}"
        )
    return ms
