"""PyFlink code subscripts these classes (``ProcessWindowFunction.Context[TimeWindow]``,
``WindowAssigner[T, TimeWindow]``...): each must take as many type arguments as in PyFlink 2.3.

The table lists every generic class of ``pyflink.datastream`` (its functions, window and state
modules) that undertow provides, with its number of type parameters in PyFlink 2.3.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

import pytest

PYFLINK_GENERICS = [
    ("undertow.datastream", "WindowFunction", 4),
    ("undertow.datastream", "ProcessWindowFunction", 4),
    ("undertow.datastream", "ProcessWindowFunction.Context", 1),
    ("undertow.datastream", "BroadcastProcessFunction", 3),
    ("undertow.datastream", "KeyedBroadcastProcessFunction", 4),
    ("undertow.datastream", "WindowAssigner", 2),
    ("undertow.datastream", "MergingWindowAssigner", 2),
    ("undertow.datastream", "MergingWindowAssigner.MergeCallback", 1),
    ("undertow.datastream", "Trigger", 2),
    ("undertow.datastream.functions", "AllWindowFunction", 3),
    ("undertow.datastream.functions", "ProcessAllWindowFunction", 3),
    ("undertow.datastream.functions", "ProcessAllWindowFunction.Context", 1),
    ("undertow.datastream.functions", "PassThroughWindowFunction", 3),
    ("undertow.datastream.functions", "PassThroughAllWindowFunction", 2),
    ("undertow.datastream.window", "EventTimeTrigger", 1),
    ("undertow.datastream.window", "ContinuousEventTimeTrigger", 1),
    ("undertow.datastream.window", "ProcessingTimeTrigger", 1),
    ("undertow.datastream.window", "ContinuousProcessingTimeTrigger", 1),
    ("undertow.datastream.window", "PurgingTrigger", 1),
    ("undertow.datastream.window", "CountTrigger", 1),
    ("undertow.datastream.window", "NeverTrigger", 1),
    ("undertow.datastream.window", "CountTumblingWindowAssigner", 1),
    ("undertow.datastream.window", "CountSlidingWindowAssigner", 1),
    ("undertow.datastream.window", "TumblingProcessingTimeWindows", 1),
    ("undertow.datastream.window", "TumblingEventTimeWindows", 1),
    ("undertow.datastream.window", "SlidingProcessingTimeWindows", 1),
    ("undertow.datastream.window", "SlidingEventTimeWindows", 1),
    ("undertow.datastream.window", "ProcessingTimeSessionWindows", 1),
    ("undertow.datastream.window", "EventTimeSessionWindows", 1),
    ("undertow.datastream.window", "DynamicProcessingTimeSessionWindows", 1),
    ("undertow.datastream.window", "DynamicEventTimeSessionWindows", 1),
    ("undertow.datastream.window", "GlobalWindows", 1),
    ("undertow.datastream.state", "ValueState", 1),
    ("undertow.datastream.state", "ListState", 1),
    ("undertow.datastream.state", "MapState", 2),
    ("undertow.datastream.state", "ReducingState", 1),
    ("undertow.datastream.state", "AggregatingState", 2),
    ("undertow.datastream.state", "BroadcastState", 2),
    ("undertow.datastream.state", "ReadOnlyBroadcastState", 2),
    ("undertow.datastream.state", "AppendingState", 2),
    ("undertow.datastream.state", "MergingState", 2),
]


@pytest.mark.parametrize(("module", "name", "arity"), PYFLINK_GENERICS)
def test_class_is_subscriptable_as_in_pyflink(module: str, name: str, arity: int) -> None:
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    obj[tuple([int] * arity) if arity > 1 else int]
    if arity > 1:
        with pytest.raises(TypeError):
            obj[tuple([int] * (arity + 1))]


def test_pyflink_style_window_function_annotations_import_and_run() -> None:
    from undertow.datastream import ProcessWindowFunction
    from undertow.datastream.window import TimeWindow

    class CountPerWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
        def process(
            self, key: str, context: ProcessWindowFunction.Context[TimeWindow], elements: Iterable
        ) -> Iterable[tuple]:
            window = context.window()
            yield key, window.start, window.end, len(list(elements))

    assert CountPerWindow.__orig_bases__[0].__args__[3] is TimeWindow  # type: ignore[attr-defined]
