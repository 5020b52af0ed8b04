"""undertow.connectors.kafka.admin: an offset lookup that meets a partition without a known
leader (a topic created a moment ago) asks again until its time-out; any other error fails
at once, naming the bootstrap servers. The broker's answers are scripted (no broker)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from undertow.connectors.kafka import admin as admin_module
from undertow.connectors.kafka.admin import KafkaAdmin, KafkaSourceError
from undertow.connectors.kafka.offsets import KafkaTopicPartition

TP = KafkaTopicPartition("t", 0)


class ScriptedLookups:
    """``list_offsets`` answers with the next error of ``errors``, then with offset 7."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.calls = 0

    def list_offsets(self, request: dict[Any, Any], **_: Any) -> dict[Any, Future[Any]]:
        self.calls += 1
        answers = {}
        for tp in request:
            future: Future[Any] = Future()
            if self.errors:
                future.set_exception(KafkaException(KafkaError(self.errors[0])))
            else:
                future.set_result(type("Info", (), {"offset": 7})())
            answers[tp] = future
        if self.errors:
            self.errors.pop(0)
        return answers


def _admin(client: ScriptedLookups, timeout_s: float) -> KafkaAdmin:
    admin = KafkaAdmin({"bootstrap.servers": "127.0.0.1:1"}, timeout_s)
    admin._client = client
    return admin


def test_a_partition_without_a_leader_yet_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_module, "RETRY_BACKOFF_S", 0.01)
    client = ScriptedLookups(KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
    assert _admin(client, 5.0).earliest([TP]) == {TP: 7}
    assert client.calls == 3


def test_other_errors_fail_at_once_and_a_leader_that_never_comes_at_the_time_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admin_module, "RETRY_BACKOFF_S", 0.01)
    denied = ScriptedLookups(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaSourceError, match=r"earliest offsets .* at bootstrap servers"):
        _admin(denied, 5.0).earliest([TP])
    assert denied.calls == 1
    never = ScriptedLookups(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 1000)
    with pytest.raises(KafkaSourceError, match=r"failed within 0\.2 s"):
        _admin(never, 0.2).latest([TP])
    assert 2 < never.calls < 1000
