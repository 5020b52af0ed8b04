"""undertow.connectors.kafka.admin: an offset lookup that meets a partition without a known
leader (a topic created a moment ago), or a committed offset its group's coordinator is still
loading, asks again until its time-out; any other error fails at once, naming the bootstrap
servers. The broker's answers are scripted (no broker)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
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


class ScriptedGroupOffsets:
    """``list_consumer_group_offsets`` answers partition ``t-0`` with the next error of
    ``errors`` (a per-partition error, offset -1001), then with offset 7."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.calls = 0

    def list_consumer_group_offsets(self, request: list[Any], **_: Any) -> dict[str, Future[Any]]:
        self.calls += 1
        group = request[0].group_id
        error = KafkaError(self.errors.pop(0)) if self.errors else None
        # confluent-kafka's TopicPartition has a read-only error: a stand-in of its fields
        tp = SimpleNamespace(topic="t", partition=0, offset=-1001 if error else 7, error=error)
        future: Future[Any] = Future()
        future.set_result(SimpleNamespace(group_id=group, topic_partitions=[tp]))
        return {group: future}


def test_a_committed_offset_answered_with_an_error_is_no_missing_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A partition whose committed offset came back with an error is asked again while the
    error is transient; otherwise the lookup fails naming the partition. It is never taken
    for a partition without a committed offset (which the source would reset)."""
    monkeypatch.setattr(admin_module, "RETRY_BACKOFF_S", 0.01)
    loading = ScriptedGroupOffsets(KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                   KafkaError.UNSTABLE_OFFSET_COMMIT)  # fmt: skip
    assert _admin(loading, 5.0).committed_for("g", [TP]) == {TP: 7}  # type: ignore[arg-type]
    assert loading.calls == 3
    denied = ScriptedGroupOffsets(KafkaError.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaSourceError, match=r"committed offsets of group 'g' .*partition t-0"):
        _admin(denied, 5.0).committed_for("g", [TP])  # type: ignore[arg-type]
    assert denied.calls == 1
