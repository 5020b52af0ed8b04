"""What a subtask sends its worker's JobMaster: printed lines, collected records (paid for with
the credit the JobMaster grants a collect sink), split requests, and its checkpoints'
acknowledgements and declines.

Threading: called on the worker's loop thread (``wake`` from any thread: it hops onto the
task's loop; ``acknowledge_from_any_thread`` from the worker's I/O threads: it writes onto the
control connection from there). Each object belongs to one subtask and lives as long as its
task.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from typing import Any, Protocol

from undertow.core.types import AttemptNumber, CheckpointId, SubtaskIndex, VertexId
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.control.messages import (
    AcknowledgeCheckpoint,
    CollectRecords,
    DeclineCheckpoint,
    PrintLines,
    SplitRequest,
)
from undertow.runtime.task.collect_credit import CollectCredit, CollectCredits


class WakeableTask(Protocol):
    """What a reader's wake-up reaches of a task (the worker's loop thread)."""

    def source_available(self) -> None:
        """A reader said data is available again."""
        ...


class WorkerLink(Protocol):
    """The worker as a subtask's messages see it."""

    @property
    def attempt(self) -> AttemptNumber: ...

    @property
    def tasks(self) -> Mapping[tuple[int, int], WakeableTask]: ...

    @property
    def collect_credits(self) -> CollectCredits:
        """The credit of the worker's collect sinks (the control router grants it)."""
        ...

    def send(self, message: Any) -> None: ...

    def send_from_any_thread(self, message: Any) -> None:
        """``send`` from any thread, in order with the loop thread's messages."""
        ...


class TaskServicesToMaster:
    """Per-task forwarding to the JobMaster (implements ``TaskServices``). ``loop``: the
    worker's loop, which runs its tasks (``wake`` hops onto it)."""

    def __init__(
        self, worker: WorkerLink, vertex_id: int, subtask: int, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.worker = worker
        self.vertex_id = vertex_id
        self.subtask = subtask
        self._loop = loop

    def print_lines(self, lines: list[str]) -> None:
        self.worker.send(PrintLines(self.worker.attempt, lines))

    def collect(self, sink_id: str, payload: bytes, after_checkpoint: int) -> None:
        self.worker.send(CollectRecords(self.worker.attempt, sink_id, payload, after_checkpoint))

    def collect_credit(self, sink_id: str) -> CollectCredit:
        return self.worker.collect_credits.gate(sink_id)

    def send_split_request(self) -> None:
        self.worker.send(
            SplitRequest(self.worker.attempt, self.vertex_id, self.subtask, socket.gethostname())
        )

    def wake(self) -> None:
        task = self.worker.tasks.get((self.vertex_id, self.subtask))
        if task is not None:
            self._loop.call_soon_threadsafe(task.source_available)


class ResponderToMaster:
    """Acknowledges and declines one subtask's checkpoints to the JobMaster (implements
    :class:`~undertow.runtime.task.checkpoint_io.CheckpointResponder`)."""

    def __init__(self, worker: WorkerLink, vertex_id: int, subtask: int) -> None:
        self.worker = worker
        self.vertex_id = VertexId(vertex_id)
        self.subtask = SubtaskIndex(subtask)

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None:
        self.worker.send(self._ack(checkpoint_id, handle, metrics))

    def acknowledge_from_any_thread(
        self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]
    ) -> None:
        """:meth:`acknowledge` from an I/O thread (implements
        :class:`~undertow.runtime.task.checkpoint_io.AnyThreadAcknowledger`)."""
        self.worker.send_from_any_thread(self._ack(checkpoint_id, handle, metrics))

    def _ack(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> Any:
        return AcknowledgeCheckpoint(AttemptNumber(self.worker.attempt), self.vertex_id,
                                     self.subtask, CheckpointId(checkpoint_id), handle,
                                     metrics)  # fmt: skip

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str) -> None:
        self.worker.send(DeclineCheckpoint(AttemptNumber(self.worker.attempt), self.vertex_id,
                                           self.subtask, CheckpointId(checkpoint_id), reason,
                                           detail))  # fmt: skip
