"""How much work a task may start so that its output fits: the overdraft bound.

Flink's task blocks when a record needs a buffer and the pool and its overdraft
(``max-overdraft-buffers-per-gate``, reference §2.4) are exhausted. An undertow task never
blocks: its operators take a whole chunk and emit its output at once. So the bound is applied
*before* a unit of work instead: the task asks :meth:`OutputBudget.begin` how many units fit,
sizes the unit, runs it, and reports it to :meth:`OutputBudget.end`. A *unit* is one input
record (the task takes chunks of them), from the network or from a source reader's output.

Threading: the task's loop thread only. Cost: per unit of work (a chunk, not a record), one
pass over the task's outputs in ``begin`` and one in ``end``: a few attribute reads and a
division each.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from undertow.core.config import Options
from undertow.runtime.network.record_writer import RecordWriter

#: The cost estimate falls at most this much per unit of work (peak-following).
DECAY = 0.75
_UNKNOWN = float("inf")


class OutputBudget:
    """Sizes units of work against the task's output partitions (see the module docstring).

    ``on_exceeded(output, units, drawn, room)`` is called the first time a unit of work of
    ``units`` units drew ``drawn`` buffers from output ``output`` (an index into ``writers``),
    more than its ``room``.
    """

    __slots__ = ("_cost", "_drawn_before", "_equivalent_before", "_outputs", "_room", "_slack",
                 "exceeded", "mispredicted", "on_exceeded", "overdraft")  # fmt: skip

    def __init__(
        self,
        writers: list[RecordWriter],
        overdraft: int,
        on_exceeded: Callable[[int, int, int, int], None] | None = None,
    ) -> None:
        if overdraft < 0:
            raise ValueError(f"overdraft must be >= 0, got {overdraft}")
        self._outputs = [(w, w.partition) for w in writers]
        self.overdraft = overdraft
        self.on_exceeded = on_exceeded
        n = len(writers)
        #: Buffers one unit draws from each output (estimate; ``inf`` until measured).
        self._cost = [_UNKNOWN] * n
        self._room = [0] * n
        self._slack = [len(w.partition.subpartitions) - 1 for w in writers]
        self._drawn_before = [0] * n
        self._equivalent_before = [0.0] * n  # RecordWriter.buffers_drawn(), for learning
        for i, writer in enumerate(writers):  # records per buffer shrank
            writer.follow_units(functools.partial(self._rescale, i))
        #: Units of work that drew more than the free buffers plus the overdraft.
        self.exceeded = 0
        #: Of those, chunks of several units (their records cost more than predicted).
        self.mispredicted = 0

    def _rescale(self, output: int, factor: float) -> None:
        """A channel of ``output`` now takes ``factor`` times fewer records per buffer (its
        consumer announced a smaller size, or the writer's size estimate grew): a unit draws
        at most that many times more buffers (the estimate is learned again after it)."""
        self._cost[output] *= factor

    def cost(self, output: int) -> float:
        """The current estimate of buffers one unit draws from ``output`` (``inf``: unknown)."""
        return self._cost[output]

    def begin(self) -> float:
        """A unit of work is about to start: how many units' expected output fits now.

        The answer may be below 1 (the caller still takes one unit when the output is
        available). ``inf`` when the task has no outputs or every output's cost is 0.
        """
        fit = _UNKNOWN
        allowance = self.overdraft
        room, before, cost, slack = self._room, self._drawn_before, self._cost, self._slack
        for i, (writer, partition) in enumerate(self._outputs):
            writer.settle()  # thresholds hold within the unit about to start
            r = partition.pool_size + allowance - partition.queued - partition.in_progress
            room[i] = r
            before[i] = writer.buffers_requested
            self._equivalent_before[i] = writer.buffers_drawn()
            c = cost[i]
            if c > 0.0:
                safe = r - slack[i]
                f = (safe if safe >= c else r) / c if r > 0 else 0.0
                if f < fit:
                    fit = f
        return fit

    def end(self, units: int, measure: bool = True) -> None:
        """The unit of work begun last ran ``units`` units (>= 1). ``measure=False``: do not
        learn from it (work that produced nothing to measure); limits are still checked."""
        units = max(units, 1)
        room, before, cost = self._room, self._drawn_before, self._cost
        over: tuple[int, int, int] | None = None
        for i, (writer, partition) in enumerate(self._outputs):
            drawn = writer.buffers_requested - before[i]
            if measure:
                per_unit = (writer.buffers_drawn() - self._equivalent_before[i]) / units
                c = cost[i]
                cost[i] = per_unit if per_unit >= c * DECAY or c == _UNKNOWN else c * DECAY
            if drawn > room[i] and over is None:
                over = (i, drawn, room[i])
            partition.note_emitted()
        if over is None:
            return
        self.exceeded += 1
        if units > 1:
            self.mispredicted += 1
        if self.exceeded == 1 and self.on_exceeded is not None:
            self.on_exceeded(over[0], units, over[1], over[2])


def overdraft_warning(
    task: str, operator: str, subtask: str, output: str, units: int, drawn: int, room: int,
    overdraft: int,
) -> str:  # fmt: skip
    """The warning a task logs the first time a unit of work exceeded its allowance (the
    arguments of ``on_exceeded``, with the names of the task, the operator feeding the output,
    the subtask as ``"i/n"`` and the output partition): what happened, why, the limit and the
    option to raise, and where the further cases are counted."""
    free = room - overdraft
    if units == 1:
        what, why = "one record", "one record's output is never split"
    else:
        what, why = f"a chunk of {units} records", "its records cost more than the ones before"
    return (
        f"{task}: {what} of operator '{operator}' (subtask {subtask}) drew {drawn} buffers on "
        f"output '{output}', more than its {free} free buffers plus the {overdraft} overdraft "
        f"buffers allowed; {why}, so {drawn - free} buffers went beyond the pool. To allow "
        f"such output, raise {Options.MAX_OVERDRAFT_BUFFERS_PER_GATE.key} to {drawn - free} "
        "or more. Logged once per task; further cases are only counted (task metric "
        "numOverdraftExceeded, task counter overdraft_exceeded[<task>])."
    )
