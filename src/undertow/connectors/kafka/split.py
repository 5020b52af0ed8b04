"""A Kafka source split: one topic-partition and the next offset to read.

Immutable; a reader keeps the offset it reached and snapshots a new split with it
(:meth:`KafkaPartitionSplit.at`), so restoring resumes right after the last record emitted
before the checkpoint. ``stopping_offset`` (bounded or stopping sources) is fixed when the
split is made and never changes; ``None``: read forever.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.source import SourceSplit


@dataclass(frozen=True, slots=True)
class KafkaPartitionSplit(SourceSplit):
    topic_partition: KafkaTopicPartition
    starting_offset: int
    stopping_offset: int | None = None

    def split_id(self) -> str:
        return str(self.topic_partition)

    def at(self, offset: int) -> KafkaPartitionSplit:
        """This split resuming at ``offset``."""
        return dataclasses.replace(self, starting_offset=offset)

    @property
    def finished_at_start(self) -> bool:
        """Nothing to read: the split starts at or past its stopping offset."""
        return self.stopping_offset is not None and self.starting_offset >= self.stopping_offset

    def __repr__(self) -> str:
        stop = "" if self.stopping_offset is None else f", stop={self.stopping_offset}"
        return f"KafkaPartitionSplit({self.topic_partition}, offset={self.starting_offset}{stop})"
