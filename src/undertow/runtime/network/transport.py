"""Transports: how a subpartition and an input channel talk, in-process or over TCP.

Both speak the same credit protocol (BufferResponse one way, AddCredit / ResumeConsumption /
NewBufferSize the other), so nothing above this module knows where its peer is:

* :class:`LocalLink`: producer and consumer in the same worker; messages are method calls on the
  same loop thread.
* :class:`TcpConnection`: one authenticated connection per pair of workers, multiplexing all
  channels between them by channel id. Frame bodies::

      BUFFER  b"B" | channel u32 | seq u32 | backlog u32 | flags u8 | payload
      CREDIT  b"C" | channel u32 | credit u32
      RESUME  b"R" | channel u32
      SIZE    b"S" | channel u32 | buffer size u32 | max records u32   (NewBufferSize)

  ``flags``: 1 event (payload is a pickled event), 2 partial buffer, 4 priority, 8 blocks
  upstream. Credit bounds what is in flight, so writes never need ``drain()`` to bound memory.

:class:`NetworkEnvironment` is the per-worker registry that creates the connections and wires
every channel once all endpoints of the worker exist.

Threading: one worker loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import struct
from collections.abc import Callable

from undertow.core import pickling
from undertow.core.errors import NetworkError
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.credit import Send
from undertow.runtime.network.framing import (
    client_handshake,
    frame_header,
    read_frame,
    server_handshake,
)
from undertow.runtime.network.input_gate import InputChannel
from undertow.runtime.network.partition import ResultSubpartition

log = logging.getLogger(__name__)

_BUFFER = struct.Struct(">cIIIB")
_CREDIT = struct.Struct(">cII")
_RESUME = struct.Struct(">cI")
_SIZE = struct.Struct(">cIII")
_EVENT, _PARTIAL, _PRIORITY, _BLOCKS = 1, 2, 4, 8


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
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    # -- sending ---------------------------------------------------------------------------------
    def send_buffer(self, channel_id: int, send: Send) -> None:
        payload = send.payload
        if send.is_event:
            data = pickling.dumps(payload)
            flags = _EVENT
        else:
            assert isinstance(payload, Buffer)
            data = payload.data
            flags = _PARTIAL if payload.partial else 0
        if send.priority:
            flags |= _PRIORITY
        if send.blocks_upstream:
            flags |= _BLOCKS
        head = _BUFFER.pack(b"B", channel_id, send.sequence_number, send.backlog, flags)
        if self.writer.is_closing():
            return  # the peer is gone; the worker is failing its tasks already
        self.writer.writelines([frame_header(len(head) + len(data)), head, data])
        self.bytes_sent += len(data)

    def send_credit(self, channel_id: int, credit: int) -> None:
        body = _CREDIT.pack(b"C", channel_id, credit)
        if not self.writer.is_closing():
            self.writer.writelines([frame_header(len(body)), body])

    def send_resume(self, channel_id: int) -> None:
        body = _RESUME.pack(b"R", channel_id)
        if not self.writer.is_closing():
            self.writer.writelines([frame_header(len(body)), body])

    def send_buffer_size(self, channel_id: int, size: int, max_records: int) -> None:
        body = _SIZE.pack(b"S", channel_id, size, max_records)
        if not self.writer.is_closing():
            self.writer.writelines([frame_header(len(body)), body])

    # -- receiving -------------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        env, peer = self.env, f"worker {self.peer}"
        try:
            while True:
                body = await read_frame(self.reader, env.max_frame_size, peer)
                if body is None:
                    if not env.closing:
                        raise NetworkError(f"{peer} closed its data connection unexpectedly")
                    return
                kind = body[:1]
                if kind == b"B":
                    _, cid, seq, backlog, flags = _BUFFER.unpack_from(body)
                    raw = body[_BUFFER.size :]
                    payload: object
                    if flags & _EVENT:
                        payload = pickle.loads(raw)
                    else:
                        payload = Buffer(raw, bool(flags & _PARTIAL))
                    send = Send(payload, bool(flags & _EVENT), seq, backlog,
                                bool(flags & _PRIORITY), bool(flags & _BLOCKS))  # fmt: skip
                    env.input_channel(cid, peer).on_send(send)
                elif kind == b"C":
                    _, cid, credit = _CREDIT.unpack(body)
                    env.subpartition(cid, peer).add_credit(credit)
                elif kind == b"R":
                    _, cid = _RESUME.unpack(body)
                    env.subpartition(cid, peer).resume()
                elif kind == b"S":
                    _, cid, size, max_records = _SIZE.unpack(body)
                    env.subpartition(cid, peer).new_buffer_size(size, max_records)
                else:
                    raise NetworkError(f"unknown frame type {kind!r} from {peer}")
        except asyncio.CancelledError:
            raise
        except Exception as err:  # report, then stop reading: the worker fails its tasks
            if not env.closing:
                env.on_failure(err)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        with contextlib.suppress(Exception):
            self.writer.close()


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
            conn.start()

    def wire(self, channel_id: int, producer_worker: int, consumer_worker: int) -> None:
        me = self.worker_index
        if producer_worker == me and consumer_worker == me:
            sp, ic = self.subpartitions[channel_id], self.input_channels[channel_id]
            link = LocalLink(sp, ic)
            sp.link = link
            ic.connect(link)
        elif producer_worker == me:
            self.subpartitions[channel_id].link = _RemoteProducerLink(
                self.connections[consumer_worker], channel_id
            )
        elif consumer_worker == me:
            self.input_channels[channel_id].connect(
                _RemoteConsumerLink(self.connections[producer_worker], channel_id)
            )

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
