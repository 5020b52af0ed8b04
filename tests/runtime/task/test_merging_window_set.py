"""The in-flight session windows of one key (:mod:`undertow.runtime.task.merging_window_set`):
a merge keeps one state window, reports the others once, and persists only a change."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.api.windows.assigners import EventTimeSessionWindows
from undertow.api.windows.windows import TimeWindow
from undertow.common.time import Time
from undertow.core.errors import StateError
from undertow.runtime.task.merging_window_set import MergingWindowSet


class Value:
    """A keyed value state of one key, counting writes."""

    def __init__(self, value: Any = None) -> None:
        self._value, self.writes = value, 0

    def value(self) -> Any:
        return self._value

    def update(self, value: Any) -> None:
        self._value, self.writes = value, self.writes + 1

    def clear(self) -> None:
        self._value, self.writes = None, self.writes + 1


SESSIONS = EventTimeSessionWindows.with_gap(Time.milliseconds(10))


def session(start: int) -> TimeWindow:
    return TimeWindow(start, start + 10)


def test_separate_windows_are_their_own_state_windows() -> None:
    merges: list[Any] = []
    windows = MergingWindowSet(SESSIONS, Value())  # type: ignore[arg-type]
    assert windows.add_window(session(0), lambda *m: merges.append(m)) == session(0)
    assert windows.add_window(session(100), lambda *m: merges.append(m)) == session(100)
    assert windows.in_flight() == {session(0): session(0), session(100): session(100)}
    assert merges == []


def test_a_bridging_window_merges_into_one_state_window_and_reports_the_rest() -> None:
    merges: list[Any] = []
    windows = MergingWindowSet(SESSIONS, Value())  # type: ignore[arg-type]
    windows.add_window(session(0), lambda *m: merges.append(m))
    windows.add_window(session(15), lambda *m: merges.append(m))
    result = windows.add_window(session(8), lambda *m: merges.append(m))
    assert result == TimeWindow(0, 25)
    [(merged, merged_windows, state_window, merged_state_windows)] = merges
    assert merged == result and sorted(merged_windows, key=lambda w: w.start) == [
        session(0), session(15),
    ]  # fmt: skip
    assert windows.get_state_window(result) == state_window
    assert merged_state_windows == [w for w in (session(0), session(15)) if w != state_window]


def test_a_window_inside_an_in_flight_one_moves_no_state() -> None:
    merges: list[Any] = []
    windows = MergingWindowSet(SESSIONS, Value({TimeWindow(0, 30): TimeWindow(0, 10)}))  # type: ignore[arg-type]
    assert windows.add_window(TimeWindow(5, 15), lambda *m: merges.append(m)) == TimeWindow(0, 30)
    assert merges == [] and windows.get_state_window(TimeWindow(0, 30)) == TimeWindow(0, 10)


def test_persist_writes_only_a_change_and_clears_when_empty() -> None:
    state = Value({session(0): session(0)})
    windows = MergingWindowSet(SESSIONS, state)  # type: ignore[arg-type]
    windows.persist()
    assert state.writes == 0
    windows.retire_window(session(0))
    windows.persist()
    assert state.value() is None and state.writes == 1
    with pytest.raises(StateError, match="not in the in-flight window set"):
        windows.retire_window(session(0))
