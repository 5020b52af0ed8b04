"""The order of a Kafka source reader's offset commits: one in flight, the newest next.

librdkafka does not keep asynchronous commits in order: two commits handed to one consumer
15 ms apart were answered, and written by the broker, newest first (seen 2026-12-03: a
bounded job committed offset 0 at its first checkpoint and 2 at its final one, the group
kept 0, and the next run read both records again). :class:`CommitSequence` lets one commit
be in flight; what is asked for meanwhile waits, merged per partition (a later offset of a
partition replaces an earlier one), and is sent when the broker answered the one in flight.
Pure: the fetcher thread sends what it is told and reports each answer. One thread; not
thread-safe. Invariant: at most one commit in flight, and nothing asked for is dropped while
it waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from undertow.connectors.kafka.offsets import KafkaTopicPartition

Offsets = dict[KafkaTopicPartition, int]


@dataclass(slots=True)
class CommitSequence:
    """Which commit to send, and when (module doc)."""

    #: The offsets asked for while a commit was in flight, merged per partition.
    waiting: Offsets = field(default_factory=dict)
    #: Whether a commit was sent and its answer has not come yet.
    in_flight: bool = False

    def ask(self, offsets: Mapping[KafkaTopicPartition, int]) -> Offsets | None:
        """``offsets`` are to be committed: what to send now, or ``None`` (they wait)."""
        self.waiting.update(offsets)
        return self._next()

    def answered(self) -> Offsets | None:
        """The commit in flight was answered (done or failed): what to send now, if any."""
        self.in_flight = False
        return self._next()

    def _next(self) -> Offsets | None:
        if self.in_flight or not self.waiting:
            return None
        send, self.waiting = self.waiting, {}
        self.in_flight = True
        return send
