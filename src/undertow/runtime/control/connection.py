"""A control connection: pickled messages in frames over an authenticated TCP stream.

A worker bounds how long its messages may go unacknowledged by the JobMaster's host
(:func:`limit_unacknowledged_time`, ``heartbeat.timeout``): its heartbeats are always under
way, so behind a partition the kernel ends the connection within the timeout, ``recv`` raises a
:class:`~undertow.core.errors.NetworkError`, and the worker stops its tasks and exits. That is
the worker's half of fencing (the JobMaster's is the attempt number and key): a worker that
lost its JobMaster does not run on, reading sources and writing to checkpoint storage or sinks,
next to the newer attempt the JobMaster starts meanwhile.

Threading: one event loop; ``send`` buffers without waiting (control traffic is small, except
``print`` and ``execute_and_collect`` records). ``send_from_any_thread`` also from other
threads (a worker's I/O threads' acknowledgements): frames stay whole and in lock order. The
longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import socket
import sys
import threading
from typing import Any

from undertow.core.errors import NetworkError
from undertow.runtime.network.buffer import serialize_object
from undertow.runtime.network.framing import frame_header, read_frame

log = logging.getLogger(__name__)


def limit_unacknowledged_time(writer: asyncio.StreamWriter, timeout_s: float) -> bool:
    """End the connection of ``writer`` when data it sent stays unacknowledged by the peer's
    host for ``timeout_s`` (Linux ``TCP_USER_TIMEOUT``); False where the platform has none
    (the connection then lasts until TCP's own retransmissions give up, many minutes)."""
    sock = writer.get_extra_info("socket")
    if sock is None or not sys.platform.startswith("linux"):
        log.debug("no TCP_USER_TIMEOUT here: a lost JobMaster is noticed by TCP only")
        return False
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(1, round(timeout_s * 1000)))
    return True


class ControlConnection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: str,
        max_frame_size: int,
        *,
        any_thread: bool = False,
    ) -> None:
        """``any_thread``: other threads will call ``send_from_any_thread`` (needs a running
        loop and a socket; the connection then holds a second descriptor until ``close``)."""
        self.reader = reader
        self.writer = writer
        self.peer = peer
        self.max_frame_size = max_frame_size
        self.closed = False
        #: Orders ``send`` and ``send_from_any_thread``; guards ``_behind`` and ``_fd``.
        self._lock = threading.Lock()
        #: Frames (or a frame's rest) another thread could not write at once: the loop
        #: writes them before anything else (``_flush_behind``, or the next ``send``).
        self._behind: list[bytes] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = -1
        #: A duplicate of the socket's descriptor, owned here (closed by ``close``), so that a
        #: write from another thread never reaches a descriptor number reused after the
        #: transport closed its own. -1: no socket (other threads' sends go through the loop).
        self._fd = -1
        sock = writer.get_extra_info("socket") if any_thread else None
        if sock is not None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._fd = os.dup(sock.fileno())

    def send(self, message: Any) -> None:
        """Queue ``message`` on the transport. Loop thread only."""
        if self.closed or self.writer.is_closing():
            return
        body = serialize_object(message)
        with self._lock:
            if self._behind:
                self.writer.writelines(self._behind)
                self._behind = []
            self.writer.writelines([frame_header(len(body)), body])

    def send_from_any_thread(self, message: Any) -> None:
        """``send`` from any thread. Off the loop thread the frame is written straight onto
        the socket (one non-blocking ``write``) when the transport has nothing queued; what
        the socket does not take waits in ``_behind`` for the loop. A failed write is left to
        the loop's side of the connection to notice (``recv``)."""
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            self.send(message)
            return
        body = serialize_object(message)
        frame = frame_header(len(body)) + body
        with self._lock:
            if self.closed or self.writer.is_closing():
                return
            if not self._behind and self.writer.transport.get_write_buffer_size() == 0:
                # Nothing of the loop's is queued, and the loop writes the socket itself only
                # while something is (its ``send`` holds this lock): this write is next in line.
                try:
                    written = os.write(self._fd, frame)
                except BlockingIOError:
                    written = 0
                except OSError:
                    return
                if written == len(frame):
                    return
                frame = frame[written:]
            self._behind.append(frame)
        with contextlib.suppress(RuntimeError):  # the loop closed: the connection is over
            loop.call_soon_threadsafe(self._flush_behind)

    def _flush_behind(self) -> None:
        with self._lock:
            if self._behind and not (self.closed or self.writer.is_closing()):
                self.writer.writelines(self._behind)
            self._behind = []

    async def drain(self) -> None:
        with contextlib.suppress(OSError):  # reset, or timed out (limit_unacknowledged_time)
            await self.writer.drain()

    async def recv(self) -> Any | None:
        """The next message, or ``None`` when the peer closed the connection; a
        :class:`NetworkError` naming the peer when the connection failed (reset, timed out)."""
        try:
            body = await read_frame(self.reader, self.max_frame_size, self.peer)
        except OSError as err:
            raise NetworkError(f"control connection to {self.peer} failed: {err!r}") from err
        return None if body is None else pickle.loads(body)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        with contextlib.suppress(Exception):
            self.writer.close()
