"""Kafka -> keyed operator -> Kafka EXACTLY_ONCE on a Spark standalone cluster of test hosts
(run by test_kafka_hosts.py).

``python kafka_job.py SETTINGS_JSON`` reads the settings' source topic from the broker at
``bootstrap`` (bounded: to the offsets it held at start), keys the oracle records, runs the
oracle's stateful operator (spinning ``spin_s`` per record, so the job lasts long enough for a
fault) and writes each output to the sink topic, EXACTLY_ONCE, at parallelism 2 on the Spark
master and driver address the settings name (:mod:`undertow.testing.kafka_oracle_job`, the
parts tests/e2e/test_kafka_to_kafka.py runs too). Prints ``REST <url> <job id>`` once the job
runs and ``DONE`` when it finished; the test reads the sink topic with a read_committed
consumer.
"""

from __future__ import annotations

import json
import sys

from cluster_job import start_on_the_cluster  # this script's folder: run as a script

from undertow.common import WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.testing.kafka_oracle_job import SpinningOracleFunction, oracle_sink, oracle_source
from undertow.testing.oracle import oracle_key


def main() -> int:
    settings = json.loads(sys.argv[1])
    bootstrap = settings.pop("bootstrap")
    source_topic, sink_topic = settings.pop("source_topic"), settings.pop("sink_topic")
    spin_s = float(settings.pop("spin_s"))

    def build(env: StreamExecutionEnvironment) -> None:
        source = oracle_source(bootstrap, source_topic)
        stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").uid("kafka")
        keyed = stream.key_by(oracle_key)
        stateful = keyed.process(SpinningOracleFunction(spin_s)).uid("stateful")
        stateful.sink_to(oracle_sink(bootstrap, sink_topic, f"cluster-{sink_topic}")).uid(
            "kafka-sink"
        )

    client = start_on_the_cluster(settings, "kafka across hosts", build)
    client.get_job_execution_result(timeout=400)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
