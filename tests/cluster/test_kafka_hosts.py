"""Kafka -> keyed operator -> Kafka EXACTLY_ONCE across hosts (issue 30, with issue 28's
connectors).

The broker (tools/kafka_broker.py) runs on a host of its own in the test cluster
(:mod:`tests.cluster.spark_cluster`), next to the Spark master, two worker hosts and the S3
store of the checkpoints; the driver is on another address. The job (kafka_job.py) reads a
topic of oracle records (each key in one partition), keys them, runs the oracle's stateful
operator and writes to a second topic in Kafka transactions. During the run every process of a
worker host running an undertow worker is killed (``kill -9``); the job restores on the other
host and the host comes back. A read_committed consumer of the output must then count
lost = duplicated = out-of-order = corrupt = state mismatch = 0 (docs/testing.md), with every
record's output present.

About five minutes on a loaded 2-core machine (315 s at load ~20, the cluster's and the
broker's start included), so a soak scenario: ``make cluster-test`` runs it, ``make test``
does not. The restore is checked through REST (:func:`kill_a_host_then_bring_it_back` waits
for it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from undertow.testing.kafka_oracle import read_committed, verdict
from undertow.testing.kafka_topics import create_topic, produce
from undertow.testing.oracle import SizeClass, make_record

from . import netns
from .spark_cluster import spark_cluster
from .test_spark_hosts import HEARTBEAT_TIMEOUT_S, RunningJob, kill_a_host_then_bring_it_back

pytestmark = [
    pytest.mark.spark,
    pytest.mark.soak,
    pytest.mark.skipif(
        netns.unavailable() is not None, reason=f"no test hosts: {netns.unavailable()}"
    ),
]

JOB = Path(__file__).with_name("kafka_job.py")
KEYS = 8
RECORDS_PER_KEY = 1500
PARTITIONS = 2
#: per record: 12,000 records over 2 operator subtasks spin ~12 s, enough for the kill
SPIN_S = 0.002
SMALL = (SizeClass(1.0, 16, 200),)


@pytest.mark.timeout(900)
def test_kafka_exactly_once_across_hosts_through_a_host_kill(tmp_path: Path) -> None:
    with spark_cluster(tmp_path / "spark-logs", storage=True, kafka=True) as cluster:
        bootstrap = cluster.kafka_bootstrap
        source_topic, sink_topic = "oracle-in", "oracle-out"
        create_topic(bootstrap, source_topic, PARTITIONS)
        create_topic(bootstrap, sink_topic, 3)
        produce(bootstrap, source_topic, [
            (key % PARTITIONS, None, msgpack.packb(list(make_record(key, seq, SMALL))))
            for seq in range(1, RECORDS_PER_KEY + 1) for key in range(KEYS)
        ])  # fmt: skip
        settings = {
            "spark.master": cluster.master_url,
            "spark.driver.host": cluster.network.driver_address,
            "spark.driver.bindAddress": cluster.network.driver_address,
            "execution.checkpointing.dir": cluster.checkpoint_dir(tmp_path / "checkpoints"),
            "heartbeat.interval": "500 ms",
            "heartbeat.timeout": f"{HEARTBEAT_TIMEOUT_S} s",
            "bootstrap": bootstrap,
            "source_topic": source_topic,
            "sink_topic": sink_topic,
            "spin_s": SPIN_S,
        }
        process = subprocess.Popen(
            [sys.executable, str(JOB), json.dumps(settings)],
            env=cluster.env(cluster.network.driver_address), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        )  # fmt: skip
        job = RunningJob(cluster, process)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                job.output.append(line)
                if line.startswith("REST "):
                    break
            job.url, job.job_id = job.output[-1].split()[1:3]
            job.wait("2 completed checkpoints", lambda: job.completed() >= 2)
            kill_a_host_then_bring_it_back(job)
            job.output.extend(process.stdout)
            assert process.wait(300) == 0, "".join(job.output[-80:]) + cluster.logs()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        found = verdict(read_committed(bootstrap, sink_topic), KEYS, RECORDS_PER_KEY)
    print(f"read_committed output: {found}")
    assert not any(found.counts().values()), found
    assert found.received == KEYS * RECORDS_PER_KEY, found
