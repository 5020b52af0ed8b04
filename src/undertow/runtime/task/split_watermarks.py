"""Per-split watermarks of a source reader, combined into the source's one watermark.

Flink runs a source's watermark generator once per split (``ReaderOutput.createOutputForSplit``)
so that a partition far behind in event time holds the source's watermark back instead of
seeing its records turn late, and an idle partition does not hold it back forever. The
combined watermark is the minimum over the splits that are not idle (a split that has not
produced a watermark yet holds it back); when every split is idle the output is idle.
Released splits (``release_split``: the split is finished) leave the combination.

Pure: timestamps and a clock value in, a watermark and an idle flag out. Task thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class _SplitClock:
    generator: Any
    last_activity: int
    watermark: int | None = None


@dataclass(frozen=True, slots=True)
class CombinedWatermark:
    """The source's watermark now (``None``: held back) and whether every split is idle."""

    watermark: int | None
    idle: bool


@dataclass(slots=True)
class SplitWatermarks:
    """Watermark generators per split id; ``idle_timeout_ms`` (``None`` or 0: never idle)."""

    new_generator: Callable[[], Any]
    idle_timeout_ms: int | None
    splits: dict[str, _SplitClock] = field(default_factory=dict)

    def register(self, split_id: str, now: int) -> None:
        """A split to wait for: without a watermark yet, it holds the combination back."""
        if split_id not in self.splits:
            self.splits[split_id] = _SplitClock(self.new_generator(), now)

    def on_events(self, split_id: str, timestamps: Sequence[int | None], now: int) -> None:
        self.register(split_id, now)
        clock = self.splits[split_id]
        clock.last_activity = now
        clock.generator.on_events(timestamps)

    def release(self, split_id: str) -> None:
        self.splits.pop(split_id, None)

    def _idle(self, clock: _SplitClock, now: int) -> bool:
        timeout = self.idle_timeout_ms
        return bool(timeout) and now - clock.last_activity >= timeout  # type: ignore[operator]

    def on_periodic(self, now: int) -> CombinedWatermark:
        active: list[_SplitClock] = []
        for clock in self.splits.values():
            advanced = clock.generator.on_periodic_emit()
            if advanced is not None:
                clock.watermark = advanced
            if not self._idle(clock, now):
                active.append(clock)
        if not active:
            return CombinedWatermark(None, idle=bool(self.splits))
        if any(clock.watermark is None for clock in active):
            return CombinedWatermark(None, idle=False)
        return CombinedWatermark(min(clock.watermark for clock in active), idle=False)  # type: ignore[type-var]
