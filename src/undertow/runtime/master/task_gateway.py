"""The checkpoint coordinator's gateway to the tasks of the running attempt.

:class:`AttemptGateway` implements the coordinator's
:class:`~undertow.runtime.checkpoint.task_gateway.TaskGateway`: it turns the coordinator's
requests into control messages to the workers of the current attempt (trigger a source
subtask, stop it for a savepoint, notify completion or abort), hands it the attempt's split
enumerators for their snapshots, and fails the attempt when the coordinator says so. It
records nothing: statistics come from the coordinator's events.

Between attempts (none current) messages are dropped: the next attempt restores from a
checkpoint and its tasks need no notification of an older one. Every message carries the
attempt's number, so a worker of an older attempt would drop it too (fencing).

Threading: the JobMaster's loop only, but :meth:`AttemptGateway.grant_collect_credit` (any
thread: it hands the grant to the loop, the only writer of the control connections).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from undertow.core.errors import UndertowError
from undertow.core.types import AttemptNumber
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.control.messages import (
    GrantCollectCredit,
    MasterMessage,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    StopSource,
    TriggerSourceCheckpoint,
)
from undertow.runtime.control.placement import ExecutionPlan
from undertow.runtime.master.attempt import Attempt
from undertow.runtime.master.collect_window import Grant


class AttemptGateway:
    """Messages from the coordinator to the current attempt's tasks (see the module
    docstring). ``attempt`` is set by the JobMaster when an attempt starts."""

    def __init__(self, plan: ExecutionPlan, fail: Callable[[Attempt, UndertowError], None]) -> None:
        self.plan = plan
        self._fail = fail
        self.attempt: Attempt | None = None
        #: The JobMaster's loop (set when it starts): where grants from other threads go.
        self.loop: asyncio.AbstractEventLoop | None = None

    def send_to_subtask(self, subtask: int, message: MasterMessage) -> None:
        """To the worker that runs ``subtask`` (any vertex: placement is by subtask index)."""
        attempt = self.attempt
        if attempt is not None:
            conn = attempt.workers.get(self.plan.worker_of(subtask))
            if conn is not None:
                conn.send(message)

    def broadcast(self, message: MasterMessage) -> None:
        attempt = self.attempt
        if attempt is not None:
            for conn in attempt.workers.values():
                conn.send(message)

    def grant_collect_credit(self, sink_id: str, grant: Grant) -> None:
        """Any thread: on the loop, tell collect sink ``sink_id`` its credit, if the attempt
        ``grant`` is for still runs (a newer attempt's sink starts from its own grants). A
        collect sink has parallelism 1 (the stream graph refuses another: its operator is a
        ``stream_graph.RunsAsOneSubtask``), so its subtask is 0. Dropped once the loop closed."""
        loop = self.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the job is over
                loop.call_soon_threadsafe(self._grant, sink_id, grant)

    def _grant(self, sink_id: str, grant: Grant) -> None:
        attempt = self.attempt
        if attempt is not None and attempt.number == grant.attempt and not attempt.done.is_set():
            self.send_to_subtask(0, GrantCollectCredit(attempt.number, sink_id, grant.credit))

    def _number(self) -> AttemptNumber:
        return self.attempt.number if self.attempt is not None else AttemptNumber(-1)

    # -- TaskGateway ---------------------------------------------------------------------------
    def trigger_source(self, vertex_id: int, subtask: int, barrier: CheckpointBarrier) -> None:
        message = TriggerSourceCheckpoint(self._number(), vertex_id, subtask, barrier)
        self.send_to_subtask(subtask, message)

    def stop_source(self, vertex_id: int, subtask: int, drain: bool) -> None:
        self.send_to_subtask(subtask, StopSource(self._number(), vertex_id, subtask, drain))

    def notify_complete(self, checkpoint_id: int) -> None:
        self.broadcast(NotifyCheckpointComplete(self._number(), checkpoint_id))

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.broadcast(NotifyCheckpointAborted(self._number(), checkpoint_id))

    def fail_job(self, error: UndertowError) -> None:
        if self.attempt is not None:
            self._fail(self.attempt, error)

    def enumerators(self) -> dict[int, Any]:
        return dict(self.attempt.enumerators) if self.attempt is not None else {}
