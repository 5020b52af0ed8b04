"""benchmarks/kafka.py's job on PyFlink 2.3, run as a subprocess of the PyFlink venv's Python.

Kafka ``in`` -> parse ``"<key>,<ts>"`` -> key_by -> running count (reduce) -> ``"<key>,<count>"``
-> Kafka ``out``, p=2, on PyFlink's MiniCluster with Flink's own Kafka connector (the
flink-sql-connector-kafka jar given by ``--jar``): the same DataStream code as undertow's side
of the benchmark, with PyFlink's imports.

Protocol with the parent: prints ``READY`` once the job was submitted, ``FAILED <reason>`` (one
line) if it could not be; cancels the job and exits when its stdin closes or reads a line.
"""

from __future__ import annotations

import argparse
import sys
import traceback


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source-topic", required=True)
    parser.add_argument("--sink-topic", required=True)
    parser.add_argument("--guarantee", choices=["EXACTLY_ONCE", "AT_LEAST_ONCE"], required=True)
    parser.add_argument("--interval-ms", type=int, required=True)
    parser.add_argument("--jar", required=True)
    parser.add_argument("--python-mode", default="process", choices=["process", "thread"])
    args = parser.parse_args()

    from pyflink.common import Configuration, Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    config = Configuration()
    config.set_string("pipeline.jars", f"file://{args.jar}")
    config.set_string("python.execution-mode", args.python_mode)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_parallelism(2)
        env.enable_checkpointing(args.interval_ms)
        source = (
            KafkaSource.builder()
            .set_bootstrap_servers(args.bootstrap)
            .set_topics(args.source_topic)
            .set_group_id("pyflink-bench")
            .set_starting_offsets(KafkaOffsetsInitializer.earliest())
            .set_value_only_deserializer(SimpleStringSchema())
            .build()
        )
        sink = (
            KafkaSink.builder()
            .set_bootstrap_servers(args.bootstrap)
            .set_record_serializer(
                KafkaRecordSerializationSchema.builder()
                .set_topic(args.sink_topic)
                .set_value_serialization_schema(SimpleStringSchema())
                .build()
            )
            .set_delivery_guarantee(getattr(DeliveryGuarantee, args.guarantee))
            .set_transactional_id_prefix(f"pyflink-{args.sink_topic}")
            # the broker's transaction.max.timeout.ms is 15 min; Flink's default asks for 1 h
            .set_property("transaction.timeout.ms", "600000")
            .build()
        )
        (
            env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
            .map(
                lambda v: (v.split(",", 1)[0], 1),
                output_type=Types.TUPLE([Types.STRING(), Types.LONG()]),
            )
            .key_by(lambda t: t[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .map(lambda t: f"{t[0]},{t[1]}", output_type=Types.STRING())
            .sink_to(sink)
        )
        client = env.execute_async("undertow kafka benchmark (PyFlink)")
    except Exception as err:  # the reason goes to the parent, which prints it
        print(f"FAILED {type(err).__name__}: {' '.join(str(err).split())[:600]}", flush=True)
        traceback.print_exc(file=sys.stderr)
        return 1
    print("READY", flush=True)
    sys.stdin.readline()
    try:
        client.cancel().result()
    except Exception as err:  # a job that failed on its own cannot be cancelled: say why
        print(f"FAILED {type(err).__name__}: {' '.join(str(err).split())[:600]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
