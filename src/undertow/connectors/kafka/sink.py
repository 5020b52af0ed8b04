"""``KafkaSink``: writes a stream to Kafka with PyFlink 2.x's builder::

    sink = (KafkaSink.builder().set_bootstrap_servers("127.0.0.1:9092")
            .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic("counts")
                                   .set_value_serialization_schema(SimpleStringSchema()).build())
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .set_transactional_id_prefix("wordcount").build())
    stream.sink_to(sink)

``NONE`` and ``AT_LEAST_ONCE`` write through a plain producer; ``EXACTLY_ONCE`` is a
write-ahead sink (:mod:`.sink_protocol`, :mod:`.writer`). Immutable once built; pickled to the
writers. undertow's own options (``undertow.sink.*``): docs/kafka.md.
"""

from __future__ import annotations

from typing import Any

from undertow.connectors.kafka.java_properties import librdkafka_property
from undertow.connectors.kafka.record_serializer import KafkaRecordSerializationSchema
from undertow.connectors.kafka.sink_protocol import KafkaWriterState
from undertow.connectors.kafka.writer import (
    CrashInjector,
    ExactlyOnceKafkaWriter,
    KafkaWriter,
)
from undertow.connectors.sink import DeliveryGuarantee, Sink, SinkWriter, SinkWriterContext
from undertow.connectors.transactional_ids import TransactionalIdClaim

#: Flink's cap on the transactional id prefix (UTF-8 bytes).
MAXIMUM_PREFIX_BYTES = 64_000


class KafkaSink(Sink):
    """Build it with :meth:`builder`."""

    def __init__(
        self,
        bootstrap_servers: str,
        delivery_guarantee: DeliveryGuarantee,
        transactional_id_prefix: str,
        record_serializer: KafkaRecordSerializationSchema,
        properties: dict[str, str],
        crash: CrashInjector | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.delivery_guarantee = delivery_guarantee
        self.transactional_id_prefix = transactional_id_prefix
        self.record_serializer = record_serializer
        self.properties = properties
        #: Test-only crash injection at the exactly-once protocol's named points.
        self.crash = crash

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return self.restore_writer(context, [])

    def restore_writer(self, context: SinkWriterContext, recovered_state: list[Any]) -> SinkWriter:
        if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            states = [s for s in recovered_state if isinstance(s, KafkaWriterState)]
            return ExactlyOnceKafkaWriter(self, context, states, self.crash)
        wait = self.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE
        return KafkaWriter(self, context, wait_for_acks=wait)

    def transactional_id_claim(self) -> TransactionalIdClaim | None:
        """``EXACTLY_ONCE``: the ids ``<prefix>-<subtask>`` on this cluster
        (:class:`~undertow.connectors.transactional_ids.ClaimsTransactionalIds`)."""
        if self.delivery_guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            return None
        topic = self.record_serializer.topic
        topics = () if topic is None else (topic,)
        return TransactionalIdClaim(
            "Kafka", self.transactional_id_prefix, self.bootstrap_servers, topics
        )

    def with_crash_injector(self, crash: CrashInjector | None) -> KafkaSink:
        """Test-only: a copy that calls ``crash`` at the named protocol points."""
        return KafkaSink(
            self.bootstrap_servers,
            self.delivery_guarantee,
            self.transactional_id_prefix,
            self.record_serializer,
            dict(self.properties),
            crash,
        )

    def __repr__(self) -> str:
        name = (
            self.transactional_id_prefix
            if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
            else self.record_serializer.topic or "topic selector"
        )
        return f"KafkaSink({name!r}, {self.delivery_guarantee.name})"


class KafkaSinkBuilder:
    """PyFlink's ``KafkaSinkBuilder``. Required: bootstrap servers and a record serializer;
    with ``EXACTLY_ONCE`` also a transactional id prefix, unique per sink and stable across
    restarts."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._guarantee = DeliveryGuarantee.NONE
        self._prefix: str | None = None
        self._serializer: KafkaRecordSerializationSchema | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
            raise ValueError(
                f"KafkaSink: bootstrap servers must be a non-empty string such as "
                f"'host:9092', got {bootstrap_servers!r}"
            )
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise TypeError(f"KafkaSink: expected a DeliveryGuarantee, got {delivery_guarantee!r}")
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        if not isinstance(transactional_id_prefix, str) or not transactional_id_prefix:
            raise ValueError(
                f"KafkaSink: the transactional id prefix must be a non-empty "
                f"string, got {transactional_id_prefix!r}"
            )
        size = len(transactional_id_prefix.encode())
        if size > MAXIMUM_PREFIX_BYTES:
            raise ValueError(
                f"KafkaSink: the transactional id prefix has {size} UTF-8 bytes, "
                f"at most {MAXIMUM_PREFIX_BYTES} are allowed"
            )
        self._prefix = transactional_id_prefix
        return self

    def set_record_serializer(
        self, record_serializer: KafkaRecordSerializationSchema
    ) -> KafkaSinkBuilder:
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise TypeError(
                "KafkaSink: set_record_serializer() takes a "
                "KafkaRecordSerializationSchema (KafkaRecordSerializationSchema"
                f".builder()...build()), got {record_serializer!r}"
            )
        self._serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        """A librdkafka producer setting, a Java client name for one
        (:mod:`.java_properties`), or one of undertow's ``undertow.sink.*`` options."""
        if key == "transactional.id":
            raise ValueError(
                "KafkaSink: transactional.id is derived from the prefix and the "
                "subtask; use set_transactional_id_prefix()"
            )
        translated = librdkafka_property(str(key), str(value))
        if translated is not None:
            self._properties[translated[0]] = translated[1]
        return self

    def build(self) -> KafkaSink:
        if self._bootstrap_servers is None:
            raise ValueError("KafkaSink: call set_bootstrap_servers() before build()")
        if self._serializer is None:
            raise ValueError("KafkaSink: call set_record_serializer() before build()")
        exactly_once = self._guarantee is DeliveryGuarantee.EXACTLY_ONCE
        if exactly_once and self._prefix is None:
            raise ValueError(
                "KafkaSink: EXACTLY_ONCE needs set_transactional_id_prefix(), a "
                "prefix unique to this sink and stable across restarts"
            )
        return KafkaSink(
            self._bootstrap_servers,
            self._guarantee,
            self._prefix or "kafka-sink",
            self._serializer,
            dict(self._properties),
        )
