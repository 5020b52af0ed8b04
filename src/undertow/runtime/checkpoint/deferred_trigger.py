"""A trigger at a task whose inputs have not all ended yet (FLIP-147), as typed decisions.

When some subtasks finished, the JobMaster triggers a checkpoint directly at a running task
whose producers all finished (:mod:`.trigger_plan`). No barrier will arrive on its inputs;
their EndOfPartition events may still be queued, so the task takes the checkpoint once all
of them ended: the trigger waits here until then.

Invariants: at most one trigger waits; a newer trigger replaces an older one, which is
declined as subsumed; an aborted one never performs. Pure: the checkpointer executes the decisions.
Threading: the task's loop thread only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from undertow.runtime.checkpoint.barrier import CheckpointBarrier


@dataclass(frozen=True, slots=True)
class PerformTriggered:
    """Take the checkpoint of ``barrier`` now (every input has ended)."""

    barrier: CheckpointBarrier


@dataclass(frozen=True, slots=True)
class DeclineSubsumedTrigger:
    """Decline the waiting ``older`` trigger: checkpoint ``newer_id`` replaced it."""

    older: CheckpointBarrier
    newer_id: int


#: Every decision :class:`DeferredTrigger` returns.
TriggerDecision: TypeAlias = PerformTriggered | DeclineSubsumedTrigger


class DeferredTrigger:
    """The waiting trigger of one task (see the module docstring)."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: CheckpointBarrier | None = None

    @property
    def waiting(self) -> CheckpointBarrier | None:
        return self._waiting

    def on_trigger(
        self, barrier: CheckpointBarrier, *, inputs_ended: bool
    ) -> list[TriggerDecision]:
        """The JobMaster triggered ``barrier``, newer than any checkpoint the task took (the
        checkpointer ignores older ones); ``inputs_ended``: all its input gates have ended."""
        older, self._waiting = self._waiting, (None if inputs_ended else barrier)
        decisions: list[TriggerDecision] = []
        if older is not None and older.checkpoint_id < barrier.checkpoint_id:
            decisions.append(DeclineSubsumedTrigger(older, barrier.checkpoint_id))
        if inputs_ended:
            decisions.append(PerformTriggered(barrier))
        return decisions

    def on_inputs_ended(self) -> list[TriggerDecision]:
        """Every input gate of the task has ended: a waiting trigger performs now."""
        waiting, self._waiting = self._waiting, None
        return [] if waiting is None else [PerformTriggered(waiting)]

    def on_aborted(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` was aborted: its waiting trigger is dropped."""
        if self._waiting is not None and self._waiting.checkpoint_id == checkpoint_id:
            self._waiting = None
