"""Offsets initializers resolved to concrete offsets (undertow.connectors.kafka.offsets),
against an in-memory partition log (no broker needed for the rule itself)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from undertow.connectors.kafka.offsets import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
    OffsetResolutionError,
    resolve,
)

A0, A1 = KafkaTopicPartition("a", 0), KafkaTopicPartition("a", 1)


class PartitionLog:
    """Offsets [start, end) per partition, record i stamped 1000 + 10 * i, and a group's
    committed offsets."""

    def __init__(self, ranges: dict[KafkaTopicPartition, tuple[int, int]],
                 committed: dict[KafkaTopicPartition, int]) -> None:  # fmt: skip
        self.ranges = ranges
        self.committed_offsets = committed

    def earliest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return {tp: self.ranges[tp][0] for tp in partitions}

    def latest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return {tp: self.ranges[tp][1] for tp in partitions}

    def for_timestamp(
        self, partitions: Sequence[KafkaTopicPartition], timestamp_ms: int
    ) -> dict[KafkaTopicPartition, int]:
        found = {}
        for tp in partitions:
            start, end = self.ranges[tp]
            hits = [i for i in range(start, end) if 1000 + 10 * i >= timestamp_ms]
            found[tp] = hits[0] if hits else -1
        return found

    def committed(
        self, partitions: Sequence[KafkaTopicPartition]
    ) -> dict[KafkaTopicPartition, int | None]:
        return {tp: self.committed_offsets.get(tp) for tp in partitions}


LOG = PartitionLog({A0: (5, 50), A1: (0, 10)}, committed={A0: 20})


def test_earliest_latest_and_timestamp() -> None:
    assert resolve(KafkaOffsetsInitializer.earliest(), [A0, A1], LOG) == {A0: 5, A1: 0}
    assert resolve(KafkaOffsetsInitializer.latest(), [A0, A1], LOG) == {A0: 50, A1: 10}
    # record 12 is the first stamped >= 1115; partition a-1 has none that late: its end
    assert resolve(KafkaOffsetsInitializer.timestamp(1115), [A0, A1], LOG) == {A0: 12, A1: 10}


def test_committed_offsets_fall_back_to_the_reset_strategy() -> None:
    earliest = KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST)
    latest = KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.LATEST)
    assert resolve(earliest, [A0, A1], LOG) == {A0: 20, A1: 0}
    assert resolve(latest, [A0, A1], LOG) == {A0: 20, A1: 10}
    with pytest.raises(OffsetResolutionError, match="no committed offset for a-1"):
        resolve(KafkaOffsetsInitializer.committed_offsets(), [A0, A1], LOG)


def test_specific_offsets_fall_back_to_the_reset_strategy() -> None:
    given = KafkaOffsetsInitializer.offsets({A1: 7})
    assert resolve(given, [A0, A1], LOG) == {A0: 5, A1: 7}
    strict = KafkaOffsetsInitializer.offsets({A1: 7}, KafkaOffsetResetStrategy.NONE)
    with pytest.raises(OffsetResolutionError, match="no given offset for a-0"):
        resolve(strict, [A0, A1], LOG)


def test_bad_initializer_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="offset of a-0 must be an int >= 0, got -1"):
        KafkaOffsetsInitializer.offsets({A0: -1})
    with pytest.raises(ValueError, match="partition must be an int >= 0"):
        KafkaTopicPartition("a", -1)
    with pytest.raises(TypeError, match="KafkaOffsetResetStrategy"):
        KafkaOffsetsInitializer.committed_offsets("earliest")  # type: ignore[arg-type]
