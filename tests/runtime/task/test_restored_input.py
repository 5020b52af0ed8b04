"""A subtask's restored input: streams decoded one chunk at a time through their channel's
deserializer, drained batches in order, and what a barrier finds of each."""

from __future__ import annotations

from undertow.runtime.checkpoint.channel_recovery.stream import RestoredInputStream
from undertow.runtime.checkpoint.channel_state_writer import (
    encode_chunk,
    encode_recovered_chunk,
)
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.task.restored_input import RestoredInput


def gate() -> InputGate:
    g = InputGate("map input", 0, floating_buffers=4)
    for i in range(2):
        g.add_channel(i, f"map input {i}", initial_credit=2)
    return g


def split(values: list[int]) -> list[bytes]:
    """One batch in two chunks: a partial buffer, then its last one."""
    data = serialize_batch(values, None)
    return [encode_chunk(Buffer(data[:3], partial=True)), encode_chunk(Buffer(data[3:]))]


def test_streams_then_drained_batches_in_order_and_the_rest_at_a_barrier() -> None:
    g = gate()
    a, b = g.channels
    restored = RestoredInput()
    restored.add_stream(g, a, RestoredInputStream(split([1, 2]) + split([3])), False)
    restored.add_batch((g, b, [9], None, True))
    first = restored.next_batch()
    assert first is not None and first[1] is a and first[2] == [1, 2] and not first[4]
    # a barrier now: channel a's undecoded rest (memory chunks here: written again)
    assert restored.rest(a) == split([3]) and restored.rest(b) == []
    assert restored.pending_chunks(b) == [encode_recovered_chunk(serialize_batch([9], None))]
    second = restored.next_batch()
    assert second is not None and second[2] == [3]
    third = restored.next_batch()
    assert third is not None and third[1] is b and third[2] == [9] and third[4]
    assert restored.next_batch() is None and not restored


def test_an_unaligned_stop_drops_what_is_left_and_counts_its_records() -> None:
    g = gate()
    restored = RestoredInput()
    restored.add_stream(g, g.channels[0], RestoredInputStream(split([1, 2, 3])), False)
    restored.add_batch((g, g.channels[1], [4, 5], None, True))
    assert restored.drop() == 5 and not restored
