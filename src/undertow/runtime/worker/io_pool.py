"""The worker's I/O pool: blocking checkpoint I/O, handed the GIL promptly while it runs.

A task thread running a CPU-bound user function holds the GIL; every time an I/O thread comes
back from a call that released it (open, write, hash, the loop's wake-up pipe) it waits until
the interpreter forces a switch, one switch interval later (the worker's is half a mailbox
slice, 1 ms). A checkpoint's asynchronous part makes a handful of such calls per file, so it
used to cost that many intervals. While at least one job of any :class:`IOPool` of the process
is queued or running, the switch interval is lowered to :data:`IO_SWITCH_INTERVAL_S`; it is
put back when the last one is done. The measurements behind the choice: docs/design.md,
"Checkpoint I/O beside a busy task thread".

Threading: ``submit`` from any thread; the hold is process-wide (several workers of
``local-threads`` share one interpreter) and guarded by a lock. Cost: two lock round trips
and one done callback per job.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

#: The switch interval while checkpoint I/O is in flight (seconds): 0.1 ms.
IO_SWITCH_INTERVAL_S = 0.0001

T = TypeVar("T")


class SwitchIntervalHold:
    """While held at least once, the interpreter's switch interval is at most ``fast_s``.

    The first :meth:`acquire` lowers it (remembering the value it found), the last
    :meth:`release` restores that value unless someone else changed it in between (then their
    value stays). Any thread; a lock orders the calls.
    """

    def __init__(self, fast_s: float = IO_SWITCH_INTERVAL_S) -> None:
        if fast_s <= 0:
            raise ValueError(f"switch interval must be > 0 s, got {fast_s}")
        self.fast_s = fast_s
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: float | None = None

    @property
    def holders(self) -> int:
        return self._holders

    def acquire(self) -> None:
        with self._lock:
            self._holders += 1
            if self._holders == 1:
                current = sys.getswitchinterval()
                if current > self.fast_s:
                    self._saved = current
                    sys.setswitchinterval(self.fast_s)

    def release(self) -> None:
        with self._lock:
            if self._holders == 0:
                raise RuntimeError("switch-interval hold released more often than acquired")
            self._holders -= 1
            if self._holders == 0 and self._saved is not None:
                # getswitchinterval() is kept in whole microseconds
                if abs(sys.getswitchinterval() - self.fast_s) < 1e-6:
                    sys.setswitchinterval(self._saved)
                self._saved = None


#: The one hold of this process, shared by every :class:`IOPool`.
PROCESS_HOLD = SwitchIntervalHold()


class IOPool(ThreadPoolExecutor):
    """A thread pool whose queued and running jobs hold :data:`PROCESS_HOLD` (module
    docstring). The hold ends in the job's first done callback, which also runs for a job
    cancelled before it started (``shutdown(cancel_futures=True)``)."""

    def __init__(
        self, max_workers: int, thread_name_prefix: str = "", hold: SwitchIntervalHold | None = None
    ) -> None:
        super().__init__(max_workers, thread_name_prefix=thread_name_prefix)
        self._hold = hold if hold is not None else PROCESS_HOLD

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        hold = self._hold
        hold.acquire()
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            hold.release()
            raise
        future.add_done_callback(lambda _: hold.release())
        return future
