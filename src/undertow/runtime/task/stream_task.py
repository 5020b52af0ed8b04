"""A subtask's mailbox loop: input processing in time-budgeted slices, with mails in between.

Threading: runs as one asyncio task on its worker's loop; ``post`` must be called from that
loop, ``post_threadsafe`` from anywhere. ``statistics``, ``is_output_available`` and
``when_output_available`` (the timers' :class:`~undertow.runtime.task.timers.OutputAvailability`)
are called from that loop too.

Why still one piece of about 840 lines: the loop, input processing, event dispatch and the
end-of-data lifecycle share the task's mutable state; they are split together with the
Worker/StreamTask/SubtaskCheckpointer wiring (issue 13, step 3: mailbox loop, input
processor, event dispatch), not before it, so that the split follows the new wiring.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from undertow.connectors.source import InputStatus
from undertow.core.config import Configuration, Options
from undertow.core.errors import JobCancelledError, RestoreError, StateError
from undertow.core.types import MIN_TIMESTAMP
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.barrier import (
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
)
from undertow.runtime.checkpoint.channel_state_rescale import channel_records
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk, encode_chunk
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.buffer_debloater import DebloatSettings
from undertow.runtime.network.gate_debloater import TaskDebloater
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import RecordWriter
from undertow.runtime.task.chain import OperatorChain
from undertow.runtime.task.context import LoopProcessingTimeService
from undertow.runtime.task.events import (
    EndOfChannelStateEvent,
    EndOfData,
    EndOfPartitionEvent,
    WatermarkEvent,
    WatermarkStatusEvent,
)
from undertow.runtime.task.lifecycle import (
    Finished,
    Finishing,
    Running,
    TaskLifecycle,
    final_checkpoint_required,
)
from undertow.runtime.task.operator import TaskServices, TwoInputStreamOperator
from undertow.runtime.task.output_budget import OutputBudget
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.task_statistics import TaskStatistics, TaskTimeAccounting
from undertow.runtime.task.unaligned_stop import drop_input, start_dropping
from undertow.runtime.task.watermark_valve import StatusWatermarkValve

if TYPE_CHECKING:
    from undertow.runtime.task.checkpointing import SubtaskCheckpointer

log = logging.getLogger(__name__)

_MIN_CHUNK, _MAX_CHUNK = 1, 1 << 16
_SOURCE_BACKOFF_S = 0.005


class TaskCancelled(JobCancelledError):
    pass


def _nothing() -> None:
    pass


def _never() -> bool:
    return False


class StreamTask:
    def __init__(
        self,
        vertex: JobVertex,
        subtask_index: int,
        attempt: int,
        config: Configuration,
        gates: list[InputGate],
        writers: dict[int, RecordWriter],
        services: TaskServices,
        loop: asyncio.AbstractEventLoop,
        restored: list[SubtaskSnapshot] | None = None,
        pace: TaskPace | None = None,
    ) -> None:
        self.vertex = vertex
        self.subtask_index = subtask_index
        self.name = f"{vertex.name} ({subtask_index + 1}/{vertex.parallelism})"
        self.loop = loop
        self.gates = gates
        self.writers = list(writers.values())
        self.partitions = [w.partition for w in self.writers]
        self.mailbox: deque[Callable[[], None]] = deque()
        self._wake = asyncio.Event()
        #: The slice length, shared by the worker's tasks (short while a checkpoint is on).
        self.pace = pace if pace is not None else TaskPace.of(config)
        self.buffer_timeout_ms = vertex.buffer_timeout
        self._cancelled = False
        self._end_of_input = False
        self._source_waiting = False
        self._reader_ended = False
        self._chunk = 64
        #: [gate, channel, values, timestamps, position, restored]
        self._current: list[Any] | None = None
        #: Restored input batches not yet processed: (gate, channel, values, timestamps).
        self._restored_input: deque[tuple[InputGate, InputChannel, list[Any], Any]] = deque()
        self._priority_events = False
        self._gate_rr = 0
        self.records_in = 0
        #: After an unaligned stop's savepoint: input is dropped (:mod:`.unaligned_stop`).
        self.dropping_input = False
        self.records_dropped = 0
        self.time_accounting = TaskTimeAccounting()
        self.pts = LoopProcessingTimeService(loop, self.post)
        #: Work that waits for the output to become available (deferred timer bursts).
        self._when_available: deque[Callable[[], None]] = deque()
        self._ignore_availability = False
        parameters = config.get(Options.GLOBAL_JOB_PARAMETERS)
        self.chain = OperatorChain(
            vertex, subtask_index, attempt, config, writers, services, self.pts, parameters,
            output_availability=self,
        )  # fmt: skip
        #: Operator feeding each output (for messages), in ``self.writers`` order.
        self.output_operators = [
            self.chain.output_operators.get(edge_id, vertex.name) for edge_id in writers
        ]
        #: Buffer debloating of the input gates (FLIP-183), started by ``run``; None if off.
        self.debloater: TaskDebloater | None = None
        self._debloat = DebloatSettings.of(config)
        if self._debloat is not None:
            for writer in self.writers:
                writer.start_debloated(self._debloat.initial_max_records)
        self.budget: OutputBudget | None = None
        if self.writers:
            self.budget = OutputBudget(
                self.writers,
                config.get(Options.MAX_OVERDRAFT_BUFFERS_PER_GATE),
                self._on_overdraft_exceeded,
            )
        self.head = self.chain.head
        self._two_input = isinstance(self.head, TwoInputStreamOperator)
        #: A head with bounded room for input (async I/O: capacity) that must drain before
        #: ``finish()``: chunks are cut to its room, and no input is taken while it has none.
        self._head_room: Callable[[], int] | None = getattr(self.head, "input_room", None)
        self._head_pending: Callable[[], bool] | None = getattr(self.head, "has_pending_work", None)
        self._build_valves()
        for gate in gates:
            gate.set_listener(self.wake)
        self.restored = restored
        self._checkpointer: SubtaskCheckpointer | None = None
        self.lifecycle: TaskLifecycle = Running()
        #: Wait for a final checkpoint after EndOfData (FLIP-147) before closing.
        self.final_checkpoint = final_checkpoint_required(config)
        #: The vertex was fully finished in the restored checkpoint: run no operator.
        self.deployed_finished = False
        #: (id(gate), channel index) of channels that delivered EndOfData or end of partition.
        self._data_ended: set[tuple[int, int]] = set()
        #: False once an input channel ended with ``EndOfData(drain=False)`` (stop without
        #: drain): the chain then does not finish and event time does not go to the end.
        self._drain = True
        #: A synchronous savepoint (stop with savepoint) taken before the data ended.
        self._early_savepoint: int | None = None
        self._num_channels = sum(len(g.channels) for g in gates)
        #: Set by the worker on a rescaled restore: old channels this subtask re-emits, as
        #: (output index, chunks in stream order, description for errors), in order.
        self.reemit: list[tuple[int, list[bytes], str]] = []
        #: Outputs (indices) that end their re-emitted data with an EndOfChannelStateEvent.
        self.recovery_outputs: frozenset[int] = frozenset()
        #: id(gate) -> indices of its channels that delivered EndOfChannelStateEvent so far.
        self._recovered_channels: dict[int, set[int]] = {}
        #: Set by the worker on a rescaled restore: indices of the gates that receive
        #: re-emitted data, and what to call once every one of them ended it (the JobMaster
        #: triggers no checkpoint before: one taken meanwhile would persist re-emitted
        #: records as ordinary in-flight data and lose their place before all live data).
        self.recovering_gates: set[int] = set()
        self.on_channel_state_recovered: Callable[[], None] | None = None

    @property
    def checkpointer(self) -> SubtaskCheckpointer | None:
        """Set by the worker when checkpointing is configured; attaches itself to this task."""
        return self._checkpointer

    @checkpointer.setter
    def checkpointer(self, checkpointer: SubtaskCheckpointer | None) -> None:
        self._checkpointer = checkpointer
        self._priority_events = checkpointer is not None and checkpointer.unaligned_enabled
        if checkpointer is not None:
            checkpointer.attach(self)
            checkpointer.completion_listener = self._on_checkpoint_complete
            checkpointer.synchronous_savepoint_listener = self._on_synchronous_savepoint
            checkpointer.debloat_estimate = self._debloat_estimate_ms

    # -- mailbox ---------------------------------------------------------------------------------
    def wake(self) -> None:
        self._wake.set()

    def post(self, mail: Callable[[], None]) -> None:
        self.mailbox.append(mail)
        self._wake.set()

    def post_threadsafe(self, mail: Callable[[], None]) -> None:
        self.loop.call_soon_threadsafe(self.post, mail)

    def cancel(self) -> None:
        self._cancelled = True
        self._wake.set()

    def statistics(self) -> TaskStatistics:
        """Records, bytes and time split since ``run`` started (see :class:`TaskStatistics`)."""
        busy, backpressured, idle = self.time_accounting.times_ms()
        return TaskStatistics(
            records_in=self.records_in,
            records_out=sum(w.records_out for w in self.writers),
            bytes_out=sum(w.bytes_out for w in self.writers),
            busy_ms=busy,
            backpressured_ms=backpressured,
            idle_ms=idle,
            max_overdraft_buffers=max((p.max_overdraft_seen for p in self.partitions), default=0),
            overdraft_exceeded=self.budget.exceeded if self.budget is not None else 0,
            input_watermark=self.current_watermark(),
            debloat=self.debloater.statistics() if self.debloater is not None else None,
        )

    def _on_overdraft_exceeded(self, output: int, units: int, drawn: int, room: int) -> None:
        """The first unit of work whose output went past the free buffers plus the overdraft."""
        budget = self.budget
        assert budget is not None
        free = room - budget.overdraft
        if units == 1:
            what = "one record"
            why = f"{what}'s output is never split"
        else:
            what = f"a chunk of {units} records"
            why = "its records cost more than the ones before"
        log.warning(
            "%s: %s of operator '%s' (subtask %d/%d) drew %d buffers on output '%s', more "
            "than its %d free buffers plus the %d overdraft buffers allowed "
            "(taskmanager.network.memory.max-overdraft-buffers-per-gate); %s, so %d buffers "
            "went beyond the pool. Further cases are only counted (overdraft_exceeded in the "
            "task's statistics).",
            self.name, what, self.output_operators[output], self.subtask_index + 1,
            self.vertex.parallelism, drawn, self.partitions[output].name, free,
            budget.overdraft, why, drawn - free,
        )  # fmt: skip

    def _run_mails(self) -> None:
        mailbox = self.mailbox
        while mailbox:
            mailbox.popleft()()

    # -- lifecycle -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Run until the end (bounded input, after the final checkpoint) or cancellation;
        raises what failed the task. The lifecycle is in the module docstring."""
        self.time_accounting = TaskTimeAccounting()
        self._reemit_channel_state()
        if self.deployed_finished:
            await self._run_finished()
            return
        try:
            if self.restored:
                self.chain.restore(self.restored)
                self._restore_channel_state(self.restored)
                self.restored = None
            self.chain.open()
            self._schedule_flush()
            self._start_debloating()
            if self.chain.is_source:
                action, ready = self._source_slice, self._source_ready
            else:
                action, ready = self._input_slice, self._input_ready
            await self._loop(action, ready, self._is_end_of_data)
            if isinstance(self.lifecycle, Running):  # not already ended by ``stop_source``
                self._finish_and_end_data(self._drain)
            if self.chain.is_source:
                action, ready = _nothing, _never
            await self._loop(action, ready, self._may_close)
            if self.checkpointer is not None:  # acknowledgements before TaskFinished
                await self.checkpointer.wait_for_pending()
            lifecycle = self.lifecycle
            assert isinstance(lifecycle, Finishing)
            self.lifecycle = lifecycle.close()
            for writer in self.writers:
                writer.broadcast_event(EndOfPartitionEvent())
        finally:
            errors = self.chain.close()
            if errors:
                log.warning("%s: errors while closing operators: %s", self.name, errors)

    def stop_source(self, drain: bool) -> None:
        """Stop with savepoint at a source subtask (a mail, posted before the savepoint's
        trigger): stop reading and end the data at once, so the savepoint barrier follows
        ``EndOfData``. ``drain``: event time goes to the end (MAX watermark) and the chain
        finishes, as at the end of a bounded input; otherwise operators neither finish nor
        fire timers (``EndOfData(drain=False)``), and the savepoint holds their state. Either
        way the source closes only after the savepoint (its next checkpoint) completed, also
        without periodic checkpoints."""
        running = isinstance(self.lifecycle, Running) and not self.deployed_finished
        if not self.chain.is_source or not running:
            return
        if drain:
            self.head.end_of_input()
        self._end_of_input = True
        self._finish_and_end_data(drain, savepoint_follows=True)

    def _finish_and_end_data(self, drain: bool, savepoint_follows: bool = False) -> None:
        """The data ended: ``finish()`` the chain (unless stopped without drain), send
        ``EndOfData`` after the last record, start waiting for the final checkpoint.

        Either way every operator's processing-time service is quiesced first (the chain
        does it per operator, right before its ``finish()``): no processing-time timer fires
        after ``EndOfData``, however long the final checkpoint takes.

        ``savepoint_follows``: a source stopped with savepoint; the savepoint's trigger is the
        next mail, and the source must not close before it completed, even with checkpointing
        off (it waits for the next checkpoint, which is that savepoint)."""
        if drain:
            self._run_when_available(ignore_availability=True)  # due timers fire before finish
            self.chain.finish()
        else:
            self.chain.quiesce_processing_time()
        self._end_data(drain, savepoint_follows)

    def _end_data(self, drain: bool, savepoint_follows: bool = False) -> None:
        """``finish()`` ran (or was skipped by a stop without drain): send ``EndOfData``
        after the last record; start waiting."""
        for writer in self.writers:
            writer.broadcast_event(EndOfData(drain))
        checkpointer = self.checkpointer
        last = checkpointer.last_checkpoint_id if checkpointer is not None else -1
        wait = checkpointer is not None and (self.final_checkpoint or savepoint_follows)
        wait = wait and not self.dropping_input  # an unaligned stop's savepoint is the final one
        lifecycle = self.lifecycle
        assert isinstance(lifecycle, Running), lifecycle
        finishing = lifecycle.end_of_data(last, wait, self._early_savepoint)
        if all(g.is_finished for g in self.gates):
            finishing = finishing.all_inputs_ended()
        self.lifecycle = finishing

    def _is_end_of_data(self) -> bool:
        """Input ended (and, with drain, an async head's queue is empty: Flink's
        ``AsyncWaitOperator`` waits for its requests before finishing)."""
        pending = self._head_pending
        if pending is not None and self._drain and pending():
            return False
        return self._end_of_input

    def _may_close(self) -> bool:
        lifecycle = self.lifecycle
        return isinstance(lifecycle, Finishing) and lifecycle.may_close

    def _on_synchronous_savepoint(self, checkpoint_id: int, unaligned: bool = False) -> None:
        """The checkpointer takes the stop's savepoint: do not close before it completed."""
        if unaligned:
            start_dropping(self)
        lifecycle = self.lifecycle
        if isinstance(lifecycle, Finishing):
            self.lifecycle = lifecycle.took_synchronous_savepoint(checkpoint_id)
        elif isinstance(lifecycle, Running):
            self._early_savepoint = checkpoint_id

    def _on_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Called by the checkpointer after the operators were notified (a mail)."""
        lifecycle = self.lifecycle
        if isinstance(lifecycle, Finishing):
            self.lifecycle = lifecycle.checkpoint_complete(checkpoint_id)
        elif self._early_savepoint is not None and checkpoint_id >= self._early_savepoint:
            self._early_savepoint = None

    async def _run_finished(self) -> None:
        """Deployed as finished: no operator runs; end the outputs at once, then wait for
        every input to end (a fully finished operator's predecessors are finished too, so
        only ``EndOfData`` and ``EndOfPartitionEvent`` can arrive)."""
        for writer in self.writers:
            writer.broadcast_event(EndOfData())
        while not all(g.is_finished for g in self.gates):
            if self._cancelled:
                raise TaskCancelled(f"{self.name} was cancelled")
            polled = self._poll()
            if polled is None:
                self._wake.clear()
                if not any(g.has_input() for g in self.gates) and not self._cancelled:
                    await self._wake.wait()
                continue
            gate, channel, payload = polled
            if type(payload) is EndOfPartitionEvent:
                gate.mark_finished(channel)
            elif type(payload) is EndOfChannelStateEvent:
                self._on_end_of_channel_state(gate, channel)
            elif type(payload) is tuple:
                raise StateError(
                    f"{self.name}: operator '{self.vertex.name}' was restored as finished, but "
                    f"{channel.name} delivered records (its producer is not finished)"
                )
            # EndOfData, and barriers of a finished producer: nothing to do
        self.lifecycle = Finished()
        for writer in self.writers:
            writer.broadcast_event(EndOfPartitionEvent())

    async def _loop(
        self, action: Callable[[], None], ready: Callable[[], bool], done: Callable[[], bool]
    ) -> None:
        wake = self._wake
        accounting = self.time_accounting
        while True:
            self._run_mails()
            if self._when_available and self._output_available():
                self._run_when_available()
            if self._priority_events:
                self._process_priority_events()
            if self._cancelled:
                raise TaskCancelled(f"{self.name} was cancelled")
            if done():
                return
            if ready() and self._output_available():
                action()
                await asyncio.sleep(0)
                continue
            wake.clear()
            if self.mailbox or self._cancelled:
                continue
            # Flink's rule: a task that cannot emit is backpressured, whatever its input does
            output = self._output_available()
            if output and ready():
                continue
            accounting.start_wait(backpressured=not output)
            try:
                await wake.wait()
            finally:
                accounting.end_wait()

    def _output_available(self) -> bool:
        for partition in self.partitions:
            if not partition.is_available():
                partition.notify_when_available(self.wake)
                return False
        return True

    # OutputAvailability (timers) ------------------------------------------------------------
    def is_output_available(self) -> bool:
        """Every output can take another buffer (always, while deferred work is drained)."""
        return self._ignore_availability or self._output_available()

    def when_output_available(self, action: Callable[[], None]) -> None:
        """Run ``action`` from the mailbox loop once the output is available again."""
        self._when_available.append(action)
        self._wake.set()

    def slice_deadline(self) -> float:
        """When work started now (a burst of timers) should yield: one slice from now."""
        now = time.perf_counter()
        return now + self.pace.slice_s(now)

    def _run_when_available(self, ignore_availability: bool = False) -> None:
        """Run deferred work while the output is available (all of it if ``ignore_...``)."""
        pending = self._when_available
        self._ignore_availability = ignore_availability
        try:
            while pending and (ignore_availability or self._output_available()):
                pending.popleft()()
        finally:
            self._ignore_availability = False

    def _schedule_flush(self) -> None:
        timeout = self.buffer_timeout_ms
        if timeout <= 0 or not self.writers:
            return

        def flush() -> None:
            for writer in self.writers:
                if writer.has_pending:
                    writer.flush_all()
            self._schedule_flush()

        self.loop.call_later(timeout / 1000.0, self.post, flush)

    def _debloat_estimate_ms(self) -> float | None:
        """Buffer debloating's estimated time to consume the inputs' in-flight buffers."""
        if self.debloater is None:
            return None
        estimate = self.debloater.statistics().estimated_time_to_consume_buffers_ms
        return estimate if estimate >= 0 else None

    def _start_debloating(self) -> None:
        """Measure and announce buffer sizes once per period, as a mail (see
        :mod:`undertow.runtime.network.gate_debloater`), until the inputs end."""
        settings = self._debloat
        if settings is None or not self.gates:
            return
        idle = self.time_accounting.times_ms
        debloater = self.debloater = TaskDebloater(
            self.gates, settings, time.perf_counter() * 1000.0, idle()[2]
        )

        def tick() -> None:
            if self._cancelled or all(g.is_finished for g in self.gates):
                return
            debloater.tick(time.perf_counter() * 1000.0, idle()[2])
            self.loop.call_later(debloater.next_tick_ms() / 1000.0, self.post, tick)

        self.loop.call_later(debloater.next_tick_ms() / 1000.0, self.post, tick)

    def _after_slice(self) -> None:
        if self.buffer_timeout_ms == 0:
            for writer in self.writers:
                writer.flush_all()

    # -- sources ---------------------------------------------------------------------------------
    def _source_ready(self) -> bool:
        return not self._source_waiting

    def _source_slice(self) -> None:
        """Move the reader's pending records into the chain in adaptive chunks, as network
        input, calling the reader again only when nothing is pending, until the slice's time
        is up or the output is unavailable. A reader call itself emits nothing (its output
        becomes pending), so one call never holds the task longer than the reader takes."""
        perf = time.perf_counter
        now = perf()
        slice_s = self.pace.slice_s(now)
        deadline = now + slice_s
        head = self.head
        budget = self.budget
        writers = self.writers if self._debloat is not None else ()
        while True:
            if not head.has_pending():
                if writers:  # debloated outputs: ask the reader for what fits (a soft limit)
                    fits = [n for w in writers if (n := w.records_that_fit()) is not None]
                    head.records_wanted = min(fits) if fits else None
                status = InputStatus.END_OF_INPUT if self._reader_ended else head.emit_next()
                if status is InputStatus.END_OF_INPUT:
                    self._reader_ended = True  # never call a reader again after its end
                    if not head.has_pending():
                        head.end_of_input()
                        self._end_of_input = True
                        break
                if status is InputStatus.NOTHING_AVAILABLE and not head.has_pending():
                    self._source_waiting = True
                    self.loop.call_later(_SOURCE_BACKOFF_S, self._source_retry)
                    break
                if not head.has_pending():
                    if perf() >= deadline:
                        break
                    continue
            k = self._chunk
            if budget is not None:
                fit = budget.begin()
                if fit < k:
                    k = int(fit) if fit >= 1.0 else 1
            t0 = perf()
            emitted = head.emit_pending(k)
            t1 = perf()
            if budget is not None:
                budget.end(emitted)
            self._adapt_chunk(emitted, t1 - t0, slice_s)
            if t1 >= deadline or not self._output_available():
                break
        self._after_slice()

    def _source_retry(self) -> None:
        self._source_waiting = False
        self._wake.set()

    def source_available(self) -> None:
        """A reader said data is available again (``notify_available``)."""
        self._source_waiting = False
        self._wake.set()

    # -- network input ---------------------------------------------------------------------------
    def _build_valves(self) -> None:
        self._valves: dict[int, StatusWatermarkValve] = {}
        self._channel_offset: dict[int, int] = {}
        counts: dict[int, int] = {}
        for gate in self.gates:
            key = gate.input_index if self._two_input else 1
            self._channel_offset[id(gate)] = counts.get(key, 0)
            counts[key] = counts.get(key, 0) + len(gate.channels)
        for key, count in counts.items():
            self._valves[key] = StatusWatermarkValve(count)
        self._input_watermarks = {key: MIN_TIMESTAMP for key in counts}
        self._last_watermark = MIN_TIMESTAMP
        self._idle = False

    def _input_ready(self) -> bool:
        room = self._head_room
        if room is not None and room() <= 0:
            return False
        return (
            self._current is not None
            or bool(self._restored_input)
            or any(g.has_input() for g in self.gates)
        )

    def _process_priority_events(self) -> None:
        """Take every queued priority event (unaligned barrier, announcement) ahead of data."""
        for gate in self.gates:
            if not gate.has_priority_event():
                continue
            while (polled := gate.poll_priority()) is not None:
                self._on_event(gate, polled[0], polled[1])

    def unprocessed_chunks(self, channel: InputChannel) -> list[bytes]:
        """Channel-state chunks of what the task took from ``channel`` and has not processed:
        the rest of the current batch, then restored batches still pending (stream order)."""
        chunks = []
        current = self._current
        if current is not None and current[1] is channel and current[4] < len(current[2]):
            pos = current[4]
            stamps = None if current[3] is None else current[3][pos:]
            chunks.append(encode_chunk(Buffer(serialize_batch(current[2][pos:], stamps))))
        for _, ch, values, stamps in self._restored_input:
            if ch is channel:
                chunks.append(encode_chunk(Buffer(serialize_batch(values, stamps))))
        return chunks

    def _restore_channel_state(self, snapshots: list[SubtaskSnapshot]) -> None:
        """Queue restored output buffers; turn restored input into pending batches."""
        states = [s.channel_state for s in snapshots if getattr(s, "channel_state", None)]
        if not states:
            return
        state = states[0]
        assert state is not None
        self._check_channel_state_shape(state, len(snapshots))
        for (output, subpartition), chunks in sorted(state.outputs.items()):
            sp = self.partitions[output].subpartitions[subpartition]
            sp.add_buffers([decode_chunk(c) for c in chunks])
        for (gate_index, channel_index), chunks in sorted(state.inputs.items()):
            gate = self.gates[gate_index]
            channel = gate.channels[channel_index]
            for chunk in chunks:
                batch = channel.deserializer.add(decode_chunk(chunk))
                if batch is not None:
                    self._restored_input.append((gate, channel, batch[0], batch[1]))

    def _reemit_channel_state(self) -> None:
        """Rescaled restore: emit the records of the old channels this subtask took over
        through their edges' record writers (each old channel deserialized over its chunks in
        stream order), then end each rescaled output with a blocking
        ``EndOfChannelStateEvent``. Runs once, before any operator; not bounded by the
        output budget (like restored in-place output)."""
        reemit, self.reemit = self.reemit, []
        for output, chunks, where in reemit:
            writer = self.writers[output]
            try:
                for values, stamps in channel_records(chunks, where):
                    writer.emit(values, stamps)
            except ValueError as err:
                raise RestoreError(
                    f"{self.name}: cannot re-emit the in-flight data of operator "
                    f"'{self.output_operators[output]}': {err}"
                ) from err
        for output in sorted(self.recovery_outputs):
            self.writers[output].broadcast_event(EndOfChannelStateEvent(), blocks=True)

    def _on_end_of_channel_state(self, gate: InputGate, channel: InputChannel) -> None:
        """A producer finished re-emitting on ``channel`` (which is now blocked); once every
        channel of the gate did, resume them all: live data may flow."""
        done = self._recovered_channels.setdefault(id(gate), set())
        done.add(channel.index)
        if len(done) == len(gate.channels):
            del self._recovered_channels[id(gate)]
            for ch in gate.channels:
                ch.resume_consumption()
            self.recovering_gates.discard(self.gates.index(gate))
            callback = self.on_channel_state_recovered
            if not self.recovering_gates and callback is not None:
                self.on_channel_state_recovered = None
                callback()

    def _check_channel_state_shape(self, state: ChannelState, num_snapshots: int) -> None:
        gates = tuple(len(g.channels) for g in self.gates)
        subpartitions = tuple(len(p.subpartitions) for p in self.partitions)
        taken = (state.subtask_index, state.parallelism, state.gate_channels, state.subpartitions)
        now = (self.subtask_index, self.vertex.parallelism, gates, subpartitions)
        if num_snapshots == 1 and taken == now:
            return
        raise StateError(
            f"{self.name}: checkpoint {state.checkpoint_id} holds in-flight data (unaligned "
            f"channel state) of operator '{self.vertex.name}' taken at parallelism "
            f"{state.parallelism} with {state.gate_channels} input channels per gate and "
            f"{state.subpartitions} subpartitions per output; it cannot be restored in "
            f"place at parallelism {self.vertex.parallelism} with {gates} and "
            f"{subpartitions} (the restore plan should have re-emitted it through the "
            f"producers)"
        )

    def _poll(self) -> tuple[InputGate, InputChannel, Any] | None:
        gates = self.gates
        n = len(gates)
        for i in range(n):
            gate = gates[(self._gate_rr + i) % n]
            item = gate.poll()
            if item is not None:
                self._gate_rr = (self._gate_rr + i + 1) % n
                return gate, item[0], item[1]
        return None

    def _input_slice(self) -> None:
        perf = time.perf_counter
        now = perf()
        slice_s = self.pace.slice_s(now)
        deadline = now + slice_s
        head = self.head
        two = self._two_input
        priority = self._priority_events
        gates = self.gates
        budget = self.budget
        while True:
            if priority and any(g.has_priority_event() for g in gates):
                self._process_priority_events()
                if self._end_of_input:
                    break
            if self.dropping_input:  # an unaligned stop's savepoint holds the rest
                drop_input(self)
                break
            current = self._current
            if current is None:
                if self._restored_input:  # restored input goes before any live input
                    gate, channel, values, stamps = self._restored_input.popleft()
                    self._current = current = [gate, channel, values, stamps, 0, True]
                else:
                    polled = self._poll()
                    if polled is None:
                        break
                    gate, channel, payload = polled
                    if type(payload) is tuple:
                        if self._data_ended and (id(gate), channel.index) in self._data_ended:
                            self._records_after_end_of_data(channel)
                        self._current = current = [gate, channel, payload[0], payload[1], 0, False]
                    else:
                        self._on_event(gate, channel, payload)
                        if self._end_of_input or not self._output_available():
                            break  # a watermark's timers may have filled the output
                        continue
            gate, channel, values, stamps, pos, restored = current
            n = len(values)
            k = self._chunk
            if budget is not None:
                fit = budget.begin()
                if fit < k:
                    k = int(fit) if fit >= 1.0 else 1
            if self._head_room is not None:
                k = max(1, min(k, self._head_room()))
            t0 = perf()
            if pos == 0 and k >= n:
                chunk, cstamps, pos = values, stamps, n
            else:
                end = min(n, pos + k)
                chunk = values[pos:end]
                cstamps = None if stamps is None else stamps[pos:end]
                pos = end
            if two:
                if gate.input_index == 1:
                    head.process_batch1(chunk, cstamps)
                else:
                    head.process_batch2(chunk, cstamps)
            else:
                head.process_batch(chunk, cstamps)
            t1 = perf()
            self.records_in += len(chunk)
            if not restored:
                gate.note_processed(len(chunk))
            if budget is not None:
                budget.end(len(chunk))
            self._adapt_chunk(len(chunk), t1 - t0, slice_s)
            if pos >= n:
                self._current = None
                if not restored:
                    gate.release(channel)
            else:
                current[4] = pos
            if t1 >= deadline or not self._output_available():
                break
            if self._head_room is not None and self._head_room() <= 0:
                break
        self._after_slice()

    def _adapt_chunk(self, count: int, elapsed: float, slice_s: float) -> None:
        target = slice_s / 4
        if elapsed <= 0:
            self._chunk = min(_MAX_CHUNK, self._chunk * 2)
            return
        per_record = elapsed / count
        self._chunk = max(_MIN_CHUNK, min(_MAX_CHUNK, int(target / per_record)))

    def _on_event(self, gate: InputGate, channel: InputChannel, event: Any) -> None:
        key = gate.input_index if self._two_input else 1
        valve = self._valves[key]
        index = self._channel_offset[id(gate)] + channel.index
        if type(event) is WatermarkEvent:
            self._on_valve_watermark(key, valve.input_watermark(event.timestamp, index))
        elif type(event) is WatermarkStatusEvent:
            self._on_valve_status(key, *valve.input_idle(index, event.idle))
        elif type(event) is CheckpointBarrier:
            if self.checkpointer is None:
                raise RuntimeError(f"{self.name}: checkpoint barrier without a checkpointer")
            self.checkpointer.on_barrier(channel, event)
        elif type(event) is BarrierAnnouncement:
            if self.checkpointer is not None:
                self.checkpointer.on_announcement(channel, event)
        elif type(event) is CancelCheckpointMarker:
            if self.checkpointer is not None:
                self.checkpointer.on_cancel_marker(channel, event)
        elif type(event) is EndOfData:
            if not event.drain:
                self._drain = False
            self._on_channel_data_ended(gate, channel, key, valve, index)
        elif type(event) is EndOfChannelStateEvent:
            self._on_end_of_channel_state(gate, channel)
        elif type(event) is EndOfPartitionEvent:
            gate.mark_finished(channel)
            if self.checkpointer is not None:
                self.checkpointer.on_end_of_partition(channel)
            self._on_channel_data_ended(gate, channel, key, valve, index)
            lifecycle = self.lifecycle
            if isinstance(lifecycle, Finishing) and all(g.is_finished for g in self.gates):
                self.lifecycle = lifecycle.all_inputs_ended()
        else:
            raise TypeError(f"{self.name}: unexpected event {event!r} on {channel.name}")

    def _on_channel_data_ended(
        self, gate: InputGate, channel: InputChannel, key: int, valve: StatusWatermarkValve,
        index: int,
    ) -> None:  # fmt: skip
        """No more records on ``channel``: its watermark goes to MAX; when every channel
        ended, the task's data ended. After a stop without drain no watermark moves (timers
        must not fire after the savepoint's state)."""
        ended = (id(gate), channel.index)
        if ended in self._data_ended:
            return  # EndOfData, then its end of partition
        self._data_ended.add(ended)
        if self._drain:
            self._on_valve_status(key, *valve.end_of_input(index))
        if len(self._data_ended) == self._num_channels:
            self._end_of_input = True

    def _records_after_end_of_data(self, channel: InputChannel) -> None:
        raise StateError(
            f"{self.name}: operator '{self.vertex.name}' received records on {channel.name} "
            "after EndOfData (its producer sent records after finishing)"
        )

    def _on_valve_watermark(self, key: int, watermark: int | None) -> None:
        if watermark is None:
            return
        self._input_watermarks[key] = watermark
        combined = min(self._input_watermarks.values())
        if combined > self._last_watermark:
            self._last_watermark = combined
            self.head.process_watermark(combined)

    def _on_valve_status(self, key: int, watermark: int | None, idle: bool | None) -> None:
        """Becoming active: status first, then the watermark; becoming idle: the reverse."""
        if idle is False:
            self._on_valve_idle(idle)
        self._on_valve_watermark(key, watermark)
        if idle is True:
            self._on_valve_idle(idle)

    def _on_valve_idle(self, idle: bool | None) -> None:
        if idle is None or idle == self._idle:
            return
        self._idle = idle
        self.head.output.emit_watermark_status(idle)

    def current_watermark(self) -> int:
        """The last watermark this task passed on (a source: the last one it emitted)."""
        emitter = getattr(self.head, "emitter", None)
        if self.chain.is_source and emitter is not None:
            watermark: int = emitter.last_watermark
            return watermark
        return self._last_watermark

    # -- diagnostics -----------------------------------------------------------------------------
    def operator_of(self, tb: TracebackType | None) -> str:
        """The name of the deepest operator of this chain found in a traceback."""
        name = self.vertex.operators[0].name
        ops = {id(op): op for op in self.chain.operators}
        for frame, _ in traceback.walk_tb(tb):
            candidate = frame.f_locals.get("self")
            if id(candidate) in ops:
                name = ops[id(candidate)].name
        return name
