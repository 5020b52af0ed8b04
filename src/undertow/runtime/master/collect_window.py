"""Credit for ``execute_and_collect``'s sink: the driver's window of result bytes (pure).

The sink sends only while it has credit (bytes); :class:`CollectWindow` grants it so that
``held + ready + outstanding <= window`` after every grant (held: until a checkpoint makes
them final; ready: for the reader; outstanding: granted, not yet received, signed: the sink
may overrun its credit by one batch, which the next grant pays). Grants come in steps of at
least half the window. A reader that waits while every byte is held gets an *overdraft* of
half a window at a time (else an aligned barrier queued behind the input the sink cannot take
would never come): the one case past the bound. Accounting is per attempt: a new attempt's
sink starts without credit. The story: docs/design.md, "execute_and_collect: a bounded window".

Pure: events in, a :class:`Grant` (or None) out. Not thread-safe: :class:`.CollectResults`
calls it under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Grant:
    """Tell the sink of ``attempt``: ``credit`` more bytes (> 0)."""

    attempt: int
    credit: int


@dataclass(frozen=True, slots=True)
class WindowStatistics:
    """A window now (bytes): held until final, ready for the reader, granted to the sink and
    not yet received (may be < 0: an overrun), the window, and whether it is overdrawn."""

    held: int
    ready: int
    outstanding: int
    window: int
    overdrawn: bool
    #: Overdraft grants so far, and whether one is in use (not yet back within the window).
    overdrafts: int
    in_overdraft: bool

    @property
    def unread(self) -> int:
        """Bytes on the driver the reader has not taken."""
        return self.held + self.ready


class CollectWindow:
    """The window of one collect sink (see the module docstring). ``window``: bytes, > 0
    (``undertow.collect.buffer-size``)."""

    def __init__(self, window: int) -> None:
        if window <= 0:
            raise ValueError(f"a collect window must be above 0 bytes; got {window}")
        self.window = window
        self.held = 0
        self.ready = 0
        #: Granted to the running attempt's sink and not yet received (< 0: it overran).
        self.outstanding = 0
        #: The attempt whose sink is granted credit; None between attempts.
        self.attempt: int | None = None
        #: The reader waits for something ready.
        self.waiting = False
        self.overdrafts = 0
        #: An overdraft was granted and the window is not back within its bound yet.
        self.in_overdraft = False

    @property
    def half(self) -> int:
        return (self.window + 1) // 2

    def statistics(self) -> WindowStatistics:
        return WindowStatistics(self.held, self.ready, self.outstanding, self.window,
                                self.overdrawn, self.overdrafts, self.in_overdraft)  # fmt: skip

    @property
    def overdrawn(self) -> bool:
        """More is committed than the window: an overdraft is in use."""
        return self.held + self.ready + max(0, self.outstanding) > self.window

    # -- events --------------------------------------------------------------------------------
    def attempt_started(self, attempt: int) -> Grant | None:
        """``attempt`` was deployed: its sink starts without credit."""
        self.attempt = attempt
        self.outstanding = 0
        return self._decide()

    def attempt_ended(self) -> None:
        """The running attempt ended: nothing more is granted until the next one starts."""
        self.attempt = None
        self.outstanding = 0

    def received(self, attempt: int, size: int, final: bool) -> Grant | None:
        """``size`` bytes of ``attempt``'s sink arrived: ready at once if ``final``, else
        held until :meth:`released` or :meth:`dropped`."""
        if attempt == self.attempt:
            self.outstanding -= size
        if final:
            self.ready += size
        else:
            self.held += size
        return self._decide()

    def released(self, size: int) -> Grant | None:
        """Held bytes became final (their checkpoint completed): the reader may take them."""
        self.held -= size
        self.ready += size
        return self._decide()

    def dropped(self, size: int) -> Grant | None:
        """Held bytes were dropped (their attempt failed, or the job ended)."""
        self.held -= size
        return self._decide()

    def taken(self, size: int) -> Grant | None:
        """The reader took ``size`` ready bytes."""
        self.ready -= size
        self.waiting = False
        return self._decide()

    def reader_waits(self) -> Grant | None:
        """The reader found nothing ready and waits."""
        self.waiting = True
        return self._decide()

    def _decide(self) -> Grant | None:
        if self.in_overdraft and not self.overdrawn:
            self.in_overdraft = False
        if self.attempt is None:
            return None
        free = self.window - self.held - self.ready - self.outstanding
        if free >= self.half:
            credit = free
        elif self.waiting and self.ready == 0 and self.outstanding <= 0:
            credit = self.half - self.outstanding  # the overdraft (module docstring)
            self.overdrafts += 1
            self.in_overdraft = True
        else:
            return None
        self.outstanding += credit
        return Grant(self.attempt, credit)
