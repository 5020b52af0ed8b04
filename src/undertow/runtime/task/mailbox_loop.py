"""A subtask's mailbox loop: a default action in time-budgeted slices, with mails in between.

Threading: one asyncio task on the worker's loop runs :meth:`MailboxLoop.run`; ``post``,
``wake``, ``cancel`` and the output-availability methods are called from that loop,
``post_threadsafe`` from anywhere. Lifecycle: built with its task; ``run`` is called once per
phase of the task (process input, then wait to close), each until its ``done`` says so.

Invariant (Flink's rule, ARCHITECTURE.md §2): the default action runs only while every
output can take another buffer; a task that cannot emit waits, counted as backpressured,
while mails still run. Mails run in posting order; those queued when a turn starts run before
its slice, a mail posted by a mail at the next turn (so work a mail continues in slices, such as
a snapshot's pickling, never holds the loop longer than one slice). A phase ends with no mail
queued. While the input is held
(:meth:`MailboxLoop.hold_input`: a watermark's timers go on in mails) no slice runs.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from undertow.core.errors import JobCancelledError
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.task.collect_credit import AvailabilityProvider, GatedOperator
from undertow.runtime.task.pace import LONG_SLICE_S, GiveWay, TaskPace
from undertow.runtime.task.task_statistics import TaskTimeAccounting


def fit_switch_interval(slice_s: float) -> None:
    """Lower the interpreter's switch interval below half the mailbox slice (never raise it).

    A busy task gives up the GIL at every slice boundary (the loop polls for I/O). When it
    does that more often than the switch interval, CPython never forces a switch and other
    threads of the process (the I/O pool, the JobMaster, other workers of ``local-threads``)
    wait for the GIL without bound: measured, a thread sleeping 5 ms did not run again within
    30 s beside 2 ms slices at the default 5 ms interval. Process-wide; called by every worker.
    """
    if slice_s > 0:
        sys.setswitchinterval(min(sys.getswitchinterval(), slice_s / 2))


def _false() -> bool:
    return False


def _nothing() -> None:
    pass


class TaskCancelled(JobCancelledError):
    """The task was cancelled (its loop raises this at the next turn)."""


class MailboxLoop:
    """The mailbox and the loop of one subtask, and its outputs' availability (it implements
    the timers' :class:`~undertow.runtime.task.timers.OutputAvailability`)."""

    def __init__(
        self,
        *,
        name: str,
        loop: asyncio.AbstractEventLoop,
        partitions: Sequence[ResultPartition],
        pace: TaskPace,
    ) -> None:
        self.name = name
        self.loop = loop
        self.partitions = partitions
        #: What the default action waits for: the partitions, then the operators' gates.
        self._outputs: list[AvailabilityProvider] = list(partitions)
        #: The slice length, shared by the worker's tasks (short while a checkpoint is on).
        self.pace = pace
        self.mailbox: deque[Callable[[], None]] = deque()
        self._wake = asyncio.Event()
        self.cancelled = False
        #: Busy, backpressured and idle time since the task started running.
        self.time_accounting = TaskTimeAccounting()
        #: Work that waits for the output to become available (deferred timer bursts).
        self._when_available: deque[Callable[[], None]] = deque()
        self._ignore_availability = False
        #: Called when the loop is about to wait for input with its output available (the
        #: task flushes partly filled buffers there: ``undertow.network.flush-when-idle``).
        self.before_starving: Callable[[], None] = _nothing
        #: Holds on the input (a watermark's event-time timers go on in later mails).
        self._input_holds = 0
        #: Whether a barrier blocks an input channel now (set by the task): a wait for input
        #: then is alignment, not starvation (see :class:`TaskTimeAccounting`).
        self.input_blocked: Callable[[], bool] = _false
        #: Whether the next slice waits a loop turn for checkpoint work (:class:`GiveWay`).
        self.give_way = GiveWay(pace)

    # -- mails -----------------------------------------------------------------------------------
    def wake(self) -> None:
        self._wake.set()

    def post(self, mail: Callable[[], None]) -> None:
        self.mailbox.append(mail)
        self._wake.set()

    def post_threadsafe(self, mail: Callable[[], None]) -> None:
        self.loop.call_soon_threadsafe(self.post, mail)

    def cancel(self) -> None:
        self.cancelled = True
        self._wake.set()

    def run_mails(self) -> None:
        """Run the mails queued now, in posting order (Flink's mailbox batch). A mail posted
        meanwhile, by one of them (work continued in slices) or by a callback, waits for the
        next turn: one slice of the default action and one event-loop turn (network I/O,
        other subtasks, barriers) come first."""
        mailbox = self.mailbox
        for _ in range(len(mailbox)):
            mailbox.popleft()()

    def check_cancelled(self) -> None:
        if self.cancelled:
            raise TaskCancelled(f"{self.name} was cancelled")

    async def wait_for_wake(self, pending: Callable[[], bool]) -> None:
        """Sleep until something wakes the loop (input, a mail, cancellation), unless
        ``pending()`` says there is work already."""
        self._wake.clear()
        if not pending() and not self.cancelled:
            await self._wake.wait()

    def restart_time_accounting(self) -> None:
        """Count busy, backpressured and idle time from now (the task starts running)."""
        self.time_accounting = TaskTimeAccounting()

    # -- the loop --------------------------------------------------------------------------------
    async def run(
        self,
        action: Callable[[], None],
        ready: Callable[[], bool],
        done: Callable[[], bool],
        priority: Callable[[], None] | None = None,
    ) -> None:
        """Run mails, deferred work and ``priority`` (priority events, ahead of data), then
        one slice of ``action`` when it is ``ready`` and the output is available (a turn
        later when it gives way to checkpoint work, :class:`~.pace.GiveWay`); yield to the
        event loop after every slice; return once ``done`` and no mail is queued: work a mail
        continues in later mails (a snapshot's pickling, whose ``then`` acknowledges the
        checkpoint) ends before the phase does, since nothing runs mails after the last phase
        while the task waits for its pending checkpoints. Raises :class:`TaskCancelled`."""
        wake = self._wake
        accounting = self.time_accounting
        output_available = self.output_available
        give_way = self.give_way
        perf = time.perf_counter
        while True:
            self.run_mails()
            if self._when_available and output_available():
                self.run_when_available()
            if priority is not None:
                priority()
            if self.cancelled:
                raise TaskCancelled(f"{self.name} was cancelled")
            if done() and not self.mailbox:
                return
            held = self._input_holds > 0
            if not held and ready() and output_available():
                if give_way.now():  # checkpoint work queued on the loop goes first
                    await asyncio.sleep(0)
                    continue
                started = perf()
                action()
                give_way.long_slice = perf() - started >= LONG_SLICE_S
                await asyncio.sleep(0)
                continue
            wake.clear()
            if self.mailbox or self.cancelled or (self._when_available and output_available()):
                await asyncio.sleep(0)  # work posted by work: the event loop turns first
                continue
            # Flink's rule: a task that cannot emit is backpressured, whatever its input does
            output = output_available()
            if output and not held and ready():
                continue
            if output and not held:
                self.before_starving()  # e.g. flush partly filled buffers (flush-when-idle)
            accounting.start_wait(
                backpressured=not output, starved=not held and not self.input_blocked()
            )
            try:
                await wake.wait()
            finally:
                accounting.end_wait()

    # -- output availability -----------------------------------------------------------------
    def output_available(self) -> bool:
        """Every output can take another buffer (and every gated operator more input, a
        collect sink without credit: :meth:`gate_on`); if not, the loop wakes when it can."""
        for output in self._outputs:
            if not output.is_available():
                output.notify_when_available(self.wake)
                return False
        return True

    def gate_on(self, operators: Iterable[object]) -> None:
        """Wait for the output gates of ``operators`` that have one (a
        :class:`~.collect_credit.GatedOperator`) as for the partitions (after their setup)."""
        self._outputs += [op.output_gate() for op in operators if isinstance(op, GatedOperator)]

    def is_output_available(self) -> bool:
        """Every output can take another buffer (always, while deferred work is drained)."""
        return self._ignore_availability or self.output_available()

    def when_output_available(self, action: Callable[[], None]) -> None:
        """Run ``action`` from the mailbox loop once the output is available again."""
        self._when_available.append(action)
        self._wake.set()

    def hold_input(self) -> None:
        """Run no slice of the default action until :meth:`release_input` (holds nest)."""
        self._input_holds += 1

    def release_input(self) -> None:
        self._input_holds -= 1
        self._wake.set()

    def input_held(self) -> bool:
        return self._input_holds > 0

    def slice_deadline(self) -> float:
        """When work started now (a burst of timers) should yield: one slice from now."""
        now = time.perf_counter()
        return now + self.pace.slice_s(now)

    def run_when_available(self, ignore_availability: bool = False) -> None:
        """Run the deferred work queued now while the output is available (work it defers
        again waits for the next turn, as mails do); with ``ignore_availability`` (the data
        ended: due timers fire before ``finish()``) all of it, also what it defers again."""
        pending = self._when_available
        self._ignore_availability = ignore_availability
        try:
            batch = len(pending)
            while pending and (ignore_availability or (batch > 0 and self.output_available())):
                batch -= 1
                pending.popleft()()
        finally:
            self._ignore_availability = False
