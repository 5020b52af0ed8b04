"""The exactly-once Kafka sink's pure decisions (undertow.connectors.kafka.sink_protocol).

Besides unit tests of each decision, a model of a whole job checks the protocol end to end:
an in-memory Kafka (committed log, markers, transactions per transactional id), a replayable
input routed by key to the sink subtasks, checkpoints, crashes at every named point, restores
with a new parallelism, and zombie transactions of crashed attempts that commit before they are
fenced. Whatever Hypothesis draws, the committed log holds every record exactly once and each
key's records in order.
"""

from __future__ import annotations

import itertools
import pickle
from dataclasses import dataclass, field

from hypothesis import example, given, settings
from hypothesis import strategies as st

from undertow.connectors.kafka.sink_protocol import (
    IdUseKey,
    KafkaWriterState,
    MarkerKey,
    PendingBatch,
    ProducedRecord,
    changed_progress_topic,
    commit_decision,
    ids_of_other_prefixes,
    ids_to_fence,
    lingering_ids,
    restore_decision,
    transaction_timeout_problem,
    transactional_id,
)

PREFIX = "sink"


def _batch(cid: int, *values: int) -> PendingBatch:
    return PendingBatch(
        cid, tuple(ProducedRecord("t", None, str(v).encode(), None) for v in values)
    )


# -- unit tests of the decisions -----------------------------------------------------------------
def test_transactional_ids_are_one_per_subtask() -> None:
    assert transactional_id("p", 3) == "p-3"


def test_marker_keys_round_trip_and_foreign_keys_are_ignored() -> None:
    key = MarkerKey("my-sink", "abc", 7)
    assert MarkerKey.decode(key.encode()) == key
    assert MarkerKey.decode(b"some other record") is None


def test_restored_subtask_fences_its_own_id_and_the_vanished_ones_routed_to_it() -> None:
    states = [KafkaWriterState(j, 5, "t", ()) for j in range(5)]
    assert ids_to_fence([s for s in states if s.subtask % 2 == 0], 0, 2) == [0, 2, 4]
    assert ids_to_fence([s for s in states if s.subtask % 2 == 1], 1, 2) == [1, 3]
    # scaling up: nobody fences more than its own id
    assert ids_to_fence(states[:1], 0, 8) == [0]


def test_id_use_keys_round_trip_and_are_no_marker_keys() -> None:
    key = IdUseKey("my-sink", 4)
    assert IdUseKey.decode(key.encode()) == key
    assert MarkerKey.decode(key.encode()) is None
    assert IdUseKey.decode(MarkerKey("my-sink", "abc", 4).encode()) is None
    assert IdUseKey.decode(b"some other record") is None


def test_subtask_0_alone_fences_the_ids_used_at_or_above_the_parallelism() -> None:
    used = [0, 1, 2, 5]
    assert lingering_ids(used, 0, 2) == [2, 5]
    assert lingering_ids(used, 1, 2) == []
    assert lingering_ids(used, 0, 6) == []  # every used id has its own subtask in this run


def test_restore_writes_exactly_the_batches_above_the_marker() -> None:
    state = KafkaWriterState(1, 2, "tok", (_batch(3, 1), _batch(5, 2), _batch(7, 3)))
    key = state.key(PREFIX)
    decision = restore_decision(PREFIX, [state], {key: 5})
    assert [b.checkpoint_id for _, b in decision.write] == [7]
    assert decision.markers == ((key, 7),)
    assert decision.skipped == 2
    assert decision.dead == (key,)
    nothing_committed = restore_decision(PREFIX, [state], {})
    assert [b.checkpoint_id for _, b in nothing_committed.write] == [3, 5, 7]


def test_commit_takes_every_due_batch_oldest_first_and_marks_the_newest() -> None:
    key = MarkerKey(PREFIX, "tok", 0)
    pending = {4: _batch(4, 1), 2: _batch(2, 0), 9: _batch(9, 2)}
    decision = commit_decision(key, pending, 5)
    assert [b.checkpoint_id for b in decision.batches] == [2, 4]
    assert decision.marker == 4
    assert commit_decision(key, pending, 1).is_empty


def test_dead_keys_are_deleted_only_after_a_checkpoint_newer_than_the_restored_one() -> None:
    key, dead = MarkerKey(PREFIX, "new", 0), MarkerKey(PREFIX, "old", 0)
    assert commit_decision(key, {}, 6, [dead], restored_checkpoint=6).tombstones == ()
    assert commit_decision(key, {}, 7, [dead], restored_checkpoint=6).tombstones == (dead,)


def test_transaction_timeout_is_checked_against_the_broker_and_the_checkpoint_timeout() -> None:
    assert transaction_timeout_problem(900_000, 900_000, 600_000) is None
    too_long = transaction_timeout_problem(3_600_000, 900_000, 600_000)
    assert too_long is not None and "transaction.max.timeout.ms = 900000" in too_long
    too_short = transaction_timeout_problem(60_000, None, 600_000)
    assert too_short is not None and "execution.checkpointing.timeout = 600000" in too_short


#: A writer state as checkpoints before 2026-12-02 hold it (pickled by that code, without the
#: prefix and the progress topic): KafkaWriterState(2, 3, "tok", (PendingBatch(7,
#: (ProducedRecord("out", b"k", b"v", None),)),)).
OLD_FORMAT_STATE = (
    b"\x80\x05\x95\x9f\x00\x00\x00\x00\x00\x00\x00\x8c'undertow.connectors.kafka.sink_protocol"
    b"\x94\x8c\x10KafkaWriterState\x94\x93\x94)\x81\x94]\x94(K\x02K\x03\x8c\x03tok\x94h\x00\x8c"
    b"\x0cPendingBatch\x94\x93\x94)\x81\x94]\x94(K\x07h\x00\x8c\x0eProducedRecord\x94\x93\x94)"
    b"\x81\x94]\x94(\x8c\x03out\x94C\x01k\x94C\x01v\x94Neb\x85\x94eb\x85\x94eb."
)


def test_a_state_of_an_older_checkpoint_loads_with_the_defaults() -> None:
    old = pickle.loads(OLD_FORMAT_STATE)
    records = (ProducedRecord("out", b"k", b"v", None),)
    assert old == KafkaWriterState(2, 3, "tok", (PendingBatch(7, records),), "", "")
    assert old.key(PREFIX) == MarkerKey(PREFIX, "tok", 2)  # the sink's current prefix
    assert changed_progress_topic([old], "any-topic") is None  # not recorded: not checked
    assert ids_of_other_prefixes([old], PREFIX) == []
    again = pickle.loads(pickle.dumps(old))
    assert again == old


def test_a_state_records_its_prefix_and_progress_topic_and_round_trips() -> None:
    state = KafkaWriterState(1, 2, "tok", (_batch(3, 1),), "old-prefix", "progress-a")
    again = pickle.loads(pickle.dumps(state))
    assert again == state
    assert again.key("new-prefix") == MarkerKey("old-prefix", "tok", 1)  # where it was written
    assert changed_progress_topic([again], "progress-a") is None
    assert changed_progress_topic([again], "progress-b") == "progress-a"
    assert ids_of_other_prefixes([again], "new-prefix") == ["old-prefix-1"]
    assert ids_of_other_prefixes([again], "old-prefix") == []


# -- a model of the whole protocol ---------------------------------------------------------------
class Crash(Exception):
    pass


@dataclass
class FakeKafka:
    """Committed records, markers, and one open transaction per transactional id."""

    log: list[int] = field(default_factory=list)
    markers: dict[MarkerKey, int] = field(default_factory=dict)
    open: dict[int, tuple[list[int], list[tuple[MarkerKey, int | None]]]] = field(
        default_factory=dict
    )

    def commit_open(self, txn: int) -> None:
        records, markers = self.open.pop(txn)
        self.log.extend(records)
        for key, value in markers:
            if value is None:
                self.markers.pop(key, None)
            else:
                self.markers[key] = value


_tokens = itertools.count()


class ModelWriter:
    """The exactly-once writer's logic over :class:`FakeKafka` (no I/O, same decisions)."""

    def __init__(
        self,
        kafka: FakeKafka,
        index: int,
        p: int,
        restored: list[KafkaWriterState],
        restored_cid: int | None,
    ) -> None:
        self.kafka, self.index, self.p = kafka, index, p
        self.key = MarkerKey(PREFIX, f"t{next(_tokens)}", index)
        self.buffer: list[int] = []
        self.pending: dict[int, PendingBatch] = {}
        self.restored_cid = restored_cid
        self.dead: tuple[MarkerKey, ...] = ()
        if restored:
            keys = {s.key(PREFIX) for s in restored}
            markers = {k: v for k, v in kafka.markers.items() if k in keys}
            decision = restore_decision(PREFIX, restored, markers)
            if decision.write:
                self._transaction([b for _, b in decision.write], list(decision.markers), None)
            self.dead = decision.dead

    def snapshot(self, cid: int) -> KafkaWriterState:
        if self.buffer:
            records = tuple(ProducedRecord("t", None, str(v).encode(), None) for v in self.buffer)
            self.pending[cid] = PendingBatch(cid, records)
            self.buffer = []
        return KafkaWriterState(
            self.index, self.p, self.key.token, tuple(self.pending[c] for c in sorted(self.pending))
        )

    def notify(self, cid: int, crash: str | None) -> None:
        decision = commit_decision(self.key, self.pending, cid, self.dead, self.restored_cid)
        if decision.is_empty:
            return
        if crash == "after-checkpoint-complete":
            raise Crash()
        markers: list[tuple[MarkerKey, int | None]] = [(k, None) for k in decision.tombstones]
        if decision.marker is not None:
            markers.append((decision.key, decision.marker))
        self._transaction(list(decision.batches), markers, crash)
        for batch in decision.batches:
            del self.pending[batch.checkpoint_id]
        if decision.tombstones:
            self.dead = ()

    def _transaction(
        self,
        batches: list[PendingBatch],
        markers: list[tuple[MarkerKey, int | None]],
        crash: str | None,
    ) -> None:
        assert self.index not in self.kafka.open, "init_transactions aborted it"
        records = [int(r.value or b"") for b in batches for r in b.records]
        self.kafka.open[self.index] = (records, markers)
        if crash == "during-commit":
            raise Crash()
        self.kafka.commit_open(self.index)
        if crash == "after-commit":
            raise Crash()


@dataclass(frozen=True)
class Checkpoint:
    cid: int
    position: int
    states: tuple[KafkaWriterState, ...]


KEYS = 5
POINTS = ("after-checkpoint-complete", "during-commit", "after-commit", None)
operation = st.one_of(
    st.tuples(st.just("feed"), st.integers(1, 6)),
    st.tuples(st.just("checkpoint"), st.booleans(), st.integers(1, 4)),
    st.tuples(st.just("complete"), st.integers(0, 3), st.sampled_from(POINTS), st.integers(1, 4)),
    st.tuples(st.just("crash"), st.integers(1, 4)),
)


@settings(max_examples=300, deadline=None)
@example(  # a commit left open on subtask 2, restored at parallelism 1: 2's id must be fenced
    3, [("feed", 6), ("checkpoint", False, 3), ("complete", 2, "during-commit", 1)], [False] * 8
)
@given(
    st.integers(1, 4),
    st.lists(operation, max_size=40),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_model_every_record_committed_exactly_once_in_key_order(
    first_p: int, ops: list[tuple], zombie_commits: list[bool]
) -> None:
    total = 60
    kafka = FakeKafka()
    cids = itertools.count(1)
    zombie = itertools.cycle(zombie_commits)
    p, position = first_p, 0
    writers = [ModelWriter(kafka, i, p, [], None) for i in range(p)]
    taken: list[Checkpoint] = []
    completed: Checkpoint | None = None

    def restore(new_p: int) -> None:
        nonlocal p, position, writers, taken
        states = [] if completed is None else list(completed.states)
        fenced = {
            j
            for i in range(new_p)
            for j in ids_to_fence([s for s in states if s.subtask % new_p == i], i, new_p)
        }
        for txn in sorted(kafka.open):  # a zombie's commit may land before it is fenced
            if txn in fenced and next(zombie):
                kafka.commit_open(txn)
            elif txn in fenced:
                del kafka.open[txn]
        late = [t for t in kafka.open if t not in fenced]
        p, taken = new_p, []
        position = 0 if completed is None else completed.position
        restored_cid = None if completed is None else completed.cid
        writers = [
            ModelWriter(kafka, i, p, [s for s in states if s.subtask % p == i], restored_cid)
            for i in range(p)
        ]
        for txn in late:  # never fenced: it may still commit (and must not matter)
            assert not kafka.open[txn][0], "records in a transaction nobody fences"

    def step(op: tuple) -> None:
        nonlocal position, completed
        if op[0] == "feed":
            for r in range(position, min(total, position + op[1])):
                writers[(r % KEYS) % p].buffer.append(r)
            position = min(total, position + op[1])
        elif op[0] == "checkpoint":
            cid = next(cids)
            states = tuple(w.snapshot(cid) for w in writers)
            if op[1]:  # a crash after the pre-commit, before the acknowledgement
                raise Crash()
            taken.append(Checkpoint(cid, position, states))
        elif op[0] == "complete" and taken:
            completed = taken[-1]
            for w in writers:
                w.notify(completed.cid, op[2] if w.index == op[1] % p else None)
        elif op[0] == "crash":
            raise Crash()

    for op in ops:
        try:
            step(op)
        except Crash:  # restore, maybe at another parallelism (the op's last field)
            restore(op[-1])
    # run to the end without failures: feed all, a final checkpoint, its commit
    step(("feed", total))
    step(("checkpoint", False, p))
    step(("complete", 0, None, p))
    assert sorted(kafka.log) == list(range(total)), "lost or duplicated records"
    for key in range(KEYS):
        mine = [r for r in kafka.log if r % KEYS == key]
        assert mine == sorted(mine), f"key {key} out of order: {mine}"


# -- a model of the transactions runs leave open ---------------------------------------------------
run_spec = st.tuples(
    st.integers(1, 4),  # parallelism
    st.one_of(st.none(), st.integers(0, 7)),  # restore: none, or the checkpoint of run k % runs
    st.sets(st.integers(0, 3)),  # subtasks whose commit dies in this run, transaction left open
)


@settings(max_examples=300, deadline=None)
@example([(3, None, {2}), (2, None, set())])  # a new job at p=2 after p=3 left id 2 open
@example([(2, None, set()), (3, 0, {2}), (2, 0, set())])  # restore of an older checkpoint
@given(st.lists(run_spec, min_size=1, max_size=8))
def test_model_no_transaction_stays_open_after_a_run_started(
    runs: list[tuple[int, int | None, set[int]]],
) -> None:
    """Runs of one sink, each a new job or a restore of any earlier run's checkpoint (every
    old subtask's state), at any parallelism; a commit that dies leaves its id's transaction
    open. Once a run started (each subtask: its id-use record, its own id, the ids its states
    name, and subtask 0 the recorded ids at or above the parallelism), no transaction is open:
    none holds read_committed consumers back."""
    open_ids: set[int] = set()
    uses: dict[int, int] = {}  # the id-use records: subtask -> parallelism
    checkpoints: list[list[KafkaWriterState]] = []
    for p, restore_from, dying in runs:
        states = (
            checkpoints[restore_from % len(checkpoints)]
            if restore_from is not None and checkpoints
            else []
        )
        for i in range(p):
            uses[i] = p
        for other in lingering_ids(uses, 0, p):
            open_ids.discard(other)
            del uses[other]
        for i in range(p):
            mine = [s for s in states if s.subtask % p == i]
            open_ids -= set(ids_to_fence(mine, i, p))
        assert not open_ids, f"transactions of ids {sorted(open_ids)} stay open at p={p}"
        checkpoints.append([KafkaWriterState(i, p, f"run{len(checkpoints)}", ()) for i in range(p)])
        open_ids |= {i for i in dying if i < p}
