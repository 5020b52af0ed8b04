"""Kafka client properties as PyFlink programs set them, for librdkafka.

PyFlink's Kafka connector runs Java's Kafka client, undertow librdkafka (confluent-kafka):
most property names are the same, a few are not. :func:`librdkafka_property` turns the ones a
ported program sets into what librdkafka takes, so ``set_property`` keeps working:

* the (de)serializer classes (``key.deserializer``, ``value.serializer``, ...) are dropped:
  Flink's builders overwrite them with byte-array ones, the schemas do the work;
* Java names librdkafka spells otherwise are renamed (``fetch.max.wait.ms`` is
  ``fetch.wait.max.ms``, ``max.request.size`` ``message.max.bytes``), ``buffer.memory`` (bytes)
  becomes ``queue.buffering.max.kbytes`` (KiB, rounded up).

Any other name goes to librdkafka as it is, which refuses unknown ones when the client starts.
"""

from __future__ import annotations

#: Flink's KafkaSourceBuilder/KafkaSinkBuilder set these themselves, whatever the user gave.
OVERWRITTEN_BY_FLINK = frozenset(
    {"key.deserializer", "value.deserializer", "key.serializer", "value.serializer"}
)
#: Java client name -> librdkafka name, for the same setting in the same unit.
RENAMED = {"fetch.max.wait.ms": "fetch.wait.max.ms", "max.request.size": "message.max.bytes"}


def librdkafka_property(key: str, value: str) -> tuple[str, str] | None:
    """``(key, value)`` as librdkafka takes it, or ``None`` for a property to leave out.
    Raises ``ValueError`` naming the property for a ``buffer.memory`` that is not a number."""
    if key in OVERWRITTEN_BY_FLINK:
        return None
    if key in RENAMED:
        return RENAMED[key], value
    if key == "buffer.memory":
        try:
            size = int(value)
        except ValueError:
            raise ValueError(f"buffer.memory must be a number of bytes, got {value!r}") from None
        return "queue.buffering.max.kbytes", str(-(-size // 1024))
    return key, value
