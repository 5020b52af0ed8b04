"""undertow on a Spark standalone cluster of hosts with their own addresses (issue 30).

One job, the oracle pipeline at parallelism 2, runs on a master and two worker hosts (network
namespaces on a bridge, :mod:`tests.cluster.spark_cluster`), with the driver on a third
address, so the JobMaster's control connections, the data plane and Spark's own RPC cross
hosts. Two faults in the one run (the short scenario CI affords):

1. every process of a worker host hosting an undertow worker is killed (``kill -9``); the
   job recovers on the other host (Spark reschedules the barrier stage) and the host comes
   back (its Spark worker is started again);
2. a host hosting an undertow worker is cut off (its link down) for longer than the
   heartbeat timeout, then healed: the JobMaster declares the attempt failed and restarts it,
   and the old attempt's worker that lives on behind the cut must not disturb the new one.

The oracle (lost = duplicated = out-of-order = corrupt = 0) and the restarts are checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from . import netns
from .spark_cluster import SparkCluster, spark_cluster

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        netns.unavailable() is not None, reason=f"no test hosts: {netns.unavailable()}"
    ),
]

JOB = Path(__file__).with_name("oracle_job.py")
HEARTBEAT_TIMEOUT_S = 4


def _checkpoints(url: str, job_id: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/jobs/{job_id}/checkpoints", timeout=5) as response:
        body: dict[str, Any] = json.loads(response.read())
    return body


def _wait(what: str, predicate: Any, timeout_s: float, job: subprocess.Popen[str]) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if job.poll() is not None:
            raise AssertionError(f"the job ended while waiting for {what}")
        try:
            value = predicate()
        except (OSError, ValueError, KeyError):
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _completed(url: str, job_id: str) -> int:
    return int(_checkpoints(url, job_id)["counts"]["completed"])


def _restored(url: str, job_id: str) -> int | None:
    restored = _checkpoints(url, job_id)["latest"]["restored"]
    return None if restored is None else int(restored["id"])


def _run(cluster: SparkCluster, tmp_path: Path) -> None:
    settings = {
        "spark.master": cluster.master_url,
        "spark.driver.host": cluster.network.driver_address,
        "spark.driver.bindAddress": cluster.network.driver_address,
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "heartbeat.interval": "500 ms",
        "heartbeat.timeout": f"{HEARTBEAT_TIMEOUT_S} s",
        "keys": 20,
        "records_per_key": 3000,
        "records_per_second": 1500.0,
    }
    env = cluster.env(cluster.network.driver_address)
    job = subprocess.Popen([sys.executable, str(JOB), json.dumps(settings)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=tmp_path)  # fmt: skip
    output: list[str] = []
    try:
        assert job.stdout is not None
        for line in job.stdout:
            output.append(line)
            if line.startswith("REST "):
                break
        url, job_id = output[-1].split()[1:3]
        _wait("3 completed checkpoints", lambda: _completed(url, job_id) >= 3, 120, job)

        # 1. a host dies with everything on it
        victim = _wait("a host running an undertow worker", cluster.hosts_running_undertow,
                       30, job)[0]  # fmt: skip
        killed = cluster.kill_host(victim)
        print(f"killed {killed} processes of {victim.name} ({victim.address})")
        before = _completed(url, job_id)
        _wait("a restore after the kill", lambda: _restored(url, job_id) is not None, 120, job)
        _wait("checkpoints after the restore", lambda: _completed(url, job_id) >= before + 2,
              120, job)  # fmt: skip
        cluster.start_worker(victim)
        cluster.wait_for_workers(2)

        # 2. a host is cut off for longer than the heartbeat timeout, then healed
        first = _restored(url, job_id)
        cut = _wait("a host running an undertow worker", cluster.hosts_running_undertow,
                    30, job)[0]  # fmt: skip
        cut.cut()
        try:
            time.sleep(HEARTBEAT_TIMEOUT_S + 2)
        finally:
            cut.heal()
        print(f"cut {cut.name} ({cut.address}) off for {HEARTBEAT_TIMEOUT_S + 2} s")
        _wait("a second restore", lambda: _restored(url, job_id) not in (None, first), 120, job)

        output.extend(job.stdout)
        assert job.wait(300) == 0, "".join(output[-80:]) + cluster.logs()
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    text = "".join(output)
    assert "ORACLE lost=0, duplicated=0, out_of_order=0, corrupt=0" in text, text[-4000:]


@pytest.mark.timeout(600)
def test_oracle_survives_a_host_kill_and_a_partition(tmp_path: Path) -> None:
    with spark_cluster(tmp_path / "spark-logs") as cluster:
        _run(cluster, tmp_path)
