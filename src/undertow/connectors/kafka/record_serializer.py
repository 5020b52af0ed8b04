"""``KafkaRecordSerializationSchema``: how a stream record becomes a Kafka record (topic, key,
value), with PyFlink 2.x's builder (``set_topic`` or ``set_topic_selector``, an optional key
schema, a value schema).

PyFlink turns a callable topic selector into a ``map`` in front of the sink (its Java side
cannot call Python); undertow's writer calls the selector itself, so no extra operator exists.
Immutable once built; pickled to the writers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from undertow.common.serialization import SerializationSchema
from undertow.connectors.kafka.sink_protocol import ProducedRecord


class KafkaTopicSelector(ABC):
    """Picks the topic of each record (PyFlink's ``KafkaTopicSelector``)."""

    @abstractmethod
    def apply(self, data: Any) -> str: ...


class _FunctionTopicSelector(KafkaTopicSelector):
    def __init__(self, function: Callable[[Any], str]) -> None:
        self._function = function

    def apply(self, data: Any) -> str:
        return self._function(data)


class KafkaRecordSerializationSchema(SerializationSchema):
    """Serializes a record's value (``serialize``) and, for the sink, the whole Kafka record
    (:meth:`to_record`)."""

    def __init__(
        self,
        topic: str | None,
        topic_selector: KafkaTopicSelector | None,
        key_schema: SerializationSchema | None,
        value_schema: SerializationSchema,
    ) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.key_schema = key_schema
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, element: Any) -> bytes:
        return self.value_schema.serialize(element)

    def topic_of(self, element: Any) -> str:
        if self.topic is not None:
            return self.topic
        assert self.topic_selector is not None
        topic = self.topic_selector.apply(element)
        if not isinstance(topic, str) or not topic:
            raise ValueError(
                f"the topic selector returned {topic!r} for record {element!r}; it must return "
                "a non-empty topic name"
            )
        return topic

    def to_record(self, element: Any, timestamp: int | None) -> ProducedRecord:
        key = None if self.key_schema is None else self.key_schema.serialize(element)
        return ProducedRecord(self.topic_of(element), key, self.serialize(element), timestamp)

    def __repr__(self) -> str:
        where = self.topic if self.topic is not None else repr(self.topic_selector)
        return f"KafkaRecordSerializationSchema(topic={where}, value={self.value_schema!r})"


class KafkaRecordSerializationSchemaBuilder:
    """Exactly one of ``set_topic`` / ``set_topic_selector`` (the later call wins, as in
    PyFlink), and a value schema, are required."""

    def __init__(self) -> None:
        self._topic: str | None = None
        self._topic_selector: KafkaTopicSelector | None = None
        self._key_schema: SerializationSchema | None = None
        self._value_schema: SerializationSchema | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        if not isinstance(topic, str) or not topic:
            raise ValueError(
                f"KafkaRecordSerializationSchema: topic must be a non-empty string, got {topic!r}"
            )
        self._topic, self._topic_selector = topic, None
        return self

    def set_topic_selector(
        self, topic_selector: Callable[[Any], str] | KafkaTopicSelector
    ) -> KafkaRecordSerializationSchemaBuilder:
        if isinstance(topic_selector, KafkaTopicSelector):
            selector = topic_selector
        elif callable(topic_selector):
            selector = _FunctionTopicSelector(topic_selector)
        else:
            raise TypeError(
                f"topic_selector must be KafkaTopicSelector or a callable, got {topic_selector!r}"
            )
        self._topic, self._topic_selector = None, selector
        return self

    def set_key_serialization_schema(
        self, key_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._key_schema = _schema("key", key_serialization_schema)
        return self

    def set_value_serialization_schema(
        self, value_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._value_schema = _schema("value", value_serialization_schema)
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None and self._topic_selector is None:
            raise ValueError(
                "KafkaRecordSerializationSchema: call set_topic() or "
                "set_topic_selector() before build()"
            )
        if self._value_schema is None:
            raise ValueError(
                "KafkaRecordSerializationSchema: call "
                "set_value_serialization_schema() before build()"
            )
        return KafkaRecordSerializationSchema(
            self._topic, self._topic_selector, self._key_schema, self._value_schema
        )


def _schema(what: str, schema: Any) -> SerializationSchema:
    if not isinstance(schema, SerializationSchema):
        raise TypeError(
            f"KafkaRecordSerializationSchema: the {what} schema must be a "
            f"SerializationSchema, got {schema!r}"
        )
    return schema
