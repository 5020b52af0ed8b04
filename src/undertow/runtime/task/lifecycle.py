"""A subtask's lifecycle after its input ends (FLIP-147, reference §6.1): a pure state machine.

::

    Running --end_of_data--> Finishing --(final checkpoint complete, inputs ended)--> Finished

Decisions are pure: each event returns the next state; the task (its loop thread) executes.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.core.config import Configuration, Options


def final_checkpoint_required(config: Configuration) -> bool:
    """Whether a finishing task waits for a final checkpoint (and sinks commit through it):
    periodic checkpoints are on, the job runs in STREAMING mode, and
    ``execution.checkpointing.checkpoints-after-tasks-finish`` is true."""
    return (
        config.get(Options.CHECKPOINT_INTERVAL) > 0
        and config.get(Options.CHECKPOINTS_AFTER_TASKS_FINISH)
        and config.get(Options.RUNTIME_MODE) != "BATCH"
    )


@dataclass(frozen=True, slots=True)
class Running:
    """Input is processed; ``finish()`` has not run."""

    def end_of_data(
        self, last_checkpoint_id: int, wait_for_final_checkpoint: bool,
        savepoint: int | None = None,
    ) -> Finishing:  # fmt: skip
        """``finish()`` ran and ``EndOfData`` was sent; ``last_checkpoint_id`` is the newest
        checkpoint this task had taken before (``-1``: none); ``savepoint``: a synchronous
        savepoint the task took while still running, which it must see complete."""
        return Finishing(
            after_checkpoint=last_checkpoint_id,
            final_checkpoint_done=not wait_for_final_checkpoint,
            inputs_ended=False,
            awaited_savepoint=savepoint,
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

    def checkpoint_complete(self, checkpoint_id: int) -> Finishing:
        done = self.final_checkpoint_done or checkpoint_id > self.after_checkpoint
        awaited = self.awaited_savepoint
        if awaited is not None and checkpoint_id >= awaited:
            awaited = None
        return Finishing(self.after_checkpoint, done, self.inputs_ended, awaited)

    def took_synchronous_savepoint(self, checkpoint_id: int) -> Finishing:
        """The task took the stop's savepoint ``checkpoint_id``: it closes only after it
        completed (its notification commits sinks, and the tasks it feeds need its ends)."""
        return Finishing(self.after_checkpoint, self.final_checkpoint_done, self.inputs_ended,
                         checkpoint_id)  # fmt: skip

    def all_inputs_ended(self) -> Finishing:
        return Finishing(self.after_checkpoint, self.final_checkpoint_done, True,
                         self.awaited_savepoint)  # fmt: skip

    @property
    def may_close(self) -> bool:
        return self.final_checkpoint_done and self.inputs_ended and self.awaited_savepoint is None

    def close(self) -> Finished:
        if not self.may_close:
            raise RuntimeError(f"a finishing task cannot close yet: {self}")
        return Finished()


@dataclass(frozen=True, slots=True)
class Finished:
    """Operators closed, ``EndOfPartitionEvent`` sent."""


TaskLifecycle = Running | Finishing | Finished
