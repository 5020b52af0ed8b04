"""WatermarkStrategy, TimestampAssigner and the watermark generators."""

from __future__ import annotations

import datetime
import pickle
from typing import Any

import cloudpickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.common import Configuration, Duration, Time, TimestampAssigner, WatermarkStrategy
from undertow.common.watermark_strategy import (
    AUTO_WATERMARK_INTERVAL,
    DEFAULT_AUTO_WATERMARK_INTERVAL_MS,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkAlignmentParams,
)
from undertow.core.types import MIN_TIMESTAMP


class FieldAssigner(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


def test_monotonous_watermark_is_max_minus_one() -> None:
    generator = WatermarkStrategy.for_monotonous_timestamps().create_watermark_generator()
    assert generator.on_periodic_emit() is None  # nothing before the first event
    generator.on_events([5, 3, 10])
    assert generator.on_periodic_emit() == 9
    assert generator.on_periodic_emit() is None  # not advanced
    generator.on_events([7])
    assert generator.on_periodic_emit() is None
    generator.on_events([11])
    assert generator.on_periodic_emit() == 10


def test_bounded_out_of_orderness_watermark() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
    generator = strategy.create_watermark_generator()
    assert isinstance(generator, BoundedOutOfOrdernessWatermarks)
    generator.on_events([])
    assert generator.on_periodic_emit() is None
    generator.on_events([10_000, 12_000])
    assert generator.on_periodic_emit() == 12_000 - 5_000 - 1


def test_generator_ignores_records_without_timestamp() -> None:
    generator = BoundedOutOfOrdernessWatermarks(0)
    generator.on_events([None, None])
    assert generator.on_periodic_emit() is None
    generator.on_events([None, 4, None])
    assert generator.on_periodic_emit() == 3


def test_generator_at_min_timestamp_emits_nothing() -> None:
    generator = BoundedOutOfOrdernessWatermarks(0)
    generator.on_events([MIN_TIMESTAMP])
    assert generator.on_periodic_emit() is None


def test_each_subtask_gets_a_fresh_generator() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    first = strategy.create_watermark_generator()
    first.on_events([100])
    assert strategy.create_watermark_generator().on_periodic_emit() is None


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    delay=st.integers(0, 1000),
    batches=st.lists(
        st.tuples(st.lists(st.integers(-(10**6), 10**6), max_size=5), st.booleans()), max_size=20
    ),
)
def test_generator_matches_flink_formula(delay: int, batches: list[tuple[list[int], bool]]) -> None:
    generator = BoundedOutOfOrdernessWatermarks(delay)
    seen: list[int] = []
    emitted: list[int] = []
    for timestamps, emit in batches:
        generator.on_events(timestamps)
        seen.extend(timestamps)
        if emit:
            watermark = generator.on_periodic_emit()
            expected = max(seen) - delay - 1 if seen else None
            if expected is None or (emitted and expected <= emitted[-1]):
                assert watermark is None
            else:
                assert watermark == expected
                emitted.append(watermark)
    assert emitted == sorted(set(emitted))


def test_no_watermarks() -> None:
    strategy = WatermarkStrategy.no_watermarks()
    generator = strategy.create_watermark_generator()
    assert isinstance(generator, NoWatermarksGenerator)
    generator.on_events([1, 2, 3])
    assert generator.on_periodic_emit() is None
    assert strategy.create_timestamp_assigner() is None


def test_timestamp_assigner_object_and_function() -> None:
    base = WatermarkStrategy.for_monotonous_timestamps()
    assert base.create_timestamp_assigner() is None
    with_object = base.with_timestamp_assigner(FieldAssigner())
    assign = with_object.create_timestamp_assigner()
    assert assign is not None and assign(("a", 42), MIN_TIMESTAMP) == 42
    with_function = base.with_timestamp_assigner(lambda value, ts: value * 2)
    assign = with_function.create_timestamp_assigner()
    assert assign is not None and assign(21, MIN_TIMESTAMP) == 42
    with pytest.raises(TypeError, match="TimestampAssigner or a function"):
        base.with_timestamp_assigner(5)  # type: ignore[arg-type]


def test_with_methods_return_new_strategies() -> None:
    base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100))
    assigned = base.with_timestamp_assigner(FieldAssigner())
    idle = assigned.with_idleness(Duration.of_minutes(1))
    assert base.timestamp_assigner is None and base.get_idle_timeout_ms() is None
    assert idle.get_idle_timeout_ms() == 60_000
    assert idle.timestamp_assigner is assigned.timestamp_assigner  # kept across with_*
    assert idle.out_of_orderness_ms == 100


def test_durations_in_every_form() -> None:
    expected = WatermarkStrategy.for_bounded_out_of_orderness(2000)
    for value in (Duration.of_seconds(2), Time.seconds(2), datetime.timedelta(seconds=2)):
        assert WatermarkStrategy.for_bounded_out_of_orderness(value) == expected


def test_invalid_durations() -> None:
    with pytest.raises(ValueError, match="negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(-1))
    with pytest.raises(ValueError, match="positive"):
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(0)
    with pytest.raises(TypeError):
        WatermarkStrategy.for_bounded_out_of_orderness("5 s")  # type: ignore[arg-type]


def test_watermark_alignment_is_stored() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "group-1", Duration.of_seconds(20)
    )
    assert strategy.get_alignment_parameters() == WatermarkAlignmentParams("group-1", 20_000, 1000)
    custom = strategy.with_watermark_alignment("g", Duration.of_seconds(1), Duration.of_millis(50))
    assert custom.get_alignment_parameters() == WatermarkAlignmentParams("g", 1000, 50)
    with pytest.raises(ValueError, match="watermark_group"):
        strategy.with_watermark_alignment("", 1000)


def test_strategies_pickle() -> None:
    strategy = (
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
        .with_timestamp_assigner(lambda value, ts: value)
        .with_idleness(Duration.of_seconds(30))
    )
    restored = pickle.loads(cloudpickle.dumps(strategy))
    assign = restored.create_timestamp_assigner()
    assert assign is not None and assign(7, 0) == 7
    assert restored.get_idle_timeout_ms() == 30_000


def test_auto_watermark_interval_option() -> None:
    assert DEFAULT_AUTO_WATERMARK_INTERVAL_MS == 200
    assert AUTO_WATERMARK_INTERVAL.key == "pipeline.auto-watermark-interval"
    assert Configuration().get(AUTO_WATERMARK_INTERVAL) == 200
    config = Configuration().set_string("pipeline.auto-watermark-interval", "1 s")
    assert config.get(AUTO_WATERMARK_INTERVAL) == 1000
