"""How long a task's slice of record processing may last: short while a checkpoint is on.

So the worker's :class:`TaskPace` is *hurried* by checkpoint events (a trigger received, a
barrier arrived, a snapshot taken) and, for the next :data:`HURRY_WINDOW_S` after the latest
of them, every subtask of the worker uses the shorter slice
``undertow.task.mailbox-slice-during-checkpoint`` (0.25 ms). Outside checkpoints the normal
slice applies. Only scheduling changes: what is processed, and in which order, does not.

Threading: the worker's loop thread (tasks and checkpointers call in from it). Cost: one clock
read per slice (the task reads the clock for its deadline anyway) and one ``poll`` per normal
slice when a socket is watched.

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


class TaskPace:
    """The slice length for the subtasks of one worker (see the module docstring)."""

    __slots__ = ("_clock", "_hurried_until", "_poller", "hurried_s", "normal_s")

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

    @classmethod
    def of(cls, config: Configuration) -> TaskPace:
        """The pace of ``undertow.task.mailbox-slice`` (and ``...-during-checkpoint``)."""
        return cls.of_settings(TaskSettings.of(config))

    @classmethod
    def of_settings(cls, settings: TaskSettings) -> TaskPace:
        return cls(settings.mailbox_slice_ms, settings.mailbox_slice_checkpoint_ms)

    def watch(self, fd: int) -> None:
        """Hurry whenever bytes wait on socket ``fd`` (the control connection)."""
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        self._poller = poller

    def hurry(self) -> None:
        """A checkpoint event: short slices for the next :data:`HURRY_WINDOW_S`."""
        self._hurried_until = self._clock() + HURRY_WINDOW_S

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
