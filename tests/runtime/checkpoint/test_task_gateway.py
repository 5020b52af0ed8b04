"""The coordinator's view of the tasks (:mod:`undertow.runtime.checkpoint.task_gateway`): the
testing kit's recording gateway implements the whole contract and keeps each call."""

from __future__ import annotations

from undertow.core.errors import UndertowError
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions
from undertow.runtime.checkpoint.task_gateway import TaskGateway
from undertow.testing.coordinator import FakeTaskGateway

BARRIER = CheckpointBarrier(3, 1_000, CheckpointOptions())


def exercise(gateway: TaskGateway) -> None:
    """Every call of the contract, once, in a stop-with-savepoint's order."""
    gateway.stop_source(1, 0, True)
    gateway.trigger_source(1, 0, BARRIER)
    gateway.notify_complete(3)
    gateway.notify_aborted(4)
    gateway.fail_job(UndertowError("boom"))


def test_the_recording_gateway_keeps_every_call_of_the_contract() -> None:
    recording = FakeTaskGateway(source_enumerators={1: "enumerator"})
    exercise(recording)
    assert recording.stopped == [(1, 0, True)]
    assert recording.triggered == [(1, 0, BARRIER)] and recording.barriers_of(3) == [(1, 0)]
    assert (recording.completed, recording.aborted) == ([3], [4])
    assert [str(e) for e in recording.failures] == ["boom"]
    enumerators = recording.enumerators()
    assert enumerators == {1: "enumerator"}
    enumerators.clear()  # a copy: the coordinator cannot change the attempt's enumerators
    assert recording.enumerators() == {1: "enumerator"}
