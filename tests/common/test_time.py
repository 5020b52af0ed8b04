"""Time, Duration, Instant and to_millis."""

from __future__ import annotations

import copy
import datetime
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from tests.datastream.environments import threads_env

from undertow.api.async_function import AsyncFunction
from undertow.api.windows.assigners import TumblingEventTimeWindows
from undertow.common import Configuration, Duration, Instant, Time
from undertow.common.time import to_millis
from undertow.core.errors import GraphBuildError
from undertow.datastream import AsyncDataStream
from undertow.datastream.checkpoint_config import CheckpointConfig
from undertow.state.descriptors import StateTtlConfig


def test_time_constructors_and_equality() -> None:
    assert Time.seconds(5) == Time.milliseconds(5000)
    assert Time.minutes(2).to_milliseconds() == 120_000
    assert Time.hours(1).to_milliseconds() == 3_600_000
    assert Time.days(1).to_milliseconds() == 86_400_000
    assert Time.seconds(1) != Time.seconds(2)
    assert Time.seconds(1) != Duration.of_seconds(1)
    assert hash(Time.seconds(1)) == hash(Time.milliseconds(1000))
    assert repr(Time.seconds(2)) == "Time.milliseconds(2000)"
    assert str(Time.seconds(2)) == "2000 ms"


def test_duration_constructors_and_to_milliseconds() -> None:
    assert Duration.of_millis(1500) == Duration.of_nanos(1_500_000_000)
    assert Duration.of_seconds(3).to_milliseconds() == 3000
    assert Duration.of_minutes(2).to_milliseconds() == 120_000
    assert Duration.of_hours(1).to_milliseconds() == 3_600_000
    assert Duration.of_days(2).to_milliseconds() == 172_800_000
    assert Duration.of_nanos(1_999_999).to_milliseconds() == 1
    assert Duration.of_nanos(-1).to_milliseconds() == -1  # floor, like Java's toMillis
    assert Duration.of_seconds(2).to_nanos() == 2_000_000_000


def test_duration_repr_is_readable() -> None:
    assert repr(Duration.of_minutes(90)) == "Duration.of_minutes(90)"
    assert repr(Duration.of_hours(24)) == "Duration.of_days(1)"
    assert repr(Duration.of_millis(1500)) == "Duration.of_millis(1500)"
    assert repr(Duration.of_seconds(5)) == "Duration.of_seconds(5)"
    assert repr(Duration.of_nanos(7)) == "Duration.of_nanos(7)"


@pytest.mark.parametrize("value", [Time.seconds(1), Duration.of_seconds(1), Instant(1, 5)])
def test_immutable_hashable_picklable(value: object) -> None:
    with pytest.raises(AttributeError, match="immutable"):
        value._x = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value
    assert len({value, copy.copy(value)}) == 1


def test_rejects_non_integers() -> None:
    with pytest.raises(TypeError, match="str"):
        Duration.of_seconds("5")
    with pytest.raises(TypeError):
        Time.seconds(True)
    with pytest.raises(ValueError, match="whole"):
        Time.seconds(1.5)
    assert Time.seconds(2.0) == Time.seconds(2)


def test_instant_epoch_millis_round_trip() -> None:
    for millis in (0, 1, 999, 1000, 1_700_000_000_123, -1, -1001):
        assert Instant.of_epoch_milli(millis).to_epoch_milli() == millis
    assert Instant(-1, 500_000_000).to_epoch_milli() == -500
    assert Instant(0, 1_500_000_000) == Instant(1, 500_000_000)
    assert Instant(1, 0) < Instant(1, 1)
    assert repr(Instant(3, 4)) == "Instant<3, 4>"


def test_to_millis_accepts_every_duration_form() -> None:
    assert to_millis(Time.seconds(2)) == 2000
    assert to_millis(Duration.of_minutes(1)) == 60_000
    assert to_millis(datetime.timedelta(seconds=1, microseconds=1500)) == 1001
    assert to_millis(datetime.timedelta(microseconds=-1)) == -1
    assert to_millis(250) == 250


@pytest.mark.parametrize("bad", [1.5, "100 ms", True, None])
def test_to_millis_rejects_other_values(bad: object) -> None:
    with pytest.raises(TypeError, match=r"Duration, Time, datetime\.timedelta or int"):
        to_millis(bad)


def _checkpoint_pause(value: Any) -> int:
    config = CheckpointConfig(Configuration())
    return config.set_min_pause_between_checkpoints(value).get_min_pause_between_checkpoints()


def _ttl(value: Any) -> int:
    return StateTtlConfig.new_builder(value).build().get_ttl().to_milliseconds()


def _window_size(value: Any) -> int:
    return TumblingEventTimeWindows.of(value).get_size()


def _lateness(value: Any) -> None:
    env = threads_env()
    keyed = env.from_collection([1]).key_by(lambda v: v)
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(1))).allowed_lateness(value)


def _async_timeout(value: Any) -> None:
    class Echo(AsyncFunction[int, int]):
        async def async_invoke(self, value: int) -> list[int]:
            return [value]

    AsyncDataStream.unordered_wait(threads_env().from_collection([1]), Echo(), value)


@pytest.mark.parametrize("api", [_checkpoint_pause, _ttl, _window_size])
def test_apis_taking_a_duration_take_every_form_of_one(api: Callable[[object], int]) -> None:
    """They all read a duration through ``to_millis``: one set of accepted forms."""
    forms = [Time.seconds(2), Duration.of_seconds(2), datetime.timedelta(seconds=2), 2000]
    assert [api(form) for form in forms] == [2000] * 4


@pytest.mark.parametrize(
    ("api", "argument"),
    [(_checkpoint_pause, "min_pause"), (_ttl, "ttl"), (_window_size, "size"),
     (_lateness, "allowed_lateness"), (_async_timeout, "timeout")],
)  # fmt: skip
def test_apis_taking_a_duration_refuse_others_naming_the_argument(
    api: Callable[[object], object], argument: str
) -> None:
    with pytest.raises((TypeError, GraphBuildError), match=rf"{argument}: expected a Duration"):
        api(True)
