"""A backpressured fan-out flatMap under unaligned checkpoints: what one record's output may
queue is bounded by ``max-overdraft-buffers-per-gate`` (reference §2.4).

The oracle's records go through a flatMap that adds 49 padding records of about 100 bytes to
each (every 97th record also gets one padding record of 48 KiB: an oversized record whose
output alone is more than a pool plus the allowance), a slow map that spins on every record,
a filter that drops the padding, and the oracle's checks, stateful operator and verifying sink.
Buffers are tiny (4 KiB segments, one exclusive and one floating buffer per channel, as in the
other unaligned tests), so one record's output spans several buffers and the flatMap is
backpressured. One scheduled failure makes the job restore from an unaligned checkpoint.

What must hold, read from the job's task counters (``max_overdraft_buffers[<task>]`` and
``overdraft_exceeded[<task>]``, published by tasks that drew overdraft buffers): no task other
than the flatMap ever holds more than its pool plus the allowance, and no unit of work of
theirs exceeded it; the flatMap exceeds it, and goes past it by at most one record's output.
Buffer debloating is on (the default), so that output is counted at the smallest buffers a
consumer may announce: one per output record, the oversized one spanning segments (under load
the slow map announces one record per buffer, and then an ordinary record's 50 outputs alone
exceed the allowance too; a unit of work is at least one record, where Flink would block
inside it). The six oracle counts are 0 and checkpoints completed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import FlatMapFunction, MapFunction
from undertow.datastream.connectors import DiscardingSink
from undertow.testing.oracle import (
    FailingMap,
    OracleResult,
    OracleSource,
    OracleStatefulFunction,
    SizeClass,
    VerifyingMap,
    VerifyingSink,
    oracle_key,
)

from .conftest import EnvFactory
from .kills import COMPLETED
from .restore_evidence import evidence, restored_checkpoints

KEYS, RECORDS_PER_KEY = 10, 150
RATE = 1_500.0  # records per second per source reader: more than the slow map takes
OVERDRAFT = 5
SEGMENT = 4 * 1024
PADDING, PAD_BYTES = 49, 100
OVERSIZED_EVERY, OVERSIZED_BYTES = 97, 48 * 1024
SPIN_S = 0.00002  # per record in the slow map: ~1 ms per oracle record with its padding
#: Oracle records stay small, so only the padding makes a record's output big.
SIZES = (SizeClass(1.0, 16, 256),)


class FanOut(FlatMapFunction):
    """Each record, then ``PADDING`` padding records (and an oversized one now and then,
    counted in the ``oversized`` accumulator)."""

    def open(self, runtime_context: Any) -> None:
        self.count = 0
        self.accumulators = runtime_context.get_metrics_group()

    def flat_map(self, value: Any) -> Any:
        self.count += 1
        yield value
        for i in range(PADDING):
            yield ("pad", f"{self.count}:{i}:".ljust(PAD_BYTES, "p"))
        if self.count % OVERSIZED_EVERY == 0:
            self.accumulators["oversized"] = self.accumulators.get("oversized", 0) + 1
            yield ("pad", f"{self.count}:big:".ljust(OVERSIZED_BYTES, "b"))


class Spin(MapFunction):
    def map(self, value: Any) -> Any:
        until = time.perf_counter() + SPIN_S
        while time.perf_counter() < until:
            pass
        return value


def is_record(value: Any) -> bool:
    """Oracle records are named tuples; padding records are plain ones."""
    return type(value) is not tuple


def per_task(counters: dict[str, Any], name: str) -> dict[str, int]:
    """``name[<task>]`` task counters by task (``vertex (i/p)``)."""
    prefix = f"{name}["
    return {k[len(prefix) : -1]: int(v) for k, v in counters.items() if k.startswith(prefix)}


@pytest.mark.restores
def test_fan_out_queues_at_most_pool_plus_overdraft(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = FailingMap(fail_after_checkpoints=[2])
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path),
        "execution.checkpointing.unaligned.enabled": "true",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1",
        "restart-strategy.fixed-delay.delay": "0 ms",
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "1",
        "taskmanager.network.memory.floating-buffers-per-gate": "1",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
        "taskmanager.network.memory.max-overdraft-buffers-per-gate": str(OVERDRAFT),
    })  # fmt: skip
    source = OracleSource(KEYS, RECORDS_PER_KEY, sizes=SIZES, records_per_second=RATE)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle")
    fanned = stream.uid("oracle-source").rebalance().flat_map(FanOut()).name("fan-out")
    slow = fanned.uid("fan-out").rebalance().map(Spin()).name("slow").uid("slow")
    checked = slow.filter(is_record).name("drop padding").uid("drop-padding")
    checked = checked.map(VerifyingMap("after-fan-out")).name("verify").uid("verify")
    checked = checked.map(failing).name("failing map").uid("failing-map")
    stateful = checked.key_by(oracle_key).process(OracleStatefulFunction())
    stateful = stateful.name("oracle stateful").uid("oracle-stateful")
    verified = stateful.key_by(oracle_key).process(VerifyingSink(RECORDS_PER_KEY))
    verified = verified.name("verifying sink").uid("oracle-verifying-sink")
    verified.sink_to(DiscardingSink()).name("discard").uid("discard")

    client = env.execute_async("fan-out under backpressure")
    try:
        result = client.get_job_execution_result(timeout=120)
    finally:
        client.cancel()
    console = capsys.readouterr().err

    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    restored = restored_checkpoints(console)
    evidence(len(restored) == 1, f"expected one restore line, got {restored}:\n{console}")
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.restarts == 1, (oracle, console)
    assert len(COMPLETED.findall(console)) >= 2, console
    counters = result.get_task_counters()
    drawn = per_task(counters, "max_overdraft_buffers")
    exceeded = per_task(counters, "overdraft_exceeded")
    fan_out = {task: n for task, n in drawn.items() if task.startswith("fan-out")}
    assert fan_out and max(fan_out.values()) >= 1, ("the flatMap drew no overdraft", drawn)
    for task, over in drawn.items():
        if task.startswith("fan-out"):
            # past the allowance only when a record alone exceeded it, and by at most its
            # output: a buffer per output record, the oversized one's segments
            one_record = PADDING + 1 + OVERSIZED_BYTES // SEGMENT + 2
            assert over <= OVERDRAFT or exceeded[task] > 0, (task, drawn, exceeded)
            assert over <= OVERDRAFT + one_record, (task, over, one_record)
        else:
            assert over <= OVERDRAFT and exceeded[task] == 0, (task, drawn, exceeded)
    fan_out_exceeded = sum(n for task, n in exceeded.items() if task.startswith("fan-out"))
    oversized = result.get_accumulator_result("oversized")
    assert fan_out_exceeded > 0 and oversized > 0, (exceeded, oversized)
