"""When an aligned checkpoint turns unaligned: by time, or by the bytes queued ahead of it.

Flink switches an aligned barrier with a timeout (``execution.checkpointing.aligned-checkpoint-
timeout``) to unaligned once the timeout has passed. FLIP-76's switch by size
(``UNALIGNED_WITH_MAX_INFLIGHT_DATA``), never shipped by Flink, is undertow's
``execution.checkpointing.unaligned.max-inflight-data``: more bytes queued ahead of the barrier
switch it at once. Applies on the task's output side when the barrier is queued
(:meth:`.InflightCapture.end_output`): data ahead of a barrier never grows, so bytes are
decided once, then; time by the timer this decision schedules.

Pure: options, elapsed milliseconds and queued bytes in, a :class:`StayAligned` or
:class:`SwitchToUnaligned` out. Any thread. The story: docs/unaligned-and-debloating.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from undertow.runtime.checkpoint.barrier import CheckpointOptions


class SwitchReason(enum.Enum):
    """Why an aligned checkpoint turned unaligned."""

    #: ``execution.checkpointing.aligned-checkpoint-timeout`` passed since the trigger.
    TIMEOUT = "timeout"
    #: More than ``execution.checkpointing.unaligned.max-inflight-data`` bytes queued ahead.
    INFLIGHT_DATA = "in-flight data"


@dataclass(frozen=True, slots=True)
class StayAligned:
    """Keep the barrier aligned; decide again (the timeout) in ``wait_ms`` (> 0)."""

    wait_ms: int


@dataclass(frozen=True, slots=True)
class SwitchToUnaligned:
    """Turn the barrier into an unaligned (priority) one now."""

    reason: SwitchReason
    queued_bytes: int


def decide_switch(
    options: CheckpointOptions, elapsed_ms: int, queued_bytes: int
) -> StayAligned | SwitchToUnaligned:
    """The decision for an aligned, timeoutable barrier (``options.is_timeoutable``) that
    waits ``elapsed_ms`` after its trigger behind ``queued_bytes`` bytes of data. The size
    wins when both hold (it is the cause; the timeout is the symptom). Raises
    :class:`ValueError` naming the value for a barrier that is not timeoutable or negative
    bytes."""
    if not options.is_timeoutable:
        raise ValueError(f"only an aligned barrier with a timeout can switch, not {options!r}")
    if queued_bytes < 0:
        raise ValueError(f"queued bytes must be >= 0, got {queued_bytes}")
    limit = options.max_inflight_bytes
    if limit > 0 and queued_bytes > limit:
        return SwitchToUnaligned(SwitchReason.INFLIGHT_DATA, queued_bytes)
    remaining = options.aligned_checkpoint_timeout - elapsed_ms
    if remaining <= 0:
        return SwitchToUnaligned(SwitchReason.TIMEOUT, queued_bytes)
    return StayAligned(remaining)
