"""undertow.testing.gates: a gated scheduled failure waits for the checkpoint the test opened the
gate at (and fires at it or any newer one), across pickling as on a worker; a held oracle
source stops exactly at its limit, keeps answering NOTHING_AVAILABLE until released, then
runs to the end."""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.connectors.source import InputStatus
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
