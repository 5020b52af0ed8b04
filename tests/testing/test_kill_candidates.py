"""A kill with the job's candidates hits a live worker of that job and nothing else: a process
of the test named ``undertow-worker`` that is no worker of the job (a Spark Python worker
still named so, an earlier test's worker shutting down) is never chosen, though the old
selection by name (:func:`worker_process_pids`) takes it. The candidates come from the job's
``GET /taskmanagers`` (Flink's shape; its fields are checked here on a running ``local`` job)."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.rest_client import fetch, serving, wait_for

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.errors import JobCancelledError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.testing._faults import CandidatesUnknown, busy_worker_pids
from undertow.testing.oracle import (
    WorkerKiller,
    kill_candidates,
    live_workers_of,
    worker_process_pids,
)

#: A process of this test named as a worker is, that belongs to no job.
FOREIGN = (
    "import time\n"
    "from undertow.deploy.process_name import WORKER_PROCESS_NAME, set_process_name\n"
    "set_process_name(WORKER_PROCESS_NAME)\n"
    "time.sleep(120)\n"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
def test_a_kill_chooses_only_among_the_jobs_live_workers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    foreign = subprocess.Popen([sys.executable, "-c", FOREIGN])
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local", "rest.port": 0,
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": 1,
        "restart-strategy.fixed-delay.delay": "0 ms",
    }))  # fmt: skip
    env.set_parallelism(2)
    source = DataGeneratorSource(lambda i: i, count=None, records_per_second=200)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").rebalance().sink_to(
        DiscardingSink()
    )
    client = env.execute_async("kill candidates")
    try:
        wait_for(lambda: foreign.pid in worker_process_pids(), "the foreign process's name")
        live = live_workers_of(client)
        first = wait_for(lambda: (p := live()) and len(p) == 2 and p, "two live workers")
        status, body = fetch(f"{client.get_rest_address()}/taskmanagers")
        assert status == 200
        workers = sorted(body["taskmanagers"], key=lambda w: w["id"])
        assert [w["id"].split(" (")[0] for w in workers] == ["worker 0", "worker 1"]
        for w in workers:
            assert w["id"] == f"worker {w['id'][7]} ({w['host']}:{w['dataPort']})"
            assert (w["slotsNumber"], w["freeSlots"], w["jmxPort"]) == (1, 0, -1)
            assert w["timeSinceLastHeartbeat"] > 0 and w["path"].startswith("undertow://")
        assert sorted(w["pid"] for w in workers) == first

        assert foreign.pid in worker_process_pids()  # what the old selection would take
        chosen_from, where = kill_candidates(live)
        assert sorted(chosen_from) == first, where
        assert foreign.pid not in chosen_from, where

        killer = WorkerKiller(seed=7, earliest_s=0.0, latest_s=0.0, candidates=live).start()
        killed = killer.join(10)
        assert killed in first, killer.report
        assert foreign.poll() is None, "the foreign process was killed"
        assert f"of {chosen_from}" in killer.report[-1] and str(first) in killer.report[-1]
        # the kill failed the attempt over: the next one has workers of its own
        wait_for(lambda: (p := live()) and len(p) == 2 and not set(p) & set(first),
                 "the restarted attempt's workers", timeout=30)  # fmt: skip
    finally:
        client.cancel()
        foreign.kill()
        foreign.wait()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(30)
    assert "[oracle] kill_worker_process(seed=7): kill -9 worker pid" in capsys.readouterr().out


def test_a_worker_whose_subtasks_all_finished_is_no_candidate() -> None:
    body = {"taskmanagers": [
        {"id": "worker 0 (h:1)", "pid": 30, "slotsNumber": 2, "freeSlots": 1},
        {"id": "worker 1 (h:2)", "pid": 20, "slotsNumber": 2, "freeSlots": 2},  # all finished
        {"id": "worker 2 (h:3)", "pid": 10, "slotsNumber": 1, "freeSlots": 0},
    ]}  # fmt: skip
    assert busy_worker_pids(body) == [10, 30]
    assert busy_worker_pids({"taskmanagers": []}) == []


class _Job:
    """A job handle (``RestAddressed``) whose REST API is a server of the test."""

    def __init__(self, address: str | None) -> None:
        self.address = address

    def get_rest_address(self) -> str | None:
        return self.address


@contextlib.contextmanager
def _rest_api(answers: list[bytes | None]) -> Iterator[str]:
    """A server answering ``GET /taskmanagers`` with ``answers`` in turn (the last one from
    then on): a body, or ``None``: the connection is closed without an answer."""
    served = iter(answers)
    last: list[bytes | None] = [None]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            last[0] = next(served, last[0])
            if last[0] is None:
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(last[0])))
            self.end_headers()
            self.wfile.write(last[0])

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as url:
        yield url


def _taskmanagers(*pids: int) -> bytes:
    workers = [{"id": f"worker {i}", "pid": p, "slotsNumber": 1, "freeSlots": 0}
               for i, p in enumerate(pids)]  # fmt: skip
    return json.dumps({"taskmanagers": workers}).encode()


def test_a_rest_api_that_does_not_answer_is_named_and_not_taken_for_a_job_without_workers() -> None:
    """A loaded machine's REST API may answer late or not at all: the kill then says so,
    instead of reporting an empty list of live workers as if the job had ended."""
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"http://127.0.0.1:{silent.getsockname()[1]}"
        live = live_workers_of(_Job(address), answer_within_s=0.5)
        started = time.monotonic()
        with pytest.raises(CandidatesUnknown, match=r"did not answer within 0\.5 s .*timed out"):
            live()
        assert time.monotonic() - started < 3.0
        chosen_from, where = kill_candidates(live)
    assert chosen_from == [] and where.startswith("the job's live workers are unknown: GET "), where
    assert f"{address}/taskmanagers did not answer" in where, where
    with pytest.raises(CandidatesUnknown, match="no REST API"):
        live_workers_of(_Job(None))()
    with _rest_api([_taskmanagers()]) as answering:  # it answers: no busy worker
        chosen_from, where = kill_candidates(live_workers_of(_Job(answering)))
    assert chosen_from == [] and where.startswith("the job lists no busy worker"), where


def test_a_rest_api_that_fails_to_answer_once_is_asked_again() -> None:
    with _rest_api([None, None, _taskmanagers(os.getpid())]) as address:
        assert live_workers_of(_Job(address), answer_within_s=10.0)() == [os.getpid()]
