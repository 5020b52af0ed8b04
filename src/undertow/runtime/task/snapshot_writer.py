"""The asynchronous part of a subtask's checkpoint: write its state, then acknowledge.

Once the operators' state is taken (and, for keyed state, serialized), the state file is
written on the worker's I/O pool, the new shared files of an incremental checkpoint (RocksDB
SST files, heap key-group segments) are uploaded before it, and the channel-state handles
(written in parallel into the worker's shared files) are joined with it; then the JobMaster
gets one acknowledgement, or a decline naming the task and the cause. Flink's
``AsyncCheckpointRunnable``.

Threading: built and called on the task's loop thread; writes run on the I/O pool and come
back to the loop with one ``call_soon_threadsafe`` hop; with an ``io_acknowledger`` the I/O
thread that finishes the last write acknowledges before that hop (docs/design.md, "Module
notes"). Lifecycle: one per checkpointer; the task waits for
:meth:`SnapshotWriter.wait_for_pending` before it closes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from undertow.core import pickling
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.runtime.checkpoint.channel_state_writer import (
    ChannelStateResult,
    ReportsDurableFromIOThread,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.snapshot import (
    OperatorSnapshot,
    SubtaskSnapshot,
    SubtaskStateHandle,
)
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.state.snapshot_strategy import NativeSnapshot, NativeStateHandle
from undertow.storage import FileHandle

log = logging.getLogger(__name__)

#: How often a closing task looks whether its last checkpoints' channel state settled.
_CHANNEL_STATE_POLL_S = 0.005


class SnapshotWriter:
    """Writes and acknowledges the snapshots of one subtask (see the module docstring)."""

    def __init__(self, *, task_name: str, file_name: str, io: CheckpointIO) -> None:
        self.task_name = task_name
        self.file_name = file_name
        self.responder = io.responder
        #: Acknowledges from the I/O thread that finished the last write (None: the loop).
        self.io_acknowledger = io.io_acknowledger
        self.state_writer = io.state_writer
        self.executor = io.executor
        #: Writes ``<job>/shared/<name>`` (incremental checkpoints).
        self.shared_writer = io.shared_writer
        self.channel_state = io.channel_state_writer
        #: Checkpoints whose acknowledgement still waits for their channel state (written
        #: per worker group, so it may settle long after the state file): the task does not
        #: report ``TaskFinished`` before they settle or are aborted.
        self._channel_state_pending: set[int] = set()
        self._pending_writes: set[concurrent.futures.Future[Any]] = set()

    def track(self, future: concurrent.futures.Future[Any]) -> None:
        """Count ``future`` (work of a checkpoint still to be written) as pending until done."""
        self._pending_writes.add(future)
        future.add_done_callback(self._pending_writes.discard)

    def start(self, cid: int, snapshot: SubtaskSnapshot, metrics: dict[str, Any],
                     async_started: float, needs_channel_state: bool) -> None:  # fmt: skip
        """The asynchronous part once the operators' state is serialized: write it (and wait
        for the channel state, if any), then acknowledge."""
        writer = self.channel_state
        if not needs_channel_state or writer is None:
            self._write(cid, snapshot, metrics, async_started, None)
        elif writer.in_state_file:
            # The channel state goes into the state file: written once it is complete.
            write = functools.partial(self._write, cid, snapshot, metrics, async_started)
            writer.when_finished(
                cid,
                self._settling(cid, write),
                self._settling(cid, functools.partial(self._channel_state_failed, cid)),
            )
        else:
            # Shared channel-state files: the state file is written at once, in parallel,
            # and the acknowledgement waits for both.
            join = _AckJoin(functools.partial(self._acknowledge, cid, metrics, async_started))
            self._write(cid, snapshot, metrics, async_started, None, join)
            writer.when_finished(
                cid,
                self._settling(cid, join.channel_state_written),
                self._settling(cid, functools.partial(self._channel_state_failed, cid)),
            )
            if self.io_acknowledger is not None and isinstance(writer, ReportsDurableFromIOThread):
                writer.when_durable(cid, functools.partial(join.channel_state_written, io=True))

    def _settling(self, cid: int, then: Callable[[Any], None]) -> Callable[[Any], None]:
        """``then``, counting checkpoint ``cid``'s channel state as pending until it runs."""
        self._channel_state_pending.add(cid)

        def settled(result: Any) -> None:
            self._channel_state_pending.discard(cid)
            then(result)

        return settled

    def snapshot_failed(self, cid: int, err: BaseException) -> None:
        detail = "".join(traceback.format_exception_only(type(err), err)).strip()
        log.warning("%s: snapshot of checkpoint %d failed: %s", self.task_name, cid, detail)
        self.responder.decline(cid, CheckpointFailureReason.CHECKPOINT_DECLINED,
                               f"{self.task_name}: snapshot failed: {detail}")  # fmt: skip

    def _channel_state_failed(self, cid: int, err: BaseException) -> None:
        reason = CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
        self.responder.decline(cid, reason, f"{self.task_name}: writing channel state: {err}")

    def _write(
        self,
        cid: int,
        snapshot: SubtaskSnapshot,
        metrics: dict[str, Any],
        async_started: float,
        channel_state: ChannelStateResult | None,
        join: _AckJoin | None = None,
    ) -> None:
        """Operator state (taken) and channel state (complete) into the state file, then ack.

        In-memory channel state goes into the state file; handles into shared files (already
        written) go into the acknowledgement. With ``join`` the channel state is written in
        parallel: the state file's handle goes to ``join``, which acknowledges once both are
        in. One loop hop from the pool back to the loop thread: a busy worker loop serves a
        callback only between task slices, so each hop costs a round of them."""
        handles: ChannelStateHandles | None = None
        if isinstance(channel_state, ChannelStateHandles):
            if channel_state.persisted_bytes or channel_state.referenced_bytes:
                handles = channel_state  # referenced only: refers to restored data (FLIP-76)
                metrics["persisted_data"] = channel_state.persisted_bytes
                metrics["referenced_data"] = channel_state.referenced_bytes
                metrics["unaligned"] = True
        elif channel_state is not None and not channel_state.is_empty:
            snapshot.channel_state = channel_state
            metrics["persisted_data"] = channel_state.input_bytes + channel_state.output_bytes
            metrics["unaligned"] = True
        natives = [p for p in snapshot.operators.values() if p.keyed_native is not None]
        if natives:
            self._upload_and_write(cid, snapshot, natives, metrics, async_started, handles, join)
            return
        try:
            has_state = bool(snapshot.operators) or snapshot.channel_state is not None
            data = pickling.dumps(snapshot) if has_state else b""
        except Exception as err:
            self.snapshot_failed(cid, err)
            return
        metrics["state_size"] = len(data)
        if not data:
            if join is not None:
                join.state_written(None)
            else:
                self._acknowledge(cid, metrics, async_started, None, handles, False)
            return
        if self.state_writer is None or self.executor is None:
            self.responder.decline(cid, CheckpointFailureReason.CHECKPOINT_DECLINED,
                                   "no checkpoint storage configured")  # fmt: skip
            return
        self._submit(cid, functools.partial(self.state_writer, cid, self.file_name, data),
                     metrics, async_started, handles, join)  # fmt: skip

    def _upload_and_write(
        self,
        cid: int,
        snapshot: SubtaskSnapshot,
        natives: list[OperatorSnapshot],
        metrics: dict[str, Any],
        async_started: float,
        handles: ChannelStateHandles | None,
        join: _AckJoin | None,
    ) -> None:
        """Incremental checkpoint: on the I/O pool, upload each native snapshot
        (:meth:`~undertow.state.snapshot_strategy.NativeSnapshot.upload`, the backend's
        format), then write the state file, which holds their handles; acknowledge the state
        file and the shared files it references."""
        state_writer, shared_writer = self.state_writer, self.shared_writer
        if state_writer is None or shared_writer is None or self.executor is None:
            reason = CheckpointFailureReason.CHECKPOINT_DECLINED
            self.responder.decline(cid, reason, "incremental checkpoint: no checkpoint storage")
            return
        file_name = self.file_name
        try:  # heap key groups are pickled on this (the task's) thread, never on the pool
            for part in natives:
                pending = part.keyed_native.pending
                if pending is not None:
                    pending.result()
        except Exception as err:
            self.snapshot_failed(cid, err)
            return

        def upload_and_write() -> SubtaskStateHandle:
            shared: list[FileHandle] = []
            full = uploaded = 0
            for part in natives:
                native: NativeSnapshot = part.keyed_native
                result: NativeStateHandle = native.upload(shared_writer, state_writer)
                part.keyed_native = result
                shared.extend(result.shared_handles)  # a NATIVE savepoint's are exclusive
                full += result.full_size
                uploaded += result.incremental_size
            data = pickling.dumps(snapshot)
            # Flink's two sizes: the whole state, and what this checkpoint wrote
            metrics["state_size"] = len(data) + full
            metrics["checkpointed_size"] = len(data) + uploaded
            return SubtaskStateHandle(state_writer(cid, file_name, data), None, tuple(shared))

        self._submit(cid, upload_and_write, metrics, async_started, handles, join)

    def _submit(
        self,
        cid: int,
        job: Callable[[], Any],
        metrics: dict[str, Any],
        async_started: float,
        handles: ChannelStateHandles | None,
        join: _AckJoin | None,
    ) -> None:
        """Run ``job`` (it returns the state's handle) on the I/O pool, then acknowledge (or
        hand the handle to ``join``): from the I/O thread with an ``io_acknowledger``, else on
        the loop; a failure declines the checkpoint (on the loop)."""
        assert self.executor is not None
        loop = asyncio.get_running_loop()
        if join is None:  # the state file is the only half: the channel state is known
            ack = functools.partial(self._acknowledge, cid, metrics, async_started)
            join = _AckJoin(ack, state_only=True, channel_state=handles)
        io_acknowledger = self.io_acknowledger
        try:
            future = self.executor.submit(job)
        except RuntimeError:  # the worker shut its I/O pool down: the attempt is over
            log.debug("%s: checkpoint %d not written, the worker is stopping", self.task_name, cid)
            return
        self._pending_writes.add(future)

        def done(f: concurrent.futures.Future[Any]) -> None:
            self._pending_writes.discard(f)
            if f.cancelled():
                return
            err = f.exception()
            if err is not None:
                trace = "".join(traceback.format_exception(type(err), err, err.__traceback__))
                reason = CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
                # the error first: a failure summary shows the detail's first line only
                detail = f"{type(err).__name__}: {err}\n{trace}"
                self.responder.decline(cid, reason, f"{self.task_name}: writing state: {detail}")
                return
            join.state_written(f.result())  # ignored if the I/O thread reported it

        def back_on_loop(f: concurrent.futures.Future[Any]) -> None:
            if io_acknowledger is not None and not f.cancelled() and f.exception() is None:
                try:
                    join.state_written(f.result(), io=True)
                except Exception:  # the hop below must still come: it settles the write
                    log.exception("%s: acknowledging checkpoint %d failed", self.task_name, cid)
            try:
                loop.call_soon_threadsafe(done, f)
            except RuntimeError:  # the loop closed: the attempt is over
                pass

        future.add_done_callback(back_on_loop)

    def _acknowledge(
        self,
        cid: int,
        metrics: dict[str, Any],
        async_started: float,
        state: Any,
        channel_state: ChannelStateHandles | None,
        io: bool,
    ) -> None:
        """Send the acknowledgement: from this (an I/O) thread if ``io``, else on the loop."""
        handles = None
        if channel_state and (channel_state.persisted_bytes or channel_state.referenced_bytes):
            handles = channel_state
            metrics["persisted_data"] = handles.persisted_bytes
            metrics["referenced_data"] = handles.referenced_bytes
            metrics["unaligned"] = True
        metrics["async_duration_ms"] = (time.perf_counter() - async_started) * 1000
        if io and self.io_acknowledger is not None:
            self.io_acknowledger.acknowledge_from_any_thread(
                cid, _ack_handle(state, handles), metrics
            )
        else:
            self.responder.acknowledge(cid, _ack_handle(state, handles), metrics)

    async def wait_for_pending(self) -> None:
        """Wait until every checkpoint this subtask took was acknowledged or declined, its
        channel state included, or aborted, and then declined (Flink's
        ``waitForPendingCheckpoints``). The task
        calls it before it closes, so its ``TaskFinished`` follows the acknowledgements of
        the checkpoints it took: a finish reported first makes the JobMaster count the
        subtask as acknowledged *without state* for every checkpoint still waiting for it,
        and such a checkpoint completes without its operator state and in-flight data (a
        restore from it loses that data; issue 28)."""
        while True:
            if self._pending_writes:
                waiting = [asyncio.wrap_future(f) for f in self._pending_writes]
                await asyncio.gather(*waiting, return_exceptions=True)
                await asyncio.sleep(0)  # the write's own callback (ack, discard) runs first
                continue
            writer = self.channel_state
            if writer is not None:  # an aborted checkpoint's callbacks never run
                dropped = {c for c in self._channel_state_pending if not writer.is_started(c)}
                self._channel_state_pending -= dropped
                for cid in sorted(dropped):
                    # Declined, never left to TaskFinished: a dropped checkpoint that is still
                    # pending must not count this subtask as acknowledged without state. A
                    # checkpoint the coordinator aborted (or this task declined) ignores it.
                    self.responder.decline(
                        cid, CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING,
                        f"{self.task_name}: its channel state was dropped before it was "
                        "written, and the task is closing",
                    )  # fmt: skip
            if not self._channel_state_pending:
                return
            await asyncio.sleep(_CHANNEL_STATE_POLL_S)

    def cancel_pending(self) -> None:
        for future in self._pending_writes:
            future.cancel()


class _AckJoin:
    """Waits for the halves of one subtask's checkpoint, written in parallel: the state
    file's handle (``None`` without operator state) and the channel-state handles (or only
    the first, ``state_only``); then calls
    ``acknowledge(state, channel_state, io)`` once, on the thread of the report that completed
    it (``io``: an I/O thread's). Each half may be reported twice, by the I/O thread that
    wrote it and then on the loop: the first report counts. If either half fails, its failure
    path declines and the join never acknowledges. Any thread; a lock orders the reports."""

    __slots__ = ("_acknowledge", "_channel", "_has_channel", "_has_state", "_lock", "_state")

    def __init__(
        self,
        acknowledge: Callable[[Any, ChannelStateHandles | None, bool], None],
        *,
        state_only: bool = False,
        channel_state: ChannelStateHandles | None = None,
    ) -> None:
        """``state_only``: the channel state is known (``channel_state``), so the state
        file's report completes the join."""
        self._acknowledge = acknowledge
        self._lock = threading.Lock()
        self._state: Any = None
        self._has_state = False
        self._has_channel = state_only
        self._channel = channel_state

    def state_written(self, state: Any, io: bool = False) -> None:
        with self._lock:
            if self._has_state:
                return
            self._has_state, self._state = True, state
            complete = self._has_channel
        if complete:
            self._acknowledge(self._state, self._channel, io)

    def channel_state_written(self, channel_state: ChannelStateResult, io: bool = False) -> None:
        with self._lock:
            if self._has_channel:
                return
            self._has_channel = True
            if isinstance(channel_state, ChannelStateHandles):
                self._channel = channel_state
            complete = self._has_state
        if complete:
            self._acknowledge(self._state, self._channel, io)


def _ack_handle(state: Any, channel_state: ChannelStateHandles | None) -> Any:
    """The state file's handle, or both kinds of handles when channel state is in shared
    files (``state`` is already a :class:`SubtaskStateHandle` when it references shared
    files of an incremental checkpoint)."""
    if isinstance(state, SubtaskStateHandle):
        return state if channel_state is None else dataclasses.replace(
            state, channel_state=channel_state
        )  # fmt: skip
    return state if channel_state is None else SubtaskStateHandle(state, channel_state)
