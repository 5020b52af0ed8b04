"""The modes the configuration chooses between, as enums (PyFlink's names and ordinals).

The options in :mod:`.config` stay strings (Flink's keys and values); code that decides on a
mode reads one of these enums, built once from the configuration (e.g.
:class:`~undertow.runtime.checkpoint.settings.CheckpointSettings`), instead of comparing
strings. ``undertow.datastream`` re-exports them under PyFlink's import paths.
"""

from __future__ import annotations

import enum


class CheckpointingMode(enum.Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


class RuntimeExecutionMode(enum.Enum):
    """STREAMING: continuous results. BATCH (bounded inputs only): final results only, keyed
    reductions emit one record per key and event time jumps to the end when input ends.
    AUTOMATIC: BATCH when every source is bounded, else STREAMING."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
