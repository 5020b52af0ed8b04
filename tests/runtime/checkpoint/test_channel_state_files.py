from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.channel_state_files import (
    ChannelStateFileWriter,
    SubtaskChannelStateWriter,
)
from undertow.runtime.checkpoint.channel_state_format import (
    FILE_HEADER,
    FILE_MAGIC,
    FILE_VERSION,
    read_channel_state,
)
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateHandles,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.failure import CheckpointException
from undertow.storage import CheckpointStorage, CorruptCheckpointError, FileHandle

EXECUTOR = ThreadPoolExecutor(4, thread_name_prefix="test-channel-state")
Channels = dict[tuple[int, int], list[bytes]]


class MemoryFiles:
    """An in-memory ``write_file`` / ``read_range`` pair that counts files per checkpoint."""

    def __init__(self, fail: bool = False) -> None:
        self.files: dict[str, bytes] = {}
        self.fail = fail

    def write(self, checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        if self.fail:
            raise OSError("disk on fire")
        path = f"chk-{checkpoint_id}/{name}"
        assert path not in self.files
        self.files[path] = data
        return FileHandle.of(path, data)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self.files[path][start : start + length]

    def count(self, checkpoint_id: int) -> int:
        return sum(1 for p in self.files if p.startswith(f"chk-{checkpoint_id}/"))


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(body())


def read_all(handle: MergedChannelStateHandle | None, files: MemoryFiles) -> Channels:
    found: Channels = {}
    if handle is not None:
        for channel, data in read_channel_state(handle, files.read_range):
            found.setdefault(channel, []).append(data)
    return found


async def settle(future: asyncio.Future[ChannelStateHandles]) -> ChannelStateHandles | str:
    try:
        return await asyncio.wait_for(future, 5)
    except CheckpointException as err:
        return f"failed: {err}"


# -- property: what goes in comes out, per subtask, exactly ---------------------------------

payloads = st.dictionaries(
    st.tuples(st.integers(0, 2), st.integers(0, 6)),
    st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=3),
    max_size=4,
)
subtask_plans = st.fixed_dictionaries(
    {
        # what the subtask does with checkpoint 1: take part, abort mid-way, or skip it
        "fate": st.sampled_from(["finish", "finish", "finish", "abort", "skip", "release"]),
        "input": payloads,
        "output": payloads,
    }
)


@settings(max_examples=120, deadline=None)
@given(
    plans=st.lists(subtask_plans, min_size=1, max_size=12),
    per_file=st.integers(1, 5),
    inline_threshold=st.sampled_from([0, 64, 2000, 1 << 20]),
    order=st.randoms(use_true_random=False),
)
def test_every_subtask_reads_back_exactly_what_it_wrote(
    plans: list[dict[str, Any]], per_file: int, inline_threshold: int, order: Any
) -> None:
    files = MemoryFiles()

    async def body() -> None:
        writer = ChannelStateFileWriter(files.write, per_file, inline_threshold, executor=EXECUTOR)
        subtasks = [writer.register(f"task ({i + 1}/{len(plans)})") for i in range(len(plans))]
        queues: list[list[Callable[[], None]]] = []
        for sub, plan in zip(subtasks, plans):
            if plan["fate"] in ("skip", "release"):
                continue
            sub.start(1)
            steps: list[Callable[[], None]] = []
            for side in ("input", "output"):
                add = sub.add_input if side == "input" else sub.add_output
                for channel, chunks in plan[side].items():
                    for chunk in chunks:
                        steps.append(lambda add=add, ch=channel, c=chunk: add(1, ch, c))
            steps.append(lambda sub=sub: sub.finish_input(1))
            steps.append(lambda sub=sub: sub.finish_output(1))
            if plan["fate"] == "abort":
                # before the last finish: an abort after collection changes nothing
                steps.insert(order.randint(0, len(steps) - 1), lambda sub=sub: sub.abort(1))
            queues.append(steps)
        # interleave the subtasks at random, each subtask's own calls in order
        while queues:
            queue = order.choice(queues)
            queue.pop(0)()
            if not queue:
                queues.remove(queue)
        for sub, plan in zip(subtasks, plans):
            if plan["fate"] == "skip":
                sub.start(2)  # skipping 1 and starting 2 releases the group's wait for it
            elif plan["fate"] == "release":
                writer.release(sub)
        for sub, plan in zip(subtasks, plans):
            if plan["fate"] in ("skip", "release"):
                continue
            outcome = await settle(sub.result(1))
            if plan["fate"] == "abort":
                assert isinstance(outcome, str) and "aborted" in outcome
                continue
            assert isinstance(outcome, ChannelStateHandles)
            for side, handle in (("input", outcome.input), ("output", outcome.output)):
                expected = {ch: [c for c in cs if c] for ch, cs in plan[side].items()}
                expected = {ch: cs for ch, cs in expected.items() if cs}
                got = read_all(handle, files)
                assert got == expected
                assert list(got) == sorted(expected)  # channel order
                if handle is not None and inline_threshold == 0:
                    assert handle.file is not None
            assert outcome.persisted_bytes == sum(
                len(c) for side in ("input", "output") for cs in plan[side].values() for c in cs
            )
        assert files.count(1) <= math.ceil(len(plans) / per_file)

    run(body)


# -- the grouping rule ------------------------------------------------------------------------


def group_of_two(
    files: MemoryFiles, threshold: int = 0
) -> tuple[ChannelStateFileWriter, SubtaskChannelStateWriter, SubtaskChannelStateWriter]:
    writer = ChannelStateFileWriter(files.write, 5, threshold, executor=EXECUTOR)
    return writer, writer.register("a (1/2)"), writer.register("b (2/2)")


def take(sub: SubtaskChannelStateWriter, checkpoint_id: int, data: bytes) -> None:
    sub.start(checkpoint_id)
    sub.add_input(checkpoint_id, (0, 0), data)
    sub.finish_input(checkpoint_id)
    sub.finish_output(checkpoint_id)


async def pending(future: asyncio.Future[Any]) -> bool:
    await asyncio.sleep(0.05)
    return not future.done()


@pytest.mark.parametrize("how", ["start-later", "abort-before-start", "release"])
def test_member_that_has_not_reached_n_is_waited_for_until_it_moves_past(how: str) -> None:
    files = MemoryFiles()

    async def body() -> None:
        writer, a, b = group_of_two(files)
        take(a, 1, b"in flight")
        assert await pending(a.result(1))  # b's barrier 1 may still come
        assert files.count(1) == 0
        if how == "start-later":
            b.start(2)
        elif how == "abort-before-start":
            b.abort(1)
        else:
            writer.release(b)
        handles = await settle(a.result(1))
        assert isinstance(handles, ChannelStateHandles)
        assert read_all(handles.input, files) == {(0, 0): [b"in flight"]}
        assert files.count(1) == 1

    run(body)


def test_starting_next_checkpoint_aborts_unfinished_one() -> None:
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files)
        a.start(1)
        a.add_input(1, (0, 1), b"old")
        a.finish_input(1)
        take(a, 2, b"new")
        take(b, 2, b"other")
        outcome = await settle(a.result(1))
        assert isinstance(outcome, str) and "subsumed by checkpoint 2" in outcome
        assert not a.is_started(1) and a.is_started(2)
        handles = await settle(a.result(2))
        assert isinstance(handles, ChannelStateHandles)
        assert read_all(handles.input, files) == {(0, 0): [b"new"]}
        a.add_input(1, (0, 0), b"late data of an aborted checkpoint is dropped")
        assert files.count(1) == 0 and files.count(2) == 1

    run(body)


def test_abort_of_one_member_keeps_the_others_state() -> None:
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files)
        take(a, 1, b"kept")
        b.start(1)
        b.add_output(1, (2, 3), b"dropped")
        b.abort(1, cause=RuntimeError("decline"))
        aborted = b.result(1)
        with pytest.raises(CheckpointException, match="'b \\(2/2\\)', checkpoint 1: aborted"):
            await aborted
        assert isinstance(aborted.exception().__cause__, RuntimeError)  # type: ignore[union-attr]
        handles = await settle(a.result(1))
        assert isinstance(handles, ChannelStateHandles)
        assert read_all(handles.input, files) == {(0, 0): [b"kept"]}
        assert b"dropped" not in next(iter(files.files.values()))

    run(body)


def test_a_late_barrier_of_an_aborted_checkpoint_starts_nothing() -> None:
    """An unaligned checkpoint aborted while its barriers travel: the subtask's next barrier
    of the same checkpoint must not start it again (it used to raise 'started twice')."""
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files)
        a.start(1)
        a.add_input(1, (0, 0), b"before the abort")
        a.abort(1)
        a.start(1)  # the late barrier
        a.add_input(1, (0, 0), b"after the abort")
        a.finish_input(1)
        a.finish_output(1)
        take(b, 1, b"kept")
        with pytest.raises(CheckpointException, match="checkpoint 1: aborted"):
            await a.result(1)
        handles = await settle(b.result(1))
        assert isinstance(handles, ChannelStateHandles)
        assert read_all(handles.input, files) == {(0, 0): [b"kept"]}
        assert b"abort" not in next(iter(files.files.values()))

    run(body)


def test_when_finished_runs_in_the_step_that_settles_the_result() -> None:
    """No extra loop iteration between the state settled and the subtask's callback: a busy
    worker loop serves each iteration only after a round of task slices. (Inline state
    settles synchronously inside the call that completes the group.)"""
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files, threshold=1024)
        seen: list[ChannelStateHandles] = []
        take(a, 1, b"x")
        a.when_finished(1, seen.append)
        assert seen == []
        take(b, 1, b"y")  # completes the group: inline state, no file
        assert len(seen) == 1 and seen[0].persisted_bytes == 1
        late: list[ChannelStateHandles] = []
        a.when_finished(1, late.append)  # already settled: runs at once
        assert late == seen

    run(body)


class GatedFiles(MemoryFiles):
    """Writes once ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def write(self, checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        assert self.gate.wait(5)
        return super().write(checkpoint_id, name, data)


def test_when_durable_runs_on_the_writing_thread_before_the_loop_turns() -> None:
    """The subtask's acknowledgement need not wait for the loop: ``when_durable`` hands the
    handles over on the I/O thread, right after the file is written, while the loop thread is
    still busy (here: blocked in a wait); ``when_finished`` brings the same handles later."""
    files = GatedFiles()

    async def body() -> None:
        _, a, b = group_of_two(files)
        durable = threading.Event()
        seen: list[tuple[ChannelStateHandles, int]] = []

        def on_durable(handles: ChannelStateHandles) -> None:
            seen.append((handles, threading.get_ident()))
            durable.set()

        take(a, 1, b"x" * 10)
        a.when_durable(1, on_durable)
        take(b, 1, b"y" * 10)  # completes the group: the file goes to the pool
        files.gate.set()  # (the write waits for it: a done write would report on this thread)
        assert durable.wait(5), "the I/O thread did not report the durable file"
        [(handles, thread)] = seen
        assert thread != threading.get_ident() and handles.persisted_bytes == 10
        assert files.count(1) == 1 and not a.result(1).done()  # the loop has not turned
        assert await settle(a.result(1)) == handles
        late: list[ChannelStateHandles] = []
        a.when_durable(1, late.append)  # already durable: at once, on this thread
        assert late == [handles]

    run(body)


def test_when_durable_reports_no_inline_state_and_no_failed_write() -> None:
    async def body(files: MemoryFiles, threshold: int) -> None:
        _, a, b = group_of_two(files, threshold)
        seen: list[ChannelStateHandles] = []
        take(a, 1, b"x")
        a.when_durable(1, seen.append)
        take(b, 1, b"y")
        await asyncio.wait({a.result(1)}, timeout=5)
        assert a.result(1).done() and seen == []  # when_finished reports these

    run(lambda: body(MemoryFiles(), threshold=1024))
    run(lambda: body(MemoryFiles(fail=True), threshold=0))


def test_abort_after_collection_changes_nothing() -> None:
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files)
        take(a, 1, b"x" * 10)
        take(b, 1, b"y" * 10)
        a.abort(1)
        handles = await settle(a.result(1))
        assert isinstance(handles, ChannelStateHandles) and handles.persisted_bytes == 10

    run(body)


def test_small_state_is_inlined_and_empty_state_has_no_handle() -> None:
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files, threshold=100)
        take(a, 1, b"x" * 60)
        take(b, 1, b"")  # nothing in flight
        small = await settle(a.result(1))
        empty = await settle(b.result(1))
        assert isinstance(small, ChannelStateHandles) and small.input is not None
        assert small.input.file is None and small.input.inline_data == b"x" * 60
        assert small.output is None
        assert empty == ChannelStateHandles(None, None)
        assert read_all(small.input, files) == {(0, 0): [b"x" * 60]}
        take(a, 2, b"x" * 60)
        take(b, 2, b"y" * 40)  # 100 bytes: not below the threshold any more
        big = await settle(b.result(2))
        assert isinstance(big, ChannelStateHandles) and big.input and big.input.file
        assert files.count(1) == 0 and files.count(2) == 1

    run(body)


def test_file_layout_header_then_regions_in_member_order() -> None:
    files = MemoryFiles()

    async def body() -> None:
        _, a, b = group_of_two(files)
        b.start(1)
        a.start(1)
        b.add_output(1, (0, 1), b"B-out")
        b.add_input(1, (1, 0), b"B-in1")
        a.add_input(1, (0, 2), b"A-in2")
        b.add_input(1, (0, 5), b"B-in0")
        a.add_input(1, (0, 1), b"A-in1")
        for sub in (a, b):
            sub.finish_output(1)
            sub.finish_input(1)
        handles_a = await settle(a.result(1))
        assert isinstance(handles_a, ChannelStateHandles)
        (data,) = files.files.values()
        assert data[: FILE_HEADER.size] == FILE_HEADER.pack(FILE_MAGIC, FILE_VERSION)
        assert data[FILE_HEADER.size :] == b"A-in1A-in2B-in0B-in1B-out"
        assert handles_a.input is not None and handles_a.input.range_start == FILE_HEADER.size

    run(body)


def test_corrupt_byte_is_detected_before_anything_is_returned() -> None:
    files = MemoryFiles()

    async def body() -> ChannelStateHandles:
        _, a, b = group_of_two(files)
        take(a, 7, b"a" * 50)
        take(b, 7, b"b" * 50)
        handles = await settle(b.result(7))
        assert isinstance(handles, ChannelStateHandles)
        return handles

    handles = run(body)
    assert handles.input is not None and handles.input.file is not None
    path = handles.input.file.path
    data = bytearray(files.files[path])
    data[-1] ^= 0x01
    files.files[path] = bytes(data)
    with pytest.raises(CorruptCheckpointError) as info:
        read_channel_state(handles.input, files.read_range)
    message = str(info.value)
    assert path in message and "checkpoint 7" in message and "'b (2/2)'" in message
    assert info.value.checkpoint == 7 and info.value.path == path
    files.files[path] = bytes(data[:-10])  # truncated
    with pytest.raises(CorruptCheckpointError, match="read 40 bytes"):
        read_channel_state(handles.input, files.read_range)


def test_round_trip_through_checkpoint_storage() -> None:
    storage = CheckpointStorage.in_memory()

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(storage.write_file, executor=EXECUTOR)
        subs = [writer.register(f"s{i}") for i in range(3)]
        for i, sub in enumerate(subs):
            take(sub, 4, bytes([i]) * 30_000)
        results = [await settle(sub.result(4)) for sub in subs]
        assert all(isinstance(r, ChannelStateHandles) for r in results)
        return results[1]  # type: ignore[return-value]

    handles = run(body)
    assert handles.input is not None and handles.input.file is not None
    assert storage.read_file(handles.input.file, 4)  # the whole file verifies too
    got = list(read_channel_state(handles.input, storage.read_range))
    assert got == [((0, 0), bytes([1]) * 30_000)]


def test_write_failure_fails_every_member() -> None:
    files = MemoryFiles(fail=True)

    async def body() -> None:
        _, a, b = group_of_two(files)
        take(a, 1, b"x")
        take(b, 1, b"y")
        for sub in (a, b):
            with pytest.raises(CheckpointException, match="disk on fire") as info:
                await sub.result(1)
            assert isinstance(info.value.__cause__, OSError)

    run(body)


def test_groups_hold_at_most_max_members_and_close_on_first_start() -> None:
    files = MemoryFiles()

    async def body() -> None:
        writer = ChannelStateFileWriter(files.write, 2, 0, executor=EXECUTOR)
        first = [writer.register(f"s{i}") for i in range(3)]  # groups {s0, s1}, {s2}
        first[2].start(1)  # closes {s2}
        late = writer.register("late")  # a new group: it must not hold up checkpoint 1
        for sub in first:
            if not sub.is_started(1):
                sub.start(1)
            sub.add_input(1, (0, 0), b"z")
            sub.finish_input(1)
            sub.finish_output(1)
        for sub in first:
            assert isinstance(await settle(sub.result(1)), ChannelStateHandles)
        assert files.count(1) == 2
        assert not late.is_started(1)

    run(body)


def test_misuse_is_rejected_with_names() -> None:
    async def body() -> None:
        writer, a, _ = group_of_two(MemoryFiles())
        a.start(1)
        with pytest.raises(ValueError, match="started checkpoint 1 twice"):
            a.start(1)
        with pytest.raises(ValueError, match="pair of ints"):
            a.add_input(1, (0, -1), b"x")
        a.finish_input(1)
        with pytest.raises(ValueError, match="'a \\(1/2\\)': input of checkpoint 1 already"):
            a.add_input(1, (0, 0), b"x")
        with pytest.raises(LookupError, match="no checkpoint 9"):
            a.result(9)
        writer.release(a)
        with pytest.raises(ValueError, match="released"):
            a.start(2)
        with pytest.raises(CheckpointException, match="released"):
            await a.result(1)

    run(body)
