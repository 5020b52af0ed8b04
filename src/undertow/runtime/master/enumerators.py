"""The split enumerators of a job's sources, hosted by the JobMaster (FLIP-27's coordinator side).

Each attempt creates one enumerator per source vertex when it deploys (restored from the
checkpoint's enumerator state when there is one) and registers every reader subtask with it;
:func:`.attempt.shutdown_workers` closes it. The context an enumerator gets sends
``AddSplits`` / ``NoMoreSplits`` to the worker that runs the subtask, through ``send``, and
fails the attempt, through ``fail``, when the handler of a ``call_async`` raises.

Threading: the JobMaster's loop only (creation, split requests, snapshots at trigger time);
blocking calls an enumerator hands to ``call_async`` run on a daemon thread each.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from undertow.connectors.source import SplitEnumerator, SplitEnumeratorContext
from undertow.core.errors import JobExecutionError, UndertowError
from undertow.core.types import AttemptNumber
from undertow.graph.job_graph import JobGraph
from undertow.runtime.control.messages import AddSplits, MasterMessage, NoMoreSplits

#: Sends a control message to the worker that runs a subtask (dropped if it is not there).
SendToSubtask = Callable[[int, MasterMessage], None]
#: Fails the attempt the enumerators belong to (first failure wins; later ones are ignored).
FailAttempt = Callable[[UndertowError], None]
T = TypeVar("T")


class EnumeratorContext(SplitEnumeratorContext[Any]):
    """What one source vertex's enumerator may do: assign splits to its readers. ``fail``
    gets what a ``call_async`` handler raised (Flink fails the job then too)."""

    def __init__(
        self,
        send: SendToSubtask,
        attempt: AttemptNumber,
        vertex_id: int,
        parallelism: int,
        *,
        fail: Callable[[BaseException], None],
    ) -> None:
        self._send = send
        self.attempt = attempt
        self.vertex_id = vertex_id
        self.parallelism = parallelism
        self._fail = fail

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
        """``call`` on a daemon thread of its own, then ``handler`` on the loop; what the
        handler raises fails the attempt (``fail``). Not the loop's executor: a call waits up
        to a broker's API timeout when the broker went away, and must neither take a thread
        the checkpoints' writes need nor hold up the job's end (an executor is joined at
        shutdown; a daemon thread is not)."""
        loop = asyncio.get_running_loop()

        def deliver(result: Any, error: BaseException | None) -> None:
            try:
                handler(result, error)
            except Exception as err:
                self._fail(err)

        def run() -> None:
            try:
                result: Any = call()
                error: BaseException | None = None
            except Exception as err:
                result, error = None, err
            try:
                loop.call_soon_threadsafe(deliver, result, error)
            except RuntimeError:  # the loop closed meanwhile: the job has ended
                pass

        name = f"undertow-enumerator-{self.vertex_id}"
        threading.Thread(target=run, name=name, daemon=True).start()


def start_enumerators(
    graph: JobGraph,
    restored: Mapping[int, Any],
    send: SendToSubtask,
    attempt: AttemptNumber,
    fail: FailAttempt,
) -> dict[int, SplitEnumerator[Any]]:
    """Create, start and register the readers of every source vertex's enumerator; source
    vertex id -> enumerator. ``restored``: source vertex id -> its checkpointed state;
    ``attempt``: the number its split assignments carry; ``fail``: fails the attempt with
    what an enumerator's ``call_async`` handler raised (an error of the source's own kind as
    it is, any other one wrapped naming the source)."""
    enumerators: dict[int, SplitEnumerator[Any]] = {}
    for vertex in graph.vertices:
        if not vertex.is_source:
            continue
        source = vertex.operators[0].instantiate()["source"]
        ctx = EnumeratorContext(
            send, attempt, vertex.id, vertex.parallelism, fail=_failing(fail, vertex.name)
        )
        if vertex.id in restored:
            enumerator = source.restore_enumerator(ctx, restored[vertex.id])
        else:
            enumerator = source.create_enumerator(ctx)
        enumerator.start()
        for subtask in range(vertex.parallelism):
            enumerator.add_reader(subtask)
        enumerators[vertex.id] = enumerator
    return enumerators


def _failing(fail: FailAttempt, source: str) -> Callable[[BaseException], None]:
    def failed(error: BaseException) -> None:
        if isinstance(error, UndertowError):
            fail(error)
            return
        wrapped = JobExecutionError(f"the split enumerator of source '{source}' failed: {error!r}")
        wrapped.__cause__ = error
        fail(wrapped)

    return failed
