"""The control connection's sends from other threads (``send_from_any_thread``).

A worker's I/O thread acknowledges a checkpoint straight onto the control connection, so the
acknowledgement leaves while the worker's loop is stuck in a task's call. Each test holds one
end of a socket pair as the asyncio connection and reads the other end with a plain blocking
socket, on the loop thread itself where the point is that the loop does not turn.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import threading

from undertow.runtime.control.connection import ControlConnection
from undertow.runtime.network.framing import _U32


def read_message(sock: socket.socket, timeout_s: float) -> object:
    """One frame's message from the blocking end ``sock`` (``TimeoutError`` if none comes)."""
    sock.settimeout(timeout_s)

    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "the connection ended"
            data += chunk
        return data

    (length,) = _U32.unpack(exactly(4))
    return pickle.loads(exactly(length))


async def connection_to(sock: socket.socket) -> ControlConnection:
    reader, writer = await asyncio.open_connection(sock=sock)
    return ControlConnection(reader, writer, "peer", 1 << 26, any_thread=True)


def test_a_message_from_another_thread_leaves_while_the_loop_is_blocked() -> None:
    ours, peer = socket.socketpair()

    async def run() -> object:
        conn = await connection_to(ours)
        sender = threading.Thread(target=conn.send_from_any_thread, args=(("ack", 7),))
        sender.start()
        try:
            # The loop thread blocks here, in a read, and never turns: only a write made by
            # the sending thread itself can arrive (through the loop it would come after 5 s)
            return read_message(peer, 5.0)
        finally:
            sender.join()
            conn.close()

    try:
        assert asyncio.run(run()) == ("ack", 7)
    finally:
        peer.close()


def test_what_the_socket_did_not_take_goes_before_the_loops_next_message() -> None:
    """A large message from another thread fills the socket's buffers: its rest waits for the
    loop, and a message the loop sends meanwhile follows it, both whole."""
    ours, peer = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    big = ("state", bytes(range(256)) * 4096)  # 1 MiB: far more than the buffers hold

    async def run() -> list[object]:
        conn = await connection_to(ours)
        sender = threading.Thread(target=conn.send_from_any_thread, args=(big,))
        sender.start()
        sender.join()  # returned at once: the rest is queued for the loop
        assert conn._behind, "the socket took 1 MiB at once: the test needs smaller buffers"
        conn.send(("finished", 1))  # the loop thread, before the queued rest was flushed
        received: list[object] = []
        reading = threading.Thread(
            target=lambda: received.extend(read_message(peer, 10.0) for _ in range(2))
        )
        reading.start()
        while reading.is_alive():
            await asyncio.sleep(0.01)
        conn.close()
        return received

    try:
        assert asyncio.run(run()) == [big, ("finished", 1)]
    finally:
        peer.close()


def test_after_close_another_thread_sends_nothing() -> None:
    ours, peer = socket.socketpair()

    async def run() -> None:
        conn = await connection_to(ours)
        conn.close()
        sender = threading.Thread(target=conn.send_from_any_thread, args=(("late", 1),))
        sender.start()
        sender.join()
        await asyncio.sleep(0.05)  # the transport closes its end

    try:
        asyncio.run(run())
        peer.settimeout(5.0)
        assert peer.recv(100) == b""  # the end of the stream, and nothing before it
    finally:
        peer.close()
