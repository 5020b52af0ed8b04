"""When an aligned checkpoint turns unaligned: by time, or by the bytes queued ahead of it.

An aligned barrier with a timeout (``execution.checkpointing.aligned-checkpoint-timeout``)
waits behind the data queued ahead of it; Flink switches it to unaligned once the timeout has
passed since the trigger. FLIP-76 also named a switch by size,
``UNALIGNED_WITH_MAX_INFLIGHT_DATA``, which Flink never shipped: undertow's
``execution.checkpointing.unaligned.max-inflight-data`` switches at once when more than that
many bytes are queued ahead of the barrier, without waiting for the timeout. Waiting for
that much data to drain under backpressure is exactly what the switch exists to avoid, and
bytes say so the moment the barrier is queued, where time says so only after the timeout.

Where it applies: the task's output side, when the barrier is queued in its subpartitions
(:meth:`.InflightCapture.end_output`). Data queued ahead of a barrier never grows (new data
queues behind it), so the bytes are decided once, at that moment; the time is decided by
the timer this decision schedules. A downstream task receives the barrier as an unaligned
(priority) one and takes the checkpoint unaligned too.

Pure: options, elapsed milliseconds and queued bytes in, a :class:`StayAligned` or
:class:`SwitchToUnaligned` out. Any thread.
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
