"""Buffer debloating of one task's input gates: measure per period, decide, announce.

:class:`TaskDebloater` runs the pure size controller
(:class:`~undertow.runtime.network.buffer_debloater.BufferDebloater`) of each input gate of a
task. Once per ``buffer-debloat.period`` the task calls :meth:`TaskDebloater.tick` with its
clock and its idle and starved time so far. A gate's sample is what the task processed from it
since the last tick (records as it processes them, bytes prorated from their batches) over the
period minus the idle time (Flink measures throughput only while the input has data), with the
gate's buffers in use and the task's starved time in the period (which moves the aim). A
changed decision goes to every producer of the gate (NewBufferSize).

Threading: the task's loop thread. Cost per tick: O(channels); nothing per record.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from undertow.runtime.network.buffer_debloater import (
    BufferDebloater,
    DebloatDecision,
    DebloatSettings,
    ThroughputSample,
)
from undertow.runtime.network.input_gate import InputGate

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DebloatStatistics:
    """A task's debloating metrics (Flink's names): the smallest buffer size its gates
    announced, the record limit of that gate, and the largest estimated time to consume the
    in-flight buffers of a gate (-1 before any measurement); ``announcements``: the
    NewBufferSize rounds the task's gates sent so far."""

    debloated_buffer_size: int
    debloated_max_records: int
    estimated_time_to_consume_buffers_ms: float
    announcements: int = 0


class TaskDebloater:
    """The debloaters of one task's gates (see the module docstring).

    Lifecycle: created with the task's gates; :meth:`tick` from the task's loop while the task
    runs, :meth:`next_tick_ms` after the previous one. ``announcements`` counts the
    NewBufferSize rounds sent.
    """

    __slots__ = ("_bytes", "_debloaters", "_gates", "_idle_ms", "_last_ms", "_records",
                 "_starved_ms", "announcements", "settings")  # fmt: skip

    def __init__(
        self,
        gates: list[InputGate],
        settings: DebloatSettings,
        now_ms: float,
        idle_ms: float,
        starved_ms: float = 0.0,
    ) -> None:
        self.settings = settings
        self._gates = gates
        self._debloaters = [BufferDebloater(settings) for _ in gates]
        self._bytes = [g.bytes_processed for g in gates]
        self._records = [g.records_processed for g in gates]
        self._last_ms = now_ms
        self._idle_ms = idle_ms
        self._starved_ms = starved_ms
        self.announcements = 0

    def tick(
        self, now_ms: float, idle_ms: float, starved_ms: float = 0.0
    ) -> list[DebloatDecision | None]:
        """One period ended at ``now_ms``; ``idle_ms`` and ``starved_ms``: the task's idle and
        starved time since it started (see
        :class:`~undertow.runtime.task.task_statistics.TaskTimeAccounting`).

        Returns each gate's decision (``None``: not measured). Decisions that changed are
        announced to the gate's producers before this returns.
        """
        elapsed = now_ms - self._last_ms
        idle = idle_ms - self._idle_ms
        starved = starved_ms - self._starved_ms
        self._last_ms, self._idle_ms, self._starved_ms = now_ms, idle_ms, starved_ms
        active = max(0.0, elapsed - idle)
        decisions: list[DebloatDecision | None] = []
        for i, gate in enumerate(self._gates):
            consumed_bytes = round(gate.bytes_processed - self._bytes[i])
            consumed_records = gate.records_processed - self._records[i]
            self._bytes[i], self._records[i] = gate.bytes_processed, gate.records_processed
            if gate.is_finished:
                decisions.append(None)
                continue
            sample = ThroughputSample(
                consumed_bytes, consumed_records, active, gate.buffers_in_use(), starved
            )
            decision = self._debloaters[i].recalculate(sample)
            log.debug("%s: %s -> %s", gate.name, sample, decision)
            if decision is not None and decision.announce:
                gate.announce_buffer_size(decision.buffer_size, decision.max_records)
                self.announcements += 1
            decisions.append(decision)
        return decisions

    def next_tick_ms(self) -> float:
        """When to tick next: after a period, or an eighth of one until the first announcement
        (producers start at a few records per buffer, so a fast pipeline waits less)."""
        period = self.settings.period_ms
        return period if self.announcements else period / 8

    def statistics(self) -> DebloatStatistics:
        """The current metrics (see :class:`DebloatStatistics`)."""
        smallest = min(self._debloaters, key=lambda d: (d.buffer_size, d.max_records))
        estimates = [d.last.estimated_time_ms for d in self._debloaters if d.last is not None]
        return DebloatStatistics(
            smallest.buffer_size,
            smallest.max_records,
            max(estimates, default=-1.0),
            self.announcements,
        )
