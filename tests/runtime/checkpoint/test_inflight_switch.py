"""The switch of an aligned checkpoint to unaligned, by time or by the bytes queued ahead of
its barrier (``execution.checkpointing.unaligned.max-inflight-data``), property-tested; and
the output side of :class:`InflightCapture` executing it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.config import Configuration
from undertow.runtime.checkpoint.barrier import (
    NO_TIMEOUT,
    AlignmentType,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.inflight_capture import InflightCapture, ScheduleOutputTimeout
from undertow.runtime.checkpoint.inflight_switch import (
    StayAligned,
    SwitchReason,
    SwitchToUnaligned,
    decide_switch,
)
from undertow.runtime.checkpoint.settings import CheckpointSettings


def _options(timeout_ms: int, limit: int) -> CheckpointOptions:
    return CheckpointOptions(SnapshotType.CHECKPOINT, AlignmentType.ALIGNED, timeout_ms,
                             max_inflight_bytes=limit)  # fmt: skip


TIMEOUTS = st.integers(1, 10**7)
LIMITS = st.integers(0, 10**9)
ELAPSED = st.integers(-(10**6), 10**8)  # clocks of two hosts may disagree: negative too
BYTES = st.integers(0, 10**10)


@given(TIMEOUTS, LIMITS, ELAPSED, BYTES)
def test_the_decision(timeout: int, limit: int, elapsed: int, queued: int) -> None:
    decision = decide_switch(_options(timeout, limit), elapsed, queued)
    by_size = limit > 0 and queued > limit
    if by_size:
        assert decision == SwitchToUnaligned(SwitchReason.INFLIGHT_DATA, queued)
    elif elapsed >= timeout:
        assert decision == SwitchToUnaligned(SwitchReason.TIMEOUT, queued)
    else:
        assert decision == StayAligned(timeout - elapsed) and decision.wait_ms > 0


@given(TIMEOUTS, ELAPSED, BYTES)
def test_without_a_limit_only_time_switches(timeout: int, elapsed: int, queued: int) -> None:
    decision = decide_switch(_options(timeout, 0), elapsed, queued)
    assert not (isinstance(decision, SwitchToUnaligned)
                and decision.reason is SwitchReason.INFLIGHT_DATA)  # fmt: skip


@given(TIMEOUTS, LIMITS, ELAPSED, BYTES, st.integers(0, 10**6), st.integers(0, 10**9))
def test_more_time_or_more_bytes_never_undoes_a_switch(
    timeout: int, limit: int, elapsed: int, queued: int, later: int, more: int
) -> None:
    options = _options(timeout, limit)
    if isinstance(decide_switch(options, elapsed, queued), SwitchToUnaligned):
        assert isinstance(decide_switch(options, elapsed + later, queued + more), SwitchToUnaligned)


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="only an aligned barrier with a timeout"):
        decide_switch(CheckpointOptions(alignment=AlignmentType.UNALIGNED), 0, 0)
    with pytest.raises(ValueError, match="queued bytes must be >= 0, got -1"):
        decide_switch(_options(10, 0), 0, -1)


def test_the_option_reaches_the_barrier_of_an_aligned_checkpoint_with_a_timeout() -> None:
    config = Configuration({
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.aligned-checkpoint-timeout": "30 s",
        "execution.checkpointing.unaligned.max-inflight-data": "64 kb",
    })  # fmt: skip
    options = CheckpointSettings.of(config).options(SnapshotType.CHECKPOINT)
    assert options.is_timeoutable and options.max_inflight_bytes == 64 * 1024
    unaligned = CheckpointSettings.of(Configuration({
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.unaligned.max-inflight-data": "64 kb",
    })).options(SnapshotType.CHECKPOINT)  # fmt: skip
    assert unaligned.is_unaligned and unaligned.aligned_checkpoint_timeout == NO_TIMEOUT


def _capture_waiting(limit: int, timeout_ms: int = 30_000) -> tuple[InflightCapture, int]:
    capture = InflightCapture([], [2])  # one output of two subpartitions
    barrier = CheckpointBarrier(7, 1_000, _options(timeout_ms, limit))
    plan = capture.begin_output(barrier, [barrier], writer_open=False)
    assert plan is not None
    return capture, barrier.timestamp


@pytest.mark.parametrize(
    ("limit", "queued", "delay"),
    [(0, 10**6, 29_900), (4096, 4096, 29_900), (4096, 4097, 0), (1, 2, 0)],
)
def test_the_output_side_times_out_at_once_when_too_much_is_queued(
    limit: int, queued: int, delay: int
) -> None:
    capture, triggered = _capture_waiting(limit)
    per_channel = {(0, 0): queued // 2, (0, 1): queued - queued // 2}
    decision = capture.end_output(7, triggered + 100, per_channel.__getitem__)
    assert decision == ScheduleOutputTimeout(7, delay)
