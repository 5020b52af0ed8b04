"""The coordinator's clock (:mod:`undertow.runtime.checkpoint.clock`): the system clock and the
testing kit's manual one keep the same contract (epoch ms; a timer runs once, unless
cancelled)."""

from __future__ import annotations

import asyncio
import time

from undertow.runtime.checkpoint.clock import CoordinatorClock, SystemClock
from undertow.testing.coordinator import ManualClock


def test_the_system_clock_is_epoch_milliseconds_and_its_timers_run_on_the_loop() -> None:
    async def scenario() -> list[str]:
        clock: CoordinatorClock = SystemClock()
        before = time.time_ns() // 1_000_000
        assert before <= clock.now_ms() <= time.time_ns() // 1_000_000
        ran: list[str] = []
        clock.call_later(0.0, ran.append, "kept")
        clock.call_later(0.0, ran.append, "cancelled").cancel()
        await asyncio.sleep(0.05)
        return ran

    assert asyncio.run(scenario()) == ["kept"]


def test_the_manual_clock_runs_due_timers_in_order_when_advanced() -> None:
    clock: CoordinatorClock = ManualClock(start_ms=1_000)
    assert isinstance(clock, ManualClock)
    ran: list[tuple[str, int]] = []
    clock.call_later(0.2, lambda: ran.append(("late", clock.now_ms())))
    clock.call_later(0.1, lambda: ran.append(("early", clock.now_ms())))
    clock.call_later(0.15, ran.append, ("cancelled", 0)).cancel()
    clock.advance(150)
    assert ran == [("early", 1_100)] and clock.now_ms() == 1_150
    clock.advance(100)
    assert ran == [("early", 1_100), ("late", 1_200)] and clock.pending_timers == 0
