"""The worker's control router: hands each control message from the JobMaster to its tasks.

The router knows tasks only as :class:`TaskControl`: it never reaches into a task's
checkpointer, chain or lifecycle, it asks the task (a task that already finished answers
``False`` to a trigger, and the router then does not hurry the slices). ``StreamTask``
implements the protocol; every method posts a mail onto the task's mailbox and returns at once.
Which message goes to which method: :meth:`ControlRouter.route`.

Threading: the worker's loop thread only. Lifecycle: one router per worker, built after the
deployment with the worker's tasks (the mapping is read, never changed).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from undertow.runtime.checkpoint.barrier import CheckpointBarrier
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

log = logging.getLogger(__name__)


class TaskControl(Protocol):
    """What the worker asks of one of its tasks; loop thread; each call posts a mail."""

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> bool:
        """Start a checkpoint at this source subtask; ``False`` if it cannot take one any
        more (it finished, or it has no checkpointer), and nothing was posted."""
        ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None: ...

    def add_splits(self, splits: list[Any]) -> None: ...

    def no_more_splits(self) -> None: ...

    def stop_with_savepoint(self, drain: bool) -> None:
        """Stop this source subtask for a savepoint (``drain``: end event time first)."""
        ...

    def cancel(self) -> None: ...


class Routed(enum.Enum):
    """What the worker's control loop does after a message."""

    CONTINUE = "continue"
    #: ``Shutdown`` or the JobMaster's end of the connection: stop serving.
    STOP = "stop"


class ControlRouter:
    """Routes control messages to ``tasks`` (keyed by ``(vertex id, subtask)``).

    ``hurry``: called when a source trigger was posted (the worker's pace shortens the slices
    while a checkpoint passes). ``worker_index`` names the worker in warnings. ``credits``:
    the worker's collect sinks' credit (``GrantCollectCredit`` adds to it).
    """

    def __init__(
        self,
        tasks: Mapping[tuple[int, int], TaskControl],
        hurry: Callable[[], None],
        worker_index: int,
        credits: CollectCredits | None = None,
    ) -> None:
        self._tasks = tasks
        self._hurry = hurry
        self._worker_index = worker_index
        self._credits = credits if credits is not None else CollectCredits()

    def route(self, msg: object) -> Routed:
        """Hand ``msg`` (``None``: the connection ended) to the tasks it is for.

        ============================  ====================================================
        ``AddSplits``                 ``add_splits`` of the reader subtask
        ``NoMoreSplits``              ``no_more_splits`` of the reader subtask
        ``TriggerSourceCheckpoint``   ``trigger_checkpoint`` of the source subtask
        ``StopSource``                ``stop_with_savepoint`` of the source subtask
        ``NotifyCheckpointComplete``  ``notify_checkpoint_complete`` of every task
        ``NotifyCheckpointAborted``   ``notify_checkpoint_aborted`` of every task
        ``CancelTasks``               ``cancel`` of every task
        ``GrantCollectCredit``        the collect sink's credit (it wakes the sink's task)
        ``Shutdown`` (or the end)     :attr:`Routed.STOP`: the worker's control loop ends
        ============================  ====================================================
        """
        if msg is None or isinstance(msg, Shutdown):
            return Routed.STOP
        if isinstance(msg, AddSplits):
            self._task(msg.vertex_id, msg.subtask).add_splits(msg.splits)
        elif isinstance(msg, NoMoreSplits):
            self._task(msg.vertex_id, msg.subtask).no_more_splits()
        elif isinstance(msg, TriggerSourceCheckpoint):
            if self._task(msg.vertex_id, msg.subtask).trigger_checkpoint(msg.barrier):
                self._hurry()
        elif isinstance(msg, StopSource):
            self._task(msg.vertex_id, msg.subtask).stop_with_savepoint(msg.drain)
        elif isinstance(msg, NotifyCheckpointComplete):
            for task in self._tasks.values():
                task.notify_checkpoint_complete(msg.checkpoint_id)
        elif isinstance(msg, NotifyCheckpointAborted):
            for task in self._tasks.values():
                task.notify_checkpoint_aborted(msg.checkpoint_id)
        elif isinstance(msg, CancelTasks):
            for task in self._tasks.values():
                task.cancel()
        elif isinstance(msg, GrantCollectCredit):
            self._credits.grant(msg.sink_id, msg.credit)
        else:
            log.warning("worker %d: unexpected control message %r", self._worker_index, msg)
        return Routed.CONTINUE

    def _task(self, vertex_id: int, subtask: int) -> TaskControl:
        return self._tasks[(vertex_id, subtask)]
