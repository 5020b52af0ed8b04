"""Events that travel between tasks with the records (never needing credit)."""

from __future__ import annotations

from dataclasses import dataclass

from undertow.runtime.checkpoint.channel_recovery.rescale import EndOfChannelStateEvent

__all__ = [  # EndOfChannelStateEvent lives with channel recovery; re-exported here
    "EndOfChannelStateEvent", "EndOfData", "EndOfPartitionEvent", "WatermarkEvent",
    "WatermarkStatusEvent",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class WatermarkEvent:
    timestamp: int


@dataclass(frozen=True, slots=True)
class WatermarkStatusEvent:
    """The producer became idle (no watermarks for a while) or active again."""

    idle: bool


@dataclass(frozen=True, slots=True)
class EndOfData:
    """The producer emitted its last record on this channel (FLIP-147's ``EndOfData``).

    Sent after the producer's operators ran ``finish()`` and before the barrier of its final
    checkpoint: checkpoint barriers and ``EndOfPartitionEvent`` may still follow, records may
    not. ``drain``: the producer finished its operators (end of input, or stop with drain);
    false for a stop without drain, where operators did not finish and their timers did not fire.
    """

    drain: bool = True


@dataclass(frozen=True, slots=True)
class EndOfPartitionEvent:
    """The producer subtask finished; nothing follows on this channel."""
