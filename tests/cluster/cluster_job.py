"""The set-up of a job script on the test cluster (oracle_job.py, kafka_job.py), shared.

:func:`start_on_the_cluster` takes the settings the test passed (JSON, the script's one
argument: :func:`tests.cluster.faults.cluster_settings` and the scenario's own), runs the job
``build`` assembles at parallelism 2 on the ``spark`` target with checkpoints every 200 ms and
5 immediate restarts, and prints ``REST <url> <job id>`` once it runs: the line the test reads
before it injects its faults through that REST API.

Runs in the driver's process (the script's), on its main thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from undertow.common import Configuration
from undertow.datastream import JobClient, JobStatus, StreamExecutionEnvironment

#: How long the job may take to reach RUNNING (the executors' JVMs start first).
START_TIMEOUT_S = 180.0


def start_on_the_cluster(
    settings: dict[str, Any], name: str, build: Callable[[StreamExecutionEnvironment], None]
) -> JobClient:
    """Start the job ``build`` assembles, with ``settings`` over the defaults above; print
    its REST line once it runs (or after START_TIMEOUT_S, so the test's waits report)."""
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
    build(env)
    client = env.execute_async(name)
    deadline = time.monotonic() + START_TIMEOUT_S
    while client.get_job_status().result() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"REST {client.get_rest_address()} {client.get_job_id()}", flush=True)
    return client
