"""How long a task's slice of record processing may last: short while a checkpoint is on.

So the worker's :class:`TaskPace` is *hurried* by checkpoint events (a trigger received, a
barrier arrived, a snapshot taken) and, for the next :data:`HURRY_WINDOW_S` after the latest
of them, every subtask of the worker uses the shorter slice
``undertow.task.mailbox-slice-during-checkpoint`` (0.25 ms). Outside checkpoints the normal
slice applies. Only scheduling changes: what is processed, and in which order, does not.

Every hop of a checkpoint on a worker is a callback queued behind the busy tasks' next slices,
so a busy task *gives way* for a loop turn or two (:class:`GiveWay`).

Threading: the worker's loop thread. Cost: one clock read per slice, one ``poll`` per normal
slice when a socket is watched, one or two more after a long slice.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable

from undertow.core.config import Configuration
from undertow.runtime.task.settings import TaskSettings

#: How long after the latest checkpoint event the short slice applies (seconds).
HURRY_WINDOW_S = 0.05
#: A slice at least this long (seconds) makes its task give way to bytes waiting on a watched
#: socket before the next one: a turn of the loop costs tens of microseconds, worth it only
#: when the next slice would hold the bytes for long.
LONG_SLICE_S = 0.001
#: Most loop turns a task gives way in a row before it runs a slice anyway.
MAX_TURNS_GIVEN = 3
#: Whether sockets can be watched: ``select.poll`` is missing on some platforms (Windows);
#: there :meth:`TaskPace.watch` and :meth:`TaskPace.watch_data` watch nothing and tasks give
#: way after checkpoint events only.
CAN_WATCH_SOCKETS = hasattr(select, "poll")


class TaskPace:
    """The slice length for the subtasks of one worker (see the module docstring)."""

    __slots__ = ("_clock", "_data_poller", "_hurried_until", "_poller", "events", "hurried_s",
                 "normal_s")  # fmt: skip

    def __init__(
        self, normal_ms: float, hurried_ms: float, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        if normal_ms <= 0 or hurried_ms <= 0:
            raise ValueError(
                f"mailbox slices must be > 0 ms, got {normal_ms} ms and {hurried_ms} ms"
            )
        self.normal_s = normal_ms / 1000.0
        self.hurried_s = min(hurried_ms, normal_ms) / 1000.0
        self._clock = clock
        self._hurried_until = 0.0
        self._poller: select.poll | None = None
        self._data_poller: select.poll | None = None
        #: Checkpoint events so far (:meth:`hurry` calls): a busy task gives way once per event.
        self.events = 0

    @classmethod
    def of(cls, config: Configuration) -> TaskPace:
        """The pace of ``undertow.task.mailbox-slice`` (and ``...-during-checkpoint``)."""
        return cls.of_settings(TaskSettings.of(config))

    @classmethod
    def of_settings(cls, settings: TaskSettings) -> TaskPace:
        return cls(settings.mailbox_slice_ms, settings.mailbox_slice_checkpoint_ms)

    def watch(self, fd: int) -> None:
        """Hurry whenever bytes wait on socket ``fd`` (the control connection)."""
        if not CAN_WATCH_SOCKETS:
            return
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        self._poller = poller

    def watch_data(self, fd: int) -> None:
        """Give way to bytes waiting on socket ``fd`` (a data connection) while hurried."""
        if not CAN_WATCH_SOCKETS:
            return
        if self._data_poller is None:
            self._data_poller = select.poll()
        self._data_poller.register(fd, select.POLLIN)

    def hurry(self) -> None:
        """A checkpoint event: short slices for the next :data:`HURRY_WINDOW_S`, and the
        worker's busy tasks give way for a turn (:class:`GiveWay`)."""
        self._hurried_until = self._clock() + HURRY_WINDOW_S
        self.events += 1

    def bytes_waiting(self) -> bool:
        """Bytes wait on the control socket, or, while hurried, on a data socket."""
        poller = self._poller
        if poller is not None and poller.poll(0):
            return True
        data = self._data_poller
        return data is not None and self.hurried and bool(data.poll(0))

    @property
    def hurried(self) -> bool:
        return self._clock() < self._hurried_until

    def slice_s(self, now: float) -> float:
        """The slice a task starting one at ``now`` (``time.perf_counter``) may use."""
        if now < self._hurried_until:
            return self.hurried_s
        poller = self._poller
        if poller is not None and poller.poll(0):
            self._hurried_until = now + HURRY_WINDOW_S
            return self.hurried_s
        return self.normal_s


class GiveWay:
    """One task's side of the pace: whether it skips its next slice for a loop turn, so that
    the checkpoint work queued on the loop runs first (module docstring).

    Threading: the task's loop thread. Invariant: at most :data:`MAX_TURNS_GIVEN` turns in a
    row are given; a turn given for a checkpoint event is given once per event.
    """

    __slots__ = ("_given", "_owed", "_pace", "_seen", "long_slice")

    def __init__(self, pace: TaskPace) -> None:
        self._pace = pace
        self._seen = pace.events
        self._owed = 0
        self._given = 0
        #: The task's last slice was long (at least :data:`LONG_SLICE_S`).
        self.long_slice = False

    def now(self) -> bool:
        """Skip the slice due now for one loop turn?"""
        pace = self._pace
        if self._given >= MAX_TURNS_GIVEN:
            give = False
        elif pace.events != self._seen:
            give = True
        elif self._owed:
            self._owed -= 1
            give = True
        elif self.long_slice and pace.bytes_waiting():
            self._owed = 1  # the transport reads this turn, the stream's reader the next
            give = True
        else:
            give = False
        self._seen = pace.events
        self._given = self._given + 1 if give else 0
        if not give:
            self._owed = 0
        return give
