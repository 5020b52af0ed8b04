"""Window assigners: which windows a record belongs to (tumbling, sliding, session, global, count).

Aligned windows start at ``timestamp - (timestamp - offset) mod size`` with a *floor* modulo
(Flink's ``TimeWindow.getWindowStartWithOffset``), so negative timestamps fall into the window
that contains them. Sizes, slides, gaps and offsets are accepted as ``Time``/``Duration``,
``datetime.timedelta`` or int ms. Assigners are configuration objects: pickled with the job
graph, stateless, called on the subtask's loop thread.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar

from undertow.api.functions import RuntimeContext
from undertow.api.windows.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
)
from undertow.api.windows.windows import (
    CountWindow,
    GlobalWindow,
    T,
    TimeWindow,
    W,
)
from undertow.api.windows.windows import MergeCallback as _MergeCallback
from undertow.common.time import to_millis
from undertow.core.types import MIN_TIMESTAMP
from undertow.state.descriptors import ValueStateDescriptor


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

    MergeCallback: TypeAlias = _MergeCallback

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
        off = 0 if offset is None else to_millis(offset, "offset")
        return cls(to_millis(size, "size"), off)  # type: ignore[call-arg]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size}, {self._offset})"


class TumblingEventTimeWindows(_TumblingTimeWindows[T]):
    """Fixed-size, non-overlapping windows by record timestamp."""

    _event_time = True


class TumblingProcessingTimeWindows(_TumblingTimeWindows[T]):
    """Fixed-size, non-overlapping windows by the processing-time clock at arrival."""

    _event_time = False


def tumbling_layout(assigner: WindowAssigner[Any, Any]) -> tuple[int, int] | None:
    """``(size, offset)`` of the built-in tumbling assigners, else None: their window of a
    timestamp is the one starting at ``t - (t - offset) mod size``, so the window operator finds
    it by that start without asking the assigner. Exact classes only: a subclass may override
    ``assign_windows``."""
    exact = type(assigner) in (TumblingEventTimeWindows, TumblingProcessingTimeWindows)
    if exact and isinstance(assigner, _TumblingTimeWindows):
        return assigner.get_size(), assigner.get_offset()
    return None


class _SlidingTimeWindows(_AlignedTimeWindows[T]):
    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        super().__init__(size, slide, offset)
        self._pane_size = math.gcd(size, slide)

    @classmethod
    def of(cls: type[_A], size: Any, slide: Any, offset: Any = None) -> _A:
        """Windows of ``size`` starting every ``slide`` (shifted by ``offset``); a record
        belongs to about ``size / slide`` windows."""
        off = 0 if offset is None else to_millis(offset, "offset")
        return cls(to_millis(size, "size"), to_millis(slide, "slide"), off)

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
        gap = to_millis(raw, "session gap")
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
        return EventTimeSessionWindows(to_millis(size, "session gap"))

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
        return ProcessingTimeSessionWindows(to_millis(size, "session gap"))

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
