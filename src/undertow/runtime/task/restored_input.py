"""A subtask's restored input not yet processed: lazy per-channel streams and drained batches.

Restored in place, each input channel's restored state is a stream of chunks read as the task
gets to them (:mod:`~undertow.runtime.checkpoint.channel_recovery.stream`), decoded through the
channel's own deserializer one chunk at a time; a gate still recovering from a rescaled restore
adds whole batches of re-emitted records (``drain_recovered``). :class:`RestoredInput` keeps
both in order and answers a barrier: the batches not yet processed (written) and the streams'
undecoded rest (runs of the old files, referred to).

Threading: the task's loop thread only. Invariant: the task polls no live buffer while any
restored input is left (the streams share the channels' deserializers with live data).
"""

from __future__ import annotations

from collections import deque
from typing import Any, TypeAlias

from undertow.runtime.checkpoint.channel_recovery.stream import RestItem, RestoredInputStream
from undertow.runtime.checkpoint.channel_state_writer import (
    decode_chunk,
    encode_chunk,
    encode_recovered_chunk,
)
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.input_gate import InputChannel, InputGate

#: One restored input batch not yet processed: (gate, channel, values, timestamps, recovered).
RestoredBatch: TypeAlias = tuple[InputGate, InputChannel, list[Any], Any, bool]


def batch_chunk(batch: bytes, recovered: bool) -> bytes:
    """A serialized batch as a channel-state chunk (recovered input keeps its flag)."""
    return encode_recovered_chunk(batch) if recovered else encode_chunk(Buffer(batch))


class _Stream:
    """One channel's restored input still to decode."""

    __slots__ = ("channel", "gate", "recovered", "stream")

    def __init__(
        self, gate: InputGate, channel: InputChannel, stream: RestoredInputStream, recovered: bool
    ) -> None:
        self.gate = gate
        self.channel = channel
        self.stream = stream
        self.recovered = recovered


class RestoredInput:
    """The restored input of one subtask, in processing order (module docstring)."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: deque[RestoredBatch | _Stream] = deque()

    def __bool__(self) -> bool:
        """Some restored input may be left (an exhausted stream counts until dropped)."""
        return bool(self._queue)

    def add_stream(
        self, gate: InputGate, channel: InputChannel, stream: RestoredInputStream, recovered: bool
    ) -> None:
        """``channel``'s restored stream (``recovered``: recovered input), after the rest."""
        self._queue.append(_Stream(gate, channel, stream, recovered))

    def add_batch(self, batch: RestoredBatch) -> None:
        """A batch drained from a recovering gate, after the rest."""
        self._queue.append(batch)

    def next_batch(self) -> RestoredBatch | None:
        """The next restored batch: decoded from the head stream (dropping exhausted ones;
        reads a block of the old file when needed, blocking), or the head drained batch;
        ``None`` when no restored input is left."""
        queue = self._queue
        while queue:
            head = queue[0]
            if not isinstance(head, _Stream):
                queue.popleft()
                return head
            chunk = head.stream.next_chunk()
            if chunk is None:
                queue.popleft()
                continue
            batch = head.channel.deserializer.add(decode_chunk(chunk))
            if batch is not None:
                return (head.gate, head.channel, batch[0], batch[1], head.recovered)
        return None

    def drop(self) -> int:
        """Decode and drop everything left (an unaligned stop's savepoint holds it); the
        number of records dropped."""
        dropped = 0
        while (batch := self.next_batch()) is not None:
            dropped += len(batch[2])
        return dropped

    def pending_chunks(self, channel: object) -> list[bytes]:
        """Chunks of ``channel``'s batches not yet processed (drained ones), in order."""
        return [
            batch_chunk(serialize_batch(item[2], item[3]), item[4])
            for item in self._queue
            if type(item) is tuple and item[1] is channel
        ]

    def rest(self, channel: object) -> list[RestItem]:
        """What is left of ``channel``'s restored streams, in stream order (it follows the
        channel's partial record): runs of files to refer to, chunks in memory to write."""
        rest: list[RestItem] = []
        for item in self._queue:
            if isinstance(item, _Stream) and item.channel is channel:
                rest += item.stream.rest()
        return rest
