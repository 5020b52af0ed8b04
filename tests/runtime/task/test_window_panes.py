"""A record's windows as the window operator's remembered ``(window, cleanup)`` pairs: the
tumbling lookup by start gives exactly the assigner's windows, one instance per window."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.api.window import (
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from undertow.api.windows.assigners import tumbling_layout
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.task import window_panes
from undertow.runtime.task.window_functions import reduce_window_contents
from undertow.runtime.task.window_operator import WindowOperator
from undertow.runtime.task.window_panes import WindowPanes
from undertow.testing.harness import KeyedOneInputOperatorTestHarness


class Clock(WindowAssigner.WindowAssignerContext):
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now

    def get_runtime_context(self) -> Any:
        raise AssertionError("not asked by time windows")


def cleanup(window: TimeWindow) -> int:
    return window.max_timestamp() + 7


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(1, 10**6),
    offset_fraction=st.floats(-0.99, 0.99),
    timestamps=st.lists(st.integers(-(2**50), 2**50), min_size=1, max_size=30),
)
def test_tumbling_windows_found_by_start_are_the_assigners(
    size: int, offset_fraction: float, timestamps: list[int]
) -> None:
    offset = int(size * offset_fraction)
    assigner = TumblingEventTimeWindows(size, offset)
    clock = Clock()
    panes = WindowPanes(assigner, clock, cleanup)
    for ts in timestamps + timestamps:
        [(window, cleanup_time)] = panes.of("v", ts)
        assert [window] == list(assigner.assign_windows("v", ts, clock))
        assert type(window) is TimeWindow and window.start <= ts < window.end
        assert cleanup_time == cleanup(window)
        # equal windows are one instance (state and timers of every key share it)
        assert panes.of("w", window.start)[0][0] is window


def test_processing_time_windows_follow_the_clock_not_the_timestamp() -> None:
    assigner = TumblingProcessingTimeWindows(1000, 100)
    clock = Clock(now=-50)
    panes = WindowPanes(assigner, clock, cleanup)
    assert panes.of("v", 5_000)[0][0] == TimeWindow(-900, 100)
    clock.now = 2_345
    [(window, cleanup_time)] = panes.of("v", MIN_TIMESTAMP)
    assert window == TimeWindow(2_100, 3_100) and cleanup_time == 3_106


def test_a_record_without_timestamp_gets_the_assigners_error() -> None:
    panes = WindowPanes(TumblingEventTimeWindows(10, 0), Clock(), cleanup)
    with pytest.raises(ValueError, match="has no timestamp"):
        panes.of("v", MIN_TIMESTAMP)


def test_a_subclass_and_other_assigners_are_asked_and_their_windows_remembered() -> None:
    class Shifted(TumblingEventTimeWindows[Any]):
        def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
            return [TimeWindow(timestamp, timestamp + 1)]

    assert tumbling_layout(Shifted(10, 0)) is None
    assert tumbling_layout(TumblingEventTimeWindows(10, 3)) == (10, 3)
    panes = WindowPanes(Shifted(10, 0), Clock(), cleanup)
    [(window, _)] = panes.of("v", 4)
    assert window == TimeWindow(4, 5)
    assert panes.of("v", 4)[0][0] is window
    sliding = WindowPanes(SlidingEventTimeWindows(10, 5, 0), Clock(), cleanup)
    first = sliding.of("v", 7)
    assert [w for w, _ in first] == [TimeWindow(5, 15), TimeWindow(0, 10)]
    assert [w for w, _ in sliding.of("v", 12)][1] is first[0][0]


def test_the_memo_is_bounded_and_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(window_panes, "REMEMBERED_WINDOWS", 4)
    panes = WindowPanes(TumblingEventTimeWindows(10, 0), Clock(), cleanup)
    first = panes.of("v", 0)[0][0]
    for ts in range(10, 100, 10):
        panes.of("v", ts)
        assert len(panes._by_start) <= 4
    again = panes.of("v", 0)[0][0]
    assert again == first and again is not first


@pytest.mark.parametrize("lateness", [0, 5])
def test_a_window_has_one_timer_per_key_unless_lateness_sets_a_later_cleanup(
    lateness: int,
) -> None:
    """EventTimeTrigger's timer is the cleanup timer when there is no lateness: registered
    once. With lateness, both, and the window's state goes only at the cleanup timer."""
    contents = reduce_window_contents(lambda a, b: (a[0], a[1] + b[1]))
    op = WindowOperator(assigner=TumblingEventTimeWindows(10, 0), trigger=EventTimeTrigger(),
                        key_selector=lambda v: v[0], window_function=contents.window_function,
                        state_descriptor=contents.state_descriptor,
                        allowed_lateness_ms=lateness)  # fmt: skip
    h = KeyedOneInputOperatorTestHarness(op)
    h.open()
    h.process_elements([("a", 1), ("b", 1), ("a", 1)], [1, 2, 3])
    timers = [t.timestamp for s in h.timer_services.services.values()
              for t in s.event_time_timers()]  # fmt: skip
    assert sorted(timers) == ([9, 9] if lateness == 0 else [9, 9, 14, 14])
    h.process_watermark(9)
    assert sorted(h.extract_output_values()) == [("a", 2), ("b", 1)]
    h.process_elements([("a", 5)], [4])  # late, but within the lateness: fires again
    assert sorted(h.extract_output_values()) == (
        [("a", 2), ("b", 1)] if lateness == 0 else [("a", 2), ("a", 7), ("b", 1)]
    )
    h.process_watermark(20)
    assert h.num_event_time_timers() == 0
    h.close()
