"""When failed checkpoints fail the job (Flink's CheckpointFailureManager, reference §5.4).

The coordinator reports every aborted checkpoint with :meth:`CheckpointFailureManager.on_failure`
and every completed one with :meth:`~CheckpointFailureManager.on_success`, and executes the
decision: :class:`FailJob` (fail the job, which restarts it from the latest completed checkpoint
according to the restart strategy) or :class:`Tolerated` (carry on).

The job fails when the counter exceeds ``execution.checkpointing.tolerable-failed-checkpoints``
(0 by default: the first counted failure fails the job). The counter is reset when that decision
is returned, so a job that keeps running after a FailJob (its restart) starts counting afresh.

Invariant: ``continuous_failures == len(counted ids) + failures without id since the last
reset``, and it never exceeds ``tolerable_failures`` between calls.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.failure import CheckpointFailureReason

TOLERABLE_FAILED_CHECKPOINTS_OPTION = "execution.checkpointing.tolerable-failed-checkpoints"


@dataclass(frozen=True, slots=True)
class FailJob:
    """Too many checkpoints failed in a row: fail the job with ``message``."""

    reason: CheckpointFailureReason
    message: str


@dataclass(frozen=True, slots=True)
class Tolerated:
    """Keep running. ``counted``: whether this failure counted; ``continuous_failures``: the
    counter after it."""

    counted: bool
    continuous_failures: int


FailureDecision: TypeAlias = FailJob | Tolerated


class CheckpointFailureManager:
    """Counts consecutive checkpoint failures that matter, and says when the job must fail."""

    __slots__ = ("_continuous_failures", "_counted_ids", "_last_succeeded_id", "tolerable_failures")

    def __init__(self, tolerable_failures: int) -> None:
        if tolerable_failures < 0:
            raise ConfigurationError(
                f"{TOLERABLE_FAILED_CHECKPOINTS_OPTION} must be >= 0, got {tolerable_failures}"
            )
        self.tolerable_failures = tolerable_failures
        self._continuous_failures = 0
        self._counted_ids: set[int] = set()
        self._last_succeeded_id: int | None = None

    def on_failure(
        self, checkpoint_id: int | None, reason: CheckpointFailureReason
    ) -> FailureDecision:
        """A checkpoint was aborted (declined, expired, failed to trigger or to finalize)."""
        if not self._counts(checkpoint_id, reason):
            return Tolerated(False, self._continuous_failures)
        if checkpoint_id is not None:
            self._counted_ids.add(checkpoint_id)
        self._continuous_failures += 1
        if self._continuous_failures <= self.tolerable_failures:
            return Tolerated(True, self._continuous_failures)
        failures = self._continuous_failures
        self._reset()
        which = "a checkpoint" if checkpoint_id is None else f"checkpoint {checkpoint_id}"
        return FailJob(
            reason,
            f"Exceeded checkpoint tolerable failure threshold: {which} failed "
            f"({reason.name}: {reason.message}); {failures} consecutive failed checkpoint(s) "
            f"> {TOLERABLE_FAILED_CHECKPOINTS_OPTION}={self.tolerable_failures}",
        )

    def on_success(self, checkpoint_id: int) -> None:
        """A checkpoint completed: reset the counter unless an even newer one already had."""
        if self._last_succeeded_id is None or checkpoint_id > self._last_succeeded_id:
            self._last_succeeded_id = checkpoint_id
            self._reset()

    def _counts(self, checkpoint_id: int | None, reason: CheckpointFailureReason) -> bool:
        if not reason.counts_as_failure:
            return False
        if checkpoint_id is None:
            return True
        if self._last_succeeded_id is not None and checkpoint_id <= self._last_succeeded_id:
            return False
        return checkpoint_id not in self._counted_ids

    def _reset(self) -> None:
        self._continuous_failures = 0
        self._counted_ids.clear()

    @property
    def continuous_failures(self) -> int:
        return self._continuous_failures

    @property
    def last_succeeded_checkpoint_id(self) -> int | None:
        return self._last_succeeded_id
