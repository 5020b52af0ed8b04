"""Processing-time timers at the end of data (Flink's rule, reference §6.1).

Before an operator's ``finish()`` its processing-time service is quiesced: pending
processing-time timers never fire and new registrations are ignored, while event-time timers
still fire on the final MAX watermark. A task that waits for its final checkpoint after
``EndOfData`` therefore emits nothing more; before the rule, a timer that fired in that wait
sent records after ``EndOfData`` and failed the downstream task.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.common.watermark_strategy import TimestampAssigner
from undertow.core.errors import JobCancelledError
from undertow.datastream import JobStatus, KeyedProcessFunction, RuntimeContext
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.state import ValueStateDescriptor

from .conftest import EnvFactory

RECORDS, KEYS = 300, 4
TICK_MS = 2
TIMEOUT_S = 120.0


class Ticker(KeyedProcessFunction):
    """Forwards every record; keeps one processing-time timer per key that re-arms itself
    every ``TICK_MS`` and emits a tick, so a timer is always pending when the input ends."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.armed = runtime_context.get_state(ValueStateDescriptor("armed"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        if self.armed.value() is None:
            self.armed.update(True)
            timers = ctx.timer_service()
            timers.register_processing_time_timer(timers.current_processing_time() + TICK_MS)
        yield ("data", value)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        timers = ctx.timer_service()
        timers.register_processing_time_timer(timers.current_processing_time() + TICK_MS)
        yield ("tick", ctx.get_current_key())


def test_processing_time_timers_stop_at_the_end_of_data(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """A bounded job with checkpointing on waits for its final checkpoint after the end of
    input, long enough (a 300 ms interval) for many ticks; it must end FINISHED with every
    record, the ticks it emitted before ``finish()`` included."""
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "300 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "none",  # a record after EndOfData fails the job at once
    })  # fmt: skip
    source = DataGeneratorSource(lambda i: i, count=RECORDS, records_per_second=3000)
    ticked = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "bounded")
        .key_by(lambda i: i % KEYS)
        .process(Ticker())
    )
    # the collect sink runs with parallelism 1: another task, behind a network edge
    result = list(ticked.execute_and_collect("ticks at the end"))

    assert sorted(v for kind, v in result if kind == "data") == list(range(RECORDS))
    assert {v for kind, v in result if kind == "tick"} <= set(range(KEYS))


@pytest.mark.parametrize("drain", [False, True], ids=["no-drain", "drain"])
def test_no_processing_time_timer_fires_after_a_stop_with_savepoint(
    make_env: EnvFactory, tmp_path: Path, drain: bool
) -> None:
    """Stop with savepoint ends the data early: with drain the operators finish (quiesced
    first), without drain they do not finish but are quiesced all the same; either way the
    ticks stop at ``EndOfData`` and the job ends FINISHED with its savepoint."""
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "none",
    })  # fmt: skip
    source = DataGeneratorSource(lambda i: i, count=None, records_per_second=2000)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "endless")
        .key_by(lambda i: i % KEYS)
        .process(Ticker())
        .sink_to(DiscardingSink()).set_parallelism(1)
    )  # fmt: skip
    client = env.execute_async("ticks until stopped")
    deadline = time.monotonic() + TIMEOUT_S
    while client.get_job_status().result() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)

    savepoint = client.stop_with_savepoint(str(tmp_path / "sp"), drain=drain).result(TIMEOUT_S)

    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert (Path(savepoint) / "_metadata").is_file()


class Heartbeat(KeyedProcessFunction):
    """An event-time timer per key that re-arms itself a second later on every firing: on the
    final MAX watermark it is due again at once, for ever."""

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        ctx.timer_service().register_event_time_timer(value + 1000)
        yield value

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        ctx.timer_service().register_event_time_timer(timestamp + 1000)
        yield timestamp


def test_an_event_time_timer_re_armed_at_the_end_of_the_input_fires_until_cancelled(
    make_env: EnvFactory,
) -> None:
    """At the end of the input the event-time timers that firings register at or below the
    MAX watermark fire too, pass after pass, as PyFlink 2.3 does: a timer that always re-arms
    keeps a bounded job running (PyFlink's and Java Flink's never end either), and a cancel
    still ends it at once, since the firing yields to the mailbox every slice. Before,
    the job fired each key's timer once more and finished."""
    env = make_env(parallelism=1, config={"restart-strategy.type": "none"})
    (
        env.from_collection([1000, 2000])
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_ItsValue())
        )
        .key_by(lambda v: v % 2)
        .process(Heartbeat())
        .sink_to(DiscardingSink())
    )  # fmt: skip
    client = env.execute_async("a heartbeat for ever")
    deadline = time.monotonic() + TIMEOUT_S
    while client.get_job_status().result() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.0)  # the two records are long read: the job is firing on the MAX watermark
    assert client.get_job_status().result() is JobStatus.RUNNING

    client.cancel().result(TIMEOUT_S)
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=30.0)
    assert client.get_job_status().result() is JobStatus.CANCELED


class _ItsValue(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value)
