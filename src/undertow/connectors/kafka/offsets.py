"""Topic-partitions and offsets initializers: where a ``KafkaSource`` starts and stops reading.

An initializer is a frozen description (it is pickled with the source); :func:`resolve`
turns it into one concrete offset per partition, given an :class:`OffsetLookup` that asks the
broker. Resolution is pure apart from the lookup, so it is tested without a broker.

Offsets are *next offsets to read*: a split starting at 5 reads the record at offset 5 first;
a split stopping at 9 reads records below 9 and is done when the consumer's position reaches 9.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True, order=True)
class KafkaTopicPartition:
    """One partition of a topic (PyFlink's ``KafkaTopicPartition(topic, partition)``)."""

    topic: str
    partition: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise ValueError(
                f"KafkaTopicPartition: topic must be a non-empty str, got {self.topic!r}"
            )
        if not isinstance(self.partition, int) or self.partition < 0:
            raise ValueError(
                f"KafkaTopicPartition({self.topic!r}): partition must be an int >= 0, "
                f"got {self.partition!r}"
            )

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class KafkaOffsetResetStrategy(enum.Enum):
    """What a committed-offsets or specific-offsets initializer does for a partition without
    an offset: start at the latest or earliest offset, or fail (``NONE``)."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


class OffsetKind(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    TIMESTAMP = "timestamp"
    COMMITTED = "committed"
    SPECIFIC = "specific"


class OffsetLookup(Protocol):
    """The broker's answers :func:`resolve` needs (:class:`~.admin.KafkaAdmin` implements it);
    each call covers many partitions at once."""

    def earliest(
        self, partitions: Sequence[KafkaTopicPartition]
    ) -> dict[KafkaTopicPartition, int]: ...

    def latest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        """The end of each partition as a read_committed consumer sees it (last stable
        offset): stopping there never waits for an open transaction."""

    def for_timestamp(
        self, partitions: Sequence[KafkaTopicPartition], timestamp_ms: int
    ) -> dict[KafkaTopicPartition, int]:
        """The first offset whose record timestamp is >= ``timestamp_ms``; -1 if none."""

    def committed(
        self, partitions: Sequence[KafkaTopicPartition]
    ) -> dict[KafkaTopicPartition, int | None]:
        """The consumer group's committed offsets (``None`` where it has none)."""


@dataclass(frozen=True, slots=True)
class KafkaOffsetsInitializer:
    """Where to start (``set_starting_offsets``) or stop (``set_bounded``/``set_unbounded``)
    in each partition. Build one with the static methods, as in PyFlink."""

    kind: OffsetKind
    timestamp_ms: int = 0
    specific: Mapping[KafkaTopicPartition, int] = field(default_factory=dict)
    reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        """The consumer group's committed offsets; partitions without one follow
        ``offset_reset_strategy`` (``NONE``: the job fails, naming the partition)."""
        _check_reset(offset_reset_strategy)
        return KafkaOffsetsInitializer(OffsetKind.COMMITTED, reset=offset_reset_strategy)

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first record whose timestamp (ms) is >= ``timestamp``; the end if none is."""
        if not isinstance(timestamp, int) or timestamp < 0:
            raise ValueError(
                f"KafkaOffsetsInitializer.timestamp(): expected ms >= 0, got {timestamp!r}"
            )
        return KafkaOffsetsInitializer(OffsetKind.TIMESTAMP, timestamp_ms=timestamp)

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer(OffsetKind.EARLIEST)

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        """The end of each partition when the source starts (for stopping: as of the start)."""
        return KafkaOffsetsInitializer(OffsetKind.LATEST)

    @staticmethod
    def offsets(
        offsets: Mapping[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """Given offsets per partition; partitions not given follow ``offset_reset_strategy``."""
        _check_reset(offset_reset_strategy)
        checked: dict[KafkaTopicPartition, int] = {}
        for tp, offset in dict(offsets).items():
            if not isinstance(tp, KafkaTopicPartition):
                raise TypeError(
                    f"KafkaOffsetsInitializer.offsets(): keys are KafkaTopicPartition, got {tp!r}"
                )
            if not isinstance(offset, int) or offset < 0:
                raise ValueError(
                    f"KafkaOffsetsInitializer.offsets(): offset of {tp} must be an int >= 0, "
                    f"got {offset!r}"
                )
            checked[tp] = offset
        return KafkaOffsetsInitializer(
            OffsetKind.SPECIFIC, specific=checked, reset=offset_reset_strategy
        )

    def __repr__(self) -> str:
        if self.kind is OffsetKind.TIMESTAMP:
            return f"timestamp({self.timestamp_ms})"
        if self.kind is OffsetKind.SPECIFIC:
            return f"offsets({len(self.specific)} partitions, reset={self.reset.name})"
        if self.kind is OffsetKind.COMMITTED:
            return f"committed_offsets(reset={self.reset.name})"
        return f"{self.kind.value}()"


def _check_reset(strategy: object) -> None:
    if not isinstance(strategy, KafkaOffsetResetStrategy):
        raise TypeError(f"expected a KafkaOffsetResetStrategy, got {strategy!r}")


class OffsetResolutionError(ValueError):
    """A partition has no offset to start or stop at and the reset strategy is ``NONE``."""


def resolve(
    initializer: KafkaOffsetsInitializer,
    partitions: Sequence[KafkaTopicPartition],
    lookup: OffsetLookup,
) -> dict[KafkaTopicPartition, int]:
    """One concrete offset (>= 0) per partition in ``partitions``."""
    if not partitions:
        return {}
    kind = initializer.kind
    if kind is OffsetKind.EARLIEST:
        return lookup.earliest(partitions)
    if kind is OffsetKind.LATEST:
        return lookup.latest(partitions)
    if kind is OffsetKind.TIMESTAMP:
        found = lookup.for_timestamp(partitions, initializer.timestamp_ms)
        missing = [tp for tp in partitions if found.get(tp, -1) < 0]
        ends = lookup.latest(missing) if missing else {}
        return {tp: found[tp] if found.get(tp, -1) >= 0 else ends[tp] for tp in partitions}
    if kind is OffsetKind.COMMITTED:
        known: Mapping[KafkaTopicPartition, int | None] = lookup.committed(partitions)
    else:
        known = initializer.specific
    result = {tp: off for tp in partitions if (off := known.get(tp)) is not None and off >= 0}
    rest = [tp for tp in partitions if tp not in result]
    if rest:
        reset = initializer.reset
        if reset is KafkaOffsetResetStrategy.NONE:
            raise OffsetResolutionError(
                f"no {'committed' if kind is OffsetKind.COMMITTED else 'given'} offset for "
                f"{', '.join(map(str, rest[:10]))} and the offset reset strategy is NONE"
            )
        fill = (
            lookup.earliest(rest)
            if reset is KafkaOffsetResetStrategy.EARLIEST
            else lookup.latest(rest)
        )
        result.update(fill)
    return result
