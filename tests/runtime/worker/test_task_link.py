"""What a subtask sends its worker's JobMaster: each call becomes one control message of the
worker's attempt, naming the subtask; a reader's wake-up hops onto the worker's loop."""

from __future__ import annotations

import asyncio
import socket
import threading

from undertow.core.types import AttemptNumber
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.control.messages import (
    AcknowledgeCheckpoint,
    CollectRecords,
    DeclineCheckpoint,
    PrintLines,
    SplitRequest,
)
from undertow.runtime.worker.task_link import ResponderToMaster, TaskServicesToMaster
from undertow.testing.worker import RecordingLink


class Source:
    def __init__(self) -> None:
        self.woken_on: list[int] = []

    def source_available(self) -> None:
        self.woken_on.append(threading.get_ident())


def test_services_send_their_subtasks_messages_under_the_workers_attempt() -> None:
    link = RecordingLink(attempt=AttemptNumber(3))
    loop = asyncio.new_event_loop()
    try:
        services = TaskServicesToMaster(link, 5, 1, loop)
        services.print_lines(["a", "b"])
        services.collect("sink-7", b"[1, 2]", 4)
        services.send_split_request()
    finally:
        loop.close()
    assert link.sent == [
        PrintLines(AttemptNumber(3), ["a", "b"]),
        CollectRecords(AttemptNumber(3), "sink-7", b"[1, 2]", 4),
        SplitRequest(AttemptNumber(3), 5, 1, socket.gethostname()),
    ]


def test_a_wake_from_another_thread_runs_on_the_workers_loop() -> None:
    source = Source()

    async def scenario() -> int:
        link = RecordingLink(tasks={(5, 1): source})
        services = TaskServicesToMaster(link, 5, 1, asyncio.get_running_loop())
        other = TaskServicesToMaster(link, 5, 2, asyncio.get_running_loop())  # not deployed
        thread = threading.Thread(target=lambda: (services.wake(), other.wake()))
        thread.start()
        thread.join()
        assert source.woken_on == []  # not on the reader's thread
        for _ in range(3):
            await asyncio.sleep(0)
        return threading.get_ident()

    loop_thread = asyncio.run(scenario())
    assert source.woken_on == [loop_thread]


def test_the_responder_acknowledges_and_declines_for_its_subtask() -> None:
    link = RecordingLink(attempt=AttemptNumber(2))
    responder = ResponderToMaster(link, 4, 0)
    responder.acknowledge(9, "handle", {"state_size": 10})
    declined = CheckpointFailureReason.CHECKPOINT_DECLINED
    responder.decline(10, declined, "Map (1/1): snapshot failed")
    assert link.sent == [
        AcknowledgeCheckpoint(AttemptNumber(2), 4, 0, 9, "handle", {"state_size": 10}),
        DeclineCheckpoint(AttemptNumber(2), 4, 0, 10, declined, "Map (1/1): snapshot failed"),
    ]


class ThreadAwareLink(RecordingLink):
    """Also records which of the worker's sends each message took."""

    def __init__(self) -> None:
        super().__init__(attempt=AttemptNumber(2))
        self.routes: list[str] = []

    def send(self, message: object) -> None:
        self.routes.append("loop")
        super().send(message)

    def send_from_any_thread(self, message: object) -> None:
        self.routes.append("any thread")
        super().send_from_any_thread(message)


def test_an_acknowledgement_from_an_io_thread_takes_the_any_thread_send() -> None:
    link = ThreadAwareLink()
    responder = ResponderToMaster(link, 4, 0)
    io_thread = threading.Thread(
        target=responder.acknowledge_from_any_thread, args=(9, "handle", {"state_size": 10})
    )
    io_thread.start()
    io_thread.join()
    responder.acknowledge(10, "other", {})
    assert link.sent == [
        AcknowledgeCheckpoint(AttemptNumber(2), 4, 0, 9, "handle", {"state_size": 10}),
        AcknowledgeCheckpoint(AttemptNumber(2), 4, 0, 10, "other", {}),
    ]
    assert link.routes == ["any thread", "loop"]


def test_a_collect_sinks_credit_is_the_workers_for_its_sink_id() -> None:
    link = RecordingLink()
    loop = asyncio.new_event_loop()
    try:
        services = TaskServicesToMaster(link, 5, 0, loop)
        link.collect_credits.grant("sink-7", 10)  # a grant that came before the sink asked
        credit = services.collect_credit("sink-7")
    finally:
        loop.close()
    assert credit is link.collect_credits.gate("sink-7") and credit.is_available()
    assert not services.collect_credit("other").is_available()
