"""Kafka -> keyed operator -> Kafka EXACTLY_ONCE on a Spark standalone cluster of test hosts
(run by test_kafka_hosts.py).

``python kafka_job.py SETTINGS_JSON`` reads the settings' source topic from the broker at
``bootstrap`` (bounded: to the offsets it held at start), keys the oracle records, runs the
oracle's stateful operator (spinning ``spin_s`` per record, so the job lasts long enough for a
fault) and writes each output to the sink topic, EXACTLY_ONCE, at parallelism 2 on the Spark
master and driver address the settings name. Prints ``REST <url> <job id>`` once the job runs
and ``DONE`` when it finished; the test reads the sink topic with a read_committed consumer.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import msgpack

from undertow.common import Configuration, WatermarkStrategy
from undertow.common.serialization import DeserializationSchema
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from undertow.testing.kafka_oracle import OracleKeySchema, OracleOutputSchema
from undertow.testing.oracle import OracleRecord, OracleStatefulFunction, oracle_key


class OracleRecordSchema(DeserializationSchema):
    """An oracle record from msgpack ``[magic, key, seq, payload]``."""

    def deserialize(self, message: bytes) -> OracleRecord:
        return OracleRecord(*msgpack.unpackb(message))


class SpinningStatefulFunction(OracleStatefulFunction):
    """The oracle's stateful operator, busy ``spin_s`` per record (the job's bottleneck)."""

    def __init__(self, spin_s: float) -> None:
        super().__init__()
        self.spin_s = spin_s

    def process_element(self, value: Any, ctx: Any) -> Any:
        until = time.perf_counter() + self.spin_s
        while time.perf_counter() < until:
            pass
        return super().process_element(value, ctx)


def main() -> int:
    settings = json.loads(sys.argv[1])
    bootstrap = settings.pop("bootstrap")
    source_topic, sink_topic = settings.pop("source_topic"), settings.pop("sink_topic")
    spin_s = float(settings.pop("spin_s"))
    config = {
        "execution.target": "spark",
        "execution.checkpointing.interval": "200 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "5",
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        "spark.ui.enabled": "false",
        "spark.executor.memory": "1g",
        **settings,
    }
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(config))
    env.set_parallelism(2)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(source_topic)
        .set_group_id(f"{source_topic}-group")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(OracleRecordSchema())
        .build()
    )
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").uid("kafka")
    stateful = stream.key_by(oracle_key).process(SpinningStatefulFunction(spin_s)).uid("stateful")
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(sink_topic)
        .set_key_serialization_schema(OracleKeySchema())
        .set_value_serialization_schema(OracleOutputSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"cluster-{sink_topic}")
        .build()
    )
    stateful.sink_to(sink).uid("kafka-sink")
    client = env.execute_async("kafka across hosts")
    deadline = time.monotonic() + 180
    while client.get_job_status() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"REST {client.get_rest_address()} {client.get_job_id()}", flush=True)
    client.get_job_execution_result(timeout=400)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
