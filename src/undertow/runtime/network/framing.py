"""Length-prefixed frames and the HMAC handshake that every connection starts with.

The handshake is mutual and comes before any frame is parsed: each side proves it holds the
attempt's secret (:func:`attempt_secret`, derived from the job's secret and the attempt
number), so a worker of an older attempt is fenced off both planes before it can send a frame.

A peer that fails it is disconnected; nothing it sent is decoded. Frames are
``[u32 length][body]``; a length above the configured maximum closes the connection with a
:class:`~undertow.core.errors.NetworkError` instead of allocating it.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import struct

from undertow.core.errors import AuthenticationError, NetworkError
from undertow.core.types import AttemptNumber

_U32 = struct.Struct(">I")
_NONCE = 16
_MAC = 32
HANDSHAKE_TIMEOUT_S = 10.0


def _mac(secret: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, b"".join(parts), hashlib.sha256).digest()


def attempt_secret(job_secret: bytes, attempt: AttemptNumber) -> bytes:
    """The key the workers of ``attempt`` authenticate with (module docstring): keys of two
    attempts differ, and neither reveals the job's secret."""
    return _mac(job_secret, b"attempt", _U32.pack(attempt))


async def server_handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, secret: bytes
) -> int:
    """Authenticate a connecting peer; returns its ``hello`` value."""
    nonce_s = os.urandom(_NONCE)
    writer.write(nonce_s)
    await writer.drain()
    try:
        data = await asyncio.wait_for(reader.readexactly(_NONCE + 4 + _MAC), HANDSHAKE_TIMEOUT_S)
    except (asyncio.IncompleteReadError, asyncio.TimeoutError) as err:
        raise AuthenticationError("peer closed or stalled during the handshake") from err
    nonce_c, hello_raw, mac = data[:_NONCE], data[_NONCE : _NONCE + 4], data[_NONCE + 4 :]
    if not hmac.compare_digest(mac, _mac(secret, b"client", nonce_s, nonce_c, hello_raw)):
        raise AuthenticationError("peer failed the HMAC challenge (wrong job secret)")
    writer.write(_mac(secret, b"server", nonce_c, nonce_s))
    await writer.drain()
    return int(_U32.unpack(hello_raw)[0])


async def client_handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, secret: bytes, hello: int
) -> None:
    """Prove knowledge of ``secret`` to the server and check that it knows it too."""
    try:
        nonce_s = await asyncio.wait_for(reader.readexactly(_NONCE), HANDSHAKE_TIMEOUT_S)
        nonce_c = os.urandom(_NONCE)
        hello_raw = _U32.pack(hello)
        writer.write(nonce_c + hello_raw + _mac(secret, b"client", nonce_s, nonce_c, hello_raw))
        await writer.drain()
        answer = await asyncio.wait_for(reader.readexactly(_MAC), HANDSHAKE_TIMEOUT_S)
    except (asyncio.IncompleteReadError, asyncio.TimeoutError) as err:
        raise AuthenticationError("server closed or stalled during the handshake") from err
    if not hmac.compare_digest(answer, _mac(secret, b"server", nonce_c, nonce_s)):
        raise AuthenticationError("server failed the HMAC challenge (wrong job secret)")


def frame(body: bytes) -> bytes:
    return _U32.pack(len(body)) + body


def frame_header(length: int) -> bytes:
    return _U32.pack(length)


async def read_frame(reader: asyncio.StreamReader, max_size: int, peer: str) -> bytes | None:
    """Read one frame body, or ``None`` at a clean end of stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise NetworkError(f"connection to {peer} closed inside a frame header") from err
    (length,) = _U32.unpack(head)
    if length > max_size:
        raise NetworkError(
            f"frame of {length} bytes from {peer} exceeds undertow.network.max-frame-size "
            f"({max_size} bytes); closing the connection"
        )
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as err:
        raise NetworkError(
            f"connection to {peer} closed inside a frame ({len(err.partial)} of {length} bytes)"
        ) from err
