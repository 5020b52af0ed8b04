"""The asynchronous part of a subtask's checkpoint: what is written, and what is acknowledged.

Each test runs one writer on an event loop with a one-thread I/O pool; the responder, the
state-file writer and the channel-state writer are recording fakes, so every test sees
exactly which acknowledgement (or decline) one checkpoint produced.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import pickle
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    MergedChannelStateHandle,
    pack_channels,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.snapshot import (
    ChannelState,
    OperatorSnapshot,
    SubtaskSnapshot,
    SubtaskStateHandle,
)
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.runtime.task.snapshot_writer import SnapshotWriter
from undertow.storage import FileHandle

DECLINED = CheckpointFailureReason.CHECKPOINT_DECLINED
ASYNC = CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
CLOSING = CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING


@dataclass
class Responder:
    acks: list[tuple[int, Any, dict[str, Any]]] = field(default_factory=list)
    declines: list[tuple[int, CheckpointFailureReason, str]] = field(default_factory=list)

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None:
        self.acks.append((checkpoint_id, handle, metrics))

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str) -> None:
        self.declines.append((checkpoint_id, reason, detail))


@dataclass
class AnyThreadResponder:
    """Records acknowledgements sent from any thread, with the sending thread's id."""

    acks: list[tuple[int, Any, int]] = field(default_factory=list)
    sent: threading.Event = field(default_factory=threading.Event)

    def acknowledge_from_any_thread(
        self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]
    ) -> None:
        self.acks.append((checkpoint_id, handle, threading.get_ident()))
        self.sent.set()


def file_handle(path: str, data: bytes) -> FileHandle:
    return FileHandle(path, len(data), hashlib.sha256(data).hexdigest())


@dataclass
class Storage:
    """Writes into a dict; ``fail`` makes every write raise."""

    files: dict[str, bytes] = field(default_factory=dict)
    fail: bool = False
    #: Set: writes go ahead (a test clears it to hold them).
    gate: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.gate.set()

    def write_state(self, checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        assert self.gate.wait(5)
        if self.fail:
            raise OSError("disk full")
        path = f"chk-{checkpoint_id}/{name}"
        self.files[path] = data
        return file_handle(path, data)

    def write_shared(self, name: str, data: bytes) -> FileHandle:
        self.files[f"shared/{name}"] = data
        return file_handle(f"shared/{name}", data)


@dataclass
class ChannelStateWriter:
    """Holds each checkpoint's completion callbacks until the test finishes or fails it."""

    in_state_file: bool
    waiting: dict[int, tuple[Callable[[Any], None], Callable[[BaseException], None]]] = field(
        default_factory=dict
    )

    aborted: set[int] = field(default_factory=set)

    def when_finished(
        self, checkpoint_id: int, callback: Callable[[Any], None],
        on_failure: Callable[[BaseException], None],
    ) -> None:  # fmt: skip
        self.waiting[checkpoint_id] = (callback, on_failure)

    def is_started(self, checkpoint_id: int) -> bool:
        return checkpoint_id not in self.aborted


@dataclass
class DurableChannelStateWriter(ChannelStateWriter):
    """Also keeps each checkpoint's ``when_durable`` callback (``ReportsDurableFromIOThread``)."""

    durable: dict[int, Callable[[ChannelStateHandles], None]] = field(default_factory=dict)

    def when_durable(
        self, checkpoint_id: int, callback: Callable[[ChannelStateHandles], None]
    ) -> None:
        self.durable[checkpoint_id] = callback


@dataclass(frozen=True)
class UploadedState:
    """A native state handle (pickled into the state file)."""

    shared_handles: tuple[FileHandle, ...]
    full_size: int
    incremental_size: int


@dataclass
class NativeState:
    """A native snapshot that uploads one shared file of ``data``."""

    data: bytes
    pending: Any = None

    def upload(self, write_shared: Callable[[str, bytes], FileHandle], write_private: Any) -> Any:
        shared = write_shared("sst-1", self.data)
        return UploadedState((shared,), full_size=1000, incremental_size=len(self.data))


class Harness:
    def __init__(
        self, storage: Storage | None = None, channel_state: ChannelStateWriter | None = None,
        executor: concurrent.futures.Executor | None = None,
        io_acknowledger: AnyThreadResponder | None = None,
    ) -> None:  # fmt: skip
        self.responder = Responder()
        self.storage = storage if storage is not None else Storage()
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(1)
        self.writer = SnapshotWriter(
            task_name="Map (1/1)", file_name="map-0.state",
            io=CheckpointIO(
                responder=self.responder, state_writer=self.storage.write_state,
                executor=self.executor, channel_state_writer=channel_state,  # type: ignore[arg-type]
                shared_writer=self.storage.write_shared, io_acknowledger=io_acknowledger,
            ),
        )  # fmt: skip

    def start(self, cid: int, snapshot: SubtaskSnapshot, channel_state: bool = False) -> None:
        self.writer.start(cid, snapshot, {}, time.perf_counter(), channel_state)

    async def settle(self) -> None:
        await self.writer.wait_for_pending()
        self.executor.shutdown()


def with_state() -> SubtaskSnapshot:
    return SubtaskSnapshot({"map": OperatorSnapshot(operator=b"counter=3")}, watermark=7)


def channel_handles(data: bytes) -> ChannelStateHandles:
    handle = MergedChannelStateHandle(
        "Map (1/1)", 4, ChannelStateDirection.INPUT, None, data, 0, len(data),
        hashlib.sha256(data).hexdigest(), pack_channels([((0, 0), [len(data)])]),
    )  # fmt: skip
    return ChannelStateHandles(input=handle)


def test_a_snapshot_without_state_is_acknowledged_at_once_without_a_file() -> None:
    async def run() -> Harness:
        h = Harness()
        h.start(1, SubtaskSnapshot())
        assert len(h.responder.acks) == 1  # synchronously: nothing to write
        await h.settle()
        return h

    h = asyncio.run(run())
    cid, handle, metrics = h.responder.acks[0]
    assert (cid, handle, metrics["state_size"]) == (1, None, 0)
    assert h.storage.files == {}


def test_operator_state_is_written_on_the_pool_then_acknowledged_with_its_handle() -> None:
    async def run() -> Harness:
        h = Harness()
        h.start(2, with_state())
        assert h.responder.acks == []  # the write runs on the I/O pool first
        await h.settle()
        return h

    h = asyncio.run(run())
    data = h.storage.files["chk-2/map-0.state"]
    assert pickle.loads(data).operators["map"].operator == b"counter=3"
    [(cid, handle, metrics)] = h.responder.acks
    assert cid == 2 and handle == file_handle("chk-2/map-0.state", data)
    assert metrics["state_size"] == len(data) and metrics["async_duration_ms"] >= 0
    assert h.responder.declines == []


def test_state_without_checkpoint_storage_is_declined() -> None:
    async def run() -> Responder:
        responder = Responder()
        writer = SnapshotWriter(task_name="Map (1/1)", file_name="map-0.state",
                                io=CheckpointIO(responder=responder))  # fmt: skip
        writer.start(3, with_state(), {}, time.perf_counter(), False)
        return responder

    responder = asyncio.run(run())
    assert responder.declines == [(3, DECLINED, "no checkpoint storage configured")]
    assert responder.acks == []


def test_a_failed_write_declines_naming_the_task_and_the_cause() -> None:
    async def run() -> Harness:
        h = Harness(Storage(fail=True))
        h.start(4, with_state())
        await h.settle()
        return h

    h = asyncio.run(run())
    [(cid, reason, detail)] = h.responder.declines
    assert (cid, reason) == (4, ASYNC)
    # the first line names the error (a summary shows only it), the traceback follows
    assert detail.splitlines()[0] == "Map (1/1): writing state: OSError: disk full"
    assert "Traceback (most recent call last)" in detail
    assert h.responder.acks == []


def test_a_write_after_the_pool_shut_down_is_neither_acknowledged_nor_declined() -> None:
    async def run() -> Harness:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        pool.shutdown()
        h = Harness(executor=pool)
        h.start(5, with_state())
        await h.writer.wait_for_pending()
        return h

    h = asyncio.run(run())
    assert h.responder.acks == [] and h.responder.declines == []


def test_a_failed_snapshot_is_declined_with_its_detail() -> None:
    h = Harness()
    h.writer.snapshot_failed(6, ValueError("bad key"))
    h.executor.shutdown()
    detail = "Map (1/1): snapshot failed: ValueError: bad key"
    assert h.responder.declines == [(6, DECLINED, detail)]


def test_channel_state_for_the_state_file_is_written_once_it_is_complete() -> None:
    channel_writer = ChannelStateWriter(in_state_file=True)
    state = ChannelState(7, 0, 1, (1,), (), inputs={(0, 0): (b"\x00abc",)})

    async def run() -> Harness:
        h = Harness(channel_state=channel_writer)
        h.start(7, with_state(), channel_state=True)
        await asyncio.sleep(0.01)
        assert h.storage.files == {} and h.responder.acks == []  # waits for the channel state
        channel_writer.waiting[7][0](state)
        await h.settle()
        return h

    h = asyncio.run(run())
    written = pickle.loads(h.storage.files["chk-7/map-0.state"])
    assert written.channel_state == state
    [(_, _, metrics)] = h.responder.acks
    assert metrics["persisted_data"] == 4 and metrics["unaligned"] is True


def test_shared_channel_state_is_written_in_parallel_and_joined_in_one_acknowledgement() -> None:
    channel_writer = ChannelStateWriter(in_state_file=False)
    handles = channel_handles(b"in-flight")

    async def run() -> Harness:
        h = Harness(channel_state=channel_writer)
        h.start(8, with_state(), channel_state=True)
        closing = asyncio.ensure_future(h.writer.wait_for_pending())
        await asyncio.sleep(0.05)
        assert "chk-8/map-0.state" in h.storage.files  # written without waiting
        assert h.responder.acks == []  # ... but acknowledged only with the channel state
        assert not closing.done()  # and the task does not finish before (issue 28)
        channel_writer.waiting[8][0](handles)
        await asyncio.wait_for(closing, 5)
        assert h.responder.acks  # acknowledged before a TaskFinished could be sent
        await h.settle()
        return h

    h = asyncio.run(run())
    data = h.storage.files["chk-8/map-0.state"]
    [(cid, handle, metrics)] = h.responder.acks
    assert cid == 8
    assert handle == SubtaskStateHandle(file_handle("chk-8/map-0.state", data), handles)
    assert metrics["persisted_data"] == len(b"in-flight") and metrics["unaligned"] is True
    assert pickle.loads(data).channel_state is None  # not in the state file


def test_the_io_thread_acknowledges_a_state_file_while_the_loop_is_busy() -> None:
    """With an ``io_acknowledger`` the I/O thread that wrote the state file acknowledges it
    at once: the loop thread here is blocked (as in a task's call) and never turns."""
    io_acks = AnyThreadResponder()

    async def run() -> Harness:
        h = Harness(io_acknowledger=io_acks)
        h.storage.gate.clear()
        h.start(2, with_state())
        h.storage.gate.set()  # (held: a write done before its callback was added reports here)
        assert io_acks.sent.wait(5), "not acknowledged while the loop was blocked"
        await h.settle()
        return h

    h = asyncio.run(run())
    [(cid, handle, thread)] = io_acks.acks
    assert cid == 2 and handle == file_handle(
        "chk-2/map-0.state", h.storage.files["chk-2/map-0.state"]
    )
    assert thread != threading.get_ident()
    assert h.responder.acks == [] and h.responder.declines == []  # once, not again on the loop


def test_the_io_thread_that_made_the_channel_state_durable_acknowledges_once() -> None:
    """Shared channel state: the state file is in, and the channel-state file's writer
    reports it durable on its I/O thread: that thread acknowledges. The loop's later report of
    the same result adds nothing."""
    channel_writer = DurableChannelStateWriter(in_state_file=False)
    io_acks = AnyThreadResponder()
    handles = channel_handles(b"in-flight")

    async def run() -> Harness:
        h = Harness(channel_state=channel_writer, io_acknowledger=io_acks)
        h.start(8, with_state(), channel_state=True)
        await asyncio.sleep(0.05)  # the state file is written
        assert io_acks.acks == [] and h.responder.acks == []
        io_thread = threading.Thread(target=channel_writer.durable[8], args=(handles,))
        io_thread.start()
        io_thread.join()
        assert [(cid, thread) for cid, _, thread in io_acks.acks] == [(8, io_thread.ident)]
        channel_writer.waiting[8][0](handles)  # the loop's report of the same file
        await h.settle()
        return h

    h = asyncio.run(run())
    data = h.storage.files["chk-8/map-0.state"]
    [(_, handle, _)] = io_acks.acks
    assert handle == SubtaskStateHandle(file_handle("chk-8/map-0.state", data), handles)
    assert h.responder.acks == [] and h.responder.declines == []


def test_a_closing_task_waits_for_channel_state_unless_its_checkpoint_was_aborted() -> None:
    """In the state file too: the task's wait ends once the channel state came and the
    state file was written and acknowledged, or once the writer no longer collects the
    checkpoint (aborted: its callbacks never run)."""
    channel_writer = ChannelStateWriter(in_state_file=True)

    async def run() -> Harness:
        h = Harness(channel_state=channel_writer)
        h.start(3, with_state(), channel_state=True)
        h.start(4, with_state(), channel_state=True)
        closing = asyncio.ensure_future(h.writer.wait_for_pending())
        await asyncio.sleep(0.05)
        assert not closing.done()
        channel_writer.waiting[4][0](ChannelState(4, 0, 1, (1,), (), inputs={(0, 0): (b"\x00a",)}))
        channel_writer.aborted.add(3)
        await asyncio.wait_for(closing, 5)
        await h.settle()
        return h

    h = asyncio.run(run())
    assert [cid for cid, _, _ in h.responder.acks] == [4]
    # ... and 3, whose channel state was dropped, is declined before the task finishes: a
    # TaskFinished would otherwise count it as acknowledged without state (issue 28)
    assert h.responder.declines == [(3, CLOSING, "Map (1/1): its channel state was dropped "
                                     "before it was written, and the task is closing")]  # fmt: skip


def test_a_failed_channel_state_write_declines_and_nothing_is_acknowledged() -> None:
    channel_writer = ChannelStateWriter(in_state_file=False)

    async def run() -> Harness:
        h = Harness(channel_state=channel_writer)
        h.start(9, with_state(), channel_state=True)
        channel_writer.waiting[9][1](OSError("shared file lost"))
        await h.settle()
        return h

    h = asyncio.run(run())
    assert h.responder.declines == [
        (9, ASYNC, "Map (1/1): writing channel state: shared file lost")
    ]
    assert h.responder.acks == []


def test_native_state_is_uploaded_before_the_state_file_that_references_it() -> None:
    snapshot = SubtaskSnapshot({"count": OperatorSnapshot(keyed_native=NativeState(b"sst"))})

    async def run() -> Harness:
        h = Harness()
        h.start(10, snapshot)
        await h.settle()
        return h

    h = asyncio.run(run())
    assert h.storage.files["shared/sst-1"] == b"sst"
    data = h.storage.files["chk-10/map-0.state"]
    shared = file_handle("shared/sst-1", b"sst")
    assert pickle.loads(data).operators["count"].keyed_native == UploadedState((shared,), 1000, 3)
    [(cid, handle, metrics)] = h.responder.acks
    assert cid == 10
    assert handle == SubtaskStateHandle(file_handle("chk-10/map-0.state", data), None, (shared,))
    assert metrics["state_size"] == len(data) + 1000  # the whole state
    assert metrics["checkpointed_size"] == len(data) + 3  # what this checkpoint wrote


def test_native_state_without_shared_storage_is_declined() -> None:
    responder = Responder()
    writer = SnapshotWriter(task_name="Map (1/1)", file_name="map-0.state",
                            io=CheckpointIO(responder=responder))  # fmt: skip
    snapshot = SubtaskSnapshot({"count": OperatorSnapshot(keyed_native=NativeState(b"sst"))})
    writer.start(11, snapshot, {}, time.perf_counter(), False)
    assert responder.declines == [(11, DECLINED, "incremental checkpoint: no checkpoint storage")]
