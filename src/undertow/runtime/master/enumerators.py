"""The split enumerators of a job's sources, hosted by the JobMaster (FLIP-27's coordinator side).

Each attempt creates one enumerator per source vertex when it deploys (restored from the
checkpoint's enumerator state when there is one) and registers every reader subtask with it;
:func:`.attempt.shutdown_workers` closes it. The context an enumerator gets sends
``AddSplits`` / ``NoMoreSplits`` to the worker that runs the subtask, through ``send``.

Threading: the JobMaster's loop only (creation, split requests, snapshots at trigger time);
blocking calls an enumerator hands to ``call_async`` run on the loop's default executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from undertow.connectors.source import SplitEnumerator, SplitEnumeratorContext
from undertow.core.types import AttemptNumber
from undertow.graph.job_graph import JobGraph
from undertow.runtime.control.messages import AddSplits, MasterMessage, NoMoreSplits

#: Sends a control message to the worker that runs a subtask (dropped if it is not there).
SendToSubtask = Callable[[int, MasterMessage], None]
T = TypeVar("T")


class EnumeratorContext(SplitEnumeratorContext[Any]):
    """What one source vertex's enumerator may do: assign splits to its readers."""

    def __init__(
        self, send: SendToSubtask, attempt: AttemptNumber, vertex_id: int, parallelism: int
    ) -> None:
        self._send = send
        self.attempt = attempt
        self.vertex_id = vertex_id
        self.parallelism = parallelism

    def current_parallelism(self) -> int:
        return self.parallelism

    def registered_readers(self) -> list[int]:
        return list(range(self.parallelism))

    def assign_split(self, split: Any, subtask: int) -> None:
        self._send(subtask, AddSplits(self.attempt, self.vertex_id, subtask, [split]))

    def signal_no_more_splits(self, subtask: int) -> None:
        self._send(subtask, NoMoreSplits(self.attempt, self.vertex_id, subtask))

    def call_async(
        self, call: Callable[[], T], handler: Callable[[T | None, BaseException | None], None]
    ) -> None:
        """``call`` on the loop's default executor (a broker that went away keeps it up to its
        API timeout: the loop goes on serving heartbeats, checkpoints and cancels), then
        ``handler`` on the loop."""
        future = asyncio.get_running_loop().run_in_executor(None, call)

        def done(f: asyncio.Future[T]) -> None:
            if f.cancelled():
                return
            error = f.exception()
            handler(None, error) if error is not None else handler(f.result(), None)

        future.add_done_callback(done)


def start_enumerators(
    graph: JobGraph, restored: Mapping[int, Any], send: SendToSubtask, attempt: AttemptNumber
) -> dict[int, SplitEnumerator[Any]]:
    """Create, start and register the readers of every source vertex's enumerator; source
    vertex id -> enumerator. ``restored``: source vertex id -> its checkpointed state;
    ``attempt``: the number its split assignments carry."""
    enumerators: dict[int, SplitEnumerator[Any]] = {}
    for vertex in graph.vertices:
        if not vertex.is_source:
            continue
        source = vertex.operators[0].instantiate()["source"]
        ctx = EnumeratorContext(send, attempt, vertex.id, vertex.parallelism)
        if vertex.id in restored:
            enumerator = source.restore_enumerator(ctx, restored[vertex.id])
        else:
            enumerator = source.create_enumerator(ctx)
        enumerator.start()
        for subtask in range(vertex.parallelism):
            enumerator.add_reader(subtask)
        enumerators[vertex.id] = enumerator
    return enumerators
