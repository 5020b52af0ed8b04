"""Sinks whose committables are committed together: one commit per checkpoint (Sink V2 with a
committer operator of parallelism 1; Flink's ``GlobalCommitter`` of Sink V1 and the
post-commit topology of FLIP-191).

A table format such as Delta Lake must add the files of *all* writer subtasks in one atomic
table commit, or a reader sees a checkpoint half committed. A sink says so by implementing
:class:`GlobalCommittingSink`. ``sink_to`` then builds::

    writer (parallel) --GLOBAL, aligned only--> global committer (parallelism 1)

Threading: writers run on their subtasks' loops; the committer on its one subtask's loop.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from undertow.connectors.sink import Sink

#: The checkpoint id of committables emitted at the end of input (Flink's ``EOI``).
END_OF_INPUT = 2**63 - 1


@dataclass(frozen=True, slots=True)
class CommittableMessage:
    """What a writer subtask emits to the committer: its committables for one checkpoint."""

    subtask: int
    num_subtasks: int
    checkpoint_id: int
    committables: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class GlobalCommitRequest:
    """One commit: every writer's committables of one checkpoint, under one committer id.

    ``committables`` are ordered by writer subtask, then in the order each writer prepared
    them. Idempotency key: ``(committer_id, checkpoint_id)``."""

    committer_id: str
    checkpoint_id: int
    committables: tuple[Any, ...]

    def describe(self) -> str:
        cp = "end of input" if self.checkpoint_id == END_OF_INPUT else str(self.checkpoint_id)
        return f"checkpoint {cp} of committer {self.committer_id!r}"


class CommitOutcome(enum.Enum):
    COMMITTED = "committed"
    #: The request had been committed before (a replay after a failure): nothing was done.
    ALREADY_COMMITTED = "already committed"


@dataclass(frozen=True, slots=True)
class GlobalCommitterContext:
    """What a global committer learns when it is created (in its subtask, before any commit)."""

    operator_name: str
    operator_uid: str
    attempt_number: int


class GlobalCommitter(ABC):
    """Commits all writers' committables of a checkpoint at once. Runs in the one committer
    subtask, on its loop thread; may block (it is the sink's I/O)."""

    @abstractmethod
    def commit(self, request: GlobalCommitRequest) -> CommitOutcome:
        """Make ``request`` visible atomically, or do nothing if it was committed before.

        Called in increasing ``checkpoint_id`` order per ``committer_id``. Raise to fail the
        job (the restart commits the request again); errors should name the table and the
        checkpoint."""

    def close(self) -> None:
        pass


class GlobalCommittingSink(Sink):
    """A sink whose writers' committables go to one :class:`GlobalCommitter` (see the module
    docstring). Its ``create_committer`` is not used."""

    @abstractmethod
    def create_global_committer(self, context: GlobalCommitterContext) -> GlobalCommitter: ...


# -- pure decisions ---------------------------------------------------------------------------
def due_checkpoints(pending: Iterable[int], completed: int) -> list[int]:
    """Pending checkpoint ids to commit when ``completed`` completes: every one ``<=`` it,
    oldest first (a completed checkpoint subsumes the earlier ones that never completed)."""
    return sorted(cid for cid in set(pending) if cid <= completed)


def is_already_committed(last_committed: int | None, checkpoint_id: int) -> bool:
    """Whether a request was committed, given the highest checkpoint id recorded for its
    committer id (``None``: nothing recorded). Sound because one committer id commits in
    increasing checkpoint order and every commit records its id atomically with its data."""
    return last_committed is not None and last_committed >= checkpoint_id


def build_request(
    committer_id: str, checkpoint_id: int, by_subtask: Mapping[int, Iterable[Any]]
) -> GlobalCommitRequest:
    """The request of one checkpoint: committables ordered by writer subtask."""
    committables = tuple(c for s in sorted(by_subtask) for c in by_subtask[s])
    return GlobalCommitRequest(committer_id, checkpoint_id, committables)
