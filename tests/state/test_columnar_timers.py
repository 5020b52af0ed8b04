"""Columnar timers: due timers come out earliest first, grouped by timestamp, and leave; a
(key, timestamp) is one timer; deleting works; the snapshot blob's parts round-trip and a
damaged blob is refused naming the operator."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from undertow.state.columnar_timers import ColumnarTimers, pack_parts, unpack_parts
from undertow.state.key_groups import assign_to_key_group


def _timers() -> ColumnarTimers:
    return ColumnarTimers([pa.field("k", pa.string())], max_parallelism=8)


def test_due_timers_come_out_by_timestamp_once() -> None:
    timers = _timers()
    ones = np.ones(3, dtype=bool)
    timers.register(["a", "b", "a"], np.array([20, 10, 20]), ones)  # a@20 twice: one timer
    timers.register(["c", "d", "e"], np.array([10, 30, 5]), np.array([True, True, False]))
    assert len(timers) == 4 and timers.earliest() == 10
    assert timers.pop_due(20) == [(10, ["b", "c"]), (20, ["a"])]
    assert timers.pop_due(20) == [] and len(timers) == 1
    timers.delete(["d", "x"], np.array([30, 30]), np.ones(2, dtype=bool))
    assert len(timers) == 0 and timers.earliest() is None


def test_snapshots_go_by_the_keys_key_group() -> None:
    timers = _timers()
    timers.register(["a", "b"], np.array([1, 2]), np.ones(2, dtype=bool))
    blobs = timers.table.snapshot()
    assert set(blobs) == {assign_to_key_group("a", 8), assign_to_key_group("b", 8)}
    restored = _timers()
    restored.table.restore(blobs, range(8), "here")
    assert restored.pop_due(2) == [(1, ["a"]), (2, ["b"])]


def test_parts_round_trip_and_a_damaged_blob_is_refused() -> None:
    parts = {"state": b"\x00\x01", "event": b"", "processing": b"xyz"}
    blob = pack_parts(parts)
    assert unpack_parts(blob, "op") == parts
    with pytest.raises(ValueError, match="op: a key group's state is damaged"):
        unpack_parts(blob[:-1], "op")
    with pytest.raises(ValueError, match="op: a key group's state does not start"):
        unpack_parts(b"nonsense", "op")
