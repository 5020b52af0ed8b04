"""How many rows of a record batch a subtask hands its head at once: cutting batches by rows.

One record batch is one record, so a batch function taking a second over a large batch would
hold an unaligned barrier for that second. The input processor hands a batch stream's head
row ranges of a large batch (``batch.slice``) and keeps the rest: for the next chunk, as its
channel's state if an unaligned checkpoint starts, or after an aligned barrier (which comes
after the batch). :class:`RowCutter` sizes the ranges from a moving average of the calls' time
per row (a preempted call clipped at :data:`OUTLIER` times the estimate): a cut aims at the
slice, at least :data:`MIN_TARGET_S`, and has at least :data:`MIN_ROWS` rows and a
:data:`MAX_PIECES`-th of the batch, which bounds what a function with a large cost per call
(pandas, a remote call) pays for the cutting. Pure: ``observe`` facts, ask ``rows_for``.

Threading: owned by one input processor on its task's loop thread. Design notes:
docs/design.md, "Batch streams".
"""

from __future__ import annotations

#: Fewest rows a cut hands the head (a batch of at most this many rows is never cut).
MIN_ROWS = 64
#: Most pieces a batch is cut into.
MAX_PIECES = 32
#: Shortest call a cut aims at (seconds), whatever the slice: a call has a cost of its own
#: (benchmarks/columnar_cuts.py lost 2.6x of its rate with cuts aimed at 1 ms, 1.9x at 5 ms,
#: under a load of 25 on 2 cores), and a quarter of the 20 ms an unaligned checkpoint may wait
#: for a subtask is short enough.
MIN_TARGET_S = 0.005
#: Rows of the first cut, before anything was measured.
FIRST_ROWS = 256
#: Weight of the older calls in the time per row, at each new one.
DECAY = 0.8
#: A call slower than this many times the estimate counts as this many (a call preempted by
#: another process would otherwise move the estimate far off).
OUTLIER = 4.0


class RowCutter:
    """Rows per cut from the observed cost of the head's calls (module docstring)."""

    __slots__ = ("per_row_s",)

    def __init__(self) -> None:
        #: The moving time per row (seconds), None before the first call.
        self.per_row_s: float | None = None

    def observe(self, rows: int, elapsed_s: float) -> None:
        """The head took ``elapsed_s`` for a call with ``rows`` rows."""
        if rows <= 0 or elapsed_s < 0:
            return
        per_row = self.per_row_s
        if per_row is not None:
            elapsed_s = min(elapsed_s, OUTLIER * rows * per_row + 1e-4)
        now = elapsed_s / rows
        self.per_row_s = now if per_row is None else DECAY * per_row + (1 - DECAY) * now

    def rows_for(self, target_s: float, total: int) -> int:
        """Rows of a batch of ``total`` rows whose call should take about ``target_s`` (or
        :data:`MIN_TARGET_S`), at least :data:`MIN_ROWS` and ``total / MAX_PIECES``."""
        least = max(MIN_ROWS, -(-total // MAX_PIECES))
        per_row = self.per_row_s
        if per_row is None:
            return max(least, FIRST_ROWS)
        if per_row <= 0:
            return max(least, total)
        return max(least, int(max(target_s, MIN_TARGET_S) / per_row))
