"""``KafkaSource``: Kafka topics as a FLIP-27 source, with PyFlink 2.x's builder API.

::

    source = (KafkaSource.builder().set_bootstrap_servers("localhost:9092")
              .set_topics("input").set_group_id("my-job")
              .set_value_only_deserializer(SimpleStringSchema()).build())
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")

The source holds only configuration and is pickled to the JobMaster (enumerator) and every
subtask (reader). Properties are librdkafka's, except the source options in
``SOURCE_OPTIONS``, which never reach the client.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from undertow.api.output_tag import OutputTag
from undertow.common.serialization import DeserializationSchema
from undertow.common.typeinfo import PickledBytesTypeInfo, TypeInformation
from undertow.connectors.kafka.admin import GroupOffsetLookup, KafkaAdmin, Subscription
from undertow.connectors.kafka.batch_deserializer import KafkaBatchDeserializationSchema
from undertow.connectors.kafka.enumerator import (
    EnumeratorSettings,
    KafkaSourceEnumerator,
    restore_state,
)
from undertow.connectors.kafka.java_properties import librdkafka_property
from undertow.connectors.kafka.metadata import PROPAGATION_KEY
from undertow.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition
from undertow.connectors.kafka.reader import KafkaSourceReader, ReaderSettings
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.connectors.source import (
    Boundedness,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
)

DISCOVERY_INTERVAL = "partition.discovery.interval.ms"
COMMIT_ON_CHECKPOINT = "commit.offsets.on.checkpoint"
CLIENT_ID_PREFIX = "client.id.prefix"
API_TIMEOUT = "default.api.timeout.ms"
SOURCE_OPTIONS = (DISCOVERY_INTERVAL, COMMIT_ON_CHECKPOINT, CLIENT_ID_PREFIX, API_TIMEOUT)
#: the consumer group of a source without one (assign() needs a group id, nothing is committed)
NO_GROUP = "undertow-kafka-source"


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


class KafkaSource(Source[KafkaPartitionSplit]):
    """Built by :meth:`builder`; immutable."""

    def __init__(
        self,
        properties: Mapping[str, str],
        subscription: Subscription,
        starting: KafkaOffsetsInitializer,
        stopping: KafkaOffsetsInitializer | None,
        boundedness: Boundedness,
        deserializer: DeserializationSchema | KafkaBatchDeserializationSchema,
        bad_record_tag: OutputTag | None = None,
    ) -> None:
        self.properties = dict(properties)
        self.subscription = subscription
        self.starting = starting
        self.stopping = stopping
        self.boundedness = boundedness
        self.deserializer = deserializer
        self.bad_record_tag = bad_record_tag

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    @property
    def bootstrap_servers(self) -> str:
        return self.properties["bootstrap.servers"]

    @property
    def group_id(self) -> str | None:
        return self.properties.get("group.id")

    @property
    def discovery_interval_ms(self) -> int:
        if self.boundedness is Boundedness.BOUNDED:
            return -1
        return int(self.properties.get(DISCOVERY_INTERVAL, 300_000))

    def describe(self) -> str:
        return f"{self.subscription.describe()} at {self.bootstrap_servers}"

    def client_config(self) -> dict[str, Any]:
        """The librdkafka configuration (source options removed)."""
        config: dict[str, Any] = {
            k: v for k, v in self.properties.items() if k not in SOURCE_OPTIONS
        }
        config.setdefault("group.id", NO_GROUP)
        config.setdefault("isolation.level", "read_committed")
        config.setdefault("auto.offset.reset", "earliest")
        config["enable.auto.commit"] = False
        config["enable.partition.eof"] = True
        return config

    def get_produced_type(self) -> TypeInformation | None:
        """The value deserializer's type, as Flink's KafkaSource declares it (``None`` for a
        batch deserializer, or one that produces pickled Python objects)."""
        if not isinstance(self.deserializer, DeserializationSchema):
            return None
        produced = self.deserializer.get_produced_type()
        return None if isinstance(produced, PickledBytesTypeInfo) else produced

    def get_boundedness(self) -> Boundedness:
        return self.boundedness

    def create_reader(self, context: SourceReaderContext) -> SourceReader[KafkaPartitionSplit]:
        config = self.client_config()
        if CLIENT_ID_PREFIX in self.properties:
            config["client.id.prefix"] = self.properties[CLIENT_ID_PREFIX]
        commit = self.group_id is not None and _flag(
            self.properties.get(COMMIT_ON_CHECKPOINT, "true")
        )
        settings = ReaderSettings(
            config,
            self.deserializer,
            self.discovery_interval_ms,
            commit,
            None if self.bad_record_tag is None else self.bad_record_tag.tag_id,
            self.describe(),
        )
        return KafkaSourceReader(context, settings)

    def _admin(self) -> KafkaAdmin:
        config = {
            k: v
            for k, v in self.client_config().items()
            if k in _ADMIN_KEYS or k.startswith(("security.", "sasl.", "ssl."))
        }
        return KafkaAdmin(config, int(self.properties.get(API_TIMEOUT, 60_000)) / 1000)

    def _settings(self) -> EnumeratorSettings:
        return EnumeratorSettings(
            self.subscription,
            self.starting,
            self.stopping,
            self.boundedness is Boundedness.BOUNDED,
            self.discovery_interval_ms,
        )

    def create_enumerator(
        self, context: SplitEnumeratorContext[KafkaPartitionSplit]
    ) -> SplitEnumerator[KafkaPartitionSplit]:
        return KafkaSourceEnumerator(context, self._settings(), self._admin, self._offsets_lookup)

    def _offsets_lookup(self, admin: KafkaAdmin) -> GroupOffsetLookup:
        return GroupOffsetLookup(admin, self.group_id)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[KafkaPartitionSplit], checkpoint: Any
    ) -> SplitEnumerator[KafkaPartitionSplit]:
        state = restore_state(checkpoint, f"KafkaSource ({self.describe()})")
        return KafkaSourceEnumerator(
            context, self._settings(), self._admin, self._offsets_lookup, state
        )

    def __repr__(self) -> str:
        return f"KafkaSource({self.describe()}, {self.boundedness.name})"


_ADMIN_KEYS = ("bootstrap.servers", "client.id", "socket.timeout.ms", "security.protocol",
               PROPAGATION_KEY)  # fmt: skip


class KafkaSourceBuilder:
    """PyFlink's ``KafkaSourceBuilder``: every setter returns the builder."""

    def __init__(self) -> None:
        self._properties: dict[str, str] = {}
        self._subscription: Subscription | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._boundedness = Boundedness.CONTINUOUS_UNBOUNDED
        self._deserializer: DeserializationSchema | KafkaBatchDeserializationSchema | None = None
        self._bad_record_tag: OutputTag | None = None

    def build(self) -> KafkaSource:
        if not self._properties.get("bootstrap.servers"):
            raise ValueError("KafkaSource: set_bootstrap_servers() is required")
        if self._subscription is None:
            raise ValueError(
                "KafkaSource: say what to read with set_topics(), set_topic_pattern() or "
                "set_partitions()"
            )
        if self._deserializer is None:
            raise ValueError("KafkaSource: set_value_only_deserializer() is required")
        return KafkaSource(self._properties, self._subscription, self._starting,
                           self._stopping, self._boundedness, self._deserializer,
                           self._bad_record_tag)  # fmt: skip

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        return self.set_property("bootstrap.servers", bootstrap_servers)

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        return self.set_property("group.id", group_id)

    def _subscribe(self, subscription: Subscription) -> KafkaSourceBuilder:
        if self._subscription is not None:
            raise ValueError(
                f"KafkaSource: already reading {self._subscription.describe()}; use only one "
                f"of set_topics(), set_topic_pattern(), set_partitions()"
            )
        self._subscription = subscription
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        if not topics or not all(isinstance(t, str) and t for t in topics):
            raise ValueError(f"set_topics(): expected topic names, got {topics!r}")
        return self._subscribe(Subscription(topics=tuple(topics)))

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        import re

        try:
            re.compile(topic_pattern)
        except (re.error, TypeError) as err:
            raise ValueError(
                f"set_topic_pattern(): not a regular expression: {topic_pattern!r} ({err})"
            ) from err
        return self._subscribe(Subscription(pattern=topic_pattern))

    def set_partitions(self, partitions: Iterable[KafkaTopicPartition]) -> KafkaSourceBuilder:
        chosen = frozenset(partitions)
        if not chosen or not all(isinstance(p, KafkaTopicPartition) for p in chosen):
            raise ValueError(f"set_partitions(): expected KafkaTopicPartitions, got {partitions!r}")
        return self._subscribe(Subscription(partitions=chosen))

    def set_starting_offsets(
        self, starting_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        self._starting = _initializer(starting_offsets_initializer, "set_starting_offsets")
        return self

    def set_unbounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """Stop each partition at the given offsets, but stay an unbounded source."""
        self._stopping = _initializer(stopping_offsets_initializer, "set_unbounded")
        self._boundedness = Boundedness.CONTINUOUS_UNBOUNDED
        return self

    def set_bounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """A bounded source: stop each partition at the given offsets, then end (partition
        discovery is off)."""
        self._stopping = _initializer(stopping_offsets_initializer, "set_bounded")
        self._boundedness = Boundedness.BOUNDED
        return self

    def set_value_only_deserializer(
        self, deserialization_schema: DeserializationSchema | KafkaBatchDeserializationSchema
    ) -> KafkaSourceBuilder:
        """A record per value, or with a :class:`KafkaBatchDeserializationSchema` one
        ``pyarrow.RecordBatch`` per fetch (read the stream with ``.as_batches()``)."""
        schemas = (DeserializationSchema, KafkaBatchDeserializationSchema)
        if not isinstance(deserialization_schema, schemas):
            raise TypeError(
                f"set_value_only_deserializer(): expected a DeserializationSchema or a "
                f"KafkaBatchDeserializationSchema, got {deserialization_schema!r}"
            )
        self._deserializer = deserialization_schema
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        return self.set_property(CLIENT_ID_PREFIX, prefix)

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A librdkafka consumer property, a Java client name for one (:mod:`.java_properties`)
        or a source option (``SOURCE_OPTIONS``)."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"set_property(): the key must be a non-empty str, got {key!r}")
        translated = librdkafka_property(key, str(value))
        if translated is not None:
            self._properties[translated[0]] = translated[1]
        return self

    def set_properties(self, props: Mapping[str, str]) -> KafkaSourceBuilder:
        for key, value in dict(props).items():
            self.set_property(key, value)
        return self

    def set_bad_record_side_output(self, tag: OutputTag) -> KafkaSourceBuilder:
        """undertow's addition: records the deserializer rejects go to side output ``tag`` as
        :class:`~.reader.KafkaBadRecord` instead of failing the job."""
        if not isinstance(tag, OutputTag):
            raise TypeError(f"set_bad_record_side_output(): expected an OutputTag, got {tag!r}")
        self._bad_record_tag = tag
        return self


def _initializer(value: Any, method: str) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        raise TypeError(f"{method}(): expected a KafkaOffsetsInitializer, got {value!r}")
    return value
