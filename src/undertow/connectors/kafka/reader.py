"""The ``KafkaSource`` reader: one per source subtask, reading the partitions it was given.

Task thread only; never blocks (a :class:`~.fetcher.SplitFetcher` thread fetches and wakes the
task). Each ``poll_next`` deserializes one fetched batch, emits it with the Kafka timestamps and
moves that partition's position past it. Positions live in the checkpoint:
``snapshot_state`` returns one split per unfinished partition at its next offset; on
``notify_checkpoint_complete`` that checkpoint's offsets are committed to the consumer group
for monitoring only. A value the deserializer rejects fails the job naming topic, partition
and offset, or goes to a side output as a :class:`KafkaBadRecord`. The input ends when there
are no more splits and every partition reached its stopping offset.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

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
    SourceReader,
    SourceReaderContext,
    SplitReaderOutput,
)

#: Checkpoints whose offsets wait for their completion notice; older ones are dropped.
_MAX_PENDING_COMMITS = 16


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

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        interval = self.settings.discovery_interval_ms
        if (interval > 0 and not self.no_more_splits
                and (time.monotonic() - self._last_request) * 1000 >= interval):  # fmt: skip
            self._request()
        if self._unregistered and isinstance(output, SplitReaderOutput):
            for tp in self._unregistered:
                output.register_split(str(tp))
        self._unregistered = []
        emitted = False
        fetcher = self._fetcher
        while fetcher is not None:
            item = fetcher.poll()
            if item is None:
                break
            if isinstance(item, FetchedRecords):
                self._emit(item, output)
                emitted = True
                break  # one batch per call: the task serves its mailbox in between
            if isinstance(item, PartitionEnd):
                ended = self.positions.pop(item.topic_partition, None)
                if ended is not None:
                    self._finished_offsets[item.topic_partition] = ended.starting_offset
                self.finished.add(item.topic_partition)
                if isinstance(output, SplitReaderOutput):
                    output.release_split(str(item.topic_partition))
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

    def _emit(self, batch: FetchedRecords, output: ReaderOutput) -> None:
        tp = batch.topic_partition
        split = self.positions.get(tp)
        if split is None:  # finished meanwhile
            return
        if isinstance(self.settings.deserializer, KafkaBatchDeserializationSchema):
            values, stamps = self._record_batch(batch, split, output)
        else:
            values, stamps = self._records(batch, split, output)
        self.positions[tp] = split.at(max(split.starting_offset, batch.offsets[-1] + 1))
        if values and isinstance(output, SplitReaderOutput):
            output.collect_split_batch(str(tp), values, stamps)  # per-partition watermarks
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

    def _records(self, batch: FetchedRecords, split: KafkaPartitionSplit,
                 output: ReaderOutput) -> tuple[list[Any], list[Any]]:  # fmt: skip
        """The fetch's new values, deserialized one by one."""
        deserialize = self.settings.deserializer.deserialize
        values: list[Any] = []
        stamps: list[Any] = []
        for offset, raw, stamp in zip(batch.offsets, batch.values, batch.timestamps):
            if offset < split.starting_offset:
                continue  # already emitted (a split re-added after a restore)
            try:
                value = deserialize(raw)
            except Exception as err:
                self._bad(batch.topic_partition, offset, raw, err, stamp, output)
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


def _quote(raw: bytes | None, limit: int = 120) -> str:
    if raw is None:
        return "None"
    text = repr(raw[:limit])
    return text + ("..." if len(raw) > limit else "")
