"""What ``_metadata`` records about how a checkpoint went (shown by ``undertow checkpoints``)."""

from __future__ import annotations

from undertow.runtime.checkpoint.ack_summary import checkpoint_properties


def test_sums_in_flight_bytes_and_keeps_the_slowest_times() -> None:
    acks = [
        {"unaligned": False, "persisted_data": 0, "processed_data": 10,
         "alignment_duration_ms": 2.4, "sync_duration_ms": 1.0},
        {"unaligned": True, "persisted_data": 300, "processed_data": 5,
         "alignment_duration_ms": 0.2, "async_duration_ms": 7.6, "start_delay_ms": 3},
    ]  # fmt: skip
    assert checkpoint_properties(acks) == {
        "unaligned": "true", "persisted_data": "300", "processed_data": "15",
        "alignment_duration_ms": "2", "start_delay_ms": "3", "sync_duration_ms": "1",
        "async_duration_ms": "8",
    }  # fmt: skip


def test_aligned_and_empty() -> None:
    assert checkpoint_properties([{"state_size": 5}])["unaligned"] == "false"
    assert checkpoint_properties([])["persisted_data"] == "0"
