"""The checkpoint side of a subtask: barriers in, snapshot, barrier out; then hand over.

Threading: all methods run on the task's loop thread; only storage writes run on the pool.
Lifecycle: built by its stream task from the subtask's ``TaskDeployment`` (:meth:`of`).

It executes every barrier action. What to persist of in-flight data is decided by
``runtime.checkpoint.inflight_capture``; the snapshot's write and acknowledgement are
:mod:`.snapshot_writer`'s; its wiring (``CheckpointIO``, ``CheckpointListeners``) is in
:mod:`.checkpoint_io`.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from undertow.core.modes import SavepointFormatType
from undertow.runtime.checkpoint.barrier import (
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
    SnapshotType,
)
from undertow.runtime.checkpoint.barrier_actions import BarrierHandling
from undertow.runtime.checkpoint.barrier_handler import (
    AbortCheckpoint,
    BarrierHandler,
    BarrierTracker,
    ChannelBarrierReceived,
    ConvertToPriority,
    FinishInputsCheckpoint,
    InitInputsCheckpoint,
    ResumeChannels,
    ScheduleAlignmentTimer,
    TriggerCheckpoint,
)
from undertow.runtime.checkpoint.capture_persist import persist
from undertow.runtime.checkpoint.channel_recovery.stream import RestItem
from undertow.runtime.checkpoint.channel_state_writer import (
    ChannelStateWriter,
)
from undertow.runtime.checkpoint.deferred_trigger import (
    DeclineSubsumedTrigger,
    DeferredTrigger,
    PerformTriggered,
    TriggerDecision,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.inflight_capture import (
    CaptureDecision,
    InflightCapture,
)
from undertow.runtime.checkpoint.inflight_ledger import InflightLedger
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.network.inflight_view import CheckpointedGateView, CheckpointedInputView
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.chain import OperatorChain
from undertow.runtime.task.checkpoint_io import CheckpointIO, CheckpointListeners
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.settings import TaskSettings
from undertow.runtime.task.snapshot_slices import pending_keyed_state, serialize_in_slices
from undertow.runtime.task.snapshot_writer import SnapshotWriter
from undertow.state.heap_snapshot import PendingKeyGroups

log = logging.getLogger(__name__)


class TaskInput(Protocol):
    """What the checkpointer needs from its stream task (implemented by ``StreamTask``)."""

    def post(self, mail: Callable[[], None]) -> None:
        """Run ``mail`` on the task's mailbox."""

    def unprocessed_chunks(self, channel: object) -> list[bytes]:
        """Channel-state chunks of the records the task took from ``channel`` (one of its input
        channels, by identity) but has not processed: the rest of the current batch, then
        restored batches still pending."""

    def restored_rest(self, channel: object) -> list[RestItem]:
        """What is left of ``channel``'s restored input streams (runs and chunks)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SubtaskCheckpointer:
    """Executes the barrier handler's decisions for one subtask (see the module docstring).

    ``config`` selects the handler: exactly-once with ``execution.checkpointing.unaligned.
    enabled`` uses :meth:`BarrierHandler.alternating` (also for pure unaligned checkpoints: it
    still aligns savepoints and FORCED_ALIGNED barriers, which :meth:`BarrierHandler.unaligned`
    would not), otherwise the aligned handler; at-least-once uses the tracker.
    ``io.channel_state_writer`` is required when unaligned checkpoints are enabled (workers
    pass their shared-file writer's member). Built complete (keyword-only, nothing is set
    later); a stream task builds its own with :meth:`of`.
    """

    def __init__(
        self,
        *,
        task_name: str,
        file_name: str,
        chain: OperatorChain,
        gates: Sequence[CheckpointedGateView],
        writers: Sequence[RecordWriter],
        task: TaskInput,
        io: CheckpointIO,
        exactly_once: bool,
        settings: TaskSettings | None = None,
        pace: TaskPace | None = None,
        listeners: CheckpointListeners | None = None,
    ) -> None:
        listeners = listeners if listeners is not None else CheckpointListeners()
        self.task_name = task_name
        #: The worker's slice pace, hurried by every checkpoint event this subtask sees.
        self.pace = pace
        self.file_name = file_name
        self.chain = chain
        self.gates = gates
        self.writers = writers
        self.task: TaskInput = task
        self.responder = io.responder
        self.current_watermark = listeners.current_watermark
        #: Buffer debloating's estimated time to consume the in-flight buffers (ms), reported
        #: with each acknowledgement (``debloat_estimate_ms``) when it has a value.
        self.debloat_estimate = listeners.debloat_estimate
        #: Called after the operators were notified of a completed checkpoint (the task's
        #: lifecycle waits for its final checkpoint through it).
        self.completion_listener = listeners.on_complete
        #: Called when the task takes a synchronous savepoint (stop with savepoint), before
        #: its snapshot: the task must not close before that savepoint completed.
        self.synchronous_savepoint_listener = listeners.on_synchronous_savepoint
        #: Each input channel as the checkpointer may see it (in-flight data, priority events).
        self.channels: list[CheckpointedInputView] = [c for g in gates for c in g.channels]
        self._index = {id(c): i for i, c in enumerate(self.channels)}
        #: channel index -> (gate index, channel index in the gate)
        self._info = [(gi, ci) for gi, g in enumerate(gates) for ci in range(len(g.channels))]
        n = len(self.channels)
        settings = settings if settings is not None else TaskSettings()
        self.unaligned_enabled = exactly_once and settings.unaligned
        self.handler: BarrierHandling
        if not exactly_once:
            self.handler = BarrierTracker(n)
        elif self.unaligned_enabled:
            self.handler = BarrierHandler.alternating(n, task_name)
        else:
            self.handler = BarrierHandler(n, task_name)
        forced = settings.unaligned_forced
        edges = chain.vertex.outputs
        #: Per output: may its barrier be unaligned (the edge has key context, or forced)?
        self._unaligned_output = [
            forced or i >= len(edges) or edges[i].supports_unaligned for i in range(len(writers))
        ]
        self.channel_state: ChannelStateWriter | None = io.channel_state_writer
        if self.channel_state is None and self.unaligned_enabled:
            raise ValueError(f"{task_name}: unaligned checkpoints are enabled "
                             "but no channel-state writer was given")  # fmt: skip
        #: A checkpoint triggered by the JobMaster while some input had not ended yet.
        self._deferred = DeferredTrigger()
        self.last_checkpoint_id = -1
        #: The asynchronous part: writes each snapshot, then acknowledges it.
        self.snapshots = SnapshotWriter(task_name=task_name, file_name=file_name, io=io)
        self.alignment_started: float | None = None
        self._start_delay_ms: float | None = None
        self._bytes_at_alignment = 0
        #: Where queued buffers were persisted (incremental channel state, pure).
        incremental = self.unaligned_enabled and settings.incremental_channel_state
        self.ledger = InflightLedger.of(incremental, self.channel_state)
        #: What to persist of the in-flight data, decided per checkpoint (pure).
        self._capture = InflightCapture(
            self._info, [len(w.partition.subpartitions) for w in writers], self.ledger.locate
        )
        #: (channel index, sequence number) -> the announced barrier queued there.
        self._announced: dict[tuple[int, int], CheckpointBarrier] = {}
        self._next_announcement = 0
        #: (channel index, its normal entries that precede it) of the barrier being processed.
        self._barrier_in_hand: tuple[int, int] | None = None
        if self.unaligned_enabled:
            for index, channel in enumerate(self.channels):
                channel.subscribe_arrivals(functools.partial(self._on_arrival, index))
            for i, writer in enumerate(writers):
                for j, sp in enumerate(writer.partition.subpartitions):
                    sp.subscribe_events_sent(functools.partial(self._on_event_sent, (i, j)))

    @classmethod
    def of(
        cls,
        deployment: TaskDeployment,
        *,
        chain: OperatorChain,
        task: TaskInput,
        io: CheckpointIO,
        pace: TaskPace | None = None,
        listeners: CheckpointListeners | None = None,
        settings: TaskSettings | None = None,
    ) -> SubtaskCheckpointer:
        """The checkpointer of the deployed subtask: its name, state file, gates, writers and
        checkpointing mode all come from ``deployment``."""
        return cls(
            task_name=deployment.name, file_name=deployment.state_file_name, chain=chain,
            gates=deployment.gates, writers=deployment.record_writers, task=task, io=io,
            exactly_once=CheckpointSettings.of(deployment.config).exactly_once,
            settings=settings if settings is not None else TaskSettings.of(deployment.config),
            pace=pace, listeners=listeners,
        )  # fmt: skip

    # -- events from the inputs --------------------------------------------------------------
    def on_barrier(self, channel: CheckpointedInputView, barrier: CheckpointBarrier) -> None:
        self._note_first_barrier(barrier)
        index = self._index[id(channel)]
        if self._announced:  # forget this barrier's announcement, and older ones
            self._announced = {
                k: b for k, b in self._announced.items()
                if not (k[0] == index and b is barrier) and b.checkpoint_id >= barrier.checkpoint_id
            }  # fmt: skip
        actions = self.handler.on_barrier(index, barrier, now_ms=_now_ms())
        # The barrier just taken is no longer queued: what is still queued on its channel
        # arrived after it, except the entries ahead of its mark if it was a priority event.
        self._barrier_in_hand = (index, channel.last_priority_mark or 0)
        try:
            self._execute(actions)
        finally:
            self._barrier_in_hand = None

    def on_announcement(
        self, channel: CheckpointedInputView, announcement: BarrierAnnouncement
    ) -> None:
        index = self._index[id(channel)]
        key = (index, announcement.sequence_number)
        if key not in self._announced:
            return  # its barrier was taken already (converted, or in order)
        self._execute(self.handler.on_announcement(
            index, announcement.barrier, announcement.sequence_number, now_ms=_now_ms()
        ))  # fmt: skip

    def on_cancel_marker(
        self, channel: CheckpointedInputView, marker: CancelCheckpointMarker
    ) -> None:
        self._execute(self.handler.on_cancel_marker(self._index[id(channel)], marker))

    def on_end_of_partition(self, channel: CheckpointedInputView) -> None:
        index = self._index[id(channel)]
        self._execute(self.handler.on_end_of_partition(index, now_ms=_now_ms()))
        if self._deferred.waiting is not None and all(g.is_finished for g in self.gates):
            self._triggered(self._deferred.on_inputs_ended())

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> None:
        """A checkpoint triggered by the JobMaster (a mail): a source subtask's, or one of a
        task whose producers all finished, taken when its inputs have all ended (see the
        module docstring). A newer trigger replaces a deferred older one, which is declined;
        a trigger of a checkpoint this task has taken already is ignored."""
        if barrier.checkpoint_id <= self.last_checkpoint_id:
            return
        self._note_first_barrier(barrier)
        self._triggered(self._deferred.on_trigger(
            barrier, inputs_ended=all(g.is_finished for g in self.gates),
        ))  # fmt: skip

    def _triggered(self, decisions: list[TriggerDecision]) -> None:
        for decision in decisions:
            match decision:
                case PerformTriggered(barrier):
                    self._perform(barrier)
                case DeclineSubsumedTrigger(older, newer_id):
                    self.responder.decline(
                        older.checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED,
                        f"{self.task_name}: subsumed by checkpoint {newer_id} "
                        "before its inputs ended",
                    )  # fmt: skip

    def _note_first_barrier(self, barrier: CheckpointBarrier) -> None:
        if self.pace is not None:
            self.pace.hurry()
        if self.alignment_started is None and barrier.checkpoint_id > self.last_checkpoint_id:
            self.alignment_started = time.perf_counter()
            self._start_delay_ms = max(0, _now_ms() - barrier.timestamp)
            self._bytes_at_alignment = sum(g.bytes_consumed for g in self.gates)

    def _execute(self, actions: list[Any]) -> None:
        for action in actions:
            kind = type(action)
            if kind is TriggerCheckpoint:
                self._perform(action.barrier)
            elif kind is ResumeChannels:
                for index in action.channels:
                    channel = self.channels[index]
                    if channel.is_blocked:
                        channel.resume_consumption()
            elif kind is AbortCheckpoint:
                self._abort(action.checkpoint_id, action.reason)
            elif kind is InitInputsCheckpoint:
                self._init_inputs(action)
            elif kind is ChannelBarrierReceived:
                self._capture.barrier_received(action.channel, action.checkpoint_id)
            elif kind is FinishInputsCheckpoint:
                if self.channel_state is not None:
                    self._persist([self._capture.finish_inputs(action.checkpoint_id)])
            elif kind is ConvertToPriority:
                barrier = self._announced.pop((action.channel, action.sequence_number), None)
                if barrier is not None:
                    self.channels[action.channel].prioritize(barrier)
            elif kind is ScheduleAlignmentTimer:
                self._schedule(action.delay_ms, functools.partial(
                    self._on_alignment_timer, action.checkpoint_id))  # fmt: skip
            else:
                raise TypeError(f"{self.task_name}: unknown checkpoint action {action!r}")

    def _schedule(self, delay_ms: int, mail: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000.0, self.task.post, mail)

    def _on_alignment_timer(self, checkpoint_id: int) -> None:
        self._execute(self.handler.on_alignment_timeout(checkpoint_id, _now_ms()))

    # -- channel state: the capture decides, the writer persists ------------------------------
    def _persist(self, decisions: Iterable[CaptureDecision | None]) -> None:
        assert self.channel_state is not None
        persist(self.channel_state, decisions, lambda cid, delay_ms: self._schedule(
            delay_ms, functools.partial(self._on_output_timeout, cid)), self.ledger)  # fmt: skip

    def _init_inputs(self, action: InitInputsCheckpoint) -> None:
        if self.channel_state is None:
            return
        task = self.task
        self._persist(self._capture.start_inputs(
            action.barrier, action.channels, self.channels,
            lambda i: task.unprocessed_chunks(self.channels[i]),
            self._barrier_in_hand,
            lambda i: task.restored_rest(self.channels[i]),
        ))  # fmt: skip

    def _on_arrival(self, index: int, payload: object) -> None:
        """Every payload arriving on input channel ``index``, before it is queued (network
        callback, through the channel's arrival subscription)."""
        if self.pace is not None and type(payload) is CheckpointBarrier:
            self.pace.hurry()  # the earliest a worker learns of a checkpoint
        if self.channel_state is not None:
            self._persist((self._capture.on_arrival(index, payload, self.channel_state),))
        if type(payload) is CheckpointBarrier and payload.options.is_timeoutable:
            sequence_number = self._next_announcement
            self._next_announcement += 1
            self._announced[(index, sequence_number)] = payload
            self.channels[index].add_priority_event(BarrierAnnouncement(payload, sequence_number))

    def _on_event_sent(self, info: tuple[int, int], payload: object) -> None:
        finished = self._capture.on_event_sent(info, payload)
        if finished is not None and self.channel_state is not None:
            self.channel_state.finish_output(finished.checkpoint_id)

    def _queued_bytes(self, channel: tuple[int, int]) -> int:
        """Bytes of data queued in subpartition ``channel`` (output, index)."""
        return self.writers[channel[0]].partition.subpartitions[channel[1]].queued_data_bytes

    def _on_output_timeout(self, checkpoint_id: int) -> None:
        """The aligned barrier is still queued in some subpartitions after its timeout: turn it
        into a priority barrier there and persist what it overtakes (reference §1.9)."""
        timeout = self._capture.output_timeout(checkpoint_id)
        if timeout is None:
            return
        for i, j in timeout.subpartitions:
            sp = self.writers[i].partition.subpartitions[j]
            overtaken = sp.prioritize_event(timeout.barrier, timeout.replacement)
            self._persist(self._capture.overtaken(checkpoint_id, (i, j), overtaken or ()))
        self._persist([self._capture.finish_output()])

    def _broadcast_barrier(self, cid: int, barrier: CheckpointBarrier) -> bool:
        """Send ``barrier`` to every output; True if channel state is needed."""
        own = barrier.with_options(barrier.options.with_unaligned_supported())
        forced = own.with_options(own.options.with_unaligned_unsupported())
        per_output = [own if ok else forced for ok in self._unaligned_output]
        writer = self.channel_state
        plan = None
        if writer is not None:
            plan = self._capture.begin_output(own, per_output, writer.is_started(cid))
            if plan is not None:
                self._persist(plan)
        for i, (record_writer, b) in enumerate(zip(self.writers, per_output, strict=True)):
            if b.priority and writer is not None:
                # Pending records are flushed first: they were produced before the snapshot,
                # so they are overtaken and persisted like every other queued buffer.
                record_writer.flush_all()
                for j, sp in enumerate(record_writer.partition.subpartitions):
                    overtaken = sp.overtake_with_priority_event(b)
                    self._persist(self._capture.overtaken(cid, (i, j), overtaken))
            else:
                record_writer.broadcast_event(b, priority=b.priority, blocks=b.blocks_upstream)
        if plan is not None:
            self._persist([self._capture.end_output(cid, _now_ms(), self._queued_bytes)])
        return plan is not None

    # -- the checkpoint --------------------------------------------------------------------------
    def _perform(self, barrier: CheckpointBarrier) -> None:
        cid = barrier.checkpoint_id
        if cid == self.last_checkpoint_id:
            # Taken already: a direct trigger (FLIP-147, the coordinator re-triggers successors
            # of a subtask that finished) that raced with the barrier from an input.
            return
        if cid < self.last_checkpoint_id:
            if self.channel_state is not None:
                self.channel_state.abort(cid)
            return  # out of order (reference §5.8)
        self.last_checkpoint_id = cid
        self.ledger.taken(cid, referencable=not barrier.options.snapshot_type.is_savepoint)
        if self.pace is not None:
            self.pace.hurry()  # the async part needs loop turns too
        listener = self.synchronous_savepoint_listener
        if barrier.options.snapshot_type.is_synchronous and listener is not None:
            listener(cid, barrier.options.is_unaligned)
        started = time.perf_counter()
        alignment = 0.0 if self.alignment_started is None else started - self.alignment_started
        start_delay = self._start_delay_ms
        if start_delay is None:
            start_delay = max(0, _now_ms() - barrier.timestamp)
        processed = sum(g.bytes_consumed for g in self.gates) - self._bytes_at_alignment
        self.alignment_started = None
        self._start_delay_ms = None
        self.chain.prepare_snapshot_pre_barrier(cid)
        needs_channel_state = self._broadcast_barrier(cid, barrier)
        writer = self.channel_state
        if writer is not None and not needs_channel_state and not writer.is_started(cid):
            writer.abort(cid)  # takes no part: a shared writer's group must not wait for it
        elif writer is not None and self.ledger.enabled and writer.is_started(cid):
            writer.when_finished(cid, functools.partial(self.ledger.written_state, cid))
        try:
            native = _native_mode(barrier) if self.chain.takes_native_snapshots else ""
            if native:  # native (incremental) keyed state, uploaded asynchronously below
                snapshot = self.chain.snapshot_state(cid, native)
            else:
                snapshot = self.chain.snapshot_state(cid)
            snapshot.watermark = self.current_watermark()
        except Exception as err:
            # The barrier is already downstream; this checkpoint fails, the task goes on and
            # the coordinator's failure manager decides whether the job fails.
            self.snapshots.snapshot_failed(cid, err)
            return
        sync_ms = (time.perf_counter() - started) * 1000
        metrics: dict[str, Any] = {
            "alignment_duration_ms": alignment * 1000,
            "sync_duration_ms": sync_ms,
            "start_delay_ms": start_delay,
            "processed_data": max(0, processed),
            "persisted_data": 0,
            "unaligned": barrier.options.is_unaligned,
        }
        estimate = self.debloat_estimate() if self.debloat_estimate is not None else None
        if estimate is not None:
            metrics["debloat_estimate_ms"] = estimate
        async_started = time.perf_counter()
        proceed = functools.partial(self.snapshots.start, cid, snapshot, metrics, async_started,
                                    needs_channel_state)  # fmt: skip
        pending = pending_keyed_state(snapshot)
        if pending and self.task is not None and not barrier.options.snapshot_type.is_savepoint:
            self._serialize_in_slices(pending, proceed)
        else:
            proceed()

    def _serialize_in_slices(self, pending: list[PendingKeyGroups],
                             proceed: Callable[[], None]) -> None:  # fmt: skip
        """Pickle the pending keyed state in mailbox slices (:mod:`.snapshot_slices`), then
        ``proceed``; the task does not close before that (:meth:`wait_for_pending`)."""
        assert self.task is not None
        pace = self.pace

        def slice_s() -> float:
            return pace.slice_s(time.perf_counter()) if pace is not None else 0.002

        self.snapshots.track(serialize_in_slices(pending, self.task.post, slice_s, proceed))

    def _abort(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self.alignment_started = None
        self._start_delay_ms = None
        self._forget(checkpoint_id)
        self.responder.decline(checkpoint_id, reason, self.task_name)
        for writer in self.writers:
            writer.broadcast_event(CancelCheckpointMarker(checkpoint_id), priority=True)

    def _forget(self, checkpoint_id: int) -> None:
        """Stop collecting channel state of ``checkpoint_id`` (aborted)."""
        if self.channel_state is not None:
            self.channel_state.abort(checkpoint_id)
        self._capture.forget(checkpoint_id)
        self.ledger.aborted(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.ledger.completed(checkpoint_id)
        self.chain.notify_checkpoint_complete(checkpoint_id)
        if self.completion_listener is not None:
            self.completion_listener(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self._deferred.on_aborted(checkpoint_id)
        self._forget(checkpoint_id)
        self.chain.notify_checkpoint_aborted(checkpoint_id)

    async def wait_for_pending(self) -> None:
        """Wait until every state write in flight was acknowledged or declined (see
        :meth:`.SnapshotWriter.wait_for_pending`)."""
        await self.snapshots.wait_for_pending()

    def cancel_pending(self) -> None:
        self.snapshots.cancel_pending()


def _native_mode(barrier: CheckpointBarrier) -> str:
    """What native snapshot a barrier asks for: a CANONICAL savepoint none (``""``), a NATIVE
    one ``"savepoint"`` (every file, into the savepoint); a FULL checkpoint (the first after
    a NO_CLAIM restore whose files were not duplicated) reuses no uploaded file."""
    kind = barrier.options.snapshot_type
    if kind.is_savepoint:
        native = barrier.options.savepoint_format is SavepointFormatType.NATIVE
        return "savepoint" if native else ""
    return "full" if kind is SnapshotType.FULL_CHECKPOINT else "incremental"
