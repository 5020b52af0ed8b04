"""Checkpoint I/O makes a fixed, small number of GIL-releasing calls per file, whatever its size.

Each such call on an I/O thread costs a hand-off: the thread waits for the GIL when the call
returns, while a task thread may be running user code (docs/design.md, "Checkpoint I/O beside
a busy task thread"). The calls are counted with a profiler on the thread that makes them;
counted, not timed.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.runtime.checkpoint.channel_state_files import (
    LOOP_LAYOUT_LIMIT,
    ChannelStateFileWriter,
)
from undertow.runtime.worker.io_pool import IOPool, SwitchIntervalHold
from undertow.storage import CheckpointStorage, durable_write

#: C functions that release the GIL around blocking or long work (by ``__qualname__``).
RELEASING = {
    "open": "open", "write": "write", "close": "close", "fsync": "fsync",
    "fdatasync": "fdatasync", "stat": "stat", "lstat": "lstat", "mkdir": "mkdir",
    "BufferedWriter.write": "write", "BufferedWriter.flush": "flush",
    "BufferedWriter.__exit__": "close", "openssl_sha256": "sha256", "HASH.update": "sha256",
    "socket.send": "send",
}  # fmt: skip

#: One durable local file: open, one write through O_DSYNC, close, its sha256.
ONE_FILE = ["open", "write", "close", "sha256"]


def releasing_calls(calls: list[str]) -> Callable[[Any, str, Any], None]:
    """A profile function appending the GIL-releasing C calls it sees to ``calls``."""

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            name = RELEASING.get(getattr(arg, "__qualname__", ""))
            if name is not None:
                calls.append(name)

    return profile


def on_a_thread(job: Callable[[], Any]) -> list[str]:
    """The GIL-releasing calls ``job`` makes, run on a fresh thread as the I/O pool would."""
    calls: list[str] = []

    def run() -> None:
        sys.setprofile(releasing_calls(calls))
        try:
            job()
        finally:
            sys.setprofile(None)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return calls


@pytest.mark.parametrize("size", [1024, 4 << 20])
def test_a_state_file_write_makes_four_releasing_calls_whatever_its_size(
    tmp_path: Path, size: int
) -> None:
    storage = CheckpointStorage(str(tmp_path), "job")
    storage.write_file(3, "other", b"x")  # the checkpoint's directory exists
    data = os.urandom(size)
    assert on_a_thread(lambda: storage.write_file(3, "map-0.state", data)) == ONE_FILE
    assert (tmp_path / "job" / "chk-3" / "map-0.state").read_bytes() == data


def test_the_first_file_of_a_checkpoint_also_creates_its_directory(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path), "job")
    storage.write_file(3, "other", b"x")  # the job's directory exists, chk-4 does not
    calls = on_a_thread(lambda: storage.write_file(4, "map-0.state", b"y" * 5000))
    # the open that finds no directory, makedirs (stat, mkdir), then one durable file
    assert calls == ["open", "stat", "mkdir", *ONE_FILE]


def test_local_files_are_written_through_o_dsync_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not hasattr(os, "O_DSYNC"):
        pytest.skip("needs O_DSYNC")
    flags: list[int] = []
    writes: list[int] = []
    real_open, real_write = os.open, os.write

    def record_open(path: str, flag: int, mode: int = 0o777) -> int:
        flags.append(flag)
        return real_open(path, flag, mode)

    def record_write(fd: int, data: Any) -> int:
        writes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(durable_write.os, "open", record_open)
    monkeypatch.setattr(durable_write.os, "write", record_write)
    storage = CheckpointStorage(str(tmp_path), "job")
    handle = storage.write_file(1, "a", b"z" * 100_000)
    assert len(flags) == 2 and all(f & os.O_DSYNC for f in flags)  # one miss: no directory yet
    assert writes == [100_000]
    assert storage.read_file(handle, 1) == b"z" * 100_000


def test_a_partial_write_is_continued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(durable_write.os, "write", lambda fd, data: real_write(fd, data[:777]))
    storage = CheckpointStorage(str(tmp_path), "job")
    data = os.urandom(10_000)
    handle = storage.write_file(1, "a", data)
    assert storage.read_file(handle, 1) == data


def channel_state_file_calls(tmp_path: Path, size: int) -> list[str]:
    """The releasing calls of the I/O thread while one group file (two members, one side
    each, ``size`` bytes in all) is written, from the job's start to its loop hand-back,
    then the loop's wake-up (``send``) once, whichever thread made it: the I/O thread runs
    the write's done-callback, unless the write finished before the loop thread added it
    (then the loop thread runs it and wakes itself; 1 of 300 runs at load 46 on 2026-11-30).
    """
    storage = CheckpointStorage(str(tmp_path), "job")
    storage.write_file(7, "other", b"x")  # the checkpoint's directory exists
    pool = IOPool(1, hold=SwitchIntervalHold())
    calls: list[str] = []
    pool.submit(sys.setprofile, releasing_calls(calls)).result()
    calls.clear()
    chunk = os.urandom(size // 2)

    loop_calls: list[str] = []

    async def body() -> None:
        sys.setprofile(releasing_calls(loop_calls))
        try:
            await write()
        finally:
            sys.setprofile(None)

    async def write() -> None:
        writer = ChannelStateFileWriter(storage.write_file, 5, 0, executor=pool)
        source, sink = writer.register("source-0"), writer.register("map-0")
        for member in (source, sink):
            member.start(7)
        source.add_output(7, (0, 0), chunk)
        sink.add_input(7, (0, 0), chunk)
        for member in (source, sink):
            member.finish_input(7)
            member.finish_output(7)
        handles = await sink.result(7)
        assert handles.input is not None and handles.input.file is not None

    try:
        asyncio.run(body())
        pool.submit(sys.setprofile, None).result()
    finally:
        pool.shutdown()
    wakes = calls.count("send") + loop_calls.count("send")
    return [c for c in calls if c != "send"] + ["send"] * wakes


def test_a_small_channel_state_file_is_only_written_on_the_io_thread(tmp_path: Path) -> None:
    """Laid out and its regions hashed on the loop thread: the I/O thread makes the calls of
    one durable file, then wakes the loop (``call_soon_threadsafe``)."""
    assert channel_state_file_calls(tmp_path, 400 * 1024) == [*ONE_FILE, "send"]


def test_a_large_channel_state_file_adds_one_hash_per_region(tmp_path: Path) -> None:
    """Over :data:`LOOP_LAYOUT_LIMIT` the regions are hashed on the I/O thread (the loop must
    not hash megabytes): one call per region, still not per chunk or per byte."""
    calls = channel_state_file_calls(tmp_path, 2 * LOOP_LAYOUT_LIMIT + 2)
    assert calls == ["sha256", "sha256", *ONE_FILE, "send"]


def test_a_layout_that_fails_on_the_loop_fails_the_members_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop-side layout fails like a write would: each member's result names its subtask,
    the checkpoint and the file; the caller (a task finishing its input) is not hit."""
    from undertow.runtime.checkpoint import channel_state_files
    from undertow.runtime.checkpoint.failure import CheckpointException

    def broken(checkpoint_id: int, contributions: Any) -> Any:
        raise MemoryError(f"no room for checkpoint {checkpoint_id}")

    monkeypatch.setattr(channel_state_files, "lay_out", broken)
    storage = CheckpointStorage(str(tmp_path), "job")

    async def body() -> None:
        writer = ChannelStateFileWriter(storage.write_file, 5, 0, executor=IOPool(1))
        member = writer.register("map-0")
        member.start(9)
        member.add_input(9, (0, 0), b"x" * 5000)
        member.finish_input(9)
        member.finish_output(9)
        with pytest.raises(CheckpointException, match=r"'map-0', checkpoint 9 \(file channel"):
            await member.result(9)

    asyncio.run(body())
