"""The byte bound on a source's pending records (undertow.runtime.task.pending_bytes): the
size estimate of records and the records a reader call is asked for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.common.row import Row
from undertow.runtime.task.pending_bytes import PENDING_BYTES, PendingBound, approx_size

MIB = 1 << 20


class Reading:
    def __init__(self, payload: bytes) -> None:
        self.sensor = "s-1"
        self.payload = payload


def test_the_estimate_counts_what_records_carry() -> None:
    big = b"x" * MIB
    assert MIB <= approx_size(big) < MIB + 64
    assert 1000 <= approx_size("y" * 1000) < 1064
    assert approx_size(7) == approx_size(7.5) == approx_size(None) < 16
    assert MIB <= approx_size((1, big)) < MIB + 64  # a tuple by its items
    assert MIB <= approx_size(Row(key=1, payload=big)) < MIB + 64
    assert MIB <= approx_size({"k": big}) < MIB + 64
    assert MIB <= approx_size(Reading(big)) < MIB + 128  # an object by its __dict__
    assert approx_size(np.zeros(1000, dtype=np.int64)) == 8000
    assert approx_size(pa.array(range(1000), pa.int64())) == 8000
    assert approx_size(memoryview(big)) == MIB
    batch = pa.RecordBatch.from_pydict({"v": list(range(10_000))})
    assert approx_size(batch) == pa.ipc.get_record_batch_size(batch)
    # a long list by its first items, extrapolated
    assert 100 * 1000 <= approx_size([b"z" * 1000] * 100) < 100 * 1100


def test_a_first_reader_call_asks_for_one_record_then_what_fits_the_budget() -> None:
    bound = PendingBound()
    assert bound.records_wanted() == 1  # nothing known yet: large records must not flood
    bound.observe([b"x" * (10 * MIB)] * 3)
    assert bound.records_wanted() == 1  # over the budget: one record at a time
    for _ in range(6):  # smaller records: the estimate comes down, halfway a call
        bound.observe([b"x" * 1000] * 16)
    assert 1 < bound.records_wanted() < PENDING_BYTES // 1000
    for _ in range(40):
        bound.observe([b"x" * 1000] * 16)
    assert abs(bound.records_wanted() - PENDING_BYTES // 1005) <= 2
    bound.observe([b"x" * (2 * MIB)])
    assert bound.records_wanted() == 1  # a larger record counts at once


@settings(max_examples=100, deadline=None)
@given(
    calls=st.lists(
        st.lists(st.integers(0, 4 * MIB), min_size=1, max_size=6), min_size=1, max_size=12
    )
)
def test_what_a_call_brings_stays_within_the_budget_at_the_estimate(calls: list[list[int]]) -> None:
    """Calls of records of the sizes given, each as many as the bound asked for: every call
    of records as large as the last estimate holds at most the budget, or one record."""
    bound = PendingBound()
    for sizes in calls:
        wanted = bound.records_wanted()
        values: list[Any] = [b"x" * sizes[i % len(sizes)] for i in range(min(wanted, 64))]
        bound.observe(values)
        wanted = bound.records_wanted()
        assert wanted == 1 or wanted * bound.bytes_per_record <= bound.budget
        assert bound.bytes_per_record >= min(approx_size(v) for v in values) / 2
