"""The chunk sizer on its own: bounds, the size after a slow chunk, and geometric regrowth.

Costs are simulated (seconds per record given, no clock), so the properties are exact."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.task.chunk_size import (
    GROWTH,
    MAX_CHUNK,
    MIN_CHUNK,
    SLICE_SHARE,
    ChunkSizer,
    next_chunk,
)

sizes = st.integers(MIN_CHUNK, MAX_CHUNK)
seconds = st.floats(0.0, 10.0, allow_nan=False)
slices = st.sampled_from([0.00025, 0.001, 0.002, 0.01, 0.1])


@settings(max_examples=500, derandomize=True)
@given(size=sizes, cut=st.floats(0.0, 1.0), elapsed=seconds, slice_s=slices)
def test_the_next_chunk_stays_within_bounds_and_grows_at_most_geometrically(
    size: int, cut: float, elapsed: float, slice_s: float
) -> None:
    count = max(1, int(size * cut))  # a chunk holds at most its size (fewer: its batch ended)
    n = next_chunk(size, count, elapsed, slice_s)
    assert MIN_CHUNK <= n <= MAX_CHUNK
    assert n <= GROWTH * size


@settings(max_examples=500, derandomize=True)
@given(size=sizes, cut=st.floats(0.0, 1.0), per_record=st.floats(1e-9, 1.0), slice_s=slices)
def test_after_a_chunk_that_overran_the_next_fits_the_slice_at_its_cost(
    size: int, cut: float, per_record: float, slice_s: float
) -> None:
    count = max(1, int(size * cut))
    elapsed = count * per_record
    n = next_chunk(size, count, elapsed, slice_s)
    if elapsed > SLICE_SHARE * slice_s:
        assert n <= max(MIN_CHUNK, math.ceil(slice_s / per_record))
        # at the cost just seen, the next chunk takes no more than its share of the slice
        assert n == MIN_CHUNK or n * per_record <= SLICE_SHARE * slice_s * (1 + 1e-9)


@settings(max_examples=300, derandomize=True)
@given(per_record=st.floats(1e-8, 1e-5), slice_s=slices)
def test_fast_chunks_regrow_by_doubling_up_to_what_fits(per_record: float, slice_s: float) -> None:
    sizer = ChunkSizer()
    fits = min(MAX_CHUNK, int(SLICE_SHARE * slice_s / per_record))
    seen = []
    for _ in range(40):
        seen.append(sizer.size)
        sizer.observe(sizer.size, sizer.size * per_record, slice_s)
    assert seen[0] == 1, "the first chunk is one record"
    for before, after in itertools.pairwise(seen):
        # doubled, or reached what fits (within the rounding of the cost per record)
        assert after == GROWTH * before or abs(after - max(MIN_CHUNK, fits)) <= 1, seen
        assert after <= GROWTH * before, seen
    assert abs(seen[-1] - max(MIN_CHUNK, fits)) <= 1, "it reaches what fits the slice"


def test_slow_records_among_fast_ones_get_about_one_per_chunk() -> None:
    """Every 50th record costs 20 ms, the rest 0.2 us; slice 2 ms. Each chunk holds at most
    one slow record (the rule it replaced jumped back to ~2,500 records after one fast chunk:
    about 50 slow ones, a second of the task)."""
    sizer = ChunkSizer()
    position, slow_per_chunk = 0, []
    while position < 100_000:
        count = sizer.size
        slow = sum(1 for i in range(position, position + count) if i % 50 == 49)
        sizer.observe(count, slow * 0.02 + (count - slow) * 2e-7, 0.002)
        slow_per_chunk.append(slow)
        position += count
    assert max(slow_per_chunk) == 1


def test_a_chunk_cut_short_keeps_its_size_and_an_empty_one_tells_nothing() -> None:
    sizer = ChunkSizer()
    for _ in range(12):
        sizer.observe(sizer.size, sizer.size * 1e-7, 0.002)
    size = sizer.size
    assert size == 4096
    sizer.observe(10, 10 * 1e-7, 0.002)  # the batch ended after 10 records: as fast
    assert sizer.size == size
    sizer.observe(0, 0.0, 0.002)
    assert sizer.size == size
    sizer.observe(10, 0.02, 0.002)  # 10 records took 20 ms: 2 ms each, a 0.5 ms target
    assert sizer.size == MIN_CHUNK
