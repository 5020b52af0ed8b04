"""KafkaSource end to end against the real test broker (tools/kafka_broker.py).

* the exactly-once oracle (docs/testing.md) with its records in a 2-partition topic, each
  key in one partition (so per-key order is Kafka's; the topic is filled in order by an
  idempotent producer, tests/testing/test_kafka_topics.py): KafkaSource -> key_by -> stateful op ->
  key_by -> verifying sink, checkpointed every 100 ms, with a kill -9 of a worker process;
  lost = duplicated = out-of-order = 0, and the finishing attempt shows the restore (the
  source resumed from checkpointed offsets: it sent fewer records than the topic holds);
* a bounded source over a transactional topic ends (commit markers after the last records
  must not hang it, FLINK-34470) and emits exactly the committed records, never the aborted;
* partition discovery: a partition added while the job runs is read;
* bad input: a broker that is down, a missing topic, a record the deserializer rejects.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from tests.rest_client import fetch

from undertow.common import Configuration
from undertow.common.serialization import DeserializationSchema, SimpleStringSchema
from undertow.common.watermark_strategy import WatermarkStrategy
from undertow.datastream import OutputTag, ProcessFunction, StreamExecutionEnvironment
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.datastream.connectors.kafka import (
    KafkaBadRecord,
    KafkaOffsetsInitializer,
    KafkaSource,
)
from undertow.testing.gates import SourceHold
from undertow.testing.kafka_oracle_job import OracleRecordSchema
from undertow.testing.kafka_topics import add_partitions, produce
from undertow.testing.oracle import (
    OracleResult,
    OracleStatefulFunction,
    SizeClass,
    VerifyingSink,
    make_record,
    oracle_key,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores

KEYS, RECORDS_PER_KEY = 8, 800
#: records each reader of the kill test emits before it holds (Kafka's reader stops after the
#: fetch that reached it: at most 500 more) of its partition's 3,200
HELD_AT = 1000
SMALL = (SizeClass(1.0, 16, 200),)
JOB_TIMEOUT_S = 120.0


def fill_with_oracle_records(bootstrap: str, topic: str, partitions: int) -> None:
    """Each key's records, seq 1..N in order, into partition ``key % partitions``."""
    records = []
    for seq in range(1, RECORDS_PER_KEY + 1):
        for key in range(KEYS):
            record = make_record(key, seq, SMALL)
            records.append((key % partitions, None, msgpack.packb(list(record))))
    produce(bootstrap, topic, records)


def bounded_source(
    bootstrap: str, topic: str, deserializer: Any = None, **props: str
) -> KafkaSource:
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_group_id(f"{topic}-group")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(deserializer or SimpleStringSchema())
    )
    return builder.set_properties(props).build()


def checkpointing(directory: Path, restarts: int) -> dict[str, Any]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        "execution.checkpointing.unaligned.enabled": "true",
    }


@pytest.mark.restores(catches=["source-positions", "keyed-state"])
@pytest.mark.parametrize("target", ["local"])
def test_oracle_through_kafka_survives_a_worker_kill(
    make_env: EnvFactory,
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed = oracle_seed()
    topic = new_topic(2)
    fill_with_oracle_records(kafka_bootstrap, topic, 2)
    env = make_env(parallelism=2, config=checkpointing(tmp_path, restarts=3))
    evidence = tmp_path / "evidence"
    # each reader (one partition each) holds after HELD_AT records of the first attempt until
    # the kill landed: the attempt cannot end first, and every checkpoint after the hold has
    # records behind it, however the load stretches the job
    hold = SourceHold(tmp_path / "hold", after_records=HELD_AT)
    source = hold.source(bounded_source(kafka_bootstrap, topic, OracleRecordSchema()))
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").uid("kafka")
    stateful = stream.key_by(oracle_key).process(OracleStatefulFunction(None, 1, str(evidence)))
    stateful = stateful.uid("oracle-stateful").set_parallelism(3)
    verified = stateful.key_by(oracle_key).process(
        VerifyingSink(RECORDS_PER_KEY, seq_order_kept=True, job_tag=1,
                      evidence_dir=str(evidence))
    )  # fmt: skip
    verified.uid("oracle-verifying-sink").sink_to(DiscardingSink()).uid("discard")

    client = env.execute_async("kafka oracle")
    watcher = RestWatcher(client)
    if not hold.wait_held(readers=2, timeout_s=JOB_TIMEOUT_S):
        client.cancel()
        raise AssertionError(f"seed {seed}: {hold.held_readers()} of 2 readers reached the hold")
    capsys.readouterr()
    # two checkpoints after the hold: the second was triggered once the first completed, after
    # both readers held, so the restored checkpoint has them at the hold (HELD_AT or more of
    # their 3,200 records): the source resumes there and sends fewer than the topic holds
    result, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.02, latest_s=0.2, timeout_s=JOB_TIMEOUT_S,
        checkpoints=2, source_hold=hold,
    )  # fmt: skip
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, evidence)

    assert_restores(console, watcher.stop(), restores=1)
    oracle.assert_restored()  # the source resumed: fewer records than the topic holds
    assert oracle.is_exactly_once, (seed, str(oracle))
    assert oracle.restarts == 1, (seed, oracle)


def local_env(parallelism: int = 2, **config: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads", **config})
    )
    env.set_parallelism(parallelism)
    return env


def collect(stream: Any, timeout_s: float = 60.0) -> list[Any]:
    """Everything a bounded job emits (fails after ``timeout_s``: a hang is a failure)."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    with stream.execute_and_collect() as results:
        for value in results:
            got.append(value)
            assert time.monotonic() < deadline, f"the job did not end within {timeout_s} s"
    return got


@pytest.mark.timeout(90)  # a source that waits for a record past the commit marker hangs
def test_bounded_source_over_a_transactional_topic_ends_with_the_committed_records(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(50):
            producer.produce(topic, f"{outcome}-{i}".encode(), partition=i % 2)
        producer.flush(30)  # in the log before the abort (an abort purges unsent records)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    # each partition now ends with a commit marker after its last record

    env = local_env()
    source = bounded_source(kafka_bootstrap, topic)
    got = collect(env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka"))

    assert sorted(got) == sorted(f"commit-{i}" for i in range(50) for _ in range(2))


@pytest.mark.timeout(90)  # a partition that is never discovered leaves the job waiting
def test_a_partition_added_while_the_job_runs_is_read(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, None, f"first-{i}".encode()) for i in range(20)])
    env = local_env()
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_bootstrap)
        .set_topics(topic)
        .set_property("partition.discovery.interval.ms", "200")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")
    got: set[str] = set()
    expected = {f"first-{i}" for i in range(20)} | {f"second-{i}" for i in range(20)}
    deadline = time.monotonic() + 60
    with stream.execute_and_collect() as results:
        for value in results:
            got.add(value)
            if len(got) == 20:  # the job reads: now grow the topic and write to partition 1
                add_partitions(kafka_bootstrap, topic, 2)
                produce(
                    kafka_bootstrap, topic, [(1, None, f"second-{i}".encode()) for i in range(20)]
                )
            if got >= expected or time.monotonic() > deadline:
                break
    assert got == expected


def test_a_broker_that_is_down_fails_the_job_naming_servers_and_timeout() -> None:
    env = local_env(**{"restart-strategy.type": "none"})
    source = bounded_source("127.0.0.1:9", "anything", **{"default.api.timeout.ms": "1500"})
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").sink_to(DiscardingSink())
    with pytest.raises(Exception, match=r"127\.0\.0\.1:9 failed within 1\.5 s"):
        env.execute("broker down")


def test_a_missing_topic_fails_the_job_naming_it(kafka_bootstrap: str) -> None:
    env = local_env(**{"restart-strategy.type": "none"})
    source = bounded_source(kafka_bootstrap, "no-such-topic-anywhere",
                            **{"topic.metadata.propagation.max.ms": "300"})  # fmt: skip
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").sink_to(DiscardingSink())
    with pytest.raises(Exception, match=r"topic\(s\) \['no-such-topic-anywhere'\] do not exist "
                       r"at bootstrap servers \S+ \(looked for 0\.3 s"):  # fmt: skip
        env.execute("missing topic")


class StrictIntSchema(DeserializationSchema):
    def deserialize(self, message: bytes) -> int:
        return int(message.decode())


def test_a_record_the_deserializer_rejects_fails_naming_topic_partition_offset(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, None, b"1"), (0, None, b"2"), (0, None, b"three")])
    env = local_env(parallelism=1, **{"restart-strategy.type": "none"})
    source = bounded_source(kafka_bootstrap, topic, StrictIntSchema())
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").sink_to(DiscardingSink())
    with pytest.raises(Exception) as failure:
        env.execute("bad record")
    message = str(failure.value)
    assert re.search(rf"topic '{topic}', partition 0, offset 2: ValueError", message), message


def test_rejected_records_go_to_the_side_output_when_asked(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, None, b"1"), (0, None, b"x"), (0, None, b"3")])
    env = local_env(parallelism=1)
    bad = OutputTag("bad")
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_bootstrap)
        .set_topics(topic)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(StrictIntSchema())
        .set_bad_record_side_output(bad)
        .build()
    )
    good = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")
    got = collect(good.union(good.get_side_output(bad)))
    assert sorted(v for v in got if isinstance(v, int)) == [1, 3]
    [rejected] = [v for v in got if isinstance(v, KafkaBadRecord)]
    assert (rejected.topic, rejected.partition, rejected.offset, rejected.value) == (
        topic,
        0,
        1,
        b"x",
    )


def unbounded_source(bootstrap: str, topic: str, **props: str) -> KafkaSource:
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_group_id(f"{topic}-group")
        .set_value_only_deserializer(SimpleStringSchema())
        .set_properties(props)
        .build()
    )


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = [
        ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    ]
    answer = admin.list_consumer_group_offsets(request)[group].result(30)
    return sorted(tp.offset for tp in answer.topic_partitions)


@pytest.mark.timeout(90)
def test_completed_checkpoints_commit_their_offsets_to_the_consumer_group(
    kafka_bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(2)
    produce(kafka_bootstrap, topic, [(i % 2, None, str(i).encode()) for i in range(30)])
    env = local_env(**{"execution.checkpointing.interval": "100 ms",
                       "execution.checkpointing.dir": str(tmp_path)})  # fmt: skip
    stream = env.from_source(
        unbounded_source(kafka_bootstrap, topic), WatermarkStrategy.no_watermarks(), "kafka"
    )
    seen, offsets = 0, []
    with stream.execute_and_collect() as results:
        for _ in results:
            seen += 1
            if seen == 30:  # everything read: a later checkpoint commits the end offsets
                deadline = time.monotonic() + 30
                while offsets != [15, 15] and time.monotonic() < deadline:
                    time.sleep(0.2)
                    offsets = committed_offsets(kafka_bootstrap, f"{topic}-group", topic, 2)
                break
    assert offsets == [15, 15]


@pytest.mark.timeout(180)
def test_the_job_reads_on_after_the_broker_restarts(
    kafka_broker: Any, kafka_bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    """The broker is killed (SIGKILL) and started again on the same port and data while the
    job runs: every record is read exactly once (the client reconnects; a consumer error the
    client cannot recover from would fail the job and restart it from its checkpoint)."""
    if kafka_broker is None:
        pytest.skip("needs the test session's own broker (UNDERTOW_KAFKA_BOOTSTRAP is set)")
    topic = new_topic(2)
    produce(kafka_bootstrap, topic, [(i % 2, None, f"before-{i}".encode()) for i in range(20)])
    env = local_env(**{"execution.checkpointing.interval": "100 ms",
                       "execution.checkpointing.dir": str(tmp_path),
                       "restart-strategy.type": "fixed-delay",
                       "restart-strategy.fixed-delay.attempts": "3"})  # fmt: skip
    stream = env.from_source(
        unbounded_source(kafka_bootstrap, topic), WatermarkStrategy.no_watermarks(), "kafka"
    )
    got: list[str] = []
    expected = [f"before-{i}" for i in range(20)] + [f"after-{i}" for i in range(20)]
    with stream.execute_and_collect() as results:
        for value in results:
            got.append(value)
            if len(got) == 20:
                kafka_broker.kill()
                time.sleep(1.0)
                kafka_broker.restart()
                produce(
                    kafka_bootstrap,
                    topic,
                    [(i % 2, None, f"after-{i}".encode()) for i in range(20)],
                )
            if len(got) >= 40:
                break
    assert sorted(got) == sorted(expected)


class LateCounter(ProcessFunction):
    """Emits ``(value, late)``: late if the record is at or behind the current watermark."""

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield value, ctx.timestamp() <= ctx.timer_service().current_watermark()


@pytest.mark.timeout(90)
def test_watermarks_are_kept_per_partition(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """One reader, two partitions far apart in event time. The partition behind gets its
    records only after the one ahead was read completely: its split, taken at the start, held
    the source's watermark back meanwhile, so none of its records is late. (One generator over
    both partitions would have run ahead with the first, making every later record late.)"""
    topic = new_topic(2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    for i in range(500):
        producer.produce(topic, b"ahead", partition=0, timestamp=1_000_000 + i)
    assert producer.flush(30) == 0
    env = local_env(parallelism=1, **{"pipeline.auto-watermark-interval": "1"})
    source = unbounded_source(kafka_bootstrap, topic)
    stream = env.from_source(source, WatermarkStrategy.for_monotonous_timestamps(), "kafka")
    got: list[tuple[str, bool]] = []
    with stream.process(LateCounter()).execute_and_collect() as results:
        for value in results:
            got.append(value)
            if len(got) == 500:  # all ahead; let periodic watermarks run, then the rest
                time.sleep(0.3)
                for i in range(500):
                    producer.produce(topic, b"behind", partition=1, timestamp=1 + i)
                assert producer.flush(30) == 0
            if len(got) == 1000:
                break
    late = Counter(value for value, is_late in got if is_late)
    assert len(got) == 1000 and not late, f"late records: {dict(late)}"


def _sink_records_in(client: Any) -> float:
    """Records the job's sink vertices took in so far (REST metrics, summed over subtasks)."""
    address, jid = client.get_rest_address(), client.get_job_id()
    if address is None:
        return 0.0
    _, job = fetch(f"{address}/jobs/{jid}")
    total = 0.0
    for sink in [v for v in job["vertices"] if "sink" in v["name"].lower()]:
        _, metrics = fetch(f"{address}/jobs/{jid}/vertices/{sink['id']}/subtasks/metrics"
                           "?get=numRecordsIn&agg=sum")  # fmt: skip
        total += sum(float(m["sum"]) for m in metrics)
    return total


def oracle_job(env: StreamExecutionEnvironment, source: KafkaSource, evidence: Path) -> None:
    """KafkaSource -> key_by -> stateful op -> key_by -> verifying sink (spinning 0.5 ms)."""
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").uid("kafka")
    stateful = stream.key_by(oracle_key).process(OracleStatefulFunction(None, 1, str(evidence)))
    verified = (
        stateful.uid("oracle-stateful")
        .key_by(oracle_key)
        .process(
            VerifyingSink(
                RESCALE_RECORDS,
                seq_order_kept=True,
                spin_s=0.0005,
                job_tag=1,
                evidence_dir=str(evidence),
            )
        )
    )
    verified.uid("oracle-verifying-sink").sink_to(DiscardingSink()).uid("discard")


RESCALE_RECORDS = 1000


@pytest.mark.restores(catches=["source-positions"])
def test_rescale_from_two_readers_to_three_through_a_savepoint(
    kafka_bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:  # fmt: skip
    """A job with 2 readers of a 4-partition topic stops with a savepoint mid-stream; a job
    with 3 readers resumes from it and ends: every (key, seq) once and in order (keyed state and
    the 4 partitions' checkpointed offsets carried over), and the new job read fewer records
    than the topic holds (it resumed at the offsets, not at the start)."""
    topic = new_topic(4)
    records = [
        (key % 4, None, msgpack.packb(list(make_record(key, seq, SMALL))))
        for seq in range(1, RESCALE_RECORDS + 1)
        for key in range(KEYS)
    ]
    produce(kafka_bootstrap, topic, records)
    evidence = tmp_path / "evidence"
    config = {"execution.checkpointing.interval": "100 ms",
              "execution.checkpointing.dir": str(tmp_path / "checkpoints")}  # fmt: skip

    first = local_env(parallelism=2, **config)
    source = (
        KafkaSource.builder().set_bootstrap_servers(kafka_bootstrap).set_topics(topic)
        .set_unbounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(OracleRecordSchema()).build()
    )  # fmt: skip
    oracle_job(first, source, evidence)
    client = first.execute_async("kafka p=2")
    deadline = time.monotonic() + 60
    # A savepoint before the readers' first fetch holds no offsets and no tallies (here at load 17:
    # checkpoint 1 came first, and the resumed job read all): it follows the sink's records.
    while _sink_records_in(client) == 0:
        assert time.monotonic() < deadline, "no records at the first job's sink"
        time.sleep(0.05)
    savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=60)
    client.get_job_execution_result(timeout=60)

    second = local_env(parallelism=3, **config, **{"execution.state-recovery.path": savepoint})
    bounded = bounded_source(kafka_bootstrap, topic, OracleRecordSchema())
    oracle_job(second, bounded, evidence)
    result = second.execute_async("kafka p=3").get_job_execution_result(timeout=JOB_TIMEOUT_S)
    oracle = OracleResult.from_job_result(result, KEYS, RESCALE_RECORDS, evidence)

    oracle.assert_restored()
    assert oracle.is_exactly_once, str(oracle)
