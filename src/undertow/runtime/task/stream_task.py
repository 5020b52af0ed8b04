"""A subtask: its chain, lifecycle and checkpointer, run by a mailbox loop.

The task composes the pieces (built from its :class:`TaskDeployment`): the
:class:`~undertow.runtime.task.mailbox_loop.MailboxLoop` runs the
:class:`~undertow.runtime.task.input_processor.StreamInputProcessor`'s slices with mails in
between; the :class:`~undertow.runtime.task.event_dispatch.EventDispatcher` handles input
events; the task executes the lifecycle of :mod:`undertow.runtime.task.lifecycle` (run until
the data ends, end it, wait for the final checkpoint and the inputs' ends, close) and restores
channel state before any operator runs.

Threading: everything on its worker's loop (``post_threadsafe`` from anywhere).
Lifecycle: built once per attempt; ``run`` once; ``cancel`` at any time.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

from undertow.core.errors import StateError
from undertow.runtime.checkpoint import channel_recovery
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.channel_recovery.stream import RestItem
from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.runtime.network.buffer_debloater import DebloatSettings
from undertow.runtime.network.gate_debloater import TaskDebloater
from undertow.runtime.task import periodic_work
from undertow.runtime.task.chain import OperatorChain
from undertow.runtime.task.checkpoint_io import CheckpointIO, CheckpointListeners
from undertow.runtime.task.checkpointing import SubtaskCheckpointer
from undertow.runtime.task.context import LoopProcessingTimeService, user_metric_values
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.event_dispatch import EventDispatcher
from undertow.runtime.task.events import EndOfChannelStateEvent, EndOfData, EndOfPartitionEvent
from undertow.runtime.task.input_processor import StreamInputProcessor
from undertow.runtime.task.lifecycle import (
    Finished,
    FinishedOnRestore,
    Finishing,
    Running,
    TaskLifecycle,
    initial_lifecycle,
)
from undertow.runtime.task.mailbox_loop import MailboxLoop, TaskCancelled
from undertow.runtime.task.operator import (
    BoundedInput,
    StreamOperator,
    TaskServices,
    TwoInputStreamOperator,
)
from undertow.runtime.task.output_budget import OutputBudget, overdraft_warning
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.settings import TaskSettings
from undertow.runtime.task.source_operator import SourceOperator
from undertow.runtime.task.task_statistics import TaskStatistics, TaskTimeAccounting
from undertow.runtime.task.unaligned_stop import start_dropping

__all__ = ["StreamTask", "TaskCancelled", "TaskStatistics", "TaskTimeAccounting"]

log = logging.getLogger(__name__)


def _nothing() -> None:
    pass


def _never() -> bool:
    return False


class StreamTask:
    """One subtask (see the module docstring). It implements the checkpointer's
    ``TaskInput``, the event dispatch's ``LifecycleEvents`` and the worker's ``TaskControl``
    (:mod:`undertow.runtime.worker.control_router`: the "control" methods below, each of which
    posts a mail); the worker calls ``run``, the control methods, ``statistics`` and
    ``user_metrics``, all on its loop."""

    def __init__(
        self,
        *,
        deployment: TaskDeployment,
        services: TaskServices,
        loop: asyncio.AbstractEventLoop,
        pace: TaskPace | None = None,
        checkpoint_io: CheckpointIO | None = None,
        on_channel_state_recovered: Callable[[], None] | None = None,
    ) -> None:
        """Build the subtask's chain (and, with ``checkpoint_io``, its checkpointer) from
        ``deployment``. ``pace``: the worker's shared slice pace (default: one of its own).
        ``on_channel_state_recovered``: called once every gate of
        ``deployment.channel_recovery.recovering_gates`` ended its re-emitted channel state
        and, if ``reports_restored_input``, the restored input was consumed."""
        vertex = deployment.vertex
        config = deployment.config
        #: The task's options, read once (:mod:`.settings`).
        self.settings = settings = TaskSettings.of(config)
        self.deployment = deployment
        self.vertex = vertex
        self.subtask_index = deployment.subtask_index
        self.name = deployment.name
        self.loop = loop
        self.gates = list(deployment.gates)
        self.writers = deployment.record_writers
        self.partitions = [w.partition for w in self.writers]
        self.pace = pace if pace is not None else TaskPace.of_settings(settings)
        self.buffer_timeout_ms = vertex.buffer_timeout
        #: The mailbox and its loop; also the timers' OutputAvailability.
        self.mailbox = MailboxLoop(name=self.name, loop=loop, partitions=self.partitions,
                                   pace=self.pace)  # fmt: skip
        self.pts = LoopProcessingTimeService(loop, self.mailbox.post)
        self.chain = OperatorChain(
            vertex, self.subtask_index, deployment.attempt, config, dict(deployment.writers),
            services, self.pts, dict(settings.job_parameters),
            output_availability=self.mailbox, settings=settings,
        )  # fmt: skip
        self.mailbox.gate_on(self.chain.operators)  # a collect sink's credit
        #: Operator feeding each output (for messages), in ``self.writers`` order.
        self.output_operators = [
            self.chain.output_operators.get(edge_id, vertex.name) for edge_id in deployment.writers
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
                settings.max_overdraft_buffers_per_gate,
                self._on_overdraft_exceeded,
            )
        self.head = self.chain.head
        #: A head that must drain before ``finish()`` (async I/O: its in-flight requests).
        self._head_pending: Callable[[], bool] | None = (
            self.head.has_pending_work if isinstance(self.head, BoundedInput) else None
        )
        self.restored: list[SubtaskSnapshot] | None = list(deployment.restored) or None
        self.lifecycle: TaskLifecycle = initial_lifecycle(deployment.finished_on_restore)
        #: Wait for a final checkpoint after EndOfData (FLIP-147) before closing.
        self.final_checkpoint = settings.final_checkpoint
        #: The old channels of a rescaled restore were re-emitted (``deployment.reemit``).
        self._reemitted = False
        #: Tells the JobMaster the data ended and the final checkpoint is awaited (FLINK-28386).
        self._report_end_of_data = None if checkpoint_io is None else checkpoint_io.end_of_data
        #: The checkpoint side of this subtask; None without ``checkpoint_io``.
        self.checkpointer: SubtaskCheckpointer | None = None
        if checkpoint_io is not None:
            self.checkpointer = SubtaskCheckpointer.of(
                deployment, chain=self.chain, task=self, io=checkpoint_io, pace=self.pace,
                listeners=CheckpointListeners(
                    current_watermark=self.current_watermark,
                    on_complete=self._on_checkpoint_complete,
                    on_synchronous_savepoint=self._on_synchronous_savepoint,
                    debloat_estimate=self._debloat_estimate_ms,
                ),
                settings=settings,
            )  # fmt: skip
        two_input = isinstance(self.head, TwoInputStreamOperator)
        recovery = deployment.channel_recovery
        countdown = channel_recovery.RecoveryCountdown(
            bool(recovery.recovering_gates) + recovery.reports_restored_input,
            on_channel_state_recovered,
        )
        self.events = EventDispatcher(
            name=self.name, operator_name=vertex.name, gates=self.gates, head=self.head,
            two_input=two_input, checkpointer=self.checkpointer, lifecycle=self,
            recovery=channel_recovery.UpstreamRecoveryTracker(
                recovery.recovering_gates, countdown.part_done
            ),
        )  # fmt: skip
        #: Unaligned checkpoints: priority events may overtake data.
        self._priority_events = (
            self.checkpointer is not None and self.checkpointer.unaligned_enabled
        )
        self.input = StreamInputProcessor(
            gates=self.gates, head=self.head, two_input=two_input,
            priority_events=self._priority_events, events=self.events, writers=self.writers,
            budget=self.budget, pace=self.pace, output_available=self.mailbox.output_available,
            buffer_timeout_ms=self.buffer_timeout_ms, debloated=self._debloat is not None,
            loop_call_later=loop.call_later, wake=self.mailbox.wake,
            input_held=self.mailbox.input_held,
            on_restored_input_consumed=(
                countdown.part_done if recovery.reports_restored_input else None
            ),
            key_selectors=(self.head.ctx.state_key_selector1, self.head.ctx.state_key_selector2),
            cut_batches=all(  # a source cuts its own pending batches
                isinstance(op, StreamOperator) and op.takes_row_ranges
                for op in self.chain.operators[1 if self.chain.is_source else 0 :]
            ),
        )  # fmt: skip
        for gate in self.gates:
            gate.set_listener(self.mailbox.wake)

    # -- mailbox ---------------------------------------------------------------------------------
    def post(self, mail: Callable[[], None]) -> None:
        self.mailbox.post(mail)

    def post_threadsafe(self, mail: Callable[[], None]) -> None:
        self.mailbox.post_threadsafe(mail)

    def cancel(self) -> None:
        self.mailbox.cancel()

    # -- control (the worker's TaskControl; loop thread, each posts a mail) ---------------------
    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> bool:
        """Post a source trigger; ``False`` (and nothing posted) if this task has no
        checkpointer or already finished: its ``TaskFinished`` makes the JobMaster count it as
        acknowledged (FLIP-147), so the trigger is dropped."""
        checkpointer = self.checkpointer
        if checkpointer is None or isinstance(self.lifecycle, Finished):
            return False
        self.post(functools.partial(checkpointer.trigger_checkpoint, barrier))
        return True

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Post the completion of ``checkpoint_id`` to the checkpointer (if there is one)."""
        checkpointer = self.checkpointer
        if checkpointer is not None:
            self.post(functools.partial(checkpointer.notify_checkpoint_complete, checkpoint_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Post the abort of ``checkpoint_id`` to the checkpointer (if there is one)."""
        checkpointer = self.checkpointer
        if checkpointer is not None:
            self.post(functools.partial(checkpointer.notify_checkpoint_aborted, checkpoint_id))

    def add_splits(self, splits: list[Any]) -> None:
        """Post splits the enumerator assigned to this source subtask's reader."""
        self.post(functools.partial(self.head.add_splits, splits))

    def no_more_splits(self) -> None:
        """Post that the enumerator has no more splits for this source subtask."""
        self.post(self.head.no_more_splits)

    def stop_with_savepoint(self, drain: bool) -> None:
        """Post :meth:`stop_source` (stop with savepoint; its trigger follows)."""
        self.post(functools.partial(self.stop_source, drain))

    def user_metrics(self) -> dict[str, float]:
        """The chain's user metrics, ``"<operator>.<identifier>"`` -> value."""
        return user_metric_values(self.chain.operators)

    def source_available(self) -> None:
        """A reader said data is available again (``notify_available``)."""
        self.input.source_available()

    def unprocessed_chunks(self, channel: object) -> list[bytes]:
        """See :meth:`StreamInputProcessor.unprocessed_chunks` (for the checkpointer)."""
        return self.input.unprocessed_chunks(channel)

    def restored_rest(self, channel: object) -> list[RestItem]:
        """See :meth:`StreamInputProcessor.restored_rest` (for the checkpointer)."""
        return self.input.restored_rest(channel)

    @property
    def records_in(self) -> int:
        return self.input.records_in

    def accumulators(self) -> dict[str, Any]:
        """The job accumulators its operators added (a copy; read once the task finished)."""
        return dict(self.chain.accumulators)

    def counters(self) -> dict[str, int]:
        """The runtime's counters its operators added (a copy; read once the task finished)."""
        return dict(self.chain.counters)

    def statistics(self) -> TaskStatistics:
        """Records, bytes and time split since ``run`` started (see :class:`TaskStatistics`)."""
        busy, backpressured, idle = self.mailbox.time_accounting.times_ms()
        return TaskStatistics(
            records_in=self.input.records_in,
            records_out=sum(w.records_out for w in self.writers),
            bytes_out=sum(w.bytes_out for w in self.writers),
            busy_ms=busy,
            backpressured_ms=backpressured,
            idle_ms=idle,
            max_overdraft_buffers=max((p.max_overdraft_seen for p in self.partitions), default=0),
            overdraft_exceeded=self.budget.exceeded if self.budget is not None else 0,
            input_watermark=self.current_watermark(),
            debloat=self.debloater.statistics() if self.debloater is not None else None,
            buffers_in=sum(g.buffers_consumed for g in self.gates),
            buffers_out=sum(w.buffers_out for w in self.writers),
            buffer_sizes_received=sum(w.buffer_sizes_received for w in self.writers),
        )

    def _on_overdraft_exceeded(self, output: int, units: int, drawn: int, room: int) -> None:
        """The first unit of work whose output went past the free buffers plus the overdraft:
        one warning per task (:func:`overdraft_warning`); the budget counts the rest."""
        assert self.budget is not None
        subtask = f"{self.subtask_index + 1}/{self.vertex.parallelism}"
        log.warning("%s", overdraft_warning(
            self.name, self.output_operators[output], subtask, self.partitions[output].name,
            units, drawn, room, self.budget.overdraft,
        ))  # fmt: skip

    # -- lifecycle -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Run until the end (bounded input, after the final checkpoint) or cancellation;
        raises what failed the task. The lifecycle is in the module docstring."""
        self.mailbox.restart_time_accounting()
        if not self._reemitted:  # once, before any operator
            self._reemitted = True
            channel_recovery.reemit(self.deployment, self.writers, self.output_operators)
        if isinstance(self.lifecycle, FinishedOnRestore):
            await self._run_finished()
            return
        try:
            if self.restored:
                self.chain.restore(self.restored)
                channel_recovery.restore_in_place(
                    self.deployment, self.restored, self.partitions, self.input.add_restored_input
                )
                self.restored = None
            self.chain.open()
            periodic_work.schedule_flush(self.loop, self.post, self.writers,
                                         self.buffer_timeout_ms)  # fmt: skip
            periodic_work.flush_when_idle(self.mailbox, self.writers, self.buffer_timeout_ms,
                                          self.settings.flush_when_idle)  # fmt: skip
            if self._debloat is not None and self.gates:
                self.debloater = periodic_work.start_debloating(
                    self.loop, self.post, self.mailbox, self.gates, self._debloat
                )
            source = self.chain.is_source
            priority = self.input.process_priority_events if self._priority_events else None
            if source:
                action, ready = self.input.source_slice, self.input.source_ready
            else:
                action, ready = self.input.input_slice, self.input.ready
            await self.mailbox.run(action, ready, self._is_end_of_data, priority)
            lifecycle = self.lifecycle
            if isinstance(lifecycle, Running):  # not already ended by ``stop_source``
                self._finish_and_end_data(lifecycle.drain)
            if source:
                action, ready = _nothing, _never
            await self.mailbox.run(action, ready, self._may_close, priority)
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
        if not self.chain.is_source or not isinstance(self.lifecycle, Running):
            return
        if drain:
            self.head.end_of_input()
        self.input.end_source_input()
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
            # due timers fire before finish
            self.mailbox.run_when_available(ignore_availability=True)
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
        # an unaligned stop's savepoint is the final one
        wait = wait and not self.input.dropping_input
        lifecycle = self.lifecycle
        assert isinstance(lifecycle, Running), lifecycle
        finishing = lifecycle.end_of_data(last, wait, drain)
        if wait and not savepoint_follows and self._report_end_of_data is not None:
            self._report_end_of_data()  # a stop's savepoint is triggered already
        if all(g.is_finished for g in self.gates):
            finishing = finishing.all_inputs_ended()
        self.lifecycle = finishing

    def _is_end_of_data(self) -> bool:
        """Input ended (and, with drain, an async head's queue is empty: Flink's
        ``AsyncWaitOperator`` waits for its requests before finishing)."""
        if self.mailbox.input_held():  # the timers of a watermark (the MAX one, too) go on
            return False
        pending = self._head_pending
        if pending is not None and self.drains() and pending():
            return False
        return self.input.end_of_input

    def _may_close(self) -> bool:
        lifecycle = self.lifecycle
        return isinstance(lifecycle, Finishing) and lifecycle.may_close

    def _on_synchronous_savepoint(self, checkpoint_id: int, unaligned: bool = False) -> None:
        """The checkpointer takes the stop's savepoint: do not close before it completed."""
        if unaligned:
            start_dropping(self.chain, self.input)
        lifecycle = self.lifecycle
        if isinstance(lifecycle, (Running, Finishing)):
            self.lifecycle = lifecycle.took_synchronous_savepoint(checkpoint_id)

    def _on_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Called by the checkpointer after the operators were notified (a mail)."""
        lifecycle = self.lifecycle
        if isinstance(lifecycle, (Running, Finishing)):
            self.lifecycle = lifecycle.checkpoint_complete(checkpoint_id)

    # LifecycleEvents (event dispatch) -------------------------------------------------------
    def drains(self) -> bool:
        """Whether the data ends (or ended) with drain: not after ``EndOfData(drain=False)``."""
        lifecycle = self.lifecycle
        return not isinstance(lifecycle, (Running, Finishing)) or lifecycle.drain

    def input_ended_without_drain(self) -> None:
        lifecycle = self.lifecycle
        if isinstance(lifecycle, Running):
            self.lifecycle = lifecycle.input_ended_without_drain()

    def inputs_finished(self) -> None:
        lifecycle = self.lifecycle
        if isinstance(lifecycle, Finishing):
            self.lifecycle = lifecycle.all_inputs_ended()

    async def _run_finished(self) -> None:
        """Deployed as finished: no operator runs; end the outputs at once, then wait for
        every input to end (a fully finished operator's predecessors are finished too, so
        only ``EndOfData`` and ``EndOfPartitionEvent`` can arrive)."""
        for writer in self.writers:
            writer.broadcast_event(EndOfData())
        mailbox, gates = self.mailbox, self.gates
        while not all(g.is_finished for g in gates):
            mailbox.check_cancelled()
            polled = self.input.poll()
            if polled is None:
                await mailbox.wait_for_wake(lambda: any(g.has_input() for g in gates))
                continue
            gate, channel, payload = polled
            if type(payload) is EndOfPartitionEvent:
                gate.mark_finished(channel)
            elif type(payload) is EndOfChannelStateEvent:
                self.events.on_end_of_channel_state(gate, channel)
            elif type(payload) is tuple:
                raise StateError(
                    f"{self.name}: operator '{self.vertex.name}' was restored as finished, but "
                    f"{channel.name} delivered records (its producer is not finished)"
                )
            # EndOfData, and barriers of a finished producer: nothing to do
        lifecycle = self.lifecycle
        assert isinstance(lifecycle, FinishedOnRestore), lifecycle
        self.lifecycle = lifecycle.all_inputs_ended()
        for writer in self.writers:
            writer.broadcast_event(EndOfPartitionEvent())

    # -- periodic work -------------------------------------------------------------------------
    def _debloat_estimate_ms(self) -> float | None:
        """Buffer debloating's estimated time to consume the inputs' in-flight buffers."""
        if self.debloater is None:
            return None
        estimate = self.debloater.statistics().estimated_time_to_consume_buffers_ms
        return estimate if estimate >= 0 else None

    def current_watermark(self) -> int:
        """The last watermark this task passed on (a source: the last one it emitted)."""
        head = self.head
        if isinstance(head, SourceOperator):
            emitted = head.last_watermark()
            if emitted is not None:
                return emitted
        return self.events.last_watermark

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
