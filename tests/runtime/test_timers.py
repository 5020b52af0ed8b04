"""Timer service: set semantics, firing order, current key during callbacks, processing time."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.types import MAX_WATERMARK
from undertow.runtime.task.timers import InternalTimer, InternalTimerService
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import assign_to_key_group


class ManualClock:
    def __init__(self) -> None:
        self.now = 0
        self.pending: list[tuple[int, Any]] = []

    def current_processing_time(self) -> int:
        return self.now

    def register_timer(self, timestamp: int, callback: Any) -> Any:
        clock = self

        class Handle:
            def cancel(self) -> None:
                clock.pending = [
                    (t, c) for t, c in clock.pending if c is not callback or t != timestamp
                ]

        self.pending.append((timestamp, callback))
        return Handle()

    def advance(self, to: int) -> None:
        self.now = to
        due = sorted((p for p in self.pending if p[0] <= to), key=lambda p: p[0])
        self.pending = [p for p in self.pending if p[0] > to]
        for timestamp, callback in due:
            callback(timestamp)


class Recorder:
    """Records every timer fired, checking the backend's current key (any keyed backend)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.fired: list[tuple[str, int, Any, Any]] = []

    def on_event_time(self, timer: InternalTimer) -> None:
        assert self.backend.get_current_key() == timer.key
        self.fired.append(("event", timer.timestamp, timer.key, timer.namespace))

    def on_processing_time(self, timer: InternalTimer) -> None:
        assert self.backend.get_current_key() == timer.key
        self.fired.append(("processing", timer.timestamp, timer.key, timer.namespace))


def _service() -> tuple[InternalTimerService, HeapKeyedStateBackend, Recorder, ManualClock]:
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    recorder = Recorder(backend)
    clock = ManualClock()
    return InternalTimerService("t", backend, recorder, clock), backend, recorder, clock


def test_event_timers_fire_in_order_once_and_with_their_key() -> None:
    service, backend, recorder, _ = _service()
    for key, ts in [("a", 5), ("b", 3), ("a", 5), ("c", 9)]:
        backend.set_current_key(key)
        service.register_event_time_timer("ns", ts)
    assert service.num_event_time_timers() == 3
    service.advance_watermark(5)
    assert [(ts, key) for _, ts, key, _ in recorder.fired] == [(3, "b"), (5, "a")]
    service.advance_watermark(100)
    assert recorder.fired[-1][1:3] == (9, "c")
    assert service.num_event_time_timers() == 0


def test_deleted_timer_does_not_fire_and_can_be_registered_again() -> None:
    service, backend, recorder, _ = _service()
    backend.set_current_key("k")
    service.register_event_time_timer("ns", 10)
    service.delete_event_time_timer("ns", 10)
    service.advance_watermark(20)
    assert recorder.fired == []
    service.register_event_time_timer("ns", 30)
    service.advance_watermark(30)
    assert recorder.fired == [("event", 30, "k", "ns")]


class Following(Recorder):
    """Each fired event-time timer below ``until`` registers the next, ``step`` later (as a
    ContinuousEventTimeTrigger does)."""

    def __init__(self, backend: Any, service: list[InternalTimerService], step: int,
                 until: int) -> None:  # fmt: skip
        super().__init__(backend)
        self.service, self.step, self.until = service, step, until

    def on_event_time(self, timer: InternalTimer) -> None:
        super().on_event_time(timer)
        if timer.timestamp + self.step < self.until:
            self.service[0].register_event_time_timer(timer.namespace, timer.timestamp + self.step)


def test_a_timer_registered_by_a_firing_at_or_below_the_watermark_fires_at_the_next_advance(
) -> None:  # fmt: skip
    """PyFlink's rule (its corpus program continuous_event_time_trigger prints it): Java Flink
    would fire 2, 4, 6 and 8 in the first advance already."""
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    holder: list[InternalTimerService] = []
    recorder = Following(backend, holder, step=2, until=10)
    service = InternalTimerService("t", backend, recorder, ManualClock())
    holder.append(service)
    backend.set_current_key("k")
    service.register_event_time_timer("ns", 2)
    service.register_event_time_timer("ns", 3)  # registered before the advance: fires in it
    service.advance_watermark(100)
    assert [ts for _, ts, _, _ in recorder.fired] == [2, 3]
    assert service.num_event_time_timers() == 2, "4 and 5 wait for the next advance"
    service.advance_watermark(100)
    assert [ts for _, ts, _, _ in recorder.fired] == [2, 3, 4, 5]
    service.advance_watermark(101)
    service.advance_watermark(102)
    assert [ts for _, ts, _, _ in recorder.fired] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert service.num_event_time_timers() == 0
    backend.set_current_key("k")
    service.register_event_time_timer("ns", 50)  # between advances: fires in the next one
    service.advance_watermark(102)
    assert recorder.fired[-1][1] == 50


def test_at_the_end_of_the_input_timers_registered_by_firings_fire_until_none_is_left() -> None:
    """PyFlink fires a timer that ``on_timer`` re-arms again and again at the end of the input
    (corpus program timers_delete_and_reregister); before, the MAX watermark fired only the
    timers registered before it and the re-armed ones never fired."""
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    holder: list[InternalTimerService] = []
    recorder = Following(backend, holder, step=1000, until=10_000)
    service = InternalTimerService("t", backend, recorder, ManualClock())
    holder.append(service)
    backend.set_current_key("k")
    service.register_event_time_timer("ns", 7000)
    service.advance_watermark(MAX_WATERMARK)
    assert [ts for _, ts, _, _ in recorder.fired] == [7000, 8000, 9000]
    assert service.num_event_time_timers() == 0


def test_a_timer_held_for_the_next_advance_stays_pending_while_the_firing_waits() -> None:
    """A firing that waits for the output (a snapshot may be taken meanwhile) keeps the held
    timer in the queue; it still does not fire in this advance."""
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    holder: list[InternalTimerService] = []
    output = Output(capacity=1)

    class Counting(Following):
        def on_event_time(self, timer: InternalTimer) -> None:
            super().on_event_time(timer)
            output.capacity -= 1

    recorder = Counting(backend, holder, step=1, until=3)
    service = InternalTimerService("t", backend, recorder, ManualClock(), output)
    holder.append(service)
    for key in "ab":
        backend.set_current_key(key)
        service.register_event_time_timer("ns", 1)
    assert not service.advance_watermark(10), "the output is full after one firing"
    assert service.num_event_time_timers() == 2, "b's timer at 1 and a's at 2, held"
    output.drain(capacity=10)
    assert [(ts, key) for _, ts, key, _ in recorder.fired] == [(1, "a"), (1, "b")]
    assert service.num_event_time_timers() == 2
    service.advance_watermark(10)
    assert sorted((ts, key) for _, ts, key, _ in recorder.fired[2:]) == [(2, "a"), (2, "b")]


def test_processing_timers_fire_when_the_clock_passes_them() -> None:
    service, backend, recorder, clock = _service()
    backend.set_current_key("x")
    service.register_processing_time_timer("ns", 50)
    service.register_processing_time_timer("ns", 20)
    clock.advance(30)
    assert recorder.fired == [("processing", 20, "x", "ns")]
    clock.advance(60)
    assert recorder.fired[-1] == ("processing", 50, "x", "ns")
    assert service.num_processing_time_timers() == 0


def test_fire_all_processing_timers_at_end_of_input() -> None:
    service, backend, recorder, _ = _service()
    for key in "abc":
        backend.set_current_key(key)
        service.register_processing_time_timer("ns", 1000)
    service.fire_all_processing_timers()
    assert sorted(k for _, _, k, _ in recorder.fired) == ["a", "b", "c"]


@settings(max_examples=100, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["add", "delete", "watermark"]), st.integers(0, 5), st.integers(0, 40)
        ),
        max_size=40,
    )
)
def test_event_timers_match_a_set_model(ops: list[tuple[str, int, int]]) -> None:
    service, backend, recorder, _ = _service()
    live: set[tuple[int, int]] = set()
    watermark = -1
    for op, key, ts in ops:
        if op == "watermark":
            watermark = max(watermark, ts)
            expected = sorted(t for t in live if t[1] <= watermark)
            before = len(recorder.fired)
            service.advance_watermark(watermark)
            fired = [(k, t) for _, t, k, _ in recorder.fired[before:]]
            assert sorted(fired, key=lambda p: (p[1], p[0])) == sorted(
                expected, key=lambda p: (p[1], p[0])
            )
            assert [t for _, t in fired] == sorted(t for _, t in fired)
            live -= set(expected)
        else:
            backend.set_current_key(key)
            if op == "add":
                service.register_event_time_timer("ns", ts)
                live.add((key, ts))  # at or below the watermark: fires with the next advance
            else:
                service.delete_event_time_timer("ns", ts)
                live.discard((key, ts))


class Output:
    """A task output that can take ``capacity`` more timer firings, then waits for a drain."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.waiting: list[Any] = []

    def is_output_available(self) -> bool:
        return self.capacity > 0

    def when_output_available(self, action: Any) -> None:
        self.waiting.append(action)

    def slice_deadline(self) -> float:
        return float("inf")  # these tests bound by output only; see test_..._one_slice

    def hold_input(self) -> None:
        pass

    def release_input(self) -> None:
        pass

    def drain(self, capacity: int) -> None:
        self.capacity = capacity
        waiting, self.waiting = self.waiting, []
        for action in waiting:
            action()


def test_due_processing_timers_wait_while_the_output_is_unavailable() -> None:
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    clock = ManualClock()
    output = Output(capacity=2)

    class Emitting(Recorder):
        def on_processing_time(self, timer: InternalTimer) -> None:
            super().on_processing_time(timer)
            output.capacity -= 1  # each firing fills one buffer

    recorder = Emitting(backend)
    service = InternalTimerService("t", backend, recorder, clock, output)
    for key in "abcde":
        backend.set_current_key(key)
        service.register_processing_time_timer("ns", 10)
    backend.set_current_key("z")
    service.register_processing_time_timer("ns", 50)
    clock.advance(20)
    assert [k for _, _, k, _ in recorder.fired] == ["a", "b"], "stops when the output is full"
    assert service.num_processing_time_timers() == 4 and len(output.waiting) == 1
    backend.set_current_key("f")
    service.register_processing_time_timer("ns", 15)  # due too: joins the waiting ones
    clock.advance(30)  # a wake-up while waiting fires nothing
    assert len(recorder.fired) == 2
    output.drain(capacity=100)
    assert len(recorder.fired) == 2  # the continuation goes through the service (quiescing)
    clock.advance(clock.now)
    assert [k for _, _, k, _ in recorder.fired] == ["a", "b", "c", "d", "e", "f"]  # by time
    assert service.num_processing_time_timers() == 1  # "z" is not due: scheduled again
    clock.advance(50)
    assert recorder.fired[-1][2] == "z"


def test_timers_waiting_for_the_output_do_not_fire_after_the_service_quiesced() -> None:
    """End of data quiesces the operator's processing-time service (Flink's rule); timers that
    were due but waiting for output buffers must not fire after that either."""
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)

    class QuiescingClock(ManualClock):
        quiesced = False

        def register_timer(self, timestamp: int, callback: Any) -> Any:
            return None if self.quiesced else super().register_timer(timestamp, callback)

    clock = QuiescingClock()
    output = Output(capacity=1)

    class Emitting(Recorder):
        def on_processing_time(self, timer: InternalTimer) -> None:
            super().on_processing_time(timer)
            output.capacity -= 1

    recorder = Emitting(backend)
    service = InternalTimerService("t", backend, recorder, clock, output)
    for key in "abc":
        backend.set_current_key(key)
        service.register_processing_time_timer("ns", 10)
    clock.advance(20)
    assert len(recorder.fired) == 1 and len(output.waiting) == 1
    clock.quiesced = True  # the data ended
    output.drain(capacity=100)
    clock.advance(100)
    assert len(recorder.fired) == 1
    assert service.num_processing_time_timers() == 2  # still keyed state (a savepoint has them)


def test_a_burst_of_due_timers_yields_after_one_slice_and_goes_on_in_a_later_mail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A window firing thousands of keys at once must not hold the mailbox: once the slice is
    over, the rest of the burst comes back as a mail (a timer at ``now``), in timestamp order.
    Time is counted in firings here: each timer takes one unit, a slice is three."""
    import undertow.runtime.task.timers as timers

    ticks = iter(range(1, 10**6))
    now = [0]

    def fake_clock() -> float:
        return float(now[0])

    monkeypatch.setattr(timers, "perf_counter", fake_clock)
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    clock = ManualClock()

    class SlicedOutput(Output):
        def slice_deadline(self) -> float:
            return now[0] + 3.0

    output = SlicedOutput(capacity=10**6)

    class Ticking(Recorder):
        def on_processing_time(self, timer: InternalTimer) -> None:
            super().on_processing_time(timer)
            now[0] = next(ticks)  # each firing takes one unit of time

    recorder = Ticking(backend)
    service = InternalTimerService("t", backend, recorder, clock, output)
    for i, key in enumerate("abcdefgh"):
        backend.set_current_key(key)
        service.register_processing_time_timer("ns", 10 + i % 2)
    clock.advance(20)
    assert len(recorder.fired) == 3, "the first mail fires one slice's worth"
    mails = 1
    while service.num_processing_time_timers():
        clock.advance(clock.now)  # the continuation was registered at ``now``
        mails += 1
    assert [k for _, _, k, _ in recorder.fired] == list("acegbdfh")  # by timestamp
    assert mails == 3


def test_a_timer_snapshot_is_the_timers_at_the_snapshot_and_pickles_only_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The synchronous part copies the timer sets; grouping and pickling wait until the blobs
    are read, and timers registered or fired after the snapshot do not reach it."""
    from undertow.runtime.task import timers as timers_module
    from undertow.runtime.task.timers import TimerServiceManager

    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    clock = ManualClock()
    manager = TimerServiceManager(backend, clock)
    service = manager.get("window", Recorder(backend))
    for key in range(300):
        backend.set_current_key(key)
        service.register_processing_time_timer("w", 1000 + key)
        service.register_event_time_timer("w", 5000 + key)
    hashed: list[Any] = []
    real = timers_module.assign_to_key_group
    monkeypatch.setattr(timers_module, "assign_to_key_group",
                        lambda key, maxp: hashed.append(key) or real(key, maxp))  # fmt: skip

    blobs = manager.snapshot()
    assert hashed == [], "nothing is grouped or pickled in the synchronous part"
    backend.set_current_key(999)
    service.register_event_time_timer("w", 7)  # after the snapshot
    clock.advance(1100)  # fires processing-time timers 1000..1100 after the snapshot

    restored_backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    restored = TimerServiceManager(restored_backend, ManualClock())
    restored.restore(dict(blobs.items()))
    again = restored.get("window", Recorder(restored_backend))
    assert sorted(hashed) == list(range(300)), "each key hashed once, for its two timers"
    assert sorted((t.timestamp, t.key) for t in again.processing_time_timers()) == [
        (1000 + k, k) for k in range(300)
    ]
    assert sorted((t.timestamp, t.key) for t in again.event_time_timers()) == [
        (5000 + k, k) for k in range(300)
    ]


def test_timers_of_a_snapshot_written_as_a_list_restore() -> None:
    """Blobs written before 2026-12-01 hold a list of (service, domain, ts, key, ns)."""
    from undertow.runtime.task.timers import TimerServiceManager

    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    old = [("window", "event", 5000, 7, "w"), ("window", "processing", 1000, 7, "w")]
    manager = TimerServiceManager(backend, ManualClock())
    manager.restore({assign_to_key_group(7, 128): pickle.dumps(old)})
    service = manager.get("window", Recorder(backend))
    assert [(t.timestamp, t.key) for t in service.event_time_timers()] == [(5000, 7)]
    assert [(t.timestamp, t.key) for t in service.processing_time_timers()] == [(1000, 7)]


def test_timers_restored_for_a_service_not_made_yet_go_into_the_next_snapshot() -> None:
    """A restored operator that has not created a timer service yet still snapshots its
    timers, in the current format."""
    from undertow.runtime.task.timers import TimerServiceManager

    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    source = TimerServiceManager(backend, ManualClock())
    service = source.get("window", Recorder(backend))
    for key in range(20):
        backend.set_current_key(key)
        service.register_event_time_timer("w", 100 + key)
        service.register_processing_time_timer("w", 200 + key)
    waiting = TimerServiceManager(HeapKeyedStateBackend("op", 128, range(128), lambda: 0),
                                  ManualClock())  # fmt: skip
    waiting.restore(dict(source.snapshot().items()))
    again_backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    again = TimerServiceManager(again_backend, ManualClock())
    again.restore(dict(waiting.snapshot().items()))
    restored = again.get("window", Recorder(again_backend))
    assert sorted((t.timestamp, t.key) for t in restored.event_time_timers()) == [
        (100 + k, k) for k in range(20)
    ]
    assert sorted((t.timestamp, t.key) for t in restored.processing_time_timers()) == [
        (200 + k, k) for k in range(20)
    ]


def test_timers_of_keys_equal_in_python_are_snapshotted_in_their_own_key_groups() -> None:
    """``1 == 1.0`` and ``0.0 == -0.0`` as dict keys, with other key groups: the snapshot's
    key -> key group memo must not file ``1.0``'s timer under ``1``'s group."""
    from undertow.runtime.task.timers import TimerServiceManager

    keys: list[Any] = [1, 1.0, (1,), (1.0,), 0.0, -0.0]
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    manager = TimerServiceManager(backend, ManualClock())
    service = manager.get("window", Recorder(backend))
    for i, key in enumerate(keys):
        backend.set_current_key(key)
        service.register_event_time_timer("w", 100 + i)
    blobs = dict(manager.snapshot().items())
    for i, key in enumerate(keys):
        group = assign_to_key_group(key, 128)
        one = HeapKeyedStateBackend("op", 128, range(group, group + 1), lambda: 0)
        restored = TimerServiceManager(one, ManualClock())
        restored.restore({group: blobs[group]} if group in blobs else {})
        again = restored.get("window", Recorder(one))
        assert [(t.timestamp, repr(t.key)) for t in again.event_time_timers()] == [
            (100 + i, repr(key))
        ], key
