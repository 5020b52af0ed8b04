"""A worker's control connection on the driver (``runtime/master/worker_control.py``), over a
real loopback socket, against a JobMaster stand-in; and what a deployment restores."""

from __future__ import annotations

import asyncio
import pickle
from dataclasses import dataclass, field, replace
from typing import Any

from undertow.common import Configuration
from undertow.core.errors import UndertowError
from undertow.core.types import AttemptNumber
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import build_job_graph
from undertow.runtime.checkpoint.metadata import CheckpointMetadata
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.control.connection import ControlConnection
from undertow.runtime.control.messages import CollectRecords
from undertow.runtime.master.attempt import Attempt
from undertow.runtime.master.collect_results import CollectResults
from undertow.runtime.master.metrics import TaskMetricsStore
from undertow.runtime.master.settings import MasterSettings
from undertow.runtime.master.worker_control import restore_assignment, serve_worker
from undertow.runtime.network.framing import attempt_secret, client_handshake

SECRET = b"s" * 32
ATTEMPT = AttemptNumber(1)


class _Launcher:
    def describe_exit(self, worker_index: int) -> str:
        return "exit code 3"


@dataclass
class _Host:
    """The parts of the JobMaster a control connection uses."""

    current_attempt: Attempt | None
    attempt: AttemptNumber = ATTEMPT
    job_id: str = "job-a"
    secret: bytes = SECRET
    settings: MasterSettings = field(default_factory=lambda: MasterSettings.of(Configuration()))
    launcher: Any = field(default_factory=_Launcher)
    coordinator: Any = None
    task_metrics: TaskMetricsStore = field(default_factory=TaskMetricsStore)
    results: CollectResults = field(default_factory=lambda: CollectResults(exactly_once=False))
    failures: list[str] = field(default_factory=list)

    def fail(self, attempt: Attempt, error: UndertowError, origin: Any = None) -> None:
        self.failures.append(str(error))


def _attempt(number: int) -> Attempt:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.from_collection([1]).print()
    graph = build_job_graph(env.get_stream_graph("control"))
    return Attempt(AttemptNumber(number), graph, 1, 10_000)


async def _session(host: _Host, key: bytes, messages: list[Any]) -> None:
    """Worker 0 connects with ``key``, sends ``messages`` and closes; the server's end ran."""
    served = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await serve_worker(host, reader, writer)
        finally:
            served.set()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await client_handshake(reader, writer, key, 0)
    except Exception:
        pass  # a wrong key: the server drops the connection
    else:
        conn = ControlConnection(reader, writer, "master", 1 << 20)
        for message in messages:
            conn.send(message)
        await conn.drain()
    writer.close()
    await asyncio.wait_for(served.wait(), 10)
    server.close()


def test_current_attempts_messages_are_dispatched_and_older_ones_dropped() -> None:
    async def run() -> _Host:
        host = _Host(_attempt(1))
        await _session(host, attempt_secret(SECRET, AttemptNumber(1)), [
            CollectRecords(AttemptNumber(0), "sink", pickle.dumps(["old"]), 0),  # fenced
            CollectRecords(AttemptNumber(1), "sink", pickle.dumps(["new"]), 0),
        ])  # fmt: skip
        return host

    host = asyncio.run(run())
    assert host.results.take("sink", block=False) == ["new"]
    assert host.results.take("sink", block=False) is None
    # the worker went away while its attempt ran: the attempt fails, naming how it exited
    assert host.failures == ["worker 0 exited unexpectedly (exit code 3)"]
    # and is no longer live (GET /taskmanagers leaves it out)
    assert host.current_attempt is not None and host.current_attempt.disconnected == {0}


def test_a_worker_with_an_older_attempts_key_is_dropped_before_any_message() -> None:
    async def run() -> _Host:
        host = _Host(_attempt(1))
        old_key = attempt_secret(SECRET, AttemptNumber(0))
        await _session(host, old_key, [CollectRecords(AttemptNumber(1), "sink", b"x", 0)])
        return host

    host = asyncio.run(run())
    assert host.results.take("sink", block=False) is None and host.failures == []


def test_a_deployment_restores_the_plan_and_knows_whether_it_is_the_jobs_own() -> None:
    meta = CheckpointMetadata("job-a", 3, 1, 2, False, ())
    own = RestorePlan(meta, "file:///ckpts", "job-a", {}, {})
    assert restore_assignment(None, "job-a") is None
    assignment = restore_assignment(own, "job-a")
    assert assignment is not None and assignment.checkpoint_id == 3
    assert assignment.refers_to_channel_state
    claimed = restore_assignment(replace(own, pointer="file:///sp/chk-3"), "job-a")
    assert claimed is not None and not claimed.refers_to_channel_state
