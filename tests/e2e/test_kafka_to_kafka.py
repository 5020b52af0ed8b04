"""Kafka -> keyed operator -> Kafka, EXACTLY_ONCE, against the real test broker (issue 28).

The job: a bounded KafkaSource over a topic of oracle records (each key in one partition, so
the topic keeps each key's order) -> key_by -> the oracle's stateful operator -> KafkaSink
EXACTLY_ONCE, each output keyed by the oracle key. What a read_committed consumer sees of the
output topic is counted by :mod:`undertow.testing.kafka_oracle`: lost = duplicated =
out-of-order = corrupt = state mismatch = 0.

* unaligned checkpoints under backpressure (a keyed operator that spins on every record), with
  a seeded ``kill -9`` of a worker: the restored checkpoint holds in-flight data;
* a rescale from a retained checkpoint, 2 -> 3: the source's 4 partitions are handed to 3
  readers from the 2 readers' checkpointed positions, and the sink's 2 writers' state (their
  checkpoints' output, not yet committed) to 3 writers;
* the kill run again on the ``spark`` target (``make soak``).

The kill's seed is printed; replay with ``UNDERTOW_TEST_SEED``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.testing import kafka_oracle_job as oracle_job
from undertow.testing.kafka_oracle import read_committed, verdict
from undertow.testing.oracle import oracle_key, oracle_seed
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory
from .kills import COMPLETED, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import CountingMap, handled_in_finishing_attempt, restored_checkpoints

KEYS = 8
SOURCE_COUNT = "kafka-to-kafka-source"
JOB_TIMEOUT_S = 120.0


def fill(bootstrap: str, topic: str, partitions: int, records_per_key: int) -> None:
    oracle_job.fill(bootstrap, topic, KEYS, records_per_key, partitions)


def kafka_job(
    env: StreamExecutionEnvironment,
    bootstrap: str,
    source_topic: str,
    sink_topic: str,
    spin_s: float,
) -> None:
    source = oracle_job.oracle_source(bootstrap, source_topic)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").uid("kafka")
    stream = stream.map(CountingMap(SOURCE_COUNT)).uid("count")  # the source resumed, or not
    spinning = oracle_job.SpinningOracleFunction(spin_s)
    stateful = stream.key_by(oracle_key).process(spinning).uid("stateful")
    stateful.sink_to(oracle_job.oracle_sink(bootstrap, sink_topic, f"k2k-{sink_topic}")).uid(
        "kafka-sink"
    )


def config(tmp_path: Path, restarts: int, unaligned: bool) -> dict[str, Any]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "execution.checkpointing.unaligned.enabled": str(unaligned).lower(),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
    }


def source_resumed(result: Any, records: int) -> None:
    """Restore evidence: the finishing attempt handled fewer records than the topic holds."""
    handled = handled_in_finishing_attempt(result, SOURCE_COUNT)
    evidence(handled < records, f"the finishing attempt handled all {handled} records")


KILL_RECORDS_PER_KEY = 300
#: per record: 8 x 300 records over 2 operator subtasks take ~1.2 s of spinning
KILL_SPIN_S = 0.001


@pytest.mark.restores(catches=["source-positions"])
@pytest.mark.parametrize(
    "target",
    # spark: ~90 s on a loaded 2-core machine, Spark's start aside: off CI's budget
    ["local", pytest.param("spark", marks=pytest.mark.soak)],
)
def test_exactly_once_with_unaligned_checkpoints_under_backpressure_and_a_kill(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kafka_bootstrap: str,
    new_topic: Any,
) -> None:
    """Unaligned checkpoints under backpressure, a worker killed: the read_committed output
    is exact, and the restored checkpoint held in-flight data."""
    seed = oracle_seed()
    source_topic, sink_topic = new_topic(2), new_topic(3)
    fill(kafka_bootstrap, source_topic, 2, KILL_RECORDS_PER_KEY)
    env = make_env(parallelism=2, config=config(tmp_path, restarts=2, unaligned=True))
    kafka_job(env, kafka_bootstrap, source_topic, sink_topic, KILL_SPIN_S)
    client = env.execute_async("kafka -> kafka, unaligned, kill")
    result, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.05, latest_s=0.4, timeout_s=JOB_TIMEOUT_S,
        in_flight=True,  # not a count: the consumer's first fetch may follow 2 checkpoints
    )  # fmt: skip
    restored = restored_checkpoints(console)
    evidence(bool(restored), f"seed {seed}: no restore line:\n{console}")
    source_resumed(result, KEYS * KILL_RECORDS_PER_KEY)
    found = verdict(read_committed(kafka_bootstrap, sink_topic), KEYS, KILL_RECORDS_PER_KEY)
    assert not any(found.counts().values()), (seed, found)
    assert found.received == KEYS * KILL_RECORDS_PER_KEY, (seed, found)
    unaligned = [r for r in restored if r[1] == "unaligned" and r[2] > 0]
    assert unaligned, f"seed {seed}: no restore carried in-flight data: {restored}"


RESCALE_RECORDS_PER_KEY = 400
RESCALE_SPIN_S = 0.001


@pytest.mark.restores(catches=["source-positions"])
@pytest.mark.parametrize("target", ["local-threads"])
def test_rescale_from_a_checkpoint_two_to_three(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kafka_bootstrap: str,
    new_topic: Any,
) -> None:
    """A p=2 job over 4 partitions is cancelled mid-stream after checkpoints completed (kept
    on cancellation); a p=3 job resumes from the newest: the 4 splits at their checkpointed
    offsets go to 3 readers, the 2 sink writers' pending output to 3 writers; the committed
    output is exact and the p=3 job read fewer records than the topic holds."""
    source_topic, sink_topic = new_topic(4), new_topic(3)
    fill(kafka_bootstrap, source_topic, 4, RESCALE_RECORDS_PER_KEY)
    settings = {
        **config(tmp_path, restarts=0, unaligned=False),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    first = make_env(parallelism=2, config=settings)
    kafka_job(first, kafka_bootstrap, source_topic, sink_topic, RESCALE_SPIN_S)
    client = first.execute_async("kafka -> kafka p=2")
    console, deadline = "", time.monotonic() + 60
    while len(COMPLETED.findall(console)) < 3:
        assert time.monotonic() < deadline, f"no 3 checkpoints in the p=2 job:\n{console}"
        time.sleep(0.02)
        console += capsys.readouterr().err
    client.cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled: the result is an error
        client.get_job_execution_result(timeout=60)
    checkpoint = newest_checkpoint(tmp_path / "checkpoints")

    second = make_env(
        parallelism=3, config={**settings, "execution.state-recovery.path": str(checkpoint)}
    )
    kafka_job(second, kafka_bootstrap, source_topic, sink_topic, RESCALE_SPIN_S)
    result = second.execute_async("kafka -> kafka p=3").get_job_execution_result(
        timeout=JOB_TIMEOUT_S
    )
    source_resumed(result, KEYS * RESCALE_RECORDS_PER_KEY)
    found = verdict(read_committed(kafka_bootstrap, sink_topic), KEYS, RESCALE_RECORDS_PER_KEY)
    assert not any(found.counts().values()), (checkpoint, found)
    assert found.received == KEYS * RESCALE_RECORDS_PER_KEY, (checkpoint, found)


def newest_checkpoint(directory: Path) -> Path:
    """The newest ``chk-N`` folder under ``directory`` (any job id)."""
    found = sorted(directory.glob("*/chk-*"), key=lambda p: int(p.name.split("-")[1]))
    assert found, f"no retained checkpoint under {directory}"
    return found[-1]
