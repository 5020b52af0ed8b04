"""The task's periodic flush: every buffer timeout, writers with a partly filled buffer send
it, and the flush goes on; none without a timeout or outputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.runtime.task.periodic_work import schedule_flush


class FakeLoop:
    def __init__(self) -> None:
        self.scheduled: list[tuple[float, Callable[..., Any], tuple[Any, ...]]] = []

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        self.scheduled.append((delay, fn, args))

    def run_next(self) -> None:
        _, fn, args = self.scheduled.pop(0)
        fn(*args)


class FakeWriter:
    def __init__(self, pending: bool) -> None:
        self.has_pending = pending
        self.flushes = 0

    def flush_all(self) -> None:
        self.flushes += 1
        self.has_pending = False


def test_a_flush_mail_runs_every_timeout_and_flushes_only_pending_writers() -> None:
    loop, mails = FakeLoop(), []
    writers = [FakeWriter(True), FakeWriter(False)]
    schedule_flush(loop, mails.append, writers, 5)  # type: ignore[arg-type]
    assert [delay for delay, _, _ in loop.scheduled] == [0.005]
    loop.run_next()  # the timer posts the flush as a mail
    assert len(mails) == 1 and writers[0].flushes == 0
    mails.pop()()  # the mail runs on the task's loop
    assert [w.flushes for w in writers] == [1, 0]
    assert [delay for delay, _, _ in loop.scheduled] == [0.005]  # and schedules the next


def test_no_flush_without_a_timeout_or_outputs() -> None:
    loop = FakeLoop()
    schedule_flush(loop, lambda mail: None, [FakeWriter(True)], 0)  # type: ignore[arg-type]
    schedule_flush(loop, lambda mail: None, [], 5)  # type: ignore[arg-type]
    assert loop.scheduled == []
