"""The data connection's reader: asyncio's stream reader against the frame reader, one run.

A sender process writes BUFFER frames (``--frame-kib`` each, 1 MiB by default as the columnar
job's buffers) over loopback TCP at ``--mib-per-s``, each stamped with the instant it was due
(a late sender counts its lag). The receiver, an asyncio loop in this process, reads them
either way, alternating round by round:

- ``stream``: what the transport did up to e261acd: ``asyncio.StreamReader`` and
  ``framing.read_frame`` for the body, then the BUFFER payload sliced out of it (a copy);
- ``protocol``: what it does since: a ``BufferedProtocol`` around
  :class:`~undertow.runtime.network.frame_reader.FrameReader`, frames dispatched in the
  socket's callback, a large payload the ``bytearray`` the socket was read into.

Beside the reader, a busy task runs slices of ``--slice-ms`` of CPU and yields between them, as
a worker's subtasks do: every loop turn a reader needs waits for a slice. Per round: the
receiver's CPU per MiB (this process's CPU less the busy task's, which it times), and each
frame's latency from its due instant to the reader's hand-over (p50, p99; the first tenth of
the frames left out). Prints every round, medians, the ratios
protocol / stream and one ``target`` line per figure (no worse: ratio <= 1.0).

Usage::

    python benchmarks/tcp_frames.py [--rounds 3] [--frames 400] [--frame-kib 1024]
        [--mib-per-s 100] [--slice-ms 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import struct
import time
from typing import Any

from undertow.runtime.network.data_frames import HEAD_SIZE, buffer_head
from undertow.runtime.network.frame_reader import FrameReader
from undertow.runtime.network.framing import frame_header, read_frame

_STAMP = struct.Struct(">q")


def _send(port: int, frames: int, frame_bytes: int, mib_per_s: float) -> None:
    """The sender (a child process): ``frames`` frames paced at ``mib_per_s``."""
    payload = bytearray(os.urandom(frame_bytes - HEAD_SIZE))
    head = frame_header(frame_bytes) + buffer_head(0, 0, 0, 0)
    gap_ns = int(frame_bytes / (mib_per_s * (1 << 20)) * 1e9)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        start = time.monotonic_ns()
        for i in range(frames):
            due = start + i * gap_ns
            now = time.monotonic_ns()
            if now < due:
                time.sleep((due - now) / 1e9)
            payload[:8] = _STAMP.pack(min(due, time.monotonic_ns()))
            sock.sendall(head)
            sock.sendall(payload)


class _Received:
    def __init__(self, frames: int) -> None:
        self.latencies_ms: list[float] = []
        self.frames = frames
        self.done = asyncio.get_running_loop().create_future()

    def got(self, payload: Any) -> None:
        (stamp,) = _STAMP.unpack_from(payload, 0)
        self.latencies_ms.append((time.monotonic_ns() - stamp) / 1e6)
        if len(self.latencies_ms) == self.frames and not self.done.done():
            self.done.set_result(None)


class _Protocol(asyncio.BufferedProtocol):
    def __init__(self, received: _Received, max_frame: int) -> None:
        self.received = received
        self.reader = FrameReader(max_frame, "sender", HEAD_SIZE)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        for _head, payload in self.reader.buffer_updated(nbytes):
            self.received.got(payload)


async def _busy(slice_s: float, stop: asyncio.Event, spent: list[float]) -> None:
    """A subtask's slices: ``slice_s`` of CPU, a loop turn, again; its CPU goes to ``spent``."""
    while not stop.is_set():
        c0 = time.process_time()
        end = time.perf_counter() + slice_s
        while time.perf_counter() < end:
            pass
        spent[0] += time.process_time() - c0
        await asyncio.sleep(0)


async def _round(way: str, args: argparse.Namespace) -> tuple[float, float, float]:
    frame_bytes = args.frame_kib * 1024
    received = _Received(args.frames)
    max_frame = 2 * frame_bytes

    async def on_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (body := await read_frame(reader, max_frame, "sender")) is not None:
            received.got(body[HEAD_SIZE:])  # the old decode_frame's payload slice

    loop = asyncio.get_running_loop()
    if way == "stream":
        server = await asyncio.start_server(on_stream, "127.0.0.1", 0)
    else:
        server = await loop.create_server(lambda: _Protocol(received, max_frame), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    stop, spent = asyncio.Event(), [0.0]
    busy = loop.create_task(_busy(args.slice_ms / 1000.0, stop, spent))
    sender = multiprocessing.get_context("fork").Process(
        target=_send, args=(port, args.frames, frame_bytes, args.mib_per_s)
    )
    c0 = time.process_time()
    sender.start()
    await asyncio.wait_for(received.done, 120)
    cpu = time.process_time() - c0 - spent[0]
    stop.set()
    await busy
    sender.join()
    server.close()
    lat = sorted(received.latencies_ms[len(received.latencies_ms) // 10 :])  # warm-up out
    mib = args.frames * frame_bytes / (1 << 20)
    return cpu * 1e6 / mib, lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--frame-kib", type=int, default=1024)
    parser.add_argument("--mib-per-s", type=float, default=100.0)
    parser.add_argument("--slice-ms", type=float, default=1.0)
    args = parser.parse_args()
    utc = time.strftime("%H:%M:%S", time.gmtime())
    print(f"load {os.getloadavg()[0]:.1f} at the start, UTC {utc}")
    results: dict[str, list[tuple[float, float, float]]] = {"stream": [], "protocol": []}
    for r in range(args.rounds):
        order = ("stream", "protocol") if r % 2 == 0 else ("protocol", "stream")
        for way in order:
            cpu, p50, p99 = asyncio.run(_round(way, args))
            results[way].append((cpu, p50, p99))
            print(f"round {r} {way:<8} receiver CPU {cpu:8.0f} us/MiB  latency p50 {p50:7.2f} "
                  f"ms  p99 {p99:7.2f} ms  (load {os.getloadavg()[0]:.1f})")  # fmt: skip
    med = {way: [statistics.median(v[i] for v in rows) for i in range(3)]
           for way, rows in results.items()}  # fmt: skip
    names = ("receiver CPU us/MiB", "latency p50 ms", "latency p99 ms")
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    print(f"{'median':<22}{'stream':>12}{'protocol':>12}{'protocol/stream':>18}")
    for i, name in enumerate(names):
        s, p = med["stream"][i], med["protocol"][i]
        print(f"{name:<22}{s:>12.2f}{p:>12.2f}{p / s:>17.2f}x")
    for i, key in enumerate(("cpu", "p50", "p99")):
        ratio = med["protocol"][i] / med["stream"][i]
        verdict = "met" if ratio <= 1.0 else "missed"
        print(
            f"target tcp-reader-{key}: {ratio:.2f}x the stream reader's (goal <= 1.0x): {verdict}"
        )


if __name__ == "__main__":
    main()
