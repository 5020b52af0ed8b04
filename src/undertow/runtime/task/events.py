"""Events that travel between tasks with the records (never needing credit)."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True, slots=True)
class EndOfChannelStateEvent:
    """The producer re-emitted all the in-flight data of a rescaled restore on this channel
    (:mod:`undertow.runtime.checkpoint.channel_state_rescale`); live data follows.

    Sent as a *blocking* event right after the re-emitted records, on every subpartition of an
    edge whose parallelism changed; the consumer resumes all channels of the gate once each
    delivered one, so all restored data precedes all live data (Flink's
    ``EndOfChannelStateEvent``).
    """
