"""Cutting a data connection's byte stream into frames, in memory the reader owns (sans-I/O).

:class:`FrameReader` has the shape of asyncio's ``BufferedProtocol``: :meth:`get_buffer` says
where the socket's next bytes go, :meth:`buffer_updated` takes how many came and returns the
frames they completed. Small frames land in a scratch buffer, several per read, and are copied
out; the body of a large frame (past ``head_size`` bytes) is read straight into a ``bytearray``
of its own, which becomes the frame's payload: the socket's bytes are copied once, by the
kernel, instead of through a stream reader's buffer, ``bytes`` and a slice.

Invariants: frames come out whole and in stream order; a length above ``max_frame_size`` raises
:class:`~undertow.core.errors.NetworkError` before anything is allocated for it.
Threading: one caller (the connection's loop thread). Cost: per read, one ``struct`` unpack and
two small copies per frame in the scratch buffer; per large frame one allocation.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import struct

from undertow.core.errors import NetworkError

_U32 = struct.Struct(">I")
#: The scratch buffer's size: every frame whose body goes past ``head_size + LARGE`` bytes is
#: read into a buffer of its own; the scratch always has room for a whole smaller one.
SCRATCH = 256 * 1024
LARGE = 64 * 1024


class FrameReader:
    """Frames ``[u32 length][body]`` of one connection, each returned as ``(head, payload)``:
    the body's first ``head_size`` bytes (all of a shorter body) and the rest (``b""`` if
    none). ``head`` is ``bytes``; ``payload`` is ``bytes`` or, for a large body, the
    ``bytearray`` the socket was read into (the caller owns it; nothing here touches it again).

    Lifecycle: ``get_buffer`` -> write into it -> ``buffer_updated(n)``, repeated; at the end of
    the stream :meth:`check_end` says whether it ended between frames.
    """

    __slots__ = ("_end", "_filled", "_head", "_large", "_max", "_peer", "_scratch", "_size",
                 "_start", "_view")  # fmt: skip

    def __init__(self, max_frame_size: int, peer: str, head_size: int) -> None:
        self._max = max_frame_size
        self._peer = peer
        self._size = head_size
        self._scratch = bytearray(SCRATCH)
        self._view = memoryview(self._scratch)
        self._start = 0  # the scratch's unparsed bytes are [_start, _end)
        self._end = 0
        self._head = b""  # the head of the large frame being read
        self._large: bytearray | None = None
        self._filled = 0  # bytes of ``_large`` read so far

    def get_buffer(self) -> memoryview:
        """Where the next bytes go (never empty): the rest of a large frame's body, else the
        scratch's free tail (unparsed bytes moved to its start first when the tail is short)."""
        large = self._large
        if large is not None:
            return memoryview(large)[self._filled :]
        if self._start == self._end:
            self._start = self._end = 0
        elif SCRATCH - self._end < 4 + self._size + LARGE:
            kept = self._end - self._start
            self._view[:kept] = self._view[self._start : self._end]
            self._start, self._end = 0, kept
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> list[tuple[bytes, bytes | bytearray]]:
        """The frames completed by the ``nbytes`` just written into :meth:`get_buffer`'s view.

        Raises :class:`NetworkError` naming the peer for a frame longer than the maximum; the
        reader is unusable afterwards (the connection is closed). Whole frames ahead of it in
        the same read are not returned, on purpose: the error fails the worker (its tasks are
        cancelled and the JobMaster fails the attempt, ``WorkerFailed``), so whatever they
        carry (records, events, credits) would reach tasks being cancelled, and what those
        tasks did since the last checkpoint is undone by the restore anyway.
        """
        large = self._large
        if large is not None:
            self._filled += nbytes
            if self._filled < len(large):
                return []
            self._large = None
            return [(self._head, large)]
        self._end += nbytes
        frames: list[tuple[bytes, bytes | bytearray]] = []
        view, start, end, size = self._view, self._start, self._end, self._size
        while end - start >= 4:
            (length,) = _U32.unpack_from(view, start)
            if length > self._max:
                raise NetworkError(
                    f"frame of {length} bytes from {self._peer} exceeds "
                    f"undertow.network.max-frame-size ({self._max} bytes); closing the connection"
                )
            body = start + 4
            if end - body >= length:
                cut = body + min(length, size)
                frames.append((bytes(view[body:cut]), bytes(view[cut : body + length])))
                start = body + length
                continue
            if length - size > LARGE and end - body >= size:
                self._head = bytes(view[body : body + size])
                large = self._large = bytearray(length - size)
                got = end - body - size
                large[:got] = view[body + size : end]
                self._filled = got
                start = end
            break
        self._start, self._end = start, end
        return frames

    def check_end(self) -> None:
        """At the end of the stream: returns if it ended between frames, else raises
        :class:`NetworkError` saying where the frame was cut."""
        if self._large is not None:
            got, length = self._size + self._filled, self._size + len(self._large)
        else:
            pending = self._end - self._start
            if pending == 0:
                return
            if pending < 4:
                raise NetworkError(f"connection to {self._peer} closed inside a frame header")
            got, length = pending - 4, _U32.unpack_from(self._view, self._start)[0]
        raise NetworkError(
            f"connection to {self._peer} closed inside a frame ({got} of {length} bytes)"
        )
