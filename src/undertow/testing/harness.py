"""Operator test harnesses: run one operator by hand, without a task or a network.

Lifecycle: ``open()`` (runs ``setup`` and ``open``) -> ``process_*`` / ``set_processing_time``
-> ``finish()`` -> ``close()``; a harness is also a context manager (open on enter, close on
exit). Threading: single-threaded; processing-time timers fire inside ``set_processing_time``,
on the caller's thread, in timestamp order. The clock starts at 0 and never moves by itself.

As a task does, ``finish()`` first quiesces the operator's processing-time service: pending
processing-time timers never fire afterwards (also when the clock moves on) and new ones are
ignored, though keyed timers stay counted in ``num_processing_time_timers``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from undertow.api.output_tag import OutputTag
from undertow.core.config import Configuration
from undertow.runtime.task.context import OperatorProcessingTimeService, StreamingRuntimeContext
from undertow.runtime.task.operator import OneInputStreamOperator, OperatorSetup, Timestamps
from undertow.runtime.task.timers import TimerServiceManager
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.heap import HeapKeyedStateBackend

__all__ = [
    "CollectingOutput",
    "KeyedOneInputOperatorTestHarness",
    "ManualProcessingTimeService",
    "OneInputOperatorTestHarness",
    "Watermark",
]


_H = TypeVar("_H", bound="OneInputOperatorTestHarness")


class _ScheduledCallback:
    __slots__ = ("callback", "cancelled", "timestamp")

    def __init__(self, timestamp: int, callback: Callable[[int], None]) -> None:
        self.timestamp = timestamp
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualProcessingTimeService:
    """A processing-time service whose clock moves only in :meth:`set_processing_time`."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms
        self._queue: list[tuple[int, int, _ScheduledCallback]] = []
        self._seq = itertools.count()

    def current_processing_time(self) -> int:
        return self._now

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> _ScheduledCallback:
        """Run ``callback(timestamp)`` once the clock is at or past ``timestamp`` (a timestamp
        already past fires at the next :meth:`set_processing_time`)."""
        handle = _ScheduledCallback(timestamp, callback)
        heapq.heappush(self._queue, (timestamp, next(self._seq), handle))
        return handle

    def set_processing_time(self, ms: int) -> None:
        """Move the clock to ``ms`` and run every due callback, earliest first (callbacks
        registered meanwhile for a time <= ``ms`` run too)."""
        if ms < self._now:
            raise ValueError(f"processing time cannot go back from {self._now} to {ms}")
        self._now = ms
        queue = self._queue
        while queue and queue[0][0] <= ms:
            _, _, handle = heapq.heappop(queue)
            if not handle.cancelled:
                handle.callback(handle.timestamp)

    def num_pending(self) -> int:
        return sum(1 for _, _, h in self._queue if not h.cancelled)


@dataclass(frozen=True, slots=True)
class Watermark:
    """A watermark in :meth:`CollectingOutput.events`."""

    timestamp: int


class CollectingOutput:
    """An :class:`~undertow.runtime.task.operator.Output` that keeps everything it receives."""

    def __init__(self) -> None:
        self.records: list[tuple[Any, int | None]] = []
        self.watermarks: list[int] = []
        self.side_outputs: dict[str, list[tuple[Any, int | None]]] = {}
        #: Records (``(value, timestamp)``) and :class:`Watermark` s in emission order.
        self.events: list[tuple[Any, int | None] | Watermark] = []
        #: ``True`` (became idle) / ``False`` (active again), in emission order.
        self.watermark_statuses: list[bool] = []
        self.batches = 0

    def collect_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if timestamps is not None and len(timestamps) != len(values):
            raise ValueError(
                f"collect_batch got {len(values)} values but {len(timestamps)} timestamps"
            )
        pairs = list(zip(values, timestamps if timestamps is not None else [None] * len(values)))
        self.records.extend(pairs)
        self.events.extend(pairs)
        self.batches += 1

    def emit_watermark(self, watermark: int) -> None:
        self.watermarks.append(watermark)
        self.events.append(Watermark(watermark))

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        self.side_outputs.setdefault(tag_id, []).append((value, timestamp))

    def emit_watermark_status(self, idle: bool) -> None:
        self.watermark_statuses.append(idle)


class OneInputOperatorTestHarness:
    """Runs a non-keyed one-input operator (no keyed state, no timer services)."""

    def __init__(
        self,
        operator: OneInputStreamOperator,
        *,
        name: str = "operator",
        config: Configuration | None = None,
        max_parallelism: int = 128,
        runtime_context: Any = None,
    ) -> None:
        self.operator = operator
        self.output = CollectingOutput()
        self.processing_time_service = ManualProcessingTimeService()
        #: What the operator sees: the manual clock, quiesced by :meth:`finish`.
        self.operator_processing_time_service = OperatorProcessingTimeService(
            self.processing_time_service
        )
        self.setup_context = OperatorSetup(
            name=name,
            uid=name,
            subtask_index=0,
            parallelism=1,
            max_parallelism=max_parallelism,
            attempt_number=0,
            output=self.output,
            config=config if config is not None else Configuration(),
            processing_time_service=self.operator_processing_time_service,
            task_name=name,
            task_name_with_subtasks=f"{name} (1/1)#0",
        )
        # What the operator chain attaches: a RuntimeContext over this setup, unless given.
        self.setup_context.runtime_context = (
            runtime_context
            if runtime_context is not None
            else StreamingRuntimeContext(self.setup_context)
        )
        self._is_setup = False
        self._closed = False

    # --- lifecycle -------------------------------------------------------------------------

    def setup(self) -> None:
        """Call the operator's ``setup`` (``open`` does it if not done yet)."""
        if not self._is_setup:
            self.operator.setup(self.setup_context)
            self._is_setup = True

    def open(self) -> None:
        self.setup()
        self.operator.open()

    def finish(self) -> None:
        """Quiesce the operator's processing-time service, then ``finish()`` the operator."""
        self.operator_processing_time_service.quiesce()
        self.operator.finish()

    def close(self) -> None:
        """Close the operator and release the harness; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._is_setup:
                self.operator.close()
        finally:
            self._dispose()

    def _dispose(self) -> None:
        pass

    def __enter__(self: _H) -> _H:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- input -----------------------------------------------------------------------------

    def process_element(self, value: Any, timestamp: int | None = None) -> None:
        """Hand one record to the operator (a batch of one)."""
        self._process([value], None if timestamp is None else [timestamp])

    def process_elements(self, values: list[Any], timestamps: Timestamps = None) -> None:
        """Hand ``values`` to the operator as one batch."""
        values = list(values)
        if timestamps is not None:
            timestamps = list(timestamps)
            if len(timestamps) != len(values):
                raise ValueError(f"{len(values)} values but {len(timestamps)} timestamps")
        self._process(values, timestamps)

    def _process(self, values: list[Any], timestamps: Timestamps) -> None:
        self.operator.process_batch(values, timestamps)

    def process_watermark(self, watermark: int) -> None:
        self.operator.process_watermark(watermark)

    def set_processing_time(self, ms: int) -> None:
        """Move the processing-time clock; due processing-time timers fire now."""
        self.processing_time_service.set_processing_time(ms)

    def get_processing_time(self) -> int:
        return self.processing_time_service.current_processing_time()

    # --- output ----------------------------------------------------------------------------

    def get_output(self) -> list[tuple[Any, int | None]]:
        """Emitted records as ``(value, timestamp)``, in emission order."""
        return list(self.output.records)

    def extract_output_values(self) -> list[Any]:
        return [value for value, _ in self.output.records]

    def get_watermarks(self) -> list[int]:
        return list(self.output.watermarks)

    def get_output_with_watermarks(self) -> list[tuple[Any, int | None] | Watermark]:
        """Records and :class:`Watermark` s interleaved as they were emitted."""
        return list(self.output.events)

    def get_side_output(self, tag: OutputTag | str) -> list[tuple[Any, int | None]]:
        """Side-output records (``(value, timestamp)``) of an ``OutputTag`` or a tag id."""
        tag_id = tag.tag_id if isinstance(tag, OutputTag) else tag
        return list(self.output.side_outputs.get(tag_id, []))

    def clear_output(self) -> None:
        self.output.records.clear()
        self.output.watermarks.clear()
        self.output.events.clear()
        self.output.side_outputs.clear()

    @property
    def accumulators(self) -> dict[str, Any]:
        """The accumulators the operator published (name -> value)."""
        return self.setup_context.accumulators

    @property
    def counters(self) -> dict[str, int]:
        """The runtime's counters the operator added (name -> count)."""
        return self.setup_context.counters


class KeyedOneInputOperatorTestHarness(OneInputOperatorTestHarness):
    """Runs a keyed one-input operator over a heap keyed state backend and timer services.

    ``key_selector``: if given, the harness makes each record's key current before the operator
    sees it (records are handed over in runs of equal keys), as a task does for operators that
    do not set keys themselves; the window operator sets its own and needs none.
    ``key_group_range``: the key groups this "subtask" owns (default: all of
    ``max_parallelism``); a key outside it raises ``StateError``.
    """

    def __init__(
        self,
        operator: OneInputStreamOperator,
        key_selector: Callable[[Any], Any] | None = None,
        max_parallelism: int = 128,
        key_group_range: range | None = None,
        *,
        name: str = "operator",
        config: Configuration | None = None,
        runtime_context: Any = None,
    ) -> None:
        super().__init__(
            operator,
            name=name,
            config=config,
            max_parallelism=max_parallelism,
            runtime_context=runtime_context,
        )
        self.key_selector = key_selector
        pts = self.processing_time_service
        self.keyed_backend = HeapKeyedStateBackend(
            name,
            max_parallelism,
            key_group_range if key_group_range is not None else range(max_parallelism),
            pts.current_processing_time,
        )
        self.timer_services = TimerServiceManager(
            self.keyed_backend, self.operator_processing_time_service
        )
        self.setup_context.keyed_backend = self.keyed_backend
        self.setup_context.timer_service_factory = self.timer_services.get

    def _process(self, values: list[Any], timestamps: Timestamps) -> None:
        selector = self.key_selector
        if selector is None:
            self.operator.process_batch(values, timestamps)
            return
        keys = [selector(v) for v in values]
        start = 0
        for end in range(1, len(values) + 1):
            if end == len(values) or keys[end] != keys[start]:
                self.keyed_backend.set_current_key(keys[start])
                ts = None if timestamps is None else timestamps[start:end]
                self.operator.process_batch(values[start:end], ts)
                start = end

    def _dispose(self) -> None:
        self.timer_services.dispose()
        self.keyed_backend.dispose()

    def num_event_time_timers(self) -> int:
        return sum(s.num_event_time_timers() for s in self.timer_services.services.values())

    def num_processing_time_timers(self) -> int:
        return sum(s.num_processing_time_timers() for s in self.timer_services.services.values())

    def num_keyed_state_entries(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> int:
        """How many keys hold an entry in ``state_name`` under ``namespace``."""
        return sum(1 for _ in self.keyed_backend.keys(state_name, namespace))
