"""A processing-time clock for state backend tests: milliseconds a test sets by hand."""

from __future__ import annotations


class Clock:
    """Starts at 1,000 ms; a test moves ``now`` itself. A backend calls it for the time."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now
