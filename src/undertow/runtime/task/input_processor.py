"""A subtask's input processing: one slice of records from its gates, or from its source.

A slice takes priority events first (unaligned barriers overtake data), then batches from
the gates round-robin (restored input before any live input) and hands them to the head in
adaptive chunks, until the slice's time is up, the output is unavailable, or an event ends
the input; a chain of batch operators gets record batches one at a time, large ones cut by
rows (:mod:`.current_batch`, sized by :mod:`.row_cuts`). The unprocessed rest of a batch (and
of a record batch) stays in the :class:`~.current_batch.CurrentBatch`; it is part of its
channel's state if an unaligned checkpoint starts (ARCHITECTURE.md §3). A source subtask's
slice moves its reader's pending records instead, record batches among them cut by rows the
same way.

Threading: the task's loop thread only. Lifecycle: built with its task; a slice runs from the
mailbox loop, which calls it only when :meth:`ready` and the output is available.
Cost: one clock read per chunk; chunks are sized by :mod:`.chunk_size`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from undertow.connectors.source import InputStatus
from undertow.runtime.checkpoint.channel_recovery.stream import RestItem, RestoredInputStream
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.chunk_size import ChunkSizer
from undertow.runtime.task.current_batch import CurrentBatch, emit_source_rows
from undertow.runtime.task.event_dispatch import EventDispatcher
from undertow.runtime.task.operator import BoundedInput
from undertow.runtime.task.output_budget import OutputBudget
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.restored_input import RestoredInput
from undertow.runtime.task.row_cuts import RowCutter
from undertow.runtime.task.unaligned_stop import drop_input
from undertow.state.key_groups import selector_failure

#: A reader that said ``NOTHING_AVAILABLE`` is asked again after its ``poll_again_after_s()``
#: even if it did not notify (5 ms by default; a fallback for readers that may not notify). At
#: most one back-off timer is pending per source. Until 2026-11-30 every empty poll started
#: one, and a timer that found nothing started the next, so each fetch a reader notified began
#: another chain of polls every 5 ms (docs/kafka.md, "Fifth session").


class StreamInputProcessor:
    """Feeds one subtask's head from its input gates or its source reader."""

    def __init__(
        self,
        *,
        gates: Sequence[InputGate],
        head: Any,
        two_input: bool,
        priority_events: bool,
        events: EventDispatcher,
        writers: Sequence[RecordWriter],
        budget: OutputBudget | None,
        pace: TaskPace,
        output_available: Callable[[], bool],
        buffer_timeout_ms: int,
        debloated: bool,
        loop_call_later: Callable[[float, Callable[[], None]], object],
        wake: Callable[[], None],
        input_held: Callable[[], bool] = lambda: False,
        on_restored_input_consumed: Callable[[], None] | None = None,
        cut_batches: bool = False,
        key_selectors: tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None] = (
            None,
            None,
        ),
    ) -> None:
        self.gates = list(gates)
        self.head = head
        #: The head's key selectors of inputs 1 and 2 (keyed inputs), to tell a selector's
        #: failure from the operator's when a chunk fails (:func:`selector_failure`).
        self.key_selectors = key_selectors
        self.two_input = two_input
        #: Priority events (unaligned barriers) may arrive: look for them between chunks.
        self.priority_events = priority_events
        self.events = events
        self.writers = writers
        self.budget = budget
        self.pace = pace
        self.output_available = output_available
        self.buffer_timeout_ms = buffer_timeout_ms
        #: Flink's output flusher sends partly filled buffers every buffer timeout even while
        #: the task is busy; the task's own flush is a mail, which waits for the slice. So a
        #: chunk that alone took the buffer timeout or longer (a slow function) flushes at the
        #: slice's end: what the chain emitted before it has waited that long already.
        self._slow_chunk_s = buffer_timeout_ms / 1000.0 if buffer_timeout_ms > 0 else None
        self._flush_due = False
        #: Debloated outputs: a source reader is asked for what fits.
        self._debloated = debloated
        self._call_later = loop_call_later
        self._wake = wake
        #: An operator holds the input (a watermark's timers still fire): take nothing more.
        self.input_held = input_held
        #: A head with bounded room for input (async I/O: capacity): chunks are cut to its
        #: room, and no input is taken while it has none.
        self.head_room: Callable[[], int] | None = (
            head.input_room if isinstance(head, BoundedInput) else None
        )
        self.records_in = 0
        #: The head's chain takes row ranges of record batches (:mod:`.row_cuts`): a record
        #: batch is handed over alone, cut by rows when it would overrun the slice.
        self.cut_batches = cut_batches
        self._rows = RowCutter()
        #: After an unaligned stop's savepoint: input is dropped (:mod:`.unaligned_stop`).
        self.dropping_input = False
        self.records_dropped = 0
        #: Records per chunk: a quarter of a slice at the cost measured, regrowing by
        #: doubling, starting at one record (:mod:`.chunk_size`).
        self._chunks = ChunkSizer()
        self._current: CurrentBatch | None = None
        #: Restored input not yet processed, in order: channels' restored streams, and batches
        #: (gate, channel, values, timestamps, recovered) of gates that drain re-emitted data
        #: (:meth:`drain_recovered`).
        self._restored_input = RestoredInput()
        #: Called once, when the restored input was consumed (the first slice after it; a
        #: subtask that restored none calls it in its first slice).
        self._on_restored_consumed = on_restored_input_consumed
        self._gate_rr = 0
        #: A source's input ended (its reader, or a stop).
        self._source_ended = False
        self._source_waiting = False
        #: The back-off timer after ``NOTHING_AVAILABLE`` is pending (at most one at a time).
        self._backing_off = False
        self._reader_ended = False

    @property
    def end_of_input(self) -> bool:
        """No more input: every channel ended its data, or the source ended."""
        return self._source_ended or self.events.all_data_ended

    def end_source_input(self) -> None:
        """A source stops reading (its end, or a stop with savepoint)."""
        self._source_ended = True

    # -- network input ---------------------------------------------------------------------------
    def ready(self) -> bool:
        room = self.head_room
        if room is not None and room() <= 0:
            return False
        return (
            self._current is not None
            or bool(self._restored_input)
            or self._may_report_restored_consumed()  # a slice reports it
            or any(g.has_input() for g in self.gates)
        )

    def add_restored_input(
        self, gate: InputGate, channel: InputChannel, stream: RestoredInputStream,
        recovered: bool = False,
    ) -> None:  # fmt: skip
        """A channel's restored input channel state: decoded lazily and processed before any
        live input. ``recovered``: recovered input (see :class:`CurrentBatch`)."""
        self._restored_input.add_stream(gate, channel, stream, recovered)

    def drain_recovered(self) -> None:
        """Move what the gates still recovering from a rescaled restore delivered (records
        the producers re-emitted, up to each channel's ``EndOfChannelStateEvent``) into the
        restored input, unprocessed, returning each buffer at once: the re-emitted data
        crosses the network at its pace, not at the task's, so the gates end their recovery,
        and checkpoints may be triggered, long before the records are processed
        (``during-recovery.enabled``). They stay ahead of every live record of the gate
        (which follows the end events); a checkpoint meanwhile persists the ones not yet
        processed as recovered input. Cost: nothing once no gate recovers."""
        recovery = self.events.recovery
        if not recovery.is_recovering:
            return
        restored, on_event = self._restored_input, self.events.on_event
        for index in sorted(recovery.recovering):
            gate = self.gates[index]
            while index in recovery.recovering and (polled := gate.poll()) is not None:
                channel, payload = polled
                if type(payload) is tuple:
                    restored.add_batch((gate, channel, payload[0], payload[1], True))
                    gate.release(channel)
                else:  # its end of channel state (gates resume once every channel's came)
                    on_event(gate, channel, payload)

    def take_unprocessed(self) -> tuple[CurrentBatch | None, int]:
        """Take what the task holds and has not processed, for an unaligned stop's drop
        (:func:`~undertow.runtime.task.unaligned_stop.drop_input`): the batch in hand (or
        None) and the number of restored records still pending, which are discarded."""
        current, self._current = self._current, None
        return current, self._restored_input.drop()

    def process_priority_events(self) -> None:
        """Take every queued priority event (unaligned barrier, announcement) ahead of data;
        drain the gates still recovering (:meth:`drain_recovered`: also under backpressure,
        when no slice runs)."""
        self.drain_recovered()
        for gate in self.gates:
            if not gate.has_priority_event():
                continue
            while (polled := gate.poll_priority()) is not None:
                self.events.on_event(gate, polled[0], polled[1])

    def restored_rest(self, channel: object) -> list[RestItem]:
        """What is left of ``channel``'s restored streams, in stream order (it follows the
        channel's partial record): runs of files for a checkpoint to refer to, chunks in
        memory to write."""
        return self._restored_input.rest(channel)

    def unprocessed_chunks(self, channel: object) -> list[bytes]:
        """Channel-state chunks of what the task took from ``channel`` and has not processed:
        the rest of the current batch, then restored batches still pending (stream order;
        the undecoded rest of its restored streams is :meth:`restored_rest`)."""
        chunks = []
        current = self._current
        if current is not None and current.channel is channel:
            rest = current.rest_chunk()
            if rest is not None:
                chunks.append(rest)
        return chunks + self._restored_input.pending_chunks(channel)

    def poll(self) -> tuple[InputGate, InputChannel, Any] | None:
        """The next batch or event of the gates, round-robin."""
        gates = self.gates
        n = len(gates)
        for i in range(n):
            gate = gates[(self._gate_rr + i) % n]
            item = gate.poll()
            if item is not None:
                self._gate_rr = (self._gate_rr + i + 1) % n
                return gate, item[0], item[1]
        return None

    def input_slice(self) -> None:
        """One slice of network input (see the module docstring)."""
        perf = time.perf_counter
        now = perf()
        slice_s = self.pace.slice_s(now)
        slow_chunk_s = self._slow_chunk_s
        deadline = now + slice_s
        head = self.head
        two = self.two_input
        priority = self.priority_events
        gates = self.gates
        budget = self.budget
        events = self.events
        ended = events.data_ended
        output_available = self.output_available
        head_room = self.head_room
        while True:
            if priority and any(g.has_priority_event() for g in gates):
                self.process_priority_events()
                if self.end_of_input:
                    break
            if self.dropping_input:  # an unaligned stop's savepoint holds the rest
                drop_input(self)
                break
            current = self._current
            if current is None:
                self.drain_recovered()
                restored = self._restored_input.next_batch()
                if restored is None and self._may_report_restored_consumed():
                    self._restored_consumed()  # none left (before any live input)
                if restored is not None:  # restored input goes before any live input
                    gate, channel, values, stamps, recovered = restored
                    current = CurrentBatch(gate, channel, values, stamps, True, recovered)
                    self._current = current
                else:
                    polled = self.poll()
                    if polled is None:
                        break
                    gate, channel, payload = polled
                    if type(payload) is tuple:
                        if ended and (id(gate), channel.index) in ended:
                            events.records_after_end_of_data(channel)
                        current = CurrentBatch(gate, channel, payload[0], payload[1], False)
                        self._current = current
                    else:
                        events.on_event(gate, channel, payload)
                        if self.end_of_input or not output_available() or self.input_held():
                            break  # a watermark's timers filled the output, or go on later
                        continue
            gate, values, stamps, pos = (
                current.gate,
                current.values,
                current.timestamps,
                current.position,
            )
            n = len(values)
            k = self._chunks.size
            if budget is not None:
                fit = budget.begin()
                if fit < k:
                    k = int(fit) if fit >= 1.0 else 1
            if head_room is not None:
                k = max(1, min(k, head_room()))
            rows = 0
            if self.cut_batches and type(values[pos]) is pa.RecordBatch:
                chunk, rows = current.next_rows(self._rows, slice_s)
                cstamps = None if stamps is None else [stamps[pos]]
                if current.row == 0:
                    pos += 1
                t0 = perf()
            elif pos == 0 and k >= n:
                t0 = perf()
                chunk, cstamps, pos = values, stamps, n
            else:
                t0 = perf()
                end = min(n, pos + k)
                chunk = values[pos:end]
                cstamps = None if stamps is None else stamps[pos:end]
                pos = end
            try:
                if two:
                    if gate.input_index == 1:
                        head.process_batch1(chunk, cstamps)
                    else:
                        head.process_batch2(chunk, cstamps)
                else:
                    head.process_batch(chunk, cstamps)
            except Exception as err:
                index = gate.input_index if two else 1
                failed = selector_failure(chunk, self.key_selectors[index - 1], err)
                if failed is None:
                    raise
                raise failed from err
            t1 = perf()
            taken = len(chunk) if not rows else int(current.row == 0)  # a cut: at its last piece
            self.records_in += taken
            if not current.restored:
                gate.note_processed(taken)
            if budget is not None:
                budget.end(len(chunk))
            if rows:
                self._rows.observe(rows, t1 - t0)
            else:
                self._chunks.observe(len(chunk), t1 - t0, slice_s)
            if slow_chunk_s is not None and t1 - t0 >= slow_chunk_s:
                self._flush_due = True
            if pos >= n:
                self._current = None
                if not current.restored:
                    gate.release(current.channel)
            else:
                current.position = pos
            if t1 >= deadline or not output_available():
                break
            if head_room is not None and head_room() <= 0:
                break
        self.after_slice()

    def _may_report_restored_consumed(self) -> bool:
        """A report that the restored input was consumed is due once none is pending and no
        gate drains re-emitted data any more."""
        return self._on_restored_consumed is not None and not self.events.recovery.is_recovering

    def _restored_consumed(self) -> None:
        callback, self._on_restored_consumed = self._on_restored_consumed, None
        if callback is not None:
            callback()

    def after_slice(self) -> None:
        if self.buffer_timeout_ms == 0:
            for writer in self.writers:
                writer.flush_all()
        elif self._flush_due:
            self._flush_due = False
            for writer in self.writers:
                if writer.has_pending:
                    writer.flush_all()

    # -- sources ---------------------------------------------------------------------------------
    def source_ready(self) -> bool:
        return not self._source_waiting

    def source_slice(self) -> None:
        """Move the reader's pending records into the chain in adaptive chunks, as network
        input, calling the reader again only when nothing is pending, until the slice's time
        is up or the output is unavailable. A reader call itself emits nothing (its output
        becomes pending), so one call never holds the task longer than the reader takes."""
        perf = time.perf_counter
        now = perf()
        slice_s = self.pace.slice_s(now)
        slow_chunk_s = self._slow_chunk_s
        deadline = now + slice_s
        head = self.head
        budget = self.budget
        writers = self.writers if self._debloated else ()
        while True:
            if not head.has_pending():
                if writers:  # debloated outputs: ask the reader for what fits (a soft limit)
                    fits = [n for w in writers if (n := w.records_that_fit()) is not None]
                    head.records_fit = min(fits) if fits else None
                status = InputStatus.END_OF_INPUT if self._reader_ended else head.emit_next()
                if status is InputStatus.END_OF_INPUT:
                    self._reader_ended = True  # never call a reader again after its end
                    if not head.has_pending():
                        head.end_of_input()
                        self._source_ended = True
                        break
                if status is InputStatus.NOTHING_AVAILABLE and not head.has_pending():
                    self._source_waiting = True
                    if not self._backing_off:
                        self._backing_off = True
                        self._call_later(head.poll_again_after_s(), self._back_off_passed)
                    break
                if not head.has_pending():
                    if perf() >= deadline:
                        break
                    continue
            k = self._chunks.size
            if budget is not None:
                fit = budget.begin()
                if fit < k:
                    k = int(fit) if fit >= 1.0 else 1
            cut = head.pending_batch() if self.cut_batches else None
            t0 = perf()
            if cut is not None:  # a record batch: a row range of it (module docstring)
                rows = emit_source_rows(head, self._rows, slice_s, cut)
                t1 = perf()
                self._rows.observe(rows, t1 - t0)
                emitted = 1
            else:
                emitted = head.emit_pending(k)
                t1 = perf()
                self._chunks.observe(emitted, t1 - t0, slice_s)
            if slow_chunk_s is not None and t1 - t0 >= slow_chunk_s:
                self._flush_due = True
            if budget is not None:
                budget.end(emitted)
            if t1 >= deadline or not self.output_available() or self.input_held():
                break
        self.after_slice()

    def source_available(self) -> None:
        """A reader said data is available again (``notify_available``), or its back-off
        after ``NOTHING_AVAILABLE`` passed."""
        self._source_waiting = False
        self._wake()

    def _back_off_passed(self) -> None:
        self._backing_off = False
        self.source_available()
