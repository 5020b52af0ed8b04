"""The operator behind ``sink_to(Sink)``: drives the sink's writer and, for two-phase-commit
sinks, its committer (Sink V2, reference §8.1, with writer and committer in one operator).

Invariant: a committable is committed only after a checkpoint that contains it completed, or
at the end of input when checkpointing is off; it is committed at least once, and commits are
idempotent.

With ``emit_committables`` (sinks with a global committer, see
:mod:`undertow.connectors.global_committer`) the operator is only the writer: it keeps no
committables, and instead emits one :class:`CommittableMessage` per checkpoint (also when
empty) in ``prepare_snapshot_pre_barrier``, before the barrier, and a last one under
``END_OF_INPUT`` in ``finish``; the global committer operator downstream commits them.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import pickle
from typing import Any

from undertow.connectors.global_committer import END_OF_INPUT, CommittableMessage
from undertow.connectors.sink import (
    Committer,
    OwnedBySubtask,
    SinkLike,
    SinkWriter,
    SinkWriterContext,
    WriteAheadSinkWriter,
)
from undertow.connectors.transactional_ids import ClaimsTransactionalIds, TransactionalIdClaim
from undertow.core.config import Configuration
from undertow.runtime.network.buffer import serialize_object
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps

#: Version of the pickled operator state; bump when its layout changes. Version 1 had no
#: writer state and is still read.
STATE_VERSION = 2
READABLE_STATE_VERSIONS = (1, 2)


def route_subtask(entry: Any, snapshotted_by: int) -> int:
    """The old subtask index an entry of the sink's state is routed by after a rescale: its
    own (:class:`~undertow.connectors.sink.OwnedBySubtask`), else its snapshotting subtask's."""
    if isinstance(entry, OwnedBySubtask) and isinstance(entry.subtask, int):
        return entry.subtask
    return snapshotted_by


def _share(
    entries: list[Any], snapshotted_by: int, rescaled: bool, index: int, parallelism: int
) -> list[Any]:
    """The entries of one old subtask's state that subtask ``index`` takes: without a rescale
    all of its own state (an entry's ``subtask`` then always maps to its holder), else those
    routed to it."""
    if not rescaled:
        return list(entries) if snapshotted_by % parallelism == index else []
    return [e for e in entries if route_subtask(e, snapshotted_by) % parallelism == index]


class _WriterContext(SinkWriterContext):
    def __init__(self, op: SinkWriterOperator) -> None:
        self._op = op

    def subtask_index(self) -> int:
        return self._op.ctx.subtask_index

    def parallelism(self) -> int:
        return self._op.ctx.parallelism

    def attempt_number(self) -> int:
        return self._op.ctx.attempt_number

    def operator_name(self) -> str:
        return self._op.ctx.name

    def restored_checkpoint_id(self) -> int | None:
        return self._op.restored_checkpoint_id

    def configuration(self) -> Configuration:
        return self._op.ctx.config


class SinkWriterOperator(OneInputStreamOperator):
    takes_row_ranges = True
    runs_in_java = True

    def __init__(self, sink: SinkLike, emit_committables: bool = False) -> None:
        self.sink = sink
        #: Emit committables downstream to a global committer instead of committing them.
        self.emit_committables = emit_committables
        self.writer: SinkWriter | None = None
        self.committer: Committer | None = None
        #: checkpoint id -> committables prepared for it and not committed yet
        self.pending: dict[int, list[Any]] = {}
        self.restored_checkpoint_id: int | None = None
        self._restored: list[Any] = []
        self._restored_writer_state: list[Any] = []
        #: After ``finish`` with a final checkpoint: the last committables, for the next one.
        self._final: list[Any] | None = None

    def transactional_id_claim(self) -> TransactionalIdClaim | None:
        """The sink's claim (:class:`ClaimsTransactionalIds`), for the job graph's check."""
        if isinstance(self.sink, ClaimsTransactionalIds):
            return self.sink.transactional_id_claim()
        return None

    def open(self) -> None:
        if not self.emit_committables:
            self.committer = self.sink.create_committer()
        if self._restored:
            self._commit(self._restored)
            self._restored = []
        context = _WriterContext(self)
        if self.restored_checkpoint_id is None:
            self.writer = self.sink.create_writer(context)
        else:
            self.writer = self.sink.restore_writer(context, self._restored_writer_state)
        self._restored_writer_state = []

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        assert self.writer is not None
        self.writer.write_batch(values, timestamps)

    # -- checkpoints ---------------------------------------------------------------------------
    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        assert self.writer is not None
        if self._final is not None:  # finished: the writer is flushed for good
            if self._final:
                self.pending.setdefault(checkpoint_id, []).extend(self._final)
            self._final = []
            return
        self.writer.flush(False)
        committables = self.writer.prepare_commit()
        if self.emit_committables:
            self._emit(checkpoint_id, committables)
        elif committables:
            self.pending.setdefault(checkpoint_id, []).extend(committables)

    def _emit(self, checkpoint_id: int, committables: list[Any]) -> None:
        message = CommittableMessage(self.ctx.subtask_index, self.ctx.parallelism, checkpoint_id,
                                     tuple(committables))  # fmt: skip
        self.output.collect_batch([message], None)

    def snapshot_custom_state(self, checkpoint_id: int) -> bytes | None:
        assert self.writer is not None
        writer_state = list(self.writer.snapshot_state(checkpoint_id))
        if self.committer is None and not writer_state:
            return None
        state = {
            "version": STATE_VERSION,
            "subtask": self.ctx.subtask_index,
            "checkpoint_id": checkpoint_id,
            "pending": {cid: list(c) for cid, c in self.pending.items() if cid <= checkpoint_id},
            "writer": writer_state,
        }
        return serialize_object(state)

    def restore_custom_state(self, blobs: list[bytes], rescaled: bool) -> None:
        index, n = self.ctx.subtask_index, self.ctx.parallelism
        for blob in blobs:
            state = pickle.loads(blob)
            if state.get("version") not in READABLE_STATE_VERSIONS:
                raise ValueError(f"operator '{self.name}' (subtask {index}): sink state version "
                                 f"{state.get('version')!r}, expected {STATE_VERSION}")  # fmt: skip
            cid = state["checkpoint_id"]
            self.restored_checkpoint_id = max(self.restored_checkpoint_id or cid, cid)
            old = state["subtask"]
            for key in sorted(state["pending"]):
                self._restored.extend(_share(state["pending"][key], old, rescaled, index, n))
            self._restored_writer_state.extend(
                _share(state.get("writer", []), old, rescaled, index, n)
            )

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if isinstance(self.writer, WriteAheadSinkWriter):
            self.writer.notify_checkpoint_complete(checkpoint_id)
        due = sorted(cid for cid in self.pending if cid <= checkpoint_id)
        for cid in due:
            self._commit(self.pending[cid])
            del self.pending[cid]

    def _commit(self, committables: list[Any]) -> None:
        if self.committer is None or not committables:
            return
        self.committer.commit(committables)  # errors name the file; the task adds the subtask

    # -- end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        assert self.writer is not None
        self.writer.flush(True)
        final = self.writer.prepare_commit()
        if self.emit_committables:
            # Before EndOfData: nothing may follow it on the edge to the committer, which
            # files these under the final checkpoint.
            self._emit(END_OF_INPUT, final)
            self._final = []
            return
        if self.ctx.task_settings.final_checkpoint:
            self._final = list(final)  # committed through the final checkpoint
            return
        for cid in sorted(self.pending):
            self._commit(self.pending.pop(cid))
        if self.committer is not None:
            self._commit(final)
        if isinstance(self.writer, WriteAheadSinkWriter):
            self.writer.commit_at_end_of_input()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.committer is not None:
            self.committer.close()
