"""How many rows of a record batch a subtask hands its head at once: cutting batches by rows.

One record batch is one record, so a batch function taking a second over a large batch would
hold an unaligned barrier for that second; the input processor hands the head row ranges of it
(:mod:`.current_batch`). :class:`RowCutter` models a call as ``fixed + rows * per_row``
seconds, fitted online by weighted least squares (clipped outliers; a line sloping down keeps
the previous fixed cost; every other cut takes :data:`DITHER` of the rows so that the sizes
differ). A cut aims at the slice (at least :data:`MIN_TARGET_S`), or amortises a fixed cost to
at most :data:`MAX_FIXED_SHARE` of a call, up to the longer of :data:`MAX_STRETCH` targets and
:data:`FIXED_STRETCH` fixed costs (continuous in the fixed cost). Pure: ``observe`` facts, ask
``rows_for``.

Threading: owned by one input processor on its task's loop thread. The longer story, and
where a checkpoint's time goes: docs/design.md, "Batch streams".
"""

from __future__ import annotations

#: Fewest rows a cut hands the head (a batch of at most this many rows is never cut).
MIN_ROWS = 64
#: Shortest call a cut aims at (seconds), whatever the slice (a checkpoint's hurried slice is
#: 0.25 ms). Shorter calls did not make checkpoints shorter: on benchmarks/columnar_cuts.py a
#: 0.5 ms floor gave p50 59 ms against 50 ms (compare_commits.py --job cuts, weighted); the
#: checkpoint waits for the trigger to reach the source and for the channel state of the
#: worker's subtasks, not for the call in progress (docs/columnar.md, "Row-range cuts").
MIN_TARGET_S = 0.005
#: Largest share of a call the fixed cost may take: a cut has at least the rows that make it so.
MAX_FIXED_SHARE = 0.1
#: Longest call amortising may make, in targets: a noisy fit can take a fixed cost for
#: more than it is, and a cut must still serve the mailbox.
MAX_STRETCH = 2.0
#: Longest call, in fixed costs, for a function whose fixed cost is above MAX_STRETCH /
#: FIXED_STRETCH targets: that many times the fixed cost, not the ten times that amortising
#: would ask for. The fixed cost is measured in wall time, so on a loaded machine it includes
#: each call's wait for a core (15 ms a call at load 20-30 on 2 cores for a function of 25 µs
#: a row): amortised, that gave whole batches, calls of 0.1 s an unaligned barrier waits for.
#: 2 cost the loaded job about half its rows/s (docs/columnar.md, "Row-range cuts").
FIXED_STRETCH = 4.0
#: Rows of the first cut, before anything was measured.
FIRST_ROWS = 256
#: Weight of the older calls in the fit, at each new one (about 20 calls count).
DECAY = 0.95
#: A call slower than this many times the prediction counts as this many (a call preempted by
#: another process would otherwise move the estimate far off).
OUTLIER = 4.0
#: Every other cut takes this share of the rows, so that the calls' sizes differ (the fit of a
#: line through calls of one size cannot tell the fixed cost from the cost per row).
DITHER = 0.5
#: The calls' sizes must spread by this share of their mean before the fit trusts its slope.
MIN_SPREAD = 0.05


class RowCutter:
    """Rows per cut from the observed cost of the head's calls (module docstring).

    Invariant: ``fixed_s >= 0`` and ``per_row_s >= 0`` once anything was observed; the
    prediction of a call of ``n`` rows is ``fixed_s + n * per_row_s``.
    """

    __slots__ = ("_calls", "_n", "_nn", "_nt", "_t", "_w", "fixed_s", "per_row_s")

    def __init__(self) -> None:
        #: The estimated cost of a call of no rows (seconds).
        self.fixed_s = 0.0
        #: The estimated cost per row (seconds), None before the first call.
        self.per_row_s: float | None = None
        self._calls = 0
        # Exponentially weighted sums: weight, rows, time, rows², rows * time.
        self._w = self._n = self._t = self._nn = self._nt = 0.0

    def observe(self, rows: int, elapsed_s: float) -> None:
        """The head took ``elapsed_s`` for a call with ``rows`` rows."""
        if rows <= 0 or elapsed_s < 0:
            return
        per_row = self.per_row_s
        if per_row is not None:
            elapsed_s = min(elapsed_s, OUTLIER * (self.fixed_s + rows * per_row) + 1e-4)
        d = DECAY
        self._w = d * self._w + 1.0
        self._n = d * self._n + rows
        self._t = d * self._t + elapsed_s
        self._nn = d * self._nn + rows * rows
        self._nt = d * self._nt + rows * elapsed_s
        self._fit()

    def _fit(self) -> None:
        w = self._w
        mean_n, mean_t = self._n / w, self._t / w
        var_n = self._nn / w - mean_n * mean_n
        fixed = self.fixed_s  # kept when the calls' sizes are too alike to fit a line
        if var_n > (MIN_SPREAD * mean_n) ** 2:
            slope = (self._nt / w - mean_n * mean_t) / var_n
            if slope > 0:  # a line sloping down is noise (a preempted smaller call)
                fixed = mean_t - slope * mean_n
        fixed = min(max(fixed, 0.0), mean_t)
        self.fixed_s = fixed
        self.per_row_s = (mean_t - fixed) / mean_n

    def rows_for(self, target_s: float, total: int) -> int:
        """Rows of the next cut of a batch of ``total`` rows, at least :data:`MIN_ROWS`; every
        other cut of a batch that is cut takes :data:`DITHER` of them.

        The cut's predicted call is :meth:`call_s`; its rows are what that leaves after the
        fixed cost. A batch that fits in that call is not cut."""
        per_row = self.per_row_s
        if per_row is None:
            return max(MIN_ROWS, FIRST_ROWS)
        if per_row <= 0:
            return max(MIN_ROWS, total)
        rows = (self.call_s(target_s) - self.fixed_s) / per_row
        if rows >= total:
            return max(MIN_ROWS, total)
        self._calls += 1
        if self._calls & 1:
            rows *= DITHER
        return max(MIN_ROWS, min(total, int(rows)))

    def call_s(self, target_s: float) -> float:
        """The length (seconds) of the call a full cut aims at, for a slice of ``target_s``:
        the target (at least :data:`MIN_TARGET_S`), or longer to amortise the fixed cost to
        :data:`MAX_FIXED_SHARE` of the call, but at most the longer of :data:`MAX_STRETCH`
        targets and :data:`FIXED_STRETCH` fixed costs. Continuous and non-decreasing in the
        fixed cost, longer than it (so a cut has rows to hand over), and the fixed cost is at
        most the larger of :data:`MAX_FIXED_SHARE` and 1 / :data:`FIXED_STRETCH` of it."""
        fixed = self.fixed_s
        target = max(target_s, MIN_TARGET_S)
        longest = max(MAX_STRETCH * target, FIXED_STRETCH * fixed)
        return min(max(target, fixed / MAX_FIXED_SHARE), longest)
