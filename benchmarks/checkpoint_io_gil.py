"""Checkpoint I/O while user code holds the GIL: the write strategies side by side (issue 14).

One asyncio loop plays a busy task thread: a user function spins 1 ms per record, holding the
GIL, and the loop polls between records (a mailbox slice boundary), as in the anchor-spin job.
Every 40 ms a checkpoint's asynchronous part writes a small state file and a channel-state
file (``--size``, 400 KiB by default: anchor-spin's in-flight data) with one strategy:

- ``pool``: the I/O pool as it was: each file a pool job doing makedirs, open, write, flush,
  fsync, close and its sha256 (and one sha256 per channel-state region), back to the loop by
  ``call_soon_threadsafe``;
- ``one-call``: what the worker does now: ``CheckpointStorage.write_file`` makes open, one
  ``os.write`` on an ``O_DSYNC`` descriptor (durable when it returns), close and the file's
  sha256; the channel-state file is laid out and its regions hashed on the loop thread;
- ``loop-hash``: as ``one-call``, but the files' digests are computed on the loop thread too,
  so each pool job makes only the three file calls;
- ``process``: a writer process per worker; the loop sends the bytes through a socket pair and
  reads the reply, so no thread of the worker process ever waits for its GIL;
- ``+switch``: the same through ``undertow.runtime.worker.io_pool.IOPool``, which lowers the
  switch interval to 0.1 ms while a job is in flight (the worker's pool).

Strategies run interleaved, ``--rounds`` times. Printed per strategy: the asynchronous part's
p50/p90 (ms), the I/O threads' voluntary context switches per checkpoint (each is a wait for
the GIL or for the disk: the hand-offs), and the user function's records/s against a run
without checkpoints. Usage: ``python benchmarks/checkpoint_io_gil.py [--rounds 3]
[--seconds 3] [--size 409600]``. The worker's switch interval (1 ms) is set first.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import hashlib
import multiprocessing
import os
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from undertow.runtime.checkpoint.channel_state_format import (
    SubtaskContribution,
    lay_out,
    lay_out_group,
    write_layout,
)
from undertow.runtime.worker.io_pool import IOPool
from undertow.storage import CheckpointStorage, FileHandle

WORKER_SWITCH_INTERVAL_S = 0.001  # the worker's: half its 2 ms mailbox slice
PERIOD_S = 0.04
_HEADER = struct.Struct("<II")


#: C functions that release the GIL (by ``__qualname__``), counted on the I/O threads with
#: ``--count`` (a profiler slows those threads down: counts and times come from separate runs).
RELEASING = {"open", "write", "close", "fsync", "stat", "mkdir", "BufferedWriter.write",
             "BufferedWriter.flush", "BufferedWriter.__exit__", "openssl_sha256",
             "socket.send"}  # fmt: skip
_released = [0]


def count_releasing(frame: Any, event: str, arg: Any) -> None:
    if event == "c_call" and getattr(arg, "__qualname__", "") in RELEASING:
        _released[0] += 1


def spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def voluntary_switches(native_ids: list[int]) -> int:
    total = 0
    for tid in native_ids:
        for line in Path(f"/proc/self/task/{tid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches"):
                total += int(line.split()[1])
    return total


def write_one_call(path: str, data: bytes) -> None:
    """The one blocking call per file: ``os.write`` on an ``O_DSYNC`` descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_DSYNC
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def writer_process(sock: socket.socket, directory: str) -> None:
    """The writer process: (name, bytes) in, durable write and sha256, 32 digest bytes out."""
    with sock:
        while True:
            header = sock.recv(_HEADER.size, socket.MSG_WAITALL)
            if len(header) < _HEADER.size:
                return
            name_len, size = _HEADER.unpack(header)
            name = sock.recv(name_len, socket.MSG_WAITALL).decode()
            data = bytearray(size)
            view, got = memoryview(data), 0
            while got < size:
                got += sock.recv_into(view[got:], size - got)
            write_one_call(os.path.join(directory, name), bytes(data))
            sock.sendall(hashlib.sha256(data).digest())


class Strategy:
    """One way to run a checkpoint's asynchronous part; ``start`` runs on the loop thread
    and calls ``done`` on the loop thread when both files are durable."""

    name = ""

    def __init__(self, directory: str, fast_switch: bool) -> None:
        self.directory = directory
        self.fast_switch = fast_switch
        self.pool: concurrent.futures.ThreadPoolExecutor = (
            IOPool(2, thread_name_prefix="io") if fast_switch
            else concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="io")
        )  # fmt: skip
        self.native_ids: list[int] = []
        ids = [self.pool.submit(threading.get_native_id) for _ in range(8)]
        time.sleep(0.05)
        self.native_ids = sorted({f.result() for f in ids})

    def start(self, cid: int, state: bytes, channel: SubtaskContribution,
              done: Callable[[], None]) -> None:  # fmt: skip
        raise NotImplementedError

    def close(self) -> None:
        self.pool.shutdown()

    def _join(self, n: int, done: Callable[[], None]) -> Callable[[Any], None]:
        loop = asyncio.get_running_loop()
        left = [n]

        def one(_: Any) -> None:
            left[0] -= 1
            if left[0] == 0:
                done()

        def back(future: concurrent.futures.Future[Any]) -> None:
            future.result()
            loop.call_soon_threadsafe(one, None)

        return back


def write_before(storage: CheckpointStorage, cid: int, name: str, data: bytes) -> FileHandle:
    """``CheckpointStorage.write_file`` before issue 14: makedirs, open, write, flush, fsync,
    close, then the sha256 of the handle."""
    path = os.path.join(storage.job_uri, f"chk-{cid}", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return FileHandle.of(f"chk-{cid}/{name}", data)


class Pool(Strategy):
    name = "pool"
    before = True

    def __init__(self, directory: str, fast_switch: bool) -> None:
        super().__init__(directory, fast_switch)
        self.storage = CheckpointStorage(directory, "job")
        if self.before:
            self.write: Callable[[int, str, bytes], FileHandle] = functools.partial(
                write_before, self.storage
            )
        else:
            self.write = self.storage.write_file

    def start(self, cid: int, state: bytes, channel: SubtaskContribution,
              done: Callable[[], None]) -> None:  # fmt: skip
        back = self._join(2, done)
        self.pool.submit(self.write, cid, "state", state).add_done_callback(back)
        self.pool.submit(lay_out_group, cid, [channel], self.write,
                         "channel").add_done_callback(back)  # fmt: skip


class OneCall(Pool):
    """What the worker does now: the channel-state file laid out and its regions hashed on the
    loop thread (``ChannelStateFileWriter`` below 1 MiB), each file one pool job."""

    name = "one-call"
    before = False

    def start(self, cid: int, state: bytes, channel: SubtaskContribution,
              done: Callable[[], None]) -> None:  # fmt: skip
        back = self._join(2, done)
        self.pool.submit(self.write, cid, "state", state).add_done_callback(back)
        layout = lay_out(cid, [channel])
        self.pool.submit(write_layout, layout, self.write, "channel").add_done_callback(back)


class LoopHash(Strategy):
    name = "loop-hash"

    def start(self, cid: int, state: bytes, channel: SubtaskContribution,
              done: Callable[[], None]) -> None:  # fmt: skip
        back = self._join(2, done)
        hashlib.sha256(state).hexdigest()
        parts = [c for side in (channel.input, channel.output) for cs in side.values() for c in cs]
        data = b"".join(parts)
        hashlib.sha256(data).hexdigest()  # the region's and the file's digest
        base = os.path.join(self.directory, "job", f"chk-{cid}")
        self.pool.submit(write_one_call, base + "/state", state).add_done_callback(back)
        self.pool.submit(write_one_call, base + "/channel", data).add_done_callback(back)


class Process(Strategy):
    name = "process"

    def __init__(self, directory: str, fast_switch: bool) -> None:
        super().__init__(directory, fast_switch)
        ours, theirs = socket.socketpair()
        context = multiprocessing.get_context("spawn")
        self.process = context.Process(target=writer_process, args=(theirs, directory))
        self.process.start()
        theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.queue: asyncio.Queue[tuple[bytes, bytes]] | None = None
        self.sender: asyncio.Task[None] | None = None
        self.waiting: set[asyncio.Future[None]] = set()

    async def _send_all(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.queue is not None
        while True:
            name, data = await self.queue.get()
            await loop.sock_sendall(self.sock, _HEADER.pack(len(name), len(data)) + name)
            await loop.sock_sendall(self.sock, data)
            reply = b""
            while len(reply) < 32:
                reply += await loop.sock_recv(self.sock, 32 - len(reply))
            self.queue.task_done()

    def start(self, cid: int, state: bytes, channel: SubtaskContribution,
              done: Callable[[], None]) -> None:  # fmt: skip
        if self.queue is None:
            self.queue = asyncio.Queue()
            self.sender = asyncio.ensure_future(self._send_all())
        parts = [c for side in (channel.input, channel.output) for cs in side.values() for c in cs]
        os.makedirs(os.path.join(self.directory, f"chk-{cid}"), exist_ok=True)
        self.queue.put_nowait((f"chk-{cid}/state".encode(), state))
        self.queue.put_nowait((f"chk-{cid}/channel".encode(), b"".join(parts)))
        queue = self.queue

        async def wait() -> None:
            await queue.join()
            done()

        self.waiting.add(asyncio.ensure_future(wait()))

    def close(self) -> None:
        if self.sender is not None:
            self.sender.cancel()
        self.sock.close()
        self.process.join(5)
        super().close()


class NoCheckpoints(Strategy):
    name = "off"

    def start(self, cid: int, state: bytes, channel: SubtaskContribution,
              done: Callable[[], None]) -> None:  # fmt: skip
        done()


async def run_one(strategy: Strategy, seconds: float, size: int) -> dict[str, float]:
    state = os.urandom(4096)
    chunk = os.urandom(32 * 1024)
    n = max(1, size // len(chunk))
    channel = SubtaskContribution(
        "map-0", {(0, 0): [chunk] * (n // 2)}, {(0, 0): [chunk] * (n - n // 2)}
    )
    loop = asyncio.get_running_loop()
    durations: list[float] = []
    switches: list[int] = []
    calls: list[int] = []
    records = 0
    stop = loop.time() + seconds
    cid = [0]
    busy = [False]

    def trigger() -> None:
        if loop.time() >= stop:
            return
        loop.call_later(PERIOD_S, trigger)
        if busy[0]:
            return
        busy[0] = True
        cid[0] += 1
        before = voluntary_switches(strategy.native_ids)
        released = _released[0]
        started = time.perf_counter()

        def done() -> None:
            durations.append((time.perf_counter() - started) * 1000)
            switches.append(voluntary_switches(strategy.native_ids) - before)
            calls.append(_released[0] - released)
            busy[0] = False

        strategy.start(cid[0], state, channel, done)

    loop.call_later(PERIOD_S, trigger)
    t0 = time.perf_counter()
    while loop.time() < stop:
        spin(0.001)  # the user function, holding the GIL
        records += 1
        await asyncio.sleep(0)  # a slice boundary: the loop polls
    elapsed = time.perf_counter() - t0
    while busy[0]:
        await asyncio.sleep(0.001)
    durations.sort()
    return {
        "n": len(durations),
        "p50": statistics.median(durations) if durations else 0.0,
        "p90": durations[int(0.9 * (len(durations) - 1))] if durations else 0.0,
        "switches": statistics.median(switches) if switches else 0.0,
        "calls": statistics.median(calls) if calls else 0.0,
        "records_per_s": records / elapsed,
    }


STRATEGIES: dict[str, tuple[type[Strategy], bool]] = {
    "pool": (Pool, False),
    "one-call": (OneCall, False),
    "loop-hash": (LoopHash, False),
    "process": (Process, False),
    "pool+switch": (Pool, True),
    "one-call+switch": (OneCall, True),
    "loop-hash+switch": (LoopHash, True),
    "off": (NoCheckpoints, False),
}


def user_cost(rounds: int, seconds: float, size: int, directory: str) -> None:
    """The price of the lowered switch interval for user code, at its worst: the I/O pool
    writes files back to back (so the interval stays lowered) while the main thread runs a
    fixed amount of pure-Python work per record; records per second with the worker's 1 ms
    interval against ``IOPool``'s 0.1 ms, interleaved."""
    storage = CheckpointStorage(directory, "user-cost")
    data = os.urandom(size)
    rates: dict[str, list[float]] = {"1 ms": [], "0.1 ms (IOPool)": []}
    for _ in range(rounds):
        for label in rates:
            pool: concurrent.futures.ThreadPoolExecutor = (
                IOPool(1) if "IOPool" in label else concurrent.futures.ThreadPoolExecutor(1)
            )
            stop = threading.Event()

            def write_forever(pool: concurrent.futures.ThreadPoolExecutor = pool,
                              stop: threading.Event = stop) -> None:  # fmt: skip
                if not stop.is_set():
                    pool.submit(storage.write_file, 1, "f", data).add_done_callback(
                        lambda _: write_forever()
                    )

            write_forever()
            records, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                x = 0
                for i in range(20_000):  # about 1 ms of pure Python
                    x += i
                records += 1
            rates[label].append(records / (time.perf_counter() - t0))
            stop.set()
            pool.shutdown()
    base = statistics.median(rates["1 ms"])
    for label, values in rates.items():
        rate = statistics.median(values)
        print(f"user code beside back-to-back writes, switch interval {label:<16} "
              f"{rate:7.0f} rec/s  {rate / base:.3f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--size", type=int, default=400 * 1024, help="channel-state bytes")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--count", action="store_true",
                        help="count the I/O threads' GIL-releasing calls (slows them)")  # fmt: skip
    parser.add_argument("--user-cost", action="store_true",
                        help="measure the short interval's cost to user code instead")  # fmt: skip
    args = parser.parse_args()
    if args.user_cost:
        sys.setswitchinterval(WORKER_SWITCH_INTERVAL_S)
        with tempfile.TemporaryDirectory(dir=os.environ.get("UNDERTOW_BENCH_DIR")) as directory:
            user_cost(args.rounds, args.seconds, args.size, directory)
        return
    if args.count:
        threading.setprofile(count_releasing)
    sys.setswitchinterval(WORKER_SWITCH_INTERVAL_S)
    names = args.strategies.split(",")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(dir=os.environ.get("UNDERTOW_BENCH_DIR")) as directory:
        for round_ in range(args.rounds):
            for name in names:
                cls, fast = STRATEGIES[name]
                strategy = cls(os.path.join(directory, f"{name}-{round_}"), fast)
                try:
                    result = asyncio.run(run_one(strategy, args.seconds, args.size))
                finally:
                    strategy.close()
                results[name].append(result)
                print(f"round {round_ + 1} {name:<16} n={result['n']:>3.0f} "
                      f"p50 {result['p50']:6.2f} ms  p90 {result['p90']:6.2f} ms  "
                      f"io ctx switches {result['switches']:4.0f}  "
                      f"releasing calls {result['calls']:3.0f}  "
                      f"{result['records_per_s']:6.0f} rec/s", flush=True)  # fmt: skip
    off_rows = results.get("off", [])
    off = statistics.median(r["records_per_s"] for r in off_rows) if off_rows else None
    print(f"\n{'strategy':<16} {'p50 ms':>7} {'p90 ms':>7} {'ctx sw':>7} {'calls':>6} "
          f"{'rec/s':>7} {'vs off':>7}")  # fmt: skip
    for name in names:
        rows = results[name]
        rate = statistics.median(r["records_per_s"] for r in rows)
        print(f"{name:<16} {statistics.median(r['p50'] for r in rows):7.2f} "
              f"{statistics.median(r['p90'] for r in rows):7.2f} "
              f"{statistics.median(r['switches'] for r in rows):7.0f} "
              f"{statistics.median(r['calls'] for r in rows):6.0f} {rate:7.0f} "
              f"{'-' if not off else f'{rate / off:.3f}x':>7}")  # fmt: skip


if __name__ == "__main__":
    main()
