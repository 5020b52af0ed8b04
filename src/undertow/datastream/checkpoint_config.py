"""``CheckpointingMode`` and ``CheckpointConfig`` (PyFlink's names), backed by Flink's keys.

Checkpoints themselves (coordinator, barriers, storage) come with the checkpointing layer; the
configuration surface is here so that jobs written for PyFlink configure them the same way.
"""

from __future__ import annotations

import enum
from typing import Any

from undertow.core.config import Configuration, Options, parse_duration_ms


class CheckpointingMode(enum.Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


def _ms(value: Any) -> int:
    if hasattr(value, "to_milliseconds"):
        return int(value.to_milliseconds())
    return parse_duration_ms(value)


class CheckpointConfig:
    """A view on the environment's configuration: setters write Flink's option keys."""

    def __init__(self, configuration: Configuration) -> None:
        self._config = configuration

    def is_checkpointing_enabled(self) -> bool:
        return self._config.get(Options.CHECKPOINT_INTERVAL) > 0

    def get_checkpoint_interval(self) -> int:
        return self._config.get(Options.CHECKPOINT_INTERVAL)

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_INTERVAL, _ms(checkpoint_interval))
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return CheckpointingMode[self._config.get(Options.CHECKPOINT_MODE)]

    def set_checkpointing_mode(self, mode: CheckpointingMode) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_MODE, mode.name)
        return self

    def get_checkpoint_timeout(self) -> int:
        return self._config.get(Options.CHECKPOINT_TIMEOUT)

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_TIMEOUT, _ms(checkpoint_timeout))
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        return self._config.get(Options.MIN_PAUSE)

    def set_min_pause_between_checkpoints(self, min_pause: int) -> CheckpointConfig:
        self._config.set(Options.MIN_PAUSE, _ms(min_pause))
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

    def set_aligned_checkpoint_timeout(self, timeout: Any) -> CheckpointConfig:
        self._config.set(Options.ALIGNED_TIMEOUT, _ms(timeout))
        return self

    def get_aligned_checkpoint_timeout(self) -> int:
        return self._config.get(Options.ALIGNED_TIMEOUT)

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        self._config.set(Options.CHECKPOINT_DIR, checkpoint_path)
        return self

    def get_checkpoint_storage_dir(self) -> str:
        return self._config.get(Options.CHECKPOINT_DIR)

    def set_externalized_checkpoint_retention(
        self, retention: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        self._config.set_string(
            "execution.checkpointing.externalized-checkpoint-retention", retention.name
        )
        return self
