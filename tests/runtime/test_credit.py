"""Credit protocol core: unit tests and a Hypothesis state machine over an in-order wire."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from undertow.core.errors import ConfigurationError, NetworkError
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.credit import (
    ProtocolViolation,
    ReceiverChannel,
    ReceiverGate,
    Send,
    SenderChannel,
)
from undertow.runtime.network.prioritized_deque import PrioritizedDeque

# -- sender ---------------------------------------------------------------------------------------


def test_data_needs_credit_events_do_not() -> None:
    sender = SenderChannel(0, name="sp0")
    sender.add_data("d0")
    sender.add_event("e1")
    assert not sender.is_available
    assert sender.poll() is None
    sender.add_credit(1)
    assert sender.poll() == Send("d0", False, 0, 0)
    assert sender.credit == 0
    assert sender.poll() == Send("e1", True, 1, 0)
    assert sender.poll() is None


def test_sequence_numbers_and_backlog() -> None:
    sender = SenderChannel(2)
    for name in ("d0", "d1", "d2"):
        sender.add_data(name)
    assert sender.backlog == 3
    first, second = sender.poll(), sender.poll()
    assert first == Send("d0", False, 0, 2)
    assert second == Send("d1", False, 1, 1)
    assert sender.poll() is None  # out of credit
    assert sender.queued_data_buffers == 1


def test_blocking_event_blocks_until_resume() -> None:
    sender = SenderChannel(5, name="sp0")
    sender.add_event("barrier", blocks_upstream=True)
    sender.add_data("d0")
    send = sender.poll()
    assert send == Send("barrier", True, 0, 0, priority=False, blocks_upstream=True)
    assert sender.is_blocked
    assert sender.backlog == 0  # reported as 0 while blocked, as in Flink
    assert sender.queued_data_buffers == 1
    sender.add_event("priority", priority=True)
    assert sender.poll() is None  # nothing at all while blocked
    sender.resume()
    sends = [sender.poll(), sender.poll()]
    assert [s.payload for s in sends if s is not None] == ["priority", "d0"]
    with pytest.raises(ProtocolViolation, match="sp0: ResumeConsumption while not blocked"):
        sender.resume()


def test_add_credit_must_be_positive() -> None:
    sender = SenderChannel(name="sp3")
    with pytest.raises(ProtocolViolation, match="sp3: AddCredit must be positive, got 0"):
        sender.add_credit(0)


def test_overtake_captures_queued_data_and_keeps_it_queued() -> None:
    sender = SenderChannel(0)
    sender.add_data("d0")
    sender.add_event("e0")
    sender.add_data("d1")
    sender.add_event("p0", priority=True)
    assert sender.overtake_with_priority_event("uc-barrier") == ["d0", "d1"]
    payloads = [sender.poll(), sender.poll(), sender.poll()]
    assert [s.payload for s in payloads if s is not None] == ["p0", "uc-barrier"]
    assert payloads[2] is None  # d0 is at the head and there is no credit
    sender.add_credit(2)
    rest = [sender.poll() for _ in range(4)]
    assert [s.payload for s in rest if s is not None] == ["d0", "e0", "d1"]


def test_prioritize_event_converts_a_queued_barrier() -> None:
    sender = SenderChannel(0)
    sender.add_data("d0")
    sender.add_event(("barrier", 7), blocks_upstream=True)
    sender.add_data("d1")
    assert sender.prioritize_event(lambda p: p == ("barrier", 8), "x") is None
    overtaken = sender.prioritize_event(lambda p: p == ("barrier", 7), ("uc-barrier", 7))
    assert overtaken == ["d0"]
    send = sender.poll()
    assert send == Send(("uc-barrier", 7), True, 0, 2, priority=True, blocks_upstream=False)
    assert not sender.is_blocked


# -- receiver -------------------------------------------------------------------------------------


def test_sequence_gap_and_repeat_are_violations() -> None:
    receiver = ReceiverChannel(ReceiverGate(8), 2, name="map[1]<-src[0]")
    receiver.on_buffer(0, 0, is_event=True)
    with pytest.raises(ProtocolViolation, match=r"map\[1\]<-src\[0\].*gap.*expected .* 1, got 3"):
        receiver.on_buffer(3, 0, is_event=True)
    with pytest.raises(NetworkError, match=r"repeated.*expected .* 1, got 0"):
        receiver.on_buffer(0, 0, is_event=True)
    receiver.on_buffer(1, 0, is_event=False)  # state unchanged by the violations
    assert receiver.queued_data_buffers == 1


def test_data_without_credit_is_a_violation() -> None:
    receiver = ReceiverChannel(ReceiverGate(0), 1, name="ch")
    receiver.on_buffer(0, 0, is_event=False)
    with pytest.raises(ProtocolViolation, match="ch: data buffer 1 arrived without credit"):
        receiver.on_buffer(1, 0, is_event=False)
    receiver.on_buffer(1, 0, is_event=True)  # events need no buffer
    receiver.on_data_consumed()
    assert receiver.take_unannounced_credit() == 1
    assert receiver.take_unannounced_credit() == 0
    with pytest.raises(ProtocolViolation, match="no queued data buffer"):
        receiver.on_data_consumed()


def test_backlog_requests_floating_buffers() -> None:
    gate = ReceiverGate(8)
    receiver = ReceiverChannel(gate, 2)
    receiver.on_buffer(0, 3, is_event=False)  # occupies an exclusive buffer; wants 3 + 2 free
    assert receiver.free_buffers == 5
    assert receiver.floating_buffers == 4
    assert receiver.unannounced_credit == 4
    assert gate.floating_in_use == 4
    receiver.on_buffer(1, 0, is_event=False)  # takes a floating buffer first
    receiver.on_data_consumed()  # exclusive comes back; a spare floating one goes to the gate
    assert gate.floating_in_use == 3
    assert receiver.free_buffers == 4
    assert receiver.take_unannounced_credit() == 4  # the swap announced nothing new
    receiver.on_data_consumed()  # a floating buffer: back to the gate
    assert gate.floating_in_use == 2


def test_returned_floating_buffers_go_to_waiters_in_request_order() -> None:
    gate = ReceiverGate(1)
    a, b, c = (ReceiverChannel(gate, 1, name=n) for n in "abc")
    c.on_buffer(0, 1, is_event=True)  # c wants 2 free: takes the only floating buffer
    c.on_buffer(1, 0, is_event=False)  # ... and fills it
    a.on_buffer(0, 2, is_event=True)  # a wants 3, has 1: waits
    b.on_buffer(0, 1, is_event=True)  # b wants 2, has 1: waits
    assert gate.floating_in_use == 1
    c.on_data_consumed()
    assert (a.unannounced_credit, b.unannounced_credit) == (1, 0)  # a asked first
    a.on_buffer(1, 2, is_event=False)  # fills a's floating buffer; a still wants more
    a.on_data_consumed()
    assert (a.unannounced_credit, b.unannounced_credit) == (1, 1)  # now b's turn
    assert gate.floating_in_use == 1


def test_waiter_keeps_its_place_until_satisfied() -> None:
    gate = ReceiverGate(2)
    a, c = ReceiverChannel(gate, 1, name="a"), ReceiverChannel(gate, 1, name="c")
    c.on_buffer(0, 2, is_event=True)  # c takes both floating buffers
    c.on_buffer(1, 1, is_event=False)
    c.on_buffer(2, 0, is_event=False)
    a.on_buffer(0, 3, is_event=True)  # a wants 3 more: waits
    c.on_data_consumed()
    c.on_data_consumed()
    assert a.unannounced_credit == 2  # both returned buffers went to a
    assert gate.floating_in_use == 2


def test_blocking_event_on_receiver() -> None:
    receiver = ReceiverChannel(ReceiverGate(), name="ch")
    receiver.on_buffer(0, 0, is_event=True, blocks_upstream=True)
    assert receiver.is_blocked
    with pytest.raises(ProtocolViolation, match="after a blocking event"):
        receiver.on_buffer(1, 0, is_event=False)
    receiver.resume()
    receiver.on_buffer(1, 0, is_event=False)
    with pytest.raises(ProtocolViolation, match="ch: resume"):
        receiver.resume()


def test_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="buffers-per-channel"):
        ReceiverChannel(ReceiverGate(), 0)
    with pytest.raises(ConfigurationError, match="floating-buffers-per-gate"):
        ReceiverGate(-1)


# -- state machine: one gate, several channels, an in-order lossless wire both ways ----------------


@dataclass(frozen=True, slots=True)
class Entry:
    is_event: bool
    priority: bool = False
    blocks: bool = False


@dataclass(frozen=True, slots=True)
class AddCredit:
    credit: int


@dataclass(frozen=True, slots=True)
class ResumeConsumption:
    pass


@dataclass(frozen=True, slots=True)
class NewBufferSize:
    size: int
    max_records: int


channel_index = st.integers(0, 3)
count = st.integers(1, 4)


class CreditProtocol(RuleBasedStateMachine):
    """n sender/receiver pairs on one gate, joined by in-order lossless wires both ways.

    Payloads are unique ints; the model keeps, per channel, the normal and priority entries not
    yet sent (in the order they must leave), everything sent and delivered, the messages in
    flight each way and the task's input queue. ``teardown`` drains everything (liveness) and
    checks that each entry arrived exactly once.
    """

    @initialize(n=st.integers(1, 4), initial_credit=st.integers(1, 3), floating=st.integers(0, 6))
    def setup(self, n: int, initial_credit: int, floating: int) -> None:
        self.n = n
        self.gate = ReceiverGate(floating)
        self.receivers = [ReceiverChannel(self.gate, initial_credit) for _ in range(n)]
        self.senders = [
            SenderChannel(r.initial_credit, name=f"sp{i}") for i, r in enumerate(self.receivers)
        ]
        self.down: list[deque[Send]] = [deque() for _ in range(n)]
        self.up: list[deque[AddCredit | ResumeConsumption | NewBufferSize]] = [
            deque() for _ in range(n)
        ]
        self.announced: list[NewBufferSize | None] = [None] * n  # delivered last, per channel
        self.inputs: list[PrioritizedDeque[Send]] = [PrioritizedDeque() for _ in range(n)]
        self.entries: dict[object, Entry] = {}
        self.normal_pending: list[deque[int]] = [deque() for _ in range(n)]
        self.priority_pending: list[deque[int]] = [deque() for _ in range(n)]
        self.converted: set[int] = set()
        self.sent: list[list[Send]] = [[] for _ in range(n)]
        self.delivered: list[list[Send]] = [[] for _ in range(n)]
        self.next_id = 0

    def _new(self, c: int, entry: Entry) -> int:
        self.next_id += 1
        self.entries[self.next_id] = entry
        pending = self.priority_pending if entry.priority else self.normal_pending
        pending[c].append(self.next_id)
        return self.next_id

    def _queued_data(self, c: int) -> list[int]:
        return [i for i in self.normal_pending[c] if not self.entries[i].is_event]

    # -- producer -----------------------------------------------------------------------------

    @rule(c=channel_index, k=count)
    def add_data(self, c: int, k: int) -> None:
        c %= self.n
        for _ in range(k):
            self.senders[c].add_data(self._new(c, Entry(False)))

    @rule(c=channel_index, priority=st.booleans(), blocks=st.booleans())
    def add_event(self, c: int, priority: bool, blocks: bool) -> None:
        c %= self.n
        self.senders[c].add_event(self._new(c, Entry(True, priority, blocks)), priority, blocks)

    @rule(c=channel_index)
    def overtake(self, c: int) -> None:
        c %= self.n
        expected = self._queued_data(c)
        payload = self._new(c, Entry(True, priority=True))
        assert self.senders[c].overtake_with_priority_event(payload) == expected

    @rule(c=channel_index, k=st.integers(0, 10))
    def convert_queued_event(self, c: int, k: int) -> None:
        c %= self.n
        events = [i for i in self.normal_pending[c] if self.entries[i].is_event]
        if not events:
            assert self.senders[c].prioritize_event(lambda p: True, -1) is None
            return
        target = events[k % len(events)]
        pending = list(self.normal_pending[c])
        ahead = pending[: pending.index(target)]
        expected = [i for i in ahead if not self.entries[i].is_event]
        replacement = self._new(c, Entry(True, priority=True))
        assert self.senders[c].prioritize_event(lambda p: p == target, replacement) == expected
        self.normal_pending[c].remove(target)
        self.converted.add(target)

    # -- sender, wire, receiver ----------------------------------------------------------------

    @rule(c=channel_index, k=count)
    def sender_polls(self, c: int, k: int) -> None:
        c %= self.n
        sender = self.senders[c]
        for _ in range(k):
            credit, available = sender.credit, sender.is_available
            send = sender.poll()
            assert (send is not None) == available
            if send is None:
                return
            entry = self.entries[send.payload]
            assert (send.is_event, send.priority, send.blocks_upstream) == (
                entry.is_event,
                entry.priority,
                entry.blocks,
            )
            if not send.is_event:
                assert credit > 0, "data buffer sent without credit"
                assert sender.credit == credit - 1
            if entry.priority:
                assert self.priority_pending[c].popleft() == send.payload
            else:
                assert not self.priority_pending[c], "a normal entry overtook a priority event"
                assert self.normal_pending[c].popleft() == send.payload
            assert send.sequence_number == len(self.sent[c])
            assert send.backlog == (0 if send.blocks_upstream else len(self._queued_data(c)))
            assert sender.is_blocked == send.blocks_upstream
            self.sent[c].append(send)
            self.down[c].append(send)

    @rule(c=channel_index, k=count)
    def deliver_to_receiver(self, c: int, k: int) -> None:
        c %= self.n
        for _ in range(min(k, len(self.down[c]))):
            send = self.down[c].popleft()
            self.receivers[c].on_buffer(
                send.sequence_number,
                send.backlog,
                send.is_event,
                blocks_upstream=send.blocks_upstream,
            )
            assert self.sent[c][len(self.delivered[c])] is send
            self.delivered[c].append(send)
            self.inputs[c].add(send, send.priority)

    @rule(c=channel_index, k=count)
    def deliver_to_sender(self, c: int, k: int) -> None:
        c %= self.n
        for _ in range(min(k, len(self.up[c]))):
            message = self.up[c].popleft()
            if isinstance(message, AddCredit):
                self.senders[c].add_credit(message.credit)
            elif isinstance(message, NewBufferSize):  # buffer debloating: no credit effect
                self.senders[c].new_buffer_size(message.size, message.max_records)
                self.announced[c] = message
            else:
                self.senders[c].resume()

    @rule(c=channel_index, k=count)
    def task_consumes(self, c: int, k: int) -> None:
        c %= self.n
        for _ in range(k):
            send = self.inputs[c].poll()
            if send is None:
                return
            if not send.is_event:
                self.receivers[c].on_data_consumed()

    @rule(c=channel_index)
    def receiver_announces_credit(self, c: int) -> None:
        c %= self.n
        credit = self.receivers[c].take_unannounced_credit()
        assert credit >= 0
        if credit:
            self.up[c].append(AddCredit(credit))

    @rule(c=channel_index, size=st.integers(256, 32768), records=st.integers(1, 5000))
    def gate_announces_buffer_size(self, c: int, size: int, records: int) -> None:
        self.up[c % self.n].append(NewBufferSize(size, records))

    @rule(c=channel_index)
    def consumer_resumes(self, c: int) -> None:
        c %= self.n
        if self.receivers[c].is_blocked:
            self.receivers[c].resume()
            self.up[c].append(ResumeConsumption())

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def senders_obey_the_protocol(self) -> None:
        for c, sender in enumerate(self.senders):
            assert sender.credit >= 0
            head = sender.peek()
            if head is not None and not sender.is_blocked and (head.is_event or sender.credit > 0):
                assert sender.is_available, "an event (or credited data) is held back"
            assert sender.queued_data_buffers == len(self._queued_data(c))
            assert sender.backlog == (0 if sender.is_blocked else sender.queued_data_buffers)
            if sender.is_blocked:
                stages = (
                    any(s.blocks_upstream for s in self.down[c]),
                    self.receivers[c].is_blocked,
                    any(isinstance(m, ResumeConsumption) for m in self.up[c]),
                )
                assert sum(stages) == 1, stages

    @invariant()
    def senders_keep_the_last_announced_size(self) -> None:
        for sender, announced in zip(self.senders, self.announced, strict=True):
            got = (sender.buffer_size, sender.max_records)
            assert got == ((None, None) if announced is None
                           else (announced.size, announced.max_records))  # fmt: skip

    @invariant()
    def credit_never_exceeds_free_buffers(self) -> None:
        for c, receiver in enumerate(self.receivers):
            in_flight_credit = sum(m.credit for m in self.up[c] if isinstance(m, AddCredit))
            in_flight_data = sum(1 for s in self.down[c] if not s.is_event)
            announced = self.senders[c].credit + in_flight_credit + in_flight_data
            assert self.senders[c].credit <= receiver.free_buffers
            assert announced + receiver.unannounced_credit == receiver.free_buffers

    @invariant()
    def receivers_hold_only_buffers_they_own(self) -> None:
        total_floating = 0
        for c, receiver in enumerate(self.receivers):
            owned = receiver.initial_credit + receiver.floating_buffers
            queued = sum(1 for s in self.inputs[c] if not s.is_event)
            assert receiver.queued_data_buffers == queued
            assert queued <= owned
            assert queued + receiver.free_buffers == owned
            free_exclusive = receiver.free_buffers - receiver.free_floating_buffers
            assert 0 <= free_exclusive <= receiver.initial_credit
            assert 0 <= receiver.free_floating_buffers <= receiver.floating_buffers
            if receiver.required_buffers > receiver.free_buffers:
                # a channel short of buffers is never left behind while the pool has some
                assert self.gate.floating_in_use == self.gate.floating
            total_floating += receiver.floating_buffers
        assert total_floating == self.gate.floating_in_use <= self.gate.floating

    def _quiescent(self) -> bool:
        return not (
            any(s.is_available for s in self.senders)
            or any(self.down)
            or any(self.up)
            or any(self.inputs)
            or any(r.is_blocked or r.unannounced_credit for r in self.receivers)
        )

    def teardown(self) -> None:
        if not hasattr(self, "senders"):
            return
        # Liveness: drain everything; every entry must arrive exactly once.
        for _ in range(10_000):
            if self._quiescent():
                break
            for c in range(self.n):
                self.sender_polls(c, 1_000)
                self.deliver_to_receiver(c, 1_000)
                self.task_consumes(c, 1_000)
                self.receiver_announces_credit(c)
                self.consumer_resumes(c)
                self.deliver_to_sender(c, 1_000)
        self.senders_obey_the_protocol()
        self.credit_never_exceeds_free_buffers()
        self.receivers_hold_only_buffers_they_own()
        for c in range(self.n):
            assert self.senders[c].peek() is None, f"channel {c} is stuck"
            assert self.delivered[c] == self.sent[c]
        delivered = [s.payload for sends in self.delivered for s in sends]
        assert len(delivered) == len(set(delivered))
        assert set(delivered) == set(self.entries) - self.converted


CreditProtocol.TestCase.settings = settings(
    max_examples=300, stateful_step_count=60, deadline=None, derandomize=True
)
test_credit_protocol = CreditProtocol.TestCase


def test_queued_data_bytes_counts_the_data_buffers_only() -> None:
    sender = SenderChannel(0, name="sp")
    sender.add_data(Buffer(b"abc"))
    sender.add_event("an event")
    sender.add_data(Buffer(b"de"))
    assert sender.queued_data_bytes() == 5
    sender.add_credit(1)
    assert sender.poll() is not None  # the first buffer goes
    assert sender.queued_data_bytes() == 2
