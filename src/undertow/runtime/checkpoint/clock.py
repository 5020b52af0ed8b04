"""The checkpoint coordinator's clock: wall-clock time and timers, injectable for tests.

The coordinator reads the time (trigger timestamps, completion times, min pause) and sets
timers (the periodic trigger, the trigger decider's wake-up, each checkpoint's timeout) only
through a :class:`CoordinatorClock`. :class:`SystemClock` is the real one (epoch ms, timers on
the running asyncio loop); the testing kit's ``ManualClock``
(:mod:`undertow.testing.coordinator`) moves only when a test advances it, so timeouts and
pauses are tested without sleeping.

Threading: the JobMaster's loop only (``call_later`` needs the running loop).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class CoordinatorClock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time, epoch milliseconds."""

    def call_later(self, delay_s: float, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` on the loop after ``delay_s`` seconds (unless cancelled)."""


class SystemClock:
    """The real clock: ``time.time_ns`` and the running loop's ``call_later``."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_s: float, callback: Callable[..., Any], *args: Any) -> Timer:
        return asyncio.get_running_loop().call_later(delay_s, callback, *args)
