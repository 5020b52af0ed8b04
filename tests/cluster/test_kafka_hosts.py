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

from pathlib import Path

import pytest

from undertow.testing.kafka_oracle import read_committed, verdict
from undertow.testing.kafka_oracle_job import fill
from undertow.testing.kafka_topics import create_topic

from . import netns
from .faults import cluster_settings, kill_a_host_then_bring_it_back, run_job
from .spark_cluster import spark_cluster

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


@pytest.mark.timeout(900)
def test_kafka_exactly_once_across_hosts_through_a_host_kill(tmp_path: Path) -> None:
    with spark_cluster(tmp_path / "spark-logs", storage=True, kafka=True) as cluster:
        bootstrap = cluster.kafka_bootstrap
        source_topic, sink_topic = "oracle-in", "oracle-out"
        create_topic(bootstrap, source_topic, PARTITIONS)
        create_topic(bootstrap, sink_topic, 3)
        fill(bootstrap, source_topic, KEYS, RECORDS_PER_KEY, PARTITIONS)
        settings = {
            **cluster_settings(cluster, tmp_path),
            "bootstrap": bootstrap,
            "source_topic": source_topic,
            "sink_topic": sink_topic,
            "spin_s": SPIN_S,
        }
        run_job(cluster, tmp_path, JOB, settings, [kill_a_host_then_bring_it_back],
                checkpoints_first=2)  # fmt: skip
        found = verdict(read_committed(bootstrap, sink_topic), KEYS, RECORDS_PER_KEY)
    print(f"read_committed output: {found}")
    assert not any(found.counts().values()), found
    assert found.received == KEYS * RECORDS_PER_KEY, found
