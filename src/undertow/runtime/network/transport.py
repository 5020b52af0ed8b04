"""Transports: how a subpartition and an input channel talk, in-process or over TCP.

Both speak the same credit protocol, so nothing above this module knows where its peer is:
:class:`LocalLink` (same worker: method calls on the loop thread) and :class:`TcpConnection`
(one authenticated connection per pair of workers, all their channels multiplexed).
:class:`NetworkEnvironment` is the per-worker registry that creates the connections and wires
every channel once all endpoints of the worker exist.

Threading: one worker loop thread.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
from collections.abc import Callable
from typing import cast

from undertow.core import pickling
from undertow.core.errors import NetworkError
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.credit import Send
from undertow.runtime.network.data_frames import (
    BLOCKS,
    EVENT,
    HEAD_SIZE,
    PARTIAL,
    PRIORITY,
    BufferFrame,
    CreditFrame,
    ResumeFrame,
    SizeFrame,
    buffer_head,
    decode_frame,
    encode_credit,
    encode_resume,
    encode_size,
)
from undertow.runtime.network.frame_reader import FrameReader
from undertow.runtime.network.framing import client_handshake, frame_header, server_handshake
from undertow.runtime.network.input_gate import InputChannel
from undertow.runtime.network.partition import ResultSubpartition

log = logging.getLogger(__name__)


class LocalLink:
    """Both ends in this worker: deliveries and credits are direct calls."""

    __slots__ = ("consumer", "producer")

    def __init__(self, producer: ResultSubpartition, consumer: InputChannel) -> None:
        self.producer = producer
        self.consumer = consumer

    def deliver(self, send: Send) -> None:
        self.consumer.on_send(send)

    def add_credit(self, credit: int) -> None:
        self.producer.add_credit(credit)

    def resume(self) -> None:
        self.producer.resume()

    def new_buffer_size(self, size: int, max_records: int) -> None:
        self.producer.new_buffer_size(size, max_records)


class TcpConnection:
    """One connection to a peer worker, shared by all channels between the two."""

    def __init__(
        self,
        env: NetworkEnvironment,
        peer: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.env = env
        self.peer = peer
        self.reader = reader
        self.writer = writer
        self.bytes_sent = 0
        self._frames = FrameReader(env.max_frame_size, f"worker {peer}", HEAD_SIZE)
        #: Whether reading ended (a failure reported, the end of the stream, or ``close``).
        self._stopped = False
        #: Control frames (credit, resume, buffer size) of this loop step, not written yet.
        self._control: list[bytes] = []

    async def start(self) -> None:
        """Read frames from now on with :class:`_FrameProtocol` in place of the stream reader
        that ran the handshake: the bytes that reader holds already (frames the peer sent right
        after its handshake) go first, then the socket's. Nothing awaits in between, so no
        socket read can come before them."""
        transport = self._transport()
        transport.pause_reading()
        transport.set_protocol(_FrameProtocol(self))
        failed = self.reader.exception()  # the connection broke before this start
        if failed is None:
            self.reader.feed_eof()
            self._feed(await self.reader.read())  # at once: the reader is at its end
        if failed is not None or transport.is_closing():
            self._ended(failed)  # the end came to the stream reader: nothing will come here
        elif not self._stopped:
            transport.resume_reading()  # a socket at its end reports it here again

    @property
    def reading(self) -> bool:
        """Whether frames are still read: false after a failure, the end of the stream or
        :meth:`close`."""
        return not self._stopped

    # -- sending ---------------------------------------------------------------------------------
    def send_buffer(self, channel_id: int, send: Send) -> None:
        payload = send.payload
        if send.is_event:
            data = pickling.dumps(payload)
            flags = EVENT
        else:
            assert isinstance(payload, Buffer)
            data = payload.data
            flags = PARTIAL if payload.partial else 0
        if send.priority:
            flags |= PRIORITY
        if send.blocks_upstream:
            flags |= BLOCKS
        head = buffer_head(channel_id, send.sequence_number, send.backlog, flags)
        if self.writer.is_closing():
            return  # the peer is gone; the worker is failing its tasks already
        self.writer.writelines([frame_header(len(head) + len(data)), head, data])
        self.bytes_sent += len(data)

    def send_credit(self, channel_id: int, credit: int) -> None:
        self._send_control(encode_credit(channel_id, credit))

    def send_resume(self, channel_id: int) -> None:
        self._send_control(encode_resume(channel_id))

    def send_buffer_size(self, channel_id: int, size: int, max_records: int) -> None:
        self._send_control(encode_size(channel_id, size, max_records))

    def _send_control(self, body: bytes) -> None:
        """Queue a control frame; the control frames of one loop step leave in one write, in
        the order they were queued, when the step ends (:meth:`_flush_control`). A task
        releases several buffers in one slice, and a write per credit was a ``send`` system
        call each (docs/design.md, "What a record costs"). Data frames are written at once:
        they belong to the channels this worker produces, control frames to those it
        consumes, so no order between the two matters."""
        if self.writer.is_closing():
            return
        if not self._control:
            asyncio.get_running_loop().call_soon(self._flush_control)
        self._control += (frame_header(len(body)), body)

    def _flush_control(self) -> None:
        frames, self._control = self._control, []
        if frames and not self.writer.is_closing():
            self.writer.writelines(frames)

    # -- receiving (the protocol's callbacks, on the loop thread) ------------------------------
    def _feed(self, data: bytes) -> None:
        """Bytes that did not come through :meth:`_FrameProtocol.get_buffer`, in stream order."""
        view = memoryview(data)
        while view and not self._stopped:
            into = self._frames.get_buffer()
            n = min(len(into), len(view))
            into[:n] = view[:n]
            view = view[n:]
            self._received(n)

    def _received(self, nbytes: int) -> None:
        """Dispatch the frames that ``nbytes`` more bytes completed, in order."""
        if self._stopped:
            return
        env, peer = self.env, f"worker {self.peer}"
        try:
            for head, payload in self._frames.buffer_updated(nbytes):
                message = decode_frame(head, payload, peer)
                if isinstance(message, BufferFrame):
                    env.input_channel(message.channel, peer).on_send(_send_of(message, peer))
                elif isinstance(message, CreditFrame):
                    env.subpartition(message.channel, peer).add_credit(message.credit)
                elif isinstance(message, ResumeFrame):
                    env.subpartition(message.channel, peer).resume()
                else:
                    assert isinstance(message, SizeFrame)
                    env.subpartition(message.channel, peer).new_buffer_size(
                        message.buffer_size, message.max_records
                    )
        except Exception as err:  # report, then stop reading: the worker fails its tasks
            self._stop(err)

    def _ended(self, exc: BaseException | None) -> None:
        """The stream ended: cleanly (``exc`` None) or with an error of the socket."""
        if self._stopped:
            return
        if exc is None:
            try:
                self._frames.check_end()
            except NetworkError as err:
                exc = err
            else:
                exc = NetworkError(f"worker {self.peer} closed its data connection unexpectedly")
        self._stop(exc)

    def _stop(self, err: BaseException) -> None:
        """Stop reading for good and report ``err`` unless the worker is closing anyway."""
        self._stopped = True
        with contextlib.suppress(Exception):
            self._transport().pause_reading()
        if not self.env.closing:
            self.env.on_failure(err)

    def _transport(self) -> asyncio.Transport:
        """The socket's transport, which reads as well as writes (a stream writer types it as
        a write transport only)."""
        transport = self.writer.transport
        assert isinstance(transport, asyncio.Transport)
        return transport

    def close(self) -> None:
        self._stopped = True
        with contextlib.suppress(Exception):
            self.writer.close()


class _FrameProtocol(asyncio.BufferedProtocol):
    """The socket's reads go straight into the connection's :class:`FrameReader` (one copy,
    the kernel's) and its frames are dispatched in the same loop turn, with no coroutine to
    wake. Threading: the loop thread (asyncio's callbacks)."""

    __slots__ = ("conn",)

    def __init__(self, conn: TcpConnection) -> None:
        self.conn = conn

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn._frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.conn._received(nbytes)

    def eof_received(self) -> bool:
        self.conn._ended(None)
        return False  # asyncio closes the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn._ended(exc)


def _send_of(message: BufferFrame, peer: str) -> Send:
    """The channel-level message of a BUFFER frame (its event unpickled)."""
    flags, payload = message.flags, message.payload
    data: object
    if flags & EVENT:
        try:
            data = pickle.loads(payload)
        except Exception as err:
            raise NetworkError(
                f"BUFFER frame from {peer} for channel {message.channel}: its event payload "
                f"({len(payload)} bytes) does not unpickle: {type(err).__name__}: {err}"
            ) from err
    else:
        # A large payload is the bytearray the socket was read into (frame_reader): it reads as
        # bytes everywhere a buffer's data goes (a join, pickle.loads, pyarrow.py_buffer, a
        # bytes prefix), and nothing holds it but this buffer, so nothing changes it.
        data = Buffer(cast(bytes, payload), bool(flags & PARTIAL))
    return Send(data, bool(flags & EVENT), message.sequence_number, message.backlog,
                bool(flags & PRIORITY), bool(flags & BLOCKS))  # fmt: skip


class _RemoteProducerLink:
    __slots__ = ("channel_id", "conn")

    def __init__(self, conn: TcpConnection, channel_id: int) -> None:
        self.conn = conn
        self.channel_id = channel_id

    def deliver(self, send: Send) -> None:
        self.conn.send_buffer(self.channel_id, send)


class _RemoteConsumerLink:
    __slots__ = ("channel_id", "conn")

    def __init__(self, conn: TcpConnection, channel_id: int) -> None:
        self.conn = conn
        self.channel_id = channel_id

    def add_credit(self, credit: int) -> None:
        self.conn.send_credit(self.channel_id, credit)

    def resume(self) -> None:
        self.conn.send_resume(self.channel_id)

    def new_buffer_size(self, size: int, max_records: int) -> None:
        self.conn.send_buffer_size(self.channel_id, size, max_records)


class NetworkEnvironment:
    """The data plane of one worker (see the module docstring).

    Lifecycle: ``start_server`` -> register endpoints -> ``connect_peers`` -> ``wire`` every
    channel -> run -> ``close``. ``on_failure`` is called (once per problem) with any error of a
    connection; the worker then fails its tasks.
    """

    def __init__(
        self,
        worker_index: int,
        secret: bytes,
        *,
        bind_host: str,
        max_frame_size: int,
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self.worker_index = worker_index
        self.secret = secret
        self.bind_host = bind_host
        self.max_frame_size = max_frame_size
        self.on_failure = on_failure
        self.subpartitions: dict[int, ResultSubpartition] = {}
        self.input_channels: dict[int, InputChannel] = {}
        self.connections: dict[int, TcpConnection] = {}
        self.closing = False
        self._server: asyncio.Server | None = None
        self._accepted: dict[int, asyncio.Future[TcpConnection]] = {}

    async def start_server(self) -> int:
        self._server = await asyncio.start_server(self._on_connect, self.bind_host, 0)
        return int(self._server.sockets[0].getsockname()[1])

    def _accept_future(self, peer: int) -> asyncio.Future[TcpConnection]:
        if peer not in self._accepted:
            self._accepted[peer] = asyncio.get_running_loop().create_future()
        return self._accepted[peer]

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            peer = await server_handshake(reader, writer, self.secret)
        except Exception as err:
            log.warning("worker %d dropped a data connection: %s", self.worker_index, err)
            writer.close()
            return
        fut = self._accept_future(peer)
        if fut.done():
            log.warning("worker %d: duplicate connection from worker %d", self.worker_index, peer)
            writer.close()
            return
        fut.set_result(TcpConnection(self, peer, reader, writer))

    async def connect_peers(self, peers: dict[int, tuple[str, int]], needed: set[int]) -> None:
        """Connect to every worker in ``needed``: dial those with a higher index, await the rest."""
        for peer in sorted(needed):
            if peer > self.worker_index:
                host, port = peers[peer]
                reader, writer = await asyncio.open_connection(host, port)
                try:
                    await client_handshake(reader, writer, self.secret, self.worker_index)
                except BaseException:
                    writer.close()  # do not leak the socket of a failed handshake
                    raise
                self.connections[peer] = TcpConnection(self, peer, reader, writer)
            else:
                self.connections[peer] = await self._accept_future(peer)
        for conn in self.connections.values():
            await conn.start()

    def wire(self, channel_id: int, producer_worker: int, consumer_worker: int) -> None:
        me = self.worker_index
        if producer_worker == me and consumer_worker == me:
            sp, ic = self.subpartitions[channel_id], self.input_channels[channel_id]
            link = LocalLink(sp, ic)
            sp.link = link
            sp.in_process = True
            ic.connect(link)
        elif producer_worker == me:
            self.subpartitions[channel_id].link = _RemoteProducerLink(
                self.connections[consumer_worker], channel_id
            )
        elif consumer_worker == me:
            self.input_channels[channel_id].connect(
                _RemoteConsumerLink(self.connections[producer_worker], channel_id)
            )

    def data_sockets(self) -> list[int]:
        """The file descriptors of the connections to peer workers (after ``connect_peers``):
        the task pace watches them for bytes waiting while a checkpoint passes."""
        sockets = (conn.writer.get_extra_info("socket") for conn in self.connections.values())
        return [sock.fileno() for sock in sockets if sock is not None]

    def subpartition(self, channel_id: int, peer: str) -> ResultSubpartition:
        try:
            return self.subpartitions[channel_id]
        except KeyError:
            raise NetworkError(f"{peer} addressed unknown output channel {channel_id}") from None

    def input_channel(self, channel_id: int, peer: str) -> InputChannel:
        try:
            return self.input_channels[channel_id]
        except KeyError:
            raise NetworkError(f"{peer} addressed unknown input channel {channel_id}") from None

    def start_pumping(self) -> None:
        """Send what subpartitions queued before their links existed."""
        for sp in self.subpartitions.values():
            sp.pump()

    def close(self) -> None:
        self.closing = True
        for conn in self.connections.values():
            conn.close()
        if self._server is not None:
            self._server.close()
