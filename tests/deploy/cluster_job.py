"""An oracle job for ``spark-submit`` on several executor JVMs (run by test_spark_cluster.py).

``spark-submit --master local-cluster[2,2,1024] cluster_job.py CHECKPOINT_DIR`` runs the
oracle pipeline (docs/testing.md) at parallelism 2 with checkpoints every 100 ms and kills one
executor JVM (``kill -9``) once the job runs and checkpoints complete. Spark's standalone
master starts a replacement executor; undertow resubmits its barrier stage and restores the
latest checkpoint.
Prints ``ORACLE`` with the counts and exits 0 only if the oracle is all 0 after a restart.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.request

from pyspark.sql import SparkSession

from undertow.common import Configuration
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

KEYS, RECORDS_PER_KEY = 20, 2000


def executor_pids(app_id: str) -> list[int]:
    """Executor JVMs of this application (their command line names the app id)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "CoarseGrainedExecutorBackend" in cmdline and app_id in cmdline:
            found.append(int(entry))
    return sorted(found)


def _parents() -> dict[int, int]:
    """Every process's parent pid (from /proc/PID/stat)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # the command may hold spaces and parentheses: fields follow the last ')'
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents


def executors_busiest_first(app_id: str) -> list[int]:
    """The executor JVMs, those with more descendant processes (Python daemon, workers) first:
    both tasks of the barrier stage may land on one executor, and killing the idle one proves
    nothing."""
    executors = executor_pids(app_id)
    parents = _parents()
    descendants = dict.fromkeys(executors, 0)
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor not in descendants:
            ancestor = parents.get(ancestor)
        if ancestor:
            descendants[ancestor] += 1
    return sorted(executors, key=lambda pid: -descendants[pid])


def main() -> int:
    directory = sys.argv[1]
    spark = SparkSession.builder.getOrCreate()
    app_id = spark.sparkContext.applicationId
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration(
            {
                "execution.target": "spark",
                "execution.checkpointing.interval": "100 ms",
                "execution.checkpointing.dir": directory,
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "5",
                "restart-strategy.fixed-delay.delay": "0 ms",
            }
        )
    )
    env.set_parallelism(2)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=3_000.0))
    client = env.execute_async("oracle on local-cluster")
    deadline = time.monotonic() + 120
    while client.get_job_status().result() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.05)
    killed: list[int] = []

    def kill_one_executor() -> None:
        # once a checkpoint completed, so the restore has one (REST, as a user would see it)
        url = f"{client.get_rest_address()}/jobs/{client.get_job_id()}/checkpoints"
        while time.monotonic() < deadline:
            with urllib.request.urlopen(url, timeout=5) as response:
                if json.load(response)["counts"]["completed"] >= 1:
                    break
            time.sleep(0.05)
        pids = executors_busiest_first(app_id)
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            print(f"killed executor JVM {pids[0]} of {pids}", flush=True)

    killer = threading.Thread(target=kill_one_executor, daemon=True)
    killer.start()
    result = client.get_job_execution_result(timeout=300)
    killer.join()
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    print(f"ORACLE {oracle}", flush=True)
    oracle.assert_exactly_once()
    if not killed or not oracle.restarts:
        print("no executor was killed or the job did not restart", flush=True)
        return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
