"""The worker's main, against a JobMaster played by the test: register, deploy, run the
tasks, report what they did, and stop; a deploy that fails is reported as the worker's
failure.

One small job (a bounded sequence into a discarding sink, one subtask) on the worker's own
loop with no Spark and no other worker; each test takes well under a second.
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
from typing import Any

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.types import AttemptNumber
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource
from undertow.graph.job_graph import JobGraph
from undertow.runtime.control.connection import ControlConnection
from undertow.runtime.control.messages import (
    Deploy,
    RegisterWorker,
    Shutdown,
    SplitRequest,
    TaskFinished,
    TasksDeployed,
    WorkerFailed,
)
from undertow.runtime.master.enumerators import start_enumerators
from undertow.runtime.network.framing import server_handshake
from undertow.runtime.worker.worker import Worker, fit_gc_threshold

SECRET = b"k" * 32
ATTEMPT = AttemptNumber(4)


def job(parallelism: int = 1) -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    stream = env.from_source(NumberSequenceSource(1, 50), WatermarkStrategy.no_watermarks(), "seq")
    stream.rebalance().map(lambda x: x * 2).name("double").sink_to(DiscardingSink())
    return env._job_graph("worker-test")


async def play_master(deploy: Deploy, config: dict[str, str]) -> list[Any]:
    """Run one worker against a JobMaster that sends ``deploy`` once the worker registered,
    answers split requests with the sources' enumerators (the JobMaster's own), then sends
    ``Shutdown`` once every task finished (or the worker failed); what the worker sent."""
    received: list[Any] = []
    done = asyncio.Event()
    try:
        graph: JobGraph | None = pickle.loads(deploy.job_graph)
    except pickle.UnpicklingError:
        graph = None
    subtasks = sum(v.parallelism for v in graph.vertices) if graph is not None else -1
    enumerators: dict[int, Any] = {}

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = await server_handshake(reader, writer, SECRET)
        conn = ControlConnection(reader, writer, f"worker {index}", 1 << 20)
        while (msg := await conn.recv()) is not None:
            received.append(msg)
            if isinstance(msg, RegisterWorker):
                if graph is not None:
                    enumerators.update(start_enumerators(
                        graph, {}, lambda subtask, message: conn.send(message), ATTEMPT,
                        received.append,
                    ))  # fmt: skip
                conn.send(deploy)
            elif isinstance(msg, SplitRequest):
                enumerators[msg.vertex_id].handle_split_request(msg.subtask, msg.hostname)
            finished = sum(isinstance(m, TaskFinished) for m in received)
            if isinstance(msg, WorkerFailed) or finished == subtasks:
                conn.send(Shutdown(ATTEMPT))
                done.set()
        conn.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    worker = Worker(0, ATTEMPT, ("127.0.0.1", port), SECRET, Configuration(config))
    try:
        await asyncio.wait_for(worker.run(), 30)
    except Exception as err:  # a failed deploy is raised after it was reported
        received.append(err)
        await asyncio.wait_for(done.wait(), 10)  # the report may still be in flight
    finally:
        server.close()
    assert done.is_set(), received
    return received


def deploy_of(graph: JobGraph, config: dict[str, str]) -> Deploy:
    return Deploy(ATTEMPT, pickle.dumps(graph), {}, 1, config, job_id="1" * 32)


def test_a_worker_registers_deploys_runs_and_reports_each_finished_task() -> None:
    graph = job(parallelism=2)
    config = {"execution.checkpointing.interval": "0"}
    received = asyncio.run(play_master(deploy_of(graph, config), config))
    register = received[0]
    assert isinstance(register, RegisterWorker)
    assert (register.attempt, register.worker_index, register.pid) == (ATTEMPT, 0, os.getpid())
    assert received[1] == TasksDeployed(ATTEMPT, 0)
    finished = {(m.vertex_id, m.subtask): m.counters for m in received
                if isinstance(m, TaskFinished)}  # fmt: skip
    assert set(finished) == {(v.id, s) for v in graph.vertices for s in range(2)}
    consumer = next(v for v in graph.vertices if v.inputs)
    records = [finished[(consumer.id, s)][f"records_in[{consumer.name}]"] for s in range(2)]
    assert sum(records) == 50  # every record of the sequence reached one of them


@pytest.mark.parametrize("debloat", [True, False])
def test_a_worker_reports_the_debloat_announcements_of_tasks_with_inputs(debloat: bool) -> None:
    graph = job(parallelism=1)
    config = {
        "execution.checkpointing.interval": "0",
        "taskmanager.network.memory.buffer-debloat.enabled": str(debloat).lower(),
    }
    received = asyncio.run(play_master(deploy_of(graph, config), config))
    counters = {m.vertex_id: m.counters for m in received if isinstance(m, TaskFinished)}
    consumer = next(v for v in graph.vertices if v.inputs)
    source = next(v for v in graph.vertices if not v.inputs)
    name = f"buffer_debloat_announcements[{consumer.name} (1/1)]"
    if debloat:  # at least the first announcement (an eighth of a period, 25 ms by default)
        assert counters[consumer.id][name] >= 0
    else:
        assert name not in counters[consumer.id]
    assert not any(k.startswith("buffer_debloat") for k in counters[source.id])


def test_a_deploy_that_fails_is_reported_as_the_workers_failure() -> None:
    config = {"execution.checkpointing.interval": "0"}
    broken = Deploy(ATTEMPT, b"not a pickled job graph", {}, 1, config, job_id="2" * 32)
    received = asyncio.run(play_master(broken, config))
    [failure] = [m for m in received if isinstance(m, WorkerFailed)]
    assert failure.worker_index == 0 and not failure.fatal
    assert failure.traceback  # the whole traceback reaches the JobMaster
    raised = [m for m in received if isinstance(m, Exception)]
    assert [type(e) for e in raised] == [pickle.UnpicklingError]  # the worker's main raises it
    assert failure.error == str(raised[0])


@pytest.mark.parametrize("value", ["-5 ms", "soon"])
def test_a_bad_worker_option_fails_when_the_worker_is_made(value: str) -> None:
    with pytest.raises(Exception, match=r"heartbeat\.interval"):
        Worker(0, ATTEMPT, ("127.0.0.1", 1), SECRET, Configuration({"heartbeat.interval": value}))


@pytest.fixture
def gc_thresholds() -> Any:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_the_young_gc_threshold_is_raised_never_lowered(gc_thresholds: None) -> None:
    fit_gc_threshold(20_000)
    assert gc.get_threshold() == (20_000, 10, 10)
    fit_gc_threshold(5_000)
    fit_gc_threshold(0)
    assert gc.get_threshold() == (20_000, 10, 10)


def test_a_worker_process_runs_with_the_configured_gc_threshold() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local", "undertow.worker.gc-threshold": "12345"})
    )

    def threshold(_: int) -> int:
        return gc.get_threshold()[0]

    assert set(env.from_collection([0, 1]).map(threshold).execute_and_collect()) == {12_345}
