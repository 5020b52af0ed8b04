"""Channel-state files shared by the subtasks of a worker, and their reader.

Flink's ``ChannelStateWriteRequestExecutor`` idea (reference §3.3): the subtasks of one worker
are put, in registration order, into *groups* of at most
``execution.checkpointing.unaligned.max-subtasks-per-channel-state-file`` (5) members, and a
group writes **one file per checkpoint** holding all its members' channel state. Each member
gets one :class:`~.channel_state_handles.MergedChannelStateHandle` per side (input, output).

*Invariant*: for each checkpoint, each member's state is in at most one region of at most one
file, and a member's result resolves only with handles whose bytes were durably written (or
are inline). A group stops accepting members once one of them started a checkpoint (as in
Flink), so a late subtask never holds up a checkpoint it cannot take part in; it opens a new
group.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from undertow.runtime.checkpoint.channel_state_format import (
    FILE_HEADER,
    FILE_MAGIC,
    FILE_VERSION,
    Chunks,
    ReadRange,
    SubtaskContribution,
    WriteFile,
    lay_out,
    lay_out_group,
    read_channel_state,
    write_layout,
)
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelId,
    ChannelStateHandles,
    ChannelStateReference,
)
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason

__all__ = [
    "DEFAULT_INLINE_THRESHOLD",
    "DEFAULT_MAX_SUBTASKS_PER_FILE",
    "FILE_HEADER",
    "FILE_MAGIC",
    "FILE_VERSION",
    "ChannelStateFileWriter",
    "ReadRange",
    "SubtaskChannelStateWriter",
    "WriteFile",
    "lay_out_group",
    "read_channel_state",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_SUBTASKS_PER_FILE = 5
#: Flink's ``execution.checkpointing.data-inline-threshold`` default (20 kb).
DEFAULT_INLINE_THRESHOLD = 20 * 1024
#: Groups up to this many bytes are laid out and hashed on the loop thread (about 1 ms of
#: sha256); larger ones on the I/O pool, so no loop turn is longer than that.
LOOP_LAYOUT_LIMIT = 1024 * 1024
_RETAINED = 16  # results kept per member, oldest done ones dropped first
_U32_MAX = 0xFFFFFFFF


@dataclass(slots=True)
class _Checkpoint:
    """One member's view of one checkpoint (mutable; loop thread only)."""

    future: asyncio.Future[ChannelStateHandles]
    started: bool
    #: Called synchronously when ``future`` settles (``when_finished``): no extra loop hop.
    listeners: list[Callable[[asyncio.Future[ChannelStateHandles]], None]] = field(
        default_factory=list
    )
    input: Chunks = field(default_factory=dict)
    #: Runs of older files the input refers to, each at its channel's position.
    input_refs: list[ChannelStateReference] = field(default_factory=list)
    output: Chunks = field(default_factory=dict)
    #: Runs of older files the output refers to, each at its subpartition's position.
    output_refs: list[ChannelStateReference] = field(default_factory=list)
    input_done: bool = False
    output_done: bool = False
    aborted: bool = False
    collected: bool = False
    #: ``when_durable`` callbacks and the handles the I/O thread delivered to them: the only
    #: fields another thread touches, under ``lock``.
    durable_listeners: list[Callable[[ChannelStateHandles], None]] = field(default_factory=list)
    durable: ChannelStateHandles | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def done(self) -> bool:
        return self.aborted or (self.input_done and self.output_done)


class SubtaskChannelStateWriter:
    """One subtask's channel-state writer, a member of one group (see the module docstring).

    Made by :meth:`ChannelStateFileWriter.register`. Loop thread only. Per checkpoint the calls
    are ``start``, any number of ``add_input`` / ``add_output``, ``finish_input`` and
    ``finish_output`` (any order), or ``abort`` at any point. Data for a checkpoint that is
    not started or was aborted is dropped (it may race with a newer barrier); adding after
    finishing a side is a programming error (:class:`ValueError`).
    """

    #: The result is handles into shared files, written in parallel with the state file.
    in_state_file = False

    def __init__(self, group: _Group, name: str) -> None:
        self._group = group
        self.name = name
        self.horizon = -1
        self.released = False
        self.checkpoints: dict[int, _Checkpoint] = {}

    def start(self, checkpoint_id: int) -> None:
        """Begin ``checkpoint_id``; aborts this subtask's unfinished older checkpoints."""
        if self.released:
            raise ValueError(f"subtask {self.name!r} was released; cannot start {checkpoint_id}")
        existing = self.checkpoints.get(checkpoint_id)
        if existing is not None and existing.started:
            if existing.aborted:
                # Aborted while its barriers were still travelling: a late barrier of the
                # same checkpoint starts nothing (its result already failed).
                return
            raise ValueError(f"subtask {self.name!r} started checkpoint {checkpoint_id} twice")
        self._group.closed = True
        entry = _Checkpoint(asyncio.get_running_loop().create_future(), started=True)
        self.checkpoints[checkpoint_id] = entry
        if checkpoint_id <= self.horizon:  # too late: the group may have collected it already
            self._fail(checkpoint_id, entry, "a newer checkpoint was started or aborted first")
        else:
            self._advance(checkpoint_id)
        self._group.collect()

    def add_input(self, checkpoint_id: int, channel: ChannelId, data: bytes) -> None:
        """Append ``data`` to input channel ``(gate_index, channel_index)``'s state."""
        entry = self._live(checkpoint_id, "input")
        if entry is not None and data:
            entry.input.setdefault(_check_channel(channel), []).append(_check_chunk(data))

    def add_input_reference(
        self, checkpoint_id: int, channel: ChannelId, reference: ChannelStateReference
    ) -> None:
        """Splice ``reference`` (a run of an older checkpoint's file) into input channel
        ``channel``'s state after the chunks added so far: the new checkpoint refers to it
        instead of writing it again (``ReferencesChannelState``)."""
        entry = self._live(checkpoint_id, "input")
        if entry is not None:
            position = len(entry.input.get(_check_channel(channel), ()))
            entry.input_refs.append(replace(reference, channel=channel).at(position))

    def add_output_reference(
        self, checkpoint_id: int, channel: ChannelId, reference: ChannelStateReference
    ) -> None:
        """As :meth:`add_input_reference`, for subpartition ``channel``'s output state
        (restored output buffers not yet sent when a checkpoint during recovery overtook
        them)."""
        entry = self._live(checkpoint_id, "output")
        if entry is not None:
            position = len(entry.output.get(_check_channel(channel), ()))
            entry.output_refs.append(replace(reference, channel=channel).at(position))

    def add_output(self, checkpoint_id: int, channel: ChannelId, data: bytes) -> None:
        """Append ``data`` to output ``(partition_index, subpartition_index)``'s state."""
        entry = self._live(checkpoint_id, "output")
        if entry is not None and data:
            entry.output.setdefault(_check_channel(channel), []).append(_check_chunk(data))

    def finish_input(self, checkpoint_id: int) -> None:
        entry = self._live(checkpoint_id, "input")
        if entry is not None:
            entry.input_done = True
            self._group.collect()

    def finish_output(self, checkpoint_id: int) -> None:
        entry = self._live(checkpoint_id, "output")
        if entry is not None:
            entry.output_done = True
            self._group.collect()

    def abort(self, checkpoint_id: int, cause: BaseException | None = None) -> None:
        """Drop this subtask's state of ``checkpoint_id``; its result fails. Also valid before
        ``start``: the subtask then will not take part in ``checkpoint_id``."""
        entry = self.checkpoints.get(checkpoint_id)
        if entry is None:
            entry = _Checkpoint(asyncio.get_running_loop().create_future(), started=False)
            self.checkpoints[checkpoint_id] = entry
        if not entry.collected:
            self._fail(checkpoint_id, entry, "aborted", cause)
        if checkpoint_id > self.horizon:
            self._advance(checkpoint_id)
        self._group.collect()

    def is_started(self, checkpoint_id: int) -> bool:
        """``start(checkpoint_id)`` was called and the checkpoint was not aborted since."""
        entry = self.checkpoints.get(checkpoint_id)
        return entry is not None and entry.started and not entry.aborted

    def result(self, checkpoint_id: int) -> asyncio.Future[ChannelStateHandles]:
        """The handles of ``checkpoint_id``, once the group file is written (same future on
        every call). Fails with :class:`CheckpointException` if aborted or the write failed.
        Results of the last 16 checkpoints are kept."""
        entry = self.checkpoints.get(checkpoint_id)
        if entry is None:
            raise LookupError(f"subtask {self.name!r} has no checkpoint {checkpoint_id}")
        return entry.future

    def when_finished(
        self,
        checkpoint_id: int,
        callback: Callable[[ChannelStateHandles], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """The ``ChannelStateWriter`` form of :meth:`result`: ``callback(handles)`` on the loop
        once the group file is written; ``on_failure(error)`` if writing it failed. Neither
        runs for an aborted, subsumed or released checkpoint (whoever aborted it knows).
        They run synchronously when the result settles (at once if it already did), not in a
        later loop iteration: on a busy worker every iteration costs a round of task slices."""

        def done(future: asyncio.Future[ChannelStateHandles]) -> None:
            if future.cancelled():
                return
            error = future.exception()
            if error is None:
                callback(future.result())
            elif on_failure is not None and not (
                isinstance(error, CheckpointException)
                and error.reason is CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
            ):
                on_failure(error)

        entry = self.checkpoints.get(checkpoint_id)
        if entry is None:
            raise LookupError(f"subtask {self.name!r} has no checkpoint {checkpoint_id}")
        if entry.future.done():
            done(entry.future)
        else:
            entry.listeners.append(done)

    def when_durable(
        self, checkpoint_id: int, callback: Callable[[ChannelStateHandles], None]
    ) -> None:
        """``ReportsDurableFromIOThread``: ``callback(handles)`` on the I/O thread once the
        group's file holding this member's state is written (at once if it was)."""
        entry = self.checkpoints.get(checkpoint_id)
        if entry is None:
            raise LookupError(f"subtask {self.name!r} has no checkpoint {checkpoint_id}")
        with entry.lock:
            handles = entry.durable
            if handles is None:
                entry.durable_listeners.append(callback)
                return
        callback(handles)

    # -- internals --------------------------------------------------------------------------

    def _live(self, checkpoint_id: int, side: str) -> _Checkpoint | None:
        entry = self.checkpoints.get(checkpoint_id)
        if entry is None or not entry.started or entry.aborted:
            return None
        if entry.input_done if side == "input" else entry.output_done:
            raise ValueError(
                f"subtask {self.name!r}: {side} of checkpoint {checkpoint_id} already finished"
            )
        return entry

    def _advance(self, checkpoint_id: int) -> None:
        self.horizon = checkpoint_id
        for older, entry in self.checkpoints.items():
            if older < checkpoint_id and not entry.done:
                self._fail(older, entry, f"subsumed by checkpoint {checkpoint_id}")

    def _fail(
        self, checkpoint_id: int, entry: _Checkpoint, why: str, cause: BaseException | None = None
    ) -> None:
        entry.aborted = True
        entry.input, entry.output, entry.input_refs, entry.output_refs = {}, {}, [], []
        reason = CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
        error = CheckpointException(
            reason, f"channel state of subtask {self.name!r}, checkpoint {checkpoint_id}: {why}"
        )
        error.__cause__ = cause
        _settle(entry, exception=error)

    def _prune(self) -> None:
        for checkpoint_id in sorted(self.checkpoints)[: max(0, len(self.checkpoints) - _RETAINED)]:
            entry = self.checkpoints[checkpoint_id]
            if entry.collected and entry.future.done():
                del self.checkpoints[checkpoint_id]


class _Group:
    """Up to ``capacity`` members sharing one file per checkpoint (loop thread only)."""

    def __init__(self, owner: ChannelStateFileWriter, capacity: int) -> None:
        self.owner = owner
        self.capacity = capacity
        self.registered = 0
        self.closed = False
        self.members: list[SubtaskChannelStateWriter] = []

    def collect(self) -> None:
        """Collect and persist every checkpoint the rule allows (module docstring)."""
        pending = sorted(
            {cid for m in self.members for cid, e in m.checkpoints.items() if not e.collected}
        )
        for cid in pending:
            if not all(
                m.released or m.horizon > cid or (cid in m.checkpoints and m.checkpoints[cid].done)
                for m in self.members
            ):
                continue
            taking = []
            for member in self.members:
                entry = member.checkpoints.get(cid)
                if entry is None or entry.collected:
                    continue
                entry.collected = True
                if not entry.aborted:
                    taking.append((member, entry))
            if taking:
                self.owner._persist(cid, taking)
        self.members = [
            m
            for m in self.members
            if not m.released or any(not e.collected for e in m.checkpoints.values())
        ]
        for member in self.members:
            member._prune()


class ChannelStateFileWriter:
    """The per-worker channel-state writer: groups subtasks and writes their shared files.

    ``write_file(checkpoint_id, file_name, data)`` is blocking storage I/O
    (``CheckpointStorage.write_file``), run on ``executor``. One instance per worker and job;
    loop thread only (module docstring).
    """

    def __init__(
        self,
        write_file: WriteFile,
        max_subtasks_per_file: int = DEFAULT_MAX_SUBTASKS_PER_FILE,
        inline_threshold: int = DEFAULT_INLINE_THRESHOLD,
        *,
        executor: Executor | None = None,
    ) -> None:
        if max_subtasks_per_file < 1:
            raise ValueError(f"max_subtasks_per_file must be >= 1, got {max_subtasks_per_file}")
        if inline_threshold < 0:
            raise ValueError(f"inline_threshold must be >= 0, got {inline_threshold}")
        self._write_file = write_file
        self.max_subtasks_per_file = max_subtasks_per_file
        self.inline_threshold = inline_threshold
        self._executor = executor
        self._group: _Group | None = None
        self._own_pool: ThreadPoolExecutor | None = None
        self._writes: set[concurrent.futures.Future[list[ChannelStateHandles]]] = set()

    def register(self, subtask_name: str) -> SubtaskChannelStateWriter:
        """A writer for a new subtask, in the open group or a new one."""
        group = self._group
        if group is None or group.closed or group.registered >= group.capacity:
            group = self._group = _Group(self, self.max_subtasks_per_file)
        writer = SubtaskChannelStateWriter(group, subtask_name)
        group.members.append(writer)
        group.registered += 1
        return writer

    def release(self, writer: SubtaskChannelStateWriter) -> None:
        """The subtask ended: abort its unfinished checkpoints, stop waiting for it."""
        if writer.released:
            return
        writer.released = True
        for cid, entry in writer.checkpoints.items():
            if not entry.done:
                writer._fail(cid, entry, "the subtask was released")
        writer._group.collect()

    def cancel(self) -> None:
        """Cancel file writes in flight (worker shutdown); their members' results fail (a
        write already running completes). Shuts down the writer's own pool, if it made one."""
        for future in list(self._writes):
            future.cancel()
        if self._own_pool is not None:
            self._own_pool.shutdown(wait=False)

    def _persist(
        self, checkpoint_id: int, taking: list[tuple[SubtaskChannelStateWriter, _Checkpoint]]
    ) -> None:
        contributions = [
            SubtaskContribution(m.name, e.input, e.output, tuple(e.input_refs),
                                tuple(e.output_refs))
            for m, e in taking
        ]  # fmt: skip
        for _, entry in taking:
            entry.input, entry.output, entry.input_refs, entry.output_refs = {}, {}, [], []
        total = sum(c.size for c in contributions)
        if total < self.inline_threshold or total == 0:
            handles = lay_out_group(checkpoint_id, contributions, None, "")
            for (_, entry), mine in zip(taking, handles):
                _settle(entry, result=mine)
            return
        name = f"channel-state-{uuid.uuid4().hex}"
        loop = asyncio.get_running_loop()
        future: concurrent.futures.Future[list[ChannelStateHandles]]
        if total <= LOOP_LAYOUT_LIMIT:
            # Laid out and hashed here: the I/O thread then only writes (docs/design.md,
            # "Checkpoint I/O beside a busy task thread")
            try:
                layout = lay_out(checkpoint_id, contributions)
            except Exception as err:  # failed like a write: the members' results fail
                future = concurrent.futures.Future()
                future.set_exception(err)
            else:
                future = self._pool().submit(write_layout, layout, self._write_file, name)
        else:
            future = self._pool().submit(
                lay_out_group, checkpoint_id, contributions, self._write_file, name
            )
        self._writes.add(future)
        names = [m.name for m, _ in taking]

        def done(f: concurrent.futures.Future[list[ChannelStateHandles]]) -> None:
            self._writes.discard(f)
            err: BaseException | None = asyncio.CancelledError() if f.cancelled() else f.exception()
            if err is None:
                for (_, entry), mine in zip(taking, f.result()):
                    _settle(entry, result=mine)
                return
            log.warning("channel-state file of checkpoint %d for %s failed: %r",
                        checkpoint_id, names, err)  # fmt: skip
            for member, entry in taking:
                error = CheckpointException(
                    CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION,
                    f"writing channel state of subtask {member.name!r}, checkpoint "
                    f"{checkpoint_id} (file {name}): {err!r}",
                )
                error.__cause__ = err
                _settle(entry, exception=error)

        def back_on_loop(f: concurrent.futures.Future[list[ChannelStateHandles]]) -> None:
            if not f.cancelled() and f.exception() is None:
                for (_, entry), mine in zip(taking, f.result()):
                    _report_durable(entry, mine)  # on this (the I/O) thread
            try:  # one hop back to the loop (not two, as with ``run_in_executor``)
                loop.call_soon_threadsafe(done, f)
            except RuntimeError:  # the loop closed: the worker is gone
                pass

        future.add_done_callback(back_on_loop)

    def _pool(self) -> Executor:
        if self._executor is None:
            self._executor = self._own_pool = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="channel-state"
            )
        return self._executor


def _check_channel(channel: ChannelId) -> ChannelId:
    if (
        not isinstance(channel, tuple)
        or len(channel) != 2
        or not all(type(i) is int and 0 <= i <= _U32_MAX for i in channel)
    ):
        raise ValueError(f"a channel id is a pair of ints in [0, 2**32), got {channel!r}")
    return channel


def _check_chunk(data: bytes) -> bytes:
    if len(data) > _U32_MAX:
        raise ValueError(f"a channel-state chunk must be < 4 GiB, got {len(data)} bytes")
    return bytes(data) if not isinstance(data, bytes) else data


def _report_durable(entry: _Checkpoint, handles: ChannelStateHandles) -> None:
    """Hand ``handles`` to the entry's ``when_durable`` callbacks (the writing I/O thread)."""
    with entry.lock:
        entry.durable = handles
        listeners, entry.durable_listeners = entry.durable_listeners, []
    for listener in listeners:
        try:
            listener(handles)
        except Exception:  # the loop's hop must still come: it settles the result
            log.exception("a when_durable callback failed")


def _settle(
    entry: _Checkpoint,
    *,
    result: ChannelStateHandles | None = None,
    exception: BaseException | None = None,
) -> None:
    future = entry.future
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
        future.exception()  # expected outcome: do not log "never retrieved"
    else:
        future.set_result(result if result is not None else ChannelStateHandles())
    listeners, entry.listeners = entry.listeners, []
    for listener in listeners:
        listener(future)
