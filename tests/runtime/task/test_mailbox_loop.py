"""MailboxLoop: a busy task's next slice waits a loop turn for a checkpoint's work queued on
the worker's loop (a mail posted to another task, bytes on the control socket)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

from undertow.runtime.task.collect_credit import CollectCredit
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


async def _gated_run(credit: CollectCredit, slices: list[int], until: int) -> None:
    mailbox = MailboxLoop(name="gated", loop=asyncio.get_running_loop(), partitions=[],
                          pace=TaskPace(0.001, 0.001))  # fmt: skip

    class Sink:
        def output_gate(self) -> CollectCredit:
            return credit

    mailbox.gate_on([Sink(), object()])

    def one_slice() -> None:
        slices.append(1)
        credit.spend(4)

    await mailbox.run(one_slice, lambda: True, lambda: len(slices) >= until)


def test_a_gated_operator_without_credit_stops_the_slices_until_it_is_granted() -> None:
    """No slice runs while a collect sink has no credit; a grant wakes the loop."""

    async def run() -> list[int]:
        credit, slices = CollectCredit("s"), []
        running = asyncio.ensure_future(_gated_run(credit, slices, until=3))
        await asyncio.sleep(0.05)
        assert slices == []  # waiting for credit, backpressured
        credit.grant(8)  # two slices' worth
        await asyncio.sleep(0.05)
        assert slices == [1, 1]
        credit.grant(4)
        await asyncio.wait_for(running, 5)
        return slices

    assert asyncio.run(run()) == [1, 1, 1]
