"""The windows of one key under a merging assigner (sessions), Flink's ``MergingWindowSet``.

Each in-flight window the user sees (``[3, 15)``) maps to a *state window*: the namespace that
holds the pane's contents. When windows merge, the result takes over the state window of one
of the merged windows and the state of the others is merged into it, so merging costs one
state merge instead of re-namespacing everything.

Invariants: the mapping's keys are pairwise non-mergeable windows of one key; every value is
a namespace that holds (or held) that window's contents. The mapping is read from keyed value
state when the set is built and written back by :meth:`persist` only if it changed.

Lifecycle: build one per key per record or timer (the operator sets the current key first),
call ``add_window``/``retire_window``, then ``persist``. Threading: the task's loop thread.
Cost: ``add_window`` is O(n log n) in the number of in-flight windows of the key (usually a
handful), plus one value-state read and at most one write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from undertow.api.window import MergingWindowAssigner, Window
from undertow.core.errors import StateError
from undertow.state.descriptors import ValueState

#: ``(merge_result, merged_windows, state_window_result, merged_state_windows) -> None``:
#: called once per merge that involves windows with state (Flink's ``MergeFunction``).
MergeFunction = Callable[[Any, list[Any], Any, list[Any]], None]


class _CollectMerges(MergingWindowAssigner.MergeCallback[Any]):
    def __init__(self) -> None:
        self.results: list[tuple[Any, list[Any]]] = []

    def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
        self.results.append((merge_result, list(to_be_merged)))


class MergingWindowSet:
    """In-flight windows of the current key and their state windows (see module docstring)."""

    __slots__ = ("_assigner", "_initial", "_mapping", "_state")

    def __init__(self, assigner: MergingWindowAssigner[Any, Any], state: ValueState[Any]) -> None:
        self._assigner = assigner
        self._state = state
        stored = state.value()
        self._mapping: dict[Any, Any] = dict(stored) if stored else {}
        self._initial = dict(self._mapping)

    def persist(self) -> None:
        """Write the mapping back to keyed state if it changed (cleared when empty)."""
        if self._mapping != self._initial:
            if self._mapping:
                self._state.update(dict(self._mapping))
            else:
                self._state.clear()
            self._initial = dict(self._mapping)

    def get_state_window(self, window: Window) -> Any:
        """The namespace holding ``window``'s contents, or None if it is not in flight."""
        return self._mapping.get(window)

    def retire_window(self, window: Window) -> None:
        """Forget ``window`` (its state was cleared, or it was late)."""
        if self._mapping.pop(window, None) is None:
            raise StateError(f"window {window!r} is not in the in-flight window set")

    def in_flight(self) -> dict[Any, Any]:
        """A copy of the mapping window -> state window (tests, debugging)."""
        return dict(self._mapping)

    def add_window(self, new_window: Window, merge_function: MergeFunction) -> Any:
        """Add ``new_window``, merging it with in-flight windows; return the window it is now
        part of (``new_window`` itself if nothing merged). ``merge_function`` runs for every
        merge before this returns, so the caller can move trigger state and timers."""
        mapping = self._mapping
        windows = [*mapping, new_window]
        collected = _CollectMerges()
        self._assigner.merge_windows(windows, collected)

        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in collected.results:
            if new_window in merged_windows:
                merged_windows.remove(new_window)
                merged_new_window = True
                result_window = merge_result
            # The merge result takes over the state window of (any) one of the merged windows.
            state_window_result = mapping[merged_windows[0]]
            merged_state_windows = [mapping.pop(w) for w in merged_windows if w in mapping]
            mapping[merge_result] = state_window_result
            merged_state_windows.remove(state_window_result)
            # Merging one pre-existing window into itself (the new window fell inside it)
            # moves no state and needs no trigger work.
            if not (len(merged_windows) == 1 and merged_windows[0] == merge_result):
                merge_function(
                    merge_result, merged_windows, state_window_result, merged_state_windows
                )

        if not collected.results or (result_window == new_window and not merged_new_window):
            mapping[result_window] = result_window
        return result_window

    def __repr__(self) -> str:
        return f"MergingWindowSet({self._mapping!r})"
