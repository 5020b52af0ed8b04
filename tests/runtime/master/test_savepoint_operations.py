"""Savepoints asked of a running job (:mod:`undertow.runtime.master.savepoint_operations`),
driven on the testing kit's coordinator: a directory is resolved first, a request reaches the
coordinator on the loop, and its REST operation and future get the savepoint."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.errors import ConfigurationError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.graph.job_graph import JobGraph, build_job_graph
from undertow.runtime.checkpoint.failure import CheckpointException
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.master.job_status import JobStatus
from undertow.runtime.master.savepoint_operations import SavepointOperations
from undertow.testing.coordinator import in_memory_coordinator


def job_graph() -> JobGraph:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    ).print()
    return build_job_graph(env.get_stream_graph("savepoint operations test"))


def test_without_a_directory_the_request_is_refused_naming_the_option() -> None:
    operations = SavepointOperations("job", "", None, lambda: JobStatus.RUNNING)
    with pytest.raises(ConfigurationError, match="savepoint-dir"):
        operations.resolve_directory(SavepointRequest(""))
    configured = SavepointOperations("job", "/tmp/sp", None, lambda: JobStatus.RUNNING)
    assert configured.resolve_directory(SavepointRequest("")).target_directory.startswith("/tmp/sp")


def test_a_job_without_its_loop_refuses_naming_its_status() -> None:
    operations = SavepointOperations("job", "/tmp/sp", None, lambda: JobStatus.CREATED)
    with pytest.raises(CheckpointException, match="job is CREATED"):
        operations.trigger(SavepointRequest("/tmp/sp")).result(timeout=5)


def test_a_rest_savepoint_reaches_the_coordinator_and_its_operation_completes() -> None:
    async def scenario() -> None:
        kit = in_memory_coordinator(job_graph())
        operations = SavepointOperations(
            kit.coordinator.job_id, "", kit.coordinator, lambda: JobStatus.RUNNING
        )
        operations.loop = asyncio.get_running_loop()
        kit.coordinator.start()
        target = f"memory:///savepoints-{uuid.uuid4().hex}"
        trigger = operations.savepoint_trigger(target)
        assert operations.savepoint_operation(trigger) == {"status": {"id": "IN_PROGRESS"}}
        for _ in range(100):  # the request hops onto the loop, then triggers
            await asyncio.sleep(0.01)
            if kit.gateway.triggered:
                break
        kit.acknowledge_all(1)
        await kit.coordinator.finish_completing()
        await asyncio.sleep(0.01)
        operation = operations.savepoint_operation(trigger)
        assert operation is not None and operation["status"] == {"id": "COMPLETED"}
        assert operation["operation"]["location"].startswith(target)

    asyncio.run(scenario())
