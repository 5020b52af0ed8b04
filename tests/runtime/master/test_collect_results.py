"""``CollectResults``: what ``execute_and_collect``'s iterator may see, and when."""

from __future__ import annotations

from queue import Queue
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from undertow.core.errors import JobExecutionError
from undertow.runtime.checkpoint.events import Aborted, Completed
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.master.collect_results import END, CollectFailed, CollectResults


def completed(cid: int, savepoint: bool = False) -> Completed:
    return Completed(cid, 0, f"chk-{cid}", savepoint, None)


def drain(q: Queue[Any]) -> list[Any]:
    items = []
    while not q.empty():
        items.append(q.get_nowait())
    return items


def test_with_checkpoints_a_batch_waits_for_a_later_checkpoint() -> None:
    results = CollectResults(exactly_once=True)
    results.add(0, "s", 0, [1, 2])
    results.add(0, "s", 3, [3])
    assert drain(results.queue("s")) == []
    results.on_checkpoint_event(completed(3))  # its barrier came after [1, 2], before [3]
    assert drain(results.queue("s")) == [[1, 2]]
    results.on_checkpoint_event(completed(4))
    assert drain(results.queue("s")) == [[3]]


def test_savepoints_and_aborted_checkpoints_release_nothing() -> None:
    results = CollectResults(exactly_once=True)
    results.add(0, "s", 0, [1])
    results.on_checkpoint_event(completed(5, savepoint=True))
    results.on_checkpoint_event(Aborted(6, 0, CheckpointFailureReason.CHECKPOINT_EXPIRED, "x"))
    assert drain(results.queue("s")) == []


def test_a_failed_attempt_drops_its_held_batches_and_a_finished_one_releases_them() -> None:
    results = CollectResults(exactly_once=True)
    results.add(0, "s", 0, ["lost"])
    results.attempt_ended(0, finished=False)
    results.add(1, "s", 2, ["kept"])
    results.on_checkpoint_event(completed(1))  # older than the batch's tag: not yet
    assert drain(results.queue("s")) == []
    results.attempt_ended(1, finished=True)
    assert drain(results.queue("s")) == [["kept"]]


def test_the_end_closes_every_queue_also_one_asked_for_later() -> None:
    results = CollectResults(exactly_once=True)
    results.add(0, "a", 0, ["unfinished"])
    results.end()
    assert drain(results.queue("a")) == [END]
    assert drain(results.queue("late")) == [END]
    results.add(0, "a", 0, ["after the end"])
    assert drain(results.queue("a")) == []


def test_without_checkpoints_batches_come_at_once_and_a_restart_after_them_raises() -> None:
    results = CollectResults(exactly_once=False)
    results.add(0, "s", 0, [1])
    results.restarting(0, "boom")
    results.add(1, "s", 0, [1])  # the restart's repetition: not returned
    items = drain(results.queue("s"))
    assert items[0] == [1] and len(items) == 2
    failed = items[1]
    assert isinstance(failed, CollectFailed) and isinstance(failed.error, JobExecutionError)
    assert "attempt 0 failed: boom" in str(failed.error)
    assert "'s'" in str(failed.error) and "enable_checkpointing" in str(failed.error)


def test_without_checkpoints_a_restart_before_any_record_is_invisible() -> None:
    results = CollectResults(exactly_once=False)
    results.restarting(0, "boom")
    results.add(1, "s", 0, [1])
    assert drain(results.queue("s")) == [[1]]


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
    q = results.queue("s")
    tag, sent, completed_ids = 0, [], []  # sent: (index, tag) of each batch
    returned: list[int] = []
    for kind, step in life:
        if kind == "add":
            tag += step
            results.add(0, "s", tag, [len(sent)])
            sent.append((len(sent), tag))
        else:
            completed_ids.append(tag + step)
            results.on_checkpoint_event(completed(tag + step))
            tag += step  # the sink had passed its barrier: what it sends next comes after
        returned += [b[0] for b in drain(q)]
        newest = max(completed_ids, default=0)
        assert all(sent[i][1] < newest for i in returned)
    results.attempt_ended(0, finished)
    returned += [b[0] for b in drain(q)]
    newest = max(completed_ids, default=0)
    expected = sent if finished else [b for b in sent if b[1] < newest]
    assert [sent[i] for i in returned] == expected
