"""The orphan decision of the coordinator's sweep of checkpoint directories."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.orphan_sweep import (
    MAX_DELETES_PER_SWEEP,
    SweepFacts,
    select_orphans,
    sweep_due,
)
from undertow.storage import CheckpointDirectory


def dirs(*ids: int, completed: tuple[int, ...] = ()) -> list[CheckpointDirectory]:
    return [CheckpointDirectory(i, i in completed) for i in ids]


def test_selects_uncommitted_directories_below_the_newest_completed() -> None:
    facts = SweepFacts(below=7, protected=frozenset({6, 7}))
    listed = dirs(1, 3, 4, 6, 7, 8, completed=(1, 7))
    # 1 has _metadata (someone's completed checkpoint), 6 and 7 are retained, 8 is newer
    assert select_orphans(listed, facts) == (3, 4)


def test_nothing_before_a_checkpoint_completed() -> None:
    assert select_orphans(dirs(1, 2, 3), SweepFacts(below=None, protected=frozenset())) == ()


def test_pending_and_finalizing_checkpoints_are_protected() -> None:
    facts = SweepFacts(below=9, protected=frozenset({5, 8, 9}))
    assert select_orphans(dirs(4, 5, 8), facts) == (4,)


def test_bounded_work_per_sweep_takes_the_oldest_first() -> None:
    facts = SweepFacts(below=1_000, protected=frozenset())
    listed = dirs(*range(500, 0, -1))
    assert select_orphans(listed, facts) == tuple(range(1, MAX_DELETES_PER_SWEEP + 1))
    assert select_orphans(listed, facts, limit=2) == (1, 2)
    assert select_orphans(listed, facts, limit=0) == ()


def test_sweep_due_at_most_every_interval() -> None:
    assert sweep_due(10, None, 5_000)
    assert not sweep_due(4_000, 0, 5_000)
    assert sweep_due(5_000, 0, 5_000)
    assert sweep_due(0, 100, 5_000)  # the clock went back


directory_lists = st.lists(
    st.builds(CheckpointDirectory, st.integers(0, 60), st.booleans()),
    max_size=40,
    unique_by=lambda d: d.checkpoint_id,
)


@settings(max_examples=300, derandomize=True)
@given(
    listed=directory_lists,
    retained=st.frozensets(st.integers(0, 60), max_size=5),
    pending=st.frozensets(st.integers(0, 60), max_size=5),
    below=st.none() | st.integers(0, 61),
    limit=st.integers(0, 50),
)
def test_never_selects_a_protected_newer_or_completed_directory(
    listed: list[CheckpointDirectory],
    retained: frozenset[int],
    pending: frozenset[int],
    below: int | None,
    limit: int,
) -> None:
    facts = SweepFacts(below=below, protected=retained | pending)
    chosen = select_orphans(listed, facts, limit)
    with_metadata = {d.checkpoint_id for d in listed if d.has_metadata}
    assert list(chosen) == sorted(set(chosen)) and len(chosen) <= limit
    assert set(chosen) <= {d.checkpoint_id for d in listed}
    assert not set(chosen) & (retained | pending | with_metadata)
    assert below is not None or not chosen
    assert all(cid < below for cid in chosen) if below is not None else True
    # and it is complete: every other candidate is chosen when the limit allows
    candidates = (
        {d.checkpoint_id for d in listed if below is not None and d.checkpoint_id < below}
        - retained
        - pending
        - with_metadata
    )
    if len(candidates) <= limit:
        assert set(chosen) == candidates
