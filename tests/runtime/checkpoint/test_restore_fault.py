"""The workers' half of a restore control: each kind drops its part of a restored snapshot, and
only that part, and logs what it dropped (the e2e controls run them against real restores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from undertow.runtime.checkpoint.restore_fault import (
    ControlKind,
    RestoreFault,
    apply_to_snapshot,
)
from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.state.heap_incremental import HeapIncrementalHandle, Segment
from undertow.storage import FileHandle


def _snapshot() -> SubtaskSnapshot:
    return SubtaskSnapshot(operators={
        "src": OperatorSnapshot(custom=b"splits"),
        "sum": OperatorSnapshot(keyed={1: b"k"}, timers={1: b"t"}, operator=b"list"),
        "sink": OperatorSnapshot(custom=b"writer"),
    })  # fmt: skip


def _apply(kind: ControlKind, tmp_path: Path, snapshot: SubtaskSnapshot, path: str = "") -> list:
    log = tmp_path / "restores.log"
    apply_to_snapshot(RestoreFault(kind, str(log), path), snapshot, "sum (1/2)", ["src"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_keyed_state_drops_keyed_state_and_timers_only(tmp_path: Path) -> None:
    snapshot = _snapshot()
    logged = _apply(ControlKind.KEYED_STATE, tmp_path, snapshot)
    part = snapshot.operators["sum"]
    assert (part.keyed, part.timers, part.operator) == ({}, {}, b"list")
    assert snapshot.operators["src"].custom == b"splits"
    assert [e["what"] for e in logged] == ["keyed state of 'sum', sum (1/2)"]


def test_source_positions_drop_the_sources_splits_only(tmp_path: Path) -> None:
    snapshot = _snapshot()
    logged = _apply(ControlKind.SOURCE_POSITIONS, tmp_path, snapshot)
    assert snapshot.operators["src"].custom is None
    assert snapshot.operators["sink"].custom == b"writer"
    assert snapshot.operators["sum"].keyed == {1: b"k"}
    assert [e["kind"] for e in logged] == ["source-positions"]


def test_operator_state_drops_list_and_custom_state_of_non_sources(tmp_path: Path) -> None:
    snapshot = _snapshot()
    logged = _apply(ControlKind.OPERATOR_STATE, tmp_path, snapshot)
    assert snapshot.operators["sum"].operator is None
    assert snapshot.operators["sink"].custom is None
    assert snapshot.operators["src"].custom == b"splits"
    assert snapshot.operators["sum"].keyed == {1: b"k"}
    assert len(logged) == 2


def test_shared_file_empties_the_key_groups_of_that_segment_only(tmp_path: Path) -> None:
    shared = [Segment(FileHandle.of(f"shared/s{i}.kgs", b"x" * 8), i + 1) for i in range(2)]
    handle = HeapIncrementalHandle(2, "sum", (0, 3), 128, tuple(shared),
                                   {0: (0, 0, 4), 1: (1, 0, 4), 2: (0, 4, 4)}, 1)  # fmt: skip
    snapshot = SubtaskSnapshot(operators={"sum": OperatorSnapshot(keyed_native=handle)})
    logged = _apply(ControlKind.SHARED_FILE, tmp_path, snapshot, "shared/s0.kgs")
    assert snapshot.operators["sum"].keyed_native.groups == {1: (1, 0, 4)}
    assert [e["what"] for e in logged] == ["shared file shared/s0.kgs of 'sum', sum (1/2)"]


def test_nothing_to_drop_logs_nothing(tmp_path: Path) -> None:
    snapshot = SubtaskSnapshot(operators={"map": OperatorSnapshot(operator=b"list")})
    assert _apply(ControlKind.KEYED_STATE, tmp_path, snapshot) == []
    assert snapshot.operators["map"].operator == b"list"


def test_a_bad_control_name_is_refused_naming_the_variable_and_the_kinds() -> None:
    with pytest.raises(ValueError, match=r"UNDERTOW_RESTORE_CONTROL='keyed'.*keyed-state"):
        ControlKind.parse("keyed")
