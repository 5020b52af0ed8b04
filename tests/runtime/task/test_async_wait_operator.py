"""The async wait operator on its own: restore (also rescaled) and capacity after a restore.

The operator runs on a real asyncio loop with a stand-in for its task: a processing-time
service whose callbacks run as soon as the loop gets to them, and an output that records.
"""

from __future__ import annotations

import asyncio
import pickle
from types import SimpleNamespace
from typing import Any

from undertow.api.async_function import NO_RETRY_STRATEGY, AsyncFunction
from undertow.runtime.task.async_wait_operator import RESTORED_COUNTER, AsyncWaitOperator


class Gate(AsyncFunction[Any, Any]):
    """Answers a record only once the test opens the gate; counts requests running."""

    def __init__(self) -> None:
        self.running = 0
        self.started: list[Any] = []
        self.gate: asyncio.Event | None = None

    async def async_invoke(self, value: Any) -> list[Any]:
        if self.gate is None:
            self.gate = asyncio.Event()
        self.started.append(value)
        self.running += 1
        await self.gate.wait()
        self.running -= 1
        return [value]


class Recorder:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        self.values.extend(values)

    def emit_watermark(self, watermark: int) -> None:
        self.values.append(("watermark", watermark))


class Timers:
    def current_processing_time(self) -> int:
        return 0

    def register_timer(self, timestamp: int, callback: Any) -> Any:
        return asyncio.get_running_loop().call_soon(callback, timestamp)


def operator(subtask: int, parallelism: int, capacity: int, output: Recorder) -> Any:
    op = AsyncWaitOperator(Gate(), 0, capacity, NO_RETRY_STRATEGY, ordered=True)
    op.setup(
        SimpleNamespace(  # type: ignore[arg-type]
            name="async", subtask_index=subtask, parallelism=parallelism, output=output,
            runtime_context=None, counters={}, processing_time_service=Timers(),
        )
    )  # fmt: skip
    return op


def blob(records: list[Any]) -> bytes:
    return pickle.dumps([(r, None) for r in records])


def test_a_rescaled_restore_shares_the_old_subtasks_records_and_keeps_their_order() -> None:
    blobs = [blob(["a", "b", "c"]), blob(["d", "e"])]
    shares = []
    for subtask in range(2):
        op = operator(subtask, 2, 10, Recorder())
        op.restore_custom_state(blobs, rescaled=True)
        shares.append([value for value, _ in op._restored])
    assert shares == [["a", "c", "e"], ["b", "d"]]
    op = operator(0, 2, 10, Recorder())
    op.restore_custom_state([blob(["x", "y"])], rescaled=False)
    assert [value for value, _ in op._restored] == ["x", "y"]


def test_restored_records_beyond_capacity_wait_and_block_input_until_emitted() -> None:
    async def body() -> None:
        out = Recorder()
        op = operator(0, 1, 2, out)
        op.restore_custom_state([blob([1, 2, 3, 4, 5])], rescaled=False)
        op.open()
        await asyncio.sleep(0.01)
        gate: Gate = op.function
        assert gate.started == [1, 2] and gate.running == 2  # capacity 2
        assert op.input_room() == -3 and op.has_pending_work()
        assert op.ctx.counters[RESTORED_COUNTER] == 5
        snapshot = pickle.loads(op.snapshot_custom_state(1))
        assert [v for v, _ in snapshot] == [1, 2, 3, 4, 5]  # all of them stay state
        assert gate.gate is not None
        gate.gate.set()
        for _ in range(20):
            await asyncio.sleep(0.005)
        assert out.values == [1, 2, 3, 4, 5]
        assert op.input_room() == 2 and not op.has_pending_work()
        assert op.snapshot_custom_state(2) is None
        op.finish()
        op.close()

    asyncio.run(body())
