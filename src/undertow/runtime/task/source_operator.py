"""Source side of a chain: drives a FLIP-27 reader, assigns timestamps, generates watermarks.

:class:`WatermarkEmitter` is shared by sources (``from_source(source, strategy)``) and
``assign_timestamps_and_watermarks``: it applies the strategy's timestamp assigner to every
batch, feeds the watermark generator, emits watermarks every
``pipeline.auto-watermark-interval`` (200 ms; 0: never) and marks the output idle after the
strategy's idle timeout without records. Readers that emit per split
(:class:`~undertow.connectors.source.SplitReaderOutput`) get one generator per split, combined
by :mod:`.split_watermarks`.
"""

from __future__ import annotations

import pickle
from collections import deque
from itertools import repeat
from numbers import Integral
from typing import Any

import pyarrow as pa

from undertow.connectors.source import InputStatus, SourceReader, SourceReaderContext, SourceSplit
from undertow.core.errors import StateError, note_record
from undertow.core.types import MAX_WATERMARK, MIN_TIMESTAMP
from undertow.runtime.network.buffer import serialize_object
from undertow.runtime.task.operator import (
    CheckpointHooks,
    OneInputStreamOperator,
    OperatorSetup,
    Output,
    Timestamps,
)
from undertow.runtime.task.pending_bytes import PendingBound
from undertow.runtime.task.split_watermarks import SplitWatermarks


def _check_assigned(values: list[Any], timestamps: list[Any]) -> None:
    """Refuses a batch whose first or last assigned timestamp is not an int (or None): an
    assigner returning a ``str`` or a ``datetime`` would otherwise fail later, in a window or
    a timer, with a bare ``TypeError``. Cost: two type checks per batch, not per record."""
    for i in (0, -1):
        stamp = timestamps[i]
        if type(stamp) is not int and stamp is not None and not isinstance(stamp, Integral):
            raise TypeError(
                f"the timestamp assigner returned {stamp!r} ({type(stamp).__name__}) for the "
                f"record {values[i]!r:.200}: timestamps are int milliseconds since the epoch"
            )


class WatermarkEmitter:
    def __init__(self, strategy: Any, setup: OperatorSetup, output: Output) -> None:
        self.output = output
        self.pts = setup.processing_time_service
        self.assigner = strategy.create_timestamp_assigner() if strategy is not None else None
        self.generator = strategy.create_watermark_generator() if strategy is not None else None
        if setup.task_settings.batch:
            self.generator = None  # BATCH: event time jumps to the end when input ends
        self.idle_timeout = strategy.get_idle_timeout_ms() if strategy is not None else None
        #: per-split generators, once a reader emitted a batch of a split (then the single
        #: generator above is not used: a reader emits per split or not at all)
        self.splits: SplitWatermarks | None = None
        self._strategy = strategy
        self.interval_ms = setup.task_settings.auto_watermark_interval_ms
        self.last_watermark = MIN_TIMESTAMP
        self.idle = False
        self._last_activity = self.pts.current_processing_time()
        self._timer: Any = None
        self._closed = False

    def start(self) -> None:
        if self.generator is not None and self.interval_ms > 0:
            self._schedule()

    def _schedule(self) -> None:
        next_time = self.pts.current_processing_time() + self.interval_ms
        self._timer = self.pts.register_timer(next_time, self._on_periodic)

    def _on_periodic(self, _: int) -> None:
        if self._closed:
            return
        self.emit_periodic()
        now = self.pts.current_processing_time()
        if (self.splits is None and self.idle_timeout and not self.idle
                and now - self._last_activity >= self.idle_timeout):  # fmt: skip
            self.idle = True
            self.output.emit_watermark_status(True)
        self._schedule()

    def emit_periodic(self) -> None:
        if self.generator is None:
            return
        if self.splits is not None:
            combined = self.splits.on_periodic(self.pts.current_processing_time())
            if combined.idle and not self.idle:
                self.idle = True
                self.output.emit_watermark_status(True)
            wm = combined.watermark
        else:
            wm = self.generator.on_periodic_emit()
        if wm is not None and wm > self.last_watermark:
            if self.idle:
                self.idle = False
                self.output.emit_watermark_status(False)
            self.last_watermark = wm
            self.output.emit_watermark(wm)

    def on_batch(
        self, values: list[Any], timestamps: Timestamps, split_id: str | None = None
    ) -> Timestamps:
        """Assign timestamps; returns the batch's timestamps after assignment. ``split_id``:
        the reader's split the batch came from (its own watermark generator)."""
        if self.idle_timeout or split_id is not None:
            self._last_activity = self.pts.current_processing_time()
            if self.idle:
                self.idle = False
                self.output.emit_watermark_status(False)
        assigner = self.assigner
        if assigner is not None:
            assigned: list[Any] = []
            try:  # extend keeps the stamps before a failing call: the failing record's index
                if timestamps is None:
                    assigned.extend(map(assigner, values, repeat(MIN_TIMESTAMP)))
                else:
                    previous = (MIN_TIMESTAMP if t is None else t for t in timestamps)
                    assigned.extend(map(assigner, values, previous))
            except Exception as err:
                note_record(err, values[len(assigned)])
                raise
            timestamps = assigned
            if timestamps:
                _check_assigned(values, timestamps)
        if self.generator is not None and timestamps is not None:
            if split_id is None:
                self.generator.on_events(timestamps)
            else:
                self._split_watermarks().on_events(split_id, timestamps, self._last_activity)
        return timestamps

    def _split_watermarks(self) -> SplitWatermarks:
        if self.splits is None:
            self.splits = SplitWatermarks(
                self._strategy.create_watermark_generator, self.idle_timeout
            )
        return self.splits

    def register_split(self, split_id: str) -> None:
        """A reader took ``split_id``: it holds the watermark back until it emits (or idles)."""
        if self.generator is not None:
            now = self.pts.current_processing_time()
            self._split_watermarks().register(split_id, now)

    def release_split(self, split_id: str) -> None:
        """The reader finished ``split_id``: it no longer holds the watermark back."""
        if self.splits is not None:
            self.splits.release(split_id)

    def end_of_input(self) -> None:
        """A bounded input ended: event time jumps to the end (Flink's MAX_WATERMARK)."""
        self.close()
        if self.last_watermark < MAX_WATERMARK:
            self.last_watermark = MAX_WATERMARK
            self.output.emit_watermark(MAX_WATERMARK)

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _ReaderContext(SourceReaderContext):
    def __init__(self, setup: OperatorSetup) -> None:
        self._setup = setup

    def index_of_subtask(self) -> int:
        return self._setup.subtask_index

    def parallelism(self) -> int:
        return self._setup.parallelism

    def send_split_request(self) -> None:
        assert self._setup.services is not None
        self._setup.services.send_split_request()

    def notify_available(self) -> None:
        assert self._setup.services is not None
        self._setup.services.wake()


class _Pending:
    """What one reader call produced and the task has not emitted yet: ``values[pos:]``, and
    of ``values[pos]``, when it is a record batch handed over in row ranges, its rows from
    ``row``. Mutable, owned by the source operator on the task's loop thread."""

    __slots__ = ("pos", "row", "split_id", "stamps", "values")

    def __init__(self, values: list[Any], stamps: list[Any] | None, split_id: str | None) -> None:
        self.values, self.stamps, self.split_id = values, stamps, split_id
        self.pos = self.row = 0

    def rest(self) -> tuple[list[Any], list[Any] | None, str | None]:
        """The records not emitted (a record batch cut by rows: its rows not emitted)."""
        values = self.values[self.pos :]
        if self.row:
            values[0] = values[0].slice(self.row)
        stamps = None if self.stamps is None else self.stamps[self.pos :]
        return values, stamps, self.split_id


class SourceOperator(CheckpointHooks):
    """Head of a source chain: a reader call fills the *pending* records, and the task moves
    them into the chain in chunks of its own size (:meth:`emit_pending`).

    A reader may return thousands of records per call (``NumberSequenceSource`` 4,096), and a
    chained function may take a millisecond each, so emitting a whole call at once would hold
    the task (and every checkpoint trigger) for seconds. Records taken from the reader but not
    yet emitted are part of the source's snapshot: the reader's position is already past them,
    so a restore emits them before reading on. Timestamps are assigned and the watermark
    generator sees a record only when it is emitted, so no watermark overtakes pending records.

    What one call brings is bounded by records and bytes (:mod:`.pending_bytes`): a reader
    that honours ``records_wanted`` is asked for what fits ``PENDING_BYTES`` at its records'
    estimated size, so a snapshot holds about that much pending, not a whole call of large
    records.

    Threading: the task's loop thread. Invariant: the task calls :meth:`emit_next` only while
    nothing is pending, so a reader's output is emitted in the order it produced it.
    """

    #: A source declares no function's output type (see ``StreamOperator.output_check``).
    output_check: Any = None

    def __init__(self, source: Any, watermark_strategy: Any) -> None:
        self.source = source
        self.watermark_strategy = watermark_strategy
        self.reader: SourceReader[Any] | None = None
        self._restored_splits: list[Any] = []
        #: Reader output not emitted yet, oldest first.
        self._pending: deque[_Pending] = deque()
        #: splits released by the reader while records of theirs are still pending
        self._release_after: set[str] = set()
        #: ReaderOutput's soft limit per reader call: the byte bound's, or the records that
        #: fit the output (``records_fit``) if fewer.
        self.records_wanted: int | None = None
        #: The records the output's free buffers take, set by the task (buffer debloating).
        self.records_fit: int | None = None
        self.bound = PendingBound()
        #: Timestamps and watermarks of what is emitted: built by :meth:`open` (so
        #: :meth:`close` closes it only if the operator opened).
        self.emitter: WatermarkEmitter | None = None

    def _emitter(self) -> WatermarkEmitter:
        emitter = self.emitter
        if emitter is None:
            raise StateError(f"source '{self.name}' emits records before open()")
        return emitter

    def setup(self, ctx: OperatorSetup) -> None:
        self.ctx = ctx
        self.output = ctx.output

    def last_watermark(self) -> int | None:
        """The last watermark this source emitted; None before it opened."""
        emitter = self.emitter
        return emitter.last_watermark if emitter is not None and self.reader is not None else None

    def open(self) -> None:
        emitter = self.emitter = WatermarkEmitter(self.watermark_strategy, self.ctx, self.output)
        self.reader = self.source.create_reader(_ReaderContext(self.ctx))
        if self._restored_splits:
            self.reader.add_splits(self._restored_splits)
            self._restored_splits = []
        self.reader.start()
        emitter.start()

    # ReaderOutput ---------------------------------------------------------------------------
    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.collect_batch([value], None if timestamp is None else [timestamp])

    def collect_batch(self, values: list[Any], timestamps: list[Any] | None = None) -> None:
        if values:
            self._pending.append(_Pending(values, timestamps, None))
            self.bound.observe(values)

    def collect_split_batch(
        self, split_id: str, values: list[Any], timestamps: list[Any] | None = None
    ) -> None:
        if values:
            self._pending.append(_Pending(values, timestamps, split_id))
            self.bound.observe(values)

    def register_split(self, split_id: str) -> None:
        self._emitter().register_split(split_id)

    def release_split(self, split_id: str) -> None:
        if any(entry.split_id == split_id for entry in self._pending):
            self._release_after.add(split_id)
        else:
            self._emitter().release_split(split_id)

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None = None) -> None:
        self.output.collect_side(tag_id, value, timestamp)

    # driven by the task -----------------------------------------------------------------------
    def emit_next(self) -> InputStatus:
        """One reader call; what it produced becomes pending (call only when none is)."""
        assert self.reader is not None
        wanted, fit = self.bound.records_wanted(), self.records_fit
        self.records_wanted = wanted if fit is None or fit > wanted else fit
        return self.reader.poll_next(self)

    def poll_again_after_s(self) -> float:
        """The reader's wait before it is called again after ``NOTHING_AVAILABLE`` without a
        notice (:meth:`SourceReader.poll_again_after_s`)."""
        assert self.reader is not None
        return self.reader.poll_again_after_s()

    def has_pending(self) -> bool:
        return bool(self._pending)

    def emit_pending(self, limit: int) -> int:
        """Emit up to ``limit`` (>= 1) of the oldest pending records; returns how many."""
        entry = self._pending[0]
        values, stamps, pos = entry.values, entry.stamps, entry.pos
        n = len(values)
        end = min(n, pos + limit)
        if entry.row:  # the rest of a batch cut by rows goes alone
            chunk = [values[pos].slice(entry.row)]
            cstamps = None if stamps is None else [stamps[pos]]
            entry.row, end = 0, pos + 1
        elif pos == 0 and end == n:
            chunk, cstamps = values, stamps
        else:
            chunk = values[pos:end]
            cstamps = None if stamps is None else stamps[pos:end]
        entry.pos = end
        self._emit(entry, chunk, cstamps)
        return len(chunk)

    def pending_batch(self) -> tuple[int, int] | None:
        """When the oldest pending record is a record batch: its next row and its rows (for
        :meth:`emit_pending_rows`); otherwise None."""
        entry = self._pending[0]
        value = entry.values[entry.pos]
        return (entry.row, value.num_rows) if type(value) is pa.RecordBatch else None

    def emit_pending_rows(self, rows: int) -> None:
        """Emit the next ``rows`` (>= 1) rows of the oldest pending record, a record batch
        (:meth:`pending_batch`), with the batch's timestamp; the rest stays pending, and in
        the source's snapshot, until emitted. So a chained batch function's call is as long
        as the task's row cuts (:mod:`.row_cuts`) make it, not as long as a reader's fetch."""
        entry = self._pending[0]
        batch = entry.values[entry.pos]
        start = entry.row
        end = min(batch.num_rows, start + rows)
        chunk = [batch if start == 0 and end == batch.num_rows else batch.slice(start, end - start)]
        cstamps = None if entry.stamps is None else [entry.stamps[entry.pos]]
        if end >= batch.num_rows:
            entry.pos, entry.row = entry.pos + 1, 0
        else:
            entry.row = end
        self._emit(entry, chunk, cstamps)

    def _emit(self, entry: _Pending, chunk: list[Any], stamps: list[Any] | None) -> None:
        done = entry.pos >= len(entry.values)
        if done:
            self._pending.popleft()
        split_id = entry.split_id
        emitter = self._emitter()
        stamps_out = (emitter.on_batch(chunk, stamps) if split_id is None
                      else emitter.on_batch(chunk, stamps, split_id))  # fmt: skip
        self.output.collect_batch(chunk, stamps_out)
        if (done and split_id in self._release_after
                and not any(e.split_id == split_id for e in self._pending)):  # fmt: skip
            self._release_after.discard(split_id)
            emitter.release_split(split_id)

    def add_splits(self, splits: list[Any]) -> None:
        assert self.reader is not None
        self.reader.add_splits(splits)

    def no_more_splits(self) -> None:
        assert self.reader is not None
        self.reader.notify_no_more_splits()

    def end_of_input(self) -> None:
        self._emitter().end_of_input()

    # checkpoints --------------------------------------------------------------------------
    def snapshot_custom_state(self, checkpoint_id: int) -> bytes:
        """The reader's splits with their positions (restoring resumes right after them) and
        the pending records, which the reader already read past."""
        assert self.reader is not None
        pending = [entry.rest() for entry in self._pending]
        splits = list(self.reader.snapshot_state(checkpoint_id))
        return serialize_object({"splits": splits, "pending": pending})

    def restore_custom_state(self, blobs: list[bytes], rescaled: bool) -> None:
        """Take this subtask's splits and pending records. On a rescale every new subtask sees
        all old subtasks' blobs: split ``k`` (counted over all blobs) goes to subtask ``k mod
        n``, and a pending batch goes with the split it was read from (its split id, so the
        batch is emitted before that split goes on, by the subtask that reads on), or, read
        by a reader that does not emit per split or from a split that finished meanwhile, with
        its old subtask's first split.
        """
        index, n = self.ctx.subtask_index, self.ctx.parallelism
        states = []
        for blob in blobs:
            state = pickle.loads(blob)
            # snapshots before pending records were kept hold the list of splits alone
            states.append((state, []) if isinstance(state, list) else (
                state["splits"], state["pending"]))  # fmt: skip
        owner_of: dict[str, int] = {}
        k = 0
        for old_splits, _ in states:
            for split in old_splits:
                if isinstance(split, SourceSplit):
                    owner_of[split.split_id()] = k % n
                k += 1
        splits: list[Any] = []
        k = 0
        for j, (old_splits, pending) in enumerate(states):
            first = (k if old_splits else j) % n
            for entry in pending:
                # entries before per-split watermarks were kept have no split id
                split_id = entry[2] if len(entry) > 2 else None
                owner = owner_of.get(split_id, first) if split_id is not None else first
                if not rescaled or owner == index:
                    self._pending.append(_Pending(entry[0], entry[1], split_id))
            for split in old_splits:
                if not rescaled or k % n == index:
                    splits.append(split)
                k += 1
        self._restored_splits = splits

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.reader is not None:
            self.reader.notify_checkpoint_complete(checkpoint_id)

    def finish(self) -> None:
        pass

    def close(self) -> None:
        if self.emitter is not None:
            self.emitter.close()
        if self.reader is not None:
            self.reader.close()

    @property
    def name(self) -> str:
        return self.ctx.name


class TimestampsAndWatermarksOperator(OneInputStreamOperator):
    """``assign_timestamps_and_watermarks``: replaces upstream watermarks with its own."""

    def __init__(self, watermark_strategy: Any) -> None:
        self.watermark_strategy = watermark_strategy
        #: Built by :meth:`open` (so :meth:`close` closes it only if the operator opened).
        self.emitter: WatermarkEmitter | None = None

    def _emitter(self) -> WatermarkEmitter:
        emitter = self.emitter
        if emitter is None:
            raise StateError(f"operator '{self.name}' processes records before open()")
        return emitter

    def open(self) -> None:
        self.emitter = WatermarkEmitter(self.watermark_strategy, self.ctx, self.output)
        self.emitter.start()

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        self.output.collect_batch(values, self._emitter().on_batch(values, timestamps))

    def process_watermark(self, watermark: int) -> None:
        if watermark == MAX_WATERMARK:  # end of input upstream: flush event time
            self._emitter().end_of_input()

    def close(self) -> None:
        if self.emitter is not None:
            self.emitter.close()
