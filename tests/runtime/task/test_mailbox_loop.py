"""MailboxLoop: a busy task's next slice waits a loop turn for a checkpoint's work queued on
the worker's loop (a mail posted to another task, bytes on the control socket)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

from undertow.runtime.task.mailbox_loop import MailboxLoop
from undertow.runtime.task.pace import TaskPace

SLICE_S = 0.01  # a long slice: one call of a slow batch function


def _loops(pace: TaskPace) -> tuple[MailboxLoop, MailboxLoop]:
    loop = asyncio.get_running_loop()
    busy = MailboxLoop(name="busy", loop=loop, partitions=[], pace=pace)
    source = MailboxLoop(name="source", loop=loop, partitions=[], pace=pace)
    return busy, source


async def _run(
    busy: MailboxLoop, source: MailboxLoop, log: list[str], slices: int,
    during_second: Callable[[], object] = lambda: None,
) -> None:  # fmt: skip
    def one_slice() -> None:
        log.append("slice")
        if log.count("slice") == 2:
            during_second()
        time.sleep(SLICE_S)

    busy_run = busy.run(one_slice, lambda: True, lambda: log.count("slice") >= slices)
    source_run = source.run(lambda: None, lambda: False, lambda: "mail" in log)
    await asyncio.wait_for(asyncio.gather(busy_run, source_run), 10)


def test_a_mail_posted_with_a_checkpoint_event_runs_before_the_busy_tasks_next_slice() -> None:
    async def main() -> list[str]:
        pace = TaskPace(2, 0.25)
        busy, source = _loops(pace)
        log: list[str] = []

        def route_trigger() -> None:  # what the control router does with a trigger
            log.append("routed")
            source.post(lambda: log.append("mail"))
            pace.hurry()

        asyncio.get_running_loop().call_later(SLICE_S / 2, route_trigger)
        await _run(busy, source, log, 4)
        return log

    log = asyncio.run(main())
    # routed after the slice that was running, the mail before the next one
    routed = log.index("routed")
    assert log[routed + 1] == "mail", log


def test_bytes_on_the_control_socket_are_read_and_routed_before_the_next_slice() -> None:
    async def main() -> list[str]:
        ours, jobmaster = socket.socketpair()
        pace = TaskPace(2, 0.25)
        pace.watch(ours.fileno())
        busy, source = _loops(pace)
        log: list[str] = []
        reader, writer = await asyncio.open_connection(sock=ours)

        async def control_loop() -> None:  # the worker's: read a message, route it
            await reader.readline()
            log.append("routed")
            source.post(lambda: log.append("mail"))
            pace.hurry()

        reading = asyncio.ensure_future(control_loop())
        try:
            await _run(busy, source, log, 6, lambda: jobmaster.send(b"trigger\n"))
            await reading
        finally:
            writer.close()
            jobmaster.close()
        return log

    log = asyncio.run(main())
    # the bytes arrived during the second slice; read, routed and the mail taken before the
    # third (the transport reads in one turn, the stream's reader hands them on in the next)
    assert log[:4] == ["slice", "slice", "routed", "mail"], log
