"""Claim modes (FLIP-193, reference §7): the option, the decision, and what the completed
store then does with a claimed snapshot."""

from __future__ import annotations

import pytest

from undertow.common import Configuration
from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.claim_mode import (
    RecoveryClaimMode,
    RestoredSnapshot,
    decide_claim,
)
from undertow.runtime.checkpoint.completed_store import (
    CompletedCheckpoint,
    CompletedCheckpointStore,
    DiscardSubsumed,
)


def snapshot(checkpoint_id: int = 7, savepoint: bool = False) -> RestoredSnapshot:
    pointer = (
        f"/sp/savepoint-abc123-{checkpoint_id}" if savepoint else f"/cp/old/chk-{checkpoint_id}"
    )
    return RestoredSnapshot(checkpoint_id, savepoint, pointer, 1_000, 1_040, 512)


def own(checkpoint_id: int) -> CompletedCheckpoint:
    return CompletedCheckpoint(checkpoint_id, 2_000, 2_050, False, f"/cp/new/chk-{checkpoint_id}",
                               256)  # fmt: skip


# --- the option ----------------------------------------------------------------------------


def test_the_default_is_no_claim() -> None:
    assert RecoveryClaimMode.of(Configuration()) is RecoveryClaimMode.NO_CLAIM


@pytest.mark.parametrize(
    ("key", "value", "mode"),
    [
        ("execution.state-recovery.claim-mode", "CLAIM", RecoveryClaimMode.CLAIM),
        ("execution.state-recovery.claim-mode", "claim", RecoveryClaimMode.CLAIM),
        ("execution.state-recovery.claim-mode", "no_claim", RecoveryClaimMode.NO_CLAIM),
        ("execution.savepoint-restore-mode", "CLAIM", RecoveryClaimMode.CLAIM),  # deprecated key
    ],
)
def test_keys_and_values_as_in_flink(key: str, value: str, mode: RecoveryClaimMode) -> None:
    assert RecoveryClaimMode.of(Configuration({key: value})) is mode


def test_the_new_key_wins_over_the_deprecated_one() -> None:
    config = Configuration({"execution.state-recovery.claim-mode": "NO_CLAIM",
                            "execution.savepoint-restore-mode": "CLAIM"})  # fmt: skip
    assert RecoveryClaimMode.of(config) is RecoveryClaimMode.NO_CLAIM


@pytest.mark.parametrize(("value", "extra"), [("LEGACY", "removed in 2.0"), ("mine", "")])
def test_a_bad_value_names_the_option_and_the_value(value: str, extra: str) -> None:
    config = Configuration({"execution.state-recovery.claim-mode": value})
    with pytest.raises(ConfigurationError,
                       match=rf"'execution.state-recovery.claim-mode' = '{value}': must be "
                             rf"CLAIM or NO_CLAIM.*{extra}"):  # fmt: skip
        RecoveryClaimMode.of(config)


# --- the decision --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(RecoveryClaimMode))
def test_the_id_counter_goes_on_after_the_snapshot_in_both_modes(mode: RecoveryClaimMode) -> None:
    assert decide_claim(mode, snapshot(7), next_checkpoint_id=1).next_checkpoint_id == 8
    assert decide_claim(mode, snapshot(7), next_checkpoint_id=20).next_checkpoint_id == 20


@pytest.mark.parametrize("savepoint", [False, True], ids=["checkpoint", "savepoint"])
def test_no_claim_keeps_the_snapshot_out_of_the_store_and_forces_a_full_checkpoint(
    savepoint: bool,
) -> None:
    decision = decide_claim(RecoveryClaimMode.NO_CLAIM, snapshot(7, savepoint), 1)
    assert decision.retain is None and decision.force_full_snapshot


def test_no_claim_whose_shared_files_were_duplicated_needs_no_full_checkpoint() -> None:
    decision = decide_claim(RecoveryClaimMode.NO_CLAIM, snapshot(7), 1, duplicated=True)
    assert decision.retain is None and not decision.force_full_snapshot  # FLIP-193


@pytest.mark.parametrize("savepoint", [False, True], ids=["checkpoint", "savepoint"])
def test_claim_retains_the_snapshot_as_the_jobs_own_checkpoint(savepoint: bool) -> None:
    decision = decide_claim(RecoveryClaimMode.CLAIM, snapshot(7, savepoint), 1)
    claimed = decision.retain
    assert claimed is not None and not decision.force_full_snapshot
    assert claimed.checkpoint_id == 7 and claimed.external_path == snapshot(7, savepoint).pointer
    assert not claimed.is_savepoint, "a claimed savepoint is a checkpoint: deleted once subsumed"
    assert (claimed.trigger_timestamp, claimed.completion_timestamp) == (1_000, 1_040)
    assert claimed.metadata_size == 512


# --- the store with a claimed snapshot ----------------------------------------------------


@pytest.mark.parametrize("savepoint", [False, True], ids=["checkpoint", "savepoint"])
def test_a_claimed_snapshot_is_the_latest_until_subsumed_then_discarded(savepoint: bool) -> None:
    claimed = decide_claim(RecoveryClaimMode.CLAIM, snapshot(7, savepoint), 1).retain
    assert claimed is not None
    store = CompletedCheckpointStore(num_retained=1)
    assert store.add(claimed) == []
    assert store.latest() == claimed  # a failover before the first checkpoint restores it
    assert store.lowest_retained_id() == 7

    assert store.add(own(8)) == [DiscardSubsumed(claimed)]
    assert store.latest() == own(8) and store.last_subsumed_checkpoint_id == 7


def test_a_claimed_snapshot_is_retained_like_the_jobs_checkpoints() -> None:
    claimed = decide_claim(RecoveryClaimMode.CLAIM, snapshot(7), 1).retain
    assert claimed is not None
    store = CompletedCheckpointStore(num_retained=3)
    store.add(claimed)
    assert store.add(own(8)) == [] and store.add(own(9)) == []
    assert store.add(own(10)) == [DiscardSubsumed(claimed)]
