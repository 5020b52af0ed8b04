"""The windows of a record for a non-merging assigner, each as the one instance the window
operator keeps for it, with its cleanup time.

An assigner makes new window objects per record; state and timers of every key use one
instance per distinct window instead, so a checkpoint pickles a window once per key group, not
once per key (docs/design.md, "Module notes", ``window_operator``). Each record's windows come
back as ``(window, cleanup time)`` pairs, remembered per window. For the built-in tumbling
assigners (:func:`~undertow.api.windows.assigners.tumbling_layout`) the pair is found by the
window's start, an int: no window object, no assigner call and no hash or comparison of a
window in Python per record.

Invariant: equal windows get the same pair (while it is remembered: at most
:data:`REMEMBERED_WINDOWS`, then the memo starts again). Threading: owned by one window
operator, on its task's loop thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from undertow.api.window import TimeWindow, WindowAssigner
from undertow.api.windows.assigners import tumbling_layout
from undertow.core.types import MIN_TIMESTAMP

#: Distinct windows remembered before the memo starts again (sliding windows with many
#: panes, or windows that end far apart, only share less).
REMEMBERED_WINDOWS = 1024

#: A record's windows: ``(window, cleanup time)`` per window.
Panes = Sequence[tuple[Any, int]]


class WindowPanes:
    """``of(value, timestamp)``: the record's windows as remembered pairs (module docstring).

    ``cleanup_time(window)`` is the window operator's: when the window's state goes.
    ``timestamp`` is ``MIN_TIMESTAMP`` for a record without one (the assigner then decides:
    event-time assigners raise their error).
    """

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        context: WindowAssigner.WindowAssignerContext,
        cleanup_time: Callable[[Any], int],
    ) -> None:
        self._assigner = assigner
        self._context = context
        self._cleanup_time = cleanup_time
        #: Window -> its pair (assigned windows); window start -> its one-pair list (tumbling).
        self._by_window: dict[Any, tuple[Any, int]] = {}
        self._by_start: dict[int, Panes] = {}
        layout = tumbling_layout(assigner)
        self.of: Callable[[Any, int], Panes]
        if layout is None:
            self.of = self._assigned
        else:
            self._size, self._offset = layout
            self.of = self._event_time if assigner.is_event_time() else self._processing_time

    def _assigned(self, value: Any, timestamp: int) -> Panes:
        by_window = self._by_window
        panes = []
        for window in self._assigner.assign_windows(value, timestamp, self._context):
            pane = by_window.get(window)
            if pane is None:
                if len(by_window) >= REMEMBERED_WINDOWS:
                    by_window.clear()
                pane = by_window[window] = (window, self._cleanup_time(window))
            panes.append(pane)
        return panes

    def _event_time(self, value: Any, timestamp: int) -> Panes:
        if timestamp <= MIN_TIMESTAMP:  # no timestamp: the assigner's error (or its windows)
            return self._assigned(value, timestamp)
        start = timestamp - (timestamp - self._offset) % self._size
        panes = self._by_start.get(start)
        return panes if panes is not None else self._started(start)

    def _processing_time(self, value: Any, timestamp: int) -> Panes:
        now = self._context.get_current_processing_time()
        start = now - (now - self._offset) % self._size
        panes = self._by_start.get(start)
        return panes if panes is not None else self._started(start)

    def _started(self, start: int) -> Panes:
        """The pair of the tumbling window starting at ``start``, remembered from now on."""
        by_start = self._by_start
        if len(by_start) >= REMEMBERED_WINDOWS:
            by_start.clear()
        window = TimeWindow(start, start + self._size)
        panes = by_start[start] = [(window, self._cleanup_time(window))]
        return panes
