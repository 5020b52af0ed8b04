"""Keyed state pickled in mailbox slices after the synchronous part of a checkpoint: counted in
key groups per mail, not timed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.runtime.task.mailbox_loop import MailboxLoop
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.snapshot_slices import pending_keyed_state, serialize_in_slices
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend


def filled_backend(keys: int) -> HeapKeyedStateBackend:
    backend = HeapKeyedStateBackend("window", 64, range(64), lambda: 0)
    state = backend.get_partitioned_state(ValueStateDescriptor("count", None))
    for key in range(keys):
        backend.set_current_key(key)
        state.update(key)
    return backend


def test_each_mail_pickles_one_key_group_when_the_slice_is_spent_and_then_proceeds() -> None:
    backends = [filled_backend(1000), filled_backend(1000)]
    snapshot = SubtaskSnapshot(parallelism=1)
    for i, backend in enumerate(backends):
        part = OperatorSnapshot()
        part.keyed = backend.snapshot()
        snapshot.operators[f"op{i}"] = part
    pending = pending_keyed_state(snapshot)
    assert len(pending) == 2
    remaining = sum(p.remaining for p in pending)
    assert remaining >= 2 * 63, "the synchronous part left all but one key group each"

    mailbox: list[Callable[[], None]] = []
    proceeded: list[int] = []
    done = serialize_in_slices(pending, mailbox.append, lambda: 0.0,
                               lambda: proceeded.append(1))  # fmt: skip
    mails = 0
    while mailbox:
        before = sum(p.remaining for p in pending)
        mailbox.pop(0)()
        mails += 1
        assert before - sum(p.remaining for p in pending) <= 1, "one key group per spent slice"
        assert proceeded == [] or not mailbox
    assert mails == remaining and proceeded == [1] and done.done()
    assert all(len(dict(p.items())) == 64 for p in (o.keyed for o in snapshot.operators.values()))


def test_a_snapshot_without_pending_key_groups_is_not_sliced() -> None:
    snapshot = SubtaskSnapshot(parallelism=1)
    part = OperatorSnapshot()
    part.keyed = HeapKeyedStateBackend("empty", 8, range(8), lambda: 0).snapshot()
    snapshot.operators["op"] = part
    assert pending_keyed_state(snapshot) == []


def test_the_last_phase_of_the_loop_ends_after_a_snapshot_pickled_in_slices() -> None:
    """A checkpoint taken right before the task may close (the sink at the end of a bounded
    job) pickles in mails that each post the next; the loop's phase must not end before the
    last of them ran: nothing runs mails afterwards, while the task waits for that very
    snapshot's acknowledgement (the hang of issue 14's mailbox batch with heap incremental
    checkpoints: ``wait_for_pending`` waited forever)."""
    snapshot = SubtaskSnapshot(parallelism=1)
    part = OperatorSnapshot()
    part.keyed = filled_backend(1000).snapshot()
    snapshot.operators["sink"] = part
    pending = pending_keyed_state(snapshot)
    groups = sum(p.remaining for p in pending)

    async def close_after_a_checkpoint() -> tuple[int, bool]:
        mailbox = MailboxLoop(name="sink (1/1)", loop=asyncio.get_running_loop(),
                              partitions=[], pace=TaskPace(2.0, 0.25))  # fmt: skip
        proceeded: list[int] = []
        finished = serialize_in_slices(pending, mailbox.post, lambda: 0.0,
                                       lambda: proceeded.append(1))  # fmt: skip
        # the final checkpoint is done and the inputs ended: the task may close now
        await mailbox.run(_nothing, _never, lambda: True)
        return len(proceeded), finished.done()

    proceeded, finished = asyncio.run(asyncio.wait_for(close_after_a_checkpoint(), 10.0))
    assert groups >= 63, "the snapshot takes one mail per key group"
    assert (proceeded, finished) == (1, True), "the loop ended with the snapshot half pickled"


def _nothing() -> None:
    raise AssertionError("no input slice runs in this phase")


def _never() -> bool:
    return False
