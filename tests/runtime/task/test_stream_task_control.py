"""StreamTask as the worker's TaskControl: each call posts a mail, and the task itself says
whether it takes a trigger (not after it finished, not without a checkpointer)."""

from __future__ import annotations

from collections.abc import Callable

from test_deployment import Responder, build, deployment

from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions, SnapshotType
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.runtime.task.lifecycle import Finished
from undertow.runtime.task.stream_task import StreamTask

BARRIER = CheckpointBarrier(
    3, 0, CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0)
)


def recording(task: StreamTask) -> list[Callable[[], None]]:
    posted: list[Callable[[], None]] = []
    task.post = posted.append  # type: ignore[method-assign]
    return posted


def test_a_running_task_takes_a_trigger_as_a_mail() -> None:
    task = build(deployment({}), CheckpointIO(responder=Responder()))
    posted = recording(task)
    assert task.trigger_checkpoint(BARRIER) is True
    task.notify_checkpoint_complete(3)
    task.notify_checkpoint_aborted(4)
    task.stop_with_savepoint(drain=False)
    assert len(posted) == 4


def test_a_finished_task_takes_no_trigger() -> None:
    task = build(deployment({}), CheckpointIO(responder=Responder()))
    posted = recording(task)
    task.lifecycle = Finished()
    assert task.trigger_checkpoint(BARRIER) is False
    assert posted == []


def test_a_task_without_checkpointer_takes_no_trigger_and_no_notification() -> None:
    task = build(deployment({}), None)
    posted = recording(task)
    assert task.trigger_checkpoint(BARRIER) is False
    task.notify_checkpoint_complete(3)
    task.notify_checkpoint_aborted(3)
    assert posted == []
