"""Topic metadata that waits out a new topic's propagation.

Kafka creates a topic asynchronously: ``CreateTopics`` is answered once the controller holds
the topic, and each broker learns of it a moment later. Metadata asked right after a creation
may therefore not list the topic yet, or list it with ``UNKNOWN_TOPIC_OR_PART`` or
``LEADER_NOT_AVAILABLE`` (seen on the test broker, KRaft with one node, under load: a sink
started right after its topic was created failed saying the topic did not exist).
librdkafka's producer treats an unknown topic as missing only after
``topic.metadata.propagation.max.ms``; the start-up checks of the Kafka source and sink do
the same through :func:`settled_metadata`: metadata that lacks a named topic is asked again,
every :data:`RETRY_S`, until the window has passed, and only then is the topic reported.

The window is the user's ``topic.metadata.propagation.max.ms`` where set, else
:data:`DEFAULT_PROPAGATION_S`, shorter than librdkafka's 30 s so that a misspelt topic fails
the job within seconds. Pure except for the ``ask`` callable; no state, any thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from confluent_kafka import KafkaError

#: librdkafka's property (also read by its producer and consumer, so it is passed on as is).
PROPAGATION_KEY = "topic.metadata.propagation.max.ms"
DEFAULT_PROPAGATION_S = 5.0
RETRY_S = 0.1
#: A topic's metadata errors that a broker gives while the topic is still propagating.
NOT_YET_KNOWN = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE})


def propagation_s(config: Mapping[str, Any]) -> float:
    """The propagation window of a client configuration, in seconds."""
    value = config.get(PROPAGATION_KEY)
    return DEFAULT_PROPAGATION_S if value is None else int(value) / 1000


def not_yet_known(metadata: Any, topics: Collection[str]) -> list[str]:
    """The topics of ``topics`` that ``metadata`` (a ``ClusterMetadata``) does not know yet."""
    missing = []
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or (found.error is not None and found.error.code() in NOT_YET_KNOWN):
            missing.append(topic)
    return missing


def settled_metadata(
    ask: Callable[[], Any],
    topics: Collection[str],
    window_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """``ask()``'s metadata once it knows every topic in ``topics``, or its last answer once
    ``window_s`` has passed since the first ask (the caller then reports what is missing).
    ``ask``'s own errors (no broker answered) propagate at once."""
    deadline = clock() + window_s
    while True:
        metadata = ask()
        if not not_yet_known(metadata, topics) or clock() >= deadline:
            return metadata
        sleep(RETRY_S)
