"""The task's periodic flush: every buffer timeout, writers with a partly filled buffer send
it, and the flush goes on; none without a timeout or outputs. And the flush when idle: a task
about to wait for input sends its partly filled buffers at once (not while it is busy or
backpressured, nor without a positive timeout or when switched off)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from undertow.runtime.task.mailbox_loop import MailboxLoop
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.periodic_work import flush_when_idle, schedule_flush


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


class Partition:
    """An output whose availability the test sets."""

    def __init__(self, available: bool) -> None:
        self.available = available

    def is_available(self) -> bool:
        return self.available

    def notify_when_available(self, callback: Callable[[], None]) -> None:
        pass


def _flushes_while_waiting(
    timeout_ms: int, enabled: bool = True, available: bool = True, busy_slices: int = 0
) -> tuple[int, int]:
    """Flushes of a pending writer (while the task still had input, then once it waited)."""
    writer = FakeWriter(True)

    async def run() -> tuple[int, int]:
        mailbox = MailboxLoop(name="map (1/1)", loop=asyncio.get_running_loop(),
                              partitions=[Partition(available)], pace=TaskPace(2.0, 0.25))  # type: ignore[list-item]  # fmt: skip
        flush_when_idle(mailbox, [writer], timeout_ms, enabled)  # type: ignore[list-item]
        left = [busy_slices]
        while_busy: list[int] = []

        def slice_() -> None:
            left[0] -= 1
            while_busy.append(writer.flushes)

        ready = lambda: left[0] > 0  # noqa: E731
        stop = asyncio.Event()
        run = asyncio.ensure_future(mailbox.run(slice_, ready, stop.is_set))
        await asyncio.sleep(0.05)  # the input ran out: the task waits
        stop.set()
        mailbox.wake()
        await asyncio.wait_for(run, 5)
        return max(while_busy, default=0), writer.flushes

    return asyncio.run(run())


def test_a_task_about_to_wait_for_input_flushes_its_partly_filled_buffers() -> None:
    assert _flushes_while_waiting(100, busy_slices=3) == (0, 1)  # not while busy; once idle


@pytest.mark.parametrize(
    ("timeout_ms", "enabled", "available"),
    [(0, True, True), (-1, True, True), (100, False, True), (100, True, False)],
    ids=["timeout 0", "timeout -1 (full buffers only)", "switched off", "backpressured"],
)
def test_no_flush_when_idle(timeout_ms: int, enabled: bool, available: bool) -> None:
    assert _flushes_while_waiting(timeout_ms, enabled, available) == (0, 0)
