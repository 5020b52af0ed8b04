"""A control connection: pickled messages in frames over an authenticated TCP stream.

Threading: one event loop; ``send`` buffers without waiting (control traffic is small, except
``print`` and ``execute_and_collect`` records, which the JobMaster consumes as they arrive).
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
from typing import Any

from undertow.runtime.network.buffer import serialize_object
from undertow.runtime.network.framing import frame_header, read_frame


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
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    async def recv(self) -> Any | None:
        """The next message, or ``None`` when the peer closed the connection."""
        body = await read_frame(self.reader, self.max_frame_size, self.peer)
        return None if body is None else pickle.loads(body)

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(Exception):
            self.writer.close()
