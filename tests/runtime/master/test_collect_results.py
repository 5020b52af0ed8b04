"""``CollectResults``: what ``execute_and_collect``'s iterator may see, and when."""

from __future__ import annotations

import pickle
import threading
import time
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from undertow.core.errors import JobExecutionError
from undertow.runtime.checkpoint.events import Aborted, Completed
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.master.collect_results import END, CollectFailed, CollectResults
from undertow.runtime.master.collect_window import Grant


def completed(cid: int, savepoint: bool = False) -> Completed:
    return Completed(cid, 0, f"chk-{cid}", savepoint, None)


def drain(results: CollectResults, sink_id: str) -> list[Any]:
    """What the reader of ``sink_id`` can take now, without waiting."""
    items = []
    while (item := results.take(sink_id, block=False)) is not None:
        items.append(item)
    return items


def add(results: CollectResults, attempt: int, sink_id: str, tag: int, values: list[Any]) -> None:
    results.add(attempt, sink_id, tag, pickle.dumps(values))


def test_with_checkpoints_a_batch_waits_for_a_later_checkpoint() -> None:
    results = CollectResults(exactly_once=True)
    add(results, 0, "s", 0, [1, 2])
    add(results, 0, "s", 3, [3])
    assert drain(results, "s") == []
    results.on_checkpoint_event(completed(3))  # its barrier came after [1, 2], before [3]
    assert drain(results, "s") == [[1, 2]]
    results.on_checkpoint_event(completed(4))
    assert drain(results, "s") == [[3]]


def test_savepoints_and_aborted_checkpoints_release_nothing() -> None:
    results = CollectResults(exactly_once=True)
    add(results, 0, "s", 0, [1])
    results.on_checkpoint_event(completed(5, savepoint=True))
    results.on_checkpoint_event(Aborted(6, 0, CheckpointFailureReason.CHECKPOINT_EXPIRED, "x"))
    assert drain(results, "s") == []


def test_a_failed_attempt_drops_its_held_batches_and_a_finished_one_releases_them() -> None:
    results = CollectResults(exactly_once=True)
    add(results, 0, "s", 0, ["lost"])
    results.attempt_ended(0, finished=False)
    add(results, 1, "s", 2, ["kept"])
    results.on_checkpoint_event(completed(1))  # older than the batch's tag: not yet
    assert drain(results, "s") == []
    results.attempt_ended(1, finished=True)
    assert drain(results, "s") == [["kept"]]


def test_the_end_closes_every_queue_also_one_asked_for_later() -> None:
    results = CollectResults(exactly_once=True)
    add(results, 0, "a", 0, ["unfinished"])
    results.end()
    assert drain(results, "a") == [END]
    assert drain(results, "late") == [END]
    add(results, 0, "a", 0, ["after the end"])
    assert drain(results, "a") == []


def test_without_checkpoints_batches_come_at_once_and_a_restart_after_them_raises() -> None:
    results = CollectResults(exactly_once=False)
    add(results, 0, "s", 0, [1])
    results.restarting(0, "boom")
    add(results, 1, "s", 0, [1])  # the restart's repetition: not returned
    items = drain(results, "s")
    assert items[0] == [1] and len(items) == 2
    failed = items[1]
    assert isinstance(failed, CollectFailed) and isinstance(failed.error, JobExecutionError)
    assert "attempt 0 failed: boom" in str(failed.error)
    assert "'s'" in str(failed.error) and "enable_checkpointing" in str(failed.error)


def test_without_checkpoints_a_restart_before_any_record_is_invisible() -> None:
    results = CollectResults(exactly_once=False)
    results.restarting(0, "boom")
    add(results, 1, "s", 0, [1])
    assert drain(results, "s") == [[1]]


# An attempt's life: batches (their tags never decrease) and completed checkpoints, interleaved.
# A batch's tag grows by its step; a completed checkpoint is its step past the tag, and the sink
# had passed its barrier (later batches carry at least its id).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3)),
        st.tuples(st.just("done"), st.integers(0, 4)),
    ),
    max_size=30,
)


@given(steps, st.booleans())
def test_released_batches_are_final_in_order_and_each_once(
    life: list[tuple[str, int]], finished: bool
) -> None:
    """Whatever the interleaving: a returned batch came before the barrier of a completed
    checkpoint (or its attempt finished), batches come in their order and none twice, and a
    failed attempt's unreleased batches never come."""
    results = CollectResults(exactly_once=True)
    tag, sent, completed_ids = 0, [], []  # sent: (index, tag) of each batch
    returned: list[int] = []
    for kind, step in life:
        if kind == "add":
            tag += step
            add(results, 0, "s", tag, [len(sent)])
            sent.append((len(sent), tag))
        else:
            completed_ids.append(tag + step)
            results.on_checkpoint_event(completed(tag + step))
            tag += step  # the sink had passed its barrier: what it sends next comes after
        returned += [b[0] for b in drain(results, "s")]
        newest = max(completed_ids, default=0)
        assert all(sent[i][1] < newest for i in returned)
    results.attempt_ended(0, finished)
    returned += [b[0] for b in drain(results, "s")]
    newest = max(completed_ids, default=0)
    expected = sent if finished else [b for b in sent if b[1] < newest]
    assert [sent[i] for i in returned] == expected


class Grants:
    """The grants ``CollectResults`` sends, and the thread each was sent from."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Grant]] = []

    def __call__(self, sink_id: str, grant: Grant) -> None:
        self.sent.append((sink_id, grant))


def test_a_sink_gets_its_window_once_deployed_and_read_and_more_as_the_reader_takes() -> None:
    grants = Grants()
    results = CollectResults(exactly_once=False, buffer_size=100, send_grant=grants)
    results.attempt_deployed(0)
    assert grants.sent == []  # nobody reads sink "s" yet: it has no credit
    results.register("s")
    assert grants.sent == [("s", Grant(0, 100))]
    batch = pickle.dumps([1, 2])
    for _ in range(100 // len(batch) + 1):
        results.add(0, "s", 0, batch)
    assert results.statistics("s").window.ready > 100 - len(batch)
    taken = 0
    while len(grants.sent) == 1 and results.take("s", block=False) is not None:
        taken += len(batch)
    assert taken >= 50 and grants.sent[1][1].credit >= 50  # half a window came back
    stats = results.statistics("s")
    assert stats.peak_unread <= 100 + stats.largest_batch


def test_a_new_attempt_is_granted_what_its_window_has_free() -> None:
    grants = Grants()
    results = CollectResults(exactly_once=True, buffer_size=100, send_grant=grants)
    results.register("s")
    results.attempt_deployed(0)
    add(results, 0, "s", 0, ["x" * 200])  # one batch over the window, held
    results.attempt_ended(0, finished=False)  # dropped: the window is free again
    results.attempt_deployed(1)
    assert grants.sent == [("s", Grant(0, 100)), ("s", Grant(1, 100))]
    assert results.statistics("s").window.held == 0


def test_held_batches_of_an_older_attempt_leave_the_window_when_replaced() -> None:
    results = CollectResults(exactly_once=True, buffer_size=100)
    results.register("s")
    add(results, 0, "s", 0, ["a"])
    add(results, 1, "s", 0, ["b"])  # attempt 0's batch was never released: dropped
    assert results.statistics("s").window.held == len(pickle.dumps(["b"]))


def test_a_reader_waiting_on_held_records_gets_an_overdraft() -> None:
    grants = Grants()
    results = CollectResults(exactly_once=True, buffer_size=100, send_grant=grants)
    results.register("s")
    results.attempt_deployed(0)
    add(results, 0, "s", 0, ["x" * 100])  # all credit used, everything held
    reader = threading.Thread(target=results.take, args=("s",))
    reader.start()
    deadline = time.monotonic() + 10
    while len(grants.sent) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    overrun = len(pickle.dumps(["x" * 100])) - 100  # the sink's one batch past its credit
    assert grants.sent[1] == ("s", Grant(0, 50 + overrun))
    assert results.statistics("s").window.in_overdraft
    results.on_checkpoint_event(completed(1))
    reader.join(10)
    assert not reader.is_alive()
