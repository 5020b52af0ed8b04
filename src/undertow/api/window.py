"""Windows, window assigners, triggers and evictors (PyFlink's ``pyflink.datastream.window``).

A *window assigner* puts each record into zero or more windows; the set of records of one key
and one window is a *pane*. A *trigger* decides when a pane is evaluated (``FIRE``) and/or
discarded (``PURGE``); an optional *evictor* removes records from a pane just before and/or
just after the window function runs. The window operator
(:mod:`undertow.runtime.task.window_operator`) drives all three; Flink's semantics apply.

Lifecycle and threading: assigners, triggers and evictors are configuration objects. They are
pickled with the job graph, shared by every key and window of a subtask, and called only on
the subtask's loop thread. They keep no per-key or per-window data in attributes: a trigger
keeps what it must remember in state obtained from its context
(``ctx.get_partitioned_state``), scoped to the current key and window.

Invariants:

- A :class:`TimeWindow` is the half-open interval ``[start, end)``; ``max_timestamp()`` is
  ``end - 1``, the timestamp of the output of a fired window.
- Aligned windows start at ``timestamp - (timestamp - offset) mod size`` with a *floor*
  modulo (Flink's ``TimeWindow.getWindowStartWithOffset``), so negative timestamps fall into
  the window that contains them.
- Sizes, slides, gaps, offsets and intervals are accepted as ``undertow.common.Time`` /
  ``Duration`` (anything with ``to_milliseconds()``), ``datetime.timedelta`` or int ms.

Why this module is one piece of about 1200 lines: PyFlink programs import every window class
from ``pyflink.datastream.window``; keeping the same single module keeps ports a change of
the package name only. Evictors (Java-only in Flink, absent from PyFlink) live here too so that
``from undertow.api.window import CountEvictor`` works next to the assigners.
"""

from __future__ import annotations

import datetime
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar

from undertow.api.functions import RuntimeContext
from undertow.core.types import MAX_WATERMARK, MIN_TIMESTAMP
from undertow.state.descriptors import (
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    ValueStateDescriptor,
)

__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountEvictor",
    "CountSlidingWindowAssigner",
    "CountTrigger",
    "CountTumblingWindowAssigner",
    "CountWindow",
    "DeltaEvictor",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "Evictor",
    "GlobalWindow",
    "GlobalWindows",
    "MergingWindowAssigner",
    "NeverTrigger",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeEvictor",
    "TimeWindow",
    "TimestampedValue",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "Window",
    "WindowAssigner",
]

T = TypeVar("T")
W = TypeVar("W", bound="Window")
W2 = TypeVar("W2")

#: Largest timestamp; the ``max_timestamp`` of windows that never end (Java's Long.MAX_VALUE).
MAX_LONG_VALUE = MAX_WATERMARK


def _to_millis(value: Any, what: str) -> int:
    """Milliseconds of a ``Time``/``Duration`` (``to_milliseconds()``), ``timedelta`` or int."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a Time, Duration, timedelta or int ms, got {value!r}")
    if isinstance(value, int):
        return value
    if hasattr(value, "to_milliseconds"):
        return int(value.to_milliseconds())
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    raise TypeError(f"{what} must be a Time, Duration, timedelta or int ms, got {value!r}")


# --- windows ---------------------------------------------------------------------------------


class Window(ABC):
    """A finite bucket of records. Every record of a window has arrived once time passes
    ``max_timestamp()``. Windows are immutable, hashable values (they key window state)."""

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int: ...


class TimeWindow(Window):
    """The time interval ``[start, end)`` in epoch milliseconds. Ordered by (start, end)."""

    __slots__ = ("_hash", "end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end
        self._hash = hash((start, end))  # windows key state and timers: hashed often

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """True if the windows overlap or touch (``[0, 5)`` and ``[5, 9)`` intersect)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window that contains both windows."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the aligned window of ``window_size`` (shifted by ``offset``) containing
        ``timestamp``; correct for negative timestamps (floor modulo)."""
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(
        windows: Iterable[TimeWindow], callback: MergingWindowAssigner.MergeCallback[TimeWindow]
    ) -> None:
        """Merge intersecting windows: one ``callback.merge(group, cover)`` per group of two or
        more windows. Groups are lists in (start, end) order."""
        merged: list[tuple[TimeWindow, list[TimeWindow]]] = []
        for candidate in sorted(windows):
            if merged and merged[-1][0].intersects(candidate):
                cover, group = merged[-1]
                group.append(candidate)
                merged[-1] = (cover.cover(candidate), group)
            else:
                merged.append((candidate, [candidate]))
        for cover, group in merged:
            if len(group) > 1:
                callback.merge(group, cover)

    def _key(self) -> tuple[int, int]:
        return (self.start, self.end)

    def __eq__(self, other: object) -> bool:
        return type(other) is TimeWindow and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: TimeWindow) -> bool:
        return self._key() < other._key()

    def __le__(self, other: TimeWindow) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: TimeWindow) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: TimeWindow) -> bool:
        return self._key() >= other._key()

    def __reduce__(self) -> tuple[Any, ...]:
        return (TimeWindow, (self.start, self.end))

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    """A window of count-based assigners, identified by a number; it never ends in time."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return type(other) is CountWindow and self.id == other.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __lt__(self, other: CountWindow) -> bool:
        return self.id < other.id

    def __reduce__(self) -> tuple[Any, ...]:
        return (CountWindow, (self.id,))

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The single window of :class:`GlobalWindows`; it never ends in time."""

    __slots__ = ()
    _instance: ClassVar[GlobalWindow | None] = None

    def __new__(cls) -> GlobalWindow:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return type(other) is GlobalWindow

    def __hash__(self) -> int:
        return 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (GlobalWindow.get, ())

    def __repr__(self) -> str:
        return "GlobalWindow"


# --- triggers --------------------------------------------------------------------------------


class TriggerResult(Enum):
    """What to do with a pane. A fired pane with no contents does not call the function.

    - ``CONTINUE``: nothing.
    - ``FIRE``: evaluate the window function and emit; keep the contents.
    - ``PURGE``: discard the contents without evaluating.
    - ``FIRE_AND_PURGE``: evaluate and emit, then discard the contents.
    """

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return bool(self.value[0])

    def is_purge(self) -> bool:
        return bool(self.value[1])


class Trigger(ABC, Generic[T, W]):
    """Decides when a pane fires. One object serves every key and window: keep per-pane data in
    ``ctx.get_partitioned_state``. With a :class:`MergingWindowAssigner` the trigger must
    return True from :meth:`can_merge` and implement :meth:`on_merge`."""

    class TriggerContext(ABC):
        """Timers and state of the current key and window, passed to every trigger method."""

        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_metric_group(self) -> Any: ...

        @abstractmethod
        def get_current_watermark(self) -> int: ...

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None:
            """Call :meth:`Trigger.on_processing_time` once the clock reaches ``time``."""

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None:
            """Call :meth:`Trigger.on_event_time` once the watermark reaches ``time``."""

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
            """State scoped to the current key and window."""

    class OnMergeContext(TriggerContext):
        """The context of :meth:`Trigger.on_merge`."""

        @abstractmethod
        def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
            """Merge the state of the merged windows into the state of the new window."""

    @abstractmethod
    def on_element(
        self, element: T, timestamp: int, window: W, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        """Called for every record added to a pane."""

    @abstractmethod
    def on_processing_time(
        self, time: int, window: W, ctx: Trigger.TriggerContext
    ) -> TriggerResult: ...

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: Trigger.TriggerContext) -> TriggerResult: ...

    def can_merge(self) -> bool:
        return False

    @abstractmethod
    def on_merge(self, window: W, ctx: Trigger.OnMergeContext) -> None:
        """Called when windows were merged into ``window`` (session windows)."""

    @abstractmethod
    def clear(self, window: W, ctx: Trigger.TriggerContext) -> None:
        """Delete the timers and state this trigger holds for ``window`` (window is purged)."""


class EventTimeTrigger(Trigger[T, TimeWindow]):
    """Fires once the watermark passes the end of the window; fires at once for a record that
    arrives after that (allowed lateness)."""

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def __repr__(self) -> str:
        return "EventTimeTrigger()"


class ProcessingTimeTrigger(Trigger[T, TimeWindow]):
    """Fires once the processing-time clock passes the end of the window."""

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def __repr__(self) -> str:
        return "ProcessingTimeTrigger()"


class _ContinuousTimeTrigger(Trigger[T, TimeWindow]):
    """Shared part of the continuous triggers: the next fire time lives in ``fire-time``."""

    def __init__(self, interval: int) -> None:
        if interval <= 0:
            raise ValueError(f"{type(self).__name__} interval must be > 0 ms, got {interval}")
        self.interval = interval
        self.state_desc = ReducingStateDescriptor("fire-time", min)

    def _fire_time(self, ctx: Trigger.TriggerContext) -> ReducingState[int]:
        state = ctx.get_partitioned_state(self.state_desc)
        assert isinstance(state, ReducingState)
        return state

    def _register_next_fire_timestamp(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        self._fire_time(ctx).add(next_fire)
        self._register_timer(ctx, next_fire)

    @abstractmethod
    def _register_timer(self, ctx: Trigger.TriggerContext, time: int) -> None: ...

    @abstractmethod
    def _delete_timer(self, ctx: Trigger.TriggerContext, time: int) -> None: ...

    def _on_timer(self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext) -> bool:
        """True (and the next fire time registered) if ``time`` is this pane's fire time."""
        state = self._fire_time(ctx)
        if state.get() == time:
            state.clear()
            self._register_next_fire_timestamp(time, window, ctx)
            return True
        return False

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = self._fire_time(ctx).get()
        if next_fire is not None:
            self._register_timer(ctx, next_fire)

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        state = self._fire_time(ctx)
        next_fire = state.get()
        if next_fire is not None:
            self._delete_timer(ctx, next_fire)
            state.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.interval})"


class ContinuousEventTimeTrigger(_ContinuousTimeTrigger[T]):
    """Fires every ``interval`` of event time (aligned to multiples of the interval) and once
    more when the watermark passes the end of the window."""

    @staticmethod
    def of(interval: Any) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(_to_millis(interval, "interval"))

    def _register_timer(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete_timer(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # the watermark is already past the window
        ctx.register_event_time_timer(window.max_timestamp())
        if self._fire_time(ctx).get() is None:
            start = timestamp - timestamp % self.interval
            self._register_next_fire_timestamp(start, window, ctx)
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return TriggerResult.FIRE if self._on_timer(time, window, ctx) else TriggerResult.CONTINUE


class ContinuousProcessingTimeTrigger(_ContinuousTimeTrigger[T]):
    """Fires every ``interval`` of processing time (aligned to multiples of the interval)."""

    @staticmethod
    def of(interval: Any) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(_to_millis(interval, "interval"))

    def _register_timer(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete_timer(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if self._fire_time(ctx).get() is None:
            now = ctx.get_current_processing_time()
            self._register_next_fire_timestamp(now - now % self.interval, window, ctx)
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE if self._on_timer(time, window, ctx) else TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE


def _add(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger[T, CountWindow]):
    """Fires when the pane has received ``count`` records since it last fired."""

    def __init__(self, window_size: int) -> None:
        if window_size <= 0:
            raise ValueError(f"CountTrigger count must be > 0, got {window_size}")
        self._window_size = window_size
        self._count_state_descriptor = ReducingStateDescriptor("count", _add)

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        return CountTrigger(window_size)

    def _count(self, ctx: Trigger.TriggerContext) -> ReducingState[int]:
        state = ctx.get_partitioned_state(self._count_state_descriptor)
        assert isinstance(state, ReducingState)
        return state

    def on_element(
        self, element: Any, timestamp: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        count = self._count(ctx)
        count.add(1)
        if count.get() >= self._window_size:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._count_state_descriptor)

    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None:
        self._count(ctx).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self._window_size})"


class PurgingTrigger(Trigger[T, Window]):
    """Turns ``FIRE`` of the nested trigger into ``FIRE_AND_PURGE``."""

    def __init__(self, nested_trigger: Trigger[Any, Any]) -> None:
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger[Any, Any]) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(
        self, element: Any, timestamp: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"


class NeverTrigger(Trigger[T, GlobalWindow]):
    """Never fires; the default trigger of :class:`GlobalWindows`."""

    def on_element(
        self, element: Any, timestamp: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        pass

    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None:
        pass

    def __repr__(self) -> str:
        return "NeverTrigger()"


# --- assigners -------------------------------------------------------------------------------


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns zero or more windows to each record."""

    class WindowAssignerContext(ABC):
        """What an assigner may ask the operator: the clock and keyed state (count windows)."""

        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_runtime_context(self) -> RuntimeContext:
            """The function runtime context; its ``get_state`` etc. read the current key."""

    @abstractmethod
    def assign_windows(
        self, element: T, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[W]:
        """The windows of ``element``; ``timestamp`` is ``MIN_TIMESTAMP`` if it has none."""

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger[T, W]:
        """The trigger used unless ``WindowedStream.trigger`` sets another."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """True if windows follow record timestamps (event-time timers, lateness)."""


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge (sessions)."""

    class MergeCallback(ABC, Generic[W2]):
        @abstractmethod
        def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None:
            """The windows ``to_be_merged`` become the single window ``merge_result``."""

    @abstractmethod
    def merge_windows(
        self, windows: Iterable[W], callback: MergingWindowAssigner.MergeCallback[W]
    ) -> None:
        """Report through ``callback`` which of ``windows`` merge."""


def _event_timestamp(
    element: Any, timestamp: int | None, assigner: WindowAssigner[Any, Any]
) -> int:
    if timestamp is None or timestamp <= MIN_TIMESTAMP:
        raise ValueError(
            f"{assigner!r}: record {element!r} has no timestamp. Event-time windows need "
            "timestamps: did you forget data_stream.assign_timestamps_and_watermarks(...)?"
        )
    return timestamp


_A = TypeVar("_A", bound="_AlignedTimeWindows")


class _AlignedTimeWindows(WindowAssigner[T, TimeWindow]):
    """Tumbling (``slide == size``) and sliding windows aligned to the epoch plus ``offset``."""

    _event_time: ClassVar[bool]

    def __init__(self, size: int, slide: int, offset: int) -> None:
        if size <= 0 or slide <= 0 or abs(offset) >= slide:
            raise ValueError(
                f"{type(self).__name__} needs size > 0, slide > 0 and abs(offset) < slide; got "
                f"size={size} ms, slide={slide} ms, offset={offset} ms"
            )
        self._size = size
        self._slide = slide
        self._offset = offset

    def _now(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> int:
        if self._event_time:
            return _event_timestamp(element, timestamp, self)
        return context.get_current_processing_time()

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = self._now(element, timestamp, context)
        size, slide = self._size, self._slide
        last_start = now - (now - self._offset) % slide
        if slide == size:
            return [TimeWindow(last_start, last_start + size)]
        return [TimeWindow(start, start + size) for start in range(last_start, now - size, -slide)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger() if self._event_time else ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return self._event_time

    def get_size(self) -> int:
        return self._size

    def get_slide(self) -> int:
        return self._slide

    def get_offset(self) -> int:
        return self._offset


class _TumblingTimeWindows(_AlignedTimeWindows[T]):
    def __init__(self, size: int, offset: int = 0) -> None:
        if size > 0 and abs(offset) >= size:
            raise ValueError(
                f"{type(self).__name__} needs abs(offset) < size; got size={size} ms, "
                f"offset={offset} ms"
            )
        super().__init__(size, size, offset)

    @classmethod
    def of(cls: type[_A], size: Any, offset: Any = None) -> _A:
        """Windows of ``size``, starting at multiples of ``size`` shifted by ``offset``
        (e.g. ``of(Time.days(1), Time.hours(-8))`` for days in UTC+8)."""
        off = 0 if offset is None else _to_millis(offset, "offset")
        return cls(_to_millis(size, "size"), off)  # type: ignore[call-arg]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size}, {self._offset})"


class TumblingEventTimeWindows(_TumblingTimeWindows[T]):
    """Fixed-size, non-overlapping windows by record timestamp."""

    _event_time = True


class TumblingProcessingTimeWindows(_TumblingTimeWindows[T]):
    """Fixed-size, non-overlapping windows by the processing-time clock at arrival."""

    _event_time = False


class _SlidingTimeWindows(_AlignedTimeWindows[T]):
    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        super().__init__(size, slide, offset)
        self._pane_size = math.gcd(size, slide)

    @classmethod
    def of(cls: type[_A], size: Any, slide: Any, offset: Any = None) -> _A:
        """Windows of ``size`` starting every ``slide`` (shifted by ``offset``); a record
        belongs to about ``size / slide`` windows."""
        off = 0 if offset is None else _to_millis(offset, "offset")
        return cls(_to_millis(size, "size"), _to_millis(slide, "slide"), off)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size}, {self._slide}, {self._offset})"


class SlidingEventTimeWindows(_SlidingTimeWindows[T]):
    """Overlapping windows of ``size`` every ``slide``, by record timestamp."""

    _event_time = True


class SlidingProcessingTimeWindows(_SlidingTimeWindows[T]):
    """Overlapping windows of ``size`` every ``slide``, by the processing-time clock."""

    _event_time = False


class SessionWindowTimeGapExtractor(ABC):
    """Extracts the session gap (ms) of a record for dynamic session windows."""

    @abstractmethod
    def extract(self, element: Any) -> int: ...


class _SessionWindows(MergingWindowAssigner[T, TimeWindow]):
    """Each record opens ``[t, t + gap)``; intersecting windows of a key merge into a session."""

    _event_time: ClassVar[bool]

    def __init__(
        self,
        session_gap: int = 0,
        extractor: SessionWindowTimeGapExtractor | Callable[[Any], Any] | None = None,
    ) -> None:
        if extractor is None and session_gap <= 0:
            raise ValueError(f"{type(self).__name__} needs a gap > 0 ms, got {session_gap}")
        self._session_gap = session_gap
        self._extractor = extractor

    def _gap(self, element: Any) -> int:
        extractor = self._extractor
        if extractor is None:
            return self._session_gap
        raw = (
            extractor.extract(element)
            if isinstance(extractor, SessionWindowTimeGapExtractor)
            else extractor(element)
        )
        gap = _to_millis(raw, "session gap")
        if gap <= 0:
            raise ValueError(f"dynamic session gap must be > 0 ms, got {gap} for {element!r}")
        return gap

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        if self._event_time:
            start = _event_timestamp(element, timestamp, self)
        else:
            start = context.get_current_processing_time()
        return [TimeWindow(start, start + self._gap(element))]

    def merge_windows(
        self,
        windows: Iterable[TimeWindow],
        callback: MergingWindowAssigner.MergeCallback[TimeWindow],
    ) -> None:
        TimeWindow.merge_windows(windows, callback)

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger() if self._event_time else ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return self._event_time

    def __repr__(self) -> str:
        gap = self._extractor if self._extractor is not None else self._session_gap
        return f"{type(self).__name__}({gap!r})"


class EventTimeSessionWindows(_SessionWindows[T]):
    """Sessions by record timestamp, closed after ``gap`` without records."""

    _event_time = True

    @staticmethod
    def with_gap(size: Any) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(_to_millis(size, "session gap"))

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor | Callable[[Any], Any],
    ) -> DynamicEventTimeSessionWindows:
        """Sessions whose gap is taken from each record (an extractor or a callable)."""
        return DynamicEventTimeSessionWindows(extractor)


class DynamicEventTimeSessionWindows(EventTimeSessionWindows[T]):
    """Event-time sessions with a per-record gap."""

    def __init__(self, extractor: SessionWindowTimeGapExtractor | Callable[[Any], Any]) -> None:
        super().__init__(0, extractor)


class ProcessingTimeSessionWindows(_SessionWindows[T]):
    """Sessions by the processing-time clock, closed after ``gap`` without records."""

    _event_time = False

    @staticmethod
    def with_gap(size: Any) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(_to_millis(size, "session gap"))

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor | Callable[[Any], Any],
    ) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)


class DynamicProcessingTimeSessionWindows(ProcessingTimeSessionWindows[T]):
    """Processing-time sessions with a per-record gap."""

    def __init__(self, extractor: SessionWindowTimeGapExtractor | Callable[[Any], Any]) -> None:
        super().__init__(0, extractor)


class GlobalWindows(WindowAssigner[T, GlobalWindow]):
    """Every record of a key goes to the one :class:`GlobalWindow`. The default trigger never
    fires: set a trigger (e.g. ``CountTrigger``)."""

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[GlobalWindow]:
        return [GlobalWindow.get()]

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, GlobalWindow]:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


def _next_count(context: WindowAssigner.WindowAssignerContext, desc: ValueStateDescriptor) -> int:
    """The per-key arrival number of this record (0, 1, ...), kept in ``desc``."""
    state: Any = context.get_runtime_context().get_state(desc)
    count = state.value() or 0
    state.update(count + 1)
    return count


class CountTumblingWindowAssigner(WindowAssigner[T, CountWindow]):
    """Per key, records ``n*k .. n*k + n - 1`` form ``CountWindow(k)``; it fires (and is purged)
    when full. PyFlink's ``KeyedStream.count_window(size)``."""

    def __init__(self, window_size: int) -> None:
        if window_size <= 0:
            raise ValueError(f"count window size must be > 0, got {window_size}")
        self._window_size = window_size
        self._count_descriptor = ValueStateDescriptor("tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[CountWindow]:
        return [CountWindow(_next_count(context, self._count_descriptor) // self._window_size)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        # Purging (unlike PyFlink's plain CountTrigger): same output, no state left behind.
        return PurgingTrigger(CountTrigger(self._window_size))

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(WindowAssigner[T, CountWindow]):
    """Per key, ``CountWindow(k)`` holds records ``slide*k .. slide*k + size - 1``; it fires (and
    is purged) when full. PyFlink's ``KeyedStream.count_window(size, slide)``."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        if window_size <= 0 or window_slide <= 0:
            raise ValueError(
                f"count window size and slide must be > 0, got {window_size}, {window_slide}"
            )
        self._window_size = window_size
        self._window_slide = window_slide
        self._count_descriptor = ValueStateDescriptor("slide-count-assigner")

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[CountWindow]:
        count = _next_count(context, self._count_descriptor)
        last_id = count // self._window_slide
        first_id = max(0, -((self._window_size - 1 - count) // self._window_slide))
        return [CountWindow(i) for i in range(last_id, first_id - 1, -1)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return PurgingTrigger(CountTrigger(self._window_size))

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"


# --- evictors --------------------------------------------------------------------------------


class TimestampedValue(Generic[T]):
    """A record of a pane with its timestamp, as an :class:`Evictor` sees it."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: T, timestamp: int | None = None) -> None:
        self.value = value
        self.timestamp = timestamp

    def get_value(self) -> T:
        return self.value

    def get_timestamp(self) -> int:
        return MIN_TIMESTAMP if self.timestamp is None else self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TimestampedValue)
            and self.value == other.value
            and self.timestamp == other.timestamp
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TimestampedValue({self.value!r}, {self.timestamp!r})"


class Evictor(ABC, Generic[T, W]):
    """Removes records from a pane before and/or after the window function runs.

    ``elements`` is a list that the evictor edits in place (``del elements[i]``, slice
    assignment); what is left is what the function sees (``evict_before``) and what the pane
    keeps (``evict_after``). ``size`` is ``len(elements)`` on entry.
    """

    class EvictorContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_metric_group(self) -> Any: ...

        @abstractmethod
        def get_current_watermark(self) -> int: ...

    @abstractmethod
    def evict_before(
        self,
        elements: list[TimestampedValue[T]],
        size: int,
        window: W,
        evictor_context: Evictor.EvictorContext,
    ) -> None: ...

    @abstractmethod
    def evict_after(
        self,
        elements: list[TimestampedValue[T]],
        size: int,
        window: W,
        evictor_context: Evictor.EvictorContext,
    ) -> None: ...


class _BeforeOrAfterEvictor(Evictor[Any, Any]):
    def __init__(self, do_evict_after: bool) -> None:
        self._do_evict_after = do_evict_after

    @abstractmethod
    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None: ...

    def evict_before(
        self,
        elements: list[TimestampedValue[Any]],
        size: int,
        window: Any,
        evictor_context: Evictor.EvictorContext,
    ) -> None:
        if not self._do_evict_after:
            self._evict(elements, size)

    def evict_after(
        self,
        elements: list[TimestampedValue[Any]],
        size: int,
        window: Any,
        evictor_context: Evictor.EvictorContext,
    ) -> None:
        if self._do_evict_after:
            self._evict(elements, size)


class CountEvictor(_BeforeOrAfterEvictor):
    """Keeps the last ``max_count`` records of the pane."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if max_count < 0:
            raise ValueError(f"CountEvictor max_count must be >= 0, got {max_count}")
        super().__init__(do_evict_after)
        self._max_count = max_count

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if size > self._max_count:
            del elements[: size - self._max_count]

    def __repr__(self) -> str:
        return f"CountEvictor({self._max_count}, {self._do_evict_after})"


class TimeEvictor(_BeforeOrAfterEvictor):
    """Keeps records with timestamp > (largest timestamp in the pane) - ``window_size``.
    Panes whose records carry no timestamps are left alone."""

    def __init__(self, window_size: int, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        self._window_size = window_size

    @staticmethod
    def of(window_size: Any, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(_to_millis(window_size, "window_size"), do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements or not elements[0].has_timestamp():
            return
        cutoff = max(e.get_timestamp() for e in elements) - self._window_size
        elements[:] = [e for e in elements if e.get_timestamp() > cutoff]

    def __repr__(self) -> str:
        return f"TimeEvictor({self._window_size}, {self._do_evict_after})"


class DeltaEvictor(_BeforeOrAfterEvictor):
    """Evicts records whose delta to the last record of the pane is >= ``threshold``.

    ``delta_function`` is a callable ``(old, new) -> float`` or an object with
    ``get_delta(old, new)`` (Flink's DeltaFunction).
    """

    def __init__(self, threshold: float, delta_function: Any, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        self._threshold = threshold
        get_delta = getattr(delta_function, "get_delta", None)
        self._delta: Callable[[Any, Any], float] = (
            get_delta if callable(get_delta) else delta_function
        )

    @staticmethod
    def of(threshold: float, delta_function: Any, do_evict_after: bool = False) -> DeltaEvictor:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements:
            return
        last, delta, threshold = elements[-1].value, self._delta, self._threshold
        elements[:] = [e for e in elements if delta(e.value, last) < threshold]

    def __repr__(self) -> str:
        return f"DeltaEvictor({self._threshold}, {self._do_evict_after})"
