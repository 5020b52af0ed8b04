"""The processing-time contract (:mod:`undertow.runtime.task.time_service`): the task's loop
service and the testing kit's manual one both run a timer once, at or after its time, unless
cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from undertow.runtime.task.context import LoopProcessingTimeService
from undertow.runtime.task.time_service import ProcessingTimeService
from undertow.testing.harness import ManualProcessingTimeService


def test_the_manual_service_fires_due_timers_in_time_order() -> None:
    service: ProcessingTimeService = ManualProcessingTimeService(start_ms=100)
    assert isinstance(service, ManualProcessingTimeService)
    fired: list[int] = []
    service.register_timer(300, fired.append)
    service.register_timer(200, fired.append)
    service.register_timer(250, fired.append).cancel()
    service.set_processing_time(260)
    assert fired == [200] and service.current_processing_time() == 260
    service.set_processing_time(300)
    assert fired == [200, 300] and service.num_pending() == 0


def test_the_loop_service_posts_a_due_timer_as_a_mail() -> None:
    async def scenario() -> list[int]:
        mails: list[Callable[[], None]] = []
        service: ProcessingTimeService = LoopProcessingTimeService(
            asyncio.get_running_loop(), mails.append
        )
        fired: list[int] = []
        now = service.current_processing_time()
        service.register_timer(now - 1, fired.append)  # already due
        service.register_timer(now + 60_000, fired.append).cancel()
        await asyncio.sleep(0.05)
        assert fired == []  # nothing runs until the mailbox runs the mail
        for mail in mails:
            mail()
        return fired

    now_fired = asyncio.run(scenario())
    assert len(now_fired) == 1
