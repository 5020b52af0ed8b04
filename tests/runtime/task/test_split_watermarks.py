"""Per-split watermarks combined into a source's watermark (runtime.task.split_watermarks)."""

from __future__ import annotations

from undertow.common.watermark_strategy import BoundedOutOfOrdernessWatermarks
from undertow.runtime.task.split_watermarks import CombinedWatermark, SplitWatermarks


def monotonous() -> BoundedOutOfOrdernessWatermarks:
    return BoundedOutOfOrdernessWatermarks(0)


def test_the_split_furthest_behind_holds_the_watermark() -> None:
    splits = SplitWatermarks(monotonous, idle_timeout_ms=None)
    splits.on_events("a-0", [1000, 1005], now=0)
    splits.on_events("a-1", [10], now=0)
    assert splits.on_periodic(now=0) == CombinedWatermark(9, idle=False)
    splits.on_events("a-1", [20], now=1)
    assert splits.on_periodic(now=1) == CombinedWatermark(19, idle=False)


def test_a_split_without_a_watermark_yet_holds_it_back() -> None:
    splits = SplitWatermarks(monotonous, idle_timeout_ms=None)
    splits.on_events("a-0", [1000], now=0)
    splits.on_events("a-1", [None], now=0)  # records without timestamps: no watermark
    assert splits.on_periodic(now=0) == CombinedWatermark(None, idle=False)


def test_an_idle_split_stops_holding_it_back_and_all_idle_is_idle() -> None:
    splits = SplitWatermarks(monotonous, idle_timeout_ms=100)
    splits.on_events("a-0", [1000], now=0)
    splits.on_events("a-1", [10], now=0)
    splits.on_events("a-0", [2000], now=150)
    assert splits.on_periodic(now=150) == CombinedWatermark(1999, idle=False)  # a-1 idle
    assert splits.on_periodic(now=300) == CombinedWatermark(None, idle=True)
    splits.on_events("a-1", [30], now=301)  # active again: it holds the watermark again
    assert splits.on_periodic(now=301) == CombinedWatermark(29, idle=False)


def test_a_released_split_leaves_the_combination() -> None:
    splits = SplitWatermarks(monotonous, idle_timeout_ms=None)
    splits.on_events("a-0", [1000], now=0)
    splits.on_events("a-1", [10], now=0)
    splits.release("a-1")
    assert splits.on_periodic(now=0) == CombinedWatermark(999, idle=False)


def test_a_registered_split_holds_it_back_until_it_emits_or_idles() -> None:
    splits = SplitWatermarks(monotonous, idle_timeout_ms=100)
    splits.register("a-1", now=0)
    splits.on_events("a-0", [1000], now=0)
    assert splits.on_periodic(now=50) == CombinedWatermark(None, idle=False)
    splits.on_events("a-0", [1100], now=120)
    assert splits.on_periodic(now=120) == CombinedWatermark(1099, idle=False)  # a-1 idle
