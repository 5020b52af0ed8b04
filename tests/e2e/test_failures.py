"""Failures end to end: user errors fail the job with a useful message and leave nothing
running; misuse is refused before the job starts; cancellation ends a job cleanly."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from undertow.common import RestartStrategies, WatermarkStrategy
from undertow.core.errors import (
    GraphBuildError,
    JobCancelledError,
    JobExecutionError,
    SerializationError,
)
from undertow.datastream import JobStatus, MapFunction
from undertow.datastream.connectors.datagen import DataGeneratorSource

from .conftest import EnvFactory

WORKER_MODULE = "undertow.deploy.worker_process"


def worker_processes() -> list[int]:
    """Pids of worker processes started by this process (other test runs may have their own)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile
        # the parent pid is the 2nd field after the parenthesised command name
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        if WORKER_MODULE in cmdline and parent == me and state != "Z":
            found.append(int(entry))
    return found


def worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("undertow-worker")]


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def assert_nothing_left_running() -> None:
    assert eventually(lambda: not worker_processes()), worker_processes()
    assert eventually(lambda: not worker_threads()), worker_threads()


def explode_on_500(value: int) -> int:
    if value == 500:
        raise ValueError(f"cannot handle {value}")
    return value


def test_a_failing_map_fails_the_job_naming_operator_and_subtask(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    )
    numbers.map(explode_on_500).name("boom").filter(lambda n: n < 0).print()

    with pytest.raises(JobExecutionError) as caught:
        env.execute("failing job")
    error = caught.value
    message = str(error)
    assert error.operator == "boom"
    assert error.subtask in (0, 1)
    assert "'boom'" in message
    assert f"subtask {error.subtask + 1}/2" in message
    assert "ValueError: cannot handle 500 (on the record 500)" in message
    # the worker's traceback, down to the user's code
    assert "Traceback (most recent call last)" in message
    assert "explode_on_500" in message
    assert 'raise ValueError(f"cannot handle {value}")' in message
    assert_nothing_left_running()


def test_the_traceback_of_a_function_shipped_by_value_names_its_file(
    make_env: EnvFactory,
) -> None:
    """A lambda (like any function or class of the job script) travels by value; the worker's
    traceback still names the file and shows the line that raised, not ``<dynamic-code>``."""
    env = make_env(parallelism=1)
    numbers = env.from_collection([1, 2, 0, 4])
    numbers.map(lambda n: 12 // n).name("divide").print()
    with pytest.raises(JobExecutionError) as caught:
        env.execute("failing lambda")
    message = str(caught.value)
    assert "ZeroDivisionError" in message
    assert "<dynamic-code>" not in message
    assert f'File "{__file__}"' in message
    assert 'numbers.map(lambda n: 12 // n).name("divide").print()' in message
    assert_nothing_left_running()


def test_a_set_key_fails_the_job_naming_the_key(make_env: EnvFactory) -> None:
    """A key whose key group would differ between workers fails the job on every target (on
    local-threads, where the processes are one, it would have passed)."""
    env = make_env(parallelism=2)
    words = env.from_collection([("a", "b"), ("b", "a"), ("c", "d")])
    words.key_by(lambda pair: frozenset(pair)).reduce(lambda x, y: x).print()
    with pytest.raises(JobExecutionError, match=r"KeyTypeError: key frozenset\(\{"):
        env.execute("set keys")
    assert_nothing_left_running()


def test_a_failing_source_fails_collecting_its_records(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    broken = env.from_source(
        DataGeneratorSource(lambda i: 100 // (i - 7), count=100),
        WatermarkStrategy.no_watermarks(),
        "broken",
    )
    with pytest.raises(JobExecutionError) as caught:
        list(broken.execute_and_collect())
    assert caught.value.operator == "Source: broken"
    assert "ZeroDivisionError" in str(caught.value)
    assert_nothing_left_running()


class Marking(MapFunction):
    """Doubles; the first record a subtask maps leaves a file in ``directory``."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.marked = False

    def map(self, value: int) -> int:
        if not self.marked:
            Path(self.directory, uuid.uuid4().hex).touch()
            self.marked = True
        return value * 2


def test_cancelling_a_running_job(make_env: EnvFactory, tmp_path: Path) -> None:
    env = make_env(parallelism=2)
    endless = env.from_source(
        DataGeneratorSource(lambda i: i, count=None, records_per_second=1_000),
        WatermarkStrategy.no_watermarks(),
        "endless",
    )
    endless.map(Marking(str(tmp_path))).filter(lambda n: n < 0).print()
    client = env.execute_async("endless job")
    # records flow (not only deployed), and the job still runs
    assert eventually(lambda: any(tmp_path.iterdir()), timeout=30)
    assert client.get_job_status().result() is JobStatus.RUNNING
    assert client.get_job_id()

    client.cancel()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=30)
    assert client.get_job_status().result() is JobStatus.CANCELED
    assert_nothing_left_running()


#: the restart delay of the job cancelled while it waits: far longer than any bound below
LONG_DELAY_S = 120


def test_cancelling_a_job_waiting_in_its_restart_delay_takes_effect_at_once(
    make_env: EnvFactory,
) -> None:
    """A cancel during a fixed-delay restart's wait ends the job CANCELED at once, not once
    the delay has passed (the JobMaster used to sleep the whole delay, then notice it)."""
    env = make_env(parallelism=2, config={
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "3",
        "restart-strategy.fixed-delay.delay": f"{LONG_DELAY_S} s",
    })  # fmt: skip
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    )
    numbers.map(explode_on_500).name("boom").filter(lambda n: n < 0).print()
    client = env.execute_async("restarting job")
    assert eventually(lambda: client.get_job_status().result() is JobStatus.RESTARTING, 60)

    started = time.monotonic()
    client.cancel()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=LONG_DELAY_S / 2)
    took = time.monotonic() - started

    assert took < 10, f"cancel took {took:.1f} s in a {LONG_DELAY_S} s restart delay"
    assert client.get_job_status().result() is JobStatus.CANCELED
    assert_nothing_left_running()


@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("configured_by", ["options", "RestartStrategies"])
def test_failure_rate_fails_the_job_after_too_many_failures_in_the_interval(
    make_env: EnvFactory, capsys: pytest.CaptureFixture[str], configured_by: str
) -> None:
    """``failure-rate`` with at most 2 failures per minute, set with Flink's keys or PyFlink's
    ``RestartStrategies``: the job fails at once after the third failure (each attempt fails
    at record 500), having restarted twice."""
    if configured_by == "options":
        env = make_env(parallelism=2, config={
            "restart-strategy.type": "failure-rate",
            "restart-strategy.failure-rate.max-failures-per-interval": "2",
            "restart-strategy.failure-rate.failure-rate-interval": "1 min",
            "restart-strategy.failure-rate.delay": "10 ms",
        })  # fmt: skip
    else:
        env = make_env(parallelism=2)
        env.set_restart_strategy(
            RestartStrategies.failure_rate_restart(2, timedelta(minutes=1), 10)
        )
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    )
    numbers.map(explode_on_500).name("boom").filter(lambda n: n < 0).print()

    with pytest.raises(JobExecutionError, match="ValueError: cannot handle 500"):
        env.execute("failing at a rate")

    err = capsys.readouterr().err
    assert err.count("restarting in 10 ms") == 2, err[-3000:]
    assert "not restarting again after 2 restarts: 3 failures within 60000 ms" in err, err[-3000:]
    assert_nothing_left_running()


def test_an_unpicklable_function_is_refused_at_execute(make_env: EnvFactory) -> None:
    env = make_env(parallelism=1)
    lock = threading.Lock()

    def guarded(value: int) -> int:
        with lock:
            return value

    env.from_collection([1, 2, 3]).map(guarded).name("locked").print()
    with pytest.raises(SerializationError) as caught:
        env.execute("unpicklable")
    assert "'locked'" in str(caught.value)
    assert not worker_threads()


def test_parallelism_above_max_parallelism_is_refused(make_env: EnvFactory) -> None:
    env = make_env(parallelism=1)
    mapped = env.from_collection([1, 2, 3]).map(lambda v: v).name("narrow")
    mapped.set_max_parallelism(2)
    with pytest.raises(GraphBuildError, match=r"'narrow'.*parallelism 3"):
        mapped.set_parallelism(3)

    env = make_env(parallelism=1)
    env.set_max_parallelism(2)
    env.from_collection([1, 2, 3]).map(lambda v: v).name("too-wide").set_parallelism(3).print()
    with pytest.raises(GraphBuildError, match=r"'too-wide'.*parallelism 3"):
        env.execute("too wide")


def test_key_by_after_partition_custom_is_refused(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    custom = env.from_collection([1, 2, 3]).partition_custom(lambda k, n: k % n, lambda v: v)
    with pytest.raises(GraphBuildError, match="partition_custom"):
        custom.key_by(lambda v: v)


def test_forward_between_different_parallelisms_is_refused(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    source = env.from_collection([1, 2, 3]).map(lambda v: v).name("two").set_parallelism(2)
    source.forward().map(lambda v: v).name("three").set_parallelism(3).print()
    with pytest.raises(GraphBuildError, match=r"forward.*'two'.*'three'"):
        env.execute("bad forward")
