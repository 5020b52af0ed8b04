"""Getting results out: ``print()`` formatting, ``execute_and_collect``, ``JobExecutionResult``."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Row, WatermarkStrategy
from undertow.core.errors import JobExecutionError
from undertow.datastream import (
    JobExecutionResult,
    JobStatus,
    MapFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory

RECORDS = [
    1,
    "text with spaces",
    ("word", 3),
    [1, 2],
    {"k": "v"},
    None,
    2.5,
    Row(1, "x"),
    Row(name="ann", age=3),
]

Printed = Callable[[], list[str]]


def test_print_with_parallelism_one_writes_str_of_each_record(
    make_env: EnvFactory, printed: Printed
) -> None:
    env = make_env(parallelism=1)
    env.from_collection(RECORDS).print()
    env.execute("print")
    assert printed() == [str(r) for r in RECORDS]


def test_parallel_print_prefixes_the_subtask_number(make_env: EnvFactory, printed: Printed) -> None:
    env = make_env(parallelism=2)
    env.from_collection(range(40)).map(lambda n: ("n", n)).print()
    env.execute("parallel print")

    lines = printed()
    pattern = re.compile(r"^([12])> (.*)$")
    matches = [pattern.match(line) for line in lines]
    assert all(matches), lines
    assert Counter(m.group(2) for m in matches if m) == Counter(str(("n", n)) for n in range(40))
    assert {m.group(1) for m in matches if m} == {"1", "2"}


def test_print_with_a_sink_identifier(make_env: EnvFactory, printed: Printed) -> None:
    env = make_env(parallelism=2)
    numbers = env.from_collection(range(10))
    numbers.print("single").set_parallelism(1)
    numbers.map(lambda n: n * 10).print("many")
    env.execute("identified print")

    lines = printed()
    single = [line for line in lines if line.startswith("single")]
    many = [line for line in lines if line.startswith("many")]
    assert len(single) + len(many) == len(lines)
    assert single == [f"single> {n}" for n in range(10)]
    pattern = re.compile(r"^many:([12])> (\d+)$")
    matches = [pattern.match(line) for line in many]
    assert all(matches), many
    assert sorted(int(m.group(2)) for m in matches if m) == [n * 10 for n in range(10)]


def test_execute_and_collect_returns_every_record(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    iterator = env.from_collection(range(1000)).map(lambda n: n + 1).execute_and_collect()
    assert sorted(iterator) == list(range(1, 1001))


def test_execute_and_collect_keeps_the_order_of_a_non_parallel_stream(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    assert list(env.from_collection(RECORDS).execute_and_collect()) == RECORDS
    env = make_env(parallelism=2)
    assert env.from_collection(range(100)).execute_and_collect(limit=5) == [0, 1, 2, 3, 4]


def test_execute_and_collect_with_a_limit_above_the_record_count(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    result = env.from_collection(["a", "b", "c"]).execute_and_collect(limit=10)
    assert result == ["a", "b", "c"]


def test_execute_and_collect_with_a_limit_stops_an_unbounded_job(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    endless = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "endless"
    )
    result = endless.map(lambda n: -n).execute_and_collect(limit=50)
    assert len(result) == 50
    assert len(set(result)) == 50
    assert all(n <= 0 for n in result)
    deadline = time.monotonic() + 10
    while any(t.name.startswith("undertow-worker") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the cancelled job's workers are still running"
        time.sleep(0.02)


def test_closing_the_collect_iterator_cancels_the_job(make_env: EnvFactory) -> None:
    env = make_env(parallelism=1)
    endless = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "endless"
    )
    with endless.execute_and_collect() as iterator:
        first = [next(iterator) for _ in range(3)]
    assert first == [0, 1, 2]


def test_a_loop_that_closes_the_collect_iterator_ends_at_its_next_step(
    make_env: EnvFactory,
) -> None:
    """PyFlink's iterator stops at once after ``close()`` (its fetcher returns nothing once
    closed); records already fetched in a batch must not go on coming out of the loop."""
    env = make_env(parallelism=1)
    endless = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "endless"
    )
    iterator = endless.execute_and_collect()
    seen = []
    for n in iterator:
        seen.append(n)
        if n == 2:
            iterator.close()
    assert seen == [0, 1, 2]
    with pytest.raises(StopIteration):
        next(iterator)


def test_closing_the_collect_iterator_from_another_thread_ends_a_blocked_loop(
    make_env: EnvFactory,
) -> None:
    """A loop waiting for records that another thread's ``close()`` ends (a timeout, say) ends
    as PyFlink's does, with no more records; it used to raise JobCancelledError."""
    env = make_env(parallelism=1)
    endless = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "endless"
    )
    iterator = endless.filter(lambda n: n < 0).execute_and_collect()
    timer = threading.Timer(0.5, iterator.close)
    timer.start()
    try:
        assert list(iterator) == []
    finally:
        timer.cancel()


def test_execute_returns_a_job_execution_result(make_env: EnvFactory, printed: Printed) -> None:
    env = make_env(parallelism=2)
    env.from_collection(range(10)).filter(lambda n: n > 100).print()
    started = time.monotonic()
    result = env.execute("result")
    elapsed_ms = (time.monotonic() - started) * 1000

    assert isinstance(result, JobExecutionResult)
    assert isinstance(result.get_net_runtime(), int)
    assert 0 <= result.get_net_runtime() <= elapsed_ms + 1
    job_id = result.get_job_id()
    assert re.fullmatch(r"[0-9a-f]{32}", job_id), job_id
    assert printed() == []

    env.from_collection([1]).filter(lambda n: n > 100).print()
    client = env.execute_async("again")
    assert client.get_job_execution_result(timeout=30).get_job_id() == client.get_job_id()
    assert client.get_job_id() != job_id
    assert client.get_job_status().result() is JobStatus.FINISHED


class FailWhenTold(MapFunction):
    """Raises in the job's first attempt once ``trigger`` exists (the test creates it after
    reading records from the iterator, so the failure comes after records were returned)."""

    def __init__(self, trigger: Path) -> None:
        self.trigger = str(trigger)

    def open(self, runtime_context: RuntimeContext) -> None:
        self.first_attempt = runtime_context.get_attempt_number() == 0

    def map(self, value: Any) -> Any:
        if self.first_attempt and Path(self.trigger).exists():
            raise RuntimeError("told to fail")
        return value


RESTART = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "2",
    "restart-strategy.fixed-delay.delay": "50 ms",
}
#: Records of the paced job below: 1,000 a second from each of two readers, so 2 s long.
PACED = 4_000


def _paced_job_failing_on(env: StreamExecutionEnvironment, trigger: Path) -> Any:
    """Numbers ``0..PACED-1`` to a collect sink; a side branch fails when ``trigger`` exists."""
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=PACED, records_per_second=1_000),
        WatermarkStrategy.no_watermarks(), "paced",
    )  # fmt: skip
    numbers.map(FailWhenTold(trigger)).sink_to(DiscardingSink())
    return numbers.execute_and_collect("collect across a restart")


@pytest.mark.restores(catches=["source-positions"])
def test_execute_and_collect_is_exactly_once_across_a_restart_with_checkpoints(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """As in Flink, with checkpoints on the iterator returns records once the checkpoint after
    them completed: the job fails after the client read records (checkpoint 1 completed by
    then, the interval is 500 ms), restarts from its latest checkpoint and replays what came
    after it; the client sees every number once. Delivered at once (the old behaviour), the
    first records would come twice."""
    env = make_env(parallelism=2, config={
        **RESTART,
        "execution.checkpointing.interval": "500 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
    })  # fmt: skip
    trigger = tmp_path / "fail-now"
    seen: list[int] = []
    with _paced_job_failing_on(env, trigger) as results:
        for n in results:
            seen.append(n)
            if len(seen) == 100:
                trigger.touch()
    duplicated = [n for n, times in Counter(seen).items() if times > 1]
    # The returned records came before a completed checkpoint: a restore that did not resume
    # the source after them (or a sink that returned them early) repeats them.
    evidence(not duplicated, f"{len(duplicated)} numbers came twice, e.g. {duplicated[:5]}")
    assert sorted(seen) == list(range(PACED))


def test_execute_and_collect_without_checkpoints_raises_on_a_restart_after_records(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """With checkpoints off records come at once, and a restart would return them again: the
    iterator raises instead, naming the way out (Flink's iterator throws too)."""
    env = make_env(parallelism=2, config=RESTART)
    trigger = tmp_path / "fail-now"
    seen: list[int] = []
    results = _paced_job_failing_on(env, trigger)
    with pytest.raises(JobExecutionError, match="enable_checkpointing") as raised, results:
        for n in results:
            seen.append(n)
            if len(seen) == 100:
                trigger.touch()
    assert "attempt 0 failed: " in str(raised.value)
    assert len(seen) == len(set(seen)) and len(seen) >= 100
