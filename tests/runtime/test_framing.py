"""Frames and the HMAC handshake, over loopback sockets and in-memory stream readers."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from undertow.core.errors import AuthenticationError, NetworkError
from undertow.runtime.network import framing
from undertow.runtime.network.framing import (
    client_handshake,
    frame,
    frame_header,
    read_frame,
    server_handshake,
)

T = TypeVar("T")
SECRET = b"job-secret"


def _run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, 10)

    return asyncio.run(bounded())


def _reader(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return reader


# -- frames ---------------------------------------------------------------------------------------


def test_frames_round_trip_and_a_clean_end_is_none() -> None:
    async def main() -> list[bytes | None]:
        reader = _reader(frame(b"hello") + frame(b"") + frame_header(3) + b"abc")
        return [await read_frame(reader, 100, "peer") for _ in range(4)]

    assert _run(main()) == [b"hello", b"", b"abc", None]


def test_frame_header_is_a_big_endian_u32() -> None:
    assert frame_header(258) == b"\x00\x00\x01\x02"
    assert frame(b"xy") == b"\x00\x00\x00\x02xy"


def test_oversized_frame_raises_naming_the_limit_without_reading_it() -> None:
    async def main() -> asyncio.StreamReader:
        reader = _reader(struct.pack(">I", 5000) + b"x" * 10)
        with pytest.raises(NetworkError) as info:
            await read_frame(reader, 4096, "worker 3")
        message = str(info.value)
        assert "5000 bytes" in message
        assert "worker 3" in message
        assert "undertow.network.max-frame-size (4096 bytes)" in message
        return reader

    reader = _run(main())
    assert not reader.at_eof(), "the body was not consumed"


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    async def main() -> bytes | None:
        return await read_frame(_reader(frame(b"z" * 64)), 64, "peer")

    assert _run(main()) == b"z" * 64


@pytest.mark.parametrize(
    ("data", "match"),
    [(b"\x00\x00", "inside a frame header"), (frame_header(10) + b"abc", r"\(3 of 10 bytes\)")],
)
def test_truncated_frames_raise(data: bytes, match: str) -> None:
    async def main() -> None:
        with pytest.raises(NetworkError, match=match):
            await read_frame(_reader(data), 100, "peer")

    _run(main())


# -- handshake over loopback ----------------------------------------------------------------------


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[Any]]


async def _serve_once(handler: Handler) -> tuple[asyncio.Server, int, asyncio.Future[Any]]:
    """A loopback server whose first connection runs ``handler``; its outcome goes to the future."""
    outcome: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            outcome.set_result(await handler(reader, writer))
        except Exception as err:
            outcome.set_exception(err)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1]), outcome


def test_handshake_with_the_same_secret_returns_hello() -> None:
    async def main() -> int:
        server, port, outcome = await _serve_once(
            lambda r, w: server_handshake(r, w, SECRET)
        )  # fmt: skip
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await client_handshake(reader, writer, SECRET, hello=42)
            writer.close()
            return int(await outcome)

    assert _run(main()) == 42


def test_wrong_secret_fails_on_both_sides() -> None:
    async def main() -> None:
        server, port, outcome = await _serve_once(lambda r, w: server_handshake(r, w, SECRET))
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            with pytest.raises(AuthenticationError, match="server closed"):
                await client_handshake(reader, writer, b"other secret", hello=1)
            with pytest.raises(AuthenticationError, match="wrong job secret"):
                await outcome
            writer.close()

    _run(main())


def test_client_rejects_a_server_that_does_not_know_the_secret() -> None:
    async def impostor(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"n" * 16)
        await reader.readexactly(16 + 4 + 32)
        writer.write(b"m" * 32)  # a MAC it cannot compute
        await writer.drain()

    async def main() -> None:
        server, port, outcome = await _serve_once(impostor)
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            with pytest.raises(AuthenticationError, match="server failed the HMAC"):
                await client_handshake(reader, writer, SECRET, hello=1)
            await outcome
            writer.close()

    _run(main())


def test_server_never_parses_frames_from_an_unauthenticated_peer() -> None:
    """Garbage where the MAC belongs, then a frame: the handshake fails on the MAC."""

    async def main() -> None:
        server, port, outcome = await _serve_once(lambda r, w: server_handshake(r, w, SECRET))
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await reader.readexactly(16)
            writer.write(b"\x00" * (16 + 4 + 32) + frame(b"B" + b"\x00" * 20))
            with pytest.raises(AuthenticationError):
                await outcome
            assert await reader.read() == b"", "the server sent nothing more and closed"
            writer.close()

    _run(main())


def test_stalled_peer_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "HANDSHAKE_TIMEOUT_S", 0.05)

    async def main() -> None:
        server, port, outcome = await _serve_once(lambda r, w: server_handshake(r, w, SECRET))
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            with pytest.raises(AuthenticationError, match="stalled"):
                await outcome  # the client never answers the nonce
            writer.close()

    _run(main())
