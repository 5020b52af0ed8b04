"""runtime.checkpoint.inflight_ledger: incremental channel state.

A queued buffer the previous completed checkpoint persisted is referred to in that
checkpoint's file, not written again; anything else is written. The property test runs a
subtask's output queue against a model of the coordinator (the real shared-state registry,
retention with subsumption, savepoints, aborts, late and lost notifications) and checks after
every step that each retained checkpoint restores exactly the buffers it captured, from files
that exist, and at the end that no file outlives every checkpoint that needs it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.barrier import (
    AlignmentType,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.capture_persist import persist
from undertow.runtime.checkpoint.channel_recovery.stream import restored_channels
from undertow.runtime.checkpoint.channel_state_format import SubtaskContribution, lay_out_group
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelId,
    ChannelStateHandles,
    ChannelStateReference,
)
from undertow.runtime.checkpoint.channel_state_writer import encode_chunk
from undertow.runtime.checkpoint.inflight_capture import (
    InflightCapture,
    PersistInput,
    PersistOutput,
    ReferInput,
    ReferOutput,
)
from undertow.runtime.checkpoint.inflight_ledger import MAX_OPEN_RECORDS, InflightLedger
from undertow.runtime.checkpoint.shared_state_registry import SharedStateRegistry
from undertow.runtime.network.buffer import Buffer
from undertow.storage import FileHandle

CHECKPOINT = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 0)
#: An unaligned stop's savepoint: the only savepoint with channel state.
SAVEPOINT = CheckpointOptions(SnapshotType.SYNC_SAVEPOINT, AlignmentType.UNALIGNED)
CHANNEL: ChannelId = (0, 0)


class Files:
    """Checkpoint storage in memory: ``chk-<n>/<name>`` -> bytes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def write(self, checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        path = f"chk-{checkpoint_id}/{name}"
        self.files[path] = data
        return FileHandle.of(path, data)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self.files[path][start : start + length]


@dataclass
class OneSubtaskWriter:
    """A channel-state writer for one subtask that refers (``ReferencesChannelState``) and
    writes its file when the output side finishes (always to a file: no inline state)."""

    files: Files
    on_written: Callable[[int, ChannelStateHandles], None]
    output: dict[ChannelId, list[bytes]] = field(default_factory=dict)
    refs: list[ChannelStateReference] = field(default_factory=list)
    in_state_file: bool = False

    def start(self, checkpoint_id: int) -> None:
        self.output, self.refs = {}, []

    def is_started(self, checkpoint_id: int) -> bool:
        return True

    def add_input(self, checkpoint_id: int, channel: ChannelId, data: bytes) -> None:
        raise AssertionError("output side only")

    def add_output(self, checkpoint_id: int, channel: ChannelId, data: bytes) -> None:
        self.output.setdefault(channel, []).append(data)

    def add_input_reference(self, checkpoint_id: int, channel: ChannelId, ref: Any) -> None:
        raise AssertionError("output side only")

    def add_output_reference(
        self, checkpoint_id: int, channel: ChannelId, reference: ChannelStateReference
    ) -> None:
        position = len(self.output.get(channel, ()))
        self.refs.append(reference.at(position))

    def finish_input(self, checkpoint_id: int) -> None:
        pass

    def finish_output(self, checkpoint_id: int) -> None:
        contribution = SubtaskContribution("map (1/1)", {}, self.output, (), tuple(self.refs))
        written = self.files.write if self.output else None
        [handles] = lay_out_group(checkpoint_id, [contribution], written, "channel-state")
        self.on_written(checkpoint_id, handles)

    def abort(self, checkpoint_id: int) -> None:
        pass

    def when_finished(self, checkpoint_id: int, callback: Any, on_failure: Any = None) -> None:
        raise AssertionError("not used")


class Subtask:
    """One subpartition's queue, its capture, its ledger and its writer (as the checkpointer
    wires them)."""

    def __init__(self, files: Files, enabled: bool = True) -> None:
        self.ledger = InflightLedger(enabled)
        self.capture = InflightCapture([], [1], self.ledger.locate)
        self.handles: dict[int, ChannelStateHandles] = {}
        self.writer = OneSubtaskWriter(files, self._written)
        self.queue: deque[Buffer] = deque()
        self.produced = 0

    def _written(self, checkpoint_id: int, handles: ChannelStateHandles) -> None:
        self.handles[checkpoint_id] = handles
        self.ledger.handles(checkpoint_id, handles)

    def produce(self, n: int) -> None:
        for _ in range(n):
            self.produced += 1
            self.queue.append(Buffer(self.produced.to_bytes(4, "big") * 8))

    def send(self, n: int) -> None:
        for _ in range(min(n, len(self.queue))):
            self.queue.popleft()

    def checkpoint(self, cid: int, options: CheckpointOptions = CHECKPOINT) -> list[Any]:
        """Take ``cid``: the decisions of its output side (executed), and the chunks it must
        restore."""
        self.ledger.taken(cid, referencable=not options.snapshot_type.is_savepoint)
        own = CheckpointBarrier(cid, 0, options)
        plan = self.capture.begin_output(own, [own], writer_open=False) or []
        decisions = self.capture.overtaken(cid, CHANNEL, list(self.queue))
        persist(self.writer, [*plan, *decisions, self.capture.finish_output()],
                lambda *_: None, self.ledger)  # fmt: skip
        return decisions


def restored(handles: ChannelStateHandles, files: Files) -> list[bytes]:
    if handles.output is None:
        return []
    streams = restored_channels(handles.output, files.read_range, referencable=False)
    stream = streams.get(CHANNEL)
    return [] if stream is None else list(iter(stream.next_chunk, None))


def test_buffers_still_queued_are_referred_to_where_the_completed_checkpoint_wrote_them() -> None:
    files = Files()
    task = Subtask(files)
    task.produce(3)
    first = task.checkpoint(1)
    assert [type(d) for d in first] == [PersistOutput] * 3
    task.ledger.completed(1)
    task.send(1)
    task.produce(1)
    second = task.checkpoint(2)
    assert [type(d) for d in second] == [ReferOutput, PersistOutput]
    refer = second[0]
    assert refer.buffers == tuple(list(task.queue)[:2])
    handles = task.handles[2]
    assert handles.referenced_bytes == 2 * (1 + 32)
    assert handles.persisted_bytes == 1 + 32
    assert [r.file.path for r in handles.output.references] == [
        h.path for h in task.handles[1].files()
    ]
    assert restored(handles, files) == [encode_chunk(b) for b in task.queue]
    # the third refers to the same bytes again (two runs: checkpoint 1's, then 2's own)
    task.ledger.completed(2)
    third = task.checkpoint(3)
    assert [type(d) for d in third] == [ReferOutput, ReferOutput]
    assert restored(task.handles[3], files) == [encode_chunk(b) for b in task.queue]
    assert task.handles[3].persisted_bytes == 0


def test_nothing_is_referred_to_before_the_checkpoint_completed_here() -> None:
    task = Subtask(Files())
    task.produce(2)
    task.checkpoint(1)
    assert [type(d) for d in task.checkpoint(2)] == [PersistOutput] * 2


def test_nothing_is_referred_to_across_a_checkpoint_taken_in_between() -> None:
    """Checkpoint 2 may complete and subsume 1 without referring to its file."""
    task = Subtask(Files())
    task.produce(2)
    task.checkpoint(1)
    task.checkpoint(2)
    task.ledger.completed(1)  # late notification
    assert [type(d) for d in task.checkpoint(3)] == [PersistOutput] * 2


def test_a_savepoint_neither_refers_nor_is_referred_to() -> None:
    task = Subtask(Files())
    task.produce(2)
    task.checkpoint(1)
    task.ledger.completed(1)
    assert [type(d) for d in task.checkpoint(2, SAVEPOINT)] == [PersistOutput] * 2
    task.ledger.completed(2)
    assert [type(d) for d in task.checkpoint(3)] == [PersistOutput] * 2


def test_checkpoints_that_never_complete_here_are_not_kept_for_long() -> None:
    task = Subtask(Files())
    task.produce(2)
    for cid in range(1, 21):
        task.checkpoint(cid)
    assert task.ledger.open_checkpoints == tuple(range(21 - MAX_OPEN_RECORDS, 21))
    task.ledger.completed(20)
    assert task.ledger.open_checkpoints == ()


def test_switched_off_every_checkpoint_writes_everything() -> None:
    task = Subtask(Files(), enabled=False)
    task.produce(2)
    task.checkpoint(1)
    task.ledger.completed(1)
    assert [type(d) for d in task.checkpoint(2)] == [PersistOutput] * 2


class QueuedInput:
    """An input channel's queue as the capture sees it (``InflightInputView``)."""

    def __init__(self, queued: list[Buffer]) -> None:
        self.queued = queued

    def queued_normal(self) -> Any:
        return iter(self.queued)

    def queued_priority(self) -> list[tuple[object, int]]:
        return []

    def partial_record(self) -> bytes:
        return b""

    def subscribe_arrivals(self, sink: Any) -> None:
        raise AssertionError("not used")


class InputWriter(OneSubtaskWriter):
    """As :class:`OneSubtaskWriter`, for the input side."""

    def add_input(self, checkpoint_id: int, channel: ChannelId, data: bytes) -> None:
        self.output.setdefault(channel, []).append(data)

    def add_input_reference(
        self, checkpoint_id: int, channel: ChannelId, reference: ChannelStateReference
    ) -> None:
        self.add_output_reference(checkpoint_id, channel, reference)

    def finish_input(self, checkpoint_id: int) -> None:
        contribution = SubtaskContribution("map (1/1)", self.output, {}, tuple(self.refs), ())
        [handles] = lay_out_group(checkpoint_id, [contribution], self.files.write, "in")
        self.on_written(checkpoint_id, handles)


def test_input_buffers_the_task_has_not_taken_are_referred_to_and_restore_in_order() -> None:
    files = Files()
    ledger = InflightLedger()
    done: dict[int, ChannelStateHandles] = {}

    def written(cid: int, handles: ChannelStateHandles) -> None:
        done[cid] = handles
        ledger.handles(cid, handles)

    writer = InputWriter(files, written)
    capture = InflightCapture([CHANNEL], [], ledger.locate)
    queue = QueuedInput([Buffer(bytes([i]) * 40) for i in range(3)])

    def take(cid: int, unprocessed: list[bytes]) -> list[Any]:
        ledger.taken(cid, referencable=True)
        decisions = capture.start_inputs(
            CheckpointBarrier(cid, 0, CHECKPOINT), [0], [queue], lambda _: unprocessed
        )
        persist(writer, [*decisions, capture.finish_inputs(cid)], lambda *_: None, ledger)
        return decisions[1:]

    assert [type(d) for d in take(1, [])] == [PersistInput] * 3
    ledger.completed(1)
    queue.queued = [*queue.queued[1:], Buffer(b"new" * 10)]
    # the rest of the batch in hand is written, the two queued old buffers referred to
    second = take(2, [b"\x00rest"])
    assert [type(d) for d in second] == [PersistInput, ReferInput, PersistInput]
    assert done[2].referenced_bytes == 2 * 41
    restored_chunks = []
    handle = done[2].input
    assert handle is not None
    for stream in restored_channels(handle, files.read_range, referencable=False).values():
        restored_chunks += list(iter(stream.next_chunk, None))
    assert restored_chunks == [b"\x00rest", *(encode_chunk(b) for b in queue.queued)]


# -- property: reference counting under subsumption ------------------------------------------


class Coordinator:
    """What the JobMaster does with one subtask's checkpoints: completion registers the
    channel-state files a checkpoint refers to before it subsumes older ones; a subsumed
    checkpoint's directory goes but for the files a retained one holds, and releasing it
    deletes the files nobody holds any more (``CheckpointRetention.completed``)."""

    def __init__(self, files: Files, retained: int) -> None:
        self.files = files
        self.keep = retained
        self.registry = SharedStateRegistry()
        self.pending: list[int] = []
        self.retained: list[int] = []
        self.savepoints: set[int] = set()

    def complete(self, cid: int, handles: ChannelStateHandles) -> list[int]:
        """``cid`` completes; returns the pending ones it subsumed (aborted). A savepoint
        subsumes nothing and is not retained."""
        if cid in self.savepoints:
            self.pending.remove(cid)
            self.discard(cid)
            return []
        subsumed = [p for p in self.pending if p < cid and p not in self.savepoints]
        for p in subsumed:
            self.discard(p)
        self.pending = [p for p in self.pending if p not in subsumed and p != cid]
        self.registry.register(cid, [f.path for f in handles.referenced_files()])
        self.retained.append(cid)
        while len(self.retained) > self.keep:
            old = self.retained.pop(0)
            self.discard(old)
            for path in self.registry.release(old).delete:
                self.files.files.pop(path, None)
        return subsumed

    def abort(self, cid: int) -> None:
        self.pending.remove(cid)
        self.discard(cid)

    def discard(self, cid: int) -> None:
        held = set(self.registry.held_paths())
        for path in [p for p in self.files.files if p.startswith(f"chk-{cid}/")]:
            if path not in held:
                del self.files.files[path]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("produce"), st.integers(1, 4)),
        st.tuples(st.just("send"), st.integers(1, 4)),
        st.tuples(st.just("checkpoint"), st.booleans()),
        st.tuples(st.just("complete"), st.integers(0, 3)),
        st.tuples(st.just("complete and notify"), st.integers(0, 3)),
        st.tuples(st.just("abort"), st.integers(0, 3)),
        st.tuples(st.just("notify"), st.integers(0, 3)),
        st.tuples(st.just("lose"), st.integers(0, 3)),
    ),
    max_size=40,
)


#: Checkpoint 2 is taken before 1 completes, 3 after; 2 then completes and subsumes 1 (whose
#: file only 3 would refer to), then 3 completes.
TAKEN_IN_BETWEEN = [("produce", 2), ("checkpoint", False), ("checkpoint", False),
                    ("complete and notify", 0), ("checkpoint", False), ("complete", 0),
                    ("complete", 0)]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(steps=steps, retained=st.integers(1, 2))
@example(steps=TAKEN_IN_BETWEEN, retained=1)
def test_retained_checkpoints_always_restore_what_they_captured(
    steps: list[tuple[str, Any]], retained: int
) -> None:
    files = Files()
    task = Subtask(files)
    coordinator = Coordinator(files, retained)
    expected: dict[int, list[bytes]] = {}
    notices: list[tuple[str, int]] = []  # to the subtask, in any order, or lost
    next_id = 1
    for step, arg in steps:
        if step == "produce":
            task.produce(arg)
        elif step == "send":
            task.send(arg)
        elif step == "checkpoint":
            cid, next_id = next_id, next_id + 1
            expected[cid] = [encode_chunk(b) for b in task.queue]
            task.checkpoint(cid, SAVEPOINT if arg else CHECKPOINT)
            coordinator.pending.append(cid)
            if arg:
                coordinator.savepoints.add(cid)
        elif step.startswith("complete") and coordinator.pending:
            cid = coordinator.pending[arg % len(coordinator.pending)]
            for aborted in coordinator.complete(cid, task.handles[cid]):
                notices.append(("aborted", aborted))
            if step == "complete and notify":
                task.ledger.completed(cid)
            else:
                notices.append(("completed", cid))
        elif step == "abort" and coordinator.pending:
            cid = coordinator.pending[arg % len(coordinator.pending)]
            coordinator.abort(cid)
            notices.append(("aborted", cid))
        elif step in ("notify", "lose") and notices:
            kind, cid = notices.pop(arg % len(notices))
            if step == "notify":
                (task.ledger.completed if kind == "completed" else task.ledger.aborted)(cid)
        for cid in coordinator.retained:
            handles = task.handles[cid]
            needed = {f.path for f in (*handles.files(), *handles.referenced_files())}
            assert needed <= set(files.files), (cid, needed - set(files.files))
            assert restored(handles, files) == expected[cid], cid
    # Nothing outlives the checkpoints that need it (pending ones may still complete).
    needed = set()
    for cid in coordinator.retained:
        handles = task.handles[cid]
        needed |= {f.path for f in (*handles.files(), *handles.referenced_files())}
    pending = {f"chk-{cid}/" for cid in coordinator.pending}
    left = {p for p in files.files if p not in needed and p[: p.index("/") + 1] not in pending}
    assert not left, left


def test_the_property_sees_references() -> None:
    """The generated runs do refer (else the property would prove nothing about them)."""
    files = Files()
    task = Subtask(files)
    coordinator = Coordinator(files, 1)
    task.produce(3)
    task.checkpoint(1)
    coordinator.pending.append(1)
    coordinator.complete(1, task.handles[1])
    task.ledger.completed(1)
    task.checkpoint(2)
    coordinator.pending.append(2)
    coordinator.complete(2, task.handles[2])
    assert task.handles[2].referenced_bytes > 0
    assert restored(task.handles[2], files) == [encode_chunk(b) for b in task.queue]
