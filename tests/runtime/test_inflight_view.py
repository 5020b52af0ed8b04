"""Channels as the checkpoint layer sees them: the in-flight views and their subscriptions."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.network.inflight_view import InflightInputView, InflightOutputView
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition


class Link:
    def __init__(self) -> None:
        self.sent: list[Send] = []

    def add_credit(self, credit: int) -> None: ...

    def resume(self) -> None: ...

    def deliver(self, send: Send) -> None:
        self.sent.append(send)


def test_input_channel_shows_its_queue_and_tells_its_sink_before_queueing() -> None:
    gate = InputGate("G", 0, 4)
    channel = gate.add_channel(0, "G/0", 4)
    channel.connect(Link())
    view: InflightInputView = channel
    seen: list[tuple[Any, int]] = []
    view.subscribe_arrivals(lambda payload: seen.append((payload, len(channel.queue))))
    first, second = Buffer(serialize_batch([1], None)), Buffer(b"half", partial=True)
    channel.on_send(Send(first, False, 0, 0))
    channel.on_send(Send("event", True, 1, 0))
    channel.on_send(Send("priority", True, 2, 0, True))
    assert seen == [(first, 0), ("event", 1), ("priority", 2)]  # before each was queued
    assert list(view.queued_normal()) == [first, "event"]
    assert view.queued_priority() == [("priority", 2)]  # two normal entries were ahead of it
    channel.on_send(Send(second, False, 3, 0))
    assert view.partial_record() == b""
    assert gate.poll() is not None and gate.poll() is not None  # priority, then the batch
    gate.poll()  # the event; then the partial buffer goes into the deserializer
    gate.poll()
    assert view.partial_record() == b"half"
    with pytest.raises(RuntimeError, match=r"G/0: arrivals already have a subscriber"):
        view.subscribe_arrivals(seen.append)


def test_subpartition_tells_its_sink_of_each_event_when_it_is_sent() -> None:
    partition = ResultPartition("P", [0], buffers_per_channel=2, floating_buffers=0,
                                max_buffers_per_channel=10)  # fmt: skip
    sp = partition.subpartitions[0]
    view: InflightOutputView = sp
    sent: list[object] = []
    view.subscribe_events_sent(sent.append)
    data = Buffer(b"a")
    sp.add_buffers([data])
    sp.add_event("barrier")
    assert sent == []  # no link yet: nothing left
    link = Link()
    sp.link = link
    sp.add_credit(1)
    assert sent == ["barrier"] and [s.payload for s in link.sent] == [data, "barrier"]
    with pytest.raises(RuntimeError, match=r"sent events already have a subscriber"):
        view.subscribe_events_sent(sent.append)
