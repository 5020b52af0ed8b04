"""The contexts the window operator hands to user code, on a heap backend and real timers."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.api.window import TimeWindow
from undertow.core.errors import StateError
from undertow.runtime.task.timers import InternalTimer, InternalTimerService
from undertow.runtime.task.window_contexts import (
    AssignerContext,
    EvictorContext,
    KeyedStateStore,
    TriggerContext,
    WindowContext,
)
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import ListStateDescriptor, ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend


class _Clock:
    def current_processing_time(self) -> int:
        return 42

    def register_timer(self, timestamp: int, callback: Any) -> Any:
        return None


class _Fired:
    def __init__(self) -> None:
        self.fired: list[tuple[int, Any]] = []

    def on_event_time(self, timer: InternalTimer) -> None:
        self.fired.append((timer.timestamp, timer.namespace))

    def on_processing_time(self, timer: InternalTimer) -> None:
        raise AssertionError("no processing-time timer here")


def _parts() -> tuple[HeapKeyedStateBackend, InternalTimerService, _Fired]:
    backend = HeapKeyedStateBackend("win", 8, range(8), lambda: 0)
    fired = _Fired()
    timers = InternalTimerService("window-timers", backend, fired, _Clock())
    backend.set_current_key("k")
    return backend, timers, fired


def test_per_window_state_is_refused_with_merging_windows_and_names_the_state() -> None:
    backend, _, _ = _parts()
    with pytest.raises(StateError, match=r"'seen'.*merging windows"):
        KeyedStateStore(backend, None).get_state(ValueStateDescriptor("seen"))


def test_window_state_is_per_window_and_global_state_is_not() -> None:
    backend, timers, _ = _parts()
    sides: list[tuple[str, Any, int]] = []
    ctx = WindowContext(timers, backend, False, lambda tag, v, ts: sides.append((tag, v, ts)))
    counts = ValueStateDescriptor("count")
    for window, value in ((TimeWindow(0, 10), 1), (TimeWindow(10, 20), 2)):
        ctx.current_window = window
        ctx.window_state().get_state(counts).update(value)
        ctx.global_state().get_state(counts).update(value)
    ctx.current_window = TimeWindow(0, 10)
    assert ctx.window_state().get_state(counts).value() == 1
    assert ctx.global_state().get_state(counts).value() == 2
    state = backend.get_partitioned_state(counts)
    state.set_current_namespace(VOID_NAMESPACE)
    assert state.value() == 2

    class Tag:
        tag_id = "late"

    ctx.output(Tag(), "x")
    assert sides == [("late", "x", 9)]  # at the window's max timestamp
    assert ctx.current_processing_time() == 42


def test_trigger_timers_and_merged_state_are_those_of_its_window() -> None:
    backend, timers, fired = _parts()
    ctx = TriggerContext("win", timers, backend, lambda: "metrics")
    seen = ListStateDescriptor("seen")
    for window, value in ((TimeWindow(0, 5), "a"), (TimeWindow(3, 8), "b")):
        ctx.window = window
        ctx.get_partitioned_state(seen).add(value)
    ctx.window, ctx.merged_windows = TimeWindow(0, 8), [TimeWindow(0, 5), TimeWindow(3, 8)]
    ctx.merge_partitioned_state(seen)
    assert sorted(ctx.get_partitioned_state(seen).get()) == ["a", "b"]
    ctx.register_event_time_timer(7)
    timers.advance_watermark(7)
    assert fired.fired == [(7, TimeWindow(0, 8))]
    assert ctx.get_metric_group() == "metrics"


def test_unmergeable_trigger_state_names_the_operator_and_the_state() -> None:
    backend, timers, _ = _parts()
    ctx = TriggerContext("win", timers, backend, lambda: None)
    ctx.window, ctx.merged_windows = TimeWindow(0, 8), [TimeWindow(0, 5)]
    with pytest.raises(StateError, match="'win': trigger state 'flag' is not mergeable"):
        ctx.merge_partitioned_state(ValueStateDescriptor("flag"))


def test_assigner_and_evictor_contexts_see_time_and_the_current_keys_state() -> None:
    backend, timers, _ = _parts()
    assigner = AssignerContext(timers, backend, None)
    assert assigner.get_current_processing_time() == 42
    assigner.get_runtime_context().get_state(ValueStateDescriptor("n")).update(3)
    state = backend.get_partitioned_state(ValueStateDescriptor("n"))
    state.set_current_namespace(VOID_NAMESPACE)
    assert state.value() == 3
    evictor = EvictorContext(timers, lambda: "metrics")
    timers.advance_watermark(5)
    assert (evictor.get_current_watermark(), evictor.get_metric_group()) == (5, "metrics")
