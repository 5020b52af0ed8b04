"""The heartbeat monitor against a direct model (Hypothesis) and the JobMaster's use of it:
a stopped (SIGSTOP) worker process fails the attempt with a heartbeat time-out."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.runtime.master.heartbeat import HeartbeatMonitor, Overdue
from undertow.testing._faults import kill_candidates, live_workers_of

events = st.lists(
    st.tuples(st.sampled_from(["seen", "forget"]), st.integers(0, 3), st.integers(0, 50)),
    max_size=40,
)


@given(events, st.integers(1, 30))
def test_overdue_matches_a_model(script: list[tuple[str, int, int]], timeout: int) -> None:
    monitor, last, now = HeartbeatMonitor(timeout), {}, 0
    for what, worker, step in script:
        now += step
        if what == "seen":
            monitor.seen(worker, now)
            last[worker] = now
        else:
            monitor.forget(worker)
            last.pop(worker, None)
        expected = sorted(
            (Overdue(w, now - t) for w, t in last.items() if now - t > timeout),
            key=lambda o: (-o.silent_ms, o.worker),
        )
        assert monitor.overdue(now) == expected


def test_a_non_positive_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        HeartbeatMonitor(0)


def test_a_stopped_worker_fails_the_attempt_by_heartbeat_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Configuration({
        "execution.target": "local",
        "heartbeat.interval": "100 ms",
        "heartbeat.timeout": "1 s",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1",
        "restart-strategy.fixed-delay.delay": "0 ms",
    })  # fmt: skip
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(2)
    source = DataGeneratorSource(lambda i: i, count=8000, records_per_second=2000)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").rebalance().sink_to(
        DiscardingSink()
    )
    client = env.execute_async("hung worker")
    live = live_workers_of(client)  # not an earlier test's worker, still exiting
    deadline = time.monotonic() + 30
    while client.get_job_status().result() is not JobStatus.RUNNING or not (
        ours := kill_candidates(live)[0]
    ):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stopped = ours[0]
    os.kill(stopped, signal.SIGSTOP)
    started = time.monotonic()
    try:
        client.get_job_execution_result(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the JobMaster killed it
            os.kill(stopped, signal.SIGKILL)
    assert time.monotonic() - started < 15, "the hung worker held up the restart"
    err = capsys.readouterr().err
    assert re.search(r"failed \(worker \d sent no heartbeat for 1\.\d s \(heartbeat\.timeout "
                     r"1000 ms\)", err), err[-2000:]  # fmt: skip
