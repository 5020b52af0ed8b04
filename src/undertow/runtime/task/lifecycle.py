"""A subtask's lifecycle after its input ends (FLIP-147, reference §6.1): a pure state machine.

::

    Running --end_of_data--> Finishing --(final checkpoint complete, inputs ended)--> Finished
    FinishedOnRestore --(inputs ended)--> Finished

Running carries how the input ended (drain or not) and a stop's savepoint taken early.

Decisions are pure: each event returns the next state; the task (its loop thread) executes.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Running:
    """Input is processed; ``finish()`` has not run.

    Invariants: ``drain`` only ever goes from True to False; ``awaited_savepoint`` is the
    newest synchronous savepoint taken and not yet seen complete."""

    #: False once an input channel ended with ``EndOfData(drain=False)`` (stop without
    #: drain): the chain will not finish and event time does not go to the end.
    drain: bool = True
    #: A synchronous savepoint (stop with savepoint) the task took before its data ended,
    #: not yet complete: the task must see it complete before it closes. None: none.
    awaited_savepoint: int | None = None

    def input_ended_without_drain(self) -> Running:
        """An input channel sent ``EndOfData(drain=False)``."""
        return Running(False, self.awaited_savepoint)

    def took_synchronous_savepoint(self, checkpoint_id: int) -> Running:
        """The task took the stop's savepoint ``checkpoint_id`` before its data ended."""
        return Running(self.drain, checkpoint_id)

    def checkpoint_complete(self, checkpoint_id: int) -> Running:
        awaited = self.awaited_savepoint
        if awaited is not None and checkpoint_id >= awaited:
            return Running(self.drain, None)
        return self

    def end_of_data(
        self, last_checkpoint_id: int, wait_for_final_checkpoint: bool, drain: bool | None = None
    ) -> Finishing:
        """``finish()`` ran (or was skipped: no drain) and ``EndOfData`` was sent;
        ``last_checkpoint_id`` is the newest checkpoint this task had taken before (``-1``:
        none). ``drain``: how the data ended, when a stop says so (default: ``self.drain``)."""
        return Finishing(
            after_checkpoint=last_checkpoint_id,
            final_checkpoint_done=not wait_for_final_checkpoint,
            inputs_ended=False,
            awaited_savepoint=self.awaited_savepoint,
            drain=self.drain if drain is None else drain,
        )


@dataclass(frozen=True, slots=True)
class Finishing:
    """``finish()`` ran, ``EndOfData`` was sent; waiting for the final checkpoint, for the
    stop's savepoint if the task took one, and for the end of every input partition.
    Invariants: ``final_checkpoint_done`` and ``inputs_ended`` never go back; a task that took
    a synchronous savepoint does not close before it completed."""

    #: Checkpoints with an id above this one were taken after ``EndOfData``.
    after_checkpoint: int
    final_checkpoint_done: bool
    inputs_ended: bool
    #: The synchronous savepoint (stop with savepoint) the task took and waits for; None: none.
    awaited_savepoint: int | None = None
    #: Whether the data ended with drain (see :attr:`Running.drain`).
    drain: bool = True

    def checkpoint_complete(self, checkpoint_id: int) -> Finishing:
        done = self.final_checkpoint_done or checkpoint_id > self.after_checkpoint
        awaited = self.awaited_savepoint
        if awaited is not None and checkpoint_id >= awaited:
            awaited = None
        return Finishing(self.after_checkpoint, done, self.inputs_ended, awaited, self.drain)

    def took_synchronous_savepoint(self, checkpoint_id: int) -> Finishing:
        """The task took the stop's savepoint ``checkpoint_id``: it closes only after it
        completed (its notification commits sinks, and the tasks it feeds need its ends)."""
        return Finishing(self.after_checkpoint, self.final_checkpoint_done, self.inputs_ended,
                         checkpoint_id, self.drain)  # fmt: skip

    def all_inputs_ended(self) -> Finishing:
        return Finishing(self.after_checkpoint, self.final_checkpoint_done, True,
                         self.awaited_savepoint, self.drain)  # fmt: skip

    @property
    def may_close(self) -> bool:
        return self.final_checkpoint_done and self.inputs_ended and self.awaited_savepoint is None

    def close(self) -> Finished:
        if not self.may_close:
            raise RuntimeError(f"a finishing task cannot close yet: {self}")
        return Finished()


@dataclass(frozen=True, slots=True)
class FinishedOnRestore:
    """Deployed as finished (its vertex was finished in the restored checkpoint): no
    operator runs; the outputs end at once; it waits for every input to end."""

    def all_inputs_ended(self) -> Finished:
        return Finished()


@dataclass(frozen=True, slots=True)
class Finished:
    """Operators closed, ``EndOfPartitionEvent`` sent."""


TaskLifecycle = Running | Finishing | FinishedOnRestore | Finished


def initial_lifecycle(finished_on_restore: bool) -> Running | FinishedOnRestore:
    """The state a deployed subtask starts in."""
    return FinishedOnRestore() if finished_on_restore else Running()
