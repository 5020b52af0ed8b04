"""The processing-time contract that operators and timer services share.

It lives below both ``operator.py`` (whose :class:`OperatorSetup` hands one to every operator)
and ``timers.py`` (whose timer services schedule processing-time timers through it), so that
neither has to import the other at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class ProcessingTimeService(Protocol):
    """The task's processing-time clock and timer facility (callbacks run as mails)."""

    def current_processing_time(self) -> int:
        """Milliseconds since the epoch."""

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> Any:
        """Run ``callback(timestamp)`` on the task loop at or after ``timestamp``.

        Returns a handle with ``cancel()``.
        """
