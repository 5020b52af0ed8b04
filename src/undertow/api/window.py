"""Windows, window assigners, triggers and evictors (PyFlink's ``pyflink.datastream.window``).

A *window assigner* (:mod:`~undertow.api.windows.assigners`) puts each record into zero or more
windows (:mod:`~undertow.api.windows.windows`); the records of one key and one window are a
*pane*. A *trigger* (:mod:`~undertow.api.windows.triggers`) decides when a pane is evaluated
(``FIRE``) and/or discarded (``PURGE``); an optional *evictor*
(:mod:`~undertow.api.windows.evictors`) removes records from a pane just before and/or after
the window function runs. The window operator (:mod:`undertow.runtime.task.window_operator`)
drives all three with Flink's semantics. Assigners, triggers and evictors are configuration
objects, pickled with the job graph and called only on the subtask's loop thread.

This module re-exports the package ``undertow.api.windows`` under the one name that PyFlink
programs know (``from pyflink.datastream.window import ...``), so a port changes the package
name only; ``undertow.datastream.window`` re-exports the same names.
"""

from undertow.api.windows.assigners import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from undertow.api.windows.evictors import (
    CountEvictor,
    DeltaEvictor,
    Evictor,
    TimeEvictor,
    TimestampedValue,
)
from undertow.api.windows.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from undertow.api.windows.windows import (
    CountWindow,
    GlobalWindow,
    TimeWindow,
    Window,
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
