"""CompletedCheckpointStore: retention and Flink's subsume rules (reference §5.5)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.completed_store import (
    CompletedCheckpoint,
    CompletedCheckpointStore,
    DiscardSubsumed,
    ForgetSubsumed,
)


def completed(checkpoint_id: int, savepoint: bool = False) -> CompletedCheckpoint:
    kind = "savepoint" if savepoint else "chk"
    return CompletedCheckpoint(
        checkpoint_id, 100 * checkpoint_id, 100 * checkpoint_id + 40, savepoint,
        f"file:///cp/job/{kind}-{checkpoint_id}", 1_024,
    )  # fmt: skip


def ids(store: CompletedCheckpointStore) -> list[int]:
    return [c.checkpoint_id for c in store.all()]


def test_keeps_the_newest_num_retained() -> None:
    store = CompletedCheckpointStore(2)
    assert store.latest() is None and store.lowest_retained_id() is None
    assert store.add(completed(1)) == []
    assert store.add(completed(2)) == []
    assert store.add(completed(3)) == [DiscardSubsumed(completed(1))]
    assert ids(store) == [2, 3]
    assert store.latest() == completed(3)
    assert store.lowest_retained_id() == 2
    assert store.last_subsumed_checkpoint_id == 1
    assert len(store) == 2
    assert completed(3).duration_ms == 40


def test_savepoints_count_and_are_forgotten_not_discarded() -> None:
    store = CompletedCheckpointStore(2)
    store.add(completed(1))
    store.add(completed(2, savepoint=True))
    removed = store.add(completed(3))
    assert removed == [DiscardSubsumed(completed(1))]
    assert ids(store) == [2, 3]
    (forgotten,) = store.add(completed(4))
    assert forgotten == ForgetSubsumed(completed(2, savepoint=True))
    assert forgotten.checkpoint_id == 2


def test_latest_checkpoint_survives_behind_a_newer_savepoint() -> None:
    store = CompletedCheckpointStore(1)
    store.add(completed(1))
    assert store.add(completed(2, savepoint=True)) == []  # 1 is the newest checkpoint
    assert ids(store) == [1, 2]
    assert store.latest() == completed(2, savepoint=True)
    assert store.lowest_retained_id() == 1
    removed = store.add(completed(3, savepoint=True))
    assert removed == [ForgetSubsumed(completed(2, savepoint=True))]
    assert ids(store) == [1, 3]
    assert store.add(completed(4)) == [
        DiscardSubsumed(completed(1)),
        ForgetSubsumed(completed(3, True)),
    ]
    assert ids(store) == [4]


def test_intermediate_savepoints_are_subsumed_past_kept_entries() -> None:
    store = CompletedCheckpointStore(2)
    store.add(completed(1, savepoint=True))
    store.add(completed(2))
    assert store.add(completed(3, savepoint=True)) == [ForgetSubsumed(completed(1, True))]
    assert ids(store) == [2, 3]


def test_out_of_order_completion_is_inserted_by_id() -> None:
    store = CompletedCheckpointStore(1)
    store.add(completed(6))
    assert store.add(completed(5, savepoint=True)) == [ForgetSubsumed(completed(5, True))]
    assert ids(store) == [6]
    with pytest.raises(ValueError, match="checkpoint 6 is already"):
        store.add(completed(6))


def test_num_retained_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.num-retained"):
        CompletedCheckpointStore(0)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(1, 4), st.lists(st.tuples(st.integers(1, 3), st.booleans()), max_size=25))
def test_subsumption_invariants(num_retained: int, adds: list[tuple[int, bool]]) -> None:
    store = CompletedCheckpointStore(num_retained)
    checkpoint_id = 0
    added: list[CompletedCheckpoint] = []
    returned: list[CompletedCheckpoint] = []
    for gap, savepoint in adds:
        checkpoint_id += gap
        entry = completed(checkpoint_id, savepoint)
        added.append(entry)
        for decision in store.add(entry):
            assert decision.checkpoint is not entry  # the newest is never removed
            if isinstance(decision, ForgetSubsumed):
                assert decision.checkpoint.is_savepoint
            else:
                assert not decision.checkpoint.is_savepoint  # savepoint files are never discarded
            returned.append(decision.checkpoint)
        retained = store.all()
        assert store.latest() is entry
        assert len(store) <= max(num_retained, 2)
        if not entry.is_savepoint:
            assert len(store) <= num_retained
        newest_checkpoint = next((c for c in reversed(added) if not c.is_savepoint), None)
        if newest_checkpoint is not None:
            assert newest_checkpoint in retained
            assert store.lowest_retained_id() == min(
                c.checkpoint_id for c in retained if not c.is_savepoint
            )
        assert sorted(map(id, [*retained, *returned])) == sorted(map(id, added))
        assert [c.checkpoint_id for c in retained] == sorted(c.checkpoint_id for c in retained)
