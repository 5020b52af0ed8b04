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
class EndOfPartitionEvent:
    """The producer subtask finished; nothing follows on this channel."""
