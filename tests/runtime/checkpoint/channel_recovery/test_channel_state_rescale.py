"""Rescaled channel state: which new producer subtask re-emits which old channel, and the
records of one old channel reassembled over the consumer's input chunks then the producer's
output chunks (a batch may span the two)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.channel_recovery.rescale import (
    EdgeShape,
    UnrescalableChannelState,
    channel_records,
    channel_stream,
    new_producer_of,
    plan_rescaled_edge,
)
from undertow.runtime.checkpoint.channel_state_writer import encode_chunk, encode_recovered_chunk
from undertow.runtime.network.buffer import serialize_batch, split_into_buffers


def shape(old_p: int, new_p: int, old_c: int, new_c: int, kind: str = "HASH") -> EdgeShape:
    return EdgeShape(7, kind, 1, 2, 0, 1, old_p, new_p, old_c, new_c)


def chunks_of(batches: list[list[Any]], segment: int) -> list[bytes]:
    """The channel-state chunks of ``batches`` sent through ``segment``-byte buffers."""
    out = []
    for batch in batches:
        out += [encode_chunk(b) for b in split_into_buffers(serialize_batch(batch, None), segment)]
    return out


def test_old_producers_wrap_around_the_new_parallelism() -> None:
    plan = plan_rescaled_edge(shape(3, 2, 2, 4), has_state=True)
    assert {s: [(c.old_producer, c.old_consumer) for c in chs] for s, chs in plan.items()} == {
        0: [(0, 0), (0, 1), (2, 0), (2, 1)],
        1: [(1, 0), (1, 1)],
    }
    channel = plan[1][1]
    assert channel.input_channel == (1, 1)  # at the old consumer: (gate, old producer)
    assert channel.output_channel == (0, 1)  # at the old producer: (output, old consumer)


def test_an_edge_at_its_old_parallelism_restores_in_place() -> None:
    assert plan_rescaled_edge(shape(2, 2, 3, 3), has_state=True) == {}


@pytest.mark.parametrize("kind", ["FORWARD", "RESCALE", "BROADCAST"])
def test_edges_without_key_context_refuse_to_rescale_their_state(kind: str) -> None:
    with pytest.raises(UnrescalableChannelState, match=rf"edge 7 \({kind}\) carries in-flight"):
        plan_rescaled_edge(shape(2, 3, 2, 3, kind), has_state=True)
    assert plan_rescaled_edge(shape(2, 3, 2, 3, kind), has_state=False) == {}


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9),
    st.sampled_from(["HASH", "REBALANCE", "SHUFFLE", "GLOBAL", "CUSTOM"]),
)  # fmt: skip
def test_every_old_channel_is_re_emitted_exactly_once_in_order(
    old_p: int, new_p: int, old_c: int, new_c: int, kind: str
) -> None:
    edge = shape(old_p, new_p, old_c, new_c, kind)
    plan = plan_rescaled_edge(edge, has_state=True)
    if not edge.is_rescaled:
        assert plan == {}
        return
    seen = [(s, c.old_producer, c.old_consumer) for s, chs in plan.items() for c in chs]
    pairs = [(p, c) for _, p, c in seen]
    assert sorted(pairs) == [(p, c) for p in range(old_p) for c in range(old_c)]  # once each
    assert all(0 <= s < new_p and s == new_producer_of(p, new_p) for s, p, _ in seen)
    for channels in plan.values():  # one old producer's channels stay together, in order
        order = [(c.old_producer, c.old_consumer) for c in channels]
        assert order == sorted(order)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    st.lists(st.lists(st.binary(max_size=300), min_size=1, max_size=5), min_size=1, max_size=8),
    st.integers(16, 200),
    st.data(),
)
def test_records_of_an_old_channel_come_back_whole_and_in_order(
    batches: list[list[bytes]], segment: int, data: st.DataObject
) -> None:
    """Wherever the barrier cut the channel (even inside a batch spanning buffers), the
    consumer's input chunks followed by the producer's output chunks give the batches back."""
    chunks = chunks_of(batches, segment)
    cut = data.draw(st.integers(0, len(chunks)))
    stream = channel_stream(chunks[:cut], chunks[cut:])
    assert [values for values, _ in channel_records(stream, "test")] == batches


def test_a_stream_that_ends_inside_a_batch_is_refused() -> None:
    chunks = chunks_of([[b"x" * 500]], 64)
    with pytest.raises(ValueError, match=r"old channel 0 -> 1: channel state ends inside"):
        list(channel_records(chunks[:-1], "old channel 0 -> 1"))


def test_recovered_input_is_not_re_emitted_at_another_parallelism() -> None:
    """A checkpoint taken during a rescaled recovery holds re-emitted records not yet processed
    as recovered chunks; re-emitting them with the rest would let newer records of another old
    channel overtake them, so it fails, naming where."""
    chunks = [encode_recovered_chunk(serialize_batch([1], None)),
              encode_chunk(split_into_buffers(serialize_batch([2], None), 1 << 16)[0])]  # fmt: skip
    with pytest.raises(ValueError, match=r"old channel 0 -> 1: the checkpoint was taken while "
                       r"the in-flight data of an earlier rescaled restore"):  # fmt: skip
        list(channel_records(chunks, "old channel 0 -> 1"))
