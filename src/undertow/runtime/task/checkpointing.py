"""The checkpoint side of a subtask: barriers in, snapshot, barrier out, async write, ack.

:class:`SubtaskCheckpointer` feeds barriers, cancellation markers and end-of-partition events
to the barrier handler (a pure state machine) and executes its decisions:

* ``TriggerCheckpoint``: the atomic step on the task thread (reference §1.6) — operators'
  ``prepare_snapshot_pre_barrier``, the barrier goes to every output (blocking its channels
  if aligned), then the synchronous snapshot (state serialized to bytes). The bytes are
  written to checkpoint storage on a worker thread pool, and the acknowledgement with the file
  handle goes to the JobMaster when the write finished.
* ``ResumeChannels``: release the inputs whose aligned barrier blocked them.
* ``AbortCheckpoint``: decline to the JobMaster and send ``CancelCheckpointMarker`` downstream
  so nobody waits for this task's barrier.

Source tasks have no input barriers: the JobMaster triggers them through
:meth:`trigger_checkpoint`, run as a mail.

Threading: all methods run on the task's loop thread; only storage writes run on the pool.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol

from undertow.runtime.checkpoint.barrier import CancelCheckpointMarker, CheckpointBarrier
from undertow.runtime.checkpoint.barrier_handler import (
    AbortCheckpoint,
    BarrierHandler,
    BarrierTracker,
    ResumeChannels,
    TriggerCheckpoint,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import RecordWriter
from undertow.runtime.task.chain import OperatorChain

log = logging.getLogger(__name__)


class CheckpointResponder(Protocol):
    """How a subtask reports to the JobMaster (implemented by the worker)."""

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None: ...

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str) -> None: ...


#: Writes one state file: (checkpoint id, file name, bytes) -> handle. Blocking; runs on a pool.
StateWriter = Callable[[int, str, bytes], Any]


class SubtaskCheckpointer:
    def __init__(
        self,
        task_name: str,
        file_name: str,
        chain: OperatorChain,
        gates: list[InputGate],
        writers: list[RecordWriter],
        responder: CheckpointResponder,
        state_writer: StateWriter | None,
        executor: Executor | None,
        exactly_once: bool,
        current_watermark: Callable[[], int],
    ) -> None:
        self.task_name = task_name
        self.file_name = file_name
        self.chain = chain
        self.writers = writers
        self.responder = responder
        self.state_writer = state_writer
        self.executor = executor
        self.current_watermark = current_watermark
        self.channels: list[InputChannel] = [c for g in gates for c in g.channels]
        self._index = {id(c): i for i, c in enumerate(self.channels)}
        n = len(self.channels)
        self.handler: BarrierHandler | BarrierTracker = (
            BarrierHandler(n, task_name) if exactly_once else BarrierTracker(n)
        )
        self.last_checkpoint_id = -1
        self._pending_writes: set[asyncio.Future[Any]] = set()
        self.alignment_started: float | None = None

    # -- events from the inputs --------------------------------------------------------------
    def on_barrier(self, channel: InputChannel, barrier: CheckpointBarrier) -> None:
        if self.alignment_started is None:
            self.alignment_started = time.perf_counter()
        self._execute(self.handler.on_barrier(self._index[id(channel)], barrier))

    def on_cancel_marker(self, channel: InputChannel, marker: CancelCheckpointMarker) -> None:
        self._execute(self.handler.on_cancel_marker(self._index[id(channel)], marker))

    def on_end_of_partition(self, channel: InputChannel) -> None:
        self._execute(self.handler.on_end_of_partition(self._index[id(channel)]))

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> None:
        """A source subtask's checkpoint, triggered by the JobMaster (a mail)."""
        self._perform(barrier)

    def _execute(self, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, TriggerCheckpoint):
                self._perform(action.barrier)
            elif isinstance(action, ResumeChannels):
                for index in action.channels:
                    channel = self.channels[index]
                    if channel.receiver.is_blocked:
                        channel.resume_consumption()
            elif isinstance(action, AbortCheckpoint):
                self._abort(action.checkpoint_id, action.reason)
            else:
                raise TypeError(f"{self.task_name}: unknown checkpoint action {action!r}")

    # -- the checkpoint --------------------------------------------------------------------------
    def _perform(self, barrier: CheckpointBarrier) -> None:
        cid = barrier.checkpoint_id
        if cid <= self.last_checkpoint_id:
            return  # out of order (reference §5.8)
        self.last_checkpoint_id = cid
        started = time.perf_counter()
        alignment = 0.0 if self.alignment_started is None else started - self.alignment_started
        self.alignment_started = None
        self.chain.prepare_snapshot_pre_barrier(cid)
        for writer in self.writers:
            writer.broadcast_event(barrier, priority=barrier.priority,
                                   blocks=barrier.blocks_upstream)  # fmt: skip
        try:
            snapshot = self.chain.snapshot_state(cid)
            snapshot.watermark = self.current_watermark()
            data = pickle.dumps(snapshot, protocol=5) if snapshot.operators else b""
        except Exception as err:
            # The barrier is already downstream; this checkpoint fails, the task goes on and
            # the coordinator's failure manager decides whether the job fails.
            detail = "".join(traceback.format_exception_only(type(err), err)).strip()
            log.warning("%s: snapshot of checkpoint %d failed: %s", self.task_name, cid, detail)
            self.responder.decline(cid, CheckpointFailureReason.CHECKPOINT_DECLINED,
                                   f"{self.task_name}: snapshot failed: {detail}")  # fmt: skip
            return
        sync_ms = (time.perf_counter() - started) * 1000
        metrics = {
            "alignment_duration_ms": alignment * 1000,
            "sync_duration_ms": sync_ms,
            "start_delay_ms": max(0, time.time() * 1000 - barrier.timestamp),
            "unaligned": barrier.options.is_unaligned,
        }
        metrics["state_size"] = len(data)
        if not data:
            self.responder.acknowledge(cid, None, metrics)
            return
        if self.state_writer is None or self.executor is None:
            self.responder.decline(cid, CheckpointFailureReason.CHECKPOINT_DECLINED,
                                   "no checkpoint storage configured")  # fmt: skip
            return
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, self.state_writer, cid, self.file_name, data)
        self._pending_writes.add(future)
        write_started = time.perf_counter()

        def done(f: asyncio.Future[Any]) -> None:
            self._pending_writes.discard(f)
            if f.cancelled():
                return
            err = f.exception()
            if err is not None:
                detail = "".join(traceback.format_exception(type(err), err, err.__traceback__))
                reason = CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
                self.responder.decline(cid, reason, f"{self.task_name}: writing state: {detail}")
                return
            metrics["async_duration_ms"] = (time.perf_counter() - write_started) * 1000
            self.responder.acknowledge(cid, f.result(), metrics)

        future.add_done_callback(done)

    def _abort(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self.alignment_started = None
        self.responder.decline(checkpoint_id, reason, self.task_name)
        for writer in self.writers:
            writer.broadcast_event(CancelCheckpointMarker(checkpoint_id), priority=True)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.chain.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.chain.notify_checkpoint_aborted(checkpoint_id)

    def cancel_pending(self) -> None:
        for future in self._pending_writes:
            future.cancel()
