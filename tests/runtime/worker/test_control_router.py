"""The worker's control router: each control message reaches the tasks it is for, through
the ``TaskControl`` protocol only (fakes from ``undertow.testing.worker``)."""

from __future__ import annotations

import logging

import pytest

from undertow.core.types import AttemptNumber
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions, SnapshotType
from undertow.runtime.control.messages import (
    AddSplits,
    CancelTasks,
    GrantCollectCredit,
    NoMoreSplits,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    Shutdown,
    StopSource,
    TriggerSourceCheckpoint,
)
from undertow.runtime.task.collect_credit import CollectCredits
from undertow.runtime.worker.control_router import ControlRouter, Routed
from undertow.testing.worker import RecordingTask

A = AttemptNumber(3)
BARRIER = CheckpointBarrier(
    7, 0, CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0)
)


class Hurry:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def router(
    **tasks: RecordingTask,
) -> tuple[ControlRouter, dict[tuple[int, int], RecordingTask], Hurry]:
    by_key = {(int(k[1]), int(k[2])): t for k, t in tasks.items()}  # "t01" -> (0, 1)
    hurry = Hurry()
    return ControlRouter(by_key, hurry, worker_index=0), by_key, hurry


def test_source_messages_go_to_their_subtask_only() -> None:
    r, tasks, _ = router(t00=RecordingTask(), t01=RecordingTask())
    assert r.route(AddSplits(A, 0, 1, ["s1", "s2"])) is Routed.CONTINUE
    r.route(NoMoreSplits(A, 0, 1))
    r.route(StopSource(A, 0, 1, True))
    assert tasks[(0, 1)].calls == [
        ("add_splits", ["s1", "s2"]), ("no_more_splits", None), ("stop_with_savepoint", True),
    ]  # fmt: skip
    assert tasks[(0, 0)].calls == []


def test_a_trigger_hurries_the_pace_only_when_the_task_took_it() -> None:
    r, tasks, hurry = router(t00=RecordingTask(), t01=RecordingTask(finished=True))
    r.route(TriggerSourceCheckpoint(A, 0, 0, BARRIER))
    assert tasks[(0, 0)].calls == [("trigger_checkpoint", BARRIER)]
    assert hurry.count == 1
    r.route(TriggerSourceCheckpoint(A, 0, 1, BARRIER))  # finished: its TaskFinished acks it
    assert tasks[(0, 1)].calls == []
    assert hurry.count == 1


def test_notifications_and_cancel_reach_every_task() -> None:
    r, tasks, _ = router(t00=RecordingTask(), t10=RecordingTask(checkpointing=False))
    r.route(NotifyCheckpointComplete(A, 4))
    r.route(NotifyCheckpointAborted(A, 5))
    r.route(CancelTasks(A))
    assert tasks[(0, 0)].calls == [
        ("notify_checkpoint_complete", 4), ("notify_checkpoint_aborted", 5), ("cancel", None),
    ]  # fmt: skip
    assert tasks[(1, 0)].calls == [("cancel", None)]


def test_shutdown_and_the_end_of_the_connection_stop_the_loop() -> None:
    r, tasks, _ = router(t00=RecordingTask())
    assert r.route(Shutdown(A)) is Routed.STOP
    assert r.route(None) is Routed.STOP
    assert tasks[(0, 0)].calls == []


def test_an_unknown_message_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    r, tasks, _ = router(t00=RecordingTask())
    with caplog.at_level(logging.WARNING):
        assert r.route("surprise") is Routed.CONTINUE
    assert "worker 0: unexpected control message 'surprise'" in caplog.text
    assert tasks[(0, 0)].calls == []


def test_a_credit_grant_goes_to_the_collect_sinks_credit_and_wakes_its_task() -> None:
    credits = CollectCredits()
    r = ControlRouter({}, Hurry(), worker_index=0, credits=credits)
    woken: list[str] = []
    gate = credits.gate("sink")
    gate.notify_when_available(lambda: woken.append("task"))
    assert r.route(GrantCollectCredit(A, "sink", 64)) is Routed.CONTINUE
    assert gate.credit == 64 and woken == ["task"]
