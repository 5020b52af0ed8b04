"""Triggers: when a pane is evaluated (``FIRE``) and/or discarded (``PURGE``).

A trigger is a configuration object shared by every key and window of a subtask and called on
its loop thread only; what it must remember it keeps in state from its context
(``ctx.get_partitioned_state``), scoped to the current key and window, never in attributes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic

from undertow.api.windows.windows import (
    CountWindow,
    GlobalWindow,
    T,
    TimeWindow,
    W,
    Window,
)
from undertow.common.time import to_millis
from undertow.state.descriptors import (
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
)


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
        return ContinuousEventTimeTrigger(to_millis(interval, "interval"))

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
        return ContinuousProcessingTimeTrigger(to_millis(interval, "interval"))

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
