"""The record writer: a subtask's output to one result partition. It routes batches of
records to channels with the edge's partitioner, collects them per channel, and cuts them into
buffers of the size the consumer announced (buffer debloating) or the segment size.

Threading: the task's loop thread only. Invariants and the buffer accounting: the class
docstring; the partition it writes to: :mod:`.partition`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from undertow.graph.partitioners import StreamPartitioner
from undertow.runtime.network import arrow_payload
from undertow.runtime.network.buffer import Buffer, serialize_batch, split_into_buffers
from undertow.runtime.network.partition import ResultPartition


class _Flush(enum.Enum):
    """How :meth:`RecordWriter._flush_channel` sends a channel's pending records."""

    FULL_BATCHES = "full batches"  # an emit: a remainder below the threshold stays pending
    ALL = "all"  # a flush (timeout, event, end): the remainder too
    WHOLE = "whole"  # a shrink: the buffer in progress as one batch


#: A writer that hands batches over learns record sizes from a sample of every this many of
#: them (16 small records serialized: about 5 us here, against the pickling of every batch saved).
SAMPLE_HANDED_OVER = 8


class RecordWriter:
    """Routes batches to channels, collects them per channel and cuts them into buffers.

    A channel's pending records are serialized when they are expected to fill ~90% of a segment
    (the bytes-per-record estimate starts from a sample of the first batch and adapts after
    every serialization, so a buffer in progress rarely outgrows a segment; under an output
    budget the thresholds take it up between units of work, :meth:`follow_units`), on
    :meth:`flush_all` (buffer timeout, before an event, at the end). With buffer debloating,
    the channel's consumer announces a smaller size and a record limit: pending records are
    then serialized in batches of ~90% of that size or of the limit, whichever is fewer
    records (one emit of many records becomes several full buffers, and a smaller remainder
    waits for the next emit or flush); limits that do not bind change nothing, and a shrink
    sends the buffer in progress whole. Batches are still cut at the
    segment size, so a record larger than the announced size goes whole (or spans segments,
    as without debloating).

    Pool accounting: a channel's buffer is taken from the pool (``partition.in_progress``) when
    its first pending record arrives; serializing turns it into ``k >= 1`` queued buffers (more
    than one when the batch spans segments). :attr:`buffers_requested` counts every buffer taken
    so far, so its growth over a unit of work is what that unit drew (the task's output cost).
    """

    def __init__(
        self, partition: ResultPartition, partitioner: StreamPartitioner, segment_size: int
    ) -> None:
        self.partition = partition
        self.partitioner = partitioner
        #: Batches for consumers in this process go over unserialized (``Buffer.handed_over``)
        #: unless one batch goes to every channel (broadcast: consumers must not share it).
        self._hands_over = not partitioner.is_broadcast
        partitioner.setup(len(partition.subpartitions))
        self.segment_size = segment_size
        n = len(partition.subpartitions)
        self._values: list[list[Any]] = [[] for _ in range(n)]
        self._stamps: list[list[Any] | None] = [None] * n
        self._bytes_per_record = 0.0  # no estimate before the first batch
        #: Batches handed over since a batch was last serialized (or sampled): the estimate
        #: learns from a sample of every :data:`SAMPLE_HANDED_OVER`-th one.
        self._unsampled = 0
        #: Per channel: the announced buffer size and record limit, and the pending records
        #: that trigger serialization.
        self._sizes = [segment_size] * n
        self._limits: list[int | None] = [None] * n
        self._thresholds = [1] * n
        #: Records a segment takes at the current estimate (90% of it): the most one buffer
        #: handed over within this process holds.
        self._natural = segment_size
        self._cuts = [False] * n
        self._cutting = False
        partition.buffer_size_listener = self._on_new_buffer_size
        #: Called with the largest ``old / new`` records-per-buffer ratio over the channels
        #: when thresholds shrank (the task's output budget rescales its cost with it).
        self.on_buffers_shrunk: Callable[[float], None] | None = None
        #: The thresholds follow the size estimate only in :meth:`settle` (a budget's unit
        #: boundaries; see :meth:`follow_units`), not after every batch.
        self._per_unit = False
        self._stale = False
        self.records_out = 0
        self.buffers_out = 0
        self.bytes_out = 0
        #: NewBufferSize announcements this writer applied (buffer debloating), over all its
        #: channels: what the producer learned from its consumers.
        self.buffer_sizes_received = 0
        #: Buffers taken from the pool so far (monotone): in progress or serialized.
        self.buffers_requested = 0

    @property
    def has_pending(self) -> bool:
        return any(self._values)

    def emit(self, values: list[Any], timestamps: list[Any] | None) -> None:
        if self._bytes_per_record == 0.0 and values:
            self._estimate_size(values)
        self.records_out += len(values)
        pending_v, pending_t, thresholds = self._values, self._stamps, self._thresholds
        for ch, (vals, stamps) in self.partitioner.route(values, timestamps).items():
            pv = pending_v[ch]
            if not pv:
                if not vals:
                    continue
                self.partition.in_progress += 1  # this channel's next buffer starts filling
                self.buffers_requested += 1
            pt = pending_t[ch]
            if stamps is not None or pt is not None:
                if pt is None:
                    pt = pending_t[ch] = [None] * len(pv)
                pt.extend(stamps if stamps is not None else [None] * len(vals))
            pv.extend(vals)
            if len(pv) >= thresholds[ch]:
                self._flush_channel(ch)

    def _estimate_size(self, values: list[Any]) -> None:
        """The first estimate of bytes per record: a sample of the first batch, serialized."""
        sample = values[:16]
        self._bytes_per_record = len(serialize_batch(sample, None)) / len(sample)
        self._update_thresholds()

    def _update_thresholds(self) -> None:
        """Each channel's records per buffer: ~90% of a segment at the current estimate, or
        fewer where its consumer announced a smaller size or record limit. ``_cuts[ch]``:
        those limits bind (they are below what a segment takes), so the channel's pending
        records are cut into batches of the threshold; otherwise they go as one batch, as
        without debloating (a limit at its maximum costs nothing)."""
        per_record = self._bytes_per_record
        segment = self.segment_size
        sizes, limits, thresholds, cuts = self._sizes, self._limits, self._thresholds, self._cuts
        self._natural = max(1, int(segment * 0.9 / per_record)) if per_record > 0.0 else segment
        for ch, size in enumerate(sizes):
            if per_record <= 0.0:
                natural = threshold = size
            else:
                natural = max(1, int(segment * 0.9 / per_record))
                threshold = max(1, int(size * 0.9 / per_record))
            limit = limits[ch]
            if limit is not None and limit < threshold:
                threshold = limit
            thresholds[ch] = threshold
            cuts[ch] = limit is not None and threshold < natural
        self._cutting = any(cuts)

    def start_debloated(self, max_records: int) -> None:
        """Debloating is on: until a consumer announces its limits, cut its channel's buffers
        at ``max_records`` records (so a job does not start with seconds of backlog)."""
        for ch, limit in enumerate(self._limits):
            if limit is None:
                self._limits[ch] = max_records
        self._update_thresholds()

    def follow_units(self, on_buffers_shrunk: Callable[[float], None]) -> None:
        """An output budget sizes this writer's units of work: keep every channel's
        threshold fixed within a unit (:meth:`settle` between units) and report shrinks to
        ``on_buffers_shrunk``. A threshold that followed the size estimate after every
        batch would change the cost of the unit under way: one large record among small
        ones, and the small records after it would draw buffers the unit was not sized for."""
        self.on_buffers_shrunk = on_buffers_shrunk
        self._per_unit = True

    def settle(self) -> None:
        """Between units of work: thresholds follow the size estimate learned since the last
        call (a shrink is reported, as after an announcement). O(1) when nothing changed."""
        if self._stale:
            self._stale = False
            self._retune()

    def _retune(self) -> None:
        before = list(self._thresholds)
        self._update_thresholds()
        if self.on_buffers_shrunk is not None:
            shrink = max(b / a for b, a in zip(before, self._thresholds, strict=True))
            if shrink > 1.0:
                self.on_buffers_shrunk(shrink)

    def _on_new_buffer_size(self, ch: int) -> None:
        sender = self.partition.subpartitions[ch].sender
        assert sender.buffer_size is not None
        self.buffer_sizes_received += 1
        self._sizes[ch] = min(sender.buffer_size, self.segment_size)
        self._limits[ch] = sender.max_records
        self._stale = False
        self._retune()
        if len(self._values[ch]) >= self._thresholds[ch]:
            # The buffer in progress was filled under the old limits: it goes whole (Flink
            # finishes a BufferBuilder at its size); cut at the new ones, it would draw
            # buffers that no unit of work was sized for.
            self._flush_channel(ch, _Flush.WHOLE)

    def _flush_channel(self, ch: int, how: _Flush = _Flush.FULL_BATCHES) -> None:
        """Serialize channel ``ch``'s pending records into buffers and queue them. Where
        debloating limits bind, they go in batches of the channel's threshold (except
        ``WHOLE``), and with ``FULL_BATCHES`` a smaller remainder stays pending, its buffer
        still in progress: a remainder cut at every emit would halve the buffers' fill and
        skew the size estimate."""
        values, stamps = self._values[ch], self._stamps[ch]
        if not values:
            return
        n = len(values)
        step = self._thresholds[ch] if self._cuts[ch] and how is not _Flush.WHOLE else n
        end = n - n % step if how is _Flush.FULL_BATCHES and step < n else n
        local = self._hands_over and self.partition.subpartitions[ch].in_process
        if local and step > self._natural and not arrow_payload.is_arrow_batch(values):
            # handed over in buffers of at most a segment's worth (what a buffer stands for
            # in credits and debloating), not serialized for being longer than one; all of
            # ``end`` goes, as a serialized batch's last, partial buffer would
            step = self._natural
        if end < n:
            self._values[ch] = values[end:]
            self._stamps[ch] = None if stamps is None else stamps[end:]
        else:
            self._values[ch] = []
            self._stamps[ch] = None
        buffers: list[Buffer] = []
        per_record, segment = self._bytes_per_record, self.segment_size
        for start in range(0, end, step):
            if step >= n:  # the whole pending list, no copy
                part, part_stamps = values, stamps
            else:
                part = values[start : min(start + step, end)]
                part_stamps = None if stamps is None else stamps[start : start + len(part)]
            arrow = local and arrow_payload.is_arrow_batch(part)
            if arrow:
                size = arrow_payload.handed_over_size(part)
                if size <= segment:
                    # record batches are immutable: the consumer takes these very batches,
                    # and their size is known exactly (no estimate, no sample)
                    buffers.append(Buffer.handed_over(part, part_stamps, size))
                    self.bytes_out += size
                    self._learn_size(size, len(part), step)
                    continue
            estimate = int(per_record * len(part))
            if local and not arrow and estimate <= segment:
                # the consumer is in this process: the lists go over as they are (this
                # writer holds no reference to them any more), serialized only if captured
                buffers.append(Buffer.handed_over(part, part_stamps, max(1, estimate)))
                self.bytes_out += estimate
                self._unsampled += 1
                if self._unsampled >= SAMPLE_HANDED_OVER:
                    self._learn_from_sample(part)
                continue
            self._unsampled = 0
            data = serialize_batch(part, part_stamps)
            self._learn_size(len(data), len(part), step)
            buffers.extend(split_into_buffers(data, self.segment_size))
            self.bytes_out += len(data)
        if self._per_unit:
            self._stale = True
        else:
            self._update_thresholds()
        self.buffers_out += len(buffers)
        partition = self.partition
        if end < n:  # the remainder's buffer is a new one in progress
            self.buffers_requested += len(buffers)
        else:
            self.buffers_requested += len(buffers) - 1  # the first was taken when it started
            partition.in_progress -= 1
        partition.subpartitions[ch].add_buffers(buffers)
        partition.note_emitted()

    def _learn_size(self, size: int, records: int, step: int) -> None:
        """Move the bytes-per-record estimate towards ``size`` bytes for ``records`` records;
        a small batch (a forced flush, below the ``step`` records of a full one) says little
        about the records' size and moves it less."""
        weight = 0.5 * min(1.0, records / step)
        self._bytes_per_record += weight * (size / records - self._bytes_per_record)

    def _learn_from_sample(self, part: list[Any]) -> None:
        """Move the size estimate towards a sample of a handed-over batch: records that grow
        while every channel stays in this process would otherwise keep the first batch's
        estimate, and buffers (and the bytes counted for debloating and the switch to
        unaligned) would hold ever more than a segment."""
        self._unsampled = 0
        sample = part[:16]
        measured = len(serialize_batch(sample, None)) / len(sample)
        self._bytes_per_record += 0.5 * (measured - self._bytes_per_record)

    def buffers_drawn(self) -> float:
        """:attr:`buffers_requested`, with each buffer in progress on a channel whose
        debloating limits bind counted as the fraction of its threshold it holds: there a
        remainder stays pending between units of work, and counting it whole would make a
        unit that completes it look cheaper than it is (the output budget learns from this)."""
        drawn: float = self.buffers_requested
        if self._cutting:
            values, thresholds = self._values, self._thresholds
            for ch, cut in enumerate(self._cuts):
                pending = len(values[ch])
                if cut and pending:
                    drawn += pending / thresholds[ch] - 1.0
        return drawn

    def records_that_fit(self) -> int | None:
        """With debloating: how many more records the free buffers of the partition take when
        each holds as many as the smallest channel threshold (at least one buffer's worth);
        ``None`` without debloating. Sources size their batches with it."""
        limits = [limit for limit in self._limits if limit is not None]
        if not limits:
            return None
        partition = self.partition
        free = max(1, partition.pool_size - partition.in_use)
        return free * min(self._thresholds)

    def flush_all(self) -> None:
        for ch in range(len(self._values)):
            if self._values[ch]:
                self._flush_channel(ch, _Flush.ALL)

    def broadcast_event(self, event: Any, priority: bool = False, blocks: bool = False) -> None:
        """Flush pending records, then send ``event`` on every channel (in order)."""
        self.flush_all()
        self.partition.broadcast_event(event, priority, blocks)
