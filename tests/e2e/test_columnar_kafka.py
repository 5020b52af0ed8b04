"""Kafka -> batch keyed sum -> Kafka, exactly once, through a worker kill (issue 31).

The job: a bounded ``KafkaSource`` with a :class:`JsonBatchDeserializationSchema` (one record
batch per fetch) over a topic of ``{"k": key, "v": 1}`` values (each key in one partition) ->
``map_batches`` -> ``key_by("k").sum("v")``
-> ``KafkaSink`` ``EXACTLY_ONCE`` taking the batches (a Kafka record per row, keyed by ``k``).
The source's readers hold (SourceHold) after their first batches until a worker is
killed after checkpoints completed. What a read_committed consumer sees must be,
per key, the running sums ``1..N`` each exactly once and in order: a row lost or written twice
(a source offset out of step with the emitted rows, a sink transaction replayed) or a sum
restarted (columnar state not restored) shows. Restore evidence: the console's restore line
and the finishing attempt's map seeing fewer rows than the topic holds (the source resumed at
its checkpointed offsets).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from undertow.common.serialization import SerializationSchema
from undertow.datastream.connectors.kafka import (
    JsonBatchDeserializationSchema,
    KafkaOffsetsInitializer,
    KafkaSource,
)
from undertow.testing.gates import SourceHold
from undertow.testing.kafka_oracle import read_committed
from undertow.testing.kafka_oracle_job import oracle_sink
from undertow.testing.kafka_topics import produce
from undertow.testing.oracle import oracle_seed
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory
from .kills import run_killing_a_worker_after_a_checkpoint
from .restore_evidence import restored_checkpoints

KEYS, PER_KEY = 8, 1000
#: record batches each reader emits before it holds until the kill landed (one per fetch, at
#: most 500 rows each, of a partition's 4,000): the first attempt cannot finish first (one that
#: did restored nothing, and once passed without proving a restore), however the load
#: stretches its checkpoints
HELD_BATCHES = 2
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


class KeySchema(SerializationSchema):
    def serialize(self, element: Any) -> bytes:
        return str(element.k).encode()


class SumSchema(SerializationSchema):
    """A row of the running sum as JSON ``[k, v]``."""

    def serialize(self, element: Any) -> bytes:
        return json.dumps([element.k, element.v]).encode()


class Taken:
    """Appends ``attempt rows`` per batch to ``mapped``: what each attempt took from the
    source."""

    def __init__(self, mapped: Path) -> None:
        self.mapped = mapped

    def open(self, runtime_context: Any) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self._note(0)  # an attempt that takes nothing (restored at the end) shows too

    def _note(self, rows: int) -> None:
        fd = os.open(self.mapped, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{self.attempt} {rows}\n".encode())
        finally:
            os.close(fd)

    def map_batches(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self._note(batch.num_rows)
        return batch


def _taken(mapped: Path) -> dict[int, int]:
    """Rows each attempt's map took (an attempt that took none: 0)."""
    taken: dict[int, int] = defaultdict(int)
    if mapped.exists():
        for line in mapped.read_text().splitlines():
            attempt, rows = line.split()
            taken[int(attempt)] += int(rows)
    return {a: n for a, n in taken.items() if n or a}


def _job(env: Any, bootstrap: str, source_topic: str, sink_topic: str, mapped: Path,
         hold: SourceHold) -> None:  # fmt: skip
    kafka = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(source_topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(JsonBatchDeserializationSchema(SCHEMA))
        .build()
    )
    batches = env.from_source(hold.source(kafka), None, "kafka").as_batches().uid("kafka")
    taken = batches.map_batches(Taken(mapped), schema=SCHEMA).uid("taken")
    sums = taken.key_by("k").sum("v").uid("sum")
    sink = oracle_sink(bootstrap, sink_topic, f"columnar-{sink_topic}", KeySchema(), SumSchema())
    sums.sink_to(sink).uid("kafka-sink")


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
@pytest.mark.parametrize("target", ["local"])
def test_kafka_batch_sum_to_kafka_exactly_once_through_a_kill(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kafka_bootstrap: str,
    new_topic: Any,
) -> None:
    seed = oracle_seed()
    source_topic, sink_topic = new_topic(2), new_topic(2)
    rows = [(k % 2, None, json.dumps({"k": k, "v": 1}).encode())
            for _ in range(PER_KEY) for k in range(KEYS)]  # fmt: skip
    produce(kafka_bootstrap, source_topic, rows)
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "0 ms",
    })  # fmt: skip
    mapped = tmp_path / "mapped"
    hold = SourceHold(tmp_path / "hold", after_records=HELD_BATCHES)
    _job(env, kafka_bootstrap, source_topic, sink_topic, mapped, hold)
    client = env.execute_async("kafka batches -> sum -> kafka")
    if not hold.wait_held(readers=2, timeout_s=60):
        client.cancel()
        raise AssertionError(f"seed {seed}: {hold.held_readers()} of 2 readers reached the hold")
    capsys.readouterr()
    # two checkpoints after the hold: the second was triggered once the first completed, after
    # both readers held, so the restored checkpoint has them at the hold
    _, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.02, latest_s=0.2, timeout_s=90.0, checkpoints=2,
        source_hold=hold,
    )  # fmt: skip
    evidence(bool(restored_checkpoints(console)), f"seed {seed}: no restore line:\n{console}")
    taken = _taken(mapped)
    last = max(taken)
    evidence(taken[last] < KEYS * PER_KEY, f"seed {seed}: attempt {last} took all "
             f"{taken[last]} rows again: the source's offsets were not restored")  # fmt: skip

    sums: dict[int, list[int]] = defaultdict(list)
    for _, value in read_committed(kafka_bootstrap, sink_topic):
        assert value is not None
        k, v = json.loads(value)
        sums[k].append(v)
    short = {k: s[-1] for k, s in sums.items() if s[-1] != PER_KEY}
    evidence(not short and len(sums) == KEYS, f"seed {seed}: keys whose sum did not reach "
             f"{PER_KEY} (state not restored?): {short}")  # fmt: skip
    wrong = {k: s[:5] for k, s in sums.items() if s != list(range(1, PER_KEY + 1))}
    assert not wrong, (seed, wrong)
