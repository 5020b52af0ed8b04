"""What the checkpoint coordinator asks of the tasks of the running attempt.

The coordinator (``runtime.checkpoint``) never reaches into the cluster layer above it: it
talks to tasks through :class:`TaskGateway`, which
:class:`~undertow.runtime.master.task_gateway.AttemptGateway` implements (control
messages to the workers) and the testing kit's ``FakeTaskGateway`` records.

Threading: the JobMaster's loop only; every call returns at once (messages are queued).
"""

from __future__ import annotations

from typing import Any, Protocol

from undertow.core.errors import UndertowError
from undertow.runtime.checkpoint.barrier import CheckpointBarrier


class TaskGateway(Protocol):
    """What the coordinator asks of the tasks of the running attempt (implemented by
    :class:`~undertow.runtime.master.task_gateway.AttemptGateway`). Loop thread only."""

    def trigger_source(self, vertex_id: int, subtask: int, barrier: CheckpointBarrier) -> None: ...

    def notify_complete(self, checkpoint_id: int) -> None: ...

    def notify_aborted(self, checkpoint_id: int) -> None: ...

    def fail_job(self, error: UndertowError) -> None: ...

    def enumerators(self) -> dict[int, Any]:
        """Source vertex id -> its running split enumerator."""

    def stop_source(self, vertex_id: int, subtask: int, drain: bool) -> None:
        """Stop with savepoint: end the source subtask's data; called just before
        ``trigger_source`` for the savepoint, whose barrier must follow it."""
