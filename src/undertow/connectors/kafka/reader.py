"""The ``KafkaSource`` reader: one per source subtask, reading the partitions it was given.

Task thread only; never blocks (a :class:`~.fetcher.SplitFetcher` thread fetches and wakes the
task). Each ``poll_next`` deserializes one fetched batch, or as much of it as the output's
``records_wanted`` asks for (the rest waits in the reader for the next call, not in any
checkpoint), emits it with the Kafka timestamps and moves that partition's position past
it. Positions live in the checkpoint:
``snapshot_state`` returns one split per unfinished partition at its next offset; on
``notify_checkpoint_complete`` that checkpoint's offsets are committed to the consumer group
for monitoring only. A value the deserializer rejects fails the job naming topic, partition
and offset, or goes to a side output as a :class:`KafkaBadRecord`. The input ends when there
are no more splits and every partition reached its stopping offset.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from undertow.common.serialization import DeserializationSchema
from undertow.connectors.kafka.admin import KafkaSourceError
from undertow.connectors.kafka.batch_deserializer import KafkaBatchDeserializationSchema, split_bad
from undertow.connectors.kafka.fetcher import (
    FetchedRecords,
    FetchFailed,
    PartitionEnd,
    SplitFetcher,
)
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.connectors.source import (
    InputStatus,
    ReaderOutput,
    RecordsWanted,
    SourceReader,
    SourceReaderContext,
    SplitReaderOutput,
)

#: Checkpoints whose offsets wait for their completion notice; older ones are dropped.
_MAX_PENDING_COMMITS = 16
#: The longest the task leaves the reader uncalled after ``NOTHING_AVAILABLE``: its fetcher
#: wakes the task on every fetch, its end and its failure, and ``add_splits`` and
#: ``notify_no_more_splits`` notify too, so a shorter wait only polls for nothing (the default
#: 5 ms woke each source task 200 times a second; docs/kafka.md, "Sixth session"). Partition
#: discovery, which ``poll_next`` runs on a clock, is asked at most this much late.
POLL_AGAIN_AFTER_S = 0.1


@dataclass(frozen=True, slots=True)
class KafkaBadRecord:
    """A record whose value could not be deserialized, as sent to the bad-record side output."""

    topic: str
    partition: int
    offset: int
    reason: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class ReaderSettings:
    consumer_config: dict[str, Any]
    deserializer: Any
    discovery_interval_ms: int
    commit_offsets: bool
    bad_record_tag: str | None
    description: str


class KafkaSourceReader(SourceReader[KafkaPartitionSplit]):
    def __init__(self, context: SourceReaderContext, settings: ReaderSettings) -> None:
        self.context = context
        self.settings = settings
        self.positions: dict[KafkaTopicPartition, KafkaPartitionSplit] = {}
        self.finished: set[KafkaTopicPartition] = set()
        self.no_more_splits = False
        self._to_commit: dict[int, dict[KafkaTopicPartition, int]] = {}
        #: partitions read to their end, at their final position, until a checkpoint committed
        #: them (Flink's ``offsetsOfFinishedSplits``): the group sees them read through
        self._finished_offsets: dict[KafkaTopicPartition, int] = {}
        self._last_request = 0.0
        self._fetcher: SplitFetcher | None = None
        #: partitions taken since the last poll, to register for per-partition watermarks
        self._unregistered: list[KafkaTopicPartition] = []
        #: whether the output the task gives :meth:`poll_next` (always the same one) emits per
        #: split: a runtime Protocol check costs microseconds, so it is made once
        self._per_split: tuple[ReaderOutput, SplitReaderOutput | None] | None = None
        self._wanted = RecordsWanted()
        #: the rest of a fetched batch not handed over yet (``records_wanted``): the position
        #: is before it, so a snapshot leaves it out and a restore fetches it again
        self._held: FetchedRecords | None = None
        deserializer = settings.deserializer
        #: one call per fetched batch: the schema's own batch method when it has one (a
        #: record-batch schema makes one Arrow batch of a fetch instead: :meth:`_record_batch`)
        self._deserialize_batch: Callable[[list[Any]], list[Any]] | None = (
            None if isinstance(deserializer, KafkaBatchDeserializationSchema)
            else deserializer.deserialize_batch if isinstance(deserializer, DeserializationSchema)
            else functools.partial(_each, deserializer.deserialize)
        )  # fmt: skip

    def _fetch(self) -> SplitFetcher:
        if self._fetcher is None:
            index = self.context.index_of_subtask()
            config = dict(self.settings.consumer_config)
            prefix = config.pop("client.id.prefix", None)
            if prefix:
                config["client.id"] = f"{prefix}-{index}"
            self._fetcher = SplitFetcher(
                config, self.context.notify_available, f"kafka-fetcher-{index}"
            )
            self._fetcher.start()
        return self._fetcher

    def start(self) -> None:
        self._request()

    def _request(self) -> None:
        self._last_request = time.monotonic()
        self.context.send_split_request()

    def add_splits(self, splits: list[KafkaPartitionSplit]) -> None:
        live = []
        for split in splits:
            tp = split.topic_partition
            if tp in self.positions or tp in self.finished:
                continue
            if split.finished_at_start:
                self.finished.add(tp)
            else:
                self.positions[tp] = split
                self._unregistered.append(tp)
                live.append(split)
        if live:
            self._fetch().add_splits(live)
        self.context.notify_available()

    def notify_no_more_splits(self) -> None:
        self.no_more_splits = True
        self.context.notify_available()

    def poll_again_after_s(self) -> float:
        """:data:`POLL_AGAIN_AFTER_S`, or the discovery interval when that is shorter."""
        interval = self.settings.discovery_interval_ms
        if interval > 0 and not self.no_more_splits:
            return min(POLL_AGAIN_AFTER_S, interval / 1000.0)
        return POLL_AGAIN_AFTER_S

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        interval = self.settings.discovery_interval_ms
        if (interval > 0 and not self.no_more_splits
                and (time.monotonic() - self._last_request) * 1000 >= interval):  # fmt: skip
            self._request()
        if self._per_split is None or self._per_split[0] is not output:
            split_output = output if isinstance(output, SplitReaderOutput) else None
            self._per_split = (output, split_output)
        per_split = self._per_split[1]
        if self._unregistered and per_split is not None:
            for tp in self._unregistered:
                per_split.register_split(str(tp))
        self._unregistered = []
        held, self._held = self._held, None
        if held is not None:  # before anything fetched after it (its partition's end)
            self._emit(self._cut(held, output), output, per_split)
            return InputStatus.MORE_AVAILABLE
        emitted = False
        fetcher = self._fetcher
        while fetcher is not None:
            item = fetcher.poll()
            if item is None:
                break
            if isinstance(item, FetchedRecords):
                self._emit(self._cut(item, output), output, per_split)
                emitted = True
                break  # one batch per call: the task serves its mailbox in between
            if isinstance(item, PartitionEnd):
                ended = self.positions.pop(item.topic_partition, None)
                if ended is not None:
                    self._finished_offsets[item.topic_partition] = ended.starting_offset
                self.finished.add(item.topic_partition)
                if per_split is not None:
                    per_split.release_split(str(item.topic_partition))
            elif isinstance(item, FetchFailed):
                raise KafkaSourceError(
                    f"KafkaSource ({self.settings.description}), reader "
                    f"{self.context.index_of_subtask()}: {item.error}"
                )
        if emitted:
            return InputStatus.MORE_AVAILABLE
        if self.no_more_splits and not self.positions:
            return InputStatus.END_OF_INPUT
        return InputStatus.NOTHING_AVAILABLE

    def _cut(self, batch: FetchedRecords, output: ReaderOutput) -> FetchedRecords:
        """The part of ``batch`` to emit now: its first ``records_wanted`` records (the source
        operator's byte bound on what it holds pending), the rest held for the next call. A
        record-batch deserializer makes one record of a fetch: not cut."""
        wanted = self._wanted.of(output)
        n = len(batch.offsets)
        if wanted is None or wanted >= n or self._deserialize_batch is None:
            return batch
        wanted = max(1, wanted)
        tp, offsets, values, stamps = (batch.topic_partition, batch.offsets, batch.values,
                                       batch.timestamps)  # fmt: skip
        self._held = FetchedRecords(tp, offsets[wanted:], values[wanted:], stamps[wanted:])
        return FetchedRecords(tp, offsets[:wanted], values[:wanted], stamps[:wanted])

    def _emit(
        self, batch: FetchedRecords, output: ReaderOutput, per_split: SplitReaderOutput | None
    ) -> None:
        tp = batch.topic_partition
        split = self.positions.get(tp)
        if split is None:  # finished meanwhile
            return
        if isinstance(self.settings.deserializer, KafkaBatchDeserializationSchema):
            values, stamps = self._record_batch(batch, split, output)
        else:
            values, stamps = self._records(batch, split.starting_offset, output)
        self.positions[tp] = split.at(max(split.starting_offset, batch.offsets[-1] + 1))
        if values and per_split is not None:
            per_split.collect_split_batch(str(tp), values, stamps)  # per-partition watermarks
        elif values:
            output.collect_batch(values, stamps)

    def _bad(self, tp: KafkaTopicPartition, offset: int, raw: bytes | None, err: Exception,
             stamp: Any, output: ReaderOutput) -> None:  # fmt: skip
        """A value the deserializer rejected: to the side output, or fail naming it."""
        reason = f"{type(err).__name__}: {err}"
        if self.settings.bad_record_tag is None:
            raise KafkaSourceError(
                f"KafkaSource ({self.settings.description}): cannot deserialize the "
                f"record at topic {tp.topic!r}, partition {tp.partition}, offset "
                f"{offset}: {reason}; value: {_quote(raw)}"
            ) from err
        bad = KafkaBadRecord(tp.topic, tp.partition, offset, reason, raw)
        output.collect_side(self.settings.bad_record_tag, bad, stamp)

    def _record_batch(self, batch: FetchedRecords, split: KafkaPartitionSplit,
                      output: ReaderOutput) -> tuple[list[Any], list[Any]]:  # fmt: skip
        """The fetch's new values as one record batch, stamped with their largest timestamp."""
        rows = [i for i, offset in enumerate(batch.offsets) if offset >= split.starting_offset]
        raw = [batch.values[i] for i in rows]

        def bad(j: int, err: Exception) -> None:
            i = rows[j]
            self._bad(batch.topic_partition, batch.offsets[i], batch.values[i], err,
                      batch.timestamps[i], output)  # fmt: skip

        records, kept = split_bad(self.settings.deserializer, raw, bad)
        if not kept:
            return [], []
        stamps = [batch.timestamps[rows[j]] for j in kept]
        known = [s for s in stamps if s is not None]
        return [records], [max(known) if known else None]

    def _records(
        self, batch: FetchedRecords, start: int, output: ReaderOutput
    ) -> tuple[list[Any], list[Any]]:
        """The batch's values from offset ``start`` on: in one call of the deserializer's batch
        form in the common case, else one by one (below)."""
        if batch.offsets[0] >= start and self._deserialize_batch is not None:
            try:
                values = self._deserialize_batch(batch.values)
            except Exception:
                pass  # which record failed, and what to do with it: one by one
            else:
                return _without_nones(values, batch.timestamps)
        return self._emit_one_by_one(batch, start, output)

    def _emit_one_by_one(
        self, batch: FetchedRecords, start: int, output: ReaderOutput
    ) -> tuple[list[Any], list[Any]]:
        """The batch's records from offset ``start`` on (before it: emitted already, a split
        re-added after a restore), deserialized one at a time: a value the deserializer
        rejects fails the reader naming its offset, or goes to the bad-record side output."""
        deserialize = self.settings.deserializer.deserialize
        values: list[Any] = []
        stamps: list[Any] = []
        for offset, raw, stamp in zip(batch.offsets, batch.values, batch.timestamps):
            if offset < start:
                continue
            try:
                value = deserialize(raw)
            except Exception as err:
                self._bad(batch.topic_partition, offset, raw, err, stamp, output)
                continue
            if value is None:  # no record (_without_nones)
                continue
            values.append(value)
            stamps.append(stamp)
        return values, stamps

    def snapshot_state(self, checkpoint_id: int) -> list[KafkaPartitionSplit]:
        """One split per unfinished partition, at the next offset to emit. Its offsets, and
        those of partitions finished since the last commit, are committed when the
        checkpoint completes."""
        splits = sorted(self.positions.values(), key=lambda s: s.topic_partition)
        if self.settings.commit_offsets:
            offsets = dict(self._finished_offsets)
            offsets.update((s.topic_partition, s.starting_offset) for s in splits)
            self._to_commit[checkpoint_id] = offsets
            while len(self._to_commit) > _MAX_PENDING_COMMITS:
                del self._to_commit[min(self._to_commit)]
        return splits

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        offsets = self._to_commit.pop(checkpoint_id, None)
        for older in [c for c in self._to_commit if c < checkpoint_id]:
            del self._to_commit[older]
        if offsets and self._fetcher is not None:
            self._fetcher.commit(offsets)
            for tp, offset in offsets.items():
                if self._finished_offsets.get(tp) == offset:  # not if it finished since
                    del self._finished_offsets[tp]

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None


def _without_nones(values: list[Any], stamps: list[Any]) -> tuple[list[Any], list[Any]]:
    """``values`` and their timestamps without the ``None`` values: a deserializer returns
    ``None`` for a message that makes no record (Flink's ``DeserializationSchema``, whose
    collecting form drops a null; a JSON schema with ``ignore_parse_errors()`` does so for
    a message it cannot parse). The scan compares identities only (~25 ns a value)."""
    if not any(map(operator.is_, values, repeat(None))):
        return values, stamps
    kept = [i for i, value in enumerate(values) if value is not None]
    return [values[i] for i in kept], [stamps[i] for i in kept]


def _each(deserialize: Callable[[Any], Any], raws: list[Any]) -> list[Any]:
    return [deserialize(raw) for raw in raws]


def _quote(raw: bytes | None, limit: int = 120) -> str:
    if raw is None:
        return "None"
    text = repr(raw[:limit])
    return text + ("..." if len(raw) > limit else "")
