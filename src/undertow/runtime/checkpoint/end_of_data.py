"""The final checkpoint at once: when every subtask of an attempt reached the end of its data
(or finished), the coordinator requests a checkpoint now instead of at the next period, as
Flink does since 1.18 (FLINK-28386). A bounded job's tasks wait for that checkpoint before they
finish (FLIP-147); without the request a job idled up to an interval at its end.

Pure: the coordinator feeds it the subtasks' reports and acts on its answer (loop thread only).
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from undertow.runtime.checkpoint.trigger_plan import SubtaskKey


class EndOfDataWatch:
    """Which subtasks of the current attempt reached the end of their data.

    Invariant: :meth:`due` answers ``True`` at most once per attempt; :meth:`reset` starts the
    next attempt (nothing reached, nothing requested).
    """

    __slots__ = ("_all", "_reached", "_requested")

    def __init__(self, subtasks: Iterable[SubtaskKey]) -> None:
        self._all = frozenset(subtasks)
        self._reached: set[SubtaskKey] = set()
        self._requested = False

    def reset(self) -> None:
        self._reached.clear()
        self._requested = False

    def reached(self, subtask: SubtaskKey) -> None:
        """``subtask`` sent ``EndOfData`` and waits for its final checkpoint."""
        self._reached.add(subtask)

    def due(self, finished: Set[SubtaskKey]) -> bool:
        """Whether to request the final checkpoint now: every subtask reached the end of its
        data or is in ``finished``, and it was not requested before in this attempt."""
        if self._requested or not self._reached or not self._all <= (self._reached | finished):
            return False
        self._requested = True
        return True
