"""A task's periodic mails: the output flush of ``execution.buffer-timeout`` (and the flush
before the task waits for input, ``undertow.network.flush-when-idle``) and buffer debloating's
measuring tick (:mod:`undertow.runtime.network.gate_debloater`).

Threading: each is scheduled with the task loop's ``call_later`` and runs as a mail of the
task's mailbox, on the loop thread. Lifecycle: started once, when the task starts running;
the flush reschedules itself for the task's life (the loop ends with the task), the debloating
tick stops once the task is cancelled or every input gate finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from undertow.runtime.network.buffer_debloater import DebloatSettings
from undertow.runtime.network.gate_debloater import TaskDebloater
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.mailbox_loop import MailboxLoop

Post = Callable[[Callable[[], None]], None]


def schedule_flush(
    loop: asyncio.AbstractEventLoop, post: Post, writers: Sequence[RecordWriter], timeout_ms: int
) -> None:
    """Every ``timeout_ms`` (none if 0 or less, or without outputs), a mail sends every
    writer's partly filled buffers."""
    if timeout_ms <= 0 or not writers:
        return

    def flush() -> None:
        for writer in writers:
            if writer.has_pending:
                writer.flush_all()
        schedule_flush(loop, post, writers, timeout_ms)

    loop.call_later(timeout_ms / 1000.0, post, flush)


def flush_when_idle(
    mailbox: MailboxLoop, writers: Sequence[RecordWriter], timeout_ms: int, enabled: bool
) -> None:
    """``undertow.network.flush-when-idle``: before the task waits for input with its output
    available, it sends every writer's partly filled buffers, so a record does not wait for
    the buffer timeout while the task has nothing else to do. A busy task never waits, so it
    still fills whole buffers. Only with a positive ``execution.buffer-timeout`` (0 flushes
    every record already; -1 asks for full buffers only)."""
    if not enabled or timeout_ms <= 0 or not writers:
        return

    def flush() -> None:
        for writer in writers:
            if writer.has_pending:
                writer.flush_all()

    mailbox.before_starving = flush


def start_debloating(
    loop: asyncio.AbstractEventLoop,
    post: Post,
    mailbox: MailboxLoop,
    gates: Sequence[InputGate],
    settings: DebloatSettings,
) -> TaskDebloater:
    """Measure and announce buffer sizes once per period, as a mail, until the inputs end;
    the task's debloater (its statistics feed checkpoints and metrics)."""
    mailbox.input_blocked = lambda: any(g.has_blocked_channel() for g in gates)
    accounting = mailbox.time_accounting
    debloater = TaskDebloater(
        list(gates), settings, time.perf_counter() * 1000.0, accounting.times_ms()[2],
        accounting.starved_ms(),
    )  # fmt: skip

    def tick() -> None:
        if mailbox.cancelled or all(g.is_finished for g in gates):
            return
        debloater.tick(
            time.perf_counter() * 1000.0, accounting.times_ms()[2], accounting.starved_ms()
        )
        loop.call_later(debloater.next_tick_ms() / 1000.0, post, tick)

    loop.call_later(debloater.next_tick_ms() / 1000.0, post, tick)
    return debloater
