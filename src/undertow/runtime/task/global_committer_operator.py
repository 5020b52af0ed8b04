"""The global committer operator: parallelism 1, after the writers of a
:class:`~undertow.connectors.global_committer.GlobalCommittingSink` (Flink's
``CommitterOperator`` with a ``CommittableCollector``; the protocol is in
:mod:`undertow.connectors.global_committer`).

Lifecycle (all on the one subtask's loop thread)::

    restore_custom_state -> open (commit restored requests, in order) ->
    process_batch (collect CommittableMessages per checkpoint and writer subtask)* |
    snapshot_custom_state(n) | notify_checkpoint_complete(n) ... -> finish -> close

Cost: one small record per writer subtask and checkpoint; one commit per checkpoint that
carried committables.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import logging
import pickle
import uuid
from dataclasses import dataclass, field
from typing import Any

from undertow.connectors.global_committer import (
    END_OF_INPUT,
    CommitOutcome,
    CommittableMessage,
    GlobalCommitRequest,
    GlobalCommitter,
    GlobalCommitterContext,
    GlobalCommittingSink,
    build_request,
    due_checkpoints,
)
from undertow.core.errors import UndertowError
from undertow.runtime.network.buffer import serialize_object
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps

log = logging.getLogger(__name__)

#: Version of the pickled operator state; bump when its layout changes.
STATE_VERSION = 1


class GlobalCommitError(UndertowError):
    """The committables of a checkpoint are incomplete or could not be committed."""


@dataclass
class _Pending:
    """Committables collected for one checkpoint, not committed yet."""

    committer_id: str
    num_subtasks: int
    by_subtask: dict[int, list[Any]] = field(default_factory=dict)

    def request(self, checkpoint_id: int) -> GlobalCommitRequest:
        return build_request(self.committer_id, checkpoint_id, self.by_subtask)


def missing_subtasks(received: set[int], num_subtasks: int, ended: set[int]) -> list[int]:
    """Writer subtasks that owe a message for a completed checkpoint: all of them but those
    that sent one and those whose input ended (they send no more checkpoint messages)."""
    return [s for s in range(num_subtasks) if s not in received and s not in ended]


class GlobalCommitterOperator(OneInputStreamOperator):
    def __init__(self, sink: GlobalCommittingSink) -> None:
        self.sink = sink
        self.committer: GlobalCommitter | None = None
        self.committer_id = ""
        self.pending: dict[int, _Pending] = {}
        self.ended: set[int] = set()
        #: Requests committed, and replayed ones found already committed, by this instance.
        self.committed = 0
        self.already_committed = 0
        self._restored: dict[int, _Pending] = {}
        #: ``finish`` ran and a final checkpoint takes the end-of-input committables.
        self._finished = False

    def open(self) -> None:
        if self.ctx.parallelism != 1:
            raise GlobalCommitError(
                f"operator '{self.name}': a global committer runs with parallelism 1, "
                f"not {self.ctx.parallelism}"
            )
        # New for every start: requests of earlier runs keep their own id (see the contract).
        self.committer_id = f"{self.ctx.uid}-{uuid.uuid4().hex[:16]}"
        self.committer = self.sink.create_global_committer(
            GlobalCommitterContext(self.name, self.ctx.uid, self.ctx.attempt_number)
        )
        restored, self._restored = self._restored, {}
        for cid in sorted(restored):
            self._commit(cid, restored[cid])

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        for message in values:
            if not isinstance(message, CommittableMessage):
                raise GlobalCommitError(
                    f"operator '{self.name}': expected a CommittableMessage from the sink "
                    f"writers, got {type(message).__name__}"
                )
            cid = message.checkpoint_id
            if cid == END_OF_INPUT:
                self.ended.add(message.subtask)
            pending = self.pending.get(cid)
            if pending is None:
                pending = self.pending[cid] = _Pending(self.committer_id, message.num_subtasks)
            pending.by_subtask.setdefault(message.subtask, []).extend(message.committables)

    # -- checkpoints ---------------------------------------------------------------------------
    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """After ``finish``: the end-of-input committables belong to this checkpoint."""
        final = self.pending.pop(END_OF_INPUT, None) if self._finished else None
        if final is None:
            return
        target = self.pending.get(checkpoint_id)
        if target is None:
            self.pending[checkpoint_id] = final
        else:
            for s, committables in final.by_subtask.items():
                target.by_subtask.setdefault(s, []).extend(committables)

    def snapshot_custom_state(self, checkpoint_id: int) -> bytes | None:
        state = {
            "version": STATE_VERSION,
            "pending": {
                cid: (p.committer_id, p.num_subtasks, {s: list(c) for s, c in p.by_subtask.items()})
                for cid, p in self.pending.items()
                if cid <= checkpoint_id
            },
        }
        return serialize_object(state)

    def restore_custom_state(self, blobs: list[bytes], rescaled: bool) -> None:
        for blob in blobs:
            state = pickle.loads(blob)
            if state.get("version") != STATE_VERSION:
                raise GlobalCommitError(
                    f"operator '{self.name}': global committer state version "
                    f"{state.get('version')!r}, expected {STATE_VERSION}"
                )
            for cid, (committer_id, n, by_subtask) in state["pending"].items():
                target = self._restored.setdefault(cid, _Pending(committer_id, n))
                for s, committables in by_subtask.items():
                    target.by_subtask.setdefault(s, []).extend(committables)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        completed = self.pending.get(checkpoint_id)
        if completed is not None:
            missing = missing_subtasks(set(completed.by_subtask), completed.num_subtasks,
                                       self.ended)  # fmt: skip
            if missing:
                raise GlobalCommitError(
                    f"operator '{self.name}': checkpoint {checkpoint_id} completed without the "
                    f"committables of writer subtasks {missing} (of {completed.num_subtasks}); "
                    "the writer->committer edge must deliver them before the barrier"
                )
        for cid in due_checkpoints(self.pending, checkpoint_id):
            self._commit(cid, self.pending.pop(cid))

    def _commit(self, checkpoint_id: int, pending: _Pending) -> None:
        request = pending.request(checkpoint_id)
        if not request.committables:
            return
        assert self.committer is not None
        try:
            outcome = self.committer.commit(request)
        except UndertowError:
            raise
        except Exception as err:
            raise GlobalCommitError(
                f"operator '{self.name}' (subtask 0): committing {request.describe()} "
                f"({len(request.committables)} committables) failed: {err}"
            ) from err
        if outcome is CommitOutcome.ALREADY_COMMITTED:
            self.already_committed += 1
            log.info("%s: %s was already committed", self.name, request.describe())
        else:
            self.committed += 1

    # -- end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        """End of input: with a final checkpoint, leave everything pending to it (see the
        module docstring); otherwise commit it all, the writers' final committables last."""
        if self.ctx.task_settings.final_checkpoint:
            self._finished = True
            return
        for cid in sorted(self.pending):
            self._commit(cid, self.pending.pop(cid))

    def close(self) -> None:
        if self.committer is not None:
            self.committer.close()
