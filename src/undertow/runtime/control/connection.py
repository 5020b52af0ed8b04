"""A control connection: pickled messages in frames over an authenticated TCP stream.

A worker bounds how long its messages may go unacknowledged by the JobMaster's host
(:func:`limit_unacknowledged_time`, ``heartbeat.timeout``): its heartbeats are always under
way, so behind a partition the kernel ends the connection within the timeout, ``recv`` raises a
:class:`~undertow.core.errors.NetworkError`, and the worker stops its tasks and exits. That is
the worker's half of fencing (the JobMaster's is the attempt number and key): a worker that
lost its JobMaster does not run on, reading sources and writing to checkpoint storage or sinks,
next to the newer attempt the JobMaster starts meanwhile.

Threading: one event loop; ``send`` buffers without waiting (control traffic is small, except
``print`` and ``execute_and_collect`` records, which the JobMaster consumes as they arrive).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import socket
import sys
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
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.peer = peer
        self.max_frame_size = max_frame_size
        self.closed = False

    def send(self, message: Any) -> None:
        if self.closed or self.writer.is_closing():
            return
        body = serialize_object(message)
        self.writer.writelines([frame_header(len(body)), body])

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
        self.closed = True
        with contextlib.suppress(Exception):
            self.writer.close()
