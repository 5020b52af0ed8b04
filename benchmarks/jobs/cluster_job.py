"""The job benchmarks/cluster.py runs on a Spark standalone cluster of test hosts.

``python cluster_job.py SETTINGS_JSON``: numbers 0..records-1 from a data generator, a map, a
key_by over 1,000 keys and a running sum into a discarding sink, at parallelism 2, with
checkpoints. Prints ``REST <url> <job id>`` once the job runs, then ``DONE <seconds>`` (from
RUNNING to the end) when it finished.
"""

from __future__ import annotations

import json
import sys
import time

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink


def main() -> int:
    settings = json.loads(sys.argv[1])
    records = int(settings.pop("records"))
    rate = settings.pop("records_per_second", None)
    config = {
        "execution.target": "spark",
        "execution.checkpointing.interval": "200 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "5",
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        "web.checkpoints.history": "1000",
        "spark.ui.enabled": "false",
        "spark.executor.memory": "1g",
        **settings,
    }
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(config))
    env.set_parallelism(2)
    source = DataGeneratorSource(lambda i: i, count=records, records_per_second=rate)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
        .map(lambda n: (n % 1000, n))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .sink_to(DiscardingSink())
    )
    client = env.execute_async("cluster benchmark")
    deadline = time.monotonic() + 180
    while client.get_job_status().result() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    print(f"REST {client.get_rest_address()} {client.get_job_id()}", flush=True)
    client.get_job_execution_result(timeout=900)
    print(f"DONE {time.monotonic() - started:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
