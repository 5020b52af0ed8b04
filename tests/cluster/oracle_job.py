"""The oracle job on a Spark standalone cluster of test hosts (run by test_spark_hosts.py).

``python oracle_job.py SETTINGS_JSON`` runs the oracle pipeline (docs/testing.md) at
parallelism 2 on the Spark master and driver address the settings name, prints
``REST <url> <job id>`` once the job runs (the test injects its faults through that), then
``ORACLE <counts>`` and exits 0 only if lost = duplicated = out-of-order = corrupt = 0.
"""

from __future__ import annotations

import json
import sys
import time

from undertow.common import Configuration
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline


def main() -> int:
    settings = json.loads(sys.argv[1])
    keys, per_key = settings.pop("keys"), settings.pop("records_per_key")
    rate = settings.pop("records_per_second")
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
    build_pipeline(env, OracleSource(keys, per_key, records_per_second=rate))
    client = env.execute_async("oracle across hosts")
    deadline = time.monotonic() + 180
    while client.get_job_status() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"REST {client.get_rest_address()} {client.get_job_id()}", flush=True)
    result = client.get_job_execution_result(timeout=400)
    oracle = OracleResult.from_job_result(result, keys, per_key)
    print(f"ORACLE {oracle}", flush=True)
    oracle.assert_exactly_once()
    return 0


if __name__ == "__main__":
    sys.exit(main())
