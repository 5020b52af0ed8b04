"""The global committer: pure commit decisions, the operator's protocol, the topology.

An in-memory committer stands for a table: it records, per committer id, the highest
checkpoint committed (as a Delta app transaction would) and refuses to commit out of order.
"""

from __future__ import annotations

from typing import Any

import pytest
from committer_harness import Attempt
from hypothesis import example, given, settings
from hypothesis import strategies as st

from undertow.common import Configuration
from undertow.connectors.global_committer import (
    END_OF_INPUT,
    CommitOutcome,
    GlobalCommitRequest,
    GlobalCommitter,
    GlobalCommitterContext,
    GlobalCommittingSink,
    build_request,
    due_checkpoints,
    is_already_committed,
)
from undertow.connectors.sink import SinkWriter, SinkWriterContext
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import build_job_graph
from undertow.runtime.task.global_committer_operator import GlobalCommitError, missing_subtasks


# -- pure decisions ---------------------------------------------------------------------------
@given(st.sets(st.integers(1, 50)), st.integers(0, 60))
def test_due_checkpoints_are_all_pending_up_to_the_completed_one_in_order(
    pending: set[int], completed: int
) -> None:
    due = due_checkpoints(pending, completed)
    assert due == sorted(due)
    assert set(due) == {c for c in pending if c <= completed}


@given(st.one_of(st.none(), st.integers(0, 100)), st.integers(1, 100))
def test_already_committed_iff_recorded_version_reaches_the_checkpoint(
    last: int | None, checkpoint: int
) -> None:
    assert is_already_committed(last, checkpoint) == (last is not None and last >= checkpoint)


def test_end_of_input_sorts_after_every_checkpoint_and_counts_as_committed_last() -> None:
    assert due_checkpoints([3, END_OF_INPUT, 1], 5) == [1, 3]
    assert is_already_committed(END_OF_INPUT, 10**12)


def test_a_request_orders_committables_by_writer_subtask() -> None:
    request = build_request("c", 4, {2: ["c1"], 0: ["a1", "a2"], 1: []})
    assert request == GlobalCommitRequest("c", 4, ("a1", "a2", "c1"))


def test_missing_subtasks_ignores_those_whose_input_ended() -> None:
    assert missing_subtasks({0, 2}, 4, set()) == [1, 3]
    assert missing_subtasks({0}, 3, {1, 2}) == []


# -- an in-memory table and sink --------------------------------------------------------------
class Table:
    def __init__(self) -> None:
        self.versions: dict[str, int] = {}
        self.rows: list[Any] = []
        self.commits: list[tuple[str, int]] = []


class MemoryCommitter(GlobalCommitter):
    def __init__(self, table: Table, crash_after_commit: list[int]) -> None:
        self.table = table
        self.crash_after_commit = crash_after_commit

    def commit(self, request: GlobalCommitRequest) -> CommitOutcome:
        last = self.table.versions.get(request.committer_id)
        if is_already_committed(last, request.checkpoint_id):
            return CommitOutcome.ALREADY_COMMITTED
        self.table.versions[request.committer_id] = request.checkpoint_id
        self.table.rows.extend(r for batch in request.committables for r in batch)
        self.table.commits.append((request.committer_id, request.checkpoint_id))
        if self.crash_after_commit:  # the job dies before the commit is recorded anywhere
            self.crash_after_commit.pop()
            raise RuntimeError("crash after commit")
        return CommitOutcome.COMMITTED


class MemoryWriter(SinkWriter):
    def __init__(self) -> None:
        self.buffer: list[Any] = []

    def write(self, element: Any, timestamp: int | None) -> None:
        self.buffer.append(element)

    def prepare_commit(self) -> list[Any]:
        done, self.buffer = self.buffer, []
        return [tuple(done)] if done else []


class MemorySink(GlobalCommittingSink):
    def __init__(self, table: Table, crash_after_commit: list[int] | None = None) -> None:
        self.table = table
        self.crash_after_commit = crash_after_commit if crash_after_commit is not None else []

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return MemoryWriter()

    def create_global_committer(self, context: GlobalCommitterContext) -> GlobalCommitter:
        return MemoryCommitter(self.table, self.crash_after_commit)


# -- the operator -----------------------------------------------------------------------------
def test_one_commit_per_completed_checkpoint_with_all_writers_data() -> None:
    table = Table()
    job = Attempt(MemorySink(table), parallelism=3)
    job.write(0, ["a"])
    job.write(2, ["c"])
    job.checkpoint(1)
    assert table.rows == []  # prepared, not committed
    job.complete(1)
    assert sorted(table.rows) == ["a", "c"] and len(table.commits) == 1
    job.checkpoint(2)  # nothing written: no commit
    job.complete(2)
    assert len(table.commits) == 1
    job.write(1, ["b"])
    job.finish()
    assert sorted(table.rows) == ["a", "b", "c"]
    assert table.commits[-1][1] == END_OF_INPUT


def test_a_completed_checkpoint_commits_the_earlier_ones_in_order() -> None:
    table = Table()
    job = Attempt(MemorySink(table), parallelism=2)
    for cid in (1, 2, 3):
        job.write(cid % 2, [f"r{cid}"])
        job.checkpoint(cid)
    job.complete(3)  # the notifications of 1 and 2 were lost
    assert [c for _, c in table.commits] == [1, 2, 3]
    assert table.rows == ["r1", "r2", "r3"]


def test_committables_of_a_later_checkpoint_wait_for_it() -> None:
    table = Table()
    job = Attempt(MemorySink(table), parallelism=1)
    job.write(0, ["x"])
    job.checkpoint(1)
    job.write(0, ["y"])
    job.checkpoint(2)
    job.complete(1)
    assert table.rows == ["x"]


def test_a_completed_checkpoint_missing_a_writers_message_fails_naming_it() -> None:
    table = Table()
    job = Attempt(MemorySink(table), parallelism=2)
    job.writers[0].prepare_snapshot_pre_barrier(1)  # writer 1's message never arrives
    job._forward()
    with pytest.raises(GlobalCommitError, match=r"checkpoint 1 .* writer subtasks \[1\] \(of 2\)"):
        job.complete(1)


def test_restored_requests_are_committed_again_and_a_replay_is_a_no_op() -> None:
    table = Table()
    sink = MemorySink(table, crash_after_commit=[1])
    job = Attempt(sink, parallelism=2)
    job.write(0, ["a"])
    state = job.checkpoint(1)
    with pytest.raises(GlobalCommitError, match="crash after commit"):
        job.complete(1)  # committed to the table, then the job died
    job.close()
    again = Attempt(sink, parallelism=2, attempt=1, restored=state)
    assert again.committer.already_committed == 1 and again.committer.committed == 0
    assert table.rows == ["a"]
    again.write(1, ["b"])
    again.checkpoint(2)
    again.complete(2)
    assert table.rows == ["a", "b"]
    ids = [i for i, _ in table.commits]
    assert len(set(ids)) == 2, "every start of the committer commits under a new committer id"


@settings(max_examples=150, deadline=None, derandomize=True)
@example(ops=["checkpoint", "write", "checkpoint", "complete"], p=1)
@example(ops=["write", "checkpoint", "lose_notify", "write", "crash", "checkpoint"], p=2)
@given(st.lists(st.sampled_from(["write", "checkpoint", "complete", "crash", "lose_notify"]),
                max_size=40), st.integers(1, 3))  # fmt: skip
def test_random_schedules_commit_every_record_exactly_once(ops: list[str], p: int) -> None:
    """Writes, checkpoints, completions (some notifications lost) and crashes in any order:
    after the final end of input every record is in the table exactly once, and nothing was
    ever committed before a checkpoint containing it completed."""
    table = Table()
    sink = MemorySink(table)
    job = Attempt(sink, parallelism=p)
    next_record, next_cid, attempt = 0, 1, 0
    written_since: dict[int, list[int]] = {}  # checkpoint id -> records it covers
    unacked: list[int] = []  # records written since the last checkpoint of this attempt
    states: dict[int, bytes] = {}
    completed: int | None = None
    durable: set[int] = set()  # records covered by the latest completed checkpoint
    for op in ops:
        if op == "write":
            job.write(next_record % p, [next_record])
            unacked.append(next_record)
            next_record += 1
        elif op == "checkpoint":
            states[next_cid] = job.checkpoint(next_cid)
            written_since[next_cid] = unacked
            unacked = []
            next_cid += 1
        elif op in ("complete", "lose_notify") and any(c > (completed or 0) for c in states):
            cid = min(c for c in states if c > (completed or 0))  # later ones stay pending
            completed = cid
            durable = {r for c, rs in written_since.items() if c <= cid for r in rs}
            if op == "complete":
                job.complete(cid)
        elif op == "crash":
            job.close()
            attempt += 1
            restored = states.get(completed) if completed is not None else None
            job = Attempt(sink, parallelism=p, attempt=attempt, restored=restored)
            # the source replays everything after the restored checkpoint
            replay = sorted(set(range(next_record)) - durable)
            for r in replay:
                job.write(r % p, [r])
            unacked = replay
            states = {c: s for c, s in states.items() if completed is not None and c <= completed}
            written_since = {c: rs for c, rs in written_since.items() if c in states}
        assert set(table.rows) <= durable, "data committed before its checkpoint completed"
    job.finish()
    assert sorted(table.rows) == list(range(next_record))


# -- the topology -----------------------------------------------------------------------------
def test_sink_to_builds_writers_an_aligned_global_edge_and_one_committer() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(3)
    env.from_collection([1, 2, 3]).map(lambda x: x).sink_to(MemorySink(Table())).name("mem").uid(
        "mem-sink"
    )
    graph = env.get_stream_graph()
    names = {n.name: n for n in graph.nodes.values()}
    writer, committer = names["mem"], names["mem: Committer"]
    assert (writer.parallelism, committer.parallelism) == (3, 1)
    assert (writer.uid, committer.uid) == ("mem-sink", "mem-sink-committer")
    (edge,) = [e for e in graph.edges if e.target == committer.id]
    assert edge.source == writer.id
    assert edge.partitioner.kind == "GLOBAL" and not edge.partitioner.supports_unaligned
    job_edges = build_job_graph(graph).edges
    (job_edge,) = [e for e in job_edges if e.target_node == committer.id]
    assert not job_edge.supports_unaligned
