"""A real task's surroundings for the tests that run one (tests/runtime/task/, and
tests/runtime/test_task_metrics.py): services that do nothing, an upstream that never ends
(both run on the test's event loop), and a wait until a running task settled."""

from __future__ import annotations

import asyncio
from typing import Any

from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.task.collect_credit import CollectCredit
from undertow.runtime.task.stream_task import StreamTask
from undertow.runtime.task.task_statistics import TaskStatistics

#: How often :func:`settled` looks at the task, and how long it gives up after.
POLL_S, SETTLE_TIMEOUT_S = 0.01, 30.0


class NullServices:
    """A task's services that drop every call: no printing, collecting, split requests or
    wake-ups are expected of the tasks these tests run."""

    def print_lines(self, lines: list[str]) -> None:
        pass

    def collect(self, sink_id: str, payload: bytes, after_checkpoint: int) -> None:
        pass

    def collect_credit(self, sink_id: str) -> CollectCredit:
        """No collect sink runs in these tests: a credit never granted."""
        return CollectCredit(sink_id)

    def send_split_request(self) -> None:
        pass

    def wake(self) -> None:
        pass


class EndlessProducer:
    """Feeds one input channel: a buffer of ``batch`` ints per credit, without end, like an
    upstream subpartition with unlimited data. Each buffer reaches the channel on a later turn
    of the running loop."""

    def __init__(self, channel: Any, batch: int) -> None:
        self.channel = channel
        self.data = serialize_batch(list(range(batch)), None)
        self.sequence = 0

    def add_credit(self, credit: int) -> None:
        for _ in range(credit):
            send = Send(Buffer(self.data), False, self.sequence, backlog=1)
            self.sequence += 1
            asyncio.get_running_loop().call_soon(self.channel.on_send, send)

    def resume(self) -> None:
        pass

    def new_buffer_size(self, size: int, max_records: int) -> None:
        """Buffer debloating's announcement (on by default): this producer's buffers are
        fixed."""


async def settled(task: StreamTask, backpressured: bool) -> TaskStatistics:
    """Wait until ``task`` (running on this loop) sits in a wait it cannot leave by itself:
    over one whole poll it took and emitted nothing and spent most of it waiting,
    ``backpressured`` (an output is full and nobody drains it) or idle (nothing left to read).
    Its statistics then. What a fixed sleep hoped for: under load the task may need longer;
    fails naming the last statistics after ``SETTLE_TIMEOUT_S``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_TIMEOUT_S
    before = task.statistics()
    while True:
        started = loop.time()
        await asyncio.sleep(POLL_S)
        now = task.statistics()
        waited_ms = (now.backpressured_ms - before.backpressured_ms if backpressured
                     else now.idle_ms - before.idle_ms)  # fmt: skip
        moved = (now.records_in, now.records_out, now.buffers_in) != (
            before.records_in, before.records_out, before.buffers_in
        )  # fmt: skip
        if not moved and waited_ms > (loop.time() - started) * 1000 / 2:
            return now
        kind = "backpressured" if backpressured else "idle"
        assert loop.time() < deadline, f"task {task.name} never settled {kind}: {now}"
        before = now
