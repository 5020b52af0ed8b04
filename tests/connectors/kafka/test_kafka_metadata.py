"""settled_metadata: a topic not known yet is asked for again until the propagation window
has passed (a fake clock, scripted answers; no broker)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from undertow.connectors.kafka.metadata import (
    DEFAULT_PROPAGATION_S,
    RETRY_S,
    not_yet_known,
    propagation_s,
    settled_metadata,
)


def cluster(**topics: int | None) -> Any:
    """Metadata listing each topic, with that error code (``None``: no error)."""
    return SimpleNamespace(
        topics={
            name: SimpleNamespace(error=None if code is None else KafkaError(code), partitions={})
            for name, code in topics.items()
        }
    )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def scripted(*answers: Any) -> tuple[Any, list[int]]:
    """An ``ask`` giving ``answers`` in turn (the last one from then on), and its call count."""
    calls: list[int] = []

    def ask() -> Any:
        calls.append(1)
        return answers[min(len(calls), len(answers)) - 1]

    return ask, calls


def test_a_topic_still_propagating_is_asked_for_again_until_it_is_known() -> None:
    clock = Clock()
    leaderless = cluster(t=KafkaError.LEADER_NOT_AVAILABLE)
    ask, calls = scripted(cluster(), cluster(t=KafkaError.UNKNOWN_TOPIC_OR_PART), leaderless,
                          cluster(t=None))  # fmt: skip
    metadata = settled_metadata(ask, ["t"], 5.0, clock, clock.sleep)
    assert metadata.topics["t"].error is None
    assert len(calls) == 4 and clock.sleeps == [RETRY_S] * 3


def test_a_topic_that_never_appears_is_given_up_on_after_the_window() -> None:
    clock = Clock()
    ask, calls = scripted(cluster(other=None))
    metadata = settled_metadata(ask, ["t", "other"], 1.0, clock, clock.sleep)
    assert not_yet_known(metadata, ["t", "other"]) == ["t"]
    assert 1.0 <= clock.now <= 1.0 + RETRY_S * 1.01  # no ask after the window
    assert len(calls) == len(clock.sleeps) + 1


@pytest.mark.parametrize("code", [None, KafkaError.TOPIC_AUTHORIZATION_FAILED])
def test_a_known_topic_or_one_refused_for_good_is_answered_at_once(code: int | None) -> None:
    """Only propagation errors wait: an authorization error does not go away by asking."""
    clock = Clock()
    ask, calls = scripted(cluster(t=code))
    settled_metadata(ask, ["t"], 5.0, clock, clock.sleep)
    assert len(calls) == 1 and clock.sleeps == []


def test_a_zero_window_asks_once() -> None:
    clock = Clock()
    ask, calls = scripted(cluster())
    assert not_yet_known(settled_metadata(ask, ["t"], 0.0, clock, clock.sleep), ["t"]) == ["t"]
    assert len(calls) == 1


def test_the_window_is_librdkafkas_propagation_property_where_set() -> None:
    assert propagation_s({}) == DEFAULT_PROPAGATION_S
    assert propagation_s({"topic.metadata.propagation.max.ms": "250"}) == 0.25
    assert propagation_s({"topic.metadata.propagation.max.ms": 0}) == 0.0
