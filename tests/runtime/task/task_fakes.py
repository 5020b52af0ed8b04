"""A real task's surroundings for the tests that run one (tests/runtime/task/, and
tests/runtime/test_task_metrics.py): services that do nothing, and an upstream that never
ends. Both run on the test's event loop."""

from __future__ import annotations

import asyncio
from typing import Any

from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.task.collect_credit import CollectCredit


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
