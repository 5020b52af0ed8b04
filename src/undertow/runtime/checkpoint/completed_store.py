"""The retained completed checkpoints and the subsumption rules (reference §5.5).

Invariants, after every call: ids are unique and kept in ascending order; ``len(store) <=
max(num_retained, 2)`` (only the newest entry and the newest checkpoint can exceed
``num_retained``, and only while the newest entry is a savepoint); every entry ever added is
either retained or was returned exactly once.

A snapshot a job claimed on restore (``execution.state-recovery.claim-mode: CLAIM``, see
:mod:`.claim_mode`) enters as the newest *checkpoint*, even if it was a savepoint: the job owns
it, so it is discarded (not forgotten) once subsumed; its ``external_path`` is outside the
job's directory, which the coordinator's discard takes into account.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TypeAlias

from undertow.core.errors import ConfigurationError

NUM_RETAINED_OPTION = "execution.checkpointing.num-retained"


@dataclass(frozen=True, slots=True)
class CompletedCheckpoint:
    """A checkpoint or savepoint whose ``_metadata`` was committed.

    ``trigger_timestamp`` and ``completion_timestamp`` are wall-clock milliseconds;
    ``external_path`` is the checkpoint directory (Flink's external pointer);
    ``metadata_size`` the size of ``_metadata`` in bytes.
    """

    checkpoint_id: int
    trigger_timestamp: int
    completion_timestamp: int
    is_savepoint: bool
    external_path: str
    metadata_size: int

    @property
    def duration_ms(self) -> int:
        return self.completion_timestamp - self.trigger_timestamp


@dataclass(frozen=True, slots=True)
class DiscardSubsumed:
    """Delete this subsumed checkpoint's exclusive state and directory."""

    checkpoint: CompletedCheckpoint

    @property
    def checkpoint_id(self) -> int:
        return self.checkpoint.checkpoint_id


@dataclass(frozen=True, slots=True)
class ForgetSubsumed:
    """Drop this subsumed savepoint from the store; keep its files."""

    checkpoint: CompletedCheckpoint

    @property
    def checkpoint_id(self) -> int:
        return self.checkpoint.checkpoint_id


Subsumption: TypeAlias = DiscardSubsumed | ForgetSubsumed


class CompletedCheckpointStore:
    """The newest completed checkpoints, at most ``num_retained`` of them (see the module doc)."""

    __slots__ = ("_checkpoints", "_last_subsumed_id", "num_retained")

    def __init__(self, num_retained: int = 1) -> None:
        if num_retained < 1:
            raise ConfigurationError(
                f"{NUM_RETAINED_OPTION} must be at least 1, got {num_retained}"
            )
        self.num_retained = num_retained
        self._checkpoints: list[CompletedCheckpoint] = []  # ascending ids
        self._last_subsumed_id: int | None = None

    def add(self, checkpoint: CompletedCheckpoint) -> list[Subsumption]:
        """Retain ``checkpoint``; return what subsumption removed, oldest first."""
        ids = [c.checkpoint_id for c in self._checkpoints]
        position = bisect.bisect_left(ids, checkpoint.checkpoint_id)
        if position < len(ids) and ids[position] == checkpoint.checkpoint_id:
            raise ValueError(f"checkpoint {checkpoint.checkpoint_id} is already in the store")
        self._checkpoints.insert(position, checkpoint)
        return self._subsume()

    def _subsume(self) -> list[Subsumption]:
        removed: list[Subsumption] = []
        if len(self._checkpoints) <= self.num_retained:
            return removed
        latest = self._checkpoints[-1]
        latest_checkpoint = self._latest_not_savepoint()
        kept: list[CompletedCheckpoint] = []
        remaining = len(self._checkpoints)
        for entry in self._checkpoints:
            if remaining > self.num_retained and _can_subsume(entry, latest, latest_checkpoint):
                remaining -= 1
                removed.append(
                    ForgetSubsumed(entry) if entry.is_savepoint else DiscardSubsumed(entry)
                )
            else:
                kept.append(entry)
        self._checkpoints = kept
        if removed:
            newest_removed = removed[-1].checkpoint_id
            if self._last_subsumed_id is None or newest_removed > self._last_subsumed_id:
                self._last_subsumed_id = newest_removed
        return removed

    def _latest_not_savepoint(self) -> CompletedCheckpoint | None:
        return next((c for c in reversed(self._checkpoints) if not c.is_savepoint), None)

    # -- observers -------------------------------------------------------------------------------

    def latest(self) -> CompletedCheckpoint | None:
        """The entry with the highest id: what a restart restores from."""
        return self._checkpoints[-1] if self._checkpoints else None

    def all(self) -> tuple[CompletedCheckpoint, ...]:
        """Retained entries, oldest first."""
        return tuple(self._checkpoints)

    def lowest_retained_id(self) -> int | None:
        """The lowest retained id that is not a savepoint, or None.

        Shared files last used below it can go (``SharedStateRegistry.unregisterUnusedState``);
        savepoints never reference shared files, so they do not hold any back.
        """
        return next((c.checkpoint_id for c in self._checkpoints if not c.is_savepoint), None)

    @property
    def last_subsumed_checkpoint_id(self) -> int | None:
        """The highest id ever subsumed (sent with notifyCheckpointComplete), or None."""
        return self._last_subsumed_id

    def __len__(self) -> int:
        return len(self._checkpoints)

    def __repr__(self) -> str:
        ids = [f"{c.checkpoint_id}{'s' if c.is_savepoint else ''}" for c in self._checkpoints]
        return f"CompletedCheckpointStore(num_retained={self.num_retained}, {ids})"


def _can_subsume(
    entry: CompletedCheckpoint,
    latest: CompletedCheckpoint,
    latest_checkpoint: CompletedCheckpoint | None,
) -> bool:
    if entry is latest:
        return False
    if entry.is_savepoint:
        return True
    return entry is not latest_checkpoint
