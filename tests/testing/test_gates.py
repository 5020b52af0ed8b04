"""undertow.testing.gates: a gated scheduled failure waits for the checkpoint the test opened the
gate at (and fires at it or any newer one), across pickling as on a worker; a held oracle
source stops exactly at its limit, keeps answering NOTHING_AVAILABLE until released, then
runs to the end; any reader (one shaped like Kafka's, through a held source) stops after
the call that reached the limit with its output's capabilities kept."""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.connectors.source import (
    Boundedness,
    DemandingReaderOutput,
    InputStatus,
    ReaderOutput,
    Source,
    SourceReader,
    SourceReaderContext,
    SourceSplit,
    SplitEnumeratorContext,
    SplitReaderOutput,
)
from undertow.testing import gates
from undertow.testing.gates import CheckpointGate, SourceHold
from undertow.testing.oracle import FailingMap, InjectedFailure, OracleSource
from undertow.testing.source_reader import CollectingOutput, StandaloneReaderContext


class _Context:
    """The RuntimeContext methods FailingMap uses: attempt 0, subtask 0 of 1."""

    def get_attempt_number(self) -> int:
        return 0

    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_number_of_parallel_subtasks(self) -> int:
        return 1


def _look_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gates, "POLL_S", 0.0)


def test_a_gated_failure_waits_for_the_gate_and_fires_at_a_newer_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _look_again(monkeypatch)
    gate = CheckpointGate(tmp_path / "gate")
    failing: FailingMap = pickle.loads(pickle.dumps(FailingMap([2], gate=gate)))
    failing.open(_Context())  # type: ignore[arg-type]
    failing.map("x")
    for cid in (1, 2, 3, 4):  # due after 2, and a record came before each barrier
        failing.prepare_snapshot_pre_barrier(cid)
        failing.notify_checkpoint_complete(cid)
        assert failing.map("x") == "x"  # the gate is closed
    gate.open(5)
    gate.open(4)  # the first opening wins
    assert failing.map("x") == "x"  # 4 completed: older than the gate's 5
    failing.notify_checkpoint_complete(6)
    with pytest.raises(InjectedFailure, match="checkpoint 6 completed"):
        failing.map("x")
    assert failing.map("x") == "x"  # once


def test_the_gate_reads_its_file_at_most_every_poll_interval(tmp_path: Path) -> None:
    gate = CheckpointGate(tmp_path / "gate")
    assert gate.opened_at() is None
    gate.open(3)
    assert gate.opened_at() is None  # looked just now: not again before POLL_S
    time.sleep(gates.POLL_S * 2)
    assert gate.opened_at() == 3 and gate.admits(3) and not gate.admits(2)


def _drain(reader: Any, polls: int) -> tuple[list[int], list[InputStatus]]:
    output = CollectingOutput(1_000)
    statuses = [reader.poll_next(output) for _ in range(polls)]
    return output.batches, statuses


def test_a_hold_counts_the_subtasks_that_reached_it_not_the_calls(tmp_path: Path) -> None:
    hold = SourceHold(tmp_path / "hold", after_records=1)
    hold.mark_held(0)
    hold.mark_held(0)  # a reader marks once per attempt; a new attempt may mark again
    assert hold.held_readers() == 1 and not hold.wait_held(2, timeout_s=0.0)
    hold.mark_held(1)
    assert hold.held_readers() == 2 and hold.wait_held(2, timeout_s=0.0)


def test_a_held_source_stops_at_its_limit_until_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _look_again(monkeypatch)
    hold = SourceHold(tmp_path / "hold", after_records=300)
    source = pickle.loads(pickle.dumps(OracleSource(2, 500, hold=hold)))
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits(source.splits(1))
    reader.notify_no_more_splits()
    assert hold.held_readers() == 0
    batches, statuses = _drain(reader, 10)
    assert sum(batches) == 300  # exactly the limit: no batch crosses it
    assert hold.held_readers() == 1 and hold.wait_held(1, timeout_s=0.0)
    assert not hold.wait_held(2, timeout_s=0.0)
    assert statuses[-1] is InputStatus.NOTHING_AVAILABLE
    assert reader.snapshot_state(1)[0].position == 300
    hold.release()
    batches, statuses = _drain(reader, 20)
    assert sum(batches) == 1_000 - 300 and statuses[-1] is InputStatus.END_OF_INPUT
    with pytest.raises(ValueError, match="after_records"):
        SourceHold(tmp_path, after_records=0)


class _Split(SourceSplit):
    def __init__(self, name: str) -> None:
        self.name = name

    def split_id(self) -> str:
        return self.name


class _FetchingReader(SourceReader[_Split]):
    """A reader shaped like Kafka's: it emits what it 'fetched', ``fetch`` records a call
    whatever the output wants, through the output's splits when it has them; it notes every
    call the wrapper must pass on."""

    def __init__(self, fetch: int, total: int) -> None:
        self.fetch, self.total, self.sent = fetch, total, 0
        self.calls: list[str] = []

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        self.calls.append("poll")
        if self.sent >= self.total:
            return InputStatus.END_OF_INPUT
        values = list(range(self.sent, min(self.total, self.sent + self.fetch)))
        self.sent += len(values)
        if isinstance(output, SplitReaderOutput):
            output.collect_split_batch("p0", values)
        else:
            output.collect_batch(values)
        output.collect_side("bad", -1)  # a side output record: not counted
        return InputStatus.MORE_AVAILABLE

    def add_splits(self, splits: list[_Split]) -> None:
        self.calls.append(f"add {[s.split_id() for s in splits]}")

    def notify_no_more_splits(self) -> None:
        self.calls.append("no more")

    def snapshot_state(self, checkpoint_id: int) -> list[_Split]:
        self.calls.append(f"snapshot {checkpoint_id}")
        return [_Split(f"at {self.sent}")]

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.calls.append(f"complete {checkpoint_id}")

    def close(self) -> None:
        self.calls.append("close")

    def poll_again_after_s(self) -> float:
        return 0.5  # notifies when it has more, like Kafka's


class _SplitOutput(CollectingOutput):
    """A demanding output with splits, as the task's source output is."""

    def __init__(self, records_wanted: int | None = None) -> None:
        super().__init__(records_wanted)
        self.split_batches: list[tuple[str, int]] = []

    def register_split(self, split_id: str) -> None:
        pass

    def collect_split_batch(
        self, split_id: str, values: list[Any], timestamps: list[Any] | None = None
    ) -> None:
        self.split_batches.append((split_id, len(values)))
        self.collect_batch(values, timestamps)

    def release_split(self, split_id: str) -> None:
        pass


class _Source(Source[_Split]):
    def __init__(self) -> None:
        self.readers: list[_FetchingReader] = []

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[_Split]:
        self.readers.append(_FetchingReader(fetch=7, total=40))
        return self.readers[-1]

    def create_enumerator(self, context: SplitEnumeratorContext[_Split]) -> Any:
        return ("enumerator", context)

    def restore_enumerator(self, context: SplitEnumeratorContext[_Split], checkpoint: Any) -> Any:
        return ("restored", context, checkpoint)


def test_any_reader_held_stops_after_the_call_that_reached_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that emits whole fetches (Kafka's shape) through a held source: the hold
    keeps the output's capabilities (splits, records_wanted), counts collected records only,
    stops the calls to the reader once the limit is reached, asks to be polled every POLL_S
    while held, and passes every other call on."""
    _look_again(monkeypatch)
    hold = SourceHold(tmp_path / "hold", after_records=10)
    inner = _Source()
    source = hold.source(inner)
    assert source.get_boundedness() is Boundedness.CONTINUOUS_UNBOUNDED
    assert source.create_enumerator("ctx") == ("enumerator", "ctx")  # type: ignore[arg-type]
    assert source.restore_enumerator("ctx", 3) == ("restored", "ctx", 3)  # type: ignore[arg-type]
    reader = source.create_reader(StandaloneReaderContext(subtask=1, parallelism=2))
    fetching = inner.readers[-1]
    reader.add_splits([_Split("p0")])
    reader.notify_no_more_splits()
    reader.start()
    output = _SplitOutput(records_wanted=100)
    assert reader.poll_again_after_s() == 0.5
    statuses = [reader.poll_next(output) for _ in range(6)]
    assert output.split_batches == [("p0", 7), ("p0", 7)]  # the second call crossed 10
    assert output.side == {"bad": [-1, -1]}
    assert statuses == [InputStatus.MORE_AVAILABLE] * 2 + [InputStatus.NOTHING_AVAILABLE] * 4
    assert fetching.calls.count("poll") == 2  # not called while held
    assert hold.held_readers() == 1 and reader.poll_again_after_s() == gates.POLL_S
    assert [s.split_id() for s in reader.snapshot_state(4)] == ["at 14"]
    reader.notify_checkpoint_complete(4)
    hold.release()
    statuses = [reader.poll_next(output) for _ in range(6)]
    assert sum(output.batches) == 40 and statuses[-1] is InputStatus.END_OF_INPUT
    assert reader.poll_again_after_s() == 0.5
    reader.close()
    assert fetching.calls[:2] == ["add ['p0']", "no more"]
    assert "snapshot 4" in fetching.calls and "complete 4" in fetching.calls
    assert fetching.calls[-1] == "close"


def test_a_held_reader_asks_for_no_more_than_is_left_before_the_hold(tmp_path: Path) -> None:
    """records_wanted seen by the reader: the output's own limit or what is left, the
    smaller; an output without splits gets a split's batch through collect_batch."""
    hold = SourceHold(tmp_path / "hold", after_records=10)
    seen: list[int | None] = []

    class Wanting(_FetchingReader):
        def poll_next(self, output: ReaderOutput) -> InputStatus:
            assert isinstance(output, DemandingReaderOutput)
            seen.append(output.records_wanted)
            return super().poll_next(output)

    reader = gates.HeldReader(Wanting(fetch=3, total=40), hold, StandaloneReaderContext())
    demanding = CollectingOutput(records_wanted=5)
    for _ in range(3):
        reader.poll_next(demanding)
    assert seen == [5, 5, 4]
    plain = CollectingOutput(records_wanted=None)
    reader.poll_next(plain)  # another output: the count goes on (9 of 10)
    assert seen[-1] == 1 and plain.batches == [3]


def test_a_held_source_pickles_with_its_hold(tmp_path: Path) -> None:
    hold = SourceHold(tmp_path / "hold", after_records=2)
    source = pickle.loads(pickle.dumps(hold.source(OracleSource(2, 5))))
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits(source.source.splits(1))
    reader.notify_no_more_splits()
    batches, statuses = _drain(reader, 3)
    assert sum(batches) == 2 and statuses[-1] is InputStatus.NOTHING_AVAILABLE
    assert source.hold.released_marker == hold.released_marker
