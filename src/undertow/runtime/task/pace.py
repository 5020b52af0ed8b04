"""How long a task's slice of record processing may last: short while a checkpoint is on.

The subtasks of a worker share one event loop. A loop iteration serves every ready subtask one
slice (``undertow.task.mailbox-slice``, 2 ms), so anything that needs the loop — a checkpoint
trigger arriving over the control connection, a barrier arriving over the network, a
channel-state file written on the I/O pool coming back — waits up to a round of slices of all
the worker's busy subtasks: 10 ms with five of them. A checkpoint crosses several such hops
(trigger, one per operator, the async write, the acknowledgement), so long slices would make
unaligned checkpoints take far longer than the barriers' trip through the job. Short slices
all the time would cost a few per cent of throughput (measured: 3-5 % at 0.5 ms).

So the worker's :class:`TaskPace` is *hurried* by checkpoint events (a trigger received, a
barrier arrived, a snapshot taken) and, for the next :data:`HURRY_WINDOW_S` after the latest
of them, every subtask of the worker uses the shorter slice
``undertow.task.mailbox-slice-during-checkpoint`` (0.25 ms). Outside checkpoints the normal
slice applies. Only scheduling changes: what is processed, and in which order, does not.

The first event, the JobMaster's trigger, would itself wait for the loop: a message on the
control connection is noticed at the next ``select`` (after a round of slices), its bytes are
read after the next round and the reading coroutine resumes after another: ~2.5 rounds. So
the pace also *watches* the control connection's socket (:meth:`TaskPace.watch`): before
each normal slice it polls it (``poll`` with timeout 0, about 1 µs) and hurries when bytes
are waiting. Control traffic is rare (checkpoint triggers and notifications, split
assignments), so this costs nothing otherwise.

Threading: the worker's loop thread (tasks and checkpointers call in from it). Cost: one clock
read per slice (the task reads the clock for its deadline anyway) and one ``poll`` per normal
slice when a socket is watched.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable

from undertow.core.config import Configuration, Options

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
        return cls(config.get(Options.MAILBOX_SLICE), config.get(Options.MAILBOX_SLICE_CHECKPOINT))

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
