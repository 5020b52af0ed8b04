"""Unit tests of the oracle kit (``undertow.testing.oracle``) without running a job: records and
their checks, the source's splits and positions, the sink's tally, the verdict, the faults."""

from __future__ import annotations

import pickle
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

import pytest

from undertow.connectors.source import InputStatus
from undertow.runtime.master.job_master import JobExecutionResult
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing._oracle_records import (
    OracleOutput,
    OracleRecord,
    SizeClass,
    TracedRecord,
    expected_fold,
    fold_step,
    make_payload,
    make_record,
    oracle_key,
    payload_size,
    verify_record,
)
from undertow.testing._oracle_source import OracleSource, OracleSplit
from undertow.testing.oracle import (
    DEFAULT_SIZES,
    FOLD_SEED,
    MAGIC,
    FailingMap,
    FailingSnapshot,
    InjectedFailure,
    KeyTally,
    OracleResult,
    RestoreEvidenceMissing,
    WorkerKiller,
    kill_worker_process,
    oracle_seed,
    tally_record,
    worker_process_pids,
)
from undertow.testing.source_reader import (
    CollectingOutput,
    StandaloneEnumeratorContext,
    StandaloneReaderContext,
)

BUFFER = 32 * 1024

# --- records and their checks ---------------------------------------------------------------


def test_records_are_deterministic_and_verify() -> None:
    for key in range(5):
        for seq in range(1, 200):
            record = make_record(key, seq)
            assert record == make_record(key, seq)
            assert (record.magic, record.key, record.seq) == (MAGIC, key, seq)
            assert len(record.payload) == payload_size(key, seq)
            assert verify_record(record)


def test_sizes_cover_small_medium_and_spanning_records() -> None:
    sizes = [payload_size(k, s) for k in range(20) for s in range(1, 2001)]
    assert all(16 <= n <= 64 * 1024 for n in sizes)
    small = sum(n <= 256 for n in sizes)
    medium = sum(2 * 1024 <= n <= 8 * 1024 for n in sizes)
    spanning = sum(n > BUFFER for n in sizes)
    assert small + medium + spanning == len(sizes)
    # weights 0.90 / 0.08 / 0.02, within a generous margin
    assert 0.87 < small / len(sizes) < 0.93
    assert 0.06 < medium / len(sizes) < 0.10
    assert 0.01 < spanning / len(sizes) < 0.03


def test_seed_changes_sizes_not_validity() -> None:
    pairs = [(k, s) for k in range(4) for s in range(1, 300)]
    assert [payload_size(k, s, seed=0) for k, s in pairs] != [
        payload_size(k, s, seed=1) for k, s in pairs
    ]
    assert all(verify_record(make_record(k, s, seed=7)) for k, s in pairs)


def test_custom_size_mix() -> None:
    only_large = (SizeClass(1.0, 40_000, 40_000),)
    assert {payload_size(k, 1, only_large) for k in range(50)} == {40_000}
    with pytest.raises(ValueError):
        SizeClass(1.0, 4, 10)  # below the payload header
    with pytest.raises(ValueError):
        SizeClass(-1.0, 20, 30)
    with pytest.raises(ValueError):
        payload_size(1, 1, (SizeClass(0.0, 20, 30),))
    with pytest.raises(ValueError):
        make_payload(1, 1, 11)


def _replace_payload(record: OracleRecord, payload: Any) -> OracleRecord:
    return record._replace(payload=payload)


def test_every_single_byte_flip_is_detected() -> None:
    record = make_record(3, 17, (SizeClass(1.0, 64, 64),))
    for i in range(len(record.payload)):
        damaged = bytearray(record.payload)
        damaged[i] ^= 0x01
        assert not verify_record(_replace_payload(record, bytes(damaged))), i


def test_corruptions_are_detected() -> None:
    record = make_record(3, 17)
    other = make_record(4, 17)
    big = make_record(1, 1, (SizeClass(1.0, 40_000, 40_000),))
    assert verify_record(big)
    corrupt = [
        record._replace(magic=MAGIC ^ 1),
        record._replace(key=4),  # another key's record with this payload
        record._replace(seq=18),
        _replace_payload(record, other.payload),
        _replace_payload(record, record.payload[:-1]),  # truncated
        _replace_payload(big, big.payload[: BUFFER - 5]),  # cut at a buffer boundary
        _replace_payload(record, record.payload + b"\0"),  # extended
        _replace_payload(record, bytearray(record.payload)),  # not bytes
        _replace_payload(record, record.payload[:5]),  # shorter than the header
        record._replace(key=3.0),
        record._replace(seq="17"),
        record._replace(key=-3),
        (MAGIC, 3, 17),
        "not a record",
        None,
        42,
    ]
    for value in corrupt:
        assert not verify_record(value), value


def test_fold_is_an_order_dependent_chain() -> None:
    assert expected_fold([]) == FOLD_SEED
    chain = FOLD_SEED
    for seq in (1, 2, 3):
        chain = fold_step(chain, seq)
    assert chain == expected_fold([1, 2, 3])
    assert expected_fold([1, 2, 3]) != expected_fold([2, 1, 3])
    assert expected_fold([1, 2, 3]) != expected_fold([1, 2, 2, 3])
    assert expected_fold([1, 2, 3]) != expected_fold([1, 3])


def test_oracle_key_of_records_and_envelopes() -> None:
    record = make_record(9, 1)
    output = OracleOutput(record, (), 1, fold_step(FOLD_SEED, 1), 0, 1, 128)
    assert oracle_key(record) == oracle_key(TracedRecord(record, ())) == oracle_key(output) == 9
    assert oracle_key("garbage") == -1
    assert oracle_key((MAGIC, "k", 1, b"")) == -1
    assert "payload=<" in repr(record)  # no payload dump in error messages


# --- the source: splits, positions, enumerator --------------------------------------------------


def test_splits_own_disjoint_keys_and_emit_every_seq_once_in_order() -> None:
    source = OracleSource(keys=7, records_per_key=5)
    splits = source.splits(3)
    assert [s.keys for s in splits] == [(0, 3, 6), (1, 4), (2, 5)]
    emitted: dict[int, list[int]] = defaultdict(list)
    for split in splits:
        assert split.total == len(split.keys) * 5
        for position in range(split.total):
            key, seq = split.key_seq_at(position)
            assert key in split.keys
            emitted[key].append(seq)
        with pytest.raises(IndexError):
            split.key_seq_at(split.total)
    assert emitted == {k: [1, 2, 3, 4, 5] for k in range(7)}
    assert len(source.splits(10)) == 7  # no empty splits
    assert source.total_records == 35


def test_split_batches_advance_the_position() -> None:
    split = OracleSource(keys=2, records_per_key=3).splits(1)[0]
    first = split.next_batch(4)
    assert [(r.key, r.seq) for r in first] == [(0, 1), (1, 1), (0, 2), (1, 2)]
    assert split.position == 4 and not split.is_finished
    rest = split.next_batch(10)
    assert [(r.key, r.seq) for r in rest] == [(0, 3), (1, 3)]
    assert split.is_finished and split.next_batch(10) == []
    assert all(verify_record(r) for r in first + rest)


def _read_all(reader: Any, output: CollectingOutput, limit: int | None = None) -> InputStatus:
    status = InputStatus.MORE_AVAILABLE
    while status is InputStatus.MORE_AVAILABLE:
        if limit is not None and len(output.values) >= limit:
            break
        status = reader.poll_next(output)
    return status


def test_restoring_a_reader_snapshot_resumes_after_the_last_emitted_record() -> None:
    source = OracleSource(keys=4, records_per_key=300)
    (split,) = source.splits(1)
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits([split])
    reader.notify_no_more_splits()
    before = CollectingOutput()
    _read_all(reader, before, limit=500)
    snapshot = reader.snapshot_state(1)
    assert [s.position for s in snapshot] == [len(before.values)]
    _read_all(
        reader, CollectingOutput(), limit=700
    )  # the old reader moves on; the snapshot must not
    assert [s.position for s in snapshot] == [len(before.values)]

    restored = source.create_reader(StandaloneReaderContext())
    restored.add_splits(pickle.loads(pickle.dumps(snapshot)))
    restored.notify_no_more_splits()
    after = CollectingOutput()
    assert _read_all(restored, after) is InputStatus.END_OF_INPUT
    seqs: dict[int, list[int]] = defaultdict(list)
    for record in before.values + after.values:
        seqs[record.key].append(record.seq)
    assert seqs == {k: list(range(1, 301)) for k in range(4)}
    assert restored.snapshot_state(2) == []  # finished splits are not snapshotted


def test_reader_requests_splits_and_ends_after_no_more_splits() -> None:
    source = OracleSource(keys=2, records_per_key=2)
    context = StandaloneReaderContext()
    reader = source.create_reader(context)
    reader.start()
    assert context.split_requests == 1
    assert reader.poll_next(CollectingOutput()) is InputStatus.NOTHING_AVAILABLE
    reader.notify_no_more_splits()
    assert reader.poll_next(CollectingOutput()) is InputStatus.END_OF_INPUT


def test_throttled_reader_stops_when_over_its_rate() -> None:
    source = OracleSource(keys=2, records_per_key=1000, records_per_second=100)
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits(source.splits(1))
    output = CollectingOutput()
    assert reader.poll_next(output) is InputStatus.MORE_AVAILABLE
    assert 1 <= len(output.values) <= 2  # batches of rate / 50
    assert reader.poll_next(output) is InputStatus.NOTHING_AVAILABLE


def test_enumerator_hands_out_each_split_once_and_restores_the_rest() -> None:
    source = OracleSource(keys=5, records_per_key=10)
    context = StandaloneEnumeratorContext[OracleSplit](parallelism=2)
    enumerator = source.create_enumerator(context)
    enumerator.handle_split_request(1, None)
    state = pickle.loads(pickle.dumps(enumerator.snapshot_state(1)))
    enumerator.handle_split_request(0, None)
    enumerator.handle_split_request(0, None)
    assert [(subtask, s.keys) for subtask, s in context.assigned] == [(1, (0, 2, 4)), (0, (1, 3))]
    assert context.no_more == [0]

    restored_context = StandaloneEnumeratorContext[OracleSplit](parallelism=2)
    restored = source.restore_enumerator(restored_context, state)
    restored.handle_split_request(0, None)
    restored.handle_split_request(1, None)
    assert [s.keys for _, s in restored_context.assigned] == [(1, 3)]
    assert restored_context.no_more == [1]


def test_source_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        OracleSource(keys=0, records_per_key=1)
    with pytest.raises(ValueError):
        OracleSource(keys=1, records_per_key=0)
    with pytest.raises(ValueError):
        OracleSource(keys=1, records_per_key=1, records_per_second=0)
    with pytest.raises(ValueError):
        OracleSource(keys=1, records_per_key=1).splits(0)


# --- the sink's tally ---------------------------------------------------------------------------

MAXP = 128


def _stateful_outputs(
    key: int, seqs: list[int], parallelism: int = 3, attempt: int = 0, state: int = 0,
    fold: int = FOLD_SEED,
) -> list[OracleOutput]:  # fmt: skip
    """What a correct stateful operator emits for ``seqs`` of ``key``, in this order, starting
    from ``state`` inputs with ``fold`` in attempt ``attempt``."""
    group = assign_to_key_group(key, MAXP)
    subtask = next(
        i for i in range(parallelism) if group in key_group_range_for_subtask(MAXP, parallelism, i)
    )
    outputs = []
    for i, seq in enumerate(seqs, 1):
        fold = fold_step(fold, seq)
        outputs.append(
            OracleOutput(
                make_record(key, seq),
                (),
                state + i,
                fold,
                subtask,
                parallelism,
                MAXP,
                attempt,
                10 * i,
            )
        )
    return outputs


def _tally(values: list[Any], records_per_key: int = 5, seq_order_kept: bool = False,
           owns: bool = True) -> KeyTally:  # fmt: skip
    tally = KeyTally()
    for value in values:
        tally = tally_record(tally, value, records_per_key, seq_order_kept, owns)
    return tally


def _anomalies(tally: KeyTally) -> dict[str, int]:
    names = ("duplicated", "out_of_order", "corrupt", "state_mismatch", "keygroup_mismatch")
    return {name: getattr(tally, name) for name in names if getattr(tally, name)}


def test_a_correct_run_tallies_clean_even_when_seqs_arrive_shuffled() -> None:
    tally = _tally(_stateful_outputs(7, [2, 1, 4, 5, 3]))
    assert _anomalies(tally) == {}
    assert (tally.received, tally.distinct) == (5, 5)


def test_lost_seqs_are_missing_from_distinct() -> None:
    tally = _tally(_stateful_outputs(7, [1, 2, 4]))
    assert _anomalies(tally) == {}
    assert 5 - tally.distinct == 2


def test_duplicates_through_the_stateful_operator() -> None:
    # the operator saw seq 2 twice (replayed input, state kept): consistent state, dup seq
    tally = _tally(_stateful_outputs(7, [1, 2, 2, 3]))
    assert _anomalies(tally) == {"duplicated": 1}


def test_state_updates_applied_twice_or_lost_are_state_mismatches() -> None:
    outputs = _stateful_outputs(7, [1, 2, 3, 4])
    double_applied = outputs[2]._replace(inputs=4)  # count jumped
    assert _anomalies(_tally([*outputs[:2], double_applied])) == {"state_mismatch": 1}
    wrong_fold = outputs[2]._replace(fold=outputs[2].fold ^ 1)
    assert _anomalies(_tally([*outputs[:2], wrong_fold])) == {"state_mismatch": 1}


def test_a_restore_with_state_is_clean_and_one_without_counts_once() -> None:
    before = _stateful_outputs(7, [1, 2, 3])
    restored = _stateful_outputs(7, [4, 5], attempt=1, state=3, fold=before[-1].fold)
    assert _anomalies(_tally(before + restored)) == {}
    state_lost = _stateful_outputs(7, [4, 5], attempt=1)  # the operator starts over
    assert _anomalies(_tally(before + state_lost)) == {"state_mismatch": 1}


def test_a_job_restored_from_a_checkpoint_is_told_apart_by_its_run() -> None:
    """A new job restored from a retained checkpoint or a savepoint numbers its attempts from 0
    again and its emission order from 1: only ``run`` tells its outputs from the first job's."""
    before = _stateful_outputs(7, [1, 2, 3])
    restored = _stateful_outputs(7, [4, 5], state=3, fold=before[-1].fold)
    assert _anomalies(_tally(before + restored)) == {"out_of_order": 2}  # without runs
    first_job = [o._replace(run=1) for o in before]
    assert _anomalies(_tally(first_job + [o._replace(run=2) for o in restored])) == {}


def test_stale_stateful_outputs_are_out_of_order() -> None:
    o1, o2, o3, o4 = _stateful_outputs(7, [1, 2, 3, 4])
    # an output the sink already had arrives again (replayed channel data)
    assert _anomalies(_tally([o1, o2, o3, o2, o4])) == {"out_of_order": 1, "duplicated": 1}
    # two outputs swapped on the way: the early one skips a state, the late one is stale
    assert _anomalies(_tally([o1, o3, o2, o4])) == {"out_of_order": 1, "state_mismatch": 1}


def test_keygroup_mismatches() -> None:
    (output,) = _stateful_outputs(7, [1])
    wrong = output._replace(subtask=(output.subtask + 1) % output.parallelism)
    assert _anomalies(_tally([wrong])) == {"keygroup_mismatch": 1}
    assert _anomalies(_tally([output], owns=False)) == {"keygroup_mismatch": 1}


def test_corrupt_records_are_counted_wherever_found() -> None:
    record = make_record(7, 1)
    assert _anomalies(_tally([TracedRecord(record, ("after-rebalance",))])) == {"corrupt": 1}
    damaged = record._replace(payload=record.payload[:-1])
    assert _anomalies(_tally([damaged])) == {"corrupt": 1}
    assert _anomalies(_tally([make_record(7, 6)])) == {"corrupt": 1}  # seq out of 1..5
    assert _anomalies(_tally(["garbage"])) == {"corrupt": 1}


def test_seq_order_is_checked_only_where_the_topology_keeps_it() -> None:
    records = [make_record(7, s) for s in (1, 3, 2)]
    assert _anomalies(_tally(records)) == {}
    assert _anomalies(_tally(records, seq_order_kept=True)) == {"out_of_order": 1}


# --- the verdict ------------------------------------------------------------------------------


def _accumulators(**overrides: int) -> dict[str, Any]:
    clean: dict[str, Any] = {
        "oracle.received": 100,
        "oracle.distinct": 100,
        "oracle.duplicated": 0,
        "oracle.out_of_order": 0,
        "oracle.corrupt": 0,
        "oracle.state_mismatch": 0,
        "oracle.keygroup_mismatch": 0,
        "oracle.keys_seen": 4,
        "oracle.attempt": 2,
        "records_in[x]": 100,
        **{f"oracle.reports.{k}": ((k % 2, 25),) for k in range(4)},
    }
    clean.update({f"oracle.{k}": v for k, v in overrides.items()})
    return clean


def test_a_clean_result() -> None:
    result = OracleResult.from_accumulators(_accumulators(), keys=4, records_per_key=25)
    assert result.expected == 100 and result.lost == 0
    assert result.counts() == dict.fromkeys(
        ("lost", "duplicated", "out_of_order", "corrupt", "state_mismatch", "keygroup_mismatch"),
        0,
    )
    assert result.is_exactly_once and result.restarts == 2
    result.assert_exactly_once()


def test_lost_counts_keys_the_sink_never_saw() -> None:
    accumulators = _accumulators(received=80, distinct=75, duplicated=5, keys_seen=3)
    del accumulators["oracle.reports.3"]
    result = OracleResult.from_accumulators(accumulators, 4, 25)
    assert result.lost == 25 and result.duplicated == 5
    assert result.keys_seen == 3 and result.lost_in_seen_keys == 0
    assert not result.is_exactly_once


def test_no_report_means_everything_is_lost() -> None:
    result = OracleResult.from_accumulators({}, keys=4, records_per_key=25)
    assert result.lost == 100 and result.restarts is None
    with pytest.raises(AssertionError) as caught:
        result.assert_exactly_once()
    message = str(caught.value)
    for name in ("lost=100", "duplicated=0", "out_of_order=0", "corrupt=0", "state_mismatch=0",
                 "keygroup_mismatch=0", "received 0 of 100"):  # fmt: skip
        assert name in message


def test_corrupt_stages_and_job_results() -> None:
    accumulators = _accumulators(corrupt=3)
    accumulators["oracle.corrupt_at.after-shuffle"] = 2
    accumulators["oracle.corrupt_at.stateful"] = 1
    result = OracleResult.from_job_result(JobExecutionResult("job", 5, accumulators), 4, 25)
    assert result.corrupt == 3
    assert result.corrupt_at == {"after-shuffle": 2, "stateful": 1}
    with pytest.raises(AssertionError, match="corrupt=3"):
        result.assert_exactly_once()


# --- faults -----------------------------------------------------------------------------------


class _Value:
    def __init__(self) -> None:
        self.v: Any = None

    def value(self) -> Any:
        return self.v

    def update(self, value: Any) -> None:
        self.v = value


class _Context:
    """The few RuntimeContext methods the fault injectors use."""

    def __init__(self, attempt: int, index: int = 0, parallelism: int = 2) -> None:
        self.attempt, self.index, self.parallelism = attempt, index, parallelism
        self.state = _Value()

    def get_attempt_number(self) -> int:
        return self.attempt

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism

    def get_state(self, descriptor: Any) -> _Value:
        return self.state


def _failing_map_in(attempt: int, index: int = 0) -> FailingMap:
    failing = pickle.loads(pickle.dumps(FailingMap([2, 5])))  # a fresh copy, as on a worker
    failing.open(_Context(attempt, index))
    return failing


def _checkpoint(failing: FailingMap, checkpoint_id: int) -> None:
    """Checkpoint ``checkpoint_id`` passes the map (its barrier) and completes."""
    failing.prepare_snapshot_pre_barrier(checkpoint_id)
    failing.notify_checkpoint_complete(checkpoint_id)


def test_failing_map_fails_once_per_scheduled_attempt() -> None:
    first = _failing_map_in(attempt=0)
    assert first.map("x") == "x"
    _checkpoint(first, 1)
    assert first.map("x") == "x"
    _checkpoint(first, 2)
    with pytest.raises(InjectedFailure, match="scheduled failure 1 of 2"):
        first.map("x")
    assert first.map("x") == "x"  # once

    second = _failing_map_in(attempt=1)
    assert second.map("x") == "x"
    _checkpoint(second, 4)
    assert second.map("x") == "x"
    _checkpoint(second, 6)
    with pytest.raises(InjectedFailure, match="scheduled failure 2 of 2"):
        second.map("x")

    third = _failing_map_in(attempt=2)
    assert third.map("x") == "x"
    _checkpoint(third, 100)
    assert third.map("x") == "x"
    other_subtask = _failing_map_in(attempt=0, index=1)
    assert other_subtask.map("x") == "x"
    _checkpoint(other_subtask, 100)
    assert other_subtask.map("x") == "x"
    assert FailingMap([2, 5]).scheduled_failures == 2


def test_failing_map_waits_for_a_checkpoint_taken_after_a_record() -> None:
    """A checkpoint whose barrier passed before any record restores no progress: the failure
    waits for one taken after a record (the docs' oracle once restored such a checkpoint)."""
    failing = _failing_map_in(attempt=0)
    _checkpoint(failing, 1)
    _checkpoint(failing, 2)  # due after 2, but no record went through before these barriers
    assert failing.map("x") == "x"
    failing.notify_checkpoint_complete(3)  # completed, but its barrier came before the record
    assert failing.map("x") == "x"
    failing.prepare_snapshot_pre_barrier(4)
    assert failing.map("x") == "x"  # checkpoint 4 carries the record, not completed yet
    failing.notify_checkpoint_complete(4)
    with pytest.raises(InjectedFailure, match="checkpoint 4 completed, due after 2"):
        failing.map("x")


def test_failure_schedules_are_checked() -> None:
    with pytest.raises(ValueError):
        FailingMap([0])
    with pytest.raises(ValueError):
        FailingSnapshot([1], first_attempt=-1)


def test_failing_snapshot_fails_the_first_snapshot_once_due() -> None:
    failing = FailingSnapshot([3], first_attempt=1)
    context = _Context(attempt=1)
    failing.open(context)
    assert failing.map("x") == "x"
    trap = context.state.v
    assert trap is not None
    pickle.dumps(trap)  # not due yet: the snapshot succeeds
    failing.notify_checkpoint_complete(3)
    with pytest.raises(InjectedFailure, match=r"FailingSnapshot\.snapshot"):
        pickle.dumps(trap)
    restored = pickle.loads(pickle.dumps(trap))  # fired once; restored traps are inert
    pickle.dumps(restored)

    idle = FailingSnapshot([3], first_attempt=1)
    idle_context = _Context(attempt=0)
    idle.open(idle_context)
    idle.map("x")
    assert idle_context.state.v is None  # nothing owed in this attempt: no trap


def test_kill_worker_process_kills_only_worker_children(capsys: pytest.CaptureFixture[str]) -> None:
    assert worker_process_pids() == []
    assert kill_worker_process(seed=1) is None
    # a child whose command line names the worker module, as ``local`` workers do
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "undertow.deploy.worker_process"]
    )
    try:
        deadline = time.monotonic() + 10  # the child's command line appears once it has exec'd
        while worker_process_pids() != [child.pid] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert worker_process_pids() == [child.pid]
        assert kill_worker_process(seed=5) == child.pid
        assert child.wait(10) == -9
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    out = capsys.readouterr().out
    assert "seed=5" in out and str(child.pid) in out


def test_worker_killer_delay_follows_the_seed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert WorkerKiller(3, 0.5, 1.5).delay_s == WorkerKiller(3, 0.5, 1.5).delay_s
    assert 0.5 <= WorkerKiller(4, 0.5, 1.5).delay_s <= 1.5
    killer = WorkerKiller(3, 0.0, 0.0).start()
    assert killer.join(5) is None  # no worker processes here
    monkeypatch.setenv("UNDERTOW_TEST_SEED", "1234")
    assert oracle_seed() == 1234
    assert "UNDERTOW_TEST_SEED=1234" in capsys.readouterr().out  # printed, with how to replay
    monkeypatch.delenv("UNDERTOW_TEST_SEED")
    monkeypatch.setenv("UNDERTOW_ORACLE_SEED", "99")  # the former name still works
    assert oracle_seed() == 99


def test_default_sizes_span_buffers() -> None:
    assert max(c.max_bytes for c in DEFAULT_SIZES) > BUFFER


# --- verdict holes (issue 12): each one fed and caught ------------------------------------------


def test_a_key_reported_twice_cannot_mask_a_lost_key() -> None:
    """Sums would balance: key 1 reported by two subtasks (25 + 25) and key 3 never reported
    give the same ``distinct`` (100) as a clean run. Per-key counting sees both."""
    accumulators = _accumulators()
    accumulators["oracle.reports.1"] = ((1, 25), (0, 25))
    del accumulators["oracle.reports.3"]
    result = OracleResult.from_accumulators(accumulators, 4, 25)
    assert result.distinct == 100  # the old verdict (expected - distinct) said lost == 0
    assert result.lost == 25 and result.keygroup_mismatch == 1 and result.reported_twice == 1
    assert result.keys_seen == 3
    with pytest.raises(AssertionError, match="lost=25"):
        result.assert_exactly_once()


def test_lost_in_seen_keys_and_keys_seen_are_in_the_verdict() -> None:
    accumulators = _accumulators()
    accumulators["oracle.reports.2"] = ((0, 20),)
    result = OracleResult.from_accumulators(accumulators, 4, 25)
    assert result.lost == 5 and result.lost_in_seen_keys == 5
    assert "lost in seen keys 5" in str(result)
    # all counts 0 but a key missing from the reports: not exactly-once either
    clean = _accumulators()
    unseen = OracleResult.from_accumulators(clean, 5, 25)
    assert unseen.keys_seen == 4 and not unseen.is_exactly_once


class _FakeValue:
    def __init__(self, store: dict[Any, Any], key: list[Any]) -> None:
        self.store, self.key = store, key

    def value(self) -> Any:
        return self.store.get(self.key[0])

    def update(self, value: Any) -> None:
        self.store[self.key[0]] = value


class _FakeRuntime:
    """A RuntimeContext for one subtask of a keyed checking stage, with a current key."""

    def __init__(self, index: int, parallelism: int, attempt: int = 0) -> None:
        self.index, self.parallelism, self.attempt = index, parallelism, attempt
        self.accumulators: dict[str, Any] = {}
        self.current = [None]
        self.stores: dict[str, dict[Any, Any]] = defaultdict(dict)

    def get_attempt_number(self) -> int:
        return self.attempt

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return MAXP

    def get_metrics_group(self) -> dict[str, Any]:
        return self.accumulators

    def get_state(self, descriptor: Any) -> _FakeValue:
        return _FakeValue(self.stores[descriptor.name], self.current)

    # the KeyedProcessFunction.Context part
    def get_current_key(self) -> Any:
        return self.current[0]

    def timer_service(self) -> Any:
        return self

    def register_event_time_timer(self, timestamp: int) -> None:
        pass


def _owner(key: int, parallelism: int) -> int:
    group = assign_to_key_group(key, MAXP)
    return next(i for i in range(parallelism)
                if group in key_group_range_for_subtask(MAXP, parallelism, i))  # fmt: skip


def test_key_ownership_is_checked_when_a_subtask_reports() -> None:
    """A subtask holding a key's tally that it does not own (state restored to the wrong
    subtask) is caught at report time, even if it received no record of the key."""
    from undertow.testing._oracle_functions import VerifyingSink

    key = 0
    wrong = (_owner(key, 2) + 1) % 2
    runtime = _FakeRuntime(wrong, 2)
    sink = VerifyingSink(5)
    sink.open(runtime)  # type: ignore[arg-type]
    runtime.current[0] = key
    runtime.stores["oracle-tally"][key] = _tally(_stateful_outputs(key, [1, 2, 3, 4, 5]))
    sink.on_timer(2**63 - 1, runtime)  # type: ignore[arg-type]
    result = OracleResult.from_accumulators(runtime.accumulators, 1, 5)
    assert result.keygroup_mismatch == 1 and result.lost == 0 and result.keys_seen == 1
    right = _FakeRuntime(_owner(key, 2), 2)
    sink.open(right)  # type: ignore[arg-type]
    right.current[0] = key
    right.stores["oracle-tally"][key] = runtime.stores["oracle-tally"][key]
    sink.on_timer(2**63 - 1, right)  # type: ignore[arg-type]
    OracleResult.from_accumulators(right.accumulators, 1, 5).assert_exactly_once()


def test_failed_attempts_keep_their_evidence(tmp_path: Any) -> None:
    """A duplicate the sink saw in an attempt that then failed is logged at once and counts in
    the verdict; the finishing attempt's own lines are not counted twice."""
    from undertow.testing._oracle_functions import VerifyingSink

    key, evidence = 0, str(tmp_path / "evidence")
    outputs = _stateful_outputs(key, [1, 2, 2], parallelism=2)
    failed = _FakeRuntime(_owner(key, 2), 2, attempt=0)
    sink = VerifyingSink(5, evidence_dir=evidence)
    sink.open(failed)  # type: ignore[arg-type]
    failed.current[0] = key
    for output in outputs:
        sink.process_element(output, failed)  # type: ignore[arg-type]
    # the attempt dies here: its accumulators never reach the driver
    final = _FakeRuntime(_owner(key, 2), 2, attempt=1)
    sink.open(final)  # type: ignore[arg-type]
    final.current[0] = key
    for output in _stateful_outputs(key, [1, 2, 3, 3, 4, 5], parallelism=2, attempt=1):
        sink.process_element(output, final)  # type: ignore[arg-type]
    sink.on_timer(2**63 - 1, final)  # type: ignore[arg-type]
    without = OracleResult.from_accumulators(final.accumulators, 1, 5)
    assert without.counts()["duplicated"] == 1  # the finishing attempt's own duplicate
    result = OracleResult.from_accumulators(final.accumulators, 1, 5, evidence)
    assert result.other_attempts == {"duplicated": 1} and result.other_runs == 1
    assert result.counts()["duplicated"] == 2
    assert "other attempts" in str(result)


def test_replayed_records_after_live_data_are_out_of_order() -> None:
    """At the sink (each key through one channel), outputs of an earlier epoch (restored
    channel state) must all come before the key's live outputs. The stateful operator, fed
    through a shuffle, counts replayed records but cannot check their order."""
    from undertow.testing._oracle_functions import OracleStatefulFunction, VerifyingSink

    key = 0
    old, new = _FakeRuntime(_owner(key, 2), 2, attempt=0), _FakeRuntime(_owner(key, 2), 2, 1)
    sink = VerifyingSink(5, job_tag=5)
    sink.open(old)  # type: ignore[arg-type]
    old_epoch = sink._checker.epoch
    sink.open(new)  # type: ignore[arg-type]
    new.current[0] = key
    o1, o2, o3 = _stateful_outputs(key, [1, 2, 3], parallelism=2)
    replayed, live = o1._replace(epoch=old_epoch), o2._replace(epoch=sink._checker.epoch)
    for value in (replayed, live):
        sink.process_element(value, new)  # type: ignore[arg-type]
    clean = OracleResult.from_accumulators(new.accumulators, 1, 5)
    assert (clean.replayed, clean.replayed_after_live, clean.out_of_order) == (1, 0, 0)
    sink.process_element(o3._replace(epoch=old_epoch), new)  # type: ignore[arg-type]
    late = OracleResult.from_accumulators(new.accumulators, 1, 5)
    assert (late.replayed, late.replayed_after_live, late.out_of_order) == (2, 1, 1)

    stateful, runtime = OracleStatefulFunction(job_tag=5), _FakeRuntime(_owner(key, 2), 2, 1)
    stateful.open(runtime)  # type: ignore[arg-type]
    runtime.current[0] = key
    for epoch in (stateful._checker.epoch, old_epoch):
        stateful.process_element(TracedRecord(make_record(key, 1), (), epoch), runtime)  # type: ignore[arg-type]
    counted = OracleResult.from_accumulators(runtime.accumulators, 1, 5)
    assert (counted.replayed, counted.replayed_after_live) == (1, 0)


def test_a_traced_record_of_an_earlier_epoch_at_the_sink_counts_as_replayed() -> None:
    """A verifying map's record fed to the sink directly (no stateful operator between) and
    restored from channel state carries the epoch of the attempt that sent it: replayed. Its
    order after live data is checked only where the topology keeps each key's order."""
    from undertow.testing._oracle_functions import VerifyingSink

    key = 0
    old = _FakeRuntime(_owner(key, 2), 2, attempt=0)
    for order_kept, after_live in ((True, 1), (False, 0)):
        sink = VerifyingSink(5, seq_order_kept=order_kept, job_tag=5)
        sink.open(old)  # type: ignore[arg-type]
        old_epoch = sink._checker.epoch
        runtime = _FakeRuntime(_owner(key, 2), 2, 1)
        sink.open(runtime)  # type: ignore[arg-type]
        runtime.current[0] = key
        for seq, epoch in ((1, old_epoch), (2, sink._checker.epoch), (3, old_epoch)):
            sink.process_element(TracedRecord(make_record(key, seq), (), epoch), runtime)  # type: ignore[arg-type]
        result = OracleResult.from_accumulators(runtime.accumulators, 1, 5)
        assert (result.replayed, result.replayed_after_live) == (2, after_live), order_kept


def test_restore_evidence() -> None:
    """``assert_restored`` needs a resumed source, restored tallies and, if asked, replay."""
    restored = OracleResult.from_accumulators(
        {**_accumulators(), "oracle.processed.after-rebalance": 60,
         "oracle.processed.stateful": 100, "oracle.restored_keys": 4, "oracle.replayed": 3},
        4, 25)  # fmt: skip
    restored.assert_restored(replayed=True)
    rerun = OracleResult.from_accumulators(
        {**_accumulators(), "oracle.processed.stateful": 100, "oracle.processed.sink": 100},
        4, 25,
    )  # fmt: skip
    with pytest.raises(RestoreEvidenceMissing, match=r"handled 100 of 100.*no sink tally"):
        rerun.assert_restored()
    no_replay = OracleResult.from_accumulators(
        {**_accumulators(), "oracle.processed.stateful": 60, "oracle.restored_keys": 4}, 4, 25
    )
    no_replay.assert_restored()
    with pytest.raises(RestoreEvidenceMissing, match="no record was replayed"):
        no_replay.assert_restored(replayed=True)
    partly = OracleResult.from_accumulators(
        {**_accumulators(), "oracle.processed.stateful": 60, "oracle.restored_keys": 3,
         "oracle.fresh_incomplete_keys": 1}, 4, 25)  # fmt: skip
    with pytest.raises(RestoreEvidenceMissing, match="1 keys started without their tally"):
        partly.assert_restored()  # one key's state did not come back (a shared file emptied)
